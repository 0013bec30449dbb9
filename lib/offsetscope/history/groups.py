"""Group fold: one group's records -> generations, transitions, member sessions, assignments.

Input, per group id, in log order: classic ``GroupMetadataEvent`` (record type 2),
``ConsumerGroupEvent`` of KIP-848 consumer groups (types 3-8 and 16), share groups (KIP-932,
types 9-15) and Kafka Streams groups (KIP-1071, types 17-24), and the group's
``OffsetCommitRow`` outputs of :mod:`offsetscope.history.offsets` (only for "last commit" and
topic-id names; their order does not matter).

What the records say, and what this fold inverts (``docs/formats.md`` sections 3.3, 3.4, 8.1, 8.4):

* Classic groups persist a GroupMetadata record only when the leader's SyncGroup stores the
  assignment (members, generation already bumped, ``currentStateTimestamp`` = time the group
  entered CompletingRebalance), when the join phase ends with no members (members [],
  generation + 1, ``currentStateTimestamp`` = time it became Empty), when a static member
  replaces itself while Stable (same generation, new member id), and, in 4.x, once for a new
  group (generation 0, protocol type ""). A tombstone deletes the group.

  So one row per stored generation; a generation jump of k means k rebalances happened between
  the two records, k - 1 of which never stored an assignment (failed syncs) or whose records
  were missed (compaction before the reader saw them). A record that rewrites the current
  generation updates that row and counts the static replacements. Members are matched by
  ``group.instance.id`` first, so a static restart is a replacement, not a leave plus a join.

  Transitions: CompletingRebalance -> Stable (record timestamp) and -> Empty
  (``currentStateTimestamp``) and -> Dead (tombstone) are observed. PreparingRebalance ->
  CompletingRebalance is inferred at ``currentStateTimestamp``. Stable/Empty ->
  PreparingRebalance is inferred with its time unknown: it lies after the previous record of the
  group and before the join completion (``at`` is null, ``at_min``/``at_max`` bound it).

* KIP-848 groups write a member subscription (5), the group epoch (3), target assignments
  (7 per member, then 6 with the assignment epoch) and each member's current assignment and
  epoch (8); a member leaving writes tombstones 8, 7, 5 then an epoch bump; deletion writes
  tombstones 8*, 7*, 6, 5*, 16*, 4, 3. One row per group epoch (type 3); the row's assignment is
  the target assignment once a type 6 record reaches that epoch. The group state is recomputed
  after every record exactly as Kafka does on replay (:mod:`offsetscope.protocol.states`), so
  those transitions are observed at record granularity.

* Share and Streams groups keep the same tables under their own record types (the mapping is
  :data:`_FLAVORS`); one row per group epoch too, ``kind`` ``share`` or ``streams``. A share
  group's target assignment is partitions (as KIP-848's); a Streams group's is tasks -- active,
  standby and warm-up per subtopology -- which go to ``streams_assignments`` with each member's
  process id, user endpoint and topology epoch, its generation rows carrying no partitions. A
  share group is Empty or Stable (Kafka's ShareGroup); a Streams group's state is derived as a
  consumer group's (Kafka's NotReady, for a topology whose topics are missing, is not in the
  records).

Group lives: a group id can be deleted and created again (or converted between the classic and
the consumer protocol). Generation numbers restart, so rows carry ``group_life`` (0, then + 1 at
each re-creation), which the natural keys include. A generation that goes backwards without a
tombstone (the tombstone was compacted away) also starts a new life.

Member sessions are emitted when they start, change or end, not at every rebalance: an open
session's last generation is the group's current one and is written when the session ends (the
join/leave times are the join completions of the first generation with / without the member,
so they bound the real JoinGroup and LeaveGroup/timeout from above).

State per group (:class:`GroupState`) holds the current generation row, the open member
sessions, the KIP-848 member/target tables and the rebalance times of the last 24 h: its size
follows the group's current size, never its history.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from offsetscope.history.codec import JsonState, evolve
from offsetscope.history.events import (
    ConsumerGroupEvent,
    Coordinates,
    Event,
    GroupMetadataEvent,
    MemberSnapshot,
    OffsetCommitEvent,
    TopicPartition,
)
from offsetscope.history.rows import (
    Assignment,
    AssignmentRow,
    GenerationMember,
    GenerationRow,
    GroupCurrentRow,
    OffsetCommitRow,
    Replacement,
    SessionRow,
    StreamsAssignmentRow,
    Tasks,
    TransitionRow,
)
from offsetscope.protocol.json_format import uuid_to_kafka
from offsetscope.protocol.states import ClassicGroupState, ConsumerGroupState

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
# Rebalance times kept per group (one entry per rebalance of the last 24 h). A generation jump
# of k stamps k entries; a corrupt or hostile record can claim a jump of 2^31, so the entries
# one record adds and the list itself stop here (a rebalance every ~0.9 s for a whole day):
# beyond it the 1 h / 24 h counts saturate instead of the fold allocating without bound.
MAX_REBALANCE_TIMES = 100_000

INT32_MAX = 2**31 - 1


def _jump(previous: int, generation: int) -> tuple[int, int]:
    """(generations skipped, rebalances) from ``previous`` to ``generation``.

    Both are int32 in Kafka, so a corrupt record (a negative generation, then a positive one)
    can make the difference exceed int32, the type of the table columns: it saturates there.
    """
    rebalances = min(generation - previous, INT32_MAX)
    return rebalances - 1, rebalances


CLASSIC = "classic"
KIP848 = "kip848"
SHARE = "share"  # KIP-932 share groups
STREAMS = "streams"  # KIP-1071 Kafka Streams groups
SIMPLE = "simple"
_LIVE_KINDS = (CLASSIC, KIP848, SHARE, STREAMS)
_EPOCH_KINDS = (KIP848, SHARE, STREAMS)

# KIP-848 record types of consumer groups.
CONSUMER_GROUP_TYPES = frozenset({3, 4, 5, 6, 7, 8, 16})
_STABLE_MEMBER = 0  # MemberState.STABLE (docs/formats.md section 3.8)


@dataclass(frozen=True, slots=True)
class _Flavor:
    """One group type of the new rebalance protocol, as its records map onto KIP-848's.

    Share groups (KIP-932) and Kafka Streams groups (KIP-1071) keep the same tables as consumer
    groups -- a group epoch, member metadata, a target assignment with its epoch, each member's
    current assignment and epoch -- under record types of their own, so one fold replays all
    three. What differs: the member record's fields, a Streams target assignment of tasks
    rather than partitions, Streams' member states (1 = stable), and how the group state is
    derived (a share group is Empty or Stable, Kafka's ShareGroup.maybeUpdateGroupState).
    """

    kind: str
    protocol_type: str
    metadata: int
    partition_metadata: int
    member: int
    target_metadata: int
    target_member: int
    current: int
    names: frozenset[int]  # records that map topic ids to names
    topology: int | None
    stable_member: int
    record_names: Mapping[int, str]


_FLAVORS = (
    _Flavor(
        KIP848, "consumer", 3, 4, 5, 6, 7, 8, frozenset({4}), None, _STABLE_MEMBER,
        {
            3: "ConsumerGroupMetadata",
            4: "ConsumerGroupPartitionMetadata",
            5: "ConsumerGroupMemberMetadata",
            6: "ConsumerGroupTargetAssignmentMetadata",
            7: "ConsumerGroupTargetAssignmentMember",
            8: "ConsumerGroupCurrentMemberAssignment",
            16: "ConsumerGroupRegularExpression",
        },
    ),
    _Flavor(
        SHARE, "share", 11, 9, 10, 12, 13, 14, frozenset({9, 15}), None, _STABLE_MEMBER,
        {
            9: "ShareGroupPartitionMetadata",
            10: "ShareGroupMemberMetadata",
            11: "ShareGroupMetadata",
            12: "ShareGroupTargetAssignmentMetadata",
            13: "ShareGroupTargetAssignmentMember",
            14: "ShareGroupCurrentMemberAssignment",
            15: "ShareGroupStatePartitionMetadata",
        },
    ),
    _Flavor(
        STREAMS, "streams", 17, 18, 19, 20, 21, 22, frozenset({18}), 23, 1,
        {
            17: "StreamsGroupMetadata",
            18: "StreamsGroupPartitionMetadata",
            19: "StreamsGroupMemberMetadata",
            20: "StreamsGroupTargetAssignmentMetadata",
            21: "StreamsGroupTargetAssignmentMember",
            22: "StreamsGroupCurrentMemberAssignment",
            23: "StreamsGroupTopology",
            24: "StreamsGroupTargetAssignmentResolvedTopicIds",
        },
    ),
)  # fmt: skip
_FLAVOR_OF_TYPE: Mapping[int, _Flavor] = {t: f for f in _FLAVORS for t in f.record_names}
_FLAVOR_OF_KIND: Mapping[str, _Flavor] = {f.kind: f for f in _FLAVORS}
# Record types this fold reads besides classic group metadata.
GROUP_RECORD_TYPES = frozenset(_FLAVOR_OF_TYPE)
# The group metadata record of each type: its tombstone deletes the group.
GROUP_METADATA_TYPES = frozenset(f.metadata for f in _FLAVORS)

_C = ClassicGroupState
_K = ConsumerGroupState

GroupInput = GroupMetadataEvent | ConsumerGroupEvent | OffsetCommitRow


@dataclass(frozen=True, slots=True)
class KipMember:
    """A KIP-848 member as replayed from its type 5 and type 8 records."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topics: tuple[str, ...]
    rebalance_timeout_ms: int
    session_timeout_ms: int
    server_assignor: str | None
    member_epoch: int
    member_state: int


@dataclass(frozen=True, slots=True)
class KipState:
    """KIP-848 tables replayed from records: members, target assignment, assignment epoch."""

    members: tuple[KipMember, ...]
    # member id -> (topic id text, partition): type 7 records
    target: tuple[tuple[str, tuple[TopicPartition, ...]], ...]
    target_epoch: int
    # (topic id text, partition, owner) of the target attached to epoch ``owners_epoch``, and
    # of the epoch before it: partitions moved = owner changes between the two
    owners: tuple[tuple[str, int, str], ...]
    owners_epoch: int
    base_owners: tuple[tuple[str, int, str], ...]
    deleting: bool
    # static members that left at ``left_static_at``: a new member id with the same instance id
    # in the same coordinator write replaces them (the old member's tombstones come first)
    left_static: tuple[SessionRow, ...]
    left_static_at: int
    # Kafka Streams groups only: member id -> (process id, endpoint host, endpoint port, the
    # member's topology epoch), the target tasks per member (active, standby, warm-up), and
    # the group's topology epoch (type 23).
    streams_members: tuple[tuple[str, str | None, str | None, int | None, int | None], ...] = ()
    target_tasks: tuple[tuple[str, Tasks, Tasks, Tasks], ...] = ()
    topology_epoch: int | None = None


# Kafka's initial values: group epoch 0, target assignment epoch 0.
_EMPTY_KIP = KipState((), (), 0, (), -1, (), False, (), -1)


@dataclass(frozen=True, slots=True)
class GroupState(JsonState):
    """Everything the group fold carries between batches for one group id."""

    group_id: str
    group_life: int
    kind: str | None
    life_ended: bool  # a tombstone ended the life; the next group record starts a new one
    deleted: bool
    deleted_at_offset: int
    record_partition: int
    last_offset: int
    last_record_at: int | None
    state: str | None
    state_since: int | None
    current: GenerationRow | None
    sessions: tuple[SessionRow, ...]
    last_commit_at: int | None
    rebalance_times: tuple[int, ...]
    last_rebalance_at: int | None
    latest_at: int | None
    kip: KipState | None
    # (topic id, name, log offset it was learned at): a name applies to records after it
    topic_names: tuple[tuple[str, str, int], ...]


@dataclass(frozen=True, slots=True)
class GroupOutputs:
    """Rows one fold call produced (upserts; one version per natural key)."""

    generations: tuple[GenerationRow, ...] = ()
    transitions: tuple[TransitionRow, ...] = ()
    sessions: tuple[SessionRow, ...] = ()
    assignments: tuple[AssignmentRow, ...] = ()
    current: tuple[GroupCurrentRow, ...] = ()
    streams_assignments: tuple[StreamsAssignmentRow, ...] = ()


def fold_group(
    state: GroupState | None,
    events: Iterable[Event | OffsetCommitRow],
    *,
    topic_names: Mapping[str, str] | None = None,
) -> tuple[GroupState | None, GroupOutputs]:
    """Fold one group's events (in log order) into its state and history rows.

    Args:
        state: what the previous call returned, or ``None`` for a group seen for the first time.
        events: this batch's events of one group id in log order, with the group's
            ``offset_commits`` rows merged in at their record offsets (other event types are
            ignored: commits count through the offsets fold's rows). Events at or below the last
            folded record offset are skipped, so a replayed batch changes nothing.
        topic_names: topic id (Kafka's Base64 text) -> topic name, e.g. from cluster metadata;
            KIP-848 records carry only ids. Names also come from type 4 records and from
            offset commits that carry a topic id.

    Returns:
        The new state (``None`` only when there was no state and no event) and the rows.
    """
    events = list(events)
    group_id = _group_id(state, events)
    if group_id is None:
        return None, GroupOutputs()
    folder = _Folder(state, group_id, topic_names or {})
    for event in events:
        folder.apply(event)
    return folder.freeze(), folder.outputs()


def _group_id(state: GroupState | None, events: Sequence[Event | OffsetCommitRow]) -> str | None:
    if state is not None:
        return state.group_id
    for e in events:
        if isinstance(e, OffsetCommitRow):
            return e.group_id
        if isinstance(e, GroupMetadataEvent | ConsumerGroupEvent | OffsetCommitEvent):
            return e.group
    return None


def rebalances_in_window(times: Iterable[int], as_of: int, window_ms: int) -> int:
    """How many rebalances happened in ``(as_of - window_ms, as_of]``.

    ``times`` holds one entry per rebalance (``GroupCurrentRow.rebalance_times`` or
    :func:`offsetscope.history.signals.rebalance_times` over generation rows).
    """
    return sum(1 for t in times if as_of - window_ms < t <= as_of)


def topic_text(topic_id: Any) -> str:
    """A KIP-848 topic id as Kafka prints it (URL-safe Base64), from a UUID or that text."""
    if isinstance(topic_id, uuid.UUID):
        return uuid_to_kafka(topic_id)
    return str(topic_id)


class _Folder:
    """Mutable working copy of a :class:`GroupState` for the length of one fold call."""

    def __init__(self, state: GroupState | None, group_id: str, names: Mapping[str, str]) -> None:
        self.group_id = group_id
        s = state
        self.life = s.group_life if s else 0
        self.kind = s.kind if s else None
        self.life_ended = s.life_ended if s else False
        self.deleted = s.deleted if s else False
        self.deleted_at_offset = s.deleted_at_offset if s else -1
        self.record_partition = s.record_partition if s else -1
        self.last_offset = s.last_offset if s else -1
        self.last_record_at = s.last_record_at if s else None
        self.state = s.state if s else None
        self.state_since = s.state_since if s else None
        self.current = s.current if s else None
        self.sessions: dict[str, SessionRow] = {x.member_id: x for x in s.sessions} if s else {}
        self.last_commit_at = s.last_commit_at if s else None
        self.rebalance_times = list(s.rebalance_times) if s else []
        self.last_rebalance_at = s.last_rebalance_at if s else None
        self.latest_at = s.latest_at if s else None
        self.topic_names: dict[str, tuple[str, int]] = (
            {tid: (name, off) for tid, name, off in s.topic_names} if s else {}
        )
        # Names handed in by the caller (cluster metadata) apply to every record but are not
        # kept in the state: it would hold the whole cluster's topics for every group.
        self.given_names = names
        self.at_offset = -1
        kip = s.kip if s else None
        self.has_kip = kip is not None
        kip = kip or _EMPTY_KIP
        self.kmembers: dict[str, KipMember] = {m.member_id: m for m in kip.members}
        self.target: dict[str, tuple[TopicPartition, ...]] = dict(kip.target)
        self.target_epoch = kip.target_epoch
        # Members not yet STABLE at the target epoch; rebuilt lazily when the target moves, so
        # the state check after each record is O(1) instead of O(members).
        self.unreconciled: set[str] | None = None
        self.owners = kip.owners
        self.owners_epoch = kip.owners_epoch
        self.base_owners = kip.base_owners
        self.deleting = kip.deleting
        self.left_static: dict[str, SessionRow] = {x.instance_id or "": x for x in kip.left_static}
        self.left_static_at = kip.left_static_at
        self.streams_members: dict[str, tuple[str | None, str | None, int | None, int | None]] = {
            m[0]: m[1:] for m in kip.streams_members
        }
        self.target_tasks: dict[str, tuple[Tasks, Tasks, Tasks]] = {
            t[0]: t[1:] for t in kip.target_tasks
        }
        self.topology_epoch = kip.topology_epoch

        self.dirty = False
        self.seq = 0
        self.out_gen: dict[tuple[Any, ...], GenerationRow] = {}
        self.out_tr: dict[tuple[Any, ...], TransitionRow] = {}
        self.out_sess: dict[tuple[Any, ...], SessionRow] = {}
        self.out_asg: dict[tuple[Any, ...], AssignmentRow] = {}
        self.out_streams: dict[tuple[Any, ...], StreamsAssignmentRow] = {}

    # ------------------------------------------------------------------ plumbing

    def apply(self, event: Event | OffsetCommitRow) -> None:
        if isinstance(event, OffsetCommitRow):
            self._commit(event)
            return
        if not isinstance(event, GroupMetadataEvent | ConsumerGroupEvent):
            return  # raw commits count through the offsets fold's rows; markers, txn log: n/a
        at = event.at
        if at.offset <= self.last_offset:
            return  # already folded (a replayed batch)
        if isinstance(event, ConsumerGroupEvent) and event.record_type not in GROUP_RECORD_TYPES:
            return
        self.last_offset = at.offset
        self.at_offset = at.offset
        self.record_partition = at.partition
        self.seq = 0
        self._saw(at.timestamp)
        self.dirty = True
        if isinstance(event, GroupMetadataEvent):
            self._classic(event)
        else:
            self._kip(event)
        self.last_record_at = at.timestamp

    def _saw(self, ts: int) -> None:
        self.latest_at = ts if self.latest_at is None else max(self.latest_at, ts)

    def freeze(self) -> GroupState:
        self._prune()
        kip = None
        if self.has_kip:
            kip = KipState(
                tuple(self.kmembers.values()),
                tuple(self.target.items()),
                self.target_epoch,
                self.owners,
                self.owners_epoch,
                self.base_owners,
                self.deleting,
                tuple(self.left_static.values()),
                self.left_static_at,
                tuple((mid, *extra) for mid, extra in self.streams_members.items()),
                tuple((mid, *tasks) for mid, tasks in self.target_tasks.items()),
                self.topology_epoch,
            )
        return GroupState(
            group_id=self.group_id,
            group_life=self.life,
            kind=self.kind,
            life_ended=self.life_ended,
            deleted=self.deleted,
            deleted_at_offset=self.deleted_at_offset,
            record_partition=self.record_partition,
            last_offset=self.last_offset,
            last_record_at=self.last_record_at,
            state=self.state,
            state_since=self.state_since,
            current=self.current,
            sessions=tuple(self.sessions.values()),
            last_commit_at=self.last_commit_at,
            rebalance_times=tuple(self.rebalance_times),
            last_rebalance_at=self.last_rebalance_at,
            latest_at=self.latest_at,
            kip=kip,
            topic_names=tuple(sorted((t, n, o) for t, (n, o) in self.topic_names.items())),
        )

    def outputs(self) -> GroupOutputs:
        current: tuple[GroupCurrentRow, ...] = ()
        if self.dirty and self.latest_at is not None:
            current = (self._current_row(),)
        return GroupOutputs(
            generations=tuple(self.out_gen.values()),
            transitions=tuple(self.out_tr.values()),
            sessions=tuple(self.out_sess.values()),
            assignments=tuple(self.out_asg.values()),
            current=current,
            streams_assignments=tuple(self.out_streams.values()),
        )

    def _prune(self) -> None:
        if self.latest_at is not None:
            horizon = self.latest_at - DAY_MS
            self.rebalance_times = [t for t in self.rebalance_times if t > horizon]

    @staticmethod
    def _put(bucket: dict[tuple[Any, ...], Any], key: tuple[Any, ...], row: Any) -> None:
        # Re-insert so the batch's output order is the order of each key's last update.
        bucket.pop(key, None)
        bucket[key] = row

    def _emit_generation(self, row: GenerationRow) -> None:
        self.current = row
        self._put(self.out_gen, (row.group_id, row.group_life, row.generation), row)

    def _emit_session(self, row: SessionRow) -> None:
        if row.left_at is None and row.last_generation is not None:
            # Open sessions are emitted without their moving last generation (it is the
            # group's current one), so a rebalance rewrites only the sessions that changed.
            row = evolve(row, last_generation=None)
        self._put(self.out_sess, (row.group_id, row.group_life, row.member_id), row)

    def _transition(
        self,
        at: Coordinates,
        generation: int | None,
        from_state: str | None,
        to_state: str,
        when: tuple[int | None, int | None, int | None],
        time_source: str,
        inferred: bool,
        reason: str,
    ) -> None:
        exact, lo, hi = when
        row = TransitionRow(
            group_id=self.group_id,
            group_life=self.life,
            record_partition=at.partition,
            record_offset=at.offset,
            seq=self.seq,
            kind=self.kind or CLASSIC,
            generation=generation,
            from_state=from_state,
            to_state=to_state,
            at=exact,
            at_min=lo,
            at_max=hi,
            time_source=time_source,
            inferred=inferred,
            reason=reason,
        )
        self.seq += 1
        self._put(
            self.out_tr, (row.group_id, row.record_partition, row.record_offset, row.seq), row
        )

    def _set_state(self, state: str, since: int) -> None:
        if state != self.state:
            self.state_since = since
        self.state = state

    def _close_sessions(self, left_at: int, reason: str) -> None:
        last = self.current.generation if self.kind == CLASSIC and self.current else None
        for sid in list(self.sessions):
            self._close(sid, left_at, reason, last_generation=last)

    def _close(
        self,
        member_id: str,
        left_at: int,
        reason: str,
        replaced_by: str | None = None,
        *,
        last_generation: int | None = None,
    ) -> SessionRow:
        """End an open session; classic callers name its last generation, KIP-848 tracks it."""
        session = self.sessions.pop(member_id)
        closed = evolve(
            session,
            left_at=left_at,
            end_reason=reason,
            replaced_by=replaced_by,
            last_generation=(
                session.last_generation if last_generation is None else last_generation
            ),
        )
        self._emit_session(closed)
        return closed

    def _new_life(self, at: Coordinates) -> None:
        """The group id starts over (re-created after deletion, converted, or regressed)."""
        if self.sessions:
            # The old life ended unseen (its tombstone was compacted away).
            self._close_sessions(at.timestamp, "group_deleted")
        if self.kind in _LIVE_KINDS:
            self.life += 1
        self.current = None
        self.state = None
        self.state_since = None
        self.life_ended = False
        self.has_kip = False
        self.kmembers = {}
        self.target = {}
        self.target_epoch = 0
        self.unreconciled = None
        self.owners, self.owners_epoch, self.base_owners = (), -1, ()
        self.deleting = False
        self.left_static = {}
        self.left_static_at = -1
        self.streams_members = {}
        self.target_tasks = {}
        self.topology_epoch = None

    def _enter(self, kind: str, at: Coordinates, regressed: bool) -> None:
        if self.kind in _LIVE_KINDS and (self.life_ended or self.kind != kind or regressed):
            self._new_life(at)
        self.kind = kind
        self.deleted = False
        self.life_ended = False

    def _to_dead(self, at: Coordinates, reason: str) -> None:
        if self.state == _C.DEAD.value and self.life_ended:
            return
        ts = at.timestamp
        generation = self.current.generation if self.current else None
        self._transition(
            at,
            generation,
            self.state,
            _C.DEAD.value,
            (ts, ts, ts),
            "record_timestamp",
            False,
            reason,
        )
        self._close_sessions(ts, "group_deleted")
        self._set_state(_C.DEAD.value, ts)
        self.deleted = True
        self.life_ended = True
        self.deleted_at_offset = at.offset

    def _count_rebalances(self, n: int, when: int) -> None:
        if n > 0:
            self.rebalance_times.extend([when] * min(n, MAX_REBALANCE_TIMES))
            if len(self.rebalance_times) > MAX_REBALANCE_TIMES:
                self.rebalance_times = sorted(self.rebalance_times)[-MAX_REBALANCE_TIMES:]
            self.last_rebalance_at = (
                when if self.last_rebalance_at is None else max(self.last_rebalance_at, when)
            )

    def _commit(self, row: OffsetCommitRow) -> None:
        if row.topic_id is not None:
            self._learn(row.topic_id, row.topic, row.record_offset)
        if row.status != "committed" or row.is_tombstone or row.effective_at is None:
            return
        self.dirty = True
        self._saw(row.effective_at)
        if self.last_commit_at is None or row.effective_at > self.last_commit_at:
            self.last_commit_at = row.effective_at
        if self.kind is None:
            self.kind = SIMPLE
        if self.deleted and row.record_offset > self.deleted_at_offset:
            # A commit after the deletion re-creates the group (Kafka: an implicit Empty group).
            self.deleted = False
            self._set_state(_C.EMPTY.value, row.effective_at)

    def _current_row(self) -> GroupCurrentRow:
        assert self.latest_at is not None
        cur = self.current
        if self.kind in _EPOCH_KINDS:
            members = 0 if self.deleted else len(self.kmembers)
        else:
            members = 0 if self.deleted or cur is None else cur.member_count
        self._prune()
        times = tuple(self.rebalance_times)
        return GroupCurrentRow(
            group_id=self.group_id,
            group_life=self.life,
            kind=self.kind or SIMPLE,
            state=self.state if self.kind != SIMPLE or self.state else _C.EMPTY.value,
            state_since=self.state_since,
            generation=cur.generation if cur else None,
            protocol_type=cur.protocol_type if cur else None,
            protocol=cur.protocol if cur else None,
            leader=cur.leader if cur else None,
            member_count=members,
            last_commit_at=self.last_commit_at,
            last_rebalance_at=self.last_rebalance_at,
            rebalance_times=times,
            rebalances_1h=rebalances_in_window(times, self.latest_at, HOUR_MS),
            rebalances_24h=rebalances_in_window(times, self.latest_at, DAY_MS),
            deleted=self.deleted,
            updated_at=self.latest_at,
        )

    # ------------------------------------------------------------------ classic groups

    def _classic(self, e: GroupMetadataEvent) -> None:
        if e.tombstone:
            if self.kind is None:
                self.kind = CLASSIC
            self._to_dead(
                e.at, "group deleted: DeleteGroups, offsets expired, or converted to consumer"
            )
            return
        prev = self.current if self.kind == CLASSIC and not self.life_ended else None
        regressed = prev is not None and e.generation < prev.generation
        self._enter(CLASSIC, e.at, regressed)
        prev = self.current
        if prev is not None and e.generation == prev.generation:
            self._classic_rewrite(e, prev)
        else:
            self._classic_generation(e, prev)

    def _classic_generation(self, e: GroupMetadataEvent, prev: GenerationRow | None) -> None:
        at, ts, g = e.at, e.at.timestamp, e.generation
        cst = e.current_state_timestamp if e.current_state_timestamp >= 0 else None
        completed = cst if cst is not None else ts
        members = tuple(_classic_member(m) for m in e.members)
        assignment = tuple((m.member_id, m.assigned) for m in e.members if m.assigned is not None)
        empty = not members
        if prev is None:
            skipped, rebalances = max(0, g - 1), (1 if g >= 1 else 0)
            joined, left, replaced = _diff_members((), members)
            moved: tuple[TopicPartition, ...] = ()
        else:
            skipped, rebalances = _jump(prev.generation, g)
            joined, left, replaced = _diff_members(prev.members, members)
            moved = _moved(_owners(prev.members, prev.assignment), _owners(members, assignment))
        row = GenerationRow(
            group_id=self.group_id,
            group_life=self.life,
            generation=g,
            kind=CLASSIC,
            protocol_type=e.protocol_type,
            protocol=e.protocol,
            state=_C.EMPTY.value if empty else _C.STABLE.value,
            leader=e.leader,
            member_count=len(members),
            members=members,
            assignment=assignment,
            assignment_epoch=None,
            join_completed_at=cst,
            stored_at=ts,
            assignment_at=None if empty else ts,
            updated_at=ts,
            previous_generation=prev.generation if prev else None,
            generations_skipped=skipped,
            rebalances=rebalances,
            members_joined=joined,
            members_left=left,
            members_replaced=replaced,
            static_replacements=0,
            partitions_assigned=sum(len(p) for _, p in assignment),
            partitions_moved=len(moved),
            moved_partitions=moved,
            record_partition=at.partition,
            first_record_offset=at.offset,
            last_record_offset=at.offset,
        )
        self._classic_transitions(e, prev, cst, skipped)
        self._emit_generation(row)
        self._emit_assignments(row)
        self._count_rebalances(rebalances, completed)
        self._classic_sessions(row, replaced, completed, prev.generation if prev else None)
        self._set_state(row.state, ts if not empty else completed)

    def _classic_transitions(
        self,
        e: GroupMetadataEvent,
        prev: GenerationRow | None,
        cst: int | None,
        skipped: int,
    ) -> None:
        at, ts, g = e.at, e.at.timestamp, e.generation
        before = self.state if self.state != _C.DEAD.value else None
        t_prev = self.last_record_at if before is not None else None
        completed = cst if cst is not None else ts
        src = "current_state_timestamp" if cst is not None else "record_timestamp"
        if not e.members and prev is None and g == 0:
            self._transition(
                at, g, None, _C.EMPTY.value, (completed,) * 3, src, False, "group created"
            )
            return
        if before is not None:
            why = "rebalance started (not persisted; between the previous record and the join end)"
            if skipped > 0:
                why += (
                    f"; generation(s) {g - skipped}..{g - 1} never stored an assignment"
                    " (failed sync) or their records were missed"
                )
            self._transition(
                at,
                g,
                before,
                _C.PREPARING_REBALANCE.value,
                (None, t_prev, completed),
                "bounded",
                True,
                why,
            )
        if not e.members:
            self._transition(
                at,
                g,
                _C.PREPARING_REBALANCE.value,
                _C.EMPTY.value,
                (completed,) * 3,
                src,
                False,
                "join phase ended with no members (GroupMetadata without members)",
            )
            return
        if cst is not None:
            self._transition(
                at,
                g,
                _C.PREPARING_REBALANCE.value,
                _C.COMPLETING_REBALANCE.value,
                (cst, cst, cst),
                "current_state_timestamp",
                True,
                "join phase completed (not persisted; time from currentStateTimestamp)",
            )
        else:
            self._transition(
                at,
                g,
                _C.PREPARING_REBALANCE.value,
                _C.COMPLETING_REBALANCE.value,
                (None, t_prev, ts),
                "bounded",
                True,
                "join phase completed (not persisted; record has no currentStateTimestamp)",
            )
        self._transition(
            at,
            g,
            _C.COMPLETING_REBALANCE.value,
            _C.STABLE.value,
            (ts, ts, ts),
            "record_timestamp",
            False,
            "leader's assignment stored (SyncGroup)",
        )

    def _classic_sessions(
        self, row: GenerationRow, replaced: tuple[Replacement, ...], at: int, last: int | None
    ) -> None:
        """Open, update and close sessions for ``row``; ``last``: leavers' last generation."""
        by_id = {m.member_id: m for m in row.members}
        old_to_new = {r.old_member_id: r.new_member_id for r in replaced}
        new_to_old = {r.new_member_id: r.old_member_id for r in replaced}
        for sid in list(self.sessions):
            if sid in by_id:
                m, old = by_id[sid], self.sessions[sid]
                facts = (m.client_id, m.client_host, m.session_timeout_ms, m.rebalance_timeout_ms)
                if facts != (
                    old.client_id,
                    old.client_host,
                    old.session_timeout_ms,
                    old.rebalance_timeout_ms,
                ):
                    updated = evolve(
                        old,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        session_timeout_ms=m.session_timeout_ms,
                        rebalance_timeout_ms=m.rebalance_timeout_ms,
                    )
                    self.sessions[sid] = updated
                    self._emit_session(updated)
            elif sid in old_to_new:
                self._close(sid, at, "replaced", old_to_new[sid], last_generation=last)
            else:
                reason = "group_emptied" if not row.members else "left"
                self._close(sid, at, reason, last_generation=last)
        for m in row.members:
            if m.member_id not in self.sessions:
                self._open(m, row.generation, at, new_to_old.get(m.member_id))

    def _open(
        self, m: GenerationMember, generation: int | None, at: int, replaces: str | None
    ) -> SessionRow:
        session = SessionRow(
            group_id=self.group_id,
            group_life=self.life,
            member_id=m.member_id,
            kind=self.kind or CLASSIC,
            instance_id=m.instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rack_id=m.rack_id,
            session_timeout_ms=m.session_timeout_ms,
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            first_generation=generation,
            last_generation=None,
            joined_at=at,
            left_at=None,
            end_reason=None,
            replaces=replaces,
            replaced_by=None,
        )
        self.sessions[m.member_id] = session
        self._emit_session(session)
        return session

    def _classic_rewrite(self, e: GroupMetadataEvent, prev: GenerationRow) -> None:
        """The stored generation is written again: a static member replaced itself (KIP-345)."""
        ts = e.at.timestamp
        members = tuple(_classic_member(m) for m in e.members)
        assignment = tuple((m.member_id, m.assigned) for m in e.members if m.assigned is not None)
        joined, left, replaced = _diff_members(prev.members, members)
        row = evolve(
            prev,
            members=members,
            member_count=len(members),
            leader=e.leader,
            protocol=e.protocol,
            assignment=assignment,
            partitions_assigned=sum(len(p) for _, p in assignment),
            updated_at=ts,
            last_record_offset=e.at.offset,
            members_joined=prev.members_joined + joined,
            members_left=prev.members_left + left,
            members_replaced=prev.members_replaced + replaced,
            static_replacements=prev.static_replacements + len(replaced),
        )
        self._emit_generation(row)
        if row.assignment != prev.assignment:
            self._emit_assignments(row)
        self._classic_sessions(row, replaced, ts, row.generation)

    def _emit_assignments(
        self, row: GenerationRow, ids: Mapping[tuple[str, int], str] | None = None
    ) -> None:
        """``partition_assignments`` rows of ``row``; ``ids``: (topic, partition) -> topic id."""
        info = {m.member_id: m for m in row.members}
        for member_id, parts in row.assignment:
            m = info.get(member_id)
            for topic, partition in parts:
                a = AssignmentRow(
                    group_id=row.group_id,
                    group_life=row.group_life,
                    generation=row.generation,
                    topic=topic,
                    partition=partition,
                    topic_id=None if ids is None else ids.get((topic, partition)),
                    member_id=member_id,
                    instance_id=m.instance_id if m else None,
                    client_id=m.client_id if m else None,
                    client_host=m.client_host if m else None,
                )
                key = (a.group_id, a.group_life, a.generation, a.topic, a.partition)
                self._put(self.out_asg, key, a)

    # ------------------------------------------------------------------ KIP-848 groups

    def _kip(self, e: ConsumerGroupEvent) -> None:
        rt, at, v = e.record_type, e.at, e.value
        f = _FLAVOR_OF_TYPE[rt]
        if v is not None:
            regressed = (
                rt == f.metadata
                and self.kind == f.kind
                and self.current is not None
                and not self.life_ended
                and int(v["epoch"]) < self.current.generation
            )
            self._enter(f.kind, at, regressed)
            self.has_kip = True
        elif self.kind is None:
            self.kind = f.kind
        elif self.kind != f.kind or self.life_ended:
            return  # tombstones of a life that is already over
        self.has_kip = True
        if rt == f.metadata:
            if v is None:
                self._to_dead(
                    at,
                    "consumer group deleted, or converted to a classic group"
                    if f.kind == KIP848
                    else f"{f.protocol_type} group deleted",
                )
                self.kmembers, self.target, self.unreconciled = {}, {}, None
                self.streams_members, self.target_tasks = {}, {}
                return
            self._kip_epoch(at, int(v["epoch"]))
        elif rt in f.names and v is not None:
            for t in (
                *(v.get("topics") or ()),
                *(v.get("initializingTopics") or ()),
                *(v.get("initializedTopics") or ()),
                *(v.get("deletingTopics") or ()),
            ):
                self._learn(topic_text(t["topicId"]), t["topicName"], at.offset)
        elif rt == f.member:
            self._kip_member(e)
            if f.kind == STREAMS and e.member_id is not None:
                if v is None:
                    self.streams_members.pop(e.member_id, None)
                else:
                    endpoint = v.get("userEndpoint")
                    self.streams_members[e.member_id] = (
                        v.get("processId"),
                        endpoint["host"] if endpoint else None,
                        int(endpoint["port"]) if endpoint else None,
                        int(v["topologyEpoch"]) if v.get("topologyEpoch") is not None else None,
                    )
        elif rt == f.target_metadata:
            if v is None:
                self.deleting = True  # only group deletion tombstones the assignment metadata
            else:
                stamp = int(v.get("assignmentTimestamp", 0) or 0)
                self._kip_assignment(at, int(v["assignmentEpoch"]), stamp if stamp > 0 else None)
        elif rt == f.target_member:
            if e.member_id is None:
                return
            if v is None:
                self.target.pop(e.member_id, None)
                self.target_tasks.pop(e.member_id, None)
            elif f.kind == STREAMS:
                self.target[e.member_id] = ()  # tasks, not partitions
                self.target_tasks[e.member_id] = (
                    _tasks(v.get("activeTasks")),
                    _tasks(v.get("standbyTasks")),
                    _tasks(v.get("warmupTasks")),
                )
            else:
                self.target[e.member_id] = _kip_partitions(v.get("topicPartitions") or ())
        elif rt == f.current:
            self._kip_current(e)
        elif rt == f.topology and v is not None:
            self.topology_epoch = int(v["epoch"])
        self._kip_recompute(at, rt)

    def _kip_epoch(self, at: Coordinates, epoch: int) -> None:
        prev = self.current
        if prev is not None and epoch == prev.generation:
            self._emit_generation(
                evolve(prev, updated_at=at.timestamp, last_record_offset=at.offset)
            )
            return
        members = self._kip_snapshot()
        if prev is None:
            skipped, rebalances = max(0, epoch - 1), (1 if epoch >= 1 else 0)
            joined, left, replaced = _diff_members((), members)
        else:
            skipped, rebalances = _jump(prev.generation, epoch)
            joined, left, replaced = _diff_members(prev.members, members)
        assignors = Counter(m.server_assignor for m in self.kmembers.values() if m.server_assignor)
        flavor = _FLAVOR_OF_KIND[self.kind or KIP848]
        row = GenerationRow(
            group_id=self.group_id,
            group_life=self.life,
            generation=epoch,
            kind=flavor.kind,
            protocol_type=flavor.protocol_type,
            protocol=min(assignors, key=lambda a: (-assignors[a], a)) if assignors else None,
            state=self.state or _K.EMPTY.value,
            leader=None,
            member_count=len(members),
            members=members,
            assignment=(),
            assignment_epoch=None,
            join_completed_at=None,
            stored_at=at.timestamp,
            assignment_at=None,
            updated_at=at.timestamp,
            previous_generation=prev.generation if prev else None,
            generations_skipped=skipped,
            rebalances=rebalances,
            members_joined=joined,
            members_left=left,
            members_replaced=replaced,
            static_replacements=0,
            partitions_assigned=0,
            partitions_moved=0,
            moved_partitions=(),
            record_partition=at.partition,
            first_record_offset=at.offset,
            last_record_offset=at.offset,
        )
        self._emit_generation(row)
        self._count_rebalances(rebalances, at.timestamp)

    def _kip_snapshot(self) -> tuple[GenerationMember, ...]:
        return tuple(
            GenerationMember(
                member_id=m.member_id,
                instance_id=m.instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                session_timeout_ms=m.session_timeout_ms,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                subscribed_topics=m.subscribed_topics,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch,
            )
            for m in self.kmembers.values()
        )

    def _kip_assignment(self, at: Coordinates, epoch: int, stamp: int | None) -> None:
        if epoch != self.target_epoch:
            self.unreconciled = None
        self.target_epoch = epoch
        row = self.current
        if row is None or row.generation != epoch:
            return
        assignment = tuple(
            (mid, tuple((self._name(t), p) for t, p in parts)) for mid, parts in self.target.items()
        )
        instance = {m.member_id: m.instance_id or m.member_id for m in self.kmembers.values()}
        owners = tuple(
            (t, p, instance.get(mid, mid)) for mid, parts in self.target.items() for t, p in parts
        )
        if self.owners_epoch != epoch:
            # First target of this epoch (a static replacement re-sends the same epoch's).
            self.base_owners, self.owners_epoch = self.owners, epoch
        before = {(t, p): o for t, p, o in self.base_owners}
        moved = tuple(
            sorted(
                (self._name(t), p) for t, p, o in owners if (t, p) in before and before[(t, p)] != o
            )
        )
        row = evolve(
            row,
            members=self._kip_snapshot(),
            member_count=len(self.kmembers),
            assignment=assignment,
            assignment_epoch=epoch,
            assignment_at=stamp if stamp is not None else at.timestamp,
            updated_at=at.timestamp,
            last_record_offset=at.offset,
            partitions_assigned=len(owners),
            partitions_moved=len(moved),
            moved_partitions=moved,
        )
        self.owners = owners
        self._emit_generation(row)
        self._emit_assignments(
            row, {(self._name(t), p): t for parts in self.target.values() for t, p in parts}
        )
        if self.kind == STREAMS:
            self._emit_streams_assignment(row, epoch, at.timestamp if stamp is None else stamp)

    def _emit_streams_assignment(self, row: GenerationRow, epoch: int, at: int) -> None:
        """Each member's tasks in the target assignment of ``epoch``, with where it runs."""
        for mid, (active, standby, warmup) in self.target_tasks.items():
            member = self.kmembers.get(mid)
            process_id, host, port, member_topology = self.streams_members.get(
                mid, (None, None, None, None)
            )
            out = StreamsAssignmentRow(
                group_id=self.group_id,
                group_life=self.life,
                assignment_epoch=epoch,
                member_id=mid,
                process_id=process_id,
                host=host,
                port=port,
                instance_id=member.instance_id if member else None,
                client_id=member.client_id if member else None,
                client_host=member.client_host if member else None,
                topology_epoch=self.topology_epoch,
                member_topology_epoch=member_topology,
                active_tasks=active,
                standby_tasks=standby,
                warmup_tasks=warmup,
                assigned_at=at,
            )
            self._put(self.out_streams, (self.group_id, self.life, epoch, mid), out)

    def _learn(self, topic_id: str, name: str, offset: int) -> None:
        known = self.topic_names.get(topic_id)
        if known is None or offset < known[1]:
            self.topic_names[topic_id] = (name, offset)

    def _name(self, topic_id: str) -> str:
        # Only names learned from earlier records (or given by the caller) apply, so the rows
        # do not depend on how the log was cut into batches.
        known = self.topic_names.get(topic_id)
        if known is not None and known[1] < self.at_offset:
            return known[0]
        return self.given_names.get(topic_id, topic_id)

    def _kip_member(self, e: ConsumerGroupEvent) -> None:
        mid, at, v = e.member_id, e.at, e.value
        if mid is None:
            return
        ts = at.timestamp
        if self.left_static_at != ts:
            self.left_static, self.left_static_at = {}, ts
        if v is None:
            gone = self.kmembers.pop(mid, None)
            self._track(mid)
            if mid not in self.sessions:
                return
            inst = self.sessions[mid].instance_id
            successor = next(
                (
                    s.member_id
                    for s in self.sessions.values()
                    if inst is not None and s.instance_id == inst and s.member_id != mid
                ),
                None,
            )
            if successor is not None:
                self._close(mid, ts, "replaced", successor)
                self._mark_replacement(inst or "", mid, successor)
                return
            reason = "group_deleted" if self.deleting else "left"
            closed = self._close(mid, ts, reason)
            if inst is not None and gone is not None and not self.deleting:
                self.left_static[inst] = closed
            return
        classic = v.get("classicMemberMetadata")
        old = self.kmembers.get(mid)
        member = KipMember(
            member_id=mid,
            instance_id=v.get("instanceId"),
            rack_id=v.get("rackId"),
            client_id=v.get("clientId", ""),
            client_host=v.get("clientHost", ""),
            subscribed_topics=tuple(v.get("subscribedTopicNames") or ()),
            rebalance_timeout_ms=int(v.get("rebalanceTimeoutMs", -1)),
            session_timeout_ms=int(classic["sessionTimeoutMs"]) if classic else -1,
            server_assignor=v.get("serverAssignor"),
            member_epoch=old.member_epoch if old else 0,
            member_state=old.member_state if old else self._stable_member(),
        )
        self.kmembers[mid] = member
        self._track(mid)
        if mid in self.sessions:
            updated = evolve(
                self.sessions[mid],
                client_id=member.client_id,
                client_host=member.client_host,
                rack_id=member.rack_id,
                rebalance_timeout_ms=member.rebalance_timeout_ms,
                session_timeout_ms=member.session_timeout_ms,
            )
            if updated != self.sessions[mid]:
                self.sessions[mid] = updated
                self._emit_session(updated)
            return
        replaces = None
        inst = member.instance_id
        if inst is not None:
            earlier = self.left_static.pop(inst, None)
            if earlier is not None:
                # Same coordinator write: the old member's tombstones, then this one.
                replaces = earlier.member_id
                self._emit_session(evolve(earlier, end_reason="replaced", replaced_by=mid))
                self._mark_replacement(inst, earlier.member_id, mid)
        self._open(_kip_generation_member(member), None, ts, replaces)

    def _mark_replacement(self, instance_id: str, old: str, new: str) -> None:
        """A static replacement without an epoch bump: update the current epoch row."""
        row = self.current
        if row is None or not any(m.member_id == old for m in row.members):
            return
        self._emit_generation(
            evolve(
                row,
                members=self._kip_snapshot(),
                member_count=len(self.kmembers),
                members_replaced=(*row.members_replaced, Replacement(instance_id, old, new)),
                static_replacements=row.static_replacements + 1,
            )
        )

    def _kip_current(self, e: ConsumerGroupEvent) -> None:
        mid, v = e.member_id, e.value
        if mid is None or v is None:
            return
        epoch, state = int(v["memberEpoch"]), int(v["state"])
        old = self.kmembers.get(mid)
        if old is None:
            old = KipMember(mid, None, None, "", "", (), -1, -1, None, 0, self._stable_member())
        self.kmembers[mid] = evolve(old, member_epoch=epoch, member_state=state)
        self._track(mid)
        session = self.sessions.get(mid)
        if session is None:
            session = self._open(
                _kip_generation_member(self.kmembers[mid]), None, e.at.timestamp, None
            )
        if epoch < 0:
            return  # -1 leaving / -2 static member away: not an epoch it worked in
        first = session.first_generation if session.first_generation is not None else epoch
        if (first, epoch) != (session.first_generation, session.last_generation):
            updated = evolve(session, first_generation=first, last_generation=epoch)
            self.sessions[mid] = updated
            if first != session.first_generation:
                self._emit_session(updated)

    def _stable_member(self) -> int:
        flavor = _FLAVOR_OF_KIND.get(self.kind or "")
        return flavor.stable_member if flavor is not None else _STABLE_MEMBER

    def _reconciled(self, m: KipMember) -> bool:
        # Kafka's ConsumerGroupMember.isReconciledTo(targetAssignmentEpoch)
        return m.member_state == self._stable_member() and m.member_epoch == self.target_epoch

    def _track(self, member_id: str) -> None:
        if self.unreconciled is None:
            return
        m = self.kmembers.get(member_id)
        if m is None or self._reconciled(m):
            self.unreconciled.discard(member_id)
        else:
            self.unreconciled.add(member_id)

    def _any_unreconciled(self) -> bool:
        if self.unreconciled is None:
            self.unreconciled = {mid for mid, m in self.kmembers.items() if not self._reconciled(m)}
        return bool(self.unreconciled)

    def _kip_recompute(self, at: Coordinates, record_type: int) -> None:
        if self.state == _K.DEAD.value and self.life_ended:
            return
        group_epoch = self.current.generation if self.current else 0
        if not self.kmembers:
            new = _K.EMPTY
        elif self.kind == SHARE:
            new = _K.STABLE  # Kafka's ShareGroup: Empty or Stable, whatever the assignment
        elif group_epoch > self.target_epoch:
            new = _K.ASSIGNING
        elif self._any_unreconciled():
            new = _K.RECONCILING
        else:
            new = _K.STABLE
        if new.value == self.state:
            return
        ts = at.timestamp
        self._transition(
            at,
            self.current.generation if self.current else None,
            self.state,
            new.value,
            (ts, ts, ts),
            "record_timestamp",
            False,
            f"recomputed after a {_FLAVOR_OF_TYPE[record_type].record_names[record_type]} record",
        )
        self._set_state(new.value, ts)
        if self.current is not None and self.current.state != new.value:
            self._emit_generation(evolve(self.current, state=new.value))


# ---------------------------------------------------------------------- helpers


def _classic_member(m: MemberSnapshot) -> GenerationMember:
    return GenerationMember(
        member_id=m.member_id,
        instance_id=m.group_instance_id,
        client_id=m.client_id,
        client_host=m.client_host,
        session_timeout_ms=m.session_timeout,
        rebalance_timeout_ms=m.rebalance_timeout,
        subscribed_topics=m.subscribed_topics,
        rack_id=m.rack_id,
        member_epoch=None,
    )


def _kip_generation_member(m: KipMember) -> GenerationMember:
    return GenerationMember(
        member_id=m.member_id,
        instance_id=m.instance_id,
        client_id=m.client_id,
        client_host=m.client_host,
        session_timeout_ms=m.session_timeout_ms,
        rebalance_timeout_ms=m.rebalance_timeout_ms,
        subscribed_topics=m.subscribed_topics,
        rack_id=m.rack_id,
        member_epoch=m.member_epoch,
    )


def _tasks(entries: Iterable[Mapping[str, Any]] | None) -> Tasks:
    """Kafka Streams task ids: (subtopology id, partitions) per subtopology, in record order."""
    return tuple(
        (str(e["subtopologyId"]), tuple(int(p) for p in e.get("partitions") or ()))
        for e in entries or ()
    )


def _kip_partitions(entries: Iterable[Mapping[str, Any]]) -> tuple[TopicPartition, ...]:
    return tuple(
        (topic_text(e["topicId"]), int(p)) for e in entries for p in e.get("partitions") or ()
    )


def _diff_members(
    old: Sequence[GenerationMember], new: Sequence[GenerationMember]
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[Replacement, ...]]:
    """(joined, left, replaced): member ids, static members matched by ``group.instance.id``."""
    old_ids = {m.member_id for m in old}
    new_ids = {m.member_id for m in new}
    gone = [m for m in old if m.member_id not in new_ids]
    by_instance = {m.instance_id: m for m in gone if m.instance_id is not None}
    joined: list[str] = []
    replaced: list[Replacement] = []
    for m in new:
        if m.member_id in old_ids:
            continue
        previous = by_instance.pop(m.instance_id, None) if m.instance_id is not None else None
        if previous is not None and m.instance_id is not None:
            replaced.append(Replacement(m.instance_id, previous.member_id, m.member_id))
        else:
            joined.append(m.member_id)
    replaced_ids = {r.old_member_id for r in replaced}
    left = tuple(m.member_id for m in gone if m.member_id not in replaced_ids)
    return tuple(joined), left, tuple(replaced)


def _owners(
    members: Sequence[GenerationMember], assignment: Assignment
) -> dict[TopicPartition, str]:
    """Partition -> owner identity (instance id for static members, else member id)."""
    identity = {m.member_id: m.instance_id or m.member_id for m in members}
    return {tp: identity.get(mid, mid) for mid, parts in assignment for tp in parts}


def _moved(
    before: Mapping[TopicPartition, str], after: Mapping[TopicPartition, str]
) -> tuple[TopicPartition, ...]:
    """Partitions owned in both generations, by different owners."""
    return tuple(sorted(tp for tp, o in after.items() if tp in before and before[tp] != o))
