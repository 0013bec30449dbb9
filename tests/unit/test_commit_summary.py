"""The columnar commit summary (``pipelines.commits.summarize``) against a row-by-row reading
of what it promises, on random batches with ties, tombstones and deleted groups."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest

from offsetscope.history.commits import (
    COLUMNS,
    COMMIT_SCHEMA,
    PICK_COLUMNS,
    Positions,
    candidates,
    summarize,
)
from offsetscope.history.rows import OffsetCommitRow
from offsetscope.pipelines.lag import Position


def commit(group: str, topic: str, partition: int, record_offset: int, **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "group_id": group,
        "topic": topic,
        "partition": partition,
        "offset": 100 + record_offset,
        "leader_epoch": -1,
        "metadata": "",
        "commit_timestamp": 1_000 + record_offset,
        "expire_timestamp": None,
        "topic_id": None,
        "is_tombstone": False,
        "record_partition": 7,
        "record_offset": record_offset,
        "record_timestamp": 1_000 + record_offset,
        "transactional": False,
        "producer_id": None,
        "producer_epoch": None,
        "status": "committed",
        "resolved_at": 1_000 + record_offset,
        "resolved_by": "plain",
        "effective_at": 1_000 + record_offset,
    }
    row.update(kw)
    return row


def table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows).select(list(COLUMNS))


def flat(positions: Positions) -> set[tuple[str, int, Position]]:
    """The positions one by one, after checking that each partition's are in group-id order
    with one per group (what lag's bisection relies on)."""
    for columns in positions.values():
        assert list(columns.groups) == sorted(set(columns.groups))
    return {(t, p, position) for (t, p), columns in positions.items() for position in columns}


Row = dict[str, Any]


def picked(rows: list[Row], tombstones: dict[str, int]) -> tuple[dict[str, list[Row]], list[Row]]:
    """The rows the picks promise to choose, one row at a time: per group its first live
    commit, its latest, its first after its deletion and its first per topic id; per group,
    topic and partition its latest record. Ties go by record offset, then record partition."""
    first = lambda r: (r["record_offset"], r["record_partition"])  # noqa: E731
    newest = lambda r: (r["effective_at"], *first(r))  # noqa: E731
    chosen: dict[str, list[Row]] = {}
    for g in {r["group_id"] for r in rows}:
        live = [r for r in rows if r["group_id"] == g and not r["is_tombstone"]]
        if not live:
            continue
        after = [r for r in live if g in tombstones and r["record_offset"] > tombstones[g]]
        chosen[g] = [min(live, key=first), max(live, key=newest)]
        chosen[g] += [min(after, key=first)] if after else []
        for tid in {r["topic_id"] for r in live if r["topic_id"] is not None}:
            chosen[g].append(min((r for r in live if r["topic_id"] == tid), key=first))
    latest = [
        max((r for r in rows if (r["group_id"], r["topic"], r["partition"]) == key), key=newest)
        for key in {(r["group_id"], r["topic"], r["partition"]) for r in rows}
    ]
    return chosen, latest


def reference(
    rows: list[Row], tombstones: dict[str, int]
) -> tuple[dict[str, list[int]], set[tuple[str, int, Position]]]:
    """What summarize promises (record offsets of the chosen rows, and the positions)."""
    chosen, latest = picked(rows, tombstones)
    positions = {
        (
            r["topic"],
            r["partition"],
            Position(r["group_id"], r["offset"], r["effective_at"], r["record_offset"]),
        )
        for r in latest
    }
    return {g: sorted({r["record_offset"] for r in v}) for g, v in chosen.items()}, positions


def test_picks_first_latest_after_deletion_and_per_topic_id() -> None:
    rows = [
        commit("g", "orders", 0, 10, topic_id="id-a"),
        commit("g", "orders", 1, 11),
        commit("g", "orders", 0, 12, is_tombstone=True, offset=None),
        commit("g", "orders", 1, 13, topic_id="id-b"),
        # committed later (effective_at) although earlier in the log: the latest live commit
        commit("g", "orders", 1, 14, effective_at=9_999),
        commit("g", "orders", 1, 15),
        commit("h", "events", 0, 16, is_tombstone=True, offset=None),
    ]
    summary, positions = summarize(table(rows), {"g": 12})

    assert [c.record_offset for c in summary["g"]] == [10, 13, 14]
    assert all(isinstance(c, OffsetCommitRow) for c in summary["g"])
    assert summary["g"][0] == OffsetCommitRow(**rows[0])
    assert "h" not in summary  # only a tombstone: nothing for the group fold
    assert flat(positions) == {
        ("orders", 0, Position("g", None, 1_012, 12)),  # the tombstone removed the position
        ("orders", 1, Position("g", 114, 9_999, 14)),
        ("events", 0, Position("h", None, 1_016, 16)),
    }


def random_batch(rnd: random.Random) -> tuple[list[dict[str, Any]], dict[str, int]]:
    groups = [f"g{i}" for i in range(rnd.randint(1, 12))]  # "g10" sorts before "g2"
    offsets = rnd.sample(range(10_000), rnd.randint(1, 300))
    rows = [
        commit(
            rnd.choice(groups),
            rnd.choice(["orders", "events"]),
            rnd.randint(0, 3),
            o,
            effective_at=rnd.randint(0, 20),  # many ties: the record offset decides
            is_tombstone=rnd.random() < 0.15,
            topic_id=rnd.choice([None, None, "id-a", "id-b"]),
        )
        for o in offsets
    ]
    tombstones = {g: rnd.randint(0, 10_000) for g in groups if rnd.random() < 0.5}
    return rows, tombstones


@pytest.mark.parametrize("seed", range(25))
def test_matches_the_row_by_row_reading(seed: int) -> None:
    rows, tombstones = random_batch(random.Random(seed))

    summary, positions = summarize(table(rows), tombstones)

    want_summary, want_positions = reference(rows, tombstones)
    assert {g: [c.record_offset for c in cs] for g, cs in summary.items()} == want_summary
    assert flat(positions) == want_positions
    assert sum(len(p.groups) for p in positions.values()) == len(want_positions)


@pytest.mark.parametrize("seed", range(10))
def test_chosen_rows_are_the_input_rows_value_for_value(seed: int) -> None:
    """Each chosen row carries its record's every column as the row would read it, nulls as
    None and flags as bools (the rows are built column by column, not from row mappings)."""
    rnd = random.Random(seed)
    rows, tombstones = random_batch(rnd)
    for r in rows:
        r["expire_timestamp"] = rnd.choice([None, r["commit_timestamp"] + 86_400_000])
        r["producer_id"] = rnd.choice([None, 0, 2**40])
        r["transactional"] = r["producer_id"] is not None
        r["resolved_by"] = rnd.choice([None, "plain"])
    by_record = {r["record_offset"]: r for r in rows}

    summary, _ = summarize(table(rows), tombstones)

    assert summary  # a batch of only tombstones would check nothing
    for group, chosen in summary.items():
        for c in chosen:
            want = OffsetCommitRow(**by_record[c.record_offset])
            assert c.group_id == group
            assert c == want
            assert [type(v) for v in vars_of(c)] == [type(v) for v in vars_of(want)]


def vars_of(row: OffsetCommitRow) -> list[Any]:
    return [getattr(row, f) for f in COLUMNS]


def test_a_batch_of_tombstones_only_gives_positions_and_no_commits() -> None:
    rows = [commit("g", "orders", 0, 3, is_tombstone=True, offset=None)]

    summary, positions = summarize(table(rows), {})

    assert summary == {}
    assert flat(positions) == {("orders", 0, Position("g", None, 1_003, 3))}


def test_empty_batch() -> None:
    empty = pa.Table.from_pylist([commit("g", "t", 0, 1)]).select(list(COLUMNS)).slice(0, 0)
    assert summarize(empty, {}) == ({}, {})


@pytest.mark.parametrize("seed", range(25))
def test_candidates_of_parts_summarize_as_the_whole(seed: int) -> None:
    """What the ingest query does: each Spark partition keeps its candidates (in two rounds,
    before and after a shuffle by group), and only those are summarized on the driver."""
    rnd = random.Random(seed)
    rows, tombstones = random_batch(rnd)
    parts: list[list[dict[str, Any]]] = [[] for _ in range(rnd.randint(1, 5))]
    for r in rows:
        rnd.choice(parts).append(r)
    typed = lambda part: pa.Table.from_pylist(part, schema=COMMIT_SCHEMA)  # noqa: E731
    kept = [candidates(typed(p), tombstones) for p in parts if p]
    # the second round: the first round's candidates regrouped, in another order
    regrouped = pa.concat_tables(kept).to_pylist()
    rnd.shuffle(regrouped)
    final = candidates(typed(regrouped), tombstones)

    assert final.num_rows <= len(rows)
    summary, positions = summarize(final, tombstones)
    want_summary, want_positions = summarize(typed(rows), tombstones)
    assert summary == want_summary
    # in group-id order per partition, whatever order the rows came in
    assert positions == want_positions
    assert flat(positions) == flat(want_positions)


def test_candidates_keep_only_what_a_pick_can_use() -> None:
    rows = [commit("g", "orders", 0, o) for o in range(10, 20)]
    kept = candidates(table(rows), {})
    # the first commit (the group's first), the last (its latest and the position)
    assert kept["record_offset"].to_pylist() == [10, 19]


@pytest.mark.parametrize("seed", range(10))
def test_candidates_are_picked_from_the_pick_columns_alone(seed: int) -> None:
    """The ingest query's decode picks from these columns only (``spark.decode``, commit
    candidates): the same records as picking from whole rows."""
    rows, tombstones = random_batch(random.Random(seed))
    whole = candidates(table(rows), tombstones)
    narrow = candidates(table(rows).select(list(PICK_COLUMNS)), tombstones)

    assert narrow.column_names == list(PICK_COLUMNS)
    record = ("record_partition", "record_offset")
    coordinates = lambda t: sorted(zip(*(t[c].to_pylist() for c in record), strict=True))  # noqa: E731
    assert coordinates(narrow) == coordinates(whole)
    assert len(set(coordinates(table(rows)))) == len(rows)  # a record names one row


@pytest.mark.parametrize("seed", range(15))
def test_ties_across_record_partitions_and_offsets_far_apart(seed: int) -> None:
    """Record offsets repeated in several ``__consumer_offsets`` partitions (the record
    partition breaks the tie, so no pick depends on the order rows arrive in) and offsets and
    times far apart: the candidates are exactly the rows the row-by-row reading picks, record
    partition and all, and they summarize as the whole."""
    rnd = random.Random(seed)
    groups = [f"g{i}" for i in range(rnd.randint(1, 6))]
    far = rnd.choice([0, 2**40, 2**61])
    by_coordinates = {}
    for _ in range(rnd.randint(1, 120)):
        r = commit(
            rnd.choice(groups),
            "orders",
            rnd.randint(0, 2),
            rnd.choice([rnd.randint(0, 30), far + rnd.randint(0, 30)]),
            record_partition=rnd.randint(0, 3),
            effective_at=rnd.choice([rnd.randint(0, 5), far + rnd.randint(0, 5)]),
            is_tombstone=rnd.random() < 0.1,
        )
        by_coordinates[(r["record_partition"], r["record_offset"])] = r
    rows = list(by_coordinates.values())
    rnd.shuffle(rows)
    tombstones = {g: rnd.randint(0, 30) for g in groups if rnd.random() < 0.5}

    kept = candidates(table(rows), tombstones)

    chosen, latest = picked(rows, tombstones)
    want = [r for rs in chosen.values() for r in rs] + latest
    got = zip(kept["record_partition"].to_pylist(), kept["record_offset"].to_pylist(), strict=True)
    assert sorted(got) == sorted({(r["record_partition"], r["record_offset"]) for r in want})
    assert summarize(kept, tombstones) == summarize(table(rows), tombstones)
