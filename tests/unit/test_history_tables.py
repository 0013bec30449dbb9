"""Table declarations: row classes match columns 1:1, types parse, keys and merges are sound."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

import pytest
from history_scenario import WHOLE

from offsetscope.history import rows as r
from offsetscope.history.tables import (
    TABLES,
    Table,
    as_record,
    key_of,
    materialize,
    parse_type,
    table_for,
)

PRIMITIVES = {
    int: {"int", "bigint", "timestamp"},
    str: {"string"},
    bool: {"boolean"},
    float: {"double"},
}


def _compatible(py: Any, parsed: tuple[Any, ...]) -> bool:
    """Whether a row field's annotation can hold values of a parsed DDL type."""
    origin = typing.get_origin(py)
    if origin is typing.Union or origin is types.UnionType:
        (inner,) = [a for a in typing.get_args(py) if a is not type(None)]
        return _compatible(inner, parsed)
    kind = parsed[0]
    if kind == "array":
        if origin is not tuple:
            return False
        args = typing.get_args(py)
        return args[1] is Ellipsis and _compatible(args[0], parsed[1])
    if kind == "map":
        if origin is not tuple:
            return False
        (pair,) = typing.get_args(py)[:1]
        key, value = typing.get_args(pair)
        return _compatible(key, parsed[1]) and _compatible(value, parsed[2])
    if kind == "struct":
        fields = parsed[1]
        if isinstance(py, type) and dataclasses.is_dataclass(py):
            hints = typing.get_type_hints(py)
            names = [f.name for f in dataclasses.fields(py)]
            return names == [n for n, _ in fields] and all(
                _compatible(hints[n], t) for n, t in fields
            )
        if origin is tuple:  # (topic, partition)
            args = typing.get_args(py)
            return len(args) == len(fields) and all(
                _compatible(a, t) for a, (_, t) in zip(args, fields, strict=True)
            )
        return False
    return kind in PRIMITIVES.get(py, set())


@pytest.mark.parametrize("table", TABLES.values(), ids=lambda t: t.name)
def test_row_fields_match_columns_one_to_one(table: Table) -> None:
    fields = dataclasses.fields(table.row_type)
    assert [f.name for f in fields] == [c.name for c in table.field_columns]
    hints = typing.get_type_hints(table.row_type)
    for col in table.field_columns:
        py = hints[col.name]
        optional = type(None) in typing.get_args(py)
        assert optional == col.nullable, col.name
        assert _compatible(py, parse_type(col.type)), (col.name, py, col.type)


@pytest.mark.parametrize("table", TABLES.values(), ids=lambda t: t.name)
def test_keys_and_partitions_are_real_non_null_columns(table: Table) -> None:
    names = {c.name for c in table.columns}
    assert set(table.key) <= names
    assert set(table.partition_by) <= names
    assert all(not table.column(k).nullable for k in table.key)
    for col in table.columns:
        if col.generated is not None:
            # A generated column derives from a real field (Delta computes it on write).
            assert any(f.name in col.generated for f in table.field_columns), col.name
            assert col.name in table.partition_by
    assert table.write_mode in ("merge", "append")
    assert table_for(table.row_type) is table


def test_ddl_and_merge_condition() -> None:
    t = TABLES["offset_commits"]
    assert t.ddl().startswith("`group_id` string NOT NULL, `topic` string NOT NULL")
    assert "`offset` bigint," in t.ddl()
    assert "`record_date` date NOT NULL" in t.ddl()
    assert t.merge_condition() == (
        "t.`record_partition` <=> s.`record_partition` AND t.`record_offset` <=> s.`record_offset` "
        "AND t.`record_date` <=> CAST(s.`record_timestamp` AS DATE)"
    )
    sql = t.create_sql("offsetscope.offset_commits")
    assert sql.startswith("CREATE TABLE IF NOT EXISTS offsetscope.offset_commits (")
    assert "`record_date` date NOT NULL GENERATED ALWAYS AS (CAST(record_timestamp AS DATE))" in sql
    assert "COMMENT 'when the offset became the group\\'s offset'" in sql
    assert sql.endswith(
        "USING DELTA PARTITIONED BY (`record_date`) COMMENT 'Every offset commit and tombstone, "
        "with its transactional resolution.' TBLPROPERTIES "
        "('delta.appendOnly' = 'false', 'delta.enableChangeDataFeed' = 'true')"
    )
    assert t.properties == {"delta.appendOnly": "false", "delta.enableChangeDataFeed": "true"}
    assert TABLES["end_offsets"].properties == {"delta.appendOnly": "true"}


def test_merge_sql_lists_field_columns_and_leaves_generated_ones_to_delta() -> None:
    t = TABLES["offset_commits"]
    sql = t.merge_sql("offsetscope.offset_commits", "batch")
    assert sql.startswith(
        f"MERGE INTO offsetscope.offset_commits t USING batch s ON {t.merge_condition()}"
    )
    assert "t.`status` = s.`status`" in sql
    assert "t.`record_offset` = s.`record_offset`" not in sql  # key columns are not updated
    assert "record_date" not in sql.split(" ON ")[1].split("WHEN MATCHED")[1]
    assert sql.endswith("s.`resolved_by`, s.`effective_at`)")
    append = TABLES["end_offsets"].merge_sql("offsetscope.end_offsets", "batch")
    assert append == (
        "INSERT INTO offsetscope.end_offsets (`topic`, `partition`, `log_start_offset`, "
        "`high_watermark`, `last_stable_offset`, `sampled_at`) SELECT `topic`, `partition`, "
        "`log_start_offset`, `high_watermark`, `last_stable_offset`, `sampled_at` FROM batch"
    )


def test_parse_type_nested() -> None:
    assert parse_type("map<string,array<struct<topic:string,partition:int>>>") == (
        "map",
        ("string",),
        ("array", ("struct", (("topic", ("string",)), ("partition", ("int",))))),
    )
    with pytest.raises(ValueError, match="trailing"):
        parse_type("int>")


def test_as_record_shapes_structs_maps_and_arrays() -> None:
    (gen,) = [g for g in WHOLE["group_generations"].values() if g.static_replacements][:1]
    rec = as_record(gen)
    assert list(rec) == [c.name for c in TABLES["group_generations"].field_columns]
    member = rec["members"][0]
    assert set(member) == {f.name for f in dataclasses.fields(r.GenerationMember)}
    mid, parts = rec["assignment"][0]
    assert isinstance(mid, str)
    assert parts[0] == {"topic": "orders", "partition": 0}
    assert rec["members_replaced"][0] == {
        "instance_id": "ia",
        "old_member_id": "a",
        "new_member_id": "a2",
    }


def test_every_output_row_has_a_unique_key_per_table() -> None:
    for name, rows in WHOLE.items():
        for key, row in rows.items():
            assert key == key_of(row)
            assert table_for(type(row)).name == name
        assert len(materialize(rows.values())) == len(rows)
