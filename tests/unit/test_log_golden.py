"""Golden bytes for the log format: hand-built batches and messages, and public test vectors.

Each hand-built example spells out one field per line (``docs/formats.md`` sections 6, 7 and 12)
and is checked both ways: decoding gives the field values, encoding the same inputs gives the
same bytes. The public vectors (section 11) are typed in from their published values: IBM/sarama
``record_test.go`` and ``control_record_test.go``, dpkp/kafka-python ``test/record`` (real
Kafka 0.10 / 0.11 broker data, the zigzag table and the CRC-32C check values).
"""

from __future__ import annotations

import gzip
import struct
import zlib

import crc32c
import pytest

from offsetscope.protocol.log import (
    Compression,
    ControlRecordType,
    EndTxnMarker,
    RecordSpec,
    ScanReport,
    TimestampType,
    encode_batch,
    encode_control_key,
    encode_end_txn_marker_batch,
    parse_control_key,
    read_batches,
    scan_columns,
)
from offsetscope.protocol.log.varint import decode_varlong, encode_varlong, varint_size

H = bytes.fromhex

# ------------------------------------------------------------------- hand-built: magic 2

V2_WITH_HEADER = b"".join(
    [
        H("0000000000000005"),  # baseOffset 5
        H("0000004d"),  # batchLength 77 (89 - 12)
        H("00000003"),  # partitionLeaderEpoch 3
        H("02"),  # magic 2
        H("d05d468c"),  # crc: CRC-32C of everything from attributes on
        H("0000"),  # attributes: no compression, CreateTime, not transactional/control
        H("00000001"),  # lastOffsetDelta 1
        H("0000018bcfe56800"),  # baseTimestamp 1700000000000
        H("0000018bcfe56807"),  # maxTimestamp 1700000000007
        H("ffffffffffffffff"),  # producerId -1
        H("ffff"),  # producerEpoch -1
        H("ffffffff"),  # baseSequence -1
        H("00000002"),  # recordsCount 2
        # record 0
        H("24"),  # length 18 (zigzag)
        H("00"),  # attributes
        H("00"),  # timestampDelta 0
        H("00"),  # offsetDelta 0
        H("04") + b"k1",  # keyLength 2, key
        H("04") + b"v1",  # valueLength 2, value
        H("02"),  # headerCount 1
        H("0a") + b"trace",  # header keyLength 5, key "trace"
        H("02") + H("01"),  # header valueLength 1, value 0x01
        # record 1: a tombstone
        H("10"),  # length 8
        H("00"),  # attributes
        H("0e"),  # timestampDelta 7
        H("02"),  # offsetDelta 1
        H("04") + b"k2",  # keyLength 2, key
        H("01"),  # valueLength -1: null value (tombstone)
        H("00"),  # headerCount 0
    ]
)


def test_v2_batch_with_header_decodes_field_by_field() -> None:
    assert crc32c.crc32c(V2_WITH_HEADER[21:]) == 0xD05D468C
    [batch] = read_batches(V2_WITH_HEADER, strict=True)
    assert (batch.base_offset, batch.last_offset, batch.size) == (5, 6, 89)
    assert batch.partition_leader_epoch == 3
    assert (batch.crc, batch.crc_valid) == (0xD05D468C, True)
    assert batch.compression is Compression.NONE
    assert batch.timestamp_type is TimestampType.CREATE_TIME
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
    first, second = batch.records
    assert (first.offset, first.timestamp, first.key, first.value) == (
        5,
        1700000000000,
        b"k1",
        b"v1",
    )
    assert first.headers == (("trace", b"\x01"),)
    assert first.size == 19
    assert (second.offset, second.timestamp, second.key, second.value) == (
        6,
        1700000000007,
        b"k2",
        None,
    )
    assert second.is_tombstone
    assert second.sequence == -1


def test_v2_batch_with_header_encodes_identically() -> None:
    encoded = encode_batch(
        [
            RecordSpec(b"k1", b"v1", 1700000000000, (("trace", b"\x01"),)),
            RecordSpec(b"k2", None, 1700000000007),
        ],
        base_offset=5,
        partition_leader_epoch=3,
    )
    assert encoded == V2_WITH_HEADER


