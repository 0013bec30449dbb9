"""The maintenance job (``offsetscope maintain``) and the table rewrite (``offsetscope migrate``).

**maintain** runs the steps :func:`offsetscope.spark.maintenance.plan` works out -- retention
deletes, downsampling, OPTIMIZE, VACUUM -- one table at a time, and logs each with what its
commit did (rows removed, files removed and added, read from the commit's operation metrics in
the Delta log) and the Delta version it made.

Beside the ingest query: Delta commits optimistically, and a statement whose commit loses to
the ingest query's is refused with a concurrent-modification error. The ingest query's appends
are blind (they read nothing), so they never conflict with a DELETE or a MERGE of older rows;
its MERGEs (the gold tables) can make an OPTIMIZE of the same table lose. A step that loses is
run again on the new version, up to ``[maintenance] max_attempts`` times, waiting
``retry_backoff`` doubled each time. The other way round -- an ingest MERGE that loses to an
OPTIMIZE commit -- fails that micro-batch, and the restarted query (its checkpoint and
idempotent writes) writes it exactly once; OPTIMIZE of a partitioned table touches only
finished days, where the ingest query rarely merges. A table whose declaration changed
(``ensure_tables``: a property, a clustering) is altered before the steps; a metadata change
fails every concurrent commit, so the ingest query, which makes the same change when it starts,
is best restarted first after such a configuration change.

The job finds its own commit in the log by a tag it sets as the commit's ``userMetadata``, so a
concurrent ingest commit is never mistaken for it.

**migrate** rewrites the tables whose declaration changed in a way ``ensure_tables`` refuses to
apply in place (:func:`offsetscope.spark.tables.rewrite_table`); it refuses to run while the
ingest query's lease is live, as ``offsetscope redecode`` does.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from offsetscope.clock import Clock, SystemClock
from offsetscope.config import Config
from offsetscope.pipelines.redecode import ensure_not_running
from offsetscope.spark import maintenance
from offsetscope.spark import tables as catalogue

log = logging.getLogger(__name__)

_USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"

# Operation metrics of the Delta log, per step kind: rows removed, files removed, files added.
_ROWS = {
    maintenance.RETENTION: "numDeletedRows",
    maintenance.DOWNSAMPLE: "numTargetRowsDeleted",
    maintenance.COMPACT: "numTargetRowsDeleted",
}
_FILES_REMOVED = ("numRemovedFiles", "numDeletedFiles")
_FILES_ADDED = ("numAddedFiles",)


@dataclass(frozen=True, slots=True)
class StepResult:
    """What one step did: from its commit's operation metrics (None: nothing committed)."""

    logical: str
    kind: str
    version: int | None
    rows_removed: int
    files_removed: int
    files_added: int
    attempts: int
    seconds: float

    def line(self) -> str:
        where = "no commit" if self.version is None else f"Delta version {self.version}"
        retried = f", {self.attempts} attempts" if self.attempts > 1 else ""
        return (
            f"{self.logical}: {self.kind}: {self.rows_removed} rows removed, "
            f"{self.files_removed} files removed, {self.files_added} added ({where}{retried}, "
            f"{self.seconds:.1f} s)"
        )


@dataclass
class MaintainReport:
    """Every step of one run, in order."""

    steps: list[StepResult] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [s.line() for s in self.steps]

    def rows_removed(self, logical: str) -> int:
        return sum(s.rows_removed for s in self.steps if s.logical == logical)


def _metric(metrics: dict[str, str], names: Iterable[str]) -> int:
    return sum(int(metrics.get(n) or 0) for n in names)


def _tagged_commit(
    spark: SparkSession, qualified: str, tag: str, operation: str | None = None
) -> tuple[int, dict[str, str]]:
    """The version and operation metrics of the newest commit carrying ``tag`` (and of
    ``operation``, when given); -1 when there is none."""
    where = f"userMetadata = '{tag}'"
    if operation is not None:
        where += f" AND operation = '{operation}'"
    rows = (
        spark.sql(f"DESCRIBE HISTORY {qualified} LIMIT 20")
        .where(where)
        .select("version", "operationMetrics")
        .collect()
    )
    if not rows:
        return -1, {}
    newest = max(rows, key=lambda r: r["version"])
    return int(newest["version"]), dict(newest["operationMetrics"] or {})


