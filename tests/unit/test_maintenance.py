"""Bounded growth and table evolution without a JVM: the ``[maintenance]`` configuration, the
maintenance plan's SQL (which predicates, which downsampling), the lost-race retry, and what
``ensure_tables`` may apply in place."""

from __future__ import annotations

import dataclasses
import datetime as dt
import typing
from pathlib import Path
from typing import Any

import pytest

from offsetscope import config
from offsetscope.pipelines import maintain
from offsetscope.spark import maintenance
from offsetscope.spark import tables as catalogue

CFG = config.load("local")
NOW = int(dt.datetime(2026, 11, 10, 12, 0, tzinfo=dt.UTC).timestamp() * 1000)
DAY = 86_400_000


# ----------------------------------------------------------------------------- configuration


def test_retention_covers_exactly_the_tables_whose_rows_have_an_age() -> None:
    aged = {t.logical for t in catalogue.CATALOGUE.values() if t.age_column is not None}
    assert {f.name for f in dataclasses.fields(config.RetentionConfig)} == aged
    for logical in aged:
        table = catalogue.spec(logical)
        assert table.column(typing.cast(str, table.age_column)).type == "timestamp"


def test_the_shipped_rules() -> None:
    retention = CFG.maintenance.retention
    assert retention.raw_records.keep == "30d"
    assert (retention.partition_lag.downsample_after, retention.partition_lag.downsample_every) == (
        "7d",
        "1h",
    )
    assert retention.end_offsets.downsample_every == "1h"
    assert retention.group_metadata_events.trims is False
    assert CFG.maintenance.optimize
    assert CFG.maintenance.vacuum


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[maintenance.retention.partition_lag]\ndownsample_after = "7d"\n', "downsample_every"),
        (
            (
                '[maintenance.retention.partition_lag]\ndownsample_after = "1h"\n'
                'downsample_every = "2h"\n'
            ),
            "downsample_every",
        ),
        (
            (
                '[maintenance.retention.end_offsets]\nkeep = "5d"\ndownsample_after = "7d"\n'
                'downsample_every = "1h"\n'
            ),
            "keep",
        ),
        ('[maintenance.retention.raw_records]\nkeep = "30 days"\n', "keep"),
        ('[maintenance.retention.group_generations]\nkeep = "30d"\n', "group_generations"),
        ("[maintenance]\nmax_attempts = 0\n", "max_attempts"),
    ],
)
def test_a_bad_rule_fails_at_load_naming_its_key(tmp_path: Path, toml: str, key: str) -> None:
    (tmp_path / "base.toml").write_text(toml)
    (tmp_path / "local.toml").write_text("")
    with pytest.raises(config.InvalidConfigError) as bad:
        config.load("local", conf_dir=tmp_path)
    assert key in bad.value.key_path


def test_a_table_that_retention_trims_is_not_append_only() -> None:
    assert catalogue.spec("partition_lag").append_only
    assert catalogue.spec("partition_lag").properties(CFG)["delta.appendOnly"] == "false"
    kept = dataclasses.replace(
        CFG,
        maintenance=dataclasses.replace(
            CFG.maintenance,
            retention=dataclasses.replace(
                CFG.maintenance.retention, partition_lag=config.RetentionRule()
            ),
        ),
    )
    assert catalogue.spec("partition_lag").properties(kept)["delta.appendOnly"] == "true"


# ----------------------------------------------------------------------------- the plan


def test_retention_deletes_by_time_and_prunes_the_date_partition() -> None:
    sql = maintenance.retention_sql(CFG, catalogue.spec("raw_records"), 30 * DAY, NOW)
    assert sql == (
        "DELETE FROM `offsetscope`.`raw_records` WHERE `record_date` <= DATE '2026-10-11' "
        "AND `timestamp` < TIMESTAMP '2026-10-11 12:00:00.000'"
    )
    # Unpartitioned: the time column alone.
    audit = maintenance.older_than(catalogue.spec("batch_audit"), NOW)
    assert audit == "`started_at` < TIMESTAMP '2026-11-10 12:00:00.000'"


