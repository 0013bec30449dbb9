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
        _c("group_id", "string", comment="consumer group id (group.id)"),
        _c("group_life", "int", comment="0, +1 each time the id is deleted and re-created"),
        _c("generation", "int", comment="classic generation id or KIP-848 group epoch"),
        _c("kind", "string", comment="classic | kip848 | share | streams"),
        _c(
            "protocol_type",
            "string",
            comment="consumer (or connect, ...) as the group's members declared it",
        ),
        _c("protocol", "string", True, "assignor (classic) or most common server assignor"),
        _c("state", "string", comment="state the record left the group in"),
        _c(
            "leader",
            "string",
            True,
            "member id of the classic group's leader (ran the assignor); null for KIP-848",
        ),
        _c("member_count", "int", comment="members in this generation"),
        _c(
            "members",
            f"array<{MEMBER}>",
            comment="every member: ids, client, host, timeouts, subscription, rack, epoch",
        ),
        _c("assignment", ASSIGNMENT, comment="member id -> partitions (KIP-848: target)"),
        _c(
            "assignment_epoch",
            "int",
            True,
            "KIP-848 target assignment epoch; null for classic groups",
        ),
        _c("join_completed_at", "timestamp", True, "currentStateTimestamp (classic)"),
        _c("stored_at", "timestamp", comment="timestamp of the generation's first record"),
        _c(
            "assignment_at",
            "timestamp",
            True,
            "when the assignment (SyncGroup / target) was stored",
        ),
        _c("updated_at", "timestamp", comment="timestamp of the last record that changed this row"),
        _c("previous_generation", "int", True, "generation before this one in the same group life"),
        _c("generations_skipped", "int", comment="generation numbers never seen before this one"),
        _c("rebalances", "int", comment="rebalances this row accounts for"),
        _c("members_joined", "array<string>", comment="member ids new in this generation"),
        _c(
            "members_left",
            "array<string>",
            comment="member ids of the previous generation missing from this one",
        ),
        _c(
            "members_replaced",
            f"array<{REPLACEMENT}>",
            comment="static members (group.instance.id) that rejoined with a new member id",
        ),
        _c("static_replacements", "int", comment="count of members_replaced"),
        _c("partitions_assigned", "int", comment="topic partitions assigned in this generation"),
        _c(
            "partitions_moved",
            "int",
            comment="partitions whose owner changed from the previous generation",
        ),
        _c(
            "moved_partitions",
            f"array<{TOPIC_PARTITION}>",
            comment="the partitions counted by partitions_moved",
        ),
        _c(
            "record_partition",
            "int",
            comment="__consumer_offsets partition holding the group's records",
        ),
        _c("first_record_offset", "bigint", comment="offset of the generation's first record"),
        _c("last_record_offset", "bigint", comment="offset of the generation's last record"),
    ),
    key=("group_id", "group_life", "generation"),
    comment="One row per generation (classic) or group epoch (KIP-848).",
)

GROUP_STATE_TRANSITIONS = Table(
    "group_state_transitions",
    r.TransitionRow,
    (
        _c("group_id", "string", comment="consumer group id"),
        _c("group_life", "int", comment="0, +1 each time the id is deleted and re-created"),
        _c("record_partition", "int", comment="__consumer_offsets partition of the record"),
        _c("record_offset", "bigint", comment="the record this transition was read from"),
        _c("seq", "int", comment="order among the transitions of one record"),
        _c("kind", "string", comment="classic | kip848"),
        _c("generation", "int", True, "generation (or group epoch) the transition belongs to"),
        _c("from_state", "string", True, "state before; null for the group's first record"),
        _c("to_state", "string", comment="state after"),
        _c("at", "timestamp", True, "null when only bounded"),
        _c(
            "at_min",
            "timestamp",
            True,
            "earliest time the transition can have happened (bounded ones)",
        ),
        _c(
            "at_max",
            "timestamp",
            True,
            "latest time the transition can have happened (bounded ones)",
        ),
        _c("time_source", "string", comment="record_timestamp | current_state_timestamp | bounded"),
        _c("inferred", "boolean", comment="true when Kafka did not persist this transition"),
        _c("reason", "string", comment="why the group changed state, in words"),
    ),
    key=("group_id", "record_partition", "record_offset", "seq"),
    comment="Group state changes, with the ones Kafka does not persist marked inferred.",
)