def run_step(
    spark: SparkSession,
    cfg: Config,
    step: maintenance.Step,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> StepResult:
    """Run one step, again when its commit loses a race (see the module docstring).

    Raises:
        Exception: what Spark or Delta raised, when it is not a lost race or the attempts are
            spent.
    """
    qualified = catalogue.table_name(cfg, step.logical)
    tag = f"offsetscope-maintain-{step.kind}-{uuid.uuid4().hex[:12]}"
    backoff = cfg.maintenance.retry_backoff.seconds
    began = time.monotonic()
    attempt = 0
    while True:
        attempt += 1
        spark.conf.set(_USER_METADATA, tag)
        try:
            spark.sql(step.sql).collect()
            break
        except Exception as exc:  # a lost race is retried, anything else re-raised
            if not maintenance.is_conflict(exc) or attempt >= cfg.maintenance.max_attempts:
                raise
            log.warning(
                "%s: %s lost a commit race (attempt %d of %d), again in %.1f s: %s",
                qualified,
                step.kind,
                attempt,
                cfg.maintenance.max_attempts,
                backoff,
                str(exc).splitlines()[0],
            )
            sleep(backoff)
            backoff *= 2
        finally:
            spark.conf.unset(_USER_METADATA)
    # VACUUM logs its work as a VACUUM START / VACUUM END pair of commits.
    operation = "VACUUM END" if step.kind == maintenance.VACUUM else None
    version, metrics = _tagged_commit(spark, qualified, tag, operation)
    result = StepResult(
        step.logical,
        step.kind,
        None if version < 0 else version,
        _metric(metrics, [_ROWS[step.kind]] if step.kind in _ROWS else []),
        _metric(metrics, _FILES_REMOVED),
        _metric(metrics, _FILES_ADDED),
        attempt,
        time.monotonic() - began,
    )
    log.info("%s", result.line())
    return result


def maintain(
    spark: SparkSession,
    cfg: Config,
    *,
    tables: Sequence[str] | None = None,
    clock: Clock | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> MaintainReport:
    """One maintenance run over ``tables`` (default: every table of the catalogue).

    The tables are ensured first (created, or brought up to their declaration: an append-only
    table that gained a retention rule stops being append-only, a table declared clustered is
    clustered).

    Raises:
        KeyError: an unknown table name.
        TableSchemaMismatchError: a table needs ``offsetscope migrate`` first.
    """
    clock = clock or SystemClock()
    steps = maintenance.plan(cfg, clock.now_ms(), tables)
    catalogue.ensure_tables(spark, cfg, None if tables is None else list(tables))
    report = MaintainReport()
    for step in steps:
        report.steps.append(run_step(spark, cfg, step, sleep=sleep))
    return report


def table_sizes(spark: SparkSession, cfg: Config, tables: Iterable[str]) -> dict[str, Any]:
    """Files and bytes of each table's current version (``DESCRIBE DETAIL``)."""
    out: dict[str, Any] = {}
    for logical in tables:
        detail = spark.sql(f"DESCRIBE DETAIL {catalogue.table_name(cfg, logical)}").collect()[0]
        out[logical] = {"files": int(detail["numFiles"]), "bytes": int(detail["sizeInBytes"])}
    return out


def migrate(
    spark: SparkSession,
    cfg: Config,
    *,
    tables: Sequence[str] | None = None,
    clock: Clock | None = None,
) -> list[catalogue.Rewrite]:
    """Rewrite the tables whose change is not additive, then ensure every table.

    Raises:
        IngestRunningError: the ingest query's lease is live.
        KeyError: an unknown table name.
        TableSchemaMismatchError: a table cannot be rewritten (see
            :func:`offsetscope.spark.tables.rewrite_table`).
    """
    clock = clock or SystemClock()
    wanted = list(catalogue.CATALOGUE) if tables is None else list(tables)
    unknown = sorted(set(wanted) - set(catalogue.CATALOGUE))
    if unknown:
        raise KeyError(f"no table {', '.join(unknown)} in the catalogue")
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {catalogue.schema_name(cfg)}")
    present = {
        row["tableName"].lower()
        for row in spark.sql(f"SHOW TABLES IN {catalogue.schema_name(cfg)}").collect()
    }
    if catalogue.physical_name(cfg, "fold_state").lower() in present:  # the lease's table
        ensure_not_running(spark, cfg, clock.now_ms())
    done = []
    for logical in wanted:
        if catalogue.physical_name(cfg, logical).lower() not in present:
            continue
        rewritten = catalogue.rewrite_table(spark, cfg, logical)
        if rewritten is not None:
            done.append(rewritten)
    catalogue.ensure_tables(spark, cfg, wanted)
    return done