V2_COMMIT_MARKER = b"".join(
    [
        H("000000000000002a"),  # baseOffset 42
        H("00000042"),  # batchLength 66
        H("00000000"),  # partitionLeaderEpoch 0
        H("02"),  # magic 2
        H("319392a0"),  # crc
        H("0030"),  # attributes: transactional (bit 4) + control (bit 5)
        H("00000000"),  # lastOffsetDelta 0
        H("0000018bcfe5687b"),  # baseTimestamp 1700000000123
        H("0000018bcfe5687b"),  # maxTimestamp 1700000000123
        H("00000000000003e8"),  # producerId 1000
        H("0002"),  # producerEpoch 2
        H("ffffffff"),  # baseSequence -1 (markers carry none)
        H("00000001"),  # recordsCount 1
        H("20"),  # record length 16
        H("00"),  # attributes
        H("00"),  # timestampDelta 0
        H("00"),  # offsetDelta 0
        H("08"),  # keyLength 4
        H("0000"),  # control key version 0
        H("0001"),  # control key type 1 = COMMIT
        H("0c"),  # valueLength 6
        H("0000"),  # EndTxnMarker version 0
        H("00000007"),  # coordinatorEpoch 7
        H("00"),  # headerCount 0
    ]
)


def test_control_batch_commit_marker() -> None:
    [batch] = read_batches(V2_COMMIT_MARKER, strict=True)
    assert batch.is_control
    assert batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (1000, 2, -1)
    [key] = batch.control_keys()
    assert key.type is ControlRecordType.COMMIT
    assert batch.end_txn_marker() == EndTxnMarker(committed=True, coordinator_epoch=7)
    encoded = encode_end_txn_marker_batch(
        base_offset=42,
        producer_id=1000,
        producer_epoch=2,
        committed=True,
        coordinator_epoch=7,
        timestamp=1700000000123,
    )
    assert encoded == V2_COMMIT_MARKER


def test_worked_example_tombstone_record_body() -> None:
    # docs/formats.md section 12: offsetDelta 0, timestampDelta 0, key "k", null value.
    record = b"".join(
        [
            H("0e"),  # length 7
            H("00"),  # attributes
            H("00"),  # timestampDelta 0
            H("00"),  # offsetDelta 0
            H("02") + b"k",  # keyLength 1, key
            H("01"),  # valueLength -1 (tombstone)
            H("00"),  # headerCount 0
        ]
    )
    batch = encode_batch([RecordSpec(b"k", None, 0)], base_offset=0)
    assert batch[61:] == record
    [decoded] = read_batches(batch, strict=True)
    assert decoded.records[0].value is None
    assert decoded.records[0].key == b"k"


# ------------------------------------------------------------------ hand-built: legacy


def _legacy_crc(body: bytes) -> bytes:
    return struct.pack(">I", zlib.crc32(body))


V0_BODY = b"".join(
    [
        H("00"),  # magic 0
        H("00"),  # attributes: no compression
        H("00000002") + b"k0",  # keyLength 2, key
        H("00000003") + b"abc",  # valueLength 3, value
    ]
)
V0_MESSAGE = b"".join(
    [
        H("0000000000000007"),  # offset 7
        H("00000013"),  # messageSize 19
        H("500da8e0"),  # crc: CRC-32 (IEEE) of magic .. end
        V0_BODY,
    ]
)

V1_BODY = b"".join(
    [
        H("01"),  # magic 1
        H("00"),  # attributes: no compression, CreateTime
        H("0000018bcfe56800"),  # timestamp 1700000000000
        H("ffffffff"),  # keyLength -1: null key
        H("00000002") + b"v1",  # valueLength 2, value
    ]
)
V1_MESSAGE = b"".join(
    [
        H("0000000000000009"),  # offset 9
        H("00000018"),  # messageSize 24
        H("6a5500fb"),  # crc
        V1_BODY,
    ]
)


def test_legacy_v0_message() -> None:
    assert _legacy_crc(V0_BODY) == H("500da8e0")
    [batch] = read_batches(V0_MESSAGE, strict=True)
    assert (batch.magic, batch.base_offset, batch.last_offset, batch.size) == (0, 7, 7, 31)
    assert batch.timestamp_type is TimestampType.NO_TIMESTAMP_TYPE
    [record] = batch.records
    assert (record.offset, record.timestamp, record.key, record.value) == (7, -1, b"k0", b"abc")
    assert (record.crc, record.crc_valid) == (0x500DA8E0, True)
    assert encode_batch([RecordSpec(b"k0", b"abc")], base_offset=7, magic=0) == V0_MESSAGE


