"""Steady-state throughput from the broker and from a log directory: the whole pipeline against
the stack's floor.

Input: ``simulate scale`` (:data:`bench.pipeline.GROUPS` groups x 20 partitions, ``DURATION_S``
of virtual time: about 3,060,000 internal-topic records), mirrored to a fresh harness broker as
:mod:`bench.pipeline_broker` does (mirroring is setup, not timed), and the same scenario written
as a Kafka log directory (:class:`bench.pipeline.Input`, cached between runs).

In one process, one Spark session (``local[2]``), one after the other on the same mirror
topics, each query into a schema and checkpoint of its own, ``trigger = available_now``,
``max_offsets_per_trigger`` = 1,000,000 (``BENCH_PIPELINE_PER_TRIGGER``):

0. the ingest query once, not measured: the warm-up (below);
1. the floor;
2. the ingest query (``offsetscope.pipelines.ingest.run``: every table, quality gates, lag
   against the broker's end offsets, fold state, audit);
3. the floor again;
4. the ingest query over the log directory (``[sources] kind = "segments"``, the same
   ``max_records_per_trigger``; lag against the data topics' segments in the same directory);
5. the floor with the pipeline's outputs: the floor's batch, and beside it the appends of
   what one steady batch of run 2 wrote to every other table (partition_lag, groups_current,
   fold_state, end_offsets, the quality results, the audit row), taken from run 2's tables and
   cached before the query starts, in ``[pipeline] write_threads`` threads as the pipeline
   writes;
6. the floor again.

``make bench`` runs this worker ``--runs`` times, one process after the other
(:func:`combined`): every figure pools their steady batches, and each ratio has one sample per
process.

A floor run stands on each side of every other measured run, and each run's ratio is taken
against those two (:func:`beside_floors`): this machine's speed moves by a third or more within
a benchmark's quarter of an hour, and a floor measured minutes away from a run says little of
the machine that run had.

The floor is the same source -- Spark's Kafka source, a JVM source, so the floor is the stack's
and not the source's -- and the same micro-batches with only the raw and decoded offset-commit
appends: each batch coalesced to ``[spark] shuffle_partitions`` and persisted, appended to
``raw_records``, decoded with the project's ``mapInArrow`` decode, and its plain offset commits
appended to ``offset_commits`` -- the two writes every design keeps, under the same commit marks
and replay rule as the pipeline's writes (``lib/offsetscope/spark/writes.py``).

The warm-up runs the pipeline's code -- and the Kafka source's, Delta's and Parquet's, which
the floor runs too -- through the JVM's JIT before anything is measured, as a long-running
query's JVM has. Without it the first measured pipeline run was the JVM's first sight of most
of the pipeline's code: its steady batches compiled several times the generated classes, and
kept the JIT compiler threads several times as busy, as the same batches of the log-directory
run after it (``docs/benchmarks.md``, design choices). The warm-up's batches are kept in the
results as run ``warm_up`` and count in no figure.

A batch's wall time runs from the end of the previous batch's ``foreachBatch`` call to the end
of its own (so it holds the source's planning and the offset and commit log writes too). The
first batch warms the query (JVM code generation, the first Delta commits) and a batch of fewer
than 90% of ``max_offsets_per_trigger`` records (the input's tail) is not a steady one; every
other batch is. Each batch also records how many generated-code compilations it caused
(:func:`compilations`) and the CPU seconds each part of the process tree spent in it
(:class:`BatchMarks`: the Python driver, the Spark JVM's JIT compiler, garbage collector and
other threads, the Python workers, the broker), and after the seven runs the driver JVM's
memory pools are read (:func:`jvm_memory_mib`). Every figure's notes carry the medians of its
steady batches' CPU split and how many cores they kept busy (:func:`with_cpu`), so that a run
says where its time went. Figures:

* ``pipeline_steady_records_per_s``: median over the pipeline's steady batches of records /
  wall time, with each batch's per-phase times (``BatchReport.phases``) for the profile;
* ``floor_steady_records_per_s``: the same over every floor run's steady batches;
* ``pipeline_vs_floor_ratio``: the pipeline run's median records/s over the mean of the
  medians of the floor runs just before and after it (:func:`beside_floors`);
* ``pipeline_steady_logdir_records_per_s`` and ``pipeline_logdir_vs_floor_ratio``: the same for
  the log-directory run, against the floor runs beside it. The segment source is a Python data
  source, so this ratio holds the source's cost too, which is why the floor stays the JVM
  source's;
* ``outputs_floor_steady_records_per_s`` and ``outputs_floor_vs_floor_ratio``: the same for run
  5: what writing every table the pipeline writes costs with nothing computed (no fold, commit
  summary, lag rows or gate, and the quality results and audit beside the other appends rather
  than after them), so the ratio is a ceiling of ``pipeline_vs_floor_ratio`` on the machine.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import Metric, harness_broker
from bench.pipeline import GROUPS, PARTITIONS, Input, cpu_seconds, cpu_split, run_worker
from bench.pipeline_broker import broker_config, mirror_scale

# Three full micro-batches of 1,000,000 (the first warms the query) and a short tail.
DURATION_S = 90
# A batch below this share of max_offsets_per_trigger is the input's tail, not a steady batch.
FULL_BATCH = 0.9
RUNS = ("warm_up", "floor", "pipeline", "floor", "pipeline_logdir", "outputs_floor", "floor")
# The floor's own tables; the outputs floor adds the pipeline's other tables beside them.
FLOOR_TABLES = frozenset({"raw_records", "offset_commits"})


@dataclass(frozen=True, slots=True)
class PipelineRun:
    """A run kind that runs the ingest query: its figure, its ratio to the floor, its source."""

    figure: str
    ratio: str
    stored: str  # how the scenario reaches the query
    source: str


PIPELINES = {
    "pipeline": PipelineRun(
        "pipeline_steady_records_per_s",
        "pipeline_vs_floor_ratio",
        "mirrored to a harness broker",
        "from Spark's Kafka source",
    ),
    "pipeline_logdir": PipelineRun(
        "pipeline_steady_logdir_records_per_s",
        "pipeline_logdir_vs_floor_ratio",
        "written as a Kafka log directory (and mirrored)",
        "from the same scenario as a Kafka log directory (the segment source)",
    ),
}


def floor_batch(cfg: Any, batch: Any, batch_id: int, clock: Any, *, fresh: bool) -> None:
    """The floor's whole micro-batch (module docstring)."""
    from pyspark import StorageLevel

    from offsetscope.pipelines import frames
    from offsetscope.spark import decode as dec
    from offsetscope.spark import writes

    raw = batch.coalesce(cfg.spark.shuffle_partitions).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        cluster = cfg.sources.cluster
        writes.append(
            frames.bronze_frame(raw, batch_id, clock.now_ms(), cluster),
            cfg,
            "raw_records",
            query_name="floor",
            batch_id=batch_id,
            fresh=fresh,
        )
        commits = frames.plain_commit_frame(
            dec.decode(raw),
            read_committed_source=cfg.sources.kafka.isolation_level == "read_committed",
        )
        writes.append(
            writes.ms_frame("offset_commits", commits, cluster=cluster),
            cfg,
            "offset_commits",
            query_name="floor",
            batch_id=batch_id,
            fresh=fresh,
        )
    finally:
        raw.unpersist()


