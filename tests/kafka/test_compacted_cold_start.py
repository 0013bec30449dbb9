"""A cold start on a ``__consumer_offsets`` that Kafka's log cleaner has really compacted.

A broker of its own rolls its segments every few hundred milliseconds and cleans any dirty log
(``log.roll.ms``, ``log.cleaner.min.cleanable.ratio``, ``log.cleaner.backoff.ms``): one group
commits twenty rounds and stops, two others keep committing until the cleaner's checkpoint has
passed the first group's last commit -- its older commits are gone, its newest per partition is
kept. A query with a fresh checkpoint then reads the topic from the earliest offset.

What it must do, deliberately (``docs/reliability.md``): read every record that survived, say
in ``batch_audit.offsets_not_seen`` exactly how many offsets the cleaner removed below and
between them, and end with each group's committed offsets equal to what the broker's
OffsetFetch answers.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from pyspark.sql import SparkSession

from offsetscope import config
from offsetscope.pipelines import ingest
from offsetscope.protocol.records import OFFSETS_TOPIC
from offsetscope.spark import tables as catalogue
from offsetscope.verify.harness import clients
from offsetscope.verify.harness.broker import Broker, BrokerHandle, throwaway

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.streaming]

PARTITIONS = 2
EARLY_ROUNDS = 20
COMPACTION_DEADLINE_S = 120.0

# Segments roll after 300 ms of appends; any dirty segment is cleanable at once.
CLEANER = {
    "log.roll.ms": "300",
    "log.cleaner.backoff.ms": "100",
    "log.cleaner.min.cleanable.ratio": "0.01",
    "log.segment.delete.delay.ms": "1000",
}


@pytest.fixture
def compacting_broker(offsetscope_config: config.Config) -> Iterator[tuple[Broker, BrokerHandle]]:
    settings = dataclasses.replace(
        offsetscope_config.broker,
        name=f"compact-{os.getpid()}",
        offsets_partitions=1,  # every group's records in one partition, one cleaner log
        properties={**offsetscope_config.broker.properties, **CLEANER},
    )
    with throwaway(settings) as started:
        yield started


def _cleaned_up_to(data_dir: Path) -> int:
    """The cleaner's checkpoint for ``__consumer_offsets-0``: every offset below it is clean."""
    checkpoint = data_dir / "cleaner-offset-checkpoint"
    if not checkpoint.is_file():
        return 0
    for line in checkpoint.read_text().splitlines()[2:]:
        topic, partition, offset = line.split()
        if (topic, partition) == (OFFSETS_TOPIC, "0"):
            return int(offset)
    return 0


def _active_segment(data_dir: Path) -> int:
    """Base offset of ``__consumer_offsets-0``'s active (newest) segment, which is never cleaned."""
    return max(int(f.stem) for f in (data_dir / f"{OFFSETS_TOPIC}-0").glob("*.log"))


