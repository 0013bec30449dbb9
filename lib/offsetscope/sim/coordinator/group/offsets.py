"""The committed-offset store of one ``__consumer_offsets`` partition (Kafka ``OffsetMetadataManager``).

State, rebuilt only by replaying records (``docs/formats.md`` sections 8.2, 8.3)::

    offsets        group -> topic -> partition -> OffsetAndMetadata   (what OffsetFetch returns)
    pending        producer id -> group -> topic -> partition -> OffsetAndMetadata
    open_txns      group -> topic -> partition -> {producer ids with a pending offset there}

* an OffsetCommit record in a non-transactional batch replaces ``offsets[g][t][p]``;
* one in a transactional batch (producer id set) goes to ``pending[pid]`` and is invisible until
  a marker of the same producer id is appended to this partition;
* a COMMIT marker moves the producer's pending offsets into ``offsets`` unless the key already
  holds a commit with a *higher log offset* (a later non-transactional commit wins); ABORT drops
  them;
* a tombstone removes the committed offset and every pending offset of that key.

Interface for the transaction coordinator (through the runtime): TxnOffsetCommit records are
appended as a transactional batch of the producer and replayed with its producer id; the
COMMIT/ABORT marker is a control batch appended to the same partition and replayed with
:meth:`OffsetStore.replay_end_transaction_marker`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from offsetscope.protocol.records import CoordinatorRecord
from offsetscope.sim.coordinator.group.records import new_offset_commit_tombstone

NO_PRODUCER_ID = -1

_Tree = dict[str, dict[str, dict[int, "OffsetAndMetadata"]]]


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A committed offset as the coordinator keeps it (Kafka ``OffsetAndMetadata``)."""

    committed_offset: int
    leader_epoch: int | None
    metadata: str
    commit_timestamp_ms: int
    # Only for commits with an explicit retention time (value v1).
    expire_timestamp_ms: int | None = None
    topic_id: uuid.UUID | None = None
    # Log offset of the record this came from (-1 until replayed); decides "most recent wins".
    record_offset: int = -1

    @classmethod
    def from_record(cls, record_offset: int, value: Mapping[str, Any]) -> OffsetAndMetadata:
        """Build from an OffsetCommitValue dict of any version (absent fields = defaults)."""
        leader_epoch = value.get("leaderEpoch", -1)
        expire = value.get("expireTimestamp", -1)
        topic_id = value.get("topicId")
        return cls(
            committed_offset=value["offset"],
            leader_epoch=None if leader_epoch == -1 else leader_epoch,
            metadata=value.get("metadata") or "",
            commit_timestamp_ms=value["commitTimestamp"],
            expire_timestamp_ms=None if expire is None or expire == -1 else expire,
            topic_id=None if topic_id is None or topic_id.int == 0 else topic_id,
            record_offset=record_offset,
        )


def _get(tree: _Tree, group: str, topic: str, partition: int) -> OffsetAndMetadata | None:
    topics = tree.get(group)
    if topics is None:
        return None
    partitions = topics.get(topic)
    if partitions is None:
        return None
    return partitions.get(partition)


def _put(tree: _Tree, group: str, topic: str, partition: int, value: OffsetAndMetadata) -> None:
    tree.setdefault(group, {}).setdefault(topic, {})[partition] = value


def _remove(tree: _Tree, group: str, topic: str, partition: int) -> OffsetAndMetadata | None:
    topics = tree.get(group)
    if topics is None:
        return None
    partitions = topics.get(topic)
    if partitions is None:
        return None
    removed = partitions.pop(partition, None)
    if not partitions:
        del topics[topic]
        if not topics:
            del tree[group]
    return removed