def test_downsampling_keeps_the_newest_row_per_key_and_interval() -> None:
    table = catalogue.spec("partition_lag")
    # one row per interval of each group's partition in each cluster
    assert maintenance.downsample_keys(table) == ("group_id", "topic", "partition", "cluster")
    sql = maintenance.downsample_sql(CFG, table, 7 * DAY, 3_600_000, NOW)
    assert (
        "PARTITION BY `group_id`, `topic`, `partition`, `cluster`, "
        "floor(unix_millis(`as_of`) / 3600000)" in sql
    )
    assert "ORDER BY `as_of` DESC" in sql
    assert "WHERE _n > 1" in sql
    assert (
        "t.`as_of_date` <= DATE '2026-11-03' AND t.`as_of` < TIMESTAMP '2026-11-03 12:00:00.000'"
        in sql
    )
    assert sql.endswith("WHEN MATCHED THEN DELETE")
    assert maintenance.downsample_keys(catalogue.spec("end_offsets")) == (
        "topic",
        "partition",
        "cluster",
    )


def test_optimize_partitioned_tables_over_recent_days_and_the_cutoff_z_ordered_by_group() -> None:
    rule = CFG.maintenance.retention.partition_lag
    sql = maintenance.optimize_sql(CFG, catalogue.spec("partition_lag"), NOW, rule)
    assert sql == (
        "OPTIMIZE `offsetscope`.`partition_lag` WHERE (`as_of_date` >= DATE '2026-11-07' AND "
        "`as_of_date` < DATE '2026-11-10') OR (`as_of_date` >= DATE '2026-11-02' AND "
        "`as_of_date` <= DATE '2026-11-03') ZORDER BY (`group_id`)"
    )
    assert catalogue.spec("offset_commits").zorder_by == ("group_id",)
    # Unpartitioned tables: the whole table (liquid clustering is incremental).
    assert maintenance.optimize_sql(CFG, catalogue.spec("groups_current"), NOW) == (
        "OPTIMIZE `offsetscope`.`groups_current_log`"
    )


def test_tables_read_by_group_are_clustered_or_z_ordered_by_it() -> None:
    for table in catalogue.CATALOGUE.values():
        if "group_id" in table.column_names and table.layer != catalogue.BRONZE:
            assert "group_id" in (table.cluster_by or table.zorder_by), table.logical
        assert not (table.cluster_by and table.partition_by), table.logical


def test_vacuum_leaves_delta_its_retention_check() -> None:
    sql = maintenance.vacuum_sql(CFG, catalogue.spec("raw_records"))
    assert sql == "VACUUM `offsetscope`.`raw_records`"
    assert "RETAIN" not in sql


def test_the_plan_orders_each_tables_steps() -> None:
    steps = maintenance.plan(CFG, NOW, ["raw_records", "partition_lag", "groups_current"])
    assert [(s.logical, s.kind) for s in steps] == [
        ("raw_records", "retention"),
        ("raw_records", "optimize"),
        ("raw_records", "vacuum"),
        ("partition_lag", "downsample"),
        ("partition_lag", "optimize"),
        ("partition_lag", "vacuum"),
        ("groups_current", "compact"),
        ("groups_current", "optimize"),
        ("groups_current", "vacuum"),
    ]
    with pytest.raises(KeyError, match="no_such"):
        maintenance.plan(CFG, NOW, ["no_such"])


def test_fold_state_is_compacted_before_it_is_optimized() -> None:
    steps = maintenance.plan(CFG, NOW, ["fold_state"])
    assert [s.kind for s in steps] == ["compact", "optimize", "vacuum"]
    sql = steps[0].sql
    # Only rows below their key's highest version, of keys that have more than one.
    assert "max(`seq`) AS `seq`" in sql
    assert "HAVING count(*) > 1" in sql
    assert "AND t.`seq` < s.`seq` WHEN MATCHED THEN DELETE" in sql
    assert "t.`cluster` <=> s.`cluster`" in sql


