"""Produce a simulated cluster's records to a real broker, into mirror topics.

Internal topics cannot be produced to, so each simulated topic goes to a *mirror* topic with the
same partition count: ``__consumer_offsets`` -> ``<prefix>consumer_offsets``,
``__transaction_state`` -> ``<prefix>transaction_state``, a data topic ``orders`` ->
``<prefix>orders`` (names configurable). Every record keeps its key, value (tombstones stay
tombstones), partition and order within the partition; timestamps are shifted so the scenario
starts at the moment of mirroring (a broker would otherwise delete week-old segments at once),
unless ``keep_timestamps``.

A client cannot write control records, so transactions are mirrored as a ``read_committed``
reader sees them: records of committed transactions are produced once their COMMIT marker is
reached, records of aborted transactions are left out (``include_aborted`` produces them too,
as plain records). The internal-topic mirrors are created compacted, as the internal topics are.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from offsetscope.sim.coordinator.log import LogRecord, LogStore

COMPACTED = {"cleanup.policy": "compact"}


@dataclass(frozen=True, slots=True)
class MirrorNames:
    """Mirror topic names: explicit ones for the internal topics, a prefix for the rest."""

    offsets_topic: str = "sim.consumer_offsets"
    transaction_topic: str = "sim.transaction_state"
    prefix: str = "sim."

    def name(self, topic: str) -> str:
        if topic == "__consumer_offsets":
            return self.offsets_topic
        if topic == "__transaction_state":
            return self.transaction_topic
        return self.prefix + topic


@dataclass(slots=True)
class MirrorReport:
    topics: dict[str, int] = field(default_factory=dict)  # mirror topic -> partitions
    produced: int = 0
    skipped_aborted: int = 0
    skipped_control: int = 0


def mirror_records(
    logs: LogStore, *, include_aborted: bool = False, report: MirrorReport | None = None
) -> dict[tuple[str, int], list[LogRecord]]:
    """The records to produce, per (simulated topic, partition), in log order.

    Transactional records are held until their producer's marker in that partition: kept on
    COMMIT, dropped on ABORT (kept with ``include_aborted``); records of a transaction still
    open at the end are dropped, as a ``read_committed`` reader never sees them.
    """
    report = report if report is not None else MirrorReport()
    out: dict[tuple[str, int], list[LogRecord]] = {}
    for log in logs:
        kept: list[LogRecord] = []
        open_txn: dict[int, list[LogRecord]] = {}
        for batch in log.batches:
            if batch.is_control:
                report.skipped_control += len(batch.records)
                held = open_txn.pop(batch.producer_id, [])
                committed = (batch.records[0].key or b"\x00\x00\x00\x00")[2:4] == b"\x00\x01"
                if committed or include_aborted:
                    kept.extend(held)
                else:
                    report.skipped_aborted += len(held)
                continue
            if batch.is_transactional:
                open_txn.setdefault(batch.producer_id, []).extend(batch.records)
            else:
                kept.extend(batch.records)
        report.skipped_aborted += sum(len(held) for held in open_txn.values())
        out[(log.topic, log.partition)] = kept
    return out


def mirror_to_broker(
    logs: LogStore,
    bootstrap: str,
    *,
    names: MirrorNames | None = None,
    start_ms: int,
    keep_timestamps: bool = False,
    include_aborted: bool = False,
    client_config: Mapping[str, str] | None = None,
    timeout_s: float = 60.0,
) -> MirrorReport:
    """Create the mirror topics (if missing) and produce every record to them.

    Args:
        logs: the simulated partitions.
        bootstrap: ``host:port`` of the broker.
        names: mirror topic names.
        start_ms: the scenario's virtual start (timestamps are shifted relative to it).
        keep_timestamps: produce the virtual timestamps unchanged.
        include_aborted: also produce records of aborted transactions.
        client_config: extra confluent-kafka settings (security, ...).
        timeout_s: how long topic creation and the final flush may take.

    Raises:
        RuntimeError: a mirror topic exists with another partition count, or delivery failed.
    """
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    names = names or MirrorNames()
    config: dict[str, str | int | float | bool] = {
        "bootstrap.servers": bootstrap,
        **(client_config or {}),
    }
    admin = AdminClient(config)
    report = MirrorReport()
    wanted = {names.name(t): n for t, n in logs.partition_counts.items()}
    existing = admin.list_topics(timeout=timeout_s).topics
    create = []
    for topic, partitions in wanted.items():
        if topic in existing:
            have = len(existing[topic].partitions)
            if have != partitions:
                raise RuntimeError(f"mirror topic {topic} has {have} partitions, not {partitions}")
        else:
            internal = topic in (names.offsets_topic, names.transaction_topic)
            create.append(NewTopic(topic, partitions, 1, config=COMPACTED if internal else {}))
    if create:
        for topic, future in admin.create_topics(create, request_timeout=timeout_s).items():
            try:
                future.result()
            except Exception as exc:
                raise RuntimeError(f"creating mirror topic {topic} failed: {exc}") from exc
    report.topics = dict(wanted)
    shift = 0 if keep_timestamps else time.time_ns() // 1_000_000 - start_ms
    failures: list[str] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            failures.append(f"{msg.topic()}-{msg.partition()}: {err}")

    producer = Producer({**config, "linger.ms": 20, "acks": "all"})
    chosen = mirror_records(logs, include_aborted=include_aborted, report=report)
    for (topic, partition), records in chosen.items():
        target = names.name(topic)
        for record in records:
            while True:
                try:
                    producer.produce(
                        target,
                        key=record.key,
                        value=record.value,
                        partition=partition,
                        timestamp=record.timestamp + shift,
                        on_delivery=delivered,
                    )
                    break
                except BufferError:
                    # The local queue is full: serve delivery reports, then try again.
                    producer.poll(0.1)
            report.produced += 1
            if report.produced % 10_000 == 0:
                producer.poll(0)
    remaining = producer.flush(timeout_s)
    if remaining:
        raise RuntimeError(f"{remaining} records were not delivered within {timeout_s} s")
    if failures:
        raise RuntimeError(f"{len(failures)} records failed: {failures[0]}")
    return report
