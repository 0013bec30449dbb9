"""A builder-style context that drives the real group coordinator runtime on a virtual clock.

The role of Kafka's ``GroupMetadataManagerTestContext``: nothing is mocked -- requests go through
:class:`~offsetscope.sim.coordinator.runtime.GroupCoordinatorRuntime`, records are encoded and
appended to an in-memory :class:`~offsetscope.sim.coordinator.log.LogStore`, time is a
:class:`~offsetscope.clock.VirtualClock` -- and the context keeps what tests look at:
the records written (per offsets partition, in order), the ground-truth events, and short request
builders with Kafka-like defaults::

    ctx = GroupTestContext.builder().with_initial_rebalance_delay_ms(0).build()
    member = ctx.join_dynamic("g", client_id="c1")          # two rounds: MEMBER_ID_REQUIRED, join
    ctx.advance(0)
    ...

Used by the unit tests and by scenario code that wants a coordinator without a scenario file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from offsetscope.clock import VirtualClock
from offsetscope.protocol.consumer_protocol import encode_assignment, encode_subscription
from offsetscope.protocol.records import CoordinatorRecord
from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.group import messages as msg
from offsetscope.sim.coordinator.group.config import GroupCoordinatorConfig
from offsetscope.sim.coordinator.group.events import GroupEvent
from offsetscope.sim.coordinator.group.group import ClassicGroup
from offsetscope.sim.coordinator.log import Batch, LogStore
from offsetscope.sim.coordinator.runtime import GroupCoordinatorRuntime, Pending

START_MS = 1_700_000_000_000


class UnexpectedResponseError(RuntimeError):
    """The coordinator answered a scripted request otherwise than the script expects."""


def subscription(*topics: str, version: int = 0) -> bytes:
    """ConsumerProtocolSubscription bytes for ``topics`` (version 0 by default)."""
    data: dict[str, object] = {"topics": list(topics), "userData": None}
    if version >= 1:
        data["ownedPartitions"] = []
    if version >= 2:
        data["generationId"] = -1
    if version >= 3:
        data["rackId"] = None
    return encode_subscription(version, data)


def assignment(partitions: Mapping[str, Sequence[int]], version: int = 0) -> bytes:
    """ConsumerProtocolAssignment bytes for ``{topic: [partitions]}``."""
    return encode_assignment(
        version,
        {
            "assignedPartitions": [
                {"topic": t, "partitions": list(ps)} for t, ps in partitions.items()
            ],
            "userData": None,
        },
    )


@dataclass(frozen=True, slots=True)
class AppendedBatch:
    partition: int
    batch: Batch
    records: tuple[CoordinatorRecord, ...]


@dataclass(frozen=True, slots=True)
class FormedGroup:
    """A group brought to Stable by :meth:`GroupTestContext.form_group`."""

    generation: int
    leader: str
    member_ids: dict[str, str]

    def __getitem__(self, client: str) -> str:
        return self.member_ids[client]


@dataclass(slots=True)
class GroupTestContextBuilder:
    """Settings of a :class:`GroupTestContext`; ``build()`` creates it."""

    config: GroupCoordinatorConfig = field(default_factory=GroupCoordinatorConfig)
    start_ms: int = START_MS
    seed: int = 0

    def with_config(self, **changes: int) -> GroupTestContextBuilder:
        self.config = dataclasses.replace(self.config, **changes)
        return self

    def with_max_size(self, size: int) -> GroupTestContextBuilder:
        return self.with_config(max_size=size)

    def with_offsets_partitions(self, n: int) -> GroupTestContextBuilder:
        return self.with_config(offsets_topic_partitions=n)

    def with_offsets_retention_ms(self, ms: int) -> GroupTestContextBuilder:
        return self.with_config(offsets_retention_ms=ms)

    def with_seed(self, seed: int) -> GroupTestContextBuilder:
        self.seed = seed
        return self

    def build(self) -> GroupTestContext:
        return GroupTestContext(self.config, self.start_ms, self.seed)


class GroupTestContext:
    """A runtime, its log and clock, and everything it wrote and emitted."""

    def __init__(self, config: GroupCoordinatorConfig, start_ms: int, seed: int) -> None:
        self.clock = VirtualClock(start_ms)
        self.log = LogStore()
        self.events: list[GroupEvent] = []
        self.appends: list[AppendedBatch] = []
        self.runtime = GroupCoordinatorRuntime(
            self.log,
            self.clock,
            config,
            seed=seed,
            on_event=self.events.append,
            on_append=lambda p, b, rs: self.appends.append(AppendedBatch(p, b, tuple(rs))),
        )

    @staticmethod
    def builder() -> GroupTestContextBuilder:
        return GroupTestContextBuilder()

    # ------------------------------------------------------------------------- inspection

    @property
    def now(self) -> int:
        return self.clock.now_ms()

    def group(self, group_id: str) -> ClassicGroup:
        """The live (real) state of ``group_id``."""
        return self.runtime.shard_for(group_id).groups[group_id]

    def has_group(self, group_id: str) -> bool:
        return group_id in self.runtime.shard_for(group_id).groups

    def records(self, group_id: str | None = None) -> list[CoordinatorRecord]:
        """Records written so far, in append order (only ``group_id``'s partition if given)."""
        partition = None if group_id is None else self.runtime.partition_for(group_id)
        return [
            r
            for a in self.appends
            if partition is None or a.partition == partition
            for r in a.records
        ]

    def take_records(self) -> list[CoordinatorRecord]:
        """Records written since the last call."""
        out = [r for a in self.appends for r in a.records]
        self.appends.clear()
        return out

    def take_events(self) -> list[GroupEvent]:
        out = list(self.events)
        self.events.clear()
        return out

    def advance(self, ms: int) -> int:
        return self.runtime.advance(ms)

    # ------------------------------------------------------------------------- requests

    def join(
        self,
        group_id: str,
        *,
        member_id: str = msg.UNKNOWN_MEMBER_ID,
        group_instance_id: str | None = None,
        protocols: Sequence[tuple[str, bytes]] | None = None,
        protocol_type: str = "consumer",
        session_timeout_ms: int = 45_000,
        rebalance_timeout_ms: int = 300_000,
        client_id: str = "consumer",
        client_host: str = "/127.0.0.1",
        reason: str | None = None,
        api_version: int = msg.JOIN_GROUP_LATEST_VERSION,
    ) -> Pending[msg.JoinGroupResponse]:
        if protocols is None:
            protocols = [("range", subscription("foo"))]
        return self.runtime.join_group(
            msg.JoinGroupRequest(
                group_id=group_id,
                protocol_type=protocol_type,
                protocols=tuple(msg.Protocol(n, m) for n, m in protocols),
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=rebalance_timeout_ms,
                member_id=member_id,
                group_instance_id=group_instance_id,
                reason=reason,
                client_id=client_id,
                client_host=client_host,
                api_version=api_version,
            )
        )

    def join_dynamic(
        self,
        group_id: str,
        *,
        protocols: Sequence[tuple[str, bytes]] | None = None,
        session_timeout_ms: int = 45_000,
        rebalance_timeout_ms: int = 300_000,
        client_id: str = "consumer",
    ) -> tuple[str, Pending[msg.JoinGroupResponse]]:
        """Both rounds of a dynamic member's join: MEMBER_ID_REQUIRED, then the real join.

        Returns:
            (the member id, the pending response of the second JoinGroup).
        """

        def round_(member_id: str) -> Pending[msg.JoinGroupResponse]:
            return self.join(
                group_id,
                member_id=member_id,
                protocols=protocols,
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=rebalance_timeout_ms,
                client_id=client_id,
            )

        response = round_(msg.UNKNOWN_MEMBER_ID).result()
        if response.error is not Errors.MEMBER_ID_REQUIRED:
            raise UnexpectedResponseError(f"expected MEMBER_ID_REQUIRED, got {response}")
        second = round_(response.member_id)
        return response.member_id, second

    def sync(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        assignments: Mapping[str, bytes] | None = None,
        *,
        group_instance_id: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> Pending[msg.SyncGroupResponse]:
        return self.runtime.sync_group(
            msg.SyncGroupRequest(
                group_id,
                generation_id,
                member_id,
                group_instance_id,
                protocol_type,
                protocol_name,
                tuple(msg.SyncGroupAssignment(m, a) for m, a in (assignments or {}).items()),
            )
        )

    def heartbeat(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None = None,
    ) -> msg.HeartbeatResponse:
        return self.runtime.heartbeat(
            msg.HeartbeatRequest(group_id, generation_id, member_id, group_instance_id)
        )

    def leave(self, group_id: str, *members: msg.MemberIdentity) -> msg.LeaveGroupResponse:
        return self.runtime.leave_group(msg.LeaveGroupRequest(group_id, tuple(members)))

    def commit(
        self,
        group_id: str,
        offsets: Mapping[tuple[str, int], int],
        *,
        generation_id: int = msg.NO_GENERATION,
        member_id: str = msg.UNKNOWN_MEMBER_ID,
        group_instance_id: str | None = None,
        retention_time_ms: int = -1,
        metadata: str | None = None,
        leader_epoch: int = -1,
        api_version: int = msg.OFFSET_COMMIT_LATEST_VERSION,
    ) -> msg.OffsetCommitResponse:
        return self.runtime.commit_offsets(
            msg.OffsetCommitRequest(
                group_id=group_id,
                topics=_commit_topics(offsets, metadata, leader_epoch),
                generation_id=generation_id,
                member_id=member_id,
                group_instance_id=group_instance_id,
                retention_time_ms=retention_time_ms,
                api_version=api_version,
            )
        )

    def txn_commit(
        self,
        group_id: str,
        offsets: Mapping[tuple[str, int], int],
        *,
        producer_id: int,
        producer_epoch: int = 0,
        transactional_id: str = "txn",
        generation_id: int = msg.NO_GENERATION,
        member_id: str = msg.UNKNOWN_MEMBER_ID,
    ) -> msg.OffsetCommitResponse:
        return self.runtime.txn_commit_offsets(
            msg.TxnOffsetCommitRequest(
                transactional_id=transactional_id,
                group_id=group_id,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                topics=_commit_topics(offsets, None, -1),
                generation_id=generation_id,
                member_id=member_id,
            )
        )

    def marker(
        self, group_id: str, producer_id: int, *, committed: bool, producer_epoch: int = 0
    ) -> Batch:
        """The transaction coordinator's COMMIT/ABORT marker on ``group_id``'s offsets partition."""
        return self.runtime.write_txn_marker(
            self.runtime.partition_for(group_id), producer_id, producer_epoch, 0, committed
        )

    def form_group(
        self,
        group_id: str,
        clients: Sequence[str],
        *,
        static: bool = False,
        protocols: Sequence[tuple[str, bytes]] | None = None,
        session_timeout_ms: int = 45_000,
        rebalance_timeout_ms: int = 300_000,
    ) -> FormedGroup:
        """Join ``clients`` (dynamic members, or static ones whose instance id is the client id),
        let the join phase complete, and sync with the leader assigning ``b"<client>"`` bytes.

        Returns:
            The generation, the leader and the member id of each client, once Stable.
        """
        joins: dict[str, Pending[msg.JoinGroupResponse]] = {}
        member_ids: dict[str, str] = {}
        for client in clients:
            if static:
                joins[client] = self.join(
                    group_id,
                    group_instance_id=client,
                    client_id=client,
                    protocols=protocols,
                    session_timeout_ms=session_timeout_ms,
                    rebalance_timeout_ms=rebalance_timeout_ms,
                )
            else:
                member_ids[client], joins[client] = self.join_dynamic(
                    group_id,
                    client_id=client,
                    protocols=protocols,
                    session_timeout_ms=session_timeout_ms,
                    rebalance_timeout_ms=rebalance_timeout_ms,
                )
        step = max(self.runtime.config.initial_rebalance_delay_ms, 1)
        while not all(p.done for p in joins.values()):
            self.advance(step)
        responses = {c: p.result() for c, p in joins.items()}
        for c, r in responses.items():
            if r.error is not Errors.NONE:
                raise UnexpectedResponseError(f"join of {c} failed: {r}")
            member_ids[c] = r.member_id
        generation = next(iter(responses.values())).generation_id
        leader = next(iter(responses.values())).leader
        syncs = {
            c: self.sync(group_id, generation, member_ids[c])
            for c in clients
            if member_ids[c] != leader
        }
        leader_client = next(c for c in clients if member_ids[c] == leader)
        syncs[leader_client] = self.sync(
            group_id, generation, leader, {member_ids[c]: c.encode() for c in clients}
        )
        for c, p in syncs.items():
            if p.result().error is not Errors.NONE:
                raise UnexpectedResponseError(f"sync of {c} failed: {p.result()}")
        return FormedGroup(generation, leader, member_ids)

    def fetch(
        self,
        group_id: str,
        partitions: Sequence[tuple[str, int]] | None = None,
        *,
        require_stable: bool = False,
    ) -> msg.OffsetFetchResponse:
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for t, p in partitions:
                by_topic.setdefault(t, []).append(p)
            topics = tuple(msg.OffsetFetchTopic(t, tuple(ps)) for t, ps in by_topic.items())
        return self.runtime.fetch_offsets(msg.OffsetFetchRequest(group_id, topics, require_stable))


def _commit_topics(
    offsets: Mapping[tuple[str, int], int], metadata: str | None, leader_epoch: int
) -> tuple[msg.OffsetCommitTopic, ...]:
    by_topic: dict[str, list[msg.OffsetCommitPartition]] = {}
    for (topic, partition), offset in offsets.items():
        by_topic.setdefault(topic, []).append(
            msg.OffsetCommitPartition(partition, offset, leader_epoch, metadata)
        )
    return tuple(msg.OffsetCommitTopic(t, tuple(ps)) for t, ps in by_topic.items())
