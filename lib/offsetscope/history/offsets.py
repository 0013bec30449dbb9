"""Offset-commit fold: one ``__consumer_offsets`` partition's commits, with transactions resolved.

Input: the partition's ``OffsetCommitEvent`` and ``ControlEvent`` in log order (other events are
ignored). Kafka's rules (``docs/formats.md`` sections 3.2, 3.8b, 8.2, 8.3), which this fold replays:

* a non-transactional commit is the group's offset at once (``effective_at`` = record time);
* a commit in a transactional batch is *pending* for its producer id until a control record of
  the same producer id in this partition resolves it:

  - COMMIT: the producer's latest pending record per key becomes the offset, unless a record for
    the same key with a *higher log offset* was materialised in between (a later
    non-transactional commit, or another producer's committed one): then it is ``superseded``;
    earlier pending records of the same producer and key are ``superseded`` too (Kafka keeps
    one pending offset per key and producer);
  - ABORT: every pending record of the producer is ``aborted`` and never counts;

* a tombstone removes the key's offset and drops every pending transactional offset of that key
  (``dropped``).

Rows are upserts keyed by the record's (partition, offset): a transactional commit is emitted as
``pending`` and emitted again when its marker arrives. ``effective_at`` is when the offset became
the group's committed offset (marker time for transactional ones), which is what lag "as of T"
needs.

A Kafka-source pipeline reads with ``read_committed`` and never sees markers: records of aborted
transactions are filtered by the source, so with ``markers_visible=False`` every transactional
commit is taken as committed at its record time (``resolved_by = "read_committed_source"``).

State per partition: the last folded offset (replays are skipped) and the pending transactional
records -- bounded by the transactions in flight, never by history.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from offsetscope.history.codec import JsonState, evolve
from offsetscope.history.events import ControlEvent, Event, OffsetCommitEvent
from offsetscope.history.rows import OffsetCommitRow

COMMITTED = "committed"
PENDING = "pending"
ABORTED = "aborted"
SUPERSEDED = "superseded"
DROPPED = "dropped"

CommitKey = tuple[str, str, int]  # (group, topic, partition)


@dataclass(frozen=True, slots=True)
class PendingCommit:
    """A transactional commit waiting for its producer's marker."""

    row: OffsetCommitRow
    # a record for the same key with a higher log offset was materialised meanwhile
    superseded: bool


@dataclass(frozen=True, slots=True)
class OffsetsState(JsonState):
    """What the offsets fold carries between batches for one ``__consumer_offsets`` partition."""

    partition: int
    last_offset: int
    pending: tuple[PendingCommit, ...]


