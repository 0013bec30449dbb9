"""Validate one micro-batch of one table: ``validate(df, table, batch_id)``.

::

    batch df ── + _row (hash of the row's content) ──▶ great-expectations suite (COMPLETE,
                                                        unexpected rows named by _row)
           │                                                      │
           └──────── split by the failing _row ids ◀──────────────┘
                      good_df (the table's rows)   failed_df (+ failed_expectations)
                      results row (quality_results)

* great-expectations decides: each expectation reports the ``_row`` ids of its unexpected rows
  (``unexpected_index_column_names``), and a row fails if any expectation names it. ``_row`` is a
  64-bit hash of the row's content (its columns, a map column as its JSON, plus which columns
  are null), so it is the same however often Spark recomputes the batch, and identical rows
  (which pass or fail every check together) share it.
* One great-expectations context per process (ephemeral, built at the first call: importing
  great-expectations alone takes seconds), with a Spark and a pandas data source. Its thread
  safety is not documented, so great-expectations' own step (building the batch and running the
  suite) runs one call at a time; the Spark work around it -- hashing the rows, collecting a
  small batch, splitting off the failed rows -- runs in the caller's thread, so a pipeline's
  gates on different tables overlap in Spark.
* Engine: a batch of at most ``[quality] pandas_max_rows`` rows (the gold tables' micro-batches are
  fold outputs built on the driver anyway) is collected through Arrow -- only the columns the suite
  reads, plus ``_row`` -- and validated with great-expectations' pandas engine; larger batches run
  on its Spark engine, where each metric is a Spark job. A Spark job per metric costs far more than
  the pandas engine on rows that fit on the driver, collect included (``docs/benchmarks.md``,
  "Measurements behind design choices"). Rows that are on the driver already (fold outputs as Arrow)
  skip Spark altogether: :func:`validate_table` runs the same suite on the pandas engine, ``_row``
  being the row's position, and splits them with a filter.
* The ingest's gates run the suites compiled instead (:mod:`offsetscope.quality.arrow` on the
  driver, :mod:`offsetscope.quality.expressions` in the executors): great-expectations' own
  machinery costs more than the checks. The functions here are the reference: the tests hold
  both compiled gates to their decisions on the same rows.
* A failing suite is data, not an error: it is in the results row (and raises a ``quality``
  alert, :mod:`offsetscope.alerts.rules`), its rows go to quarantine; an expectation that raised
  inside great-expectations counts as failed with its error in the results. Spark failures
  (infrastructure) are not caught.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
import time
from collections import defaultdict
from collections.abc import Collection, Sequence
from typing import Any, Final

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DataType,
    MapType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from offsetscope import clusters
from offsetscope.clock import Clock, SystemClock
from offsetscope.config import Config, QualityConfig, duration_ms
from offsetscope.quality import suites
from offsetscope.quality import tables as qtables
from offsetscope.quality.model import ExpectationResult, QualityResultRow

ROW_ID = "_row"
FAILED = "failed_expectations"

_lock = threading.Lock()  # builds the context once
_gx_lock = threading.Lock()  # one great-expectations validation at a time
_context: dict[str, Any] = {}


def _batch_definitions() -> dict[str, Any]:
    """The process's great-expectations context: Spark and pandas whole-dataframe batches."""
    with _lock:
        if not _context:
            import great_expectations as gx
            from great_expectations.data_context.types.base import ProgressBarsConfig

            ctx = gx.get_context(mode="ephemeral")
            ctx.variables.progress_bars = ProgressBarsConfig(
                globally=False, metric_calculations=False
            )
            spark = ctx.data_sources.add_spark("offsetscope_spark")
            pandas = ctx.data_sources.add_pandas("offsetscope_pandas")
            _context["context"] = ctx
            _context["spark"] = spark.add_dataframe_asset(
                "batch"
            ).add_batch_definition_whole_dataframe("whole")
            _context["pandas"] = pandas.add_dataframe_asset(
                "batch"
            ).add_batch_definition_whole_dataframe("whole")
        return _context


