"""Index-type files of a segment and the producer-state snapshot.

Layouts: ``docs/formats.md`` section 7.7.

::

    .index      8-byte entries   int32 relativeOffset | int32 position          (OffsetIndex)
    .timeindex  12-byte entries  int64 timestamp | int32 relativeOffset         (TimeIndex)
    .txnindex   34-byte entries  int16 version 0 | int64 producerId | int64 firstOffset
                                 | int64 lastOffset | int64 lastStableOffset     (AbortedTxn)
    .snapshot   int16 version 1 | uint32 CRC-32C of everything after it | int32 count
                | count x { int64 producerId, int16 epoch, int32 lastSequence,
                            int64 lastOffset, int32 offsetDelta, int64 timestamp,
                            int32 coordinatorEpoch, int64 currentTxnFirstOffset }

Offsets in ``.index``/``.timeindex`` are relative to the segment's base offset. A broker
preallocates the active segment's index files (``segment.index.bytes``, zero-filled) and trims
them when the segment is rolled or closed; like ``DumpLogSegments``, the readers stop at the
first all-zero entry after the first one. The writers produce trimmed files, as a cleanly shut
down broker leaves them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

import crc32c

from offsetscope.protocol.errors import (
    CrcMismatchError,
    InvalidLengthError,
    InvalidValueError,
    TruncatedError,
    UnsupportedVersionError,
)

_OFFSET_ENTRY: Final = struct.Struct(">ii")
_TIME_ENTRY: Final = struct.Struct(">qi")
_TXN_ENTRY: Final = struct.Struct(">hqqqq")
_SNAPSHOT_HEAD: Final = struct.Struct(">hIi")
_SNAPSHOT_ENTRY: Final = struct.Struct(">qhiqiqiq")

OFFSET_INDEX_ENTRY_SIZE: Final = _OFFSET_ENTRY.size
TIME_INDEX_ENTRY_SIZE: Final = _TIME_ENTRY.size
TXN_INDEX_ENTRY_SIZE: Final = _TXN_ENTRY.size
PRODUCER_SNAPSHOT_VERSION: Final = 1


@dataclass(frozen=True, slots=True)
class OffsetPosition:
    """An ``.index`` entry: the batch holding ``offset`` starts at byte ``position``."""

    offset: int
    position: int


@dataclass(frozen=True, slots=True)
class TimestampOffset:
    """A ``.timeindex`` entry: records from ``offset`` on have timestamps >= ``timestamp``."""

    timestamp: int
    offset: int


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """A ``.txnindex`` entry: an aborted transaction of ``producer_id`` in this segment."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = 0


@dataclass(frozen=True, slots=True)
class ProducerSnapshotEntry:
    """One producer's state in a ``.snapshot`` file (``ProducerStateEntry``)."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


def _check_size(data: bytes, entry_size: int, what: str) -> None:
    if len(data) % entry_size:
        raise InvalidLengthError(
            f"{what} of {len(data)} bytes is not a multiple of the {entry_size}-byte entry size",
            what,
            len(data) - len(data) % entry_size,
        )


def read_offset_index(data: bytes, base_offset: int) -> list[OffsetPosition]:
    """Parse an ``.index`` file's bytes.

    Args:
        data: the file contents.
        base_offset: the segment's base offset (from the file name).

    Raises:
        InvalidLengthError: the size is not a multiple of 8.
        InvalidValueError: offsets or positions go backwards.
    """
    _check_size(data, OFFSET_INDEX_ENTRY_SIZE, "index")
    out: list[OffsetPosition] = []
    for i, (relative, position) in enumerate(_OFFSET_ENTRY.iter_unpack(data)):
        if i > 0 and relative == 0 and position == 0:
            break  # preallocated, never written
        if out and (base_offset + relative <= out[-1].offset or position < out[-1].position):
            raise InvalidValueError(
                f"entry {i} ({relative}, {position}) does not follow the previous entry",
                f"index[{i}]",
                i * OFFSET_INDEX_ENTRY_SIZE,
            )
        out.append(OffsetPosition(base_offset + relative, position))
    return out


def encode_offset_index(entries: Iterable[OffsetPosition], base_offset: int) -> bytes:
    """The bytes of an ``.index`` file for ``entries`` (trimmed, no preallocation)."""
    return b"".join(
        _OFFSET_ENTRY.pack(_relative(e.offset, base_offset), e.position) for e in entries
    )


def read_time_index(data: bytes, base_offset: int) -> list[TimestampOffset]:
    """Parse a ``.timeindex`` file's bytes (stops at preallocated zero entries)."""
    _check_size(data, TIME_INDEX_ENTRY_SIZE, "timeindex")
    out: list[TimestampOffset] = []
    for i, (timestamp, relative) in enumerate(_TIME_ENTRY.iter_unpack(data)):
        if i > 0 and timestamp == 0 and relative == 0:
            break
        out.append(TimestampOffset(timestamp, base_offset + relative))
    return out


