"""Round trips: everything the writer can produce, read back by every reader.

Every magic x compression combination, with the batch options Kafka writes (producer ids,
transactions, LogAppendTime, delete horizons, compaction gaps, empty batches, sequence wrap),
read by the per-record reader, the file reader (in small chunks) and the columnar fast path.
Hypothesis draws random records and options on top.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offsetscope.protocol.log import (
    Compression,
    Record,
    RecordBatch,
    RecordSpec,
    ScanReport,
    TimestampType,
    encode_batch,
    encode_empty_batch,
    iter_batch_columns,
    iter_segment_columns,
    read_batches,
    read_segment,
    scan_columns,
)

COMBINATIONS = [
    (magic, codec)
    for magic in (0, 1, 2)
    for codec in Compression
    if not (magic < 2 and codec is Compression.ZSTD)
]


def _specs(n: int, *, headers: bool) -> list[RecordSpec]:
    out = []
    for i in range(n):
        key = None if i % 5 == 4 else b"key-%d" % i
        value = None if i % 3 == 2 else b"value-%d-" % i * (i % 4 + 1)
        hdrs = (("h", b"%d" % i), ("null", None)) if headers and i % 2 else ()
        out.append(RecordSpec(key, value, 1700000000000 + 3 * i, hdrs))
    return out


def _records(batches: list[RecordBatch]) -> list[Record]:
    return [r for b in batches for r in b.records]


def _check_columns(data: bytes, expected: list[Record]) -> None:
    chunk = scan_columns(data, strict=True)
    cols = chunk.records
    assert cols.offset.tolist() == [r.offset for r in expected]
    assert cols.timestamp.tolist() == [r.timestamp for r in expected]
    assert cols.sequence.tolist() == [r.sequence for r in expected]
    assert [cols.key(i) for i in range(len(cols))] == [r.key for r in expected]
    assert [cols.value(i) for i in range(len(cols))] == [r.value for r in expected]
    assert cols.headers_count.tolist() == [len(r.headers) for r in expected]


@pytest.mark.parametrize(("magic", "codec"), COMBINATIONS)
def test_every_magic_and_codec_round_trips(magic: int, codec: Compression, tmp_path: Path) -> None:
    specs = _specs(40, headers=magic == 2)
    data = encode_batch(specs, base_offset=1000, magic=magic, compression=codec)
    report = ScanReport()
    batches = list(read_batches(data, strict=True, report=report))
    records = _records(batches)
    assert [r.offset for r in records] == list(range(1000, 1040))
    assert [r.key for r in records] == [s.key for s in specs]
    assert [r.value for r in records] == [s.value for s in specs]
    assert [r.headers for r in records] == [s.headers for s in specs]
    expected_ts = [-1] * 40 if magic == 0 else [s.timestamp for s in specs]
    assert [r.timestamp for r in records] == expected_ts
    assert all(b.compression is codec for b in batches)
    assert report.clean
    assert report.valid_bytes == len(data)
    # v0/v1 uncompressed: one entry per record; everything else: one batch or wrapper.
    assert len(batches) == (40 if magic < 2 and codec is Compression.NONE else 1)
    _check_columns(data, records)

    path = tmp_path / "00000000000000001000.log"
    path.write_bytes(data * 3)
    from_file = list(read_segment(path, strict=True, chunk_bytes=97))
    assert [r.value for r in _records(from_file)] == [s.value for s in specs] * 3
    assert [b.position for b in from_file] == [b.position for b in batches] + [
        b.position + len(data) * k for k in (1, 2) for b in batches
    ]
    streamed = list(iter_segment_columns(path, strict=True, chunk_bytes=500))
    assert sum(len(c.records) for c in streamed) == 120
    assert [c.records.value(i) for c in streamed for i in range(len(c.records))] == [
        s.value for s in specs
    ] * 3


@pytest.mark.parametrize("codec", list(Compression))
def test_v2_batch_options_round_trip(codec: Compression) -> None:
    specs = [RecordSpec(b"k%d" % i, b"v", 1700000000000 + i) for i in range(5)]
    data = encode_batch(
        specs,
        base_offset=77,
        compression=codec,
        producer_id=4242,
        producer_epoch=7,
        base_sequence=2**31 - 3,
        is_transactional=True,
        partition_leader_epoch=12,
    )
    [batch] = read_batches(data, strict=True)
    assert (batch.producer_id, batch.producer_epoch, batch.partition_leader_epoch) == (4242, 7, 12)
    assert batch.is_transactional
    assert not batch.is_control
    # Sequences wrap from 2**31-1 to 0 (DefaultRecordBatch.incrementSequence).
    assert [r.sequence for r in batch.records] == [2**31 - 3, 2**31 - 2, 2**31 - 1, 0, 1]
    assert batch.last_sequence == 1
    _check_columns(data, list(batch.records))


@pytest.mark.parametrize("codec", list(Compression))
def test_log_append_time_overrides_record_timestamps(codec: Compression) -> None:
    specs = [RecordSpec(b"k", b"v", 1700000000000 + i) for i in range(3)]
    data = encode_batch(
        specs,
        base_offset=0,
        compression=codec,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        log_append_time=1800000000000,
    )
    [batch] = read_batches(data, strict=True)
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert batch.max_timestamp == 1800000000000
    assert batch.base_timestamp == 1700000000000
    assert [r.timestamp for r in batch.records] == [1800000000000] * 3
    _check_columns(data, list(batch.records))


def test_delete_horizon_batch() -> None:
    # KIP-534: baseTimestamp holds the horizon and record deltas are relative to it.
    specs = [RecordSpec(b"k", None, 1700000000100), RecordSpec(b"j", None, 1700000000200)]
    data = encode_batch(specs, base_offset=5, delete_horizon_ms=1700000000000)
    [batch] = read_batches(data, strict=True)
    assert batch.has_delete_horizon
    assert batch.delete_horizon_ms == 1700000000000 == batch.base_timestamp
    assert batch.max_timestamp == 1700000000200
    assert [r.timestamp for r in batch.records] == [1700000000100, 1700000000200]
    assert data[21:23] == b"\x00\x40"  # attribute bit 6
    _check_columns(data, list(batch.records))


def test_compacted_batch_with_gaps_keeps_last_offset_and_sequence() -> None:
    # The cleaner keeps the original base offset, last offset delta and base sequence.
    kept = [
        RecordSpec(b"b", b"2", 1700000000001, (), 11),
        RecordSpec(b"d", b"4", 1700000000003, (), 13),
    ]
    data = encode_batch(
        kept,
        base_offset=10,
        last_offset=14,
        producer_id=9,
        producer_epoch=0,
        base_sequence=100,
    )
    [batch] = read_batches(data, strict=True)
    assert (batch.base_offset, batch.last_offset, batch.records_count) == (10, 14, 2)
    assert [r.offset for r in batch.records] == [11, 13]
    assert [r.sequence for r in batch.records] == [101, 103]
    assert (batch.base_sequence, batch.last_sequence) == (100, 104)
    assert batch.base_timestamp == 1700000000001
    _check_columns(data, list(batch.records))


def test_empty_batch_after_compaction() -> None:
    data = encode_empty_batch(
        base_offset=20,
        last_offset=29,
        max_timestamp=1700000000009,
        producer_id=3,
        producer_epoch=1,
        base_sequence=50,
    )
    assert len(data) == 61
    [batch] = read_batches(data, strict=True)
    assert (batch.base_offset, batch.last_offset, batch.records_count, batch.records) == (
        20,
        29,
        0,
        (),
    )
    assert (batch.base_timestamp, batch.max_timestamp) == (-1, 1700000000009)
    assert (batch.base_sequence, batch.last_sequence) == (50, 59)
    chunk = scan_columns(data, strict=True)
    assert len(chunk.records) == 0
    assert chunk.batches.records_count.tolist() == [0]
    assert chunk.batches.decoded.tolist() == [True]


def test_mixed_file_is_read_in_order_by_every_reader(tmp_path: Path) -> None:
    parts = [
        encode_batch([RecordSpec(b"a", b"0")], base_offset=0, magic=0),
        encode_batch(
            [RecordSpec(b"b", b"1", 5), RecordSpec(b"c", b"2", 6)],
            base_offset=1,
            magic=1,
            compression=Compression.SNAPPY,
        ),
        encode_empty_batch(
            base_offset=3, last_offset=4, producer_id=1, producer_epoch=0, base_sequence=0
        ),
        encode_batch([RecordSpec(b"d", b"5", 7, (("x", b"y"),))], base_offset=5),
        encode_batch([RecordSpec(b"e", None, 8)], base_offset=6, compression=Compression.ZSTD),
    ]
    data = b"".join(parts)
    batches = list(read_batches(data, strict=True))
    assert [b.magic for b in batches] == [0, 1, 2, 2, 2]
    records = _records(batches)
    assert [r.offset for r in records] == [0, 1, 2, 5, 6]
    _check_columns(data, records)
    chunk = scan_columns(data, strict=True)
    assert chunk.batches.base_offset.tolist() == [0, 1, 3, 5, 6]
    assert chunk.batches.last_offset.tolist() == [0, 2, 4, 5, 6]
    assert chunk.batches.record_start.tolist() == [0, 1, 3, 3, 4]
    assert chunk.batches.record_end.tolist() == [1, 3, 3, 4, 5]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    per_batch = list(iter_batch_columns(path, strict=True, chunk_bytes=64))
    assert [b.header.base_offset for b in per_batch] == [0, 1, 3, 5, 6]
    assert [r.value for b in per_batch for r in b.records()] == [b"0", b"1", b"2", b"5", None]


record_specs = st.builds(
    RecordSpec,
    key=st.one_of(st.none(), st.binary(max_size=40)),
    value=st.one_of(st.none(), st.binary(max_size=300)),
    timestamp=st.integers(min_value=0, max_value=2**45),
    headers=st.lists(
        st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))), max_size=3
    ).map(tuple),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=st.lists(record_specs, min_size=1, max_size=12),
    codec=st.sampled_from(list(Compression)),
    base_offset=st.integers(min_value=0, max_value=2**62),
    producer=st.one_of(
        st.none(),
        st.tuples(
            st.integers(min_value=0, max_value=2**62),
            st.integers(min_value=0, max_value=2**15 - 1),
            st.integers(min_value=0, max_value=2**31 - 1),
        ),
    ),
)
def test_random_v2_batches_round_trip(
    specs: list[RecordSpec],
    codec: Compression,
    base_offset: int,
    producer: tuple[int, int, int] | None,
) -> None:
    pid, epoch, seq = producer if producer is not None else (-1, -1, -1)
    data = encode_batch(
        specs,
        base_offset=base_offset,
        compression=codec,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
    )
    [batch] = read_batches(data, strict=True)
    assert [(r.key, r.value, r.timestamp, r.headers) for r in batch.records] == [
        (s.key, s.value, s.timestamp, s.headers) for s in specs
    ]
    assert batch.last_offset == base_offset + len(specs) - 1
    assert batch.max_timestamp == max(s.timestamp for s in specs)
    _check_columns(data, list(batch.records))


@settings(max_examples=60, deadline=None)
@given(
    specs=st.lists(
        st.builds(
            RecordSpec,
            key=st.one_of(st.none(), st.binary(max_size=20)),
            value=st.one_of(st.none(), st.binary(max_size=200)),
            timestamp=st.integers(min_value=0, max_value=2**45),
        ),
        min_size=1,
        max_size=8,
    ),
    magic=st.sampled_from([0, 1]),
    codec=st.sampled_from(
        [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4]
    ),
    base_offset=st.integers(min_value=1, max_value=2**40),
)
def test_random_legacy_message_sets_round_trip(
    specs: list[RecordSpec], magic: int, codec: Compression, base_offset: int
) -> None:
    data = encode_batch(specs, base_offset=base_offset, magic=magic, compression=codec)
    records = _records(list(read_batches(data, strict=True)))
    assert [r.offset for r in records] == list(range(base_offset, base_offset + len(specs)))
    assert [(r.key, r.value) for r in records] == [(s.key, s.value) for s in specs]
    if magic == 1:
        assert [r.timestamp for r in records] == [s.timestamp for s in specs]
    _check_columns(data, records)
