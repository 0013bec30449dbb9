"""The fold step of a batch: route its events to the per-key folds and collect every table's rows.

The ingest pipeline (:mod:`offsetscope.pipelines.batch`) runs this composition on each
micro-batch, and the in-memory driver :func:`fold_batch` runs the same one for the tests, the
checks and the demo; only where the inputs come from differs::

    light events ──route──▶ per __consumer_offsets partition: transactional
                            commits and markers + the plain commits in their
                            windows (window_commits) ───fold_offsets──▶ transactional rows ──┐
                            per group: GroupMetadata, KIP-848 records ──┐                      │
                            per transactional id ──fold_transactions──▶ transactions           │
                            group tombstones ──┐                        │                      │
    plain commits ─────summarize───────────────┴─▶ chosen commits per ──┴── merged by record ◀─┘
    (Arrow)                                       group                   offset ──fold_group──▶ group tables
                                                ─▶ latest position per (group, topic, partition) ──▶ lag

*Light events* are everything but plain offset commits: classic group metadata, KIP-848 records,
the transaction log, transaction markers and transactional offset commits (the last two only
where markers are visible: a segment source). *Plain commits* are the offset commits outside
transactions, final as read; they are most of the records, so the step never sees them one by
one: :func:`offsetscope.history.commits.summarize` reduces them to what the folds need.

A transactional commit is pending until its producer's marker; whether it then counts depends on
the plain commits of the same key written in between (Kafka materialises a pending offset only if
no newer record for its key exists), so those, and only those, are asked for through
``window_commits``.

State is per key (:data:`OFFSETS` partition, :data:`GROUP` id, :data:`TXN` id) and comes through
``load``; the step returns the states that changed. Events must be in log order within each
internal-topic partition; the relative order of different partitions does not matter.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from offsetscope.history.commits import Positions, Summary, commit_table, summarize
from offsetscope.history.events import (
    ConsumerGroupEvent,
    ControlEvent,
    Event,
    GroupMetadataEvent,
    OffsetCommitEvent,
    ShareStateEvent,
    TransactionLogEvent,
)
from offsetscope.history.groups import (
    GROUP_METADATA_TYPES,
    GroupInput,
    GroupState,
    fold_group,
)
from offsetscope.history.offsets import OffsetsState, fold_offsets, plain_row
from offsetscope.history.rows import (
    AssignmentRow,
    GenerationRow,
    GroupCurrentRow,
    OffsetCommitRow,
    SessionRow,
    SharePartitionStateRow,
    StreamsAssignmentRow,
    TransactionRow,
    TransitionRow,
    TxnStatusRow,
)
from offsetscope.history.share_state import SharePartitionState, fold_share_state, share_key
from offsetscope.history.transactions import TxnIdState, fold_transactions
from offsetscope.protocol.records import OFFSETS_TOPIC, TRANSACTION_TOPIC

# The folds, as ``fold_state`` names them; a state's key is (fold, key).
OFFSETS = "offsets"
GROUP = "group"
TXN = "txn"
SHARE = "share"  # per share-partition (group:topic id:partition), __share_group_state

FoldKey = tuple[str, str]
FoldState = OffsetsState | GroupState | TxnIdState | SharePartitionState
Loader = Callable[[Mapping[str, Sequence[str]]], Mapping[FoldKey, FoldState]]

# A plain commit window of a pending transactional commit: (offsets partition, group, topic,
# partition, the pending record's offset, the first marker of its producer after it or None).
Window = tuple[int, str, str, int, int, int | None]
WindowCommits = Callable[[set[Window]], Iterable[OffsetCommitEvent]]


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
    streams_assignments: tuple[StreamsAssignmentRow, ...] = ()
    share_partition_state: tuple[SharePartitionStateRow, ...] = ()


@dataclass(frozen=True, slots=True)
class Routed:
    """A batch's light events by fold key, and its groups' last deletions."""

    by_partition: Mapping[int, list[OffsetCommitEvent | ControlEvent]]
    by_group: Mapping[str, list[GroupInput]]
    by_txn: Mapping[str, list[TransactionLogEvent]]
    # group -> record offset of its last group-metadata tombstone in the batch
    tombstones: Mapping[str, int]
    # share-partition key -> its __share_group_state records
    by_share: Mapping[str, list[ShareStateEvent]] = field(default_factory=dict)

    def wanted(self, summary: Summary, offsets_partitions: Sequence[int]) -> dict[str, list[str]]:
        """The state keys :func:`fold` loads first (to prefetch them with other keys)."""
        # A share-partition's group state names its topic.
        share_groups = {evs[0].group for evs in self.by_share.values()}
        return {
            OFFSETS: [str(p) for p in sorted(set(offsets_partitions))],
            GROUP: sorted(set(self.by_group) | set(summary) | share_groups),
            TXN: sorted(self.by_txn),
            SHARE: sorted(self.by_share),
        }


@dataclass(frozen=True, slots=True)
class BatchFold:
    """What :func:`fold` made of one batch."""

    # The rows of every gold table but the plain offset commits (written as read) and lag.
    outputs: HistoryOutputs
    # The states that changed.
    states: Mapping[FoldKey, FoldState]
    # Keys folded, per fold.
    folded: Mapping[str, int] = field(default_factory=dict)


def route(light: Iterable[Event]) -> Routed:
    """Group a batch's light events (log order within each partition) by fold key."""
    by_partition: dict[int, list[OffsetCommitEvent | ControlEvent]] = defaultdict(list)
    by_group: dict[str, list[GroupInput]] = defaultdict(list)
    by_txn: dict[str, list[TransactionLogEvent]] = defaultdict(list)
    by_share: dict[str, list[ShareStateEvent]] = defaultdict(list)
    tombstones: dict[str, int] = {}
    for e in sorted(light, key=lambda e: (e.at.topic, e.at.partition, e.at.offset)):
        if e.at.topic == TRANSACTION_TOPIC:
            if isinstance(e, TransactionLogEvent):
                by_txn[e.transactional_id].append(e)
        elif isinstance(e, ShareStateEvent):
            by_share[share_key(e.group, e.topic_id, e.partition)].append(e)
        elif e.at.topic != OFFSETS_TOPIC:
            continue
        elif isinstance(e, GroupMetadataEvent | ConsumerGroupEvent):
            by_group[e.group].append(e)
            if (isinstance(e, GroupMetadataEvent) and e.tombstone) or (
                isinstance(e, ConsumerGroupEvent)
                and e.record_type in GROUP_METADATA_TYPES
                and e.value is None
            ):
                tombstones[e.group] = e.at.offset
        elif isinstance(e, OffsetCommitEvent | ControlEvent):
            by_partition[e.at.partition].append(e)
    return Routed(dict(by_partition), dict(by_group), dict(by_txn), tombstones, dict(by_share))


