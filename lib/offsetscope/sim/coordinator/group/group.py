"""A classic group and its members (Kafka ``ClassicGroup`` / ``ClassicGroupMember``).

The queries mirror Kafka's (``supportsProtocols``, ``selectProtocol``, ``hasAllMembersJoined``,
``validateMember``, ``validateOffsetCommit``, ``offsetExpirationCondition``...). The state changes
only through :meth:`ClassicGroup.apply`, one branch per change of
:mod:`offsetscope.sim.coordinator.group.changes`, each doing what the Kafka method of the same name
does. Members are iterated in Java ``HashMap`` order (:mod:`.java`) wherever Kafka's output
depends on that order.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from typing import Any

from offsetscope.protocol.states import ClassicGroupState, check_transition
from offsetscope.sim.coordinator.errors import ApiError, Errors
from offsetscope.sim.coordinator.group import changes as ch
from offsetscope.sim.coordinator.group import events as ev
from offsetscope.sim.coordinator.group.messages import JoinGroupResponseMember, Protocol
from offsetscope.sim.coordinator.java import (
    DEFAULT_CAPACITY,
    grown_capacity,
    java_string_hash,
    spread,
)

CONSUMER_PROTOCOL_TYPE = "consumer"
EMPTY_ASSIGNMENT = b""

Emit = Callable[[ev.GroupEvent], None]

_S = ClassicGroupState


def _no_emit(_: ev.GroupEvent) -> None:
    return None


class ClassicGroupMember:
    """One member: its identity, timeouts, supported protocols, assignment and parked requests."""

    __slots__ = (
        "assignment",
        "awaiting_join",
        "awaiting_sync",
        "client_host",
        "client_id",
        "group_instance_id",
        "hash_spread",
        "is_new",
        "member_id",
        "protocol_type",
        "protocols",
        "rebalance_timeout_ms",
        "session_timeout_ms",
    )

    def __init__(self, spec: ch.MemberSpec) -> None:
        self.member_id = spec.member_id
        self.group_instance_id = spec.group_instance_id
        self.client_id = spec.client_id
        self.client_host = spec.client_host
        self.rebalance_timeout_ms = spec.rebalance_timeout_ms
        self.session_timeout_ms = spec.session_timeout_ms
        self.protocol_type = spec.protocol_type
        self.protocols = spec.protocols
        self.assignment = spec.assignment
        self.is_new = spec.is_new
        # Request ids of the parked JoinGroup / SyncGroup ("futures" in Kafka), or None.
        self.awaiting_join: int | None = None
        self.awaiting_sync: int | None = None
        self.hash_spread = spread(java_string_hash(spec.member_id))

    def copy(self) -> ClassicGroupMember:
        other = ClassicGroupMember.__new__(ClassicGroupMember)
        other.member_id = self.member_id
        other.group_instance_id = self.group_instance_id
        other.client_id = self.client_id
        other.client_host = self.client_host
        other.rebalance_timeout_ms = self.rebalance_timeout_ms
        other.session_timeout_ms = self.session_timeout_ms
        other.protocol_type = self.protocol_type
        other.protocols = self.protocols
        other.assignment = self.assignment
        other.is_new = self.is_new
        other.awaiting_join = self.awaiting_join
        other.awaiting_sync = self.awaiting_sync
        other.hash_spread = self.hash_spread
        return other

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None

    def metadata(self, protocol_name: str | None) -> bytes:
        """The member's metadata for ``protocol_name`` (Kafka throws if it does not support it)."""
        for p in self.protocols:
            if p.name == protocol_name:
                return p.metadata
        raise ValueError(f"member {self.member_id} does not support protocol {protocol_name}")

    def has_satisfied_heartbeat(self) -> bool:
        # New members can expire while awaiting join; others awaiting a rebalance are alive.
        if self.is_new:
            return False
        return self.is_awaiting_join or self.is_awaiting_sync

    def matches(self, protocols: tuple[Protocol, ...]) -> bool:
        return protocols == self.protocols

    def vote(self, candidates: set[str]) -> str:
        """The first of the member's protocols (its preference order) among ``candidates``."""
        for p in self.protocols:
            if p.name in candidates:
                return p.name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    @property
    def protocol_names(self) -> set[str]:
        return {p.name for p in self.protocols}

    def spec(self) -> ch.MemberSpec:
        return ch.MemberSpec(
            member_id=self.member_id,
            group_instance_id=self.group_instance_id,
            client_id=self.client_id,
            client_host=self.client_host,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            session_timeout_ms=self.session_timeout_ms,
            protocol_type=self.protocol_type,
            protocols=self.protocols,
            assignment=self.assignment,
            is_new=self.is_new,
        )