MEMBER_SESSIONS = Table(
    "member_sessions",
    r.SessionRow,
    (
        _c("group_id", "string", comment="consumer group id"),
        _c("group_life", "int", comment="0, +1 each time the id is deleted and re-created"),
        _c("member_id", "string", comment="member id the coordinator gave the member"),
        _c("kind", "string", comment="classic | kip848"),
        _c("instance_id", "string", True, "group.instance.id of a static member"),
        _c("client_id", "string", comment="client.id of the member's consumer"),
        _c("client_host", "string", comment="host the member connected from"),
        _c("rack_id", "string", True, "client.rack (KIP-848)"),
        _c("session_timeout_ms", "int", comment="session.timeout.ms the member declared"),
        _c(
            "rebalance_timeout_ms",
            "int",
            comment="max.poll.interval.ms (classic rebalance timeout) the member declared",
        ),
        _c("first_generation", "int", True, "KIP-848: first member epoch"),
        _c("last_generation", "int", True, "null while open (= the group's current generation)"),
        _c("joined_at", "timestamp", comment="when the member first appeared in a generation"),
        _c("left_at", "timestamp", True, "when it was last seen; null while the session is open"),
        _c("end_reason", "string", True, "left | replaced | group_emptied | group_deleted"),
        _c("replaces", "string", True, "member id this static member replaced (same instance id)"),
        _c("replaced_by", "string", True, "member id that replaced this static member"),
    ),
    key=("group_id", "group_life", "member_id"),
    comment="One row per member id in a group: when it joined and left, and why.",
)

PARTITION_ASSIGNMENTS = Table(
    "partition_assignments",
    r.AssignmentRow,
    (
        _c("group_id", "string", comment="consumer group id"),
        _c("group_life", "int", comment="0, +1 each time the id is deleted and re-created"),
        _c("generation", "int", comment="generation (or KIP-848 target epoch) of the assignment"),
        _c("topic", "string", comment="assigned topic"),
        _c("partition", "int", comment="assigned partition"),
        _c("topic_id", "string", True, "topic id (KIP-848 records carry ids, not names)"),
        _c("member_id", "string", comment="member owning the partition in this generation"),
        _c("instance_id", "string", True, "its group.instance.id, if static"),
        _c("client_id", "string", True, "its client.id"),
        _c("client_host", "string", True, "its host"),
    ),
    key=("group_id", "group_life", "generation", "topic", "partition"),
    comment="Which member owned each partition, per generation.",
)

