"""A Kafka log directory as a stream: partition offsets, seeks, record ranges, end offsets.

Pure Python (pyarrow, numpy, the protocol's log reader); the Spark data source in
:mod:`offsetscope.spark.sources` calls it on the driver (offsets) and on executors (records).

Layout read (``docs/formats.md`` section 7)::

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
from dataclasses import dataclass, field, fields
from typing import Any, Final, TypeAlias, overload

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from offsetscope import paths
from offsetscope.paths import RemotePath
from offsetscope.protocol.arrow_walk import slices
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
from offsetscope.protocol.log.columnar import BATCH_HEADER_DTYPE
from offsetscope.protocol.log.model import LOG_OVERHEAD

_PREFIX: Final = struct.Struct(">qi")  # baseOffset, length; the magic byte is at 16
HEADER_BYTES: Final = 61  # a v2 batch header
_FRAME_BYTES: Final = 17  # enough to frame any magic
_NO_LIMIT: Final = 2**63  # above every offset
_MIN_BATCH: Final = 26  # 12-byte log overhead + the smallest legacy message (14)
_TRANSACTIONAL: Final = 0x10
_CONTROL: Final = 0x20
DEFAULT_CHUNK_BYTES: Final = 8 * 1024 * 1024
# Bytes of an unreadable segment tail kept in its quarantine row; the rest is only counted.
MAX_ERROR_BYTES: Final = 1024 * 1024
I64: TypeAlias = npt.NDArray[np.int64]
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

    ``log_dir`` is a local path or a URI (:func:`offsetscope.paths.readable`); a partition's
    ``path`` is then a URI too. Kafka's ``-delete``/``-future`` directories and anything not
    ``<topic>-<n>`` are skipped.
    """
    root = paths.readable(log_dir)
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


# The 61 header bytes of every framed batch are read at once through the v2 header layout;
# a legacy entry's attributes byte is at 17 (its header fields are ignored otherwise).
_LEGACY_ATTRIBUTES_AT: Final = 17
_HEAD_SPAN: Final = np.arange(HEADER_BYTES, dtype=np.int64)
_COLUMNS: Final = tuple(f.name for f in fields(BatchFrame))


@dataclass(frozen=True, slots=True)
class FrameColumns:
    """Framed batches as one numpy array per :class:`BatchFrame` field (int64 each).

    Framing a busy ``__consumer_offsets`` segment meets hundreds of thousands of small batches;
    an object per batch would cost more than decoding their records. Indexing with an int gives
    a :class:`BatchFrame`, with an index array or mask the selected batches.
    """

    position: I64
    size: I64
    base_offset: I64
    last_offset: I64
    magic: I64
    attributes: I64
    max_timestamp: I64
    producer_id: I64
    producer_epoch: I64

    @classmethod
    def empty(cls) -> FrameColumns:
        return cls(*(np.zeros(0, np.int64) for _ in _COLUMNS))

    @classmethod
    def read(cls, buf: bytes, starts: Sequence[int], base: int) -> FrameColumns:
        """The headers of the batches at ``starts`` in ``buf`` (``buf`` is at file ``base``)."""
        if not starts:
            return cls.empty()
        local = np.asarray(starts, dtype=np.int64)
        data = np.frombuffer(buf, dtype=np.uint8)
        # Only a legacy entry at the end of the file can be shorter than a v2 header; the bytes
        # its header does not have are clipped to the buffer's end and never read.
        span = np.minimum(local[:, None] + _HEAD_SPAN, len(data) - 1)
        raw = np.ascontiguousarray(data[span])
        head = raw.view(BATCH_HEADER_DTYPE).ravel()
        v2 = head["magic"] >= 2
        base_offset = head["base_offset"].astype(np.int64)

        def v2_only(values: npt.NDArray[Any], legacy: int | npt.NDArray[Any]) -> I64:
            return np.where(v2, values, legacy).astype(np.int64)

        return cls(
            position=local + base,
            size=head["length"].astype(np.int64) + LOG_OVERHEAD,
            base_offset=base_offset,
            # A legacy entry's offset field is the last offset of a (compressed) wrapper.
            last_offset=v2_only(base_offset + head["last_offset_delta"], base_offset),
            magic=head["magic"].astype(np.int64),
            attributes=v2_only(
                head["attributes"].astype(np.int64) & 0xFFFF, raw[:, _LEGACY_ATTRIBUTES_AT]
            ),
            max_timestamp=v2_only(head["max_timestamp"], -1),
            producer_id=v2_only(head["producer_id"], -1),
            producer_epoch=v2_only(head["producer_epoch"], -1),
        )

    @classmethod
    def concat(cls, parts: Sequence[FrameColumns]) -> FrameColumns:
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return cls.empty()
        return cls(*(np.concatenate([getattr(p, name) for p in parts]) for name in _COLUMNS))

    def __len__(self) -> int:
        return len(self.position)

    @overload
    def __getitem__(self, item: int) -> BatchFrame: ...

    @overload
    def __getitem__(self, item: slice | npt.NDArray[Any]) -> FrameColumns: ...

    def __getitem__(self, item: int | slice | npt.NDArray[Any]) -> BatchFrame | FrameColumns:
        if isinstance(item, int | np.integer):
            return BatchFrame(*(int(getattr(self, name)[item]) for name in _COLUMNS))
        return FrameColumns(*(getattr(self, name)[item] for name in _COLUMNS))

    def __iter__(self) -> Iterator[BatchFrame]:
        for i in range(len(self)):
            yield self[i]


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

    frames: FrameColumns
    end_position: int  # after the last complete batch framed
    stop: FrameStop | None  # None: reached the end of the file, or ``stop_offset``
    file_size: int