def fold(
    routed: Routed,
    summary: Summary,
    load: Loader,
    *,
    offsets_partitions: Sequence[int],
    window_commits: WindowCommits,
    topic_names: Mapping[str, str] | None = None,
) -> BatchFold:
    """Fold one routed batch.

    Args:
        routed: the batch's light events (:func:`route`).
        summary: the group fold's chosen plain commits
            (:func:`~offsetscope.history.commits.summarize` of the batch's plain commits).
        load: the stored states of the keys asked for (absent: the key has none); called once
            with :meth:`Routed.wanted`, and again for groups known only from transactional
            commits the markers resolved.
        offsets_partitions: the ``__consumer_offsets`` partitions whose transactional commits
            are followed (those the batch read, where markers are visible; none otherwise).
        window_commits: the batch's plain commits inside the given windows.
        topic_names: topic id -> name (see :func:`offsetscope.history.groups.fold_group`).
    """
    states = dict(load(routed.wanted(summary, offsets_partitions)))
    new: dict[FoldKey, FoldState] = {}
    txn_rows, offsets_folded = _fold_offsets(
        routed, states, new, offsets_partitions, window_commits
    )

    commits: dict[str, list[OffsetCommitRow]] = {g: list(rows) for g, rows in summary.items()}
    for row in txn_rows:
        commits.setdefault(row.group_id, []).append(row)
    groups = sorted(set(routed.by_group) | set(commits))
    late = [g for g in groups if g not in routed.by_group and g not in summary]
    if late:
        states.update(load({GROUP: late}))
    gens: list[GenerationRow] = []
    trans: list[TransitionRow] = []
    sessions: list[SessionRow] = []
    assigns: list[AssignmentRow] = []
    current: list[GroupCurrentRow] = []
    streams: list[StreamsAssignmentRow] = []
    names: dict[str, dict[str, str]] = {}  # group -> topic id -> name, for share-partitions
    for group_id in groups:
        before = states.get((GROUP, group_id))
        assert before is None or isinstance(before, GroupState)
        # Merged at their record offsets: a topic name a commit teaches applies from there on.
        ordered = heapq.merge(
            routed.by_group.get(group_id, ()),
            sorted(commits.get(group_id, ()), key=lambda r: r.record_offset),
            key=_log_offset,
        )
        after, gout = fold_group(before, ordered, topic_names=topic_names)
        gens.extend(gout.generations)
        trans.extend(gout.transitions)
        sessions.extend(gout.sessions)
        assigns.extend(gout.assignments)
        current.extend(gout.current)
        streams.extend(gout.streams_assignments)
        if after is not None and after != before:
            new[(GROUP, group_id)] = after
        if after is not None:
            names[group_id] = {t: n for t, n, _ in after.topic_names}

    shares: list[SharePartitionStateRow] = []
    for key in sorted(routed.by_share):
        events = routed.by_share[key]
        sbefore = states.get((SHARE, key))
        assert sbefore is None or isinstance(sbefore, SharePartitionState)
        group = events[0].group
        known = names.get(group)
        if known is None:
            gstate = states.get((GROUP, group))
            known = (
                {t: n for t, n, _ in gstate.topic_names} if isinstance(gstate, GroupState) else {}
            )
        topic_id = events[0].topic_id
        safter, srows = fold_share_state(
            sbefore, events, topic_name=known.get(topic_id) or (topic_names or {}).get(topic_id)
        )
        shares.extend(srows)
        if safter != sbefore and safter is not None:
            new[(SHARE, key)] = safter

    txns: list[TransactionRow] = []
    timeline: list[TxnStatusRow] = []
    for txn_id in sorted(routed.by_txn):
        tbefore = states.get((TXN, txn_id))
        assert tbefore is None or isinstance(tbefore, TxnIdState)
        tafter, tout = fold_transactions(tbefore, routed.by_txn[txn_id])
        txns.extend(tout.transactions)
        timeline.extend(tout.timeline)
        if tafter is not None and tafter != tbefore:
            new[(TXN, txn_id)] = tafter

    outputs = HistoryOutputs(
        offset_commits=tuple(txn_rows),
        group_generations=tuple(gens),
        group_state_transitions=tuple(trans),
        member_sessions=tuple(sessions),
        partition_assignments=tuple(assigns),
        groups_current=tuple(current),
        transactions=tuple(txns),
        transaction_status_timeline=tuple(timeline),
        streams_assignments=tuple(streams),
        share_partition_state=tuple(shares),
    )
    folded = {
        OFFSETS: offsets_folded,
        GROUP: len(groups),
        TXN: len(routed.by_txn),
        SHARE: len(routed.by_share),
    }
    return BatchFold(outputs, new, folded)


