"""Route a batch of events to the per-key folds and collect every table's rows.

The Spark layer may call the folds per key itself (grouped state); this driver is the same
composition for the batch job, the demo and the tests::

    __consumer_offsets, per partition:  OffsetCommitEvent + ControlEvent -> fold_offsets
    __consumer_offsets, per group:      GroupMetadataEvent + ConsumerGroupEvent
                                        + that group's offset_commits rows -> fold_group
    __transaction_state, per id:        TransactionLogEvent -> fold_transactions

Events must be in log order within each internal-topic partition (the order the sources
deliver); the relative order of different partitions does not matter.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from offsetscope.history.events import (
    ConsumerGroupEvent,
    ControlEvent,
    Event,
    GroupMetadataEvent,
    OffsetCommitEvent,
    TransactionLogEvent,
)
from offsetscope.history.groups import GroupInput, GroupState, fold_group
from offsetscope.history.offsets import OffsetsState, fold_offsets
from offsetscope.history.rows import (
    AssignmentRow,
    GenerationRow,
    GroupCurrentRow,
    OffsetCommitRow,
    SessionRow,
    TransactionRow,
    TransitionRow,
    TxnStatusRow,
)
from offsetscope.history.transactions import TxnIdState, fold_transactions
from offsetscope.protocol.records import OFFSETS_TOPIC, TRANSACTION_TOPIC


def _log_offset(item: GroupInput) -> int:
    return item.record_offset if isinstance(item, OffsetCommitRow) else item.at.offset


@dataclass(frozen=True, slots=True)
class HistoryStates:
    """All fold states, by key."""

    offsets: Mapping[int, OffsetsState] = field(default_factory=dict)
    groups: Mapping[str, GroupState] = field(default_factory=dict)
    transactions: Mapping[str, TxnIdState] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HistoryOutputs:
    """Every gold table's rows from one batch (upserts, one version per key and fold call)."""

    offset_commits: tuple[OffsetCommitRow, ...] = ()
    group_generations: tuple[GenerationRow, ...] = ()
    group_state_transitions: tuple[TransitionRow, ...] = ()
    member_sessions: tuple[SessionRow, ...] = ()
    partition_assignments: tuple[AssignmentRow, ...] = ()
    groups_current: tuple[GroupCurrentRow, ...] = ()
    transactions: tuple[TransactionRow, ...] = ()
    transaction_status_timeline: tuple[TxnStatusRow, ...] = ()


def fold_batch(
    states: HistoryStates | None,
    events: Iterable[Event],
    *,
    markers_visible: bool = True,
    topic_names: Mapping[str, str] | None = None,
) -> tuple[HistoryStates, HistoryOutputs]:
    """Fold one batch of decoded events of both internal topics.

    Args:
        states: the previous batch's states, or ``None`` at the start.
        events: decoded events, in log order within each internal-topic partition.
        markers_visible: see :func:`offsetscope.history.offsets.fold_offsets`.
        topic_names: topic id -> name (see :func:`offsetscope.history.groups.fold_group`).

    Returns:
        The new states (keys untouched by the batch keep their state) and the rows.
    """
    states = states or HistoryStates()
    by_partition: dict[int, list[Event]] = {}
    by_group: dict[str, list[GroupInput]] = {}
    by_txn: dict[str, list[Event]] = {}
    for e in events:
        if e.at.topic == TRANSACTION_TOPIC:
            if isinstance(e, TransactionLogEvent):
                by_txn.setdefault(e.transactional_id, []).append(e)
        elif e.at.topic == OFFSETS_TOPIC:
            if isinstance(e, OffsetCommitEvent | ControlEvent):
                by_partition.setdefault(e.at.partition, []).append(e)
            elif isinstance(e, GroupMetadataEvent | ConsumerGroupEvent):
                by_group.setdefault(e.group, []).append(e)

    offsets = dict(states.offsets)
    commit_rows: list[OffsetCommitRow] = []
    for partition in sorted(by_partition):
        new, produced = fold_offsets(
            offsets.get(partition), by_partition[partition], markers_visible=markers_visible
        )
        if new is not None:
            offsets[partition] = new
        commit_rows.extend(produced)
    rows_by_group: dict[str, list[OffsetCommitRow]] = {}
    for row in sorted(commit_rows, key=lambda r: r.record_offset):
        rows_by_group.setdefault(row.group_id, []).append(row)
    for group_id, group_rows in rows_by_group.items():
        # Merged at their record offsets: a topic name a commit teaches applies from there on.
        merged = heapq.merge(by_group.get(group_id, []), group_rows, key=_log_offset)
        by_group[group_id] = list(merged)

    groups = dict(states.groups)
    gens: list[GenerationRow] = []
    trans: list[TransitionRow] = []
    sessions: list[SessionRow] = []
    assigns: list[AssignmentRow] = []
    current: list[GroupCurrentRow] = []
    for group_id in sorted(by_group):
        gstate, gout = fold_group(groups.get(group_id), by_group[group_id], topic_names=topic_names)
        if gstate is not None:
            groups[group_id] = gstate
        gens.extend(gout.generations)
        trans.extend(gout.transitions)
        sessions.extend(gout.sessions)
        assigns.extend(gout.assignments)
        current.extend(gout.current)

    txns = dict(states.transactions)
    txn_rows: list[TransactionRow] = []
    timeline: list[TxnStatusRow] = []
    for txn_id in sorted(by_txn):
        tstate, tout = fold_transactions(txns.get(txn_id), by_txn[txn_id])
        if tstate is not None:
            txns[txn_id] = tstate
        txn_rows.extend(tout.transactions)
        timeline.extend(tout.timeline)

    return HistoryStates(offsets, groups, txns), HistoryOutputs(
        offset_commits=tuple(commit_rows),
        group_generations=tuple(gens),
        group_state_transitions=tuple(trans),
        member_sessions=tuple(sessions),
        partition_assignments=tuple(assigns),
        groups_current=tuple(current),
        transactions=tuple(txn_rows),
        transaction_status_timeline=tuple(timeline),
    )