def test_legacy_v1_message() -> None:
    assert _legacy_crc(V1_BODY) == H("6a5500fb")
    [batch] = read_batches(V1_MESSAGE, strict=True)
    assert (batch.magic, batch.base_offset, batch.max_timestamp) == (1, 9, 1700000000000)
    assert batch.timestamp_type is TimestampType.CREATE_TIME
    [record] = batch.records
    assert (record.offset, record.timestamp, record.key, record.value) == (
        9,
        1700000000000,
        None,
        b"v1",
    )
    encoded = encode_batch([RecordSpec(None, b"v1", 1700000000000)], base_offset=9, magic=1)
    assert encoded == V1_MESSAGE


def _inner(offset: int, timestamp: int, value: bytes) -> bytes:
    body = b"".join(
        [
            H("01"),  # magic 1
            H("00"),  # attributes (inner messages are never compressed)
            struct.pack(">q", timestamp),  # timestamp
            H("ffffffff"),  # null key
            struct.pack(">i", len(value)) + value,  # value
        ]
    )
    return struct.pack(">qi", offset, len(body) + 4) + _legacy_crc(body) + body


def _java_gzip(data: bytes) -> bytes:
    # java.util.zip.GZIPOutputStream: fixed header (mtime 0, OS 255), raw deflate, CRC-32, size.
    deflater = zlib.compressobj(6, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY)
    body = deflater.compress(data) + deflater.flush()
    header = b"".join(
        [
            H("1f8b"),  # gzip magic
            H("08"),  # CM deflate
            H("00"),  # FLG: no name, comment, extra or header CRC
            H("00000000"),  # MTIME 0
            H("00"),  # XFL
            H("ff"),  # OS 255 "unknown" (JDK 16+)
        ]
    )
    return header + body + struct.pack("<II", zlib.crc32(data), len(data))


def _v1_gzip_wrapper(wrapper_offset: int, wrapper_ts: int, inner: bytes, attributes: int) -> bytes:
    value = _java_gzip(inner)
    body = b"".join(
        [
            H("01"),  # magic 1
            bytes([attributes]),  # attributes: codec 1 (gzip) [+ bit 3 LogAppendTime]
            struct.pack(">q", wrapper_ts),  # timestamp: max inner (or the log-append time)
            H("ffffffff"),  # key: null for a wrapper
            struct.pack(">i", len(value)) + value,  # value: the compressed inner message set
        ]
    )
    return struct.pack(">qi", wrapper_offset, len(body) + 4) + _legacy_crc(body) + body


def test_v1_gzip_wrapper_relative_inner_offsets() -> None:
    # Inner offsets 0, 1, 2 are relative; the wrapper's offset 102 is the last absolute offset.
    inner = b"".join(_inner(i, 1700000000000 + i, b"m%d" % i) for i in range(3))
    wrapper = _v1_gzip_wrapper(102, 1700000000002, inner, 0x01)
    [batch] = read_batches(wrapper, strict=True)
    assert (batch.base_offset, batch.last_offset, batch.records_count) == (100, 102, 3)
    assert batch.compression is Compression.GZIP
    assert [r.offset for r in batch.records] == [100, 101, 102]
    assert [r.timestamp for r in batch.records] == [1700000000000, 1700000000001, 1700000000002]
    assert [r.value for r in batch.records] == [b"m0", b"m1", b"m2"]
    encoded = encode_batch(
        [RecordSpec(None, b"m%d" % i, 1700000000000 + i) for i in range(3)],
        base_offset=100,
        magic=1,
        compression=Compression.GZIP,
    )
    assert encoded == wrapper


def test_v1_log_append_time_wrapper_overrides_inner_timestamps() -> None:
    inner = b"".join(_inner(i, 1700000000000 + i, b"m%d" % i) for i in range(2))
    wrapper = _v1_gzip_wrapper(51, 1800000000000, inner, 0x01 | 0x08)
    [batch] = read_batches(wrapper, strict=True)
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in batch.records] == [1800000000000, 1800000000000]
    assert [r.offset for r in batch.records] == [50, 51]


