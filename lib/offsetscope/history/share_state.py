"""Share-partition state (KIP-932): ``__share_group_state`` records -> the state after each one.

The share coordinator keeps, per share group, topic and partition, where the share-partition
starts (records below the start offset are all done) and, above it, batches of records with
their delivery state (0 Available, 2 Acknowledged, 4 Archived) and delivery count. It writes a
``ShareSnapshot`` (type 0: the whole state, with the state epoch) now and then, and a
``ShareUpdate`` (type 1: a new start offset and the batches that changed) per acknowledgement
in between (``docs/formats.md``, ``protocol/share_state.py``).

This fold replays them as the coordinator does when it loads the topic: a snapshot replaces the
state; an update moves the start offset (-1 keeps it), lays its batches over the ranges they
cover, and drops what lies below the start offset. Each record gives one
``share_partition_state`` row: the state after it, with the records still in flight (in
Available batches), acknowledged and archived, and the highest delivery count.

State per share-partition (:class:`SharePartitionState`): the last record read and the state
after it; its size is the number of batches, which Kafka bounds
(``group.share.partition.max.record.locks``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from offsetscope.history.codec import JsonState
from offsetscope.history.events import ShareStateEvent
from offsetscope.history.rows import SharePartitionStateRow, ShareStateBatch

SNAPSHOT = 0  # ShareSnapshot
UPDATE = 1  # ShareUpdate
AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4


@dataclass(frozen=True, slots=True)
class SharePartitionState(JsonState):
    """What the fold carries between batches for one (group, topic id, partition)."""

    group_id: str
    topic_id: str
    partition: int
    record_partition: int
    last_offset: int
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int | None
    batches: tuple[ShareStateBatch, ...]


def share_key(group_id: str, topic_id: str, partition: int) -> str:
    """The fold-state key of a share-partition."""
    return f"{group_id}:{topic_id}:{partition}"


def _batches(entries: Iterable[Mapping[str, Any]]) -> list[ShareStateBatch]:
    return [
        ShareStateBatch(
            int(b["firstOffset"]),
            int(b["lastOffset"]),
            int(b["deliveryState"]),
            int(b["deliveryCount"]),
        )
        for b in entries
    ]


def overlay(
    base: Iterable[ShareStateBatch], updates: Iterable[ShareStateBatch], start_offset: int
) -> tuple[ShareStateBatch, ...]:
    """``base`` with ``updates`` laid over the ranges they cover, nothing below
    ``start_offset``, in offset order (adjacent equal batches are not merged: they are kept
    as written)."""
    out = sorted(base, key=lambda b: b.first_offset)
    for u in sorted(updates, key=lambda b: b.first_offset):
        kept: list[ShareStateBatch] = []
        for b in out:
            if b.last_offset < u.first_offset or b.first_offset > u.last_offset:
                kept.append(b)
                continue
            if b.first_offset < u.first_offset:  # the part before the update
                kept.append(
                    ShareStateBatch(
                        b.first_offset, u.first_offset - 1, b.delivery_state, b.delivery_count
                    )
                )
            if b.last_offset > u.last_offset:  # the part after it
                kept.append(
                    ShareStateBatch(
                        u.last_offset + 1, b.last_offset, b.delivery_state, b.delivery_count
                    )
                )
        kept.append(u)
        out = sorted(kept, key=lambda b: b.first_offset)
    trimmed = []
    for b in out:
        if b.last_offset < start_offset:
            continue
        if b.first_offset < start_offset:
            b = ShareStateBatch(start_offset, b.last_offset, b.delivery_state, b.delivery_count)
        trimmed.append(b)
    return tuple(trimmed)


def _count(batches: Iterable[ShareStateBatch], state: int) -> int:
    return sum(b.last_offset - b.first_offset + 1 for b in batches if b.delivery_state == state)


def fold_share_state(
    state: SharePartitionState | None,
    events: Iterable[ShareStateEvent],
    *,
    topic_name: str | None = None,
) -> tuple[SharePartitionState | None, list[SharePartitionStateRow]]:
    """Fold one share-partition's records (log order); returns the state and a row per record.

    Args:
        state: the previous call's state (None: the first records of this share-partition).
        events: its records; those at or below the last one folded are skipped.
        topic_name: the topic's name, when known (the records carry only its id).
    """
    rows: list[SharePartitionStateRow] = []
    for e in events:
        if state is not None and e.at.offset <= state.last_offset:
            continue
        v = e.value
        if v is None:
            # A tombstone: the share-partition's state was deleted (its topic or group went).
            state = None
            continue
        start = int(v["startOffset"])
        complete = v.get("deliveryCompleteCount")
        complete = None if complete is None or int(complete) < 0 else int(complete)
        if e.record_type == SNAPSHOT or state is None:
            batches = overlay((), _batches(v.get("stateBatches") or ()), start)
            state_epoch = int(v.get("stateEpoch", state.state_epoch if state else 0))
        else:
            start = state.start_offset if start < 0 else start
            batches = overlay(state.batches, _batches(v.get("stateBatches") or ()), start)
            state_epoch = state.state_epoch
        state = SharePartitionState(
            group_id=e.group,
            topic_id=e.topic_id,
            partition=e.partition,
            record_partition=e.at.partition,
            last_offset=e.at.offset,
            snapshot_epoch=int(v["snapshotEpoch"]),
            state_epoch=state_epoch,
            leader_epoch=int(v["leaderEpoch"]),
            start_offset=start,
            delivery_complete_count=complete,
            batches=batches,
        )
        rows.append(
            SharePartitionStateRow(
                group_id=e.group,
                topic_id=e.topic_id,
                topic=topic_name,
                partition=e.partition,
                record_partition=e.at.partition,
                record_offset=e.at.offset,
                record_timestamp=e.at.timestamp,
                record_kind="snapshot" if e.record_type == SNAPSHOT else "update",
                snapshot_epoch=state.snapshot_epoch,
                state_epoch=state.state_epoch,
                leader_epoch=state.leader_epoch,
                start_offset=start,
                delivery_complete_count=complete,
                batches=batches,
                in_flight_records=_count(batches, AVAILABLE),
                acknowledged_records=_count(batches, ACKNOWLEDGED),
                archived_records=_count(batches, ARCHIVED),
                max_delivery_count=max((b.delivery_count for b in batches), default=0),
            )
        )
    return state, rows
