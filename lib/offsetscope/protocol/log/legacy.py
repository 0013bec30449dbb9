"""Legacy message sets, magic 0 and 1 (``LegacyRecord``, ``AbstractLegacyRecordBatch``).

Written by Kafka up to 0.10.x; they survive in old compacted logs. Entry layout
(``docs/formats.md`` section 7.5)::

    int64 offset | int32 messageSize | message:
        uint32 crc          CRC-32 (IEEE, zlib) of magic .. end of message
        int8   magic        0 or 1
        int8   attributes   bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4), bit 3 (v1)
                            LogAppendTime
        int64  timestamp    v1 only (-1 = none)
        int32  keyLength, key      (-1 = null)
        int32  valueLength, value  (-1 = null = tombstone)

A compressed message is a *wrapper*: null key, value = the compressed bytes of an inner message
set (entries as above, never compressed themselves). Inner offsets are absolute in a magic-0
wrapper; in a magic-1 wrapper they are relative (0, 1, ...) and the wrapper's own offset is the
absolute offset of the last inner message, so ``absolute = wrapperOffset - lastInner + inner``
(a wrapper offset of 0 from some librdkafka versions means base 0). Inner v1 messages take the
wrapper's timestamp when the wrapper is LogAppendTime. Magic 0 has no timestamps at all.

Writing follows ``MemoryRecordsBuilder`` for magic < 2: uncompressed records become one entry
each; compressed ones one wrapper entry whose offset is the last inner offset and whose timestamp
is the log-append time or the largest inner timestamp (-1 for magic 0).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from typing import Final

from offsetscope.protocol.errors import (
    CompressionError,
    CorruptBatchError,
    DecodeError,
    InvalidLengthError,
    TrailingBytesError,
    TruncatedError,
    UnsupportedMagicError,
)
from offsetscope.protocol.log.batch import moved_into_decompressed
from offsetscope.protocol.log.compression import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    Compression,
    compress,
    decompress,
)
from offsetscope.protocol.log.model import (
    ATTR_COMPRESSION_MASK,
    ATTR_TIMESTAMP_TYPE,
    LEGACY_RECORD_OVERHEAD_V0,
    LOG_OVERHEAD,
    MAGIC_V0,
    MAGIC_V1,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    Record,
    RecordBatch,
    RecordSpec,
    TimestampType,
)

_ENTRY_HEAD: Final = struct.Struct(">qi")
_CRC_MAGIC_ATTR: Final = struct.Struct(">Ibb")
_I32: Final = struct.Struct(">i")
_I64: Final = struct.Struct(">q")


class _Message:
    """One parsed legacy message (internal; the public view is :class:`Record`)."""

    __slots__ = ("attributes", "computed_crc", "crc", "key", "magic", "size", "timestamp", "value")

    def __init__(
        self,
        crc: int,
        computed_crc: int,
        magic: int,
        attributes: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        size: int,
    ) -> None:
        self.crc = crc
        self.computed_crc = computed_crc
        self.magic = magic
        self.attributes = attributes
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.size = size


def _parse_message(
    data: bytes | bytearray | memoryview, pos: int, size: int, path: str, base: int
) -> _Message:
    """Parse the message in ``data[pos:pos+size]`` (after the offset/size prefix)."""
    end = pos + size
    if size < LEGACY_RECORD_OVERHEAD_V0:
        raise InvalidLengthError(
            f"message size {size} is below the minimum {LEGACY_RECORD_OVERHEAD_V0}",
            f"{path}.messageSize",
            base + pos - 4,
        )
    crc, magic, attributes = _CRC_MAGIC_ATTR.unpack_from(data, pos)
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise UnsupportedMagicError(
            f"invalid legacy magic {magic}", f"{path}.magic", base + pos + 4
        )
    computed = zlib.crc32(memoryview(data)[pos + 4 : end]) & 0xFFFFFFFF
    p = pos + 6
    timestamp = NO_TIMESTAMP
    if magic == MAGIC_V1:
        if p + 8 > end:
            raise TruncatedError(f"{path}.timestamp", base + p, 8, end - p)
        (timestamp,) = _I64.unpack_from(data, p)
        p += 8
    key, p = _sized(data, p, end, f"{path}.key", "keyLength", base)
    value, p = _sized(data, p, end, f"{path}.value", "valueLength", base)
    if p != end:
        raise TrailingBytesError(
            f"{end - p} bytes after the message value", f"{path}.messageSize", base + p
        )
    return _Message(crc, computed, magic, attributes, timestamp, key, value, LOG_OVERHEAD + size)


def _sized(
    data: bytes | bytearray | memoryview, pos: int, end: int, path: str, length_name: str, base: int
) -> tuple[bytes | None, int]:
    parent = path.rsplit(".", 1)[0]
    if pos + 4 > end:
        raise TruncatedError(f"{parent}.{length_name}", base + pos, 4, end - pos)
    (length,) = _I32.unpack_from(data, pos)
    pos += 4
    if length < 0:
        if length != -1:
            raise InvalidLengthError(
                f"invalid length {length}", f"{parent}.{length_name}", base + pos - 4
            )
        return None, pos
    if pos + length > end:
        raise TruncatedError(path, base + pos, length, end - pos)
    return bytes(data[pos : pos + length]), pos + length


def decode_legacy_entry(
    buf: bytes | bytearray | memoryview,
    pos: int,
    size: int,
    *,
    base: int = 0,
    path: str = "batch",
    decode_records: bool = True,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> RecordBatch:
    """Decode the shallow legacy entry in ``buf[pos:pos+size]`` (``size`` includes 12 bytes).

    Structural errors of the outer message raise; errors in a wrapper's inner message set are
    returned in ``error`` like :func:`~offsetscope.protocol.log.batch.decode_v2_batch` does.
    """
    if pos + size > len(buf) or size < LOG_OVERHEAD + LEGACY_RECORD_OVERHEAD_V0:
        raise TruncatedError(
            f"{path}.messageSize",
            base + pos + 8,
            LOG_OVERHEAD + LEGACY_RECORD_OVERHEAD_V0,
            min(size, len(buf) - pos),
        )
    (offset, _msg_size) = _ENTRY_HEAD.unpack_from(buf, pos)
    outer = _parse_message(buf, pos + LOG_OVERHEAD, size - LOG_OVERHEAD, f"{path}.message", base)
    codec_id = outer.attributes & ATTR_COMPRESSION_MASK
    ts_type = _timestamp_type(outer.magic, outer.attributes)
    records: tuple[Record, ...] = ()
    error: DecodeError | None = None
    base_offset = offset
    count = 1
    if codec_id == 0:
        records = (_record(offset, outer, outer.timestamp),)
    else:
        try:
            inner = _inner_records(
                outer,
                offset,
                codec_id,
                ts_type,
                path=f"{path}.message",
                value_offset=base + pos + size - len(outer.value or b""),
                limit=max_decompressed_bytes,
            )
            base_offset = inner[0].offset
            count = len(inner)
            if decode_records:
                records = inner
        except DecodeError as exc:
            error = exc
            count = 0
    return RecordBatch(
        base_offset=base_offset,
        last_offset=offset,
        position=base + pos,
        size=size,
        magic=outer.magic,
        crc=outer.crc,
        crc_valid=outer.crc == outer.computed_crc,
        attributes=outer.attributes & 0xFF,
        partition_leader_epoch=NO_PARTITION_LEADER_EPOCH,
        base_timestamp=outer.timestamp,
        max_timestamp=outer.timestamp,
        producer_id=NO_PRODUCER_ID,
        producer_epoch=NO_PRODUCER_EPOCH,
        base_sequence=NO_SEQUENCE,
        records_count=count,
        records=records,
        computed_crc=outer.computed_crc,
        error=error,
    )


def _timestamp_type(magic: int, attributes: int) -> TimestampType:
    if magic == MAGIC_V0:
        return TimestampType.NO_TIMESTAMP_TYPE
    if attributes & ATTR_TIMESTAMP_TYPE:
        return TimestampType.LOG_APPEND_TIME
    return TimestampType.CREATE_TIME


def _record(offset: int, message: _Message, timestamp: int) -> Record:
    return Record(
        offset=offset,
        timestamp=timestamp,
        key=message.key,
        value=message.value,
        attributes=message.attributes,
        size=message.size,
        crc=message.crc,
        crc_valid=message.crc == message.computed_crc,
    )


def _inner_records(
    outer: _Message,
    wrapper_offset: int,
    codec_id: int,
    wrapper_ts_type: TimestampType,
    *,
    path: str,
    value_offset: int,
    limit: int,
) -> tuple[Record, ...]:
    """Deep iteration of a compressed wrapper (``AbstractLegacyRecordBatch.DeepRecordsIterator``)."""
    if codec_id > 3:
        raise CompressionError(
            f"compression codec {codec_id} is invalid for magic {outer.magic}",
            f"{path}.attributes",
            value_offset,
        )
    if outer.value is None:
        raise CorruptBatchError(
            "compressed wrapper message with a null value", f"{path}.value", value_offset
        )
    payload = decompress(
        Compression(codec_id),
        outer.value,
        magic=outer.magic,
        limit=limit,
        path=f"{path}.value",
        offset=value_offset,
    )
    entries: list[tuple[int, _Message]] = []
    p = 0
    try:
        while p < len(payload):
            ipath = f"{path}.inner[{len(entries)}]"
            if p + LOG_OVERHEAD > len(payload):
                raise TruncatedError(f"{ipath}.offset", p, LOG_OVERHEAD, len(payload) - p)
            inner_offset, inner_size = _ENTRY_HEAD.unpack_from(payload, p)
            if inner_size < LEGACY_RECORD_OVERHEAD_V0 or p + LOG_OVERHEAD + inner_size > len(
                payload
            ):
                raise InvalidLengthError(
                    f"inner message size {inner_size} does not fit the "
                    f"{len(payload) - p - LOG_OVERHEAD} bytes left",
                    f"{ipath}.messageSize",
                    p + 8,
                )
            message = _parse_message(payload, p + LOG_OVERHEAD, inner_size, ipath, 0)
            if message.attributes & ATTR_COMPRESSION_MASK:
                raise CorruptBatchError(
                    "inner messages must not be compressed", f"{ipath}.attributes", p + 17
                )
            entries.append((inner_offset, message))
            p += LOG_OVERHEAD + inner_size
    except DecodeError as exc:
        raise moved_into_decompressed(exc, value_offset) from None
    if not entries:
        raise CorruptBatchError(
            "compressed message set with no inner messages", f"{path}.value", value_offset
        )
    if outer.magic == MAGIC_V1:
        last_inner = entries[-1][0]
        if wrapper_offset == 0:
            absolute_base = 0
        elif wrapper_offset < last_inner:
            raise CorruptBatchError(
                f"wrapper offset {wrapper_offset} is below the last inner offset {last_inner}",
                f"{path}.offset",
                value_offset,
            )
        else:
            absolute_base = wrapper_offset - last_inner
    else:
        absolute_base = 0
    records = []
    for inner_offset, message in entries:
        if message.magic == MAGIC_V1 and wrapper_ts_type is TimestampType.LOG_APPEND_TIME:
            timestamp = outer.timestamp
        else:
            timestamp = message.timestamp
        records.append(_record(absolute_base + inner_offset, message, timestamp))
    return tuple(records)


# ----------------------------------------------------------------------------------- encode


def encode_message(
    *,
    magic: int,
    attributes: int,
    timestamp: int,
    key: bytes | None,
    value: bytes | None,
) -> bytes:
    """One legacy message (without the offset/size prefix), CRC-32 filled in."""
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise ValueError(f"invalid legacy magic {magic}")
    if timestamp < 0 and timestamp != NO_TIMESTAMP:
        raise ValueError(f"invalid message timestamp {timestamp}")
    parts = [struct.pack(">bb", magic, attributes)]
    if magic == MAGIC_V1:
        parts.append(_I64.pack(timestamp))
    for blob in (key, value):
        if blob is None:
            parts.append(_I32.pack(-1))
        else:
            parts.append(_I32.pack(len(blob)))
            parts.append(blob)
    body = b"".join(parts)
    return struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF) + body


def _entry(offset: int, message: bytes) -> bytes:
    return _ENTRY_HEAD.pack(offset, len(message)) + message


def encode_legacy(
    records: Sequence[RecordSpec],
    *,
    base_offset: int,
    magic: int,
    compression: Compression = Compression.NONE,
    compression_level: int | None = None,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time: int = NO_TIMESTAMP,
) -> bytes:
    """Build a magic 0 or 1 message set as ``MemoryRecordsBuilder`` does for old formats.

    Args:
        records: the records; explicit offsets must increase.
        base_offset: offset of the first record without an explicit offset.
        magic: 0 or 1.
        compression: ``NONE`` writes one entry per record; any other codec one wrapper.
        compression_level: codec level (Kafka's default when None).
        timestamp_type: magic 1 only; LogAppendTime stamps every message with
            ``log_append_time``.
        log_append_time: the broker time for LogAppendTime.

    Returns:
        The entries' bytes, ready to append to a ``.log`` file.
    """
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise ValueError(f"invalid legacy magic {magic}")
    if not records:
        raise ValueError("a message set needs at least one record")
    if compression is Compression.ZSTD:
        raise ValueError("zstd is not supported for magic 0 and 1")
    if any(spec.headers for spec in records):
        raise ValueError(f"magic {magic} does not support record headers")
    log_append = magic == MAGIC_V1 and timestamp_type is TimestampType.LOG_APPEND_TIME
    ts_bit = ATTR_TIMESTAMP_TYPE if log_append else 0
    relative = magic == MAGIC_V1 and compression is not Compression.NONE
    entries: list[bytes] = []
    previous: int | None = None
    max_ts = NO_TIMESTAMP
    for i, spec in enumerate(records):
        offset = (
            spec.offset
            if spec.offset is not None
            else (base_offset if previous is None else previous + 1)
        )
        if previous is not None and offset <= previous:
            raise ValueError(f"record {i}: offset {offset} does not follow {previous}")
        timestamp = log_append_time if log_append else spec.timestamp
        message = encode_message(
            magic=magic, attributes=ts_bit, timestamp=timestamp, key=spec.key, value=spec.value
        )
        entries.append(_entry(offset - base_offset if relative else offset, message))
        if magic > MAGIC_V0:
            max_ts = max(max_ts, timestamp)
        previous = offset
    assert previous is not None
    if compression is Compression.NONE:
        return b"".join(entries)
    inner = compress(compression, b"".join(entries), magic=magic, level=compression_level)
    wrapper_ts = log_append_time if log_append else max_ts
    wrapper = encode_message(
        magic=magic,
        attributes=(int(compression) & ATTR_COMPRESSION_MASK) | ts_bit,
        timestamp=wrapper_ts if magic == MAGIC_V1 else NO_TIMESTAMP,
        key=None,
        value=inner,
    )
    return _entry(previous, wrapper)
