"""Ground-truth events: what really happened inside the bundled group coordinator.

Kafka persists only part of a classic group's life (GroupMetadata records at the end of a
rebalance, offset commits and tombstones); PreparingRebalance, who left and why, and which
timeout fired are never written. The coordinator emits these frozen events while it applies its
changes so scenarios can write the truth next to the log (one JSON object per line, via
:func:`event_to_dict`) and tests can compare what the pipeline infers from the records with it.
Every event carries the group id (or the offsets partition) and the coordinator time in ms.
"""

from __future__ import annotations

import base64
import dataclasses
import uuid
from dataclasses import dataclass
from enum import Enum
from typing import Any


class JoinCause(Enum):
    """Why a member id entered a group."""

    JOINED = "joined"
    # A static member (same group.instance.id) rejoined with a new member id and took the old
    # member's place, assignment included.
    STATIC_REPLACEMENT = "static_replacement"


class LeaveCause(Enum):
    """Why a member id left a group."""

    # Explicit LeaveGroup (includes the consumer leaving after max.poll.interval.ms; the
    # client's reason string tells them apart).
    LEFT = "left"
    # No heartbeat within session.timeout.ms.
    SESSION_TIMEOUT = "session_timeout"
    # A new member's parked JoinGroup exceeded the new-member join timeout.
    JOIN_TIMEOUT = "join_timeout"
    # Did not rejoin before the join phase completed (rebalance timeout).
    REBALANCE_TIMEOUT = "rebalance_timeout"
    # Did not send SyncGroup before the pending-sync expiry (rebalance timeout).
    SYNC_TIMEOUT = "sync_timeout"
    # Its group.instance.id was taken over by a new member id.
    FENCED = "fenced"
    # Rejected on rejoin because the group is at group.max.size.
    GROUP_MAX_SIZE = "group_max_size"


class DeleteCause(Enum):
    DELETE_GROUPS = "deleted"
    EXPIRED = "expired"


@dataclass(frozen=True, slots=True)
class GroupCreated:
    group_id: str
    at_ms: int


@dataclass(frozen=True, slots=True)
class GroupStateChanged:
    group_id: str
    at_ms: int
    previous: str
    state: str
    generation_id: int
    reason: str


@dataclass(frozen=True, slots=True)
class GenerationStarted:
    """The join phase completed: a new generation with its protocol, leader and members."""

    group_id: str
    at_ms: int
    generation_id: int
    protocol_type: str | None
    protocol: str | None
    leader: str | None
    member_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MemberJoined:
    group_id: str
    at_ms: int
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    cause: JoinCause
    replaced_member_id: str | None = None


@dataclass(frozen=True, slots=True)
class MemberLeft:
    group_id: str
    at_ms: int
    member_id: str
    group_instance_id: str | None
    cause: LeaveCause
    reason: str = ""


@dataclass(frozen=True, slots=True)
class AssignmentStored:
    """The leader's assignment was written (GroupMetadata record) and the group became Stable."""

    group_id: str
    at_ms: int
    generation_id: int
    protocol: str | None
    leader: str | None
    assignments: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class OffsetsExpired:
    group_id: str
    at_ms: int
    partitions: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class GroupDeleted:
    group_id: str
    at_ms: int
    cause: DeleteCause


@dataclass(frozen=True, slots=True)
class TransactionalOffsetsCompleted:
    """A COMMIT or ABORT marker resolved a producer's pending offsets in one offsets partition."""

    offsets_partition: int
    at_ms: int
    producer_id: int
    committed: bool
    # (group, topic, partition) of every pending offset the marker resolved.
    offsets: tuple[tuple[str, str, int], ...]


GroupEvent = (
    GroupCreated
    | GroupStateChanged
    | GenerationStarted
    | MemberJoined
    | MemberLeft
    | AssignmentStored
    | OffsetsExpired
    | GroupDeleted
    | TransactionalOffsetsCompleted
)


def event_to_dict(event: GroupEvent) -> dict[str, Any]:
    """A JSON-ready dict of ``event``: ``{"type": ClassName, ...fields}``.

    Bytes become standard Base64 (as Kafka's JSON formatters print bytes), enums their value,
    tuples lists.
    """
    out: dict[str, Any] = {"type": type(event).__name__}
    for f in dataclasses.fields(event):
        out[f.name] = _jsonable(getattr(event, f.name))
    return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    return value
