"""Two clusters in one ingest query: the same scenario of the bundled coordinator, simulated with
two seeds into two log directories (``[clusters.east]``, ``[clusters.west]``), has the same group
ids and transactional ids in both clusters with other generations, offsets and outcomes. One
query reads both; every table keeps each cluster's rows apart, each matching its own truth.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from offsetscope import config
from offsetscope.pipelines import ingest
from offsetscope.pipelines import state as st
from offsetscope.sim.scenarios.run import simulate_to
from offsetscope.spark import sources
from offsetscope.spark import tables as catalogue

pytestmark = [pytest.mark.spark, pytest.mark.streaming]

SEEDS = {"east": 11, "west": 12}


@dataclasses.dataclass(frozen=True)
class Run:
    cfg: config.Config
    logs: dict[str, Path]
    truth: dict[str, list[dict[str, Any]]]


def _two_clusters(base: config.Config, logs: dict[str, Path], root: Path) -> config.Config:
    clusters = {
        name: config.ClusterConfig(
            kind="segments",
            segments=dataclasses.replace(base.sources.segments, log_dir=str(log_dir)),
        )
        for name, log_dir in logs.items()
    }
    cfg = dataclasses.replace(base, clusters=clusters)
    cfg = config.with_storage(
        cfg, schema=f"t_clusters_{uuid.uuid4().hex[:8]}", checkpoint_dir=root / "checkpoints"
    )
    return config.with_pipeline(cfg, trigger="available_now")


@pytest.fixture(scope="module")
def run(
    spark: SparkSession,
    offsetscope_config: config.Config,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Run]:
    root = tmp_path_factory.mktemp("clusters")
    logs = {name: root / name for name in SEEDS}
    truth = {}
    for name, seed in SEEDS.items():
        simulate_to("transactions", out=logs[name], seed=seed)
        lines = (logs[name] / "ground_truth.jsonl").read_text().splitlines()
        truth[name] = [json.loads(line) for line in lines]
    cfg = _two_clusters(offsetscope_config, logs, root)
    reports = ingest.run(spark, cfg, query_name="two_clusters")
    assert reports
    try:
        yield Run(cfg, logs, truth)
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {cfg.storage.schema} CASCADE")


def _rows(spark: SparkSession, cfg: config.Config, logical: str, cluster: str) -> list[Any]:
    table = spark.table(catalogue.table_name(cfg, logical))
    return [r.asDict() for r in table.where(table[catalogue.CLUSTER] == cluster).collect()]


def test_every_row_names_one_of_the_two_clusters(spark: SparkSession, run: Run) -> None:
    for logical, spec in catalogue.CATALOGUE.items():
        if catalogue.CLUSTER not in spec.column_names:
            continue
        found = {
            r[0]
            for r in spark.table(catalogue.table_name(run.cfg, logical))
            .select(catalogue.CLUSTER)
            .distinct()
            .collect()
        }
        # The deployment's own states (the query's lease, the clusters it reads) are no
        # cluster's.
        allowed = {*SEEDS, st.DEPLOYMENT} if logical == st.STATE else set(SEEDS)
        assert found <= allowed, logical


def test_each_cluster_has_exactly_its_own_records(spark: SparkSession, run: Run) -> None:
    for name in SEEDS:
        one = config.for_cluster(run.cfg, name)
        expected = sources.read_segments(spark, one).select("topic", "partition", "offset")
        got = spark.table(catalogue.table_name(run.cfg, "raw_records")).where(f"cluster = '{name}'")
        got = got.select("topic", "partition", "offset")
        assert got.count() == expected.count()
        assert got.exceptAll(expected).count() == 0


def test_the_same_ids_in_two_clusters_are_two_histories(spark: SparkSession, run: Run) -> None:
    """Each cluster's transactions and generations are its own truth's, though both clusters
    use the same transactional ids and group ids."""
    ids = {
        name: {t["transactional_id"] for t in truth if t["type"] == "TxnOutcome"}
        for name, truth in run.truth.items()
    }
    assert ids["east"] & ids["west"]  # the ids overlap
    for name, truth in run.truth.items():
        expected = Counter(
            (t["transactional_id"], t["outcome"]) for t in truth if t["type"] == "TxnOutcome"
        )
        got = Counter(
            (r["transactional_id"], r["outcome"])
            for r in _rows(spark, run.cfg, "transactions", name)
            if r["outcome"] != "ongoing"
        )
        assert got == expected, name
        stored = {
            (t["group_id"], t["generation_id"]): t["leader"]
            for t in truth
            if t["type"] == "AssignmentStored"
        }
        generations = {
            (r["group_id"], r["generation"]): r["leader"]
            for r in _rows(spark, run.cfg, "group_generations", name)
            if r["member_count"] > 0
        }
        assert generations == stored, name
    groups = Counter(
        r["group_id"] for r in catalogue.current_rows(spark, run.cfg, "groups_current").collect()
    )
    assert any(n == 2 for n in groups.values())  # one row per cluster for a shared id


def test_fold_states_and_views_are_per_cluster(spark: SparkSession, run: Run) -> None:
    folds = spark.table(catalogue.table_name(run.cfg, "fold_state"))
    per_key = Counter((r["fold"], r["key"]) for r in folds.where("fold = 'group'").collect())
    assert per_key
    assert all(n == 2 for n in per_key.values())
    overview = spark.table(catalogue.view_name(run.cfg, "group_overview")).collect()
    assert {r["cluster"] for r in overview} == set(SEEDS)
    assert len(overview) == len({(r["cluster"], r["group_id"]) for r in overview})


def test_a_checkpoint_of_other_clusters_is_refused(spark: SparkSession, run: Run) -> None:
    one = dataclasses.replace(run.cfg, clusters={"east": run.cfg.clusters["east"]})
    with pytest.raises(config.InvalidConfigError, match=r"east, west.*query_name"):
        ingest.start(spark, one, query_name="two_clusters")
