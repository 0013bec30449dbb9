"""The classic group coordinator of one ``__consumer_offsets`` partition (Kafka's group shard).

Faithful to the classic paths of Kafka 4.4's Java group coordinator (``GroupMetadataManager``,
``OffsetMetadataManager``, ``GroupCoordinatorShard``): JoinGroup with the member-id-required
round, the initial rebalance delay, rebalance timeouts, pending members, leader election,
protocol vote and ``group.max.size``; SyncGroup with the stored assignment and pending-sync
expiry; Heartbeat, LeaveGroup (single and batch), static membership (replacement without a
rebalance, fencing), DeleteGroups, ListGroups/DescribeGroups; OffsetCommit, TxnOffsetCommit,
OffsetFetch, OffsetDelete and the periodic expiry job. Records and their timing follow
``docs/formats.md`` sections 8.1-8.3.

Event-sourced, as ``docs/design.md`` ("Conventions") asks of the simulator: every handler is a
function of the current state that returns a :class:`GroupResult` -- the records to append, the
in-memory changes (:mod:`.changes`) and the response -- and mutates nothing. It decides on a scratch
copy of the group (``_Op``), applying each change to the copy as Kafka's imperative code would
mutate the group, so later decisions see earlier ones. The runtime appends the records, applies the
changes to the real state (:meth:`GroupCoordinatorShard.apply`), then replays the records
(:meth:`GroupCoordinatorShard.replay`) unless the result says not to: like Kafka, GroupMetadata
writes of live groups are not replayed (the in-memory group is already ahead of them), while offset
commits, tombstones and everything read back from a log are.

JoinGroup and SyncGroup requests may be parked. A handler then returns no response; the
:class:`~.changes.JoinResponded` / :class:`~.changes.SyncResponded` change that completes the
request (possibly within the same result) names it by the runtime's request id.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from offsetscope.clock import Clock
from offsetscope.protocol.records import CoordinatorRecord
from offsetscope.protocol.states import ClassicGroupState
from offsetscope.sim.coordinator.errors import ApiError, Errors
from offsetscope.sim.coordinator.group import changes as ch
from offsetscope.sim.coordinator.group import events as ev
from offsetscope.sim.coordinator.group import messages as msg
from offsetscope.sim.coordinator.group.config import GroupCoordinatorConfig
from offsetscope.sim.coordinator.group.group import (
    EMPTY_ASSIGNMENT,
    ClassicGroup,
    ClassicGroupMember,
)
from offsetscope.sim.coordinator.group.offsets import OffsetAndMetadata, OffsetStore
from offsetscope.sim.coordinator.group.records import (
    GROUP_METADATA_RECORD_TYPE,
    OFFSET_COMMIT_RECORD_TYPE,
    new_empty_group_metadata_record,
    new_group_metadata_record,
    new_group_metadata_tombstone,
    new_offset_commit_record,
    new_offset_commit_tombstone,
)
from offsetscope.sim.coordinator.result import CoordinatorResult

R = TypeVar("R")
_S = ClassicGroupState

Emit = Callable[[ev.GroupEvent], None]

# JoinGroup v4+ makes a dynamic member without an id rejoin with the id it is given.
JOIN_REQUIRES_KNOWN_MEMBER_ID_VERSION = 4
# JoinGroup v9+ lets a replaced static leader skip computing an assignment.
JOIN_SUPPORTS_SKIP_ASSIGNMENT_VERSION = 9
# OffsetCommit v9+ answers GROUP_ID_NOT_FOUND for an unknown group (older: ILLEGAL_GENERATION).
OFFSET_COMMIT_GROUP_ID_NOT_FOUND_VERSION = 9
# TxnOffsetCommit v6+ (KIP-1319) does the same.
TXN_OFFSET_COMMIT_GROUP_ID_NOT_FOUND_VERSION = 6
DESCRIBE_GROUPS_GROUP_ID_NOT_FOUND_VERSION = 6


def _no_emit(_: ev.GroupEvent) -> None:
    return None


@dataclass(frozen=True, slots=True)
class GroupResult(CoordinatorResult[R]):
    """A :class:`CoordinatorResult` with the in-memory changes and how to append the records.

    Attributes:
        changes: in-memory changes, applied in order after the records are appended.
        replay_records: replay the records after the changes (False for GroupMetadata writes of
            a live group, as Kafka's ``replayRecords=false``).
        producer_id: producer of a transactional batch (TxnOffsetCommit); -1 otherwise.
        producer_epoch: that producer's epoch.
    """

    changes: tuple[ch.Change, ...] = ()
    replay_records: bool = True
    producer_id: int = -1
    producer_epoch: int = -1


def _java_length(s: str) -> int:
    """Java ``String.length()``: UTF-16 code units."""
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


class GroupCoordinatorShard:
    """Groups and offsets of one ``__consumer_offsets`` partition, and the handlers over them."""

    def __init__(
        self,
        partition: int,
        config: GroupCoordinatorConfig,
        clock: Clock,
        new_uuid: Callable[[], uuid.UUID],
    ) -> None:
        """Create an empty shard.

        Args:
            partition: the ``__consumer_offsets`` partition this shard owns.
            config: coordinator settings.
            clock: the injected time source.
            new_uuid: source of the random part of new member ids (seeded for determinism).
        """
        self.partition = partition
        self.config = config
        self.clock = clock
        self.new_uuid = new_uuid
        self.groups: dict[str, ClassicGroup] = {}
        self.offsets = OffsetStore()

    # ------------------------------------------------------------------------- group handlers

    def join_group(
        self, request: msg.JoinGroupRequest, request_id: int
    ) -> GroupResult[msg.JoinGroupResponse]:
        """JoinGroup (``classicGroupJoinToClassicGroup``); a None response means parked.

        Args:
            request: the request; its group id and session timeout were validated by the runtime.
            request_id: the runtime's id for this request, used if it is parked.
        """
        op = _Op(self)
        response = op.join(request, request_id)
        return op.result(response)

    def sync_group(
        self, request: msg.SyncGroupRequest, request_id: int
    ) -> GroupResult[msg.SyncGroupResponse]:
        """SyncGroup (``classicGroupSyncToClassicGroup``); a None response means parked."""
        op = _Op(self)
        response = op.sync(request, request_id)
        return op.result(response)

    def heartbeat(self, request: msg.HeartbeatRequest) -> GroupResult[msg.HeartbeatResponse]:
        """Heartbeat: validate, then push back the member's session timeout."""
        group = self.groups.get(request.group_id)
        if group is None:
            return GroupResult(response=msg.HeartbeatResponse(Errors.UNKNOWN_MEMBER_ID))
        if group.state is _S.DEAD:
            return GroupResult(response=msg.HeartbeatResponse(Errors.COORDINATOR_NOT_AVAILABLE))
        try:
            group.validate_member(request.member_id, request.group_instance_id)
        except ApiError as exc:
            return GroupResult(response=msg.HeartbeatResponse(exc.error))
        if request.generation_id != group.generation_id:
            return GroupResult(response=msg.HeartbeatResponse(Errors.ILLEGAL_GENERATION))
        if group.state is _S.EMPTY:
            return GroupResult(response=msg.HeartbeatResponse(Errors.UNKNOWN_MEMBER_ID))
        member = group.member(request.member_id)
        timer = _heartbeat_timer(group.group_id, member, self.clock.now_ms())
        if group.state is _S.PREPARING_REBALANCE:
            return GroupResult(
                response=msg.HeartbeatResponse(Errors.REBALANCE_IN_PROGRESS), changes=(timer,)
            )
        # CompletingRebalance or Stable: consumers heartbeat right after the join response.
        return GroupResult(response=msg.HeartbeatResponse(), changes=(timer,))

    def leave_group(self, request: msg.LeaveGroupRequest) -> GroupResult[msg.LeaveGroupResponse]:
        """LeaveGroup, one or many members (v3+ batches member identities)."""
        op = _Op(self)
        response = op.leave(request)
        return op.result(response)

    def delete_groups(self, group_ids: Sequence[str]) -> GroupResult[msg.DeleteGroupsResponse]:
        """DeleteGroups: for each Empty group, offset tombstones then the group tombstone."""
        now = self.clock.now_ms()
        records: list[CoordinatorRecord] = []
        changes: list[ch.Change] = []
        results: list[msg.DeletableGroupResult] = []
        for group_id in group_ids:
            group = self.groups.get(group_id)
            try:
                if group is None:
                    raise ApiError(Errors.GROUP_ID_NOT_FOUND)
                group.validate_delete_group()
            except ApiError as exc:
                results.append(msg.DeletableGroupResult(group_id, exc.error))
                continue
            changes.append(ch.GroupDeletionStarted(group_id, ev.DeleteCause.DELETE_GROUPS, now))
            records.extend(self.offsets.delete_all_offsets(group_id))
            records.append(new_group_metadata_tombstone(group_id))
            results.append(msg.DeletableGroupResult(group_id))
        return GroupResult(
            records=tuple(records),
            response=msg.DeleteGroupsResponse(tuple(results)),
            changes=tuple(changes),
        )

    def list_groups(self, states: Iterable[str] = ()) -> list[msg.ListedGroup]:
        """ListGroups; ``states`` filters case-insensitively (empty = all)."""
        wanted = {s.strip().lower() for s in states}
        return [
            msg.ListedGroup(g.group_id, g.protocol_type or "", g.state.value)
            for g in self.groups.values()
            if not wanted or g.state.value.lower() in wanted
        ]

    def describe_group(self, group_id: str, api_version: int) -> msg.DescribedGroup:
        """DescribeGroups for one group."""
        group = self.groups.get(group_id)
        if group is None:
            error = (
                Errors.GROUP_ID_NOT_FOUND
                if api_version >= DESCRIBE_GROUPS_GROUP_ID_NOT_FOUND_VERSION
                else Errors.NONE
            )
            return msg.DescribedGroup(group_id, _S.DEAD.value, error=error)
        stable = group.state is _S.STABLE
        return msg.DescribedGroup(
            group_id=group_id,
            group_state=group.state.value,
            protocol_type=group.protocol_type or "",
            protocol_data=(group.protocol_name or "") if stable else "",
            members=tuple(
                msg.DescribedGroupMember(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.metadata(group.protocol_name) if stable else b"",
                    m.assignment,
                )
                for m in group.ordered_members()
            ),
        )

    # ------------------------------------------------------------------------- offset handlers

    def commit_offsets(
        self, request: msg.OffsetCommitRequest
    ) -> GroupResult[msg.OffsetCommitResponse]:
        """OffsetCommit: validate the member and generation, one record per accepted partition."""
        now = self.clock.now_ms()
        changes: list[ch.Change] = []
        group = self.groups.get(request.group_id)
        try:
            if group is None:
                if request.generation_id >= 0:
                    raise ApiError(
                        Errors.GROUP_ID_NOT_FOUND
                        if request.api_version >= OFFSET_COMMIT_GROUP_ID_NOT_FOUND_VERSION
                        else Errors.ILLEGAL_GENERATION
                    )
                # A consumer without group management: Kafka creates a "simple" group.
                changes.append(ch.GroupCreated(request.group_id, now))
            else:
                group.validate_offset_commit(
                    request.member_id, request.group_instance_id, request.generation_id, False
                )
                # Classic commits keep the session alive while Stable or PreparingRebalance.
                if group.state in (_S.STABLE, _S.PREPARING_REBALANCE):
                    changes.append(
                        _heartbeat_timer(group.group_id, group.member(request.member_id), now)
                    )
        except ApiError as exc:
            return GroupResult(response=_commit_error_response(request.topics, exc.error))
        expire = None if request.retention_time_ms == -1 else now + request.retention_time_ms
        records, response = self._offset_records(request.group_id, request.topics, now, expire)
        return GroupResult(records=records, response=response, changes=tuple(changes))

    def commit_transactional_offsets(
        self, request: msg.TxnOffsetCommitRequest
    ) -> GroupResult[msg.OffsetCommitResponse]:
        """TxnOffsetCommit: records appended in the producer's transactional batch, pending."""
        now = self.clock.now_ms()
        changes: list[ch.Change] = []
        group = self.groups.get(request.group_id)
        try:
            if group is None:
                if request.generation_id >= 0:
                    raise ApiError(
                        Errors.GROUP_ID_NOT_FOUND
                        if request.api_version >= TXN_OFFSET_COMMIT_GROUP_ID_NOT_FOUND_VERSION
                        else Errors.ILLEGAL_GENERATION
                    )
                changes.append(ch.GroupCreated(request.group_id, now))
            else:
                group.validate_offset_commit(
                    request.member_id, request.group_instance_id, request.generation_id, True
                )
        except ApiError as exc:
            return GroupResult(response=_commit_error_response(request.topics, exc.error))
        records, response = self._offset_records(request.group_id, request.topics, now, None)
        return GroupResult(
            records=records,
            response=response,
            changes=tuple(changes),
            producer_id=request.producer_id,
            producer_epoch=request.producer_epoch,
        )

    def _offset_records(
        self,
        group_id: str,
        topics: Sequence[msg.OffsetCommitTopic],
        now: int,
        expire: int | None,
    ) -> tuple[tuple[CoordinatorRecord, ...], msg.OffsetCommitResponse]:
        limit = self.config.offset_metadata_max_bytes
        records: list[CoordinatorRecord] = []
        topic_results: list[msg.TopicResult] = []
        for topic in topics:
            results: list[msg.PartitionResult] = []
            for p in topic.partitions:
                if p.metadata and _java_length(p.metadata) > limit:
                    results.append(
                        msg.PartitionResult(p.partition, Errors.OFFSET_METADATA_TOO_LARGE)
                    )
                    continue
                results.append(_accepted(p.partition))
                oam = OffsetAndMetadata(
                    committed_offset=p.offset,
                    leader_epoch=None if p.leader_epoch == -1 else p.leader_epoch,
                    metadata=p.metadata or "",
                    commit_timestamp_ms=now,
                    expire_timestamp_ms=expire,
                    topic_id=topic.topic_id,
                )
                records.append(new_offset_commit_record(group_id, topic.name, p.partition, oam))
            topic_results.append(msg.TopicResult(topic.name, tuple(results)))
        return tuple(records), msg.OffsetCommitResponse(tuple(topic_results))

    def fetch_offsets(self, request: msg.OffsetFetchRequest) -> msg.OffsetFetchResponse:
        """OffsetFetch of some partitions, or of all committed ones (``topics=None``).

        With ``require_stable``, a partition with a pending transactional offset answers
        UNSTABLE_OFFSET_COMMIT. An unknown (or Dead) group has no offsets: -1 for each asked
        partition, nothing when all are asked.
        """
        group = self.groups.get(request.group_id)
        known = group is not None and group.state is not _S.DEAD
        store = self.offsets
        gid = request.group_id
        topics: list[msg.FetchedTopic] = []
        if request.topics is None:
            if not known:
                return msg.OffsetFetchResponse(gid)
            for topic, partitions in store.group_offsets(gid).items():
                fetched = [
                    _unstable(p)
                    if request.require_stable
                    and store.has_pending_transactional_offsets(gid, topic, p)
                    else msg.FetchedOffset(
                        p, oam.committed_offset, _epoch(oam.leader_epoch), oam.metadata
                    )
                    for p, oam in partitions.items()
                ]
                topics.append(msg.FetchedTopic(topic, tuple(fetched)))
            return msg.OffsetFetchResponse(gid, tuple(topics))
        for t in request.topics:
            fetched = []
            for p in t.partitions:
                oam = store.offset(gid, t.name, p) if known else None
                if request.require_stable and store.has_pending_transactional_offsets(
                    gid, t.name, p
                ):
                    fetched.append(_unstable(p))
                elif oam is None or _topic_id_mismatch(oam.topic_id, t.topic_id):
                    fetched.append(msg.FetchedOffset(p))
                else:
                    fetched.append(
                        msg.FetchedOffset(
                            p, oam.committed_offset, _epoch(oam.leader_epoch), oam.metadata
                        )
                    )
            topics.append(msg.FetchedTopic(t.name, tuple(fetched)))
        return msg.OffsetFetchResponse(gid, tuple(topics))

    def delete_offsets(
        self, request: msg.OffsetDeleteRequest
    ) -> GroupResult[msg.OffsetDeleteResponse]:
        """OffsetDelete: tombstones for partitions of topics the group does not subscribe to."""
        group = self.groups.get(request.group_id)
        try:
            if group is None:
                raise ApiError(Errors.GROUP_ID_NOT_FOUND)
            group.validate_offset_delete()
        except ApiError as exc:
            return GroupResult(response=msg.OffsetDeleteResponse(error=exc.error))
        gid = request.group_id
        records: list[CoordinatorRecord] = []
        topic_results: list[msg.TopicResult] = []
        for t in request.topics:
            if group.is_subscribed_to_topic(t.name):
                topic_results.append(
                    msg.TopicResult(
                        t.name,
                        tuple(
                            msg.PartitionResult(p, Errors.GROUP_SUBSCRIBED_TO_TOPIC)
                            for p in t.partitions
                        ),
                    )
                )
                continue
            records.extend(
                new_offset_commit_tombstone(gid, t.name, p)
                for p in t.partitions
                if self.offsets.has_committed_offset(gid, t.name, p)
                or self.offsets.has_pending_transactional_offsets(gid, t.name, p)
            )
            topic_results.append(
                msg.TopicResult(t.name, tuple(msg.PartitionResult(p) for p in t.partitions))
            )
        return GroupResult(
            records=tuple(records), response=msg.OffsetDeleteResponse(topics=tuple(topic_results))
        )

    # ------------------------------------------------------------------------- timers

    def fire_timer(self, action: ch.TimerAction) -> GroupResult[None]:
        """Run a timer's operation (heartbeat, join, initial-rebalance, sync expiry, cleanup)."""
        op = _Op(self)
        match action:
            case ch.ExpireHeartbeat(group_id=gid, member_id=mid):
                op.expire_heartbeat(gid, mid)
            case ch.CompleteJoin(group_id=gid):
                group = op.group(gid)
                if group is not None:
                    op.complete_join(group)
            case ch.CompleteInitialRebalance(group_id=gid, delay_ms=delay, remaining_ms=remaining):
                op.complete_initial_rebalance(gid, delay, remaining)
            case ch.ExpirePendingSync(group_id=gid, generation_id=generation):
                op.expire_pending_sync(gid, generation)
            case ch.CleanupGroupMetadata():
                return self._cleanup_group_metadata()
        return op.result(None)

    def _cleanup_group_metadata(self) -> GroupResult[None]:
        """The periodic job: expire offsets, then delete Empty groups left without any."""
        now = self.clock.now_ms()
        records: list[CoordinatorRecord] = []
        changes: list[ch.Change] = []
        for group_id, group in self.groups.items():
            if self.offsets.group_offsets(group_id):
                base = group.offset_expiration_base()
                if base is None:
                    continue
                expired, all_expired = self.offsets.expired_offsets(
                    group_id,
                    now,
                    self.config.offsets_retention_ms,
                    base,
                    group.is_subscribed_to_topic,
                )
                if expired:
                    changes.append(ch.OffsetsExpiring(group_id, tuple(expired), now))
                    records.extend(new_offset_commit_tombstone(group_id, t, p) for t, p in expired)
            else:
                all_expired = not self.offsets.has_open_transactions(group_id)
            if all_expired and group.is_empty:
                changes.append(ch.GroupDeletionStarted(group_id, ev.DeleteCause.EXPIRED, now))
                records.append(new_group_metadata_tombstone(group_id))
        changes.append(self.cleanup_timer(now))
        return GroupResult(records=tuple(records), changes=tuple(changes))

    def cleanup_timer(self, now: int) -> ch.TimerScheduled:
        """The next run of the expiry job (``offsets.retention.check.interval.ms`` from now)."""
        return ch.TimerScheduled(
            ch.GROUP_EXPIRATION_KEY,
            now + self.config.offsets_retention_check_interval_ms,
            ch.CleanupGroupMetadata(),
        )

    def on_loaded(self) -> GroupResult[None]:
        """After loading from the log: heartbeat deadlines for loaded members, the expiry job,
        and a rebalance for groups above ``group.max.size`` (Kafka ``onLoaded``)."""
        now = self.clock.now_ms()
        op = _Op(self)
        for group_id in list(self.groups):
            group = op.group(group_id)
            if group is None:
                continue
            for m in group.ordered_members():
                op.reschedule_heartbeat(group, m)
            if group.num_members > self.config.max_size:
                op.prepare_rebalance(
                    group,
                    f"freshly-loaded group {group_id} (size {group.num_members}) is over "
                    f"capacity {self.config.max_size}",
                )
        op.changes.append(self.cleanup_timer(now))
        return op.result(None)

    # ------------------------------------------------------------------------- replay

    def apply(self, change: ch.Change, emit: Emit = _no_emit) -> None:
        """Apply one in-memory change to the real state (timers are the runtime's)."""
        match change:
            case ch.GroupCreated(group_id=gid, at_ms=at_ms):
                if gid not in self.groups:
                    self.groups[gid] = ClassicGroup(gid, at_ms)
                    emit(ev.GroupCreated(gid, at_ms))
            case ch.TimerScheduled() | ch.TimerCancelled():
                return
            case _:
                self.groups[change.group_id].apply(change, emit)

    def replay(
        self,
        record: CoordinatorRecord,
        offset: int,
        producer_id: int = -1,
        emit: Emit = _no_emit,
    ) -> None:
        """Replay one record of this partition (Kafka ``GroupCoordinatorShard.replay``).

        Args:
            record: the decoded record (type 0/1 offset commit, type 2 group metadata; other
                types belong to KIP-848/share/streams groups and are ignored here).
            offset: its offset in the partition log.
            producer_id: the batch's producer id (-1 unless transactional).
            emit: receives ground-truth events (a deleted group becoming Dead).
        """
        if record.record_type in (0, OFFSET_COMMIT_RECORD_TYPE):
            if record.value is not None and record.key["group"] not in self.groups:
                # Offsets without membership: the implicit "simple" group.
                self.groups[record.key["group"]] = ClassicGroup(
                    record.key["group"], self.clock.now_ms()
                )
            self.offsets.replay(offset, producer_id, record.key, record.value)
        elif record.record_type == GROUP_METADATA_RECORD_TYPE:
            group_id = record.key["group"]
            if record.value is None:
                group = self.groups.pop(group_id, None)
                if group is not None:
                    group.remove_from_coordinator(self.clock.now_ms(), emit)
            else:
                self.groups[group_id] = ClassicGroup.load(group_id, dict(record.value))

    def replay_end_transaction_marker(
        self, producer_id: int, committed: bool, emit: Emit = _no_emit
    ) -> None:
        """Replay a COMMIT (True) or ABORT marker of ``producer_id`` appended to this partition."""
        resolved = self.offsets.replay_end_transaction_marker(producer_id, committed)
        if resolved:
            emit(
                ev.TransactionalOffsetsCompleted(
                    self.partition, self.clock.now_ms(), producer_id, committed, tuple(resolved)
                )
            )


# ----------------------------------------------------------------------------- helpers


@functools.lru_cache(maxsize=4096)
def _accepted(partition: int) -> msg.PartitionResult:
    """The (immutable, shareable) result of an accepted partition: built once per number."""
    return msg.PartitionResult(partition)


def _heartbeat_timer(group_id: str, member: ClassicGroupMember, now: int) -> ch.TimerScheduled:
    return ch.TimerScheduled(
        ch.heartbeat_key(group_id, member.member_id),
        now + member.session_timeout_ms,
        ch.ExpireHeartbeat(group_id, member.member_id),
    )


def _commit_error_response(
    topics: Sequence[msg.OffsetCommitTopic], error: Errors
) -> msg.OffsetCommitResponse:
    return msg.OffsetCommitResponse(
        tuple(
            msg.TopicResult(
                t.name, tuple(msg.PartitionResult(p.partition, error) for p in t.partitions)
            )
            for t in topics
        )
    )


def _epoch(leader_epoch: int | None) -> int:
    return -1 if leader_epoch is None else leader_epoch


def _unstable(partition: int) -> msg.FetchedOffset:
    return msg.FetchedOffset(partition, error=Errors.UNSTABLE_OFFSET_COMMIT)


def _topic_id_mismatch(stored: uuid.UUID | None, asked: uuid.UUID | None) -> bool:
    return stored is not None and asked is not None and asked.int != 0 and stored != asked


def _is_protocol_inconsistent(asked: str | None, current: str | None) -> bool:
    return asked is not None and current is not None and asked != current


class _Op:
    """One handler invocation: Kafka's classic-group logic over scratch copies of the groups.

    ``do(change)`` applies a change to the scratch copy and records it; ``records`` collects the
    records to append. Nothing outside the copies is touched.
    """

    def __init__(self, shard: GroupCoordinatorShard) -> None:
        self.shard = shard
        self.config = shard.config
        self.now = shard.clock.now_ms()
        self.changes: list[ch.Change] = []
        self.records: list[CoordinatorRecord] = []
        self.replay_records = True
        self._scratch: dict[str, ClassicGroup] = {}

    def result(self, response: R | None) -> GroupResult[R]:
        return GroupResult(
            records=tuple(self.records),
            response=response,
            changes=tuple(self.changes),
            replay_records=self.replay_records,
        )

    def group(self, group_id: str) -> ClassicGroup | None:
        scratch = self._scratch.get(group_id)
        if scratch is not None:
            return scratch
        real = self.shard.groups.get(group_id)
        if real is None:
            return None
        scratch = real.copy()
        self._scratch[group_id] = scratch
        return scratch

    def do(self, change: ch.Change) -> None:
        match change:
            case ch.GroupCreated(group_id=gid, at_ms=at_ms):
                self._scratch[gid] = ClassicGroup(gid, at_ms)
            case ch.TimerScheduled() | ch.TimerCancelled():
                pass
            case _:
                self._scratch[change.group_id].apply(change)
        self.changes.append(change)

    def schedule(self, key: str, delay_ms: int, action: ch.TimerAction) -> None:
        self.do(ch.TimerScheduled(key, self.now + delay_ms, action))

    def cancel(self, key: str) -> None:
        self.do(ch.TimerCancelled(key))

    def reschedule_heartbeat(
        self, group: ClassicGroup, member: ClassicGroupMember, timeout_ms: int | None = None
    ) -> None:
        self.schedule(
            ch.heartbeat_key(group.group_id, member.member_id),
            member.session_timeout_ms if timeout_ms is None else timeout_ms,
            ch.ExpireHeartbeat(group.group_id, member.member_id),
        )

    def store_group_metadata(self, group: ClassicGroup, assignment: Mapping[str, bytes]) -> None:
        # The live group is already ahead of its record: append it, do not replay it.
        self.records.append(new_group_metadata_record(group, assignment))
        self.replay_records = False

    # ------------------------------------------------------------------------- JoinGroup

    def join(self, req: msg.JoinGroupRequest, request_id: int) -> msg.JoinGroupResponse | None:
        gid, member_id = req.group_id, req.member_id
        is_unknown = member_id == msg.UNKNOWN_MEMBER_ID
        group = self.group(gid)
        is_new_group = group is None
        if group is None:
            if not is_unknown:
                return msg.JoinGroupResponse(Errors.UNKNOWN_MEMBER_ID, member_id=member_id)
            self.do(ch.GroupCreated(gid, self.now))
            group = self._scratch[gid]
        response: msg.JoinGroupResponse | None
        if not self.accept_joining_member(group, member_id):
            self.do(
                ch.MemberRemoved(
                    gid, member_id, ev.LeaveCause.GROUP_MAX_SIZE, "group is full", self.now
                )
            )
            response = msg.JoinGroupResponse(
                Errors.GROUP_MAX_SIZE_REACHED, member_id=msg.UNKNOWN_MEMBER_ID
            )
        elif is_unknown:
            response = self.join_new_member(group, req, request_id)
        else:
            response = self.join_existing_member(group, req, request_id)
        if is_new_group and not self.records:
            # Kafka 4.x commits a brand-new group to its log even if nothing else was written.
            self.store_group_metadata_empty(group)
        return response

    def store_group_metadata_empty(self, group: ClassicGroup) -> None:
        self.records.append(new_empty_group_metadata_record(group))
        self.replay_records = False

    def accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        if group.state in (_S.EMPTY, _S.DEAD):
            return True
        if group.state is _S.PREPARING_REBALANCE:
            # Awaiting members count, not the group size: the size may already exceed a lowered
            # limit, and counting awaiting members kicks out the last rejoining ones.
            return (
                group.has_member(member_id) and group.member(member_id).is_awaiting_join
            ) or group.num_members_awaiting_join < self.config.max_size
        return group.has_member(member_id) or group.num_members < self.config.max_size

    def join_new_member(
        self, group: ClassicGroup, req: msg.JoinGroupRequest, request_id: int
    ) -> msg.JoinGroupResponse | None:
        if group.state is _S.DEAD:
            return msg.JoinGroupResponse(
                Errors.COORDINATOR_NOT_AVAILABLE, member_id=msg.UNKNOWN_MEMBER_ID
            )
        if not group.supports_protocols(req.protocol_type, (p.name for p in req.protocols)):
            return msg.JoinGroupResponse(
                Errors.INCONSISTENT_GROUP_PROTOCOL, member_id=msg.UNKNOWN_MEMBER_ID
            )
        prefix = req.group_instance_id if req.group_instance_id is not None else req.client_id
        new_member_id = f"{prefix}-{self.shard.new_uuid()}"
        if req.group_instance_id is not None:
            existing = group.static_member_id(req.group_instance_id)
            if existing is not None:
                return self.update_static_member_then_rebalance_or_complete_join(
                    group, req, existing, new_member_id, request_id
                )
            return self.add_member_then_rebalance_or_complete_join(
                group, req, new_member_id, request_id
            )
        if req.api_version >= JOIN_REQUIRES_KNOWN_MEMBER_ID_VERSION:
            # The member must rejoin with this id; until then it is pending, and it expires after
            # its session timeout if it never comes back.
            self.do(ch.PendingMemberAdded(group.group_id, new_member_id))
            self.schedule(
                ch.heartbeat_key(group.group_id, new_member_id),
                req.session_timeout_ms,
                ch.ExpireHeartbeat(group.group_id, new_member_id),
            )
            return msg.JoinGroupResponse(Errors.MEMBER_ID_REQUIRED, member_id=new_member_id)
        return self.add_member_then_rebalance_or_complete_join(
            group, req, new_member_id, request_id
        )

    def join_existing_member(
        self, group: ClassicGroup, req: msg.JoinGroupRequest, request_id: int
    ) -> msg.JoinGroupResponse | None:
        member_id = req.member_id
        if group.state is _S.DEAD:
            return msg.JoinGroupResponse(Errors.COORDINATOR_NOT_AVAILABLE, member_id=member_id)
        if not group.supports_protocols(req.protocol_type, (p.name for p in req.protocols)):
            return msg.JoinGroupResponse(Errors.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id)
        if group.is_pending_member(member_id):
            if req.group_instance_id is not None:
                raise RuntimeError(
                    f"unexpected JoinGroup with group instance id {req.group_instance_id} "
                    f"for pending member {member_id}"
                )
            return self.add_member_then_rebalance_or_complete_join(
                group, req, member_id, request_id
            )
        try:
            group.validate_member(member_id, req.group_instance_id)
        except ApiError as exc:
            return msg.JoinGroupResponse(exc.error, member_id=member_id)
        member = group.member(member_id)
        reason = req.reason or "not provided"
        if group.state is _S.PREPARING_REBALANCE:
            return self.update_member_then_rebalance_or_complete_join(
                group,
                req,
                member,
                f"member {member_id} is joining during a rebalance ({reason})",
                request_id,
            )
        if group.state is _S.COMPLETING_REBALANCE:
            if member.matches(req.protocols):
                # Same metadata (it probably missed the join response): current generation again.
                return self.current_generation_response(group, member_id, with_members=True)
            return self.update_member_then_rebalance_or_complete_join(
                group,
                req,
                member,
                f"updating metadata of member {member_id} ({reason})",
                request_id,
            )
        if group.state is _S.STABLE:
            if group.is_leader(member_id):
                # The leader may rejoin to trigger a rebalance for changes the metadata does not
                # show (topic metadata changes).
                return self.update_member_then_rebalance_or_complete_join(
                    group, req, member, f"leader {member_id} rejoining ({reason})", request_id
                )
            if not member.matches(req.protocols):
                return self.update_member_then_rebalance_or_complete_join(
                    group,
                    req,
                    member,
                    f"updating metadata of member {member_id} ({reason})",
                    request_id,
                )
            return self.current_generation_response(group, member_id, with_members=False)
        # Empty: the member is unknown to this generation; it must reset and rejoin.
        return msg.JoinGroupResponse(Errors.UNKNOWN_MEMBER_ID, member_id=member_id)

    def current_generation_response(
        self, group: ClassicGroup, member_id: str, *, with_members: bool
    ) -> msg.JoinGroupResponse:
        members = (
            group.current_classic_group_members()
            if with_members and group.is_leader(member_id)
            else ()
        )
        return msg.JoinGroupResponse(
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or msg.NO_LEADER,
            member_id=member_id,
            members=members,
        )

    def add_member_then_rebalance_or_complete_join(
        self, group: ClassicGroup, req: msg.JoinGroupRequest, member_id: str, request_id: int
    ) -> msg.JoinGroupResponse | None:
        spec = ch.MemberSpec(
            member_id=member_id,
            group_instance_id=req.group_instance_id,
            client_id=req.client_id,
            client_host=req.client_host,
            rebalance_timeout_ms=req.effective_rebalance_timeout_ms,
            session_timeout_ms=req.session_timeout_ms,
            protocol_type=req.protocol_type,
            protocols=req.protocols,
            is_new=True,
        )
        if group.state is _S.PREPARING_REBALANCE and group.previous_state is _S.EMPTY:
            # A new member during the initial rebalance extends its delay.
            self.do(ch.NewMemberAddedSet(group.group_id, True))
        self.do(ch.MemberAdded(group.group_id, spec, request_id, self.now))
        # New members cannot heartbeat while their JoinGroup is parked, and a disconnect is not
        # detected; their join expires after the new-member join timeout instead.
        self.reschedule_heartbeat(
            group, group.member(member_id), self.config.new_member_join_timeout_ms
        )
        instance = req.group_instance_id
        self.maybe_prepare_rebalance_or_complete_join(
            group,
            f"adding new member {member_id} with group instance id {instance} "
            f"({req.reason or 'not provided'})",
        )
        return None  # parked: a JoinResponded change answers it

    def update_member_then_rebalance_or_complete_join(
        self,
        group: ClassicGroup,
        req: msg.JoinGroupRequest,
        member: ClassicGroupMember,
        reason: str,
        request_id: int,
    ) -> msg.JoinGroupResponse | None:
        self.do(
            ch.MemberUpdated(
                group.group_id,
                member.member_id,
                req.protocols,
                req.effective_rebalance_timeout_ms,
                req.session_timeout_ms,
                request_id,
            )
        )
        self.maybe_prepare_rebalance_or_complete_join(group, reason)
        return None  # parked: a JoinResponded change answers it

    def update_static_member_then_rebalance_or_complete_join(
        self,
        group: ClassicGroup,
        req: msg.JoinGroupRequest,
        old_member_id: str,
        new_member_id: str,
        request_id: int,
    ) -> msg.JoinGroupResponse | None:
        gid = group.group_id
        instance_id = req.group_instance_id
        if instance_id is None:
            raise RuntimeError("static member replacement needs a group instance id")
        current_leader = group.leader_id
        old = group.member(old_member_id)
        # Fence the old member id right away if it has a parked request.
        if old.awaiting_join is not None:
            self.do(
                ch.JoinResponded(
                    gid,
                    old_member_id,
                    old.awaiting_join,
                    msg.JoinGroupResponse(Errors.FENCED_INSTANCE_ID, member_id=old_member_id),
                )
            )
        if old.awaiting_sync is not None:
            self.do(
                ch.SyncResponded(
                    gid,
                    old_member_id,
                    old.awaiting_sync,
                    msg.SyncGroupResponse(Errors.FENCED_INSTANCE_ID),
                )
            )
        self.do(ch.StaticMemberReplaced(gid, instance_id, old_member_id, new_member_id, self.now))
        new_member = group.member(new_member_id)
        # The old id's heartbeat will expire without effect; the new id gets its own.
        self.reschedule_heartbeat(group, new_member)
        self.do(
            ch.MemberUpdated(
                gid,
                new_member_id,
                req.protocols,
                req.effective_rebalance_timeout_ms,
                req.session_timeout_ms,
                request_id,
            )
        )
        reason = (
            f"static member {new_member_id} with instance id {instance_id} rejoined "
            f"({req.reason or 'not provided'})"
        )
        if group.state is _S.STABLE:
            if (group.protocol_name or "") == group.select_protocol():
                # The selected protocol does not change: persist the new member id, no rebalance.
                self.store_group_metadata(group, group.group_assignment())
                if req.api_version >= JOIN_SUPPORTS_SKIP_ASSIGNMENT_VERSION:
                    is_leader = group.is_leader(new_member_id)
                    response = msg.JoinGroupResponse(
                        generation_id=group.generation_id,
                        protocol_type=group.protocol_type,
                        protocol_name=group.protocol_name,
                        leader=group.leader_id or msg.NO_LEADER,
                        skip_assignment=is_leader,
                        member_id=new_member_id,
                        members=group.current_classic_group_members() if is_leader else (),
                    )
                else:
                    response = msg.JoinGroupResponse(
                        generation_id=group.generation_id,
                        protocol_type=group.protocol_type,
                        protocol_name=group.protocol_name,
                        leader=current_leader or msg.NO_LEADER,
                        member_id=new_member_id,
                    )
                self.do(ch.JoinResponded(gid, new_member_id, request_id, response))
                return None
            self.maybe_prepare_rebalance_or_complete_join(
                group, f"{reason}; the group's selected protocol will change"
            )
            return None
        if group.state is _S.COMPLETING_REBALANCE:
            # The leader may already have the old member id in its assignment: rebalance.
            self.prepare_rebalance(group, reason)
            return None
        if group.state in (_S.EMPTY, _S.DEAD):
            raise RuntimeError(
                f"group {gid} was not supposed to be {group.state} when static member "
                f"{instance_id} rejoined"
            )
        self.maybe_complete_join_phase(group)
        return None  # parked: the JoinResponded change answers it

    def maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup, reason: str) -> None:
        if group.can_rebalance():
            self.prepare_rebalance(group, reason)
        else:
            self.maybe_complete_join_phase(group)

    def prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        gid = group.group_id
        if group.state is _S.COMPLETING_REBALANCE:
            # Members waiting on SyncGroup must rejoin.
            self.reset_and_propagate_assignment_with_error(group, Errors.REBALANCE_IN_PROGRESS)
        self.remove_sync_expiration(group)
        is_initial = group.state is _S.EMPTY
        if is_initial:
            # A new group: give members more time to join.
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self.schedule(
                ch.join_key(gid), delay, ch.CompleteInitialRebalance(gid, delay, remaining)
            )
        self.do(ch.StateTransitioned(gid, _S.PREPARING_REBALANCE, self.now, reason))
        if not is_initial:
            self.maybe_complete_join_else_schedule(group)

    def maybe_complete_join_else_schedule(self, group: ClassicGroup) -> None:
        if group.has_all_members_joined():
            self.complete_join(group)
        else:
            self.schedule(
                ch.join_key(group.group_id),
                group.rebalance_timeout_ms(),
                ch.CompleteJoin(group.group_id),
            )

    def maybe_complete_join_phase(self, group: ClassicGroup) -> None:
        if group.state is not _S.PREPARING_REBALANCE:
            return
        if group.previous_state is _S.EMPTY:
            # The initial rebalance completes only on its delay.
            return
        if not group.has_all_members_joined():
            return
        self.complete_join(group)

    def complete_initial_rebalance(self, group_id: str, delay: int, remaining: int) -> None:
        group = self.group(group_id)
        if group is None:
            return
        if group.new_member_added and remaining != 0:
            self.do(ch.NewMemberAddedSet(group_id, False))
            new_delay = min(self.config.initial_rebalance_delay_ms, remaining)
            new_remaining = max(remaining - delay, 0)
            self.schedule(
                ch.join_key(group_id),
                new_delay,
                ch.CompleteInitialRebalance(group_id, new_delay, new_remaining),
            )
        else:
            self.complete_join(group)

    def complete_join(self, group: ClassicGroup) -> None:
        gid = group.group_id
        self.cancel(ch.join_key(gid))
        for m in group.not_yet_rejoined_members():
            if m.is_static:
                continue
            self.do(
                ch.MemberRemoved(
                    gid,
                    m.member_id,
                    ev.LeaveCause.REBALANCE_TIMEOUT,
                    "did not rejoin before the join phase completed",
                    self.now,
                )
            )
            self.cancel(ch.heartbeat_key(gid, m.member_id))
        if group.state is _S.DEAD:
            return
        has_joined_leader, new_leader = group.elect_new_joined_leader()
        if new_leader is not None:
            self.do(ch.LeaderSet(gid, new_leader))
        if not has_joined_leader and group.members:
            # Nobody rejoined (only static members are left): wait another rebalance timeout
            # until session timeouts remove the silent members.
            self.schedule(ch.join_key(gid), group.rebalance_timeout_ms(), ch.CompleteJoin(gid))
            return
        self.do(ch.NextGenerationStarted(gid, self.now))
        if group.is_empty:
            self.store_group_metadata(group, {})
            return
        for m in group.ordered_members():
            response = msg.JoinGroupResponse(
                generation_id=group.generation_id,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader=group.leader_id or msg.NO_LEADER,
                member_id=m.member_id,
                members=group.current_classic_group_members()
                if group.is_leader(m.member_id)
                else (),
            )
            if m.awaiting_join is not None:
                self.do(ch.JoinResponded(gid, m.member_id, m.awaiting_join, response))
            self.reschedule_heartbeat(group, m)
            self.do(ch.MemberNoLongerNew(gid, m.member_id))
            self.do(ch.PendingSyncAdded(gid, m.member_id))
        self.schedule(
            ch.sync_key(gid),
            group.rebalance_timeout_ms(),
            ch.ExpirePendingSync(gid, group.generation_id),
        )

    def expire_heartbeat(self, group_id: str, member_id: str) -> None:
        group = self.group(group_id)
        if group is None or group.state is _S.DEAD:
            return
        if group.is_pending_member(member_id):
            self.do(
                ch.MemberRemoved(
                    group_id,
                    member_id,
                    ev.LeaveCause.JOIN_TIMEOUT,
                    "pending member did not rejoin within its session timeout",
                    self.now,
                )
            )
            if group.state is _S.PREPARING_REBALANCE and group.has_all_members_joined():
                self.complete_join(group)
            return
        if not group.has_member(member_id):
            return
        member = group.member(member_id)
        if member.has_satisfied_heartbeat():
            return
        cause = ev.LeaveCause.JOIN_TIMEOUT if member.is_new else ev.LeaveCause.SESSION_TIMEOUT
        self.remove_member_and_update_group(
            group, member, cause, f"removing member {member_id} on heartbeat expiration"
        )

    def remove_member_and_update_group(
        self, group: ClassicGroup, member: ClassicGroupMember, cause: ev.LeaveCause, reason: str
    ) -> None:
        gid = group.group_id
        # A new member may time out with a parked JoinGroup: answer it so the client retries.
        if member.awaiting_join is not None:
            self.do(
                ch.JoinResponded(
                    gid,
                    member.member_id,
                    member.awaiting_join,
                    msg.JoinGroupResponse(
                        Errors.UNKNOWN_MEMBER_ID, member_id=msg.UNKNOWN_MEMBER_ID
                    ),
                )
            )
        self.do(ch.MemberRemoved(gid, member.member_id, cause, reason, self.now))
        if group.state in (_S.STABLE, _S.COMPLETING_REBALANCE):
            self.maybe_prepare_rebalance_or_complete_join(group, reason)
        elif group.state is _S.PREPARING_REBALANCE and group.has_all_members_joined():
            self.complete_join(group)

    def expire_pending_sync(self, group_id: str, generation_id: int) -> None:
        group = self.group(group_id)
        if group is None or generation_id != group.generation_id:
            return
        if group.state not in (_S.COMPLETING_REBALANCE, _S.STABLE):
            return
        if group.has_received_sync_from_all_members():
            return
        pending = [
            m.member_id
            for m in group.ordered_members()
            if m.member_id in group.pending_sync_members
        ]
        for member_id in pending:
            self.do(
                ch.MemberRemoved(
                    group_id,
                    member_id,
                    ev.LeaveCause.SYNC_TIMEOUT,
                    "did not send SyncGroup before the rebalance timeout",
                    self.now,
                )
            )
            self.cancel(ch.heartbeat_key(group_id, member_id))
        self.prepare_rebalance(group, f"removing {pending} on pending sync request expiration")

    # ------------------------------------------------------------------------- SyncGroup

    def sync(self, req: msg.SyncGroupRequest, request_id: int) -> msg.SyncGroupResponse | None:
        group = self.group(req.group_id)
        if group is None or group.is_empty:
            return msg.SyncGroupResponse(Errors.UNKNOWN_MEMBER_ID)
        error = self.validate_sync(group, req)
        if error is not None:
            return msg.SyncGroupResponse(error)
        gid, member_id = group.group_id, req.member_id
        if group.state is _S.PREPARING_REBALANCE:
            return msg.SyncGroupResponse(Errors.REBALANCE_IN_PROGRESS)
        if group.state is _S.COMPLETING_REBALANCE:
            self.do(ch.SyncParked(gid, member_id, request_id))
            self.remove_pending_sync_member(group, member_id)
            if group.is_leader(member_id):
                given = {a.member_id: a.assignment for a in req.assignments}
                assignment = {
                    m.member_id: given.get(m.member_id, EMPTY_ASSIGNMENT)
                    for m in group.ordered_members()
                }
                # currentStateTimestamp = when the group entered CompletingRebalance.
                self.store_group_metadata(group, assignment)
                # Kafka stores the assignment once the append succeeds, if the group is still in
                # the same CompletingRebalance generation; appends here are synchronous and never
                # fail, so that always holds: store, answer every parked SyncGroup, go Stable.
                self.do(
                    ch.AssignmentsStored(
                        gid, group.generation_id, tuple(assignment.items()), self.now
                    )
                )
                self.propagate_assignment(group, Errors.NONE)
                self.do(
                    ch.StateTransitioned(gid, _S.STABLE, self.now, "leader's assignment stored")
                )
            return None
        if group.state is _S.STABLE:
            self.remove_pending_sync_member(group, member_id)
            return msg.SyncGroupResponse(
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                assignment=group.member(member_id).assignment,
            )
        raise RuntimeError(f"unexpected SyncGroup for group {gid} in state {group.state}")

    def validate_sync(self, group: ClassicGroup, req: msg.SyncGroupRequest) -> Errors | None:
        if group.state is _S.DEAD:
            return Errors.COORDINATOR_NOT_AVAILABLE
        try:
            group.validate_member(req.member_id, req.group_instance_id)
        except ApiError as exc:
            return exc.error
        if req.generation_id != group.generation_id:
            return Errors.ILLEGAL_GENERATION
        if _is_protocol_inconsistent(
            req.protocol_type, group.protocol_type
        ) or _is_protocol_inconsistent(req.protocol_name, group.protocol_name):
            return Errors.INCONSISTENT_GROUP_PROTOCOL
        return None

    def remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        self.do(ch.PendingSyncRemoved(group.group_id, member_id))
        if group.state in (_S.DEAD, _S.EMPTY, _S.PREPARING_REBALANCE) or (
            group.has_received_sync_from_all_members()
        ):
            self.cancel(ch.sync_key(group.group_id))

    def remove_sync_expiration(self, group: ClassicGroup) -> None:
        self.do(ch.PendingSyncCleared(group.group_id))
        self.cancel(ch.sync_key(group.group_id))

    def reset_and_propagate_assignment_with_error(self, group: ClassicGroup, error: Errors) -> None:
        if group.state is not _S.COMPLETING_REBALANCE:
            raise RuntimeError(
                f"group {group.group_id} must be CompletingRebalance, not {group.state}"
            )
        self.do(ch.AssignmentsReset(group.group_id))
        self.propagate_assignment(group, error)

    def propagate_assignment(self, group: ClassicGroup, error: Errors) -> None:
        ok = error is Errors.NONE
        for m in group.ordered_members():
            if m.awaiting_sync is None:
                continue
            response = msg.SyncGroupResponse(
                error,
                protocol_type=group.protocol_type if ok else None,
                protocol_name=group.protocol_name if ok else None,
                assignment=m.assignment,
            )
            self.do(ch.SyncResponded(group.group_id, m.member_id, m.awaiting_sync, response))
            # Expirations that fired while the member waited were ignored: start a new one.
            self.reschedule_heartbeat(group, m)

    # ------------------------------------------------------------------------- LeaveGroup

    def leave(self, req: msg.LeaveGroupRequest) -> msg.LeaveGroupResponse:
        group = self.group(req.group_id)
        if group is None:
            return msg.LeaveGroupResponse(Errors.UNKNOWN_MEMBER_ID)
        if group.state is _S.DEAD:
            return msg.LeaveGroupResponse(Errors.COORDINATOR_NOT_AVAILABLE)
        gid = group.group_id
        responses: list[msg.LeaveGroupMemberResponse] = []
        for ident in req.members:
            reason = ident.reason or "not provided"
            ok = msg.LeaveGroupMemberResponse(ident.member_id, ident.group_instance_id)
            if ident.member_id == msg.UNKNOWN_MEMBER_ID:
                # Administrative removal by group instance id.
                static_id = (
                    None
                    if ident.group_instance_id is None
                    else group.static_member_id(ident.group_instance_id)
                )
                if static_id is not None:
                    self.remove_current_member(group, static_id, reason)
                    responses.append(ok)
                else:
                    responses.append(
                        msg.LeaveGroupMemberResponse(
                            ident.member_id, ident.group_instance_id, Errors.UNKNOWN_MEMBER_ID
                        )
                    )
            elif group.is_pending_member(ident.member_id):
                self.do(
                    ch.MemberRemoved(gid, ident.member_id, ev.LeaveCause.LEFT, reason, self.now)
                )
                self.cancel(ch.heartbeat_key(gid, ident.member_id))
                responses.append(ok)
            else:
                try:
                    group.validate_member(ident.member_id, ident.group_instance_id)
                except ApiError as exc:
                    responses.append(
                        msg.LeaveGroupMemberResponse(
                            ident.member_id, ident.group_instance_id, exc.error
                        )
                    )
                    continue
                self.remove_current_member(group, ident.member_id, reason)
                responses.append(ok)
        left = [r.member_id for r in responses if r.error is Errors.NONE]
        if left:
            reason = f"explicit LeaveGroup request for ({', '.join(left)}) members"
            if group.state in (_S.STABLE, _S.COMPLETING_REBALANCE):
                self.maybe_prepare_rebalance_or_complete_join(group, reason)
            elif group.state is _S.PREPARING_REBALANCE:
                self.maybe_complete_join_phase(group)
        return msg.LeaveGroupResponse(members=tuple(responses))

    def remove_current_member(self, group: ClassicGroup, member_id: str, reason: str) -> None:
        gid = group.group_id
        member = group.member(member_id)
        self.cancel(ch.heartbeat_key(gid, member_id))
        if member.awaiting_join is not None:
            self.do(
                ch.JoinResponded(
                    gid,
                    member_id,
                    member.awaiting_join,
                    msg.JoinGroupResponse(
                        Errors.UNKNOWN_MEMBER_ID, member_id=msg.UNKNOWN_MEMBER_ID
                    ),
                )
            )
        self.do(ch.MemberRemoved(gid, member_id, ev.LeaveCause.LEFT, reason, self.now))
