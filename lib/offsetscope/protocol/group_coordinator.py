"""``__consumer_offsets`` record schemas: every key and value the group coordinator writes.

Mirrors Kafka 4.4's ``group-coordinator/src/main/resources/common/message/*.json`` (field names,
types, versions, nullability, tags and defaults), plus the record types Kafka 4.4 no longer knows
but that exist in older logs or unreleased builds (see :data:`RECORD_TYPES`).

Framing (``CoordinatorRecordSerde``)::

    key   = int16 record_type | key fields   (non-flexible, key version 0)
    value = int16 version     | value fields (tombstone = null value)

    type 1 OffsetCommitKey   00 01 | 00 02 "g1" | 00 01 "t" | 00 00 00 00
    value OffsetCommitValue  00 03 | offset int64 | leaderEpoch int32 (v3+) | metadata string |
                                     commitTimestamp int64 | expireTimestamp int64 (v1 only) |
                                     [v4: tagged section; tag 0 = topicId uuid]
    type 2 GroupMetadataKey  00 02 | group string
    value GroupMetadataValue 00 03 | protocolType | generation int32 | protocol? | leader? |
                                     currentStateTimestamp int64 (v2+) | members[] {memberId,
                                     groupInstanceId? (v3+), clientId, clientHost,
                                     rebalanceTimeout int32 (v1+), sessionTimeout int32,
                                     subscription bytes, assignment bytes}

``OffsetCommitValue`` v4, ``GroupMetadataValue`` v4 and every KIP-848 / share / streams value
(version 0) are *flexible*: compact lengths and a tagged section after every struct.
"""

from __future__ import annotations

from offsetscope.protocol.schema import NULL, Message
from offsetscope.protocol.schema import Field as F

# ------------------------------------------------------------------ types 0, 1: offset commits

OFFSET_COMMIT_KEY = Message(
    "OffsetCommitKey",
    valid="0",
    flexible="none",
    fields=(
        F("group", "string", "0", about="The group id."),
        F("topic", "string", "0", about="The topic name."),
        F("partition", "int32", "0"),
    ),
)
# Written only by Kafka 0.8.2 (record type 0); Kafka 4.4 pairs it with a v0-only value.
LEGACY_OFFSET_COMMIT_KEY = Message(
    "LegacyOffsetCommitKey", valid="0", flexible="none", fields=OFFSET_COMMIT_KEY.fields
)
LEGACY_OFFSET_COMMIT_VALUE = Message(
    "LegacyOffsetCommitValue",
    valid="0",
    flexible="none",
    fields=(
        F("offset", "int64", "0"),
        F("metadata", "string", "0"),
        F("commitTimestamp", "int64", "0"),
    ),
)
OFFSET_COMMIT_VALUE = Message(
    "OffsetCommitValue",
    valid="0-4",
    # Version 4 is the first flexible version (KIP-915: only tagged fields are added from now on).
    flexible="4+",
    fields=(
        F("offset", "int64", "0+"),
        F("leaderEpoch", "int32", "3+", default=-1),
        F("metadata", "string", "0+"),
        F("commitTimestamp", "int64", "0+"),
        # Only version 1 carries an explicit expiry (commits that set retention_time_ms).
        F("expireTimestamp", "int64", "1", default=-1),
        # Written only when the commit carried a topic id (OffsetCommit v10+, KAFKA-19141).
        F("topicId", "uuid", "4+", tag=0, tagged="4+"),
    ),
)

# ------------------------------------------------------------------ type 2: classic group metadata

MEMBER_METADATA = (
    F("memberId", "string", "0+"),
    F("groupInstanceId", "string", "3+", nullable="3+", default=NULL),
    F("clientId", "string", "0+"),
    F("clientHost", "string", "0+"),
    F("rebalanceTimeout", "int32", "1+", default=-1),
    F("sessionTimeout", "int32", "0+"),
    # The member's metadata for the selected protocol, and the leader's assignment (may be empty).
    F("subscription", "bytes", "0+"),
    F("assignment", "bytes", "0+"),
)
GROUP_METADATA_KEY = Message(
    "GroupMetadataKey", valid="0", flexible="none", fields=(F("group", "string", "0"),)
)
GROUP_METADATA_VALUE = Message(
    "GroupMetadataValue",
    valid="0-4",
    flexible="4+",
    fields=(
        F("protocolType", "string", "0+"),
        F("generation", "int32", "0+"),
        F("protocol", "string", "0+", nullable="0+"),
        F("leader", "string", "0+", nullable="0+"),
        F("currentStateTimestamp", "int64", "2+", default=-1),
        F("members", "[]MemberMetadata", "0+", fields=MEMBER_METADATA),
    ),
)

