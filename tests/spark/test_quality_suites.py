"""Quality gates on real micro-batches: great-expectations decides, bad rows go to quarantine,
results are kept, and a failing suite raises an alert instead of failing anything."""

from __future__ import annotations

import dataclasses
import json
import uuid
from typing import Any

import pyarrow as pa
import pytest
from generation_rows import T
from pyspark.sql import SparkSession
from quality_rows import CLEAN, DUPLICATES, NOW, PLANTED

from offsetscope import config
from offsetscope.alerts.notify import LogNotifier
from offsetscope.alerts.runner import AlertsRunner, ChangedKeys
from offsetscope.clock import VirtualClock
from offsetscope.history.rows import EndOffsetSample
from offsetscope.quality import tables as qtables
from offsetscope.quality.validate import (
    FAILED,
    ROW_ID,
    record,
    record_results,
    validate,
    validate_table,
    warm_up,
    with_row_ids,
)
from offsetscope.spark import writes

pytestmark = pytest.mark.spark


@pytest.fixture
def cfg(offsetscope_config: config.Config) -> config.Config:
    return dataclasses.replace(
        offsetscope_config,
        storage=dataclasses.replace(
            offsetscope_config.storage, schema=f"quality_{uuid.uuid4().hex[:8]}"
        ),
    )


def planted_batch(spark: SparkSession) -> Any:
    rows = [*CLEAN, *(r for r, _ in PLANTED.values()), *DUPLICATES]
    return writes.rows_frame(spark, "group_generations", rows, cluster="default")


def test_failing_rows_are_split_off_with_the_checks_they_broke(spark: SparkSession) -> None:
    good, failed, result = validate(planted_batch(spark), "group_generations", 7, clock=NOW)

    assert sorted((r["group_id"], r["generation"]) for r in good.collect()) == [
        ("g", 1),
        ("g", 2),
        ("h", 5),
    ]
    broke = {
        (r["group_id"], r["generation"], r["member_count"]): set(r[FAILED])
        for r in failed.collect()
    }
    for row, checks in PLANTED.values():
        assert broke[(row.group_id, row.generation, row.member_count)] == checks
    assert broke[("k", 1, 1)] == broke[("k", 1, 2)] == {"unique:group_id,group_life,generation"}
    assert good.columns == planted_batch(spark).columns

    assert (result.table_name, result.batch_id, result.success) == ("group_generations", 7, False)
    assert (result.evaluated_rows, result.failed_rows) == (9, 6)
    assert set(result.failed_expectations) == {
        "valid:state",
        "order:generation>previous_generation",
        "plausible_time:stored_at",
        "at_least_0:first_record_offset",
        "unique:group_id,group_life,generation",
    }
    # great-expectations' counts agree with the rows each check named
    for e in result.expectations:
        named = sum(1 for checks in broke.values() if e.name in checks)
        assert e.unexpected_count == named, e.name
        assert e.success is (named == 0)


def test_clean_batch_passes_and_keeps_every_row(spark: SparkSession) -> None:
    df = writes.rows_frame(spark, "group_generations", CLEAN, cluster="default")
    good, failed, result = validate(df, "group_generations", 1, clock=NOW)
    assert result.success
    assert result.failed_expectations == ()
    assert (good.count(), failed.count(), result.failed_rows) == (3, 0, 0)
    assert {e.name for e in result.expectations} >= {
        "not_null:group_id",
        "unique:group_id,group_life,generation",
        "plausible_time:join_completed_at",
    }


def test_row_ids_tell_rows_apart_by_content_and_null_pattern(spark: SparkSession) -> None:
    df = spark.createDataFrame(
        [(None, 5, {"a": 1}), (5, None, {"a": 1}), (5, None, {"a": 1}), (5, None, {"a": 2})],
        "x int, y int, m map<string,int>",
    )
    ids = [r[ROW_ID] for r in with_row_ids(df).collect()]
    # Spark's hash skips nulls: without the null pattern the first two would collide.
    assert ids[0] != ids[1]
    assert ids[1] == ids[2]  # identical rows share an id (they pass or fail together)
    assert ids[2] != ids[3]  # a map column is part of the content
    assert ids == [r[ROW_ID] for r in with_row_ids(df).collect()]  # stable on recomputation


