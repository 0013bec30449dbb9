"""Iterate the batches of a buffer, a ``.log`` segment file or a partition directory.

Framing is the same for every magic (``docs/formats.md`` section 7.2, Kafka's
``FileLogInputStream``): ``int64 offset, int32 length``, the magic byte at position 16, and
``12 + length`` bytes per batch. A length below 14 (the smallest legacy message) is corrupt.

What happens when bytes are bad:

* **Torn tail** (the last batch is cut short, fewer than 17 bytes left, or zero padding from a
  preallocated or crashed active segment): iteration stops cleanly and the report records an
  :class:`InvalidTail` and ``invalid_tail_bytes``, like Kafka's "Found N invalid bytes at the
  end". Never raised, not even in strict mode: it is what a crash leaves behind.
* **Lost framing in the middle** (a corrupt length with more data after it): the rest of the
  file cannot be framed; reported as an :class:`InvalidTail` (``zero_padding`` False); strict
  mode raises it.
* **CRC mismatch**: the length still frames the batch, so it is reported (:class:`CrcMismatch`),
  yielded with ``crc_valid=False`` and iteration continues; strict mode raises
  :class:`~offsetscope.protocol.errors.CrcMismatchError`.
* **Undecodable batch** (bad magic, records that do not parse, decompression failure, a batch
  over ``max_batch_bytes``): reported as :class:`CorruptBatch`, yielded with ``error`` set when
  its header could be read, and skipped by its length; strict mode raises the error.

Every error carries a field path (``batch[3].records[5].valueLength``) and the byte offset in the
file (inside compressed records: the offset of the compressed section, the decompressed byte is
named in the message). Files are streamed in chunks; memory stays bounded by the chunk size plus
the largest batch (itself bounded by ``max_batch_bytes``).
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Final

from offsetscope import paths
from offsetscope.paths import RemotePath
from offsetscope.protocol.errors import (
    CorruptBatchError,
    DecodeError,
    InvalidLengthError,
    TruncatedError,
    UnsupportedMagicError,
)
from offsetscope.protocol.log.batch import crc_error, decode_v2_batch
from offsetscope.protocol.log.compression import DEFAULT_MAX_DECOMPRESSED_BYTES
from offsetscope.protocol.log.legacy import decode_legacy_entry
from offsetscope.protocol.log.model import (
    HEADER_SIZE_UP_TO_MAGIC,
    LEGACY_RECORD_OVERHEAD_V0,
    LOG_OVERHEAD,
    MAGIC_V2,
    RecordBatch,
)

DEFAULT_CHUNK_BYTES: Final = 4 * 1024 * 1024
DEFAULT_MAX_BATCH_BYTES: Final = 64 * 1024 * 1024

_FRAME = struct.Struct(">qiib")
SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")


# ------------------------------------------------------------------------------ diagnostics


@dataclass(frozen=True, slots=True)
class CrcMismatch:
    """A batch whose stored CRC differs from the CRC of its bytes (it was still yielded)."""

    file: str
    batch_index: int
    position: int
    size: int
    base_offset: int
    stored: int
    computed: int


@dataclass(frozen=True, slots=True)
class CorruptBatch:
    """A framed batch whose contents could not be decoded; iteration went on after it."""

    file: str
    batch_index: int
    position: int
    size: int
    error: DecodeError


@dataclass(frozen=True, slots=True)
class InvalidTail:
    """Bytes at ``position`` up to the end that are not a batch; iteration stopped there.

    ``zero_padding`` is True when every such byte is zero (a preallocated or crashed segment),
    ``truncated`` when a batch header announced more bytes than the file holds (a torn write).
    """

    file: str
    position: int
    length: int
    reason: str
    zero_padding: bool
    truncated: bool
    error: DecodeError


Diagnostic = CrcMismatch | CorruptBatch | InvalidTail


@dataclass(slots=True)
class ScanReport:
    """What a reader met besides good batches; filled in while iterating.

    Pass one to :func:`read_batches`, :func:`read_segment` or :func:`read_partition_dir` and
    inspect it after (or during) iteration. Mutable on purpose: it is an accumulator.
    """

    batches: int = 0
    records: int = 0
    valid_bytes: int = 0
    invalid_tail_bytes: int = 0
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        """No diagnostics at all."""
        return not self.diagnostics

    @property
    def crc_mismatches(self) -> list[CrcMismatch]:
        return [d for d in self.diagnostics if isinstance(d, CrcMismatch)]

    @property
    def corrupt_batches(self) -> list[CorruptBatch]:
        return [d for d in self.diagnostics if isinstance(d, CorruptBatch)]

    @property
    def invalid_tails(self) -> list[InvalidTail]:
        return [d for d in self.diagnostics if isinstance(d, InvalidTail)]


# ----------------------------------------------------------------------------------- framing


@dataclass(frozen=True, slots=True)
class _Options:
    strict: bool
    decode_records: bool
    max_decompressed_bytes: int
    max_batch_bytes: int
    file: str


def _decode_framed(
    buf: bytes | bytearray | memoryview,
    pos: int,
    size: int,
    magic: int,
    *,
    base: int,
    index: int,
    opts: _Options,
    report: ScanReport,
) -> RecordBatch | None:
    """Decode one framed batch, record diagnostics, apply strictness. None = nothing to yield."""
    path = f"batch[{index}]"
    try:
        if magic == MAGIC_V2:
            batch = decode_v2_batch(
                buf,
                pos,
                size,
                base=base,
                path=path,
                decode_records=opts.decode_records,
                max_decompressed_bytes=opts.max_decompressed_bytes,
            )
        elif magic in (0, 1):
            batch = decode_legacy_entry(
                buf,
                pos,
                size,
                base=base,
                path=path,
                decode_records=opts.decode_records,
                max_decompressed_bytes=opts.max_decompressed_bytes,
            )
        else:
            raise UnsupportedMagicError(f"unknown magic {magic}", f"{path}.magic", base + pos + 16)
    except DecodeError as exc:
        if opts.strict:
            raise
        report.diagnostics.append(CorruptBatch(opts.file, index, base + pos, size, exc))
        return None
    if not batch.crc_valid:
        if opts.strict:
            raise crc_error(batch, path)
        report.diagnostics.append(
            CrcMismatch(
                opts.file,
                index,
                batch.position,
                batch.size,
                batch.base_offset,
                batch.crc,
                batch.computed_crc or 0,
            )
        )
    if batch.error is not None:
        if opts.strict:
            raise batch.error
        report.diagnostics.append(CorruptBatch(opts.file, index, batch.position, size, batch.error))
    report.batches += 1
    report.records += len(batch.records)
    return batch


def _tail(
    opts: _Options,
    report: ScanReport,
    position: int,
    length: int,
    reason: str,
    *,
    zero_padding: bool,
    truncated: bool,
    error: DecodeError,
) -> None:
    report.invalid_tail_bytes += length
    report.diagnostics.append(
        InvalidTail(opts.file, position, length, reason, zero_padding, truncated, error)
    )
    # Lost framing with real data after it is corruption, not a crash artefact.
    if opts.strict and not (zero_padding or truncated):
        raise error


def read_batches(
    data: bytes | bytearray | memoryview,
    *,
    base_position: int = 0,
    strict: bool = False,
    report: ScanReport | None = None,
    decode_records: bool = True,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    file: str = "",
) -> Iterator[RecordBatch]:
    """Iterate the batches in an in-memory buffer (a whole ``.log`` file's bytes, or a slice).

    Args:
        data: the bytes.
        base_position: file position of ``data[0]``; added to every position and error offset.
        strict: raise on CRC mismatches, corrupt batches and lost framing (not on a torn tail).
        report: receives diagnostics and counts.
        decode_records: decode records (else batches come with ``records=()``).
        max_decompressed_bytes: per-batch decompression bound.
        max_batch_bytes: batches larger than this are reported as corrupt and skipped.
        file: file name to put in diagnostics.

    Yields:
        Each batch in order.
    """
    rep = report if report is not None else ScanReport()
    opts = _Options(strict, decode_records, max_decompressed_bytes, max_batch_bytes, file)
    view = memoryview(data)
    end = len(view)
    pos = 0
    index = 0
    while pos < end:
        remaining = end - pos
        frame = _check_frame(view, pos, remaining, base_position, index)
        if isinstance(frame, _Stop):
            _tail(
                opts,
                rep,
                base_position + pos,
                remaining,
                frame.reason,
                zero_padding=not any(view[pos:]),
                truncated=frame.truncated,
                error=frame.error,
            )
            return
        size, magic = frame
        if size > max_batch_bytes:
            _oversized(opts, rep, index, base_position + pos, size)
        else:
            batch = _decode_framed(
                view, pos, size, magic, base=base_position, index=index, opts=opts, report=rep
            )
            if batch is not None:
                rep.valid_bytes += size
                yield batch
        pos += size
        index += 1


@dataclass(frozen=True, slots=True)
class _Stop:
    reason: str
    truncated: bool
    error: DecodeError


def _check_frame(
    view: memoryview, pos: int, remaining: int, base: int, index: int
) -> tuple[int, int] | _Stop:
    """Frame the batch at ``pos`` given ``remaining`` bytes up to end of file."""
    path = f"batch[{index}]"
    err: DecodeError
    if remaining < HEADER_SIZE_UP_TO_MAGIC:
        err = TruncatedError(f"{path}.magic", base + pos, HEADER_SIZE_UP_TO_MAGIC, remaining)
        return _Stop(f"{remaining} bytes left, too few for a batch header", True, err)
    _offset, length, _epoch, magic = _FRAME.unpack_from(view, pos)
    if length < LEGACY_RECORD_OVERHEAD_V0:
        err = InvalidLengthError(
            f"batch length {length} is below the minimum {LEGACY_RECORD_OVERHEAD_V0}",
            f"{path}.batchLength",
            base + pos + 8,
        )
        return _Stop(f"invalid batch length {length}", False, err)
    size = LOG_OVERHEAD + length
    if size > remaining:
        err = TruncatedError(f"{path}.batchLength", base + pos + 8, size, remaining)
        return _Stop(f"batch of {size} bytes but only {remaining} left", True, err)
    return size, magic


def _oversized(opts: _Options, report: ScanReport, index: int, position: int, size: int) -> None:
    err = CorruptBatchError(
        f"batch of {size} bytes exceeds max_batch_bytes={opts.max_batch_bytes}",
        f"batch[{index}].batchLength",
        position + 8,
    )
    if opts.strict:
        raise err
    report.diagnostics.append(CorruptBatch(opts.file, index, position, size, err))


# ------------------------------------------------------------------------------------- files


class _ChunkedFile:
    """A read window over a file: holds at most one chunk plus the batch being decoded."""

    def __init__(self, handle: IO[bytes], size: int, chunk_bytes: int) -> None:
        self.handle = handle
        self.size = size
        self.chunk_bytes = chunk_bytes
        self.buf = b""
        self.start = 0  # file position of buf[0]

    def ensure(self, position: int, needed: int) -> memoryview:
        """Make ``needed`` bytes from ``position`` available; returns the whole window."""
        if position < self.start or position + needed > self.start + len(self.buf):
            keep = (
                self.buf[position - self.start :] if position < self.start + len(self.buf) else b""
            )
            if position >= self.start + len(self.buf):
                self.handle.seek(position)
            want = max(self.chunk_bytes, needed - len(keep))
            self.buf = keep + self.handle.read(want)
            self.start = position
        return memoryview(self.buf)

    def all_zero_from(self, position: int) -> bool:
        """Whether every byte from ``position`` to the end of the file is zero (chunked scan)."""
        self.handle.seek(position)
        while True:
            chunk = self.handle.read(self.chunk_bytes)
            if not chunk:
                return True
            if chunk.count(0) != len(chunk):
                return False


def read_segment(
    path: str | os.PathLike[str] | RemotePath,
    *,
    strict: bool = False,
    report: ScanReport | None = None,
    decode_records: bool = True,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> Iterator[RecordBatch]:
    """Stream the batches of one ``.log`` segment file with bounded memory.

    Same contract as :func:`read_batches`; positions and offsets are file positions. The file is
    read ``chunk_bytes`` at a time; a batch larger than a chunk is read whole (up to
    ``max_batch_bytes``, larger ones are skipped without being read).
    """
    rep = report if report is not None else ScanReport()
    name = str(path)
    opts = _Options(strict, decode_records, max_decompressed_bytes, max_batch_bytes, name)
    with paths.readable(path).open("rb") as handle:
        size_of_file = paths.file_size(handle)
        window = _ChunkedFile(handle, size_of_file, chunk_bytes)
        pos = 0
        index = 0
        while pos < size_of_file:
            remaining = size_of_file - pos
            view = window.ensure(pos, min(remaining, HEADER_SIZE_UP_TO_MAGIC))
            local = pos - window.start
            frame = _check_frame(view, local, remaining, window.start, index)
            if isinstance(frame, _Stop):
                _tail(
                    opts,
                    rep,
                    pos,
                    remaining,
                    frame.reason,
                    zero_padding=window.all_zero_from(pos),
                    truncated=frame.truncated,
                    error=frame.error,
                )
                return
            size, magic = frame
            if size > max_batch_bytes:
                _oversized(opts, rep, index, pos, size)
            else:
                view = window.ensure(pos, size)
                local = pos - window.start
                batch = _decode_framed(
                    view, local, size, magic, base=window.start, index=index, opts=opts, report=rep
                )
                if batch is not None:
                    rep.valid_bytes += size
                    yield batch
            pos += size
            index += 1


@dataclass(frozen=True, slots=True)
class SegmentFiles:
    """The files of one segment in a partition directory (absent ones are None)."""

    base_offset: int
    log: Path | RemotePath
    index: Path | RemotePath | None
    time_index: Path | RemotePath | None
    txn_index: Path | RemotePath | None


def segment_file_name(base_offset: int, suffix: str) -> str:
    """``00000000000000000042.log`` style name (20-digit zero-padded base offset)."""
    if base_offset < 0:
        raise ValueError(f"negative base offset {base_offset}")
    return f"{base_offset:020d}{suffix}"


def list_segments(directory: str | os.PathLike[str] | RemotePath) -> list[SegmentFiles]:
    """The segments of a partition directory in base-offset order (``*.log`` files only).

    ``directory`` is a local path or a URI (:func:`offsetscope.paths.readable`).
    """
    root = paths.readable(directory)
    # One listing: a remote store answers every existence question from it.
    entries = {entry.name: entry for entry in root.iterdir()}
    found = []
    for name, entry in entries.items():
        match = SEGMENT_NAME.match(name)
        if match is None or not entry.is_file():
            continue
        base = int(match.group(1))

        def sibling(suffix: str, base: int = base) -> Path | RemotePath | None:
            return entries.get(segment_file_name(base, suffix))

        found.append(
            SegmentFiles(
                base, entry, sibling(".index"), sibling(".timeindex"), sibling(".txnindex")
            )
        )
    return sorted(found, key=lambda s: s.base_offset)


def read_partition_dir(
    path: str | os.PathLike[str],
    *,
    strict: bool = False,
    report: ScanReport | None = None,
    decode_records: bool = True,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> Iterator[RecordBatch]:
    """Iterate every batch of a ``<topic>-<partition>/`` directory in offset order.

    Segments are read one after another by base offset (their file names); diagnostics name
    the segment file they come from. Batch positions are positions in their own segment.
    """
    rep = report if report is not None else ScanReport()
    for segment in list_segments(path):
        yield from read_segment(
            segment.log,
            strict=strict,
            report=rep,
            decode_records=decode_records,
            max_decompressed_bytes=max_decompressed_bytes,
            max_batch_bytes=max_batch_bytes,
            chunk_bytes=chunk_bytes,
        )
