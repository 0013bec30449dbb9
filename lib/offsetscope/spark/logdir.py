"""A Kafka log directory as a stream: partition offsets, seeks, record ranges, end offsets.

Pure Python (pyarrow, numpy, the protocol's log reader); the Spark data source in
:mod:`offsetscope.spark.sources` calls it on the driver (offsets) and on executors (records).

Layout read (``kafka-formats.md`` section 7)::

    <log_dir>/<topic>-<partition>/00000000000000000000.log      batches, back to back
                                 /00000000000000000000.index    int32 relativeOffset | int32 position
                                 /00000000000000001234.log      next segment, named by base offset

Every batch is framed by its first 17 bytes (``int64 baseOffset | int32 length | int32 epoch |
int8 magic``) and is ``12 + length`` bytes long. For magic 2 the header goes on::

    17 crc uint32 | 21 attributes int16 | 23 lastOffsetDelta int32 | 27 baseTimestamp int64
    | 35 maxTimestamp int64 | 43 producerId int64 | 51 producerEpoch int16 | 53 baseSequence int32
    | 57 recordsCount int32            attributes: 0x10 transactional, 0x20 control

A legacy entry (magic 0/1) carries its last offset in the offset field.

* **Offsets** of the stream are, per partition directory, the next offset to read; the newest is
  the log end offset (last complete batch of the last segment + 1). Finding it is cheap: frame
  forward from the last ``.index`` entry of the last segment, and remember where framing
  stopped, so the next call frames only what was appended since (:class:`LogEndCache`).
* **Seeking**: Kafka's ``.index`` maps a batch's last offset to its byte position, so the batch
  holding an offset starts at or after the position of the greatest entry not above it
  (``LogSegment.translateOffset``). Reading a range frames batches from there.
* **Incomplete tails** of the last segment (a batch being written, zero-filled preallocation)
  are where the log currently ends, never an error. A sealed segment whose framing breaks before
  its end, a CRC mismatch and an undecodable batch each become one *source error* row carrying
  the bytes, which the decode step quarantines: nothing is dropped silently.
* **End offsets** of data topics (lag without a broker): log start offset (the first segment's
  base offset), high watermark (the log end offset) and last stable offset (first offset of the
  earliest transaction still open: a transactional batch of a producer with no control batch of
  that producer after it), tracked incrementally by :class:`EndOffsetTracker`.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Final

import numpy as np
import pyarrow as pa

from offsetscope.protocol.log import (
    CorruptBatch,
    CrcMismatch,
    ScanReport,
    SegmentFiles,
    list_segments,
    read_batches,
    read_offset_index,
    scan_columns,
)
from offsetscope.protocol.log.columnar import gather_slices

_PREFIX: Final = struct.Struct(">qi")  # baseOffset, length; the magic byte is at 16
_V2_TAIL: Final = struct.Struct(">hiqqqh")  # attributes .. producerEpoch, from byte 21
HEADER_BYTES: Final = 61  # a v2 batch header
_FRAME_BYTES: Final = 17  # enough to frame any magic
_LEGACY_HEADER: Final = 18  # ... plus the legacy attributes byte
_MIN_BATCH: Final = 26  # 12-byte log overhead + the smallest legacy message (14)
_TRANSACTIONAL: Final = 0x10
_CONTROL: Final = 0x20
DEFAULT_CHUNK_BYTES: Final = 8 * 1024 * 1024
# Bytes of an unreadable segment tail kept in its quarantine row; the rest is only counted.
MAX_ERROR_BYTES: Final = 1024 * 1024
_DIR_NAME = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")


@dataclass(frozen=True, slots=True)
class PartitionDir:
    """One ``<topic>-<partition>`` directory of a log directory."""

    path: str
    topic: str
    partition: int

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


def partition_dirs(
    log_dir: str | os.PathLike[str], topics: Sequence[str] | None = None
) -> list[PartitionDir]:
    """The partition directories of ``log_dir`` (only ``topics``' when given), by name.

    Kafka's ``-delete``/``-future`` directories and anything not ``<topic>-<n>`` are skipped.
    """
    root = Path(log_dir)
    if not root.is_dir():
        return []
    found = []
    for entry in root.iterdir():
        match = _DIR_NAME.match(entry.name)
        if match is None or not entry.is_dir():
            continue
        topic = match.group("topic")
        if topics is not None and topic not in topics:
            continue
        found.append(PartitionDir(str(entry), topic, int(match.group("partition"))))
    return sorted(found, key=lambda d: (d.topic, d.partition))


# ----------------------------------------------------------------------------- framing


@dataclass(frozen=True, slots=True)
class BatchFrame:
    """Where one batch is and what its header says (enough for offsets and transactions)."""

    position: int
    size: int
    base_offset: int
    last_offset: int
    magic: int
    attributes: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & _TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & _CONTROL)


@dataclass(frozen=True, slots=True)
class FrameStop:
    """Why framing ended before the end of the file.

    ``incomplete`` is true for what a log being written looks like (a batch cut short, a header
    not complete yet, zero-filled preallocation); false for bytes that cannot be a batch.
    """

    position: int
    reason: str
    incomplete: bool


@dataclass(frozen=True, slots=True)
class Framed:
    """Result of :func:`frame_file`."""

    frames: list[BatchFrame]
    end_position: int  # after the last complete batch framed
    stop: FrameStop | None  # None: reached the end of the file, or ``stop_offset``
    file_size: int


class _Window:
    """Reads a file through a moving window of ``chunk`` bytes."""

    def __init__(self, handle: BinaryIO, chunk: int) -> None:
        self.handle = handle
        self.chunk = chunk
        self.start = 0
        self.buf = b""

    def get(self, pos: int, n: int) -> bytes:
        if pos < self.start or pos + n > self.start + len(self.buf):
            self.handle.seek(pos)
            self.buf = self.handle.read(max(n, self.chunk))
            self.start = pos
        off = pos - self.start
        return self.buf[off : off + n]


def frame_file(
    path: str | os.PathLike[str],
    position: int = 0,
    *,
    stop_offset: int | None = None,
    stop_timestamp: int | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> Framed:
    """Frame the batches of a ``.log`` file from ``position`` by their headers only.

    Args:
        path: the segment file.
        position: byte position of a batch (0, or an ``.index`` entry's position).
        stop_offset: stop before the first batch whose base offset is at or above it.
        stop_timestamp: stop before the first batch whose max timestamp is above it.
        chunk_bytes: read size; memory stays bounded by it.

    Returns:
        The frames, the position after the last complete one, and why framing ended early.
    """
    frames: list[BatchFrame] = []
    with Path(path).open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        window = _Window(handle, chunk_bytes)
        pos = position
        while pos < size:
            left = size - pos
            if left < _FRAME_BYTES:
                return Framed(frames, pos, FrameStop(pos, "incomplete batch header", True), size)
            head = window.get(pos, min(left, HEADER_BYTES))
            base, length = _PREFIX.unpack_from(head, 0)
            magic = head[16]
            if base == 0 and length == 0:
                return Framed(frames, pos, FrameStop(pos, "zero padding", True), size)
            batch_size = 12 + length
            if batch_size < _MIN_BATCH or magic > 2 or (magic == 2 and batch_size < HEADER_BYTES):
                reason = f"invalid batch length {length} (magic {magic})"
                return Framed(frames, pos, FrameStop(pos, reason, False), size)
            if stop_offset is not None and base >= stop_offset:
                return Framed(frames, pos, None, size)
            if batch_size > left:
                reason = f"batch of {batch_size} bytes, {left} left"
                return Framed(frames, pos, FrameStop(pos, reason, True), size)
            frame = _frame(head, pos, base, batch_size, magic)
            if stop_timestamp is not None and frame.max_timestamp > stop_timestamp:
                return Framed(frames, pos, None, size)
            frames.append(frame)
            pos += batch_size
        return Framed(frames, pos, None, size)


def _frame(head: bytes, pos: int, base: int, size: int, magic: int) -> BatchFrame:
    if magic >= 2:
        attributes, delta, _base_ts, max_ts, pid, epoch = _V2_TAIL.unpack_from(head, 21)
        return BatchFrame(
            pos, size, base, base + delta, magic, attributes & 0xFFFF, max_ts, pid, epoch
        )
    # Legacy entry: the offset field is the last offset of a (compressed) wrapper.
    return BatchFrame(pos, size, base, base, magic, head[17] if len(head) > 17 else 0, -1, -1, -1)


def seek_position(segment: SegmentFiles, offset: int) -> int:
    """Byte position in ``segment`` at or before the batch holding ``offset`` (from ``.index``)."""
    if segment.index is None or offset <= segment.base_offset:
        return 0
    entries = read_offset_index(segment.index.read_bytes(), segment.base_offset)
    position = 0
    for entry in entries:
        if entry.offset > offset:
            break
        position = entry.position
    return position


def record_timestamp(partition_path: str | os.PathLike[str], offset: int) -> int | None:
    """Timestamp of the first record at or after ``offset`` in a partition directory.

    That record is the first one a group with committed offset ``offset`` has not consumed, so
    ``as_of - timestamp`` is its lag in seconds, exactly (``offsetscope.history.lag``). Reads one
    batch: the segment holding the offset, sought with its ``.index``, framed by headers up to
    the batch holding it, which alone is decoded (transaction markers are skipped: consumers
    never see them). None when no record at or after ``offset`` is
    in the directory (deleted by retention, or not written yet).
    """
    segments = list_segments(partition_path)
    start = max((i for i, s in enumerate(segments) if s.base_offset <= offset), default=0)
    for segment in segments[start:]:
        framed = frame_file(segment.log, seek_position(segment, offset))
        for frame in framed.frames:
            if frame.last_offset < offset:
                continue
            with segment.log.open("rb") as handle:
                handle.seek(frame.position)
                data = handle.read(frame.size)
            for batch in read_batches(data, base_position=frame.position, file=str(segment.log)):
                if batch.is_control:  # a marker is never consumed: the next data record is
                    continue
                for record in batch.records:
                    if record.offset >= offset:
                        return record.timestamp
    return None


def _last_index_position(segment: SegmentFiles) -> int:
    if segment.index is None:
        return 0
    entries = read_offset_index(segment.index.read_bytes(), segment.base_offset)
    return entries[-1].position if entries else 0


# ----------------------------------------------------------------------------- log end


@dataclass(slots=True)
class _EndMark:
    segment_base: int
    position: int
    next_offset: int


@dataclass(slots=True)
class LogEndCache:
    """Where framing of each partition's last segment stopped, so the next call resumes there."""

    marks: dict[str, _EndMark] = field(default_factory=dict)

    def log_end_offset(self, pdir: PartitionDir) -> int:
        """The partition's log end offset (0 for a directory without segments)."""
        segments = list_segments(pdir.path)
        if not segments:
            return 0
        last = segments[-1]
        mark = self.marks.get(pdir.path)
        if mark is not None and mark.segment_base == last.base_offset:
            framed = frame_file(last.log, mark.position)
            following = mark.next_offset
        else:
            framed = frame_file(last.log, _last_index_position(last))
            following = last.base_offset
            if not framed.frames and framed.end_position > 0:
                framed = frame_file(last.log, 0)
        if framed.frames:
            following = framed.frames[-1].last_offset + 1
        self.marks[pdir.path] = _EndMark(last.base_offset, framed.end_position, following)
        return following


def log_start_offset(pdir: PartitionDir) -> int:
    """The first segment's base offset (0 without segments)."""
    segments = list_segments(pdir.path)
    return segments[0].base_offset if segments else 0


# ----------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class RangeRequest:
    """Records ``[start, end)`` of one partition directory, delivered as ``internal_topic``."""

    pdir: PartitionDir
    internal_topic: str
    start: int
    end: int


def read_range(
    request: RangeRequest, schema: pa.Schema, *, chunk_bytes: int = DEFAULT_CHUNK_BYTES
) -> Iterator[pa.RecordBatch]:
    """Stream the records of a range as Arrow batches of ``schema`` (the source schema).

    Control batches are included (``is_control``), with each batch's producer id, epoch and
    transactional flag on its records. Unreadable bytes inside the range become one source
    error row each (key null, the bytes as value, ``source_error`` set).
    """
    start, end = request.start, request.end
    if start >= end:
        return
    segments = list_segments(request.pdir.path)
    for i, segment in enumerate(segments):
        following = segments[i + 1].base_offset if i + 1 < len(segments) else None
        if following is not None and following <= start:
            continue
        if segment.base_offset >= end:
            break
        framed = frame_file(segment.log, seek_position(segment, start), stop_offset=end)
        frames = [f for f in framed.frames if f.last_offset >= start]
        for run in _runs(frames, chunk_bytes):
            yield from _read_run(request, segment, run, schema)
        stop = framed.stop
        sealed = following is not None
        if stop is not None and (sealed or not stop.incomplete):
            # Bytes that cannot be framed. In a sealed segment the rest of it is lost; in the
            # active one the log cannot grow past them. Report them once, at the next offset.
            at = frames[-1].last_offset + 1 if frames else max(start, segment.base_offset)
            if start <= at < end:
                yield _tail_error_row(request, segment, stop, framed.file_size, at, schema)


def _runs(frames: list[BatchFrame], chunk_bytes: int) -> Iterator[list[BatchFrame]]:
    run: list[BatchFrame] = []
    total = 0
    for frame in frames:
        if run and total + frame.size > chunk_bytes:
            yield run
            run, total = [], 0
        run.append(frame)
        total += frame.size
    if run:
        yield run


def _binary(offsets: np.ndarray, data: np.ndarray, valid: np.ndarray) -> pa.Array:
    n = len(valid)
    validity = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(
        pa.binary(),
        n,
        [
            validity,
            pa.py_buffer(offsets.astype(np.int32)),
            pa.py_buffer(np.ascontiguousarray(data)),
        ],
    )


def _read_run(
    request: RangeRequest, segment: SegmentFiles, run: list[BatchFrame], schema: pa.Schema
) -> Iterator[pa.RecordBatch]:
    first = run[0].position
    stop = run[-1].position + run[-1].size
    with segment.log.open("rb") as handle:
        handle.seek(first)
        data = handle.read(stop - first)
    report = ScanReport()
    chunk = scan_columns(data, base_position=first, report=report, file=str(segment.log))
    records, headers = chunk.records, chunk.batches
    offsets = records.offset
    keep = np.flatnonzero((offsets >= request.start) & (offsets < request.end))
    n = len(keep)
    if n:
        b = records.batch[keep]
        key_offsets, key_data, key_valid = gather_slices(
            records.buffer, records.key_start[keep], records.key_length[keep]
        )
        value_offsets, value_data, value_valid = gather_slices(
            records.buffer, records.value_start[keep], records.value_length[keep]
        )
        pdir = request.pdir
        columns = {
            "topic": pa.array([request.internal_topic] * n, pa.string()),
            "partition": pa.array(np.full(n, pdir.partition, dtype=np.int32)),
            "offset": pa.array(offsets[keep]),
            "timestamp": pa.array(records.timestamp[keep]),
            "key": _binary(key_offsets, key_data, key_valid),
            "value": _binary(value_offsets, value_data, value_valid),
            "producer_id": pa.array(headers.producer_id[b]),
            "producer_epoch": pa.array(headers.producer_epoch[b]),
            "is_transactional": pa.array(headers.is_transactional[b]),
            "is_control": pa.array(headers.is_control[b]),
            "source_topic": pa.array([pdir.topic] * n, pa.string()),
            "source_error": pa.nulls(n, schema.field("source_error").type),
        }
        yield pa.RecordBatch.from_arrays([columns[f.name] for f in schema], schema=schema)
    bad = np.flatnonzero(~headers.decoded)
    if len(bad):
        by_position = {
            d.position: d for d in report.diagnostics if isinstance(d, CrcMismatch | CorruptBatch)
        }
        rows = []
        for i in bad.tolist():
            base = int(headers.base_offset[i])
            if not request.start <= base < request.end:
                continue  # reported by the range holding its base offset
            position = int(headers.position[i])
            size = int(headers.size[i])
            diag = by_position.get(position)
            rows.append(
                _error_row(
                    request,
                    base,
                    int(headers.max_timestamp[i]),
                    data[position - first : position - first + size],
                    _diagnostic_error(diag, position),
                )
            )
        if rows:
            yield pa.RecordBatch.from_pylist(rows, schema=schema)


def _diagnostic_error(diag: CrcMismatch | CorruptBatch | None, position: int) -> dict[str, object]:
    if isinstance(diag, CrcMismatch):
        return {
            "error_class": "CrcMismatchError",
            "message": f"stored CRC {diag.stored:#010x}, computed {diag.computed:#010x}",
            "field_path": f"batch[{diag.batch_index}].crc",
            "byte_offset": position + 17,
        }
    if isinstance(diag, CorruptBatch):
        err = diag.error
        return {
            "error_class": type(err).__name__,
            "message": err.reason,
            "field_path": err.path,
            "byte_offset": err.offset,
        }
    return {
        "error_class": "CorruptBatchError",
        "message": "batch not decoded",
        "field_path": "batch",
        "byte_offset": position,
    }


def _error_row(
    request: RangeRequest, offset: int, timestamp: int, payload: bytes, error: Mapping[str, object]
) -> dict[str, object]:
    return {
        "topic": request.internal_topic,
        "partition": request.pdir.partition,
        "offset": offset,
        "timestamp": timestamp,
        "key": None,
        "value": payload,
        "producer_id": -1,
        "producer_epoch": -1,
        "is_transactional": False,
        "is_control": False,
        "source_topic": request.pdir.topic,
        "source_error": error,
    }


def _tail_error_row(
    request: RangeRequest,
    segment: SegmentFiles,
    stop: FrameStop,
    file_size: int,
    offset: int,
    schema: pa.Schema,
) -> pa.RecordBatch:
    length = file_size - stop.position
    with segment.log.open("rb") as handle:
        handle.seek(stop.position)
        payload = handle.read(min(length, MAX_ERROR_BYTES))
    kept = "" if length <= MAX_ERROR_BYTES else f" (first {MAX_ERROR_BYTES} bytes kept)"
    error = {
        "error_class": "InvalidTailError" if not stop.incomplete else "TruncatedSegmentError",
        "message": f"{stop.reason}; {length} bytes from here to the end of {segment.log.name} "
        f"cannot be framed{kept}",
        "field_path": segment.log.name,
        "byte_offset": stop.position,
    }
    return pa.RecordBatch.from_pylist(
        [_error_row(request, offset, -1, payload, error)], schema=schema
    )


# ----------------------------------------------------------------------------- end offsets


@dataclass(frozen=True, slots=True)
class PartitionEnd:
    """A data partition's offsets computed from its segments."""

    topic: str
    partition: int
    log_start_offset: int
    high_watermark: int
    last_stable_offset: int
    max_timestamp: int  # newest batch timestamp seen (-1: none)


@dataclass(slots=True)
class _TrackerMark:
    segment_base: int
    position: int
    next_offset: int
    open_txns: dict[int, int]  # producer id -> first offset of its open transaction
    max_timestamp: int


@dataclass(slots=True)
class EndOffsetTracker:
    """Log start, high watermark and last stable offset of data partitions, incrementally.

    Each call frames only the batches appended since the previous one (headers, no records).
    If the segment it stopped in was deleted (retention), it starts again from the first
    segment: the transactions open before are then unknown until their markers pass.
    """

    marks: dict[str, _TrackerMark] = field(default_factory=dict)

    def advance(self, pdir: PartitionDir, until_ms: int | None = None) -> PartitionEnd:
        """The partition's offsets including every batch up to ``until_ms`` (all if ``None``).

        Batches are taken in log order up to the first one whose max timestamp is later than
        ``until_ms``: the log as it stood at that time (replaying a log directory offline).
        """
        segments = list_segments(pdir.path)
        mark = self.marks.get(pdir.path)
        bases = [s.base_offset for s in segments]
        if mark is None or mark.segment_base not in bases:
            first = bases[0] if bases else 0
            mark = _TrackerMark(first, 0, first, {}, -1)
        for segment in segments:
            if segment.base_offset < mark.segment_base:
                continue
            position = mark.position if segment.base_offset == mark.segment_base else 0
            framed = frame_file(segment.log, position, stop_timestamp=until_ms)
            for frame in framed.frames:
                if frame.is_control:
                    mark.open_txns.pop(frame.producer_id, None)
                elif frame.is_transactional:
                    mark.open_txns.setdefault(frame.producer_id, frame.base_offset)
                mark.next_offset = frame.last_offset + 1
                mark.max_timestamp = max(mark.max_timestamp, frame.max_timestamp)
            mark.segment_base = segment.base_offset
            mark.position = framed.end_position
            if not framed.frames and mark.next_offset < segment.base_offset:
                mark.next_offset = segment.base_offset
            if framed.end_position < framed.file_size and framed.stop is None:
                break  # stopped at a batch later than until_ms
        self.marks[pdir.path] = mark
        start = bases[0] if bases else 0
        hw = mark.next_offset
        lso = min(mark.open_txns.values(), default=hw)
        return PartitionEnd(pdir.topic, pdir.partition, start, hw, lso, mark.max_timestamp)