GROUPS_CURRENT = Table(
    "groups_current",
    r.GroupCurrentRow,
    (
        _c("group_id", "string", comment="consumer group id"),
        _c("group_life", "int", comment="0, +1 each time the id is deleted and re-created"),
        _c("kind", "string", comment="classic | kip848 | share | streams | simple"),
        _c("state", "string", True, "state now (Stable, Empty, Dead, ...); null if unknown"),
        _c("state_since", "timestamp", True, "when the group entered its current state"),
        _c("generation", "int", True, "current generation (classic) or group epoch (KIP-848)"),
        _c("protocol_type", "string", True, "consumer, connect, ... as declared"),
        _c("protocol", "string", True, "assignor in use"),
        _c("leader", "string", True, "current leader member id (classic)"),
        _c("member_count", "int", comment="members now (0 when deleted or empty)"),
        _c("last_commit_at", "timestamp", True, "when the group last committed an offset"),
        _c("last_rebalance_at", "timestamp", True, "time of the latest rebalance"),
        _c(
            "rebalance_times",
            "array<timestamp>",
            comment="one entry per rebalance in the 24 h before updated_at",
        ),
        _c(
            "rebalances_1h",
            "int",
            comment="rebalances in the hour before updated_at (stale for an idle group; the "
            "group_overview view counts at query time)",
        ),
        _c("rebalances_24h", "int", comment="rebalances in the 24 h before updated_at"),
        _c("deleted", "boolean", comment="true after a group tombstone (DeleteGroups or expiry)"),
        _c(
            "updated_at", "timestamp", comment="timestamp of the last record that changed the group"
        ),
        # Nullable so that ensure_tables can add it to a table created before it existed.
        _c(
            "offsetscope_own",
            "boolean",
            True,
            "true for offsetscope's own consumer groups (the ingest's Kafka source joins groups "
            "named [sources.kafka] group_id_prefix); views, reports, metrics and alerts leave "
            "them out",
        ),
    ),
    key=("group_id",),
    comment="One row per group: its state now; offsetscope's own groups are labelled.",
    change_data_feed=False,
)

OFFSET_COMMITS = Table(
    "offset_commits",
    r.OffsetCommitRow,
    (
        _c("group_id", "string", comment="consumer group id"),
        _c("topic", "string", comment="committed topic"),
        _c("partition", "int", comment="committed partition"),
        _c("offset", "bigint", True, "null for a tombstone"),
        _c("leader_epoch", "int", comment="leader epoch the consumer saw (-1 if unknown)"),
        _c("metadata", "string", comment="the commit's metadata string"),
        _c("commit_timestamp", "timestamp", True, "commitTimestamp in the record"),
        _c("expire_timestamp", "timestamp", True, "expireTimestamp (OffsetCommitValue v1 only)"),
        _c("topic_id", "string", True, "topic id (OffsetCommitValue v4)"),
        _c(
            "is_tombstone",
            "boolean",
            comment="offset deleted (expiry, DeleteOffsets, group deletion)",
        ),
        _c("record_partition", "int", comment="__consumer_offsets partition of the record"),
        _c("record_offset", "bigint", comment="offset of the record in that partition"),
        _c("record_timestamp", "timestamp", comment="timestamp of the record"),
        _c(
            "transactional",
            "boolean",
            comment="written inside a transaction (sendOffsetsToTransaction)",
        ),
        _c("producer_id", "bigint", True, "producer id of a transactional commit"),
        _c("producer_epoch", "int", True, "producer epoch of a transactional commit"),
        _c("status", "string", comment="committed | pending | aborted | superseded | dropped"),
        _c("resolved_at", "timestamp", True, "when the transaction's marker resolved the commit"),
        _c(
            "resolved_by",
            "string",
            True,
            "what resolved it: a marker, non_transactional, read_committed_source ...",
        ),
        _c("effective_at", "timestamp", True, "when the offset became the group's offset"),
        Column(
            "record_date",
            "date",
            False,
            "CAST(record_timestamp AS DATE)",
            "date of record_timestamp (partition column)",
        ),
    ),
    key=("record_partition", "record_offset"),
    comment="Every offset commit and tombstone, with its transactional resolution.",
    partition_by=("record_date",),
)

