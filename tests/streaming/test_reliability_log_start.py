"""Offsets gone before the query read them: a cold start on a log whose oldest segments
retention already deleted, and a checkpoint that points below the log start offset (segments
deleted that the query had not read yet). Either way the query goes on from the log start offset
and the audit row of the batch says how many offsets it did not see -- deliberately, never
silently (``docs/reliability.md``).
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from run_config import segment_run_config

from offsetscope import config
from offsetscope.pipelines import ingest
from offsetscope.protocol.log import LogConfig, PartitionWriter, RecordSpec
from offsetscope.protocol.records import OFFSETS_TOPIC
from offsetscope.spark import tables as catalogue
from offsetscope.verify import corpus

pytestmark = [pytest.mark.spark, pytest.mark.streaming]


def _delete_below(pdir: Path, base: int) -> None:
    """Retention: remove every segment (and its indexes) below ``base``."""
    for f in pdir.iterdir():
        if f.suffix in (".log", ".index", ".timeindex") and int(f.stem) < base:
            f.unlink()


def _append(writer: PartitionWriter, rng: random.Random, batches: int) -> None:
    for _ in range(batches):
        specs = []
        for _ in range(4):
            at = corpus.START_MS + writer.next_offset
            key, value = corpus.plausible_commit(rng, at)
            specs.append(RecordSpec(key, value, at))
        writer.append(specs)
    writer.flush()


def test_offsets_deleted_before_the_query_read_them_are_audited(
    spark: SparkSession, offsetscope_config: config.Config, tmp_path: Path
) -> None:
    rng = random.Random(4)
    pdir = tmp_path / "logs" / f"{OFFSETS_TOPIC}-0"
    tag = uuid.uuid4().hex[:8]
    cfg = segment_run_config(offsetscope_config, f"t_logstart_{tag}", tmp_path)
    query = f"logstart_{tag}"
    try:
        with PartitionWriter(pdir, config=LogConfig(segment_bytes=4096)) as writer:
            _append(writer, rng, 16)
            # Cold start: the oldest segment is gone before the query ever ran.
            cold_start = writer.segment_base_offsets[1]
            _delete_below(pdir, cold_start)
            read_up_to = writer.next_offset
            ingest.run(spark, cfg, query_name=query, log_dir=str(pdir.parent))
            _append(writer, rng, 40)
            # Retention deletes the oldest segments, including ones the query never read.
            bases = writer.segment_base_offsets
            log_start = next(b for b in bases if b > read_up_to + 20)
            _delete_below(pdir, log_start)
            end = writer.next_offset
        ingest.run(spark, cfg, query_name=query, log_dir=str(pdir.parent))

        audit = spark.table(catalogue.table_name(cfg, "batch_audit")).orderBy("batch_id").collect()
        assert sum(r["offsets_not_seen"] for r in audit) == cold_start + log_start - read_up_to
        first, skipped = [r for r in audit if r["offsets_not_seen"]]
        assert [p["first_offset"] for p in first["source_partitions"]] == [cold_start]
        assert first["offsets_not_seen"] == cold_start
        (part,) = skipped["source_partitions"]
        assert (part["first_offset"], part["offsets_not_seen"]) == (
            log_start,
            log_start - read_up_to,
        )
        offsets = sorted(
            r["record_offset"]
            for r in spark.table(catalogue.table_name(cfg, "offset_commits")).collect()
        )
        assert offsets == [*range(cold_start, read_up_to), *range(log_start, end)]
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {cfg.storage.schema} CASCADE")