def test_groups_current_is_compacted_by_group_and_cluster() -> None:
    steps = maintenance.plan(CFG, NOW, ["groups_current"])
    assert [s.kind for s in steps] == ["compact", "optimize", "vacuum"]
    sql = steps[0].sql
    assert sql.startswith("MERGE INTO `offsetscope`.`groups_current_log` t")
    assert "SELECT `group_id`, `cluster`, max(`seq`) AS `seq`" in sql
    assert "ON t.`group_id` <=> s.`group_id` AND t.`cluster` <=> s.`cluster` AND" in sql


def test_only_a_log_of_versions_is_compacted() -> None:
    with pytest.raises(ValueError, match="offset_commits is not a log of versions"):
        maintenance.compaction_sql(CFG, catalogue.spec("offset_commits"))


# ----------------------------------------------------------------------------- lost races


class _Rows:
    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows

    def where(self, _: str) -> _Rows:
        return self

    def select(self, *_: str) -> _Rows:
        return self

    def collect(self) -> list[dict[str, Any]]:
        return self.rows


class _Conf:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def set(self, key: str, value: str) -> None:
        self.values[key] = value

    def unset(self, key: str) -> None:
        self.values.pop(key, None)


class _Spark:
    """Fails the first ``losses`` statements with Delta's lost-race error."""

    def __init__(
        self,
        losses: int,
        error: str = "[DELTA_CONCURRENT_APPEND] io.delta.exceptions.ConcurrentAppendException",
    ) -> None:
        self.losses, self.error, self.conf, self.ran = losses, error, _Conf(), 0

    def sql(self, text: str) -> _Rows:
        if text.startswith("DESCRIBE HISTORY"):
            metrics = {"numDeletedRows": "7", "numRemovedFiles": "2", "numAddedFiles": "1"}
            return _Rows([{"version": 12, "operationMetrics": metrics}])
        self.ran += 1
        if self.losses:
            self.losses -= 1
            raise RuntimeError(f"{self.error}: files were added")
        return _Rows([])


def test_a_step_that_loses_a_commit_race_runs_again_with_backoff() -> None:
    spark, waits = _Spark(losses=2), []
    step = maintenance.Step("raw_records", maintenance.RETENTION, "DELETE FROM x WHERE y")
    result = maintain.run_step(spark, CFG, step, sleep=waits.append)  # type: ignore[arg-type]
    assert (result.attempts, result.version, result.rows_removed) == (3, 12, 7)
    assert (result.files_removed, result.files_added) == (2, 1)
    assert waits == [2.0, 4.0]
    assert spark.conf.values == {}, "the commit tag does not outlive the step"


def _no_wait(seconds: float) -> None:
    raise AssertionError(f"waited {seconds} s for an error that is no lost race")


def test_the_attempts_are_bounded_and_other_errors_are_not_retried() -> None:
    step = maintenance.Step("raw_records", maintenance.RETENTION, "DELETE FROM x WHERE y")
    with pytest.raises(RuntimeError, match="Concurrent"):
        maintain.run_step(_Spark(losses=9), CFG, step, sleep=lambda _: None)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="AnalysisException"):
        maintain.run_step(_Spark(1, "AnalysisException"), CFG, step, sleep=_no_wait)  # type: ignore[arg-type]
    assert not maintenance.is_conflict(RuntimeError("AnalysisException: no such column"))
    assert maintenance.is_conflict(
        RuntimeError("io.delta.exceptions.ConcurrentDeleteReadException")
    )


# ----------------------------------------------------------------------------- evolution


