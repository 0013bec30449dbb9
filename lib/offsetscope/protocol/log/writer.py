"""Write batches and whole partition directories the way a Kafka broker lays them out.

:func:`encode_batch` builds one batch (any magic, any codec) byte-identical to Kafka's
``MemoryRecordsBuilder``. :class:`PartitionWriter` is the leader's append path of one partition
(``UnifiedLog.append`` + ``LogSegment.append``), minus replication:

* offsets are assigned from the log end offset; the partition leader epoch is stamped on every
  batch and a new epoch starts a ``leader-epoch-checkpoint`` entry at the batch's base offset;
* a new segment is rolled before an append when the active one would exceed ``segment_bytes``
  (``size > segment.bytes - batchSize``), when ``segment_ms`` passed between the first batch's and
  this batch's max timestamp, when an index is full or when the offset no longer fits relative
  to the segment base; the new segment is named by the batch's first offset (20 digits);
* ``.index`` gets an entry (last offset of the batch, its position) when more than
  ``index_interval_bytes`` were appended since the previous entry, ``.timeindex`` an entry with
  the largest timestamp so far when it grows; when a segment is rolled or the writer closed, the
  time index gets its final entry and both are trimmed (what a clean shutdown leaves);
* producer state is tracked as ``ProducerStateManager`` does: transactions open at their first
  transactional batch, an ABORT marker adds an ``AbortedTxn`` (with the last stable offset) to
  the active segment's ``.txnindex``, and a ``.snapshot`` is written at every roll (named by the
  new segment's base offset) and at close (named by the log end offset);
* ``partition.metadata`` holds the topic id when one is given.

Timing goals are not a concern here; correctness of every byte is.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Final, Self

from offsetscope.protocol.log.batch import encode_empty_batch, encode_v2_batch
from offsetscope.protocol.log.checkpoint import (
    LEADER_EPOCH_CHECKPOINT,
    PARTITION_METADATA,
    EpochEntry,
    encode_leader_epoch_checkpoint,
    encode_partition_metadata,
)
from offsetscope.protocol.log.compression import Compression
from offsetscope.protocol.log.control import EndTxnMarker
from offsetscope.protocol.log.index import (
    OFFSET_INDEX_ENTRY_SIZE,
    TIME_INDEX_ENTRY_SIZE,
    AbortedTxn,
    OffsetPosition,
    ProducerSnapshotEntry,
    TimestampOffset,
    encode_offset_index,
    encode_producer_snapshot,
    encode_time_index,
    encode_txn_index,
)
from offsetscope.protocol.log.legacy import encode_legacy
from offsetscope.protocol.log.model import (
    MAGIC_V0,
    MAGIC_V1,
    MAGIC_V2,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RecordBatch,
    RecordSpec,
    TimestampType,
)
from offsetscope.protocol.log.reader import read_batches, segment_file_name

__all__ = [
    "AppendInfo",
    "LogConfig",
    "PartitionWriter",
    "encode_batch",
    "encode_empty_batch",
    "encode_end_txn_marker_batch",
]


def encode_batch(
    records: Sequence[RecordSpec],
    *,
    base_offset: int,
    magic: int = MAGIC_V2,
    compression: Compression = Compression.NONE,
    compression_level: int | None = None,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time: int = NO_TIMESTAMP,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = 0,
    delete_horizon_ms: int | None = None,
    last_offset: int | None = None,
) -> bytes:
    """Build the bytes of one batch (magic 2) or message set (magic 0/1) as Kafka writes it.

    Args:
        records: the records; ``RecordSpec.offset`` gives explicit (increasing) offsets for
            batches with gaps, others take the next offset.
        base_offset: the batch base offset (first record offset without explicit offsets).
        magic: 2, or 0/1 for legacy fixtures (no producer fields, headers or zstd there).
        compression: the codec.
        compression_level: codec level; None = Kafka's default (gzip -1, lz4 9, zstd 3).
        timestamp_type: CreateTime or LogAppendTime.
        log_append_time: the broker time stamped on LogAppendTime batches.
        producer_id: -1 or the idempotent/transactional producer id.
        producer_epoch: the producer epoch (-1 without a producer).
        base_sequence: first record's sequence (-1 without a producer; control batches too).
        is_transactional: attribute bit 4.
        is_control: attribute bit 5 (records must be control records).
        partition_leader_epoch: stamped by the leader; 0 on a fresh single-broker cluster.
        delete_horizon_ms: KIP-534 delete horizon (attribute bit 6, stored as baseTimestamp).
        last_offset: overrides the last offset (a compacted batch keeps its original one).

    Returns:
        The encoded bytes, ready to append to a ``.log`` file.

    Raises:
        ValueError: combinations Kafka's builder rejects.
    """
    if magic == MAGIC_V2:
        return encode_v2_batch(
            records,
            base_offset=base_offset,
            compression=compression,
            compression_level=compression_level,
            timestamp_type=timestamp_type,
            log_append_time=log_append_time,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            is_transactional=is_transactional,
            is_control=is_control,
            partition_leader_epoch=partition_leader_epoch,
            delete_horizon_ms=delete_horizon_ms,
            last_offset=last_offset,
        )
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise ValueError(f"unsupported magic {magic}")
    if is_transactional or is_control or producer_id != NO_PRODUCER_ID:
        raise ValueError(
            f"producer ids, transactions and control records need magic 2, not {magic}"
        )
    if delete_horizon_ms is not None or last_offset is not None:
        raise ValueError(f"delete horizons and last-offset overrides need magic 2, not {magic}")
    return encode_legacy(
        records,
        base_offset=base_offset,
        magic=magic,
        compression=compression,
        compression_level=compression_level,
        timestamp_type=timestamp_type,
        log_append_time=log_append_time,
    )


def encode_end_txn_marker_batch(
    *,
    base_offset: int,
    producer_id: int,
    producer_epoch: int,
    committed: bool,
    coordinator_epoch: int,
    timestamp: int,
    partition_leader_epoch: int = 0,
) -> bytes:
    """A COMMIT/ABORT control batch as ``MemoryRecords.withEndTransactionMarker`` builds it.

    One control record (key ``int16 0, int16 type``, value EndTxnMarker), CreateTime with the
    given timestamp, transactional, base sequence -1.
    """
    marker = EndTxnMarker(committed=committed, coordinator_epoch=coordinator_epoch)
    return encode_v2_batch(
        [RecordSpec(marker.encode_key(), marker.encode_value(), timestamp)],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


# ------------------------------------------------------------------------ partition writer


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Topic-level log settings that shape the directory (Kafka's names in the comments).

    Defaults are Kafka's broker defaults; ``__consumer_offsets`` and ``__transaction_state`` use
    ``segment_bytes=104857600`` (``offsets.topic.segment.bytes``,
    ``transaction.state.log.segment.bytes``).
    """

    segment_bytes: int = 1024 * 1024 * 1024  # segment.bytes
    segment_ms: int = 7 * 24 * 3600 * 1000  # segment.ms
    index_interval_bytes: int = 4096  # index.interval.bytes
    segment_index_bytes: int = 10 * 1024 * 1024  # segment.index.bytes


