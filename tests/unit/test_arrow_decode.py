"""The batch decoder: the columnar fast path equals the per-record path, row for row."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
from golden import GOLDEN, OC_KEY, i16, i32, s
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetscope.protocol import codec
from offsetscope.protocol.arrow_decode import (
    binary_slices,
    DECODED_SCHEMA,
    _slow_path,
    decode_batch,
    raw_batch,
)

OFFSETS = "__consumer_offsets"


def _decode(rows: list[dict]) -> pa.Table:
    raw = raw_batch(
        [{"partition": 0, "offset": i, "timestamp": 1000 + i, **r} for i, r in enumerate(rows)]
    )
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
)
def test_binary_slices_cut_the_buffer(blob: bytes, cuts: list[tuple[int, int]]) -> None:
    """Every slice, null, empty, inline (<= 12 bytes) or not, and up to the buffer's last byte
    (with no padding after it), comes out as Python's own slicing."""
    import numpy as np

    cuts = [(start, -1 if length < 0 else min(length, len(blob) - start)) for start, length in cuts]
    cuts = [(start, length) for start, length in cuts if start <= len(blob) or length < 0]
    starts = np.array([start if length >= 0 else 0 for start, length in cuts], dtype=np.int64)
    lengths = np.array([length for _, length in cuts], dtype=np.int64)
    out = binary_slices(np.frombuffer(blob, dtype=np.uint8), starts, lengths)
    out.validate(full=True)
    assert out.type == pa.binary()
    assert out.to_pylist() == [
        None if length < 0 else blob[start : start + length] for start, length in cuts
    ]
