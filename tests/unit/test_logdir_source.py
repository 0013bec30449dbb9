"""The log directory as a stream (offsetscope.spark.logdir): offsets, seeks, ranges, errors,
end offsets. Pure Python, no JVM: generated with the protocol's partition writer."""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow as pa
import pytest

from offsetscope.protocol.log import LogConfig, PartitionWriter, RecordSpec, read_partition_dir
from offsetscope.sim.synthetic import SyntheticLog, Workload
from offsetscope.spark import logdir
from offsetscope.spark.tables import SOURCE_SCHEMA

OFFSETS = "__consumer_offsets"
T0 = 1_700_000_000_000


def _rows(request: logdir.RangeRequest) -> list[dict[str, object]]:
    return pa.Table.from_batches(
        list(logdir.read_range(request, SOURCE_SCHEMA)), schema=SOURCE_SCHEMA
    ).to_pylist()


def _request(pdir: logdir.PartitionDir, start: int, end: int) -> logdir.RangeRequest:
    return logdir.RangeRequest(pdir, pdir.topic, start, end)


def _with_markers(root: Path) -> logdir.PartitionDir:
    """An offsets partition holding transaction markers."""
    return next(
        d
        for d in logdir.partition_dirs(root, [OFFSETS])
        if any(b.is_control for b in read_partition_dir(d.path))
    )


@pytest.fixture
def small_segments(tmp_path: Path) -> tuple[Path, SyntheticLog]:
    """A synthetic log with tiny segments and dense indexes: many segments, many seeks."""
    workload = Workload(
        segment_bytes=8_000, index_interval_bytes=500, groups=2, transaction_every=2
    )
    log = SyntheticLog(tmp_path / "logs", workload)
    log.run(40)
    log.close()
    return tmp_path / "logs", log


def test_partition_dirs_parses_names_and_skips_the_rest(tmp_path: Path) -> None:
    for name in ("__consumer_offsets-0", "__consumer_offsets-12", "my-topic-3", "orders-1"):
        (tmp_path / name).mkdir()
    (tmp_path / "cleaner-offset-checkpoint").write_text("0\n")
    (tmp_path / "not_a_partition").mkdir()

    found = logdir.partition_dirs(tmp_path)
    names = [(d.topic, d.partition) for d in found]
    assert names == [
        ("__consumer_offsets", 0),
        ("__consumer_offsets", 12),
        ("my-topic", 3),
        ("orders", 1),
    ]
    assert [d.name for d in logdir.partition_dirs(tmp_path, ["my-topic"])] == ["my-topic-3"]
    assert logdir.partition_dirs(tmp_path / "missing") == []


def test_log_end_offset_matches_the_writer_across_segments_and_resumes(
    tmp_path: Path,
) -> None:
    log = SyntheticLog(tmp_path, Workload(segment_bytes=4_000))
    log.run(15)
    cache = logdir.LogEndCache()
    dirs = logdir.partition_dirs(tmp_path)
    first = {d.name: cache.log_end_offset(d) for d in dirs}
    for d in dirs:
        batches = list(read_partition_dir(d.path))
        expected = batches[-1].last_offset + 1 if batches else 0
        assert first[d.name] == expected, d.name
    assert len(list(Path(dirs[0].path).glob("*.log"))) > 1  # several segments

    log.run(5)  # appended after the cache looked: only the new bytes are framed
    again = {d.name: cache.log_end_offset(d) for d in dirs}
    for d in dirs:
        batches = list(read_partition_dir(d.path))
        assert again[d.name] == (batches[-1].last_offset + 1 if batches else 0)
    assert again["__consumer_offsets-0"] > first["__consumer_offsets-0"]
    log.close()


