"""What ``offsetscope maintain`` does to each table, as SQL worked out from the catalogue.

Steps, per table, in this order (a table's later steps see its earlier ones)::

    retention   DELETE FROM t WHERE <age column> < now - keep
                                        ([maintenance.retention.<table>] keep)
    downsample  MERGE INTO t USING (rows older than now - downsample_after that are not the
                newest of their key and downsample_every interval) ON key WHEN MATCHED DELETE
    compact     MERGE INTO fold_state USING (each key's highest seq, keys with more than one
                row) ON key AND t.seq < s.seq WHEN MATCHED DELETE       (the superseded states)
    optimize    OPTIMIZE t                       unpartitioned (liquid clustering where declared)
                OPTIMIZE t WHERE <partition in the last optimize_days or at the downsampling
                                  cutoff>
                           [ZORDER BY (group_id)]  partitioned tables read by group
    vacuum      VACUUM t                         at the table's delta.deletedFileRetentionDuration

Predicates name the time column and, for a table partitioned by the date of that column, the
partition column too, so Delta drops whole files of whole days without reading them. Everything
here is a pure function of the configuration, the catalogue and the moment ``now``; the
maintenance job (:mod:`offsetscope.pipelines.maintain`) runs the statements and reads what each
commit did from the Delta log.

VACUUM keeps Delta's retention check on: it runs without ``RETAIN``, so the table's own
``delta.deletedFileRetentionDuration`` (``[pipeline] deleted_file_retention``, which
``ensure_tables`` keeps in step) decides, and a reader of a version within it still finds its
files.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from offsetscope.config import Config, RetentionRule
from offsetscope.spark import tables as catalogue

RETENTION = "retention"
DOWNSAMPLE = "downsample"
COMPACT = "compact"
OPTIMIZE = "optimize"
VACUUM = "vacuum"


@dataclass(frozen=True, slots=True)
class Step:
    """One statement of the maintenance job on one table."""

    logical: str
    kind: str  # RETENTION | DOWNSAMPLE | OPTIMIZE | VACUUM
    sql: str


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _date(ms: int) -> dt.date:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).date()


def date_partition(table: catalogue.TableSpec) -> str | None:
    """The partition column that is the date of the table's age column, if any."""
    if table.age_column is None:
        return None
    for name in table.partition_by:
        generated = table.column(name).generated or ""
        if table.column(name).type == "date" and table.age_column in generated:
            return name
    return None


def older_than(table: catalogue.TableSpec, cutoff_ms: int, alias: str = "") -> str:
    """The rows whose age column is before ``cutoff_ms``, with the partition filter Delta
    prunes on when the table is partitioned by that column's date."""
    if table.age_column is None:
        raise ValueError(f"{table.logical} has no age column")
    prefix = f"{alias}." if alias else ""
    predicate = f"{prefix}`{table.age_column}` < TIMESTAMP '{_iso(cutoff_ms)}'"
    partition = date_partition(table)
    if partition is not None:
        day = _date(cutoff_ms).isoformat()
        predicate = f"{prefix}`{partition}` <= DATE '{day}' AND {predicate}"
    return predicate


def retention_sql(cfg: Config, table: catalogue.TableSpec, keep_ms: int, now_ms: int) -> str:
    """``DELETE`` of the rows older than ``keep_ms`` before ``now_ms``."""
    qualified = catalogue.table_name(cfg, table.logical)
    return f"DELETE FROM {qualified} WHERE {older_than(table, now_ms - keep_ms)}"


def downsample_keys(table: catalogue.TableSpec) -> tuple[str, ...]:
    """What one downsampled row stands for: the key without the time column."""
    return tuple(k for k in table.key if k != table.age_column)


def compaction_sql(cfg: Config, table: catalogue.TableSpec = catalogue.FOLD_STATE) -> str:
    """Delete a log of versions' superseded rows (:attr:`~offsetscope.spark.tables.TableSpec.
    version_column`): a key's rows below its highest version (``fold_state``:
    lib/offsetscope/pipelines/state.py; ``groups_current``: lib/offsetscope/spark/tables.py)."""
    if table.version_column is None:
        raise ValueError(f"{table.logical} is not a log of versions")
    name = catalogue.table_name(cfg, table.logical)
    key = ", ".join(f"`{c}`" for c in table.key)
    v = f"`{table.version_column}`"
    return (
        f"MERGE INTO {name} t USING (SELECT {key}, max({v}) AS {v} FROM {name} "
        f"GROUP BY {key} HAVING count(*) > 1) s "
        f"ON {table.merge_condition('t', 's')} AND t.{v} < s.{v} WHEN MATCHED THEN DELETE"
    )


