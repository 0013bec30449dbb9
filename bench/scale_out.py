"""Scale-out: the ingest job on a Spark standalone cluster, executors of 1 core against 2.

Input: the pipeline benchmark's log directory (:class:`bench.pipeline.Input`, ``simulate scale``
10,000 groups x 20 partitions, 30 s: about 1,020,000 internal-topic records).

A standalone master and one worker of 2 cores are started from the pyspark install
(:mod:`offsetscope.verify.harness.standalone`); the ingest job (``jobs/ingest.py``: segment
source, every table, gates, lag, fold state, audit; ``available_now``) is submitted to it with
``deploy/yarn/submit.sh`` in client mode, as an operator submits it, once per entry of
:data:`ORDER`: one executor of ``spark.executor.cores`` = ``spark.cores.max`` = 1 or 2, a fresh
warehouse and checkpoint each time. The driver (its JVM and the Python that runs each batch's
``foreachBatch``) is outside the executor, on the same machine.

Each job's batches come from its own progress lines (``[query] batch N: R records ... in S
s``). The first batch warms the executor (Python workers, code generation, the first Delta
commits) and a batch of fewer than 90% of ``max_records_per_trigger`` (250,000) is the input's
tail; the rest are steady. Figures:

* ``scale_out_records_per_s_1_core`` / ``_2_cores``: records / seconds over a job's steady
  batches, the median of its runs;
* ``scale_out_ratio``: 2 cores over 1 core.

After each ingest job, on the same cluster and with the same executor, comes the floor job: the
same segment source and micro-batches with only the raw and decoded offset-commit appends
(:func:`bench.steady.floor_batch`, the steady benchmark's floor), its driver a child process of
the benchmark (client mode, as the ingest job's is), each batch timed inside ``foreachBatch`` as
the ingest job times its own. Figures ``scale_out_floor_records_per_s_1_core`` / ``_2_cores``
and ``scale_out_floor_ratio``: what a second executor core gives the stack's least ingest of the
same input on the same machine, the measured ceiling of ``scale_out_ratio`` here.

The machine has 2 cores in all: with a 2-core executor, the driver, the master and the worker
share them with the tasks, so the ratio is a lower bound of what a second core of a real
executor gives.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import WORK, Metric
from bench.pipeline import DURATION_S, GROUPS, PARTITIONS, Input, run_worker

# 1 core, 2 cores, 2, 1: a later job on the same cluster may run warmer (page cache, JIT of the
# daemons), so each figure takes one early and one late job.
ORDER = (1, 2, 2, 1)
PER_TRIGGER = 250_000
FULL_BATCH = 0.9
JOB_TIMEOUT_S = 1800.0
WORKER_MEMORY = "6g"
EXECUTOR_MEMORY = "4g"
BATCH_LINE = re.compile(r"\] batch (\d+): (\d+) records \(.*\) in ([0-9.]+) s")


def job_batches(output: str) -> list[dict[str, Any]]:
    """The batches a job's output reports, in order."""
    return [
        {"batch_id": int(m[1]), "rows_in": int(m[2]), "seconds": float(m[3])}
        for m in BATCH_LINE.finditer(output)
    ]


def steady_batches(batches: list[dict[str, Any]], per_trigger: int) -> list[dict[str, Any]]:
    """A job's steady batches: not the first, not the tail."""
    return [b for b in batches[1:] if b["rows_in"] >= FULL_BATCH * per_trigger]


def steady_rate(batches: list[dict[str, Any]], per_trigger: int) -> float:
    """Records / seconds over the steady batches (not the first, not the tail).

    Raises:
        ValueError: the job had no steady batch.
    """
    steady = steady_batches(batches, per_trigger)
    if not steady:
        raise ValueError(f"no steady batch of {per_trigger:,} records in {batches}")
    rows: int = sum(b["rows_in"] for b in steady)
    seconds: float = sum(b["seconds"] for b in steady)
    return rows / seconds


def scale_metrics(jobs: list[dict[str, Any]], described: str, per_trigger: int) -> list[Metric]:
    """The figures from the jobs' ``cores``, ``batches`` and ``kind`` (``ingest``, the
    default, or ``floor``): three for the ingest jobs, and three for the floor jobs if any ran."""
    metrics = _figures(
        [j for j in jobs if j.get("kind", "ingest") == "ingest"], described, per_trigger,
        name="scale_out",
        job="ingest job submitted to a standalone cluster (client mode), one executor",
    )  # fmt: skip
    floor = [j for j in jobs if j.get("kind") == "floor"]
    if floor:
        metrics += _figures(
            floor, described, per_trigger,
            name="scale_out_floor",
            job=(
                "floor job (raw_records and decoded offset_commits appends only) on the same "
                "cluster and executor as the ingest job before it (client mode)"
            ),
        )  # fmt: skip
    return metrics