def warm_up() -> threading.Thread:
    """Build the process's great-expectations context in a background thread and return it.

    Importing great-expectations and setting up its context takes seconds, and every gate of a
    query's first micro-batch would wait for it (``docs/benchmarks.md``, "Measurements behind design
    choices"); a query starts this when it starts, so the import overlaps the table checks and the
    stream's start. A failure is not hidden: the thread's exception is reported by
    ``threading.excepthook``, and the first gate builds the context again and raises it.
    """
    thread = threading.Thread(target=_batch_definitions, name="offsetscope-gx-warm-up", daemon=True)
    thread.start()
    return thread


def with_row_ids(df: DataFrame) -> DataFrame:
    """``df`` plus ``_row``: a hash of each row's content (stable across recomputation).

    The columns are hashed as they are (hashing the row's JSON instead adds a JSON serialisation of
    every row: ``docs/benchmarks.md``, "Measurements behind design choices"), except that Spark
    cannot hash a map, so a column holding one is hashed as its JSON. Spark's hash skips null
    values, so (null, 5) and (5, null) would hash alike: the null pattern is hashed with them.
    """
    fields = df.schema.fields
    nulls = F.concat(
        *[F.when(F.col(f"`{f.name}`").isNull(), F.lit("1")).otherwise(F.lit("0")) for f in fields]
    )
    values = [
        F.to_json(F.col(f"`{f.name}`")) if _has_map(f.dataType) else F.col(f"`{f.name}`")
        for f in fields
    ]
    return df.withColumn(ROW_ID, F.xxhash64(nulls, *values))


def _has_map(t: DataType) -> bool:
    if isinstance(t, MapType):
        return True
    if isinstance(t, ArrayType):
        return _has_map(t.elementType)
    if isinstance(t, StructType):
        return any(_has_map(f.dataType) for f in t.fields)
    return False


def bounds(settings: QualityConfig, now_ms: int) -> tuple[dt.datetime, dt.datetime]:
    """The plausible range of a timestamp validated at ``now_ms``: ``[quality]
    earliest_timestamp`` to the validation time plus ``future_tolerance``."""
    # Naive UTC datetimes: the session time zone is UTC, so Spark and pandas both compare
    # timestamp columns against them as UTC.
    earliest = dt.datetime.fromisoformat(settings.earliest_timestamp)
    latest_ms = now_ms + duration_ms(settings.future_tolerance, "quality.future_tolerance")
    latest = dt.datetime.fromtimestamp(latest_ms / 1000, tz=dt.UTC).replace(tzinfo=None)
    return earliest, latest


_RESULT_FORMAT: Final = {
    "result_format": "COMPLETE",
    "unexpected_index_column_names": [ROW_ID],
    "return_unexpected_index_query": False,
}


def _suite_columns(checks: Sequence[suites.Check]) -> list[str]:
    return sorted({c for check in checks for c in check.columns})


def arrow_timestamp_columns(schema: pa.Schema) -> frozenset[str]:
    """The timestamp columns of an Arrow schema: checked as epoch microseconds."""
    return frozenset(f.name for f in schema if pa.types.is_timestamp(f.type))


def timestamp_columns(schema: StructType) -> frozenset[str]:
    """The timestamp columns of ``schema``: checked as epoch microseconds (:func:`in_micros`)."""
    return frozenset(
        f.name for f in schema.fields if isinstance(f.dataType, TimestampType | TimestampNTZType)
    )


def _run_suite(
    df: DataFrame, table: str, checks: tuple[suites.Check, ...], pandas_max_rows: int
) -> tuple[Any, int]:
    ids = with_row_ids(df)
    # Timestamps travel as epoch microseconds, their bounds likewise: pandas holds datetimes as
    # datetime64[ns] (years 1677-2262) and great-expectations' Spark engine turns unexpected
    # values into Python datetimes (years 1-9999 in UTC only), so a corrupt record's timestamp
    # -- what the plausibility check is for -- failed the conversion instead of the check.
    timestamps = timestamp_columns(df.schema)
    frame = ids.select(
        *[
            F.unix_micros(F.col(f"`{c}`")).alias(c) if c in timestamps else F.col(f"`{c}`")
            for c in _suite_columns(checks)
        ],
        ROW_ID,
    )
    # One Spark job for a small batch: fetch up to one row more than the pandas engine takes,
    # which both counts the batch and, when it fits, is the batch.
    # Through Arrow: a plain ``toPandas`` (the session does not enable Arrow conversion)
    # pickles every row, which is most of the collect's time (docs/benchmarks.md,
    # "Measurements behind design choices").
    head = frame.limit(pandas_max_rows + 1).toArrow().to_pandas()
    if len(head) <= pandas_max_rows:
        return _evaluate("pandas", head, table, checks, timestamps), len(head)
    rows = ids.count()
    return _evaluate("spark", frame, table, checks, timestamps), rows


