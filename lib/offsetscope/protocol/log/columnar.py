"""Columnar fast path: batches and their records as numpy arrays, no object per record.

Decoding ``__consumer_offsets`` at hundreds of thousands of records per second leaves no room
for a Python object per record. This module frames a buffer (or streams a file in chunks) and
returns, per chunk, one row per batch (:class:`BatchHeaders`) and one row per record
(:class:`RecordColumns`): offsets, timestamps, sequences and the start and length of every key
and value inside one byte buffer (the chunk's bytes followed by the decompressed records of its
compressed batches). Keys and values are never copied out unless asked for
(:meth:`RecordColumns.gather` builds Arrow-layout offsets + data in one vectorized step).

How the records are found, with the wire layout of ``batch.py``:

1. Python frames the batches: one loop reads each batch's ``int32 length`` (``batch[i+1]``
   starts at ``batch[i] + 12 + length``), keeps its 61 header bytes and computes its CRC-32C
   (one C call). This is the only per-batch Python work for uncompressed batches; compressed
   sections are then decompressed one by one (bounded, ``compression.py``).
2. numpy reads every header field, count and codec for all batches at once.
3. Record boundaries are found in lock-step: record ``k`` of every batch is located in one
   vectorized step (its length varint, then ``start + width + length``), so a chunk costs one
   round per record of its longest batch, not one Python step per record. When only a few
   batches are still being walked (one much longer than the rest), a plain loop finishes them.
4. numpy decodes every other record field for all records of the chunk at once: the zigzag
   varints (timestampDelta, offsetDelta, keyLength, valueLength, headerCount), with fast paths
   for the 1- and 2-byte varints coordinator records use.
5. Every record must end exactly at its length; a batch where any check fails is decoded
   again by the per-record reader (``batch.decode_records``), which names the first bad field
   with its path and byte offset, and the batch is reported (its records are left out).
   Legacy (magic 0/1) entries and records with headers are rare: they go through the
   per-record reader, their key/value bytes appended to the buffer.

Error handling (torn tails, CRC mismatches, strict mode) is exactly that of ``reader.py``, and
the diagnostics go into the same :class:`~offsetscope.protocol.log.reader.ScanReport`.
"""

from __future__ import annotations

import bisect
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import crc32c
import numpy as np
import numpy.typing as npt

from offsetscope.protocol.errors import (
    CorruptBatchError,
    CrcMismatchError,
    DecodeError,
    InvalidLengthError,
    UnsupportedMagicError,
)
from offsetscope.protocol.log.batch import decode_v2_batch
from offsetscope.protocol.log.compression import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    Compression,
    decompress,
)
from offsetscope.protocol.log.legacy import decode_legacy_entry
from offsetscope.protocol.log.model import (
    ATTR_TIMESTAMP_TYPE,
    HEADER_SIZE_UP_TO_MAGIC,
    LEGACY_RECORD_OVERHEAD_V0,
    LOG_OVERHEAD,
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
    Record,
    RecordBatch,
)
from offsetscope.protocol.log.reader import (
    DEFAULT_MAX_BATCH_BYTES,
    CorruptBatch,
    CrcMismatch,
    ScanReport,
    _check_frame,
    _ChunkedFile,
    _Options,
    _oversized,
    _Stop,
    _tail,
)
from offsetscope.protocol.log.varint import decode_varint

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
U8 = npt.NDArray[np.uint8]
Bools = npt.NDArray[np.bool_]

# Smallest record: length, attributes, timestampDelta, offsetDelta, keyLength, valueLength and
# headerCount, one byte each.
_MIN_RECORD_SIZE: Final = 7
# Chunks are larger than the per-record reader's: every chunk costs a fixed number of numpy
# rounds, and memory stays bounded all the same.
DEFAULT_COLUMN_CHUNK_BYTES: Final = 4 * 1024 * 1024
_MIN_BATCH_SIZE: Final = LOG_OVERHEAD + LEGACY_RECORD_OVERHEAD_V0
_PAD: Final = 16  # zero bytes after the buffer so gathers past a malformed record stay in bounds

# A v2 batch header (``batch.py``), every field at its byte position.
BATCH_HEADER_DTYPE: Final = np.dtype(
    [
        ("base_offset", ">i8"),
        ("length", ">i4"),
        ("partition_leader_epoch", ">i4"),
        ("magic", "i1"),
        ("crc", ">u4"),
        ("attributes", ">i2"),
        ("last_offset_delta", ">i4"),
        ("base_timestamp", ">i8"),
        ("max_timestamp", ">i8"),
        ("producer_id", ">i8"),
        ("producer_epoch", ">i2"),
        ("base_sequence", ">i4"),
        ("records_count", ">i4"),
    ]
)
assert BATCH_HEADER_DTYPE.itemsize == RECORD_BATCH_OVERHEAD
_NO_HEADER: Final = bytes(RECORD_BATCH_OVERHEAD)