# ------------------------------------------------------------------ KIP-848 consumer groups (3-8, 16)


def _group_key(name: str) -> Message:
    return Message(name, valid="0", flexible="none", fields=(F("GroupId", "string", "0"),))


def _member_key(name: str) -> Message:
    return Message(
        name,
        valid="0",
        flexible="none",
        fields=(F("GroupId", "string", "0"), F("MemberId", "string", "0")),
    )


def _value(name: str, *fields: F) -> Message:
    # Every KIP-848, share and streams value has exactly one version, 0, and it is flexible.
    return Message(name, valid="0", flexible="0+", fields=fields)


def _tagged(name: str, typ: str, tag: int, default: object = None, **kw: object) -> F:
    return F(name, typ, "0+", tag=tag, tagged="0+", default=default, **kw)  # type: ignore[arg-type]


TOPIC_PARTITIONS = (
    F("TopicId", "uuid", "0+"),
    F("Partitions", "[]int32", "0+"),
)
TOPIC_PARTITIONS_WITH_EPOCHS = (
    *TOPIC_PARTITIONS,
    # KIP-1251 (4.3+): the assignment epoch of each partition, same length as Partitions.
    _tagged("AssignmentEpochs", "[]int32", 0, nullable="0+"),
)
PARTITION_METADATA_TOPICS = (
    F("TopicId", "uuid", "0+"),
    F("TopicName", "string", "0+"),
    F("NumPartitions", "int32", "0+"),
    F(
        "PartitionMetadata",
        "[]PartitionMetadata",
        "0+",
        fields=(F("Partition", "int32", "0+"), F("Racks", "[]string", "0+")),
    ),
)

