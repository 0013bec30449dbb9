"""Bad bytes: torn tails, zero padding, CRC mismatches, hostile lengths, decompression bombs.

A reader of real segment files meets all of these (a crashed broker, a bad disk, a hostile
producer). The contract (``reader.py``): a torn tail stops iteration cleanly and is reported,
never raised; a CRC mismatch or an undecodable batch is reported with its position and the
next batch is read (strict mode raises instead); every error is a ``DecodeError`` subclass
carrying a field path and a byte offset in the file. Memory stays bounded whatever a length
claims.
"""

from __future__ import annotations

import os
import struct
import tracemalloc
import zlib
from pathlib import Path

import cramjam
import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetscope.protocol.errors import (
    CompressionError,
    CorruptBatchError,
    CrcMismatchError,
    DecodeError,
    InvalidLengthError,
    TruncatedError,
)
from offsetscope.protocol.log import (
    Compression,
    RecordSpec,
    ScanReport,
    compress,
    decompress,
    encode_batch,
    read_batches,
    read_segment,
    scan_columns,
)
from offsetscope.protocol.log.batch import assemble_batch

BATCHES = [
    encode_batch([RecordSpec(b"k%d" % i, b"v" * (i + 3), 1700000000000 + i)], base_offset=i)
    for i in range(3)
]
DATA = b"".join(BATCHES)
POSITIONS = [0, len(BATCHES[0]), len(BATCHES[0]) + len(BATCHES[1])]


def _with_crc(batch: bytearray | bytes) -> bytes:
    """Recompute a v2 batch's CRC after editing it (so the content decoder is reached)."""
    fixed = bytearray(batch)
    fixed[17:21] = struct.pack(">I", crc32c.crc32c(bytes(fixed[21:])))
    return bytes(fixed)


def _raw_batch(records: bytes, count: int, attributes: int = 0) -> bytes:
    return assemble_batch(
        base_offset=0,
        last_offset_delta=max(count - 1, 0),
        partition_leader_epoch=0,
        attributes=attributes,
        base_timestamp=1700000000000,
        max_timestamp=1700000000000,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        count=count,
        records=records,
    )


# ------------------------------------------------------------------------------ torn tails


@pytest.mark.parametrize("cut", range(1, len(BATCHES[2])))
def test_truncated_last_batch_stops_cleanly(cut: int, tmp_path: Path) -> None:
    data = DATA[: POSITIONS[2] + cut]
    for strict in (False, True):
        report = ScanReport()
        batches = list(read_batches(data, report=report, strict=strict))
        assert [b.base_offset for b in batches] == [0, 1]
        assert report.invalid_tail_bytes == cut
        [tail] = report.invalid_tails
        # The first bytes of a batch (its base offset) can be zeros too.
        assert (tail.position, tail.length, tail.truncated, tail.zero_padding) == (
            POSITIONS[2],
            cut,
            True,
            not any(data[POSITIONS[2] :]),
        )
        assert isinstance(tail.error, TruncatedError)
        assert tail.error.path.startswith("batch[2].")
        assert tail.error.offset >= POSITIONS[2]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    report = ScanReport()
    assert len(list(read_segment(path, report=report, chunk_bytes=16))) == 2
    assert report.invalid_tail_bytes == cut
    report = ScanReport()
    chunk = scan_columns(data, report=report)
    assert chunk.records.offset.tolist() == [0, 1]
    assert report.invalid_tail_bytes == cut


