"""In-memory changes of the classic group coordinator: the events its soft state is rebuilt from.

Kafka's classic group keeps most of its state only in memory (pending members, parked JoinGroup
and SyncGroup requests, PreparingRebalance/CompletingRebalance, timers) and mutates it directly
in the request handlers. Here every such mutation is a frozen change object instead, one per
``ClassicGroup`` method Kafka calls (``add``, ``remove``, ``replaceStaticMember``,
``updateMember``, ``transitionTo``, ``initNextGeneration``, ``completeJoinFuture``...):

* a handler works on a scratch copy of the group, applying each change to the copy as it decides
  it (so later decisions see earlier ones, as in Kafka's imperative code), and returns the list;
* the runtime appends the handler's records, then applies the same changes to the real state
  (:meth:`ClassicGroup.apply` and the coordinator's timers and parked requests), then replays the
  records. The real state therefore changes only in replay, and scratch and real state agree
  because both run the same ``apply``.

Changes carry data only (member ids, request ids, timestamps, responses); parked requests are
named by the runtime's request id, timers by Kafka's timer keys (``heartbeat-<group>-<member>``,
``join-<group>``, ``sync-<group>``, ``expire-group-metadata``).
"""

from __future__ import annotations

from dataclasses import dataclass

from offsetscope.protocol.states import ClassicGroupState
from offsetscope.sim.coordinator.group.events import DeleteCause, LeaveCause
from offsetscope.sim.coordinator.group.messages import (
    JoinGroupResponse,
    Protocol,
    SyncGroupResponse,
)


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """Everything a new member starts with (Kafka's ``ClassicGroupMember`` constructor)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[Protocol, ...]
    assignment: bytes = b""
    is_new: bool = False


# ----------------------------------------------------------------------------- group changes


@dataclass(frozen=True, slots=True)
class GroupCreated:
    """``getOrMaybeCreateClassicGroup`` created an Empty group."""

    group_id: str
    at_ms: int


@dataclass(frozen=True, slots=True)
class MemberAdded:
    """``group.add(member, future)``; ``join_request`` is the parked JoinGroup, if any."""

    group_id: str
    member: MemberSpec
    join_request: int | None
    at_ms: int


@dataclass(frozen=True, slots=True)
class MemberRemoved:
    """``group.remove(memberId)`` (also drops a pending member of that id)."""

    group_id: str
    member_id: str
    cause: LeaveCause
    reason: str
    at_ms: int


@dataclass(frozen=True, slots=True)
class PendingMemberAdded:
    """``group.addPendingMember``: a dynamic member got its id and must rejoin with it."""

    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class MemberUpdated:
    """``group.updateMember``: new protocols and timeouts; ``join_request`` replaces the parked one."""

    group_id: str
    member_id: str
    protocols: tuple[Protocol, ...]
    rebalance_timeout_ms: int
    session_timeout_ms: int
    join_request: int | None


@dataclass(frozen=True, slots=True)
class StaticMemberReplaced:
    """``group.replaceStaticMember``: the instance id now maps to ``new_member_id``."""

    group_id: str
    group_instance_id: str
    old_member_id: str
    new_member_id: str
    at_ms: int


@dataclass(frozen=True, slots=True)
class NewMemberAddedSet:
    """``group.setNewMemberAdded``: extends the initial rebalance delay when true."""

    group_id: str
    value: bool


@dataclass(frozen=True, slots=True)
class MemberNoLongerNew:
    """``member.setIsNew(false)`` once the member's join completed."""

    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class StateTransitioned:
    """``group.transitionTo(target)``; ``at_ms`` becomes the current-state timestamp."""

    group_id: str
    target: ClassicGroupState
    at_ms: int
    reason: str


@dataclass(frozen=True, slots=True)
class NextGenerationStarted:
    """``group.initNextGeneration()``: generation + 1, protocol chosen by vote, new state."""

    group_id: str
    at_ms: int


@dataclass(frozen=True, slots=True)
class LeaderSet:
    """The leader elected among the rejoined members (``maybeElectNewJoinedLeader``)."""

    group_id: str
    leader_id: str


