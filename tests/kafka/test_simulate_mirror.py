"""``offsetscope simulate --bootstrap``: the same records in mirror topics on a real broker."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition

from offsetscope.sim.scenarios.engine import simulate
from offsetscope.sim.scenarios.mirror import MirrorNames, mirror_records, mirror_to_broker
from offsetscope.sim.scenarios.spec import load_scenario
from offsetscope.verify.harness.broker import BrokerHandle

pytestmark = pytest.mark.kafka


def _read_all(
    bootstrap: str, topic: str, partitions: int
) -> dict[int, list[tuple[bytes | None, bytes | None]]]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"mirror-check-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    out: dict[int, list[tuple[bytes | None, bytes | None]]] = {p: [] for p in range(partitions)}
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), 30)[1] for p in out}
        consumer.assign([TopicPartition(topic, p, 0) for p in out])
        while sum(len(v) for v in out.values()) < sum(ends.values()):
            message = consumer.poll(10)
            assert message is not None, "mirror topic read timed out"
            assert message.error() is None, message.error()
            out[message.partition()].append((message.key(), message.value()))
    finally:
        consumer.close()
    return out


def test_mirror_produces_the_same_records(kafka_broker: BrokerHandle) -> None:
    scenario = load_scenario("transactions", params=None)
    result = simulate(scenario)
    tag = uuid.uuid4().hex[:6]
    names = MirrorNames(f"m{tag}.offsets", f"m{tag}.txn", f"m{tag}.")
    report = mirror_to_broker(
        result.cluster.logs, kafka_broker.bootstrap, names=names, start_ms=scenario.start_ms
    )
    expected = mirror_records(result.cluster.logs)
    assert report.produced == sum(len(v) for v in expected.values())
    assert report.skipped_aborted > 0
    for topic, partitions in result.cluster.logs.partition_counts.items():
        assert report.topics[names.name(topic)] == partitions
    # Same keys and values, same partitions, same order -- internal topics and data topics.
    for topic in ("__consumer_offsets", "enriched"):
        partitions = result.cluster.logs.partition_counts[topic]
        got = _read_all(kafka_broker.bootstrap, names.name(topic), partitions)
        for p in range(partitions):
            assert got[p] == [(r.key, r.value) for r in expected[(topic, p)]], (topic, p)
