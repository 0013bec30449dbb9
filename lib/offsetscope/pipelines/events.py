"""Decoded rows -> the events the history folds consume, without decoding anything again.

The decode adapter produced one row per record (``spark.decode.DECODE_OUTPUT_SCHEMA``); the
light streams (group metadata, KIP-848 records, transaction log, markers, transactional offset
commits) are collected to the driver as Arrow and turned into
:mod:`offsetscope.history.events` objects here. The mapping mirrors
``history.events.event_from_record`` field by field, reading the decoded struct columns instead
of a ``CoordinatorRecord``:

====================  ==========================  ============================================
kind                  decoded column              event
====================  ==========================  ============================================
offset_commit         offset_commit               OffsetCommitEvent (offset None: tombstone)
group_metadata        group_metadata              GroupMetadataEvent, members with the
                                                  consumer-protocol blobs already decoded
consumer_group        consumer_group.value_json   ConsumerGroupEvent (value: Kafka JSON names)
transaction_log       transaction_log             TransactionLogEvent
control               control                     ControlEvent
====================  ==========================  ============================================

Absent tagged fields are null in the decoded struct and take the schema default here (-1 for
producer ids and epochs, 0 for the client transaction version), as the record decoder does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from offsetscope.history.events import (
    ConsumerGroupEvent,
    ControlEvent,
    Coordinates,
    Event,
    GroupMetadataEvent,
    MemberSnapshot,
    OffsetCommitEvent,
    ShareStateEvent,
    TopicPartition,
    TransactionLogEvent,
)
from offsetscope.protocol.registry import SHARE_STATE_TOPIC


def coordinates(row: Mapping[str, Any]) -> Coordinates:
    """The record's coordinates from a decoded row."""
    return Coordinates(
        topic=row["topic"],
        partition=int(row["partition"]),
        offset=int(row["offset"]),
        timestamp=int(row["timestamp"]),
        producer_id=_int(row.get("producer_id"), -1),
        producer_epoch=_int(row.get("producer_epoch"), -1),
        is_transactional=bool(row.get("is_transactional")),
    )


def _int(value: Any, default: int) -> int:
    return default if value is None else int(value)


def _tps(entries: Any) -> tuple[TopicPartition, ...] | None:
    if entries is None:
        return None
    return tuple((e["topic"], int(e["partition"])) for e in entries)


def _member(m: Mapping[str, Any]) -> MemberSnapshot:
    topics = m.get("subscribed_topics")
    return MemberSnapshot(
        member_id=m["member_id"],
        group_instance_id=m.get("group_instance_id"),
        client_id=m["client_id"],
        client_host=m["client_host"],
        rebalance_timeout=_int(m.get("rebalance_timeout"), -1),
        session_timeout=int(m["session_timeout"]),
        subscription=bytes(m["subscription"]),
        assignment=bytes(m["assignment"]),
        subscribed_topics=None if topics is None else tuple(topics),
        owned_partitions=_tps(m.get("owned_partitions")) if topics is not None else None,
        rack_id=m.get("rack_id"),
        assigned=_tps(m.get("assigned_partitions")),
    )


def event_from_decoded(row: Mapping[str, Any]) -> Event | None:
    """The event of one decoded row (``None`` for error and unknown rows, which are not events).

    Args:
        row: a row of the decoded frame as a dict (``RecordBatch.to_pylist()``).
    """
    kind = row["kind"]
    at = coordinates(row)
    tombstone = bool(row.get("is_tombstone"))
    if kind == "offset_commit":
        oc = row["offset_commit"]
        if tombstone:
            return OffsetCommitEvent(at, oc["group"], oc["topic"], int(oc["partition"]), None)
        return OffsetCommitEvent(
            at,
            oc["group"],
            oc["topic"],
            int(oc["partition"]),
            int(oc["offset"]),
            leader_epoch=_int(oc.get("leader_epoch"), -1),
            metadata=oc.get("metadata") or "",
            commit_timestamp=_int(oc.get("commit_timestamp"), -1),
            expire_timestamp=_int(oc.get("expire_timestamp"), -1),
            topic_id=oc.get("topic_id"),
            value_version=row.get("value_version"),
        )
    if kind == "group_metadata":
        gm = row["group_metadata"]
        if tombstone:
            return GroupMetadataEvent(at, gm["group"], True)
        return GroupMetadataEvent(
            at,
            gm["group"],
            False,
            protocol_type=gm["protocol_type"],
            generation=int(gm["generation"]),
            protocol=gm.get("protocol"),
            leader=gm.get("leader"),
            current_state_timestamp=_int(gm.get("current_state_timestamp"), -1),
            members=tuple(_member(m) for m in gm.get("members") or ()),
            value_version=row.get("value_version"),
        )
    if kind == "transaction_log":
        tl = row["transaction_log"]
        if tombstone:
            return TransactionLogEvent(at, tl["transactional_id"], True)
        parts = tl.get("transaction_partitions")
        return TransactionLogEvent(
            at,
            tl["transactional_id"],
            False,
            producer_id=int(tl["producer_id"]),
            previous_producer_id=_int(tl.get("previous_producer_id"), -1),
            next_producer_id=_int(tl.get("next_producer_id"), -1),
            producer_epoch=int(tl["producer_epoch"]),
            timeout_ms=int(tl["transaction_timeout_ms"]),
            status=int(tl["transaction_status"]),
            partitions=None
            if parts is None
            else tuple((e["topic"], int(p)) for e in parts for p in e["partition_ids"]),
            last_update_timestamp=int(tl["transaction_last_update_timestamp_ms"]),
            start_timestamp=int(tl["transaction_start_timestamp_ms"]),
            client_transaction_version=_int(tl.get("client_transaction_version"), 0),
        )
    if kind == "consumer_group":
        cg = row["consumer_group"]
        text = cg.get("value_json")
        value = None if tombstone or text is None else json.loads(text)
        if row["topic"] == SHARE_STATE_TOPIC:
            key = json.loads(cg["key_json"])
            return ShareStateEvent(
                at,
                int(row["record_type"]),
                cg["group_id"],
                str(key["topicId"]),
                int(key["partition"]),
                value,
            )
        return ConsumerGroupEvent(
            at, int(row["record_type"]), cg["group_id"], cg.get("member_id"), value
        )
    if kind == "control":
        ctl = row["control"]
        return ControlEvent(at, ctl["control_type"], _int(ctl.get("coordinator_epoch"), -1))
    return None