def _existing(table: catalogue.TableSpec, **changes: Any) -> catalogue.ExistingTable:
    columns = {c.name: c.type for c in table.columns}
    columns.update(changes.pop("columns", {}))
    for name in changes.pop("drop", ()):
        columns.pop(name)
    return catalogue.ExistingTable(
        columns=columns,
        partition_by=changes.pop("partition_by", table.partition_by),
        cluster_by=changes.pop("cluster_by", table.cluster_by),
        properties=changes.pop("properties", dict(table.properties(CFG))),
    )


def test_an_unchanged_table_needs_nothing() -> None:
    for table in catalogue.CATALOGUE.values():
        plan = catalogue.plan_migration(table, _existing(table), CFG)
        assert plan == catalogue.MigrationPlan(), table.logical


def test_additive_changes_are_planned_in_place() -> None:
    table = catalogue.spec("groups_current")
    old = _existing(table, drop=["offsetscope_own"], cluster_by=(), properties={})
    plan = catalogue.plan_migration(table, old, CFG)
    assert plan.additive
    assert [c.name for c in plan.add] == ["offsetscope_own"]
    assert plan.cluster_by == ("group_id",)
    assert plan.properties[catalogue.KEY_PROPERTY] == "group_id,cluster"


def test_changes_rows_prevent_are_named_with_the_command() -> None:
    table = catalogue.spec("partition_lag")
    old = _existing(
        table,
        columns={"lost_records": "int", "old_column": "string"},
        drop=["data_loss"],
        partition_by=(),
        properties={catalogue.KEY_PROPERTY: "group_id,topic,partition"},
    )
    plan = catalogue.plan_migration(table, old, CFG)
    assert {(i.column, i.change) for i in plan.incompatible} == {
        ("data_loss", "added as NOT NULL"),
        ("lost_records", "type changed from int to bigint"),
        ("old_column", "removed or renamed"),
        ("as_of_date", "partitioning changed from ()"),
        (
            "group_id, topic, partition, as_of, cluster",
            "key changed from (group_id,topic,partition)",
        ),
    }
    message = catalogue.mismatch_error(CFG, table, "`offsetscope`.`partition_lag`", plan)
    assert "`offsetscope`.`partition_lag` (partition_lag)" in message
    assert "column lost_records: type changed from int to bigint" in message
    assert "`offsetscope migrate --tables partition_lag --env local`" in message


def test_type_spelling_does_not_count_as_a_change() -> None:
    assert catalogue.same_type(
        "ARRAY<STRUCT<topic:STRING,partition:INT>>", "array<struct<topic:string,partition:int>>"
    )
    assert not catalogue.same_type("bigint", "int")


def test_the_rewrite_casts_fills_and_refuses_what_it_cannot_fill() -> None:
    table = catalogue.spec("groups_current")
    old = _existing(table, columns={"member_count": "bigint"}, drop=["offsetscope_own"])
    projection = catalogue.rewrite_projection(CFG, table, old, "q")
    assert "CAST(`member_count` AS int) AS `member_count`" in projection
    assert any(p.endswith(" AS `offsetscope_own`") and "startswith" in p for p in projection)
    with pytest.raises(
        catalogue.TableSchemaMismatchError, match="redecode --tables groups_current"
    ):
        catalogue.rewrite_projection(CFG, table, _existing(table, drop=["kind"]), "q")


def test_a_key_gaining_the_cluster_column_the_migration_adds_and_fills_is_additive() -> None:
    """A table of one cluster, created before tables had ``cluster``: every row gets the
    default cluster, so the rows stay unique under the longer key."""
    table = catalogue.spec("partition_lag")
    old = _existing(
        table,
        drop=["cluster"],
        properties={catalogue.KEY_PROPERTY: "group_id,topic,partition,as_of"},
    )
    plan = catalogue.plan_migration(table, old, CFG)
    assert plan.additive, plan.incompatible
    assert [c.name for c in plan.add] == ["cluster"]
    assert plan.properties[catalogue.KEY_PROPERTY] == "group_id,topic,partition,as_of,cluster"