@dataclass(frozen=True, slots=True)
class BatchHeaders:
    """One row per batch of a chunk (numpy arrays of equal length).

    ``record_start``/``record_end`` delimit the batch's rows in :class:`RecordColumns`;
    ``decoded`` is False when the batch's records are not in the columns (CRC mismatch or an
    undecodable batch, both reported in the scan report). Legacy entries have the values
    :class:`~offsetscope.protocol.log.model.RecordBatch` gives them.
    """

    position: I64
    size: I64
    base_offset: I64
    last_offset: I64
    partition_leader_epoch: I32
    magic: npt.NDArray[np.int8]
    crc: I64
    crc_valid: Bools
    attributes: npt.NDArray[np.int16]
    base_timestamp: I64
    max_timestamp: I64
    producer_id: I64
    producer_epoch: npt.NDArray[np.int16]
    base_sequence: I32
    records_count: I32
    record_start: I64
    record_end: I64
    decoded: Bools

    def __len__(self) -> int:
        return len(self.position)

    @property
    def is_transactional(self) -> Bools:
        flags: Bools = (self.magic >= MAGIC_V2) & ((self.attributes & 0x10) != 0)
        return flags

    @property
    def is_control(self) -> Bools:
        flags: Bools = (self.magic >= MAGIC_V2) & ((self.attributes & 0x20) != 0)
        return flags

    @property
    def compression(self) -> npt.NDArray[np.int16]:
        return self.attributes & 0x07

    def row(self, i: int) -> RecordBatch:
        """Batch ``i`` as a :class:`RecordBatch` header (without records)."""
        return RecordBatch(
            base_offset=int(self.base_offset[i]),
            last_offset=int(self.last_offset[i]),
            position=int(self.position[i]),
            size=int(self.size[i]),
            magic=int(self.magic[i]),
            crc=int(self.crc[i]),
            crc_valid=bool(self.crc_valid[i]),
            attributes=int(self.attributes[i]) & 0xFFFF,
            partition_leader_epoch=int(self.partition_leader_epoch[i]),
            base_timestamp=int(self.base_timestamp[i]),
            max_timestamp=int(self.max_timestamp[i]),
            producer_id=int(self.producer_id[i]),
            producer_epoch=int(self.producer_epoch[i]),
            base_sequence=int(self.base_sequence[i]),
            records_count=int(self.records_count[i]),
        )


@dataclass(frozen=True, slots=True)
class RecordColumns:
    """One row per record of a chunk; keys and values are (start, length) into ``buffer``.

    A length of -1 means null (a null value is a tombstone). ``batch`` is the record's row in
    :class:`BatchHeaders`. ``headers_count`` is the number of record headers (the headers
    themselves are available through the per-record reader; internal topics carry none).
    """

    buffer: U8
    batch: I64
    offset: I64
    timestamp: I64
    sequence: I64
    key_start: I64
    key_length: I64
    value_start: I64
    value_length: I64
    headers_count: I64

    def __len__(self) -> int:
        return len(self.offset)

    def key(self, i: int) -> bytes | None:
        """Key bytes of record ``i`` (None when null)."""
        return self._blob(int(self.key_start[i]), int(self.key_length[i]))

    def value(self, i: int) -> bytes | None:
        """Value bytes of record ``i`` (None for a tombstone)."""
        return self._blob(int(self.value_start[i]), int(self.value_length[i]))

    def _blob(self, start: int, length: int) -> bytes | None:
        if length < 0:
            return None
        return self.buffer[start : start + length].tobytes()

    def gather(self, which: str) -> tuple[I64, U8, Bools]:
        """Keys or values in Arrow binary layout, built without Python objects.

        Args:
            which: ``"key"`` or ``"value"``.

        Returns:
            ``(offsets, data, valid)``: ``offsets`` has ``len(self) + 1`` entries into ``data``;
            ``valid`` is False for nulls (their slice is empty). Feed them to
            ``pyarrow.Array.from_buffers`` (with the offsets cast to int32 for ``binary``).
        """
        if which == "key":
            starts, lengths = self.key_start, self.key_length
        elif which == "value":
            starts, lengths = self.value_start, self.value_length
        else:
            raise ValueError(f"which must be 'key' or 'value', not {which!r}")
        return gather_slices(self.buffer, starts, lengths)


def gather_slices(buffer: U8, starts: I64, lengths: I64) -> tuple[I64, U8, Bools]:
    """Concatenate ``buffer[start:start+length]`` slices (length -1 = null) vectorized."""
    valid = lengths >= 0
    sizes = np.where(valid, lengths, 0)
    offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    total = int(offsets[-1])
    if total == 0:
        return offsets, np.zeros(0, dtype=np.uint8), valid
    # One index per copied byte; int32 halves the memory traffic whenever it can address the
    # buffer (a chunk is a few MiB).
    dtype = np.int32 if len(buffer) < 2**31 and total < 2**31 else np.int64
    index = np.repeat((starts - offsets[:-1]).astype(dtype), sizes)
    index += np.arange(total, dtype=dtype)
    return offsets, buffer[index], valid


