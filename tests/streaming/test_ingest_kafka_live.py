"""The ingest query live against the real broker: rows appear while it runs.

Real confluent-kafka clients make traffic on the harness broker (a consumer group that joins,
consumes and commits; a transactional producer that commits offsets for a group in a committed
transaction and another in an aborted one). The query reads ``__consumer_offsets`` and
``__transaction_state`` with Spark's Kafka source (``read_committed``) on a processing-time
trigger; after ``processAllAvailable`` the history tables show that traffic. The clients then
do more (a second consumer joins the group: a rebalance; more records, new commits), and the
still-running query shows that too. End offsets come from the AdminClient.
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession

from offsetscope import config
from offsetscope.pipelines import ingest
from offsetscope.spark import tables as catalogue
from offsetscope.verify.harness.broker import BrokerHandle

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.streaming]

PARTITIONS = 2


@dataclass(frozen=True)
class Names:
    topic: str
    group: str
    txn_group: str
    aborted_group: str
    txn_committed: str
    txn_aborted: str


def _names() -> Names:
    tag = uuid.uuid4().hex[:8]
    return Names(
        f"live-orders-{tag}",
        f"live-members-{tag}",
        f"live-txn-group-{tag}",
        f"live-aborted-group-{tag}",
        f"live-txn-commit-{tag}",
        f"live-txn-abort-{tag}",
    )


def _produce(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce(topic, key=str(i).encode(), value=b"order", partition=i % PARTITIONS)
    assert producer.flush(30) == 0


def _consumer(bootstrap: str, group: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
        }
    )


def _high_watermarks(consumer: Consumer, topic: str) -> dict[int, int]:
    return {
        p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
        for p in range(PARTITIONS)
    }


def _consume_to_end(consumers: list[Consumer], topic: str) -> dict[int, int]:
    """Poll until the members' positions reach every partition's end, commit them, return them.

    A consumer's position passes transaction markers too, so "the end" is the high watermark.
    """
    ends = _high_watermarks(consumers[0], topic)
    positions: dict[int, int] = {}
    for _ in range(400):
        for consumer in consumers:
            msg = consumer.poll(0.1)
            assert msg is None or msg.error() is None
            assigned = [tp for tp in consumer.assignment() if tp.topic == topic]
            for tp in consumer.position(assigned) if assigned else []:
                if tp.offset >= 0:
                    positions[tp.partition] = tp.offset
        if positions == ends:
            break
    assert positions == ends
    for consumer in consumers:
        owned = [tp for tp in consumer.assignment() if tp.topic == topic]
        if owned:
            consumer.commit(offsets=consumer.position(owned), asynchronous=False)
    return ends


def _await_assignment(consumers: list[Consumer]) -> None:
    """Poll until every member owns a partition (the rebalance is done)."""
    for _ in range(400):
        for consumer in consumers:
            consumer.poll(0.1)
        if all(consumer.assignment() for consumer in consumers):
            return
    raise AssertionError("the group did not assign a partition to every member")


def _transaction(bootstrap: str, names: Names, txn_id: str, group: str, commit: bool) -> None:
    member = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        metadata = member.consumer_group_metadata()
    finally:
        member.close()
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(names.topic, value=b"txn order", partition=0)
    producer.send_offsets_to_transaction([TopicPartition(names.topic, 0, 5)], metadata, 30)
    if commit:
        producer.commit_transaction(30)
    else:
        producer.abort_transaction(30)


@pytest.fixture
def live_cfg(
    offsetscope_config: config.Config, kafka_broker: BrokerHandle, tmp_path: Path
) -> config.Config:
    schema = f"t_live_{uuid.uuid4().hex[:8]}"
    cfg = config.with_kafka_source(offsetscope_config, kafka_broker.bootstrap)
    cfg = config.with_storage(cfg, schema=schema, checkpoint_dir=tmp_path / "checkpoints")
    return config.with_pipeline(cfg, trigger="processing_time", processing_time="1s")


def test_rows_appear_while_the_query_runs(
    spark: SparkSession, kafka_broker: BrokerHandle, live_cfg: config.Config
) -> None:
    bootstrap = kafka_broker.bootstrap
    names = _names()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(names.topic, PARTITIONS, 1)])[names.topic].result(timeout=30)
    _produce(bootstrap, names.topic, 20)
    first = _consumer(bootstrap, names.group)
    first.subscribe([names.topic])
    _consume_to_end([first], names.topic)
    _transaction(bootstrap, names, names.txn_committed, names.txn_group, commit=True)
    _transaction(bootstrap, names, names.txn_aborted, names.aborted_group, commit=False)

    def table(logical: str) -> list[dict[str, object]]:
        return [r.asDict() for r in catalogue.current_rows(spark, live_cfg, logical).collect()]

    query, pipeline = ingest.start(spark, live_cfg, query_name=f"live_{uuid.uuid4().hex[:8]}")
    second: Consumer | None = None
    try:
        query.processAllAvailable()

        commits = [r for r in table("offset_commits") if r["group_id"] == names.group]
        assert sum(int(r["offset"]) for r in commits) == 20  # type: ignore[call-overload]
        assert {r["resolved_by"] for r in commits} == {"read_committed_source"}
        assert [r for r in table("offset_commits") if r["group_id"] == names.aborted_group] == []
        assert [
            r["offset"] for r in table("offset_commits") if r["group_id"] == names.txn_group
        ] == [5]
        gens = sorted(
            (r["generation"], r["member_count"], r["protocol"])
            for r in table("group_generations")
            if r["group_id"] == names.group
        )
        # Kafka 4.x stores a new group once at generation 0 (no members), then the leader's
        # assignment of generation 1.
        assert gens == [(0, 0, None), (1, 1, "range")]
        outcomes = {
            r["transactional_id"]: r["outcome"]
            for r in table("transactions")
            if r["transactional_id"] in (names.txn_committed, names.txn_aborted)
        }
        assert outcomes == {names.txn_committed: "committed", names.txn_aborted: "aborted"}
        ends = {r["partition"]: r for r in table("end_offsets") if r["topic"] == names.topic}
        assert set(ends) == set(range(PARTITIONS))
        lag = [r for r in table("partition_lag") if r["group_id"] == names.group]
        assert lag
        assert {r["topic"] for r in lag} == {names.topic}
        batches_before = len(pipeline.reports)

        # More traffic while the query keeps running: a second member joins (a rebalance to
        # generation 2), more records arrive and both members commit them.
        second = _consumer(bootstrap, names.group)
        second.subscribe([names.topic])
        _await_assignment([first, second])
        _produce(bootstrap, names.topic, 10)
        ends = _consume_to_end([first, second], names.topic)
        query.processAllAvailable()

        assert len(pipeline.reports) > batches_before
        gens = {
            r["generation"]: r for r in table("group_generations") if r["group_id"] == names.group
        }
        assert max(gens) >= 2
        assert gens[max(gens)]["member_count"] == 2
        current = next(r for r in table("groups_current") if r["group_id"] == names.group)
        assert current["generation"] == max(gens)
        assert current["state"] == "Stable"
        latest = {}
        for r in table("offset_commits"):
            if r["group_id"] == names.group and r["topic"] == names.topic:
                key = r["partition"]
                if key not in latest or r["record_offset"] > latest[key]["record_offset"]:
                    latest[key] = r
        assert {p: r["offset"] for p, r in latest.items()} == ends
        audit = table("batch_audit")
        assert sum(int(r["rows_in"]) for r in audit) == len(table("raw_records"))  # type: ignore[call-overload]
        assert all(r["quarantined"] == 0 for r in audit)
    finally:
        query.stop()
        first.close()
        if second is not None:
            second.close()
        spark.sql(f"DROP SCHEMA IF EXISTS {live_cfg.storage.schema} CASCADE")
    assert query.exception() is None


def _internal_records(bootstrap: str) -> int:
    """Offsets in the internal topics now (what a query from "earliest" has to read)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"probe-{uuid.uuid4().hex}"})
    try:
        total = 0
        for topic in ("__consumer_offsets", "__transaction_state"):
            metadata = consumer.list_topics(topic, timeout=30).topics[topic]
            for p in metadata.partitions:
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
                total += high - low
        return total
    finally:
        consumer.close()