@dataclass(frozen=True, slots=True)
class PendingSyncAdded:
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class PendingSyncRemoved:
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class PendingSyncCleared:
    group_id: str


@dataclass(frozen=True, slots=True)
class JoinResponded:
    """``group.completeJoinFuture``: the member's parked JoinGroup gets ``response``."""

    group_id: str
    member_id: str
    request_id: int
    response: JoinGroupResponse


@dataclass(frozen=True, slots=True)
class SyncParked:
    """``member.setAwaitingSyncFuture``: a SyncGroup waits for the leader's assignment."""

    group_id: str
    member_id: str
    request_id: int


@dataclass(frozen=True, slots=True)
class SyncResponded:
    """``group.completeSyncFuture``: the member's parked SyncGroup gets ``response``."""

    group_id: str
    member_id: str
    request_id: int
    response: SyncGroupResponse


@dataclass(frozen=True, slots=True)
class AssignmentsReset:
    """Every member's assignment becomes empty (a rebalance interrupted CompletingRebalance)."""

    group_id: str


@dataclass(frozen=True, slots=True)
class AssignmentsStored:
    """The leader's assignment was appended; members get theirs (missing ones are empty)."""

    group_id: str
    generation_id: int
    assignments: tuple[tuple[str, bytes], ...]
    at_ms: int


@dataclass(frozen=True, slots=True)
class GroupDeletionStarted:
    """DeleteGroups or the expiry job is about to write the group's tombstones."""

    group_id: str
    cause: DeleteCause
    at_ms: int


@dataclass(frozen=True, slots=True)
class OffsetsExpiring:
    """The expiry job is about to write tombstones for these partitions of the group."""

    group_id: str
    partitions: tuple[tuple[str, int], ...]
    at_ms: int


# ----------------------------------------------------------------------------- timers


@dataclass(frozen=True, slots=True)
class ExpireHeartbeat:
    """Session (or new-member join) timeout of one member."""

    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class CompleteJoin:
    """Rebalance timeout of the join phase: complete it with whoever rejoined."""

    group_id: str


@dataclass(frozen=True, slots=True)
class CompleteInitialRebalance:
    """Initial rebalance delay of a group coming from Empty, extended while members arrive."""

    group_id: str
    delay_ms: int
    remaining_ms: int


@dataclass(frozen=True, slots=True)
class ExpirePendingSync:
    """Members of ``generation_id`` that did not sync in time are removed."""

    group_id: str
    generation_id: int


@dataclass(frozen=True, slots=True)
class CleanupGroupMetadata:
    """The periodic offsets/group expiration job of one offsets partition."""


TimerAction = (
    ExpireHeartbeat
    | CompleteJoin
    | CompleteInitialRebalance
    | ExpirePendingSync
    | CleanupGroupMetadata
)


@dataclass(frozen=True, slots=True)
class TimerScheduled:
    """Schedule (or reschedule) the timer ``key``; a key has at most one pending deadline."""

    key: str
    deadline_ms: int
    action: TimerAction


@dataclass(frozen=True, slots=True)
class TimerCancelled:
    key: str


GroupChange = (
    GroupCreated
    | MemberAdded
    | MemberRemoved
    | PendingMemberAdded
    | MemberUpdated
    | StaticMemberReplaced
    | NewMemberAddedSet
    | MemberNoLongerNew
    | StateTransitioned
    | NextGenerationStarted
    | LeaderSet
    | PendingSyncAdded
    | PendingSyncRemoved
    | PendingSyncCleared
    | JoinResponded
    | SyncParked
    | SyncResponded
    | AssignmentsReset
    | AssignmentsStored
    | GroupDeletionStarted
    | OffsetsExpiring
)

Change = GroupChange | TimerScheduled | TimerCancelled


def heartbeat_key(group_id: str, member_id: str) -> str:
    return f"heartbeat-{group_id}-{member_id}"


def join_key(group_id: str) -> str:
    return f"join-{group_id}"


def sync_key(group_id: str) -> str:
    return f"sync-{group_id}"


GROUP_EXPIRATION_KEY = "expire-group-metadata"
