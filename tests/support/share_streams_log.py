"""Share groups (KIP-932) and Kafka Streams groups (KIP-1071) as the broker logs them: a
Streams application whose second instance joins and leaves, and a share group with the state of
one share-partition, each record built through the protocol's own encoder and read back as an
event (:class:`Log`)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from offsetscope.history.events import Coordinates, Event, event_from_record
from offsetscope.protocol import decode_record, encode_record
from offsetscope.protocol.codec import make_record
from offsetscope.protocol.records import OFFSETS_TOPIC
from offsetscope.protocol.registry import SHARE_STATE_TOPIC

T0 = 1_700_000_000_000
TOPIC_ID = uuid.UUID("6f0c1b0e-2a3b-4c5d-8e9f-0a1b2c3d4e5f")


class Log:
    """Records appended in order to one ``__consumer_offsets`` partition (and one of
    ``__share_group_state``), each read back as an event."""

    def __init__(self, partition: int = 0) -> None:
        self.partition = partition
        self.events: list[Event] = []
        self.offsets = {OFFSETS_TOPIC: 0, SHARE_STATE_TOPIC: 0}

    def add(
        self,
        at_s: float,
        type_id: int,
        key: Mapping[str, Any],
        value: Mapping[str, Any] | None,
        topic: str = OFFSETS_TOPIC,
    ) -> None:
        key_bytes, value_bytes = encode_record(make_record(topic, type_id, key, value))
        record = decode_record(topic, key_bytes, value_bytes)
        offset = self.offsets[topic]
        self.offsets[topic] += 1
        at = Coordinates(topic, self.partition, offset, T0 + int(at_s * 1000))
        self.events.append(event_from_record(at, record))  # type: ignore[arg-type]


def streams_member(
    process: str, host: str, port: int, *, client: str, topology_epoch: int = 0
) -> dict[str, Any]:
    return {
        "instanceId": None,
        "rackId": None,
        "clientId": client,
        "clientHost": "/10.0.0.7",
        "rebalanceTimeoutMs": 300_000,
        "topologyEpoch": topology_epoch,
        "processId": process,
        "userEndpoint": {"host": host, "port": port},
        "clientTags": [],
    }


def tasks(*entries: tuple[str, list[int]]) -> list[dict[str, Any]]:
    return [{"subtopologyId": s, "partitions": p} for s, p in entries]


def current(epoch: int, state: int, active: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "memberEpoch": epoch,
        "previousMemberEpoch": max(epoch - 1, 0),
        "state": state,
        "activeTasks": active,
        "standbyTasks": [],
        "warmupTasks": [],
        "activeTasksPendingRevocation": [],
        "standbyTasksPendingRevocation": [],
        "warmupTasksPendingRevocation": [],
    }


def streams_log(partition: int = 0) -> Log:
    """A Streams application: one instance, a second joins (tasks move, a standby appears),
    then leaves -- the records Kafka 4.4's streams group coordinator writes for that."""
    g = {"groupId": "wordcount"}
    a, b = "member-a", "member-b"
    log = Log(partition)
    log.add(0, 23, g, {"epoch": 0, "subtopologies": []})
    log.add(0, 19, {**g, "memberId": a}, streams_member("proc-a", "app-a", 7070, client="wc-a"))
    log.add(0, 17, g, {"epoch": 1, "metadataHash": 5})
    log.add(0, 21, {**g, "memberId": a}, {
        "activeTasks": tasks(("0", [0, 1])), "standbyTasks": [], "warmupTasks": []})  # fmt: skip
    log.add(0, 20, g, {"assignmentEpoch": 1})
    log.add(1, 22, {**g, "memberId": a}, current(1, 1, tasks(("0", [0, 1]))))
    log.add(30, 19, {**g, "memberId": b}, streams_member("proc-b", "app-b", 7071, client="wc-b"))
    log.add(30, 17, g, {"epoch": 2, "metadataHash": 5})
    log.add(30, 21, {**g, "memberId": a}, {
        "activeTasks": tasks(("0", [0])), "standbyTasks": tasks(("0", [1])), "warmupTasks": []})  # fmt: skip
    log.add(30, 21, {**g, "memberId": b}, {
        "activeTasks": tasks(("0", [1])), "standbyTasks": [], "warmupTasks": tasks(("0", [0]))})  # fmt: skip
    log.add(30, 20, g, {"assignmentEpoch": 2})
    log.add(31, 22, {**g, "memberId": a}, current(2, 1, tasks(("0", [0]))))
    log.add(32, 22, {**g, "memberId": b}, current(2, 1, tasks(("0", [1]))))
    # b leaves: its current assignment, target and metadata are tombstoned, the epoch bumps.
    log.add(60, 22, {**g, "memberId": b}, None)
    log.add(60, 21, {**g, "memberId": b}, None)
    log.add(60, 19, {**g, "memberId": b}, None)
    log.add(60, 17, g, {"epoch": 3, "metadataHash": 5})
    log.add(60, 21, {**g, "memberId": a}, {
        "activeTasks": tasks(("0", [0, 1])), "standbyTasks": [], "warmupTasks": []})  # fmt: skip
    log.add(60, 20, g, {"assignmentEpoch": 3})
    log.add(61, 22, {**g, "memberId": a}, current(3, 1, tasks(("0", [0, 1]))))
    return log


