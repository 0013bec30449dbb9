"""partition_lag computed in the executors (``offsetscope.pipelines.lag.lag_frame``): the rows
the driver-side ``lag_table`` gives, typed as the table, from the texts ``fold_state`` keeps,
with data-record times read by the executors from a data log directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from offsetscope.history.lag import Position
from offsetscope.history.rows import EndOffsetSample
from offsetscope.pipelines import lag
from offsetscope.sim.synthetic import SyntheticLog, Workload
from offsetscope.spark import writes

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000


def test_the_executors_compute_the_rows_the_driver_would(
    spark: SparkSession, tmp_path: Path
) -> None:
    workload = Workload(transactional_ids=0, records_per_tick=3, tick_ms=1_000)
    with SyntheticLog(tmp_path, workload) as log:
        log.run(20)
    sampler = lag.SegmentSampler(str(tmp_path), ["__consumer_offsets", "__transaction_state"])
    samples = sampler.sample(["orders"], T0 + 15_500)
    assert samples
    inputs, expected = [], []
    for s in samples:
        # Groups behind (exact times from the segments), caught up, removed, and one whose
        # commit is newer than the sample (no row).
        positions = lag.update_positions(
            lag.PartitionPositions(),
            [
                Position("behind", max(0, s.high_watermark - 5), T0 + 1_000, 1),
                Position("far-behind", 0, T0 + 2_000, 2),
                Position("caught-up", s.high_watermark, T0 + 3_000, 3),
                Position("removed", None, T0 + 4_000, 4),
                Position("later", 1, T0 + 99_000, 5),
            ],
        )
        history = [EndOffsetSample(s.topic, s.partition, 0, s.high_watermark // 2, -1, T0 + 5_000)]
        inputs.append(
            lag.LagInput(
                s.topic,
                s.partition,
                lag.positions_to_json(positions),
                lag.samples_to_json(history),
                lag.samples_to_json([s], keep=None),
            )
        )
        table = lag.lag_table(
            s.topic, s.partition, positions, history, [s], ["behind"], sampler.record_time
        )
        expected.extend(writes.ms_table("partition_lag", table, cluster="default").to_pylist())
    frame = lag.lag_frame(
        spark,
        inputs,
        read_committed_groups=["behind"],
        record_time=sampler.record_reader(),
        cluster="default",
    )
    got = frame.toArrow().to_pylist()

    def key(r: dict[str, object]) -> tuple[object, ...]:
        return (r["topic"], r["partition"], r["group_id"])

    assert sorted(got, key=key) == sorted(expected, key=key)
    assert {r["group_id"] for r in got} == {"behind", "far-behind", "caught-up"}
    assert {r["lag_method"] for r in got if r["group_id"] != "caught-up"} == {"exact"}
    typed = writes.table_frame(
        spark, "partition_lag", writes.ms_table("partition_lag", table, cluster="default")
    )
    assert [(f.name, f.dataType) for f in frame.schema] == [
        (f.name, f.dataType) for f in typed.schema
    ]
