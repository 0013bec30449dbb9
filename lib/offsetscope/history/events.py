"""Decoded internal-topic records as the history folds consume them.

One event per log record, carrying its coordinates (where and when it was written) and its
decoded content. The same types are produced by the batch reader, by the Spark decode adapter
(decoded rows, converted by :func:`offsetscope.pipelines.events.event_from_decoded`) and by the tests, so the
folds in this package run unchanged in all three.

Why coordinates matter: Kafka does not persist every state change. The record timestamp (the
coordinator's clock at append), the log offset (order within a partition), and the batch's
producer id and transactional flag (transactional offset commits are pending until a marker
of the same producer id) are the only clock and causality the folds have.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from offsetscope.protocol import consumer_protocol as cp
from offsetscope.protocol import errors
from offsetscope.protocol.json_format import uuid_to_kafka
from offsetscope.protocol.records import OFFSETS_TOPIC, TRANSACTION_TOPIC, CoordinatorRecord

# A topic-partition as (topic name, partition).
TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Coordinates:
    """Where a record sits: topic partition and offset, plus its batch's attributes."""

    topic: str
    partition: int
    offset: int
    timestamp: int  # ms; CREATE_TIME = coordinator clock at append
    producer_id: int = -1
    producer_epoch: int = -1
    is_transactional: bool = False


@dataclass(frozen=True, slots=True)
class OffsetCommitEvent:
    """Record types 0/1: a committed offset, or its tombstone (``offset is None``)."""

    at: Coordinates
    group: str
    topic: str
    partition: int
    offset: int | None
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1
    topic_id: str | None = None  # Kafka's URL-safe Base64 text, when the commit carried one
    value_version: int | None = None

    @property
    def is_tombstone(self) -> bool:
        return self.offset is None

    @property
    def is_transactional(self) -> bool:
        """Pending until a COMMIT/ABORT marker of the same producer id in this partition."""
        return self.at.is_transactional


@dataclass(frozen=True, slots=True)
class MemberSnapshot:
    """One member of a classic ``GroupMetadataValue``, with its consumer-protocol blobs decoded.

    ``subscribed_topics``/``assigned`` are ``None`` when the group does not use the consumer
    protocol or the blob could not be parsed (its bytes stay in ``subscription``/``assignment``).
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes
    subscribed_topics: tuple[str, ...] | None = None
    owned_partitions: tuple[TopicPartition, ...] | None = None
    rack_id: str | None = None
    assigned: tuple[TopicPartition, ...] | None = None


@dataclass(frozen=True, slots=True)
class GroupMetadataEvent:
    """Record type 2: a classic group's stored state, or its tombstone (group deleted)."""

    at: Coordinates
    group: str
    tombstone: bool
    protocol_type: str = ""
    generation: int = 0
    protocol: str | None = None
    leader: str | None = None
    current_state_timestamp: int = -1
    members: tuple[MemberSnapshot, ...] = ()
    value_version: int | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroupEvent:
    """KIP-848 / share / streams group records (types 3-24) of ``__consumer_offsets``: key ids
    plus the decoded value.

    ``value`` holds Kafka's JSON field names (``epoch``, ``memberEpoch`` ...); ``None`` for a
    tombstone.
    """

    at: Coordinates
    record_type: int
    group: str
    member_id: str | None
    value: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class ShareStateEvent:
    """``__share_group_state``: one share-partition's snapshot (type 0) or update (type 1), or
    its tombstone (``value`` None). ``value`` holds Kafka's JSON field names."""

    at: Coordinates
    record_type: int
    group: str
    topic_id: str  # Kafka's URL-safe Base64 text
    partition: int
    value: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class TransactionLogEvent:
    """``__transaction_state``: one transition of a transactional id, or its expiry tombstone."""

    at: Coordinates
    transactional_id: str
    tombstone: bool
    producer_id: int = -1
    previous_producer_id: int = -1
    next_producer_id: int = -1
    producer_epoch: int = -1
    timeout_ms: int = 0
    status: int = -1  # TransactionStatus code; see offsetscope.protocol.transaction_log
    partitions: tuple[TopicPartition, ...] | None = None
    last_update_timestamp: int = -1
    start_timestamp: int = -1
    client_transaction_version: int = 0


@dataclass(frozen=True, slots=True)
class ControlEvent:
    """A transaction marker (control record) in a partition; only segment sources see these."""

    at: Coordinates
    control_type: str  # "COMMIT", "ABORT", or "UNKNOWN(<id>)" / a KRaft type name
    coordinator_epoch: int = -1