@dataclass(frozen=True, slots=True)
class BatchColumns:
    """One batch with its records as array slices (the per-batch fast path)."""

    header: RecordBatch
    decoded: bool
    buffer: U8
    offset: I64
    timestamp: I64
    sequence: I64
    key_start: I64
    key_length: I64
    value_start: I64
    value_length: I64
    headers_count: I64

    def __len__(self) -> int:
        return len(self.offset)

    def records(self) -> tuple[Record, ...]:
        """The convenient view: one :class:`Record` per row (headers not included)."""
        buf = self.buffer
        out = []
        for i in range(len(self.offset)):
            ks, kl = int(self.key_start[i]), int(self.key_length[i])
            vs, vl = int(self.value_start[i]), int(self.value_length[i])
            out.append(
                Record(
                    offset=int(self.offset[i]),
                    timestamp=int(self.timestamp[i]),
                    key=None if kl < 0 else buf[ks : ks + kl].tobytes(),
                    value=None if vl < 0 else buf[vs : vs + vl].tobytes(),
                    sequence=int(self.sequence[i]),
                )
            )
        return tuple(out)


@dataclass(frozen=True, slots=True)
class ColumnChunk:
    """The batches and records of one buffer or file chunk."""

    batches: BatchHeaders
    records: RecordColumns

    def batch_columns(self, i: int) -> BatchColumns:
        """Batch ``i`` with its slice of the record columns."""
        a, b = int(self.batches.record_start[i]), int(self.batches.record_end[i])
        r = self.records
        return BatchColumns(
            header=self.batches.row(i),
            decoded=bool(self.batches.decoded[i]),
            buffer=r.buffer,
            offset=r.offset[a:b],
            timestamp=r.timestamp[a:b],
            sequence=r.sequence[a:b],
            key_start=r.key_start[a:b],
            key_length=r.key_length[a:b],
            value_start=r.value_start[a:b],
            value_length=r.value_length[a:b],
            headers_count=r.headers_count[a:b],
        )

    def iter_batches(self) -> Iterator[BatchColumns]:
        for i in range(len(self.batches)):
            yield self.batch_columns(i)


# ------------------------------------------------------------------------------- the scan


class _Problem:
    """A diagnostic found while scanning a chunk, and the error strict mode raises for it."""

    __slots__ = ("diagnostic", "error", "position")

    def __init__(self, error: DecodeError, diagnostic: CorruptBatch | CrcMismatch) -> None:
        self.position = diagnostic.position
        self.error = error
        self.diagnostic = diagnostic


