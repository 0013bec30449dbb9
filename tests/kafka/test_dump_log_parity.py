"""Our ``--format dump-log`` output equals Kafka's own DumpLogSegments, byte for byte.

Segments are written by the log writer with every record type and version of the golden set,
every compression codec, legacy magic 0/1 messages, transactional batches, control batches
(markers and an unknown control type), LogAppendTime, a delete horizon and a torn last batch
(a zero-filled tail is not compared: Kafka's tool dies on it with CorruptRecordException); then
Kafka's tool (the ``kafka-tools`` jar ``make install`` resolved) and offsetscope print them.
This needs the JVM jars, not a running broker.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from golden import GOLDEN, OC_KEY, TX_KEY

from offsetscope.protocol.dump_log import dump_log_lines
from offsetscope.protocol.log import Compression, PartitionWriter
from offsetscope.protocol.log.control import encode_control_key
from offsetscope.protocol.log.model import RecordSpec, TimestampType
from offsetscope.verify.harness.broker import run_dump_log, tools_version

pytestmark = pytest.mark.kafka
T = 1_700_000_000_000


def _status_format() -> str:
    major, minor = (int(x) for x in tools_version().split(".")[:2])
    return "name" if (major, minor) >= (4, 4) else "number"


def _compare(segment: Path, topic: str, decoder: str) -> None:
    theirs = run_dump_log([segment], decoder).splitlines()
    ours = list(dump_log_lines(segment, topic, status_format=_status_format()))
    diff = list(
        difflib.unified_diff(theirs, ours, "DumpLogSegments", "offsetscope", lineterm="", n=0)
    )
    assert diff == [], "\n".join(line[:300] for line in diff[:40])
    assert len(ours) > 4


def test_consumer_offsets_segment(tmp_path: Path) -> None:
    directory = tmp_path / "__consumer_offsets-0"
    golden = [g for g in GOLDEN if g.topic == "__consumer_offsets"]
    with PartitionWriter(directory) as log:
        for g in golden:
            log.append([RecordSpec(g.key, g.value, T)])
        for codec in Compression:
            log.append([RecordSpec(g.key, g.value, T + 1) for g in golden[:9]], compression=codec)
        log.append(
            [RecordSpec(OC_KEY, golden[4].value, T + 2)],
            producer_id=7,
            producer_epoch=1,
            base_sequence=0,
            is_transactional=True,
        )
        log.append_end_txn_marker(
            producer_id=7, producer_epoch=1, committed=True, coordinator_epoch=4, timestamp=T + 3
        )
        log.append_end_txn_marker(
            producer_id=7, producer_epoch=1, committed=False, coordinator_epoch=4, timestamp=T + 4
        )
        log.append(
            [RecordSpec(encode_control_key(77), b"", T + 5)],
            producer_id=7,
            producer_epoch=1,
            is_transactional=True,
            is_control=True,
        )
        log.append(
            [RecordSpec(OC_KEY, golden[2].value, T + 6)],
            timestamp_type=TimestampType.LOG_APPEND_TIME,
            log_append_time=T + 60,
        )
        log.append([RecordSpec(OC_KEY, None, T + 7)], delete_horizon_ms=T + 86_400_000)
        for magic in (0, 1):
            log.append([RecordSpec(OC_KEY, golden[1].value, T + 8)] * 2, magic=magic)
            log.append(
                [RecordSpec(OC_KEY, golden[1].value, T + 8)] * 2,
                magic=magic,
                compression=Compression.GZIP,
            )
        log.append([RecordSpec(OC_KEY, golden[3].value, T + 9)])
    segment = directory / "00000000000000000000.log"
    # A torn last batch, as after a crash mid-write: Kafka prints "Found N invalid bytes".
    with segment.open("r+b") as fh:
        fh.truncate(segment.stat().st_size - 10)
    _compare(segment, "__consumer_offsets", "offsets")


def test_transaction_state_segment(tmp_path: Path) -> None:
    directory = tmp_path / "__transaction_state-0"
    with PartitionWriter(directory) as log:
        for g in GOLDEN:
            if g.topic == "__transaction_state":
                log.append([RecordSpec(g.key, g.value, T)])
        log.append([RecordSpec(TX_KEY, None, T + 1)] * 3)
    _compare(directory / "00000000000000000000.log", "__transaction_state", "transaction")