Event = (
    OffsetCommitEvent
    | GroupMetadataEvent
    | ConsumerGroupEvent
    | ShareStateEvent
    | TransactionLogEvent
    | ControlEvent
)


def _partitions(entries: Any, topic_key: str, parts_key: str) -> tuple[TopicPartition, ...]:
    return tuple((e[topic_key], p) for e in entries for p in e[parts_key])


def member_snapshot(member: Mapping[str, Any], consumer_protocol: bool) -> MemberSnapshot:
    """Build a :class:`MemberSnapshot`, decoding the blobs when the protocol type is consumer."""
    topics = owned = assigned = None
    rack = None
    if consumer_protocol:
        try:
            sub = cp.decode_subscription(member["subscription"], lenient=True)
        except errors.DecodeError:
            sub = None
        if sub is not None:
            topics = tuple(sub.data["topics"])
            owned = _partitions(sub.data.get("ownedPartitions") or (), "topic", "partitions")
            rack = sub.data.get("rackId")
        try:
            asg = cp.decode_assignment(member["assignment"])
        except errors.DecodeError:
            asg = None
            assigned = None
        else:
            # A zero-length blob means "assigned nothing", which is an answer too.
            assigned = (
                ()
                if asg is None
                else _partitions(asg.data["assignedPartitions"], "topic", "partitions")
            )
    return MemberSnapshot(
        member_id=member["memberId"],
        group_instance_id=member.get("groupInstanceId"),
        client_id=member["clientId"],
        client_host=member["clientHost"],
        rebalance_timeout=member.get("rebalanceTimeout", -1),
        session_timeout=member["sessionTimeout"],
        subscription=member["subscription"],
        assignment=member["assignment"],
        subscribed_topics=topics,
        owned_partitions=owned,
        rack_id=rack,
        assigned=assigned,
    )


def event_from_record(at: Coordinates, record: CoordinatorRecord) -> Event:
    """Turn one decoded coordinator record into the event the folds consume."""
    key, value = record.key, record.value
    if record.topic == TRANSACTION_TOPIC:
        if value is None:
            return TransactionLogEvent(at, key["transactionalId"], True)
        parts = value["transactionPartitions"]
        return TransactionLogEvent(
            at,
            key["transactionalId"],
            False,
            producer_id=value["producerId"],
            previous_producer_id=value.get("previousProducerId", -1),
            next_producer_id=value.get("nextProducerId", -1),
            producer_epoch=value["producerEpoch"],
            timeout_ms=value["transactionTimeoutMs"],
            status=value["transactionStatus"],
            partitions=None if parts is None else _partitions(parts, "topic", "partitionIds"),
            last_update_timestamp=value["transactionLastUpdateTimestampMs"],
            start_timestamp=value["transactionStartTimestampMs"],
            client_transaction_version=value.get("clientTransactionVersion", 0),
        )
    if record.topic != OFFSETS_TOPIC:  # __share_group_state
        topic_id = key["topicId"]
        return ShareStateEvent(
            at,
            record.record_type,
            key["groupId"],
            uuid_to_kafka(topic_id) if isinstance(topic_id, uuid.UUID) else str(topic_id),
            int(key["partition"]),
            value,
        )
    if record.record_type in (0, 1):
        if value is None:
            return OffsetCommitEvent(at, key["group"], key["topic"], key["partition"], None)
        topic_id = value.get("topicId")
        return OffsetCommitEvent(
            at,
            key["group"],
            key["topic"],
            key["partition"],
            value["offset"],
            leader_epoch=value.get("leaderEpoch", -1),
            metadata=value["metadata"],
            commit_timestamp=value["commitTimestamp"],
            expire_timestamp=value.get("expireTimestamp", -1),
            topic_id=None if topic_id is None or topic_id.int == 0 else uuid_to_kafka(topic_id),
            value_version=record.value_version,
        )
    if record.record_type == 2:
        if value is None:
            return GroupMetadataEvent(at, key["group"], True)
        consumer = value["protocolType"] == cp.PROTOCOL_TYPE
        return GroupMetadataEvent(
            at,
            key["group"],
            False,
            protocol_type=value["protocolType"],
            generation=value["generation"],
            protocol=value["protocol"],
            leader=value["leader"],
            current_state_timestamp=value.get("currentStateTimestamp", -1),
            members=tuple(member_snapshot(m, consumer) for m in value["members"]),
            value_version=record.value_version,
        )
    return ConsumerGroupEvent(at, record.record_type, key["groupId"], key.get("memberId"), value)