def fold_offsets(
    state: OffsetsState | None,
    events: Iterable[Event],
    *,
    markers_visible: bool = True,
) -> tuple[OffsetsState | None, tuple[OffsetCommitRow, ...]]:
    """Fold one ``__consumer_offsets`` partition's events (log order) into ``offset_commits`` rows.

    Args:
        state: the previous call's state, or ``None`` for the partition's first batch.
        events: offset commits and control records of one partition, in log order (other
            events are ignored); events at or below the last folded offset are skipped
            (replays change nothing).
        markers_visible: ``True`` for the segment source (markers seen, transactional commits
            pending until resolved); ``False`` for a ``read_committed`` Kafka source.

    Returns:
        The new state (``None`` only with no state and no event) and the rows, one version per
        record (the latest), in the order of their last update.
    """
    records = [e for e in events if isinstance(e, OffsetCommitEvent | ControlEvent)]
    if state is None and not records:
        return None, ()
    partition = state.partition if state is not None else records[0].at.partition
    last = state.last_offset if state is not None else -1
    pending: dict[int, PendingCommit] = (
        {p.row.record_offset: p for p in state.pending} if state is not None else {}
    )
    # key -> record offsets of its pending commits (all producers), so a commit costs O(1)
    # however many commits are pending
    by_key: dict[CommitKey, list[int]] = {}
    for off, p in pending.items():
        by_key.setdefault(_key(p.row), []).append(off)
    out: dict[int, OffsetCommitRow] = {}

    def emit(row: OffsetCommitRow) -> None:
        out.pop(row.record_offset, None)
        out[row.record_offset] = row

    def materialised(key: CommitKey, record_offset: int) -> None:
        # Kafka materialises a pending offset only if no newer record for the key exists.
        for off in by_key.get(key, ()):
            p = pending[off]
            if off < record_offset and not p.superseded:
                pending[off] = PendingCommit(p.row, True)

    def unpend(off: int) -> PendingCommit:
        p = pending.pop(off)
        offsets = by_key[_key(p.row)]
        offsets.remove(off)
        if not offsets:
            del by_key[_key(p.row)]
        return p

    for e in records:
        if e.at.offset <= last:
            continue
        last = e.at.offset
        ts = e.at.timestamp
        if isinstance(e, ControlEvent):
            if e.control_type not in ("COMMIT", "ABORT"):
                continue
            mine = [p for p in pending.values() if p.row.producer_id == e.at.producer_id]
            for p in mine:
                unpend(p.row.record_offset)
            if e.control_type == "ABORT":
                for p in mine:
                    emit(_resolve(p.row, ABORTED, ts, "abort_marker", None))
                continue
            latest: dict[CommitKey, PendingCommit] = {}
            for p in mine:  # log order: the last one per key wins
                latest[_key(p.row)] = p
            for p in mine:
                key = _key(p.row)
                if latest[key] is p and not p.superseded:
                    emit(_resolve(p.row, COMMITTED, ts, "commit_marker", ts))
                    materialised(key, p.row.record_offset)
                else:
                    emit(_resolve(p.row, SUPERSEDED, ts, "commit_marker", None))
            continue
        key = (e.group, e.topic, e.partition)
        if e.offset is None:
            for off in list(by_key.get(key, ())):
                emit(_resolve(unpend(off).row, DROPPED, ts, "tombstone", None))
            emit(_row(e, COMMITTED, "tombstone"))
        elif e.at.is_transactional and markers_visible:
            row = _row(e, PENDING, None)
            pending[row.record_offset] = PendingCommit(row, False)
            by_key.setdefault(key, []).append(row.record_offset)
            emit(row)
        else:
            how = "read_committed_source" if e.at.is_transactional else "non_transactional"
            emit(_row(e, COMMITTED, how))
            materialised(key, e.at.offset)
    new_state = OffsetsState(partition, last, tuple(pending[o] for o in sorted(pending)))
    return new_state, tuple(out.values())


def plain_row(e: OffsetCommitEvent, *, read_committed_source: bool = False) -> OffsetCommitRow:
    """The row of a commit outside a transaction (or of any commit a ``read_committed`` source
    delivered): committed as read, at its record time. The ingest pipeline computes the same
    columns in Spark SQL for the plain commits it appends."""
    if e.offset is None:
        how = "tombstone"
    else:
        how = "read_committed_source" if read_committed_source else "non_transactional"
    return _row(e, COMMITTED, how)


def _key(row: OffsetCommitRow) -> CommitKey:
    return (row.group_id, row.topic, row.partition)


def _resolve(
    row: OffsetCommitRow, status: str, at: int, how: str, effective: int | None
) -> OffsetCommitRow:
    return evolve(row, status=status, resolved_at=at, resolved_by=how, effective_at=effective)


def _row(e: OffsetCommitEvent, status: str, how: str | None) -> OffsetCommitRow:
    """The event's row; resolved at its own record time unless it is ``pending``."""
    tombstone = e.offset is None
    ts = None if status == PENDING else e.at.timestamp
    return OffsetCommitRow(
        group_id=e.group,
        topic=e.topic,
        partition=e.partition,
        offset=e.offset,
        leader_epoch=e.leader_epoch,
        metadata=e.metadata,
        commit_timestamp=None if tombstone or e.commit_timestamp < 0 else e.commit_timestamp,
        expire_timestamp=None if tombstone or e.expire_timestamp < 0 else e.expire_timestamp,
        topic_id=e.topic_id,
        is_tombstone=tombstone,
        record_partition=e.at.partition,
        record_offset=e.at.offset,
        record_timestamp=e.at.timestamp,
        transactional=e.is_transactional,
        producer_id=e.at.producer_id if e.is_transactional else None,
        producer_epoch=e.at.producer_epoch if e.is_transactional else None,
        status=status,
        resolved_at=ts,
        resolved_by=how,
        effective_at=ts,
    )
