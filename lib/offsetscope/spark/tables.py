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
    ops     fold_state                  the folds' state between micro-batches, a row per key and version
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
rows), the log / deleted-file retention from ``[pipeline]``, and a checkpoint interval of its
own for each table the ingest query writes (``CHECKPOINT_INTERVALS``: distinct primes, so that
the tables a batch writes do not all write their Delta checkpoints in the same batch).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_type

from offsetscope import clusters
from offsetscope.config import Config, default_cluster
from offsetscope.history import tables as history
from offsetscope.protocol.arrow_decode import DECODED_SCHEMA, RAW_SCHEMA
from offsetscope.spark import delta_meta

BRONZE = "bronze"
SILVER = "silver"
GOLD = "gold"
OPS = "ops"


class TableSchemaMismatchError(RuntimeError):
    """An existing table differs from its declaration in a way that cannot be added in place."""


# The natural key, kept as a table property: Delta has no keys, and a key that changes under
# rows already written changes what a MERGE matches.
KEY_PROPERTY = "offsetscope.key"


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
    # The timestamp column a row's age is read from ([maintenance.retention]); None: no age.
    age_column: str | None = None
    # Z-order columns of OPTIMIZE for a partitioned table (liquid clustering and partitioning
    # exclude each other): the partitioned tables people read by group.
    zorder_by: tuple[str, ...] = ()
    # The [tables] key naming the table, when it is not the logical name (a table whose
    # logical name is a view of it: groups_current).
    config_key: str | None = None
    # A log of versions: a key's rows are its versions, the one with the highest value of this
    # column is the key's row, the others are superseded until compacted (current_sql).
    version_column: str | None = None

    @property
    def written_columns(self) -> tuple[ColumnSpec, ...]:
        """The columns a writer supplies (all but Delta-generated ones), in order."""
        return tuple(c for c in self.columns if c.generated is None)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def current_columns(self) -> tuple[ColumnSpec, ...]:
        """The columns a reader of the key's current row sees: all but the version column of
        a log of versions."""
        return tuple(c for c in self.columns if c.name != self.version_column)

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
        rule = cfg.maintenance.retention.rule(self.logical)
        # Retention deletes rows, which an append-only table refuses.
        append_only = self.append_only and not (rule is not None and rule.trims)
        props = {
            KEY_PROPERTY: ",".join(self.key),
            "delta.appendOnly": "true" if append_only else "false",
            "delta.logRetentionDuration": cfg.pipeline.log_retention.delta_interval,
            "delta.deletedFileRetentionDuration": cfg.pipeline.deleted_file_retention.delta_interval,
        }
        if self.change_data_feed:
            props["delta.enableChangeDataFeed"] = "true"
        if (interval := CHECKPOINT_INTERVALS.get(self.logical)) is not None:
            props["delta.checkpointInterval"] = str(interval)
        # Delta keeps statistics on every column (no delta.dataSkippingStatsColumns): on the
        # largest gold append, partition_lag, keeping them on the key alone saved little and
        # would stop readers skipping files by lag (docs/benchmarks.md, "Measurements behind
        # design choices").
        return props


def _primes(start: int) -> Iterator[int]:
    n = start
    while True:
        if n > 1 and all(n % d for d in range(2, int(n**0.5) + 1)):
            yield n
        n += 1


# Delta writes a table's checkpoint in the commit whose version is a multiple of
# delta.checkpointInterval (10 by default), in the writer's thread. The tables a micro-batch
# writes advance together, a version each a batch, so with one interval they all checkpoint in
# the same batch, which then takes about twice as long (docs/benchmarks.md,
# freshness_trigger_5s). Each table the ingest query writes gets a prime of its own instead:
# two checkpoint in the same batch once every product of their intervals (143 batches at the
# least), three once every product of three (first in batch 11 x 13 x 17). Hottest first --
# the tables every batch writes and reads -- so that the smallest intervals, whose readers
# replay the fewest commits after a checkpoint, go where reads are most frequent.
_CHECKPOINT_ORDER = (
    "fold_state",
    "batch_audit",
    "groups_current",
    "offset_commits",
    "raw_records",
    "partition_lag",
    "end_offsets",
    "quality_results",
    "group_metadata_events",
    "group_generations",
    "group_state_transitions",
    "member_sessions",
    "partition_assignments",
    "consumer_group_events",
    "quality_quarantine",
    "quarantine",
    "transaction_log_events",
    "transactions",
    "transaction_status_timeline",
    "control_records",
    "stuck_partitions",
    "streams_assignments",
    "share_partition_state",
)
CHECKPOINT_INTERVALS: Mapping[str, int] = dict(zip(_CHECKPOINT_ORDER, _primes(11), strict=False))


# Group ids and transactional ids are unique within a cluster only: every table that holds
# records, folds or measurements of a cluster carries its name, last among its columns (where
# ALTER TABLE ... ADD COLUMNS puts it in a table created before it existed) and last in its key.
# Nullable, so that such a table can gain it in place; the migration fills it (_backfill).
CLUSTER = clusters.COLUMN
CLUSTER_COLUMN = ColumnSpec(
    CLUSTER,
    "string",
    comment="Kafka cluster the row belongs to ([clusters.<name>], or [sources] cluster)",
)


def _with_cluster(table: TableSpec) -> TableSpec:
    return dataclasses.replace(
        table, columns=(*table.columns, CLUSTER_COLUMN), key=(*table.key, CLUSTER)
    )


def has_cluster(logical: str) -> bool:
    """Whether a table carries the ``cluster`` column."""
    return CLUSTER in CATALOGUE[logical].column_names


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
    name: str = getattr(cfg.tables, CATALOGUE[logical].config_key or logical)
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
_RAW_COMMENTS = {
    "topic": "internal topic whose schemas apply",
    "partition": "partition of the internal topic",
    "offset": "offset of the record in that partition",
    "timestamp": "the record's timestamp",
    "key": "the record key's bytes, as written",
    "value": "the record value's bytes, as written; null for a tombstone",
    "producer_id": "producer id of the record's batch (-1 when the source does not say)",
    "producer_epoch": "producer epoch of the record's batch (-1 when the source does not say)",
    "is_transactional": "the batch was written inside a transaction",
    "is_control": "a transaction marker (control batch)",
    "source_topic": "topic actually read (a mirror topic's name, or the internal topic)",
    "source_error": "why the source could not frame the bytes (CRC mismatch, corrupt batch)",
}

