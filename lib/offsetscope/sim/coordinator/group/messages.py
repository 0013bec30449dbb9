"""Requests and responses of the group coordinator APIs, as frozen dataclasses.

Field names follow Kafka's request/response JSON specs (``JoinGroupRequest.json`` ...) in
snake_case, with Kafka's defaults. ``api_version`` is the request version a client would send; the
coordinator's behaviour depends on it where Kafka's does (JoinGroup v4+ requires a known member id,
v9+ lets a static leader skip the assignment; OffsetCommit v9+ answers GROUP_ID_NOT_FOUND;
DescribeGroups v6+ reports GROUP_ID_NOT_FOUND). The request context (client id and address) is
part of each join request because the coordinator stores it in the member.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from offsetscope.sim.coordinator.errors import Errors

UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1
NO_LEADER = ""
INVALID_OFFSET = -1

JOIN_GROUP_LATEST_VERSION = 9
OFFSET_COMMIT_LATEST_VERSION = 10
TXN_OFFSET_COMMIT_LATEST_VERSION = 5
DESCRIBE_GROUPS_LATEST_VERSION = 6


@dataclass(frozen=True, slots=True)
class Protocol:
    """One entry of a member's supported protocols: an assignor name and its metadata bytes."""

    name: str
    metadata: bytes


# ----------------------------------------------------------------------------- JoinGroup


@dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    group_id: str
    protocol_type: str
    protocols: tuple[Protocol, ...]
    session_timeout_ms: int
    # -1 = not sent (JoinGroup v0): Kafka then uses the session timeout.
    rebalance_timeout_ms: int = -1
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None
    reason: str | None = None
    client_id: str = "consumer"
    client_host: str = "/127.0.0.1"
    api_version: int = JOIN_GROUP_LATEST_VERSION

    @property
    def effective_rebalance_timeout_ms(self) -> int:
        return (
            self.session_timeout_ms if self.rebalance_timeout_ms < 0 else self.rebalance_timeout_ms
        )


@dataclass(frozen=True, slots=True)
class JoinGroupResponseMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinGroupResponse:
    error: Errors = Errors.NONE
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = NO_LEADER
    skip_assignment: bool = False
    member_id: str = UNKNOWN_MEMBER_ID
    members: tuple[JoinGroupResponseMember, ...] = ()


# ----------------------------------------------------------------------------- SyncGroup


@dataclass(frozen=True, slots=True)
class SyncGroupAssignment:
    member_id: str
    assignment: bytes


@dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: tuple[SyncGroupAssignment, ...] = ()


@dataclass(frozen=True, slots=True)
class SyncGroupResponse:
    error: Errors = Errors.NONE
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


# ----------------------------------------------------------------------------- Heartbeat


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    error: Errors = Errors.NONE


# ----------------------------------------------------------------------------- LeaveGroup


@dataclass(frozen=True, slots=True)
class MemberIdentity:
    """One leaving member (LeaveGroup v3+ batches these; v0-v2 send one member id)."""

    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveGroupRequest:
    group_id: str
    members: tuple[MemberIdentity, ...]


@dataclass(frozen=True, slots=True)
class LeaveGroupMemberResponse:
    member_id: str
    group_instance_id: str | None
    error: Errors = Errors.NONE


@dataclass(frozen=True, slots=True)
class LeaveGroupResponse:
    error: Errors = Errors.NONE
    members: tuple[LeaveGroupMemberResponse, ...] = ()


# ----------------------------------------------------------------------------- OffsetCommit


@dataclass(frozen=True, slots=True)
class OffsetCommitPartition:
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = None


@dataclass(frozen=True, slots=True)
class OffsetCommitTopic:
    name: str
    partitions: tuple[OffsetCommitPartition, ...]
    # Sent from OffsetCommit v10 on; stored as the record's tagged topicId (value v4).
    topic_id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    group_id: str
    topics: tuple[OffsetCommitTopic, ...]
    generation_id: int = NO_GENERATION
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None
    # OffsetCommit v2-v4 only; -1 = broker retention. Anything else makes the record value v1.
    retention_time_ms: int = -1
    api_version: int = OFFSET_COMMIT_LATEST_VERSION


@dataclass(frozen=True, slots=True)
class PartitionResult:
    partition: int
    error: Errors = Errors.NONE


@dataclass(frozen=True, slots=True)
class TopicResult:
    name: str
    partitions: tuple[PartitionResult, ...]


@dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    topics: tuple[TopicResult, ...]

    def errors(self) -> dict[tuple[str, int], Errors]:
        """Error per (topic, partition)."""
        return {(t.name, p.partition): p.error for t in self.topics for p in t.partitions}


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitRequest:
    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    topics: tuple[OffsetCommitTopic, ...]
    generation_id: int = NO_GENERATION
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None
    api_version: int = TXN_OFFSET_COMMIT_LATEST_VERSION


# ----------------------------------------------------------------------------- OffsetFetch


@dataclass(frozen=True, slots=True)
class OffsetFetchTopic:
    name: str
    partitions: tuple[int, ...]
    topic_id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class OffsetFetchRequest:
    group_id: str
    # None = all committed offsets of the group.
    topics: tuple[OffsetFetchTopic, ...] | None = None
    require_stable: bool = False


@dataclass(frozen=True, slots=True)
class FetchedOffset:
    partition: int
    committed_offset: int = INVALID_OFFSET
    committed_leader_epoch: int = -1
    metadata: str = ""
    error: Errors = Errors.NONE


@dataclass(frozen=True, slots=True)
class FetchedTopic:
    name: str
    partitions: tuple[FetchedOffset, ...]


@dataclass(frozen=True, slots=True)
class OffsetFetchResponse:
    group_id: str
    topics: tuple[FetchedTopic, ...] = ()
    error: Errors = Errors.NONE

    def offsets(self) -> dict[tuple[str, int], FetchedOffset]:
        """Fetched offset per (topic, partition)."""
        return {(t.name, p.partition): p for t in self.topics for p in t.partitions}


# ----------------------------------------------------------------------------- OffsetDelete


@dataclass(frozen=True, slots=True)
class OffsetDeleteRequest:
    group_id: str
    topics: tuple[OffsetFetchTopic, ...]


@dataclass(frozen=True, slots=True)
class OffsetDeleteResponse:
    error: Errors = Errors.NONE
    topics: tuple[TopicResult, ...] = ()


# ----------------------------------------------------------------------------- Groups admin


@dataclass(frozen=True, slots=True)
class DeletableGroupResult:
    group_id: str
    error: Errors = Errors.NONE


@dataclass(frozen=True, slots=True)
class DeleteGroupsResponse:
    results: tuple[DeletableGroupResult, ...]

    def errors(self) -> dict[str, Errors]:
        return {r.group_id: r.error for r in self.results}


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str = "classic"


@dataclass(frozen=True, slots=True)
class DescribedGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    group_id: str
    group_state: str
    protocol_type: str = ""
    protocol_data: str = ""
    members: tuple[DescribedGroupMember, ...] = field(default_factory=tuple)
    error: Errors = Errors.NONE
