"""The segment-directory source as a real Spark stream: bounded micro-batches, every record
exactly once while the log grows, and a restarted query resuming from its checkpoint."""

from __future__ import annotations

import dataclasses
import threading
import uuid
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from offsetscope import config
from offsetscope.sim.synthetic import SyntheticLog, Workload
from offsetscope.spark import sources

pytestmark = [pytest.mark.spark, pytest.mark.streaming]

MAX_RECORDS = 150


class Collector:
    """foreachBatch target: what each micro-batch delivered (coordinates and sizes)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.batches: dict[int, list[tuple[str, int, int, bool]]] = {}

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        rows = [
            (r["topic"], r["partition"], r["offset"], r["is_control"])
            for r in df.select("topic", "partition", "offset", "is_control").collect()
        ]
        with self.lock:
            self.batches[batch_id] = rows

    def records(self) -> list[tuple[str, int, int, bool]]:
        return [r for rows in self.batches.values() for r in rows]


def _run(spark: SparkSession, cfg: config.Config, log_dir: Path, checkpoint: Path) -> Collector:
    collector = Collector()
    query = (
        sources.segment_stream(spark, cfg, str(log_dir))
        .writeStream.foreachBatch(collector)
        .queryName(f"segments_{uuid.uuid4().hex[:8]}")
        .option("checkpointLocation", str(checkpoint))
        .start()
    )
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert query.exception() is None
    return collector


def test_segment_stream_delivers_bounded_batches_exactly_once_across_restarts(
    spark: SparkSession, offsetscope_config: config.Config, tmp_path: Path
) -> None:
    cfg = dataclasses.replace(
        offsetscope_config,
        sources=dataclasses.replace(
            offsetscope_config.sources,
            segments=dataclasses.replace(
                offsetscope_config.sources.segments, max_records_per_trigger=MAX_RECORDS
            ),
        ),
    )
    log_dir = tmp_path / "logs"
    checkpoint = tmp_path / "checkpoint"
    log = SyntheticLog(log_dir, Workload())
    try:
        first_truth = log.run(12)
        first_count = first_truth.records
        first = _run(spark, cfg, log_dir, checkpoint)
        assert len(first.records()) == first_count
        assert all(0 < len(rows) <= MAX_RECORDS for rows in first.batches.values())
        assert len(first.batches) >= first_count // MAX_RECORDS
        assert any(control for *_, control in first.records())

        # Nothing new: a restarted query delivers nothing again.
        assert _run(spark, cfg, log_dir, checkpoint).records() == []

        # The log grows; the restarted query delivers exactly the new records.
        second_count = log.run(6).records - first_count
        second = _run(spark, cfg, log_dir, checkpoint)
        assert len(second.records()) == second_count
        assert min(second.batches) > max(first.batches)  # batch ids continue
    finally:
        log.close()

    everything = first.records() + second.records()
    coordinates = [(t, p, o) for t, p, o, _ in everything]
    assert len(set(coordinates)) == len(coordinates)  # no record twice
    per_partition: dict[tuple[str, int], list[int]] = {}
    for topic, partition, offset in coordinates:
        per_partition.setdefault((topic, partition), []).append(offset)
    for offsets in per_partition.values():
        assert sorted(offsets) == list(range(len(offsets)))  # no gap: nothing skipped
