"""``range``: Kafka's ``RangeAssignor``, including the rack-aware variant of KIP-881.

Per topic, the members subscribed to it are sorted (``MemberInfo`` order: static members by
``group.instance.id`` first, then the rest by member id) and the partitions ``0..n-1`` are cut
into consecutive ranges: each member gets ``n // m`` partitions and the first ``n % m`` members
one more. Topics are independent, so topics with the same partition count and the same members
are co-partitioned: partition ``p`` of each goes to the same member.

Each member's list holds its ranges topic after topic, topics in the iteration order of the
leader's topic ``HashMap``. Rack-aware assignment (KIP-881) runs when members and replicas carry
racks and some partition is not on every rack:

1. members and topics are grouped by (same members with the same racks, same partition count);
   a group of several topics is assigned partition index by partition index to the first member
   (in member order) whose rack holds that partition of *every* topic in the group and that still
   has quota, preserving co-partitioning; a group of one topic gets ranges restricted to
   rack-local partitions, only if that topic needs rack awareness;
2. what is left is assigned by the plain range logic above, within the same per-topic quotas;
3. every member's list is then sorted by topic and partition.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from offsetscope.sim.coordinator.assignors.common import (
    member_info_key,
    member_order,
    partitions_per_topic,
    topic_partition_key,
    usable_rack,
    use_rack_aware_assignment,
)
from offsetscope.sim.coordinator.assignors.model import (
    Assignment,
    ClusterMetadata,
    RebalanceProtocol,
    Subscription,
    TopicPartition,
)


class _TopicState:
    """``RangeAssignor.TopicAssignmentState``: quotas and leftovers of one topic."""

    __slots__ = (
        "consumers",
        "extra_left",
        "needs_rack_aware",
        "num_assigned",
        "partition_racks",
        "per_consumer",
        "topic",
        "unassigned",
    )

    def __init__(
        self,
        topic: str,
        count: int,
        members: list[tuple[str, str | None]],
        consumer_racks: Mapping[str, str],
        cluster: ClusterMetadata,
    ) -> None:
        self.topic = topic
        # ordered member -> rack; a member listed twice (duplicate topic) counts once
        self.consumers: dict[str, str | None] = {}
        for member_id, _instance in sorted(members, key=lambda m: member_info_key(*m)):
            self.consumers.setdefault(member_id, consumer_racks.get(member_id))
        # insertion-ordered set of unassigned partitions (Java: LinkedHashSet)
        self.unassigned: dict[TopicPartition, None] = {
            TopicPartition(topic, p): None for p in range(count)
        }
        self.num_assigned = dict.fromkeys(self.consumers, 0)
        n = len(self.consumers)
        self.per_consumer = count // n if n else 0
        self.extra_left = count % n if n else 0

        member_racks = {r for r in (consumer_racks.get(m) for m, _ in members) if r is not None}
        self.partition_racks: dict[TopicPartition, frozenset[str]] = {}
        all_partition_racks: set[str] = set()
        if member_racks:
            for tp in self.unassigned:
                racks = frozenset(
                    r for r in cluster.partition_racks(topic, tp.partition) if r is not None
                )
                self.partition_racks[tp] = racks
                all_partition_racks |= racks
        self.needs_rack_aware = use_rack_aware_assignment(
            member_racks, all_partition_racks, self.partition_racks.values()
        )

    def racks_match(self, consumer: str, tp: TopicPartition) -> bool:
        rack = self.consumers[consumer]
        if rack is None:
            return True
        replica_racks = self.partition_racks.get(tp)
        return replica_racks is not None and rack in replica_racks

    def max_assignable(self, consumer: str) -> int:
        quota = self.per_consumer + (1 if self.extra_left > 0 else 0)
        return max(0, quota - self.num_assigned[consumer])

    def on_assigned(self, consumer: str, partitions: list[TopicPartition]) -> None:
        self.num_assigned[consumer] += len(partitions)
        if self.num_assigned[consumer] > self.per_consumer:
            self.extra_left -= 1
        for tp in partitions:
            self.unassigned.pop(tp, None)


def _assign(
    consumer: str,
    partitions: list[TopicPartition],
    state: _TopicState,
    assignment: dict[str, list[TopicPartition]],
) -> None:
    assignment[consumer].extend(partitions)
    state.on_assigned(consumer, partitions)


def _assign_ranges(
    state: _TopicState,
    may_assign: Callable[[str, TopicPartition], bool],
    assignment: dict[str, list[TopicPartition]],
) -> None:
    for consumer in state.consumers:
        if not state.unassigned:
            break
        limit = state.max_assignable(consumer)
        chosen: list[TopicPartition] = []
        for tp in state.unassigned:
            if len(chosen) >= limit:
                break
            if may_assign(consumer, tp):
                chosen.append(tp)
        if chosen:
            _assign(consumer, chosen, state, assignment)


def _assign_co_partitioned(
    consumers: dict[str, str | None],
    num_partitions: int,
    states: list[_TopicState],
    assignment: dict[str, list[TopicPartition]],
) -> None:
    remaining = list(consumers)
    for p in range(num_partitions):
        match = next(
            (
                c
                for c in remaining
                if all(
                    s.racks_match(c, TopicPartition(s.topic, p)) and s.max_assignable(c) > 0
                    for s in states
                )
            ),
            None,
        )
        if match is None:
            continue
        for s in states:
            _assign(match, [TopicPartition(s.topic, p)], s, assignment)
        if not any(s.max_assignable(match) > 0 for s in states):
            remaining.remove(match)
            if not remaining:
                break


def _assign_with_rack_matching(
    states: list[_TopicState], assignment: dict[str, list[TopicPartition]]
) -> None:
    # Java groups with HashMaps here; the group order does not matter because groups hold
    # disjoint topics and every member's list is sorted afterwards.
    groups: dict[tuple[frozenset[tuple[str, str | None]], int], list[_TopicState]] = {}
    for s in states:
        key = (frozenset(s.consumers.items()), len(s.partition_racks))
        groups.setdefault(key, []).append(s)
    for (_, num_partitions), group in groups.items():
        if len(group) > 1:
            _assign_co_partitioned(group[0].consumers, num_partitions, group, assignment)
        elif group[0].needs_rack_aware:
            _assign_ranges(group[0], group[0].racks_match, assignment)


class RangeAssignor:
    """Kafka's ``RangeAssignor`` (protocol name ``range``, eager)."""

    name = "range"
    supported_protocols = (RebalanceProtocol.EAGER,)
    version = 0

    def subscription_user_data(
        self, topics: object, owned: tuple[TopicPartition, ...], generation: int
    ) -> bytes | None:
        """Range sends no userData."""
        return None

    def assign(
        self, cluster: ClusterMetadata, subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        """Assign partitions in ranges; see the module docstring.

        Args:
            cluster: partition counts and replica racks.
            subscriptions: member id to subscription, in JoinGroup-response order.

        Returns:
            One assignment per member, in the order of ``subscriptions``.
        """
        members = member_order(subscriptions)
        topics = partitions_per_topic(cluster, subscriptions, members)
        members_per_topic: dict[str, list[tuple[str, str | None]]] = {}
        for member in members:
            sub = subscriptions[member]
            for topic in sub.topics:
                members_per_topic.setdefault(topic, []).append((member, sub.group_instance_id))
        consumer_racks = {
            m: rack for m in members if (rack := usable_rack(subscriptions[m].rack_id)) is not None
        }
        states = [
            _TopicState(topic, count, members_per_topic.get(topic, []), consumer_racks, cluster)
            for topic, count in topics.items()
        ]
        assignment: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        rack_aware = any(s.needs_rack_aware for s in states)
        if rack_aware:
            _assign_with_rack_matching(states, assignment)
        for s in states:
            _assign_ranges(s, lambda _c, _tp: True, assignment)
        if rack_aware:
            for partitions in assignment.values():
                partitions.sort(key=topic_partition_key)
        return {m: Assignment(tuple(p)) for m, p in assignment.items()}