def _evaluate(
    engine: str, batch: Any, table: str, checks: Sequence[suites.Check], timestamps: Collection[str]
) -> Any:
    """great-expectations' own step, one call at a time: the suite on a pandas or Spark frame
    of the checked columns (timestamps as epoch microseconds) plus ``_row``."""
    engines = _batch_definitions()
    with _gx_lock:
        suite = suites.suite_for(table, [in_micros(c, timestamps) for c in checks])
        gx_batch = engines[engine].get_batch(batch_parameters={"dataframe": batch})
        return gx_batch.validate(suite, result_format=_RESULT_FORMAT)


def in_micros(check: suites.Check, timestamps: Collection[str]) -> suites.Check:
    """``check`` with datetime bounds on a timestamp column as epoch microseconds."""
    if not any(c in timestamps for c in check.columns):
        return check
    kwargs = tuple((k, _micros(v) if isinstance(v, dt.datetime) else v) for k, v in check.kwargs)
    return dataclasses.replace(check, kwargs=kwargs)


def _micros(value: dt.datetime) -> int:
    # Naive datetimes are UTC (see bounds).
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (value.replace(tzinfo=dt.UTC) - epoch) // dt.timedelta(microseconds=1)


def key_scope(columns: Sequence[str]) -> tuple[str, ...]:
    """The columns a batch's natural keys are unique within: ``cluster`` when the rows carry
    it (the writes of several clusters' rows of a table are one batch, in which a shared group
    id or the same ``__consumer_offsets`` position appears once per cluster)."""
    return (clusters.COLUMN,) if clusters.COLUMN in columns else ()


def start(
    table: str, columns: Sequence[str], settings: QualityConfig | None, clock: Clock | None
) -> tuple[QualityConfig, float, int, tuple[suites.Check, ...]]:
    """What a validation of ``table``'s rows (with ``columns``) starts from: the settings (the
    defaults if none), when it started (monotonic), its time (``validated_at``, epoch ms) and
    the suite's checks at that time."""
    settings = settings or QualityConfig()
    now = (clock or SystemClock()).now_ms()
    checks = suites.checks_for(table, *bounds(settings, now), within=key_scope(columns))
    return settings, time.monotonic(), now, checks


def validate(
    df: DataFrame,
    table: str,
    batch_id: int,
    *,
    settings: QualityConfig | None = None,
    clock: Clock | None = None,
    pandas_max_rows: int | None = None,
) -> tuple[DataFrame, DataFrame, QualityResultRow]:
    """Validate a micro-batch of ``table`` with its suite; split it into good and failed rows.

    Args:
        df: the batch, with the table's written columns (a static DataFrame: call this inside
            ``foreachBatch``).
        table: the logical table name (see :data:`offsetscope.quality.suites.TABLES`).
        batch_id: the micro-batch id (recorded in the results).
        settings: ``[quality]`` (timestamp bounds; default: the built-in defaults).
        clock: the validation time (timestamp upper bound, ``validated_at``).
        pandas_max_rows: batches up to this size run on great-expectations' pandas engine
            (default: ``settings.pandas_max_rows``).

    Returns:
        ``good_df`` (the rows no expectation named; all rows when ``quarantine_failed_rows`` is
        off), ``failed_df`` (the named rows plus ``failed_expectations``, the names of the checks
        each broke) and the ``quality_results`` row.

    Raises:
        KeyError: ``table`` has no suite.
    """
    settings, started, now, checks = start(table, df.columns, settings, clock)
    limit = settings.pandas_max_rows if pandas_max_rows is None else pandas_max_rows
    result, rows = _run_suite(df, table, checks, limit)
    failing, expectations = _outcome(result, checks)
    good, failed = _split(df, failing, quarantine=settings.quarantine_failed_rows)
    row = result_row(table, batch_id, rows, _count_rows(df, failing), expectations, now, started)
    return good, failed, row