CONSUMER_GROUP_METADATA_KEY = _group_key("ConsumerGroupMetadataKey")
CONSUMER_GROUP_METADATA_VALUE = _value(
    "ConsumerGroupMetadataValue",
    F("Epoch", "int32", "0+"),
    # KIP-1101 (4.1+): hash of the subscribed topics' metadata.
    _tagged("MetadataHash", "int64", 0, default=0),
)
CONSUMER_GROUP_PARTITION_METADATA_KEY = _group_key("ConsumerGroupPartitionMetadataKey")
CONSUMER_GROUP_PARTITION_METADATA_VALUE = _value(
    "ConsumerGroupPartitionMetadataValue",
    F("Topics", "[]TopicMetadata", "0+", fields=PARTITION_METADATA_TOPICS),
)
CONSUMER_GROUP_MEMBER_METADATA_KEY = _member_key("ConsumerGroupMemberMetadataKey")
CONSUMER_GROUP_MEMBER_METADATA_VALUE = _value(
    "ConsumerGroupMemberMetadataValue",
    F("InstanceId", "string", "0+", nullable="0+"),
    F("RackId", "string", "0+", nullable="0+"),
    F("ClientId", "string", "0+"),
    F("ClientHost", "string", "0+"),
    F("SubscribedTopicNames", "[]string", "0+"),
    F("SubscribedTopicRegex", "string", "0+", nullable="0+"),
    F("RebalanceTimeoutMs", "int32", "0+", default=-1),
    F("ServerAssignor", "string", "0+", nullable="0+"),
    # Members that joined through the classic JoinGroup API; Metadata is a version-prefixed
    # ConsumerProtocolSubscription.
    _tagged(
        "ClassicMemberMetadata",
        "ClassicMemberMetadata",
        0,
        nullable="0+",
        fields=(
            F("SessionTimeoutMs", "int32", "0+"),
            F(
                "SupportedProtocols",
                "[]ClassicProtocol",
                "0+",
                fields=(F("Name", "string", "0+"), F("Metadata", "bytes", "0+")),
            ),
        ),
    ),
)
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = _group_key(
    "ConsumerGroupTargetAssignmentMetadataKey"
)
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = _value(
    "ConsumerGroupTargetAssignmentMetadataValue",
    F("AssignmentEpoch", "int32", "0+"),
    # KIP-1263 (4.3+): when the assignment computation finished.
    _tagged("AssignmentTimestamp", "int64", 0, default=0),
)
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = _member_key("ConsumerGroupTargetAssignmentMemberKey")
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = _value(
    "ConsumerGroupTargetAssignmentMemberValue",
    F("TopicPartitions", "[]TopicPartition", "0+", fields=TOPIC_PARTITIONS),
)
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = _member_key(
    "ConsumerGroupCurrentMemberAssignmentKey"
)
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = _value(
    "ConsumerGroupCurrentMemberAssignmentValue",
    F("MemberEpoch", "int32", "0+"),
    F("PreviousMemberEpoch", "int32", "0+"),
    # MemberState: 0 STABLE, 1 UNREVOKED_PARTITIONS, 2 UNRELEASED_PARTITIONS, 127 UNKNOWN.
    F("State", "int8", "0+"),
    F("AssignedPartitions", "[]TopicPartitions", "0+", fields=TOPIC_PARTITIONS_WITH_EPOCHS),
    F(
        "PartitionsPendingRevocation",
        "[]TopicPartitions",
        "0+",
        fields=TOPIC_PARTITIONS_WITH_EPOCHS,
    ),
)
CONSUMER_GROUP_REGULAR_EXPRESSION_KEY = Message(
    "ConsumerGroupRegularExpressionKey",
    valid="0",
    flexible="none",
    fields=(F("GroupId", "string", "0"), F("RegularExpression", "string", "0")),
)
CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = _value(
    "ConsumerGroupRegularExpressionValue",
    F("Topics", "[]string", "0+"),
    F("Version", "int64", "0+"),
    F("Timestamp", "int64", "0+"),
)

# ------------------------------------------------------------------ share groups (KIP-932): 9-15

SHARE_GROUP_PARTITION_METADATA_KEY = _group_key("ShareGroupPartitionMetadataKey")
# Written by the 4.0 early access only; removed in 4.1 (an unknown type for Kafka 4.4).
SHARE_GROUP_PARTITION_METADATA_VALUE = _value(
    "ShareGroupPartitionMetadataValue",
    F("Topics", "[]TopicMetadata", "0+", fields=PARTITION_METADATA_TOPICS),
)
SHARE_GROUP_MEMBER_METADATA_KEY = _member_key("ShareGroupMemberMetadataKey")
SHARE_GROUP_MEMBER_METADATA_VALUE = _value(
    "ShareGroupMemberMetadataValue",
    F("RackId", "string", "0+", nullable="0+"),
    F("ClientId", "string", "0+"),
    F("ClientHost", "string", "0+"),
    F("SubscribedTopicNames", "[]string", "0+"),
)
SHARE_GROUP_METADATA_KEY = _group_key("ShareGroupMetadataKey")
SHARE_GROUP_METADATA_VALUE = _value(
    "ShareGroupMetadataValue",
    F("Epoch", "int32", "0+"),
    # A regular field here (tagged in the consumer-group record).
    F("MetadataHash", "int64", "0+"),
)
SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = _group_key("ShareGroupTargetAssignmentMetadataKey")
SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = _value(
    "ShareGroupTargetAssignmentMetadataValue",
    F("AssignmentEpoch", "int32", "0+"),
    _tagged("AssignmentTimestamp", "int64", 0, default=0),
)
SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = _member_key("ShareGroupTargetAssignmentMemberKey")
SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = _value(
    "ShareGroupTargetAssignmentMemberValue",
    F("TopicPartitions", "[]TopicPartition", "0+", fields=TOPIC_PARTITIONS),
)
SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = _member_key("ShareGroupCurrentMemberAssignmentKey")
SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = _value(
    "ShareGroupCurrentMemberAssignmentValue",
    F("MemberEpoch", "int32", "0+"),
    F("PreviousMemberEpoch", "int32", "0+"),
    F("State", "int8", "0+"),
    F("AssignedPartitions", "[]TopicPartitions", "0+", fields=TOPIC_PARTITIONS),
)
_TOPIC_PARTITIONS_INFO = (
    F("TopicId", "uuid", "0+"),
    F("TopicName", "string", "0+"),
    F("Partitions", "[]int32", "0+"),
)
SHARE_GROUP_STATE_PARTITION_METADATA_KEY = _group_key("ShareGroupStatePartitionMetadataKey")
SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = _value(
    "ShareGroupStatePartitionMetadataValue",
    F("InitializingTopics", "[]TopicPartitionsInfo", "0+", fields=_TOPIC_PARTITIONS_INFO),
    F("InitializedTopics", "[]TopicPartitionsInfo", "0+", fields=_TOPIC_PARTITIONS_INFO),
    F(
        "DeletingTopics",
        "[]TopicInfo",
        "0+",
        fields=(F("TopicId", "uuid", "0+"), F("TopicName", "string", "0+")),
    ),
)