class _Scan:
    """One chunk: the framing loop fills ``positions``/``sizes``; ``finish`` does the rest.

    Per batch, Python only frames (one ``int32`` read) and checks the CRC-32C (one C call);
    header fields, counts and codecs are read for all batches at once, compressed sections are
    decompressed one by one, and every record field is decoded with numpy.
    """

    def __init__(
        self, data: bytes, base: int, first_index: int, opts: _Options, report: ScanReport
    ) -> None:
        self.data = data
        self.base = base
        self.first_index = first_index
        self.opts = opts
        self.report = report
        self.positions: list[int] = []
        self.sizes: list[int] = []
        self.computed_crcs: list[int] = []
        self.heads: list[bytes] = []
        # Row counts at which a framed batch was skipped (oversized, unknown magic): batch
        # indexes in error paths count those too.
        self.skip_rows: list[int] = []
        self.legacy: dict[int, RecordBatch] = {}
        self.slow_rows: list[int] = []  # v2 rows whose records carry headers
        self.problems: list[_Problem] = []
        self.decoded: Bools = np.zeros(0, dtype=np.bool_)
        self.crc_valid: Bools = np.zeros(0, dtype=np.bool_)

    def index_of(self, row: int) -> int:
        return self.first_index + row + bisect.bisect_right(self.skip_rows, row)

    # -- diagnostics

    def _crc_mismatch(self, row: int, stored: int, computed: int) -> None:
        pos, index = self.positions[row], self.index_of(row)
        self.crc_valid[row] = False
        self.decoded[row] = False
        base_offset = int.from_bytes(self.data[pos : pos + 8], "big", signed=True)
        error = CrcMismatchError(f"batch[{index}].crc", self.base + pos + 17, stored, computed)
        diagnostic = CrcMismatch(
            self.opts.file, index, self.base + pos, self.sizes[row], base_offset, stored, computed
        )
        self.problems.append(_Problem(error, diagnostic))

    def _reject(self, row: int) -> None:
        """Re-decode with the per-record reader to get the exact error, then report it."""
        batch = self._slow(row)
        error = batch.error or InvalidLengthError(
            "records do not parse",
            f"batch[{self.index_of(row)}].records",
            self.base + self.positions[row] + RECORD_BATCH_OVERHEAD,
        )
        self._report_corrupt(row, error)

    def _report_corrupt(self, row: int, error: DecodeError) -> None:
        self.decoded[row] = False
        diagnostic = CorruptBatch(
            self.opts.file,
            self.index_of(row),
            self.base + self.positions[row],
            self.sizes[row],
            error,
        )
        self.problems.append(_Problem(error, diagnostic))

    def _slow(self, row: int) -> RecordBatch:
        return decode_v2_batch(
            self.data,
            self.positions[row],
            self.sizes[row],
            base=self.base,
            path=f"batch[{self.index_of(row)}]",
            max_decompressed_bytes=self.opts.max_decompressed_bytes,
        )

    def _settle(self) -> None:
        """Strict mode raises the first problem in file order; otherwise they are reported."""
        if not self.problems:
            return
        self.problems.sort(key=lambda p: p.position)
        if self.opts.strict:
            raise self.problems[0].error
        self.report.diagnostics.extend(p.diagnostic for p in self.problems)

    # -- after framing

    def finish(self) -> ColumnChunk:
        n = len(self.positions)
        data = self.data
        raw_data = np.frombuffer(data, dtype=np.uint8)
        pos = np.asarray(self.positions, dtype=np.int64)
        size = np.asarray(self.sizes, dtype=np.int64)
        self.decoded = np.zeros(n, dtype=np.bool_)
        self.crc_valid = np.ones(n, dtype=np.bool_)
        headers = _empty_headers(n)
        headers["position"][:] = pos + self.base
        headers["size"][:] = size
        magic = raw_data[pos + 16] if n else np.zeros(0, dtype=np.uint8)
        v2 = np.flatnonzero(magic == MAGIC_V2)
        for row in np.flatnonzero(magic != MAGIC_V2).tolist():
            self._legacy(row, headers)
        regions: tuple[I64, I64, I64, I64] | None = None
        extra: list[bytes] = []
        if len(v2):
            raw = np.frombuffer(b"".join(self.heads), dtype=BATCH_HEADER_DTYPE)[v2]
            for name in _COPIED_HEADER_FIELDS:
                headers[name][v2] = raw[name]
            headers["last_offset"][v2] = raw["base_offset"] + raw["last_offset_delta"]
            regions, extra = self._regions(v2, raw, pos, size)
        joined = b"".join((data, *extra, bytes(_PAD)))
        buffer = np.frombuffer(joined, dtype=np.uint8)
        cols = self._v2_records(joined, buffer, headers, regions)
        if self.legacy or self.slow_rows:
            buffer, cols = self._merge_slow(buffer, cols)
        headers["crc_valid"][:] = self.crc_valid
        headers["decoded"][:] = self.decoded
        counts = np.bincount(cols["batch"], minlength=n)
        ends = np.cumsum(counts)
        headers["record_end"][:] = ends
        headers["record_start"][:] = ends - counts
        self._settle()
        return ColumnChunk(
            batches=BatchHeaders(**headers),
            records=RecordColumns(buffer=buffer, **cols),
        )

    def _legacy(self, row: int, headers: dict[str, Any]) -> None:
        pos, size = self.positions[row], self.sizes[row]
        try:
            batch = decode_legacy_entry(
                self.data,
                pos,
                size,
                base=self.base,
                path=f"batch[{self.index_of(row)}]",
                max_decompressed_bytes=self.opts.max_decompressed_bytes,
            )
        except DecodeError as exc:
            self._report_corrupt(row, exc)
            return
        for name in _COPIED_HEADER_FIELDS:
            headers[name][row] = getattr(batch, name)
        headers["last_offset"][row] = batch.last_offset
        self.legacy[row] = batch
        if not batch.crc_valid:
            self._crc_mismatch(row, batch.crc, batch.computed_crc or 0)
        elif batch.error is not None:
            self._report_corrupt(row, batch.error)
        else:
            self.decoded[row] = True

    def _regions(
        self, v2: I64, raw: Any, pos: I64, size: I64
    ) -> tuple[tuple[I64, I64, I64, I64], list[bytes]]:
        """CRC, count and codec checks; decompression; where each batch's records are.

        Returns ``((rows, starts, ends, counts), extra)`` in row order, positions in the
        combined buffer (``data`` followed by the ``extra`` decompressed sections).
        """
        data = self.data
        view = memoryview(data)
        stored = raw["crc"].astype(np.int64)
        computed = np.asarray(self.computed_crcs, dtype=np.int64)[v2]
        for i in np.flatnonzero(stored != computed).tolist():
            self._crc_mismatch(int(v2[i]), int(stored[i]), int(computed[i]))
        counts = raw["records_count"].astype(np.int64)
        codecs = raw["attributes"].astype(np.int64) & 0x07
        ok = self.crc_valid[v2]
        self.decoded[v2[ok & (counts == 0)]] = True
        for row in v2[ok & ((counts < 0) | (codecs > 4))].tolist():
            self._reject(row)
        live = ok & (counts > 0) & (codecs <= 4)
        region_rows = v2[live]
        starts = pos[region_rows] + RECORD_BATCH_OVERHEAD
        ends = pos[region_rows] + size[region_rows]
        region_counts = counts[live]
        region_codecs = codecs[live]
        alive = np.ones(len(region_rows), dtype=np.bool_)
        extra: list[bytes] = []
        shift = len(data)
        for j in np.flatnonzero(region_codecs).tolist():
            try:
                payload = decompress(
                    Compression(int(region_codecs[j])),
                    view[int(starts[j]) : int(ends[j])],
                    limit=self.opts.max_decompressed_bytes,
                )
            except DecodeError:
                self._reject(int(region_rows[j]))
                alive[j] = False
                continue
            extra.append(payload)
            starts[j], ends[j] = shift, shift + len(payload)
            shift += len(payload)
        # A hostile count must not size any array: if it cannot fit, it is an error.
        fits = region_counts <= (ends - starts) // _MIN_RECORD_SIZE
        for j in np.flatnonzero(alive & ~fits).tolist():
            self._reject(int(region_rows[j]))
        alive &= fits
        self.decoded[region_rows[alive]] = True
        return (region_rows[alive], starts[alive], ends[alive], region_counts[alive]), extra

    def _v2_records(
        self,
        joined: bytes,
        buffer: U8,
        headers: dict[str, Any],
        regions: tuple[I64, I64, I64, I64] | None,
    ) -> dict[str, I64]:
        if regions is None or not len(regions[0]):
            return _empty_records()
        rows, region_starts, region_ends, counts = regions
        starts, walked = _walk_regions(joined, buffer, region_starts, region_ends, counts)
        batch = np.repeat(rows, counts)
        ends = np.empty_like(starts)
        ends[:-1] = starts[1:]
        ends[np.cumsum(counts) - 1] = region_ends

        # Every field read is clipped to the record end: a read that crosses it leaves the
        # final position past the end, which marks the record bad.
        length, width, bad = _varints(buffer, starts, 5)
        p = starts + width
        bad |= (length < 0) | (p + length != ends)
        p = np.minimum(p + 1, ends)  # record attributes (unused by Kafka)
        ts_delta, p, bad = _field(buffer, p, ends, bad, 10)
        offset_delta, p, bad = _field(buffer, p, ends, bad, 5)
        key_length, p, bad = _field(buffer, p, ends, bad, 5)
        key_start = p
        p = p + np.maximum(key_length, 0)
        value_length, p, bad = _field(buffer, p, ends, bad, 5)
        value_start = p
        p = p + np.maximum(value_length, 0)
        headers_count, p, bad = _field(buffer, p, ends, bad, 5)
        bad |= (key_length < -1) | (value_length < -1) | (headers_count < 0)
        with_headers = headers_count > 0
        bad |= ~with_headers & (p != ends)
        bad |= np.repeat(~walked, counts)

        keep: Bools | None = None
        if bad.any() or with_headers.any():
            # The per-record reader names the exact error, or decodes the headers.
            keep = np.ones(len(starts), dtype=np.bool_)
            for row in np.unique(batch[bad | with_headers]).tolist():
                in_row = batch == row
                keep &= ~in_row
                if bad[in_row].any():
                    self._reject(row)
                else:
                    self.slow_rows.append(row)

        base_seq = headers["base_sequence"][batch].astype(np.int64)
        sequence = base_seq + offset_delta
        # DefaultRecordBatch.incrementSequence: wrap from 2**31-1 to 0.
        sequence = np.where(sequence > 0x7FFFFFFF, sequence - 0x80000000, sequence)
        log_append = (headers["attributes"][batch] & ATTR_TIMESTAMP_TYPE) != 0
        timestamp = np.where(
            log_append,
            headers["max_timestamp"][batch],
            headers["base_timestamp"][batch] + ts_delta,
        )
        cols = {
            "batch": batch,
            "offset": headers["base_offset"][batch] + offset_delta,
            "timestamp": timestamp,
            "sequence": np.where(base_seq >= 0, sequence, -1),
            "key_start": key_start,
            "key_length": key_length,
            "value_start": value_start,
            "value_length": value_length,
            "headers_count": headers_count,
        }
        if keep is not None:
            cols = {name: array[keep] for name, array in cols.items()}
        return cols

    def _merge_slow(self, buffer: U8, cols: dict[str, I64]) -> tuple[U8, dict[str, I64]]:
        """Add the records of legacy entries and of batches with headers, in batch order."""
        extra = bytearray()
        base = len(buffer)
        rows: list[int] = []
        fields: dict[str, list[int]] = {name: [] for name in cols if name != "batch"}
        for row in sorted({*self.legacy, *self.slow_rows}):
            if not self.decoded[row]:
                continue
            if row in self.legacy:
                records = self.legacy[row].records
            else:
                batch = self._slow(row)
                if batch.error is not None:
                    self._report_corrupt(row, batch.error)
                    continue
                records = batch.records
            for record in records:
                rows.append(row)
                fields["offset"].append(record.offset)
                fields["timestamp"].append(record.timestamp)
                fields["sequence"].append(record.sequence)
                fields["headers_count"].append(len(record.headers))
                for name, blob in (("key", record.key), ("value", record.value)):
                    fields[f"{name}_start"].append(base + len(extra))
                    fields[f"{name}_length"].append(-1 if blob is None else len(blob))
                    extra += blob or b""
        merged_buffer = np.concatenate(
            (buffer, np.frombuffer(bytes(extra) + bytes(_PAD), dtype=np.uint8))
        )
        merged = {"batch": np.concatenate((cols["batch"], np.asarray(rows, dtype=np.int64)))}
        for name, values in fields.items():
            merged[name] = np.concatenate((cols[name], np.asarray(values, dtype=np.int64)))
        order = np.argsort(merged["batch"], kind="stable")
        return merged_buffer, {name: array[order] for name, array in merged.items()}