def test_ranges_read_every_record_once_whatever_the_split(
    small_segments: tuple[Path, SyntheticLog],
) -> None:
    root, _ = small_segments
    pdir = _with_markers(root)
    end = logdir.LogEndCache().log_end_offset(pdir)
    whole = _rows(_request(pdir, 0, end))
    expected = [
        (r.offset, r.key, r.value, b.producer_id, b.is_transactional, b.is_control)
        for b in read_partition_dir(pdir.path)
        for r in b.records
    ]
    got = [
        (
            r["offset"],
            r["key"],
            r["value"],
            r["producer_id"],
            r["is_transactional"],
            r["is_control"],
        )
        for r in whole
    ]
    assert got == expected
    assert any(r["is_control"] for r in whole)  # markers are delivered, with their producer
    assert all(r["source_error"] is None and r["topic"] == OFFSETS for r in whole)

    for step in (1, 7, 50):
        pieces = [
            row
            for start in range(0, end, step)
            for row in _rows(_request(pdir, start, min(start + step, end)))
        ]
        assert [r["offset"] for r in pieces] == [r["offset"] for r in whole], step


def test_seek_position_starts_at_or_before_the_batch_holding_the_offset(
    small_segments: tuple[Path, SyntheticLog],
) -> None:
    root, _ = small_segments
    pdir = _with_markers(root)
    segments = logdir.list_segments(pdir.path)
    indexed = [s for s in segments if s.index is not None and s.index.stat().st_size > 0]
    assert indexed, "the fixture should produce index entries"
    segment = indexed[0]
    frames = logdir.frame_file(segment.log).frames
    for target in (
        frames[0].base_offset,
        frames[len(frames) // 2].base_offset,
        frames[-1].last_offset,
    ):
        position = logdir.seek_position(segment, target)
        holding = next(f for f in frames if f.base_offset <= target <= f.last_offset)
        assert position <= holding.position
        assert position in {f.position for f in frames}
    assert logdir.seek_position(segment, frames[-1].last_offset) > 0  # the index was used


def test_incomplete_tail_is_where_the_log_ends_not_an_error(tmp_path: Path) -> None:
    pdir_path = tmp_path / f"{OFFSETS}-0"
    with PartitionWriter(pdir_path) as writer:
        for i in range(3):
            writer.append([RecordSpec(b"\x00\x01k%d" % i, b"v", T0 + i)])
    log = next(pdir_path.glob("*.log"))
    complete = log.stat().st_size
    with log.open("ab") as fh:  # a batch being written: header says 200 bytes, 30 are there
        fh.write(struct.pack(">qib", 3, 188, 0) + bytes(13))
    pdir = logdir.partition_dirs(tmp_path)[0]

    assert logdir.LogEndCache().log_end_offset(pdir) == 3
    rows = _rows(_request(pdir, 0, 3))
    assert [r["offset"] for r in rows] == [0, 1, 2]
    framed = logdir.frame_file(log)
    assert framed.end_position == complete
    assert framed.stop is not None
    assert framed.stop.incomplete


def test_crc_mismatch_becomes_one_error_row_with_the_batch_bytes(tmp_path: Path) -> None:
    pdir_path = tmp_path / f"{OFFSETS}-0"
    with PartitionWriter(pdir_path) as writer:
        for i in range(3):
            writer.append([RecordSpec(b"\x00\x01k%d" % i, b"value-%d" % i, T0 + i)])
    log = next(pdir_path.glob("*.log"))
    frames = logdir.frame_file(log).frames
    data = bytearray(log.read_bytes())
    middle = frames[1]
    data[middle.position + middle.size - 1] ^= 0xFF  # last value byte of the second batch
    log.write_bytes(bytes(data))
    pdir = logdir.partition_dirs(tmp_path)[0]

    rows = _rows(_request(pdir, 0, logdir.LogEndCache().log_end_offset(pdir)))
    good = [r for r in rows if r["source_error"] is None]
    bad = [r for r in rows if r["source_error"] is not None]
    assert [r["offset"] for r in good] == [0, 2]
    assert len(bad) == 1
    error = bad[0]
    assert error["offset"] == 1
    assert error["key"] is None
    assert error["value"] == bytes(data[middle.position : middle.position + middle.size])
    assert error["source_error"]["error_class"] == "CrcMismatchError"
    assert error["source_error"]["byte_offset"] == middle.position + 17
    # Reported by the range that holds its base offset, once.
    assert [r["offset"] for r in _rows(_request(pdir, 2, 3))] == [2]


def test_unframeable_tail_of_a_sealed_segment_is_reported_and_reading_goes_on(
    tmp_path: Path,
) -> None:
    pdir_path = tmp_path / f"{OFFSETS}-0"
    config = LogConfig(segment_bytes=200)
    with PartitionWriter(pdir_path, config=config) as writer:
        for i in range(6):
            writer.append([RecordSpec(b"\x00\x01k%d" % i, b"v" * 40, T0 + i)])
    segments = logdir.list_segments(pdir_path)
    assert len(segments) >= 2
    first = segments[0]
    frames = logdir.frame_file(first.log).frames
    data = bytearray(first.log.read_bytes())
    last = frames[-1]
    data[last.position + 8 : last.position + 12] = struct.pack(">i", 3)  # impossible length
    first.log.write_bytes(bytes(data))
    pdir = logdir.partition_dirs(tmp_path)[0]

    end = logdir.LogEndCache().log_end_offset(pdir)
    rows = _rows(_request(pdir, 0, end))
    errors = [r for r in rows if r["source_error"] is not None]
    assert len(errors) == 1
    assert errors[0]["offset"] == last.base_offset
    assert errors[0]["source_error"]["error_class"] == "InvalidTailError"
    assert errors[0]["value"] == bytes(data[last.position :])
    offsets = [r["offset"] for r in rows if r["source_error"] is None]
    assert offsets == [o for o in range(end) if o != last.base_offset]


def _txn_partition(path: Path, *, marker: bool) -> None:
    with PartitionWriter(path) as writer:
        writer.append([RecordSpec(b"a", b"1", T0), RecordSpec(b"b", b"2", T0)])  # 0, 1
        writer.append(
            [RecordSpec(b"t", b"txn", T0 + 1_000)],
            producer_id=7,
            producer_epoch=0,
            base_sequence=0,
            is_transactional=True,
        )  # 2
        writer.append([RecordSpec(b"c", b"3", T0 + 2_000)])  # 3
        if marker:
            writer.append_end_txn_marker(
                producer_id=7,
                producer_epoch=0,
                committed=True,
                coordinator_epoch=0,
                timestamp=T0 + 3_000,
            )  # 4


@pytest.mark.parametrize("marker", [False, True])
def test_end_offsets_last_stable_offset_follows_open_transactions(
    tmp_path: Path, marker: bool
) -> None:
    _txn_partition(tmp_path / "orders-0", marker=marker)
    pdir = logdir.partition_dirs(tmp_path)[0]

    end = logdir.EndOffsetTracker().advance(pdir)
    assert (end.log_start_offset, end.high_watermark) == (0, 5 if marker else 4)
    assert end.last_stable_offset == (5 if marker else 2)
    assert end.max_timestamp == (T0 + 3_000 if marker else T0 + 2_000)


def test_end_offsets_as_of_a_time_then_incrementally(tmp_path: Path) -> None:
    _txn_partition(tmp_path / "orders-0", marker=True)
    pdir = logdir.partition_dirs(tmp_path)[0]
    tracker = logdir.EndOffsetTracker()

    before_txn = tracker.advance(pdir, until_ms=T0 + 500)
    assert (before_txn.high_watermark, before_txn.last_stable_offset) == (2, 2)
    open_txn = tracker.advance(pdir, until_ms=T0 + 2_500)
    assert (open_txn.high_watermark, open_txn.last_stable_offset) == (4, 2)
    done = tracker.advance(pdir)
    assert (done.high_watermark, done.last_stable_offset) == (5, 5)
