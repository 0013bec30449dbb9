"""Kafka itself as the oracle for the log format (needs ``make install``: ``build/jvm``).

* **Byte identity**: ``tests/fixtures/log/KafkaBatchOracle.java`` builds batches with Kafka
  4.4's own ``MemoryRecordsBuilder`` (every magic and codec, producer ids, transactions, control
  batches, LogAppendTime, delete horizons, compaction gaps, empty batches); ours must be the
  same bytes. Two documented exceptions: snappy blocks (snappy-java runs the C++ snappy, we the
  Rust port; the framing is identical and each side reads the other) and LZ4 levels 1-2.
* **DumpLogSegments** reads a partition directory written by :class:`PartitionWriter` (every
  codec, legacy messages, control batches, indexes, txn index, snapshots) and prints, for every
  batch and record, the same fields our reader returns, with ``isvalid: true``.
* **A real broker** serves a directory we wrote: a topic is created, the broker stopped, the
  partition's files replaced by ours (same topic id), the broker restarted on them; consumers
  then read our records back, ``read_committed`` hides the aborted transaction (``.txnindex``)
  and timestamp lookups land on the right offsets (``.timeindex``).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from offsetscope import config
from offsetscope.protocol.log import (
    Compression,
    LogConfig,
    PartitionWriter,
    RecordBatch,
    RecordSpec,
    TimestampType,
    encode_batch,
    encode_empty_batch,
    encode_end_txn_marker_batch,
    list_segments,
    read_batches,
    read_offset_index,
    read_partition_dir,
    read_time_index,
    read_txn_index,
)
from offsetscope.verify.harness.broker import Broker, BrokerHandle, run_dump_log

pytestmark = pytest.mark.kafka

ROOT = Path(__file__).resolve().parents[2]
KAFKA_JARS = ROOT / "build" / "jvm" / "kafka"
ORACLE = ROOT / "tests" / "fixtures" / "log" / "KafkaBatchOracle.java"
T0 = 1700000000000


# ------------------------------------------------------------------ byte identity oracle


@dataclasses.dataclass(frozen=True)
class Case:
    label: str
    line: str
    build: Callable[[], bytes]
    identical: bool = True


def _hex(blob: bytes | None) -> str:
    if blob is None:
        return "-"
    return blob.hex() if blob else "E"


def _batch_case(
    label: str,
    specs: list[RecordSpec],
    *,
    identical: bool = True,
    magic: int = 2,
    codec: Compression = Compression.NONE,
    level: int | None = None,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time: int = -1,
    base_offset: int = 0,
    producer: tuple[int, int, int] = (-1, -1, -1),
    transactional: bool = False,
    control: bool = False,
    leader_epoch: int = 0,
    horizon: int | None = None,
    last_offset: int | None = None,
) -> Case:
    pid, epoch, seq = producer
    ts_name = "LogAppendTime" if timestamp_type is TimestampType.LOG_APPEND_TIME else "CreateTime"
    lines = [
        " ".join(
            str(x)
            for x in (
                "CASE",
                magic,
                codec.codec_name,
                "-" if level is None else level,
                ts_name,
                log_append_time,
                base_offset,
                pid,
                epoch,
                seq,
                int(transactional),
                int(control),
                leader_epoch,
                -1 if horizon is None else horizon,
                "-" if last_offset is None else last_offset,
            )
        )
    ]
    offset = base_offset
    for spec in specs:
        offset = spec.offset if spec.offset is not None else offset
        headers = ",".join(f"{k}={_hex(v)}" for k, v in spec.headers) or "-"
        lines.append(f"REC {offset} {spec.timestamp} {_hex(spec.key)} {_hex(spec.value)} {headers}")
        offset += 1
    lines.append("END")

    def build() -> bytes:
        return encode_batch(
            specs,
            base_offset=base_offset,
            magic=magic,
            compression=codec,
            compression_level=level,
            timestamp_type=timestamp_type,
            log_append_time=log_append_time,
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
            is_transactional=transactional,
            is_control=control,
            partition_leader_epoch=leader_epoch,
            delete_horizon_ms=horizon,
            last_offset=last_offset,
        )

    return Case(label, "\n".join(lines), build, identical)


def _specs(
    n: int, *, value_size: int = 30, headers: bool = False, seed: int = 0
) -> list[RecordSpec]:
    out = []
    for i in range(n):
        key = b"group-%05d-topic-%d" % (i, seed)
        value = None if i % 7 == 3 else bytes((i * 31 + j * seed) % 251 for j in range(value_size))
        hdrs = (("trace", b"%d" % i), ("n", None)) if headers and i % 2 else ()
        out.append(RecordSpec(key, value, T0 + 13 * i, hdrs))
    return out


def _cases() -> list[Case]:
    cases = []
    for codec in Compression:
        identical = codec is not Compression.SNAPPY
        cases += [
            _batch_case(
                f"v2 {codec.codec_name} small",
                _specs(5, headers=True),
                codec=codec,
                identical=identical,
            ),
            _batch_case(f"v2 {codec.codec_name} one", _specs(1), codec=codec, identical=identical),
            _batch_case(
                f"v2 {codec.codec_name} 3000",
                _specs(3000, value_size=60),
                codec=codec,
                identical=identical,
            ),
            _batch_case(
                f"v2 {codec.codec_name} LogAppendTime",
                _specs(4),
                codec=codec,
                timestamp_type=TimestampType.LOG_APPEND_TIME,
                log_append_time=T0 + 99999,
                identical=identical,
            ),
        ]
    cases += [
        _batch_case(f"gzip level {lvl}", _specs(500), codec=Compression.GZIP, level=lvl)
        for lvl in (1, 9)
    ]
    cases += [
        _batch_case(
            f"lz4 level {lvl}", _specs(2000, value_size=50), codec=Compression.LZ4, level=lvl
        )
        for lvl in (3, 12, 17)
    ]
    cases += [
        _batch_case(
            f"zstd level {lvl}", _specs(2000, value_size=50), codec=Compression.ZSTD, level=lvl
        )
        for lvl in (-5, 1, 10, 19)
    ]
    for magic in (0, 1):
        for codec in (Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4):
            identical = codec is not Compression.SNAPPY
            cases.append(
                _batch_case(
                    f"v{magic} {codec.codec_name}",
                    _specs(6),
                    magic=magic,
                    codec=codec,
                    base_offset=40,
                    identical=identical,
                )
            )
            cases.append(
                _batch_case(
                    f"v{magic} {codec.codec_name} 1500",
                    _specs(1500, value_size=70),
                    magic=magic,
                    codec=codec,
                    base_offset=40,
                    identical=identical,
                )
            )
        cases.append(
            _batch_case(
                "v1 gzip LogAppendTime",
                _specs(3),
                magic=1,
                codec=Compression.GZIP,
                timestamp_type=TimestampType.LOG_APPEND_TIME,
                log_append_time=T0 + 5555,
            )
        )
    cases += [
        _batch_case("idempotent, sequence near wrap", _specs(3), producer=(77, 2, 2**31 - 2)),
        _batch_case(
            "transactional", _specs(3), producer=(77, 2, 5), transactional=True, leader_epoch=4
        ),
        _batch_case("delete horizon", _specs(3), horizon=T0 + 500000),
        _batch_case(
            "compacted subset with gaps",
            [RecordSpec(b"a", b"1", T0, (), 12), RecordSpec(b"b", None, T0 + 5, (), 15)],
            base_offset=10,
            last_offset=19,
            producer=(5, 0, 0),
        ),
        _batch_case(
            "control record of an unknown type",
            [RecordSpec(b"\x00\x00\x00\x05", b"\x00\x00", T0)],
            producer=(9, 0, -1),
            transactional=True,
            control=True,
        ),
        _batch_case("tombstone", [RecordSpec(b"k", None, 0)]),
        _batch_case("empty key and value", [RecordSpec(b"", b"", 1)]),
        _batch_case("no timestamp", [RecordSpec(b"k", b"v", -1)]),
    ]
    for committed in (True, False):
        cases.append(
            Case(
                f"end txn marker commit={committed}",
                f"MARKER 120 77 3 {'commit' if committed else 'abort'} 9 {T0 + 123} 5",
                lambda committed=committed: encode_end_txn_marker_batch(
                    base_offset=120,
                    producer_id=77,
                    producer_epoch=3,
                    committed=committed,
                    coordinator_epoch=9,
                    timestamp=T0 + 123,
                    partition_leader_epoch=5,
                ),
            )
        )
    cases.append(
        Case(
            "empty batch kept by compaction",
            f"EMPTY 30 39 5 1 100 1 0 2 CreateTime {T0 + 777}",
            lambda: encode_empty_batch(
                base_offset=30,
                last_offset=39,
                producer_id=5,
                producer_epoch=1,
                base_sequence=100,
                is_transactional=True,
                partition_leader_epoch=2,
                max_timestamp=T0 + 777,
            ),
        )
    )
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def kafka_bytes() -> dict[str, bytes]:
    """Every case built by Kafka's MemoryRecordsBuilder (one JVM for all of them)."""
    java = shutil.which("java")
    assert java is not None, "java is needed for the Kafka oracle"
    assert any(KAFKA_JARS.glob("kafka-clients-*.jar")), f"run make install: no jars in {KAFKA_JARS}"
    result = subprocess.run(
        [java, "-cp", f"{KAFKA_JARS}/*", str(ORACLE)],
        input="\n".join(c.line for c in CASES) + "\n",
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    lines = result.stdout.splitlines()
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(lines) == len(CASES), result.stderr[-3000:]
    errors = [
        f"{c.label}: {line}" for c, line in zip(CASES, lines, strict=True) if line.startswith("ERR")
    ]
    assert not errors, errors
    return {c.label: bytes.fromhex(line) for c, line in zip(CASES, lines, strict=True)}


@pytest.mark.parametrize("case", [c for c in CASES if c.identical], ids=lambda c: c.label)
def test_batches_are_byte_identical_to_kafka(case: Case, kafka_bytes: dict[str, bytes]) -> None:
    ours = case.build()
    theirs = kafka_bytes[case.label]
    first_difference = next(
        (i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b),
        min(len(ours), len(theirs)),
    )
    assert ours == theirs, f"{case.label}: first difference at byte {first_difference}"


@pytest.mark.parametrize("case", [c for c in CASES if not c.identical], ids=lambda c: c.label)
def test_snappy_batches_decode_the_same_both_ways(
    case: Case, kafka_bytes: dict[str, bytes]
) -> None:
    ours = case.build()
    theirs = kafka_bytes[case.label]

    def content(data: bytes) -> list[tuple[int, int, bytes | None, bytes | None]]:
        return [
            (r.offset, r.timestamp, r.key, r.value)
            for b in read_batches(data, strict=True)
            for r in b.records
        ]

    assert content(ours) == content(theirs)
    # Same framing: headers up to the compressed section, then the xerial header.
    head = 61 if theirs[16] == 2 else 0
    assert ours[:8] == theirs[:8]
    xerial = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"
    assert xerial in ours[head:]
    assert xerial in theirs[head:]


# ------------------------------------------------------------------- DumpLogSegments

_FIELD = re.compile(r"(\w+): (\S+)")


def _fields(line: str) -> dict[str, str]:
    return dict(_FIELD.findall(line))


def _expected_batch_line(batch: RecordBatch) -> dict[str, str]:
    ts_name = batch.timestamp_type.display_name
    common = {
        "position": str(batch.position),
        ts_name: str(batch.max_timestamp),
        "size": str(batch.size),
        "magic": str(batch.magic),
        "compresscodec": batch.compression.codec_name,
        "crc": str(batch.crc),
        "isvalid": "true",
    }
    if batch.magic < 2:
        return {"offset": str(batch.last_offset), **common}
    horizon = batch.delete_horizon_ms
    return {
        "baseOffset": str(batch.base_offset),
        "lastOffset": str(batch.last_offset),
        "count": str(batch.records_count),
        "baseSequence": str(batch.base_sequence),
        "lastSequence": str(batch.last_sequence),
        "producerId": str(batch.producer_id),
        "producerEpoch": str(batch.producer_epoch),
        "partitionLeaderEpoch": str(batch.partition_leader_epoch),
        "isTransactional": str(batch.is_transactional).lower(),
        "isControl": str(batch.is_control).lower(),
        "deleteHorizonMs": "OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]",
        **common,
    }


def _write_everything(directory: Path) -> None:
    with PartitionWriter(
        directory, config=LogConfig(segment_bytes=8_000), topic_id=uuid.uuid4()
    ) as log:
        for i, codec in enumerate(Compression):
            for j in range(12):
                log.append(_specs(8, seed=i * 100 + j), compression=codec)
            pid = 1000 + i
            log.append(
                _specs(3, seed=i),
                producer_id=pid,
                producer_epoch=0,
                base_sequence=0,
                is_transactional=True,
                compression=codec,
            )
            log.append_end_txn_marker(
                producer_id=pid,
                producer_epoch=0,
                committed=i % 2 == 0,
                coordinator_epoch=3,
                timestamp=T0 + i,
            )
            if codec is not Compression.ZSTD:
                log.append(_specs(4, seed=i), magic=1, compression=codec)
                log.append(_specs(2, seed=i), magic=0, compression=codec)
        log.append(
            _specs(3, headers=True),
            timestamp_type=TimestampType.LOG_APPEND_TIME,
            log_append_time=T0 + 10**6,
        )
        log.append(_specs(2), delete_horizon_ms=T0 + 5 * 10**6)
        log.append_bytes(
            encode_empty_batch(
                base_offset=log.next_offset,
                last_offset=log.next_offset + 4,
                producer_id=77,
                producer_epoch=0,
                base_sequence=0,
                max_timestamp=T0,
            )
        )


def test_dump_log_segments_reads_what_the_writer_wrote(tmp_path: Path) -> None:
    directory = tmp_path / "offsetscope-written-0"
    _write_everything(directory)
    segments = list_segments(directory)
    assert len(segments) > 2
    out = run_dump_log([s.log for s in segments], decoder=None, extra_args=["--deep-iteration"])
    batch_lines = [line for line in out.splitlines() if line.startswith(("baseOffset:", "offset:"))]
    record_lines = [line for line in out.splitlines() if line.startswith("| offset:")]
    batches = list(read_partition_dir(directory, strict=True))
    assert len(batch_lines) == len(batches)
    for line, batch in zip(batch_lines, batches, strict=True):
        fields = _fields(line)
        expected = _expected_batch_line(batch)
        assert {k: fields.get(k) for k in expected} == expected, line
    records = [(b, r) for b in batches for r in b.records]
    assert len(record_lines) == len(records)
    for line, (batch, record) in zip(record_lines, records, strict=True):
        fields = _fields(line)
        assert fields["offset"] == str(record.offset)
        assert fields[batch.timestamp_type.display_name] == str(record.timestamp)
        assert (fields["keySize"], fields["valueSize"]) == (
            str(record.key_size),
            str(record.value_size),
        )
        if batch.magic == 2:
            assert fields["sequence"] == str(record.sequence)
        else:
            assert (fields["isValid"], fields["crc"]) == ("true", str(record.crc))
        marker = batch.end_txn_marker()
        if marker is not None:
            kind = "COMMIT" if marker.committed else "ABORT"
            assert f"endTxnMarker: {kind} coordinatorEpoch: {marker.coordinator_epoch}" in line


def test_dump_log_segments_reads_the_index_files(tmp_path: Path) -> None:
    directory = tmp_path / "offsetscope-written-0"
    _write_everything(directory)
    segments = list_segments(directory)
    files = [f for s in segments for f in (s.index, s.time_index, s.txn_index) if f is not None]
    out = run_dump_log(files, decoder=None)
    assert "Mismatches" not in out, out
    assert "not found" not in out, out
    sections = re.split(r"^Dumping (.+)$", out, flags=re.MULTILINE)[1:]
    dumped = dict(zip(sections[0::2], sections[1::2], strict=True))
    for segment in segments:
        assert segment.index is not None
        assert segment.time_index is not None
        entries = read_offset_index(segment.index.read_bytes(), segment.base_offset)
        lines = [
            _fields(x) for x in dumped[str(segment.index)].splitlines() if x.startswith("offset:")
        ]
        assert [(int(x["offset"]), int(x["position"])) for x in lines] == [
            (e.offset, e.position) for e in entries
        ]
        times = read_time_index(segment.time_index.read_bytes(), segment.base_offset)
        lines = [
            _fields(x)
            for x in dumped[str(segment.time_index)].splitlines()
            if x.startswith("timestamp:")
        ]
        assert [(int(x["timestamp"]), int(x["offset"])) for x in lines] == [
            (t.timestamp, t.offset) for t in times
        ]
        if segment.txn_index is not None:
            aborted = read_txn_index(segment.txn_index.read_bytes())
            lines = [
                _fields(x)
                for x in dumped[str(segment.txn_index)].splitlines()
                if x.startswith("version:")
            ]
            assert [
                (
                    int(x["producerId"]),
                    int(x["firstOffset"]),
                    int(x["lastOffset"]),
                    int(x["lastStableOffset"]),
                )
                for x in lines
            ] == [
                (a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset)
                for a in aborted
            ]
    assert any(s.txn_index is not None for s in segments)
    index_entries = [
        read_offset_index(s.index.read_bytes(), s.base_offset) for s in segments if s.index
    ]
    assert sum(map(len, index_entries)) >= 3


# ----------------------------------------------------------------------- a real broker


@pytest.fixture(scope="module")
def own_broker() -> Iterator[Broker]:
    """A broker of this module alone: the test stops and restarts it on our files."""
    cfg = dataclasses.replace(config.load("local").broker, name=f"pytest-log-{os.getpid()}")
    broker = Broker(cfg)
    try:
        yield broker
    finally:
        handle = broker.attach()
        if handle is not None:
            handle.stop()
        shutil.rmtree(broker.paths.root, ignore_errors=True)


def _consume(handle: BrokerHandle, topic: str, isolation: str, expected: int) -> list[tuple]:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": handle.bootstrap,
            "group.id": f"h3-{isolation}-{uuid.uuid4()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    try:
        consumer.subscribe([topic])
        out: list[tuple] = []
        deadline = time.monotonic() + 60
        while len(out) < expected and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None or msg.error() is not None:
                continue
            headers = tuple((k, v) for k, v in (msg.headers() or []))
            out.append((msg.offset(), msg.timestamp()[1], msg.key(), msg.value(), headers))
        return out
    finally:
        consumer.close()


def _create_topic(handle: BrokerHandle, topic: str) -> uuid.UUID:
    """Create a one-partition topic and return its topic id."""
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": handle.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=60)
    described = admin.describe_topics(TopicCollection([topic]))[topic].result(timeout=60)
    kafka_id = described.topic_id
    return uuid.UUID(
        bytes=kafka_id.get_most_significant_bits().to_bytes(8, "big", signed=True)
        + kafka_id.get_least_significant_bits().to_bytes(8, "big", signed=True)
    )


def test_a_real_broker_serves_the_directory_we_wrote(own_broker: Broker) -> None:
    from confluent_kafka import TopicPartition

    topic = "offsetscope-log-written"
    handle = own_broker.start(fresh=True, tie_to_parent=True)
    try:
        topic_id = _create_topic(handle, topic)
    finally:
        handle.stop()

    directory = handle.partition_dir(topic, 0)
    for item in directory.iterdir():
        if item.name != "partition.metadata":
            item.unlink()
    expected: list[tuple] = []
    aborted_offsets: set[int] = set()
    with PartitionWriter(
        directory, config=LogConfig(segment_bytes=4_000), topic_id=topic_id
    ) as log:
        ts = T0
        for i, codec in enumerate([*Compression, *Compression]):
            specs = [
                RecordSpec(
                    b"k%d-%d" % (i, j),
                    b"value-%d-%d-" % (i, j) * 10,
                    ts + j,
                    (("h", b"%d" % j),) if j == 1 else (),
                )
                for j in range(20)
            ]
            info = log.append(specs, compression=codec)
            expected += [
                (info.base_offset + j, s.timestamp, s.key, s.value, s.headers)
                for j, s in enumerate(specs)
            ]
            ts += 100
        for pid, committed in ((500, False), (501, True)):
            specs = [RecordSpec(b"txn-%d" % pid, b"v%d" % j, ts + j) for j in range(3)]
            info = log.append(
                specs, producer_id=pid, producer_epoch=0, base_sequence=0, is_transactional=True
            )
            rows = [
                (info.base_offset + j, s.timestamp, s.key, s.value, ()) for j, s in enumerate(specs)
            ]
            expected += rows
            if not committed:
                aborted_offsets |= {r[0] for r in rows}
            log.append_end_txn_marker(
                producer_id=pid,
                producer_epoch=0,
                committed=committed,
                coordinator_epoch=0,
                timestamp=ts + 10,
            )
            ts += 100
        end_offset = log.next_offset
    assert len(list_segments(directory)) > 2

    handle = own_broker.start(tie_to_parent=True)
    try:
        uncommitted = _consume(handle, topic, "read_uncommitted", len(expected))
        assert uncommitted == expected
        committed = _consume(handle, topic, "read_committed", len(expected) - len(aborted_offsets))
        assert committed == [row for row in expected if row[0] not in aborted_offsets]

        from confluent_kafka import Consumer

        probe = Consumer(
            {"bootstrap.servers": handle.bootstrap, "group.id": f"h3-probe-{uuid.uuid4()}"}
        )
        try:
            low, high = probe.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
            assert (low, high) == (0, end_offset)
            target = expected[137][1]
            [found] = probe.offsets_for_times([TopicPartition(topic, 0, target)], timeout=30)
            first_at_or_after = min(row[0] for row in expected if row[1] >= target)
            assert found.offset == first_at_or_after
        finally:
            probe.close()
    finally:
        handle.stop()
