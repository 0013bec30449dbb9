"""The bundled coordinator's partition logs: batches appended in memory, written out as segments.

Kafka appends every coordinator write as a record batch to a partition of an internal topic; data
partitions receive producer batches and transaction markers. This module is that append path for
the bundled coordinator, kept in memory and deterministic:

* a :class:`PartitionLog` assigns offsets, keeps batches in order and tracks the state a broker
  derives from them: the high watermark (next offset), the log start offset, the first offset of
  every open transaction per producer id (so the last stable offset can be computed, as Kafka's
  ``ProducerStateManager`` does), and the aborted transactions a ``.txnindex`` lists (as its ``AbortedTxn`` entries);
* a :class:`LogStore` holds all partitions of all topics;
* serialising to a Kafka log directory happens at the edge (``offsetscope.protocol.log``), so the
  coordinator never deals with file formats.

Records are stored as bytes (key, value), exactly what goes to disk. The coordinator replays the
typed record it just appended itself, so decoding is never needed on the write path.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from offsetscope.protocol.log.index import AbortedTxn


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One record as it sits in a batch: bytes plus its timestamp (CREATE_TIME)."""

    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True, slots=True)
class Batch:
    """An appended record batch (magic 2 on disk)."""

    base_offset: int
    records: tuple[LogRecord, ...]
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    is_transactional: bool = False
    is_control: bool = False
    partition_leader_epoch: int = 0

    @property
    def last_offset(self) -> int:
        return self.base_offset + len(self.records) - 1

    @property
    def max_timestamp(self) -> int:
        return max(r.timestamp for r in self.records)


@dataclass(slots=True)
class PartitionLog:
    """The append-only log of one topic partition."""

    topic: str
    partition: int
    batches: list[Batch] = field(default_factory=list)
    log_start_offset: int = 0
    next_offset: int = 0
    # producer id -> first offset of its open (not yet marked) transaction in this partition
    open_txns: dict[int, int] = field(default_factory=dict)
    aborted: list[AbortedTxn] = field(default_factory=list)

    def append(
        self,
        records: Sequence[LogRecord],
        *,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        is_transactional: bool = False,
        is_control: bool = False,
        partition_leader_epoch: int = 0,
    ) -> Batch:
        """Append one batch; returns it with its assigned base offset."""
        if not records:
            raise ValueError(f"{self.name}: cannot append an empty batch")
        if is_control and not is_transactional:
            raise ValueError(f"{self.name}: control batches are transactional")
        batch = Batch(
            base_offset=self.next_offset,
            records=tuple(records),
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            is_transactional=is_transactional,
            is_control=is_control,
            partition_leader_epoch=partition_leader_epoch,
        )
        self.batches.append(batch)
        self.next_offset = batch.last_offset + 1
        if is_transactional and not is_control:
            self.open_txns.setdefault(producer_id, batch.base_offset)
        return batch

    def end_transaction(self, producer_id: int, *, marker_offset: int, committed: bool) -> None:
        """Close ``producer_id``'s open transaction; its marker sits at ``marker_offset``."""
        first = self.open_txns.pop(producer_id, None)
        if first is not None and not committed:
            self.aborted.append(
                AbortedTxn(producer_id, first, marker_offset, self.last_stable_offset)
            )

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def high_watermark(self) -> int:
        # Single replica, acks=all: everything appended is replicated.
        return self.next_offset

    @property
    def last_stable_offset(self) -> int:
        """First offset of the oldest open transaction, or the high watermark when none is open."""
        return min(self.open_txns.values(), default=self.high_watermark)


@dataclass(slots=True)
class LogStore:
    """All partition logs the coordinator and the simulated producers append to."""

    partition_counts: dict[str, int] = field(default_factory=dict)
    logs: dict[tuple[str, int], PartitionLog] = field(default_factory=dict)

    def create_topic(self, topic: str, partitions: int) -> None:
        existing = self.partition_counts.get(topic)
        if existing is not None and existing != partitions:
            raise ValueError(f"topic {topic} exists with {existing} partitions, not {partitions}")
        self.partition_counts[topic] = partitions
        for p in range(partitions):
            self.logs.setdefault((topic, p), PartitionLog(topic, p))

    def partition(self, topic: str, partition: int) -> PartitionLog:
        try:
            return self.logs[(topic, partition)]
        except KeyError:
            raise KeyError(f"unknown partition {topic}-{partition}") from None

    def __iter__(self) -> Iterator[PartitionLog]:
        return iter(sorted(self.logs.values(), key=lambda log: (log.topic, log.partition)))
