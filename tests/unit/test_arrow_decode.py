"""The batch decoder: the columnar paths equal the per-record path, row for row."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from golden import GOLDEN, NO_TAGS, OC_KEY, T0, TX_KEY, by, carr, cs, i8, i16, i32, i64, s, uv
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetscope.protocol import codec
from offsetscope.protocol import consumer_protocol as cp
from offsetscope.protocol.arrow_decode import (
    _WALKED_SPECS,
    DECODED_SCHEMA,
    _buffers,
    _slow_path,
    _snake,
    _walked_path,
    arrow_field_type,
    decode_batch,
    raw_batch,
)
from offsetscope.protocol.arrow_walk import MAX_ELEMENTS, slices, walk
from offsetscope.protocol.errors import DecodeError, InvalidStringError
from offsetscope.protocol.registry import record_type
from offsetscope.protocol.schema import UNKNOWN_TAGS, Field, Message
from offsetscope.protocol.states import transaction_status_name

OFFSETS = "__consumer_offsets"
TXN = "__transaction_state"


def _raw(rows: list[dict]) -> pa.RecordBatch:
    return raw_batch(
        [{"partition": 0, "offset": i, "timestamp": 1000 + i, **r} for i, r in enumerate(rows)]
    )


def _decode(rows: list[dict]) -> pa.Table:
    raw = _raw(rows)
    batches = list(decode_batch(raw))
    for b in batches:
        assert b.schema.equals(DECODED_SCHEMA)
    table = pa.Table.from_batches(batches, schema=DECODED_SCHEMA).sort_by("offset")
    assert table.num_rows == raw.num_rows  # counts in == counts out
    slow = pa.Table.from_batches([_slow_path(raw)], schema=DECODED_SCHEMA).sort_by("offset")
    assert table.to_pylist() == slow.to_pylist()
    return table


def test_golden_records_decode_the_same_either_way() -> None:
    table = _decode([{"topic": g.topic, "key": g.key, "value": g.value} for g in GOLDEN])
    kinds = table.column("kind").to_pylist()
    assert kinds.count("offset_commit") == sum(
        1 for g in GOLDEN if g.topic == OFFSETS and g.record_type in (0, 1)
    )
    assert "error" not in kinds


def test_offset_commit_row_fields() -> None:
    table = _decode(
        [
            {"topic": OFFSETS, "key": g.key, "value": g.value}
            for g in GOLDEN
            if g.name == "offset commit v4 with topicId"
        ]
    )
    row = table.to_pylist()[0]
    assert row["offset_commit"] == {
        "group": "g1",
        "topic": "t",
        "partition": 0,
        "offset": 42,
        "leader_epoch": 5,
        "metadata": "",
        "commit_timestamp": 1_700_000_000_000,
        "expire_timestamp": None,
        "topic_id": "AAECAwQFBgcICQoLDA0ODw",
    }
    assert (row["kind"], row["value_version"], row["is_tombstone"]) == ("offset_commit", 4, False)


def test_tombstone_keeps_the_key() -> None:
    row = _decode([{"topic": OFFSETS, "key": OC_KEY, "value": None}]).to_pylist()[0]
    assert row["is_tombstone"] is True
    assert row["offset_commit"]["group"] == "g1"
    assert row["offset_commit"]["offset"] is None


def test_errors_carry_path_and_offset() -> None:
    bad = i16(3) + (1).to_bytes(8, "big") + i32(0) + i16(50) + b"x"
    rows = _decode(
        [
            {"topic": OFFSETS, "key": OC_KEY, "value": bad},
            {"topic": OFFSETS, "key": i16(2) + s("g") + b"\xff", "value": None},
            {
                "topic": OFFSETS,
                "key": i16(1) + s("g") + i16(2) + b"\xc3\x28" + i32(0),
                "value": None,
            },
            {"topic": OFFSETS, "key": i16(77) + s("g"), "value": i16(0)},
        ]
    ).to_pylist()
    assert [r["kind"] for r in rows] == ["error", "error", "error", "unknown"]
    assert rows[0]["error"] == {
        "error_class": "TruncatedError",
        "message": "truncated: need 50 bytes, 1 left",
        "field_path": "value.metadata",
        "byte_offset": 16,
    }
    assert rows[1]["error"]["error_class"] == "TrailingBytesError"
    assert rows[2]["error"]["field_path"] == "key.topic"
    assert rows[3]["unknown_reason"] == "unknown record type 77"


def test_control_records() -> None:
    rows = _decode(
        [
            {
                "topic": OFFSETS,
                "key": b"\x00\x00\x00\x01",
                "value": b"\x00\x00\x00\x00\x00\x07",
                "is_control": True,
                "is_transactional": True,
                "producer_id": 9,
            },
            {
                "topic": OFFSETS,
                "key": b"\x00\x00\x00\x80",
                "value": b"",
                "is_control": True,
                "is_transactional": True,
            },
        ]
    ).to_pylist()
    assert rows[0]["control"] == {"control_type": "COMMIT", "coordinator_epoch": 7}
    assert rows[0]["producer_id"] == 9
    assert rows[1]["control"] == {"control_type": "UNKNOWN(128)", "coordinator_epoch": None}


offset_commit_values = st.fixed_dictionaries(
    {
        "offset": st.integers(-(2**63), 2**63 - 1),
        "leaderEpoch": st.integers(-(2**31), 2**31 - 1),
        "metadata": st.text(max_size=200),
        "commitTimestamp": st.integers(-(2**63), 2**63 - 1),
        "expireTimestamp": st.integers(-(2**63), 2**63 - 1),
        "topicId": st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1)),
    }
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(max_size=30),
            st.text(max_size=30),
            st.integers(-(2**31), 2**31 - 1),
            st.sampled_from([None, 0, 1, 2, 3, 4]),
            offset_commit_values,
        ),
        min_size=1,
        max_size=30,
    )
)
def test_generated_offset_commits_match(commits: list) -> None:
    rows = []
    for group, topic, partition, version, value in commits:
        key = {"group": group, "topic": topic, "partition": partition}
        if version is None:
            data = None
        else:
            keep = {"offset", "metadata", "commitTimestamp"} | (
                {"leaderEpoch"} if version >= 3 else set()
            )
            keep |= {"expireTimestamp"} if version == 1 else set()
            keep |= {"topicId"} if version == 4 else set()
            data = {k: v for k, v in value.items() if k in keep}
        rec = codec.make_record(OFFSETS, 1, key, data, version)
        k, v = codec.encode_record(rec)
        rows.append({"topic": OFFSETS, "key": k, "value": v})
    _decode(rows)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_mutated_offset_commits_match(data: st.DataObject) -> None:
    base = [g for g in GOLDEN if g.topic == OFFSETS and g.record_type == 1 and g.value is not None]
    g = data.draw(st.sampled_from(base))
    which = data.draw(st.sampled_from(["key", "value"]))
    buf = bytearray(getattr(g, which))
    for _ in range(data.draw(st.integers(1, 3))):
        op = data.draw(st.sampled_from(["flip", "cut", "grow"]))
        if op == "flip" and buf:
            pos = data.draw(st.integers(0, len(buf) - 1))
            buf[pos] ^= data.draw(st.integers(1, 255))
        elif op == "cut" and buf:
            del buf[data.draw(st.integers(0, len(buf) - 1)) :]
        else:
            buf += data.draw(st.binary(min_size=1, max_size=4))
    row = {"topic": OFFSETS, "key": g.key, "value": g.value, which: bytes(buf)}
    _decode([row])


@pytest.mark.parametrize("n", [0, 1])
def test_tiny_batches(n: int) -> None:
    rows = [{"topic": OFFSETS, "key": OC_KEY, "value": None}] * n
    raw = raw_batch(
        [{"partition": 0, "offset": i, "timestamp": 0, **r} for i, r in enumerate(rows)]
    )
    assert sum(b.num_rows for b in decode_batch(raw)) == n


@settings(max_examples=200, deadline=None)
@given(
    st.binary(min_size=0, max_size=80),
    st.lists(st.tuples(st.integers(0, 80), st.integers(-1, 40)), max_size=30),
    st.sampled_from([pa.binary(), pa.string()]),
)
def test_slices_cut_the_buffer(blob: bytes, cuts: list[tuple[int, int]], typ: pa.DataType) -> None:
    """Every slice, null, empty, inline (<= 12 bytes) or not, and up to the buffer's last byte
    (with no padding after it), comes out as Python's own slicing, as binary or as string."""
    import numpy as np

    cuts = [(start, -1 if length < 0 else min(length, len(blob) - start)) for start, length in cuts]
    cuts = [(start, length) for start, length in cuts if start <= len(blob) or length < 0]
    starts = np.array([start if length >= 0 else 0 for start, length in cuts], dtype=np.int64)
    lengths = np.array([length for _, length in cuts], dtype=np.int64)
    out = slices(np.frombuffer(blob, dtype=np.uint8), starts, lengths, typ)
    assert out.type == typ
    expected = [None if length < 0 else blob[start : start + length] for start, length in cuts]
    assert out.cast(pa.binary()).to_pylist() == expected
    pa.Array.from_buffers(pa.binary(), len(out), out.buffers()).validate(full=True)


