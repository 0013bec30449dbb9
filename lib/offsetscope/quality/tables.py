"""The quality and alerts tables, declared with the catalogue's own types, and their I/O.

``quality_results``, ``quality_quarantine``, ``alerts`` and ``alert_notifications`` are declared
as :class:`offsetscope.spark.tables.TableSpec` s (here and in :mod:`offsetscope.alerts.tables`);
their physical names come from ``[tables]`` like every other table, qualified by
``storage.catalog`` / ``storage.schema``. The helpers below create them (``CREATE TABLE IF NOT
EXISTS ... USING DELTA``, the catalogue's DDL rules), turn rows (frozen dataclasses, timestamps in
epoch ms) into DataFrames with the declared schema through Arrow, and read rows back into the
dataclasses (timestamps converted with ``unix_millis`` in Spark, structs and maps shaped by the
dataclasses' type hints).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

import pyarrow as pa
from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from offsetscope.config import Config
from offsetscope.history.codec import from_jsonable
from offsetscope.quality import model
from offsetscope.spark import tables as catalogue
from offsetscope.spark import writes
from offsetscope.spark.tables import ColumnSpec, TableSpec

T = TypeVar("T")

QUALITY = "quality"  # layer name of these tables

_EXPECTATION = (
    "struct<name:string,expectation_type:string,columns:array<string>,success:boolean,"
    "unexpected_count:bigint>"
)

QUALITY_RESULTS = TableSpec(
    "quality_results",
    QUALITY,
    (
        ColumnSpec("table_name", "string", False, comment="logical table the suite checks"),
        ColumnSpec("batch_id", "bigint", False, comment="ingest micro-batch validated"),
        ColumnSpec("suite", "string", False, comment="great-expectations suite name"),
        ColumnSpec("success", "boolean", False, comment="every expectation held"),
        ColumnSpec("evaluated_rows", "bigint", False, comment="rows validated"),
        ColumnSpec("failed_rows", "bigint", False, comment="rows sent to quarantine"),
        ColumnSpec(
            "expectations",
            f"array<{_EXPECTATION}>",
            False,
            comment="each expectation and its outcome",
        ),
        ColumnSpec(
            "failed_expectations",
            "array<string>",
            False,
            comment="names of the expectations that failed",
        ),
        ColumnSpec("validated_at", "timestamp", False, comment="when the suite ran (wall clock)"),
        ColumnSpec("seconds", "double", False, comment="how long it took"),
    ),
    key=("table_name", "batch_id"),
    change_data_feed=True,
    comment="One great-expectations suite run per table and micro-batch.",
)

QUALITY_QUARANTINE = TableSpec(
    "quality_quarantine",
    QUALITY,
    (
        ColumnSpec("table_name", "string", False, comment="logical table the row was meant for"),
        ColumnSpec("batch_id", "bigint", False, comment="ingest micro-batch"),
        ColumnSpec("row_key", "string", False, comment="the row's natural key as JSON"),
        ColumnSpec(
            "failed_expectations", "array<string>", False, comment="the expectations the row broke"
        ),
        ColumnSpec("row_json", "string", False, comment="the whole row as JSON"),
        ColumnSpec("quarantined_at", "timestamp", False, comment="when it was set aside"),
    ),
    key=("table_name", "batch_id", "row_key"),
    append_only=True,
    comment="Rows that broke an expectation, with the expectations they broke.",
)

ROW_TYPES: dict[str, type] = {
    "quality_results": model.QualityResultRow,
    "quality_quarantine": model.QuarantinedRow,
}


# ----------------------------------------------------------------------------- names and DDL


def qualified_name(cfg: Config, spec: TableSpec) -> str:
    """``schema.table`` (or ``catalog.schema.table``), quoted, from ``[tables]``."""
    physical: str = getattr(cfg.tables, spec.logical)
    return f"{catalogue.schema_name(cfg)}.`{physical}`"


def create_sql(cfg: Config, spec: TableSpec) -> str:
    """``CREATE TABLE IF NOT EXISTS ... USING DELTA`` for one of these tables."""
    props = ", ".join(f"'{k}' = '{v}'" for k, v in spec.properties(cfg).items())
    lines = [
        f"CREATE TABLE IF NOT EXISTS {qualified_name(cfg, spec)} (",
        ",\n".join(f"  {c.ddl}" for c in spec.columns),
        ") USING DELTA",
    ]
    if spec.comment:
        lines.append("COMMENT '" + spec.comment.replace("'", "\\'") + "'")
    lines.append(f"TBLPROPERTIES ({props})")
    return "\n".join(lines)


def ensure(spark: SparkSession, cfg: Config, specs: Iterable[TableSpec]) -> dict[str, str]:
    """Create the schema and ``specs`` if missing (idempotent); logical -> qualified name.

    An existing table is brought up to its declaration as the catalogue's own tables are
    (:func:`offsetscope.spark.tables.migrate`: comments, added nullable columns); what a
    CREATE TABLE killed half-way left is cleared first, as for those
    (:func:`offsetscope.spark.tables.clear_interrupted_create`).
    """
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {catalogue.schema_name(cfg)}")
    existing = {
        row["tableName"].lower()
        for row in spark.sql(f"SHOW TABLES IN {catalogue.schema_name(cfg)}").collect()
    }
    out = {}
    for spec in specs:
        qualified = qualified_name(cfg, spec)
        physical = getattr(cfg.tables, spec.logical)
        if physical.lower() in existing:
            catalogue.migrate(spark, cfg, spec, qualified)
        else:
            # Created lazily, by the first batch that records results: a kill can land inside.
            catalogue.clear_interrupted_create(spark, cfg, physical)
            spark.sql(create_sql(cfg, spec))
        out[spec.logical] = qualified
    return out


# ----------------------------------------------------------------------------- rows <-> frames


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def record_of(row: Any) -> dict[str, Any]:
    """A row dataclass as column -> plain value (structs as dicts, arrays and maps as lists)."""
    return {f.name: _plain(getattr(row, f.name)) for f in dataclasses.fields(row)}


def frame(spark: SparkSession, spec: TableSpec, rows: Sequence[Any]) -> DataFrame:
    """A DataFrame of ``rows`` with the table's written columns (through Arrow)."""
    schema = catalogue.arrow_schema(spec)
    maps = [c.name for c in spec.written_columns if c.type.startswith("map<")]
    records = [record_of(r) for r in rows]
    for record in records:
        for name in maps:  # Arrow reads a map from (key, value) tuples
            record[name] = [tuple(pair) for pair in record[name] or ()]
    table = pa.Table.from_pylist(records, schema=schema)
    df: DataFrame = spark.createDataFrame(table, schema=spec.written_ddl())
    return df


