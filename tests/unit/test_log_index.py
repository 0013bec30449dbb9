"""The small files next to segments: ``.index``, ``.timeindex``, ``.txnindex``, ``.snapshot``,
``leader-epoch-checkpoint`` and ``partition.metadata`` (``docs/formats.md`` sections 7.1 and 7.7).
"""

from __future__ import annotations

import uuid

import crc32c
import pytest

from offsetscope.protocol.errors import (
    CrcMismatchError,
    InvalidLengthError,
    InvalidValueError,
    TruncatedError,
    UnsupportedVersionError,
)
from offsetscope.protocol.log import (
    AbortedTxn,
    EpochEntry,
    OffsetPosition,
    ProducerSnapshotEntry,
    TimestampOffset,
    encode_leader_epoch_checkpoint,
    encode_offset_index,
    encode_partition_metadata,
    encode_producer_snapshot,
    encode_time_index,
    encode_txn_index,
    kafka_uuid_string,
    parse_kafka_uuid,
    parse_leader_epoch_checkpoint,
    parse_partition_metadata,
    read_offset_index,
    read_producer_snapshot,
    read_time_index,
    read_txn_index,
    segment_file_name,
)

H = bytes.fromhex

OFFSET_INDEX = b"".join(
    [
        H("00000005") + H("00001388"),  # relative offset 5, position 5000
        H("0000000a") + H("00002710"),  # relative offset 10, position 10000
    ]
)
TIME_INDEX = b"".join(
    [
        H("0000018bcfe56805") + H("00000005"),  # timestamp 1700000000005, relative offset 5
        H("0000018bcfe5680a") + H("0000000a"),  # timestamp 1700000000010, relative offset 10
    ]
)
TXN_INDEX = b"".join(
    [
        H("0000"),  # AbortedTxn version 0
        H("0000000000000007"),  # producerId 7
        H("0000000000000064"),  # firstOffset 100
        H("0000000000000069"),  # lastOffset 105
        H("0000000000000066"),  # lastStableOffset 102
    ]
)


def test_offset_index_golden() -> None:
    entries = [OffsetPosition(105, 5000), OffsetPosition(110, 10000)]
    assert encode_offset_index(entries, 100) == OFFSET_INDEX
    assert read_offset_index(OFFSET_INDEX, 100) == entries


def test_preallocated_index_stops_at_zero_entries() -> None:
    # An active segment's index is preallocated with zeros (segment.index.bytes).
    assert read_offset_index(OFFSET_INDEX + bytes(800), 100) == [
        OffsetPosition(105, 5000),
        OffsetPosition(110, 10000),
    ]
    assert read_time_index(TIME_INDEX + bytes(1200), 100) == [
        TimestampOffset(1700000000005, 105),
        TimestampOffset(1700000000010, 110),
    ]
    # A first entry (0, 0) is real: the first batch of a segment at position 0.
    assert read_offset_index(bytes(8) + OFFSET_INDEX, 100)[0] == OffsetPosition(100, 0)


def test_index_errors() -> None:
    with pytest.raises(InvalidLengthError) as info:
        read_offset_index(OFFSET_INDEX[:-3], 0)
    assert (info.value.path, info.value.offset) == ("index", 8)
    backwards = H("0000000a00002710") + H("0000000500001388")
    with pytest.raises(InvalidValueError):
        read_offset_index(backwards, 0)
    with pytest.raises(InvalidLengthError):
        read_time_index(TIME_INDEX[:-1], 0)
    with pytest.raises(ValueError, match="relative"):
        encode_offset_index([OffsetPosition(99, 0)], 100)


def test_time_index_golden() -> None:
    entries = [TimestampOffset(1700000000005, 105), TimestampOffset(1700000000010, 110)]
    assert encode_time_index(entries, 100) == TIME_INDEX
    assert read_time_index(TIME_INDEX, 100) == entries


def test_txn_index_golden() -> None:
    assert encode_txn_index([AbortedTxn(7, 100, 105, 102)]) == TXN_INDEX
    assert read_txn_index(TXN_INDEX) == [AbortedTxn(7, 100, 105, 102)]
    with pytest.raises(UnsupportedVersionError):
        read_txn_index(H("0001") + TXN_INDEX[2:])
    with pytest.raises(InvalidLengthError):
        read_txn_index(TXN_INDEX + b"\x00")


