"""Types shared by the client-side partition assignors.

They mirror ``org.apache.kafka.clients.consumer.ConsumerPartitionAssignor`` (Kafka 4.4): what one
member sent in its JoinGroup metadata for the selected protocol (``Subscription``, the decoded
``ConsumerProtocolSubscription`` v0-v3 of ``docs/formats.md`` section 4.1), what the leader
hands back through SyncGroup (``Assignment``, the decoded ``ConsumerProtocolAssignment``), the
cluster metadata the leader sees (``ClusterMetadata``: partition counts and, for the rack-aware
variants of KIP-881, the rack of every replica) and the rebalance protocols of KIP-429.

Member ids, topics and racks are plain ``str``; where Kafka compares or hashes them it does so as
Java strings (UTF-16), which ``offsetscope.sim.coordinator.java`` reproduces.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Protocol

DEFAULT_GENERATION = -1
"""``generationId`` of a member that has no generation (ConsumerProtocolSubscription default)."""


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    """One partition of one topic (``org.apache.kafka.common.TopicPartition``)."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class Subscription:
    """What one member sent in its JoinGroup metadata for the selected protocol.

    Attributes:
        topics: subscribed topics, in the order they were serialized.
        user_data: the assignor's opaque bytes (``None`` when the member sent null).
        owned_partitions: partitions the member owns (v1+, cooperative protocol).
        generation_id: the member's generation (v2+); negative means "none", as in Java.
        rack_id: the member's ``client.rack`` (v3+), ``None`` when not set.
        group_instance_id: the static member id, from the JoinGroup response (not the blob).
    """

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = DEFAULT_GENERATION
    rack_id: str | None = None
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class Assignment:
    """What the leader assigns to one member (``ConsumerPartitionAssignor.Assignment``)."""

    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None = None


class RebalanceProtocol(Enum):
    """KIP-429 rebalance protocols; the value is Kafka's protocol id byte."""

    EAGER = 0
    """Every member revokes everything before joining; the assignment may reshuffle freely."""
    COOPERATIVE = 1
    """Members keep what they own; a partition changing owner is first revoked, then assigned
    in a follow-up rebalance."""


def _freeze_racks(
    racks: Mapping[str, Sequence[Sequence[str | None]]],
) -> Mapping[str, tuple[tuple[str | None, ...], ...]]:
    return MappingProxyType({t: tuple(tuple(r) for r in per) for t, per in racks.items()})


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    """The cluster metadata the leader assigns from.

    Attributes:
        partitions_per_topic: partition count of each known topic; partitions are ``0..n-1``.
            Topics that are subscribed but missing here (or have 0 partitions) are skipped,
            as Kafka skips topics without metadata.
        replica_racks: optional, per topic, per partition, the rack of each replica broker
            (``None`` for a broker without ``broker.rack``). Topics missing here have replicas
            without racks. Only the rack-aware logic of KIP-881 reads it.
    """

    partitions_per_topic: Mapping[str, int]
    # any sequences are accepted; they are stored as tuples in a read-only mapping
    replica_racks: Mapping[str, Sequence[Sequence[str | None]]] = field(
        default_factory=lambda: MappingProxyType({})
    )

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "partitions_per_topic", MappingProxyType(dict(self.partitions_per_topic))
        )
        object.__setattr__(self, "replica_racks", _freeze_racks(self.replica_racks))
        for topic, per_partition in self.replica_racks.items():
            count = self.partitions_per_topic.get(topic, 0)
            if len(per_partition) != count:
                raise ValueError(
                    f"replica_racks[{topic!r}] has {len(per_partition)} entries for {count} "
                    "partitions"
                )

    def partition_racks(self, topic: str, partition: int) -> tuple[str | None, ...]:
        """Racks of the replicas of one partition (empty when no racks are known)."""
        per_partition = self.replica_racks.get(topic)
        return () if per_partition is None else tuple(per_partition[partition])


class AssignmentError(RuntimeError):
    """Kafka's assignor throws for this input; ``java_exception`` names what it throws."""

    def __init__(self, message: str, java_exception: str = "IllegalStateException") -> None:
        super().__init__(message)
        self.java_exception = java_exception


class Assignor(Protocol):
    """A client-side partition assignor (``ConsumerPartitionAssignor``)."""

    @property
    def name(self) -> str:
        """The protocol name sent in JoinGroup (``partition.assignment.strategy`` name)."""
        ...

    @property
    def supported_protocols(self) -> tuple[RebalanceProtocol, ...]:
        """Rebalance protocols this assignor supports, preferred first."""
        ...

    @property
    def version(self) -> int:
        """Kafka's ``version()`` of the assignor (0 for every built-in one)."""
        ...

    def subscription_user_data(
        self, topics: Sequence[str], owned: tuple[TopicPartition, ...], generation: int
    ) -> bytes | None:
        """The userData this member puts in its subscription.

        Args:
            topics: the member's subscribed topics.
            owned: the partitions of the member's last completed assignment.
            generation: the generation of that assignment, ``-1`` if it never had one.

        Returns:
            The bytes, or ``None`` when Kafka sends a null userData.
        """
        ...

    def assign(
        self, cluster: ClusterMetadata, subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        """Compute the group assignment, as the leader does after JoinGroup.

        Args:
            cluster: partition counts (and replica racks) the leader knows.
            subscriptions: member id to subscription, in JoinGroup-response member order
                (the order the Java leader inserts them into its ``HashMap``).

        Returns:
            One assignment per member, in the order of ``subscriptions``.

        Raises:
            AssignmentError: where Kafka's assignor throws for the same input.
        """
        ...
