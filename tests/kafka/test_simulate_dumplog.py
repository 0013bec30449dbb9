"""Kafka's own DumpLogSegments reads a simulated log directory without a single complaint.

Needs the kafka-tools jars (``make install``), not a running broker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from offsetscope.protocol.log import list_segments, read_partition_dir
from offsetscope.sim.scenarios.run import simulate_to
from offsetscope.verify.harness.broker import run_dump_log

pytestmark = pytest.mark.kafka

DECODERS = {"__consumer_offsets": "offsets", "__transaction_state": "transaction"}


def test_dump_log_segments_reads_every_simulated_segment(tmp_path: Path) -> None:
    simulate_to("transactions", out=tmp_path)
    files: dict[str | None, list[Path]] = {}
    records: dict[str | None, int] = {}
    for directory in sorted(p for p in tmp_path.iterdir() if p.is_dir()):
        decoder = DECODERS.get(directory.name.rpartition("-")[0])
        files.setdefault(decoder, []).extend(s.log for s in list_segments(directory))
        records[decoder] = records.get(decoder, 0) + sum(
            len(b.records) for b in read_partition_dir(directory, strict=True)
        )
    assert set(files) == {"offsets", "transaction", None}
    for decoder, segments in files.items():
        # One JVM per kind of topic; data topics need --deep-iteration to list records.
        extra = ("--deep-iteration",) if decoder is None else ()
        text = run_dump_log(segments, decoder, extra_args=extra)
        for complaint in ("Error", "skipping", "invalid bytes", "isvalid: false", "Exception"):
            assert complaint not in text, text[text.find(complaint) - 500 :][:2000]
        assert text.count("| offset: ") == records[decoder], decoder
    assert sum(records.values()) > 10_000
