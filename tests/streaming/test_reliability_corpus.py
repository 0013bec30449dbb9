"""The hostile corpus (:mod:`offsetscope.verify.corpus`) through the ingest pipeline from a segment
directory: the query finishes, the audit accounts for every record (events + quarantined +
unknown = input), every record lands in the table of the kind the reference decoder gives it,
and every quarantined row names its error class, field path and byte offset.

5,000 records: truncations at every length, bit flips, wrong versions, unknown types, lengths
claiming gigabytes, negative counts, invalid UTF-8, deep records, and valid records whose random
field values include int64 extremes (timestamps outside Spark's range, generation jumps of 2^31).
``make corpus`` runs the same check at 100,000 records.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import corpus_checks
import pytest
from pyspark.sql import SparkSession
from run_config import segment_run_config

from offsetscope import config
from offsetscope.pipelines import ingest
from offsetscope.spark import tables as catalogue
from offsetscope.verify import corpus

pytestmark = [pytest.mark.spark, pytest.mark.streaming]

RECORDS = 5_000
SEED = 5

# kind -> (silver/gold table, its internal-topic column or None, partition column, offset column)
HOMES = {
    "offset_commit": ("offset_commits", None, "record_partition", "record_offset"),
    "group_metadata": (
        "group_metadata_events",
        "internal_topic",
        "record_partition",
        "record_offset",
    ),
    "consumer_group": (
        "consumer_group_events",
        "internal_topic",
        "record_partition",
        "record_offset",
    ),
    "transaction_log": (
        "transaction_log_events",
        "internal_topic",
        "record_partition",
        "record_offset",
    ),
}


@dataclass(frozen=True)
class Run:
    cfg: config.Config
    manifest: list[dict[str, Any]]
    reports: list[ingest.BatchReport]


@pytest.fixture(scope="module")
def run(
    spark: SparkSession,
    offsetscope_config: config.Config,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Run]:
    root = tmp_path_factory.mktemp("corpus")
    log_dir = root / "logs"
    entries = corpus.generate(RECORDS, seed=SEED)
    assert corpus.check_invariants(entries) == []
    corpus.write_corpus(entries, log_dir, seed=SEED)
    manifest = corpus.load_manifest(log_dir).to_pylist()
    tag = uuid.uuid4().hex[:8]
    cfg = segment_run_config(offsetscope_config, f"t_corpus_{tag}", root)
    try:
        reports = ingest.run(spark, cfg, query_name=f"corpus_{tag}", log_dir=str(log_dir))
        yield Run(cfg, manifest, reports)
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {cfg.storage.schema} CASCADE")


def _rows(spark: SparkSession, cfg: config.Config, logical: str, *columns: str) -> list[Any]:
    return spark.table(catalogue.table_name(cfg, logical)).select(*columns).collect()


def test_the_audit_accounts_for_every_record(spark: SparkSession, run: Run) -> None:
    expected = Counter(r["expected_kind"] for r in run.manifest)
    audit = _rows(spark, run.cfg, "batch_audit", "rows_in", "events", "quarantined", "unknown")
    assert len(audit) == len(run.reports) >= 1
    assert sum(r["rows_in"] for r in audit) == RECORDS
    for r in audit:
        assert r["events"] + r["quarantined"] + r["unknown"] == r["rows_in"]
    assert sum(r["quarantined"] for r in audit) == expected["error"]
    assert sum(r["unknown"] for r in audit) == expected["unknown"]
    assert sum(r["events"] for r in audit) == RECORDS - expected["error"] - expected["unknown"]
    raw = _rows(spark, run.cfg, "raw_records", "topic", "partition", "offset")
    assert len(raw) == RECORDS
    assert {(r[0], r[1], r[2]) for r in raw} == {
        (m["topic"], m["partition"], m["offset"]) for m in run.manifest
    }


def _held_back(spark: SparkSession, cfg: config.Config, logical: str) -> list[dict[str, Any]]:
    """The rows of ``logical`` that the quality gate kept out of it, each naming its checks."""
    rows = spark.sql(
        f"SELECT row_json, failed_expectations FROM {cfg.storage.schema}.quality_quarantine "
        f"WHERE table_name = '{logical}'"
    ).collect()
    assert all(r["failed_expectations"] for r in rows)
    return [json.loads(r["row_json"]) for r in rows]


def test_every_event_lands_in_the_table_of_its_kind(spark: SparkSession, run: Run) -> None:
    """...or, if its field values are implausible (a mutated offset or timestamp), in
    ``quality_quarantine`` under that table's name, once: together they hold every event."""
    held_back = 0
    for kind, (logical, topic_col, partition_col, offset_col) in HOMES.items():
        columns = [c for c in (topic_col, partition_col, offset_col) if c]
        found = Counter(
            (r[0], r[1], r[2]) if topic_col else (corpus.OFFSETS_TOPIC, r[0], r[1])
            for r in _rows(spark, run.cfg, logical, *columns)
        )
        for row in _held_back(spark, run.cfg, logical):
            held_back += 1
            topic = row[topic_col] if topic_col else corpus.OFFSETS_TOPIC
            found[(topic, row[partition_col], row[offset_col])] += 1
        expected = Counter(
            (m["topic"], m["partition"], m["offset"])
            for m in run.manifest
            if m["expected_kind"] == kind
        )
        assert found == expected, kind
        assert expected or kind == "consumer_group", kind
    # The gate did hold rows back: mutated field values are what it is for.
    assert held_back > 0


def test_every_quarantined_row_names_its_reason(spark: SparkSession, run: Run) -> None:
    rows = corpus_checks.quarantine_rows(spark, run.cfg)
    assert corpus_checks.found_outcomes(rows) == corpus_checks.expected_outcomes(run.manifest)
    for r in rows:
        if r["kind"] == "error":
            assert r["error_class"]
            assert r["field_path"] is not None
            assert r["byte_offset"] is not None
            assert r["disposition"] == catalogue.QUARANTINED
        else:
            assert r["disposition"] == catalogue.SKIPPED_UNKNOWN
    classes = Counter(r["error_class"] for r in rows if r["kind"] == "error")
    assert len(classes) >= 3  # truncations, bad lengths, bad UTF-8 ... are told apart