def pipeline_outputs(spark: Any, cfg: Any, batch: dict[str, Any]) -> dict[str, Any]:
    """What the pipeline's steady ``batch`` (a :func:`run_pipeline` batch, of the run into
    ``cfg``'s schema) wrote to each table beyond the floor's, as cached DataFrames by logical
    name: the catalogue tables' rows as many as it wrote, the quality results and audit rows of
    its batch id."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from offsetscope.quality import tables as quality
    from offsetscope.spark import tables as catalogue

    def of_batch(table: str) -> Any:
        return spark.table(table).where(F.col("batch_id") == batch["batch_id"])

    out = {
        logical: spark.table(catalogue.table_name(cfg, logical)).limit(rows)
        for logical, rows in sorted(batch["written"].items())
        if logical not in FLOOR_TABLES and rows
    }
    out["batch_audit"] = of_batch(catalogue.table_name(cfg, "batch_audit"))
    out[quality.QUALITY_RESULTS.logical] = of_batch(
        quality.qualified_name(cfg, quality.QUALITY_RESULTS)
    )
    for logical, df in out.items():
        if not df.persist(StorageLevel.MEMORY_AND_DISK).count():
            raise RuntimeError(f"pipeline batch {batch['batch_id']} wrote no {logical} rows")
    return out


def outputs_floor_batch(outputs: dict[str, Any]) -> Callable[..., None]:
    """The outputs floor's micro-batch (module docstring): :func:`floor_batch` and the appends
    of ``outputs`` (:func:`pipeline_outputs`) side by side."""
    from offsetscope.quality import tables as quality
    from offsetscope.spark import writes

    results = quality.QUALITY_RESULTS.logical

    def append(cfg: Any, logical: str, df: Any, batch_id: int, fresh: bool) -> None:
        if logical == results:
            writes.append_once(
                df,
                quality.qualified_name(cfg, quality.QUALITY_RESULTS),
                writes.app_id("outputs_floor", logical, "append"),
                batch_id,
                fresh=fresh,
            )
        else:
            writes.append(
                df, cfg, logical, query_name="outputs_floor", batch_id=batch_id, fresh=fresh
            )

    def each(cfg: Any, batch: Any, batch_id: int, clock: Any, *, fresh: bool) -> None:
        with ThreadPoolExecutor(cfg.pipeline.write_threads) as pool:
            done = [pool.submit(floor_batch, cfg, batch, batch_id, clock, fresh=fresh)]
            done += [
                pool.submit(append, cfg, logical, df, batch_id, fresh)
                for logical, df in outputs.items()
            ]
            for future in done:
                future.result()

    return each


def compilations(spark: Any) -> int:
    """Generated-code compilations (Janino) in this JVM so far, from Spark's ``CodegenMetrics``:
    on ``local[2]`` the driver and its executor threads share the JVM, so this counts both. A
    steady batch that still compiles shows Spark's generated-code cache
    (``spark.sql.codegen.cache.maxEntries``) evicting what the next batch needs again."""
    metrics = spark.sparkContext._jvm.org.apache.spark.metrics.source.CodegenMetrics
    return int(metrics.METRIC_COMPILATION_TIME().getCount())


class PythonGc:
    """Seconds this process's cyclic garbage collector has run so far, every generation, from
    ``gc.callbacks``: part of the driver's Python CPU, which /proc cannot tell apart. A
    collection holds the interpreter lock, so one runs at a time."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0
        gc.callbacks.append(self._on)

    def _on(self, phase: str, info: dict[str, int]) -> None:
        del info
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started