TRANSACTIONS = Table(
    "transactions",
    r.TransactionRow,
    (
        _c("transactional_id", "string", comment="transactional.id of the producer"),
        _c("record_partition", "int", comment="__transaction_state partition of the records"),
        _c("first_record_offset", "bigint", comment="the record that opened the transaction"),
        _c("producer_id", "bigint", comment="producer id when the transaction started"),
        _c("producer_epoch", "int", comment="producer epoch when the transaction started"),
        _c("end_producer_id", "bigint", True, "producer id in the record that ended it"),
        _c(
            "end_producer_epoch",
            "int",
            True,
            "producer epoch in the record that ended it (bumped on abort or fence)",
        ),
        _c(
            "previous_producer_id",
            "bigint",
            True,
            "previousProducerId of the transaction log (KIP-890)",
        ),
        _c("next_producer_id", "bigint", True, "nextProducerId of the transaction log (KIP-890)"),
        _c(
            "client_transaction_version",
            "int",
            comment="transaction protocol version the client used",
        ),
        _c("timeout_ms", "int", comment="transaction.timeout.ms"),
        _c(
            "state",
            "string",
            comment="latest transaction status (Ongoing, PrepareCommit, CompleteAbort, ...)",
        ),
        _c("outcome", "string", comment="ongoing | committed | aborted"),
        _c("started_at", "timestamp", True, "when the transaction began (first partition added)"),
        _c("ended_at", "timestamp", True, "decision time (Prepare*)"),
        _c("completed_at", "timestamp", True, "markers written (Complete*)"),
        _c("duration_ms", "bigint", True, "ended_at - started_at"),
        _c(
            "partitions",
            f"array<{TOPIC_PARTITION}>",
            comment="data partitions the transaction wrote to",
        ),
        _c("partition_count", "int", comment="count of partitions"),
        _c("timed_out", "boolean", comment="aborted by the coordinator after its timeout"),
        _c("fenced", "boolean", comment="ended because a newer producer epoch fenced it"),
        _c("fenced_by_producer_id", "bigint", True, "producer id that fenced it"),
        _c("fenced_by_epoch", "int", True, "epoch that fenced it"),
        _c("end_reason", "string", True, "client_commit | client_abort | timeout | fenced | ..."),
        _c("end_reason_inferred", "boolean", comment="true when the reason was inferred, not read"),
        _c("last_record_offset", "bigint", comment="offset of the last record folded into the row"),
        _c("updated_at", "timestamp", comment="timestamp of that record"),
    ),
    key=("transactional_id", "record_partition", "first_record_offset"),
    comment="One row per transaction: outcome, duration, partitions, timeouts and fencing.",
)

TRANSACTION_STATUS_TIMELINE = Table(
    "transaction_status_timeline",
    r.TxnStatusRow,
    (
        _c("transactional_id", "string", comment="transactional.id of the producer"),
        _c("record_partition", "int", comment="__transaction_state partition of the record"),
        _c("record_offset", "bigint", comment="offset of the record"),
        _c("seq", "int", comment="order among the changes read from one record"),
        _c("at", "timestamp", comment="when the status changed"),
        _c("from_status", "string", True, "status before; null for the first record"),
        _c("to_status", "string", comment="status after"),
        _c("producer_id", "bigint", True, "producer id in the record"),
        _c("producer_epoch", "int", True, "producer epoch in the record"),
        _c("inferred", "boolean", comment="true when Kafka did not persist this change"),
        _c("reason", "string", comment="why the status changed, in words"),
    ),
    key=("transactional_id", "record_partition", "record_offset", "seq"),
    comment="One row per transaction status change.",
)

END_OFFSETS = Table(
    "end_offsets",
    r.EndOffsetSample,
    (
        _c("topic", "string", comment="data topic"),
        _c("partition", "int", comment="data partition"),
        _c("log_start_offset", "bigint", comment="first offset still in the log"),
        _c("high_watermark", "bigint", comment="log end offset (next offset to be written)"),
        _c("last_stable_offset", "bigint", comment="-1 when unknown"),
        _c("sampled_at", "timestamp", comment="when the sample was taken"),
        Column(
            "sampled_date",
            "date",
            False,
            "CAST(sampled_at AS DATE)",
            "date of sampled_at (partition column)",
        ),
    ),
    key=("topic", "partition", "sampled_at"),
    comment="End-offset samples of the data topics (log start, high watermark, LSO).",
    partition_by=("sampled_date",),
    write_mode="append",
    change_data_feed=False,
)

