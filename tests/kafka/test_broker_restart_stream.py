"""The broker restarted under a running ingest query: the query rides it out, and every offset
commit made before, during and after the restart is in ``offset_commits`` exactly once.

A broker of its own (the session's broker serves the other tests): offset commits of three
groups, the ingest query on a one-second processing-time trigger reads them, the broker is
stopped (controlled shutdown) and started again on the same data and ports while the query keeps
triggering, more commits follow, and the query catches up. Spark's Kafka source and the end
offset sampler see the broker gone for the seconds of the restart; neither may fail the query,
skip a record or read one twice.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession

from offsetscope import config
from offsetscope.pipelines import ingest
from offsetscope.protocol.records import OFFSETS_TOPIC
from offsetscope.spark import tables as catalogue
from offsetscope.verify.harness.broker import Broker, BrokerHandle, throwaway

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.streaming]

PARTITIONS = 2
GROUPS = 3


@pytest.fixture
def own_broker(offsetscope_config: config.Config) -> Iterator[tuple[Broker, BrokerHandle]]:
    with throwaway(
        dataclasses.replace(offsetscope_config.broker, name=f"restart-{os.getpid()}")
    ) as started:
        yield started


def _commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """Commit ``offsets`` for ``group`` the way a consumer with manual assignment does."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        consumer.commit(
            offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False
        )
    finally:
        consumer.close()


def _round(bootstrap: str, groups: list[str], topic: str, first: int) -> list[tuple[str, int, int]]:
    """Three commits per group and partition (offsets ``first`` .. ``first + 2``)."""
    made = []
    for offset in range(first, first + 3):
        for group in groups:
            offsets = dict.fromkeys(range(PARTITIONS), offset)
            _commit(bootstrap, group, topic, offsets)
            made += [(group, p, offset) for p in offsets]
    return made


def test_a_broker_restart_loses_and_doubles_nothing(
    spark: SparkSession,
    offsetscope_config: config.Config,
    own_broker: tuple[Broker, BrokerHandle],
    tmp_path: Path,
) -> None:
    broker, handle = own_broker
    bootstrap = handle.bootstrap
    tag = uuid.uuid4().hex[:8]
    topic = f"restart-orders-{tag}"
    groups = [f"restart-group-{tag}-{i}" for i in range(GROUPS)]
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: its futures need it alive
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(timeout=30)

    cfg = config.with_kafka_source(offsetscope_config, bootstrap)
    cfg = config.with_storage(cfg, schema=f"t_restart_{tag}", checkpoint_dir=tmp_path / "cp")
    cfg = config.with_pipeline(cfg, trigger="processing_time", processing_time="1s")

    made = _round(bootstrap, groups, topic, 1)
    query, pipeline = ingest.start(spark, cfg, query_name=f"restart_{tag}")
    try:
        query.processAllAvailable()
        before = len(pipeline.reports)

        handle.stop()
        # The query keeps triggering against the stopped broker until it is back.
        handle = broker.start(tie_to_parent=True)
        assert handle.bootstrap == bootstrap  # same data folder, same ports
        made += _round(bootstrap, groups, topic, 4)

        query.processAllAvailable()
        assert query.exception() is None
        assert query.isActive
        assert len(pipeline.reports) > before
    finally:
        ingest.stop_between_batches(query)

    try:
        rows = spark.table(catalogue.table_name(cfg, "offset_commits")).collect()
        found = Counter(
            (r["group_id"], r["partition"], r["offset"]) for r in rows if r["group_id"] in groups
        )
        assert found == Counter(made)
        raw = spark.table(catalogue.table_name(cfg, "raw_records")).where(
            f"topic = '{OFFSETS_TOPIC}'"
        )
        assert raw.count() == raw.select("partition", "offset").distinct().count()
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {cfg.storage.schema} CASCADE")