def share_log(partition: int = 0) -> Log:
    g = {"groupId": "audit"}
    topic = {"topicId": TOPIC_ID, "topicName": "payments", "partitions": [0, 1]}
    log = Log(partition)
    # The share-partitions of "payments" were initialized (the record that names the topic id);
    # records of the group's epochs carry topic ids only.
    log.add(0, 15, g, {
        "initializingTopics": [], "initializedTopics": [topic], "deletingTopics": []})  # fmt: skip
    log.add(0, 10, {**g, "memberId": "s1"}, {
        "rackId": None, "clientId": "auditor-1", "clientHost": "/10.0.0.9",
        "subscribedTopicNames": ["payments"]})  # fmt: skip
    log.add(0, 11, g, {"epoch": 1, "metadataHash": 9})
    log.add(0, 13, {**g, "memberId": "s1"}, {
        "topicPartitions": [{"topicId": TOPIC_ID, "partitions": [0, 1]}]})  # fmt: skip
    log.add(0, 12, g, {"assignmentEpoch": 1})
    log.add(1, 14, {**g, "memberId": "s1"}, {
        "memberEpoch": 1, "previousMemberEpoch": 0, "state": 0,
        "assignedPartitions": [{"topicId": TOPIC_ID, "partitions": [0, 1]}]})  # fmt: skip
    key = {"groupId": "audit", "topicId": TOPIC_ID, "partition": 0}
    batch = {"firstOffset": 0, "lastOffset": 9, "deliveryState": 0, "deliveryCount": 1}
    log.add(2, 0, key, {
        "snapshotEpoch": 0, "stateEpoch": 0, "leaderEpoch": 0, "startOffset": 0,
        "deliveryCompleteCount": -1, "createTimestamp": T0, "writeTimestamp": T0,
        "stateBatches": [batch]}, topic=SHARE_STATE_TOPIC)  # fmt: skip
    # Records 0-4 acknowledged, 5 redelivered and archived: the start moves to 5.
    log.add(3, 1, key, {
        "snapshotEpoch": 0, "leaderEpoch": 0, "startOffset": 5, "deliveryCompleteCount": -1,
        "stateBatches": [
            {"firstOffset": 0, "lastOffset": 4, "deliveryState": 2, "deliveryCount": 1},
            {"firstOffset": 5, "lastOffset": 5, "deliveryState": 4, "deliveryCount": 3},
        ]}, topic=SHARE_STATE_TOPIC)  # fmt: skip
    return log
