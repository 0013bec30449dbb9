"""Client-side partition assignors equal to the Java consumer's (Kafka 4.4).

``range``, ``roundrobin``, ``sticky`` and ``cooperative-sticky`` give, for the same cluster
metadata and the same subscriptions in the same JoinGroup-response order, the same assignment
as ``RangeAssignor``, ``RoundRobinAssignor``, ``StickyAssignor`` and
``CooperativeStickyAssignor`` of kafka-clients 4.4.0 on OpenJDK -- the same partitions in the
same order, including the rack-aware variants of KIP-881. The oracle tests in ``tests/jvm`` run
Kafka's own classes on the same inputs.

Usage::

    assignor = assignor_by_name("cooperative-sticky")   # one object per consumer
    subscriptions = {
        member_id: Subscription(topics, assignor.subscription_user_data(topics, owned, gen),
                                owned, gen, rack_id, group_instance_id)
        for ...  # in JoinGroup-response order
    }
    assignments = assignor.assign(ClusterMetadata({"orders": 12}), subscriptions)

The sticky assignors keep, like Kafka's, the highest generation they have seen, so a consumer
should keep its assignor object across rebalances.
"""

from __future__ import annotations

from offsetscope.sim.coordinator.assignors.model import (
    DEFAULT_GENERATION,
    Assignment,
    AssignmentError,
    Assignor,
    ClusterMetadata,
    RebalanceProtocol,
    Subscription,
    TopicPartition,
)
from offsetscope.sim.coordinator.assignors.range import RangeAssignor
from offsetscope.sim.coordinator.assignors.roundrobin import RoundRobinAssignor
from offsetscope.sim.coordinator.assignors.sticky import CooperativeStickyAssignor, StickyAssignor

ASSIGNOR_NAMES = ("range", "roundrobin", "sticky", "cooperative-sticky")
"""Protocol names of the built-in assignors, as sent in JoinGroup."""


def assignor_by_name(name: str) -> Assignor:
    """A new assignor object for a JoinGroup protocol name.

    Args:
        name: ``range``, ``roundrobin``, ``sticky`` or ``cooperative-sticky``.

    Returns:
        A fresh assignor (the sticky ones carry state, so use one per consumer).

    Raises:
        ValueError: for any other name.
    """
    if name == "range":
        return RangeAssignor()
    if name == "roundrobin":
        return RoundRobinAssignor()
    if name == "sticky":
        return StickyAssignor()
    if name == "cooperative-sticky":
        return CooperativeStickyAssignor()
    raise ValueError(f"unknown assignor {name!r}; known: {', '.join(ASSIGNOR_NAMES)}")


__all__ = [
    "ASSIGNOR_NAMES",
    "DEFAULT_GENERATION",
    "Assignment",
    "AssignmentError",
    "Assignor",
    "ClusterMetadata",
    "CooperativeStickyAssignor",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "StickyAssignor",
    "Subscription",
    "TopicPartition",
    "assignor_by_name",
]