def _fold_offsets(
    routed: Routed,
    states: Mapping[FoldKey, FoldState],
    new: dict[FoldKey, FoldState],
    partitions: Sequence[int],
    window_commits: WindowCommits,
) -> tuple[list[OffsetCommitRow], int]:
    """The transactional commits' rows (pending, or resolved by the batch's markers), and how
    many partitions were folded."""
    before: dict[int, OffsetsState] = {}
    for p in partitions:
        s = states.get((OFFSETS, str(p)))
        if s is not None:
            assert isinstance(s, OffsetsState)
            before[p] = s
    events: dict[int, list[OffsetCommitEvent | ControlEvent]] = {
        p: list(evs) for p, evs in routed.by_partition.items()
    }
    windows = _windows(routed, before)
    if windows:
        # A record inside several windows of its key is asked for once per window.
        seen: set[tuple[int, int]] = set()
        for e in window_commits(windows):
            if (e.at.partition, e.at.offset) not in seen:
                seen.add((e.at.partition, e.at.offset))
                events.setdefault(e.at.partition, []).append(e)
    rows: dict[tuple[int, int], OffsetCommitRow] = {}
    for p in sorted(events):
        ordered = sorted(events[p], key=lambda e: e.at.offset)
        after, produced = fold_offsets(before.get(p), ordered, markers_visible=True)
        for r in produced:
            if r.transactional:
                rows.pop((r.record_partition, r.record_offset), None)
                rows[(r.record_partition, r.record_offset)] = r
        if after is not None and after != before.get(p):
            new[(OFFSETS, str(p))] = after
    return list(rows.values()), len(events)