# ------------------------------------------------------------------ streams groups (KIP-1071): 17-24

_KEY_VALUE = (F("Key", "string", "0+"), F("Value", "string", "0+"))
_TASK_IDS = (F("SubtopologyId", "string", "0+"), F("Partitions", "[]int32", "0+"))
_TASK_IDS_WITH_EPOCHS = (*_TASK_IDS, _tagged("AssignmentEpochs", "[]int32", 0, nullable="0+"))

STREAMS_GROUP_METADATA_KEY = _group_key("StreamsGroupMetadataKey")
STREAMS_GROUP_METADATA_VALUE = _value(
    "StreamsGroupMetadataValue",
    F("Epoch", "int32", "0+"),
    F("MetadataHash", "int64", "0+"),
    _tagged("ValidatedTopologyEpoch", "int32", 0, default=-1),
    _tagged(
        "LastAssignmentConfigs",
        "[]LastAssignmentConfig",
        1,
        nullable="0+",
        fields=_KEY_VALUE,
    ),
    # -2 means "uncertain" (4.4).
    _tagged("StoredDescriptionTopologyEpoch", "int32", 2, default=-1),
    _tagged("FailedDescriptionTopologyEpoch", "int32", 3, default=-1),
)
# Only in trunk builds between Dec 2024 and Jun 2025; never in a release.
STREAMS_GROUP_PARTITION_METADATA_KEY = _group_key("StreamsGroupPartitionMetadataKey")
STREAMS_GROUP_PARTITION_METADATA_VALUE = _value(
    "StreamsGroupPartitionMetadataValue",
    F("Topics", "[]TopicMetadata", "0+", fields=PARTITION_METADATA_TOPICS),
)
STREAMS_GROUP_MEMBER_METADATA_KEY = _member_key("StreamsGroupMemberMetadataKey")
STREAMS_GROUP_MEMBER_METADATA_VALUE = _value(
    "StreamsGroupMemberMetadataValue",
    F("InstanceId", "string", "0+", nullable="0+"),
    F("RackId", "string", "0+", nullable="0+"),
    F("ClientId", "string", "0+"),
    F("ClientHost", "string", "0+"),
    F("RebalanceTimeoutMs", "int32", "0+", default=-1),
    F("TopologyEpoch", "int32", "0+"),
    F("ProcessId", "string", "0+"),
    # A non-tagged nullable struct: int8 marker -1 (null) or 1, then the struct.
    F(
        "UserEndpoint",
        "Endpoint",
        "0+",
        nullable="0+",
        default=NULL,
        fields=(F("Host", "string", "0+"), F("Port", "uint16", "0+")),
    ),
    F("ClientTags", "[]KeyValue", "0+", fields=_KEY_VALUE),
)
STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = _group_key("StreamsGroupTargetAssignmentMetadataKey")
STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = _value(
    "StreamsGroupTargetAssignmentMetadataValue",
    F("AssignmentEpoch", "int32", "0+"),
    _tagged("AssignmentTimestamp", "int64", 0, default=0),
)
STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = _member_key("StreamsGroupTargetAssignmentMemberKey")
STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = _value(
    "StreamsGroupTargetAssignmentMemberValue",
    F("ActiveTasks", "[]TaskIds", "0+", fields=_TASK_IDS),
    F("StandbyTasks", "[]TaskIds", "0+", fields=_TASK_IDS),
    F("WarmupTasks", "[]TaskIds", "0+", fields=_TASK_IDS),
)
STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = _member_key("StreamsGroupCurrentMemberAssignmentKey")
STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = _value(
    "StreamsGroupCurrentMemberAssignmentValue",
    F("MemberEpoch", "int32", "0+"),
    F("PreviousMemberEpoch", "int32", "0+"),
    # Streams MemberState: 1 STABLE, 2 UNREVOKED_TASKS, 3 UNRELEASED_TASKS, 127 UNKNOWN.
    F("State", "int8", "0+"),
    F("ActiveTasks", "[]TaskIds", "0+", fields=_TASK_IDS_WITH_EPOCHS),
    F("StandbyTasks", "[]TaskIds", "0+", fields=_TASK_IDS_WITH_EPOCHS),
    F("WarmupTasks", "[]TaskIds", "0+", fields=_TASK_IDS_WITH_EPOCHS),
    F("ActiveTasksPendingRevocation", "[]TaskIds", "0+", fields=_TASK_IDS_WITH_EPOCHS),
    F("StandbyTasksPendingRevocation", "[]TaskIds", "0+", fields=_TASK_IDS_WITH_EPOCHS),
    F("WarmupTasksPendingRevocation", "[]TaskIds", "0+", fields=_TASK_IDS_WITH_EPOCHS),
)
_TOPIC_INFO = (
    F("Name", "string", "0+"),
    F("Partitions", "int32", "0+"),
    F("ReplicationFactor", "int16", "0+"),
    # Lower-case names in Kafka's spec, hence in the JSON output too.
    F(
        "TopicConfigs",
        "[]TopicConfig",
        "0+",
        fields=(F("key", "string", "0+"), F("value", "string", "0+")),
    ),
)
STREAMS_GROUP_TOPOLOGY_KEY = _group_key("StreamsGroupTopologyKey")
STREAMS_GROUP_TOPOLOGY_VALUE = _value(
    "StreamsGroupTopologyValue",
    F("Epoch", "int32", "0+"),
    F(
        "Subtopologies",
        "[]Subtopology",
        "0+",
        fields=(
            F("SubtopologyId", "string", "0+"),
            F("SourceTopics", "[]string", "0+"),
            F("SourceTopicRegex", "[]string", "0+"),
            F("StateChangelogTopics", "[]TopicInfo", "0+", fields=_TOPIC_INFO),
            F("RepartitionSinkTopics", "[]string", "0+"),
            F("RepartitionSourceTopics", "[]TopicInfo", "0+", fields=_TOPIC_INFO),
            F(
                "CopartitionGroups",
                "[]CopartitionGroup",
                "0+",
                fields=(
                    F("SourceTopics", "[]int16", "0+"),
                    F("SourceTopicRegex", "[]int16", "0+"),
                    F("RepartitionSourceTopics", "[]int16", "0+"),
                ),
            ),
        ),
    ),
)
# Seen only in the apache/kafka index after the 4.4 branch; not in a release.
STREAMS_GROUP_TARGET_ASSIGNMENT_RESOLVED_TOPIC_IDS_KEY = _group_key(
    "StreamsGroupTargetAssignmentResolvedTopicIdsKey"
)
STREAMS_GROUP_TARGET_ASSIGNMENT_RESOLVED_TOPIC_IDS_VALUE = _value(
    "StreamsGroupTargetAssignmentResolvedTopicIdsValue",
    F("AssignmentEpoch", "int32", "0+"),
    F(
        "ResolvedTopicIdsBySubtopology",
        "[]SubtopologyTopicIds",
        "0+",
        fields=(F("SubtopologyId", "string", "0+"), F("TopicIds", "[]uuid", "0+")),
    ),
)