def test_the_ingest_reports_its_backlog_and_labels_its_own_group(
    spark: SparkSession, kafka_broker: BrokerHandle, live_cfg: config.Config, tmp_path: Path
) -> None:
    """Read from "earliest" in a few bounded batches: each line says how many records are still
    behind Spark's latest offsets, the last one that the query caught up; a second run reads
    the group Spark's Kafka source joined during the first, labelled as offsetscope's own and
    left out of the views."""
    bootstrap = kafka_broker.bootstrap
    names = _names()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(names.topic, PARTITIONS, 1)])[names.topic].result(timeout=30)
    _produce(bootstrap, names.topic, 20)
    consumer = _consumer(bootstrap, names.group)
    consumer.subscribe([names.topic])
    _consume_to_end([consumer], names.topic)
    consumer.close()
    # About four batches, however much earlier tests left in the internal topics.
    per_batch = max(_internal_records(bootstrap) // 4, 1) + 1
    prefix = f"offsetscope-ingest-{uuid.uuid4().hex[:6]}"
    cfg = config.with_pipeline(live_cfg, trigger="available_now")
    cfg = dataclasses.replace(
        cfg,
        sources=dataclasses.replace(
            cfg.sources,
            kafka=dataclasses.replace(
                cfg.sources.kafka, max_offsets_per_trigger=per_batch, group_id_prefix=prefix
            ),
        ),
    )
    try:
        lines: list[str] = []
        ingest.run(spark, cfg, query_name="backlog", say=lines.append)
        batches = [line for line in lines if "] batch " in line]
        assert len(batches) >= 3, lines
        behind = [
            int(line.split("backlog ")[1].split(" records")[0].replace(",", ""))
            for line in batches[:-1]
        ]
        assert behind[0] > 0
        assert behind == sorted(behind, reverse=True)
        assert "caught up in ~" in batches[0]
        assert batches[-1].endswith("; caught up")

        ingest.run(spark, cfg, query_name="backlog", say=lines.append)
        current = {
            r["group_id"]: r["offsetscope_own"]
            for r in catalogue.current_rows(spark, cfg, "groups_current").collect()
        }
        own = {g for g in current if g.startswith(prefix)}
        assert own, sorted(current)
        assert all(current[g] for g in own)
        assert current[names.group] is False
        overview = {
            r["group_id"] for r in spark.table(catalogue.view_name(cfg, "group_overview")).collect()
        }
        assert names.group in overview
        assert not overview & own
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {cfg.storage.schema} CASCADE")
