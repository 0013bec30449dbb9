"""Driver memory against batch size, and a cold start on a large backlog.

Input: ``simulate scale`` (:data:`bench.pipeline.GROUPS` groups x 20 partitions) written once as
a log directory (:class:`bench.pipeline.Input`): ``RSS_DURATION_S`` of virtual time (4,620,000
internal-topic records) for the memory figures, ``CATCHUP_DURATION_S`` (more than 10,000,000)
for the catch-up.

Each run is the real ingest query (:func:`bench.pipeline.ingest_once`: segment source, every
table, gates, lag, fold state, audit; ``available_now``; ``local[2]``) in a process of its own
whose tree's resident memory is sampled every 0.2 s, per role (:class:`bench.pipeline.RssSampler`:
the Python driver, the JVM, Spark's Python workers).

Figures:

* ``driver_rss_growth``: peak RSS of the Python driver -- the process that runs each batch's
  ``foreachBatch`` and would hold any per-record data collected to the driver -- with
  ``max_records_per_trigger`` 4,000,000 (one batch and a tail) divided by its peak with
  250,000 (nineteen batches);
* ``driver_jvm_rss_growth``: the same for the JVM. On ``local[2]`` the JVM is the driver and
  the executors at once, so it also holds the tasks' memory (Arrow buffers, Parquet writers,
  persisted batches), which grows with a batch up to the heap's limit: on a cluster that part
  is the executors';
* ``catchup_10m_s``: a cold start (fresh tables and checkpoint) on the whole backlog
  at ``max_records_per_trigger`` 1,000,000, from the first batch's read to the last batch's
  audit row, with the peak RSS of each role beside it.
"""

from __future__ import annotations

from typing import Any

from bench.common import Metric
from bench.pipeline import GROUPS, PARTITIONS, Input, ingest_once

RSS_DURATION_S = 120
CATCHUP_DURATION_S = 300
LARGE_BATCH = 4_000_000
SMALL_BATCH = 250_000
CATCHUP_BATCH = 1_000_000


def rss_metrics(large: dict[str, Any], small: dict[str, Any], described: str) -> list[Metric]:
    """``driver_rss_growth`` and ``driver_jvm_rss_growth`` from two :func:`ingest_once`
    results (batches of ``LARGE_BATCH`` and of ``SMALL_BATCH``)."""
    batches = f"max_records_per_trigger {LARGE_BATCH:,} against {SMALL_BATCH:,}"
    extra = {
        "peak_rss_mib": {
            str(LARGE_BATCH): large["peak_rss_mib"],
            str(SMALL_BATCH): small["peak_rss_mib"],
        },
        "seconds": {
            str(LARGE_BATCH): round(large["seconds"], 1),
            str(SMALL_BATCH): round(small["seconds"], 1),
        },
    }
    roles = {
        "driver_rss_growth": ("python_driver", "the Python driver"),
        "driver_jvm_rss_growth": (
            "driver_jvm",
            "the JVM (on local[2] the driver and the executors)",
        ),
    }
    return [
        Metric(
            name,
            "x",
            [large["peak_rss_mib"][role] / small["peak_rss_mib"][role]],
            described,
            f"peak RSS of {who}, {batches}",
            extra=extra,
        )
        for name, (role, who) in roles.items()
    ]


def catchup_metric(result: dict[str, Any], described: str) -> Metric:
    """``catchup_10m_s`` from an :func:`ingest_once` result."""
    return Metric(
        "catchup_10m_s",
        "s",
        [result["seconds"]],
        described,
        f"cold start on the whole backlog, max_records_per_trigger {CATCHUP_BATCH:,}: "
        f"{len(result['batches'])} batches, {result['records'] / result['seconds']:,.0f} "
        "records/s",
        extra={"peak_rss_mib": result["peak_rss_mib"], "batches": result["batches"]},
    )


def _checked(result: dict[str, Any], records: int, tag: str) -> dict[str, Any]:
    if result["records"] != records:
        raise RuntimeError(f"{tag}: ingest read {result['records']} records of {records}")
    print(
        f"  {tag}: {records:,} records in {result['seconds']:.1f} s, "
        f"{len(result['batches'])} batches, peak RSS {result['peak_rss_mib']}",
        flush=True,
    )
    return result


def _described(source: Input, records: int) -> str:
    return (
        f"`simulate scale` {source.groups:,} groups x {PARTITIONS} partitions, "
        f"{source.duration_s} s: {records:,} internal-topic records"
    )


def run(runs: int = 1, scale: float = 1.0) -> list[Metric]:
    del runs  # each figure is one run of a few minutes; the ratio is taken within this call
    groups = max(10, int(GROUPS * scale))
    small_batch = max(1_000, int(SMALL_BATCH * scale))
    large_batch = max(small_batch, int(LARGE_BATCH * scale))

    source = Input(groups, RSS_DURATION_S)
    records = int(source.generate()["records"])
    large = _checked(ingest_once(source.log_dir, large_batch, "rss-large"), records, "large")
    small = _checked(ingest_once(source.log_dir, small_batch, "rss-small"), records, "small")
    metrics = rss_metrics(large, small, _described(source, records))

    backlog = Input(groups, CATCHUP_DURATION_S)
    records = int(backlog.generate()["records"])
    per_trigger = max(1_000, int(CATCHUP_BATCH * scale))
    result = _checked(ingest_once(backlog.log_dir, per_trigger, "catchup"), records, "catchup")
    metrics.append(catchup_metric(result, _described(backlog, records)))
    return metrics
