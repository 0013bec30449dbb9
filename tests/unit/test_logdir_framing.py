"""Framing a segment by batch headers (``logdir.frame_file``) agrees with the full batch reader.

``frame_file`` reads only each batch's length in Python and every other header field with numpy
for all batches of a window at once; the reader (``read_batches``) decodes each batch on its own.
Both must see the same batches with the same header fields, whatever the window size, and stop
where asked.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from offsetscope.protocol.log import (
    Compression,
    LogConfig,
    PartitionWriter,
    RecordSpec,
    read_batches,
)
from offsetscope.spark import logdir

T0 = 1_700_000_000_000


def _mixed_log(directory: Path, seed: int) -> Path:
    """Batches of 1-40 records: v2 (some transactional, with markers) and legacy v0/v1."""
    rng = random.Random(seed)
    with PartitionWriter(directory, config=LogConfig(segment_bytes=2**30)) as log:
        for b in range(80):
            specs = [
                RecordSpec(
                    rng.randbytes(rng.randint(0, 30)),
                    rng.randbytes(rng.randint(0, 90)),
                    T0 + rng.randint(0, 10**6),
                )
                for _ in range(rng.choice([1, 1, 3, 40]))
            ]
            if b % 11 == 3:
                log.append(
                    specs, magic=rng.choice([0, 1]), compression=rng.choice(list(Compression)[:2])
                )
            elif b % 7 == 2:
                log.append(
                    specs,
                    producer_id=1000 + b,
                    producer_epoch=3,
                    base_sequence=0,
                    is_transactional=True,
                )
                log.append_end_txn_marker(
                    producer_id=1000 + b,
                    producer_epoch=3,
                    committed=b % 2 == 0,
                    coordinator_epoch=1,
                    timestamp=T0,
                )
            else:
                log.append(specs, compression=rng.choice([Compression.NONE, Compression.GZIP]))
    return directory / "00000000000000000000.log"


@pytest.mark.parametrize("chunk_bytes", [61, 700, 8192, logdir.DEFAULT_CHUNK_BYTES])
@pytest.mark.parametrize("seed", [0, 1])
def test_frames_match_the_batch_reader(seed: int, chunk_bytes: int, tmp_path: Path) -> None:
    path = _mixed_log(tmp_path, seed)
    batches = list(read_batches(path.read_bytes(), decode_records=False))
    framed = logdir.frame_file(path, chunk_bytes=chunk_bytes)

    assert framed.stop is None
    assert framed.end_position == framed.file_size == path.stat().st_size
    assert len(framed.frames) == len(batches)
    assert {b.magic for b in batches} == {0, 1, 2}, "the log should mix every magic"
    assert any(f.is_control for f in framed.frames)
    assert any(f.is_transactional for f in framed.frames)
    for frame, batch in zip(framed.frames, batches, strict=True):
        assert (frame.position, frame.size, frame.magic, frame.last_offset) == (
            batch.position,
            batch.size,
            batch.magic,
            batch.last_offset,
        )
        if batch.magic == 2:
            assert (
                frame.base_offset,
                frame.attributes,
                frame.max_timestamp,
                frame.producer_id,
                frame.producer_epoch,
            ) == (
                batch.base_offset,
                batch.attributes,
                batch.max_timestamp,
                batch.producer_id,
                batch.producer_epoch,
            )
        else:  # a legacy entry: its offset field (the wrapper's last offset), no producer
            assert frame.base_offset == batch.last_offset
            assert frame.attributes == batch.attributes
            assert (frame.max_timestamp, frame.producer_id, frame.producer_epoch) == (-1, -1, -1)


@pytest.mark.parametrize("chunk_bytes", [61, 8192])
def test_framing_stops_before_the_offset_or_timestamp_asked(
    chunk_bytes: int, tmp_path: Path
) -> None:
    path = _mixed_log(tmp_path, 2)
    whole = logdir.frame_file(path).frames
    middle = whole[len(whole) // 2]

    by_offset = logdir.frame_file(path, stop_offset=middle.base_offset, chunk_bytes=chunk_bytes)
    assert [f.position for f in by_offset.frames] == [f.position for f in whole][: len(whole) // 2]
    assert by_offset.end_position == middle.position
    assert by_offset.stop is None

    v2 = [f for f in whole if f.magic == 2]
    cutoff = sorted(f.max_timestamp for f in v2)[len(v2) // 3]
    by_time = logdir.frame_file(path, stop_timestamp=cutoff, chunk_bytes=chunk_bytes)
    first_late = next(i for i, f in enumerate(whole) if f.max_timestamp > cutoff)
    assert len(by_time.frames) == first_late
    assert by_time.end_position == whole[first_late].position

    resumed = logdir.frame_file(path, middle.position, chunk_bytes=chunk_bytes)
    assert [f.position for f in resumed.frames] == [f.position for f in whole][len(whole) // 2 :]


def test_selecting_frames_keeps_every_column_aligned(tmp_path: Path) -> None:
    frames = logdir.frame_file(_mixed_log(tmp_path, 3)).frames
    picked = frames[frames.magic == 2][1::2]
    expected = [f for f in frames if f.magic == 2][1::2]
    assert list(picked) == expected
    assert list(frames[:0]) == []
