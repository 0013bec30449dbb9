"""Output rows of the history folds: one frozen dataclass per gold table, fields = columns.

Each class's fields map 1:1, in order, to the columns that :mod:`offsetscope.history.tables`
declares for its table (a unit test holds them together). Python representations:

* ``timestamp`` columns are ``int`` epoch milliseconds (Kafka's own unit); the Spark layer builds
  them as Arrow ``timestamp('ms', 'UTC')`` without conversion;
* ``struct`` values are nested frozen dataclasses, or plain tuples in declared field order for
  ``(topic, partition)`` pairs;
* ``map`` values are tuples of ``(key, value)`` pairs in a deterministic order.

Rows are *upserts*: a fold may emit a row again when it learns more (a transactional commit
resolved by its marker, a generation rewritten by a static member restart, a member session that
ended). The natural key in ``tables.py`` says which rows replace which; the last one wins.
"""

from __future__ import annotations

from dataclasses import dataclass

from offsetscope.history.events import TopicPartition

# member id -> partitions, in member order
Assignment = tuple[tuple[str, tuple[TopicPartition, ...]], ...]


@dataclass(frozen=True, slots=True)
class GenerationMember:
    """One member of one generation (classic) or group epoch (KIP-848)."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    subscribed_topics: tuple[str, ...] | None
    rack_id: str | None
    member_epoch: int | None  # KIP-848 only: the member's epoch when the row was last updated


@dataclass(frozen=True, slots=True)
class Replacement:
    """A static member (same ``group.instance.id``) that came back under a new member id."""

    instance_id: str
    old_member_id: str
    new_member_id: str


@dataclass(frozen=True, slots=True)
class GenerationRow:
    """``group_generations``: one generation of a classic group, or one KIP-848 group epoch."""

    group_id: str
    group_life: int
    generation: int
    kind: str  # "classic" | "kip848"
    protocol_type: str
    protocol: str | None
    state: str
    leader: str | None
    member_count: int
    members: tuple[GenerationMember, ...]
    assignment: Assignment
    assignment_epoch: int | None
    join_completed_at: int | None
    stored_at: int
    assignment_at: int | None
    updated_at: int
    previous_generation: int | None
    generations_skipped: int
    rebalances: int
    members_joined: tuple[str, ...]
    members_left: tuple[str, ...]
    members_replaced: tuple[Replacement, ...]
    static_replacements: int
    partitions_assigned: int
    partitions_moved: int
    moved_partitions: tuple[TopicPartition, ...]
    record_partition: int
    first_record_offset: int
    last_record_offset: int


@dataclass(frozen=True, slots=True)
class TransitionRow:
    """``group_state_transitions``: one state change, observed or inferred."""

    group_id: str
    group_life: int
    record_partition: int
    record_offset: int
    seq: int
    kind: str
    generation: int | None
    from_state: str | None
    to_state: str
    at: int | None
    at_min: int | None
    at_max: int | None
    time_source: str  # "record_timestamp" | "current_state_timestamp" | "bounded"
    inferred: bool
    reason: str


@dataclass(frozen=True, slots=True)
class SessionRow:
    """``member_sessions``: one member id in one group, from its first to its last generation."""

    group_id: str
    group_life: int
    member_id: str
    kind: str
    instance_id: str | None
    client_id: str
    client_host: str
    rack_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    first_generation: int | None
    # Written when the session ends; null while open (the member is in the current generation),
    # so a rebalance rewrites only the sessions that started, ended or changed.
    last_generation: int | None
    joined_at: int
    left_at: int | None
    end_reason: (
        str | None
    )  # None while open; "left" | "replaced" | "group_emptied" | "group_deleted"
    replaces: str | None
    replaced_by: str | None


@dataclass(frozen=True, slots=True)
class AssignmentRow:
    """``partition_assignments``: which member owned a partition in a generation."""

    group_id: str
    group_life: int
    generation: int
    topic: str  # the topic name, or the topic id text when the name is unknown (KIP-848)
    partition: int
    topic_id: str | None
    member_id: str
    instance_id: str | None
    client_id: str | None
    client_host: str | None


@dataclass(frozen=True, slots=True)
class GroupCurrentRow:
    """``groups_current``: the latest known state of one group."""

    group_id: str
    group_life: int
    kind: str  # "classic" | "kip848" | "simple" (offset commits only, no group records)
    state: str | None
    state_since: int | None
    generation: int | None
    protocol_type: str | None
    protocol: str | None
    leader: str | None
    member_count: int
    last_commit_at: int | None
    last_rebalance_at: int | None
    rebalance_times: tuple[int, ...]  # one entry per rebalance in the 24 h before updated_at
    rebalances_1h: int  # as of updated_at; use signals.rebalances_in_window for any other time
    rebalances_24h: int
    deleted: bool
    updated_at: int
    # True for offsetscope's own consumer groups (the groups its Kafka source joins); the
    # folds do not know the configured prefix, the ingest sets it before writing.
    offsetscope_own: bool | None = False  # nullable in the table: added to existing ones


@dataclass(frozen=True, slots=True)
class OffsetCommitRow:
    """``offset_commits``: one commit or tombstone record, with its transactional resolution."""

    group_id: str
    topic: str
    partition: int
    offset: int | None
    leader_epoch: int
    metadata: str
    commit_timestamp: int | None
    expire_timestamp: int | None
    topic_id: str | None
    is_tombstone: bool
    record_partition: int
    record_offset: int
    record_timestamp: int
    transactional: bool
    producer_id: int | None
    producer_epoch: int | None
    # "committed" | "pending" | "aborted" | "superseded" | "dropped"
    status: str
    resolved_at: int | None
    # "non_transactional" | "tombstone" | "commit_marker" | "abort_marker" | "read_committed_source"
    resolved_by: str | None
    effective_at: int | None


@dataclass(frozen=True, slots=True)
class TransactionRow:
    """``transactions``: one transaction of one transactional id."""

    transactional_id: str
    record_partition: int
    first_record_offset: int
    producer_id: int
    producer_epoch: int
    end_producer_id: int | None
    end_producer_epoch: int | None
    previous_producer_id: int | None
    next_producer_id: int | None
    client_transaction_version: int
    timeout_ms: int
    state: str
    outcome: str  # "ongoing" | "committed" | "aborted"
    started_at: int | None
    ended_at: int | None
    completed_at: int | None
    duration_ms: int | None
    partitions: tuple[TopicPartition, ...]
    partition_count: int
    timed_out: bool
    fenced: bool
    fenced_by_producer_id: int | None
    fenced_by_epoch: int | None
    end_reason: str | None  # "client_commit" | "client_abort" | "timeout" | "fenced"
    end_reason_inferred: bool
    last_record_offset: int
    updated_at: int


@dataclass(frozen=True, slots=True)
class TxnStatusRow:
    """``transaction_status_timeline``: one status change of a transactional id."""

    transactional_id: str
    record_partition: int
    record_offset: int
    seq: int
    at: int
    from_status: str | None
    to_status: str
    producer_id: int | None
    producer_epoch: int | None
    inferred: bool
    reason: str


@dataclass(frozen=True, slots=True)
class EndOffsetSample:
    """``end_offsets``: one sample of a data partition's offsets (AdminClient or segments)."""

    topic: str
    partition: int
    log_start_offset: int
    high_watermark: int
    last_stable_offset: int  # -1 when unknown (then the high watermark stands in)
    sampled_at: int


