"""Golden bytes for every record type and version, both directions, plus negative cases."""

from __future__ import annotations

import pytest
from golden import GOLDEN, OC_KEY, Golden, i16, i32, s

from offsetscope.protocol import codec, errors
from offsetscope.protocol.records import CoordinatorRecord, UnknownRecord
from offsetscope.protocol.registry import RECORD_TYPES

IDS = [g.name for g in GOLDEN]


@pytest.mark.parametrize("g", GOLDEN, ids=IDS)
def test_decode_golden(g: Golden) -> None:
    rec = codec.decode_record(g.topic, g.key, g.value)
    assert isinstance(rec, CoordinatorRecord)
    assert rec.record_type == g.record_type
    assert rec.key == g.key_data
    assert rec.value_version == g.value_version
    assert rec.value == g.value_data
    assert rec.is_tombstone is (g.value is None)


@pytest.mark.parametrize("g", GOLDEN, ids=IDS)
def test_encode_golden(g: Golden) -> None:
    rec = codec.make_record(g.topic, g.record_type, g.key_data, g.value_data, g.value_version)
    assert codec.encode_record(rec) == (g.key, g.value)


def test_every_record_type_and_version_has_a_golden() -> None:
    covered = {(g.topic, g.record_type, g.value_version) for g in GOLDEN}
    missing = [
        (rt.topic, rt.id, v)
        for rt in RECORD_TYPES
        for v in rt.value.versions
        if (rt.topic, rt.id, v) not in covered
    ]
    assert missing == []


@pytest.mark.parametrize("g", GOLDEN, ids=IDS)
def test_truncation_at_every_byte_is_detected(g: Golden) -> None:
    for cut in range(len(g.key)):
        with pytest.raises(errors.DecodeError) as info:
            codec.decode_record(g.topic, g.key[:cut], g.value)
        assert info.value.path.startswith("key")
        assert 0 <= info.value.offset <= cut
    if g.value is None:
        return
    for cut in range(len(g.value)):
        with pytest.raises(errors.DecodeError) as info:
            codec.decode_record(g.topic, g.key, g.value[:cut])
        assert info.value.path.startswith("value")
        assert 0 <= info.value.offset <= cut


def test_truncation_names_the_field_and_its_offset() -> None:
    value = i16(3) + (42).to_bytes(8, "big") + i32(5) + i16(10) + b"abc"  # metadata claims 10
    with pytest.raises(errors.TruncatedError) as info:
        codec.decode_record("__consumer_offsets", OC_KEY, value)
    assert info.value.path == "value.metadata"
    assert info.value.offset == 16  # after version, offset, leaderEpoch and the length
    assert (info.value.needed, info.value.available) == (10, 3)


def test_error_path_includes_array_index() -> None:
    member = s("m") + s("c") + s("/h") + i32(1) + i32(1) + i32(0) + i32(0)
    bad = s("m2") + s("c") + b"\x00\x05ab"  # clientHost truncated in member 1
    value = i16(1) + s("consumer") + i32(1) + s("range") + s("m") + i32(2) + member + bad
    with pytest.raises(errors.TruncatedError) as info:
        codec.decode_record("__consumer_offsets", i16(2) + s("g"), value)
    assert info.value.path == "value.members[1].clientHost"


def test_unknown_record_type_keeps_bytes() -> None:
    key, value = i16(99) + s("x"), i16(0) + b"\x01\x02"
    rec = codec.decode_record("__consumer_offsets", key, value)
    assert isinstance(rec, UnknownRecord)
    assert (rec.record_type, rec.value_version) == (99, 0)
    assert (rec.key_bytes, rec.value_bytes) == (key, value)
    assert "unknown record type 99" in rec.reason


def test_unknown_value_version_keeps_bytes() -> None:
    value = i16(9) + b"\x00" * 20
    rec = codec.decode_record("__consumer_offsets", OC_KEY, value)
    assert isinstance(rec, UnknownRecord)
    assert rec.record_type == 1
    assert rec.value_version == 9
    assert rec.value_bytes == value


def test_negative_value_version_is_unknown_not_a_crash() -> None:
    rec = codec.decode_record("__transaction_state", i16(0) + s("tx"), i16(-1) + b"\x00")
    assert isinstance(rec, UnknownRecord)
    assert rec.value_version == -1


@pytest.mark.parametrize(
    ("key", "value", "error", "path"),
    [
        (b"", None, errors.TruncatedError, "key.recordType"),
        (b"\x00", None, errors.TruncatedError, "key.recordType"),
        (OC_KEY, b"", errors.TruncatedError, "value.version"),
        (OC_KEY + b"\x00", None, errors.TrailingBytesError, "key"),
        (i16(2) + i16(-2), None, errors.InvalidLengthError, "key.group"),
        (i16(2) + i16(-1), None, errors.NullNotAllowedError, "key.group"),
        (i16(2) + i16(2) + b"\xc3\x28", None, errors.InvalidStringError, "key.group"),
    ],
)
def test_malformed_records(
    key: bytes, value: bytes | None, error: type[errors.DecodeError], path: str
) -> None:
    with pytest.raises(error) as info:
        codec.decode_record("__consumer_offsets", key, value)
    assert info.value.path == path


def test_array_count_larger_than_the_buffer_is_rejected_without_allocating() -> None:
    value = i16(0) + s("consumer") + i32(1) + s("r") + s("l") + i32(2_000_000_000)
    with pytest.raises(errors.InvalidLengthError) as info:
        codec.decode_record("__consumer_offsets", i16(2) + s("g"), value)
    assert info.value.path == "value.members"


def test_negative_array_count_is_rejected() -> None:
    value = i16(0) + s("consumer") + i32(1) + s("r") + s("l") + i32(-5)
    with pytest.raises(errors.InvalidLengthError):
        codec.decode_record("__consumer_offsets", i16(2) + s("g"), value)


def test_tagged_field_size_mismatch() -> None:
    # OffsetCommitValue v4 whose tag 0 claims 17 bytes for a 16-byte uuid.
    value = (
        bytes.fromhex("0004000000000000002a00000005010000018bcfe56800")
        + bytes([1, 0, 17])
        + bytes(17)
    )
    with pytest.raises(errors.InvalidTaggedFieldError) as info:
        codec.decode_record("__consumer_offsets", OC_KEY, value)
    assert info.value.path == "value.topicId"


def test_unknown_tagged_fields_survive_a_round_trip() -> None:
    # v4 value with an unknown tag 7 (2 bytes) next to the known topicId.
    base = bytes.fromhex("0004000000000000002a00000005010000018bcfe56800")
    value = base + bytes([2, 0, 16]) + bytes(range(16)) + bytes([7, 2, 0xAB, 0xCD])
    rec = codec.decode_record("__consumer_offsets", OC_KEY, value)
    assert isinstance(rec, CoordinatorRecord)
    assert rec.value is not None
    assert rec.value["_unknownTaggedFields"] == [(7, b"\xab\xcd")]
    assert codec.encode_record(rec) == (OC_KEY, value)


def test_writer_refuses_fields_the_version_lacks() -> None:
    rec = codec.make_record(
        "__consumer_offsets",
        1,
        {"group": "g", "topic": "t", "partition": 0},
        {"offset": 1, "metadata": "", "commitTimestamp": 0, "expireTimestamp": 99},
        3,
    )
    with pytest.raises(ValueError, match="expireTimestamp"):
        codec.encode_record(rec)


def test_unknown_topic_is_a_usage_error() -> None:
    with pytest.raises(ValueError, match="not an internal topic"):
        codec.decode_record("orders", OC_KEY, None)
