"""The compiled gate (offsetscope.quality.expressions) decides as great-expectations does.

On the same rows, both name the same rows with the same checks and count the same; the compiled
one does it in the executors, with one aggregation back to the driver.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from generation_rows import T
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import TimestampType
from quality_rows import CLEAN, DUPLICATES, NOW, PLANTED

from offsetscope.clock import VirtualClock
from offsetscope.config import QualityConfig
from offsetscope.history.rows import EndOffsetSample, OffsetCommitRow
from offsetscope.quality import expressions, suites
from offsetscope.quality.model import QualityResultRow
from offsetscope.quality.validate import FAILED, bounds, validate
from offsetscope.spark import tables as catalogue
from offsetscope.spark import writes

pytestmark = pytest.mark.spark


def _plain(df: DataFrame) -> DataFrame:
    # Timestamps as epoch microseconds: year 1 and year 9999 do not all become Python datetimes.
    return df.select(
        *[
            F.unix_micros(F.col(f"`{f.name}`")).alias(f.name)
            if isinstance(f.dataType, TimestampType)
            else F.col(f"`{f.name}`")
            for f in df.schema.fields
        ]
    )


def _rows(df: DataFrame) -> list[str]:
    # repr: rows hold nulls beside numbers and lists, which do not sort or hash
    return sorted(repr(tuple(r)) for r in _plain(df).collect())


def _named(df: DataFrame, key: tuple[str, ...]) -> list[str]:
    return sorted(repr((*(r[c] for c in key), sorted(r[FAILED]))) for r in _plain(df).collect())


def _same_decision(df: DataFrame, table: str, **settings: Any) -> None:
    """great-expectations, the compiled gate before a write and the gate counted by the write
    decide alike."""
    columns = tuple(df.columns)
    quality = QualityConfig(**settings)
    ge_good, ge_failed, ge_result = validate(df, table, 4, clock=NOW, settings=quality)
    gated = expressions.validate_frame(df, table, 4, clock=NOW, settings=quality)
    try:
        assert _rows(gated.good) == _rows(ge_good)
        assert tuple(gated.good.columns) == columns
        assert _named(gated.failed, columns) == _named(ge_failed, columns)
        _same_result(gated.result, ge_result)
    finally:
        gated.release()
    observed = expressions.observe_frame(df, table, 4, clock=NOW, settings=quality)
    assert tuple(observed.good.columns) == columns
    assert _rows(observed.good) == _rows(ge_good)  # the pass that counts
    _same_result(observed.result(), ge_result)
    assert _named(observed.failed(), columns) == _named(ge_failed, columns)


def _same_result(got: QualityResultRow, expected: QualityResultRow) -> None:
    assert (got.evaluated_rows, got.failed_rows) == (expected.evaluated_rows, expected.failed_rows)
    assert got.success == expected.success
    assert got.failed_expectations == expected.failed_expectations
    assert [
        (e.name, e.expectation_type, e.columns, e.success, e.unexpected_count)
        for e in got.expectations
    ] == [
        (e.name, e.expectation_type, e.columns, e.success, e.unexpected_count)
        for e in expected.expectations
    ]


def test_a_gate_counted_by_its_write_reports_once_the_write_ran(spark: SparkSession) -> None:
    rows = [*CLEAN, *(r for r, _ in PLANTED.values())]
    df = writes.rows_frame(spark, "group_generations", rows, cluster="default")
    observed = expressions.observe_frame(df, "group_generations", 4, clock=NOW)
    observed.good.write.format("noop").mode("overwrite").save()
    result = observed.result()
    assert (result.evaluated_rows, result.failed_rows) == (len(rows), len(PLANTED))
    assert not result.success


def test_planted_generations_break_the_same_checks(spark: SparkSession) -> None:
    rows = [*CLEAN, *(r for r, _ in PLANTED.values()), *DUPLICATES]
    df = writes.rows_frame(spark, "group_generations", rows, cluster="default")
    _same_decision(df, "group_generations")
    gated = expressions.validate_frame(df, "group_generations", 4, clock=NOW)
    try:
        broke = {(r["group_id"], r["generation"]): set(r[FAILED]) for r in gated.failed.collect()}
    finally:
        gated.release()
    for row, checks in PLANTED.values():
        assert broke[(row.group_id, row.generation)] == checks


def test_without_quarantine_every_row_is_written(spark: SparkSession) -> None:
    rows = [*CLEAN, *DUPLICATES]
    df = writes.rows_frame(spark, "group_generations", rows, cluster="default")
    _same_decision(df, "group_generations", quarantine_failed_rows=False)


def test_the_same_key_in_two_clusters_is_no_duplicate(spark: SparkSession) -> None:
    east = writes.rows_frame(spark, "group_generations", CLEAN, cluster="east")
    west = writes.rows_frame(spark, "group_generations", CLEAN[:1], cluster="west")
    both = east.unionByName(west)
    _same_decision(both, "group_generations")
    gated = expressions.validate_frame(both, "group_generations", 4, clock=NOW)
    try:
        assert gated.result.success
        assert gated.good.count() == len(CLEAN) + 1
    finally:
        gated.release()


def test_end_offsets_with_a_broken_order_a_duplicate_and_extreme_years(
    spark: SparkSession,
) -> None:
    samples = [
        EndOffsetSample("orders", 0, 0, 100, 100, T),
        EndOffsetSample("orders", 1, 50, 40, -1, T),
        EndOffsetSample("orders", 1, 50, 40, -1, T),
        EndOffsetSample("orders", 2, 0, 10, -2, T),
        # beyond pandas' datetime range, within Spark's: flagged, not fatal
        EndOffsetSample("orders", 3, 0, 100, 100, writes.MIN_TIMESTAMP_MS),
        EndOffsetSample("orders", 4, 0, 100, 100, writes.MAX_TIMESTAMP_MS),
    ]
    df = writes.rows_frame(spark, "end_offsets", samples, cluster="default")
    _same_decision(df, "end_offsets")


def _commit(rng: random.Random, i: int) -> OffsetCommitRow:
    """A random offset_commits row, now and then wrong in a way one check catches."""
    at = T + rng.randrange(-5, 5) * 60_000
    if rng.random() < 0.1:
        at = T + 400 * 86_400_000  # beyond the future tolerance
    return OffsetCommitRow(
        group_id=rng.choice(["a", "b", "c"]),
        topic=rng.choice(["orders", "pay"]),
        partition=rng.choice([0, 1, 2, -1]),
        offset=rng.choice([None, 0, 5, 99, -3]),
        leader_epoch=-1,
        metadata="",
        commit_timestamp=rng.choice([None, at]),
        expire_timestamp=None,
        topic_id=None,
        is_tombstone=False,
        record_partition=rng.choice([0, 1]),
        record_offset=rng.choice([i, i, i, 3, -1]),  # some keys twice, some negative
        record_timestamp=at,
        transactional=False,
        producer_id=None,
        producer_epoch=None,
        status=rng.choice(["committed", "committed", "pending", "lost"]),
        resolved_at=at,
        resolved_by="non_transactional",
        effective_at=rng.choice([at, None]),
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_commits_get_the_same_decision(spark: SparkSession, seed: int) -> None:
    rng = random.Random(seed)
    rows = [_commit(rng, i) for i in range(60)]
    df = writes.rows_frame(spark, "offset_commits", rows, cluster="default")
    _same_decision(df, "offset_commits")


def test_every_check_of_every_suite_compiles() -> None:
    for table in suites.TABLES:
        for check in suites.checks_for(table, *bounds(QualityConfig(), NOW.now_ms())):
            assert expressions.broken(check) is not None
    bogus = suites.Check("x", "ExpectColumnValuesToMatchRegex", (("column", "a"),), ("a",))
    with pytest.raises(expressions.UnsupportedCheckError, match="no compiled form"):
        expressions.broken(bogus)


def test_the_window_runs_only_when_a_key_repeats(spark: SparkSession) -> None:
    clean = writes.rows_frame(spark, "group_generations", CLEAN, cluster="default")
    doubled = writes.rows_frame(
        spark, "group_generations", [*CLEAN, *DUPLICATES], cluster="default"
    )
    checks = suites.checks_for("group_generations", *bounds(QualityConfig(), NOW.now_ms()))
    unique = next(c for c in checks if c.name.startswith("unique:"))

    assert not expressions.repeats(clean, unique.columns)
    assert expressions.repeats(doubled, unique.columns)
    # without repeats the check is a constant; with them, the window names both copies
    plan = expressions.annotate(clean, [unique])._jdf.queryExecution().optimizedPlan().toString()
    assert "Window" not in plan
    named = expressions.annotate(doubled, [unique]).where(F.size(FAILED) > 0)
    assert sorted(r["group_id"] for r in named.collect()) == ["k", "k"]


def test_a_key_its_producer_knows_unique_is_not_searched(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean = writes.rows_frame(spark, "group_generations", CLEAN, cluster="default")
    # As a gate builds them for rows that carry their cluster (quality.validate.start).
    checks = suites.checks_for(
        "group_generations", *bounds(QualityConfig(), NOW.now_ms()), within=("cluster",)
    )
    unique = next(c for c in checks if c.name.startswith("unique:"))
    key = catalogue.spec("group_generations").key
    searched: list[tuple[str, ...]] = []
    real = expressions.repeats
    monkeypatch.setattr(
        expressions, "repeats", lambda df, cols: searched.append(tuple(cols)) or real(df, cols)
    )

    named = expressions.annotate(clean, [unique], unique=key).where(F.size(FAILED) > 0)
    assert named.count() == 0
    assert searched == []
    # Columns the producer did not vouch for together are searched as usual.
    expressions.annotate(clean, [unique], unique=(*key, "member_count"))
    assert searched == [unique.columns]


def test_a_timestamp_bound_is_exact_to_the_microsecond(spark: SparkSession) -> None:
    bound = 1_796_729_522_457_123  # epoch microseconds
    check = suites.Check(
        "plausible_time:t",
        "ExpectColumnValuesToBeBetween",
        (("column", "t"), ("min_value", 0), ("max_value", bound)),
        ("t",),
    )
    values = [bound - 1, bound, bound + 1, None, -62_135_596_800_000_000, 253_402_300_799_999_999]
    df = spark.createDataFrame([(i, v) for i, v in enumerate(values)], "i int, us bigint")
    df = df.select("i", F.timestamp_micros("us").alias("t"))
    got = df.select("i", expressions.broken(check, frozenset({"t"})).alias("b")).collect()
    # year 1 is below the lower bound, year 9999 above the upper one
    assert [r["b"] for r in sorted(got)] == [False, False, True, False, True, True]


def test_a_new_validation_time_compiles_no_new_code(spark: SparkSession) -> None:
    """Each batch's gate bounds timestamps by its own validation time: the stage that reads
    the batch must not be new generated code because of it."""
    metrics = spark.sparkContext._jvm.org.apache.spark.metrics.source.CodegenMetrics  # type: ignore[union-attr]
    rng = random.Random(7)
    rows = [_commit(rng, i) for i in range(20)]
    # An integer literal of this run's own makes the first gate's code new whatever other
    # tests compiled before (it filters nothing: partitions are below 10).
    own = F.col("partition") != F.lit(1_000_000 + random.randrange(1_000_000))
    df = writes.rows_frame(spark, "offset_commits", rows, cluster="default").where(own)
    compiled = []
    for second in range(3):
        clock = VirtualClock(NOW.now_ms() + 1_000 * second)
        observed = expressions.observe_frame(df, "offset_commits", second, clock=clock)
        before = metrics.METRIC_COMPILATION_TIME().getCount()
        observed.good.write.format("noop").mode("overwrite").save()
        compiled.append(metrics.METRIC_COMPILATION_TIME().getCount() - before)
        assert observed.result().evaluated_rows == len(rows)
    assert compiled[0] > 0  # the first gate's code is new
    assert compiled[1:] == [0, 0]