# Below this many batches still being walked, a plain Python loop per batch is cheaper than
# another round of numpy calls (each round costs ~20 array operations).
_LOCKSTEP_MIN_BATCHES: Final = 12


def _walk_regions(
    joined: bytes, buffer: U8, region_starts: I64, region_ends: I64, counts: I64
) -> tuple[I64, Bools]:
    """The start of every record of every region; False for regions whose records don't fit.

    Record ``k`` of every batch is located in one vectorized step (lock-step over batches), so
    a chunk of small batches costs a few numpy rounds, not a Python step per record. Batches
    with many more records than the others finish in a Python loop reading length varints.
    """
    total = int(counts.sum())
    starts = np.zeros(total, dtype=np.int64)
    slot = np.cumsum(counts) - counts
    ok = np.ones(len(counts), dtype=np.bool_)
    cursor = region_starts.copy()
    active = np.flatnonzero(counts > 0)
    k = 0
    while active.size >= _LOCKSTEP_MIN_BATCHES:
        p = cursor[active]
        end = region_ends[active]
        length, width, too_long = _short_varints(buffer, np.minimum(p, end))
        following = p + width + length
        bad = too_long | (length < 0) | (p >= end) | (following > end)
        starts[slot[active] + k] = p
        ok[active[bad]] = False
        cursor[active] = following
        k += 1
        active = active[~bad & (counts[active] > k)]
    for j in active.tolist():
        found: list[int] = []
        if _walk(joined, int(cursor[j]), int(region_ends[j]), int(counts[j]) - k, found):
            starts[slot[j] + k : slot[j] + counts[j]] = found
            cursor[j] = region_ends[j]
        else:
            ok[j] = False
    ok &= cursor == region_ends
    return starts, ok


