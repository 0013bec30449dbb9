"""Driver rows to Arrow with a table's schema: ``writes.ms_table`` (rows as columns, the
offset_commits append) gives exactly what ``writes.records_table`` (rows as records) gives,
out-of-range timestamps included."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest

from offsetscope.history.commits import COLUMNS
from offsetscope.spark import writes

# Values a corrupt record can carry beside ordinary ones: the ends of Spark's range, one past
# them, int64's extremes, -1 (a v0 message's "no timestamp") and null.
_TIMESTAMPS = (
    1_700_000_000_000,
    -1,
    0,
    writes.MIN_TIMESTAMP_MS,
    writes.MAX_TIMESTAMP_MS,
    writes.MIN_TIMESTAMP_MS - 1,
    writes.MAX_TIMESTAMP_MS + 1,
    -(2**63),
    2**63 - 1,
    None,
)
_MS = ("commit_timestamp", "expire_timestamp", "record_timestamp", "resolved_at", "effective_at")


def _commit(rng: random.Random, i: int) -> dict[str, Any]:
    tombstone = rng.random() < 0.2
    row: dict[str, Any] = {
        "group_id": f"g{rng.randrange(5)}",
        "topic": rng.choice(["orders", "payments", "é-topic"]),
        "partition": rng.randrange(20),
        "offset": None if tombstone else rng.randrange(10**12),
        "leader_epoch": rng.choice([-1, 0, 7]),
        "metadata": rng.choice(["", "m" * 40]),
        "topic_id": rng.choice([None, "AAAAAAAAAAAAAAAAAAAAAA"]),
        "is_tombstone": tombstone,
        "record_partition": rng.randrange(50),
        "record_offset": i,
        "transactional": False,
        "producer_id": None,
        "producer_epoch": None,
        "status": "committed",
        "resolved_by": "tombstone" if tombstone else "non_transactional",
    }
    for c in _MS:
        row[c] = rng.choice(_TIMESTAMPS)
    if row["record_timestamp"] is None:  # NOT NULL in the table and in every decoded record
        row["record_timestamp"] = -1
    return row


@pytest.mark.parametrize("seed", range(5))
def test_columns_give_what_records_give(seed: int) -> None:
    rng = random.Random(seed)
    rows = [_commit(rng, i) for i in range(300)]
    # As Spark's toArrow hands them over: int64 ms, large strings, columns in any order.
    collected = pa.Table.from_pylist(rows).select(list(reversed(COLUMNS)))
    collected = collected.cast(
        pa.schema(
            [
                pa.field(f.name, pa.large_string() if pa.types.is_string(f.type) else f.type)
                for f in collected.schema
            ]
        )
    )
    got = writes.ms_table("offset_commits", collected, cluster="c")
    want = writes.records_table("offset_commits", rows, cluster="c")
    assert got.schema == want.schema
    assert got.to_pylist() == want.to_pylist()
    # Out-of-range values: nulled where the column is nullable, clamped where it is not.
    clamped = {r["record_timestamp"] for r in got.to_pylist()}
    assert {writes.MIN_TIMESTAMP_MS, writes.MAX_TIMESTAMP_MS} & {
        int(t.timestamp() * 1000) for t in clamped
    }


def test_missing_column_is_named() -> None:
    rows = pa.table({"group_id": ["g"]})
    with pytest.raises(ValueError, match="lack the column 'topic'"):
        writes.ms_table("offset_commits", rows, cluster="c")


def test_nested_timestamps_are_refused() -> None:
    # groups_current carries its members' timestamps inside an array of structs.
    from offsetscope.spark import tables as catalogue

    schema = catalogue.arrow_schema(catalogue.spec("groups_current"))
    nested = [
        f.name
        for f in schema
        if writes._has_timestamp(f.type) and not pa.types.is_timestamp(f.type)
    ]
    assert nested, "groups_current has no nested timestamp any more: pick another table"
    empty = schema.empty_table()
    with pytest.raises(ValueError, match="nested timestamps"):
        writes.ms_table("groups_current", empty, cluster="c")
