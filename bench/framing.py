"""Segment framing alone (no decoding of keys and values), from :mod:`bench.log_framing`.

Runs the log package's own framing benchmark on 1,000,000 offset-commit-sized records in
uncompressed batches of 1 and of 100 records, and reports columnar framing throughput.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import Metric


def run(runs: int = 3, scale: float = 1.0) -> list[Metric]:
    records = max(1_000, int(1_000_000 * scale))
    singles: list[float] = []
    hundreds: list[float] = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "framing.json"
            for per_batch, sink in ((1, singles), (100, hundreds)):
                subprocess.run(
                    [
                        "taskset",
                        "-c",
                        "0",
                        sys.executable,
                        "-m",
                        "bench.framing",
                        "--case",
                        str(per_batch),
                        str(records),
                        str(out),
                    ],
                    check=True,
                )
                sink.append(json.loads(out.read_text())["columnar_records_per_s"])
    described = f"{records:,} offset-commit records (type 1 key, value v3), uncompressed"
    return [
        Metric(
            "framing_single_record_batches_per_s",
            "records/s",
            singles,
            described,
            "1 record per batch, columnar scan, 1 pinned core",
        ),
        Metric(
            "framing_100_record_batches_per_s",
            "records/s",
            hundreds,
            described,
            "100 records per batch, columnar scan, 1 pinned core",
        ),
    ]


def _case(per_batch: int, records: int, out: Path) -> None:
    import time

    from bench.log_framing import columnar, write_segment
    from offsetscope.protocol.log import Compression

    with tempfile.TemporaryDirectory() as tmp:
        path = write_segment(Path(tmp) / "seg", records, per_batch, Compression.NONE)
        start = time.process_time()
        n = columnar(path)
        elapsed = time.process_time() - start
    out.write_text(json.dumps({"columnar_records_per_s": n / elapsed}))


if __name__ == "__main__":
    _case(int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]))
