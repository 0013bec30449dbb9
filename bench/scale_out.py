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

The machine has 2 cores in all: with a 2-core executor, the driver, the master and the worker
share them with the tasks, so the ratio is a lower bound of what a second core of a real
executor gives.
"""

from __future__ import annotations

import re
import shutil
import statistics
from typing import Any

from bench.common import WORK, Metric
from bench.pipeline import DURATION_S, GROUPS, PARTITIONS, Input

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


def steady_rate(batches: list[dict[str, Any]], per_trigger: int) -> float:
    """Records / seconds over the steady batches (not the first, not the tail).

    Raises:
        ValueError: the job had no steady batch.
    """
    steady = [b for b in batches[1:] if b["rows_in"] >= FULL_BATCH * per_trigger]
    if not steady:
        raise ValueError(f"no steady batch of {per_trigger:,} records in {batches}")
    rows: int = sum(b["rows_in"] for b in steady)
    seconds: float = sum(b["seconds"] for b in steady)
    return rows / seconds


def scale_metrics(jobs: list[dict[str, Any]], described: str, per_trigger: int) -> list[Metric]:
    """The three figures from the jobs' ``cores`` and ``batches``."""
    rates: dict[int, list[float]] = {1: [], 2: []}
    for job in jobs:
        rates[job["cores"]].append(steady_rate(job["batches"], per_trigger))
    notes = (
        "ingest job submitted to a standalone cluster (client mode), one executor; records / "
        "seconds over the steady batches (not the first, not the tail), one sample per job"
    )
    one = Metric("scale_out_records_per_s_1_core", "records/s", rates[1], described, notes)
    two = Metric(
        "scale_out_records_per_s_2_cores", "records/s", rates[2], described, notes,
        extra={"jobs": jobs},
    )  # fmt: skip
    ratio = Metric(
        "scale_out_ratio",
        "x",
        [statistics.median(rates[2]) / statistics.median(rates[1])],
        described,
        "scale_out_records_per_s_2_cores / scale_out_records_per_s_1_core, jobs interleaved "
        f"{', '.join(str(c) for c in ORDER)} cores",
    )
    return [one, two, ratio]


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
            batches = job_batches(finish(job, work, timeout=JOB_TIMEOUT_S))
            read = sum(b["rows_in"] for b in batches)
            if read != records:
                raise RuntimeError(f"job {i} ({cores} cores) read {read} records of {records}")
            rate = steady_rate(batches, per_trigger)
            print(f"  job {i}: {cores} core(s), steady {rate:,.0f} records/s", flush=True)
            jobs.append({"cores": cores, "batches": batches})
            shutil.rmtree(work / "warehouse", ignore_errors=True)
    finally:
        cluster.stop()
    described = (
        f"`simulate scale` {source.groups:,} groups x {PARTITIONS} partitions, "
        f"{DURATION_S} s: {records:,} internal-topic records, micro-batches of {per_trigger:,}"
    )
    return scale_metrics(jobs, described, per_trigger)