def validate_table(
    rows: pa.Table,
    table: str,
    batch_id: int,
    *,
    settings: QualityConfig | None = None,
    clock: Clock | None = None,
) -> tuple[pa.Table, pa.Table, QualityResultRow]:
    """:func:`validate` for rows already on the driver (fold outputs, as Arrow with the table's
    written columns): the same suite on great-expectations' pandas engine, whatever the number
    of rows, with no Spark job -- ``_row`` is the row's position, and the split is a filter.

    Returns:
        ``good`` (the rows no expectation named; all rows when ``quarantine_failed_rows`` is
        off), ``failed`` (the named rows plus ``failed_expectations``) and the results row.
    """
    settings, started, now, checks = start(table, rows.schema.names, settings, clock)
    timestamps = arrow_timestamp_columns(rows.schema)
    columns = {
        c: micros_array(rows.column(c)) if c in timestamps else rows.column(c)
        for c in _suite_columns(checks)
    }
    columns[ROW_ID] = pa.array(np.arange(rows.num_rows, dtype=np.int64))
    frame = pa.table(columns).to_pandas()
    failing, expectations = _outcome(_evaluate("pandas", frame, table, checks, timestamps), checks)
    named = np.zeros(rows.num_rows, dtype=bool)
    named[list(failing)] = True
    order = sorted(failing)
    failed = rows.take(pa.array(order, pa.int64())).append_column(
        FAILED, pa.array([sorted(failing[i]) for i in order], pa.list_(pa.string()))
    )
    good = rows.filter(pa.array(~named)) if settings.quarantine_failed_rows else rows
    row = result_row(table, batch_id, rows.num_rows, len(failing), expectations, now, started)
    return good, failed, row


