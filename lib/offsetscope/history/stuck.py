"""Stuck last stable offsets: a data partition whose LSO stands still while records arrive.

A transaction open on a data partition holds its last stable offset (KIP-98: the first offset
of the earliest open transaction) where it began; every ``read_committed`` consumer of the
partition stops there, and its lag against the LSO looks flat. Kafka's coordinator aborts a
transaction it knows after ``transaction.timeout.ms`` (at most ``transaction.max.timeout.ms``,
15 minutes by default), so an LSO still for longer is held either by a transaction its
coordinator no longer knows -- a *hanging* transaction (KIP-664): its markers never reached
the partition -- or by a producer whose timeout is long.

Input, per data partition in time order: the end-offset samples (``end_offsets``). Rule, for a
bound ``B``: the partition is **stuck** from ``since`` -- the first sample at its current LSO --
once a sample at ``since + B`` or later still shows that LSO below a high watermark that has
grown since ``since``; the episode ends at the first sample with another LSO. A sample
without an LSO (-1) says nothing and is skipped.

Each episode is one ``stuck_partitions`` row (:class:`~offsetscope.history.rows.StuckPartitionRow`),
re-emitted while it lasts, with what holds the LSO:

* the sampler's producers (:data:`Producers`: producer id -> first offset of its open
  transaction, from the data segments) name the producer whose transaction begins at the LSO;
  without them (the AdminClient source: confluent-kafka has no DescribeProducers), the LSO
  itself is the first offset of the oldest open transaction, and the producer is unknown;
* an open transaction of ``__transaction_state`` (``transactions``, not completed) listing the
  partition -- with that producer id when it is known, else the oldest -- is
  ``open_transaction`` and names its transactional id, producer id and epoch and how long it
  has been open; none is ``hanging_transaction``, with the ``kafka-transactions.sh abort``
  command that ends it;
* the groups whose committed offset is the LSO are blocked behind it, those below it will be.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from offsetscope.history.codec import JsonState
from offsetscope.history.rows import EndOffsetSample, StuckPartitionRow, TransactionRow

OPEN_TRANSACTION = "open_transaction"
HANGING_TRANSACTION = "hanging_transaction"
FROM_SEGMENTS = "segments"
FROM_LSO = "lso"

# producer id -> first offset of its open transaction on the partition (None: not known).
Producers = Mapping[int, int]
# The partition's committed positions: group id -> committed offset.
Positions = Mapping[str, int]


@dataclass(frozen=True, slots=True)
class LsoWatch(JsonState):
    """What the fold carries between batches for one data partition."""

    last_stable_offset: int
    since: int  # the first sample at this LSO
    high_watermark_since: int
    stuck: StuckPartitionRow | None  # the open episode's row, once past the bound


@dataclass(frozen=True, slots=True)
class Holder:
    """What holds a stuck LSO (see the module docstring)."""

    cause: str
    first_offset: int
    first_offset_source: str
    transaction: TransactionRow | None
    producer_id: int | None


def abort_command(topic: str, partition: int, first_offset: int) -> str:
    """``kafka-transactions.sh``'s command that aborts a hanging transaction (KIP-664)."""
    return (
        "kafka-transactions.sh --bootstrap-server HOST:PORT abort "
        f"--topic {topic} --partition {partition} --start-offset {first_offset}"
    )


def holder(
    topic: str,
    partition: int,
    lso: int,
    open_transactions: Iterable[TransactionRow],
    producers: Producers | None,
) -> Holder:
    """What holds ``lso`` on the partition (see the module docstring).

    Args:
        topic: the data topic.
        partition: the data partition.
        lso: the stuck last stable offset.
        open_transactions: transactions not completed (any partitions; filtered here).
        producers: the partition's open transactions by producer id, when the sampler knows.
    """
    holding = [
        t
        for t in open_transactions
        if t.completed_at is None and (topic, partition) in set(t.partitions)
    ]
    holding.sort(key=lambda t: (t.started_at is None, t.started_at or 0, t.transactional_id))
    pid: int | None = None
    first, source = lso, FROM_LSO
    if producers:
        at_lso = sorted(p for p, offset in producers.items() if offset == lso)
        if at_lso:
            pid, source = at_lso[0], FROM_SEGMENTS
        else:  # the producers' first offsets disagree with the sample: take the earliest
            pid, first = min(producers.items(), key=lambda item: (item[1], item[0]))
            source = FROM_SEGMENTS
        holding = [t for t in holding if pid in (t.producer_id, t.end_producer_id)]
    if holding:
        return Holder(OPEN_TRANSACTION, first, source, holding[0], pid)
    return Holder(HANGING_TRANSACTION, first, source, None, pid)