def test_spark_engine_gives_the_same_answer_as_pandas(spark: SparkSession) -> None:
    samples = [
        EndOffsetSample("orders", 0, 0, 100, 100, T),
        EndOffsetSample("orders", 1, 50, 40, -1, T),  # high watermark below the log start
        EndOffsetSample("orders", 1, 50, 40, -1, T),  # and twice
    ]
    df = writes.rows_frame(spark, "end_offsets", samples, cluster="default")
    on_pandas = validate(df, "end_offsets", 1, clock=NOW)
    on_spark = validate(df, "end_offsets", 1, clock=NOW, pandas_max_rows=0)
    for good, failed, result in (on_pandas, on_spark):
        assert good.count() == 1
        assert failed.count() == 2
        assert set(result.failed_expectations) == {
            "order:high_watermark>=log_start_offset",
            "unique:topic,partition,sampled_at",
        }
    assert [e.unexpected_count for e in on_pandas[2].expectations] == [
        e.unexpected_count for e in on_spark[2].expectations
    ]


def test_results_and_quarantine_are_kept_once_and_the_failure_raises_an_alert(
    spark: SparkSession, cfg: config.Config
) -> None:
    _, failed, result = validate(planted_batch(spark), "group_generations", 3, clock=NOW)
    record(spark, cfg, result, failed, query_name="q")
    record(spark, cfg, result, failed, query_name="q")  # a replayed batch

    results = qtables.rows_of(
        spark.table(qtables.qualified_name(cfg, qtables.QUALITY_RESULTS)), type(result)
    )
    assert results == [dataclasses.replace(result, seconds=results[0].seconds)]
    quarantine = spark.table(qtables.qualified_name(cfg, qtables.QUALITY_QUARANTINE)).collect()
    assert len(quarantine) == 6
    row = next(q for q in quarantine if "valid:state" in q["failed_expectations"])
    assert json.loads(row["row_json"])["state"] == "Rebalancing"
    assert json.loads(row["row_key"]) == {
        "group_id": "g",
        "group_life": 0,
        "generation": 3,
        "cluster": "default",
    }

    # Only the quality rule: the others would read tables this test has no rows in.
    off = {
        name: dataclasses.replace(getattr(cfg.alerts, name), enabled=False)
        for name in ("lag_stall", "data_loss", "hanging_transaction", "rebalance_stuck")
    }
    cfg = dataclasses.replace(cfg, alerts=dataclasses.replace(cfg.alerts, **off))
    runner = AlertsRunner(cfg, notifiers=[LogNotifier(clock=NOW)], clock=NOW)
    evaluation = runner.evaluate(spark, 0, ChangedKeys(), as_of=T)
    assert evaluation is not None
    (alert,) = evaluation.rows
    assert (alert.rule, alert.subject, alert.status) == ("quality", "group_generations", "open")
    assert "valid:state" in alert.reason
    # a later batch passes: the alert resolves at that batch's validation
    clean = writes.rows_frame(spark, "group_generations", CLEAN, cluster="default")
    later = VirtualClock(T + 7_200_000)
    _, none_failed, passed = validate(clean, "group_generations", 4, clock=later)
    record(spark, cfg, passed, none_failed, query_name="q")
    evaluation = runner.evaluate(spark, 1, ChangedKeys(), as_of=T)
    assert evaluation is not None
    (alert,) = evaluation.rows
    assert (alert.status, alert.resolved_at) == ("resolved", T + 7_200_000)
    runner.close(spark)
    # Another query that validates the same table with the same batch id keeps its own row.
    record_results(
        spark, cfg, [result], app_id="other:quality_results:group_generations", batch_id=3
    )
    table = spark.table(qtables.qualified_name(cfg, qtables.QUALITY_RESULTS))
    assert table.where("batch_id = 3").count() == 2