@pytest.mark.parametrize("padding", [1, 16, 17, 61, 4096])
def test_zero_padding_after_the_last_batch(padding: int, tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(DATA + bytes(padding))
    report = ScanReport()
    batches = list(read_segment(path, report=report, strict=True, chunk_bytes=50))
    assert len(batches) == 3
    [tail] = report.invalid_tails
    assert tail.zero_padding
    assert (tail.position, tail.length) == (len(DATA), padding)
    assert report.valid_bytes == len(DATA)


def test_lost_framing_in_the_middle_is_reported_and_strict_raises() -> None:
    broken = bytearray(DATA)
    broken[POSITIONS[1] + 8 : POSITIONS[1] + 12] = struct.pack(">i", 5)  # batchLength 5
    report = ScanReport()
    batches = list(read_batches(bytes(broken), report=report))
    assert [b.base_offset for b in batches] == [0]
    [tail] = report.invalid_tails
    assert not tail.zero_padding
    assert not tail.truncated
    assert tail.length == len(DATA) - POSITIONS[1]
    with pytest.raises(InvalidLengthError) as info:
        list(read_batches(bytes(broken), strict=True))
    assert (info.value.path, info.value.offset) == ("batch[1].batchLength", POSITIONS[1] + 8)


# -------------------------------------------------------------------------- CRC mismatch


def test_crc_mismatch_mid_file_is_reported_and_reading_continues(tmp_path: Path) -> None:
    broken = bytearray(DATA)
    broken[POSITIONS[1] + 70] ^= 0xFF  # inside batch 1's record value
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(broken))
    report = ScanReport()
    batches = list(read_segment(path, report=report))
    assert [b.crc_valid for b in batches] == [True, False, True]
    [mismatch] = report.crc_mismatches
    assert (mismatch.batch_index, mismatch.position, mismatch.base_offset) == (1, POSITIONS[1], 1)
    assert mismatch.stored == batches[1].crc
    assert mismatch.computed == crc32c.crc32c(bytes(broken[POSITIONS[1] + 21 : POSITIONS[2]]))
    assert mismatch.file == str(path)
    with pytest.raises(CrcMismatchError) as info:
        list(read_segment(path, strict=True))
    assert (info.value.path, info.value.offset) == ("batch[1].crc", POSITIONS[1] + 17)

    report = ScanReport()
    chunk = scan_columns(bytes(broken), report=report)
    assert chunk.batches.crc_valid.tolist() == [True, False, True]
    assert chunk.batches.decoded.tolist() == [True, False, True]
    assert chunk.records.offset.tolist() == [0, 2]
    assert [d.position for d in report.crc_mismatches] == [POSITIONS[1]]
    with pytest.raises(CrcMismatchError):
        scan_columns(bytes(broken), strict=True)


def test_legacy_crc_mismatch() -> None:
    data = bytearray(encode_batch([RecordSpec(b"k", b"value")], base_offset=3, magic=1))
    data[-1] ^= 1
    report = ScanReport()
    [batch] = read_batches(bytes(data), report=report)
    assert not batch.crc_valid
    assert batch.computed_crc == zlib.crc32(bytes(data[16:]))
    with pytest.raises(CrcMismatchError):
        list(read_batches(bytes(data), strict=True))


# ------------------------------------------------------------------------ hostile lengths


def test_record_claiming_two_gib_value() -> None:
    record = b"".join(
        [
            b"\x18",  # length 12
            b"\x00\x00\x00",  # attributes, timestampDelta, offsetDelta
            b"\x02k",  # key "k"
            b"\xfe\xff\xff\xff\x0f",  # valueLength 2**31 - 1
            b"vv",  # the 2 bytes that are really there
        ]
    )
    batch = _raw_batch(record, 1)
    report = ScanReport()
    [decoded] = read_batches(batch, report=report)
    assert decoded.records == ()
    assert isinstance(decoded.error, DecodeError)
    [corrupt] = report.corrupt_batches
    assert corrupt.error.path == "batch[0].records[0].value"
    assert corrupt.error.offset == 61 + 11
    with pytest.raises(TruncatedError):
        list(read_batches(batch, strict=True))
    chunk = scan_columns(batch, report=ScanReport())
    assert len(chunk.records) == 0
    assert chunk.batches.decoded.tolist() == [False]


def test_value_length_past_its_record() -> None:
    record = b"".join(
        [
            b"\x0e",  # length 7: the record ends after the value length
            b"\x00\x00\x00",  # attributes, timestampDelta, offsetDelta
            b"\x01",  # null key
            b"\xfe\xff\xff\xff\x0f",  # valueLength 2**31 - 1, itself running past the record
        ]
    )
    with pytest.raises(TruncatedError) as info:
        list(read_batches(_raw_batch(record, 1), strict=True))
    assert info.value.path == "batch[0].records[0].valueLength"
    assert info.value.offset == 61 + 5


@pytest.mark.parametrize(
    ("count", "error"),
    [(-1, InvalidLengthError), (-(2**31), InvalidLengthError), (2**31 - 1, InvalidLengthError)],
)
def test_hostile_record_counts(count: int, error: type[DecodeError]) -> None:
    batch = _raw_batch(BATCHES[0][61:], count)
    report = ScanReport()
    [decoded] = read_batches(batch, report=report)
    assert isinstance(decoded.error, error)
    assert decoded.error.path == "batch[0].recordsCount"
    with pytest.raises(error):
        list(read_batches(batch, strict=True))
    report = ScanReport()
    chunk = scan_columns(batch, report=report)
    assert len(chunk.records) == 0
    assert [type(d.error) for d in report.corrupt_batches] == [error]


