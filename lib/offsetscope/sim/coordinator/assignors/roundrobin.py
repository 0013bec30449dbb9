"""``roundrobin``: Kafka's ``RoundRobinAssignor``.

All partitions of all subscribed topics, topics in name order and partitions ascending, are dealt
one by one around a circle of members sorted in ``MemberInfo`` order (static members first by
``group.instance.id``, then by member id). A member not subscribed to a partition's topic is
skipped, and the circle keeps its position between partitions, so with identical subscriptions
counts differ by at most one.
"""

from __future__ import annotations

from collections.abc import Mapping

from offsetscope.sim.coordinator.assignors.common import (
    member_info_key,
    member_order,
    partitions_per_topic,
)
from offsetscope.sim.coordinator.assignors.model import (
    Assignment,
    AssignmentError,
    ClusterMetadata,
    RebalanceProtocol,
    Subscription,
    TopicPartition,
)
from offsetscope.sim.coordinator.java import java_sort_key


class RoundRobinAssignor:
    """Kafka's ``RoundRobinAssignor`` (protocol name ``roundrobin``, eager)."""

    name = "roundrobin"
    supported_protocols = (RebalanceProtocol.EAGER,)
    version = 0

    def subscription_user_data(
        self, topics: object, owned: tuple[TopicPartition, ...], generation: int
    ) -> bytes | None:
        """Round-robin sends no userData."""
        return None

    def assign(
        self, cluster: ClusterMetadata, subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        """Deal partitions around the sorted members; see the module docstring.

        Args:
            cluster: partition counts.
            subscriptions: member id to subscription, in JoinGroup-response order.

        Returns:
            One assignment per member, in the order of ``subscriptions``.

        Raises:
            AssignmentError: for an empty group (Kafka's ``CircularIterator`` rejects it).
        """
        members = member_order(subscriptions)
        counts = partitions_per_topic(cluster, subscriptions, members)
        circle = sorted(
            members, key=lambda m: member_info_key(m, subscriptions[m].group_instance_id)
        )
        if not circle:
            raise AssignmentError(
                "CircularIterator can only be used on non-empty lists", "IllegalArgumentException"
            )
        topic_sets = {m: frozenset(subscriptions[m].topics) for m in members}
        all_topics = sorted(
            {t for m in members for t in subscriptions[m].topics}, key=java_sort_key
        )
        assignment: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        position = 0
        for topic in all_topics:
            for partition in range(counts.get(topic) or 0):
                while topic not in topic_sets[circle[position]]:
                    position = (position + 1) % len(circle)
                assignment[circle[position]].append(TopicPartition(topic, partition))
                position = (position + 1) % len(circle)
        return {m: Assignment(tuple(p)) for m, p in assignment.items()}