def micros_array(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A timestamp column as epoch microseconds (int64), as Spark's ``unix_micros`` gives."""
    return column.cast(pa.timestamp("us", column.type.tz)).cast(pa.int64())


def _outcome(
    result: Any, checks: Sequence[suites.Check]
) -> tuple[dict[int, set[str]], list[ExpectationResult]]:
    """The ``_row`` ids each check named, and each check's result, in the suite's order."""
    failing: dict[int, set[str]] = defaultdict(set)
    expectations: list[ExpectationResult] = []
    by_name = {c.name: c for c in checks}
    for r in result.results:
        name = r.expectation_config.meta["check"]
        check = by_name[name]
        raised = bool(r.exception_info and r.exception_info.get("raised_exception"))
        ids = [int(item[ROW_ID]) for item in r.result.get("unexpected_index_list") or []]
        for row_id in ids:
            failing[row_id].add(name)
        expectations.append(
            ExpectationResult(
                name=name,
                expectation_type=r.expectation_config.type,
                columns=check.columns,
                success=bool(r.success) and not raised,
                unexpected_count=int(r.result.get("unexpected_count") or 0),
            )
        )
    expectations.sort(key=lambda e: [c.name for c in checks].index(e.name))
    return failing, expectations


def result_row(
    table: str,
    batch_id: int,
    rows: int,
    failed_rows: int,
    expectations: list[ExpectationResult],
    now: int,
    started: float,
) -> QualityResultRow:
    """The ``quality_results`` row of a validation that began at ``started`` (monotonic)."""
    failed_names = tuple(e.name for e in expectations if not e.success)
    return QualityResultRow(
        table_name=table,
        batch_id=batch_id,
        suite=f"{table}_suite",
        success=not failed_names,
        evaluated_rows=rows,
        failed_rows=failed_rows,
        expectations=tuple(expectations),
        failed_expectations=failed_names,
        validated_at=now,
        seconds=time.monotonic() - started,
    )


def _count_rows(df: DataFrame, failing: dict[int, set[str]]) -> int:
    if not failing:
        return 0
    return int(with_row_ids(df).where(F.col(ROW_ID).isin(list(failing))).count())


def _split(
    df: DataFrame, failing: dict[int, set[str]], *, quarantine: bool
) -> tuple[DataFrame, DataFrame]:
    spark = df.sparkSession
    if not failing:  # the common case: the write reads ``df`` itself, no hashing or join
        return df, df.limit(0).withColumn(FAILED, F.lit(None).cast("array<string>"))
    marks = spark.createDataFrame(
        [(row_id, sorted(names)) for row_id, names in sorted(failing.items())],
        f"{ROW_ID} bigint, {FAILED} array<string>",
    )
    joined = with_row_ids(df).join(F.broadcast(marks), ROW_ID, "left")
    failed = joined.where(F.col(FAILED).isNotNull()).drop(ROW_ID)
    good = joined.where(F.col(FAILED).isNull()) if quarantine else joined
    return good.drop(ROW_ID, FAILED), failed


def record(
    spark: SparkSession,
    cfg: Config,
    result: QualityResultRow,
    failed_df: DataFrame,
    *,
    query_name: str,
    key: tuple[str, ...] | None = None,
) -> None:
    """Keep a validation: append its results row and its failed rows to quarantine.

    Both appends are idempotent for a replayed batch (:mod:`offsetscope.spark.writes`): their
    app ids are ``<query>:quality_results:<table>`` and ``<query>:quality_quarantine:<table>``,
    their version the batch id.

    Args:
        spark: the session.
        cfg: table names.
        result: what :func:`validate` returned.
        failed_df: the failed rows :func:`validate` returned.
        query_name: the calling query (part of the idempotency app id).
        key: the natural-key columns that identify a quarantined row (default: the table's).
    """
    qtables.ensure(spark, cfg, (qtables.QUALITY_RESULTS, qtables.QUALITY_QUARANTINE))
    record_results(
        spark,
        cfg,
        [result],
        app_id=f"{query_name}:quality_results:{result.table_name}",
        batch_id=result.batch_id,
    )
    quarantine(spark, cfg, result, failed_df, query_name=query_name, key=key)


def record_results(
    spark: SparkSession,
    cfg: Config,
    results: Sequence[QualityResultRow],
    *,
    app_id: str,
    batch_id: int,
    fresh: bool = False,
) -> None:
    """Append ``results`` to ``quality_results`` in one Delta commit, at most once per
    (``app_id``, ``batch_id``): a pipeline records all its tables' results of a batch at once
    (``fresh``: the batch cannot be a replay, :mod:`offsetscope.spark.writes`).

    An idempotent append rather than a MERGE on (table, batch id): the write's marker already makes
    a replayed batch write nothing, and a MERGE joins every batch against the whole table (no
    key restricts it to files that can match), a cost that grew with every batch recorded;
    it also let two queries with the same table and batch ids overwrite each other's row.
    """
    if not results:
        return
    qtables.append_rows(
        spark,
        cfg,
        qtables.QUALITY_RESULTS,
        qtables.frame(spark, qtables.QUALITY_RESULTS, list(results)),
        app_id=app_id,
        batch_id=batch_id,
        fresh=fresh,
    )


def quarantine(
    spark: SparkSession,
    cfg: Config,
    result: QualityResultRow,
    failed_df: DataFrame,
    *,
    query_name: str,
    key: tuple[str, ...] | None = None,
) -> None:
    """Append the rows a validation failed to ``quality_quarantine`` (nothing if none did),
    once per batch: app id ``<query>:quality_quarantine:<table>``, version the batch id
    (:mod:`offsetscope.spark.writes`)."""
    if result.failed_rows == 0:
        return
    from offsetscope.history import tables as history

    columns = [c for c in failed_df.columns if c != FAILED]
    key_cols = list(key or history.TABLES[result.table_name].key)
    # the same key in two clusters is two rows: the key names the cluster too
    key_cols += [c for c in key_scope(columns) if c not in key_cols]
    rows = failed_df.select(
        F.lit(result.table_name).alias("table_name"),
        F.lit(result.batch_id).cast("bigint").alias("batch_id"),
        F.to_json(F.struct(*[F.col(f"`{c}`") for c in key_cols])).alias("row_key"),
        F.col(FAILED).alias("failed_expectations"),
        F.to_json(F.struct(*[F.col(f"`{c}`") for c in columns])).alias("row_json"),
        F.timestamp_millis(F.lit(result.validated_at)).alias("quarantined_at"),
    )
    qtables.append_rows(
        spark,
        cfg,
        qtables.QUALITY_QUARANTINE,
        rows,
        app_id=f"{query_name}:quality_quarantine:{result.table_name}",
        batch_id=result.batch_id,
    )
