"""An existing table is brought up to its declaration by ``ensure_tables``: a declared column
it lacks that may be null is added and filled, comments that differ are rewritten, and a second
call changes nothing."""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from pyspark.sql import SparkSession

from offsetscope import config
from offsetscope.spark import tables as catalogue

pytestmark = pytest.mark.spark


def _version(spark: SparkSession, name: str) -> int:
    return int(spark.sql(f"DESCRIBE HISTORY {name} LIMIT 1").collect()[0]["version"])


def test_an_old_groups_current_table_becomes_the_log_under_a_view_of_its_name(
    spark: SparkSession, offsetscope_config: config.Config
) -> None:
    schema = f"t_migrate_{uuid.uuid4().hex[:8]}"
    cfg = config.with_storage(offsetscope_config, schema=schema)
    cfg = dataclasses.replace(
        cfg,
        sources=dataclasses.replace(
            cfg.sources,
            kafka=dataclasses.replace(cfg.sources.kafka, group_id_prefix="offsetscope-ingest"),
        ),
    )
    spec = catalogue.spec("groups_current")
    name = catalogue.table_name(cfg, "groups_current")
    assert name == f"`{schema}`.`groups_current_log`"
    # The table as an earlier version created it, under the name the view now has: one row
    # per group, no label or version column, no comments.
    old = [c for c in spec.columns if c.name not in ("offsetscope_own", "seq")]
    spark.sql(f"CREATE SCHEMA {schema}")
    try:
        columns = ", ".join(f"`{c.name}` {c.type}" for c in old)
        spark.sql(f"CREATE TABLE {schema}.groups_current ({columns}) USING DELTA")
        for group in ("payments", "offsetscope-ingest-5b1c-driver-0"):
            values = {
                "group_id": f"'{group}'", "group_life": "0", "kind": "'classic'",
                "member_count": "1", "rebalance_times": "array()", "rebalances_1h": "0",
                "rebalances_24h": "0", "deleted": "false", "updated_at": "current_timestamp()",
            }  # fmt: skip
            row = ", ".join(values.get(c.name, "NULL") for c in old)
            spark.sql(f"INSERT INTO {schema}.groups_current VALUES ({row})")
        history = spark.sql(f"DESCRIBE HISTORY {schema}.groups_current").count()

        catalogue.ensure_tables(spark, cfg)

        # Renamed with its history, then migrated: labelled, each row its group's version 0.
        assert spark.sql(f"DESCRIBE HISTORY {name}").count() > history
        rows = {
            r[0]: (r[1], r[2])
            for r in spark.sql(f"SELECT group_id, offsetscope_own, seq FROM {name}").collect()
        }
        assert rows == {"payments": (False, 0), "offsetscope-ingest-5b1c-driver-0": (True, 0)}
        read = {
            c.name: c.description for c in spark.catalog.listColumns("groups_current_log", schema)
        }
        assert read == {c.name: c.comment for c in spec.columns}
        assert spark.catalog.getTable(f"{schema}.groups_current_log").description == spec.comment
        # The old name is the view: the same rows, without the version.
        view = spark.catalog.getTable(f"{schema}.groups_current")
        assert view.tableType == "VIEW"
        shown = spark.table(f"{schema}.groups_current")
        assert "seq" not in shown.columns
        assert sorted(r["group_id"] for r in shown.collect()) == sorted(rows)
        version = _version(spark, name)
        catalogue.ensure_tables(spark, cfg)
        assert _version(spark, name) == version
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
