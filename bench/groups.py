"""Group-count scaling: one fixed micro-batch after the history of 1,000, 10,000 and 100,000 groups.

``history_scaling_ratio`` (``bench/pipeline.py``) grows the stored history of the groups the
batch touches; this grows the number of *other* groups the tables already hold. The measured
batch is the history-scaling batch (the last auto-commit round of ``simulate scale`` 1,000
groups x 20 partitions, 300 s: about 20,000 offset commits of groups ``scale-00000`` to
``scale-00999``). Before it, each schema stores the history of a ``simulate scale`` run of N
groups (the same group ids from ``scale-00000`` on) for ``HISTORY_S`` seconds of virtual time:
every group's join (two group-metadata records) and one auto-commit round of every partition,
about 22 records per group, ingested in slices of at most ``SLICE_RECORDS`` as the query's
micro-batches would be. So the batch's own groups have stored commits in every schema, and what
differs is how many groups, partitions and rows the fold state, ``groups_current`` and
``partition_lag`` hold when it runs.

All runs go through the query's ``foreachBatch`` function (``IngestPipeline.process_batch``)
in one Spark session, after a warm-up batch, in the order 1,000, 10,000, 100,000 and 1,000
again: the two 1,000 runs bound how much of a difference is a warmer process rather than the
group count. Figures:

* ``groups_scaling_batch_s_<N>``: the batch's time after N groups (1,000: the mean of its two).
* ``groups_scaling_ratio``: the time after the largest N over the time after 1,000.
* ``groups_scaling_peak_rss_*_mib``: peak memory of the run (history ingests included).

``scale`` shrinks every group count (``make bench BENCH_SCALE=0.01``).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from bench.common import Metric
from bench.pipeline import (
    PARTITIONS,
    SCALING_BATCH,
    SCALING_DURATION_S,
    SCALING_GROUPS,
    Input,
    _bench_config,
    run_worker,
    slicer,
    warm_up,
    worker_session,
)

GROUP_COUNTS = (1_000, 10_000, 100_000)
# One auto-commit round of every partition: the first commits come after the 3 s initial
# rebalance delay plus one 5 s auto-commit interval.
HISTORY_S = 10
# The history goes in as micro-batches of at most this many records (the query's default
# max_records_per_trigger), as a query catching up with that log would ingest it.
SLICE_RECORDS = 1_000_000


def groups_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """The measured batch after each history of ``spec['histories']``, in ``spec['order']``."""
    from offsetscope.pipelines import ingest
    from offsetscope.spark.tables import ensure_tables

    out, cfg, spark = worker_session(spec, "offsetscope_bench_groups", "offsetscope-bench-groups")
    measured: dict[str, list[dict[str, Any]]] = {}
    try:
        batch = slicer(spark, cfg, Path(spec["log_dir"]), out)(
            1.0 - float(spec["batch_fraction"]), 1.01, "batch"
        )
        warm_up(spark, spec, out, batch)
        for run, groups in enumerate(spec["order"]):
            history = spec["histories"][str(groups)]
            slices = max(1, math.ceil(history["records"] / SLICE_RECORDS))
            cut = slicer(spark, cfg, Path(history["log_dir"]), out / f"history-{run}")
            run_cfg = _bench_config(spec, out, f"offsetscope_bench_groups_{groups}_{run}")
            ensure_tables(spark, run_cfg)
            # The pipeline's log directory (end offsets for lag) is the batch's.
            pipe = ingest.IngestPipeline(run_cfg, source_kind="segments", log_dir=spec["log_dir"])
            for k in range(slices):
                hi = (k + 1) / slices if k + 1 < slices else 1.01
                pipe.process_batch(cut(k / slices, hi, f"{k}"), k)
            pipe.process_batch(batch, slices)
            *stored, report = pipe.reports
            one = {
                "groups": groups,
                "history_records": sum(r.rows_in for r in stored),
                "history_seconds": round(sum(r.seconds for r in stored), 3),
                "rows_in": report.rows_in,
                "seconds": round(report.seconds, 3),
                "phases": {k: round(v, 3) for k, v in sorted(report.phases.items())},
            }
            measured.setdefault(str(groups), []).append(one)
            print(f"{groups} groups (run {run}): {one}", file=sys.stderr, flush=True)
    finally:
        spark.stop()
    return {
        label: {
            **runs[-1],
            "seconds": round(sum(r["seconds"] for r in runs) / len(runs), 3),
            "seconds_each": [r["seconds"] for r in runs],
        }
        for label, runs in measured.items()
    }


def run(runs: int = 1, scale: float = 1.0) -> list[Metric]:
    """One worker run (its history ingests are long); ``runs`` is not used for repeats."""
    del runs
    batch_input = Input(max(10, int(SCALING_GROUPS * scale)), SCALING_DURATION_S)
    batch_input.generate()
    counts = [max(10, int(n * scale)) for n in GROUP_COUNTS]
    histories: dict[str, dict[str, Any]] = {}
    for n in counts:
        source = Input(n, HISTORY_S)
        manifest = source.generate()
        histories[str(n)] = {"log_dir": str(source.log_dir), "records": int(manifest["records"])}
    result = run_worker(
        "--groups",
        {
            "log_dir": str(batch_input.log_dir),
            "batch_fraction": SCALING_BATCH,
            "histories": histories,
            "order": [counts[0], *counts[1:], counts[0]],
        },
        "groups",
        module="bench.groups",
    )
    for n in counts:
        r = result[str(n)]
        print(
            f"  {n:,} groups: batch {r['seconds_each']} s after {r['history_records']:,} "
            "stored records",
            flush=True,
        )
    return metrics(result, counts, batch_input)


def metrics(result: dict[str, Any], counts: list[int], batch_input: Input) -> list[Metric]:
    """The figures of one :func:`groups_worker` result (with its ``peak_rss_mib``)."""
    first, last = result[str(counts[0])], result[str(counts[-1])]
    described = (
        f"one micro-batch of {first['rows_in']:,} records (the last auto-commit round of "
        f"`simulate scale` {batch_input.groups:,} groups x {PARTITIONS} partitions, "
        f"{batch_input.duration_s} s) after the history of N groups (`simulate scale` N groups "
        f"x {PARTITIONS} partitions, {HISTORY_S} s: joins and one commit round)"
    )
    out = [
        Metric(
            f"groups_scaling_batch_s_{n}",
            "s",
            result[str(n)]["seconds_each"],
            described,
            f"after {n:,} groups ({result[str(n)]['history_records']:,} stored records); "
            "order 1,000, 10,000, 100,000, 1,000 after a warm-up batch",
            extra={"profile": result[str(n)]},
        )
        for n in counts
    ]
    out.append(
        Metric(
            "groups_scaling_ratio",
            "x",
            [last["seconds"] / first["seconds"]],
            described,
            f"batch time after {counts[-1]:,} groups / after {counts[0]:,} (the mean of its "
            "two runs)",
        )
    )
    out.extend(
        Metric(
            f"groups_scaling_peak_rss_{role}_mib",
            "MiB",
            [mib],
            described,
            "peak summed RSS of the role's processes over the whole run, history ingests "
            "included, 0.2 s sampling",
        )
        for role, mib in result["peak_rss_mib"].items()
    )
    return out


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--groups":
        outcome = groups_worker(json.loads(sys.argv[2]))
        Path(sys.argv[3]).write_text(json.dumps(outcome))
    else:
        for metric in run(1, float(sys.argv[1]) if len(sys.argv) > 1 else 0.01):
            print(metric.name, f"{metric.median:,.1f}", metric.unit)