_PYTHON_GC: list[PythonGc] = []  # one per process, installed by the first BatchMarks


class BatchMarks:
    """What a batch took since the previous batch's end: wall seconds, generated-code
    compilations (:func:`compilations`), the CPU seconds of this process's tree per role
    (:func:`bench.pipeline.cpu_seconds`: the Python driver, the Spark JVM's JIT, garbage
    collector and other threads, the Python workers, the harness broker) and the driver
    Python's cyclic garbage collection (:class:`PythonGc`)."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        if not _PYTHON_GC:
            _PYTHON_GC.append(PythonGc())
        self.last = self._now()

    def _now(self) -> tuple[float, int, dict[str, float], float]:
        return (
            time.perf_counter(),
            compilations(self.spark),
            cpu_seconds(os.getpid()),
            _PYTHON_GC[0].seconds,
        )

    def next(self) -> dict[str, Any]:
        """The batch that just ended, as the ``wall_s``, ``codegen_compilations``, ``cpu_s``
        and ``python_gc_s`` of its record; the next batch is measured from now."""
        now = self._now()
        wall, compiled = now[0] - self.last[0], now[1] - self.last[1]
        cpu = cpu_split(self.last[2], now[2])
        collected = now[3] - self.last[3]
        self.last = now
        return {
            "wall_s": round(wall, 3),
            "codegen_compilations": compiled,
            "cpu_s": cpu,
            "python_gc_s": round(collected, 2),
        }


def jvm_memory_mib(spark: Any) -> dict[str, float]:
    """The driver JVM's memory pools in use (MiB) after a full collection: the live heap, the
    metaspace (loaded classes, generated ones among them) and the JIT's code heaps. Read once,
    after the timed runs, so that what Spark's generated-code cache keeps shows beside the
    batch times."""
    jvm = spark.sparkContext._jvm
    management = jvm.java.lang.management.ManagementFactory
    jvm.java.lang.System.gc()
    out = {"heap": management.getMemoryMXBean().getHeapMemoryUsage().getUsed() / 2**20}
    for pool in management.getMemoryPoolMXBeans():
        name = str(pool.getName())
        if name == "Metaspace" or name.startswith("CodeHeap"):
            out[name] = pool.getUsage().getUsed() / 2**20
    return {k: round(v, 1) for k, v in out.items()}


def rows_read(query: Any) -> dict[int, int]:
    """Records each batch of a streaming ``query`` read, from its progress: a query's own
    count, so that the floor runs no job of its own to count them."""
    read: dict[int, int] = {}
    for p in query.recentProgress:
        # A trigger that found nothing new reports the next batch id with 0 rows.
        batch = int(p["batchId"])
        read[batch] = max(read.get(batch, 0), int(p["numInputRows"]))
    return read


def run_floor(
    spark: Any, cfg: Any, checkpoint: Path, each_batch: Callable[..., None] | None = None
) -> list[dict[str, Any]]:
    """The floor query over the configured Kafka source, to the end of what is available;
    returns its batches (records, wall seconds). Its records per batch come from the query's
    progress, so that the floor runs no job of its own to count them. ``each_batch``: a batch's
    work in place of :func:`floor_batch` (its arguments)."""
    from offsetscope.clock import SystemClock
    from offsetscope.spark import sources, writes

    wall = SystemClock()
    batches: list[dict[str, Any]] = []
    marks = BatchMarks(spark)
    sequence = writes.BatchSequence()  # the pipeline's rule for which batches are fresh

    work = each_batch or floor_batch

    def each(batch: Any, batch_id: int) -> None:
        work(cfg, batch, batch_id, wall, fresh=sequence.begin(batch_id))
        sequence.done(batch_id)
        batches.append({"batch_id": batch_id, **marks.next()})
        print(f"floor batch {batch_id}: {batches[-1]['wall_s']:.1f} s", file=sys.stderr, flush=True)

    query = (
        sources.cluster_stream(spark, cfg)
        .writeStream.foreachBatch(each)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination()
        read = rows_read(query)
    finally:
        query.stop()
    for b in batches:
        b["rows_in"] = read[b["batch_id"]]
    return batches


def run_pipeline(spark: Any, cfg: Any, checkpoint: Path) -> list[dict[str, Any]]:
    """The ingest query to the end of what is available; returns its batches (records, wall
    seconds, per-phase seconds, rows written)."""
    from offsetscope.pipelines import ingest

    batches: list[dict[str, Any]] = []
    marks = BatchMarks(spark)

    def progress(r: ingest.BatchReport) -> None:
        batches.append(
            {
                "batch_id": r.batch_id,
                "rows_in": r.rows_in,
                **marks.next(),
                "seconds": round(r.seconds, 3),
                "phases": {k: round(v, 3) for k, v in sorted(r.phases.items())},
                "written": dict(r.rows_written),
            }
        )
        print(r.line(), file=sys.stderr, flush=True)

    ingest.run(spark, cfg, checkpoint=str(checkpoint), progress=progress)
    return batches


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Broker, mirror, the warm-up and the measured runs in this process (module docstring)."""
    from offsetscope import config
    from offsetscope.quality import tables as quality
    from offsetscope.spark.session import build_session
    from offsetscope.spark.tables import ensure_tables

    out = Path(spec["out"]).resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    per_trigger = int(spec["max_records_per_trigger"])
    log_dir = Path(spec["log_dir"]).resolve()
    runs: list[dict[str, Any]] = []
    with harness_broker("bench-steady") as handle:
        internal = mirror_scale(handle.bootstrap, int(spec["groups"]), int(spec["duration_s"]))
        base = config.with_pipeline(
            config.with_storage(
                broker_config(handle.bootstrap, per_trigger),
                work_dir=out,
                schema="offsetscope_steady",
            ),
            trigger="available_now",
        )
        spark = build_session(base, app_name="offsetscope-bench-steady")
        outputs: dict[str, Any] = {}
        try:
            for i, kind in enumerate(RUNS):
                cfg = config.with_storage(base, schema=f"offsetscope_steady_{kind}_{i}")
                expected = internal
                if kind == "floor":
                    ensure_tables(spark, cfg, FLOOR_TABLES)
                    batches = run_floor(spark, cfg, out / f"checkpoint-{i}")
                elif kind == "outputs_floor":
                    ensure_tables(
                        spark,
                        cfg,
                        FLOOR_TABLES | outputs.keys() - {quality.QUALITY_RESULTS.logical},
                    )
                    quality.ensure(spark, cfg, [quality.QUALITY_RESULTS])
                    batches = run_floor(
                        spark, cfg, out / f"checkpoint-{i}", outputs_floor_batch(outputs)
                    )
                    for df in outputs.values():
                        df.unpersist()
                else:
                    # "pipeline", and "warm_up": the same run from the broker, in no figure.
                    if kind == "pipeline_logdir":
                        cfg = config.with_segment_source(
                            cfg, log_dir, max_records_per_trigger=per_trigger
                        )
                        # The segment source also reads the control records the Kafka one
                        # never delivers.
                        expected = int(spec["log_dir_records"])
                    ensure_tables(spark, cfg)
                    batches = run_pipeline(spark, cfg, out / f"checkpoint-{i}")
                    if kind == "pipeline":
                        outputs = pipeline_outputs(spark, cfg, steady(batches, per_trigger)[0])
                read = sum(b["rows_in"] for b in batches)
                if read != expected:
                    raise RuntimeError(f"{kind} run {i} read {read} records of {expected}")
                runs.append({"kind": kind, "batches": batches})
            memory = jvm_memory_mib(spark)
        finally:
            spark.stop()
    return {"records": internal, "runs": runs, "jvm_memory_mib": memory}