def downsample_sql(
    cfg: Config, table: catalogue.TableSpec, after_ms: int, every_ms: int, now_ms: int
) -> str:
    """``MERGE ... WHEN MATCHED THEN DELETE`` of every row older than ``after_ms`` before
    ``now_ms`` that is not the newest of its key in its ``every_ms`` interval (intervals
    aligned to the epoch). Run again, it deletes nothing: each interval has one row left."""
    qualified = catalogue.table_name(cfg, table.logical)
    age = f"`{table.age_column}`"
    keys = ", ".join(f"`{k}`" for k in downsample_keys(table))
    cutoff = now_ms - after_ms
    on = " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in table.key)
    return (
        f"MERGE INTO {qualified} t\n"
        f"USING (\n"
        f"  SELECT {', '.join(f'`{k}`' for k in table.key)} FROM (\n"
        f"    SELECT *, row_number() OVER (\n"
        f"      PARTITION BY {keys}, floor(unix_millis({age}) / {every_ms})\n"
        f"      ORDER BY {age} DESC) AS _n\n"
        f"    FROM {qualified}\n"
        f"    WHERE {older_than(table, cutoff)})\n"
        f"  WHERE _n > 1) s\n"
        f"ON {on} AND {older_than(table, cutoff, 't')}\n"
        f"WHEN MATCHED THEN DELETE"
    )


def optimize_sql(
    cfg: Config, table: catalogue.TableSpec, now_ms: int, rule: RetentionRule | None = None
) -> str:
    """``OPTIMIZE``: a whole unpartitioned table (liquid clustering makes it incremental); the
    last ``[maintenance] optimize_days`` finished days of a date-partitioned one (a Z-order
    rewrites every file of the days it is given, so the whole history at each run would cost
    more than it gains), and the days around the downsampling cutoff where the downsampling
    left small files, Z-ordered where declared."""
    qualified = catalogue.table_name(cfg, table.logical)
    sql = f"OPTIMIZE {qualified}"
    partition = table.partition_by[0] if table.partition_by else None
    if partition is not None:
        today = _date(now_ms)
        first = today - dt.timedelta(days=cfg.maintenance.optimize_days)
        where = f"(`{partition}` >= DATE '{first}' AND `{partition}` < DATE '{today}')"
        if rule is not None and rule.downsample_after is not None:
            cutoff = _date(now_ms - rule.downsample_after.ms)
            where += (
                f" OR (`{partition}` >= DATE '{cutoff - dt.timedelta(days=1)}'"
                f" AND `{partition}` <= DATE '{cutoff}')"
            )
        sql += f" WHERE {where}"
    if table.zorder_by:
        sql += " ZORDER BY (" + ", ".join(f"`{c}`" for c in table.zorder_by) + ")"
    return sql


def vacuum_sql(cfg: Config, table: catalogue.TableSpec) -> str:
    """``VACUUM`` at the table's own deleted-file retention (Delta's check stays on)."""
    return f"VACUUM {catalogue.table_name(cfg, table.logical)}"


def plan(cfg: Config, now_ms: int, tables: Iterable[str] | None = None) -> list[Step]:
    """Every step of one maintenance run, table by table in catalogue order.

    Args:
        cfg: ``[maintenance]`` (rules, whether to OPTIMIZE and VACUUM) and the table names.
        now_ms: the moment ages are measured from.
        tables: logical names (default: the whole catalogue).

    Raises:
        KeyError: an unknown table.
    """
    wanted = list(catalogue.CATALOGUE) if tables is None else list(tables)
    unknown = sorted(set(wanted) - set(catalogue.CATALOGUE))
    if unknown:
        raise KeyError(f"no table {', '.join(unknown)} in the catalogue")
    maintenance = cfg.maintenance
    steps: list[Step] = []
    for logical in wanted:
        table = catalogue.CATALOGUE[logical]
        rule = maintenance.retention.rule(logical)
        if rule is not None and rule.keep is not None:
            steps.append(Step(logical, RETENTION, retention_sql(cfg, table, rule.keep.ms, now_ms)))
        if rule is not None and rule.downsample_after is not None:
            assert rule.downsample_every is not None  # RetentionRule checks they go together
            sql = downsample_sql(
                cfg, table, rule.downsample_after.ms, rule.downsample_every.ms, now_ms
            )
            steps.append(Step(logical, DOWNSAMPLE, sql))
        if table.version_column is not None:
            steps.append(Step(logical, COMPACT, compaction_sql(cfg, table)))
        if maintenance.optimize:
            steps.append(Step(logical, OPTIMIZE, optimize_sql(cfg, table, now_ms, rule)))
        if maintenance.vacuum:
            steps.append(Step(logical, VACUUM, vacuum_sql(cfg, table)))
    return steps


def is_conflict(error: BaseException) -> bool:
    """Whether ``error`` is Delta refusing a commit because another one won the race (the
    ingest query's): the statement can run again on the new version."""
    text = f"{type(error).__name__}: {error}"
    return any(
        marker in text
        for marker in (
            "ConcurrentAppendException",
            "ConcurrentDeleteReadException",
            "ConcurrentDeleteDeleteException",
            "ConcurrentTransactionException",
            "ConcurrentWriteException",
            "ConcurrentModificationException",
            "DELTA_CONCURRENT_",
        )
    )
