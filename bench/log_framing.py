"""Segment framing throughput: records/s over generated ``__consumer_offsets``-like segments.

Writes segments of 1,000,000 offset-commit-sized records (OffsetCommitKey type 1 + value v3, as
the group coordinator writes them) with :class:`~offsetscope.protocol.log.PartitionWriter`, for
several batch sizes and every codec, then times on one core (best CPU time of 3 runs):

* ``columnar``   :func:`~offsetscope.protocol.log.iter_segment_columns`, framing only: batch
                 headers, CRC-32C, decompression, every record's offset, timestamp and the
                 start/length of its key and value (what the columnar decoder consumes);
* ``+gather``    the same plus keys and values copied out in Arrow binary layout;
* ``records``    :func:`~offsetscope.protocol.log.read_segment`, one ``Record`` object per record
                 (the convenient path), measured on the first 200,000 records only.

Usage::

    python -m bench.log_framing [--records N] [--out results.json] [--quick]

Prints one line per case and, with ``--out``, writes the numbers as JSON.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from offsetscope.protocol.log import (
    Compression,
    LogConfig,
    PartitionWriter,
    RecordSpec,
    ScanReport,
    iter_segment_columns,
    read_segment,
)

T0 = 1_700_000_000_000


def offset_commit(i: int) -> tuple[bytes, bytes]:
    """Key and value of an OffsetCommit record (type 1 key, value v3), sized like real ones."""
    group = b"payments-consumer-%03d" % (i % 200)
    topic = b"orders.v1.events-%02d" % (i % 13)
    key = b"".join(
        [
            struct.pack(">h", 1),  # record type 1
            struct.pack(">h", len(group)) + group,
            struct.pack(">h", len(topic)) + topic,
            struct.pack(">i", i % 24),  # partition
        ]
    )
    value = b"".join(
        [
            struct.pack(">h", 3),  # value version 3
            struct.pack(">q", 1_000_000 + i),  # offset
            struct.pack(">i", 7),  # leader epoch
            struct.pack(">h", 0),  # metadata ""
            struct.pack(">q", T0 + i),  # commit timestamp
        ]
    )
    return key, value


def write_segment(directory: Path, records: int, per_batch: int, codec: Compression) -> Path:
    """One partition directory holding ``records`` records in batches of ``per_batch``."""
    config = LogConfig(segment_bytes=2**31 - 1)
    with PartitionWriter(directory, config=config) as log:
        for start in range(0, records, per_batch):
            specs = []
            for i in range(start, min(start + per_batch, records)):
                key, value = offset_commit(i)
                specs.append(RecordSpec(key, value, T0 + i))
            log.append(specs, compression=codec)
    return directory / "00000000000000000000.log"


def _timed(fn: Callable[[], int], repeat: int = 3) -> tuple[int, float]:
    """Records and the best CPU time of ``repeat`` runs.

    CPU time of this process (not wall time): the figure is records/s *per core*, and the
    machine may be shared with other work while the benchmark runs.
    """
    best = float("inf")
    count = 0
    for _ in range(repeat):
        start = time.process_time()
        count = fn()
        best = min(best, time.process_time() - start)
    return count, best


def columnar(path: Path) -> int:
    report = ScanReport()
    count = sum(len(chunk.records) for chunk in iter_segment_columns(path, report=report))
    assert report.clean, report.diagnostics
    return count


def columnar_gather(path: Path) -> int:
    count = 0
    for chunk in iter_segment_columns(path):
        chunk.records.gather("key")
        chunk.records.gather("value")
        count += len(chunk.records)
    return count


def per_record(path: Path, limit: int) -> int:
    count = 0
    for batch in read_segment(path):
        count += len(batch.records)
        if count >= limit:
            break
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--quick", action="store_true", help="uncompressed, 100 per batch only")
    args = parser.parse_args(argv)
    cases: list[tuple[Compression, int]] = [(Compression.NONE, n) for n in (1, 10, 100)]
    cases += [(c, 100) for c in Compression if c is not Compression.NONE]
    if args.quick:
        cases = [(Compression.NONE, 100)]
    results = []
    with tempfile.TemporaryDirectory(prefix="offsetscope-bench-") as tmp:
        for codec, per_batch in cases:
            directory = Path(tmp) / f"{codec.codec_name}-{per_batch}"
            path = write_segment(directory, args.records, per_batch, codec)
            size = path.stat().st_size
            n1, t1 = _timed(lambda path=path: columnar(path))
            n2, t2 = _timed(lambda path=path: columnar_gather(path))
            n3, t3 = _timed(lambda path=path: per_record(path, 200_000))
            assert n1 == n2 == args.records
            row = {
                "codec": codec.codec_name,
                "records_per_batch": per_batch,
                "records": args.records,
                "segment_bytes": size,
                "columnar_records_per_s": round(n1 / t1),
                "columnar_gather_records_per_s": round(n2 / t2),
                "record_objects_per_s": round(n3 / t3),
            }
            results.append(row)
            print(
                f"{codec.codec_name:>6} x{per_batch:<4} {size / 2**20:7.1f} MiB  "
                f"columnar {row['columnar_records_per_s']:>10,}/s  "
                f"+gather {row['columnar_gather_records_per_s']:>10,}/s  "
                f"Record objects {row['record_objects_per_s']:>9,}/s",
                flush=True,
            )
    if args.out:
        args.out.write_text(json.dumps({"log_framing": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