def frame_file(
    path: str | os.PathLike[str] | RemotePath,
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
    limit = _NO_LIMIT if stop_offset is None else stop_offset
    parts: list[FrameColumns] = []
    with paths.readable(path).open("rb") as handle:
        size = paths.file_size(handle)
        pos = position
        while True:
            handle.seek(pos)
            buf = handle.read(max(chunk_bytes, HEADER_BYTES))
            # A file that shrank under us ends where its bytes end.
            file_end = size if len(buf) >= min(size - pos, HEADER_BYTES) else pos + len(buf)
            starts, end, stop, done = _frame_window(buf, pos, file_end, limit)
            frames = FrameColumns.read(buf, starts, pos)
            if stop_timestamp is not None:
                late = np.flatnonzero(frames.max_timestamp > stop_timestamp)
                if len(late):
                    cut = int(late[0])
                    parts.append(frames[:cut])
                    return Framed(FrameColumns.concat(parts), int(frames.position[cut]), None, size)
            parts.append(frames)
            if done:
                return Framed(FrameColumns.concat(parts), end, stop, size)
            pos = end


def _frame_window(
    buf: bytes, base: int, size: int, limit: int
) -> tuple[list[int], int, FrameStop | None, bool]:
    """Frame the batches whose headers are in ``buf`` (file bytes from ``base``; file ``size``).

    The only per-batch Python step of framing: each batch's ``int32 length`` gives where the
    next one starts. Returns ``(starts in buf, position framing reached, stop, done)``; not
    ``done`` means the next header is past ``buf`` and framing goes on from that position.
    """
    starts: list[int] = []
    append = starts.append
    unpack = _PREFIX.unpack_from
    window_end = len(buf)
    at_eof = base + window_end >= size
    local = 0
    while True:
        pos = base + local
        left = size - pos
        if left <= 0:
            return starts, pos, None, True
        if left < _FRAME_BYTES:
            return starts, pos, FrameStop(pos, "incomplete batch header", True), True
        if local + HEADER_BYTES > window_end and not at_eof:
            return starts, pos, None, False
        offset, length = unpack(buf, local)
        magic = buf[local + 16]
        if offset == 0 and length == 0:
            return starts, pos, FrameStop(pos, "zero padding", True), True
        batch_size = LOG_OVERHEAD + length
        if batch_size < _MIN_BATCH or magic > 2 or (magic == 2 and batch_size < HEADER_BYTES):
            reason = f"invalid batch length {length} (magic {magic})"
            return starts, pos, FrameStop(pos, reason, False), True
        if offset >= limit:
            return starts, pos, None, True
        if batch_size > left:
            reason = f"batch of {batch_size} bytes, {left} left"
            return starts, pos, FrameStop(pos, reason, True), True
        append(local)
        local += batch_size


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


def record_timestamp(
    partition_path: str | os.PathLike[str] | RemotePath, offset: int
) -> int | None:
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
        frames = framed.frames[framed.frames.last_offset >= start]
        for first, stop_at in _runs(frames, chunk_bytes):
            yield from _read_run(request, segment, first, stop_at, schema)
        stop = framed.stop
        sealed = following is not None
        if stop is not None and (sealed or not stop.incomplete):
            # Bytes that cannot be framed. In a sealed segment the rest of it is lost; in the
            # active one the log cannot grow past them. Report them once, at the next offset.
            at = int(frames.last_offset[-1]) + 1 if len(frames) else max(start, segment.base_offset)
            if start <= at < end:
                yield _tail_error_row(request, segment, stop, framed.file_size, at, schema)


def _runs(frames: FrameColumns, chunk_bytes: int) -> Iterator[tuple[int, int]]:
    """Byte ranges ``[first, stop)`` of consecutive frames, each about ``chunk_bytes`` at most.

    A run takes frames while they fit in ``chunk_bytes`` (a frame larger than that alone).
    """
    ends = frames.position + frames.size
    total = np.cumsum(frames.size)
    i, n = 0, len(frames)
    while i < n:
        before = int(total[i - 1]) if i else 0
        j = max(int(np.searchsorted(total, before + chunk_bytes, side="right")), i + 1)
        yield int(frames.position[i]), int(ends[j - 1])
        i = j


def _read_run(
    request: RangeRequest, segment: SegmentFiles, first: int, stop: int, schema: pa.Schema
) -> Iterator[pa.RecordBatch]:
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
        pdir = request.pdir
        columns = {
            "topic": pa.array([request.internal_topic] * n, pa.string()),
            "partition": pa.array(np.full(n, pdir.partition, dtype=np.int32)),
            "offset": pa.array(offsets[keep]),
            "timestamp": pa.array(records.timestamp[keep]),
            "key": slices(
                records.buffer, records.key_start[keep], records.key_length[keep], pa.binary()
            ),
            "value": slices(
                records.buffer, records.value_start[keep], records.value_length[keep], pa.binary()
            ),
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

    def open_transactions(self, pdir: PartitionDir) -> dict[int, int]:
        """Producer id -> first offset of its open transaction, as of the last ``advance``."""
        mark = self.marks.get(pdir.path)
        return dict(mark.open_txns) if mark is not None else {}

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
            frames = framed.frames
            # Only transactional and control batches open or close a transaction.
            txn = (frames.magic >= 2) & (frames.attributes & (_TRANSACTIONAL | _CONTROL) != 0)
            for i in np.flatnonzero(txn):
                frame = frames[int(i)]
                if frame.is_control:
                    mark.open_txns.pop(frame.producer_id, None)
                else:
                    mark.open_txns.setdefault(frame.producer_id, frame.base_offset)
            if len(frames):
                mark.next_offset = int(frames.last_offset[-1]) + 1
                mark.max_timestamp = max(mark.max_timestamp, int(frames.max_timestamp.max()))
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