def _windows(routed: Routed, before: Mapping[int, OffsetsState]) -> set[Window]:
    """Where a plain commit would decide a pending transactional commit's outcome.

    A plain commit or tombstone of a key, written between one of the key's pending
    transactional commits and the marker resolving it, decides the outcome: Kafka materialises
    the pending offset only if no newer record for the key exists, and a tombstone drops it.
    """
    markers: dict[tuple[int, int], list[int]] = defaultdict(list)
    for p, evs in routed.by_partition.items():
        for e in evs:
            if isinstance(e, ControlEvent):
                markers[(p, e.at.producer_id)].append(e.at.offset)
    pending = [
        (p, pc.row.group_id, pc.row.topic, pc.row.partition, pc.row.record_offset, pid)
        for p, s in before.items()
        for pc in s.pending
        for pid in [pc.row.producer_id if pc.row.producer_id is not None else -1]
    ]
    pending += [
        (e.at.partition, e.group, e.topic, e.partition, e.at.offset, e.at.producer_id)
        for evs in routed.by_partition.values()
        for e in evs
        if isinstance(e, OffsetCommitEvent)
    ]
    windows: set[Window] = set()
    for p, group, topic, tp, lo, pid in pending:
        hi = next((m for m in sorted(markers.get((p, pid), ())) if m > lo), None)
        if hi is None or hi > lo + 1:
            windows.add((p, group, topic, tp, lo, hi))
    return windows


def _log_offset(item: GroupInput) -> int:
    return item.record_offset if isinstance(item, OffsetCommitRow) else item.at.offset


# ----------------------------------------------------------------------------- in memory


@dataclass(frozen=True, slots=True)
class HistoryStates:
    """All fold states, by key: what :func:`fold_batch` carries from one batch to the next."""

    offsets: Mapping[int, OffsetsState] = field(default_factory=dict)
    groups: Mapping[str, GroupState] = field(default_factory=dict)
    transactions: Mapping[str, TxnIdState] = field(default_factory=dict)
    # (topic, partition) -> the last offset read: a replayed record is skipped, as the pipeline
    # skips a replayed batch (its writes carry the batch's idempotency marks).
    read: Mapping[tuple[str, int], int] = field(default_factory=dict)
    shares: Mapping[str, SharePartitionState] = field(default_factory=dict)

    def get(self, key: FoldKey) -> FoldState | None:
        fold_name, k = key
        if fold_name == OFFSETS:
            return self.offsets.get(int(k))
        if fold_name == GROUP:
            return self.groups.get(k)
        if fold_name == SHARE:
            return self.shares.get(k)
        return self.transactions.get(k)

    def updated(
        self, changed: Mapping[FoldKey, FoldState], read: Mapping[tuple[str, int], int]
    ) -> HistoryStates:
        offsets, groups, txns = dict(self.offsets), dict(self.groups), dict(self.transactions)
        shares = dict(self.shares)
        for (_, k), s in changed.items():
            if isinstance(s, OffsetsState):
                offsets[int(k)] = s
            elif isinstance(s, GroupState):
                groups[k] = s
            elif isinstance(s, SharePartitionState):
                shares[k] = s
            else:
                txns[k] = s
        return HistoryStates(offsets, groups, txns, {**self.read, **read}, shares)


