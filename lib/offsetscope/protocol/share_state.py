"""``__share_group_state`` record schemas (share coordinator, KIP-932).

Mirrors Kafka 4.4's ``share-coordinator/src/main/resources/common/message/Share{Snapshot,Update}{Key,Value}.json``.
Same framing as the other coordinator topics; partitioned by hashing
``"<groupId>:<topicIdBase64>:<partition>"``::

    type 0 ShareSnapshot  key: GroupId string | TopicId uuid | Partition int32
    type 1 ShareUpdate    key: same
    values version 0 (flexible): see the tables below
"""

from __future__ import annotations

from offsetscope.protocol.schema import Field as F
from offsetscope.protocol.schema import Message

_KEY_FIELDS = (
    F("GroupId", "string", "0"),
    F("TopicId", "uuid", "0"),
    F("Partition", "int32", "0"),
)
_STATE_BATCH = (
    F("FirstOffset", "int64", "0+"),
    F("LastOffset", "int64", "0+"),
    # DeliveryState: 0 Available, 2 Acknowledged, 4 Archived.
    F("DeliveryState", "int8", "0+"),
    F("DeliveryCount", "int16", "0+"),
)

SHARE_SNAPSHOT_KEY = Message("ShareSnapshotKey", valid="0", flexible="none", fields=_KEY_FIELDS)
SHARE_SNAPSHOT_VALUE = Message(
    "ShareSnapshotValue",
    valid="0",
    flexible="0+",
    fields=(
        F("SnapshotEpoch", "int32", "0+"),
        F("StateEpoch", "int32", "0+"),
        F("LeaderEpoch", "int32", "0+"),
        F("StartOffset", "int64", "0+"),
        F("DeliveryCompleteCount", "int32", "0+", tag=0, tagged="0+", default=-1),
        F("CreateTimestamp", "int64", "0+"),
        F("WriteTimestamp", "int64", "0+"),
        F("StateBatches", "[]StateBatch", "0+", fields=_STATE_BATCH),
    ),
)
SHARE_UPDATE_KEY = Message("ShareUpdateKey", valid="0", flexible="none", fields=_KEY_FIELDS)
SHARE_UPDATE_VALUE = Message(
    "ShareUpdateValue",
    valid="0",
    flexible="0+",
    fields=(
        F("SnapshotEpoch", "int32", "0+"),
        F("LeaderEpoch", "int32", "0+"),
        F("StartOffset", "int64", "0+"),
        F("DeliveryCompleteCount", "int32", "0+", tag=0, tagged="0+", default=-1),
        F("StateBatches", "[]StateBatch", "0+", fields=_STATE_BATCH),
    ),
)