def fold_lso(
    state: LsoWatch | None,
    samples: Sequence[EndOffsetSample],
    *,
    bound_ms: int,
    open_transactions: Callable[[], Iterable[TransactionRow]],
    producers: Producers | None = None,
    positions: Positions | None = None,
    read_uncommitted: Callable[[str], bool] = lambda group: False,
) -> tuple[LsoWatch | None, list[StuckPartitionRow]]:
    """Fold one partition's new samples (oldest first); returns the state and the rows.

    Args:
        state: the partition's state from the previous batch (None at the start).
        samples: new samples of one partition, in time order.
        bound_ms: how long the LSO may stand still while the high watermark moves.
        open_transactions: the transactions not completed, asked for only when a partition is
            stuck (a table read in the pipeline).
        producers: the sampler's open transactions of the partition as of the last sample.
        positions: the groups' committed offsets on the partition as of the last sample.
        read_uncommitted: groups known to read uncommitted data (never blocked by an LSO).
    """
    rows: list[StuckPartitionRow] = []
    cache: list[list[TransactionRow]] = []

    def transactions() -> list[TransactionRow]:
        if not cache:
            cache.append(list(open_transactions()))
        return cache[0]

    for i, s in enumerate(samples):
        lso = s.last_stable_offset
        if lso < 0:
            continue
        if state is None or lso != state.last_stable_offset:
            if state is not None and state.stuck is not None:
                done = state.stuck
                rows.append(
                    replace(
                        done,
                        resolved_at=s.sampled_at,
                        stuck_ms=s.sampled_at - done.stuck_since,
                        updated_at=s.sampled_at,
                    )
                )
            state = LsoWatch(lso, s.sampled_at, s.high_watermark, None)
            continue
        if not (
            s.sampled_at - state.since >= bound_ms
            and s.high_watermark > state.high_watermark_since
            and lso < s.high_watermark
        ):
            continue
        last = i == len(samples) - 1
        if state.stuck is not None and not last:
            # An earlier sample of an episode already open: what holds the LSO is read again
            # at the batch's last sample, which the sampler's producers and the positions
            # describe.
            previous = state.stuck
            started = previous.transaction_started_at
            row = replace(
                previous,
                stuck_ms=s.sampled_at - state.since,
                high_watermark=s.high_watermark,
                records_held=s.high_watermark - lso,
                sampled_at=s.sampled_at,
                open_for_ms=None if started is None else max(0, s.sampled_at - started),
                updated_at=s.sampled_at,
            )
        else:
            held = holder(s.topic, s.partition, lso, transactions(), producers if last else None)
            row = _row(state, s, held, positions if last else None, read_uncommitted)
        state = replace(state, stuck=row)
        if not rows or rows[-1].stuck_since != row.stuck_since:
            rows.append(row)
        else:
            rows[-1] = row
    return state, rows


def _row(
    state: LsoWatch,
    s: EndOffsetSample,
    held: Holder,
    positions: Positions | None,
    read_uncommitted: Callable[[str], bool],
) -> StuckPartitionRow:
    previous = state.stuck
    txn = held.transaction
    blocked: tuple[str, ...]
    behind: tuple[str, ...]
    if positions is None and previous is not None:
        blocked, behind = previous.blocked_groups, previous.behind_groups
    else:
        live = {g: o for g, o in (positions or {}).items() if not read_uncommitted(g)}
        blocked = tuple(sorted(g for g, o in live.items() if o == s.last_stable_offset))
        behind = tuple(sorted(g for g, o in live.items() if o < s.last_stable_offset))
    started = txn.started_at if txn is not None else None
    return StuckPartitionRow(
        topic=s.topic,
        partition=s.partition,
        stuck_since=state.since,
        last_stable_offset=s.last_stable_offset,
        detected_at=previous.detected_at if previous is not None else s.sampled_at,
        resolved_at=None,
        stuck_ms=s.sampled_at - state.since,
        high_watermark=s.high_watermark,
        high_watermark_since=state.high_watermark_since,
        records_held=s.high_watermark - s.last_stable_offset,
        sampled_at=s.sampled_at,
        cause=held.cause,
        transactional_id=txn.transactional_id if txn is not None else None,
        producer_id=txn.producer_id if txn is not None else held.producer_id,
        producer_epoch=txn.producer_epoch if txn is not None else None,
        transaction_started_at=started,
        transaction_timeout_ms=txn.timeout_ms if txn is not None else None,
        open_for_ms=None if started is None else max(0, s.sampled_at - started),
        first_offset=held.first_offset,
        first_offset_source=held.first_offset_source,
        abort_command=(
            abort_command(s.topic, s.partition, held.first_offset)
            if held.cause == HANGING_TRANSACTION
            else None
        ),
        blocked_groups=blocked,
        behind_groups=behind,
        updated_at=s.sampled_at,
    )