def _shape(tp: Any, data: Any) -> Any:
    """Arrow's Python values -> the form ``history.codec.from_jsonable`` reads for ``tp``."""
    if data is None:
        return None
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        return _shape(options[0], data)
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return [_shape(args[0], v) for v in data]
        values = list(data.values()) if isinstance(data, Mapping) else list(data)
        return [_shape(a, v) for a, v in zip(args, values, strict=True)]
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        return {name: _shape(hints[name], data[name]) for name in hints if name in data}
    return data


def millis(df: DataFrame) -> DataFrame:
    """``df`` with every top-level timestamp column as epoch milliseconds (bigint)."""
    cols = [
        F.unix_millis(F.col(f"`{f.name}`")).alias(f.name)
        if f.dataType.typeName() == "timestamp"
        else F.col(f"`{f.name}`")
        for f in df.schema.fields
    ]
    return df.select(*cols)


def rows_of(df: DataFrame, row_type: type[T]) -> list[T]:
    """Read ``df`` (a table's rows, possibly with extra columns) back as ``row_type`` objects."""
    names = [f.name for f in dataclasses.fields(row_type)]  # type: ignore[arg-type]
    arrow = millis(df.select(*[F.col(f"`{n}`") for n in names])).toArrow()
    return [from_jsonable(row_type, _shape(row_type, r)) for r in arrow.to_pylist()]


def merge_rows(
    spark: SparkSession,
    cfg: Config,
    spec: TableSpec,
    rows: Sequence[Any],
    *,
    app_id: str | None,
    batch_id: int,
    fresh: bool = False,
) -> None:
    """Upsert ``rows`` on the table's key; once per (app id, batch id) when ``app_id``
    (:func:`offsetscope.spark.writes.delta_transaction`; ``fresh``: not a replay)."""
    if not rows:
        return
    source = frame(spark, spec, rows)
    values: dict[str, Any] = {f"`{c.name}`": f"s.`{c.name}`" for c in spec.written_columns}
    table = qualified_name(cfg, spec)
    builder = (
        DeltaTable.forName(spark, table)
        .alias("t")
        .merge(source.alias("s"), spec.merge_condition("t", "s"))
        .whenMatchedUpdate(set=values)
        .whenNotMatchedInsert(values=values)
    )
    if app_id is None:
        builder.execute()
        return
    with writes.delta_transaction(spark, table, app_id, batch_id, fresh=fresh) as needed:
        if needed:
            builder.execute()


def append_rows(
    spark: SparkSession,
    cfg: Config,
    spec: TableSpec,
    df: DataFrame,
    *,
    app_id: str,
    batch_id: int,
    fresh: bool = False,
) -> None:
    """Append ``df`` at most once per (app id, batch id)
    (:func:`offsetscope.spark.writes.append_once`; ``fresh``: not a replay)."""
    writes.append_once(df, qualified_name(cfg, spec), app_id, batch_id, fresh=fresh)
