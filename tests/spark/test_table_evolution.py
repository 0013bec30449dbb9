"""A table an earlier release created (``tests/fixtures/delta/partition_lag``, made by
``tests/support/delta_fixture.py`` before tables had a ``cluster`` column) is upgraded in place
when a job starts: new nullable columns are added with the change logged, ``cluster`` filled
with the default cluster, and the table's history kept; a change that cannot be
added (a type) stops the start naming the table, the column and ``offsetscope migrate``, which
then rewrites the table keeping its history."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from pathlib import Path

import delta_fixture
import pytest
from pyspark.sql import SparkSession

from offsetscope import config
from offsetscope.pipelines import maintain
from offsetscope.spark import tables as catalogue

pytestmark = pytest.mark.spark

LOGICAL = delta_fixture.LOGICAL


@pytest.fixture
def old_table(
    spark: SparkSession, offsetscope_config: config.Config, tmp_path: Path
) -> Iterator[config.Config]:
    """The fixture table, copied and registered in a schema of its own."""
    with delta_fixture.registered(spark, offsetscope_config, tmp_path, "t_evolve") as cfg:
        yield cfg


def _with_columns(*columns: catalogue.ColumnSpec) -> catalogue.TableSpec:
    spec = catalogue.spec(LOGICAL)
    return dataclasses.replace(spec, columns=(*spec.columns, *columns))


def _history(spark: SparkSession, name: str) -> list[int]:
    return sorted(r["version"] for r in spark.sql(f"DESCRIBE HISTORY {name}").collect())


def test_the_fixture_gains_the_cluster_column_in_place_and_then_starts_unchanged(
    spark: SparkSession, old_table: config.Config, caplog: pytest.LogCaptureFixture
) -> None:
    """The fixture predates the cluster column: its rows are one cluster's, the default one."""
    name = catalogue.table_name(old_table, LOGICAL)
    before = _history(spark, name)
    with caplog.at_level(logging.INFO, logger="offsetscope.spark.tables"):
        catalogue.ensure_tables(spark, old_table, [LOGICAL])
    added = [m for m in caplog.messages if m.startswith(f"{name}: added columns ")]
    assert added == [f"{name}: added columns cluster (Delta version {before[-1] + 1})"]
    clusters = spark.sql(f"SELECT DISTINCT cluster FROM {name}").collect()
    assert [r["cluster"] for r in clusters] == [config.default_cluster(old_table)]
    assert spark.table(name).count() == delta_fixture.expected_rows()
    assert _history(spark, name)[: len(before)] == before
    upgraded = _history(spark, name)
    catalogue.ensure_tables(spark, old_table, [LOGICAL])
    assert _history(spark, name) == upgraded, "a second start changes nothing"


def test_a_new_nullable_column_is_added_in_place_logged_and_the_history_kept(
    spark: SparkSession,
    old_table: config.Config,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    name = catalogue.table_name(old_table, LOGICAL)
    before = _history(spark, name)
    note = catalogue.ColumnSpec("lag_note", "string", comment="a column a later release adds")
    monkeypatch.setitem(catalogue.CATALOGUE, LOGICAL, _with_columns(note))  # type: ignore[arg-type]

    with caplog.at_level(logging.INFO, logger="offsetscope.spark.tables"):
        catalogue.ensure_tables(spark, old_table, [LOGICAL])

    version = catalogue.delta_version(spark, name)
    # the cluster column (the fixture predates it) and the new one
    (added,) = [m for m in caplog.messages if m.startswith(f"{name}: added columns ")]
    assert added.startswith(f"{name}: added columns cluster, lag_note (Delta version ")
    rows = spark.sql(f"SELECT lag_note FROM {name}").collect()
    assert len(rows) == delta_fixture.expected_rows()
    assert {r["lag_note"] for r in rows} == {None}
    # Every earlier version is still there and reads as it did.
    assert _history(spark, name)[: len(before)] == before
    old = spark.sql(f"SELECT * FROM {name} VERSION AS OF {before[-1]}")
    assert old.count() == delta_fixture.expected_rows()
    assert "lag_note" not in old.columns
    catalogue.ensure_tables(spark, old_table, [LOGICAL])
    assert catalogue.delta_version(spark, name) == version, "a second start changes nothing"


def test_a_type_change_stops_the_start_and_migrate_rewrites_the_table(
    spark: SparkSession, old_table: config.Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = catalogue.table_name(old_table, LOGICAL)
    before = _history(spark, name)
    spec = catalogue.spec(LOGICAL)
    narrowed = tuple(
        dataclasses.replace(c, type="int") if c.name == "lost_records" else c for c in spec.columns
    )
    monkeypatch.setitem(
        catalogue.CATALOGUE,  # type: ignore[arg-type]
        LOGICAL,
        dataclasses.replace(spec, columns=narrowed),
    )

    with pytest.raises(catalogue.TableSchemaMismatchError) as refused:
        catalogue.ensure_tables(spark, old_table, [LOGICAL])
    message = str(refused.value)
    assert name in message
    assert "column lost_records: type changed from bigint to int" in message
    assert f"offsetscope migrate --tables {LOGICAL} --env {old_table.env}" in message
    assert _history(spark, name) == before, "nothing was written"

    (done,) = maintain.migrate(spark, old_table, tables=[LOGICAL])

    assert (done.logical, done.from_version, done.rows) == (
        LOGICAL,
        before[-1],
        delta_fixture.expected_rows(),
    )
    types = dict(spark.table(name).dtypes)
    assert types["lost_records"] == "int"
    assert spark.table(name).count() == delta_fixture.expected_rows()
    old = spark.sql(f"SELECT lost_records FROM {name} VERSION AS OF {before[-1]}")
    assert dict(old.dtypes)["lost_records"] == "bigint", "the old versions read as written"
    assert catalogue.describe_table(spark, name).partition_by == spec.partition_by
    version = catalogue.delta_version(spark, name)
    catalogue.ensure_tables(spark, old_table, [LOGICAL])
    assert catalogue.delta_version(spark, name) == version
    assert maintain.migrate(spark, old_table, tables=[LOGICAL]) == []