def _figures(
    jobs: list[dict[str, Any]], described: str, per_trigger: int, *, name: str, job: str
) -> list[Metric]:
    """``<name>_records_per_s_1_core``, ``..._2_cores`` and ``<name>_ratio`` of ``jobs``."""
    rates: dict[int, list[float]] = {1: [], 2: []}
    for j in jobs:
        rates[j["cores"]].append(steady_rate(j["batches"], per_trigger))
    notes = (
        f"{job}; records / seconds over the steady batches (not the first, not the tail), one "
        "sample per job"
    )
    # The floor's batches carry how busy the whole machine was (floor_worker).
    busy = {
        cores: [b["cores_busy"] for j in jobs if j["cores"] == cores
                for b in steady_batches(j["batches"], per_trigger) if "cores_busy" in b]
        for cores in (1, 2)
    }  # fmt: skip
    if busy[1] and busy[2]:
        notes += (
            f"; the machine's {os.cpu_count()} cores busy in the steady batches (median): "
            f"{statistics.median(busy[1]):.2f} with 1 executor core, "
            f"{statistics.median(busy[2]):.2f} with 2"
        )
    one = Metric(f"{name}_records_per_s_1_core", "records/s", rates[1], described, notes)
    two = Metric(
        f"{name}_records_per_s_2_cores", "records/s", rates[2], described, notes,
        extra={"jobs": jobs},
    )  # fmt: skip
    ratio = Metric(
        f"{name}_ratio",
        "x",
        [statistics.median(rates[2]) / statistics.median(rates[1])],
        described,
        f"{name}_records_per_s_2_cores / {name}_records_per_s_1_core, jobs interleaved "
        f"{', '.join(str(c) for c in ORDER)} cores",
    )
    return [one, two, ratio]


def machine_jiffies(stat: Path = Path("/proc/stat")) -> tuple[int, int]:
    """The whole machine's busy and total CPU time so far, in clock ticks: the first line of
    ``/proc/stat`` (user nice system idle iowait irq softirq steal ...; idle and iowait are the
    time no task ran)."""
    fields = [int(v) for v in stat.read_text().splitlines()[0].split()[1:9]]
    return sum(fields) - fields[3] - fields[4], sum(fields)


def cores_busy(before: tuple[int, int], after: tuple[int, int], cores: int | None = None) -> float:
    """How many of the machine's cores were busy between two :func:`machine_jiffies`."""
    total = after[1] - before[1]
    share = (after[0] - before[0]) / total if total > 0 else 0.0
    return round(share * (cores or os.cpu_count() or 1), 2)


