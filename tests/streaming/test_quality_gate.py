"""The quality gate inside the ingest pipeline: every gold table's great-expectations suite runs
on each micro-batch before the write; rows that break it go to ``quality_quarantine`` (with the
checks they broke) instead of the table, and ``quality_results`` keeps one row per table and
batch. The input is a small log directory of offset commits, two of them implausible: a
negative offset and a commit timestamp from 2005, read in two micro-batches. The first batch
after a start is gated before its write (it may be a replay); the second follows a batch the
query completed and is counted by its write, its failing rows quarantined after it
(``offsetscope.pipelines.writer``): both ways decide alike."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from offsetscope import config
from offsetscope.pipelines import ingest
from offsetscope.protocol.codec import encode_record, make_record
from offsetscope.protocol.log import PartitionWriter, RecordSpec
from offsetscope.protocol.records import OFFSETS_TOPIC
from offsetscope.spark import tables as catalogue

pytestmark = [pytest.mark.spark, pytest.mark.streaming]

T0 = 1_700_000_000_000
OFFSETS = {0: 5, 1: -7, 2: 9}  # partition -> committed offset
STAMPS = {0: T0, 1: T0 + 1, 2: 1_104_537_600_000}  # 2005-01-01: before any Kafka


def _write_log(root: Path) -> None:
    with PartitionWriter(root / f"{OFFSETS_TOPIC}-0") as writer:
        for p, offset in OFFSETS.items():
            key, value = encode_record(
                make_record(
                    OFFSETS_TOPIC,
                    1,
                    {"group": "g", "topic": "orders", "partition": p},
                    {
                        "offset": offset,
                        "leaderEpoch": -1,
                        "metadata": "",
                        "commitTimestamp": STAMPS[p],
                    },
                    3,
                )
            )
            writer.append([RecordSpec(key, value, T0 + p)])


@pytest.fixture(scope="module")
def ingested(
    spark: SparkSession,
    offsetscope_config: config.Config,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[config.Config]:
    root = tmp_path_factory.mktemp("quality_gate")
    _write_log(root / "logs")
    # p0 and p1, then p2: one implausible commit in each batch
    cfg = config.with_segment_source(offsetscope_config, root / "logs", max_records_per_trigger=2)
    cfg = config.with_storage(
        cfg, schema=f"t_quality_{uuid.uuid4().hex[:8]}", checkpoint_dir=root / "checkpoints"
    )
    cfg = config.with_pipeline(cfg, trigger="available_now", sample_end_offsets=False)
    catalogue.ensure_tables(spark, cfg)
    ingest.run(spark, cfg, query_name="quality_gate")
    try:
        yield cfg
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {cfg.storage.schema} CASCADE")


def test_only_the_plausible_commit_reaches_the_table(
    spark: SparkSession, ingested: config.Config
) -> None:
    table = catalogue.table_name(ingested, "offset_commits")
    rows = spark.sql(f"SELECT `partition`, `offset` FROM {table}").collect()
    assert {(r["partition"], r["offset"]) for r in rows} == {(0, 5)}


def test_the_implausible_commits_are_quarantined_with_the_checks_they_broke(
    spark: SparkSession, ingested: config.Config
) -> None:
    schema = ingested.storage.schema
    rows = spark.sql(
        f"SELECT row_json, failed_expectations FROM {schema}.quality_quarantine "
        "WHERE table_name = 'offset_commits'"
    ).collect()
    broke = {json.loads(r["row_json"])["partition"]: set(r["failed_expectations"]) for r in rows}
    assert set(broke) == {1, 2}
    assert broke[1] == {"at_least_0:offset"}
    assert broke[2] == {"plausible_time:commit_timestamp"}


def test_results_name_the_failed_suite_once_per_batch(
    spark: SparkSession, ingested: config.Config
) -> None:
    schema = ingested.storage.schema
    results = spark.sql(
        f"SELECT table_name, batch_id, success, evaluated_rows, failed_rows "
        f"FROM {schema}.quality_results WHERE table_name = 'offset_commits' ORDER BY batch_id"
    ).collect()
    assert [
        (r["batch_id"], r["success"], r["evaluated_rows"], r["failed_rows"]) for r in results
    ] == [(0, False, 2, 1), (1, False, 1, 1)]