def encode_time_index(entries: Iterable[TimestampOffset], base_offset: int) -> bytes:
    """The bytes of a ``.timeindex`` file for ``entries``."""
    return b"".join(
        _TIME_ENTRY.pack(e.timestamp, _relative(e.offset, base_offset)) for e in entries
    )


def _relative(offset: int, base_offset: int) -> int:
    relative = offset - base_offset
    if not 0 <= relative <= 0x7FFFFFFF:
        raise ValueError(f"offset {offset} cannot be stored relative to {base_offset}")
    return relative


def read_txn_index(data: bytes) -> list[AbortedTxn]:
    """Parse a ``.txnindex`` file's bytes.

    Raises:
        InvalidLengthError: the size is not a multiple of 34.
        UnsupportedVersionError: an entry version other than 0 (Kafka refuses those too).
    """
    _check_size(data, TXN_INDEX_ENTRY_SIZE, "txnindex")
    out = []
    for i, (version, pid, first, last, lso) in enumerate(_TXN_ENTRY.iter_unpack(data)):
        if version != 0:
            raise UnsupportedVersionError(
                "AbortedTxn", version, f"txnindex[{i}].version", i * TXN_INDEX_ENTRY_SIZE
            )
        out.append(AbortedTxn(pid, first, last, lso, version))
    return out


def encode_txn_index(entries: Iterable[AbortedTxn]) -> bytes:
    """The bytes of a ``.txnindex`` file."""
    return b"".join(
        _TXN_ENTRY.pack(0, e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset)
        for e in entries
    )


def read_producer_snapshot(data: bytes) -> list[ProducerSnapshotEntry]:
    """Parse a producer-state ``.snapshot`` file and verify its CRC-32C.

    Raises:
        TruncatedError: shorter than its header or its declared entries.
        UnsupportedVersionError: version other than 1.
        CrcMismatchError: the stored CRC does not match.
        InvalidLengthError: negative count or bytes after the entries.
    """
    if len(data) < _SNAPSHOT_HEAD.size:
        raise TruncatedError("snapshot.version", 0, _SNAPSHOT_HEAD.size, len(data))
    version, stored, count = _SNAPSHOT_HEAD.unpack_from(data, 0)
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise UnsupportedVersionError("ProducerSnapshot", version, "snapshot.version", 0)
    computed = crc32c.crc32c(data[6:])
    if stored != computed:
        raise CrcMismatchError("snapshot.crc", 2, stored, computed)
    if count < 0:
        raise InvalidLengthError(f"negative entry count {count}", "snapshot.producerEntries", 6)
    needed = _SNAPSHOT_HEAD.size + count * _SNAPSHOT_ENTRY.size
    if len(data) < needed:
        raise TruncatedError("snapshot.producerEntries", 10, needed - 10, len(data) - 10)
    if len(data) > needed:
        raise InvalidLengthError(
            f"{len(data) - needed} bytes after {count} entries", "snapshot", needed
        )
    return [
        ProducerSnapshotEntry(*fields)
        for fields in _SNAPSHOT_ENTRY.iter_unpack(data[_SNAPSHOT_HEAD.size :])
    ]


def encode_producer_snapshot(entries: Sequence[ProducerSnapshotEntry]) -> bytes:
    """The bytes of a ``.snapshot`` file (``ProducerStateManager.writeSnapshot``)."""
    body = struct.pack(">i", len(entries)) + b"".join(
        _SNAPSHOT_ENTRY.pack(
            e.producer_id,
            e.epoch,
            e.last_sequence,
            e.last_offset,
            e.offset_delta,
            e.timestamp,
            e.coordinator_epoch,
            e.current_txn_first_offset,
        )
        for e in entries
    )
    return struct.pack(">hI", PRODUCER_SNAPSHOT_VERSION, crc32c.crc32c(body)) + body
