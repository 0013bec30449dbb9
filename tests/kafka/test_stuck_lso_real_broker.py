"""A stuck last stable offset on the real broker: a transactional producer holds a transaction
open on a partition while plain records keep arriving after it; a read_committed consumer group
stops at the LSO. The ingest query (Spark's Kafka source, AdminClient end offsets) must report
the partition stuck once the LSO has stood still past the bound (shorter than the transaction's
timeout), name the open transaction's transactional id, producer id and epoch and the blocked
group, and resolve the episode when the broker's timeout check aborts the transaction and the
LSO moves; the stuck_lso rule raises and resolves the same episode.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Self

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from pyspark.sql import SparkSession

from offsetscope import config
from offsetscope.alerts import rules
from offsetscope.history.rows import StuckPartitionRow
from offsetscope.pipelines import ingest
from offsetscope.quality.tables import rows_of
from offsetscope.spark import tables as catalogue
from offsetscope.verify.harness.broker import BrokerHandle
from offsetscope.verify.harness.clients import (
    TransactionalProducer,
    create_topic,
    list_offsets,
    wait_until,
)

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.streaming]

BOUND = "5s"
TIMEOUT_MS = 120_000  # the transaction's own timeout: the broker aborts it then
STARTUP_S = 300.0  # the ingest query's tables and first batches


class Traffic:
    """Plain records into the partition and a read_committed group committing its position,
    every 200 ms, until stopped: the high watermark moves, the group commits (the ingest query
    gets a micro-batch), and its position stops at the LSO while the transaction is open."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        self.topic = topic
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        self.consumer.assign([TopicPartition(topic, 0)])
        self.stop = threading.Event()
        self.error: Exception | None = None
        self.thread = threading.Thread(target=self._run, name="stuck-lso-traffic", daemon=True)

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                self.producer.produce(self.topic, b"plain", partition=0)
                self.producer.flush(10)
                msg = self.consumer.poll(0.2)
                if msg is not None and msg.error() is not None:
                    raise RuntimeError(str(msg.error()))
                position = self.consumer.position([TopicPartition(self.topic, 0)])
                if position[0].offset >= 0:
                    self.consumer.commit(offsets=position, asynchronous=False)
        except Exception as exc:  # noqa: BLE001 -- reported by the test thread
            self.error = exc

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(30)
        self.consumer.close()
        self.producer.flush(10)


@pytest.fixture
def stuck_cfg(
    offsetscope_config: config.Config, kafka_broker: BrokerHandle, tmp_path: Path
) -> config.Config:
    cfg = config.with_kafka_source(offsetscope_config, kafka_broker.bootstrap)
    cfg = config.with_storage(
        cfg, schema=f"t_stuck_{uuid.uuid4().hex[:8]}", checkpoint_dir=tmp_path / "checkpoints"
    )
    return config.with_pipeline(
        cfg,
        trigger="processing_time",
        processing_time="1s",
        stuck_lso_bound=config.Duration(BOUND),
    )


def _stuck(spark: SparkSession, cfg: config.Config, topic: str) -> list[StuckPartitionRow]:
    df = spark.table(catalogue.table_name(cfg, "stuck_partitions"))
    return [r for r in rows_of(df, StuckPartitionRow) if r.topic == topic]