_COPIED_HEADER_FIELDS: Final = (
    "base_offset",
    "partition_leader_epoch",
    "magic",
    "crc",
    "attributes",
    "base_timestamp",
    "max_timestamp",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "records_count",
)


def _field(buffer: U8, p: I64, ends: I64, bad: Bools, max_bytes: int) -> tuple[I64, I64, Bools]:
    """Read one varint field of every record at ``p`` (clipped to ``ends``)."""
    bad = bad | (p > ends)
    p = np.minimum(p, ends)
    values, width, too_long = _varints(buffer, p, max_bytes)
    return values, p + width, bad | too_long


_LENGTH: Final = struct.Struct(">i")


def _scan(
    data: bytes,
    *,
    base: int,
    first_index: int,
    opts: _Options,
    report: ScanReport,
    at_eof: bool,
) -> tuple[_Scan, int, int, _Stop | None]:
    """Frame every batch of ``data`` (the only per-batch Python loop besides the CRC).

    Returns ``(scan, consumed, next_index, stop)``: ``consumed`` bytes were framed; when not
    ``at_eof``, a batch running past the end of ``data`` ends the scan without a ``stop`` (the
    caller reads more); ``stop`` is set when framing failed (the caller reports the tail).
    """
    scan = _Scan(data, base, first_index, opts, report)
    positions, sizes, crcs, heads = scan.positions, scan.sizes, scan.computed_crcs, scan.heads
    unpack = _LENGTH.unpack_from
    crc = crc32c.crc32c
    view = memoryview(data)
    end = len(data)
    max_batch = opts.max_batch_bytes
    pos = 0
    skipped = 0
    while pos < end:
        remaining = end - pos
        if remaining >= HEADER_SIZE_UP_TO_MAGIC:
            size = unpack(data, pos + 8)[0] + LOG_OVERHEAD
            if _MIN_BATCH_SIZE <= size <= remaining and size <= max_batch and data[pos + 16] <= 2:
                positions.append(pos)
                sizes.append(size)
                # The 61 header bytes, joined into one array later (legacy rows get zeros).
                heads.append(data[pos : pos + 61] if size >= 61 else _NO_HEADER)
                # CRC-32C from attributes on (v2; legacy rows ignore it). Copying a small batch
                # is cheaper than making a memoryview of it.
                if size < 4096:
                    crcs.append(crc(data[pos + 21 : pos + size]))
                else:
                    crcs.append(crc(view[pos + 21 : pos + size]))
                pos += size
                continue
        index = first_index + len(positions) + skipped
        frame = _check_frame(view, pos, remaining, base, index)
        if isinstance(frame, _Stop):
            if frame.truncated and not at_eof:
                return scan, pos, index, None
            return scan, pos, index, frame
        size, magic = frame
        error: DecodeError
        if size > max_batch:
            error = CorruptBatchError(
                f"batch of {size} bytes exceeds max_batch_bytes={max_batch}",
                f"batch[{index}].batchLength",
                base + pos + 8,
            )
        else:
            error = UnsupportedMagicError(
                f"unknown magic {magic}", f"batch[{index}].magic", base + pos + 16
            )
        scan.problems.append(
            _Problem(error, CorruptBatch(opts.file, index, base + pos, size, error))
        )
        scan.skip_rows.append(len(positions))
        skipped += 1
        pos += size
    return scan, pos, first_index + len(positions) + skipped, None