PARTITION_LAG = Table(
    "partition_lag",
    r.PartitionLagRow,
    (
        _c("group_id", "string", comment="consumer group id"),
        _c("topic", "string", comment="consumed topic"),
        _c("partition", "int", comment="consumed partition"),
        _c("as_of", "timestamp", comment="time of the end-offset sample the lag is measured at"),
        _c(
            "read_committed",
            "boolean",
            comment="lag_basis is the last stable offset (as a read_committed consumer sees it)",
        ),
        _c("committed_offset", "bigint", comment="the group's committed offset at as_of"),
        _c("committed_at", "timestamp", comment="when that offset became the group's"),
        _c("end_offset", "bigint", True, "the end lag_basis names (LSO or high watermark)"),
        _c("high_watermark", "bigint", True, "high watermark of the sample"),
        _c("last_stable_offset", "bigint", True, "last stable offset of the sample"),
        _c("log_start_offset", "bigint", True, "log start offset of the sample"),
        _c("sampled_at", "timestamp", True, "time of the end-offset sample"),
        _c(
            "lag_records",
            "bigint",
            True,
            "end_offset - committed_offset (kafka-consumer-groups LAG, against lag_basis)",
        ),
        _c("lag_seconds", "double", True, "how long ago the committed offset was the end offset"),
        _c("lag_method", "string", True, "caught_up | exact | interpolated | extrapolated"),
        _c("data_loss", "boolean", comment="committed offset below the log start offset"),
        _c("lost_records", "bigint", comment="records deleted before the group read them"),
        _c("lag_basis", "string", True, "lso | high_watermark: what lag_records measures to"),
        _c(
            "basis_reason",
            "string",
            True,
            "read_committed_groups | read_uncommitted_groups | read_past_lso | no_lso | default",
        ),
        _c("lag_records_hwm", "bigint", True, "lag in records against the high watermark"),
        _c("lag_records_lso", "bigint", True, "lag in records against the last stable offset"),
        _c("lag_seconds_hwm", "double", True, "lag in seconds against the high watermark"),
        _c("lag_seconds_lso", "double", True, "lag in seconds against the last stable offset"),
        Column(
            "as_of_date", "date", False, "CAST(as_of AS DATE)", "date of as_of (partition column)"
        ),
    ),
    key=("group_id", "topic", "partition", "as_of"),
    comment="Lag of a group on a partition at each end-offset sample, in records and seconds.",
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
        _c("group_id", "string", comment="Kafka Streams application id (the group id)"),
        _c("group_life", "int", comment="0, +1 each time the id is deleted and re-created"),
        _c("assignment_epoch", "int", comment="the target assignment's epoch"),
        _c("member_id", "string", comment="the member (one Kafka Streams client)"),
        _c("process_id", "string", True, "the Kafka Streams instance (process.id)"),
        _c("host", "string", True, "its user endpoint (application.server)"),
        _c("port", "int", True, "its user endpoint's port"),
        _c("instance_id", "string", True, "group.instance.id of a static member"),
        _c("client_id", "string", True, "client.id of the member"),
        _c("client_host", "string", True, "host the member connected from"),
        _c("topology_epoch", "int", True, "the group's topology epoch then"),
        _c("member_topology_epoch", "int", True, "the topology epoch the member runs"),
        _c("active_tasks", TASKS, comment="active tasks: subtopology id and its partitions"),
        _c(
            "standby_tasks", TASKS, comment="standby tasks (state replicas kept warm for fail-over)"
        ),
        _c(
            "warmup_tasks",
            TASKS,
            comment="warm-up tasks (state being restored before the task moves here)",
        ),
        _c(
            "assigned_at",
            "timestamp",
            comment="time of the record that stored this target assignment",
        ),
    ),
    key=("group_id", "group_life", "assignment_epoch", "member_id"),
    comment="Kafka Streams groups (KIP-1071): each member's tasks per target assignment.",
)

SHARE_BATCH = "struct<first_offset:bigint,last_offset:bigint,delivery_state:int,delivery_count:int>"

