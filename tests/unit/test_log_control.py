"""Control record keys and transaction markers (``docs/formats.md`` section 6)."""

from __future__ import annotations

import pytest

from offsetscope.protocol.errors import InvalidValueError, TruncatedError
from offsetscope.protocol.log import (
    ControlRecordType,
    EndTxnMarker,
    RecordSpec,
    encode_batch,
    encode_control_key,
    encode_end_txn_marker_batch,
    parse_control_key,
    read_batches,
)

H = bytes.fromhex


@pytest.mark.parametrize(
    ("type_id", "name"),
    [
        (0, "ABORT"),
        (1, "COMMIT"),
        (2, "LEADER_CHANGE"),
        (3, "SNAPSHOT_HEADER"),
        (4, "SNAPSHOT_FOOTER"),
        (5, "KRAFT_VERSION"),
        (6, "KRAFT_VOTERS"),
    ],
)
def test_known_control_types(type_id: int, name: str) -> None:
    key = parse_control_key(H("0000") + type_id.to_bytes(2, "big"))
    assert key.type.name == name
    assert key.is_known
    assert key.is_transaction_marker is (type_id in (0, 1))
    assert encode_control_key(type_id) == H("0000") + type_id.to_bytes(2, "big")


@pytest.mark.parametrize("type_id", [7, 128, 32767, -1, -32768])
def test_unknown_control_types_are_values_not_errors(type_id: int) -> None:
    key = parse_control_key(encode_control_key(type_id))
    assert key.type is ControlRecordType.UNKNOWN
    assert key.type_id == type_id
    assert not key.is_known


def test_control_key_versions() -> None:
    # A newer version is read as version 0 (its extra bytes ignored), a negative one rejected.
    newer = parse_control_key(H("0003") + H("0001") + b"future")
    assert (newer.version, newer.type) == (3, ControlRecordType.COMMIT)
    with pytest.raises(InvalidValueError) as info:
        parse_control_key(H("ffff0001"), path="batch[2].records[0].key", offset=90)
    assert (info.value.path, info.value.offset) == ("batch[2].records[0].key.version", 90)
    with pytest.raises(TruncatedError):
        parse_control_key(H("0000"))
    with pytest.raises(TruncatedError):
        parse_control_key(None)


def test_end_txn_marker_encode_decode() -> None:
    marker = EndTxnMarker(committed=False, coordinator_epoch=2**31 - 1)
    assert marker.encode_key() == H("00000000")
    assert marker.encode_value() == H("0000") + H("7fffffff")
    assert EndTxnMarker.decode(marker.encode_key(), marker.encode_value()) == marker
    # A higher marker version is read with the version-0 layout.
    assert EndTxnMarker.decode(H("00000001"), H("0001") + H("00000004") + b"xx") == EndTxnMarker(
        True, 4, version=1
    )


def test_end_txn_marker_errors() -> None:
    with pytest.raises(InvalidValueError, match="not a transaction marker"):
        EndTxnMarker.decode(encode_control_key(ControlRecordType.LEADER_CHANGE), H("000000000000"))
    with pytest.raises(TruncatedError) as info:
        EndTxnMarker.decode(H("00000001"), H("0000"), path="batch[0].records[0]", offset=70)
    assert info.value.path == "batch[0].records[0].value"
    with pytest.raises(InvalidValueError):
        EndTxnMarker.decode(H("00000001"), H("ffff00000001"))
    with pytest.raises(TruncatedError):
        EndTxnMarker.decode(H("00000000"), None)


def test_marker_batches_in_a_log() -> None:
    data = b"".join(
        [
            encode_batch(
                [RecordSpec(b"k", b"v", 1)],
                base_offset=0,
                producer_id=5,
                producer_epoch=1,
                base_sequence=0,
                is_transactional=True,
            ),
            encode_end_txn_marker_batch(
                base_offset=1,
                producer_id=5,
                producer_epoch=1,
                committed=False,
                coordinator_epoch=9,
                timestamp=2,
            ),
            # A KRaft control record (LEADER_CHANGE) is a control batch without a marker.
            encode_batch(
                [RecordSpec(encode_control_key(2), H("0000000000010100"), 3)],
                base_offset=2,
                producer_id=-1,
                is_control=True,
            ),
        ]
    )
    data_batch, marker_batch, leader_change = read_batches(data, strict=True)
    assert data_batch.end_txn_marker() is None
    assert marker_batch.end_txn_marker() == EndTxnMarker(False, 9)
    assert marker_batch.base_sequence == -1
    assert leader_change.is_control
    assert not leader_change.is_transactional
    assert leader_change.end_txn_marker() is None
    assert [k.type for k in leader_change.control_keys()] == [ControlRecordType.LEADER_CHANGE]