def test_v0_gzip_wrapper_absolute_inner_offsets_read_with_python_gzip() -> None:
    def inner_v0(offset: int, value: bytes) -> bytes:
        body = H("0000") + H("ffffffff") + struct.pack(">i", len(value)) + value
        return struct.pack(">qi", offset, len(body) + 4) + _legacy_crc(body) + body

    # A different gzip writer (Python's, with a name-less header and mtime) must read the same.
    value = gzip.compress(inner_v0(30, b"a") + inner_v0(31, b"b"), mtime=1234)
    body = H("00") + H("01") + H("ffffffff") + struct.pack(">i", len(value)) + value
    message = struct.pack(">qi", 31, len(body) + 4) + _legacy_crc(body) + body
    [batch] = read_batches(message, strict=True)
    assert [r.offset for r in batch.records] == [30, 31]
    assert [r.timestamp for r in batch.records] == [-1, -1]


# ----------------------------------------------------------------- public vectors: sarama

SARAMA_HEADER_TAIL = b"".join(
    [
        bytes([0, 0, 0, 0]),  # Last Offset Delta
        bytes([0, 0, 1, 88, 141, 205, 89, 56]),  # First Timestamp
        bytes([0, 0, 0, 0, 0, 0, 0, 0]),  # Max Timestamp
        bytes([0, 0, 0, 0, 0, 0, 0, 0]),  # Producer ID
        bytes([0, 0]),  # Producer Epoch
        bytes([0, 0, 0, 0]),  # First Sequence
        bytes([0, 0, 0, 1]),  # Number of Records
    ]
)
SARAMA_RECORD = bytes(
    [40, 0, 10, 0, 8, 1, 2, 3, 4, 6, 5, 6, 7, 2, 6, 8, 9, 10, 4, 11, 12]
)  # length 20, attrs, tsDelta 5, offsetDelta 0, key 01020304, value 050607, header 08090a=0b0c


def _sarama(length: int, crc: list[int], attributes: list[int], records: bytes) -> bytes:
    return b"".join(
        [
            bytes(8),  # First Offset
            struct.pack(">i", length),  # Length
            bytes(4),  # Partition Leader Epoch
            bytes([2]),  # Version
            bytes(crc),  # CRC
            bytes(attributes),  # Attributes
            SARAMA_HEADER_TAIL,
            records,
        ]
    )


