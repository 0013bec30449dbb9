"""The Databricks dashboard's datasets and widget queries, run by Spark on the tables as declared:
every dataset reads the gold tables in the schema it is pointed at (as the bundle's
``dataset_schema`` does) and every widget's fields evaluate over its dataset. The same group id
in two Kafka clusters stays two groups, and the clusters' filter offers both."""

from __future__ import annotations

import dataclasses
import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from generation_rows import write_in_clusters
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from offsetscope import config
from offsetscope.alerts import tables as alert_tables
from offsetscope.alerts.model import AlertRow
from offsetscope.quality import tables as qtables
from offsetscope.spark import tables as catalogue

pytestmark = pytest.mark.spark

DASHBOARD = (
    Path(__file__).resolve().parents[2] / "deploy/databricks/dashboards/offsetscope.lvdash.json"
)
PLAIN = re.compile(r"^`(\w+)`$")


def widgets(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for page in doc["pages"]:
        for item in page["layout"]:
            yield item["widget"]


@pytest.fixture
def in_schema(spark: SparkSession, offsetscope_config: config.Config) -> Iterator[config.Config]:
    """Empty gold tables in a schema of their own, made the session's current one."""
    schema = f"dashboard_{uuid.uuid4().hex[:8]}"
    cfg = dataclasses.replace(
        offsetscope_config,
        storage=dataclasses.replace(offsetscope_config.storage, schema=schema),
    )
    catalogue.ensure_tables(
        spark, cfg, ["groups_current", "group_generations", "partition_lag", "transactions"]
    )
    qtables.ensure(spark, cfg, [alert_tables.ALERTS])
    previous = spark.catalog.currentDatabase()
    spark.catalog.setCurrentDatabase(schema)
    try:
        yield cfg
    finally:
        spark.catalog.setCurrentDatabase(previous)


def test_every_dataset_and_widget_runs_on_the_tables(
    spark: SparkSession, in_schema: config.Config
) -> None:
    now = int(spark.sql("SELECT unix_millis(current_timestamp())").first()[0])  # type: ignore[index]
    alert = AlertRow(
        "a" * 32, "rebalance_storm", "group", "payments", "", 0, now, "open", "critical", 9.0,
        5.0, now, None, now, "storm", (1, 2), (), (), None, None, None, (), 0, 0, "east",
    )  # fmt: skip
    qtables.merge_rows(spark, in_schema, alert_tables.ALERTS, [alert], app_id=None, batch_id=0)
    # the same group id rebalancing in two clusters, an hour ago
    at = now - 3_600_000
    write_in_clusters(spark, in_schema, "payments", at, {"east": 3, "west": 5})

    doc = json.loads(DASHBOARD.read_text())
    frames = {d["name"]: spark.sql("".join(d["queryLines"])) for d in doc["datasets"]}
    counts = {name: df.count() for name, df in frames.items()}
    assert counts["alerts_open"] == 1
    assert counts["alerts_7d"] == 1
    assert counts["groups_now"] == 0

    for frame in frames.values():
        assert "cluster" in frame.columns

    # widget -> its rows (a filter's: those of every query it makes, one per dataset)
    values: dict[str, list[Any]] = {}
    for widget in widgets(doc):
        rows: list[Any] = []
        for query in widget["queries"]:
            df = frames[query["query"]["datasetName"]]
            fields = query["query"]["fields"]
            for f in fields:
                for column in re.findall(r"`(\w+)`", f["expression"]):
                    assert column in df.columns, f"{widget['name']}: {column} is not in its dataset"
            if query["query"]["disaggregated"]:
                exprs = [f"{f['expression']} AS {f['name']}" for f in fields]
                rows += df.selectExpr(*exprs).collect()
                continue
            keys = [
                F.expr(f["expression"]).alias(f["name"])
                for f in fields
                if PLAIN.match(f["expression"])
            ]
            aggregates = [
                F.expr(f["expression"]).alias(f["name"])
                for f in fields
                if not PLAIN.match(f["expression"])
            ]
            if not aggregates:
                rows += df.select(*keys).distinct().collect()
            elif keys:
                rows += df.groupBy(*keys).agg(*aggregates).collect()
            else:
                rows += df.agg(*aggregates).collect()
        values[widget["name"]] = rows
    assert values["open_alerts_count"][0]["open_alerts"] == 1
    assert values["groups_count"][0]["groups"] == 0
    assert values["open_alerts_table"][0]["subject"] == "payments"
    assert values["open_alerts_table"][0]["cluster"] == "east"
    # one series per group of a cluster, not the two clusters' rebalances added up
    assert sorted((r["cluster_group"], r["rebalances"]) for r in values["rebalances_per_hour"]) == [
        ("east/payments", 3),
        ("west/payments", 5),
    ]
    assert {r["cluster"] for r in values["consumer_groups_cluster_filter"]} == {"east", "west"}
    assert {r["cluster"] for r in values["transactions_alerts_cluster_filter"]} == {"east"}
