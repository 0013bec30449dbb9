"""Kafka's own formatter outputs, asserted verbatim (``docs/formats.md`` section 9).

The expected strings are the ones Kafka's unit tests assert for ``OffsetsMessageFormatter``,
``GroupMetadataMessageFormatter``, ``TransactionLogMessageFormatter`` and ``DumpLogSegments``;
the inputs are rebuilt from the field values those tests use.
"""

from __future__ import annotations

from offsetscope.protocol import codec
from offsetscope.protocol import consumer_protocol as cp
from offsetscope.protocol.json_format import (
    console_json,
    dump_log_key,
    dump_log_payload,
    dumps,
    uuid_from_kafka,
    uuid_to_kafka,
)

OFFSETS = "__consumer_offsets"
KEY = {"group": "group-id", "topic": "foo", "partition": 1}


def _console(topic: str, type_id: int, key: dict, value: dict | None, version: int | None) -> str:
    rec = codec.make_record(topic, type_id, key, value, version)
    # Round-trip through bytes so the formatter sees what a decoder produced.
    decoded = codec.decode_record(topic, *codec.encode_record(rec))
    assert isinstance(decoded, codec.CoordinatorRecord)
    return dumps(console_json(decoded, decode_blobs=False))


def test_offset_commit_v4_with_topic_id() -> None:
    topic_id = uuid_from_kafka("MKXx1fIkQy2J9jXHhK8m1w")
    value = {
        "offset": 100,
        "leaderEpoch": 10,
        "metadata": "metadata",
        "commitTimestamp": 1234,
        "topicId": topic_id,
    }
    assert _console(OFFSETS, 1, KEY, value, 4) == (
        '{"key":{"type":1,"data":{"group":"group-id","topic":"foo","partition":1}},'
        '"value":{"version":4,"data":{"offset":100,"leaderEpoch":10,"metadata":"metadata",'
        '"commitTimestamp":1234,"topicId":"MKXx1fIkQy2J9jXHhK8m1w"}}}'
    )


def test_offset_commit_v1_with_expiry() -> None:
    value = {
        "offset": 100,
        "metadata": "metadata",
        "commitTimestamp": 1234,
        "expireTimestamp": 5678,
    }
    assert _console(OFFSETS, 1, KEY, value, 1) == (
        '{"key":{"type":1,"data":{"group":"group-id","topic":"foo","partition":1}},'
        '"value":{"version":1,"data":{"offset":100,"metadata":"metadata",'
        '"commitTimestamp":1234,"expireTimestamp":5678}}}'
    )


def test_offset_commit_tombstone() -> None:
    assert _console(OFFSETS, 1, KEY, None, None) == (
        '{"key":{"type":1,"data":{"group":"group-id","topic":"foo","partition":1}},"value":null}'
    )


def test_group_metadata_v3_keeps_base64_in_the_console_shape() -> None:
    value = {
        "protocolType": "consumer",
        "generation": 1,
        "protocol": "range",
        "leader": "leader",
        "currentStateTimestamp": 1234,
        "members": [
            {
                "memberId": "member-1",
                "groupInstanceId": "group-instance-1",
                "clientId": "client-1",
                "clientHost": "host-1",
                "rebalanceTimeout": 1000,
                "sessionTimeout": 1500,
                "subscription": b"\x00\x01",
                "assignment": b"\x01\x02",
            }
        ],
    }
    assert _console(OFFSETS, 2, {"group": "group-id"}, value, 3) == (
        '{"key":{"type":2,"data":{"group":"group-id"}},"value":{"version":3,"data":'
        '{"protocolType":"consumer","generation":1,"protocol":"range","leader":"leader",'
        '"currentStateTimestamp":1234,"members":[{"memberId":"member-1",'
        '"groupInstanceId":"group-instance-1","clientId":"client-1","clientHost":"host-1",'
        '"rebalanceTimeout":1000,"sessionTimeout":1500,"subscription":"AAE=",'
        '"assignment":"AQI="}]}}}'
    )


def test_transaction_log_prints_the_status_name() -> None:
    value = {
        "producerId": 100,
        "producerEpoch": 50,
        "transactionTimeoutMs": 500,
        "transactionStatus": 4,
        "transactionPartitions": [],
        "transactionLastUpdateTimestampMs": 1000,
        "transactionStartTimestampMs": 750,
    }
    assert _console("__transaction_state", 0, {"transactionalId": "TXNID"}, value, 1) == (
        '{"key":{"type":0,"data":{"transactionalId":"TXNID"}},"value":{"version":1,"data":'
        '{"producerId":100,"producerEpoch":50,"transactionTimeoutMs":500,'
        '"transactionStatus":"CompleteCommit","transactionPartitions":[],'
        '"transactionLastUpdateTimestampMs":1000,"transactionStartTimestampMs":750}}}'
    )


def _dump(topic: str, type_id: int, key: dict, value: dict | None, version: int | None) -> str:
    rec = codec.decode_record(
        topic, *codec.encode_record(codec.make_record(topic, type_id, key, value, version))
    )
    assert isinstance(rec, codec.CoordinatorRecord)
    return f"key: {dump_log_key(rec)} payload: {dump_log_payload(rec)}"


def test_dump_log_consumer_group_metadata_omits_default_tags() -> None:
    assert _dump(OFFSETS, 3, {"groupId": "group"}, {"epoch": 10}, 0) == (
        'key: {"type":"3","data":{"groupId":"group"}} payload: {"version":"0","data":{"epoch":10}}'
    )


