"""The harness broker is a real Kafka 4.4 KRaft node: clients work, internal topics have the
configured shape, Kafka's DumpLogSegments reads its segments, and failures are loud."""

from __future__ import annotations

import dataclasses
import json
import re
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from offsetscope import config
from offsetscope.verify.harness.broker import (
    Broker,
    BrokerHandle,
    BrokerStartError,
    broker_version,
    run_dump_log,
    tools_version,
)

pytestmark = pytest.mark.kafka

OFFSETS = "__consumer_offsets"
TXN = "__transaction_state"


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=30)


def _consume(bootstrap: str, topic: str, group: str, expected: int) -> list[tuple[bytes, bytes]]:
    """Consume ``expected`` records as a member of ``group`` and commit synchronously."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    seen: list[tuple[bytes, bytes]] = []
    try:
        consumer.subscribe([topic])
        for _ in range(120):
            if len(seen) >= expected:
                break
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            seen.append((msg.key(), msg.value()))
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return seen


def test_broker_runs_kafka_4_4_on_loopback(kafka_broker: BrokerHandle) -> None:
    assert broker_version(kafka_broker.config) == "4.4.0"
    assert kafka_broker.is_running()
    host, port = kafka_broker.bootstrap.rsplit(":", 1)
    assert host == "127.0.0.1"
    assert int(port) == kafka_broker.port != kafka_broker.controller_port
    # The chosen ports are written to the work folder.
    saved = json.loads((kafka_broker.root / "ports.json").read_text())
    assert (saved["port"], saved["controller_port"]) == (
        kafka_broker.port,
        kafka_broker.controller_port,
    )
    metadata = AdminClient({"bootstrap.servers": kafka_broker.bootstrap}).list_topics(timeout=10)
    assert {b.id: (b.host, b.port) for b in metadata.brokers.values()} == {
        1: ("127.0.0.1", kafka_broker.port)
    }
    assert "Kafka version: 4.4.0" in kafka_broker.server_log.read_text()


def test_produce_and_consume_round_trip(kafka_broker: BrokerHandle) -> None:
    topic = _unique("roundtrip")
    _create_topic(kafka_broker.bootstrap, topic, partitions=2)
    sent = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(20)]
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap, "enable.idempotence": True})
    for key, value in sent:
        producer.produce(topic, key=key, value=value)
    assert producer.flush(30) == 0

    received = _consume(kafka_broker.bootstrap, topic, _unique("rt-group"), expected=len(sent))

    assert sorted(received) == sorted(sent)
    # Both partitions exist as folders with segment files on disk.
    assert [p.parent.name for p in kafka_broker.segment_files(topic)] == [
        f"{topic}-0",
        f"{topic}-1",
    ]


def test_auto_topic_creation_is_off(kafka_broker: BrokerHandle) -> None:
    topic = _unique("missing")
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap, "message.timeout.ms": 1000})
    errors: list[KafkaError | None] = []
    producer.produce(topic, value=b"x", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(10)

    [error] = errors
    assert error is not None
    assert error.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._MSG_TIMED_OUT)
    metadata = AdminClient({"bootstrap.servers": kafka_broker.bootstrap}).list_topics(timeout=10)
    assert topic not in metadata.topics


def test_group_commit_creates_offsets_topic_and_dump_log_decodes_it(
    kafka_broker: BrokerHandle, offsetscope_config: config.Config
) -> None:
    topic, group = _unique("commits"), _unique("commit-group")
    _create_topic(kafka_broker.bootstrap, topic, partitions=1)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap})
    for i in range(5):
        producer.produce(topic, value=f"m{i}".encode())
    assert producer.flush(30) == 0

    assert len(_consume(kafka_broker.bootstrap, topic, group, expected=5)) == 5

    partitions = offsetscope_config.broker.offsets_partitions
    metadata = AdminClient({"bootstrap.servers": kafka_broker.bootstrap}).list_topics(
        OFFSETS, timeout=10
    )
    assert len(metadata.topics[OFFSETS].partitions) == partitions == 3
    segments = kafka_broker.segment_files(OFFSETS)
    assert [s.parent for s in segments] == [
        kafka_broker.partition_dir(OFFSETS, p) for p in range(partitions)
    ]

    dump = run_dump_log(segments, "offsets", config=kafka_broker.config)

    for segment in segments:
        assert f"Dumping {segment}\nLog starting offset: 0\n" in dump
    commit_key = (
        f'key: {{"type":"1","data":{{"group":"{group}","topic":"{topic}","partition":0}}}} '
        f'payload: {{"version":"'
    )
    commit_lines = [line for line in dump.splitlines() if commit_key in line]
    assert len(commit_lines) == 1
    assert re.search(r'"data":\{"offset":5,', commit_lines[0]), commit_lines[0]
    group_lines = [
        line for line in dump.splitlines() if f'"type":"2","data":{{"group":"{group}"}}' in line
    ]
    # Join (generation 1, one consumer member) and the empty group after it left.
    assert any('"protocolType":"consumer","generation":1,' in line for line in group_lines)
    assert '"memberId":"rdkafka-' in "".join(group_lines)


def test_dump_log_decodes_a_committed_transaction(kafka_broker: BrokerHandle) -> None:
    topic, txn_id = _unique("txn-data"), _unique("txn")
    _create_topic(kafka_broker.bootstrap, topic, partitions=1)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap, "transactional.id": txn_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"in a transaction")
    producer.commit_transaction(30)

    dump = run_dump_log(kafka_broker.segment_files(TXN), "transaction", config=kafka_broker.config)

    states = re.findall(
        rf'key: {{"type":"0","data":{{"transactionalId":"{txn_id}"}}}} '
        r'payload: \{"version":"\d+","data":\{.*?"transactionStatus":("?\w+"?),',
        dump,
    )
    # DumpLogSegments prints the state by name from Kafka 4.4 on (KAFKA-20712), as its id before.
    if tuple(int(p) for p in tools_version(kafka_broker.config).split(".")[:2]) >= (4, 4):
        expected = ['"Empty"', '"Ongoing"', '"PrepareCommit"', '"CompleteCommit"']
    else:
        expected = ["0", "1", "2", "4"]
    assert states == expected


def test_cli_status_reports_the_running_broker(kafka_broker: BrokerHandle) -> None:
    cmd = [sys.executable, "-m", "offsetscope.verify.harness.broker", "status"]
    result = subprocess.run(
        [*cmd, "--name", kafka_broker.config.name],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert f"bootstrap={kafka_broker.bootstrap}" in result.stdout
    assert f"pid={kafka_broker.pid}" in result.stdout


def _failing_broker(base: config.BrokerConfig, tmp_path: Path, **changes: object) -> Broker:
    cfg = dataclasses.replace(
        base,
        work_dir=str(tmp_path),
        name="failing",
        startup_timeout=config.Duration("60s"),
        **changes,
    )
    return Broker(cfg)


def test_invalid_config_fails_with_the_tool_output(
    kafka_broker: BrokerHandle, tmp_path: Path
) -> None:
    broker = _failing_broker(
        kafka_broker.config, tmp_path, properties={"offsets.topic.num.partitions": "three"}
    )

    with pytest.raises(BrokerStartError) as failure:
        broker.start()

    assert "formatting" in str(failure.value)
    assert "offsets.topic.num.partitions" in failure.value.log_tail
    assert "three" in failure.value.log_tail
    assert broker.attach() is None


def test_port_in_use_fails_with_the_broker_log_tail_and_leaves_no_process(
    kafka_broker: BrokerHandle, tmp_path: Path
) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        broker = _failing_broker(kafka_broker.config, tmp_path, port=taken)

        with pytest.raises(BrokerStartError) as failure:
            broker.start()

    assert "exited with code" in str(failure.value)
    assert "Address already in use" in failure.value.log_tail
    assert "--- broker log tail ---" in str(failure.value)
    assert broker.attach() is None
    assert not broker.paths.state_file.exists()
    # No JVM of that work folder is left behind.
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    assert str(broker.paths.properties) not in ps.stdout


def test_committed_offsets_are_visible_to_a_new_consumer(kafka_broker: BrokerHandle) -> None:
    topic, group = _unique("committed"), _unique("committed-group")
    _create_topic(kafka_broker.bootstrap, topic, partitions=1)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap})
    for i in range(3):
        producer.produce(topic, value=f"m{i}".encode())
    assert producer.flush(30) == 0
    _consume(kafka_broker.bootstrap, topic, group, expected=3)

    fresh = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": group})
    try:
        [committed] = fresh.committed([TopicPartition(topic, 0)], timeout=10)
    finally:
        fresh.close()
    assert committed.offset == 3
