"""The commit candidates a decode task picks as it decodes (``spark.decode``, commit
candidates): the same rows as the picks over all the task's plain commits at once, whatever
batches they arrive in and however often the task reduces, each a copy of its decoded row."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pyarrow as pa
import pytest

from offsetscope.history.commits import PICK_COLUMNS, candidate_rows
from offsetscope.protocol import encode_record, make_record
from offsetscope.spark import decode as dec
from offsetscope.spark.tables import SOURCE_SCHEMA

OFFSETS = "__consumer_offsets"
T0 = 1_700_000_000_000


def _commit(rng: random.Random, group: str) -> tuple[bytes, bytes | None]:
    value: dict[str, Any] | None = None
    topic_id = uuid.UUID(int=rng.randrange(3) + 1) if rng.random() < 0.3 else None
    if rng.random() >= 0.1:  # else a tombstone
        value = {"offset": rng.randrange(10_000), "leaderEpoch": 1, "metadata": ""}
        value["commitTimestamp"] = T0
        if topic_id is not None:
            value["topicId"] = topic_id
    key = {"group": group, "topic": f"t{rng.randrange(2)}", "partition": rng.randrange(6)}
    return encode_record(make_record(OFFSETS, 1, key, value, 3 if topic_id is None else 4))


@pytest.fixture(scope="module")
def source() -> pa.Table:
    """Plain and transactional commits of 30 groups in three offsets partitions, with
    group-metadata tombstones among them; many equal times, so record offsets decide."""
    rng = random.Random(11)
    rows = []
    for partition in range(3):
        for offset in range(1_200):
            group = f"g{partition}-{rng.randrange(10)}"
            if rng.random() < 0.02:
                key, value = encode_record(make_record(OFFSETS, 2, {"group": group}, None, 3))
            else:
                key, value = _commit(rng, group)
            txn = rng.random() < 0.05
            rows.append(
                {
                    "topic": OFFSETS,
                    "source_topic": OFFSETS,
                    "partition": partition,
                    "offset": offset,
                    "timestamp": T0 + rng.randrange(40) * 1_000,
                    "key": key,
                    "value": value,
                    "producer_id": 7 if txn else -1,
                    "producer_epoch": 0 if txn else -1,
                    "is_transactional": txn,
                    "is_control": False,
                    "source_error": None,
                }
            )
    return pa.Table.from_pylist(rows, schema=SOURCE_SCHEMA)


def _run(table: pa.Table, chunk: int) -> pa.Table:
    batches = table.combine_chunks().to_batches(max_chunksize=chunk)
    return pa.Table.from_batches(
        list(dec.decode_with_candidates(batches)), schema=dec.DECODE_OUTPUT_SCHEMA
    )


def _coordinates(rows: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return sorted((r["partition"], r["offset"]) for r in rows)


@pytest.mark.parametrize(("chunk", "reduce_rows"), [(31, 20), (64, 100), (500, 65_536)])
def test_a_task_keeps_the_picks_over_all_its_plain_commits(
    source: pa.Table, chunk: int, reduce_rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dec, "REDUCE_ROWS", reduce_rows)
    batches = source.combine_chunks().to_batches(max_chunksize=chunk)
    decoded = pa.Table.from_batches(list(dec.decode_arrow(batches)), dec.DECODE_OUTPUT_SCHEMA)
    out = _run(source, chunk)
    kinds = out.column("kind").to_pylist()
    # The decoded rows first, as the decode alone yields them, then one packed row.
    assert kinds.count(dec.CANDIDATE) == 1
    assert kinds[-1] == dec.CANDIDATE
    assert out.slice(0, out.num_rows - 1).to_pylist() == decoded.to_pylist()

    commits = decoded.filter(
        pa.compute.and_(
            pa.compute.equal(decoded["kind"], "offset_commit"),
            pa.compute.invert(decoded["is_transactional"]),
        )
    )
    picks = dec._pick_columns(commits)
    assert picks.column_names == list(PICK_COLUMNS)
    want = commits.take(pa.array(candidate_rows(picks, {})))
    got = dec.unpack_candidates(out.column("raw_value").to_pylist()[-1:])
    assert _coordinates(got.to_pylist()) == _coordinates(want.to_pylist())
    # Each its decoded row's columns that a plain commit fills.
    by_record = {(r["partition"], r["offset"]): r for r in decoded.to_pylist()}
    for row in got.to_pylist():
        whole = by_record[(row["partition"], row["offset"])]
        assert row == {k: whole[k] for k in row}
    assert got.schema == dec._COMMIT_COLUMNS
    assert 0 < got.num_rows < commits.num_rows / 3
    assert any(r["is_tombstone"] for r in got.to_pylist())


def test_a_task_without_plain_commits_adds_no_rows(source: pa.Table) -> None:
    txn_only = source.filter(source["is_transactional"])
    out = _run(txn_only, 64)
    assert out.num_rows == txn_only.num_rows
    assert dec.CANDIDATE not in out.column("kind").to_pylist()


def _texts(t: pa.DataType) -> list[pa.DataType]:
    """The types of the text values of ``t``, nested in structs too."""
    if pa.types.is_struct(t):
        return [x for i in range(t.num_fields) for x in _texts(t.field(i).type)]
    return [t] if pa.types.is_string(t) or pa.types.is_dictionary(t) else []


def test_the_packed_candidates_carry_their_texts_as_dictionaries(source: pa.Table) -> None:
    # They reach the driver through py4j, byte by byte: each text column's offsets would be
    # most of the packed bytes, its values repeating a few names.
    out = _run(source, 500)
    packed = pa.ipc.open_stream(out.column("raw_value").to_pylist()[-1]).read_all()
    texts = [t for f in packed.schema for t in _texts(f.type)]
    assert len(texts) == len([t for f in dec._COMMIT_COLUMNS for t in _texts(f.type)]) > 0
    assert all(pa.types.is_dictionary(t) for t in texts)
    got = dec.unpack_candidates([out.column("raw_value").to_pylist()[-1]])
    assert got.to_pylist() == packed.to_pylist()
    assert got.schema == dec._COMMIT_COLUMNS
    # Parts of several tasks, each with its own dictionaries, make one table.
    both = dec.unpack_candidates([out.column("raw_value").to_pylist()[-1]] * 2)
    assert both.num_rows == 2 * got.num_rows
    assert both.schema == dec._COMMIT_COLUMNS