def test_count_smaller_than_records_leaves_bytes() -> None:
    two = encode_batch([RecordSpec(b"a", b"1"), RecordSpec(b"b", b"2")], base_offset=0)
    one = bytearray(two)
    one[57:61] = struct.pack(">i", 1)
    with pytest.raises(CorruptBatchError) as info:
        list(read_batches(_with_crc(one), strict=True))
    assert info.value.path == "batch[0].records[1]"


def test_batch_length_beyond_the_file_is_a_torn_tail() -> None:
    huge = bytearray(DATA)
    huge[POSITIONS[2] + 8 : POSITIONS[2] + 12] = struct.pack(">i", 2**31 - 1)
    report = ScanReport()
    assert len(list(read_batches(bytes(huge), report=report, strict=True))) == 2
    [tail] = report.invalid_tails
    assert tail.truncated


def test_batch_over_max_batch_bytes_is_skipped(tmp_path: Path) -> None:
    big = encode_batch([RecordSpec(b"k", b"x" * 5000)], base_offset=3)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(DATA[: POSITIONS[2]] + big + BATCHES[2])
    report = ScanReport()
    batches = list(read_segment(path, report=report, max_batch_bytes=1000, chunk_bytes=100))
    assert [b.base_offset for b in batches] == [0, 1, 2]
    [skipped] = report.corrupt_batches
    assert (skipped.position, skipped.size) == (POSITIONS[2], len(big))
    with pytest.raises(CorruptBatchError):
        list(read_segment(path, strict=True, max_batch_bytes=1000))


def test_unknown_magic_is_skipped_by_its_length() -> None:
    broken = bytearray(DATA)
    broken[POSITIONS[1] + 16] = 7
    report = ScanReport()
    assert [b.base_offset for b in read_batches(bytes(broken), report=report)] == [0, 2]
    [corrupt] = report.corrupt_batches
    assert (corrupt.error.path, corrupt.error.offset) == ("batch[1].magic", POSITIONS[1] + 16)


# ------------------------------------------------------------------ bounded decompression

LIMIT = 1 << 20  # 1 MiB
BOMB = bytes(64 << 20)  # 64 MiB of zeros


@pytest.mark.parametrize("codec", [c for c in Compression if c is not Compression.NONE])
def test_decompression_bomb_is_rejected_without_allocating_it(codec: Compression) -> None:
    compressed = compress(codec, BOMB)
    tracemalloc.start()
    try:
        with pytest.raises(CompressionError) as info:
            decompress(codec, compressed, limit=LIMIT, path="batch[0].records", offset=61)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "exceeds the limit" in info.value.reason
    assert info.value.path == "batch[0].records"
    # The section's start, or the compressed block that went over the limit.
    assert 61 <= info.value.offset <= 61 + len(compressed)
    assert peak < 6 * LIMIT


@pytest.mark.parametrize("codec", [Compression.SNAPPY, Compression.ZSTD])
def test_declared_huge_size_rejected_before_decompressing(codec: Compression) -> None:
    if codec is Compression.SNAPPY:
        # A raw snappy block whose length preamble claims 2**32 - 1 bytes.
        payload = b"\xff\xff\xff\xff\x0f" + b"\x00" * 8
    else:
        # A zstd frame header declaring a 1 TiB single-segment content size.
        payload = b"\x28\xb5\x2f\xfd" + b"\xe0" + struct.pack("<Q", 1 << 40) + b"\x01\x00\x00"
    tracemalloc.start()
    try:
        with pytest.raises(CompressionError) as info:
            decompress(codec, payload, limit=LIMIT)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "exceeds the limit" in info.value.reason
    assert peak < LIMIT


def test_bomb_batch_in_a_file_is_reported_and_the_next_batch_read(tmp_path: Path) -> None:
    bomb = encode_batch(
        [RecordSpec(b"k", bytes(8 << 20))], base_offset=3, compression=Compression.GZIP
    )
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(DATA[: POSITIONS[2]] + bomb + BATCHES[2])
    report = ScanReport()
    batches = list(read_segment(path, report=report, max_decompressed_bytes=LIMIT))
    assert [b.base_offset for b in batches] == [0, 1, 3, 2]
    assert batches[2].records == ()
    [corrupt] = report.corrupt_batches
    assert isinstance(corrupt.error, CompressionError)
    assert corrupt.error.path == "batch[2].records"
    assert corrupt.error.offset == POSITIONS[2] + 61
    chunk = scan_columns(path.read_bytes(), report=ScanReport(), max_decompressed_bytes=LIMIT)
    assert chunk.records.offset.tolist() == [0, 1, 2]