SARAMA_VECTORS = {
    "uncompressed": _sarama(70, [84, 121, 97, 253], [0, 0], SARAMA_RECORD),
    "gzip": _sarama(
        95,
        [231, 74, 206, 165],
        [0, 1],
        b"".join(
            [
                bytes([31, 139, 8, 0, 0, 9, 110, 136, 0, 255]),  # gzip header (mtime set)
                bytes([0, 21, 0, 234, 255]),  # a stored deflate block of 21 bytes
                bytes([40, 0, 10, 0, 8, 1, 2, 3, 4, 6, 5, 6, 7, 2, 6, 8, 9, 10, 4, 11, 12]),
                bytes([3, 0]),  # final empty block
                bytes([173, 201, 88, 103, 21, 0, 0, 0]),  # CRC-32, size 21
            ]
        ),
    ),
    "snappy (xerial)": _sarama(
        92,
        [133, 100, 178, 36],
        [0, 2],
        bytes([130, 83, 78, 65, 80, 80, 89, 0])  # SNAPPY magic
        + bytes([0, 0, 0, 1])  # version
        + bytes([0, 0, 0, 1])  # compatible version
        + bytes([0, 0, 0, 23])  # compressed length
        + bytes([21, 80, 40, 0, 10, 0, 8, 1, 2, 3, 4, 6, 5, 6, 7, 2, 6, 8, 9, 10, 4, 11, 12]),
    ),
    "lz4 (content checksum, stored block)": _sarama(
        89,
        [157, 18, 145, 248],
        [0, 3],
        b"".join(
            [
                bytes([4, 34, 77, 24]),  # LZ4 frame magic
                bytes([100, 64, 167]),  # FLG (content checksum), BD 64 KiB, HC
                bytes([21, 0, 0, 128]),  # block of 21 bytes, stored uncompressed
                bytes([40, 0, 10, 0, 8, 1, 2, 3, 4, 6, 5, 6, 7, 2, 6, 8, 9, 10, 4, 11, 12]),
                bytes([0, 0, 0, 0]),  # end mark
                bytes([12, 59, 239, 146]),  # content checksum
            ]
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(SARAMA_VECTORS))
def test_sarama_record_batch_vectors(name: str) -> None:
    [batch] = read_batches(SARAMA_VECTORS[name], strict=True)
    assert batch.crc_valid
    assert (batch.producer_id, batch.base_sequence, batch.records_count) == (0, 0, 1)
    [record] = batch.records
    assert record.timestamp == 1479847795000 + 5
    assert (record.key, record.value) == (bytes([1, 2, 3, 4]), bytes([5, 6, 7]))
    assert record.headers == (("\x08\x09\x0a", bytes([11, 12])),)
    assert record.sequence == 0
    chunk = scan_columns(SARAMA_VECTORS[name], strict=True)
    assert chunk.records.value(0) == bytes([5, 6, 7])
    assert chunk.records.headers_count.tolist() == [1]


def _sarama_empty(crc: list[int], attributes: list[int]) -> bytes:
    return b"".join(
        [
            bytes(8),  # First Offset
            bytes([0, 0, 0, 49]),  # Length
            bytes(4),  # Partition Leader Epoch
            bytes([2]),  # Version
            bytes(crc),  # CRC
            bytes(attributes),  # Attributes
            bytes(4),  # Last Offset Delta
            bytes(8),  # First Timestamp
            bytes(8),  # Max Timestamp
            bytes(8),  # Producer ID
            bytes(2),  # Producer Epoch
            bytes(4),  # First Sequence
            bytes(4),  # Number of Records
        ]
    )


def test_sarama_empty_and_control_batches() -> None:
    empty = _sarama_empty([89, 95, 183, 221], [0, 0])
    control = _sarama_empty([81, 46, 67, 217], [0, 32])
    for data, is_control in ((empty, False), (control, True)):
        [batch] = read_batches(data, strict=True)
        assert batch.crc_valid
        assert (batch.records_count, batch.records) == (0, ())
        assert batch.is_control is is_control
        assert batch.base_timestamp == 0


def test_sarama_control_record_vectors() -> None:
    abort_key, abort_value = bytes([0, 0, 0, 0]), bytes([0, 0, 0, 0, 0, 10])
    commit_key, commit_value = bytes([0, 0, 0, 1]), bytes([0, 0, 0, 0, 0, 15])
    unknown_key = bytes([0, 0, 0, 128])
    assert EndTxnMarker.decode(abort_key, abort_value) == EndTxnMarker(False, 10)
    assert EndTxnMarker.decode(commit_key, commit_value) == EndTxnMarker(True, 15)
    unknown = parse_control_key(unknown_key)
    assert unknown.type is ControlRecordType.UNKNOWN
    assert unknown.type_id == 128
    assert encode_control_key(ControlRecordType.ABORT) == abort_key
    assert EndTxnMarker(True, 15).encode_value() == commit_value


# ----------------------------------------------------------- public vectors: kafka-python

# Real Kafka 0.11 broker data (v2): values "123", "" and "" (2 records), "123", "hdr" + header.
KP_V2 = (
    b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00;\x00\x00\x00\x01\x02\x03"
    b"\x18\xa2p\x00\x00\x00\x00\x00\x00\x00\x00\x01]\xff{\x06<\x00\x00\x01]"
    b"\xff{\x06<\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00"
    b"\x00\x00\x01\x12\x00\x00\x00\x01\x06123\x00"
    b"\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00@\x00\x00\x00\x02\x02\xc8"
    b"\\\xbd#\x00\x00\x00\x00\x00\x01\x00\x00\x01]\xff|\xddl\x00\x00\x01]\xff"
    b"|\xde\x14\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00"
    b"\x00\x00\x02\x0c\x00\x00\x00\x01\x00\x00\x0e\x00\xd0\x02\x02\x01\x00"
    b"\x00"
    b"\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00;\x00\x00\x00\x02\x02.\x0b"
    b"\x85\xb7\x00\x00\x00\x00\x00\x00\x00\x00\x01]\xff|\xe7\x9d\x00\x00\x01]"
    b"\xff|\xe7\x9d\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"
    b"\x00\x00\x00\x01\x12\x00\x00\x00\x01\x06123\x00"
    b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00E\x00\x00\x00\x00\x02\\"
    b"\xd8\xefR\x00\x00\x00\x00\x00\x00\x00\x00\x01e\x85\xb6\xf3\xc1\x00\x00"
    b"\x01e\x85\xb6\xf3\xc1\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"
    b"\xff\xff\x00\x00\x00\x01&\x00\x00\x00\x01\x06hdr\x02\x08hkey\x08hval"
)
# Real Kafka 0.10 broker data (v1): "123", "", "", "123".
KP_V1 = (
    b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x19G\x86(\xc2\x01\x00\x00"
    b"\x00\x01^\x18g\xab\xae\xff\xff\xff\xff\x00\x00\x00\x03123"
    b"\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x16\xef\x98\xc9 \x01\x00"
    b"\x00\x00\x01^\x18g\xaf\xc0\xff\xff\xff\xff\x00\x00\x00\x00"
    b"\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x16_\xaf\xfb^\x01\x00\x00"
    b"\x00\x01^\x18g\xb0r\xff\xff\xff\xff\x00\x00\x00\x00"
    b"\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x19\xa8\x12W \x01\x00\x00"
    b"\x00\x01^\x18g\xb8\x03\xff\xff\xff\xff\x00\x00\x00\x03123"
)
# Real Kafka 0.10 broker data (v0): "123", "", "", "123".
KP_V0 = (
    b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x11\xfe\xb0\x1d\xbf\x00"
    b"\x00\xff\xff\xff\xff\x00\x00\x00\x03123"
    b"\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x0eyWH\xe0\x00\x00\xff"
    b"\xff\xff\xff\x00\x00\x00\x00"
    b"\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x0eyWH\xe0\x00\x00\xff"
    b"\xff\xff\xff\x00\x00\x00\x00"
    b"\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x11\xfe\xb0\x1d\xbf\x00"
    b"\x00\xff\xff\xff\xff\x00\x00\x00\x03123"
)
# Synthetic v2 ABORT control batch with an opaque 22-byte value (not an EndTxnMarker); its
# stored CRC does not match its bytes (kafka-python's test never checks it).
KP_CONTROL = (
    b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00R\x00\x00\x00\x00"
    b"\x02e\x97\xff\xd0\x00\x20\x00\x00\x00\x00\x00\x00\x00\x00\x00"
    b"\x98\x96\x7f\x00\x00\x00\x00\x00\x98\x96"
    b"\x7f\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"
    b"\x00\x00\x00\x01@\x00\x00\x00\x08\x00\x00\x00\x00,opaque-control-message\x00"
)


def test_kafka_python_real_broker_v2_with_zero_padding() -> None:
    report = ScanReport()
    batches = list(read_batches(KP_V2 + bytes(4), report=report, strict=True))
    assert [len(b.records) for b in batches] == [1, 2, 1, 1]
    assert all(b.crc_valid for b in batches)
    first = batches[0].records[0]
    assert (first.value, first.key, first.timestamp) == (b"123", None, 1503229838908)
    assert [r.value for r in batches[1].records] == [b"", b""]
    assert batches[3].records[0].value == b"hdr"
    assert batches[3].records[0].headers == (("hkey", b"hval"),)
    assert report.valid_bytes == 299
    assert report.invalid_tail_bytes == 4
    [tail] = report.invalid_tails
    assert tail.zero_padding
    assert tail.position == 299


def test_kafka_python_real_broker_v1_and_v0() -> None:
    report = ScanReport()
    v1 = list(read_batches(KP_V1 + bytes(4), report=report))
    assert [b.records[0].value for b in v1] == [b"123", b"", b"", b"123"]
    assert v1[0].records[0].timestamp == 1503648000942
    assert v1[0].records[0].crc == 1199974594
    assert (report.valid_bytes, report.invalid_tail_bytes) == (142, 4)
    v0 = list(read_batches(KP_V0, strict=True))
    assert [b.records[0].value for b in v0] == [b"123", b"", b"", b"123"]
    assert v0[0].records[0].timestamp == -1
    assert v0[0].records[0].crc == -22012481 & 0xFFFFFFFF
    assert all(b.crc_valid for b in v0 + v1)


def test_kafka_python_opaque_control_batch() -> None:
    report = ScanReport()
    [batch] = read_batches(KP_CONTROL, report=report)
    assert not batch.crc_valid
    [mismatch] = report.crc_mismatches
    assert (mismatch.stored, mismatch.position) == (0x6597FFD0, 0)
    assert mismatch.computed == crc32c.crc32c(KP_CONTROL[21:])
    assert batch.is_control
    assert not batch.is_transactional
    [key] = batch.control_keys()
    assert key.type is ControlRecordType.ABORT
    assert batch.records[0].value == b"opaque-control-message"


# --------------------------------------------------------------------- zigzag and CRC-32C

ZIGZAG = [
    (b"\x00", 0),
    (b"\x01", -1),
    (b"\x02", 1),
    (b"\x7e", 63),
    (b"\x7f", -64),
    (b"\x80\x01", 64),
    (b"\x81\x01", -65),
    (b"\xfe\x7f", 8191),
    (b"\xff\x7f", -8192),
    (b"\x80\x80\x01", 8192),
    (b"\x81\x80\x01", -8193),
    (b"\xfe\xff\x7f", 1048575),
    (b"\xff\xff\x7f", -1048576),
    (b"\x80\x80\x80\x01", 1048576),
    (b"\x81\x80\x80\x01", -1048577),
    (b"\xfe\xff\xff\x7f", 134217727),
    (b"\xff\xff\xff\x7f", -134217728),
    (b"\x80\x80\x80\x80\x01", 134217728),
    (b"\x81\x80\x80\x80\x01", -134217729),
    (b"\xfe\xff\xff\xff\x7f", 17179869183),
    (b"\xff\xff\xff\xff\x7f", -17179869184),
    (b"\x80\x80\x80\x80\x80\x01", 17179869184),
    (b"\x81\x80\x80\x80\x80\x01", -17179869185),
    (b"\xfe\xff\xff\xff\xff\x7f", 2199023255551),
    (b"\xff\xff\xff\xff\xff\x7f", -2199023255552),
    (b"\x80\x80\x80\x80\x80\x80\x01", 2199023255552),
    (b"\x81\x80\x80\x80\x80\x80\x01", -2199023255553),
    (b"\xfe\xff\xff\xff\xff\xff\x7f", 281474976710655),
    (b"\xff\xff\xff\xff\xff\xff\x7f", -281474976710656),
    (b"\x80\x80\x80\x80\x80\x80\x80\x01", 281474976710656),
    (b"\x81\x80\x80\x80\x80\x80\x80\x01", -281474976710657),
    (b"\xfe\xff\xff\xff\xff\xff\xff\x7f", 36028797018963967),
    (b"\xff\xff\xff\xff\xff\xff\xff\x7f", -36028797018963968),
    (b"\x80\x80\x80\x80\x80\x80\x80\x80\x01", 36028797018963968),
    (b"\x81\x80\x80\x80\x80\x80\x80\x80\x01", -36028797018963969),
    (b"\xfe\xff\xff\xff\xff\xff\xff\xff\x7f", 4611686018427387903),
    (b"\xff\xff\xff\xff\xff\xff\xff\xff\x7f", -4611686018427387904),
    (b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 4611686018427387904),
    (b"\x81\x80\x80\x80\x80\x80\x80\x80\x80\x01", -4611686018427387905),
]


@pytest.mark.parametrize(("encoded", "value"), ZIGZAG)
def test_zigzag_table(encoded: bytes, value: int) -> None:
    assert encode_varlong(value) == encoded
    assert varint_size(value) == len(encoded)
    padded = b"\x01\xf0" + encoded + b"\xff\x01"
    assert decode_varlong(padded, 2, len(padded), "x") == (value, 2 + len(encoded))


def test_crc32c_check_values() -> None:
    assert crc32c.crc32c(b"").to_bytes(4, "big") == b"\x00\x00\x00\x00"
    assert crc32c.crc32c(b"a").to_bytes(4, "big") == b"\xc1\xd0\x43\x30"
