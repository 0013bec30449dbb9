"""The gold history tables as data: columns, types, natural keys, partitioning, write mode.

The Spark layer derives each Delta table's schema (``StructType.fromDDL`` of :meth:`Table.ddl`),
its ``MERGE`` condition (:attr:`Table.key`, plus the partition columns so Delta can prune) and
its partitioning from this module; tests and docs read it too. Nothing here imports pyspark.

Types are Spark SQL DDL strings. Python values (see :mod:`offsetscope.history.rows`):
``timestamp`` = ``int`` epoch ms, ``struct`` = dataclass or tuple in field order, ``map`` =
tuple of ``(key, value)`` pairs, ``array`` = tuple. A column with ``generated`` set is a Delta
generated column (``GENERATED ALWAYS AS``): it is not a field of the row class, Delta computes it.

Write modes:

* ``merge``: rows are upserts on the natural key (``WHEN MATCHED UPDATE SET * WHEN NOT MATCHED
  INSERT *``); a fold re-emits a row when it learns more, and within one batch only the last
  version of a key is emitted (:func:`materialize` does the same for any row list);
* ``append``: rows are never updated (``end_offsets`` samples, ``partition_lag`` at each
  sample).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from offsetscope.history import rows as r

TOPIC_PARTITION = "struct<topic:string,partition:int>"
MEMBER = (
    "struct<member_id:string,instance_id:string,client_id:string,client_host:string,"
    "session_timeout_ms:int,rebalance_timeout_ms:int,subscribed_topics:array<string>,"
    "rack_id:string,member_epoch:int>"
)
REPLACEMENT = "struct<instance_id:string,old_member_id:string,new_member_id:string>"
ASSIGNMENT = f"map<string,array<{TOPIC_PARTITION}>>"


@dataclass(frozen=True, slots=True)
class Column:
    """One column: Spark SQL type, nullability, optional generation expression, meaning."""

    name: str
    type: str
    nullable: bool = False
    generated: str | None = None
    comment: str = ""

    @property
    def ddl(self) -> str:
        not_null = "" if self.nullable else " NOT NULL"
        # Quoted: names such as `offset`, `partition` and `at` are SQL keywords.
        return f"`{self.name}` {self.type}{not_null}"


@dataclass(frozen=True, slots=True)
class Table:
    """One gold table."""

    name: str
    row_type: type
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    partition_by: tuple[str, ...] = ()
    write_mode: str = "merge"
    change_data_feed: bool = True
    comment: str = ""

    @property
    def field_columns(self) -> tuple[Column, ...]:
        """The columns the row class carries (all but generated ones), in field order."""
        return tuple(c for c in self.columns if c.generated is None)

    def ddl(self) -> str:
        """The schema as a DDL column list (``StructType.fromDDL`` accepts it)."""
        return ", ".join(c.ddl for c in self.columns)

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"{self.name} has no column {name!r}")

    def merge_condition(self, target: str = "t", source: str = "s") -> str:
        """The ``MERGE ... ON`` condition: natural key plus partition columns (for pruning).

        The source is a batch of rows (no generated columns), so a generated partition column
        is matched against its expression over the source's columns.
        """
        terms = [f"{target}.`{n}` <=> {source}.`{n}`" for n in self.key]
        for name in self.partition_by:
            if name in self.key:
                continue
            col = self.column(name)
            if col.generated is None:
                terms.append(f"{target}.`{name}` <=> {source}.`{name}`")
            else:
                expr = col.generated
                for field in self.field_columns:
                    expr = re.sub(rf"\b{field.name}\b", f"{source}.`{field.name}`", expr)
                terms.append(f"{target}.`{name}` <=> {expr}")
        return " AND ".join(terms)

    def merge_sql(self, qualified_name: str, source: str) -> str:
        """The upsert of a batch (a view or table named ``source``) into this table.

        Columns are listed explicitly (not ``SET *``): the batch has no generated columns and
        Delta computes them. An ``append`` table gets a plain ``INSERT``.
        """
        names = [f"`{c.name}`" for c in self.field_columns]
        if self.write_mode == "append":
            return f"INSERT INTO {qualified_name} ({', '.join(names)}) SELECT {', '.join(names)} FROM {source}"
        updates = ", ".join(f"t.{n} = s.{n}" for n in names if n.strip("`") not in self.key)
        inserts = ", ".join(f"s.{n}" for n in names)
        return (
            f"MERGE INTO {qualified_name} t USING {source} s ON {self.merge_condition()} "
            f"WHEN MATCHED THEN UPDATE SET {updates} "
            f"WHEN NOT MATCHED THEN INSERT ({', '.join(names)}) VALUES ({inserts})"
        )

    def create_sql(self, qualified_name: str) -> str:
        """``CREATE TABLE IF NOT EXISTS`` for Delta: generated columns, partitioning, properties.

        Args:
            qualified_name: e.g. ``offsetscope.group_generations`` or a Unity Catalog
                three-part name.
        """
        cols = []
        for c in self.columns:
            col = c.ddl
            if c.generated is not None:
                col += f" GENERATED ALWAYS AS ({c.generated})"
            if c.comment:
                col += " COMMENT " + _sql_string(c.comment)
            cols.append(col)
        sql = f"CREATE TABLE IF NOT EXISTS {qualified_name} (\n  " + ",\n  ".join(cols) + "\n)"
        sql += " USING DELTA"
        if self.partition_by:
            sql += " PARTITIONED BY (" + ", ".join(f"`{p}`" for p in self.partition_by) + ")"
        if self.comment:
            sql += " COMMENT " + _sql_string(self.comment)
        props = ", ".join(
            f"{_sql_string(k)} = {_sql_string(v)}" for k, v in self.properties.items()
        )
        return sql + f" TBLPROPERTIES ({props})"

    @property
    def properties(self) -> Mapping[str, str]:
        """Delta table properties."""
        props = {"delta.appendOnly": "true" if self.write_mode == "append" else "false"}
        if self.change_data_feed:
            props["delta.enableChangeDataFeed"] = "true"
        return props


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _c(name: str, typ: str, nullable: bool = False, comment: str = "") -> Column:
    return Column(name, typ, nullable, None, comment)


GROUP_GENERATIONS = Table(
    "group_generations",
    r.GenerationRow,
    (
        _c("group_id", "string"),
        _c("group_life", "int", comment="0, +1 each time the id is deleted and re-created"),
        _c("generation", "int", comment="classic generation id or KIP-848 group epoch"),
        _c("kind", "string", comment="classic | kip848 | share | streams"),
        _c("protocol_type", "string"),
        _c("protocol", "string", True, "assignor (classic) or most common server assignor"),
        _c("state", "string", comment="state the record left the group in"),
        _c("leader", "string", True),
        _c("member_count", "int"),
        _c("members", f"array<{MEMBER}>"),
        _c("assignment", ASSIGNMENT, comment="member id -> partitions (KIP-848: target)"),
        _c("assignment_epoch", "int", True),
        _c("join_completed_at", "timestamp", True, "currentStateTimestamp (classic)"),
        _c("stored_at", "timestamp", comment="timestamp of the generation's first record"),
        _c("assignment_at", "timestamp", True),
        _c("updated_at", "timestamp"),
        _c("previous_generation", "int", True),
        _c("generations_skipped", "int", comment="generation numbers never seen before this one"),
        _c("rebalances", "int", comment="rebalances this row accounts for"),
        _c("members_joined", "array<string>"),
        _c("members_left", "array<string>"),
        _c("members_replaced", f"array<{REPLACEMENT}>"),
        _c("static_replacements", "int"),
        _c("partitions_assigned", "int"),
        _c("partitions_moved", "int"),
        _c("moved_partitions", f"array<{TOPIC_PARTITION}>"),
        _c("record_partition", "int"),
        _c("first_record_offset", "bigint"),
        _c("last_record_offset", "bigint"),
    ),
    key=("group_id", "group_life", "generation"),
    comment="One row per generation (classic) or group epoch (KIP-848).",
)

GROUP_STATE_TRANSITIONS = Table(
    "group_state_transitions",
    r.TransitionRow,
    (
        _c("group_id", "string"),
        _c("group_life", "int"),
        _c("record_partition", "int"),
        _c("record_offset", "bigint", comment="the record this transition was read from"),
        _c("seq", "int", comment="order among the transitions of one record"),
        _c("kind", "string"),
        _c("generation", "int", True),
        _c("from_state", "string", True),
        _c("to_state", "string"),
        _c("at", "timestamp", True, "null when only bounded"),
        _c("at_min", "timestamp", True),
        _c("at_max", "timestamp", True),
        _c("time_source", "string", comment="record_timestamp | current_state_timestamp | bounded"),
        _c("inferred", "boolean", comment="true when Kafka did not persist this transition"),
        _c("reason", "string"),
    ),
    key=("group_id", "record_partition", "record_offset", "seq"),
    comment="Group state changes, with the ones Kafka does not persist marked inferred.",
)

MEMBER_SESSIONS = Table(
    "member_sessions",
    r.SessionRow,
    (
        _c("group_id", "string"),
        _c("group_life", "int"),
        _c("member_id", "string"),
        _c("kind", "string"),
        _c("instance_id", "string", True),
        _c("client_id", "string"),
        _c("client_host", "string"),
        _c("rack_id", "string", True),
        _c("session_timeout_ms", "int"),
        _c("rebalance_timeout_ms", "int"),
        _c("first_generation", "int", True, "KIP-848: first member epoch"),
        _c("last_generation", "int", True, "null while open (= the group's current generation)"),
        _c("joined_at", "timestamp"),
        _c("left_at", "timestamp", True),
        _c("end_reason", "string", True, "left | replaced | group_emptied | group_deleted"),
        _c("replaces", "string", True),
        _c("replaced_by", "string", True),
    ),
    key=("group_id", "group_life", "member_id"),
)

PARTITION_ASSIGNMENTS = Table(
    "partition_assignments",
    r.AssignmentRow,
    (
        _c("group_id", "string"),
        _c("group_life", "int"),
        _c("generation", "int"),
        _c("topic", "string"),
        _c("partition", "int"),
        _c("topic_id", "string", True),
        _c("member_id", "string"),
        _c("instance_id", "string", True),
        _c("client_id", "string", True),
        _c("client_host", "string", True),
    ),
    key=("group_id", "group_life", "generation", "topic", "partition"),
)

GROUPS_CURRENT = Table(
    "groups_current",
    r.GroupCurrentRow,
    (
        _c("group_id", "string"),
        _c("group_life", "int"),
        _c("kind", "string", comment="classic | kip848 | share | streams | simple"),
        _c("state", "string", True),
        _c("state_since", "timestamp", True),
        _c("generation", "int", True),
        _c("protocol_type", "string", True),
        _c("protocol", "string", True),
        _c("leader", "string", True),
        _c("member_count", "int"),
        _c("last_commit_at", "timestamp", True),
        _c("last_rebalance_at", "timestamp", True),
        _c("rebalance_times", "array<timestamp>"),
        _c("rebalances_1h", "int"),
        _c("rebalances_24h", "int"),
        _c("deleted", "boolean"),
        _c("updated_at", "timestamp"),
    ),
    key=("group_id",),
    change_data_feed=False,
)

OFFSET_COMMITS = Table(
    "offset_commits",
    r.OffsetCommitRow,
    (
        _c("group_id", "string"),
        _c("topic", "string"),
        _c("partition", "int"),
        _c("offset", "bigint", True, "null for a tombstone"),
        _c("leader_epoch", "int"),
        _c("metadata", "string"),
        _c("commit_timestamp", "timestamp", True),
        _c("expire_timestamp", "timestamp", True),
        _c("topic_id", "string", True),
        _c("is_tombstone", "boolean"),
        _c("record_partition", "int"),
        _c("record_offset", "bigint"),
        _c("record_timestamp", "timestamp"),
        _c("transactional", "boolean"),
        _c("producer_id", "bigint", True),
        _c("producer_epoch", "int", True),
        _c("status", "string", comment="committed | pending | aborted | superseded | dropped"),
        _c("resolved_at", "timestamp", True),
        _c("resolved_by", "string", True),
        _c("effective_at", "timestamp", True, "when the offset became the group's offset"),
        Column("record_date", "date", False, "CAST(record_timestamp AS DATE)"),
    ),
    key=("record_partition", "record_offset"),
    partition_by=("record_date",),
)

TRANSACTIONS = Table(
    "transactions",
    r.TransactionRow,
    (
        _c("transactional_id", "string"),
        _c("record_partition", "int"),
        _c("first_record_offset", "bigint", comment="the record that opened the transaction"),
        _c("producer_id", "bigint"),
        _c("producer_epoch", "int"),
        _c("end_producer_id", "bigint", True),
        _c("end_producer_epoch", "int", True),
        _c("previous_producer_id", "bigint", True),
        _c("next_producer_id", "bigint", True),
        _c("client_transaction_version", "int"),
        _c("timeout_ms", "int"),
        _c("state", "string"),
        _c("outcome", "string", comment="ongoing | committed | aborted"),
        _c("started_at", "timestamp", True),
        _c("ended_at", "timestamp", True, "decision time (Prepare*)"),
        _c("completed_at", "timestamp", True, "markers written (Complete*)"),
        _c("duration_ms", "bigint", True),
        _c("partitions", f"array<{TOPIC_PARTITION}>"),
        _c("partition_count", "int"),
        _c("timed_out", "boolean"),
        _c("fenced", "boolean"),
        _c("fenced_by_producer_id", "bigint", True),
        _c("fenced_by_epoch", "int", True),
        _c("end_reason", "string", True),
        _c("end_reason_inferred", "boolean"),
        _c("last_record_offset", "bigint"),
        _c("updated_at", "timestamp"),
    ),
    key=("transactional_id", "record_partition", "first_record_offset"),
)

TRANSACTION_STATUS_TIMELINE = Table(
    "transaction_status_timeline",
    r.TxnStatusRow,
    (
        _c("transactional_id", "string"),
        _c("record_partition", "int"),
        _c("record_offset", "bigint"),
        _c("seq", "int"),
        _c("at", "timestamp"),
        _c("from_status", "string", True),
        _c("to_status", "string"),
        _c("producer_id", "bigint", True),
        _c("producer_epoch", "int", True),
        _c("inferred", "boolean"),
        _c("reason", "string"),
    ),
    key=("transactional_id", "record_partition", "record_offset", "seq"),
)

END_OFFSETS = Table(
    "end_offsets",
    r.EndOffsetSample,
    (
        _c("topic", "string"),
        _c("partition", "int"),
        _c("log_start_offset", "bigint"),
        _c("high_watermark", "bigint"),
        _c("last_stable_offset", "bigint", comment="-1 when unknown"),
        _c("sampled_at", "timestamp"),
        Column("sampled_date", "date", False, "CAST(sampled_at AS DATE)"),
    ),
    key=("topic", "partition", "sampled_at"),
    partition_by=("sampled_date",),
    write_mode="append",
    change_data_feed=False,
)

PARTITION_LAG = Table(
    "partition_lag",
    r.PartitionLagRow,
    (
        _c("group_id", "string"),
        _c("topic", "string"),
        _c("partition", "int"),
        _c("as_of", "timestamp"),
        _c("read_committed", "boolean", comment="lag_basis is the last stable offset"),
        _c("committed_offset", "bigint"),
        _c("committed_at", "timestamp"),
        _c("end_offset", "bigint", True, "the end lag_basis names"),
        _c("high_watermark", "bigint", True),
        _c("last_stable_offset", "bigint", True),
        _c("log_start_offset", "bigint", True),
        _c("sampled_at", "timestamp", True),
        _c("lag_records", "bigint", True),
        _c("lag_seconds", "double", True),
        _c("lag_method", "string", True, "caught_up | exact | interpolated | extrapolated"),
        _c("data_loss", "boolean", comment="committed offset below the log start offset"),
        _c("lost_records", "bigint"),
        _c("lag_basis", "string", True, "lso | high_watermark: what lag_records measures to"),
        _c(
            "basis_reason",
            "string",
            True,
            "read_committed_groups | read_uncommitted_groups | read_past_lso | no_lso | default",
        ),
        _c("lag_records_hwm", "bigint", True, "lag against the high watermark"),
        _c("lag_records_lso", "bigint", True, "lag against the last stable offset"),
        _c("lag_seconds_hwm", "double", True),
        _c("lag_seconds_lso", "double", True),
        Column("as_of_date", "date", False, "CAST(as_of AS DATE)"),
    ),
    key=("group_id", "topic", "partition", "as_of"),
    partition_by=("as_of_date",),
    # New keys only: a partition's lag is measured at each end-offset sample newer than the
    # last one its state holds, once per group -- so appended, like end_offsets, not MERGEd.
    write_mode="append",
    change_data_feed=False,
)

TASKS = "array<struct<subtopology_id:string,partitions:array<int>>>"

STREAMS_ASSIGNMENTS = Table(
    "streams_assignments",
    r.StreamsAssignmentRow,
    (
        _c("group_id", "string"),
        _c("group_life", "int"),
        _c("assignment_epoch", "int", comment="the target assignment's epoch"),
        _c("member_id", "string"),
        _c("process_id", "string", True, "the Kafka Streams instance (process.id)"),
        _c("host", "string", True, "its user endpoint (application.server)"),
        _c("port", "int", True),
        _c("instance_id", "string", True),
        _c("client_id", "string", True),
        _c("client_host", "string", True),
        _c("topology_epoch", "int", True, "the group's topology epoch then"),
        _c("member_topology_epoch", "int", True, "the topology epoch the member runs"),
        _c("active_tasks", TASKS),
        _c("standby_tasks", TASKS),
        _c("warmup_tasks", TASKS),
        _c("assigned_at", "timestamp"),
    ),
    key=("group_id", "group_life", "assignment_epoch", "member_id"),
    comment="Kafka Streams groups (KIP-1071): each member's tasks per target assignment.",
)

SHARE_BATCH = "struct<first_offset:bigint,last_offset:bigint,delivery_state:int,delivery_count:int>"

SHARE_PARTITION_STATE = Table(
    "share_partition_state",
    r.SharePartitionStateRow,
    (
        _c("group_id", "string"),
        _c("topic_id", "string"),
        _c("topic", "string", True, "the topic's name, when the group's records name it"),
        _c("partition", "int"),
        _c("record_partition", "int", comment="__share_group_state partition"),
        _c("record_offset", "bigint"),
        _c("record_timestamp", "timestamp"),
        _c("record_kind", "string", comment="snapshot | update"),
        _c("snapshot_epoch", "int"),
        _c("state_epoch", "int"),
        _c("leader_epoch", "int"),
        _c("start_offset", "bigint", comment="every record below it is done"),
        _c("delivery_complete_count", "int", True),
        _c("batches", f"array<{SHARE_BATCH}>", comment="0 Available, 2 Acknowledged, 4 Archived"),
        _c("in_flight_records", "bigint"),
        _c("acknowledged_records", "bigint"),
        _c("archived_records", "bigint"),
        _c("max_delivery_count", "int"),
    ),
    key=("record_partition", "record_offset"),
    comment="Share groups (KIP-932): a share-partition's state after each record of "
    "__share_group_state.",
)

STUCK_PARTITIONS = Table(
    "stuck_partitions",
    r.StuckPartitionRow,
    (
        _c("topic", "string"),
        _c("partition", "int"),
        _c("stuck_since", "timestamp", comment="the first sample at this last stable offset"),
        _c("last_stable_offset", "bigint"),
        _c("detected_at", "timestamp", comment="the first sample past the bound"),
        _c("resolved_at", "timestamp", True, "the first sample at another LSO; null: stuck"),
        _c("stuck_ms", "bigint"),
        _c("high_watermark", "bigint"),
        _c("high_watermark_since", "bigint", comment="the high watermark at stuck_since"),
        _c("records_held", "bigint", comment="high watermark - LSO"),
        _c("sampled_at", "timestamp", comment="the last sample this row reflects"),
        _c("cause", "string", comment="open_transaction | hanging_transaction"),
        _c("transactional_id", "string", True),
        _c("producer_id", "bigint", True),
        _c("producer_epoch", "int", True),
        _c("transaction_started_at", "timestamp", True),
        _c("transaction_timeout_ms", "int", True),
        _c("open_for_ms", "bigint", True),
        _c("first_offset", "bigint", comment="first offset of the transaction holding the LSO"),
        _c("first_offset_source", "string", comment="segments | lso"),
        _c("abort_command", "string", True, "kafka-transactions.sh abort (hanging only)"),
        _c("blocked_groups", "array<string>", comment="committed offset = the stuck LSO"),
        _c("behind_groups", "array<string>", comment="committed offset below it"),
        _c("updated_at", "timestamp"),
    ),
    key=("topic", "partition", "stuck_since"),
    comment="A data partition whose last stable offset stood still while records arrived.",
)

TABLES: Mapping[str, Table] = {
    t.name: t
    for t in (
        GROUP_GENERATIONS,
        GROUP_STATE_TRANSITIONS,
        MEMBER_SESSIONS,
        PARTITION_ASSIGNMENTS,
        GROUPS_CURRENT,
        OFFSET_COMMITS,
        TRANSACTIONS,
        TRANSACTION_STATUS_TIMELINE,
        STREAMS_ASSIGNMENTS,
        SHARE_PARTITION_STATE,
        END_OFFSETS,
        PARTITION_LAG,
        STUCK_PARTITIONS,
    )
}

_BY_ROW: Mapping[type, Table] = {t.row_type: t for t in TABLES.values()}


def table_for(row_type: type) -> Table:
    """The table whose rows are ``row_type`` instances."""
    return _BY_ROW[row_type]


def key_of(row: Any) -> tuple[Any, ...]:
    """The natural key of an output row."""
    return tuple(getattr(row, n) for n in _BY_ROW[type(row)].key)


def materialize(rows: Iterable[Any]) -> dict[tuple[Any, ...], Any]:
    """Apply upserts in order: natural key -> the last row emitted for it (one table's rows)."""
    out: dict[tuple[Any, ...], Any] = {}
    for row in rows:
        out[key_of(row)] = row
    return out


def as_record(row: Any) -> dict[str, Any]:
    """A row as a dict of plain values, shaped by each column's type.

    Structs become dicts (nested dataclasses and ``(topic, partition)`` tuples alike), arrays
    lists, and maps lists of ``(key, value)`` pairs -- the forms Arrow and Spark accept.
    """
    record: dict[str, Any] = {}
    for name, parsed in _record_plan(type(row)):
        value = getattr(row, name)
        # Scalars (most columns) are kept as they are: no call per value.
        record[name] = value if parsed is None or value is None else _shape(value, parsed)
    return record


_Plan = tuple[tuple[str, "ParsedType | None"], ...]
_PLANS: dict[type, _Plan] = {}


def _record_plan(row_type: type) -> _Plan:
    """Per column of ``row_type``'s table: its name and parsed type (None: a scalar).

    Parsed once per row type: a lag batch converts millions of rows, and parsing each column's DDL
    per row would add that parse to every one of them (``docs/benchmarks.md``, "Measurements behind
    design choices").
    """
    plan = _PLANS.get(row_type)
    if plan is None:
        parsed = [(col.name, parse_type(col.type)) for col in _BY_ROW[row_type].field_columns]
        plan = _PLANS[row_type] = tuple(
            (name, tp if tp[0] in ("array", "map", "struct") else None) for name, tp in parsed
        )
    return plan


# A parsed DDL type: ("string",) / ("array", elem) / ("map", key, value) /
# ("struct", ((name, type), ...)).
ParsedType = tuple[Any, ...]


def parse_type(ddl: str) -> ParsedType:
    """Parse a Spark DDL type string of the forms this module uses."""
    parsed, rest = _parse(ddl.replace(" ", ""))
    if rest:
        raise ValueError(f"trailing text {rest!r} in type {ddl!r}")
    return parsed


def _parse(text: str) -> tuple[ParsedType, str]:
    for prefix in ("array<", "map<", "struct<"):
        if text.startswith(prefix):
            rest = text[len(prefix) :]
            if prefix == "array<":
                elem, rest = _parse(rest)
                return ("array", elem), _expect(rest, ">")
            if prefix == "map<":
                key, rest = _parse(rest)
                value, rest = _parse(_expect(rest, ","))
                return ("map", key, value), _expect(rest, ">")
            fields: list[tuple[str, ParsedType]] = []
            while True:
                name, _, rest = rest.partition(":")
                ftype, rest = _parse(rest)
                fields.append((name, ftype))
                if rest.startswith(">"):
                    return ("struct", tuple(fields)), rest[1:]
                rest = _expect(rest, ",")
    end = len(text)
    for stop in ",>":
        pos = text.find(stop)
        if pos != -1:
            end = min(end, pos)
    return (text[:end],), text[end:]


def _expect(text: str, token: str) -> str:
    if not text.startswith(token):
        raise ValueError(f"expected {token!r} at {text!r}")
    return text[len(token) :]


def _shape(value: Any, tp: ParsedType) -> Any:
    if value is None:
        return None
    kind = tp[0]
    if kind == "array":
        return [_shape(v, tp[1]) for v in value]
    if kind == "map":
        return [(_shape(k, tp[1]), _shape(v, tp[2])) for k, v in value]
    if kind == "struct":
        names = [name for name, _ in tp[1]]
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            items = [getattr(value, n) for n in names]
        else:
            items = list(value)
        return {n: _shape(v, ftp) for (n, ftp), v in zip(tp[1], items, strict=True)}
    return value