def steady(batches: list[dict[str, Any]], per_trigger: int) -> list[dict[str, Any]]:
    """The steady batches of a run: not the first, and not a tail batch."""
    return [b for b in batches[1:] if b["rows_in"] >= FULL_BATCH * per_trigger]


def rates(batches: list[dict[str, Any]]) -> list[float]:
    return [b["rows_in"] / b["wall_s"] for b in batches]


def beside_floors(runs: list[dict[str, Any]], kind: str, per_trigger: int) -> list[float]:
    """Each ``kind`` run's median records/s over its steady batches, divided by the mean of
    the same median of the floor runs nearest before and after it (one of them at either end
    of the worker's runs)."""
    medians = [
        statistics.median(rates(s)) if (s := steady(r["batches"], per_trigger)) else None
        for r in runs
    ]
    floors = {
        i: m
        for i, (r, m) in enumerate(zip(runs, medians, strict=True))
        if r["kind"] == "floor" and m
    }
    ratios = []
    for i, (r, own) in enumerate(zip(runs, medians, strict=True)):
        if r["kind"] != kind or own is None:
            continue
        near = [j for j in floors if j < i][-1:] + [j for j in floors if j > i][:1]
        if not near:
            raise RuntimeError(f"no floor run beside the {kind} run {i}")
        ratios.append(own / statistics.fmean(floors[j] for j in near))
    return ratios