@dataclass(frozen=True, slots=True)
class PartitionLagRow:
    """``partition_lag``: one group's lag on one partition as of one time."""

    group_id: str
    topic: str
    partition: int
    as_of: int
    read_committed: bool
    committed_offset: int
    committed_at: int
    end_offset: int | None
    high_watermark: int | None
    last_stable_offset: int | None
    log_start_offset: int | None
    sampled_at: int | None
    lag_records: int | None
    lag_seconds: float | None
    lag_method: str | None  # "caught_up" | "exact" | "interpolated" | "extrapolated"
    data_loss: bool
    lost_records: int
    # Both lags, whatever the group reads with; end_offset, lag_records and lag_seconds above
    # are the one lag_basis names ("lso" | "high_watermark"), chosen for basis_reason
    # (offsetscope.history.lag.lag_basis). None without a sample.
    lag_basis: str | None = None
    basis_reason: str | None = None
    lag_records_hwm: int | None = None
    lag_records_lso: int | None = None
    lag_seconds_hwm: float | None = None
    lag_seconds_lso: float | None = None


@dataclass(frozen=True, slots=True)
class StuckPartitionRow:
    """``stuck_partitions``: one episode of a data partition's last stable offset standing still
    while its high watermark moved, for longer than the bound (:mod:`offsetscope.history.stuck`).
    """

    topic: str
    partition: int
    stuck_since: int  # the first sample at this last stable offset
    last_stable_offset: int
    detected_at: int  # the first sample past the bound
    resolved_at: int | None  # the first sample at another LSO; None while stuck
    stuck_ms: int  # from stuck_since to resolved_at, or to the last sample while stuck
    high_watermark: int  # at the last sample (or the last one before the LSO moved)
    high_watermark_since: int  # at stuck_since
    records_held: int  # high watermark - LSO: records no read_committed consumer gets
    sampled_at: int  # the last sample this row reflects
    # "open_transaction": its coordinator knows the transaction (a slow or hung producer);
    # "hanging_transaction": no coordinator does (its markers never reached the partition).
    cause: str
    transactional_id: str | None
    producer_id: int | None
    producer_epoch: int | None
    transaction_started_at: int | None
    transaction_timeout_ms: int | None
    open_for_ms: int | None  # how long the transaction had been open at sampled_at
    first_offset: int  # first offset of the transaction holding the LSO
    first_offset_source: str  # "segments" (read from the data log) | "lso" (the LSO itself)
    abort_command: str | None  # kafka-transactions.sh abort, for a hanging transaction
    blocked_groups: tuple[str, ...]  # groups whose committed offset is the stuck LSO
    behind_groups: tuple[str, ...]  # groups below it, that will stop there
    updated_at: int


