"""Exactly-once writes to the catalogue's Delta tables: idempotent appends and MERGEs.

A micro-batch may run twice (a restart re-runs the last batch whose commit did not reach the
checkpoint). Every write is therefore marked with an application id and a version, and a write
whose version is not above the one already recorded for its app id is skipped, so a replayed
batch writes nothing a second time. Two marks exist:

* the commit's ``userMetadata`` (``{"offsetscope_write": {"app": ..., "version": ...}}``), on
  every write: the appends' writer option ``userMetadata``, the MERGEs' session conf
  ``spark.databricks.delta.commitInfo.userMetadata``. :func:`recorded_version` reads it back
  from the table's history (``DESCRIBE HISTORY``, newest commit first, down to the app's latest
  marked commit: a few commits normally, every commit other writers made meanwhile after a long
  stop).
* Delta's own marker (``SetTransaction`` in the Delta log): the writer options ``txnAppId`` /
  ``txnVersion`` for appends, the session confs ``spark.databricks.delta.write.txnAppId`` /
  ``.txnVersion`` for DML. Delta checks it atomically with the commit, but to read it the Spark
  connector reconstructs the table's whole snapshot state (every file and action of the log),
  several Spark jobs on every write whatever its size.

A write is *fresh* when its caller knows it cannot be a replay: a streaming query's batch that
directly follows a batch the same process completed (Spark starts a batch id only after the
previous one's commit, and only a query's first batch after a start re-runs one:
:class:`BatchSequence`). A fresh write carries the ``userMetadata`` mark only. Any other write
-- the first batch after a start, a batch job, a test -- is checked: skipped when the history
or Delta's marker records its version, else written with both marks (Delta's also covers
tables written by versions that set only Delta's marker). The history keeps the commits of the
table's log retention (``delta.logRetentionDuration``, 30 days by default): a fresh batch
replayed after longer than that would not be found.

App ids are ``<query name>:<table>:<operation>``, versions are batch ids. Each (table,
operation) pair of a batch has its own app id: one app id per write, or the second write of a
batch to the same table would be skipped as a replay of the first.

Rows built on the driver (fold outputs) become DataFrames through Arrow with the table's own
schema (:func:`offsetscope.spark.tables.arrow_schema`). Timestamps are epoch milliseconds from
record fields, which a corrupt or hostile record can set to anything an int64 holds; Spark's
timestamps cover the years 1 to 9999 only, so values outside that range are stored as NULL
(:func:`records_table` for driver rows, :func:`ms_table` for driver columns, :func:`ms_frame`
for rows that stay in Spark), or, in a NOT NULL
column, as the nearest end of the range (0001-01-01 / 9999-12-31, values no real record
carries) -- the raw bytes stay in ``raw_records`` -- rather than failing the batch with an
overflow or a NOT NULL violation. Errors are not caught here: a failed write fails the batch
and the query (``docs/design.md``, "Conventions": infrastructure errors are never swallowed).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from offsetscope.config import Config
from offsetscope.history import tables as history
from offsetscope.spark import tables as catalogue

TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"
USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
MARK = "offsetscope_write"
# Commits read per step of the history scan: the mark sought is almost always among the last few
# (one per write of the query's previous batch), the limit grows when it is not.
HISTORY_STEP = 32
# Literal IN-lists up to this size are added to MERGE conditions so that Delta prunes files by
# their min/max statistics; beyond it the join alone decides.
MAX_PRUNE_VALUES = 1_000
# Spark's TimestampType: 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59.999Z, in epoch ms.
MIN_TIMESTAMP_MS = -62_135_596_800_000
MAX_TIMESTAMP_MS = 253_402_300_799_999


def app_id(query_name: str, logical: str, operation: str) -> str:
    """The idempotency app id of one write of one table."""
    return f"{query_name}:{logical}:{operation}"


class BatchSequence:
    """Which batches of one streaming query's ``foreachBatch`` are *fresh* (cannot be replays).

    Spark starts batch id n + 1 only after committing batch n to the checkpoint, so a batch that
    directly follows one this process completed is new; after a start, a failure or a batch
    left unfinished (:meth:`begin` without :meth:`done`), the next batch may re-run one whose
    writes partly landed, and is checked.
    """

    def __init__(self) -> None:
        self._completed: int | None = None

    def begin(self, batch_id: int) -> bool:
        """Start ``batch_id``; returns whether it is fresh."""
        fresh = self._completed is not None and batch_id == self._completed + 1
        self._completed = None
        return fresh

    def done(self, batch_id: int) -> None:
        """``batch_id`` completed: every write it makes has landed."""
        self._completed = batch_id


def append(
    df: DataFrame,
    cfg: Config,
    logical: str,
    *,
    query_name: str,
    batch_id: int,
    fresh: bool = False,
) -> None:
    """Append ``df`` to a table, at most once per (query, table, batch id); ``fresh``: the
    caller knows the batch cannot be a replay (module docstring)."""
    append_once(
        df,
        catalogue.table_name(cfg, logical),
        app_id(query_name, logical, "append"),
        batch_id,
        fresh=fresh,
    )


def append_once(
    df: DataFrame, table: str, application: str, version: int, *, fresh: bool = False
) -> bool:
    """Append ``df`` to ``table`` unless ``application`` already wrote ``version`` there;
    returns whether it appended (a Delta marker may still skip a checked write)."""
    writer = (
        df.write.format("delta").mode("append").option("userMetadata", mark(application, version))
    )
    if not fresh:
        if written(df.sparkSession, table, application, version):
            return False
        writer = writer.option("txnAppId", application).option("txnVersion", str(version))
    writer.saveAsTable(table)
    return True


def mark(application: str, version: int) -> str:
    """The ``userMetadata`` of a commit of ``application`` at ``version``."""
    return json.dumps({MARK: {"app": application, "version": version}}, sort_keys=True)


def marked(user_metadata: str | None) -> tuple[str, int] | None:
    """The (app id, version) of a commit's ``userMetadata``, ``None`` for a commit without the
    mark (another writer's, or one without metadata)."""
    if not user_metadata:
        return None
    try:
        found = json.loads(user_metadata)
    except ValueError:
        return None
    entry = found.get(MARK) if isinstance(found, dict) else None
    if not isinstance(entry, dict):
        return None
    application, version = entry.get("app"), entry.get("version")
    if not isinstance(application, str) or not isinstance(version, int):
        return None
    return application, version


def recorded_version(spark: SparkSession, table: str, application: str) -> int | None:
    """The version of ``application``'s latest marked commit to ``table`` (the history, newest
    first, until its first commit of ``application``); ``None`` if no retained commit has it."""
    found = latest_mark(spark, table, application)
    return None if found is None else found[0]


def latest_mark(spark: SparkSession, table: str, application: str) -> tuple[int, int] | None:
    """``application``'s latest marked commit to ``table``: (the version it marks, the table's
    Delta version it made); ``None`` if no retained commit has it."""
    limit = HISTORY_STEP
    while True:
        rows = (
            spark.sql(f"DESCRIBE HISTORY {table} LIMIT {limit}")
            .select("version", "userMetadata")
            .collect()
        )
        for row in sorted(rows, key=lambda r: -int(r["version"])):
            found = marked(row["userMetadata"])
            if found is not None and found[0] == application:
                return found[1], int(row["version"])
        if len(rows) < limit:
            return None
        limit *= 8


def written(spark: SparkSession, table: str, application: str, version: int) -> bool:
    """Whether ``table``'s history records a commit of ``application`` at ``version`` or later."""
    recorded = recorded_version(spark, table, application)
    return recorded is not None and recorded >= version


@contextmanager
def delta_transaction(
    spark: SparkSession, table: str, application: str, version: int, *, fresh: bool = False
) -> Iterator[bool]:
    """Mark the DML statements run inside the block as ``application``'s write of ``version``;
    yields ``False`` when that write is already in ``table`` (the block must then write
    nothing). A checked (not ``fresh``) write also sets Delta's idempotency confs."""
    if not fresh and written(spark, table, application, version):
        yield False
        return
    confs = {USER_METADATA: mark(application, version)}
    if not fresh:
        confs |= {TXN_APP_ID: application, TXN_VERSION: str(version)}
    for key, value in confs.items():
        spark.conf.set(key, value)
    try:
        yield True
    finally:
        for key in confs:
            spark.conf.unset(key)


def sql_literal(value: Any) -> str:
    """``value`` as a Spark SQL literal (strings quoted and escaped)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    text = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{text}'"


def in_list(column: str, values: Iterable[Any], alias: str = "t", literal: str = "") -> str | None:
    """``alias.column IN (...)`` for a small set of non-null values, else ``None``.

    ``literal`` prefixes each value (``DATE`` for ``DATE '2024-01-31'``).
    """
    distinct = sorted({v for v in values if v is not None}, key=str)
    if not distinct or len(distinct) > MAX_PRUNE_VALUES:
        return None
    prefix = f"{literal} " if literal else ""
    items = ", ".join(prefix + sql_literal(v) for v in distinct)
    return f"{alias}.`{column}` IN ({items})"


def merge(
    source: DataFrame,
    cfg: Config,
    logical: str,
    *,
    query_name: str,
    batch_id: int,
    prune: Sequence[str] = (),
    update_condition: str | None = None,
    fresh: bool = False,
) -> int:
    """MERGE ``source`` into a table on its natural key: update matches, insert the rest.

    Args:
        source: rows with the table's written columns, at most one per natural key.
        cfg: table names.
        logical: the table.
        query_name: part of the idempotency app id.
        batch_id: the idempotency version.
        prune: extra predicates on the target (``t.``) that only restrict it to the keys in the
            batch, so Delta reads only the files that can match.
        update_condition: update matched rows only when it holds (``s.`` / ``t.`` columns).
        fresh: the batch cannot be a replay (module docstring).

    Returns:
        Rows inserted or updated (0 when Delta skipped the write as a replay).
    """
    spark = source.sparkSession
    spec = catalogue.spec(logical)
    condition = " AND ".join([spec.merge_condition("t", "s"), *prune])
    table = catalogue.table_name(cfg, logical)
    target = DeltaTable.forName(spark, table)
    # Explicit column lists rather than UPDATE SET * / INSERT *: Delta computes the generated
    # columns (record_date ...), which the source does not carry.
    values: dict[str, str | Column] = {f"`{c.name}`": f"s.`{c.name}`" for c in spec.written_columns}
    builder = target.alias("t").merge(source.alias("s"), condition)
    if not spec.append_only:
        builder = builder.whenMatchedUpdate(condition=update_condition, set=values)
    builder = builder.whenNotMatchedInsert(values=values)
    application = app_id(query_name, logical, "merge")
    with delta_transaction(spark, table, application, batch_id, fresh=fresh) as needed:
        if not needed:
            return 0
        metrics = builder.execute()
    rows = metrics.collect()
    if not rows:
        return 0
    row = rows[0].asDict()
    return int(row.get("num_updated_rows", 0) or 0) + int(row.get("num_inserted_rows", 0) or 0)


def rows_frame(
    spark: SparkSession, logical: str, rows: Sequence[Any], *, cluster: str | None = None
) -> DataFrame:
    """A DataFrame of fold output rows (``history.rows`` dataclasses) with the table's schema."""
    return table_frame(spark, logical, rows_table(logical, rows, cluster=cluster))


def rows_table(logical: str, rows: Sequence[Any], *, cluster: str | None = None) -> pa.Table:
    """Fold output rows (``history.rows`` dataclasses) as Arrow with the table's schema, in
    ``cluster`` (:func:`with_cluster`)."""
    return records_table(logical, [history.as_record(r) for r in rows], cluster=cluster)


def records_frame(
    spark: SparkSession,
    logical: str,
    records: Sequence[Mapping[str, Any]],
    *,
    cluster: str | None = None,
) -> DataFrame:
    """A DataFrame of plain records (column name -> value; timestamps as epoch ms)."""
    return table_frame(spark, logical, records_table(logical, records, cluster=cluster))


def records_table(
    logical: str, records: Sequence[Mapping[str, Any]], *, cluster: str | None = None
) -> pa.Table:
    """Plain records (column name -> value; timestamps as epoch ms) as Arrow with the table's
    schema, timestamps outside Spark's range nulled or clamped (see the module docstring), in
    ``cluster`` (:func:`with_cluster`)."""
    schema = catalogue.arrow_schema(catalogue.spec(logical))
    timed = [f for f in schema if _has_timestamp(f.type)]
    if timed:
        records = [_with_timestamps_in_range(r, timed) for r in records]
    return with_cluster(logical, pa.Table.from_pylist(list(records), schema=schema), cluster)


def with_cluster(logical: str, table: pa.Table, cluster: str | None) -> pa.Table:
    """``table`` (a table's written columns) with every row's ``cluster`` set to ``cluster``.

    The folds' rows know nothing of clusters; each batch's rows are one cluster's, tagged
    here. A table with the column refuses ``None``: a row of no cluster would mix with every
    cluster's.

    Raises:
        ValueError: the table has a cluster column and ``cluster`` is ``None``, or it has none
            and ``cluster`` is given.
    """
    _check_cluster(logical, cluster)
    if cluster is None:
        return table
    index = table.schema.get_field_index(catalogue.CLUSTER)
    values = pa.array([cluster] * table.num_rows, pa.string())
    if index < 0:
        return table.append_column(catalogue.CLUSTER, values)
    return table.set_column(index, table.schema.field(index), values)


def _check_cluster(logical: str, cluster: str | None) -> None:
    if not catalogue.has_cluster(logical):
        if cluster is not None:
            raise ValueError(f"{logical} has no {catalogue.CLUSTER} column")
    elif cluster is None:
        raise ValueError(f"{logical}: rows need a {catalogue.CLUSTER}")


def ms_schema(logical: str) -> pa.Schema:
    """A table's written columns with timestamps as epoch-ms integers, but its cluster (which
    :func:`ms_table` sets): what :func:`ms_table` takes (nested timestamps are its to refuse)."""
    return pa.schema(
        f.with_type(pa.int64()) if pa.types.is_timestamp(f.type) else f
        for f in catalogue.arrow_schema(catalogue.spec(logical))
        if f.name != catalogue.CLUSTER
    )


def ms_table(logical: str, table: pa.Table, *, cluster: str | None = None) -> pa.Table:
    """Columns of a table's rows (its written columns, timestamps as epoch-ms integers) as Arrow
    with the table's schema: :func:`records_table` column by column, for rows that arrive as
    columns (a batch's offset commits collected from Spark) rather than as records.

    Raises:
        ValueError: the table has a timestamp inside a nested column (use
            :func:`records_table`), or ``table`` lacks one of its written columns.
    """
    table = with_cluster(logical, table, cluster)
    schema = catalogue.arrow_schema(catalogue.spec(logical))
    arrays = []
    for f in schema:
        if f.name not in table.column_names:
            raise ValueError(f"{logical}: the rows lack the column {f.name!r}")
        column = table.column(f.name)
        if pa.types.is_timestamp(f.type):
            column = _ms_in_range(column.cast(pa.int64()), f.nullable).cast(f.type)
        elif _has_timestamp(f.type):
            raise ValueError(f"{logical}.{f.name}: nested timestamps need records_table")
        arrays.append(column.cast(f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def ms_frame(
    logical: str, df: DataFrame, *, cluster: str | None = None, keep: Sequence[str] = ()
) -> DataFrame:
    """:func:`ms_table` in Spark: a DataFrame of a table's written columns with timestamps as
    epoch-ms integers, typed as the table (timestamps outside Spark's range nulled, or clamped
    in a NOT NULL column), its ``cluster`` set to ``cluster``, followed by ``df``'s ``keep``
    columns as they are (not the table's: a quality gate's marks). For rows that are written
    from the executors without reaching the driver (a batch's plain offset commits).

    Raises:
        ValueError: ``cluster`` does not fit the table (:func:`with_cluster`), or ``df`` lacks
            one of its written columns.
    """
    spec = catalogue.spec(logical)
    _check_cluster(logical, cluster)
    out = []
    for c in spec.written_columns:
        if c.name == catalogue.CLUSTER:
            out.append(F.lit(cluster).cast(c.type).alias(c.name))
            continue
        if c.name not in df.columns:
            raise ValueError(f"{logical}: the rows lack the column {c.name!r}")
        column = F.col(f"`{c.name}`")
        if c.type == "timestamp":
            ms = column.cast("bigint")
            if c.nullable:
                column = F.when(ms.between(MIN_TIMESTAMP_MS, MAX_TIMESTAMP_MS), ms)
            else:
                column = F.least(F.greatest(ms, F.lit(MIN_TIMESTAMP_MS)), F.lit(MAX_TIMESTAMP_MS))
            column = F.timestamp_millis(column)
        out.append(column.cast(c.type).alias(c.name))
    return df.select(*out, *[F.col(f"`{k}`") for k in keep])


def _ms_in_range(ms: pa.ChunkedArray, nullable: bool) -> pa.ChunkedArray:
    """Epoch ms outside Spark's range nulled, or clamped to it when not ``nullable``."""
    if nullable:
        inside = pc.and_(
            pc.greater_equal(ms, MIN_TIMESTAMP_MS), pc.less_equal(ms, MAX_TIMESTAMP_MS)
        )
        return pc.if_else(inside, ms, pa.scalar(None, pa.int64()))
    return pc.min_element_wise(pc.max_element_wise(ms, MIN_TIMESTAMP_MS), MAX_TIMESTAMP_MS)


def table_frame(spark: SparkSession, logical: str, table: pa.Table) -> DataFrame:
    """A DataFrame of an Arrow table of the table's written columns (:func:`records_table`)."""
    spec = catalogue.spec(logical)
    if table.num_rows == 0:
        return _empty(spark, spec)
    df: DataFrame = spark.createDataFrame(table, schema=spec.written_ddl())
    return df


def _has_timestamp(t: pa.DataType) -> bool:
    if pa.types.is_timestamp(t):
        return True
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_timestamp(t.value_type)
    if pa.types.is_struct(t):
        return any(_has_timestamp(f.type) for f in t)
    return False


def _with_timestamps_in_range(record: Mapping[str, Any], timed: Sequence[pa.Field]) -> Any:
    """``record``, copied only when one of its ``timed`` columns changes (rarely: copying
    every row of a lag batch of millions cost more than converting it)."""
    changes = {}
    for f in timed:
        value = record.get(f.name)
        fixed = _in_range(value, f)
        if fixed is not value:
            changes[f.name] = fixed
    return {**record, **changes} if changes else record


def _in_range(value: Any, f: pa.Field) -> Any:
    """``value`` with every epoch-ms timestamp outside Spark's range (at any depth) set to None,
    or clamped to the range when its field is not nullable."""
    t = f.type
    if value is None:
        return None
    if pa.types.is_timestamp(t):
        if isinstance(value, int) and not MIN_TIMESTAMP_MS <= value <= MAX_TIMESTAMP_MS:
            return min(max(value, MIN_TIMESTAMP_MS), MAX_TIMESTAMP_MS) if not f.nullable else None
        return value
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_in_range(v, t.value_field) for v in value]
    if pa.types.is_struct(t) and isinstance(value, Mapping):
        return {**value, **{c.name: _in_range(value.get(c.name), c) for c in t}}
    return value


def _empty(spark: SparkSession, spec: catalogue.TableSpec) -> DataFrame:
    df: DataFrame = spark.createDataFrame([], schema=spec.written_ddl())
    return df


def dedupe_last(rows: Iterable[Any]) -> list[Any]:
    """Fold output rows with only the last version of each natural key (upsert order)."""
    return list(history.materialize(rows).values())
