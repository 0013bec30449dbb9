"""partition_lag computed in the executors (``offsetscope.pipelines.lag.lag_frame``): the rows
the driver-side ``lag_table`` gives, typed as the table, from the texts ``fold_state`` keeps,
with data-record times read by the executors from a data log directory."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from offsetscope.config import QualityConfig
from offsetscope.history.lag import Position
from offsetscope.history.rows import EndOffsetSample
from offsetscope.pipelines import lag
from offsetscope.quality import expressions, suites
from offsetscope.quality.validate import FAILED, validate
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
    got = expressions.drop_marks(frame).toArrow().to_pylist()

    def key(r: dict[str, object]) -> tuple[object, ...]:
        return (r["topic"], r["partition"], r["group_id"])

    assert sorted(got, key=key) == sorted(expected, key=key)
    assert {r["group_id"] for r in got} == {"behind", "far-behind", "caught-up"}
    assert {r["lag_method"] for r in got if r["group_id"] != "caught-up"} == {"exact"}
    typed = writes.table_frame(
        spark, "partition_lag", writes.ms_table("partition_lag", table, cluster="default")
    )
    assert [(f.name, f.dataType) for f in expressions.drop_marks(frame).schema] == [
        (f.name, f.dataType) for f in typed.schema
    ]
    # Each row says whether its key repeats; here none does.
    mark = expressions.mark_column(suites.unique(lag.KEY))  # the name the gate looks for
    assert mark == lag.KEY_MARK
    assert frame.columns[-1] == mark
    assert not frame.where(f"`{mark}`").count()


def test_two_inputs_of_one_partition_are_refused(spark: SparkSession) -> None:
    one = lag.LagInput("orders", 0, lag.positions_to_json(lag.PartitionPositions()), "[]", "[]")
    with pytest.raises(ValueError, match="two lag inputs for orders-0"):
        lag.lag_frame(spark, [one, one], read_committed_groups=[])


def _inputs(partitions: int, groups: int, samples: int) -> list[lag.LagInput]:
    out = []
    for partition in range(partitions):
        positions = lag.update_positions(
            lag.PartitionPositions(),
            [Position(f"g{g}", 10 * g, T0 + g, g) for g in range(groups)],
        )
        sampled = [
            EndOffsetSample("orders", partition, 0, 500, -1, T0 + 60_000 + i * 1_000)
            for i in range(samples)
        ]
        out.append(
            lag.LagInput(
                "orders",
                partition,
                lag.positions_to_json(positions),
                "[]",
                lag.samples_to_json(sampled, keep=None),
            )
        )
    return out


@pytest.mark.parametrize("quarantine", [True, False])
def test_the_gate_reads_the_marks_instead_of_computing_the_rows_again(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch, quarantine: bool
) -> None:
    inputs = _inputs(partitions=6, groups=40, samples=3)
    # One partition's positions name a group twice (hand-made: update_positions never does):
    # its three samples give three keys twice each.
    tag, groups, *rest = json.loads(inputs[2].positions)
    inputs[2] = dataclasses.replace(
        inputs[2],
        positions=json.dumps([tag, [*groups, groups[7]], *[[*c, c[7]] for c in rest]]),
    )
    frame = lag.lag_frame(spark, inputs, read_committed_groups=[], cluster="default")
    assert frame.rdd.getNumPartitions() > 1
    settings = QualityConfig(quarantine_failed_rows=quarantine)
    plain = expressions.drop_marks(frame)
    ge_good, ge_failed, ge_result = validate(plain, "partition_lag", 7, settings=settings)
    assert (ge_result.evaluated_rows, ge_result.failed_rows) == (6 * 40 * 3 + 3, 6)

    monkeypatch.setattr(expressions, "repeats", lambda *_: pytest.fail("a repeats job ran"))
    observed = expressions.observe_frame(frame, "partition_lag", 7, settings=settings)
    assert observed.good.columns == plain.columns
    good = observed.good.toArrow()
    result = observed.result()
    assert (result.evaluated_rows, result.failed_rows) == (ge_result.evaluated_rows, 6)
    assert result.failed_expectations == ge_result.failed_expectations
    assert good.num_rows == ge_good.count()
    failed = observed.failed().toArrow()
    assert failed.column_names == [*plain.columns, FAILED]
    assert failed.column("group_id").to_pylist() == [groups[7]] * 6
    assert ge_failed.count() == 6
    assert not any(c.startswith("__") for c in good.column_names)
    # The gate before a write (a batch that may be a replay) reads the marks too.
    gated = expressions.validate_frame(frame, "partition_lag", 7, settings=settings)
    try:
        assert (gated.result.evaluated_rows, gated.result.failed_rows) == (
            ge_result.evaluated_rows,
            6,
        )
        assert gated.good.columns == plain.columns
    finally:
        gated.release()
