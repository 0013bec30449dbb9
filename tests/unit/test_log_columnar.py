"""The columnar fast path against the per-record reader, on everything the writer can make.

The per-record reader is the reference: for any log, the columns must hold exactly its records
(offsets, timestamps, sequences, keys, values, header counts) and report the same problems.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from offsetscope.protocol.log import (
    Compression,
    LogConfig,
    PartitionWriter,
    RecordSpec,
    ScanReport,
    TimestampType,
    encode_batch,
    gather_slices,
    iter_batch_columns,
    iter_segment_columns,
    read_batches,
    read_segment,
    scan_columns,
)

T0 = 1700000000000


def _random_log(directory: Path, seed: int) -> Path:
    """A segment with batches of 1 to 300 records, every codec, legacy entries, markers."""
    rng = random.Random(seed)
    with PartitionWriter(directory, config=LogConfig(segment_bytes=2**30)) as log:
        for b in range(60):
            n = rng.choice([1, 1, 2, 5, 20, 90])
            specs = [
                RecordSpec(
                    None if rng.random() < 0.05 else rng.randbytes(rng.randint(0, 60)),
                    None if rng.random() < 0.1 else rng.randbytes(rng.randint(0, 200)),
                    T0 + rng.randint(0, 10**6),
                    (("h", b"1"),) if rng.random() < 0.02 else (),
                )
                for _ in range(n)
            ]
            codec = rng.choice(list(Compression))
            magic = 2 if rng.random() < 0.9 or codec is Compression.ZSTD else rng.choice([0, 1])
            if magic < 2:
                specs = [RecordSpec(s.key, s.value, s.timestamp) for s in specs]
                log.append(specs, magic=magic, compression=codec)
            elif b % 17 == 5:
                log.append(
                    specs, producer_id=b, producer_epoch=0, base_sequence=0, is_transactional=True
                )
                log.append_end_txn_marker(
                    producer_id=b,
                    producer_epoch=0,
                    committed=b % 2 == 0,
                    coordinator_epoch=1,
                    timestamp=T0,
                )
            else:
                ts_type = rng.choice(list(TimestampType)[1:])
                log.append(
                    specs,
                    compression=codec,
                    timestamp_type=ts_type,
                    log_append_time=T0 + 5 if ts_type is TimestampType.LOG_APPEND_TIME else -1,
                )
    return directory / "00000000000000000000.log"


@pytest.fixture(scope="module")
def random_logs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("columnar")
    return [_random_log(root / f"t-{seed}", seed) for seed in range(3)]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("chunk_bytes", [1000, 64 * 1024, 4 * 1024 * 1024])
def test_columns_equal_the_record_reader(
    seed: int, chunk_bytes: int, random_logs: list[Path]
) -> None:
    path = random_logs[seed]
    batches = list(read_segment(path, strict=True))
    expected = [r for b in batches for r in b.records]
    chunks = list(iter_segment_columns(path, strict=True, chunk_bytes=chunk_bytes))
    records = [c.records for c in chunks]
    assert np.concatenate([c.offset for c in records]).tolist() == [r.offset for r in expected]
    assert np.concatenate([c.timestamp for c in records]).tolist() == [
        r.timestamp for r in expected
    ]
    assert np.concatenate([c.sequence for c in records]).tolist() == [r.sequence for r in expected]
    assert [c.key(i) for c in records for i in range(len(c))] == [r.key for r in expected]
    assert [c.value(i) for c in records for i in range(len(c))] == [r.value for r in expected]
    headers = [c.batches.row(i) for c in chunks for i in range(len(c.batches))]
    assert [(h.position, h.base_offset, h.last_offset, h.crc, h.attributes) for h in headers] == [
        (b.position, b.base_offset, b.last_offset, b.crc, b.attributes) for b in batches
    ]


def test_gather_builds_arrow_layout() -> None:
    data = encode_batch(
        [
            RecordSpec(b"ab", b"x"),
            RecordSpec(None, b""),
            RecordSpec(b"", None),
            RecordSpec(b"c", b"yz"),
        ],
        base_offset=0,
    )
    cols = scan_columns(data, strict=True).records
    offsets, blob, valid = cols.gather("key")
    assert offsets.tolist() == [0, 2, 2, 2, 3]
    assert blob.tobytes() == b"abc"
    assert valid.tolist() == [True, False, True, True]
    offsets, blob, valid = cols.gather("value")
    assert (offsets.tolist(), blob.tobytes(), valid.tolist()) == (
        [0, 1, 1, 1, 3],
        b"xyz",
        [True, True, False, True],
    )
    with pytest.raises(ValueError, match="key"):
        cols.gather("headers")
    empty = gather_slices(
        np.zeros(4, dtype=np.uint8), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    )
    assert empty[0].tolist() == [0]


def test_gather_feeds_pyarrow() -> None:
    pa = pytest.importorskip("pyarrow")
    data = encode_batch(
        [RecordSpec(b"k%d" % i, None if i == 2 else b"v" * i) for i in range(5)], base_offset=0
    )
    offsets, blob, valid = scan_columns(data).records.gather("value")
    array = pa.Array.from_buffers(
        pa.binary(),
        5,
        [pa.array(valid).buffers()[1], pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(blob)],
    )
    assert array.to_pylist() == [b"", b"v", None, b"vvv", b"vvvv"]


def test_per_batch_columns(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    with PartitionWriter(directory) as log:
        log.append([RecordSpec(b"a", b"1", T0), RecordSpec(b"b", b"2", T0 + 1)])
        log.append([RecordSpec(b"c", b"3", T0 + 2)], compression=Compression.LZ4)
        log.append_end_txn_marker(
            producer_id=3, producer_epoch=0, committed=True, coordinator_epoch=0, timestamp=T0
        )
    batches = list(iter_batch_columns(directory / "00000000000000000000.log", strict=True))
    assert [len(b) for b in batches] == [2, 1, 1]
    assert [b.header.base_offset for b in batches] == [0, 2, 3]
    assert batches[2].header.is_control
    assert batches[0].offset.tolist() == [0, 1]
    assert [r.value for r in batches[1].records()] == [b"3"]
    assert batches[2].records()[0].key == b"\x00\x00\x00\x01"


def test_headers_are_counted_and_decodable_through_the_slow_path() -> None:
    data = encode_batch(
        [RecordSpec(b"k", b"v", T0, (("a", b"1"), ("b", None))), RecordSpec(b"j", b"w", T0)],
        base_offset=0,
        compression=Compression.GZIP,
    )
    cols = scan_columns(data, strict=True).records
    assert cols.headers_count.tolist() == [2, 0]
    assert [cols.value(i) for i in range(2)] == [b"v", b"w"]


def test_columnar_reports_like_the_record_reader() -> None:
    good = encode_batch([RecordSpec(b"k", b"v")], base_offset=0)
    bad = bytearray(encode_batch([RecordSpec(b"k", b"value")], base_offset=1))
    bad[-3] ^= 0x55
    data = good + bytes(bad) + good + bytes(30)
    slow, fast = ScanReport(), ScanReport()
    list(read_batches(data, report=slow))
    chunk = scan_columns(data, report=fast)
    assert [type(d) for d in fast.diagnostics] == [type(d) for d in slow.diagnostics]
    assert [getattr(d, "position", None) for d in fast.diagnostics] == [
        getattr(d, "position", None) for d in slow.diagnostics
    ]
    assert (fast.invalid_tail_bytes, fast.valid_bytes) == (
        slow.invalid_tail_bytes,
        slow.valid_bytes,
    )
    assert chunk.batches.decoded.tolist() == [True, False, True]
    assert chunk.records.offset.tolist() == [0, 0]


def test_one_batch_larger_than_the_chunk(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    big = encode_batch([RecordSpec(b"k%d" % i, b"x" * 1000) for i in range(300)], base_offset=5)
    path.write_bytes(encode_batch([RecordSpec(b"a", b"b")], base_offset=4) + big)
    chunks = list(iter_segment_columns(path, strict=True, chunk_bytes=4096))
    assert sum(len(c.records) for c in chunks) == 301
    assert np.concatenate([c.records.offset for c in chunks]).tolist() == list(range(4, 305))


def test_many_records_in_few_batches_and_few_in_many() -> None:
    # Lock-step over many small batches and a Python walk for the long tail of one large one.
    batches = [encode_batch([RecordSpec(b"k", b"%d" % i)], base_offset=i) for i in range(50)]
    batches.append(
        encode_batch([RecordSpec(b"k", b"%d" % i) for i in range(50, 2050)], base_offset=50)
    )
    cols = scan_columns(b"".join(batches), strict=True).records
    assert cols.offset.tolist() == list(range(2050))
    assert [cols.value(i) for i in (0, 49, 50, 2049)] == [b"0", b"49", b"50", b"2049"]


@pytest.mark.parametrize("chunk_bytes", [50, 200, 4096])
def test_streamed_columns_stop_at_a_torn_tail(chunk_bytes: int, tmp_path: Path) -> None:
    batches = [encode_batch([RecordSpec(b"k", b"v" * i, T0 + i)], base_offset=i) for i in range(6)]
    path = tmp_path / "00000000000000000000.log"
    for tail, zero in ((batches[5][:-7], False), (bytes(300), True)):
        path.write_bytes(b"".join(batches[:5]) + tail)
        report = ScanReport()
        chunks = list(iter_segment_columns(path, report=report, chunk_bytes=chunk_bytes))
        assert np.concatenate([c.records.offset for c in chunks]).tolist() == [0, 1, 2, 3, 4]
        [invalid] = report.invalid_tails
        assert (invalid.length, invalid.zero_padding) == (len(tail), zero)
        assert report.records == 5