RAW_RECORDS = _with_cluster(
    TableSpec(
        "raw_records",
        BRONZE,
        (
            *(
                ColumnSpec(
                    f.name,
                    "timestamp" if f.name == "timestamp" else _spark_type(f.type),
                    nullable=f.name not in _RAW_KEY,
                    source=f"timestamp_millis(`{f.name}`)"
                    if f.name == "timestamp"
                    else f"`{f.name}`",
                    comment=_RAW_COMMENTS[f.name],
                )
                for f in SOURCE_SCHEMA
            ),
            ColumnSpec("ingest_batch_id", "bigint", comment="micro-batch that wrote the row"),
            ColumnSpec("ingested_at", "timestamp", comment="wall-clock time of that micro-batch"),
            ColumnSpec(
                "record_date",
                "date",
                False,
                "CAST(`timestamp` AS DATE)",
                comment="date of the record's timestamp (partition column)",
            ),
        ),
        key=_RAW_KEY,
        partition_by=("record_date",),
        append_only=True,
        comment="Bronze: every internal-topic record as read, key and value bytes kept for replay.",
        age_column="timestamp",
    )
)

# ----------------------------------------------------------------------------- silver

# The decoded frame (spark.decode.DECODE_OUTPUT_SCHEMA) = DECODED_SCHEMA + raw bytes of the
# rows that go to quarantine + whether the decode's task saw its records' offsets stop
# ascending (spark.decode.decode_arrow; what pipelines.frames.coordinates_unique reads).
DECODE_EXTRA = (
    pa.field("raw_key", pa.binary()),
    pa.field("raw_value", pa.binary()),
    pa.field("out_of_sequence", pa.bool_(), nullable=False),
)
DECODE_EXTRA_NAMES = tuple(f.name for f in DECODE_EXTRA)

_COORDINATES = (
    ColumnSpec("internal_topic", "string", False, source="`topic`", comment="internal topic"),
    ColumnSpec("record_partition", "int", False, source="`partition`", comment="its partition"),
    ColumnSpec("record_offset", "bigint", False, source="`offset`", comment="the record's offset"),
    ColumnSpec(
        "record_timestamp",
        "timestamp",
        source="timestamp_millis(`timestamp`)",
        comment="the record's timestamp",
    ),
    ColumnSpec(
        "batch_producer_id", "bigint", source="`producer_id`", comment="producer id of its batch"
    ),
    ColumnSpec(
        "batch_producer_epoch",
        "smallint",
        source="`producer_epoch`",
        comment="producer epoch of its batch",
    ),
    ColumnSpec(
        "batch_is_transactional",
        "boolean",
        source="`is_transactional`",
        comment="its batch was written inside a transaction",
    ),
)
_HEADER_COMMENTS = {
    "record_type": "key type: 0/1 offset commit, 2 group metadata, 3+ KIP-848 and later groups",
    "value_version": "version of the value's schema; null for a tombstone",
    "is_tombstone": "the record has no value (a deletion)",
}
_HEADER = tuple(
    ColumnSpec(
        name,
        _spark_type(DECODED_SCHEMA.field(name).type),
        source=f"`{name}`",
        comment=_HEADER_COMMENTS[name],
    )
    for name in ("record_type", "value_version", "is_tombstone")
)
_SILVER_KEY = ("internal_topic", "record_partition", "record_offset")
_INGEST = (ColumnSpec("ingest_batch_id", "bigint", comment="micro-batch that wrote the row"),)

# What each decoded field is, for the silver tables' column comments (the names mirror the
# fields of Kafka's JSON message specs, docs/formats.md).
_FIELD_COMMENTS = {
    "group_metadata": {
        "group": "consumer group id (GroupMetadataKey.group)",
        "protocol_type": "protocolType: consumer, connect, ...",
        "generation": "generation id",
        "protocol": "the chosen assignor",
        "leader": "member id of the leader",
        "current_state_timestamp": "currentStateTimestamp, epoch ms (-1 when absent)",
        "members": "members with their subscription and assignment, decoded",
    },
    "consumer_group": {
        "record_type_name": "KIP-848 record type (ConsumerGroupMetadata, ...MemberMetadata, ...)",
        "group_id": "group id of the key",
        "member_id": "member id of the key, where the record type has one",
        "key_json": "the key as Kafka's console formatter prints it",
        "value_json": "the value as Kafka's console formatter prints it",
    },
    "transaction_log": {
        "transactional_id": "transactional.id of the key",
        "producer_id": "producerId",
        "previous_producer_id": "previousProducerId (KIP-890)",
        "next_producer_id": "nextProducerId (KIP-890)",
        "producer_epoch": "producerEpoch",
        "next_producer_epoch": "nextProducerEpoch (KIP-890)",
        "transaction_timeout_ms": "transactionTimeoutMs",
        "transaction_status": "transactionStatus as stored (int8)",
        "transaction_partitions": "partitions in the transaction",
        "transaction_last_update_timestamp_ms": "transactionLastUpdateTimestampMs",
        "transaction_start_timestamp_ms": "transactionStartTimestampMs",
        "client_transaction_version": "clientTransactionVersion",
        "transaction_status_name": "transactionStatus by name (Ongoing, PrepareCommit, ...)",
    },
    "control": {
        "control_type": "COMMIT or ABORT",
        "coordinator_epoch": "epoch of the coordinator that wrote the marker",
    },
}


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
            comment=_FIELD_COMMENTS[struct_column][f.name],
        )
        for f in struct_type
    )


def _silver(
    logical: str, kind: str, fields: tuple[ColumnSpec, ...], comment: str, header: bool = True
) -> TableSpec:
    columns = (*_COORDINATES, *(_HEADER if header else ()), *fields, *_INGEST)
    return _with_cluster(
        TableSpec(
            logical,
            SILVER,
            columns,
            key=_SILVER_KEY,
            # A group's records together: the group tables are read group by group.
            cluster_by=("group_id",) if any(c.name == "group_id" for c in columns) else (),
            comment=comment,
            where=f"kind = '{kind}'",
            age_column="record_timestamp",
        )
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
        ColumnSpec(
            "control_type_id",
            "smallint",
            source="`record_type`",
            comment="control record type: 0 ABORT, 1 COMMIT",
        ),
        *_flattened("control"),
    ),
    "Silver: transaction markers in the internal topics (segment sources only).",
    header=False,
)

QUARANTINED = "quarantined"  # bad bytes: kept until a decoder fix replays them
SKIPPED_UNKNOWN = "skipped_unknown"  # unknown record type or version: Kafka warns and skips