def test_timestamps_outside_pandas_range_are_flagged_not_fatal(spark: SparkSession) -> None:
    """A corrupt record's timestamp can be any year Spark holds (1-9999); pandas' datetime64[ns]
    stops at 1677 and 2262, so the pandas engine must not convert them as datetimes. Both
    engines flag the same rows."""
    year_1 = writes.MIN_TIMESTAMP_MS
    year_9999 = writes.MAX_TIMESTAMP_MS
    samples = [
        EndOffsetSample("orders", 0, 0, 100, 100, T),
        EndOffsetSample("orders", 1, 0, 100, 100, year_1),
        EndOffsetSample("orders", 2, 0, 100, 100, year_9999),
    ]
    df = writes.rows_frame(spark, "end_offsets", samples, cluster="default")
    for engine in ({}, {"pandas_max_rows": 0}):
        good, failed, result = validate(df, "end_offsets", 1, clock=NOW, **engine)
        assert [r["partition"] for r in good.select("partition").collect()] == [0]
        assert sorted(r["partition"] for r in failed.select("partition").collect()) == [1, 2]
        assert result.failed_expectations == ("plausible_time:sampled_at",)


@pytest.mark.parametrize(
    ("logical", "rows"),
    [
        ("group_generations", [*CLEAN, *(r for r, _ in PLANTED.values()), *DUPLICATES]),
        ("group_generations", CLEAN),
        (
            "end_offsets",
            [
                EndOffsetSample("orders", 0, 0, 100, 100, T),
                EndOffsetSample("orders", 1, 50, 40, -1, T),
                EndOffsetSample("orders", 1, 50, 40, -1, T),
                EndOffsetSample("orders", 2, 0, 100, 100, writes.MIN_TIMESTAMP_MS),
                EndOffsetSample("orders", 3, 0, 100, 100, writes.MAX_TIMESTAMP_MS),
            ],
        ),
    ],
)
def test_rows_on_the_driver_are_gated_as_the_dataframe_is(
    spark: SparkSession, logical: str, rows: list[Any]
) -> None:
    """validate_table (fold outputs as Arrow, no Spark job) keeps and fails the same rows, with
    the same results row, as validate on the DataFrame of the same rows."""
    table = writes.rows_table(logical, rows, cluster="default")
    good_t, failed_t, result_t = validate_table(table, logical, 3, clock=NOW)
    good_d, failed_d, result_d = validate(
        writes.table_frame(spark, logical, table), logical, 3, clock=NOW
    )

    def rows_of(t: pa.Table, schema: pa.Schema) -> list[str]:
        # Spark hands back its own types (timestamps in microseconds): compare as the table's.
        plain = t.select(schema.names).cast(schema).to_pylist()
        return sorted(json.dumps(r, sort_keys=True, default=str) for r in plain)

    failed_schema = failed_t.schema
    assert rows_of(good_t, table.schema) == rows_of(good_d.toArrow(), table.schema)
    assert rows_of(failed_t, failed_schema) == rows_of(failed_d.toArrow(), failed_schema)
    assert dataclasses.replace(result_t, seconds=0) == dataclasses.replace(result_d, seconds=0)
    assert good_t.schema == table.schema


def test_warm_up_builds_the_context_the_gates_use(monkeypatch: pytest.MonkeyPatch) -> None:
    from offsetscope.quality import validate as module

    monkeypatch.setattr(module, "_context", {})  # as in a fresh process
    thread = warm_up()
    thread.join(timeout=120)
    assert not thread.is_alive()
    built = dict(module._context)
    assert set(built) == {"context", "spark", "pandas"}
    # the gates use it as it is: nothing is built a second time
    assert module._batch_definitions()["pandas"] is built["pandas"]