def _group_value(subscription: bytes, assignment: bytes) -> dict:
    return {
        "protocolType": "consumer",
        "generation": 10,
        "protocol": "range",
        "leader": "member",
        "currentStateTimestamp": -1,
        "members": [
            {
                "memberId": "member",
                "groupInstanceId": "instance",
                "clientId": "client",
                "clientHost": "host",
                "rebalanceTimeout": 1000,
                "sessionTimeout": 100,
                "subscription": subscription,
                "assignment": assignment,
            }
        ],
    }


def test_dump_log_decodes_consumer_protocol_blobs() -> None:
    sub = cp.encode_subscription(
        3,
        {
            "topics": ["foo"],
            "userData": None,
            "ownedPartitions": [{"topic": "foo", "partitions": [0]}],
            "generationId": 0,
            "rackId": "rack",
        },
    )
    asg = cp.encode_assignment(
        3, {"assignedPartitions": [{"topic": "foo", "partitions": [0]}], "userData": None}
    )
    assert _dump(OFFSETS, 2, {"group": "group"}, _group_value(sub, asg), 4) == (
        'key: {"type":"2","data":{"group":"group"}} payload: {"version":"4","data":'
        '{"protocolType":"consumer","generation":10,"protocol":"range","leader":"member",'
        '"currentStateTimestamp":-1,"members":[{"memberId":"member","groupInstanceId":"instance",'
        '"clientId":"client","clientHost":"host","rebalanceTimeout":1000,"sessionTimeout":100,'
        '"subscription":{"topics":["foo"],"userData":null,"ownedPartitions":[{"topic":"foo",'
        '"partitions":[0]}],"generationId":0,"rackId":"rack"},"assignment":{"assignedPartitions":'
        '[{"topic":"foo","partitions":[0]}],"userData":null}}]}}'
    )


def test_dump_log_keeps_base64_of_malformed_blobs() -> None:
    payload = _dump(OFFSETS, 2, {"group": "group"}, _group_value(b"Subscription", b"Assignment"), 4)
    assert '"subscription":"U3Vic2NyaXB0aW9u","assignment":"QXNzaWdubWVudA=="' in payload


def test_dump_log_transaction_value_with_tags() -> None:
    value = {
        "producerId": 12,
        "previousProducerId": 11,
        "nextProducerId": 10,
        "producerEpoch": 2,
        "transactionTimeoutMs": 14,
        "transactionStatus": 0,
        "transactionPartitions": [
            {"topic": "topic1", "partitionIds": [0, 1, 2]},
            {"topic": "topic2", "partitionIds": [3, 4, 5]},
        ],
        "transactionLastUpdateTimestampMs": 123,
        "transactionStartTimestampMs": 13,
    }
    assert _dump("__transaction_state", 0, {"transactionalId": "txnId"}, value, 1) == (
        'key: {"type":"0","data":{"transactionalId":"txnId"}} payload: {"version":"1","data":'
        '{"producerId":12,"previousProducerId":11,"nextProducerId":10,"producerEpoch":2,'
        '"transactionTimeoutMs":14,"transactionStatus":"Empty","transactionPartitions":'
        '[{"topic":"topic1","partitionIds":[0,1,2]},{"topic":"topic2","partitionIds":[3,4,5]}],'
        '"transactionLastUpdateTimestampMs":123,"transactionStartTimestampMs":13}}'
    )


def test_dump_log_tombstone_and_unknown_status() -> None:
    assert _dump(OFFSETS, 1, KEY, None, None).endswith("payload: <DELETE>")
    value = {
        "producerId": 1,
        "producerEpoch": 0,
        "transactionTimeoutMs": 1,
        "transactionStatus": 42,
        "transactionPartitions": None,
        "transactionLastUpdateTimestampMs": 0,
        "transactionStartTimestampMs": -1,
    }
    assert '"transactionStatus":"42"' in _dump(
        "__transaction_state", 0, {"transactionalId": "t"}, value, 0
    )


def test_share_snapshot_key_uses_kafka_uuid_text() -> None:
    key = {"groupId": "gs1", "topicId": uuid_from_kafka("Uj5wn_FqTXirEASvVZRY1w"), "partition": 0}
    value = {
        "snapshotEpoch": 0,
        "stateEpoch": 0,
        "leaderEpoch": 0,
        "startOffset": 0,
        "createTimestamp": 5,
        "writeTimestamp": 6,
        "stateBatches": [
            {"firstOffset": 0, "lastOffset": 4, "deliveryState": 2, "deliveryCount": 1}
        ],
    }
    assert _dump("__share_group_state", 0, key, value, 0) == (
        'key: {"type":"0","data":{"groupId":"gs1","topicId":"Uj5wn_FqTXirEASvVZRY1w",'
        '"partition":0}} payload: {"version":"0","data":{"snapshotEpoch":0,"stateEpoch":0,'
        '"leaderEpoch":0,"startOffset":0,"createTimestamp":5,"writeTimestamp":6,'
        '"stateBatches":[{"firstOffset":0,"lastOffset":4,"deliveryState":2,"deliveryCount":1}]}}'
    )


def test_uuid_text_round_trip() -> None:
    assert uuid_to_kafka(uuid_from_kafka("AAAAAAAAAAAAAAAAAAAAAA")) == "AAAAAAAAAAAAAAAAAAAAAA"