def floor_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """The floor job's driver (module docstring): the site configuration of an ingest job on
    the cluster at ``spec['url']`` with an executor of ``spec['cores']``, the floor query over
    ``spec['log_dir']`` to the end of what is available; returns its batches (records, seconds
    inside ``foreachBatch``)."""
    from bench.steady import FLOOR_TABLES, floor_batch, rows_read
    from offsetscope import config
    from offsetscope.clock import SystemClock
    from offsetscope.spark import sources, writes
    from offsetscope.spark.session import build_session
    from offsetscope.spark.tables import ensure_tables
    from offsetscope.verify.harness.standalone import site_config

    work = Path(spec["out"]).resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    site = site_config(
        work, spec["url"], Path(spec["log_dir"]), schema="offsetscope_scale_out_floor",
        max_records=int(spec["per_trigger"]),
    )  # fmt: skip
    cfg = config.load("local", extra=site)
    # The site leaves the jars to submit.sh's --jars; this driver starts its own JVM, which
    # ships the jars of the local folder to the executor (spark.jars) as the job's does.
    cfg = dataclasses.replace(
        cfg, spark=dataclasses.replace(cfg.spark, jars_dir=config.SparkConfig().jars_dir)
    )
    cores = str(spec["cores"])
    spark = build_session(
        cfg,
        app_name="offsetscope-bench-scale-out-floor",
        extra_conf={
            "spark.cores.max": cores, "spark.executor.cores": cores,
            "spark.executor.memory": EXECUTOR_MEMORY, "spark.ui.enabled": "false",
        },
    )  # fmt: skip
    try:
        ensure_tables(spark, cfg, FLOOR_TABLES)
        wall = SystemClock()
        sequence = writes.BatchSequence()  # the pipeline's rule for which batches are fresh
        seconds: dict[int, float] = {}
        busy: dict[int, float] = {}  # the machine's cores busy in each batch

        def each(batch: Any, batch_id: int) -> None:
            began, jiffies = time.monotonic(), machine_jiffies()
            floor_batch(cfg, batch, batch_id, wall, fresh=sequence.begin(batch_id))
            sequence.done(batch_id)
            seconds[batch_id] = time.monotonic() - began
            busy[batch_id] = cores_busy(jiffies, machine_jiffies())
            print(
                f"floor batch {batch_id}: {seconds[batch_id]:.1f} s, "
                f"{busy[batch_id]:.2f} cores busy",
                file=sys.stderr,
                flush=True,
            )

        query = (
            sources.segment_stream(spark, cfg, spec["log_dir"])
            .writeStream.foreachBatch(each)
            .option("checkpointLocation", str(work / "checkpoint"))
            .start()
        )
        try:
            query.processAllAvailable()
            read = rows_read(query)
        finally:
            query.stop()
    finally:
        spark.stop()
    return {
        "batches": [
            {"batch_id": b, "rows_in": read[b], "seconds": round(s, 3), "cores_busy": busy[b]}
            for b, s in sorted(seconds.items())
        ]
    }


def run(runs: int = 1, scale: float = 1.0) -> list[Metric]:
    from offsetscope.verify.harness.standalone import Cluster, finish, site_config, submit

    del runs  # ORDER fixes the jobs: two of each executor size
    source = Input(max(10, int(GROUPS * scale)), DURATION_S)
    records = int(source.generate()["records"])
    per_trigger = max(1_000, int(PER_TRIGGER * scale))
    root = WORK / "scale-out"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    cluster = Cluster(root)
    jobs: list[dict[str, Any]] = []
    try:
        cluster.start_master()
        cluster.add_worker("worker", cores=2, memory=WORKER_MEMORY)
        for i, cores in enumerate(ORDER):
            work = root / f"job-{i}"
            work.mkdir()
            site = site_config(
                work, cluster.url, source.log_dir.resolve(), schema="offsetscope_scale_out",
                max_records=per_trigger, pipeline={"trigger": "available_now"},
            )  # fmt: skip
            job = submit(
                work, cluster.url, site,
                f"spark.cores.max={cores}", f"spark.executor.cores={cores}",
                f"spark.executor.memory={EXECUTOR_MEMORY}",
            )  # fmt: skip
            ingest = job_batches(finish(job, work, timeout=JOB_TIMEOUT_S))
            shutil.rmtree(work / "warehouse", ignore_errors=True)
            floor = run_worker(
                "--floor",
                {"url": cluster.url, "cores": cores, "log_dir": str(source.log_dir.resolve()),
                 "per_trigger": per_trigger},
                f"scale-out-floor-{i}",
                module="bench.scale_out",
            )["batches"]  # fmt: skip
            for kind, batches in (("ingest", ingest), ("floor", floor)):
                read = sum(b["rows_in"] for b in batches)
                if read != records:
                    raise RuntimeError(
                        f"{kind} job {i} ({cores} cores) read {read} records of {records}"
                    )
                rate = steady_rate(batches, per_trigger)
                print(
                    f"  {kind} job {i}: {cores} core(s), steady {rate:,.0f} records/s", flush=True
                )
                jobs.append({"kind": kind, "cores": cores, "batches": batches})
    finally:
        cluster.stop()
    described = (
        f"`simulate scale` {source.groups:,} groups x {PARTITIONS} partitions, "
        f"{DURATION_S} s: {records:,} internal-topic records, micro-batches of {per_trigger:,}"
    )
    return scale_metrics(jobs, described, per_trigger)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--floor":
        Path(sys.argv[3]).write_text(json.dumps(floor_worker(json.loads(sys.argv[2]))))
    else:
        for metric in run(1, float(sys.argv[1]) if len(sys.argv) > 1 else 0.01):
            print(metric.name, f"{metric.median:,.1f}", metric.unit)
