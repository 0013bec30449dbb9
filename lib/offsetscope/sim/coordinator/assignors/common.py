"""Pieces every assignor shares (``AbstractPartitionAssignor`` in the Java client).

``assign`` in Kafka first collects the subscribed topics into a ``HashSet`` (walking the
subscriptions ``HashMap``), keeps those with partition metadata in a ``HashMap`` topic ->
partitions (sorted by partition), runs the assignor and wraps each member's list in an
``Assignment`` without userData. Member ordering for range and round-robin is
``MemberInfo.compareTo``: members with a ``group.instance.id`` first, ordered by it, then the
others by member id (all as Java strings).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from offsetscope.sim.coordinator.assignors.model import (
    ClusterMetadata,
    Subscription,
    TopicPartition,
)
from offsetscope.sim.coordinator.java import (
    JavaHashMap,
    JavaHashSet,
    java_order,
    java_sort_key,
    java_string_hash,
)


def member_order(subscriptions: Mapping[str, Subscription]) -> list[str]:
    """Iteration order of the leader's subscriptions ``HashMap`` (filled in JoinGroup order)."""
    return java_order(subscriptions)


def partitions_per_topic(
    cluster: ClusterMetadata, subscriptions: Mapping[str, Subscription], members: Iterable[str]
) -> JavaHashMap[str, int]:
    """The topic -> partition count map ``AbstractPartitionAssignor.assign`` builds.

    Args:
        cluster: the metadata.
        subscriptions: the group's subscriptions.
        members: member ids in the subscriptions map's iteration order.

    Returns:
        Subscribed topics that have partitions, in Java iteration order.
    """
    all_topics: JavaHashSet[str] = JavaHashSet(java_string_hash)
    for member in members:
        for topic in subscriptions[member].topics:
            all_topics.add(topic)
    out: JavaHashMap[str, int] = JavaHashMap(java_string_hash)
    for topic in all_topics:
        count = cluster.partitions_per_topic.get(topic, 0)
        if count > 0:
            out.put(topic, count)
    return out


def member_info_key(member_id: str, group_instance_id: str | None) -> tuple[int, str]:
    """Sort key equal to ``MemberInfo.compareTo`` (static members first, by instance id)."""
    if group_instance_id is not None:
        return (0, java_sort_key(group_instance_id))
    return (1, java_sort_key(member_id))


def topic_partition_key(tp: TopicPartition) -> tuple[str, int]:
    """Sort key of ``TopicPartitionComparator``: topic (as a Java string), then partition."""
    return (java_sort_key(tp.topic), tp.partition)


def usable_rack(rack: str | None) -> str | None:
    """Kafka ignores empty ``client.rack`` values (``rackId().filter(r -> !r.isEmpty())``)."""
    return rack if rack else None


def use_rack_aware_assignment(
    consumer_racks: Iterable[str],
    partition_racks: set[str],
    racks_per_partition: Iterable[frozenset[str]],
) -> bool:
    """``AbstractPartitionAssignor.useRackAwareAssignment``.

    Rack-aware logic is used when some consumer racks exist, they meet the partitions' racks,
    and not every partition is replicated on all racks (otherwise every choice is rack-local).
    """
    consumer_rack_set = set(consumer_racks)
    if not consumer_rack_set or consumer_rack_set.isdisjoint(partition_racks):
        return False
    return not all(racks == partition_racks for racks in racks_per_partition)
