"""The only place that builds the group coordinator's ``__consumer_offsets`` records.

Mirrors Kafka 4.4's ``GroupCoordinatorRecordHelpers``; ``docs/formats.md`` sections 3.2, 3.3
and 8 give the layouts and when each is written::

    OffsetCommitKey   (type 1)  {group, topic, partition}
    OffsetCommitValue v4        {offset, leaderEpoch, metadata, commitTimestamp, [topicId: tag 0]}
                      v1        {offset, metadata, commitTimestamp, expireTimestamp}
                                (v1 only when the commit carried an explicit retention time)
    GroupMetadataKey  (type 2)  {group}
    GroupMetadataValue v3       {protocolType, generation, protocol, leader, currentStateTimestamp,
                                 members: [{memberId, groupInstanceId, clientId, clientHost,
                                            rebalanceTimeout, sessionTimeout, subscription,
                                            assignment}]}
    tombstone                   same key, null value

Kafka 4.4 writes OffsetCommitValue v4 (flexible; the tagged topicId only when the commit carried
a topic id) and still GroupMetadataValue v3. Payload dicts use Kafka's JSON field names.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

from offsetscope.protocol.records import OFFSETS_TOPIC, CoordinatorRecord

if TYPE_CHECKING:
    from offsetscope.sim.coordinator.group.group import ClassicGroup
    from offsetscope.sim.coordinator.group.offsets import OffsetAndMetadata

OFFSET_COMMIT_RECORD_TYPE = 1
GROUP_METADATA_RECORD_TYPE = 2
OFFSET_COMMIT_VALUE_VERSION = 4
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_METADATA_VALUE_VERSION = 3
ZERO_UUID = uuid.UUID(int=0)


def new_offset_commit_record(
    group_id: str, topic: str, partition: int, offset: OffsetAndMetadata
) -> CoordinatorRecord:
    """An OffsetCommit record for one partition.

    Args:
        group_id: the group.
        topic: the topic name.
        partition: the partition.
        offset: the committed offset, leader epoch (None = -1), metadata, commit time, optional
            explicit expiry and optional topic id.

    Returns:
        The record: value v1 when ``offset.expire_timestamp_ms`` is set, else v4.
    """
    # The hot path of the coordinator (one call per committed partition): no helper calls.
    version = (
        OFFSET_COMMIT_VALUE_VERSION
        if offset.expire_timestamp_ms is None
        else OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY
    )
    value: dict[str, object]
    if version == OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY:
        value = {
            "offset": offset.committed_offset,
            "metadata": offset.metadata,
            "commitTimestamp": offset.commit_timestamp_ms,
            "expireTimestamp": offset.expire_timestamp_ms,
        }
    else:
        value = {
            "offset": offset.committed_offset,
            "leaderEpoch": -1 if offset.leader_epoch is None else offset.leader_epoch,
            "metadata": offset.metadata,
            "commitTimestamp": offset.commit_timestamp_ms,
            # Tagged: the encoder writes it only when it is not the zero uuid (its default).
            "topicId": ZERO_UUID if offset.topic_id is None else offset.topic_id,
        }
    return CoordinatorRecord(
        topic=OFFSETS_TOPIC,
        record_type=OFFSET_COMMIT_RECORD_TYPE,
        key_schema="OffsetCommitKey",
        key={"group": group_id, "topic": topic, "partition": partition},
        value_schema="OffsetCommitValue",
        value_version=version,
        value=value,
    )


def new_offset_commit_tombstone(group_id: str, topic: str, partition: int) -> CoordinatorRecord:
    """A tombstone deleting the committed offset of (group, topic, partition)."""
    return CoordinatorRecord(
        topic=OFFSETS_TOPIC,
        record_type=OFFSET_COMMIT_RECORD_TYPE,
        key_schema="OffsetCommitKey",
        key={"group": group_id, "topic": topic, "partition": partition},
        value_schema=None,
        value_version=None,
        value=None,
    )


def new_group_metadata_record(
    group: ClassicGroup, assignment: Mapping[str, bytes]
) -> CoordinatorRecord:
    """The GroupMetadata record of a classic group as it is now.

    Args:
        group: the group; its members are written in Kafka's iteration order, each with its
            metadata for the selected protocol.
        assignment: member id -> assignment bytes; every member must have one (zero-length for
            members the leader did not assign).

    Returns:
        The record (value v3); ``currentStateTimestamp`` is the group's current-state time.

    Raises:
        RuntimeError: a member has no assignment, or the group has members but no protocol.
    """
    members: list[dict[str, object]] = []
    for m in group.ordered_members():
        if group.protocol_name is None:
            raise RuntimeError("attempted to write non-empty group metadata with no protocol")
        if m.member_id not in assignment:
            raise RuntimeError(
                f"attempted to write member {m.member_id} of group {group.group_id} "
                "with no assignment"
            )
        members.append(
            {
                "memberId": m.member_id,
                "groupInstanceId": m.group_instance_id,
                "clientId": m.client_id,
                "clientHost": m.client_host,
                "rebalanceTimeout": m.rebalance_timeout_ms,
                "sessionTimeout": m.session_timeout_ms,
                "subscription": m.metadata(group.protocol_name),
                "assignment": assignment[m.member_id],
            }
        )
    return _group_metadata(
        group.group_id,
        {
            "protocolType": group.protocol_type or "",
            "generation": group.generation_id,
            "protocol": group.protocol_name,
            "leader": group.leader_id,
            "currentStateTimestamp": group.current_state_timestamp_or_default(),
            "members": members,
        },
    )


def new_empty_group_metadata_record(group: ClassicGroup) -> CoordinatorRecord:
    """The record Kafka 4.x writes for a brand-new group whose first join wrote nothing else.

    Generation 0, protocol type ``""``, no protocol, leader or members; the current-state
    timestamp is the group's creation time.
    """
    return _group_metadata(
        group.group_id,
        {
            "protocolType": "",
            "generation": 0,
            "protocol": None,
            "leader": None,
            "currentStateTimestamp": group.current_state_timestamp_or_default(),
            "members": [],
        },
    )


def new_group_metadata_tombstone(group_id: str) -> CoordinatorRecord:
    """A tombstone deleting the classic group (DeleteGroups or expiry)."""
    return CoordinatorRecord(
        topic=OFFSETS_TOPIC,
        record_type=GROUP_METADATA_RECORD_TYPE,
        key_schema="GroupMetadataKey",
        key={"group": group_id},
        value_schema=None,
        value_version=None,
        value=None,
    )


def _group_metadata(group_id: str, value: dict[str, object]) -> CoordinatorRecord:
    return CoordinatorRecord(
        topic=OFFSETS_TOPIC,
        record_type=GROUP_METADATA_RECORD_TYPE,
        key_schema="GroupMetadataKey",
        key={"group": group_id},
        value_schema="GroupMetadataValue",
        value_version=GROUP_METADATA_VALUE_VERSION,
        value=value,
    )