# A Kafka Streams task set: (subtopology id, partitions) per subtopology.
Tasks = tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class StreamsAssignmentRow:
    """``streams_assignments``: one member's tasks in one target assignment of a Kafka Streams
    group (KIP-1071), with the process and host it runs in."""

    group_id: str
    group_life: int
    assignment_epoch: int
    member_id: str
    process_id: str | None
    host: str | None  # the member's user endpoint (application.server), if it has one
    port: int | None
    instance_id: str | None
    client_id: str | None
    client_host: str | None
    topology_epoch: int | None  # the group's topology epoch when the assignment was stored
    member_topology_epoch: int | None  # the topology epoch the member runs
    active_tasks: Tasks
    standby_tasks: Tasks
    warmup_tasks: Tasks
    assigned_at: int


@dataclass(frozen=True, slots=True)
class ShareStateBatch:
    """A range of records of a share-partition and how far their delivery went."""

    first_offset: int
    last_offset: int
    delivery_state: int  # 0 Available, 2 Acknowledged, 4 Archived
    delivery_count: int


@dataclass(frozen=True, slots=True)
class SharePartitionStateRow:
    """``share_partition_state``: one share-partition's state (KIP-932) after one record of
    ``__share_group_state`` (a snapshot, or an update applied to the state before it)."""

    group_id: str
    topic_id: str
    topic: str | None  # its name, when the group's records taught it
    partition: int
    record_partition: int
    record_offset: int
    record_timestamp: int
    record_kind: str  # "snapshot" | "update"
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int | None
    batches: tuple[ShareStateBatch, ...]  # the state after the record, in offset order
    in_flight_records: int  # records in batches still Available (not acknowledged/archived)
    acknowledged_records: int
    archived_records: int
    max_delivery_count: int