def test_errors_inside_compressed_records_point_at_the_section() -> None:
    # A record whose value length runs past its record, inside a gzip section.
    record = b"\x0e\x00\x00\x00\x01\xfe\xff\xff\xff\x0f"
    payload = compress(Compression.GZIP, record)
    batch = _raw_batch(payload, 1, attributes=1)
    with pytest.raises(TruncatedError) as info:
        list(read_batches(batch, strict=True, base_position=1000))
    assert info.value.path == "batch[0].records[0].valueLength"
    assert info.value.offset == 1000 + 61
    assert "decompressed byte 5" in info.value.reason


def test_lz4_header_checksum_rules() -> None:
    good = compress(Compression.LZ4, b"hello world" * 10)
    broken_hc = compress(Compression.LZ4, b"hello world" * 10, magic=0)
    assert good[6] != broken_hc[6]
    assert decompress(Compression.LZ4, good) == b"hello world" * 10
    # Magic 0 (KIP-57): Kafka ignores HC, old clients computed it over the magic bytes too.
    assert decompress(Compression.LZ4, broken_hc, magic=0) == b"hello world" * 10
    with pytest.raises(CompressionError, match="descriptor checksum"):
        decompress(Compression.LZ4, broken_hc, magic=2)


def test_raw_unframed_snappy_is_accepted() -> None:
    raw = bytes(cramjam.snappy.compress_raw(b"abc" * 100))
    assert decompress(Compression.SNAPPY, raw) == b"abc" * 100
    framed = compress(Compression.SNAPPY, b"abc" * 100)
    assert framed.startswith(b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")
    assert decompress(Compression.SNAPPY, framed + framed[:0]) == b"abc" * 100


def test_concatenated_gzip_members_are_read() -> None:
    both = compress(Compression.GZIP, b"first ") + compress(Compression.GZIP, b"second")
    assert decompress(Compression.GZIP, both) == b"first second"


# --------------------------------------------------------------------- property-based


def _strict_error(data: bytes) -> DecodeError | None:
    """The error a strict read raises (anything but a DecodeError propagates and fails)."""
    try:
        list(read_batches(data, strict=True))
    except DecodeError as exc:
        return exc
    return None


def _assert_located(error: DecodeError | None, size: int) -> None:
    if error is not None:
        assert error.path, f"no field path in {error!r}"
        assert 0 <= error.offset <= size + 61


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_raise_only_located_decode_errors(data: bytes) -> None:
    _assert_located(_strict_error(data), len(data))
    report = ScanReport()
    list(read_batches(data, report=report))
    scan_columns(data, report=ScanReport())


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(list(Compression)),
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=10_000), st.integers(0, 255)), max_size=6
    ),
)
def test_mutated_batches_with_fixed_crc_raise_only_located_errors(
    codec: Compression, edits: list[tuple[int, int]]
) -> None:
    specs = [
        RecordSpec(b"key%d" % i, b"value" * i, 1700000000000 + i, (("h", b"x"),)) for i in range(4)
    ]
    batch = bytearray(encode_batch(specs, base_offset=0, compression=codec))
    for position, value in edits:
        index = 21 + position % (len(batch) - 21)  # leave the framing intact
        batch[index] = value
    data = _with_crc(batch)
    _assert_located(_strict_error(data), len(data))
    report = ScanReport()
    batches = list(read_batches(data, report=report))
    chunk = scan_columns(data, report=ScanReport())
    # The fast path agrees with the per-record reader on what decodes.
    decoded = [r.value for b in batches for r in b.records]
    assert [chunk.records.value(i) for i in range(len(chunk.records))] == decoded


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from([c for c in Compression if c is not Compression.NONE]), st.binary(max_size=300)
)
def test_random_compressed_sections_raise_only_compression_errors(
    codec: Compression, data: bytes
) -> None:
    error: CompressionError | None = None
    try:
        decompress(codec, data, limit=LIMIT)
    except CompressionError as exc:
        error = exc
    assert error is None or error.path == "records"


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_truncation_at_every_byte_is_detected(magic: int) -> None:
    data = encode_batch(
        [RecordSpec(b"k", b"v" * 20, 1700000000000), RecordSpec(None, b"w", 1700000000001)],
        base_offset=0,
        magic=magic,
        compression=Compression.GZIP,
    )
    for cut in range(len(data)):
        report = ScanReport()
        assert list(read_batches(data[:cut], report=report, strict=True)) == []
        assert report.invalid_tail_bytes == cut


def test_random_file_contents_never_raise_in_lenient_mode(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    for seed in range(20):
        rng = os.urandom(2000 + seed)
        path.write_bytes(DATA + rng)
        report = ScanReport()
        batches = list(read_segment(path, report=report, chunk_bytes=128))
        assert [b.base_offset for b in batches][:3] == [0, 1, 2]
        assert report.diagnostics
