"""A rough throughput measurement of the ingest pipeline on local Spark (not a test).

Writes a synthetic log directory of about ``--records`` internal-topic records (mostly offset
commits: 20 groups committing 10 partitions per tick, with rebalances and transactions, as
:mod:`offsetscope.pipelines.synthetic` writes them), ingests it into a fresh schema with
``[pipeline] trigger = available_now`` and prints records per second overall and per
micro-batch with the time of each phase. Timing goals belong to the benchmark suite; this only
measures.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from offsetscope import config
from offsetscope.pipelines import ingest
from offsetscope.pipelines.synthetic import SyntheticLog, Workload

WORKLOAD = Workload(
    groups=20,
    data_partitions=10,
    records_per_tick=1,
    rebalance_every=500,
    transaction_every=10,
    segment_bytes=64 * 1024 * 1024,
)


def write_log(out: Path, records: int) -> int:
    """Write (or reuse) the synthetic log; returns its record count."""
    marker = out / f".records-{records}"
    if marker.exists():
        return int(marker.read_text())
    shutil.rmtree(out, ignore_errors=True)
    with SyntheticLog(out / "logs", WORKLOAD) as log:
        while log.truth.records < records:
            log.run(100)
    marker.write_text(str(log.truth.records))
    return log.truth.records


def main(argv: Sequence[str] | None = None) -> int:
    """Generate, ingest, print the numbers."""
    parser = argparse.ArgumentParser(prog="offsetscope.pipelines.throughput")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path(".work/throughput"))
    parser.add_argument("--max-records-per-trigger", type=int, default=None)
    parser.add_argument("--env", default="local")
    parser.add_argument("--conf", type=Path, default=None)
    args = parser.parse_args(argv)
    from offsetscope.spark.session import build_job_session

    began = time.monotonic()
    count = write_log(args.out, args.records)
    print(f"log: {count} records in {args.out / 'logs'} ({time.monotonic() - began:.1f} s)")
    base = config.load(args.env, extra=args.conf)
    segments = base.sources.segments
    cfg = dataclasses.replace(
        base,
        sources=dataclasses.replace(
            base.sources,
            kind="segments",
            segments=dataclasses.replace(
                segments,
                log_dir=str((args.out / "logs").resolve()),
                data_log_dir="",
                max_records_per_trigger=args.max_records_per_trigger
                or segments.max_records_per_trigger,
            ),
        ),
        storage=dataclasses.replace(
            base.storage,
            schema="offsetscope_throughput",
            checkpoint_dir=str((args.out / "checkpoints").resolve()),
        ),
        pipeline=dataclasses.replace(base.pipeline, trigger="available_now"),
    )
    shutil.rmtree(args.out / "checkpoints", ignore_errors=True)
    spark = build_job_session(cfg, app_name="offsetscope-throughput")
    spark.sql(f"DROP SCHEMA IF EXISTS {cfg.storage.schema} CASCADE")
    from offsetscope.spark.tables import ensure_tables

    ensure_tables(spark, cfg)

    def progress(report: ingest.BatchReport) -> None:
        phases = ", ".join(f"{k} {v:.1f}s" for k, v in sorted(report.phases.items()))
        print(report.line(), flush=True)
        print(f"    {phases}", flush=True)

    began = time.monotonic()
    reports = ingest.run(spark, cfg, progress=progress)
    seconds = time.monotonic() - began
    total = sum(r.rows_in for r in reports)
    print(
        f"throughput: {total} records in {seconds:.1f} s = {total / seconds:,.0f} records/s "
        f"over {len(reports)} micro-batches (tables created beforehand)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
