"""RecordBatch magic 2: decode and encode, byte-identical to Kafka's ``DefaultRecordBatch``.

Wire layout (``docs/formats.md`` sections 7.3 and 7.4; all integers big-endian)::

    offset size field
         0    8 baseOffset            int64
         8    4 batchLength           int32   bytes after this field (= size - 12)
        12    4 partitionLeaderEpoch  int32   not covered by the CRC (the leader sets it)
        16    1 magic                 int8    2
        17    4 crc                   uint32  CRC-32C of bytes 21 .. end
        21    2 attributes            int16   compression 0-2, timestamp type 3,
                                              transactional 4, control 5, delete horizon 6
        23    4 lastOffsetDelta       int32   kept by compaction (count may be smaller)
        27    8 baseTimestamp         int64   first record's timestamp, the delete horizon
                                              when bit 6 is set, -1 in an emptied batch
        35    8 maxTimestamp          int64   LogAppendTime: the broker's time
        43    8 producerId            int64
        51    2 producerEpoch         int16
        53    4 baseSequence          int32
        57    4 recordsCount          int32
        61    . records               compressed as one stream when the codec is not 0

    record = varint length | int8 attributes | varlong timestampDelta | varint offsetDelta
             | varint keyLength, key | varint valueLength, value (-1 = null, a tombstone)
             | varint headerCount | [varint keyLength, utf-8 key, varint valueLength, value]...

Reading follows ``DefaultRecordBatch`` and ``DefaultRecord.readFrom``: every record must end
exactly where its length says, the declared count must consume the records section exactly, and
a count of 0 yields no records without touching the (possibly compressed) payload. Writing
follows ``MemoryRecordsBuilder``: the base timestamp is the first record's (or the delete
horizon), max timestamp the largest record timestamp (-1 if none) or the log-append time.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Final

import crc32c

from offsetscope.protocol.errors import (
    CorruptBatchError,
    CrcMismatchError,
    DecodeError,
    InvalidLengthError,
    InvalidStringError,
    TruncatedError,
)
from offsetscope.protocol.log.compression import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    Compression,
    compress,
    decompress,
)
from offsetscope.protocol.log.model import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    MAGIC_V2,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    Headers,
    Record,
    RecordBatch,
    RecordSpec,
    TimestampType,
    increment_sequence,
)
from offsetscope.protocol.log.varint import (
    decode_varint,
    decode_varlong,
    encode_varint,
    encode_varlong,
)

BATCH_HEADER: Final = struct.Struct(">qiibIhiqqqhii")
_AFTER_CRC: Final = struct.Struct(">hiqqqhii")
_BEFORE_CRC: Final = struct.Struct(">qiib")
_CRC: Final = struct.Struct(">I")
CRC_START: Final = 21
_MIN_RECORD_SIZE: Final = 7  # length, attributes, tsDelta, offsetDelta, keyLen, valueLen, count

assert BATCH_HEADER.size == RECORD_BATCH_OVERHEAD


def moved_into_decompressed(error: DecodeError, records_offset: int) -> DecodeError:
    """An error found inside decompressed records, re-anchored at the compressed section.

    Offsets inside a decompressed stream have no place in the file; the error points at the
    start of the compressed records section and names the decompressed byte in its reason.
    """
    clone = error.relocated("", records_offset - error.offset)
    clone.reason = f"{error.reason} (decompressed byte {error.offset})"
    ValueError.__init__(clone, clone._render())
    return clone


def decode_v2_batch(
    buf: bytes | bytearray | memoryview,
    pos: int,
    size: int,
    *,
    base: int = 0,
    path: str = "batch",
    decode_records: bool = True,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> RecordBatch:
    """Decode the v2 batch occupying ``buf[pos:pos+size]``.

    Header problems raise; a CRC mismatch is recorded in ``crc_valid``/``computed_crc``; a
    failure inside the records is returned in ``error`` (with no records) so the caller decides
    whether that is fatal.

    Args:
        buf: buffer holding the batch.
        pos: batch start within ``buf``.
        size: batch size including the 12-byte offset/length prefix.
        base: position of ``buf[0]`` in the file, added to every reported offset.
        path: field path prefix (``batch[3]``).
        decode_records: decode the records (else ``records`` stays empty).
        max_decompressed_bytes: decompression bound for this batch.

    Raises:
        TruncatedError: ``size`` is smaller than the 61-byte header or past the buffer.
    """
    end = pos + size
    if size < RECORD_BATCH_OVERHEAD or end > len(buf):
        raise TruncatedError(
            f"{path}.batchLength", base + pos + 8, RECORD_BATCH_OVERHEAD, min(size, len(buf) - pos)
        )
    (
        base_offset,
        _length,
        leader_epoch,
        magic,
        stored_crc,
        attributes,
        last_delta,
        base_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    ) = BATCH_HEADER.unpack_from(buf, pos)
    computed = crc32c.crc32c(memoryview(buf)[pos + CRC_START : end])
    records: tuple[Record, ...] = ()
    error: DecodeError | None = None
    if decode_records:
        try:
            records = _decode_batch_records(
                buf,
                pos,
                end,
                base=base,
                path=path,
                attributes=attributes,
                base_offset=base_offset,
                base_ts=base_ts,
                max_ts=max_ts,
                base_sequence=base_sequence,
                count=count,
                limit=max_decompressed_bytes,
            )
        except DecodeError as exc:
            error = exc
    elif count < 0:
        error = InvalidLengthError(
            f"negative records count {count}", f"{path}.recordsCount", base + pos + 57
        )
    return RecordBatch(
        base_offset=base_offset,
        last_offset=base_offset + last_delta,
        position=base + pos,
        size=size,
        magic=magic,
        crc=stored_crc,
        crc_valid=stored_crc == computed,
        attributes=attributes & 0xFFFF,
        partition_leader_epoch=leader_epoch,
        base_timestamp=base_ts,
        max_timestamp=max_ts,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        records_count=count,
        records=records,
        computed_crc=computed,
        error=error,
    )


def crc_error(batch: RecordBatch, path: str) -> CrcMismatchError:
    """The error a strict reader raises for ``batch`` whose CRC does not match."""
    return CrcMismatchError(f"{path}.crc", batch.position + 17, batch.crc, batch.computed_crc or 0)


def _decode_batch_records(
    buf: bytes | bytearray | memoryview,
    pos: int,
    end: int,
    *,
    base: int,
    path: str,
    attributes: int,
    base_offset: int,
    base_ts: int,
    max_ts: int,
    base_sequence: int,
    count: int,
    limit: int,
) -> tuple[Record, ...]:
    if count < 0:
        raise InvalidLengthError(
            f"negative records count {count}", f"{path}.recordsCount", base + pos + 57
        )
    if count == 0:
        return ()
    start = pos + RECORD_BATCH_OVERHEAD
    log_append = max_ts if attributes & ATTR_TIMESTAMP_TYPE else None
    codec_id = attributes & ATTR_COMPRESSION_MASK
    if codec_id == 0:
        return decode_records(
            buf,
            start,
            end,
            count,
            base_offset=base_offset,
            base_ts=base_ts,
            base_sequence=base_sequence,
            log_append_time=log_append,
            path=f"{path}.records",
            base=base,
        )
    if codec_id > 4:
        raise CorruptBatchError(
            f"unknown compression codec {codec_id}", f"{path}.attributes", base + pos + 21
        )
    codec = Compression(codec_id)
    payload = decompress(
        codec,
        memoryview(buf)[start:end],
        magic=MAGIC_V2,
        limit=limit,
        path=f"{path}.records",
        offset=base + start,
    )
    try:
        return decode_records(
            payload,
            0,
            len(payload),
            count,
            base_offset=base_offset,
            base_ts=base_ts,
            base_sequence=base_sequence,
            log_append_time=log_append,
            path=f"{path}.records",
            base=0,
        )
    except DecodeError as exc:
        raise moved_into_decompressed(exc, base + start) from None


def decode_records(
    data: bytes | bytearray | memoryview,
    start: int,
    end: int,
    count: int,
    *,
    base_offset: int,
    base_ts: int,
    base_sequence: int,
    log_append_time: int | None,
    path: str,
    base: int,
) -> tuple[Record, ...]:
    """Decode ``count`` v2 records filling ``data[start:end]`` exactly.

    Args:
        data: the (decompressed) records section's buffer.
        start: first record byte.
        end: end of the records section.
        count: the batch's recordsCount (>= 0).
        base_offset: batch baseOffset.
        base_ts: batch baseTimestamp.
        base_sequence: batch baseSequence.
        log_append_time: the batch maxTimestamp for LogAppendTime batches, else None.
        path: field path prefix (``batch[3].records``).
        base: position of ``data[0]`` in the file (for offsets in errors).

    Raises:
        DecodeError: any malformed record, a count that does not fit, or leftover bytes.
    """
    if count > (end - start) // _MIN_RECORD_SIZE:
        raise InvalidLengthError(
            f"recordsCount {count} cannot fit in {end - start} bytes of records",
            f"{path.rsplit('.', 1)[0]}.recordsCount",
            base + start,
        )
    out: list[Record] = []
    append = out.append
    p = start
    for i in range(count):
        try:
            record, p = _decode_record(
                data, p, end, base_offset, base_ts, base_sequence, log_append_time
            )
        except DecodeError as exc:
            # Field paths are relative to the record until something fails: building
            # "batch[3].records[5].valueLength" for every field of every record would cost more
            # than decoding it.
            raise exc.relocated(f"{path}[{i}]", base) from None
        append(record)
    if p != end:
        raise CorruptBatchError(
            f"{end - p} bytes remain after the declared {count} records",
            f"{path}[{count}]",
            base + p,
        )
    return tuple(out)


def _varint(data: bytes | bytearray | memoryview, p: int, end: int, name: str) -> tuple[int, int]:
    """A zigzag varint, with the one-byte case (most fields of most records) inlined."""
    if p < end:
        b = data[p]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), p + 1
    return decode_varint(data, p, end, name)


def _decode_record(
    data: bytes | bytearray | memoryview,
    pos: int,
    end: int,
    base_offset: int,
    base_ts: int,
    base_sequence: int,
    log_append_time: int | None,
) -> tuple[Record, int]:
    """One record at ``pos``; errors carry paths relative to the record (``valueLength``)."""
    length, p = _varint(data, pos, end, "length")
    if length < 0:
        raise InvalidLengthError(f"negative record length {length}", "length", pos)
    body_end = p + length
    if body_end > end:
        raise TruncatedError("length", pos, length, end - p)
    if p >= body_end:
        raise TruncatedError("attributes", p, 1, 0)
    attributes = data[p]
    ts_delta, p = decode_varlong(data, p + 1, body_end, "timestampDelta")
    offset_delta, p = _varint(data, p, body_end, "offsetDelta")
    key, p = _read_bytes(data, p, body_end, "key", "keyLength")
    value, p = _read_bytes(data, p, body_end, "value", "valueLength")
    header_count, hp = _varint(data, p, body_end, "headersCount")
    if header_count < 0 or header_count > body_end - hp:
        raise InvalidLengthError(
            f"invalid number of record headers {header_count}", "headersCount", p
        )
    headers: Headers = ()
    p = hp
    if header_count:
        headers, p = _read_headers(data, p, body_end, header_count)
    if p != body_end:
        raise InvalidLengthError(
            f"record length {length} but its fields take {p - (body_end - length)} bytes",
            "length",
            pos,
        )
    timestamp = log_append_time if log_append_time is not None else base_ts + ts_delta
    sequence = (
        increment_sequence(base_sequence, offset_delta) if base_sequence >= 0 else NO_SEQUENCE
    )
    record = Record(
        offset=base_offset + offset_delta,
        timestamp=timestamp,
        key=key,
        value=value,
        headers=headers,
        sequence=sequence,
        attributes=attributes,
        size=body_end - pos,
    )
    return record, body_end


def _read_headers(
    data: bytes | bytearray | memoryview, p: int, end: int, count: int
) -> tuple[Headers, int]:
    items = []
    for h in range(count):
        hpath = f"headers[{h}]"
        key_len, q = _varint(data, p, end, f"{hpath}.keyLength")
        if key_len < 0:
            raise InvalidLengthError(
                f"invalid negative header key size {key_len}", f"{hpath}.keyLength", p
            )
        if q + key_len > end:
            raise TruncatedError(f"{hpath}.key", q, key_len, end - q)
        try:
            header_key = bytes(data[q : q + key_len]).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidStringError(
                f"header key is not UTF-8: {exc.reason}", f"{hpath}.key", q
            ) from None
        header_value, p = _read_bytes(
            data, q + key_len, end, f"{hpath}.value", f"{hpath}.valueLength"
        )
        items.append((header_key, header_value))
    return tuple(items), p


def _read_bytes(
    data: bytes | bytearray | memoryview, pos: int, end: int, name: str, length_name: str
) -> tuple[bytes | None, int]:
    size, p = _varint(data, pos, end, length_name)
    if size < 0:
        if size != -1:
            raise InvalidLengthError(f"invalid length {size}", length_name, pos)
        return None, p
    if p + size > end:
        raise TruncatedError(name, p, size, end - p)
    return bytes(data[p : p + size]), p + size


# ----------------------------------------------------------------------------------- encode


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Headers,
) -> bytes:
    """Encode one v2 record (``DefaultRecord.writeTo``), length prefix included."""
    parts = [b"\x00", encode_varlong(timestamp_delta), encode_varint(offset_delta)]
    for blob in (key, value):
        if blob is None:
            parts.append(b"\x01")
        else:
            parts.append(encode_varint(len(blob)))
            parts.append(blob)
    parts.append(encode_varint(len(headers)))
    for header_key, header_value in headers:
        raw_key = header_key.encode("utf-8")
        parts.append(encode_varint(len(raw_key)))
        parts.append(raw_key)
        if header_value is None:
            parts.append(b"\x01")
        else:
            parts.append(encode_varint(len(header_value)))
            parts.append(header_value)
    body = b"".join(parts)
    return encode_varint(len(body)) + body


def compute_attributes(
    compression: Compression,
    timestamp_type: TimestampType,
    *,
    is_transactional: bool,
    is_control: bool,
    has_delete_horizon: bool,
) -> int:
    """``DefaultRecordBatch.computeAttributes``."""
    if timestamp_type is TimestampType.NO_TIMESTAMP_TYPE:
        raise ValueError("magic 2 batches need a timestamp type")
    attributes = int(compression) & ATTR_COMPRESSION_MASK
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attributes |= ATTR_TIMESTAMP_TYPE
    if is_transactional:
        attributes |= ATTR_TRANSACTIONAL
    if is_control:
        attributes |= ATTR_CONTROL
    if has_delete_horizon:
        attributes |= ATTR_DELETE_HORIZON
    return attributes


def assemble_batch(
    *,
    base_offset: int,
    last_offset_delta: int,
    partition_leader_epoch: int,
    attributes: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    count: int,
    records: bytes,
) -> bytes:
    """Header + records with the CRC-32C filled in (``DefaultRecordBatch.writeHeader``)."""
    tail = _AFTER_CRC.pack(
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    )
    crc = crc32c.crc32c(records, crc32c.crc32c(tail))
    head = _BEFORE_CRC.pack(
        base_offset, RECORD_BATCH_OVERHEAD - 12 + len(records), partition_leader_epoch, MAGIC_V2
    )
    return b"".join((head, _CRC.pack(crc), tail, records))


def encode_v2_batch(
    records: Sequence[RecordSpec],
    *,
    base_offset: int,
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
    """Build one v2 batch the way ``MemoryRecordsBuilder`` does; see :func:`encode_batch`."""
    if not records:
        raise ValueError("a v2 batch needs at least one record (see encode_empty_batch)")
    _validate_producer(producer_id, producer_epoch, base_sequence, is_transactional, is_control)
    has_horizon = delete_horizon_ms is not None and delete_horizon_ms >= 0
    base_ts: int | None = delete_horizon_ms if has_horizon else None
    max_ts = NO_TIMESTAMP
    previous: int | None = None
    encoded: list[bytes] = []
    for i, spec in enumerate(records):
        offset = (
            spec.offset
            if spec.offset is not None
            else (base_offset if previous is None else previous + 1)
        )
        if previous is not None and offset <= previous:
            raise ValueError(f"record {i}: offset {offset} does not follow {previous}")
        if offset < base_offset or offset - base_offset > 0x7FFFFFFF:
            raise ValueError(f"record {i}: offset {offset} is out of range for base {base_offset}")
        if spec.timestamp < 0 and spec.timestamp != NO_TIMESTAMP:
            raise ValueError(f"record {i}: invalid negative timestamp {spec.timestamp}")
        if base_ts is None:
            base_ts = spec.timestamp
        max_ts = max(max_ts, spec.timestamp)
        encoded.append(
            encode_record(
                offset - base_offset, spec.timestamp - base_ts, spec.key, spec.value, spec.headers
            )
        )
        previous = offset
    assert previous is not None
    assert base_ts is not None
    if last_offset is not None:
        if last_offset < previous:
            raise ValueError(f"last_offset {last_offset} precedes the last record {previous}")
        previous = last_offset
    if base_ts < 0 and base_ts != NO_TIMESTAMP:
        raise ValueError(f"invalid base timestamp {base_ts}")
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        max_ts = log_append_time
    payload = b"".join(encoded)
    if compression is not Compression.NONE:
        payload = compress(compression, payload, magic=MAGIC_V2, level=compression_level)
    attributes = compute_attributes(
        compression,
        timestamp_type,
        is_transactional=is_transactional,
        is_control=is_control,
        has_delete_horizon=has_horizon,
    )
    return assemble_batch(
        base_offset=base_offset,
        last_offset_delta=previous - base_offset,
        partition_leader_epoch=partition_leader_epoch,
        attributes=attributes,
        base_timestamp=base_ts,
        max_timestamp=max_ts,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        count=len(records),
        records=payload,
    )


def encode_empty_batch(
    *,
    base_offset: int,
    last_offset: int,
    max_timestamp: int = NO_TIMESTAMP,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = 0,
) -> bytes:
    """An empty batch header as the log cleaner keeps it (``DefaultRecordBatch.writeEmptyHeader``).

    Compaction removed every record but the batch stays to preserve the producer's sequence
    state: count 0, baseTimestamp -1, no compression, ``lastOffsetDelta`` kept.
    """
    if last_offset < base_offset:
        raise ValueError(f"last_offset {last_offset} precedes base_offset {base_offset}")
    attributes = compute_attributes(
        Compression.NONE,
        timestamp_type,
        is_transactional=is_transactional,
        is_control=is_control,
        has_delete_horizon=False,
    )
    return assemble_batch(
        base_offset=base_offset,
        last_offset_delta=last_offset - base_offset,
        partition_leader_epoch=partition_leader_epoch,
        attributes=attributes,
        base_timestamp=NO_TIMESTAMP,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        count=0,
        records=b"",
    )


def _validate_producer(
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    is_transactional: bool,
    is_control: bool,
) -> None:
    """``MemoryRecordsBuilder.validateProducerState``."""
    if is_transactional and producer_id == NO_PRODUCER_ID:
        raise ValueError("cannot write transactional records without a producer id")
    if producer_id != NO_PRODUCER_ID:
        if producer_epoch == NO_PRODUCER_EPOCH:
            raise ValueError("invalid negative producer epoch")
        if base_sequence < 0 and not is_control:
            raise ValueError("invalid negative sequence number")