def _account(chunk: ColumnChunk, report: ScanReport) -> None:
    report.batches += len(chunk.batches)
    report.records += len(chunk.records)
    report.valid_bytes += int(chunk.batches.size.sum())


def scan_columns(
    data: bytes | bytearray | memoryview,
    *,
    base_position: int = 0,
    strict: bool = False,
    report: ScanReport | None = None,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    file: str = "",
) -> ColumnChunk:
    """Decode every batch of an in-memory buffer into columns.

    Same contract as :func:`~offsetscope.protocol.log.reader.read_batches` (diagnostics,
    strictness, torn tails), but the result is one :class:`ColumnChunk`.
    """
    rep = report if report is not None else ScanReport()
    opts = _Options(strict, True, max_decompressed_bytes, max_batch_bytes, file)
    raw = bytes(data)
    scan, consumed, _, stop = _scan(
        raw, base=base_position, first_index=0, opts=opts, report=rep, at_eof=True
    )
    chunk = scan.finish()
    _account(chunk, rep)
    if stop is not None:
        rest = raw[consumed:]
        _tail(
            opts,
            rep,
            base_position + consumed,
            len(rest),
            stop.reason,
            zero_padding=not any(rest),
            truncated=stop.truncated,
            error=stop.error,
        )
    return chunk


def iter_segment_columns(
    path: str | os.PathLike[str],
    *,
    strict: bool = False,
    report: ScanReport | None = None,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    chunk_bytes: int = DEFAULT_COLUMN_CHUNK_BYTES,
) -> Iterator[ColumnChunk]:
    """Stream a ``.log`` file as column chunks of about ``chunk_bytes`` each.

    Memory stays bounded by the chunk size (plus one batch that is larger than a chunk, itself
    at most ``max_batch_bytes``). Batch indexes in error paths count from the file start.
    """
    rep = report if report is not None else ScanReport()
    name = os.fspath(path)
    opts = _Options(strict, True, max_decompressed_bytes, max_batch_bytes, name)
    with Path(path).open("rb") as handle:
        file_size = os.fstat(handle.fileno()).st_size
        window = _ChunkedFile(handle, file_size, chunk_bytes)
        pos = 0
        index = 0
        needed = min(chunk_bytes, file_size)
        while pos < file_size:
            view = window.ensure(pos, min(max(needed, 1), file_size - pos))
            local = pos - window.start
            data = bytes(view[local:])
            at_eof = window.start + len(window.buf) >= file_size
            scan, consumed, index, stop = _scan(
                data, base=pos, first_index=index, opts=opts, report=rep, at_eof=at_eof
            )
            chunk = scan.finish()
            if len(chunk.batches):
                _account(chunk, rep)
                yield chunk
            if stop is not None:
                pos += consumed
                _tail(
                    opts,
                    rep,
                    pos,
                    file_size - pos,
                    stop.reason,
                    zero_padding=window.all_zero_from(pos),
                    truncated=stop.truncated,
                    error=stop.error,
                )
                return
            if consumed == 0:
                # The next batch is larger than the window: read exactly what it needs.
                head = window.ensure(pos, min(HEADER_SIZE_UP_TO_MAGIC, file_size - pos))
                frame = _check_frame(head, pos - window.start, file_size - pos, pos, index)
                if isinstance(frame, _Stop):
                    needed = file_size - pos
                    continue
                size = frame[0]
                if size > max_batch_bytes:
                    _oversized(opts, rep, index, pos, size)
                    pos += size
                    index += 1
                    needed = chunk_bytes
                    continue
                needed = size
                continue
            pos += consumed
            needed = chunk_bytes


def iter_batch_columns(
    path: str | os.PathLike[str],
    *,
    strict: bool = False,
    report: ScanReport | None = None,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    chunk_bytes: int = DEFAULT_COLUMN_CHUNK_BYTES,
) -> Iterator[BatchColumns]:
    """Per batch: the header plus its records as array slices (see :class:`BatchColumns`)."""
    for chunk in iter_segment_columns(
        path,
        strict=strict,
        report=report,
        max_decompressed_bytes=max_decompressed_bytes,
        max_batch_bytes=max_batch_bytes,
        chunk_bytes=chunk_bytes,
    ):
        yield from chunk.iter_batches()


