"""Every Delta table of the pipeline in one place: name, columns, key, layout, properties.

Layers (``docs/design.md``, "Tables")::

    bronze  raw_records                 one internal-topic record as read, bytes kept
    silver  group_metadata_events       one decoded record of one kind, flattened from the
            consumer_group_events       decoder's struct (DECODED_SCHEMA), with the record's
            transaction_log_events      coordinates as record_* / batch_* columns
            control_records
            quarantine                  error *and* unknown rows, raw bytes, disposition
    gold    offset_commits, group_generations, group_state_transitions, groups_current,
            member_sessions, partition_assignments, transactions,
            transaction_status_timeline, end_offsets, partition_lag
                                        columns, keys and partitioning declared by the history
                                        package (offsetscope.history.tables)
    ops     fold_state                  the folds' state between micro-batches, one row per key
            batch_audit                 what a micro-batch read, wrote and skipped

Nothing is typed twice: bronze columns come from the source schema (``RAW_SCHEMA`` plus the
source's own columns), silver columns from ``DECODED_SCHEMA`` through
``pyspark.sql.pandas.types.from_arrow_type``, gold columns from ``history.tables``. Each silver
column also carries the SQL expression that computes it from a decoded row, so the projection
that writes a table and the table's schema are the same declaration.

Physical names come from ``[tables]`` in ``conf/`` and are qualified as ``schema.table``, or
``catalog.schema.table`` (Unity Catalog) when ``storage.catalog`` is set. ``ensure_tables``
creates the schema and every table with ``CREATE ... IF NOT EXISTS ... USING DELTA``; it is
idempotent, adds in place the nullable columns a newer catalogue declares, and fails loudly
when an existing table lacks any other declared column.

Delta properties: change data feed on history tables (as ``history.tables`` declares) and on
the fold state, ``delta.appendOnly`` on bronze, audit and append-mode gold tables (the silver
tables are appended to by the ingest query only, but ``offsetscope redecode`` replaces their
rows), and the log / deleted-file retention from ``[pipeline]``.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import from_arrow_type

from offsetscope.config import Config
from offsetscope.history import tables as history
from offsetscope.protocol.arrow_decode import DECODED_SCHEMA, RAW_SCHEMA

BRONZE = "bronze"
SILVER = "silver"
GOLD = "gold"
OPS = "ops"


class TableSchemaMismatchError(RuntimeError):
    """An existing table lacks columns the catalogue declares (created by an older version)."""


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """One column: Spark SQL type, nullability, how it is computed, what it means.

    ``generated`` is a Delta generated-column expression (Delta computes it on write);
    ``source`` is the SQL expression that fills the column from a decoded row (silver tables).
    """

    name: str
    type: str
    nullable: bool = True
    generated: str | None = None
    source: str | None = None
    comment: str = ""

    @property
    def ddl(self) -> str:
        parts = [f"`{self.name}`", self.type]
        if not self.nullable:
            parts.append("NOT NULL")
        if self.generated is not None:
            parts.append(f"GENERATED ALWAYS AS ({self.generated})")
        if self.comment:
            parts.append(f"COMMENT {_sql_string(self.comment)}")
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class TableSpec:
    """One table of the catalogue."""

    logical: str
    layer: str
    columns: tuple[ColumnSpec, ...]
    key: tuple[str, ...]
    partition_by: tuple[str, ...] = ()
    cluster_by: tuple[str, ...] = ()
    change_data_feed: bool = False
    append_only: bool = False
    comment: str = ""
    # Which decoded rows fill a silver table (a SQL predicate over the decoded frame).
    where: str | None = None

    @property
    def written_columns(self) -> tuple[ColumnSpec, ...]:
        """The columns a writer supplies (all but Delta-generated ones), in order."""
        return tuple(c for c in self.columns if c.generated is None)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def column(self, name: str) -> ColumnSpec:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"{self.logical} has no column {name!r}")

    def written_ddl(self) -> str:
        """The written columns as a DDL list (``StructType.fromDDL`` accepts it)."""
        return ", ".join(f"`{c.name}` {c.type}" for c in self.written_columns)

    def merge_condition(self, target: str = "t", source: str = "s") -> str:
        """``MERGE ... ON``: the natural key, null-safe (a key column may legitimately be null)."""
        return " AND ".join(f"{target}.`{n}` <=> {source}.`{n}`" for n in self.key)

    def properties(self, cfg: Config) -> dict[str, str]:
        """Delta table properties."""
        props = {
            "delta.appendOnly": "true" if self.append_only else "false",
            "delta.logRetentionDuration": cfg.pipeline.log_retention.delta_interval,
            "delta.deletedFileRetentionDuration": cfg.pipeline.deleted_file_retention.delta_interval,
        }
        if self.change_data_feed:
            props["delta.enableChangeDataFeed"] = "true"
        return props


# ----------------------------------------------------------------------------- names


def _quote(identifier: str) -> str:
    return "`" + identifier.replace("`", "``") + "`"


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def schema_name(cfg: Config) -> str:
    """The qualified schema: ``schema``, or ``catalog.schema`` when a catalog is configured."""
    if cfg.storage.catalog:
        return f"{_quote(cfg.storage.catalog)}.{_quote(cfg.storage.schema)}"
    return _quote(cfg.storage.schema)


def physical_name(cfg: Config, logical: str) -> str:
    """The configured (unqualified) name of a logical table."""
    if logical not in CATALOGUE:
        raise KeyError(f"no table {logical!r} in the catalogue")
    name: str = getattr(cfg.tables, logical)
    return name


def table_name(cfg: Config, logical: str) -> str:
    """The fully qualified, quoted name of a logical table (for SQL and ``spark.table``)."""
    return f"{schema_name(cfg)}.{_quote(physical_name(cfg, logical))}"


# ----------------------------------------------------------------------------- bronze

# What every source delivers: RAW_SCHEMA (the decoder's input), the topic name actually read
# (a mirror's name, when the internal records come from a mirror topic), and what the source
# could not frame (a CRC mismatch or an undecodable batch of a segment file: one row per batch,
# the batch bytes as ``value``), which the decode step turns into quarantine rows.
SOURCE_ERROR = pa.struct(
    [
        pa.field("error_class", pa.string()),
        pa.field("message", pa.string()),
        pa.field("field_path", pa.string()),
        pa.field("byte_offset", pa.int64()),
    ]
)
SOURCE_SCHEMA = pa.schema(
    [
        *RAW_SCHEMA,
        pa.field("source_topic", pa.string()),
        pa.field("source_error", SOURCE_ERROR),
    ]
)


def _spark_type(arrow_type: pa.DataType) -> str:
    ddl: str = from_arrow_type(arrow_type).simpleString()
    return ddl


_RAW_KEY = ("topic", "partition", "offset")

RAW_RECORDS = TableSpec(
    "raw_records",
    BRONZE,
    (
        *(
            ColumnSpec(
                f.name,
                "timestamp" if f.name == "timestamp" else _spark_type(f.type),
                nullable=f.name not in _RAW_KEY,
                source=f"timestamp_millis(`{f.name}`)" if f.name == "timestamp" else f"`{f.name}`",
                comment="internal topic whose schemas apply" if f.name == "topic" else "",
            )
            for f in SOURCE_SCHEMA
        ),
        ColumnSpec("ingest_batch_id", "bigint", comment="micro-batch that wrote the row"),
        ColumnSpec("ingested_at", "timestamp"),
        ColumnSpec("record_date", "date", False, "CAST(`timestamp` AS DATE)"),
    ),
    key=_RAW_KEY,
    partition_by=("record_date",),
    append_only=True,
    comment="Bronze: every internal-topic record as read, key and value bytes kept for replay.",
)

# ----------------------------------------------------------------------------- silver

# The decoded frame (spark.decode.DECODE_OUTPUT_SCHEMA) = DECODED_SCHEMA + raw bytes of the
# rows that go to quarantine.
DECODE_EXTRA = (pa.field("raw_key", pa.binary()), pa.field("raw_value", pa.binary()))

_COORDINATES = (
    ColumnSpec("internal_topic", "string", False, source="`topic`"),
    ColumnSpec("record_partition", "int", False, source="`partition`"),
    ColumnSpec("record_offset", "bigint", False, source="`offset`"),
    ColumnSpec("record_timestamp", "timestamp", source="timestamp_millis(`timestamp`)"),
    ColumnSpec("batch_producer_id", "bigint", source="`producer_id`"),
    ColumnSpec("batch_producer_epoch", "smallint", source="`producer_epoch`"),
    ColumnSpec("batch_is_transactional", "boolean", source="`is_transactional`"),
)
_HEADER = tuple(
    ColumnSpec(name, _spark_type(DECODED_SCHEMA.field(name).type), source=f"`{name}`")
    for name in ("record_type", "value_version", "is_tombstone")
)
_SILVER_KEY = ("internal_topic", "record_partition", "record_offset")
_INGEST = (ColumnSpec("ingest_batch_id", "bigint"),)


def _flattened(
    struct_column: str, renames: Mapping[str, str] | None = None
) -> tuple[ColumnSpec, ...]:
    """One column per field of a decoded struct column, typed from the Arrow declaration."""
    struct_type = DECODED_SCHEMA.field(struct_column).type
    renames = renames or {}
    return tuple(
        ColumnSpec(
            renames.get(f.name, f.name),
            _spark_type(f.type),
            source=f"`{struct_column}`.`{f.name}`",
        )
        for f in struct_type
    )


def _silver(
    logical: str, kind: str, fields: tuple[ColumnSpec, ...], comment: str, header: bool = True
) -> TableSpec:
    return TableSpec(
        logical,
        SILVER,
        (*_COORDINATES, *(_HEADER if header else ()), *fields, *_INGEST),
        key=_SILVER_KEY,
        comment=comment,
        where=f"kind = '{kind}'",
    )


GROUP_METADATA_EVENTS = _silver(
    "group_metadata_events",
    "group_metadata",
    _flattened("group_metadata", {"group": "group_id"}),
    "Silver: classic GroupMetadata records (type 2), members with decoded subscription and "
    "assignment.",
)
CONSUMER_GROUP_EVENTS = _silver(
    "consumer_group_events",
    "consumer_group",
    _flattened("consumer_group"),
    "Silver: KIP-848 consumer, share and streams group records, value as Kafka JSON text.",
)
TRANSACTION_LOG_EVENTS = _silver(
    "transaction_log_events",
    "transaction_log",
    _flattened("transaction_log"),
    "Silver: __transaction_state records, one per transaction state change.",
)
CONTROL_RECORDS = _silver(
    "control_records",
    "control",
    (
        ColumnSpec("control_type_id", "smallint", source="`record_type`"),
        *_flattened("control"),
    ),
    "Silver: transaction markers in the internal topics (segment sources only).",
    header=False,
)

QUARANTINED = "quarantined"  # bad bytes: kept until a decoder fix replays them
SKIPPED_UNKNOWN = "skipped_unknown"  # unknown record type or version: Kafka warns and skips

QUARANTINE = TableSpec(
    "quarantine",
    SILVER,
    (
        *_COORDINATES,
        ColumnSpec("kind", "string", False, source="`kind`", comment="error | unknown"),
        *_HEADER,
        ColumnSpec("error_class", "string", source="`error`.`error_class`"),
        ColumnSpec("error_message", "string", source="`error`.`message`"),
        ColumnSpec("field_path", "string", source="`error`.`field_path`"),
        ColumnSpec("byte_offset", "int", source="`error`.`byte_offset`"),
        ColumnSpec("unknown_reason", "string", source="`unknown_reason`"),
        ColumnSpec("key", "binary", source="`raw_key`"),
        ColumnSpec("value", "binary", source="`raw_value`"),
        ColumnSpec(
            "disposition",
            "string",
            False,
            source=(
                f"CASE WHEN `kind` = 'unknown' THEN '{SKIPPED_UNKNOWN}' ELSE '{QUARANTINED}' END"
            ),
            comment=f"{QUARANTINED} | {SKIPPED_UNKNOWN} (later: replayed | ignored)",
        ),
        *_INGEST,
    ),
    key=_SILVER_KEY,
    comment="Records that did not decode (error) or whose type/version is unknown; bytes kept.",
    where="kind IN ('error', 'unknown')",
)

# ----------------------------------------------------------------------------- gold


def _gold(table: history.Table, cluster_by: Sequence[str] = ()) -> TableSpec:
    return TableSpec(
        table.name,
        GOLD,
        tuple(
            ColumnSpec(c.name, c.type, c.nullable, c.generated, None, c.comment)
            for c in table.columns
        ),
        key=table.key,
        partition_by=table.partition_by,
        cluster_by=tuple(cluster_by) if not table.partition_by else (),
        change_data_feed=table.change_data_feed,
        append_only=table.write_mode == "append",
        comment=table.comment,
    )


GOLD_TABLES = {t.name: _gold(t, t.key[:1]) for t in history.TABLES.values()}

# ----------------------------------------------------------------------------- ops

FOLD_STATE = TableSpec(
    "fold_state",
    OPS,
    (
        ColumnSpec("fold", "string", False, comment="offsets | group | txn | end_offsets"),
        ColumnSpec("key", "string", False, comment="partition, group id, transactional id ..."),
        ColumnSpec("state", "string", comment="the fold's state as JSON (history.codec)"),
        ColumnSpec("last_offset", "bigint", comment="last record folded into it"),
        ColumnSpec("updated_batch_id", "bigint"),
        ColumnSpec("updated_at", "timestamp"),
    ),
    key=("fold", "key"),
    cluster_by=("fold", "key"),
    change_data_feed=True,
    comment="State the driver-side folds carry between micro-batches, loaded per key.",
)

_SOURCE_PARTITION = (
    "struct<topic:string,partition:int,first_offset:bigint,last_offset:bigint,"
    "records:bigint,offsets_not_seen:bigint>"
)

BATCH_AUDIT = TableSpec(
    "batch_audit",
    OPS,
    (
        ColumnSpec("query_name", "string", False),
        ColumnSpec("batch_id", "bigint", False),
        ColumnSpec("source_kind", "string", False, comment="kafka | segments"),
        ColumnSpec("started_at", "timestamp"),
        ColumnSpec("finished_at", "timestamp"),
        ColumnSpec("rows_in", "bigint", comment="records the source delivered"),
        ColumnSpec("events", "bigint", comment="decoded rows of a known kind"),
        ColumnSpec("quarantined", "bigint", comment="error rows"),
        ColumnSpec("unknown", "bigint", comment="unknown type/version rows"),
        ColumnSpec("rows_by_kind", "map<string,bigint>"),
        ColumnSpec("rows_written", "map<string,bigint>", comment="table -> rows written"),
        ColumnSpec("source_partitions", f"array<{_SOURCE_PARTITION}>"),
        ColumnSpec(
            "offsets_not_seen",
            "bigint",
            comment="offsets between records this query did not receive: compaction, "
            "transaction markers, aborted records (read_committed) or data loss",
        ),
        ColumnSpec("keys_folded", "map<string,bigint>", comment="fold -> keys whose state moved"),
        ColumnSpec("event_time", "timestamp", comment="newest record timestamp of the batch"),
    ),
    key=("query_name", "batch_id"),
    append_only=True,
    comment="One row per micro-batch: counts in = events + quarantined + unknown.",
)

CATALOGUE: Mapping[str, TableSpec] = {
    t.logical: t
    for t in (
        RAW_RECORDS,
        GROUP_METADATA_EVENTS,
        CONSUMER_GROUP_EVENTS,
        TRANSACTION_LOG_EVENTS,
        CONTROL_RECORDS,
        QUARANTINE,
        *GOLD_TABLES.values(),
        FOLD_STATE,
        BATCH_AUDIT,
    )
}
SILVER_TABLES = tuple(t for t in CATALOGUE.values() if t.layer == SILVER)


def spec(logical: str) -> TableSpec:
    """The declaration of a logical table."""
    return CATALOGUE[logical]


# ----------------------------------------------------------------------------- DDL


def create_table_sql(cfg: Config, table: TableSpec) -> str:
    """``CREATE TABLE IF NOT EXISTS ... USING DELTA`` for one table."""
    lines = [
        f"CREATE TABLE IF NOT EXISTS {table_name(cfg, table.logical)} (",
        ",\n".join(f"  {c.ddl}" for c in table.columns),
        ") USING DELTA",
    ]
    if table.partition_by:
        lines.append("PARTITIONED BY (" + ", ".join(_quote(c) for c in table.partition_by) + ")")
    if table.cluster_by:
        lines.append("CLUSTER BY (" + ", ".join(_quote(c) for c in table.cluster_by) + ")")
    if table.comment:
        lines.append(f"COMMENT {_sql_string(table.comment)}")
    props = ", ".join(
        f"{_sql_string(k)} = {_sql_string(v)}" for k, v in table.properties(cfg).items()
    )
    lines.append(f"TBLPROPERTIES ({props})")
    return "\n".join(lines)


def ensure_tables(
    spark: SparkSession, cfg: Config, logical: Iterable[str] | None = None
) -> dict[str, str]:
    """Create the schema and the tables if they do not exist (idempotent).

    Args:
        spark: the session (its catalog: Hive metastore locally, Unity Catalog on Databricks).
        cfg: names come from ``[tables]`` and ``[storage]``.
        logical: which tables (default: the whole catalogue).

    Returns:
        Logical name -> qualified name of every table ensured.

    Raises:
        TableSchemaMismatchError: an existing table lacks a declared column that cannot be
            added in place (a NOT NULL or generated one).
    """
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {schema_name(cfg)}")
    existing = {
        row["tableName"].lower()
        for row in spark.sql(f"SHOW TABLES IN {schema_name(cfg)}").collect()
    }
    out: dict[str, str] = {}
    for name in logical if logical is not None else CATALOGUE:
        table = CATALOGUE[name]
        qualified = table_name(cfg, name)
        if physical_name(cfg, name).lower() in existing:
            have = {f.name for f in spark.table(qualified).schema.fields}
            missing = [c for c in table.columns if c.name not in have]
            # Columns a newer offsetscope added at the end of a table, nullable and computed by
            # no expression, are added in place (ALTER TABLE ... ADD COLUMNS, a metadata-only
            # Delta commit): older rows read them as null. Anything else needs a migration.
            if missing and all(c.nullable and c.generated is None for c in missing):
                added = ", ".join(c.ddl for c in missing)
                spark.sql(f"ALTER TABLE {qualified} ADD COLUMNS ({added})")
            elif missing:
                raise TableSchemaMismatchError(
                    f"{qualified} exists without columns {', '.join(c.name for c in missing)}; "
                    "migrate or drop it (the catalogue in offsetscope.spark.tables changed)"
                )
        else:
            _clear_interrupted_create(spark, cfg, name)
            spark.sql(create_table_sql(cfg, table))
        out[name] = qualified
    return out


_FIRST_COMMIT = f"{0:020d}.json"


def _clear_interrupted_create(spark: SparkSession, cfg: Config, logical: str) -> None:
    """Remove what a CREATE TABLE killed half-way left at a managed table's local location.

    Delta commits version 0 (``CREATE TABLE``) to the location, then the metastore registers
    the table; a driver killed in between leaves a location the next CREATE TABLE refuses
    (``DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION``), so the job could never start again
    (found by ``make chaos``). A location holding nothing but that first commit has no data:
    it is removed. Anything more is left for Delta to refuse. Only local (``file:``)
    warehouses; other catalogs manage their locations themselves.
    """
    if cfg.storage.catalog:
        return
    uri = spark.catalog.getDatabase(cfg.storage.schema).locationUri
    parsed = urlparse(uri)
    if parsed.scheme not in ("file", ""):
        return
    location = Path(unquote(parsed.path)) / physical_name(cfg, logical).lower()
    if not location.is_dir():
        return
    entries = {p.name for p in location.iterdir()}
    log = location / "_delta_log"
    commits = {p.name for p in log.glob("*.json")} if log.is_dir() else set()
    if entries <= {"_delta_log"} and commits <= {_FIRST_COMMIT}:
        logging.getLogger(__name__).warning(
            "removing %s: an interrupted CREATE TABLE left it (no data, not registered)",
            location,
        )
        shutil.rmtree(location)


# ----------------------------------------------------------------------------- Arrow types

_ARROW_PRIMITIVES: Mapping[str, pa.DataType] = {
    "string": pa.string(),
    "binary": pa.binary(),
    "boolean": pa.bool_(),
    "tinyint": pa.int8(),
    "smallint": pa.int16(),
    "int": pa.int32(),
    "bigint": pa.int64(),
    "double": pa.float64(),
    "float": pa.float32(),
    # Rows carry epoch milliseconds (history.rows); Spark converts to its microseconds.
    "timestamp": pa.timestamp("ms", tz="UTC"),
    "date": pa.date32(),
}


def arrow_type(ddl_type: str) -> pa.DataType:
    """The Arrow type for a DDL type of this catalogue (timestamps in milliseconds, UTC)."""
    return _arrow(history.parse_type(ddl_type))


def _arrow(parsed: history.ParsedType) -> pa.DataType:
    kind = parsed[0]
    if kind == "array":
        return pa.list_(_arrow(parsed[1]))
    if kind == "map":
        return pa.map_(_arrow(parsed[1]), _arrow(parsed[2]))
    if kind == "struct":
        return pa.struct([pa.field(name, _arrow(t)) for name, t in parsed[1]])
    return _ARROW_PRIMITIVES[kind]


def arrow_schema(table: TableSpec) -> pa.Schema:
    """The Arrow schema of the columns a writer supplies (see :attr:`TableSpec.written_columns`)."""
    return pa.schema(
        [pa.field(c.name, arrow_type(c.type), c.nullable) for c in table.written_columns]
    )
