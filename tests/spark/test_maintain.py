"""``offsetscope maintain`` on the fixture ``partition_lag`` (``tests/support/delta_fixture.py``):
downsampling past the cutoff to one row per key and hour (the newest), retention deletes,
OPTIMIZE with Z-order by group_id and VACUUM, each step's rows and version read from its own
commit; a second run removes nothing; ``ALTER TABLE ... CLUSTER BY`` on an unclustered table."""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from collections.abc import Iterator
from pathlib import Path

import delta_fixture
import pytest
from pyspark.sql import SparkSession

from offsetscope import config
from offsetscope.clock import VirtualClock
from offsetscope.pipelines import maintain
from offsetscope.spark import maintenance
from offsetscope.spark import tables as catalogue

pytestmark = pytest.mark.spark

LOGICAL = delta_fixture.LOGICAL
KEYS = len(delta_fixture.GROUPS) * len(delta_fixture.PARTITIONS)


@pytest.fixture
def lag_table(
    spark: SparkSession, offsetscope_config: config.Config, tmp_path: Path
) -> Iterator[config.Config]:
    with delta_fixture.registered(spark, offsetscope_config, tmp_path, "t_maintain") as cfg:
        yield cfg


def _sleep_refused(seconds: float) -> None:
    raise AssertionError(f"no commit race here, yet a retry waited {seconds} s")


def test_downsampling_keeps_the_newest_row_per_key_and_hour_past_the_cutoff(
    spark: SparkSession, lag_table: config.Config
) -> None:
    name = catalogue.table_name(lag_table, LOGICAL)
    clock = VirtualClock(delta_fixture.NOW_MS)

    report = maintain.maintain(
        spark, lag_table, tables=[LOGICAL], clock=clock, sleep=_sleep_refused
    )

    kinds = [(s.logical, s.kind) for s in report.steps]
    assert kinds == [
        (LOGICAL, maintenance.DOWNSAMPLE),
        (LOGICAL, maintenance.OPTIMIZE),
        (LOGICAL, maintenance.VACUUM),
    ]
    down, optimize, vacuum = report.steps
    # Day one: 12 samples per key over three hours -> one per hour; day nine is recent.
    day1 = 12 * KEYS
    assert down.rows_removed == day1 - 3 * KEYS
    assert down.version is not None
    assert optimize.version is not None
    assert optimize.version > down.version
    # The downsampled day and day nine, each compacted and Z-ordered by group.
    assert optimize.files_removed >= 1
    assert optimize.files_added >= 1
    assert vacuum.rows_removed == 0
    left = spark.sql(
        f"SELECT as_of FROM {name} WHERE as_of_date = DATE '2026-11-01' AND group_id = "
        "'payments' AND `partition` = 0 ORDER BY as_of"
    ).collect()
    assert [r["as_of"].astimezone(dt.UTC).strftime("%H:%M") for r in left] == [
        "00:45",
        "01:45",
        "02:45",
    ]
    assert spark.table(name).count() == delta_fixture.expected_rows() - down.rows_removed

    again = maintain.maintain(spark, lag_table, tables=[LOGICAL], clock=clock)
    assert again.rows_removed(LOGICAL) == 0


def test_retention_deletes_the_days_past_keep(
    spark: SparkSession, lag_table: config.Config
) -> None:
    rule = config.RetentionRule(keep=config.Duration("5d"))
    cfg = dataclasses.replace(
        lag_table,
        maintenance=dataclasses.replace(
            lag_table.maintenance,
            optimize=False,
            vacuum=False,
            retention=dataclasses.replace(lag_table.maintenance.retention, partition_lag=rule),
        ),
    )
    report = maintain.maintain(
        spark, cfg, tables=[LOGICAL], clock=VirtualClock(delta_fixture.NOW_MS)
    )
    (step,) = report.steps
    assert (step.kind, step.rows_removed) == (maintenance.RETENTION, 12 * KEYS)
    dates = spark.sql(f"SELECT DISTINCT as_of_date FROM {catalogue.table_name(cfg, LOGICAL)}")
    assert [r[0].isoformat() for r in dates.collect()] == ["2026-11-09"]


def test_an_unclustered_table_is_clustered_by_group_in_place(
    spark: SparkSession, offsetscope_config: config.Config
) -> None:
    schema = f"t_cluster_{uuid.uuid4().hex[:8]}"
    cfg = config.with_storage(offsetscope_config, schema=schema)
    spec = catalogue.spec("consumer_group_events")
    name = catalogue.table_name(cfg, spec.logical)
    spark.sql(f"CREATE SCHEMA {schema}")
    try:
        # As an earlier release created it: no clustering.
        unclustered = dataclasses.replace(spec, cluster_by=())
        spark.sql(catalogue.create_table_sql(cfg, unclustered))
        catalogue.ensure_tables(spark, cfg, [spec.logical])
        assert catalogue.describe_table(spark, name).cluster_by == ("group_id",)
        report = maintain.maintain(spark, cfg, tables=[spec.logical])
        assert [s.kind for s in report.steps] == [maintenance.OPTIMIZE, maintenance.VACUUM]
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def test_maintain_deletes_the_superseded_fold_states_and_keeps_each_keys_latest(
    spark: SparkSession, offsetscope_config: config.Config
) -> None:
    from offsetscope.pipelines import state as st

    schema = f"t_compact_{uuid.uuid4().hex[:8]}"
    cfg = dataclasses.replace(
        offsetscope_config,
        storage=dataclasses.replace(offsetscope_config.storage, schema=schema),
        maintenance=dataclasses.replace(
            offsetscope_config.maintenance, optimize=False, vacuum=False
        ),
    )
    catalogue.ensure_tables(spark, cfg, [st.STATE])
    try:
        for n in range(3):
            rows = [st.StateRow(st.GROUP, "g", f'{{"n": {n}}}', n, c) for c in ("east", "west")]
            if n == 0:
                rows.append(st.StateRow(st.TXN, "t", "{}", 0, "east"))  # one version only
            st.save(spark, cfg, rows, query_name="q", batch_id=n, now_ms=0, fresh=True)
        report = maintain.maintain(spark, cfg, tables=[st.STATE], clock=VirtualClock(0))
        (step,) = report.steps
        assert (step.kind, step.rows_removed) == (maintenance.COMPACT, 4)
        left = spark.table(catalogue.table_name(cfg, st.STATE)).collect()
        assert sorted((r["cluster"], r["fold"], r["seq"], r["state"]) for r in left) == [
            ("east", st.GROUP, 2, '{"n": 2}'),
            ("east", st.TXN, 0, "{}"),
            ("west", st.GROUP, 2, '{"n": 2}'),
        ]
        again = maintain.maintain(spark, cfg, tables=[st.STATE], clock=VirtualClock(0))
        assert [s.rows_removed for s in again.steps] == [0]
    finally:
        spark.sql(f"DROP SCHEMA {schema} CASCADE")
