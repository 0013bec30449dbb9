"""Typed views of record batches, records and what a writer appends.

One :class:`RecordBatch` is what Kafka's ``FileLogInputStream`` yields per step: a v2 record batch,
or, for magic 0 and 1, one shallow message (an uncompressed message, or a compressed *wrapper*
whose inner messages become the batch's records). Both know their byte ``position`` and ``size``
in the file, as ``kafka-dump-log.sh`` prints them.

Attribute bits of a v2 batch (``docs/formats.md`` section 7.3)::

    bits 0-2 compression | bit 3 timestamp type | bit 4 transactional | bit 5 control
    bit 6 delete horizon (baseTimestamp holds it) | bits 7-15 unused
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Final

from offsetscope.protocol.errors import DecodeError
from offsetscope.protocol.log.compression import Compression
from offsetscope.protocol.log.control import ControlKey, EndTxnMarker, parse_control_key

MAGIC_V0: Final = 0
MAGIC_V1: Final = 1
MAGIC_V2: Final = 2

NO_TIMESTAMP: Final = -1
NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1
NO_SEQUENCE: Final = -1
NO_PARTITION_LEADER_EPOCH: Final = -1

LOG_OVERHEAD: Final = 12  # int64 offset + int32 length, before every batch of every magic
HEADER_SIZE_UP_TO_MAGIC: Final = 17
RECORD_BATCH_OVERHEAD: Final = 61  # v2 batch header
LEGACY_RECORD_OVERHEAD_V0: Final = 14  # crc, magic, attributes, key length, value length
LEGACY_RECORD_OVERHEAD_V1: Final = 22  # + int64 timestamp

ATTR_COMPRESSION_MASK: Final = 0x07
ATTR_TIMESTAMP_TYPE: Final = 0x08
ATTR_TRANSACTIONAL: Final = 0x10
ATTR_CONTROL: Final = 0x20
ATTR_DELETE_HORIZON: Final = 0x40

Headers = tuple[tuple[str, bytes | None], ...]


class TimestampType(IntEnum):
    """Kafka's ``TimestampType``; magic 0 has none."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    @property
    def display_name(self) -> str:
        """The name Kafka prints (``CreateTime``, ``LogAppendTime``, ``NoTimestampType``)."""
        return _TIMESTAMP_NAMES[self]


_TIMESTAMP_NAMES = {
    TimestampType.NO_TIMESTAMP_TYPE: "NoTimestampType",
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
}


def increment_sequence(sequence: int, increment: int) -> int:
    """``DefaultRecordBatch.incrementSequence``: sequences wrap from 2**31-1 to 0."""
    if sequence > 0x7FFFFFFF - increment:
        return increment - (0x7FFFFFFF - sequence) - 1
    return sequence + increment


@dataclass(frozen=True, slots=True)
class Record:
    """One record, with the coordinates Kafka's deep iteration gives it.

    ``timestamp`` is already resolved: ``baseTimestamp + timestampDelta``, or the batch's
    ``maxTimestamp`` for LogAppendTime batches (v1: the wrapper's timestamp). ``sequence`` is
    ``baseSequence + offsetDelta`` (wrapping at 2**31-1), -1 without a producer. ``size`` is the
    record's encoded size including its length prefix. ``crc`` is set only for legacy messages,
    whose every message carries a CRC-32 (``crc_valid`` compares it with the bytes).
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Headers = ()
    sequence: int = NO_SEQUENCE
    attributes: int = 0
    size: int = 0
    crc: int | None = None
    crc_valid: bool = True

    @property
    def key_size(self) -> int:
        """Key length, -1 for a null key (as DumpLogSegments prints ``keySize``)."""
        return -1 if self.key is None else len(self.key)

    @property
    def value_size(self) -> int:
        """Value length, -1 for a null value (a tombstone)."""
        return -1 if self.value is None else len(self.value)

    @property
    def is_tombstone(self) -> bool:
        return self.value is None


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """A v2 record batch, or one shallow legacy message (magic 0/1), as read from a log.

    ``records`` holds the decoded records (empty when the reader was asked not to decode them,
    or when ``error`` is set: the header framed the batch but its records could not be decoded).
    ``records_count`` is the header's count (v2) or the number of messages (legacy).
    For legacy entries ``base_offset`` is the first inner offset and ``last_offset`` the entry's
    offset; producer fields are -1 and ``partition_leader_epoch`` is -1.
    """

    base_offset: int
    last_offset: int
    position: int
    size: int
    magic: int
    crc: int
    crc_valid: bool
    attributes: int
    partition_leader_epoch: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    records: tuple[Record, ...] = ()
    computed_crc: int | None = None
    error: DecodeError | None = field(default=None, compare=False)

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & ATTR_COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic == MAGIC_V0:
            return TimestampType.NO_TIMESTAMP_TYPE
        if self.attributes & ATTR_TIMESTAMP_TYPE:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return self.magic >= MAGIC_V2 and bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return self.magic >= MAGIC_V2 and bool(self.attributes & ATTR_CONTROL)

    @property
    def has_delete_horizon(self) -> bool:
        return self.magic >= MAGIC_V2 and bool(self.attributes & ATTR_DELETE_HORIZON)

    @property
    def delete_horizon_ms(self) -> int | None:
        """KIP-534 delete horizon (stored in baseTimestamp when attribute bit 6 is set)."""
        return self.base_timestamp if self.has_delete_horizon else None

    @property
    def last_sequence(self) -> int:
        """``baseSequence + lastOffsetDelta`` with Kafka's wrap-around, -1 without a sequence."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset - self.base_offset)

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    def control_keys(self) -> tuple[ControlKey, ...]:
        """Decoded control keys of a control batch's records (empty for a data batch)."""
        if not self.is_control:
            return ()
        return tuple(parse_control_key(r.key) for r in self.records)

    def end_txn_marker(self) -> EndTxnMarker | None:
        """The transaction marker of a COMMIT/ABORT control batch, else None."""
        if not self.is_control or not self.records:
            return None
        first = self.records[0]
        key = parse_control_key(first.key)
        if not key.is_transaction_marker:
            return None
        return EndTxnMarker.decode(first.key, first.value)


@dataclass(frozen=True, slots=True)
class RecordSpec:
    """A record to write.

    ``offset`` is only needed for batches with gaps (the subset a compacted batch keeps): it must
    increase within a batch, and records without one take the next offset. ``timestamp`` -1 means
    no timestamp.
    """

    key: bytes | None
    value: bytes | None
    timestamp: int = NO_TIMESTAMP
    headers: Headers = ()
    offset: int | None = None
