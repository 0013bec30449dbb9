"""Counts the alert rules need, as pure functions over fold states and output rows.

The alerts engine (:mod:`offsetscope.alerts`) calls these with rows read back from the gold
tables (or straight from a batch's fold outputs) and a time ``as_of``; nothing here reads a
clock. Windows are half-open, ``(start, end]``, so a rebalance at exactly ``as_of`` counts and
one at exactly ``as_of - window`` does not.

* rebalance storm: :func:`rebalance_times` / :func:`rebalances_between` -- one entry per
  rebalance; a row whose generation jumped by k stands for k rebalances (the ones in between
  stored nothing, so their times are only known to lie before this row's join completion; they
  are counted at it, which can only make a storm look denser, never hide one);
* member churn: :func:`member_churn` -- member ids that joined or left, and instance ids that
  went through more than one member id, in the window;
* stuck rebalances: :func:`stuck_rebalances` -- classic generations that never stored an
  assignment (a generation jump between two records while the reader was tailing) over a span
  longer than the rebalance timeout (the join completed but the leader's SyncGroup may never
  have landed), and KIP-848 groups in Assigning/Reconciling longer than their members'
  rebalance timeout;
* lag stall: :func:`commit_window` and :func:`burrow_status` -- Burrow's threshold-free
  evaluation over the last N commits of a partition;
* hanging transactions: :func:`hanging_transactions` -- open longer than timeout + margin.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

from offsetscope.history.groups import MAX_REBALANCE_TIMES, GroupState, rebalances_in_window
from offsetscope.history.lag import LagIndex
from offsetscope.history.rows import GenerationRow, SessionRow
from offsetscope.history.transactions import TxnIdState
from offsetscope.protocol.states import ConsumerGroupState

DEFAULT_REBALANCE_TIMEOUT_MS = 300_000  # Kafka's max.poll.interval.ms default
MAX_LISTED_GENERATIONS = 1_000  # skipped generations a StuckRebalance lists by number

__all__ = [
    "CommitWindowEntry",
    "HangingTransaction",
    "MemberChurn",
    "StuckRebalance",
    "burrow_status",
    "commit_window",
    "hanging_transactions",
    "member_churn",
    "rebalance_times",
    "rebalances_between",
    "rebalances_in_window",
    "stuck_rebalances",
]


def _rebalance_at(row: GenerationRow) -> int:
    return row.join_completed_at if row.join_completed_at is not None else row.stored_at


def rebalance_times(rows: Iterable[GenerationRow], group_id: str | None = None) -> list[int]:
    """One time per rebalance, from materialised ``group_generations`` rows, sorted.

    Args:
        rows: one row per (group, life, generation) -- the table, not a stream of upserts.
        group_id: keep one group's rows only.
    """
    times: list[int] = []
    for row in rows:
        if group_id is None or row.group_id == group_id:
            # Bounded like the fold's list: a corrupt generation jump must not allocate 2^31.
            times.extend([_rebalance_at(row)] * min(row.rebalances, MAX_REBALANCE_TIMES))
    return sorted(times)


def rebalances_between(rows: Iterable[GenerationRow], group_id: str, start: int, end: int) -> int:
    """How many rebalances (generations) of ``group_id`` completed in ``(start, end]``."""
    return rebalances_in_window(rebalance_times(rows, group_id), end, end - start)


@dataclass(frozen=True, slots=True)
class MemberChurn:
    """Member turnover of one group in a window."""

    group_id: str
    start: int
    end: int
    joined: tuple[str, ...]  # member ids whose session started in the window
    left: tuple[str, ...]  # member ids whose session ended in the window
    cycling_instances: tuple[str, ...]  # instance ids seen with 2+ member ids in the window
    distinct_member_ids: int
    distinct_instance_ids: int


def member_churn(
    sessions: Iterable[SessionRow], group_id: str, start: int, end: int
) -> MemberChurn:
    """Which member ids joined/left ``group_id`` in ``(start, end]``, and which instances cycled.

    Args:
        sessions: ``member_sessions`` rows (the table, or a batch's latest versions).
        group_id: the group.
        start: window start (exclusive), epoch ms.
        end: window end (inclusive), epoch ms.
    """
    joined: set[str] = set()
    left: set[str] = set()
    active: set[str] = set()
    by_instance: dict[str, set[str]] = {}
    for s in sessions:
        if s.group_id != group_id:
            continue
        if start < s.joined_at <= end:
            joined.add(s.member_id)
        if s.left_at is not None and start < s.left_at <= end:
            left.add(s.member_id)
        overlaps = s.joined_at <= end and (s.left_at is None or s.left_at > start)
        if overlaps:
            active.add(s.member_id)
            if s.instance_id is not None:
                by_instance.setdefault(s.instance_id, set()).add(s.member_id)
    return MemberChurn(
        group_id=group_id,
        start=start,
        end=end,
        joined=tuple(sorted(joined)),
        left=tuple(sorted(left)),
        cycling_instances=tuple(sorted(i for i, ids in by_instance.items() if len(ids) > 1)),
        distinct_member_ids=len(active),
        distinct_instance_ids=len(by_instance),
    )


@dataclass(frozen=True, slots=True)
class StuckRebalance:
    """A rebalance that did not finish: why, and the generations and times involved."""

    group_id: str
    group_life: int
    kind: str
    generations: tuple[int, ...]
    since: int | None  # earliest time it can have started
    until: int | None  # when it was over (a later generation completed), None if still stuck
    reason: str


def stuck_rebalances(
    rows: Iterable[GenerationRow],
    states: Iterable[GroupState],
    as_of: int,
    *,
    default_rebalance_timeout_ms: int = DEFAULT_REBALANCE_TIMEOUT_MS,
) -> list[StuckRebalance]:
    """Rebalances that completed their join phase but never stored an assignment, up to ``as_of``.

    Args:
        rows: materialised ``group_generations`` rows.
        states: current group fold states (for KIP-848 groups that have not converged).
        as_of: epoch ms; rows stored later are ignored.
        default_rebalance_timeout_ms: the timeout when no member reported one.

    Returns:
        Classic: one entry per generation jump between two consecutive rows of a group life
        (generations ``previous + 1 .. generation - 1``) whose span -- from the previous record
        to the next join completion -- exceeds the members' rebalance timeout. Shorter jumps
        are rebalances superseded by a join or leave, which Kafka handles normally; a longer
        one is a sync that may have timed out (the log cannot say when inside the span the
        generation started). KIP-848: one entry per group that has been Assigning or
        Reconciling for longer than the largest member rebalance timeout.
    """
    out: list[StuckRebalance] = []
    previous: dict[tuple[str, int], GenerationRow] = {}
    for row in sorted(rows, key=lambda r: (r.group_id, r.group_life, r.generation)):
        if row.kind != "classic" or row.stored_at > as_of:
            continue
        prev = previous.get((row.group_id, row.group_life))
        previous[(row.group_id, row.group_life)] = row
        if prev is None or row.previous_generation is None or row.generations_skipped <= 0:
            continue
        # The unstored generations started after the previous record and were over when this
        # row's join phase completed. If that span is within the rebalance timeout they were
        # superseded (a member joined or left mid-rebalance), not stuck.
        since, until = prev.updated_at, _rebalance_at(row)
        timeouts = [m.rebalance_timeout_ms for m in (*prev.members, *row.members)]
        limit = max((t for t in timeouts if t > 0), default=default_rebalance_timeout_ms)
        if until - since <= limit:
            continue
        # A corrupt generation can skip 2^31 numbers: list at most MAX_LISTED_GENERATIONS.
        first_skipped = row.previous_generation + 1
        skipped = tuple(
            range(first_skipped, min(row.generation, first_skipped + MAX_LISTED_GENERATIONS))
        )
        more = row.generation - first_skipped - len(skipped)
        out.append(
            StuckRebalance(
                group_id=row.group_id,
                group_life=row.group_life,
                kind=row.kind,
                generations=skipped,
                since=since,
                until=until,
                reason=(
                    "no assignment stored for generation(s) "
                    + ", ".join(map(str, skipped))
                    + (f" and {more} more" if more > 0 else "")
                    + f"; {until - since} ms between the records, over the {limit} ms"
                    " rebalance timeout: the leader's sync may have timed out"
                ),
            )
        )
    for st in sorted(states, key=lambda s: s.group_id):
        # Streams groups converge as KIP-848 consumer groups do (a share group is never
        # Assigning or Reconciling).
        if st.kind not in ("kip848", "streams") or st.state not in (
            ConsumerGroupState.ASSIGNING.value,
            ConsumerGroupState.RECONCILING.value,
        ):
            continue
        if st.state_since is None or st.current is None:
            continue
        timeouts = [
            m.rebalance_timeout_ms for m in st.current.members if m.rebalance_timeout_ms > 0
        ]
        limit = max(timeouts, default=default_rebalance_timeout_ms)
        if as_of - st.state_since > limit:
            out.append(
                StuckRebalance(
                    group_id=st.group_id,
                    group_life=st.group_life,
                    kind=st.kind,
                    generations=(st.current.generation,),
                    since=st.state_since,
                    until=None,
                    reason=f"{st.state} for {as_of - st.state_since} ms (rebalance timeout {limit} ms)",
                )
            )
    return out


@dataclass(frozen=True, slots=True)
class CommitWindowEntry:
    """One commit in a Burrow-style window: offset, when, and the lag when it was made."""

    offset: int
    at: int
    lag: int


def commit_window(
    index: LagIndex,
    group_id: str,
    topic: str,
    partition: int,
    as_of: int,
    *,
    intervals: int = 10,
    read_committed: bool = False,
) -> tuple[CommitWindowEntry, ...]:
    """The last ``intervals`` commits at or before ``as_of``, each with its lag at commit time.

    Commits with no end-offset sample before them are left out (their lag is unknown).
    """
    entries: list[CommitWindowEntry] = []
    for point in index.commit_history(group_id, topic, partition, as_of):
        if point.offset is None:
            entries.clear()  # a tombstone resets the partition's history
            continue
        row = index.lag(group_id, topic, partition, point.at, read_committed=read_committed)
        if row is not None and row.lag_records is not None:
            entries.append(CommitWindowEntry(point.offset, point.at, row.lag_records))
    return tuple(entries[-intervals:])


def burrow_status(
    window: tuple[CommitWindowEntry, ...], as_of: int, *, allowed_lag: int = 0
) -> str:
    """Burrow's partition status over a commit window (no thresholds on the lag itself).

    Rules, in Burrow's order: ``OK`` when the lag was at most ``allowed_lag`` at some commit;
    ``REWIND`` when the offset went backwards; ``STOP`` when the time since the last commit
    exceeds the window's span; ``STALL`` when the offset never moved (with lag); ``WARN`` when
    offsets move but the lag never decreases; otherwise ``OK``. ``UNKNOWN`` for an empty window.
    """
    if not window:
        return "UNKNOWN"
    if any(e.lag <= allowed_lag for e in window):
        return "OK"
    if any(b.offset < a.offset for a, b in pairwise(window)):
        return "REWIND"
    first, last = window[0], window[-1]
    if as_of - last.at > last.at - first.at:
        return "STOP"
    if len(window) > 1 and all(e.offset == first.offset for e in window):
        return "STALL"
    if len(window) > 1 and all(b.lag >= a.lag for a, b in pairwise(window)):
        return "WARN"
    return "OK"


@dataclass(frozen=True, slots=True)
class HangingTransaction:
    """A transaction open past its timeout plus a margin."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str
    started_at: int
    timeout_ms: int
    open_for_ms: int


def hanging_transactions(
    states: Iterable[TxnIdState], as_of: int, margin_ms: int
) -> list[HangingTransaction]:
    """Transactions still open (Ongoing or Prepare*) at ``as_of`` beyond timeout + margin.

    The coordinator aborts an Ongoing transaction soon after its timeout and completes a
    Prepare* once its markers are written, so either one lasting past the margin means a stuck
    coordinator, an unreachable partition leader, or a coordinator that lost the id.
    """
    out: list[HangingTransaction] = []
    for st in sorted(states, key=lambda s: s.transactional_id):
        row = st.open
        if row is None or row.started_at is None or row.completed_at is not None:
            continue
        open_for = as_of - row.started_at
        if open_for > row.timeout_ms + margin_ms:
            out.append(
                HangingTransaction(
                    transactional_id=row.transactional_id,
                    producer_id=row.producer_id,
                    producer_epoch=(
                        row.producer_epoch
                        if row.end_producer_epoch is None
                        else row.end_producer_epoch
                    ),
                    state=row.state,
                    started_at=row.started_at,
                    timeout_ms=row.timeout_ms,
                    open_for_ms=open_for,
                )
            )
    return out
