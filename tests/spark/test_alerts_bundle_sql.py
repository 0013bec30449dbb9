"""The Databricks SQL alerts of the bundle, run by Spark against the tables as declared: every
table and column they name exists, and each returns the one value its evaluation reads. What is
counted per group is counted per group of a Kafka cluster."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import pytest
from generation_rows import write_in_clusters
from pyspark.sql import SparkSession
from ruamel.yaml import YAML

from offsetscope import config
from offsetscope.alerts import tables as alert_tables
from offsetscope.alerts.model import AlertRow
from offsetscope.quality import tables as qtables
from offsetscope.spark import tables as catalogue

pytestmark = pytest.mark.spark

SQL_ALERTS = Path(__file__).resolve().parents[2] / "deploy/databricks/resources/sql.alerts.yml"


def test_sql_alert_queries_run_on_the_declared_tables(
    spark: SparkSession, offsetscope_config: config.Config
) -> None:
    schema = f"bundle_{uuid.uuid4().hex[:8]}"
    cfg = dataclasses.replace(
        offsetscope_config,
        storage=dataclasses.replace(offsetscope_config.storage, schema=schema),
    )
    catalogue.ensure_tables(spark, cfg, ["group_generations", "batch_audit"])
    qtables.ensure(spark, cfg, [alert_tables.ALERTS, qtables.QUALITY_RESULTS])
    alert = AlertRow(
        "a" * 32, "rebalance_storm", "group", "payments", "", 0, 1, "open", "critical", 9.0,
        5.0, 1, None, 1, "storm", (1, 2), (), (), None, None, None, (), 0, 0,
    )  # fmt: skip
    qtables.merge_rows(spark, cfg, alert_tables.ALERTS, [alert], app_id=None, batch_id=0)
    # the same group id rebalancing in two clusters a minute ago: 20 times in one, 12 in the other
    now = int(spark.sql("SELECT unix_millis(current_timestamp())").first()[0])  # type: ignore[index]
    at = now - 60_000
    write_in_clusters(spark, cfg, "payments", at, {"east": 20, "west": 12})

    alerts = YAML(typ="safe").load(SQL_ALERTS.read_text())["resources"]["alerts"]
    values = {}
    rows = {}
    for key, definition in alerts.items():
        sql = definition["query_text"].replace(
            "${var.catalog}.${resources.schemas.offsetscope.name}", f"`{schema}`"
        )
        (rows[key],) = spark.sql(sql).collect()
        values[key] = rows[key][definition["evaluation"]["source"]["name"]]
    assert values["offsetscope_open_critical"] == 1
    # one cluster's group, not the two clusters' rebalances added up (32)
    assert values["offsetscope_rebalance_rate"] == 20
    assert rows["offsetscope_rebalance_rate"]["busiest_group"] == "east/payments"
    assert values["offsetscope_quality_failures"] == 0
    # no micro-batch yet: the stall alert fires instead of staying silent on a NULL
    assert values["offsetscope_ingest_stalled"] > 30
