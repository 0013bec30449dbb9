"""A log directory as a broker crash leaves it, through the ingest pipeline: a CRC mismatch, a
batch whose records do not parse, a torn tail and lost framing in sealed segments, a gzip bomb,
and a torn tail in the active segment (:func:`offsetscope.verify.corpus.write_crash_log`).

Every damaged spot of a sealed segment is reported as a quarantine row (error class, byte
offset, the bytes kept) at the first offset it hides, every intact record is read, the audit
adds up, and the active segment's torn tail is where the log ends (the broker truncates it on
recovery), neither read nor reported.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from run_config import segment_run_config

from offsetscope import config
from offsetscope.pipelines import ingest
from offsetscope.protocol.codec import decode_record
from offsetscope.protocol.records import OFFSETS_TOPIC
from offsetscope.spark import tables as catalogue
from offsetscope.verify import corpus

pytestmark = [pytest.mark.spark, pytest.mark.streaming]


@dataclass(frozen=True)
class Run:
    cfg: config.Config
    crash: corpus.CrashLog
    reports: list[ingest.BatchReport]


@pytest.fixture(scope="module")
def run(
    spark: SparkSession,
    offsetscope_config: config.Config,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Run]:
    root = tmp_path_factory.mktemp("crash")
    crash = corpus.write_crash_log(root / "logs", seed=3)
    tag = uuid.uuid4().hex[:8]
    cfg = segment_run_config(offsetscope_config, f"t_crash_{tag}", root)
    try:
        reports = ingest.run(spark, cfg, query_name=f"crash_{tag}", log_dir=str(crash.root))
        yield Run(cfg, crash, reports)
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {cfg.storage.schema} CASCADE")


def _rows(spark: SparkSession, cfg: config.Config, logical: str) -> list[Any]:
    return spark.table(catalogue.table_name(cfg, logical)).collect()


def _partition(dirname: str) -> int:
    return int(Path(dirname).name.rsplit("-", 1)[1])


def test_every_damaged_spot_of_a_sealed_segment_is_a_quarantine_row(
    spark: SparkSession, run: Run
) -> None:
    rows = _rows(spark, run.cfg, "quarantine")
    found = {(r["record_partition"], r["record_offset"]): r for r in rows}
    reported = [d for d in run.crash.damage if d.error_class is not None]
    assert {d.kind for d in reported} == {
        "crc",
        "corrupt_records",
        "torn_sealed",
        "lost_framing",
        "bomb",
    }
    assert len(rows) == len(reported)
    for d in reported:
        r = found[(_partition(d.partition_dir), d.first_offset)]
        assert (r["kind"], r["error_class"], r["disposition"]) == (
            "error",
            d.error_class,
            catalogue.QUARANTINED,
        ), d
        assert r["internal_topic"] == OFFSETS_TOPIC
        assert r["byte_offset"] is not None
        assert r["byte_offset"] >= 0
        assert r["value"], d  # the unreadable bytes are kept (bounded) for inspection


def test_the_valid_rest_is_read(spark: SparkSession, run: Run) -> None:
    commits = {
        (r["record_partition"], r["record_offset"]): r
        for r in _rows(spark, run.cfg, "offset_commits")
    }
    expected = {(_partition(name), offset): kv for (name, offset), kv in run.crash.good.items()}
    assert set(commits) == set(expected)
    for where, (key, value) in expected.items():
        record = decode_record(OFFSETS_TOPIC, key, value)
        row = commits[where]
        assert (row["group_id"], row["topic"], row["partition"]) == (
            record.key["group"],
            record.key["topic"],
            record.key["partition"],
        )
        assert row["offset"] == record.value["offset"]


def test_the_active_segments_torn_tail_is_where_the_log_ends(spark: SparkSession, run: Run) -> None:
    (torn,) = [d for d in run.crash.damage if d.kind == "torn_active"]
    partition = _partition(torn.partition_dir)
    raw = [r for r in _rows(spark, run.cfg, "raw_records") if r["partition"] == partition]
    assert max(r["offset"] for r in raw) < torn.first_offset


def test_the_audit_adds_up(spark: SparkSession, run: Run) -> None:
    audit = _rows(spark, run.cfg, "batch_audit")
    reported = sum(1 for d in run.crash.damage if d.error_class is not None)
    assert sum(r["rows_in"] for r in audit) == len(run.crash.good) + reported
    assert sum(r["quarantined"] for r in audit) == reported
    assert sum(r["unknown"] for r in audit) == 0
    for r in audit:
        assert r["events"] + r["quarantined"] + r["unknown"] == r["rows_in"]
    assert len(_rows(spark, run.cfg, "raw_records")) == sum(r["rows_in"] for r in audit)