def combined(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Several :func:`worker` results (with ``peak_rss_mib``) as one: their runs in order --
    each worker's runs open with its own warm-up and floor, so every run keeps the floor runs
    of its own process beside it -- the highest peak RSS of each role, the last JVM pools."""
    if not results or len({r["records"] for r in results}) != 1:
        raise ValueError(
            f"worker results of different inputs: {[r.get('records') for r in results]}"
        )
    peaks: dict[str, float] = {}
    for r in results:
        for role, mib in r["peak_rss_mib"].items():
            peaks[role] = max(peaks.get(role, 0.0), mib)
    return {
        "records": results[0]["records"],
        "runs": [run for r in results for run in r["runs"]],
        "peak_rss_mib": peaks,
        "jvm_memory_mib": results[-1].get("jvm_memory_mib", {}),
    }


def run(runs: int = 1, scale: float = 1.0) -> list[Metric]:
    """``runs`` worker processes one after the other, each measuring every run kind once
    between floor runs; the ratios have a sample per worker."""
    groups = max(10, int(GROUPS * scale))
    per_trigger = int(os.environ.get("BENCH_PIPELINE_PER_TRIGGER", "1000000"))
    if scale != 1.0:
        per_trigger = max(1_000, int(per_trigger * scale))
    source = Input(groups, DURATION_S)
    manifest = source.generate()
    spec = {
        "groups": groups,
        "duration_s": DURATION_S,
        "max_records_per_trigger": per_trigger,
        "log_dir": str(source.log_dir),
        "log_dir_records": manifest["records"],
    }
    res = combined(
        [run_worker("--worker", spec, f"steady-{i}", module="bench.steady") for i in range(runs)]
    )
    for r in res["runs"]:
        print(
            f"  {r['kind']}: "
            + ", ".join(f"{b['rows_in']:,} in {b['wall_s']:.1f} s" for b in r["batches"]),
            flush=True,
        )
    return steady_metrics(res, groups, per_trigger)


def steady_metrics(res: dict[str, Any], groups: int, per_trigger: int) -> list[Metric]:
    """The figures from a :func:`worker` result (with ``peak_rss_mib``): the floor, and each
    pipeline run kind present with its ratio to the floor."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for r in res["runs"]:
        by_kind.setdefault(r["kind"], []).extend(steady(r["batches"], per_trigger))
    if not by_kind.get("pipeline") or not by_kind.get("floor"):
        raise RuntimeError(f"no steady batch of {per_trigger:,} records: {res['runs']}")

    def described(stored: str) -> str:
        return (
            f"`simulate scale` {groups:,} groups x {PARTITIONS} partitions, {DURATION_S} s, "
            f"{stored}: {res['records']:,} records, micro-batches of {per_trigger:,}"
        )

    floor = with_cpu(
        Metric(
            "floor_steady_records_per_s",
            "records/s",
            rates(by_kind["floor"]),
            described(PIPELINES["pipeline"].stored),
            "the same source and micro-batches with only the raw_records append and the decoded "
            "offset_commits append, a run on each side of every other run; one sample per "
            "steady batch",
        ),
        by_kind["floor"],
    )

    def against_floor(
        figure: str, ratio: str, kind: str, how: str, extra: dict[str, Any] | None = None
    ) -> list[Metric]:
        stored = PIPELINES.get(kind, PIPELINES["pipeline"]).stored
        run = with_cpu(
            Metric(figure, "records/s", rates(by_kind[kind]), described(stored), how),
            by_kind[kind],
        )
        run.extra.update(extra or {})
        against = Metric(
            ratio,
            "x",
            beside_floors(res["runs"], kind, per_trigger),
            described(stored),
            f"{figure} over the floor runs just before and after it in the same process (the "
            "mean of their medians), one sample per worker process",
        )
        # The ratio to every floor batch pooled, as it was taken before the floor ran between
        # the pipeline runs: it leans on whichever end of the run the machine was faster at.
        against.extra["pooled"] = round(run.median / floor.median, 3)
        return [run, against]

    out: list[Metric] = []
    for kind, run in PIPELINES.items():
        if kind not in by_kind:
            continue
        if not by_kind[kind]:
            raise RuntimeError(f"no steady batch of {per_trigger:,} records in the {kind} run")
        # The Kafka run's figure keeps every run (the floors' batches too), as it always has.
        runs = res["runs"] if kind == "pipeline" else [r for r in res["runs"] if r["kind"] == kind]
        out += against_floor(
            run.figure,
            run.ratio,
            kind,
            "the whole ingest query (every table, quality gates, lag, fold state, audit) "
            f"{run.source} on local[2], available_now; one sample per steady batch (not "
            "the first, not the tail), records / wall time between batch ends",
            {
                "runs": runs,
                "peak_rss_mib": res["peak_rss_mib"],
                "jvm_memory_mib": res.get("jvm_memory_mib", {}),
            },
        )
    if by_kind.get("outputs_floor"):
        out += against_floor(
            "outputs_floor_steady_records_per_s",
            "outputs_floor_vs_floor_ratio",
            "outputs_floor",
            "the floor's batch and, beside it, the appends of what one steady pipeline batch "
            "wrote to every other table (taken from the pipeline run, cached), in [pipeline] "
            "write_threads threads; nothing computed: a ceiling of pipeline_vs_floor_ratio",
        )
    return [out[0], floor, *out[1:]]


# How the CPU roles read in the figures' notes.
CPU_LABELS = {
    "python_driver": "driver Python",
    "jvm_jit": "JIT compiler threads",
    "jvm_gc": "garbage collection",
    "jvm_other": "other JVM threads (tasks, Delta, planning)",
    "python_workers": "Python workers",
    "other_jvm": "the broker",
}


def cpu_profile(batches: list[dict[str, Any]]) -> dict[str, float] | None:
    """Medians over ``batches`` of each role's CPU seconds (:data:`CPU_LABELS`) and of the
    cores they kept busy (every role's CPU over the batch's wall time); None when a batch has
    no CPU split (a result recorded before the benchmark measured it)."""
    if not batches or any("cpu_s" not in b for b in batches):
        return None
    out = {
        role: round(statistics.median(b["cpu_s"].get(role, 0.0) for b in batches), 1)
        for role in CPU_LABELS
    }
    out["cores_busy"] = round(
        statistics.median(sum(b["cpu_s"].values()) / b["wall_s"] for b in batches), 2
    )
    if all("python_gc_s" in b for b in batches):
        out["python_gc"] = round(statistics.median(b["python_gc_s"] for b in batches), 2)
    return out


def with_cpu(metric: Metric, batches: list[dict[str, Any]]) -> Metric:
    """``metric`` with its steady ``batches``' :func:`cpu_profile` in its notes and extra."""
    profile = cpu_profile(batches)
    if profile is None:
        return metric
    spent = ", ".join(
        f"{label} {profile[role]}"
        + (
            f" (its cyclic garbage collector {profile['python_gc']})"
            if role == "python_driver" and "python_gc" in profile
            else ""
        )
        for role, label in CPU_LABELS.items()
    )
    return dataclasses.replace(
        metric,
        notes=f"{metric.notes}; CPU-seconds a steady batch (medians): {spent}; "
        f"{profile['cores_busy']} cores busy",
        extra={**metric.extra, "cpu_s_per_steady_batch": profile},
    )


if __name__ == "__main__":
    Path(sys.argv[3]).write_text(json.dumps(worker(json.loads(sys.argv[2]))))