class OffsetStore:
    """Committed and pending transactional offsets of every group on one offsets partition."""

    __slots__ = ("offsets", "open_txns", "pending")

    def __init__(self) -> None:
        self.offsets: _Tree = {}
        self.pending: dict[int, _Tree] = {}
        self.open_txns: dict[str, dict[str, dict[int, set[int]]]] = {}

    # ------------------------------------------------------------------------- queries

    def offset(self, group: str, topic: str, partition: int) -> OffsetAndMetadata | None:
        """The committed offset of (group, topic, partition), or None."""
        return _get(self.offsets, group, topic, partition)

    def has_committed_offset(self, group: str, topic: str, partition: int) -> bool:
        return _get(self.offsets, group, topic, partition) is not None

    def has_pending_transactional_offsets(self, group: str, topic: str, partition: int) -> bool:
        producers = self.open_txns.get(group, {}).get(topic, {}).get(partition)
        return bool(producers)

    def has_open_transactions(self, group: str) -> bool:
        return group in self.open_txns

    def group_offsets(self, group: str) -> Mapping[str, Mapping[int, OffsetAndMetadata]]:
        """The committed offsets of ``group`` by topic and partition (read-only view)."""
        return self.offsets.get(group, {})

    def open_transaction_partitions(self, group: str) -> Iterator[tuple[str, int]]:
        for topic, partitions in self.open_txns.get(group, {}).items():
            for partition in partitions:
                yield topic, partition

    # ------------------------------------------------------------------------- tombstones

    def delete_all_offsets(self, group: str) -> list[CoordinatorRecord]:
        """Tombstones for every committed and pending offset of ``group`` (DeleteGroups).

        A partition with only a pending transactional offset gets one tombstone too; one that
        has both gets a single tombstone (Kafka does not write two in a row).
        """
        records = [
            new_offset_commit_tombstone(group, topic, partition)
            for topic, partitions in self.offsets.get(group, {}).items()
            for partition in partitions
        ]
        for topic, partition in self.open_transaction_partitions(group):
            if not self.has_committed_offset(group, topic, partition):
                records.append(new_offset_commit_tombstone(group, topic, partition))
        return records

    def expired_offsets(
        self,
        group: str,
        now_ms: int,
        retention_ms: int,
        base: Callable[[int], int],
        is_subscribed: Callable[[str], bool],
    ) -> tuple[list[tuple[str, int]], bool]:
        """Partitions whose offsets expired, and whether all of the group's offsets did.

        Kafka ``cleanupExpiredOffsets``: only topics the group is not subscribed to are candidates;
        an offset with an explicit expiry expires at it, others when ``now - base(commit time)``
        reaches the retention; partitions with a pending transactional offset are kept.

        Args:
            group: the group.
            now_ms: the coordinator time.
            retention_ms: ``offsets.retention.ms``.
            base: commit timestamp -> start of the retention period (the group's condition).
            is_subscribed: whether the group still subscribes to a topic.

        Returns:
            (expired (topic, partition) list in store order, all offsets expired and no open
            transaction).
        """
        expired: list[tuple[str, int]] = []
        all_expired = True
        for topic, partitions in self.offsets.get(group, {}).items():
            if is_subscribed(topic):
                all_expired = False
                continue
            for partition, oam in partitions.items():
                if oam.expire_timestamp_ms is not None:
                    is_expired = now_ms >= oam.expire_timestamp_ms
                else:
                    is_expired = now_ms - base(oam.commit_timestamp_ms) >= retention_ms
                if is_expired and not self.has_pending_transactional_offsets(
                    group, topic, partition
                ):
                    expired.append((topic, partition))
                else:
                    all_expired = False
        return expired, all_expired and not self.has_open_transactions(group)

    # ------------------------------------------------------------------------- replay

    def replay(
        self,
        record_offset: int,
        producer_id: int,
        key: Mapping[str, Any],
        value: Mapping[str, Any] | None,
    ) -> None:
        """Replay one OffsetCommit record (or tombstone) appended at ``record_offset``.

        Args:
            record_offset: the record's offset in the partition log.
            producer_id: the batch's producer id; -1 for non-transactional batches.
            key: the OffsetCommitKey dict.
            value: the OffsetCommitValue dict, or None for a tombstone.
        """
        group, topic, partition = key["group"], key["topic"], key["partition"]
        if value is not None:
            oam = OffsetAndMetadata.from_record(record_offset, value)
            if producer_id == NO_PRODUCER_ID:
                _put(self.offsets, group, topic, partition, oam)
            else:
                _put(self.pending.setdefault(producer_id, {}), group, topic, partition, oam)
                self.open_txns.setdefault(group, {}).setdefault(topic, {}).setdefault(
                    partition, set()
                ).add(producer_id)
            return
        _remove(self.offsets, group, topic, partition)
        # A tombstone also drops every pending transactional offset of the key.
        topics = self.open_txns.get(group)
        producers = None if topics is None else topics.get(topic, {}).pop(partition, None)
        if producers is not None:
            for pid in sorted(producers):
                tree = self.pending.get(pid)
                if tree is not None:
                    _remove(tree, group, topic, partition)
            if topics is not None and not topics.get(topic):
                topics.pop(topic, None)
                if not topics:
                    del self.open_txns[group]

    def replay_end_transaction_marker(
        self, producer_id: int, committed: bool
    ) -> list[tuple[str, str, int]]:
        """Resolve the producer's pending offsets on a COMMIT (True) or ABORT (False) marker.

        Returns:
            The (group, topic, partition) keys that were pending, in store order.
        """
        tree = self.pending.pop(producer_id, None)
        if tree is None:
            return []
        resolved: list[tuple[str, str, int]] = []
        for group, topics in tree.items():
            for topic, partitions in topics.items():
                for partition, oam in partitions.items():
                    resolved.append((group, topic, partition))
                    self._close(group, topic, partition, producer_id)
                    if not committed:
                        continue
                    existing = _get(self.offsets, group, topic, partition)
                    # Keep the most recent record: a later non-transactional commit wins.
                    if existing is None or oam.record_offset > existing.record_offset:
                        _put(self.offsets, group, topic, partition, oam)
        return resolved

    def _close(self, group: str, topic: str, partition: int, producer_id: int) -> None:
        topics = self.open_txns.get(group)
        if topics is None:
            return
        partitions = topics.get(topic)
        if partitions is None:
            return
        producers = partitions.get(partition)
        if producers is None:
            return
        producers.discard(producer_id)
        if not producers:
            del partitions[partition]
            if not partitions:
                del topics[topic]
                if not topics:
                    del self.open_txns[group]
