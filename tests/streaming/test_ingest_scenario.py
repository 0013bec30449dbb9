"""A catalogue scenario of the bundled coordinator through the ingest pipeline.

The ``transactions`` scenario (an exactly-once pipeline whose transactions commit, abort, time
out and get fenced, its consumer group rebalancing as an instance freezes) is simulated into a
log directory with its ground truth, then ingested with the segment source. The tables must
hold what the truth says happened: every transaction outcome, every stored generation, and
the commits the markers resolved.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql import SparkSession

from offsetscope import config
from offsetscope.pipelines import ingest
from offsetscope.sim.scenarios.run import simulate_to
from offsetscope.spark import tables as catalogue

pytestmark = [pytest.mark.spark, pytest.mark.streaming]


@pytest.fixture(scope="module")
def scenario(
    spark: SparkSession,
    offsetscope_config: config.Config,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[config.Config, list[dict[str, Any]]]]:
    root = tmp_path_factory.mktemp("scenario")
    log_dir = root / "logs"
    simulate_to("transactions", out=log_dir)
    truth = [json.loads(line) for line in (log_dir / "ground_truth.jsonl").read_text().splitlines()]
    base = offsetscope_config
    cfg = dataclasses.replace(
        base,
        sources=dataclasses.replace(
            base.sources,
            kind="segments",
            segments=dataclasses.replace(base.sources.segments, log_dir=str(log_dir)),
        ),
        storage=dataclasses.replace(
            base.storage,
            schema=f"t_scenario_{uuid.uuid4().hex[:8]}",
            checkpoint_dir=str(root / "checkpoints"),
        ),
        pipeline=dataclasses.replace(base.pipeline, trigger="available_now"),
    )
    reports = ingest.run(spark, cfg, query_name="scenario")
    assert reports
    try:
        yield cfg, truth
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {cfg.storage.schema} CASCADE")


def _rows(spark: SparkSession, cfg: config.Config, logical: str) -> list[dict[str, Any]]:
    return [r.asDict() for r in spark.table(catalogue.table_name(cfg, logical)).collect()]


def test_every_record_is_decoded_and_nothing_is_quarantined(
    spark: SparkSession, scenario: tuple[config.Config, list[dict[str, Any]]]
) -> None:
    cfg, _ = scenario
    audit = _rows(spark, cfg, "batch_audit")
    assert sum(r["rows_in"] for r in audit) == len(_rows(spark, cfg, "raw_records"))
    assert sum(r["quarantined"] + r["unknown"] for r in audit) == 0
    assert _rows(spark, cfg, "quarantine") == []
    assert sum(r["rows_by_kind"]["control"] for r in audit) > 0  # markers seen


def test_transaction_outcomes_match_the_truth(
    spark: SparkSession, scenario: tuple[config.Config, list[dict[str, Any]]]
) -> None:
    cfg, truth = scenario
    expected = Counter(
        (t["transactional_id"], t["outcome"]) for t in truth if t["type"] == "TxnOutcome"
    )
    got = Counter(
        (r["transactional_id"], r["outcome"])
        for r in _rows(spark, cfg, "transactions")
        if r["outcome"] != "ongoing"
    )
    assert got == expected
    timed_out = {
        (t["transactional_id"], t["producer_epoch"])
        for t in truth
        if t["type"] == "TxnOutcome" and t["timed_out"]
    }
    assert timed_out  # the scenario has a hanging transaction
    rows_timed_out = [r for r in _rows(spark, cfg, "transactions") if r["timed_out"]]
    assert len(rows_timed_out) == len(timed_out)


def test_generations_match_the_stored_assignments(
    spark: SparkSession, scenario: tuple[config.Config, list[dict[str, Any]]]
) -> None:
    cfg, truth = scenario
    stored = {
        (t["group_id"], t["generation_id"]): t["leader"]
        for t in truth
        if t["type"] == "AssignmentStored"
    }
    got = {
        (r["group_id"], r["generation"]): r["leader"]
        for r in _rows(spark, cfg, "group_generations")
        if r["member_count"] > 0
    }
    assert got == stored


def test_transactional_commits_are_resolved_by_their_markers(
    spark: SparkSession, scenario: tuple[config.Config, list[dict[str, Any]]]
) -> None:
    cfg, truth = scenario
    completed = Counter(
        t["committed"] for t in truth if t["type"] == "TransactionalOffsetsCompleted"
    )
    commits = [r for r in _rows(spark, cfg, "offset_commits") if r["transactional"]]
    assert all(r["status"] != "pending" for r in commits)
    markers = {r["resolved_by"] for r in commits}
    assert markers <= {"commit_marker", "abort_marker"}
    resolved = Counter(r["status"] for r in commits)
    # One completion per (producer, offsets partition) marker; each covers one or more commits.
    assert resolved["committed"] >= completed[True]
    assert (resolved["aborted"] > 0) == (completed[False] > 0)


def test_a_batch_writes_as_many_files_as_its_partitions_not_one_per_topic_partition(
    spark: SparkSession, scenario: tuple[config.Config, list[dict[str, Any]]]
) -> None:
    """The scenario's records span many partitions of both internal topics; each append of a
    batch still adds at most ``[spark] shuffle_partitions`` files (the source's partitions are
    merged before anything is decoded or written)."""
    cfg, _ = scenario
    spread = {
        (p["topic"], p["partition"])
        for r in _rows(spark, cfg, "batch_audit")
        for p in r["source_partitions"]
    }
    assert len(spread) > cfg.spark.shuffle_partitions  # else the check below proves nothing
    for logical in ("raw_records", "transaction_log_events", "control_records"):
        added = _appended_files(spark, cfg, logical)
        assert added, logical
        assert max(added) <= cfg.spark.shuffle_partitions, (logical, added)
    # Every commit of the scenario is transactional (MERGEd once its marker is known): a batch
    # with no plain commit makes no empty append either.
    assert _appended_files(spark, cfg, "offset_commits") == []


def _appended_files(spark: SparkSession, cfg: config.Config, logical: str) -> list[int]:
    history = spark.sql(f"DESCRIBE HISTORY {catalogue.table_name(cfg, logical)}")
    return [
        int(r["operationMetrics"]["numFiles"])
        for r in history.where("operation = 'WRITE'").collect()
    ]


def test_the_audit_counts_the_lag_rows_the_executors_wrote(
    spark: SparkSession, scenario: tuple[config.Config, list[dict[str, Any]]]
) -> None:
    """partition_lag is computed and appended in the executors, never on the driver, and the
    audit still counts its rows: they add up to the table."""
    cfg, _ = scenario
    audit = _rows(spark, cfg, "batch_audit")
    written = [r["rows_written"].get("partition_lag", 0) for r in audit]
    stored = spark.table(catalogue.table_name(cfg, "partition_lag")).count()
    assert stored > 0
    assert sum(written) == stored