def _surviving_offsets(bootstrap: str, end: int) -> list[int]:
    """The offsets of ``__consumer_offsets-0`` a consumer reads from the beginning up to ``end``."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(OFFSETS_TOPIC, 0, 0)])
        offsets: list[int] = []
        while not offsets or offsets[-1] < end - 1:
            msg = consumer.poll(10.0)
            assert msg is not None, f"no record after offset {offsets[-1:]} (end {end})"
            assert msg.error() is None, msg.error()
            offsets.append(msg.offset())
        return offsets
    finally:
        consumer.close()


def test_a_cold_start_on_a_compacted_offsets_topic_audits_what_the_cleaner_removed(
    spark: SparkSession,
    compacting_broker: tuple[Broker, BrokerHandle],
    offsetscope_config: config.Config,
    tmp_path: Path,
) -> None:
    broker, handle = compacting_broker
    bootstrap = handle.bootstrap
    tag = uuid.uuid4().hex[:8]
    topic = f"compact-orders-{tag}"
    early, busy = f"early-{tag}", [f"busy-{tag}-{i}" for i in range(2)]
    clients.create_topic(bootstrap, topic, PARTITIONS)

    def commit(group: str, offset: int) -> None:
        clients.commit_without_membership(
            bootstrap, group, {(topic, p): offset for p in range(PARTITIONS)}
        )

    for offset in range(1, EARLY_ROUNDS + 1):
        commit(early, offset)
    offsets_end = clients.list_offsets(bootstrap, [(OFFSETS_TOPIC, 0)], read_committed=False)
    early_end = offsets_end[(OFFSETS_TOPIC, 0)]
    deadline = time.monotonic() + COMPACTION_DEADLINE_S
    rounds = 0
    # The busy groups commit until the cleaner has cleaned past the early group's last record.
    while _cleaned_up_to(broker.paths.data_dir) < early_end:
        assert time.monotonic() < deadline, "the log cleaner never cleaned __consumer_offsets"
        rounds += 1
        for group in busy:
            commit(group, rounds)
    # No more appends: once the cleaner reaches the active segment, the log stays as it is.
    data_dir = broker.paths.data_dir
    while _cleaned_up_to(data_dir) < _active_segment(data_dir):
        assert time.monotonic() < deadline, "the log cleaner never caught up"
        time.sleep(0.1)  # waiting for the cleaner's checkpoint file, not timing a result
    committed = {g: clients.committed_offsets(bootstrap, g) for g in [early, *busy]}
    # The cleaner would go on cleaning whatever the coordinator appends later (it writes records
    # of its own), under the reads below: the broker comes back on the same log without it, so
    # what the query reads and what a plain consumer reads afterwards are the same log.
    gc.collect()  # the AdminClients above, before their broker goes (else they retry at it)
    handle.stop()
    frozen = dataclasses.replace(
        broker.config, properties={**broker.config.properties, "log.cleaner.enable": "false"}
    )
    bootstrap = Broker(frozen).start(tie_to_parent=True).bootstrap

    cfg = config.with_kafka_source(offsetscope_config, bootstrap)
    cfg = config.with_storage(cfg, schema=f"t_compact_{tag}", checkpoint_dir=tmp_path / "cp")
    cfg = config.with_pipeline(cfg, trigger="available_now")
    try:
        ingest.run(spark, cfg, query_name=f"compact_{tag}")

        audit = spark.table(catalogue.table_name(cfg, "batch_audit")).collect()
        parts = [p for a in audit for p in a["source_partitions"] if p["topic"] == OFFSETS_TOPIC]
        end = max(p["last_offset"] for p in parts) + 1
        assert end >= early_end + len(busy) * rounds  # it read past every commit made above
        surviving = _surviving_offsets(bootstrap, end)
        assert len(surviving) < end  # the cleaner removed records
        assert min(p["first_offset"] for p in parts) == surviving[0]
        assert sum(p["offsets_not_seen"] for p in parts) == end - len(surviving)
        assert sum(a["rows_in"] for a in audit) == len(surviving)

        raw = spark.table(catalogue.table_name(cfg, "raw_records")).where(
            f"topic = '{OFFSETS_TOPIC}'"
        )
        assert sorted(r["offset"] for r in raw.select("offset").collect()) == surviving

        rows = spark.table(catalogue.table_name(cfg, "offset_commits")).collect()
        # The early group's commits were all cleaned but the newest per partition.
        assert sorted((r["partition"], r["offset"]) for r in rows if r["group_id"] == early) == [
            (p, EARLY_ROUNDS) for p in range(PARTITIONS)
        ]
        for group, expected in committed.items():
            newest: dict[tuple[str, int], tuple[int, int]] = {}
            for r in rows:
                if r["group_id"] == group:
                    key = (r["topic"], r["partition"])
                    newest[key] = max(newest.get(key, (-1, -1)), (r["record_offset"], r["offset"]))
            assert {k: v[1] for k, v in newest.items()} == expected, group
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {cfg.storage.schema} CASCADE")
