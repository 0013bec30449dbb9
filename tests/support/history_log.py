"""Builders for the history tests: internal-topic logs written record by record.

Every record goes through the real codec (``make_record`` -> ``encode_record`` -> bytes ->
``decode_record`` -> ``event_from_record``), so the folds are tested on events exactly as the
pipeline produces them. Control records (transaction markers) have no coordinator-record codec
and are built as ``ControlEvent`` with the batch coordinates Kafka gives them.

This module holds helpers only (no tests); the ``test_history_*`` modules import it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from offsetscope.history.events import (
    ControlEvent,
    Coordinates,
    Event,
    event_from_record,
)
from offsetscope.protocol import consumer_protocol as cp
from offsetscope.protocol.codec import decode_record, encode_record, make_record
from offsetscope.protocol.records import OFFSETS_TOPIC, TRANSACTION_TOPIC, CoordinatorRecord
from offsetscope.protocol.states import TransactionState

T0 = 1_700_000_000_000  # a fixed epoch-ms origin; tests add offsets to it


@dataclass(frozen=True)
class M:
    """A classic member for :meth:`Log.group`."""

    member_id: str
    partitions: Sequence[tuple[str, int]] = ()
    instance_id: str | None = None
    client_id: str = "client"
    host: str = "/10.0.0.1"
    topics: Sequence[str] = ("orders",)
    session_timeout: int = 45_000
    rebalance_timeout: int = 300_000


def subscription(topics: Sequence[str]) -> bytes:
    return cp.encode_subscription(
        1, {"topics": list(topics), "userData": None, "ownedPartitions": []}
    )


def assignment(parts: Sequence[tuple[str, int]]) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for t, p in parts:
        by_topic.setdefault(t, []).append(p)
    return cp.encode_assignment(
        0,
        {
            "assignedPartitions": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
            "userData": None,
        },
    )


@dataclass
class Log:
    """One internal-topic partition: appends records at increasing offsets."""

    topic: str = OFFSETS_TOPIC
    partition: int = 0
    offset: int = 0
    events: list[Event] = field(default_factory=list)

    def _coords(self, ts: int, pid: int = -1, epoch: int = -1, txn: bool = False) -> Coordinates:
        at = Coordinates(self.topic, self.partition, self.offset, ts, pid, epoch, txn)
        self.offset += 1
        return at

    def record(
        self,
        type_id: int,
        key: dict[str, Any],
        value: dict[str, Any] | None,
        ts: int,
        *,
        version: int | None = None,
        pid: int = -1,
        epoch: int = -1,
        txn: bool = False,
    ) -> Event:
        rec = make_record(self.topic, type_id, key, value, version)
        decoded = decode_record(self.topic, *encode_record(rec))
        assert isinstance(decoded, CoordinatorRecord)
        event = event_from_record(self._coords(ts, pid, epoch, txn), decoded)
        self.events.append(event)
        return event

    # ------------------------------------------------------------ __consumer_offsets

    def commit(
        self,
        group: str,
        topic: str,
        partition: int,
        offset: int,
        ts: int,
        *,
        pid: int | None = None,
        epoch: int = 0,
        topic_id: uuid.UUID | None = None,
    ) -> Event:
        value: dict[str, Any] = {
            "offset": offset,
            "leaderEpoch": -1,
            "metadata": "",
            "commitTimestamp": ts,
        }
        version = 3
        if topic_id is not None:  # Kafka 4.1+ writes v4 with the commit's topic id
            value["topicId"] = topic_id
            version = 4
        key = {"group": group, "topic": topic, "partition": partition}
        if pid is None:
            return self.record(1, key, value, ts, version=version)
        return self.record(1, key, value, ts, version=version, pid=pid, epoch=epoch, txn=True)

    def offset_tombstone(self, group: str, topic: str, partition: int, ts: int) -> Event:
        return self.record(1, {"group": group, "topic": topic, "partition": partition}, None, ts)

    def marker(self, kind: str, pid: int, ts: int, epoch: int = 0) -> Event:
        event = ControlEvent(self._coords(ts, pid, epoch, True), kind, 0)
        self.events.append(event)
        return event

    def group(
        self,
        group: str,
        generation: int,
        members: Sequence[M],
        ts: int,
        *,
        cst: int | None = None,
        protocol_type: str = "consumer",
        protocol: str | None = "range",
        leader: str | None = None,
    ) -> Event:
        empty = not members
        value = {
            "protocolType": protocol_type,
            "generation": generation,
            "protocol": None if empty else protocol,
            "leader": None if empty else (leader or members[0].member_id),
            "currentStateTimestamp": ts if cst is None else cst,
            "members": [
                {
                    "memberId": m.member_id,
                    "groupInstanceId": m.instance_id,
                    "clientId": m.client_id,
                    "clientHost": m.host,
                    "rebalanceTimeout": m.rebalance_timeout,
                    "sessionTimeout": m.session_timeout,
                    "subscription": subscription(m.topics),
                    "assignment": assignment(m.partitions),
                }
                for m in members
            ],
        }
        return self.record(2, {"group": group}, value, ts, version=3)

    def group_tombstone(self, group: str, ts: int) -> Event:
        return self.record(2, {"group": group}, None, ts)

    # ------------------------------------------------------------ KIP-848

    def epoch(self, group: str, epoch: int, ts: int) -> Event:
        return self.record(3, {"groupId": group}, {"epoch": epoch, "metadataHash": 0}, ts)

    def epoch_tombstone(self, group: str, ts: int) -> Event:
        return self.record(3, {"groupId": group}, None, ts)

    def member(
        self,
        group: str,
        member_id: str,
        ts: int,
        *,
        instance_id: str | None = None,
        topics: Sequence[str] = ("orders",),
        assignor: str | None = "uniform",
        tombstone: bool = False,
    ) -> Event:
        key = {"groupId": group, "memberId": member_id}
        value = None
        if not tombstone:
            value = {
                "instanceId": instance_id,
                "rackId": None,
                "clientId": f"client-{member_id}",
                "clientHost": "/10.0.0.2",
                "subscribedTopicNames": list(topics),
                "subscribedTopicRegex": None,
                "rebalanceTimeoutMs": 30_000,
                "serverAssignor": assignor,
                "classicMemberMetadata": None,
            }
        return self.record(5, key, value, ts)

    def target(
        self,
        group: str,
        member_id: str,
        parts: dict[uuid.UUID, Sequence[int]] | None,
        ts: int,
    ) -> Event:
        key = {"groupId": group, "memberId": member_id}
        value = None
        if parts is not None:
            value = {
                "topicPartitions": [
                    {"topicId": tid, "partitions": list(ps)} for tid, ps in parts.items()
                ]
            }
        return self.record(7, key, value, ts)

    def target_epoch(self, group: str, epoch: int, ts: int, *, tombstone: bool = False) -> Event:
        value = None if tombstone else {"assignmentEpoch": epoch, "assignmentTimestamp": 0}
        return self.record(6, {"groupId": group}, value, ts)

    def current(
        self,
        group: str,
        member_id: str,
        epoch: int,
        parts: dict[uuid.UUID, Sequence[int]] | None,
        ts: int,
        *,
        state: int = 0,
    ) -> Event:
        key = {"groupId": group, "memberId": member_id}
        value = None
        if parts is not None:
            value = {
                "memberEpoch": epoch,
                "previousMemberEpoch": max(epoch - 1, 0),
                "state": state,
                "assignedPartitions": [
                    {"topicId": t, "partitions": list(ps), "assignmentEpochs": None}
                    for t, ps in parts.items()
                ],
                "partitionsPendingRevocation": [],
            }
        return self.record(8, key, value, ts)

    def topics_metadata(self, group: str, names: dict[uuid.UUID, str], ts: int) -> Event:
        value = {
            "topics": [
                {"topicId": t, "topicName": n, "numPartitions": 3, "partitionMetadata": []}
                for t, n in names.items()
            ]
        }
        return self.record(4, {"groupId": group}, value, ts)

    # ------------------------------------------------------------ __transaction_state

    def txn(
        self,
        tid: str,
        status: TransactionState,
        pid: int,
        epoch: int,
        ts: int,
        *,
        partitions: Iterable[tuple[str, int]] | None = None,
        start: int = -1,
        timeout: int = 60_000,
        ctv: int = 0,
        next_pid: int = -1,
        prev_pid: int = -1,
    ) -> Event:
        parts = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for t, p in partitions:
                by_topic.setdefault(t, []).append(p)
            parts = [{"topic": t, "partitionIds": ps} for t, ps in by_topic.items()]
        elif status not in (TransactionState.Empty,):
            parts = []
        value = {
            "producerId": pid,
            "previousProducerId": pid if prev_pid < 0 else prev_pid,
            "nextProducerId": next_pid,
            "producerEpoch": epoch,
            "nextProducerEpoch": -1,
            "transactionTimeoutMs": timeout,
            "transactionStatus": int(status),
            "transactionPartitions": parts,
            "transactionLastUpdateTimestampMs": ts,
            "transactionStartTimestampMs": start,
            "clientTransactionVersion": ctv,
        }
        if not ctv:
            # Version 0 (transaction.version 0) has no tagged fields.
            for name in ("previousProducerId", "nextProducerId", "nextProducerEpoch"):
                del value[name]
            del value["clientTransactionVersion"]
        return self.record(0, {"transactionalId": tid}, value, ts, version=1 if ctv else 0)

    def txn_tombstone(self, tid: str, ts: int) -> Event:
        return self.record(0, {"transactionalId": tid}, None, ts)


def txn_log(partition: int = 0) -> Log:
    return Log(TRANSACTION_TOPIC, partition)