def test_an_open_transaction_holds_the_lso_until_the_broker_aborts_it(
    spark: SparkSession, kafka_broker: BrokerHandle, stuck_cfg: config.Config
) -> None:
    bootstrap = kafka_broker.bootstrap
    tag = uuid.uuid4().hex[:8]
    topic, group, txn_id = f"stuck-{tag}", f"stuck-reader-{tag}", f"stuck-txn-{tag}"
    create_topic(bootstrap, topic, 1)
    before = Producer({"bootstrap.servers": bootstrap})
    for _ in range(5):
        before.produce(topic, b"before", partition=0)
    assert before.flush(30) == 0
    txn = TransactionalProducer(bootstrap, txn_id, transaction_timeout_ms=TIMEOUT_MS).init()

    query, _ = ingest.start(spark, stuck_cfg, query_name=f"stuck_{tag}")
    try:
        with Traffic(bootstrap, topic, group) as traffic:
            # The query's first batches (tables, JVM warm-up) take longer than the bound on a
            # small machine: the transaction opens once the query has read the group's commits,
            # so its timeout measures detection, not start-up.
            def reading() -> bool:
                assert traffic.error is None, traffic.error
                commits = spark.table(catalogue.table_name(stuck_cfg, "offset_commits"))
                return commits.where(f"group_id = '{group}'").limit(1).count() > 0

            wait_until(reading, STARTUP_S, "the ingest query to read the group's commits")
            txn.begin()
            txn.send(topic, b"held", partition=0)
            txn.leave_open()
            opened = time.monotonic()
            first = list_offsets(bootstrap, [(topic, 0)], read_committed=True)[(topic, 0)]
            assert first >= 5  # the open transaction's first offset, after the plain records

            def detected() -> bool:
                assert traffic.error is None, traffic.error
                return any(r.resolved_at is None for r in _stuck(spark, stuck_cfg, topic))

            wait_until(detected, TIMEOUT_MS / 1000, "the stuck partition in stuck_partitions")
            assert time.monotonic() - opened < TIMEOUT_MS / 1000  # before the broker aborted
            (row,) = _stuck(spark, stuck_cfg, topic)
            assert (row.partition, row.last_stable_offset, row.first_offset) == (0, first, first)
            assert (row.cause, row.transactional_id, row.first_offset_source) == (
                "open_transaction",
                txn_id,
                "lso",  # the AdminClient cannot describe producers: the LSO is the first offset
            )
            assert row.producer_id is not None
            assert row.producer_epoch is not None
            assert row.transaction_timeout_ms == TIMEOUT_MS
            assert row.open_for_ms is not None
            assert row.open_for_ms >= 5_000
            assert row.blocked_groups == (group,)
            assert row.high_watermark > first + 1  # plain records kept arriving after it
            open_now = rules.stuck_lso(
                rules.RuleInputs(
                    as_of=row.sampled_at,
                    since=None,
                    data_partitions=frozenset({f"{topic}:0"}),
                    stuck=(row,),
                ),
                stuck_cfg.alerts,
            )
            (finding,) = open_now
            assert finding.resolved_at is None
            assert f"transactional id {txn_id}" in finding.reason
            assert f"blocked: {group}" in finding.reason

            # The broker's timeout check aborts the transaction; the LSO moves past it.
            def resolved() -> bool:
                assert traffic.error is None, traffic.error
                rows = _stuck(spark, stuck_cfg, topic)
                return bool(rows) and all(r.resolved_at is not None for r in rows)

            wait_until(resolved, 3 * TIMEOUT_MS / 1000, "the LSO to move after the abort")
            assert time.monotonic() - opened >= TIMEOUT_MS / 1000
            assert list_offsets(bootstrap, [(topic, 0)])[(topic, 0)] > first

            # The LSO moves once the abort marker is written; the coordinator's record that
            # completes the abort follows the markers, so the query may see it a batch later.
            def aborted() -> bool:
                assert traffic.error is None, traffic.error
                txns = spark.table(catalogue.table_name(stuck_cfg, "transactions"))
                rows = txns.where(f"transactional_id = '{txn_id}'").collect()
                return [r["outcome"] for r in rows] == ["aborted"]

            wait_until(aborted, TIMEOUT_MS / 1000, "the abort in transactions")
        (done,) = _stuck(spark, stuck_cfg, topic)
        assert done.stuck_since == row.stuck_since
        assert done.resolved_at is not None
        assert done.resolved_at > row.detected_at
        txns = spark.table(catalogue.table_name(stuck_cfg, "transactions")).where(
            f"transactional_id = '{txn_id}'"
        )
        assert [r["outcome"] for r in txns.collect()] == ["aborted"]
        (closed,) = rules.stuck_lso(
            rules.RuleInputs(
                # the sample that saw the LSO move (sampled_at stays the last stuck sample)
                as_of=done.updated_at,
                since=None,
                data_partitions=frozenset({f"{topic}:0"}),
                stuck=(done,),
            ),
            stuck_cfg.alerts,
        )
        assert closed.resolved_at == done.resolved_at
        assert closed.alert_id == finding.alert_id
    finally:
        ingest.stop_between_batches(query)
        txn.close()
        spark.sql(f"DROP SCHEMA IF EXISTS {catalogue.schema_name(stuck_cfg)} CASCADE")
