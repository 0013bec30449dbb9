"""The partition writer: offsets, segment rolls, indexes, epochs, aborted transactions, snapshots.

Expected values follow Kafka's ``LogSegment``/``UnifiedLog``/``ProducerStateManager`` rules,
worked out by hand for batches of exactly 1000 bytes:

* index entry when *more than* ``index.interval.bytes`` (4096) were appended since the last one,
  checked before adding the current batch: batches 1-5 bring the count to 5000, batch 6 gets the
  first entry (at position 5000) and restarts the count at 1000, so entries fall on batches 6,
  11, 16, ...;
* roll before an append when ``size > segment.bytes - batchSize``: with 3000-byte segments a
  segment takes 3 batches (2000 > 2000 is false, 3000 > 2000 is true).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from offsetscope.protocol.log import (
    AbortedTxn,
    Compression,
    EpochEntry,
    LogConfig,
    OffsetPosition,
    PartitionWriter,
    ProducerSnapshotEntry,
    RecordSpec,
    ScanReport,
    TimestampOffset,
    encode_batch,
    list_segments,
    parse_leader_epoch_checkpoint,
    parse_partition_metadata,
    read_offset_index,
    read_partition_dir,
    read_producer_snapshot,
    read_segment,
    read_time_index,
    read_txn_index,
)

T0 = 1700000000000
VALUE = b"x" * 929  # a single-record batch of exactly 1000 bytes


def _one(ts: int) -> list[RecordSpec]:
    return [RecordSpec(b"k", VALUE, ts)]


def test_single_record_batch_size_is_1000() -> None:
    assert len(encode_batch(_one(T0), base_offset=123456)) == 1000


def test_offsets_positions_and_index_entries(tmp_path: Path) -> None:
    with PartitionWriter(tmp_path / "t-0") as log:
        infos = [log.append(_one(T0 + i)) for i in range(17)]
    assert [i.base_offset for i in infos] == list(range(17))
    assert [i.position for i in infos] == [1000 * i for i in range(17)]
    assert log.next_offset == 17
    index = read_offset_index((tmp_path / "t-0/00000000000000000000.index").read_bytes(), 0)
    assert index == [OffsetPosition(5, 5000), OffsetPosition(10, 10000), OffsetPosition(15, 15000)]
    times = read_time_index((tmp_path / "t-0/00000000000000000000.timeindex").read_bytes(), 0)
    # One entry with each offset entry (max timestamp so far), plus the final one at close.
    assert times == [
        TimestampOffset(T0 + 5, 5),
        TimestampOffset(T0 + 10, 10),
        TimestampOffset(T0 + 15, 15),
        TimestampOffset(T0 + 16, 16),
    ]


def test_time_index_only_grows_with_larger_timestamps(tmp_path: Path) -> None:
    stamps = [T0 + 50, T0 + 10, T0 + 20, T0 + 30, T0 + 40, T0 + 5, T0 + 1, T0 + 2, T0 + 3]
    with PartitionWriter(tmp_path / "t-0") as log:
        for ts in stamps:
            log.append(_one(ts))
    times = read_time_index((tmp_path / "t-0/00000000000000000000.timeindex").read_bytes(), 0)
    # The entry at batch 6 carries the max so far (T0+50 at offset 0); later ones never repeat it.
    assert times == [TimestampOffset(T0 + 50, 0)]


def test_segments_roll_on_size_and_are_named_by_first_offset(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    with PartitionWriter(directory, config=LogConfig(segment_bytes=3000)) as log:
        infos = [log.append(_one(T0 + i)) for i in range(7)]
    assert [i.segment_base_offset for i in infos] == [0, 0, 0, 3, 3, 3, 6]
    assert [s.base_offset for s in list_segments(directory)] == [0, 3, 6]
    assert [(directory / f"{b:020d}.log").stat().st_size for b in (0, 3, 6)] == [3000, 3000, 1000]
    report = ScanReport()
    batches = list(read_partition_dir(directory, strict=True, report=report))
    assert [b.base_offset for b in batches] == list(range(7))
    assert [b.position for b in batches] == [0, 1000, 2000, 0, 1000, 2000, 0]
    assert report.clean
    # A snapshot at every roll (named by the new segment's base) and one at close (by LEO).
    assert sorted(p.name for p in directory.glob("*.snapshot")) == [
        "00000000000000000003.snapshot",
        "00000000000000000006.snapshot",
        "00000000000000000007.snapshot",
    ]
    # Every rolled segment got its final time index entry.
    assert read_time_index((directory / "00000000000000000003.timeindex").read_bytes(), 3) == [
        TimestampOffset(T0 + 5, 5)
    ]


def test_batch_larger_than_a_segment_is_refused(tmp_path: Path) -> None:
    log = PartitionWriter(tmp_path / "t-0", config=LogConfig(segment_bytes=999))
    with pytest.raises(ValueError, match="segment_bytes"):
        log.append(_one(T0))
    log.close()


def test_segments_roll_on_segment_ms(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    with PartitionWriter(directory, config=LogConfig(segment_ms=1000)) as log:
        bases = [
            log.append(_one(ts)).segment_base_offset for ts in (T0, T0 + 999, T0 + 1000, T0 + 1001)
        ]
    # Rolled when the batch's max timestamp is more than segment.ms past the segment's first.
    assert bases == [0, 0, 0, 3]


def test_leader_epochs_and_partition_metadata(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    topic_id = uuid.UUID("3c5a1b2e-0f0e-4d8c-9a7b-1234567890ab")
    with PartitionWriter(directory, topic_id=topic_id, leader_epoch=0) as log:
        log.append(_one(T0))
        log.append(_one(T0))
        log.append(_one(T0), partition_leader_epoch=2)
        log.leader_epoch = 3
        log.append(_one(T0))
        log.append(_one(T0), partition_leader_epoch=1)  # an older epoch does not add an entry
    text = (directory / "leader-epoch-checkpoint").read_text()
    assert text == "0\n3\n0 0\n2 2\n3 3\n"
    assert parse_leader_epoch_checkpoint(text) == [
        EpochEntry(0, 0),
        EpochEntry(2, 2),
        EpochEntry(3, 3),
    ]
    metadata = (directory / "partition.metadata").read_text()
    assert metadata == "version: 0\ntopic_id: PFobLg8OTYyaexI0VniQqw"
    assert parse_partition_metadata(metadata) == topic_id
    epochs = [b.partition_leader_epoch for b in read_segment(directory / f"{0:020d}.log")]
    assert epochs == [0, 0, 2, 3, 1]


def test_aborted_transactions_go_to_the_txn_index_with_the_last_stable_offset(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "t-0"
    txn = {"is_transactional": True, "producer_epoch": 0, "base_sequence": 0}
    with PartitionWriter(directory) as log:
        log.append([RecordSpec(b"a", b"1", T0), RecordSpec(b"a", b"2", T0)], producer_id=1, **txn)
        log.append([RecordSpec(b"b", b"1", T0)], producer_id=2, **txn)  # offset 2
        log.append_end_txn_marker(
            producer_id=1, producer_epoch=0, committed=False, coordinator_epoch=5, timestamp=T0 + 1
        )  # offset 3: pid 2 is still open from offset 2
        log.append_end_txn_marker(
            producer_id=2, producer_epoch=0, committed=True, coordinator_epoch=5, timestamp=T0 + 2
        )  # offset 4: a commit adds no entry
        log.append([RecordSpec(b"c", b"1", T0)], producer_id=3, **txn)  # offset 5
        log.append_end_txn_marker(
            producer_id=3, producer_epoch=0, committed=False, coordinator_epoch=6, timestamp=T0 + 3
        )  # offset 6: nothing else open, so the LSO is 7
        log.append([RecordSpec(b"d", b"1", T0)], producer_id=4, **txn)  # offset 7, left open
    aborted = read_txn_index((directory / "00000000000000000000.txnindex").read_bytes())
    assert aborted == [AbortedTxn(1, 0, 3, 2), AbortedTxn(3, 5, 6, 7)]
    snapshot = read_producer_snapshot((directory / "00000000000000000008.snapshot").read_bytes())
    assert snapshot == [
        ProducerSnapshotEntry(1, 0, 1, 1, 1, T0 + 1, 5, -1),
        ProducerSnapshotEntry(2, 0, 0, 2, 0, T0 + 2, 5, -1),
        ProducerSnapshotEntry(3, 0, 0, 5, 0, T0 + 3, 6, -1),
        ProducerSnapshotEntry(4, 0, 0, 7, 0, T0, -1, 7),
    ]
    markers = [b.end_txn_marker() for b in read_partition_dir(directory) if b.is_control]
    assert [(m.committed, m.coordinator_epoch) for m in markers if m] == [
        (False, 5),
        (True, 5),
        (False, 6),
    ]


def test_no_txn_index_without_aborts(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    with PartitionWriter(directory) as log:
        log.append(
            _one(T0), producer_id=8, producer_epoch=0, base_sequence=0, is_transactional=True
        )
        log.append_end_txn_marker(
            producer_id=8, producer_epoch=0, committed=True, coordinator_epoch=0, timestamp=T0
        )
    assert not list(directory.glob("*.txnindex"))


@pytest.mark.parametrize("codec", list(Compression))
def test_every_codec_and_legacy_magic_through_the_writer(
    codec: Compression, tmp_path: Path
) -> None:
    directory = tmp_path / "t-0"
    specs = [RecordSpec(b"k%d" % i, b"v%d" % i, T0 + i) for i in range(4)]
    with PartitionWriter(directory) as log:
        log.append(specs, compression=codec)
        if codec is not Compression.ZSTD:
            log.append(specs, compression=codec, magic=1)
            log.append(specs, compression=codec, magic=0)
    records = [r for b in read_partition_dir(directory, strict=True) for r in b.records]
    expected = 12 if codec is not Compression.ZSTD else 4
    assert [r.offset for r in records] == list(range(expected))
    assert [r.value for r in records] == [s.value for s in specs] * (expected // 4)


def test_append_bytes_checks_offsets_and_content(tmp_path: Path) -> None:
    with PartitionWriter(tmp_path / "t-0") as log:
        log.append(_one(T0))
        with pytest.raises(ValueError, match="below the log end"):
            log.append_bytes(encode_batch(_one(T0), base_offset=0))
        info = log.append_bytes(encode_batch(_one(T0), base_offset=1))
        assert (info.base_offset, info.last_offset, info.position) == (1, 1, 1000)
        with pytest.raises(ValueError, match="assigns offsets"):
            log.append([RecordSpec(b"k", b"v", T0, (), 5)])


def test_existing_segments_are_not_overwritten(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    with PartitionWriter(directory) as log:
        log.append(_one(T0))
    with pytest.raises(FileExistsError):
        PartitionWriter(directory)


def test_closed_writer_refuses_appends(tmp_path: Path) -> None:
    log = PartitionWriter(tmp_path / "t-0")
    log.close()
    with pytest.raises(ValueError, match="closed"):
        log.append(_one(T0))


def test_empty_log_directory(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    with PartitionWriter(directory, start_offset=40):
        pass
    assert sorted(p.name for p in directory.iterdir()) == [
        "00000000000000000040.index",
        "00000000000000000040.log",
        "00000000000000000040.snapshot",
        "00000000000000000040.timeindex",
        "leader-epoch-checkpoint",
    ]
    assert (directory / "leader-epoch-checkpoint").read_text() == "0\n0\n"
    assert list(read_partition_dir(directory, strict=True)) == []