def is_plain(event: Event) -> bool:
    """An offset commit outside a transaction: final as read, summarised, never routed."""
    return isinstance(event, OffsetCommitEvent) and not event.is_transactional


def fold_batch(
    states: HistoryStates | None,
    events: Iterable[Event],
    *,
    topic_names: Mapping[str, str] | None = None,
    read_committed_source: bool = False,
) -> tuple[HistoryStates, HistoryOutputs]:
    """Fold one batch of decoded events of both internal topics, held in memory.

    The same step as the ingest pipeline's (:func:`route`, :func:`summarize`, :func:`fold`)
    over a segment source's events, markers included; the plain commits' rows are the ones the
    pipeline appends (:func:`offsetscope.history.offsets.plain_row`).

    Args:
        states: the previous batch's states, or ``None`` at the start.
        events: decoded events, in log order within each internal-topic partition.
        topic_names: topic id -> name (see :func:`offsetscope.history.groups.fold_group`).
        read_committed_source: the events come from a ``read_committed`` Kafka source (no
            markers; every commit that arrives is committed, ``resolved_by`` says so).

    Returns:
        The new states (keys untouched by the batch keep theirs) and every gold table's rows,
        ``offset_commits`` with the plain commits' rows, in log order per partition.
    """
    states = states or HistoryStates()
    read: dict[tuple[str, int], int] = {}
    fresh: list[Event] = []
    for e in events:
        tp = (e.at.topic, e.at.partition)
        if e.at.offset > read.get(tp, states.read.get(tp, -1)):
            read[tp] = e.at.offset
            fresh.append(e)
    events = fresh
    plain = [e for e in events if is_plain(e)]
    plain_rows = [
        plain_row(e, read_committed_source=read_committed_source)
        for e in plain
        if isinstance(e, OffsetCommitEvent)
    ]
    routed = route(e for e in events if not is_plain(e))
    summary, _ = summarize_rows(plain_rows, routed.tombstones)
    partitions = sorted(
        {e.at.partition for e in events if e.at.topic == OFFSETS_TOPIC} | set(states.offsets)
    )
    result = fold(
        routed,
        summary,
        lambda wanted: {
            (f, k): s for f, keys in wanted.items() for k in keys if (s := states.get((f, k)))
        },
        offsets_partitions=partitions,
        window_commits=lambda windows: commits_in_windows(plain, windows),
        topic_names=topic_names,
    )
    commits = sorted(
        [*plain_rows, *result.outputs.offset_commits],
        key=lambda r: (r.record_partition, r.record_offset),
    )
    outputs = dataclasses.replace(result.outputs, offset_commits=tuple(commits))
    return states.updated(result.states, read), outputs


def summarize_rows(
    rows: Sequence[OffsetCommitRow], tombstones: Mapping[str, int]
) -> tuple[Summary, Positions]:
    """:func:`~offsetscope.history.commits.summarize` of plain commit rows held in memory."""
    if not rows:
        return {}, {}
    return summarize(commit_table(rows), tombstones)


def commits_in_windows(plain: Iterable[Event], windows: set[Window]) -> Iterator[OffsetCommitEvent]:
    """The plain commits of ``plain`` inside ``windows`` (see :data:`Window`)."""
    by_key: dict[tuple[int, str, str, int], list[tuple[int, int | None]]] = defaultdict(list)
    for p, group, topic, tp, lo, hi in windows:
        by_key[(p, group, topic, tp)].append((lo, hi))
    for e in plain:
        if not isinstance(e, OffsetCommitEvent):
            continue
        for lo, hi in by_key.get((e.at.partition, e.group, e.topic, e.partition), ()):
            if e.at.offset > lo and (hi is None or e.at.offset < hi):
                yield e
                break