SHARE_PARTITION_STATE = Table(
    "share_partition_state",
    r.SharePartitionStateRow,
    (
        _c("group_id", "string", comment="share group id"),
        _c("topic_id", "string", comment="the topic id (base64, as Kafka prints it)"),
        _c("topic", "string", True, "the topic's name, when the group's records name it"),
        _c("partition", "int", comment="the share-partition: partition of the topic"),
        _c("record_partition", "int", comment="__share_group_state partition"),
        _c("record_offset", "bigint", comment="offset of the __share_group_state record"),
        _c("record_timestamp", "timestamp", comment="timestamp of that record"),
        _c("record_kind", "string", comment="snapshot | update"),
        _c("snapshot_epoch", "int", comment="snapshot epoch (+1 per ShareSnapshot)"),
        _c(
            "state_epoch",
            "int",
            comment="state epoch (+1 when the share-partition is re-initialized)",
        ),
        _c("leader_epoch", "int", comment="leader epoch of the partition when written"),
        _c("start_offset", "bigint", comment="every record below it is done"),
        _c(
            "delivery_complete_count",
            "int",
            True,
            "records delivered and done, as the coordinator counts them",
        ),
        _c("batches", f"array<{SHARE_BATCH}>", comment="0 Available, 2 Acknowledged, 4 Archived"),
        _c(
            "in_flight_records", "bigint", comment="records in Available batches above start_offset"
        ),
        _c(
            "acknowledged_records",
            "bigint",
            comment="records in Acknowledged batches above start_offset",
        ),
        _c("archived_records", "bigint", comment="records in Archived batches above start_offset"),
        _c("max_delivery_count", "int", comment="highest delivery count of any batch"),
    ),
    key=("record_partition", "record_offset"),
    comment="Share groups (KIP-932): a share-partition's state after each record of "
    "__share_group_state.",
)

STUCK_PARTITIONS = Table(
    "stuck_partitions",
    r.StuckPartitionRow,
    (
        _c("topic", "string", comment="data topic"),
        _c("partition", "int", comment="data partition"),
        _c("stuck_since", "timestamp", comment="the first sample at this last stable offset"),
        _c("last_stable_offset", "bigint", comment="the LSO that stood still"),
        _c("detected_at", "timestamp", comment="the first sample past the bound"),
        _c("resolved_at", "timestamp", True, "the first sample at another LSO; null: stuck"),
        _c(
            "stuck_ms",
            "bigint",
            comment="how long the LSO has stood still (to sampled_at or resolved_at)",
        ),
        _c("high_watermark", "bigint", comment="high watermark at the last sample"),
        _c("high_watermark_since", "bigint", comment="the high watermark at stuck_since"),
        _c("records_held", "bigint", comment="high watermark - LSO"),
        _c("sampled_at", "timestamp", comment="the last sample this row reflects"),
        _c("cause", "string", comment="open_transaction | hanging_transaction"),
        _c(
            "transactional_id",
            "string",
            True,
            "transactional id holding it; null when no coordinator knows it",
        ),
        _c("producer_id", "bigint", True, "producer id of the open transaction"),
        _c("producer_epoch", "int", True, "its producer epoch"),
        _c(
            "transaction_started_at",
            "timestamp",
            True,
            "when the transaction started (its coordinator)",
        ),
        _c("transaction_timeout_ms", "int", True, "transaction.timeout.ms of the producer"),
        _c("open_for_ms", "bigint", True, "how long the transaction has been open at sampled_at"),
        _c("first_offset", "bigint", comment="first offset of the transaction holding the LSO"),
        _c("first_offset_source", "string", comment="segments | lso"),
        _c("abort_command", "string", True, "kafka-transactions.sh abort (hanging only)"),
        _c("blocked_groups", "array<string>", comment="committed offset = the stuck LSO"),
        _c("behind_groups", "array<string>", comment="committed offset below it"),
        _c("updated_at", "timestamp", comment="time of the sample that last changed this row"),
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