def _walk(buf: bytes | bytearray, p: int, end: int, count: int, out: list[int]) -> bool:
    """Append the start of each of ``count`` records in ``buf[p:end]``; False if they don't fit.

    Reads only each record's length varint (inlined for 1 and 2 bytes, the sizes of
    coordinator records); the vectorized pass validates everything else.
    """
    append = out.append
    for _ in range(count):
        if p >= end:
            return False
        b = buf[p]
        if b < 0x80:
            raw = b
            q = p + 1
        elif p + 1 < end and buf[p + 1] < 0x80:
            raw = (b & 0x7F) | (buf[p + 1] << 7)
            q = p + 2
        else:
            try:
                length, q = decode_varint(buf, p, end, "")
            except DecodeError:
                return False
            raw = (length << 1) ^ (length >> 31)
        length = (raw >> 1) ^ -(raw & 1)
        if length < 0 or q + length > end:
            return False
        append(p)
        p = q + length
    return p == end


def _short_varints(buffer: U8, positions: I64) -> tuple[I64, I64, Bools]:
    """:func:`_varints` for an int32 varint field (the fast paths cover 1 and 2 bytes)."""
    return _varints(buffer, positions, 5)


def _varints(buffer: U8, positions: I64, max_bytes: int) -> tuple[I64, I64, Bools]:
    """Decode a zigzag varint (``max_bytes`` 5) or varlong (10) at every position.

    Returns ``(values, widths, too_long)``. Coordinator records use 1- and 2-byte varints
    almost exclusively, so those are decoded without the general loop.
    """
    b0 = buffer[positions]
    first = b0 >= 0x80
    none = np.zeros(len(positions), dtype=np.bool_)
    if not first.any():
        raw = b0.astype(np.int64)
        values: I64 = (raw >> 1) ^ -(raw & 1)
        return values, np.ones(len(positions), dtype=np.int64), none
    b1 = buffer[positions + 1]
    if not (first & (b1 >= 0x80)).any():
        raw = np.where(first, (b0 & 0x7F).astype(np.int64) | (b1.astype(np.int64) << 7), b0)
        values = (raw >> 1) ^ -(raw & 1)
        return values, first.astype(np.int64) + 1, none
    return _varints_general(buffer, positions, max_bytes)


def _varints_general(buffer: U8, positions: I64, max_bytes: int) -> tuple[I64, I64, Bools]:
    b = buffer[positions]
    raw = (b & 0x7F).astype(np.uint64)
    width = np.ones(len(positions), dtype=np.int64)
    too_long = np.zeros(len(positions), dtype=np.bool_)
    cont = np.flatnonzero(b >= 0x80)
    shift = 7
    k = 1
    while cont.size:
        if k >= max_bytes:
            too_long[cont] = True
            break
        nb = buffer[positions[cont] + k]
        raw[cont] |= (nb & 0x7F).astype(np.uint64) << np.uint64(shift)
        width[cont] += 1
        cont = cont[nb >= 0x80]
        shift += 7
        k += 1
    if max_bytes == 5:
        raw &= np.uint64(0xFFFFFFFF)
    values = (raw >> np.uint64(1)).astype(np.int64) ^ -(raw & np.uint64(1)).astype(np.int64)
    return values, width, too_long


def _empty_headers(n: int) -> dict[str, Any]:
    return {
        "position": np.zeros(n, dtype=np.int64),
        "size": np.zeros(n, dtype=np.int64),
        "base_offset": np.zeros(n, dtype=np.int64),
        "last_offset": np.zeros(n, dtype=np.int64),
        "partition_leader_epoch": np.zeros(n, dtype=np.int32),
        "magic": np.zeros(n, dtype=np.int8),
        "crc": np.zeros(n, dtype=np.int64),
        "crc_valid": np.zeros(n, dtype=np.bool_),
        "attributes": np.zeros(n, dtype=np.int16),
        "base_timestamp": np.zeros(n, dtype=np.int64),
        "max_timestamp": np.zeros(n, dtype=np.int64),
        "producer_id": np.zeros(n, dtype=np.int64),
        "producer_epoch": np.zeros(n, dtype=np.int16),
        "base_sequence": np.zeros(n, dtype=np.int32),
        "records_count": np.zeros(n, dtype=np.int32),
        "record_start": np.zeros(n, dtype=np.int64),
        "record_end": np.zeros(n, dtype=np.int64),
        "decoded": np.zeros(n, dtype=np.bool_),
    }


def _empty_records() -> dict[str, I64]:
    names = (
        "batch",
        "offset",
        "timestamp",
        "sequence",
        "key_start",
        "key_length",
        "value_start",
        "value_length",
        "headers_count",
    )
    return {name: np.zeros(0, dtype=np.int64) for name in names}
