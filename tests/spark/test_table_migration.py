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


def test_an_old_groups_current_gains_the_own_label_and_its_comments(
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
    # The table as an earlier version created it: no label column, no comments.
    old = [c for c in spec.columns if c.name != "offsetscope_own"]
    spark.sql(f"CREATE SCHEMA {schema}")
    try:
        columns = ", ".join(f"`{c.name}` {c.type}" for c in old)
        spark.sql(f"CREATE TABLE {name} ({columns}) USING DELTA")
        for group in ("payments", "offsetscope-ingest-5b1c-driver-0"):
            values = {
                "group_id": f"'{group}'", "group_life": "0", "kind": "'classic'",
                "member_count": "1", "rebalance_times": "array()", "rebalances_1h": "0",
                "rebalances_24h": "0", "deleted": "false", "updated_at": "current_timestamp()",
            }  # fmt: skip
            row = ", ".join(values.get(c.name, "NULL") for c in old)
            spark.sql(f"INSERT INTO {name} VALUES ({row})")

        catalogue.ensure_tables(spark, cfg, ["groups_current"])

        labels = {
            r[0]: r[1] for r in spark.sql(f"SELECT group_id, offsetscope_own FROM {name}").collect()
        }
        assert labels == {"payments": False, "offsetscope-ingest-5b1c-driver-0": True}
        read = {c.name: c.description for c in spark.catalog.listColumns("groups_current", schema)}
        assert read == {c.name: c.comment for c in spec.columns}
        assert spark.catalog.getTable(f"{schema}.groups_current").description == spec.comment
        version = _version(spark, name)
        catalogue.ensure_tables(spark, cfg, ["groups_current"])
        assert _version(spark, name) == version
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
