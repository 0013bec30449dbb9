"""Warm micro-batches of about 1,000 records end to end: ``small_batch_s`` and its floor.

The worker and the figures are :func:`bench.pipeline.small_worker` and
:func:`bench.pipeline.small_batch` (they share the pipeline benchmark's input, slicer and
warm-up); this module makes them a benchmark of their own (``make bench
BENCH_ONLY=small_batch``).
"""

from __future__ import annotations

from bench.common import Metric
from bench.pipeline import small_batch


def run(runs: int = 3, scale: float = 1.0) -> list[Metric]:
    return small_batch(runs, scale)