# ----------------------------------------------------------------------------- walked records
# Transaction-log and group-metadata records are read by walking their field tables over the
# batch; the per-record path (decode_row) is the reference, so every test below compares the two
# (``_decode``) and also says which records the walk must have read itself.


def _walked(rows: list[dict]) -> list[bool]:
    """Which rows the walked paths read (the rest go to the per-record path)."""
    raw = _raw(rows)
    handled = np.zeros(raw.num_rows, dtype=bool)
    keys, values = _buffers(raw.column("key")), _buffers(raw.column("value"))
    for spec in _WALKED_SPECS:
        result = _walked_path(raw, spec, ~handled, keys, values)
        if result is not None:
            handled |= result.handled
    return handled.tolist()


def _fit(fields: tuple[Field, ...], version: int, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without the fields ``version`` does not have (the writers refuse those)."""
    out = {k: v for k, v in data.items() if k == UNKNOWN_TAGS}
    for f in fields:
        if f.present_in(version) and f.json_name in data:
            value = data[f.json_name]
            if f.is_struct and value is not None:
                value = [_fit(f.fields, version, item) for item in value]
            out[f.json_name] = value
    return out


def _record(topic: str, type_id: int, key: dict, value: dict | None, version: int | None) -> dict:
    rt = record_type(topic, type_id)
    assert rt is not None
    data = None if value is None or version is None else _fit(rt.value.fields, version, value)
    k, v = codec.encode_record(codec.make_record(topic, type_id, key, data, version))
    return {"topic": topic, "key": k, "value": v}


def ints(bits: int) -> st.SearchStrategy[int]:
    return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


# Unknown tags (kept by the reader, absent from the row); 128+ takes a two-byte varint.
unknown_tags = st.lists(
    st.tuples(st.integers(4, 300), st.binary(max_size=9)), max_size=2, unique_by=lambda t: t[0]
)
transaction_values = st.fixed_dictionaries(
    {
        "producerId": ints(64),
        "producerEpoch": ints(16),
        "transactionTimeoutMs": ints(32),
        "transactionStatus": ints(8),
        "transactionPartitions": st.none()
        | st.lists(
            st.fixed_dictionaries(
                # from 127 bytes on, a topic's compact length (v1) takes two bytes
                {"topic": st.text(max_size=150), "partitionIds": st.lists(ints(32), max_size=5)},
                optional={UNKNOWN_TAGS: unknown_tags},
            ),
            max_size=4,
        ),
        "transactionLastUpdateTimestampMs": ints(64),
        "transactionStartTimestampMs": ints(64),
    },
    optional={
        "previousProducerId": ints(64),
        "nextProducerId": ints(64),
        "nextProducerEpoch": ints(16),
        "clientTransactionVersion": ints(16),
        UNKNOWN_TAGS: unknown_tags,
    },
)


def _generated(names: st.SearchStrategy, versions: list, values: st.SearchStrategy, most: int):
    """Lists of (key name, value version -- None for a tombstone --, value) of one record type."""
    return st.lists(st.tuples(names, st.sampled_from(versions), values), min_size=1, max_size=most)


def _all_walked_and_matching(topic: str, type_id: int, key_field: str, records: list) -> None:
    """Every generated record is read by the walked path, and reads as the per-record path."""
    rows = [
        _record(topic, type_id, {key_field: name}, value, version)
        for name, version, value in records
    ]
    assert all(_walked(rows))
    _decode(rows)


@settings(max_examples=80, deadline=None)
@given(_generated(st.text(max_size=40), [None, 0, 1], transaction_values, 12))
def test_generated_transaction_log_match(records: list) -> None:
    _all_walked_and_matching(TXN, 0, "transactionalId", records)


_SUBSCRIPTIONS = [
    cp.encode_subscription(0, {"topics": ["a", "b"], "userData": None}),
    cp.encode_subscription(
        3,
        {
            "topics": ["a"],
            "userData": b"u",
            "ownedPartitions": [{"topic": "a", "partitions": [0, 3]}],
            "generationId": 4,
            "rackId": "r1",
        },
    ),
    cp.encode_subscription(9, {"topics": ["future"], "userData": None}),  # read as v3
    b"\x00\x01\x00\x00\x00\x01",  # v1 cut short: decoded leniently
]
_ASSIGNMENTS = [
    b"",  # not assigned: no version prefix at all
    cp.encode_assignment(
        1, {"assignedPartitions": [{"topic": "a", "partitions": [0, 2]}], "userData": None}
    ),
]
blobs = st.sampled_from(_SUBSCRIPTIONS + _ASSIGNMENTS) | st.binary(max_size=12)
members = st.fixed_dictionaries(
    {
        "memberId": st.text(max_size=20),
        "groupInstanceId": st.none() | st.text(max_size=10),
        "clientId": st.text(max_size=10),
        "clientHost": st.text(max_size=10),
        "rebalanceTimeout": ints(32),
        "sessionTimeout": ints(32),
        "subscription": blobs,
        "assignment": blobs,
    },
    optional={UNKNOWN_TAGS: unknown_tags},
)
group_values = st.fixed_dictionaries(
    {
        "protocolType": st.sampled_from(["consumer", "connect", ""]) | st.text(max_size=8),
        "generation": ints(32),
        "protocol": st.none() | st.text(max_size=10),
        "leader": st.none() | st.text(max_size=10),
        "currentStateTimestamp": ints(64),
        "members": st.lists(members, max_size=5),
    },
    optional={UNKNOWN_TAGS: unknown_tags},
)


@settings(max_examples=80, deadline=None)
@given(_generated(st.text(max_size=20), [None, 0, 1, 2, 3, 4], group_values, 8))
def test_generated_group_metadata_match(records: list) -> None:
    _all_walked_and_matching(OFFSETS, 2, "group", records)


def test_golden_walked_records_are_walked() -> None:
    rows = [
        {"topic": g.topic, "key": g.key, "value": g.value}
        for g in GOLDEN
        if g.topic == TXN or (g.topic == OFFSETS and g.record_type == 2)
    ]
    assert len(rows) >= 10
    assert all(_walked(rows))
    _decode(rows)


def _txn_v1(tags: bytes, partitions: bytes = carr(None), status: int = 1) -> bytes:
    return b"".join(
        [
            i16(1),  # version 1 (flexible)
            i64(7),  # ProducerId
            i16(1),  # ProducerEpoch
            i32(60000),  # TransactionTimeoutMs
            i8(status),  # TransactionStatus
            partitions,  # TransactionPartitions
            i64(T0),  # TransactionLastUpdateTimestampMs
            i64(T0),  # TransactionStartTimestampMs
            tags,
        ]
    )


# (value, walked?) -- the walk reads what it reads exactly and leaves the rest to decode_row.
_TXN_CASES = {
    "known tag twice: the last wins": (
        _txn_v1(uv(2) + uv(0) + uv(8) + i64(1) + uv(0) + uv(8) + i64(2)),
        True,
    ),
    "unknown tag skipped": (_txn_v1(uv(1) + uv(9) + uv(3) + b"abc"), True),
    "non-minimal varint": (_txn_v1(b"\x80\x00"), True),
    "unknown status code": (_txn_v1(NO_TAGS, status=99), True),
    "negative status code": (_txn_v1(NO_TAGS, status=-1), True),
    "empty partitions": (_txn_v1(NO_TAGS, carr(0)), True),
    "partition with unknown tag": (
        _txn_v1(NO_TAGS, carr(1) + cs("t") + carr(1) + i32(5) + uv(1) + uv(7) + uv(1) + b"x"),
        True,
    ),
    "tag size not its type's": (_txn_v1(uv(1) + uv(0) + uv(4) + i32(1)), False),
    "tag past the end": (_txn_v1(uv(1) + uv(0) + uv(8) + i32(1)), False),
    "varint over 5 bytes": (_txn_v1(b"\x80" * 5), False),
    "two-byte compact length": (
        _txn_v1(NO_TAGS, carr(1) + cs("t" * 200) + carr(1) + i32(5) + NO_TAGS),
        True,
    ),
    "null topic": (_txn_v1(NO_TAGS, carr(1) + cs(None) + carr(0) + NO_TAGS), False),
    "trailing byte": (_txn_v1(NO_TAGS) + b"\x00", False),
    "surrogate in a topic": (
        _txn_v1(NO_TAGS, carr(1) + uv(4) + b"\xed\xa0\x80" + carr(0) + NO_TAGS),
        False,
    ),
    "partition count past the end": (_txn_v1(NO_TAGS, carr(200)), False),
    "truncated": (_txn_v1(NO_TAGS)[:-3], False),
}


@pytest.mark.parametrize("case", list(_TXN_CASES))
def test_transaction_log_edge_cases(case: str) -> None:
    value, walked = _TXN_CASES[case]
    rows = [{"topic": TXN, "key": TX_KEY, "value": value}]
    assert _walked(rows) == [walked]
    row = _decode(rows).to_pylist()[0]
    assert row["kind"] == ("transaction_log" if walked else "error")
    if walked:
        status = row["transaction_log"]["transaction_status"]
        assert row["transaction_log"]["transaction_status_name"] == transaction_status_name(status)


_GM_NULL_MEMBER_ID = b"".join(
    [
        i16(3),  # version 3
        s("consumer"),  # protocolType
        i32(1),  # generation
        s(None),  # protocol
        s(None),  # leader
        i64(T0),  # currentStateTimestamp
        i32(1),  # members: 1
        s(None),  #   memberId: null, which it may not be
        s(None),  #   groupInstanceId
        s("c"),  #   clientId
        s("h"),  #   clientHost
        i32(1),  #   rebalanceTimeout
        i32(2),  #   sessionTimeout
        by(b""),  #   subscription
        by(b""),  #   assignment
    ]
)


@pytest.mark.parametrize(
    ("topic", "key", "value"),
    [
        (TXN, i16(0) + s(None), _txn_v1(NO_TAGS)),
        (OFFSETS, i16(2) + s("g"), _GM_NULL_MEMBER_ID),
        (OFFSETS, i16(2) + s(None), None),
    ],
    ids=["transactional id", "member id", "group"],
)
def test_null_where_not_nullable(topic: str, key: bytes, value: bytes | None) -> None:
    rows = [{"topic": topic, "key": key, "value": value}]
    assert _walked(rows) == [False]
    assert _decode(rows).to_pylist()[0]["error"]["error_class"] == "NullNotAllowedError"


def test_control_records_are_not_walked() -> None:
    """An abort marker's key (version 0, type 0) also reads as a TransactionLogKey ("")."""
    rows = [
        {
            "topic": TXN,
            "key": i16(0) + i16(0),
            "value": _txn_v1(NO_TAGS),
            "is_control": True,
            "is_transactional": True,
        }
    ]
    assert _walked(rows) == [False]
    assert _decode(rows).to_pylist()[0]["kind"] in ("control", "error")


def test_invalid_utf8_key_goes_to_the_per_record_path() -> None:
    good = {"topic": TXN, "key": TX_KEY, "value": _txn_v1(NO_TAGS)}
    bad = {"topic": TXN, "key": i16(0) + i16(2) + b"\xc0\xaf", "value": _txn_v1(NO_TAGS)}
    # One invalid string sends the whole batch's records of that type to decode_row.
    assert _walked([good, bad]) == [False, False]
    rows = _decode([good, bad]).to_pylist()
    assert [r["kind"] for r in rows] == ["transaction_log", "error"]
    assert rows[1]["error"]["field_path"] == "key.transactionalId"


@pytest.mark.parametrize("count", [MAX_ELEMENTS, MAX_ELEMENTS + 1])
def test_long_member_lists(count: int) -> None:
    member = {
        "memberId": "m" * 200,  # in v4 a compact length of two bytes
        "groupInstanceId": None,
        "clientId": "c",
        "clientHost": "h",
        "rebalanceTimeout": 1,
        "sessionTimeout": 2,
        "subscription": _SUBSCRIPTIONS[1],
        "assignment": _ASSIGNMENTS[1],
    }
    value = {
        "protocolType": "consumer",
        "generation": 1,
        "protocol": "range",
        "leader": "m",
        "currentStateTimestamp": T0,
        "members": [member] * count,
    }
    rows = [_record(OFFSETS, 2, {"group": "g"}, value, version) for version in (3, 4)]
    assert _walked(rows) == [count <= MAX_ELEMENTS] * 2
    row = _decode(rows).to_pylist()[0]
    assert len(row["group_metadata"]["members"]) == count
    assert row["group_metadata"]["members"][0]["subscribed_topics"] == ["a"]


_MUTATION_BASES = [
    g for g in GOLDEN if g.value is not None and (g.topic == TXN or g.record_type == 2)
]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_walked_records_match(data: st.DataObject) -> None:
    """Flipped, cut, grown and spliced transaction-log and group-metadata records: whatever the
    walk accepts decodes as decode_row decodes it (the rest is decode_row's own)."""
    g = data.draw(st.sampled_from(_MUTATION_BASES))
    which = data.draw(st.sampled_from(["key", "value", "value", "value"]))
    buf = bytearray(getattr(g, which))
    for _ in range(data.draw(st.integers(1, 3))):
        op = data.draw(st.sampled_from(["flip", "cut", "grow", "insert"]))
        if op == "flip" and buf:
            pos = data.draw(st.integers(0, len(buf) - 1))
            buf[pos] ^= data.draw(st.integers(1, 255))
        elif op == "cut" and buf:
            del buf[data.draw(st.integers(0, len(buf) - 1)) :]
        elif op == "insert":
            pos = data.draw(st.integers(0, len(buf)))
            buf[pos:pos] = data.draw(st.binary(min_size=1, max_size=4))
        else:
            buf += data.draw(st.binary(min_size=1, max_size=4))
    row = {"topic": g.topic, "key": g.key, "value": g.value, which: bytes(buf)}
    _decode([row, {"topic": g.topic, "key": g.key, "value": g.value}])


def test_walked_kinds_in_a_mixed_batch() -> None:
    """Offset commits, group metadata, transaction log, other types and tombstones together."""
    rows = [{"topic": g.topic, "key": g.key, "value": g.value} for g in GOLDEN] * 3
    table = _decode(rows)
    kinds = table.column("kind").to_pylist()
    assert kinds.count("transaction_log") == 3 * sum(1 for g in GOLDEN if g.topic == TXN)
    assert kinds.count("group_metadata") == 3 * sum(
        1 for g in GOLDEN if g.topic == OFFSETS and g.record_type == 2
    )
    names = {r["transaction_status_name"] for r in table.column("transaction_log").to_pylist() if r}
    assert names == {None, "Empty", "Ongoing"}


# A layout with every kind of field the walk covers, flexible (compact lengths, tags) in v1.
_EVERY_KIND = Message(
    "EveryKind",
    valid="0-1",
    flexible="1+",
    fields=(
        Field("A", "int8"),
        Field("B", "uint16"),
        Field("C", "bool"),
        Field("D", "bytes", nullable="0+"),
        Field("E", "[]uint16"),
        Field("G", "[]bool", nullable="0+"),
        Field("H", "string", "1+", nullable="1+"),
        Field(
            "Items",
            "[]Item",
            fields=(
                Field("X", "int32"),
                Field("Y", "[]int64"),
                Field("Z", "string", nullable="0+"),
                Field("T", "uint16", "1+", tag=0, tagged="1+", default=7),
            ),
        ),
        Field("U", "int64", "1+", tag=0, tagged="1+", default=-1),
        Field("V", "bool", "1+", tag=1, tagged="1+", default=False),
    ),
)
_SCALARS = {
    "int8": ints(8),
    "uint16": st.integers(0, 2**16 - 1),
    "int32": ints(32),
    "int64": ints(64),
    "bool": st.booleans(),
    "string": st.text(max_size=140),
    "bytes": st.binary(max_size=20),
}


def _values(fields: tuple[Field, ...], version: int) -> st.SearchStrategy[dict[str, Any]]:
    """Data for ``fields`` at ``version``, drawn from the table itself."""
    drawn: dict[str, st.SearchStrategy[Any]] = {}
    for f in fields:
        if not f.present_in(version):
            continue
        if f.is_struct:
            value = st.lists(_values(f.fields, version), max_size=3)
        elif f.is_array:
            value = st.lists(_SCALARS[f.element_type], max_size=4)
        else:
            value = _SCALARS[f.type]
        drawn[f.json_name] = st.none() | value if f.is_nullable_in(version) else value
    return st.fixed_dictionaries(drawn)


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from([0, 1]).flatmap(
        lambda v: st.tuples(st.just(v), st.lists(_values(_EVERY_KIND.fields, v), max_size=6))
    ),
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 400), st.integers(1, 255)), max_size=4),
)
def test_walk_reads_what_the_reader_reads(
    data: tuple[int, list[dict[str, Any]]], flips: list[tuple[int, int, int]]
) -> None:
    """Every buffer the walk accepts decodes to the same values with the per-record reader, and
    every buffer the reader refuses the walk refuses (UTF-8 aside: the callers check it)."""
    version, values = data
    buffers = [bytearray(_EVERY_KIND.encode(v, version)) for v in values]
    for row, pos, mask in flips:
        if row < len(buffers) and buffers[row]:
            buffers[row][pos % len(buffers[row])] ^= mask
    starts, lengths, blob = _buffers(pa.array([bytes(b) for b in buffers], pa.binary()))
    walked = walk(blob, starts, starts + lengths, _EVERY_KIND, version)
    assert walked is not None
    expected: dict[int, dict[str, Any]] = {}
    for i, buf in enumerate(buffers):
        try:
            expected[i] = _snake(_EVERY_KIND, version, _EVERY_KIND.decode(bytes(buf), version))
        except InvalidStringError:
            continue
        except DecodeError:
            assert not walked.ok[i]
    rows = [i for i in expected if walked.ok[i]]
    assert set(rows) == set(expected)
    for f in _EVERY_KIND.fields:
        typ = arrow_field_type(f)
        got = walked.array(f.snake_name, np.array(rows, dtype=np.int64), typ)
        # Through Arrow as the per-record path's rows go (fields absent in a version -> null).
        want = pa.array([expected[i].get(f.snake_name) for i in rows], typ)
        assert got.to_pylist() == want.to_pylist(), f.name
