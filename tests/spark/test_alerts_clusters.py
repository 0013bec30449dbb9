"""The alerts job over two clusters: each evaluated on its own rows, one MERGE for both.

The same group id storms in clusters ``east`` (the default cluster, ``[sources] cluster``) and
``west``: two alerts, each with its cluster; east's keeps the id a single-cluster deployment
gave it, west's hashes its name. An override keyed ``west/<group>`` silences west only.
"""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from generation_rows import T, generation
from pyspark.sql import SparkSession

from offsetscope import config
from offsetscope.alerts import tables as alert_tables
from offsetscope.alerts.model import REBALANCE_STORM, AlertRow, alert_id
from offsetscope.alerts.notify import LogNotifier
from offsetscope.alerts.runner import AlertsRunner, ChangedKeys
from offsetscope.clock import VirtualClock
from offsetscope.config import StormOverride
from offsetscope.quality import tables as qtables
from offsetscope.spark import tables as catalogue
from offsetscope.spark import writes

pytestmark = pytest.mark.spark

NOW = VirtualClock(T + 3_600_000)
GROUP = "payments"


STORM = [
    generation(GROUP, g, g - 1 if g > 1 else None) for g in range(1, 9)
]  # 8 rebalances in 8 s: over 5 in 10 minutes


@pytest.fixture
def cfg(offsetscope_config: config.Config) -> config.Config:
    base = offsetscope_config
    source = config.ClusterConfig(
        kind=base.sources.kind, kafka=base.sources.kafka, segments=base.sources.segments
    )
    only_storms = {
        name: dataclasses.replace(getattr(base.alerts, name), enabled=False)
        for name in (
            "member_churn",
            "rebalance_stuck",
            "lag_stall",
            "lag_threshold",
            "stuck_lso",
            "data_loss",
            "hanging_transaction",
            "quality",
        )
    }
    return dataclasses.replace(
        base,
        storage=dataclasses.replace(base.storage, schema=f"alerts_{uuid.uuid4().hex[:8]}"),
        sources=dataclasses.replace(base.sources, cluster="east"),
        clusters={"east": source, "west": source},
        alerts=dataclasses.replace(base.alerts, **only_storms),
    )


def _write_storms(spark: SparkSession, cfg: config.Config) -> None:
    catalogue.ensure_tables(spark, cfg, ["group_generations"])
    for batch, cluster in enumerate(("east", "west")):
        df = writes.rows_frame(spark, "group_generations", STORM, cluster=cluster)
        writes.append(df, cfg, "group_generations", query_name="t", batch_id=batch)


def _stored(spark: SparkSession, cfg: config.Config) -> list[AlertRow]:
    table = spark.table(qtables.qualified_name(cfg, alert_tables.ALERTS))
    return sorted(qtables.rows_of(table, AlertRow), key=lambda r: r.cluster or "")


CHANGED = ChangedKeys(groups=frozenset({("east", GROUP), ("west", GROUP)}))


def test_each_cluster_raises_its_own_alert_in_one_merge(
    spark: SparkSession, cfg: config.Config
) -> None:
    _write_storms(spark, cfg)
    runner = AlertsRunner(cfg, notifiers=[LogNotifier(clock=NOW)], clock=NOW)
    evaluation = runner.evaluate(spark, 0, CHANGED, as_of=T + 60_000)
    assert evaluation is not None
    east, west = _stored(spark, cfg)
    assert (east.cluster, west.cluster) == ("east", "west")
    assert {east.rule, west.rule} == {REBALANCE_STORM}
    assert east.subject == west.subject == GROUP
    # the default cluster's id is the one a single-cluster deployment gave the alert
    assert east.alert_id == alert_id(REBALANCE_STORM, "group", GROUP, "", east.episode_start)
    assert west.alert_id == alert_id(
        REBALANCE_STORM, "group", GROUP, "", west.episode_start, "west"
    )
    versions = spark.sql(
        f"DESCRIBE HISTORY {qtables.qualified_name(cfg, alert_tables.ALERTS)}"
    ).where("operation = 'MERGE'")
    assert versions.count() == 1  # both clusters' rows in one commit

    # A replay of the batch writes nothing again; a later evaluation with no change keeps both.
    runner.evaluate(spark, 0, CHANGED, as_of=T + 60_000)
    runner.evaluate(spark, 1, ChangedKeys(), as_of=T + 120_000)
    assert [(r.alert_id, r.status) for r in _stored(spark, cfg)] == [
        (east.alert_id, "open"),
        (west.alert_id, "open"),
    ]
    outcomes = spark.table(qtables.qualified_name(cfg, alert_tables.ALERT_NOTIFICATIONS))
    runner.close(spark)
    assert {r["cluster"] for r in outcomes.collect()} == {"east", "west"}


def test_an_override_for_one_clusters_group_leaves_the_other_alone(
    spark: SparkSession, cfg: config.Config
) -> None:
    storm = dataclasses.replace(
        cfg.alerts.rebalance_storm, groups={f"west/{GROUP}": StormOverride(enabled=False)}
    )
    cfg = dataclasses.replace(cfg, alerts=dataclasses.replace(cfg.alerts, rebalance_storm=storm))
    _write_storms(spark, cfg)
    runner = AlertsRunner(cfg, notifiers=[LogNotifier(clock=NOW)], clock=NOW)
    runner.evaluate(spark, 0, CHANGED, as_of=T + 60_000)
    runner.close(spark)
    assert [(r.cluster, r.subject) for r in _stored(spark, cfg)] == [("east", GROUP)]


def test_a_compaction_moves_no_key_and_a_dropped_state_does(spark: SparkSession) -> None:
    from offsetscope.alerts.runner import moved_keys

    columns = "cluster string, fold string, key string, updated_batch_id bigint"
    changes = spark.createDataFrame(
        [
            ("east", "group", "new", 9, "insert"),
            ("east", "group", "kept", 3, "delete"),  # a superseded version, compacted
            ("east", "group", "gone", 4, "delete"),  # its last state: dropped by a redecode
            ("east", "group", "updated", 5, "update_preimage"),
            ("east", "group", "updated", 6, "update_postimage"),
        ],
        f"{columns}, _change_type string",
    )
    states = spark.createDataFrame(
        [
            ("east", "group", "new", 9),
            ("east", "group", "kept", 8),
            ("east", "group", "updated", 6),
        ],
        columns,
    )
    moved = sorted(tuple(r) for r in moved_keys(changes, states).collect())
    assert moved == [
        ("east", "group", "gone", 4),
        ("east", "group", "new", 9),
        ("east", "group", "updated", 6),
    ]
