"""Spark's Kafka source reads the real ``__consumer_offsets`` and ``__transaction_state``.

Real confluent-kafka clients drive the harness broker first: a consumer group that joins,
consumes and commits; a transactional producer that commits offsets for a group inside a
committed transaction; another that does the same inside an aborted one. Spark then reads both
internal topics as a batch and as an ``availableNow`` stream with
``kafka.isolation.level=read_committed``, and offsetscope's decoder reads what Spark got.

Two facts this pins down (the first is among the platform facts of ``docs/design.md``, "Real
components"):

* Since Spark 3.4 the source lists partitions with an AdminClient and drops topics the broker
  marks internal. With ``spark.sql.streaming.kafka.useDeprecatedOffsetFetching=false`` (Spark's
  default) a subscription to ``__consumer_offsets`` finds no partition and returns no row, with
  no error, while an ordinary topic in the same subscription is read. ``build_session`` sets it
  to ``true``.
* The consumer-based reader that setting selects subscribes as a consumer group of its own,
  ``<groupIdPrefix>-<uuid>-driver-0``, so each read adds its own GroupMetadata records (join,
  leave, tombstone) to ``__consumer_offsets``. Readers should set a recognisable
  ``groupIdPrefix`` and expect to see themselves.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import DataFrame, SparkSession

from offsetscope.protocol import decode_record
from offsetscope.protocol.records import CoordinatorRecord
from offsetscope.spark.session import KAFKA_OFFSET_FETCHING
from offsetscope.verify.harness.broker import BrokerHandle
from offsetscope.verify.harness.clients import consume_and_commit

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

OFFSETS = "__consumer_offsets"
TXN = "__transaction_state"
READER_PREFIX = "offsetscope-test-reader"
MESSAGES = 10
COMPLETE_COMMIT, COMPLETE_ABORT = 4, 5


@dataclass(frozen=True, slots=True)
class Activity:
    """What the clients did, by name, so assertions can find it in the internal topics."""

    topic: str
    member_group: str  # joined with subscribe(), consumed everything, committed
    txn_group: str  # offsets committed by the committed transaction
    aborted_group: str  # offsets sent in the aborted transaction
    txn_committed: str
    txn_aborted: str


@pytest.fixture(scope="module")
def activity(kafka_broker: BrokerHandle) -> Activity:
    tag = uuid.uuid4().hex[:8]
    act = Activity(
        topic=f"orders-{tag}",
        member_group=f"members-{tag}",
        txn_group=f"txn-group-{tag}",
        aborted_group=f"aborted-group-{tag}",
        txn_committed=f"txn-commit-{tag}",
        txn_aborted=f"txn-abort-{tag}",
    )
    bootstrap = kafka_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(act.topic, 2, 1)])[act.topic].result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(MESSAGES):
        producer.produce(act.topic, key=str(i).encode(), value=b"order")
    assert producer.flush(30) == 0

    client = {"bootstrap.servers": bootstrap}
    assert consume_and_commit(client, act.member_group, act.topic, want=MESSAGES) == MESSAGES

    for txn_id, group, partition, offset, commit in (
        (act.txn_committed, act.txn_group, 0, 7, True),
        (act.txn_aborted, act.aborted_group, 1, 3, False),
    ):
        # A group that never joined: the offsets commit with generation -1 (no member check).
        group_metadata = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": group}
        ).consumer_group_metadata()
        txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
        txn.init_transactions(30)
        txn.begin_transaction()
        txn.produce(act.topic, value=b"transactional order")
        txn.send_offsets_to_transaction(
            [TopicPartition(act.topic, partition, offset)], group_metadata, 30
        )
        if commit:
            txn.commit_transaction(30)
        else:
            txn.abort_transaction(30)
    return act


def _kafka(reader: Any, bootstrap: str, topics: str, isolation: str) -> Any:
    return (
        reader.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topics)
        .option("startingOffsets", "earliest")
        .option("kafka.isolation.level", isolation)
        .option("groupIdPrefix", READER_PREFIX)
    )


def _batch(spark: SparkSession, bootstrap: str, topics: str, isolation: str) -> DataFrame:
    reader = _kafka(spark.read, bootstrap, topics, isolation)
    result: DataFrame = reader.option("endingOffsets", "latest").load()
    return result


def _decode(rows: Iterable[Any]) -> list[CoordinatorRecord]:
    decoded = []
    for row in rows:
        key = bytes(row["key"])
        # The key starts with the record type, an int16: 0 (transaction log) in
        # __transaction_state; in __consumer_offsets any group kind other tests of the run
        # created (classic, KIP-848, share), all of them types this library knows.
        record_type = int.from_bytes(key[:2], "big", signed=True)
        assert record_type == 0 if row["topic"] == TXN else 1 <= record_type <= 23, (
            row["topic"],
            key,
        )
        value = None if row["value"] is None else bytes(row["value"])
        record = decode_record(row["topic"], key, value)
        assert isinstance(record, CoordinatorRecord), record
        assert record.record_type == record_type
        decoded.append(record)
    return decoded


def _commits(records: Iterable[CoordinatorRecord], group: str) -> dict[tuple[str, int], int]:
    return {
        (r.key["topic"], r.key["partition"]): r.value["offset"]
        for r in records
        if r.record_type == 1 and r.key["group"] == group and r.value is not None
    }


def _statuses(records: Iterable[CoordinatorRecord], txn_id: str) -> list[int]:
    return [
        r.value["transactionStatus"]
        for r in records
        if r.record_type == 0 and r.key["transactionalId"] == txn_id and r.value is not None
    ]


def _assert_activity(records: list[CoordinatorRecord], act: Activity) -> None:
    # The consumer group: joined with one member (generation 1), then committed its position.
    joins = [
        r.value
        for r in records
        if r.record_type == 2 and r.key["group"] == act.member_group and r.value is not None
    ]
    assert any(v["generation"] == 1 and len(v["members"]) == 1 for v in joins), joins
    member_commits = _commits(records, act.member_group)
    assert set(member_commits) == {(act.topic, 0), (act.topic, 1)}
    assert sum(member_commits.values()) == MESSAGES
    # The committed transaction's offsets are there; the aborted one's are not.
    assert _commits(records, act.txn_group) == {(act.topic, 0): 7}
    assert _commits(records, act.aborted_group) == {}
    # Both transactions' lifecycles, ending in CompleteCommit / CompleteAbort.
    assert _statuses(records, act.txn_committed)[-1] == COMPLETE_COMMIT
    assert _statuses(records, act.txn_aborted)[-1] == COMPLETE_ABORT


def test_batch_read_committed_of_both_internal_topics(
    spark: SparkSession, kafka_broker: BrokerHandle, activity: Activity
) -> None:
    df = _batch(spark, kafka_broker.bootstrap, f"{OFFSETS},{TXN}", "read_committed")
    rows = df.select("topic", "partition", "offset", "key", "value").collect()

    assert {row["topic"] for row in rows} == {OFFSETS, TXN}
    records = _decode(rows)
    _assert_activity(records, activity)
    # Partitions of __consumer_offsets as configured; offsets have gaps where markers sit.
    assert {row["partition"] for row in rows if row["topic"] == OFFSETS} <= {0, 1, 2}


def test_read_uncommitted_also_returns_the_aborted_offset_commit(
    spark: SparkSession, kafka_broker: BrokerHandle, activity: Activity
) -> None:
    rows = _batch(spark, kafka_broker.bootstrap, OFFSETS, "read_uncommitted").collect()

    assert _commits(_decode(rows), activity.aborted_group) == {(activity.topic, 1): 3}


def test_streaming_available_now_reads_both_internal_topics(
    spark: SparkSession, kafka_broker: BrokerHandle, activity: Activity, tmp_path: Path
) -> None:
    name = f"internal_topics_{uuid.uuid4().hex[:8]}"
    stream = _kafka(spark.readStream, kafka_broker.bootstrap, f"{OFFSETS},{TXN}", "read_committed")
    query = (
        stream.load()
        .select("topic", "partition", "offset", "key", "value")
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(300)
        assert query.exception() is None
    finally:
        query.stop()

    rows = spark.table(name).collect()
    spark.catalog.dropTempView(name)  # the memory sink's view; the session is shared
    _assert_activity(_decode(rows), activity)
    # The reader shows up as a consumer group of its own (see the module docstring).
    assert any(
        r.record_type == 2 and r.key["group"].startswith(READER_PREFIX) for r in _decode(rows)
    )


def test_without_deprecated_offset_fetching_internal_topics_are_silently_skipped(
    spark: SparkSession, kafka_broker: BrokerHandle, activity: Activity
) -> None:
    spark.conf.set(KAFKA_OFFSET_FETCHING, "false")
    try:
        df = _batch(spark, kafka_broker.bootstrap, f"{activity.topic},{OFFSETS}", "read_committed")
        per_topic = {r["topic"]: r["count"] for r in df.groupBy("topic").count().collect()}
    finally:
        spark.conf.set(KAFKA_OFFSET_FETCHING, "true")

    # The ordinary topic is read (10 orders + the committed transaction's record); the
    # internal topic in the same subscription contributes nothing, and nothing fails.
    assert per_topic == {activity.topic: MESSAGES + 1}
