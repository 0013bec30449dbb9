"""Which schemas a record type selects, per internal topic.

The first int16 of a coordinator key is the *record type* (Kafka ``CoordinatorRecordType``; it was
called "key version" before 4.1, the bytes never changed). It selects both the key and the value
schema. ``in_kafka`` records whether Kafka 4.4 itself still decodes the type: types 9, 18 and 24
exist in older or unreleased logs and are decoded here, but Kafka 4.4 reports them as unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

from offsetscope.protocol import group_coordinator as gc
from offsetscope.protocol import share_state as ss
from offsetscope.protocol import transaction_log as tl
from offsetscope.protocol.records import OFFSETS_TOPIC, TRANSACTION_TOPIC
from offsetscope.protocol.schema import Message

SHARE_STATE_TOPIC = "__share_group_state"
INTERNAL_TOPICS = (OFFSETS_TOPIC, TRANSACTION_TOPIC, SHARE_STATE_TOPIC)


@dataclass(frozen=True, slots=True)
class RecordType:
    """One coordinator record type of one internal topic."""

    topic: str
    id: int
    name: str  # Kafka's CoordinatorRecordType constant
    key: Message
    value: Message
    group_kind: str  # classic | consumer | share | streams | any | transaction | share-state
    in_kafka: bool = True


def _t(
    topic: str, id_: int, name: str, key: Message, value: Message, kind: str, in_kafka: bool = True
) -> RecordType:
    return RecordType(topic, id_, name, key, value, kind, in_kafka)


_O = OFFSETS_TOPIC
RECORD_TYPES: tuple[RecordType, ...] = (
    _t(
        _O,
        0,
        "LEGACY_OFFSET_COMMIT",
        gc.LEGACY_OFFSET_COMMIT_KEY,
        gc.LEGACY_OFFSET_COMMIT_VALUE,
        "any",
    ),
    _t(_O, 1, "OFFSET_COMMIT", gc.OFFSET_COMMIT_KEY, gc.OFFSET_COMMIT_VALUE, "any"),
    _t(_O, 2, "GROUP_METADATA", gc.GROUP_METADATA_KEY, gc.GROUP_METADATA_VALUE, "classic"),
    _t(
        _O,
        3,
        "CONSUMER_GROUP_METADATA",
        gc.CONSUMER_GROUP_METADATA_KEY,
        gc.CONSUMER_GROUP_METADATA_VALUE,
        "consumer",
    ),
    _t(
        _O,
        4,
        "CONSUMER_GROUP_PARTITION_METADATA",
        gc.CONSUMER_GROUP_PARTITION_METADATA_KEY,
        gc.CONSUMER_GROUP_PARTITION_METADATA_VALUE,
        "consumer",
    ),
    _t(
        _O,
        5,
        "CONSUMER_GROUP_MEMBER_METADATA",
        gc.CONSUMER_GROUP_MEMBER_METADATA_KEY,
        gc.CONSUMER_GROUP_MEMBER_METADATA_VALUE,
        "consumer",
    ),
    _t(
        _O,
        6,
        "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA",
        gc.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
        gc.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
        "consumer",
    ),
    _t(
        _O,
        7,
        "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER",
        gc.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
        gc.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
        "consumer",
    ),
    _t(
        _O,
        8,
        "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT",
        gc.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
        gc.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        "consumer",
    ),
    _t(
        _O,
        9,
        "SHARE_GROUP_PARTITION_METADATA",
        gc.SHARE_GROUP_PARTITION_METADATA_KEY,
        gc.SHARE_GROUP_PARTITION_METADATA_VALUE,
        "share",
        in_kafka=False,
    ),
    _t(
        _O,
        10,
        "SHARE_GROUP_MEMBER_METADATA",
        gc.SHARE_GROUP_MEMBER_METADATA_KEY,
        gc.SHARE_GROUP_MEMBER_METADATA_VALUE,
        "share",
    ),
    _t(
        _O,
        11,
        "SHARE_GROUP_METADATA",
        gc.SHARE_GROUP_METADATA_KEY,
        gc.SHARE_GROUP_METADATA_VALUE,
        "share",
    ),
    _t(
        _O,
        12,
        "SHARE_GROUP_TARGET_ASSIGNMENT_METADATA",
        gc.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
        gc.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
        "share",
    ),
    _t(
        _O,
        13,
        "SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER",
        gc.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
        gc.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
        "share",
    ),
    _t(
        _O,
        14,
        "SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT",
        gc.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
        gc.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        "share",
    ),
    _t(
        _O,
        15,
        "SHARE_GROUP_STATE_PARTITION_METADATA",
        gc.SHARE_GROUP_STATE_PARTITION_METADATA_KEY,
        gc.SHARE_GROUP_STATE_PARTITION_METADATA_VALUE,
        "share",
    ),
    _t(
        _O,
        16,
        "CONSUMER_GROUP_REGULAR_EXPRESSION",
        gc.CONSUMER_GROUP_REGULAR_EXPRESSION_KEY,
        gc.CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE,
        "consumer",
    ),
    _t(
        _O,
        17,
        "STREAMS_GROUP_METADATA",
        gc.STREAMS_GROUP_METADATA_KEY,
        gc.STREAMS_GROUP_METADATA_VALUE,
        "streams",
    ),
    _t(
        _O,
        18,
        "STREAMS_GROUP_PARTITION_METADATA",
        gc.STREAMS_GROUP_PARTITION_METADATA_KEY,
        gc.STREAMS_GROUP_PARTITION_METADATA_VALUE,
        "streams",
        in_kafka=False,
    ),
    _t(
        _O,
        19,
        "STREAMS_GROUP_MEMBER_METADATA",
        gc.STREAMS_GROUP_MEMBER_METADATA_KEY,
        gc.STREAMS_GROUP_MEMBER_METADATA_VALUE,
        "streams",
    ),
    _t(
        _O,
        20,
        "STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA",
        gc.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
        gc.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
        "streams",
    ),
    _t(
        _O,
        21,
        "STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER",
        gc.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
        gc.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
        "streams",
    ),
    _t(
        _O,
        22,
        "STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT",
        gc.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
        gc.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        "streams",
    ),
    _t(
        _O,
        23,
        "STREAMS_GROUP_TOPOLOGY",
        gc.STREAMS_GROUP_TOPOLOGY_KEY,
        gc.STREAMS_GROUP_TOPOLOGY_VALUE,
        "streams",
    ),
    _t(
        _O,
        24,
        "STREAMS_GROUP_TARGET_ASSIGNMENT_RESOLVED_TOPIC_IDS",
        gc.STREAMS_GROUP_TARGET_ASSIGNMENT_RESOLVED_TOPIC_IDS_KEY,
        gc.STREAMS_GROUP_TARGET_ASSIGNMENT_RESOLVED_TOPIC_IDS_VALUE,
        "streams",
        in_kafka=False,
    ),
    _t(
        TRANSACTION_TOPIC,
        0,
        "TRANSACTION_LOG",
        tl.TRANSACTION_LOG_KEY,
        tl.TRANSACTION_LOG_VALUE,
        "transaction",
    ),
    _t(
        SHARE_STATE_TOPIC,
        0,
        "SHARE_SNAPSHOT",
        ss.SHARE_SNAPSHOT_KEY,
        ss.SHARE_SNAPSHOT_VALUE,
        "share-state",
    ),
    _t(
        SHARE_STATE_TOPIC,
        1,
        "SHARE_UPDATE",
        ss.SHARE_UPDATE_KEY,
        ss.SHARE_UPDATE_VALUE,
        "share-state",
    ),
)

BY_TOPIC: dict[str, dict[int, RecordType]] = {topic: {} for topic in INTERNAL_TOPICS}
for _rt in RECORD_TYPES:
    BY_TOPIC[_rt.topic][_rt.id] = _rt
BY_KEY_SCHEMA: dict[tuple[str, str], RecordType] = {(r.topic, r.key.name): r for r in RECORD_TYPES}


def record_type(topic: str, type_id: int) -> RecordType | None:
    """The record type ``type_id`` of internal topic ``topic``, or ``None`` if unknown."""
    try:
        return BY_TOPIC[topic].get(type_id)
    except KeyError:
        raise ValueError(
            f"{topic!r} is not an internal topic ({', '.join(INTERNAL_TOPICS)})"
        ) from None