QUARANTINE = _with_cluster(
    TableSpec(
        "quarantine",
        SILVER,
        (
            *_COORDINATES,
            ColumnSpec("kind", "string", False, source="`kind`", comment="error | unknown"),
            *_HEADER,
            ColumnSpec(
                "error_class",
                "string",
                source="`error`.`error_class`",
                comment="decode error class",
            ),
            ColumnSpec(
                "error_message",
                "string",
                source="`error`.`message`",
                comment="what the decoder said",
            ),
            ColumnSpec(
                "field_path",
                "string",
                source="`error`.`field_path`",
                comment="field being read when it failed",
            ),
            ColumnSpec(
                "byte_offset",
                "int",
                source="`error`.`byte_offset`",
                comment="byte offset of the failure",
            ),
            ColumnSpec(
                "unknown_reason",
                "string",
                source="`unknown_reason`",
                comment="why the record is unknown (type or version)",
            ),
            ColumnSpec("key", "binary", source="`raw_key`", comment="the record key's bytes"),
            ColumnSpec("value", "binary", source="`raw_value`", comment="the record value's bytes"),
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
        age_column="record_timestamp",
    )
)

# ----------------------------------------------------------------------------- gold


# The timestamp a gold row's age is read from, for the tables that grow with time rather than
# with the number of groups and transactions.
_GOLD_AGE = {
    "offset_commits": "record_timestamp",
    "end_offsets": "sampled_at",
    "partition_lag": "as_of",
}


def _gold(table: history.Table, cluster_by: Sequence[str] = ()) -> TableSpec:
    # The history package declares a table's columns and key within one cluster; the cluster
    # is the catalogue's (the folds know nothing of clusters).
    by_group = any(c.name == "group_id" for c in table.columns)
    return _with_cluster(
        TableSpec(
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
            age_column=_GOLD_AGE.get(table.name),
            zorder_by=("group_id",) if table.partition_by and by_group else (),
        )
    )


# Clustered by group where rows belong to a group (people read them group by group), else by
# the key's first column.
GOLD_TABLES = {
    t.name: _gold(t, ("group_id",) if "group_id" in (c.name for c in t.columns) else t.key[:1])
    for t in history.TABLES.values()
}
# groups_current is kept as a log, a row per group and version, so that a batch appends the
# groups it changed rather than MERGE them (a MERGE is a dozen Spark jobs, the longest write of
# a small batch: docs/benchmarks.md, small_batch_s). The table is groups_current_log; the view
# groups_current shows each group's latest row (GROUPS_CURRENT_VIEW). A row's seq is the
# version of its group's fold state it was folded into (lib/offsetscope/pipelines/batch.py), so
# a replay gives its rows the same versions. Last among the columns, where ALTER TABLE ... ADD
# COLUMNS puts it in the table from before (filled: _BACKFILL).
SEQ = "seq"
GROUPS_CURRENT = dataclasses.replace(
    GOLD_TABLES["groups_current"],
    columns=(
        *GOLD_TABLES["groups_current"].columns,
        ColumnSpec(
            SEQ,
            "bigint",
            comment="the version of the group's fold state this row was folded into: the row "
            "with the highest is the group's, older rows are superseded until compacted",
        ),
    ),
    config_key="groups_current_log",
    version_column=SEQ,
    comment="Each group's state, a row per group and version: the groups_current view shows "
    "the latest; offsetscope's own groups are labelled.",
)
GOLD_TABLES["groups_current"] = GROUPS_CURRENT

# ----------------------------------------------------------------------------- ops

FOLD_STATE = _with_cluster(
    TableSpec(
        "fold_state",
        OPS,
        (
            ColumnSpec("fold", "string", False, comment="offsets | group | txn | end_offsets"),
            ColumnSpec("key", "string", False, comment="partition, group id, transactional id ..."),
            ColumnSpec("state", "string", comment="the fold's state as JSON (history.codec)"),
            ColumnSpec("last_offset", "bigint", comment="last record folded into it"),
            ColumnSpec(
                "updated_batch_id", "bigint", comment="micro-batch that last wrote the state"
            ),
            ColumnSpec("updated_at", "timestamp", comment="when the state was written"),
        ),
        key=("fold", "key"),
        cluster_by=("fold", "key"),
        change_data_feed=True,
        comment="State the driver-side folds carry between micro-batches, loaded per key: a "
        "log, a key's state is its row with the highest seq (pipelines/state.py).",
    )
)
# Last, where ALTER TABLE ... ADD COLUMNS puts it in a table from before it (filled: _BACKFILL).
FOLD_STATE = dataclasses.replace(
    FOLD_STATE,
    columns=(
        *FOLD_STATE.columns,
        ColumnSpec(
            SEQ,
            "bigint",
            comment="the key's version: the row with the highest is its state, older rows are "
            "superseded until compacted",
        ),
    ),
    version_column=SEQ,
)

_SOURCE_PARTITION = (
    "struct<topic:string,partition:int,first_offset:bigint,last_offset:bigint,"
    "records:bigint,offsets_not_seen:bigint>"
)

BATCH_AUDIT = TableSpec(
    "batch_audit",
    OPS,
    (
        ColumnSpec("query_name", "string", False, comment="ingest query (checkpoint folder)"),
        ColumnSpec("batch_id", "bigint", False, comment="micro-batch id"),
        ColumnSpec("source_kind", "string", False, comment="kafka | segments"),
        ColumnSpec("started_at", "timestamp", comment="when the batch started"),
        ColumnSpec("finished_at", "timestamp", comment="when it finished"),
        ColumnSpec("rows_in", "bigint", comment="records the source delivered"),
        ColumnSpec("events", "bigint", comment="decoded rows of a known kind"),
        ColumnSpec("quarantined", "bigint", comment="error rows"),
        ColumnSpec("unknown", "bigint", comment="unknown type/version rows"),
        ColumnSpec("rows_by_kind", "map<string,bigint>", comment="decoded rows per kind"),
        ColumnSpec("rows_written", "map<string,bigint>", comment="table -> rows written"),
        ColumnSpec(
            "source_partitions",
            f"array<{_SOURCE_PARTITION}>",
            comment="per source partition: offsets read and not seen",
        ),
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
    age_column="started_at",
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


def current_sql(cfg: Config, logical: str) -> str:
    """What SQL reads ``logical``'s rows from: its qualified name, or for a log of versions
    (:attr:`TableSpec.version_column`) a subquery of each key's latest row, without the
    version column."""
    table = CATALOGUE[logical]
    name = table_name(cfg, logical)
    if table.version_column is None:
        return name
    columns = ", ".join(_quote(c.name) for c in table.current_columns)
    key = ", ".join(_quote(c) for c in table.key)
    return (
        f"(SELECT {columns} FROM (SELECT *, row_number() OVER (PARTITION BY {key} "
        f"ORDER BY {_quote(table.version_column)} DESC) AS _version FROM {name}) "
        f"WHERE _version = 1)"
    )


def current_rows(spark: SparkSession, cfg: Config, logical: str) -> DataFrame:
    """``logical``'s rows as :func:`current_sql` reads them."""
    return spark.sql(f"SELECT * FROM {current_sql(cfg, logical)}")


# ----------------------------------------------------------------------------- views

# Why a generation began, from what its row knows: the members that joined or left since the
# previous generation (client ids of the ones that joined), a static member's replacement, or
# none of these (the same members rejoined: a subscription or metadata change, or a leader's
# forced rebalance).
REBALANCE_CAUSE = """CASE
  WHEN previous_generation IS NULL THEN 'group formed'
  WHEN size(members_joined) > 0 AND size(members_left) > 0
    THEN concat(size(members_joined), ' joined, ', size(members_left), ' left or evicted')
  WHEN size(members_joined) > 0
    THEN concat('joined: ', array_join(transform(
      filter(members, m -> array_contains(members_joined, m.member_id)), m -> m.client_id), ', '))
  WHEN size(members_left) > 0 THEN concat(size(members_left), ' left or evicted')
  WHEN static_replacements > 0 THEN 'static member replaced'
  ELSE 'same members rejoined'
END"""

# The leader's client id (member ids are long; operators know their clients by client.id).
LEADER_CLIENT = (
    "coalesce(try_element_at(filter(members, m -> m.member_id = leader), 1).client_id, leader)"
)


@dataclass(frozen=True, slots=True)
class ViewSpec:
    """A view over the gold tables: the answer to one common question, one short query away.

    ``body`` is a SELECT whose placeholders are filled by :meth:`select`: ``{<logical table>}``
    with the table's qualified name, ``{now}`` with the moment the question is asked (the view
    itself: ``current_timestamp()``, so windows such as "the last hour" are computed when it is
    queried), ``{own_groups}`` with the ids of offsetscope's own consumer groups (left out), and
    ``{current_lag}`` with the ``current_lag`` view's own SELECT. The reports and commands run
    the same SELECT with a fixed moment.
    """

    logical: str
    columns: tuple[tuple[str, str], ...]  # (name, comment), in the SELECT's order
    body: str
    comment: str

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)

    def select(
        self, cfg: Config, *, now: str = "current_timestamp()", include_own: bool = False
    ) -> str:
        """The view's SELECT for ``now`` (a SQL timestamp expression)."""
        names = {logical: current_sql(cfg, logical) for logical in CATALOGUE}
        own = "" if include_own else " WHERE offsetscope_own"
        # Every version of a group says the same: the label follows from the group id.
        gc = table_name(cfg, "groups_current")
        own_groups = f"(SELECT group_id FROM {gc}{own or ' WHERE false'})"
        lag = ""
        if "{current_lag}" in self.body:
            lag = CURRENT_LAG.select(cfg, now=now, include_own=include_own)
        return self.body.format(**names, now=now, own_groups=own_groups, current_lag=lag)


GROUPS_CURRENT_VIEW = ViewSpec(
    "groups_current",
    tuple((c.name, c.comment) for c in GROUPS_CURRENT.current_columns),
    "SELECT "
    + ", ".join(_quote(c.name) for c in GROUPS_CURRENT.current_columns)
    + " FROM {groups_current}",
    "One row per group: its state now (the latest row of groups_current_log); offsetscope's "
    "own groups are labelled.",
)

CURRENT_LAG = ViewSpec(
    "current_lag",
    (
        ("cluster", "Kafka cluster"),
        ("group_id", "consumer group id"),
        ("topic", "consumed topic"),
        ("partition", "consumed partition"),
        ("committed_offset", "CURRENT-OFFSET: the group's committed offset"),
        ("end_offset", "LOG-END-OFFSET: high watermark, or LSO for read_committed groups"),
        ("lag_records", "LAG: end_offset - committed_offset"),
        ("lag_seconds", "how long ago the committed offset was the end of the log"),
        ("lag_method", "caught_up | exact | interpolated | extrapolated"),
        ("read_committed", "measured against the last stable offset"),
        ("data_loss", "committed offset below the log start offset"),
        ("lost_records", "records deleted before the group read them"),
        ("committed_at", "when the committed offset became the group's"),
        ("as_of", "time of the end-offset sample"),
    ),
    """SELECT cluster, group_id, topic, `partition`, committed_offset, end_offset, lag_records,
       lag_seconds, lag_method, read_committed, data_loss, lost_records, committed_at, as_of
FROM (
  SELECT *, row_number() OVER (PARTITION BY cluster, group_id, topic, `partition`
                               ORDER BY as_of DESC) AS _n
  FROM {partition_lag}
  WHERE as_of <= {now})
WHERE _n = 1 AND group_id NOT IN {own_groups}""",
    "Current lag per group and partition: the latest measurement of each (like "
    "kafka-consumer-groups --describe).",
)

GROUP_OVERVIEW = ViewSpec(
    "group_overview",
    (
        ("cluster", "Kafka cluster"),
        ("group_id", "consumer group id"),
        ("kind", "classic | kip848 | simple"),
        ("state", "state now"),
        ("generation", "current generation (classic) or group epoch (KIP-848)"),
        ("protocol", "assignor in use"),
        ("protocol_type", "consumer, connect, ... as the members declared it"),
        ("members", "members now"),
        ("rebalances_1h", "rebalances in the hour before the query"),
        ("rebalances_24h", "rebalances in the day before the query"),
        ("last_rebalance_at", "time of the latest rebalance"),
        ("last_commit_at", "when the group last committed"),
        ("partitions", "partitions with a lag measurement"),
        ("lag_records", "total lag in records (sum over partitions)"),
        ("max_lag_seconds", "largest lag in seconds of any partition"),
        ("deleted", "the group was deleted"),
        ("updated_at", "timestamp of the last record about the group"),
    ),
    """WITH gen AS (
  SELECT cluster, group_id,
         sum(CASE WHEN stored_at > {now} - INTERVAL 1 HOUR THEN rebalances ELSE 0 END)
           AS rebalances_1h,
         sum(rebalances) AS rebalances_24h
  FROM {group_generations}
  WHERE stored_at > {now} - INTERVAL 24 HOURS AND stored_at <= {now}
  GROUP BY cluster, group_id),
lag AS (
  SELECT cluster, group_id, count(*) AS partitions, sum(lag_records) AS lag_records,
         max(lag_seconds) AS max_lag_seconds
  FROM ({current_lag})
  GROUP BY cluster, group_id)
SELECT c.cluster, c.group_id, c.kind, coalesce(c.state, 'Unknown') AS state, c.generation, c.protocol,
       c.protocol_type, c.member_count AS members, coalesce(gen.rebalances_1h, 0) AS rebalances_1h,
       coalesce(gen.rebalances_24h, 0) AS rebalances_24h, c.last_rebalance_at,
       c.last_commit_at, coalesce(lag.partitions, 0) AS partitions, lag.lag_records,
       lag.max_lag_seconds, c.deleted, c.updated_at
FROM {groups_current} c
LEFT JOIN gen ON gen.cluster <=> c.cluster AND gen.group_id = c.group_id
LEFT JOIN lag ON lag.cluster <=> c.cluster AND lag.group_id = c.group_id
WHERE c.group_id NOT IN {own_groups}""",
    "One row per group: state, members, rebalances in the last hour and day (counted when "
    "queried), lag.",
)

MEMBER_CHURN = ViewSpec(
    "member_churn",
    (
        ("cluster", "Kafka cluster"),
        ("group_id", "consumer group id"),
        ("joined_1h", "member sessions begun in the last hour"),
        ("left_1h", "member sessions ended in the last hour"),
        ("joined_24h", "member sessions begun in the last day"),
        ("left_24h", "member sessions ended in the last day"),
        ("static_replacements_24h", "static members that rejoined with a new member id"),
        ("members_now", "member sessions open now"),
        ("clients", "distinct client ids ever seen"),
        ("sessions", "member sessions ever seen"),
    ),
    """SELECT cluster, group_id,
       count_if(joined_at > {now} - INTERVAL 1 HOUR) AS joined_1h,
       count_if(left_at > {now} - INTERVAL 1 HOUR AND left_at <= {now}) AS left_1h,
       count_if(joined_at > {now} - INTERVAL 24 HOURS) AS joined_24h,
       count_if(left_at > {now} - INTERVAL 24 HOURS AND left_at <= {now}) AS left_24h,
       count_if(replaces IS NOT NULL AND joined_at > {now} - INTERVAL 24 HOURS)
         AS static_replacements_24h,
       count_if(left_at IS NULL OR left_at > {now}) AS members_now,
       count(DISTINCT client_id) AS clients,
       count(*) AS sessions
FROM {member_sessions}
WHERE joined_at <= {now} AND group_id NOT IN {own_groups}
GROUP BY cluster, group_id""",
    "Member churn per group: sessions begun and ended in the last hour and day.",
)

HANGING_TRANSACTIONS = ViewSpec(
    "hanging_transactions",
    (
        ("cluster", "Kafka cluster"),
        ("transactional_id", "transactional.id of the producer"),
        ("producer_id", "producer id"),
        ("producer_epoch", "producer epoch"),
        ("state", "transaction status (Ongoing, PrepareCommit, ...)"),
        ("started_at", "when it began"),
        ("timeout_ms", "transaction.timeout.ms"),
        ("open_ms", "how long it has been open"),
        ("partition_count", "partitions it holds open (their LSO cannot pass it)"),
        ("partitions", "those partitions"),
    ),
    """SELECT cluster, transactional_id, producer_id, producer_epoch, state, started_at,
       timeout_ms,
       unix_millis({now}) - unix_millis(started_at) AS open_ms, partition_count, partitions
FROM {transactions}
WHERE started_at <= {now}
  AND (completed_at IS NULL OR completed_at > {now})
  AND timestampadd(MILLISECOND, timeout_ms, started_at) < {now}""",
    "Transactions open longer than their timeout (like kafka-transactions find-hanging).",
)

GROUP_TIMELINE = ViewSpec(
    "group_timeline",
    (
        ("cluster", "Kafka cluster"),
        ("group_id", "consumer group id"),
        ("group_life", "0, +1 each time the id is deleted and re-created"),
        ("at", "when it happened"),
        ("event", "rebalance | state | member joined | member left | member replaced ..."),
        ("generation", "generation it belongs to"),
        ("detail", "what happened, in words"),
    ),
    """SELECT cluster, group_id, group_life, at, event, generation, detail FROM (
  SELECT cluster, group_id, group_life, coalesce(join_completed_at, stored_at) AS at,
         'rebalance' AS event, generation,
         concat('generation ', generation, ': ', member_count, ' members, leader ',
                coalesce("""
    + LEADER_CLIENT
    + """, '-'), ', ', partitions_moved,
                ' partitions moved; cause: ', """
    + REBALANCE_CAUSE
    + """) AS detail
  FROM {group_generations}
  UNION ALL
  SELECT cluster, group_id, group_life, coalesce(at, at_max) AS at, 'state' AS event,
         generation,
         concat(coalesce(from_state, '-'), ' -> ', to_state,
                CASE WHEN inferred THEN ' (inferred)' ELSE '' END, ': ', reason) AS detail
  FROM {group_state_transitions}
  UNION ALL
  SELECT cluster, group_id, group_life, joined_at AS at, 'member joined' AS event,
         first_generation AS generation,
         concat(client_id, ' from ', client_host,
                CASE WHEN replaces IS NOT NULL THEN concat(', replacing ', replaces) ELSE '' END)
           AS detail
  FROM {member_sessions}
  UNION ALL
  SELECT cluster, group_id, group_life, left_at AS at, concat('member ', end_reason) AS event,
         last_generation AS generation, concat(client_id, ' from ', client_host) AS detail
  FROM {member_sessions}
  WHERE left_at IS NOT NULL)
WHERE at <= {now} AND group_id NOT IN {own_groups}""",
    "A group's history as one timeline: rebalances with their cause, state changes, members "
    "joining and leaving.",
)

VIEWS: Mapping[str, ViewSpec] = {
    v.logical: v
    for v in (
        GROUPS_CURRENT_VIEW,
        CURRENT_LAG,
        GROUP_OVERVIEW,
        MEMBER_CHURN,
        HANGING_TRANSACTIONS,
        GROUP_TIMELINE,
    )
}


def view_name(cfg: Config, logical: str) -> str:
    """The fully qualified, quoted name of a view."""
    if logical not in VIEWS:
        raise KeyError(f"no view {logical!r}")
    return f"{schema_name(cfg)}.{_quote(getattr(cfg.tables, logical))}"


# A view's property holding a digest of its definition: an unchanged view is not replaced (a
# CREATE OR REPLACE VIEW resolves every table it reads, which costs each start of a job).
_DEFINITION = "offsetscope.definition"


def create_view_sql(cfg: Config, view: ViewSpec) -> str:
    """``CREATE OR REPLACE VIEW`` with the view's and every column's comment."""
    columns = ",\n".join(f"  {_quote(n)} COMMENT {_sql_string(c)}" for n, c in view.columns)
    head = (
        f"CREATE OR REPLACE VIEW {view_name(cfg, view.logical)} (\n{columns}\n)\n"
        f"COMMENT {_sql_string(view.comment)}\n"
    )
    body = f"AS {view.select(cfg)}"
    digest = hashlib.sha256((head + body).encode()).hexdigest()[:16]
    return f"{head}TBLPROPERTIES ({_sql_string(_DEFINITION)} = {_sql_string(digest)})\n{body}"


def _view_digest(sql: str) -> str:
    return sql.split(f"{_sql_string(_DEFINITION)} = ", 1)[1].split(")", 1)[0].strip("'")


def ensure_views(
    spark: SparkSession,
    cfg: Config,
    existing: Iterable[str] | None = None,
    logical: Iterable[str] | None = None,
) -> dict[str, str]:
    """Create every view (or those named by ``logical``), or replace one whose definition
    changed; logical -> qualified name.

    Args:
        existing: lower-case names already in the schema (default: listed here).
    """
    if existing is None:
        existing = {
            row["tableName"].lower()
            for row in spark.sql(f"SHOW TABLES IN {schema_name(cfg)}").collect()
        }
    have = set(existing)
    out = {}
    for view in VIEWS.values() if logical is None else [VIEWS[name] for name in logical]:
        sql = create_view_sql(cfg, view)
        name = view_name(cfg, view.logical)
        stored = None
        if getattr(cfg.tables, view.logical).lower() in have:
            rows = spark.sql(f"SHOW TBLPROPERTIES {name} ({_sql_string(_DEFINITION)})").collect()
            stored = rows[0]["value"] if rows else None
        if stored != _view_digest(sql):
            spark.sql(sql)
        out[view.logical] = name
    return out


# ----------------------------------------------------------------------------- DDL


def create_table_sql(
    cfg: Config, table: TableSpec, *, replace: bool = False, extra: Mapping[str, str] | None = None
) -> str:
    """``CREATE TABLE IF NOT EXISTS ... USING DELTA`` for one table (``CREATE OR REPLACE`` with
    ``replace``; ``extra`` properties beside the declared ones)."""
    verb = "CREATE OR REPLACE TABLE" if replace else "CREATE TABLE IF NOT EXISTS"
    lines = [
        f"{verb} {table_name(cfg, table.logical)} (",
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
        f"{_sql_string(k)} = {_sql_string(v)}"
        for k, v in {**table.properties(cfg), **(extra or {})}.items()
    )
    lines.append(f"TBLPROPERTIES ({props})")
    return "\n".join(lines)


def ensure_tables(
    spark: SparkSession, cfg: Config, logical: Iterable[str] | None = None
) -> dict[str, str]:
    """Create the schema and the tables if they do not exist (idempotent), and the views.

    An existing table is brought up to its declaration where that is additive (see
    :func:`plan_migration`): a declared column it lacks that may be null is added (``ALTER
    TABLE ... ADD COLUMNS``, then filled where :func:`_backfill` says how), its clustering,
    properties and comments are set; each change is logged with the Delta version it made.

    Args:
        spark: the session (its catalog: Hive metastore locally, Unity Catalog on Databricks).
        cfg: names come from ``[tables]`` and ``[storage]``.
        logical: which tables (default: the whole catalogue, and then the views too).

    Returns:
        Logical name -> qualified name of every table (and view) ensured.

    Raises:
        TableSchemaMismatchError: an existing table differs in a way that is not additive (a
            column that may not be null, a type, the key or the partitioning changed, a column
            removed); the message names the table, the column and ``offsetscope migrate``.
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
            migrate(spark, cfg, table, qualified)
        elif (before := _table_it_replaces(spark, cfg, table, existing)) is not None:
            # Renamed, not copied: its rows, history and idempotency marks go with it; the
            # migration adds what it lacks (a version column: _BACKFILL).
            spark.sql(f"ALTER TABLE {before} RENAME TO {qualified}")
            logging.getLogger(__name__).info(
                "%s: renamed to %s (a view takes its name)", before, qualified
            )
            existing.discard(getattr(cfg.tables, name).lower())
            existing.add(physical_name(cfg, name).lower())
            migrate(spark, cfg, table, qualified)
        else:
            clear_interrupted_create(spark, cfg, physical_name(cfg, name))
            spark.sql(create_table_sql(cfg, table))
        out[name] = qualified
    if logical is None:
        out.update(ensure_views(spark, cfg, existing))
    else:
        # A view that took a table's logical name is how that table is read: it comes with it.
        named = [name for name in out if name in VIEWS]
        if named:
            ensure_views(spark, cfg, existing, named)
    return out


def _table_it_replaces(
    spark: SparkSession, cfg: Config, table: TableSpec, existing: set[str]
) -> str | None:
    """The qualified name of the table ``table`` was kept in before a view took its logical
    name (:attr:`TableSpec.config_key`), when that table still exists; else None."""
    if table.config_key is None:
        return None
    old = getattr(cfg.tables, table.logical)
    if old.lower() not in existing:
        return None
    qualified = f"{schema_name(cfg)}.{_quote(old)}"
    kind = [
        r["data_type"]
        for r in spark.sql(f"DESCRIBE TABLE EXTENDED {qualified}").collect()
        if r["col_name"] == "Type"
    ]
    return None if kind and kind[0].upper() == "VIEW" else qualified


# How to fill a column added to an existing table, for the rows written before it existed.
_BACKFILL: Mapping[tuple[str, str], Callable[[Config], str]] = {
    # One row per key before the state became a log (pipelines/state.py): each is its key's.
    ("fold_state", "seq"): lambda cfg: "0",
    # One row per group before groups_current became a log: each is its group's.
    ("groups_current", "seq"): lambda cfg: "0",
    ("groups_current", "offsetscope_own"): lambda cfg: (
        f"startswith(group_id, {_sql_string(cfg.sources.kafka.group_id_prefix)})"
        if cfg.sources.kafka.group_id_prefix
        else "false"
    ),
}


def _backfill(table: TableSpec, column: str) -> Callable[[Config], str] | None:
    """How to fill ``column`` of the rows ``table`` held before the column existed, or None."""
    if column == CLUSTER:
        # A table older than the cluster column holds one cluster's rows: [sources]'s. So do
        # the tables declared outside the catalogue (alerts, alert_notifications).
        return lambda cfg: _sql_string(default_cluster(cfg))
    return _BACKFILL.get((table.logical, column))


@dataclass(frozen=True, slots=True)
class ExistingTable:
    """What a table in the catalog is: column types (Spark's simple strings), partitioning,
    clustering, properties."""

    columns: Mapping[str, str]
    partition_by: tuple[str, ...] = ()
    cluster_by: tuple[str, ...] = ()
    properties: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # None: not read with the rest (the catalog is asked when the comments are set).
    comment: str | None = None
    column_comments: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class Incompatibility:
    """A difference between a table and its declaration that rows already written prevent."""

    column: str
    change: str


@dataclass(frozen=True, slots=True)
class MigrationPlan:
    """What bringing one table up to its declaration takes."""

    add: tuple[ColumnSpec, ...] = ()
    cluster_by: tuple[str, ...] | None = None  # None: clustering unchanged
    properties: Mapping[str, str] = dataclasses.field(default_factory=dict)
    incompatible: tuple[Incompatibility, ...] = ()

    @property
    def additive(self) -> bool:
        return not self.incompatible


def migrate_command(cfg: Config, logical: str) -> str:
    """The command that rewrites a table whose change is not additive."""
    return f"offsetscope migrate --tables {logical} --env {cfg.env}"


def same_type(a: str, b: str) -> bool:
    """Whether two Spark SQL type strings name the same type (spelling aside)."""
    return history.parse_type(a.lower()) == history.parse_type(b.lower())


def plan_migration(table: TableSpec, existing: ExistingTable, cfg: Config) -> MigrationPlan:
    """What ``ensure_tables`` does to an existing table, or why it cannot.

    Additive: a missing column that may be null (generated columns cannot be added to rows
    already written), a clustering declared for an unpartitioned table, properties. Anything
    else -- a missing column that may not be null, a type changed, a column the declaration no
    longer has, another key or partitioning -- needs the rows rewritten
    (:func:`rewrite_table`, ``offsetscope migrate``).
    """
    incompatible: list[Incompatibility] = []
    add: list[ColumnSpec] = []
    for c in table.columns:
        have = existing.columns.get(c.name)
        if have is None:
            if c.nullable and c.generated is None:
                add.append(c)
            else:
                why = "generated" if c.generated is not None else "NOT NULL"
                incompatible.append(Incompatibility(c.name, f"added as {why}"))
        elif not same_type(have, c.type):
            incompatible.append(Incompatibility(c.name, f"type changed from {have} to {c.type}"))
    declared = set(table.column_names)
    incompatible += [
        Incompatibility(name, "removed or renamed")
        for name in existing.columns
        if name not in declared
    ]
    if existing.partition_by != table.partition_by:
        incompatible.append(
            Incompatibility(
                ", ".join(table.partition_by) or "-",
                f"partitioning changed from ({', '.join(existing.partition_by)})",
            )
        )
    stored_key = existing.properties.get(KEY_PROPERTY)
    if stored_key is not None and not _key_extends(table, stored_key.split(","), add):
        incompatible.append(
            Incompatibility(", ".join(table.key), f"key changed from ({stored_key})")
        )
    cluster_by = None
    if not table.partition_by and existing.cluster_by != table.cluster_by:
        cluster_by = table.cluster_by
    properties = {k: v for k, v in table.properties(cfg).items() if existing.properties.get(k) != v}
    return MigrationPlan(tuple(add), cluster_by, properties, tuple(incompatible))


def _key_extends(table: TableSpec, stored: Sequence[str], add: Sequence[ColumnSpec]) -> bool:
    """Whether the declared key is the stored one, or the stored one plus columns this
    migration adds and fills with one value for every row written before (the ``cluster``
    column): the rows already written stay unique, so the change is additive."""
    if list(table.key) == list(stored):
        return True
    filled = {c.name for c in add if _backfill(table, c.name) is not None}
    rest = [k for k in table.key if k not in stored]
    return [k for k in table.key if k in stored] == list(stored) and set(rest) <= filled


def describe_table(spark: SparkSession, qualified: str) -> ExistingTable:
    """The table as its Delta log has it.

    From the latest ``metaData`` action where the session's Delta exposes it
    (:mod:`offsetscope.spark.delta_meta`: no Spark job); the clustering columns from
    ``DESCRIBE DETAIL`` only when the version's checksum does not carry them, and everything
    from the catalog on another runtime.
    """
    meta = delta_meta.read(spark, qualified)
    if meta is None:
        return _describe_from_catalog(spark, qualified)
    cluster_by = meta.cluster_by
    if cluster_by is delta_meta.UNKNOWN:
        cluster_by = _describe_from_catalog(spark, qualified).cluster_by
    return ExistingTable(
        columns={f.name: f.dataType.simpleString() for f in meta.schema},
        partition_by=meta.partition_by,
        cluster_by=cluster_by,
        properties=meta.properties,
        comment=meta.comment,
        column_comments={f.name: f.metadata.get("comment", "") for f in meta.schema},
    )


def _describe_from_catalog(spark: SparkSession, qualified: str) -> ExistingTable:
    # DESCRIBE DETAIL reconstructs the table's state (docs/benchmarks.md, "Measurements behind
    # design choices").
    detail = spark.sql(f"DESCRIBE DETAIL {qualified}").collect()[0].asDict()
    return ExistingTable(
        columns={f.name: f.dataType.simpleString() for f in spark.table(qualified).schema},
        partition_by=tuple(detail.get("partitionColumns") or ()),
        cluster_by=tuple(detail.get("clusteringColumns") or ()),
        properties=dict(detail.get("properties") or {}),
    )


def delta_version(spark: SparkSession, qualified: str) -> int:
    """The table's latest Delta version."""
    return int(spark.sql(f"DESCRIBE HISTORY {qualified} LIMIT 1").collect()[0]["version"])


def mismatch_error(cfg: Config, table: TableSpec, qualified: str, plan: MigrationPlan) -> str:
    """The one-line message for a change that is not additive."""
    changes = "; ".join(f"column {i.column}: {i.change}" for i in plan.incompatible)
    return (
        f"table {qualified} ({table.logical}) differs from this offsetscope's declaration in a "
        f"way rows already written prevent ({changes}); rewrite it with "
        f"`{migrate_command(cfg, table.logical)}` (stop the ingest query first)"
    )


def migrate(spark: SparkSession, cfg: Config, table: TableSpec, qualified: str) -> None:
    """Bring an existing table up to ``table`` where additive (see :func:`plan_migration`).

    Raises:
        TableSchemaMismatchError: the change is not additive.
    """
    existing = describe_table(spark, qualified)
    plan = plan_migration(table, existing, cfg)
    if not plan.additive:
        raise TableSchemaMismatchError(mismatch_error(cfg, table, qualified, plan))
    log = logging.getLogger(__name__)
    if plan.add:
        spark.sql(
            f"ALTER TABLE {qualified} ADD COLUMNS ("
            + ", ".join(
                f"{_quote(c.name)} {c.type} COMMENT {_sql_string(c.comment)}" for c in plan.add
            )
            + ")"
        )
        log.info(
            "%s: added columns %s (Delta version %d)",
            qualified,
            ", ".join(c.name for c in plan.add),
            delta_version(spark, qualified),
        )
        fills = [(c, f) for c in plan.add if (f := _backfill(table, c.name))]
        # Delta refuses an UPDATE of an append-only table: the flag the table has now (not the
        # declared one, which the properties below set) is lifted for the backfill.
        appends_only = existing.properties.get("delta.appendOnly") == "true"
        with _updatable(spark, qualified, appends_only and bool(fills)):
            for c, fill in fills:
                spark.sql(
                    f"UPDATE {qualified} SET {_quote(c.name)} = {fill(cfg)} "
                    f"WHERE {_quote(c.name)} IS NULL"
                )
                log.info(
                    "%s: filled %s of the rows written before it (Delta version %d)",
                    qualified,
                    c.name,
                    delta_version(spark, qualified),
                )
    if plan.cluster_by is not None:
        columns = ", ".join(_quote(c) for c in plan.cluster_by)
        spark.sql(f"ALTER TABLE {qualified} CLUSTER BY " + (f"({columns})" if columns else "NONE"))
        log.info(
            "%s: clustered by %s (Delta version %d; OPTIMIZE clusters the rows)",
            qualified,
            ", ".join(plan.cluster_by) or "nothing",
            delta_version(spark, qualified),
        )
    if plan.properties:
        props = ", ".join(
            f"{_sql_string(k)} = {_sql_string(v)}" for k, v in plan.properties.items()
        )
        spark.sql(f"ALTER TABLE {qualified} SET TBLPROPERTIES ({props})")
        log.info(
            "%s: set %s (Delta version %d)",
            qualified,
            ", ".join(f"{k}={v}" for k, v in plan.properties.items()),
            delta_version(spark, qualified),
        )
    _set_comments(spark, cfg, table, qualified, existing)


def _set_comments(
    spark: SparkSession, cfg: Config, table: TableSpec, qualified: str, existing: ExistingTable
) -> None:
    comments = existing.column_comments
    if comments is None:
        comments = {f.name: f.metadata.get("comment", "") for f in spark.table(qualified).schema}
    for c in table.columns:
        # A column added by this migration has its comment already.
        have = comments.get(c.name, c.comment)
        if c.comment and have != c.comment:
            spark.sql(
                f"ALTER TABLE {qualified} ALTER COLUMN {_quote(c.name)} "
                f"COMMENT {_sql_string(c.comment)}"
            )
    comment = existing.comment
    if comment is None:
        comment = _table_comment(spark, cfg, table.logical)
    if table.comment and comment != table.comment:
        spark.sql(f"COMMENT ON TABLE {qualified} IS {_sql_string(table.comment)}")


@contextlib.contextmanager
def _updatable(spark: SparkSession, qualified: str, append_only: bool) -> Iterator[None]:
    """An append-only table made updatable for the block, append-only again after it."""
    if not append_only:
        yield
        return
    spark.sql(f"ALTER TABLE {qualified} SET TBLPROPERTIES ('delta.appendOnly' = 'false')")
    try:
        yield
    finally:
        spark.sql(f"ALTER TABLE {qualified} SET TBLPROPERTIES ('delta.appendOnly' = 'true')")


# A rewrite replaces the table (one commit) and then copies the rows of the version before it
# (another): the property, set by the first and removed after the second, lets a rewrite that
# was interrupted in between copy them when it is run again.
_REWRITTEN_FROM = "offsetscope.rewrittenFrom"


@dataclass(frozen=True, slots=True)
class Rewrite:
    """What :func:`rewrite_table` did to one table."""

    logical: str
    qualified: str
    changes: tuple[Incompatibility, ...]
    from_version: int
    version: int
    rows: int


def rewrite_projection(
    cfg: Config, table: TableSpec, existing: ExistingTable, qualified: str
) -> list[str]:
    """The SELECT list that turns the rows of ``existing`` into rows of ``table``.

    Raises:
        TableSchemaMismatchError: a column that may not be null is new and nothing says how to
            fill it (:func:`_backfill`).
    """
    out = []
    for c in table.written_columns:
        name = _quote(c.name)
        have = existing.columns.get(c.name)
        fill = _backfill(table, c.name)
        if have is not None:
            value = name if same_type(have, c.type) else f"CAST({name} AS {c.type})"
        elif fill is not None:
            value = fill(cfg)
        elif c.nullable:
            value = f"CAST(NULL AS {c.type})"
        else:
            raise TableSchemaMismatchError(
                f"table {qualified} ({table.logical}): column {c.name} is new and may not be "
                "null, and offsetscope has no value for the rows already written: "
                "rebuild the table from raw_records instead (drop it, then "
                f"`offsetscope redecode --tables {table.logical} --env {cfg.env}`)"
            )
        out.append(f"{value} AS {name}")
    return out


def rewrite_table(spark: SparkSession, cfg: Config, logical: str) -> Rewrite | None:
    """Rewrite one table to its declaration in place, keeping its Delta history.

    The rows of the current version are cast to the declared types (new columns null or
    filled as :func:`_backfill` says), checked in full before anything is written, then the
    table is replaced (``CREATE OR REPLACE TABLE``: same location and log, time travel to the
    old versions still works) and refilled from the version before. Nothing happens to a
    table whose differences are additive (``ensure_tables`` applies those).

    Returns:
        What was done, or None when nothing had to be.

    Raises:
        TableSchemaMismatchError: a column cannot be filled, or rows collide on a changed key.
    """
    table = CATALOGUE[logical]
    qualified = table_name(cfg, logical)
    existing = describe_table(spark, qualified)
    pending = existing.properties.get(_REWRITTEN_FROM)
    changes: tuple[Incompatibility, ...] = ()
    if pending is None:
        plan = plan_migration(table, existing, cfg)
        if plan.additive:
            return None
        changes = plan.incompatible
        source_version = delta_version(spark, qualified)
        source = spark.sql(f"SELECT * FROM {qualified} VERSION AS OF {source_version}")
        selected = source.selectExpr(*rewrite_projection(cfg, table, existing, qualified))
        # Every cast evaluated (a value the new type cannot hold fails here, not half-way).
        selected.write.format("noop").mode("overwrite").save()
        key = [_quote(k) for k in table.key]
        dupes = selected.groupBy(*key).count().where("count > 1").limit(1).collect()
        if dupes:
            raise TableSchemaMismatchError(
                f"table {qualified} ({logical}): rows collide on the key "
                f"({', '.join(table.key)}), e.g. {dupes[0].asDict()}"
            )
        spark.sql(
            create_table_sql(cfg, table, replace=True, extra={_REWRITTEN_FROM: str(source_version)})
        )
    else:
        source_version = int(pending)
        # Read with the schema the rows had before the replacement.
        existing = ExistingTable(
            {
                f.name: f.dataType.simpleString()
                for f in spark.sql(
                    f"SELECT * FROM {qualified} VERSION AS OF {source_version}"
                ).schema
            }
        )
    names = ", ".join(_quote(c.name) for c in table.written_columns)
    projection = ", ".join(rewrite_projection(cfg, table, existing, qualified))
    spark.sql(
        f"INSERT INTO {qualified} ({names}) SELECT {projection} "
        f"FROM {qualified} VERSION AS OF {source_version}"
    )
    rows = int(
        spark.sql(f"DESCRIBE HISTORY {qualified} LIMIT 1")
        .collect()[0]["operationMetrics"]
        .get("numOutputRows", "0")
    )
    spark.sql(f"ALTER TABLE {qualified} UNSET TBLPROPERTIES ({_sql_string(_REWRITTEN_FROM)})")
    version = delta_version(spark, qualified)
    logging.getLogger(__name__).info(
        "%s: rewritten to its declaration (%s): %d rows of version %d, now version %d",
        qualified,
        "; ".join(f"{i.column}: {i.change}" for i in changes) or "resumed",
        rows,
        source_version,
        version,
    )
    _set_comments(spark, cfg, table, qualified, describe_table(spark, qualified))
    return Rewrite(logical, qualified, changes, source_version, version, rows)


def _table_comment(spark: SparkSession, cfg: Config, logical: str) -> str:
    parts = [cfg.storage.catalog] if cfg.storage.catalog else []
    parts += [cfg.storage.schema, getattr(cfg.tables, logical)]
    description: str | None = spark.catalog.getTable(".".join(parts)).description
    return description or ""


_FIRST_COMMIT = f"{0:020d}.json"


def clear_interrupted_create(spark: SparkSession, cfg: Config, physical: str) -> None:
    """Remove what a CREATE TABLE killed half-way left at the local location of the managed
    table ``physical`` (its configured, unqualified name) in the configured schema.

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
    location = Path(unquote(parsed.path)) / physical.lower()
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