@dataclass(frozen=True, slots=True)
class AppendInfo:
    """Where an append landed."""

    base_offset: int
    last_offset: int
    segment_base_offset: int
    position: int
    size: int
    max_timestamp: int


@dataclass(slots=True)
class _ProducerState:
    epoch: int
    last_sequence: int = NO_SEQUENCE
    last_offset: int = -1
    offset_delta: int = 0
    timestamp: int = NO_TIMESTAMP
    coordinator_epoch: int = -1
    txn_first_offset: int = -1


@dataclass(slots=True)
class _Segment:
    base_offset: int
    handle: BinaryIO
    size: int = 0
    offset_index: list[OffsetPosition] = field(default_factory=list)
    time_index: list[TimestampOffset] = field(default_factory=list)
    aborted: list[AbortedTxn] = field(default_factory=list)
    bytes_since_index: int = 0
    max_timestamp: int = NO_TIMESTAMP
    offset_of_max_timestamp: int = -1
    rolling_timestamp: int | None = None


_MAX_RELATIVE: Final = 0x7FFFFFFF


class PartitionWriter:
    """Append batches to a partition directory laid out as a Kafka broker writes it.

    Example::

        with PartitionWriter(Path("logs/__consumer_offsets-0"), topic_id=tid) as log:
            info = log.append([RecordSpec(key, value, now)])
            log.append_end_txn_marker(producer_id=7, producer_epoch=0, committed=True,
                                      coordinator_epoch=0, timestamp=now)

    The directory must not contain segments yet (appending to an existing log is not
    supported: its producer and index state would have to be recovered first).
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        config: LogConfig | None = None,
        topic_id: uuid.UUID | None = None,
        start_offset: int = 0,
        leader_epoch: int = 0,
    ) -> None:
        self.directory = Path(directory)
        self.config = config or LogConfig()
        self.topic_id = topic_id
        self.leader_epoch = leader_epoch
        self.directory.mkdir(parents=True, exist_ok=True)
        if any(self.directory.glob("*.log")):
            raise FileExistsError(f"{self.directory} already holds segments")
        self._next_offset = start_offset
        self._epochs: list[EpochEntry] = []
        self._producers: dict[int, _ProducerState] = {}
        self._segments: list[int] = []
        self._active = self._open_segment(start_offset)
        self._closed = False
        if topic_id is not None:
            (self.directory / PARTITION_METADATA).write_text(
                encode_partition_metadata(topic_id), encoding="utf-8"
            )

    # ------------------------------------------------------------------ public API

    @property
    def next_offset(self) -> int:
        """The log end offset: the offset the next record gets."""
        return self._next_offset

    @property
    def segment_base_offsets(self) -> list[int]:
        return list(self._segments)

    def append(
        self,
        records: Sequence[RecordSpec],
        *,
        magic: int = MAGIC_V2,
        compression: Compression = Compression.NONE,
        compression_level: int | None = None,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
        log_append_time: int = NO_TIMESTAMP,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        is_transactional: bool = False,
        is_control: bool = False,
        partition_leader_epoch: int | None = None,
        delete_horizon_ms: int | None = None,
    ) -> AppendInfo:
        """Encode ``records`` as one batch at the log end offset and append it.

        Explicit ``RecordSpec.offset`` values are not allowed here (the log assigns offsets).
        ``partition_leader_epoch`` defaults to the writer's ``leader_epoch``. Other arguments
        as in :func:`encode_batch`.
        """
        if any(spec.offset is not None for spec in records):
            raise ValueError("the partition log assigns offsets; RecordSpec.offset must be None")
        data = encode_batch(
            records,
            base_offset=self._next_offset,
            magic=magic,
            compression=compression,
            compression_level=compression_level,
            timestamp_type=timestamp_type,
            log_append_time=log_append_time,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            is_transactional=is_transactional,
            is_control=is_control,
            partition_leader_epoch=(
                self.leader_epoch if partition_leader_epoch is None else partition_leader_epoch
            ),
            delete_horizon_ms=delete_horizon_ms,
        )
        return self._append(data, trusted=True)

    def append_end_txn_marker(
        self,
        *,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        coordinator_epoch: int,
        timestamp: int,
        partition_leader_epoch: int | None = None,
    ) -> AppendInfo:
        """Append a COMMIT or ABORT control batch for ``producer_id`` (WriteTxnMarkers)."""
        data = encode_end_txn_marker_batch(
            base_offset=self._next_offset,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            committed=committed,
            coordinator_epoch=coordinator_epoch,
            timestamp=timestamp,
            partition_leader_epoch=(
                self.leader_epoch if partition_leader_epoch is None else partition_leader_epoch
            ),
        )
        return self._append(data, trusted=True)

    def append_bytes(self, data: bytes) -> AppendInfo:
        """Append already-encoded batches whose offsets start at :attr:`next_offset`.

        The bytes are decoded first (strictly: CRCs, structure, offsets), so the writer's
        index, epoch and producer bookkeeping follows the real content.
        """
        return self._append(data, trusted=False)

    def _append(self, data: bytes, *, trusted: bool) -> AppendInfo:
        self._ensure_open()
        # Bytes this writer encoded itself need only their headers read back (plus the
        # records of control batches, for the markers); foreign bytes are decoded in full.
        batches = list(read_batches(data, strict=True, decode_records=not trusted))
        if trusted and any(b.is_control for b in batches):
            batches = list(read_batches(data, strict=True))
        if not batches:
            raise ValueError("no batch to append")
        first = batches[0].base_offset
        if first < self._next_offset:
            raise ValueError(
                f"batch starts at offset {first}, below the log end {self._next_offset}"
            )
        last = batches[-1].last_offset
        size = len(data)
        if size > self.config.segment_bytes:
            raise ValueError(f"{size} bytes exceed segment_bytes={self.config.segment_bytes}")
        max_ts, shallow_offset = _max_timestamp_and_offset(batches)
        if self._should_roll(size, max_ts, last):
            self._roll(first)
        seg = self._active
        position = seg.size
        seg.handle.write(data)
        seg.size += size
        self._after_append(seg, batches, position, size, max_ts, shallow_offset, last)
        self._next_offset = last + 1
        return AppendInfo(first, last, seg.base_offset, position, size, max_ts)

    def flush(self) -> None:
        """Flush the active segment's data to the OS."""
        self._active.handle.flush()

    def close(self) -> None:
        """Finish the active segment (final time-index entry, index files) and the checkpoints."""
        if self._closed:
            return
        self._finish_segment(self._active)
        self._write_snapshot(self._next_offset)
        self._write_epochs()
        self._closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals

    def _ensure_open(self) -> None:
        if self._closed:
            raise ValueError("the partition writer is closed")

    def _open_segment(self, base_offset: int) -> _Segment:
        path = self.directory / segment_file_name(base_offset, ".log")
        handle = path.open("xb")
        self._segments.append(base_offset)
        return _Segment(base_offset=base_offset, handle=handle)

    def _should_roll(self, size: int, max_timestamp: int, last_offset: int) -> bool:
        """``LogSegment.shouldRoll``."""
        seg = self._active
        cfg = self.config
        reached_ms = (
            seg.size > 0
            and seg.rolling_timestamp is not None
            and seg.rolling_timestamp >= 0
            and max_timestamp - seg.rolling_timestamp > cfg.segment_ms
        )
        index_full = len(seg.offset_index) >= cfg.segment_index_bytes // OFFSET_INDEX_ENTRY_SIZE
        time_full = len(seg.time_index) >= cfg.segment_index_bytes // TIME_INDEX_ENTRY_SIZE
        return (
            seg.size > cfg.segment_bytes - size
            or reached_ms
            or index_full
            or time_full
            or last_offset - seg.base_offset > _MAX_RELATIVE
        )

    def _roll(self, first_offset: int) -> None:
        old = self._active
        self._finish_segment(old)
        base = max(first_offset, self._next_offset)
        self._active = self._open_segment(base)
        self._write_snapshot(base)

    def _after_append(
        self,
        seg: _Segment,
        batches: list[RecordBatch],
        position: int,
        size: int,
        max_ts: int,
        shallow_offset: int,
        last_offset: int,
    ) -> None:
        if position == 0:
            seg.rolling_timestamp = max_ts
        if max_ts > seg.max_timestamp:
            seg.max_timestamp = max_ts
            seg.offset_of_max_timestamp = shallow_offset
        if seg.bytes_since_index > self.config.index_interval_bytes:
            seg.offset_index.append(OffsetPosition(last_offset, position))
            self._maybe_time_entry(seg)
            seg.bytes_since_index = 0
        seg.bytes_since_index += size
        for batch in batches:
            if batch.magic >= MAGIC_V2 and batch.partition_leader_epoch >= 0:
                latest = self._epochs[-1].epoch if self._epochs else -1
                if batch.partition_leader_epoch > latest:
                    self._epochs.append(EpochEntry(batch.partition_leader_epoch, batch.base_offset))
            self._update_producer(seg, batch)

    def _maybe_time_entry(self, seg: _Segment) -> None:
        """``TimeIndex.maybeAppend``: only a strictly larger timestamp makes an entry."""
        last_ts = seg.time_index[-1].timestamp if seg.time_index else NO_TIMESTAMP
        if seg.max_timestamp > last_ts:
            seg.time_index.append(TimestampOffset(seg.max_timestamp, seg.offset_of_max_timestamp))

    def _update_producer(self, seg: _Segment, batch: RecordBatch) -> None:
        if batch.producer_id == NO_PRODUCER_ID:
            return
        state = self._producers.setdefault(batch.producer_id, _ProducerState(batch.producer_epoch))
        state.epoch = batch.producer_epoch
        state.timestamp = batch.max_timestamp
        if batch.is_control:
            marker = batch.end_txn_marker()
            if marker is None:
                return
            state.coordinator_epoch = marker.coordinator_epoch
            first = state.txn_first_offset
            state.txn_first_offset = -1
            if first >= 0 and not marker.committed:
                seg.aborted.append(
                    AbortedTxn(batch.producer_id, first, batch.last_offset, self._lso(batch))
                )
            return
        if batch.base_sequence != NO_SEQUENCE:
            state.last_sequence = batch.last_sequence
            state.last_offset = batch.last_offset
            state.offset_delta = batch.last_offset - batch.base_offset
        if batch.is_transactional and state.txn_first_offset < 0:
            state.txn_first_offset = batch.base_offset

    def _lso(self, marker_batch: RecordBatch) -> int:
        """``ProducerStateManager.lastStableOffset(completedTxn)``."""
        open_firsts = [
            s.txn_first_offset
            for pid, s in self._producers.items()
            if pid != marker_batch.producer_id and s.txn_first_offset >= 0
        ]
        return min(open_firsts, default=marker_batch.last_offset + 1)

    def _finish_segment(self, seg: _Segment) -> None:
        """``LogSegment.onBecomeInactiveSegment`` + close: final time entry, trimmed indexes."""
        self._maybe_time_entry(seg)
        seg.handle.close()
        base = seg.base_offset
        (self.directory / segment_file_name(base, ".index")).write_bytes(
            encode_offset_index(seg.offset_index, base)
        )
        (self.directory / segment_file_name(base, ".timeindex")).write_bytes(
            encode_time_index(seg.time_index, base)
        )
        if seg.aborted:
            (self.directory / segment_file_name(base, ".txnindex")).write_bytes(
                encode_txn_index(seg.aborted)
            )

    def _write_snapshot(self, offset: int) -> None:
        entries = [
            ProducerSnapshotEntry(
                producer_id=pid,
                epoch=s.epoch,
                last_sequence=s.last_sequence,
                last_offset=s.last_offset,
                offset_delta=s.offset_delta,
                timestamp=s.timestamp,
                coordinator_epoch=s.coordinator_epoch,
                current_txn_first_offset=s.txn_first_offset,
            )
            for pid, s in sorted(self._producers.items())
        ]
        (self.directory / segment_file_name(offset, ".snapshot")).write_bytes(
            encode_producer_snapshot(entries)
        )

    def _write_epochs(self) -> None:
        (self.directory / LEADER_EPOCH_CHECKPOINT).write_text(
            encode_leader_epoch_checkpoint(self._epochs), encoding="utf-8"
        )


def _max_timestamp_and_offset(batches: Sequence[RecordBatch]) -> tuple[int, int]:
    """``LogAppendInfo`` max timestamp and the shallow offset of the max timestamp.

    For v2 and compressed legacy batches the offset is the batch's last offset; for uncompressed
    legacy messages the offset of the (first) message with the largest timestamp.
    """
    max_ts = NO_TIMESTAMP
    offset = -1
    for batch in batches:
        if batch.max_timestamp > max_ts:
            max_ts = batch.max_timestamp
            offset = batch.last_offset
    return max_ts, offset