class ClassicGroup:
    """A classic group's state (only :meth:`apply` and :meth:`load` change it)."""

    __slots__ = (
        "current_state_timestamp",
        "generation_id",
        "group_id",
        "leader_id",
        "members",
        "members_capacity",
        "new_member_added",
        "num_members_awaiting_join",
        "pending_join_members",
        "pending_sync_members",
        "previous_state",
        "protocol_name",
        "protocol_type",
        "state",
        "static_members",
        "subscribed_topics",
        "supported_protocols",
    )

    def __init__(self, group_id: str, created_at_ms: int) -> None:
        self.group_id = group_id
        self.state = _S.EMPTY
        self.previous_state = _S.DEAD
        self.current_state_timestamp: int | None = created_at_ms
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        # Insertion-ordered; iterate with ordered_members() for Java HashMap order.
        self.members: dict[str, ClassicGroupMember] = {}
        self.members_capacity = DEFAULT_CAPACITY
        self.static_members: dict[str, str] = {}
        self.pending_join_members: set[str] = set()
        self.num_members_awaiting_join = 0
        self.supported_protocols: dict[str, int] = {}
        self.pending_sync_members: set[str] = set()
        self.subscribed_topics: frozenset[str] | None = None
        self.new_member_added = False

    def copy(self) -> ClassicGroup:
        """A copy a handler may change freely (members are copied, not shared)."""
        other = ClassicGroup.__new__(ClassicGroup)
        other.group_id = self.group_id
        other.state = self.state
        other.previous_state = self.previous_state
        other.current_state_timestamp = self.current_state_timestamp
        other.protocol_type = self.protocol_type
        other.protocol_name = self.protocol_name
        other.generation_id = self.generation_id
        other.leader_id = self.leader_id
        other.members_capacity = self.members_capacity
        other.num_members_awaiting_join = self.num_members_awaiting_join
        other.subscribed_topics = self.subscribed_topics
        other.new_member_added = self.new_member_added
        other.members = {k: m.copy() for k, m in self.members.items()}
        other.static_members = dict(self.static_members)
        other.pending_join_members = set(self.pending_join_members)
        other.supported_protocols = dict(self.supported_protocols)
        other.pending_sync_members = set(self.pending_sync_members)
        return other

    # ------------------------------------------------------------------------- queries

    @property
    def is_empty(self) -> bool:
        return self.state is _S.EMPTY

    def is_simple_group(self) -> bool:
        return self.protocol_type is None and self.is_empty and not self.pending_join_members

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def member(self, member_id: str) -> ClassicGroupMember:
        return self.members[member_id]

    @property
    def num_members(self) -> int:
        return len(self.members)

    def ordered_members(self) -> list[ClassicGroupMember]:
        """Members in the order Kafka's ``HashMap`` iterates them."""
        mask = self.members_capacity - 1
        ranked = sorted(
            ((m.hash_spread & mask, i, m) for i, m in enumerate(self.members.values())),
            key=lambda t: (t[0], t[1]),
        )
        return [m for _, _, m in ranked]

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id is not None and self.leader_id == member_id

    def current_state_timestamp_or_default(self) -> int:
        return -1 if self.current_state_timestamp is None else self.current_state_timestamp

    def uses_consumer_group_protocol(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    def can_rebalance(self) -> bool:
        return self.state.can_rebalance

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_join_members

    def static_member_id(self, group_instance_id: str) -> str | None:
        return self.static_members.get(group_instance_id)

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_members_awaiting_join and not self.pending_join_members

    def not_yet_rejoined_members(self) -> list[ClassicGroupMember]:
        return [m for m in self.ordered_members() if not m.is_awaiting_join]

    def has_received_sync_from_all_members(self) -> bool:
        return not self.pending_sync_members

    def rebalance_timeout_ms(self) -> int:
        """The group's rebalance timeout: the largest of its members'."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def group_assignment(self) -> dict[str, bytes]:
        return {m.member_id: m.assignment for m in self.members.values()}

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.supported_protocols.items() if count == n}

    def select_protocol(self) -> str:
        """The protocol every member supports with the most votes (Kafka ``selectProtocol``).

        Each member votes for its most preferred candidate. Ties go to the protocol a Java
        ``HashMap`` of votes iterates first, as ``Stream.max`` keeps the first maximum.
        """
        if not self.members:
            raise RuntimeError(f"cannot select a protocol for empty group {self.group_id}")
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.ordered_members():
            name = m.vote(candidates)
            votes[name] = votes.get(name, 0) + 1
        capacity = grown_capacity(DEFAULT_CAPACITY, len(votes))
        mask = capacity - 1
        order = sorted(
            enumerate(votes),
            key=lambda iv: (spread(java_string_hash(iv[1])) & mask, iv[0]),
        )
        best, best_votes = "", -1
        for _, name in order:
            if votes[name] > best_votes:
                best, best_votes = name, votes[name]
        return best

    def supports_protocols(self, protocol_type: str, protocol_names: Iterable[str]) -> bool:
        """Whether a member with these protocols may join (Kafka ``supportsProtocols``)."""
        names = set(protocol_names)
        if self.is_empty:
            return protocol_type != "" and bool(names)
        n = len(self.members)
        return self.protocol_type == protocol_type and any(
            self.supported_protocols.get(name, 0) == n for name in names
        )

    def elect_new_joined_leader(self) -> tuple[bool, str | None]:
        """Kafka ``maybeElectNewJoinedLeader`` as a query.

        Returns:
            (whether the group has a leader that rejoined, the leader to set if it changes).
        """
        if self.leader_id is None:
            return False, None
        current = self.members[self.leader_id]
        if current.is_awaiting_join:
            return True, None
        for m in self.ordered_members():
            if m.is_awaiting_join:
                return True, m.member_id
        return False, None

    def validate_member(self, member_id: str, group_instance_id: str | None) -> None:
        """Raise UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID as Kafka's ``validateMember`` does."""
        if group_instance_id is not None:
            existing = self.static_members.get(group_instance_id)
            if existing is None:
                raise ApiError(Errors.UNKNOWN_MEMBER_ID)
            if existing != member_id:
                raise ApiError(Errors.FENCED_INSTANCE_ID)
        if member_id not in self.members:
            raise ApiError(Errors.UNKNOWN_MEMBER_ID)

    def validate_offset_commit(
        self,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        is_transactional: bool,
    ) -> None:
        """Kafka ``ClassicGroup.validateOffsetCommit``.

        Raises:
            ApiError: COORDINATOR_NOT_AVAILABLE (Dead), UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
                ILLEGAL_GENERATION or REBALANCE_IN_PROGRESS.
        """
        if self.state is _S.DEAD:
            raise ApiError(Errors.COORDINATOR_NOT_AVAILABLE)
        if generation_id < 0 and self.state is _S.EMPTY:
            # Admin client or a consumer without group management: allowed on an Empty group.
            return
        if generation_id >= 0 or member_id != "" or group_instance_id is not None:
            self.validate_member(member_id, group_instance_id)
            if generation_id != self.generation_id:
                raise ApiError(Errors.ILLEGAL_GENERATION)
        elif not is_transactional and self.state is not _S.EMPTY:
            # Commits without member id and generation (v0) are only accepted on Empty groups;
            # old TxnOffsetCommit versions carry neither, so the rule does not apply to them.
            raise ApiError(Errors.UNKNOWN_MEMBER_ID)
        if not is_transactional and self.state is _S.COMPLETING_REBALANCE:
            # A valid member of the new generation that commits before the assignment arrived.
            raise ApiError(Errors.REBALANCE_IN_PROGRESS)

    def validate_offset_delete(self) -> None:
        if self.state is _S.DEAD:
            raise ApiError(Errors.GROUP_ID_NOT_FOUND)
        if self.state is not _S.EMPTY and not self.uses_consumer_group_protocol():
            raise ApiError(Errors.NON_EMPTY_GROUP)

    def validate_delete_group(self) -> None:
        if self.state is _S.DEAD:
            raise ApiError(Errors.GROUP_ID_NOT_FOUND)
        if self.state is not _S.EMPTY:
            raise ApiError(Errors.NON_EMPTY_GROUP)

    def offset_expiration_base(self) -> Callable[[int], int] | None:
        """Kafka ``offsetExpirationCondition``: commit timestamp -> retention base, or None.

        Empty group with a protocol type: the time it became Empty (commit time if unknown);
        Stable consumer group with known subscriptions, or a simple group: the commit time;
        otherwise offsets do not expire.
        """
        if self.protocol_type is not None:
            if self.state is _S.EMPTY:
                state_ts = self.current_state_timestamp
                if state_ts is None:
                    return lambda commit_ts: commit_ts
                return lambda _commit_ts: state_ts
            if (
                self.uses_consumer_group_protocol()
                and self.subscribed_topics is not None
                and self.state is _S.STABLE
            ):
                return lambda commit_ts: commit_ts
            return None
        return lambda commit_ts: commit_ts

    def is_subscribed_to_topic(self, topic: str) -> bool:
        if self.subscribed_topics is not None:
            return topic in self.subscribed_topics
        return self.uses_consumer_group_protocol()

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        """Topics the members subscribe to, when the group uses the consumer protocol.

        Kafka parses each member's metadata for the selected protocol with the version-0 prefix
        of ConsumerProtocolSubscription (int16 version, then the topics array), which every
        version starts with; on a parse error the subscriptions are unknown (None).
        """
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for m in self.members.values():
                topics.update(_subscription_topics_v0(m.metadata(self.protocol_name)))
        except ValueError:
            return None
        return frozenset(topics)

    def current_classic_group_members(self) -> tuple[JoinGroupResponseMember, ...]:
        """The member list a leader receives in its JoinGroup response."""
        if self.state in (_S.DEAD, _S.PREPARING_REBALANCE):
            raise RuntimeError(
                f"cannot list members of group {self.group_id} in state {self.state}"
            )
        return tuple(
            JoinGroupResponseMember(
                m.member_id, m.group_instance_id, m.metadata(self.protocol_name)
            )
            for m in self.ordered_members()
        )

    # ------------------------------------------------------------------------- changes

    def apply(self, change: ch.GroupChange, emit: Emit = _no_emit) -> None:
        """Apply one change (see :mod:`.changes`); ``emit`` receives the ground-truth events."""
        handler = _APPLY.get(type(change))
        if handler is None:
            raise RuntimeError(
                f"{type(change).__name__} is applied by the coordinator, not a group"
            )
        handler(self, change, emit)

    def _pending_member_added(self, change: ch.PendingMemberAdded, emit: Emit) -> None:
        if change.member_id in self.members:
            raise RuntimeError(
                f"attempt to add pending member {change.member_id} which is already a member "
                f"of group {self.group_id}"
            )
        self.pending_join_members.add(change.member_id)

    def _new_member_added_set(self, change: ch.NewMemberAddedSet, emit: Emit) -> None:
        self.new_member_added = change.value

    def _member_no_longer_new(self, change: ch.MemberNoLongerNew, emit: Emit) -> None:
        self.members[change.member_id].is_new = False

    def _state_transitioned(self, change: ch.StateTransitioned, emit: Emit) -> None:
        self._transition_to(change.target, change.at_ms, change.reason, emit)

    def _next_generation_started(self, change: ch.NextGenerationStarted, emit: Emit) -> None:
        self._init_next_generation(change.at_ms, emit)

    def _leader_set(self, change: ch.LeaderSet, emit: Emit) -> None:
        self.leader_id = change.leader_id

    def _pending_sync_added(self, change: ch.PendingSyncAdded, emit: Emit) -> None:
        if change.member_id not in self.members:
            raise RuntimeError(f"pending sync member {change.member_id} is not in {self.group_id}")
        self.pending_sync_members.add(change.member_id)

    def _pending_sync_removed(self, change: ch.PendingSyncRemoved, emit: Emit) -> None:
        self.pending_sync_members.discard(change.member_id)

    def _pending_sync_cleared(self, change: ch.PendingSyncCleared, emit: Emit) -> None:
        self.pending_sync_members.clear()

    def _join_responded(self, change: ch.JoinResponded, emit: Emit) -> None:
        m = self.members.get(change.member_id)
        if m is not None and m.awaiting_join is not None:
            m.awaiting_join = None
            self.num_members_awaiting_join -= 1

    def _sync_parked(self, change: ch.SyncParked, emit: Emit) -> None:
        self.members[change.member_id].awaiting_sync = change.request_id

    def _sync_responded(self, change: ch.SyncResponded, emit: Emit) -> None:
        m = self.members.get(change.member_id)
        if m is not None:
            m.awaiting_sync = None

    def _assignments_reset(self, change: ch.AssignmentsReset, emit: Emit) -> None:
        for m in self.members.values():
            m.assignment = EMPTY_ASSIGNMENT

    def _assignments_stored(self, change: ch.AssignmentsStored, emit: Emit) -> None:
        given = dict(change.assignments)
        for m in self.members.values():
            m.assignment = given.get(m.member_id, EMPTY_ASSIGNMENT)
        emit(
            ev.AssignmentStored(
                self.group_id,
                change.at_ms,
                self.generation_id,
                self.protocol_name,
                self.leader_id,
                tuple((m.member_id, m.assignment) for m in self.ordered_members()),
            )
        )

    def _group_deletion_started(self, change: ch.GroupDeletionStarted, emit: Emit) -> None:
        emit(ev.GroupDeleted(self.group_id, change.at_ms, change.cause))

    def _offsets_expiring(self, change: ch.OffsetsExpiring, emit: Emit) -> None:
        emit(ev.OffsetsExpired(self.group_id, change.at_ms, change.partitions))

    def _add(self, change: ch.MemberAdded, emit: Emit) -> None:
        spec = change.member
        if spec.group_instance_id is not None:
            if spec.group_instance_id in self.static_members:
                raise RuntimeError(
                    f"static member with group instance id {spec.group_instance_id} cannot be "
                    f"added to group {self.group_id} since it is already a member"
                )
            self.static_members[spec.group_instance_id] = spec.member_id
        if not self.members:
            self.protocol_type = spec.protocol_type
        if self.protocol_type != spec.protocol_type:
            raise RuntimeError("the group and member's protocol type must be the same")
        member = ClassicGroupMember(spec)
        if not self.supports_protocols(spec.protocol_type, member.protocol_names):
            raise RuntimeError("none of the member's protocols can be supported")
        if self.leader_id is None:
            self.leader_id = spec.member_id
        self.members[spec.member_id] = member
        self.members_capacity = grown_capacity(self.members_capacity, len(self.members))
        for p in spec.protocols:
            self.supported_protocols[p.name] = self.supported_protocols.get(p.name, 0) + 1
        member.awaiting_join = change.join_request
        if member.awaiting_join is not None:
            self.num_members_awaiting_join += 1
        self.pending_join_members.discard(spec.member_id)
        emit(
            ev.MemberJoined(
                self.group_id,
                change.at_ms,
                spec.member_id,
                spec.group_instance_id,
                spec.client_id,
                spec.client_host,
                spec.session_timeout_ms,
                spec.rebalance_timeout_ms,
                ev.JoinCause.JOINED,
            )
        )

    def _remove(self, change: ch.MemberRemoved, emit: Emit) -> None:
        member_id = change.member_id
        removed = self.members.pop(member_id, None)
        if removed is not None:
            for p in removed.protocols:
                self.supported_protocols[p.name] = self.supported_protocols.get(p.name, 0) - 1
            if removed.is_awaiting_join:
                self.num_members_awaiting_join -= 1
            if removed.group_instance_id is not None:
                self.static_members.pop(removed.group_instance_id, None)
            emit(
                ev.MemberLeft(
                    self.group_id,
                    change.at_ms,
                    member_id,
                    removed.group_instance_id,
                    change.cause,
                    change.reason,
                )
            )
        if self.is_leader(member_id):
            remaining = self.ordered_members()
            self.leader_id = remaining[0].member_id if remaining else None
        self.pending_join_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def _update_member(self, change: ch.MemberUpdated, emit: Emit) -> None:
        m = self.members[change.member_id]
        for p in m.protocols:
            self.supported_protocols[p.name] = self.supported_protocols.get(p.name, 0) - 1
        m.protocols = change.protocols
        for p in m.protocols:
            self.supported_protocols[p.name] = self.supported_protocols.get(p.name, 0) + 1
        m.rebalance_timeout_ms = change.rebalance_timeout_ms
        m.session_timeout_ms = change.session_timeout_ms
        if change.join_request is not None and not m.is_awaiting_join:
            self.num_members_awaiting_join += 1
        elif change.join_request is None and m.is_awaiting_join:
            self.num_members_awaiting_join -= 1
        m.awaiting_join = change.join_request

    def _replace_static_member(self, change: ch.StaticMemberReplaced, emit: Emit) -> None:
        old = self.members.pop(change.old_member_id, None)
        if old is None:
            raise RuntimeError(f"cannot replace non-existing member id {change.old_member_id}")
        if old.is_awaiting_join:
            # The old member's parked join was answered FENCED_INSTANCE_ID just before.
            self.num_members_awaiting_join -= 1
        spec = old.spec()
        new = ClassicGroupMember(
            ch.MemberSpec(
                member_id=change.new_member_id,
                group_instance_id=spec.group_instance_id,
                client_id=spec.client_id,
                client_host=spec.client_host,
                rebalance_timeout_ms=spec.rebalance_timeout_ms,
                session_timeout_ms=spec.session_timeout_ms,
                protocol_type=spec.protocol_type,
                protocols=spec.protocols,
                assignment=spec.assignment,
            )
        )
        self.members[change.new_member_id] = new
        self.members_capacity = grown_capacity(self.members_capacity, len(self.members))
        if self.is_leader(change.old_member_id):
            self.leader_id = change.new_member_id
        self.static_members[change.group_instance_id] = change.new_member_id
        emit(
            ev.MemberLeft(
                self.group_id,
                change.at_ms,
                change.old_member_id,
                change.group_instance_id,
                ev.LeaveCause.FENCED,
                f"replaced by {change.new_member_id}",
            )
        )
        emit(
            ev.MemberJoined(
                self.group_id,
                change.at_ms,
                change.new_member_id,
                change.group_instance_id,
                new.client_id,
                new.client_host,
                new.session_timeout_ms,
                new.rebalance_timeout_ms,
                ev.JoinCause.STATIC_REPLACEMENT,
                change.old_member_id,
            )
        )

    def _transition_to(
        self, target: ClassicGroupState, at_ms: int, reason: str, emit: Emit
    ) -> None:
        check_transition(self.group_id, self.state, target)
        self.previous_state = self.state
        self.state = target
        self.current_state_timestamp = at_ms
        emit(
            ev.GroupStateChanged(
                self.group_id,
                at_ms,
                self.previous_state.value,
                target.value,
                self.generation_id,
                reason,
            )
        )

    def _init_next_generation(self, at_ms: int, emit: Emit) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self._transition_to(_S.COMPLETING_REBALANCE, at_ms, "join phase completed", emit)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self._transition_to(_S.EMPTY, at_ms, "join phase completed without members", emit)
        self.pending_sync_members.clear()
        emit(
            ev.GenerationStarted(
                self.group_id,
                at_ms,
                self.generation_id,
                self.protocol_type,
                self.protocol_name,
                self.leader_id,
                tuple(m.member_id for m in self.ordered_members()),
            )
        )

    def remove_from_coordinator(self, at_ms: int, emit: Emit) -> None:
        """The group's tombstone was replayed: it is Dead and leaves the coordinator."""
        self._transition_to(_S.DEAD, at_ms, "group metadata removed", emit)

    # ------------------------------------------------------------------------- loading

    @classmethod
    def load(cls, group_id: str, value: dict[str, Any]) -> ClassicGroup:
        """Rebuild a group from its GroupMetadata record value (Kafka's replay on load).

        A group with members loads Stable, without members Empty; each member supports only the
        selected protocol, with its stored subscription; a missing rebalance timeout (v0 value)
        means the session timeout.
        """
        state_ts = value.get("currentStateTimestamp", -1)
        group = cls(group_id, -1 if state_ts is None else state_ts)
        protocol_type = value.get("protocolType") or None
        members = value.get("members") or []
        group.state = _S.STABLE if members else _S.EMPTY
        group.previous_state = _S.DEAD
        group.current_state_timestamp = None if state_ts in (None, -1) else int(state_ts)
        group.generation_id = int(value["generation"])
        group.protocol_type = protocol_type
        group.protocol_name = value.get("protocol")
        group.leader_id = value.get("leader")
        for mv in members:
            rebalance = int(mv.get("rebalanceTimeout", -1))
            spec = ch.MemberSpec(
                member_id=mv["memberId"],
                group_instance_id=mv.get("groupInstanceId"),
                client_id=mv["clientId"],
                client_host=mv["clientHost"],
                rebalance_timeout_ms=int(mv["sessionTimeout"]) if rebalance == -1 else rebalance,
                session_timeout_ms=int(mv["sessionTimeout"]),
                protocol_type=protocol_type or "",
                protocols=(Protocol(group.protocol_name or "", bytes(mv["subscription"])),),
                assignment=bytes(mv["assignment"]),
            )
            member = ClassicGroupMember(spec)
            if spec.group_instance_id is not None:
                group.static_members[spec.group_instance_id] = spec.member_id
            group.members[spec.member_id] = member
            group.members_capacity = grown_capacity(group.members_capacity, len(group.members))
            for p in spec.protocols:
                group.supported_protocols[p.name] = group.supported_protocols.get(p.name, 0) + 1
        group.subscribed_topics = group.compute_subscribed_topics()
        return group


# One method per change type: the change log is the sequence of Kafka's ClassicGroup calls.
_APPLY: dict[type, Callable[[ClassicGroup, Any, Emit], None]] = {
    ch.MemberAdded: ClassicGroup._add,
    ch.MemberRemoved: ClassicGroup._remove,
    ch.PendingMemberAdded: ClassicGroup._pending_member_added,
    ch.MemberUpdated: ClassicGroup._update_member,
    ch.StaticMemberReplaced: ClassicGroup._replace_static_member,
    ch.NewMemberAddedSet: ClassicGroup._new_member_added_set,
    ch.MemberNoLongerNew: ClassicGroup._member_no_longer_new,
    ch.StateTransitioned: ClassicGroup._state_transitioned,
    ch.NextGenerationStarted: ClassicGroup._next_generation_started,
    ch.LeaderSet: ClassicGroup._leader_set,
    ch.PendingSyncAdded: ClassicGroup._pending_sync_added,
    ch.PendingSyncRemoved: ClassicGroup._pending_sync_removed,
    ch.PendingSyncCleared: ClassicGroup._pending_sync_cleared,
    ch.JoinResponded: ClassicGroup._join_responded,
    ch.SyncParked: ClassicGroup._sync_parked,
    ch.SyncResponded: ClassicGroup._sync_responded,
    ch.AssignmentsReset: ClassicGroup._assignments_reset,
    ch.AssignmentsStored: ClassicGroup._assignments_stored,
    ch.GroupDeletionStarted: ClassicGroup._group_deletion_started,
    ch.OffsetsExpiring: ClassicGroup._offsets_expiring,
}

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def _subscription_topics_v0(data: bytes) -> list[str]:
    """Topics of a ConsumerProtocolSubscription, read with the version-0 layout after the version.

    Raises:
        ValueError: the bytes are too short or malformed (Kafka's ``SchemaException``).
    """
    try:
        (version,) = _I16.unpack_from(data, 0)
        if version < 0:
            raise ValueError(f"negative consumer protocol version {version}")
        (count,) = _I32.unpack_from(data, 2)
        if count < 0:
            raise ValueError("null topics array")
        pos = 6
        topics: list[str] = []
        for _ in range(count):
            (length,) = _I16.unpack_from(data, pos)
            pos += 2
            if length < 0 or pos + length > len(data):
                raise ValueError("bad topic string")
            topics.append(data[pos : pos + length].decode("utf-8"))
            pos += length
    except struct.error as exc:
        raise ValueError(str(exc)) from None
    return topics