SNAPSHOT_BODY = b"".join(
    [
        H("00000001"),  # 1 producer entry
        H("00000000000003e8"),  # producerId 1000
        H("0002"),  # epoch 2
        H("00000009"),  # lastSequence 9
        H("0000000000000063"),  # lastOffset 99
        H("00000004"),  # offsetDelta 4
        H("0000018bcfe56800"),  # timestamp 1700000000000
        H("00000003"),  # coordinatorEpoch 3
        H("ffffffffffffffff"),  # currentTxnFirstOffset -1 (no open transaction)
    ]
)


def test_producer_snapshot_golden() -> None:
    crc = crc32c.crc32c(SNAPSHOT_BODY).to_bytes(4, "big")
    data = H("0001") + crc + SNAPSHOT_BODY  # version 1, CRC-32C of the rest, entries
    entry = ProducerSnapshotEntry(1000, 2, 9, 99, 4, 1700000000000, 3, -1)
    assert read_producer_snapshot(data) == [entry]
    assert encode_producer_snapshot([entry]) == data


def test_producer_snapshot_errors() -> None:
    data = encode_producer_snapshot([ProducerSnapshotEntry(1, 0, 0, 0, 0, 0, -1, -1)])
    corrupt = bytearray(data)
    corrupt[-1] ^= 1
    with pytest.raises(CrcMismatchError) as info:
        read_producer_snapshot(bytes(corrupt))
    assert (info.value.path, info.value.offset) == ("snapshot.crc", 2)
    with pytest.raises(UnsupportedVersionError):
        read_producer_snapshot(H("0002") + data[2:])
    with pytest.raises(TruncatedError):
        read_producer_snapshot(data[:5])
    truncated = H("0001") + crc32c.crc32c(data[6:-4]).to_bytes(4, "big") + data[6:-4]
    with pytest.raises(TruncatedError):
        read_producer_snapshot(truncated)
    assert read_producer_snapshot(encode_producer_snapshot([])) == []


def test_leader_epoch_checkpoint() -> None:
    text = "0\n2\n0 0\n3 1200\n"
    entries = [EpochEntry(0, 0), EpochEntry(3, 1200)]
    assert encode_leader_epoch_checkpoint(entries) == text
    assert parse_leader_epoch_checkpoint(text) == entries
    with pytest.raises(UnsupportedVersionError):
        parse_leader_epoch_checkpoint("1\n0\n")
    with pytest.raises(InvalidValueError):
        parse_leader_epoch_checkpoint("0\n2\n0 0\n")
    with pytest.raises(InvalidValueError):
        parse_leader_epoch_checkpoint("0\n1\n0\n")


def test_partition_metadata_and_kafka_uuid_strings() -> None:
    topic_id = uuid.UUID(bytes=bytes(range(16)))
    # Kafka prints a Uuid as URL-safe Base64 without padding (22 characters).
    assert kafka_uuid_string(topic_id) == "AAECAwQFBgcICQoLDA0ODw"
    assert kafka_uuid_string(uuid.UUID(int=0)) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert parse_kafka_uuid("AAECAwQFBgcICQoLDA0ODw") == topic_id
    text = encode_partition_metadata(topic_id)
    assert text == "version: 0\ntopic_id: AAECAwQFBgcICQoLDA0ODw"
    assert parse_partition_metadata(text + "\n") == topic_id
    with pytest.raises(UnsupportedVersionError):
        parse_partition_metadata("version: 1\ntopic_id: AAECAwQFBgcICQoLDA0ODw")
    with pytest.raises(InvalidValueError):
        parse_partition_metadata("version: 0\n")


def test_segment_file_names() -> None:
    assert segment_file_name(0, ".log") == "00000000000000000000.log"
    assert segment_file_name(1200, ".timeindex") == "00000000000000001200.timeindex"
    with pytest.raises(ValueError, match="negative"):
        segment_file_name(-1, ".log")
