"""End-to-end pipeline throughput, history scaling and memory: a log directory into Delta.

Input: ``offsetscope simulate scale`` (the catalogue's benchmark scenario: ``groups`` groups of
one consumer auto-committing every partition of a 20-partition topic every 5 s, plus the
group-metadata records of their joins; 10,000 groups and 30 s of virtual time give about
1,000,000 offset commits), written once as a Kafka log directory and cached under
``.work/bench/pipeline-input-<groups>x<duration>``.

Each measurement runs the real ingest query (``offsetscope.pipelines.ingest.run``: segment
source, decode, bronze/silver appends, history folds, gold MERGEs, fold state, audit) with
``trigger = available_now`` on ``local[2]`` in a process of its own, into a fresh schema with
its own warehouse, checkpoint and Derby metastore under ``.work/bench/pipeline/``. The tables
are created before the clock starts; everything from the first micro-batch's read to the last
batch's audit row is timed. The parent samples the resident memory of the process tree every
0.2 s: the driver (the JVM), the Python driver, and Spark's Python workers (``pyspark.daemon``
and its forks), each as the peak of their summed RSS (any other JVM of the tree, such as a
harness broker, apart: :func:`_role`).

Figures:

* ``pipeline_records_per_s``: all records of the input / wall time of the query, with
  ``max_records_per_trigger`` large enough that the input is one or a few micro-batches.
* ``history_scaling_ratio``: one fixed micro-batch ingested after a first batch that stored
  1x history and, into another schema, after one that stored 10x; the measured batch's time
  with 10x divided by its time with 1x. Its input is a longer, smaller run of the same
  scenario (1,000 groups for 300 s: about 1,200,000 records), so that both histories hold
  commits of every group and the measured batch -- the last auto-commit round (the last
  5 s, 1/60, of every partition: about 20,000 records) -- does the same work after either:
  1x is the first 9% (27 s, three or four commit rounds), 10x the first 90%. After a warm-up
  batch, the four runs go 1x, 10x, 10x, 1x (a later batch in the process runs warmer), each
  figure the mean of its two. All runs call the query's own ``foreachBatch`` function
  (``IngestPipeline.process_batch``) in one Spark session (:func:`scaling_worker`).
* ``pipeline_peak_rss_*_mib``: peak memory of the throughput run.

Each batch's per-phase times (``BatchReport.phases``) are kept in ``bench/results.json`` (the
profile "what limits it" in ``docs/benchmarks.md`` is read from).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from bench.common import WORK, Metric, child_process

PARTITIONS = 20
# 10,000 groups x 20 partitions x 5 auto-commits = 1,000,000 offset commits at scale 1.
GROUPS = 10_000
DURATION_S = 30
# history scaling: its own input, long enough that a 1x history already holds commits of
# every group (the first commits come after the 3 s initial rebalance delay plus one 5 s
# auto-commit interval); the measured batch is the last auto-commit round.
SCALING_GROUPS = 1_000
SCALING_DURATION_S = 300
SCALING_HISTORY = 0.09
SCALING_BATCH = 5 / SCALING_DURATION_S
# small_batch_s: consecutive slices of this fraction of every partition of the throughput input
# (about 1,000 records each), after a history of the first SMALL_HISTORY of it.
SMALL_FRACTION = 0.001
SMALL_HISTORY = 0.2
SMALL_BATCHES = 8


@dataclass(frozen=True, slots=True)
class Input:
    """A cached ``simulate scale`` log directory."""

    groups: int
    duration_s: int

    @property
    def root(self) -> Path:
        return WORK / f"pipeline-input-{self.groups}x{self.duration_s}s"

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"

    def generate(self) -> dict[str, Any]:
        """Write the log directory unless a manifest says it is there; returns the manifest."""
        manifest = self.root / "manifest.json"
        if manifest.exists():
            data: dict[str, Any] = json.loads(manifest.read_text())
            return data
        from offsetscope.sim.scenarios.run import simulate_to

        shutil.rmtree(self.root, ignore_errors=True)
        began = time.perf_counter()
        summary = simulate_to(
            "scale",
            out=self.log_dir,
            params={
                "groups": str(self.groups),
                "duration": f"{self.duration_s}s",
                "partitions": str(PARTITIONS),
            },
            ground_truth=False,
        )
        counts = internal_records(self.log_dir)
        data = {
            "groups": self.groups,
            "duration_s": self.duration_s,
            "records": sum(counts.values()),
            "by_topic": counts,
            "simulate": summary,
            "seconds": round(time.perf_counter() - began, 1),
        }
        manifest.write_text(json.dumps(data, indent=2))
        return data


def internal_records(log_dir: Path) -> dict[str, int]:
    """Records in the internal topics' partitions (what the segment source reads)."""
    from offsetscope.spark.logdir import LogEndCache, partition_dirs

    cache = LogEndCache()
    counts: dict[str, int] = {}
    for pdir in partition_dirs(log_dir):
        if pdir.topic in ("__consumer_offsets", "__transaction_state"):
            counts[pdir.topic] = counts.get(pdir.topic, 0) + cache.log_end_offset(pdir)
    return counts


# ---------------------------------------------------------------------- memory sampling


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(entry / "stat")
        if fields is not None:
            tree.setdefault(fields[1], []).append(int(entry.name))  # fields[1]: the ppid
    return tree


def _rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _role(pid: int, root: int) -> str:
    """A process of a benchmark's tree by role: ``python_driver`` (the root), ``driver_jvm``
    (the Spark JVM it starts), ``other_jvm`` (any other JVM: the harness broker of the steady
    benchmark) and ``python_workers`` (every other descendant: ``pyspark.daemon`` and the
    workers it forks)."""
    if pid == root:
        return "python_driver"
    command = _cmdline(pid)
    if "java" in command.split(" ", 1)[0]:
        return "driver_jvm" if SPARK_JVM in command else "other_jvm"
    return "python_workers"


# The Spark JVM's main class: ``pyspark`` starts the driver through it.
SPARK_JVM = "org.apache.spark.deploy.SparkSubmit"


class RssSampler:
    """Peak summed RSS per role of a process tree (:func:`_role`); ``other_jvm`` only when the
    tree has one."""

    def __init__(self, root: int, interval_s: float = 0.2) -> None:
        self.root = root
        self.interval_s = interval_s
        self.peak: dict[str, float] = {
            "driver_jvm": 0.0,
            "python_driver": 0.0,
            "python_workers": 0.0,
        }
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> dict[str, float]:
        now = dict.fromkeys(self.peak, 0.0)
        for pid in _tree(self.root):
            role = _role(pid, self.root)
            now[role] = now.get(role, 0.0) + _rss_mib(pid)
        for k, v in now.items():
            self.peak[k] = max(self.peak.get(k, 0.0), v)
        return now

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()


def _tree(root: int) -> list[int]:
    """``root`` and its descendants."""
    children = _children()
    out, stack = [], [root]
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(children.get(pid, ()))
    return out


# ---------------------------------------------------------------------- CPU accounting

# Where a benchmark's CPU time goes, per role of its process tree. The Spark JVM's time is
# split by thread: its JIT compiler threads (``C1 CompilerThre``, ``C2 CompilerThre``: Linux
# keeps 15 characters of a thread's name) and garbage collector threads (``GC Thread#n``,
# ``G1 ...``) by name, the rest -- executor tasks, Delta, planning, py4j -- as ``jvm_other``:
# the process's own total less the named threads, so that threads which have ended (executor
# task threads come and go) still count. On 2 cores the JVM keeps one C1 and one C2 compiler
# thread and a fixed set of GC threads for its whole life.
CPU_ROLES = ("python_driver", "jvm_jit", "jvm_gc", "jvm_other", "python_workers", "other_jvm")


def cpu_seconds(root: int) -> dict[str, float]:
    """CPU seconds (user and system) used so far by ``root``'s process tree, per
    :data:`CPU_ROLES`. ``python_workers`` holds the workers' own time and that of workers
    which have exited (their parent's reaped children's time)."""
    tick = os.sysconf("SC_CLK_TCK")
    out = dict.fromkeys(CPU_ROLES, 0.0)
    for pid in _tree(root):
        fields = _stat_fields(Path(f"/proc/{pid}/stat"))
        if fields is None:
            continue  # it ended while the tree was walked
        own, reaped = (fields[11] + fields[12]) / tick, (fields[13] + fields[14]) / tick
        role = _role(pid, root)
        if role == "driver_jvm":
            named = _jvm_threads(pid, tick)
            out["jvm_jit"] += named["jvm_jit"]
            out["jvm_gc"] += named["jvm_gc"]
            out["jvm_other"] += own - named["jvm_jit"] - named["jvm_gc"]
        elif role == "python_workers":
            out[role] += own + reaped
        else:
            out[role] += own
    return out


def cpu_split(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """What each role used between two :func:`cpu_seconds` readings, in tenths of seconds."""
    return {role: round(after[role] - before[role], 1) for role in CPU_ROLES}


def _jvm_threads(pid: int, tick: int) -> dict[str, float]:
    """CPU seconds of a JVM's JIT compiler and garbage collector threads."""
    out = {"jvm_jit": 0.0, "jvm_gc": 0.0}
    try:
        threads = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return out
    for thread in threads:
        try:
            name = (thread / "comm").read_text().strip()
        except OSError:
            continue
        role = jvm_thread_role(name)
        fields = _stat_fields(thread / "stat")
        if role is not None and fields is not None:
            out[role] += (fields[11] + fields[12]) / tick
    return out


def jvm_thread_role(name: str) -> str | None:
    """``jvm_jit``, ``jvm_gc`` or None (any other thread) for a JVM thread's name as Linux
    keeps it."""
    if "CompilerThre" in name:
        return "jvm_jit"
    if name.startswith(("GC Thread", "G1 ")):
        return "jvm_gc"
    return None


def _stat_fields(path: Path) -> list[int] | None:
    """The numeric fields of a ``/proc`` ``stat`` file after the command name (field 4 on, so
    utime is index 11), or None when the process or thread is gone."""
    try:
        text = path.read_text()
    except OSError:
        return None
    # the command name is parenthesised and may hold spaces: the fields follow the last ')'
    return [int(v) if v.lstrip("-").isdigit() else 0 for v in text.rsplit(")", 1)[1].split()]


# ---------------------------------------------------------------------- one ingest run


def worker_session(spec: dict[str, Any], schema: str, app_name: str) -> tuple[Path, Any, Any]:
    """A worker's fresh output folder ``spec['out']``, its config (``schema``) and session."""
    from offsetscope.spark.session import build_session

    out = Path(spec["out"]).resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    cfg = _bench_config(spec, out, schema)
    return out, cfg, build_session(cfg, app_name=app_name)


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Ingest ``spec['log_dir']`` into a fresh schema; returns records, seconds, batch reports."""
    from offsetscope.spark.tables import ensure_tables

    _, cfg, spark = worker_session(spec, "offsetscope_bench", "offsetscope-bench-pipeline")
    try:
        ensure_tables(spark, cfg)
        return timed_ingest(spark, cfg)
    finally:
        spark.stop()


def timed_ingest(spark: Any, cfg: Any) -> dict[str, Any]:
    """``ingest.run`` on tables that exist, timed; returns records, seconds and each batch's
    report (rows, seconds, per-phase times, rows written), printing a line per batch."""
    from offsetscope.pipelines import ingest

    reports: list[dict[str, Any]] = []

    def progress(r: ingest.BatchReport) -> None:
        reports.append(
            {
                "batch_id": r.batch_id,
                "rows_in": r.rows_in,
                "seconds": round(r.seconds, 3),
                "phases": {k: round(v, 3) for k, v in sorted(r.phases.items())},
                "written": dict(r.rows_written),
            }
        )
        print(r.line(), file=sys.stderr, flush=True)

    began = time.perf_counter()
    ingest.run(spark, cfg, progress=progress)
    seconds = time.perf_counter() - began
    return {"records": sum(r["rows_in"] for r in reports), "seconds": seconds, "batches": reports}


def floor_append(cfg: Any, batch: Any, batch_id: int, clock: Any, *, fresh: bool) -> None:
    """The floor's whole micro-batch: its rows appended to ``raw_records`` as read, in the
    batch's shuffle partitions, under the batch's idempotency marks -- nothing else; checked
    for a replay unless ``fresh``, as the pipeline's writes are (offsetscope.spark.writes)."""
    from offsetscope.pipelines import frames
    from offsetscope.spark import writes

    raw = batch.coalesce(cfg.spark.shuffle_partitions)
    frame = frames.bronze_frame(raw, batch_id, clock.now_ms(), cfg.sources.cluster)
    writes.append(frame, cfg, "raw_records", query_name="floor", batch_id=batch_id, fresh=fresh)


def floor_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """The least a Spark + Delta ingest of ``spec['log_dir']`` costs on this machine: the same
    streaming query over the same segment source, each micro-batch appended to ``raw_records``
    as read (the bronze copy every design keeps) and nothing else -- no decode, no other table,
    no fold, no quality gate, no audit. Timed like :func:`timed_ingest`, from the query's start
    to the end of its last batch, with the tables created beforehand."""
    from offsetscope.clock import SystemClock
    from offsetscope.spark import sources, writes
    from offsetscope.spark.tables import ensure_tables, table_name

    out, cfg, spark = worker_session(spec, "offsetscope_floor", "offsetscope-bench-floor")
    try:
        ensure_tables(spark, cfg, ("raw_records",))
        wall = SystemClock()

        sequence = writes.BatchSequence()  # the pipeline's rule for which batches are fresh

        def append(batch: Any, batch_id: int) -> None:
            floor_append(cfg, batch, batch_id, wall, fresh=sequence.begin(batch_id))
            sequence.done(batch_id)

        began = time.perf_counter()
        query = (
            sources.segment_stream(spark, cfg, spec["log_dir"])
            .writeStream.foreachBatch(append)
            .option("checkpointLocation", str(out / "checkpoint"))
            .start()
        )
        try:
            query.processAllAvailable()
        finally:
            query.stop()
        seconds = time.perf_counter() - began
        records = spark.table(table_name(cfg, "raw_records")).count()
    finally:
        spark.stop()
    return {"records": records, "seconds": seconds}


def run_worker(
    mode: str, spec: dict[str, Any], tag: str, *, module: str = "bench.pipeline"
) -> dict[str, Any]:
    """Run a worker (``python -m module mode spec result``: ``--worker`` or ``--scaling``) in a
    child process, sampling its tree's memory; returns its result with ``peak_rss_mib``."""
    out = WORK / "pipeline" / tag
    spec = {**spec, "out": str(out)}
    result_file = WORK / "pipeline" / f"{tag}.json"
    result_file.parent.mkdir(parents=True, exist_ok=True)
    result_file.unlink(missing_ok=True)
    log_path = WORK / "pipeline" / f"{tag}.log"
    with (
        child_process(module, mode, json.dumps(spec), str(result_file), log=log_path) as proc,
        RssSampler(proc.pid) as sampler,
    ):
        code = proc.wait()
    if code != 0 or not result_file.exists():
        raise RuntimeError(f"pipeline run {tag} exited {code}:\n{log_path.read_text()[-3000:]}")
    result: dict[str, Any] = json.loads(result_file.read_text())
    result["peak_rss_mib"] = {k: round(v, 1) for k, v in sampler.peak.items()}
    shutil.rmtree(out, ignore_errors=True)
    return result


def ingest_once(
    log_dir: Path, max_records_per_trigger: int, tag: str, mode: str = "--worker"
) -> dict[str, Any]:
    """The ingest query over ``log_dir`` in a child process (:func:`worker`; ``--floor``:
    :func:`floor_worker`)."""
    spec = {"log_dir": str(log_dir), "max_records_per_trigger": max_records_per_trigger}
    return run_worker(mode, spec, tag)


def _phase_totals(batches: list[dict[str, Any]]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for b in batches:
        for k, v in b["phases"].items():
            totals[k] = round(totals.get(k, 0.0) + v, 2)
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def run(runs: int = 3, scale: float = 1.0) -> list[Metric]:
    groups = max(10, int(GROUPS * scale))
    source = Input(groups, DURATION_S)
    manifest = source.generate()
    records = int(manifest["records"])
    described = (
        f"`simulate scale` {groups:,} groups x {PARTITIONS} partitions, {DURATION_S} s: "
        f"{records:,} internal-topic records"
    )
    per_trigger = int(os.environ.get("BENCH_PIPELINE_PER_TRIGGER", "1000000"))
    results: list[dict[str, Any]] = []
    for i in range(runs):
        res = ingest_once(source.log_dir, per_trigger, f"throughput-{i}")
        if res["records"] != records:
            raise RuntimeError(f"ingest read {res['records']} records of {records}")
        print(
            f"  pipeline run {i}: {records:,} records in {res['seconds']:.1f} s, "
            f"{len(res['batches'])} batches, peak RSS {res['peak_rss_mib']}",
            flush=True,
        )
        results.append(res)
    metrics = throughput_metrics(results, described, per_trigger)
    metrics.append(floor_metric(source.log_dir, per_trigger, runs, described, "floor"))
    scaling_input = Input(max(10, int(SCALING_GROUPS * scale)), SCALING_DURATION_S)
    scaling_input.generate()
    metrics.extend(history_scaling(scaling_input, runs))
    return metrics


def throughput_metrics(
    results: list[dict[str, Any]], described: str, per_trigger: int
) -> list[Metric]:
    """``pipeline_records_per_s`` and the peak RSS figures from :func:`ingest_once` results."""
    last = results[-1]
    rates = [r["records"] / r["seconds"] for r in results]
    metrics = [
        Metric(
            "pipeline_records_per_s",
            "records/s",
            rates,
            described,
            f"log directory -> Delta on local[2], folds + MERGE, available_now, "
            f"max_records_per_trigger {per_trigger:,}",
            extra={
                "phase_seconds_total": _phase_totals(last["batches"]),
                "batches": last["batches"],
            },
        )
    ]
    metrics.extend(
        Metric(
            f"pipeline_peak_rss_{role}_mib",
            "MiB",
            [r["peak_rss_mib"][role] for r in results],
            described,
            "peak summed RSS of the role's processes during the throughput run, 0.2 s sampling",
        )
        for role in last["peak_rss_mib"]
    )
    return metrics


def floor_metric(
    log_dir: Path, per_trigger: int, runs: int, described: str, tag: str, name: str = "pipeline"
) -> Metric:
    """``<name>_floor_records_per_s``: :func:`floor_worker` over ``log_dir``, ``runs`` times."""
    rates = []
    for i in range(runs):
        res = ingest_once(log_dir, per_trigger, f"{tag}-{i}", "--floor")
        rates.append(res["records"] / res["seconds"])
        print(f"  floor run {i}: {res['records']:,} records in {res['seconds']:.1f} s", flush=True)
    return Metric(
        f"{name}_floor_records_per_s",
        "records/s",
        rates,
        described,
        "the least a Spark + Delta ingest costs here: the same streaming query and segment "
        "source, each micro-batch only appended to raw_records (no decode, no other table), "
        "timed the same way",
    )


def _bench_config(spec: dict[str, Any], out: Path, schema: str) -> Any:
    from offsetscope import config

    cfg = config.with_segment_source(
        config.load(spec.get("env", "local")),
        Path(spec["log_dir"]).resolve(),
        max_records_per_trigger=int(spec.get("max_records_per_trigger", 1_000_000)),
    )
    cfg = config.with_storage(cfg, work_dir=out, schema=schema)
    return config.with_pipeline(cfg, trigger="available_now")


def slicer(spark: Any, cfg: Any, log_dir: Path, out: Path) -> Callable[[float, float, str], Any]:
    """``cut(lo, hi, name)``: the records of ``log_dir``'s internal topics whose offset lies in
    ``[lo, hi)`` of their partition's log end offset, written once to Parquet under ``out`` and
    read back, so a timed batch reads a file rather than re-framing the whole log directory."""
    from pyspark.sql import functions as F

    from offsetscope.spark import sources
    from offsetscope.spark.logdir import LogEndCache, partition_dirs

    cache = LogEndCache()
    ends = [
        (d.topic, d.partition, cache.log_end_offset(d))
        for d in partition_dirs(log_dir)
        if d.topic in ("__consumer_offsets", "__transaction_state")
    ]
    bounds = spark.createDataFrame(ends, "b_topic string, b_partition int, b_end bigint")
    raw = sources.read_segments(spark, cfg, str(log_dir))
    joined = raw.join(
        F.broadcast(bounds),
        (raw["topic"] == bounds["b_topic"]) & (raw["partition"] == bounds["b_partition"]),
    )

    def cut(lo: float, hi: float, name: str) -> Any:
        path = str(out / f"slice-{name}")
        pos = F.col("offset") / F.col("b_end")
        joined.where((pos >= lo) & (pos < hi)).select(*raw.columns).write.parquet(path)
        return spark.read.parquet(path)

    return cut


def warm_up(spark: Any, spec: dict[str, Any], out: Path, batch: Any) -> None:
    """The measured batch once into a throwaway schema, so that no measurement pays the
    process's first-batch costs (JIT, great-expectations' import, Delta's first commits)."""
    from offsetscope.pipelines import ingest
    from offsetscope.spark.tables import ensure_tables

    warm_cfg = _bench_config(spec, out, "offsetscope_bench_warmup")
    ensure_tables(spark, warm_cfg)
    ingest.IngestPipeline(warm_cfg, source_kind="segments", log_dir=spec["log_dir"]).process_batch(
        batch, 0
    )


def scaling_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """One micro-batch (the last ``batch_fraction`` of every partition) after the first
    ``history_fraction``, and after ten times that, each into a schema of its own.

    The slices are written to Parquet first, so the timed batch reads its records from a file
    rather than re-framing the whole log directory; the pipeline's ``foreachBatch`` function
    (``IngestPipeline.process_batch``) is called exactly as the streaming query calls it.
    """
    from offsetscope.pipelines import ingest
    from offsetscope.spark.tables import ensure_tables

    out, cfg, spark = worker_session(spec, "offsetscope_bench_1x", "offsetscope-bench-scaling")
    try:
        cut = slicer(spark, cfg, Path(spec["log_dir"]), out)

        fraction = float(spec["batch_fraction"])
        history_fraction = float(spec["history_fraction"])
        if history_fraction * 10 > 1.0 - fraction:
            raise ValueError("10x history would overlap the measured batch")
        batch = cut(1.0 - fraction, 1.01, "batch")
        warm_up(spark, spec, out, batch)
        # Measured in the order 1x, 10x, 10x, 1x (each into a schema of its own), each figure
        # the mean of its two: a later batch in the same process runs warmer, and with the
        # warm-up alone the 1x batch, measured first, still came out slower (22.6 s against
        # 17.6 s).
        histories = {
            1: cut(0.0, history_fraction, "1x"),
            10: cut(0.0, history_fraction * 10, "10x"),
        }
        measured: dict[str, list[dict[str, Any]]] = {"1x": [], "10x": []}
        for run, times in enumerate((1, 10, 10, 1)):
            label = f"{times}x"
            run_cfg = _bench_config(spec, out, f"offsetscope_bench_{label}_{run}")
            ensure_tables(spark, run_cfg)
            pipe = ingest.IngestPipeline(run_cfg, source_kind="segments", log_dir=spec["log_dir"])
            pipe.process_batch(histories[times], 0)
            pipe.process_batch(batch, 1)
            stored, report = pipe.reports
            one = {
                "history_records": stored.rows_in,
                "history_seconds": round(stored.seconds, 3),
                "rows_in": report.rows_in,
                "seconds": round(report.seconds, 3),
                "phases": {k: round(v, 3) for k, v in sorted(report.phases.items())},
            }
            measured[label].append(one)
            print(f"{label} (run {run}): {one}", file=sys.stderr, flush=True)
        results: dict[str, Any] = {
            label: {
                **runs[-1],
                "seconds": round(sum(r["seconds"] for r in runs) / len(runs), 3),
                "seconds_each": [r["seconds"] for r in runs],
            }
            for label, runs in measured.items()
        }
    finally:
        spark.stop()
    return results


def small_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Warm micro-batches of about 1,000 records, the steady state of a live cluster: a first
    batch stores the first ``history_fraction`` of every partition, then ``batches``
    consecutive slices of ``batch_fraction`` each are ingested one by one, as the streaming
    query's ``foreachBatch`` function calls them. A warm-up pipeline ingests the first slice
    into a throwaway schema first, so no measured batch pays the process's first costs.

    Each slice is also appended alone to the ``raw_records`` table of a schema of its own,
    right after its pipeline batch (the floor: one Delta commit of the same rows,
    :func:`floor_append`, as :func:`floor_worker` makes per batch)."""
    from offsetscope.clock import SystemClock
    from offsetscope.pipelines import ingest
    from offsetscope.spark.tables import ensure_tables

    out, cfg, spark = worker_session(spec, "offsetscope_bench_small", "offsetscope-bench-small")
    try:
        cut = slicer(spark, cfg, Path(spec["log_dir"]), out)
        history_fraction = float(spec["history_fraction"])
        fraction = float(spec["batch_fraction"])
        slices = [
            cut(history_fraction + i * fraction, history_fraction + (i + 1) * fraction, f"s{i}")
            for i in range(int(spec["batches"]))
        ]
        history = cut(0.0, history_fraction, "history")
        warm_up(spark, spec, out, slices[0])
        ensure_tables(spark, cfg)
        floor_cfg = _bench_config(spec, out, "offsetscope_bench_small_floor")
        ensure_tables(spark, floor_cfg, ("raw_records",))
        wall = SystemClock()

        def floor(batch: Any, batch_id: int) -> float:
            began = time.perf_counter()
            # Fresh after the first, as the pipeline's batches are.
            floor_append(floor_cfg, batch, batch_id, wall, fresh=batch_id > 0)
            return time.perf_counter() - began

        pipe = ingest.IngestPipeline(cfg, source_kind="segments", log_dir=spec["log_dir"])
        pipe.process_batch(history, 0)
        floor(history, 0)
        floors = []
        for i, batch in enumerate(slices, start=1):
            pipe.process_batch(batch, i)
            floors.append(floor(batch, i))
            r = pipe.reports[-1]
            print(
                f"small batch {i}: {r.rows_in} records in {r.seconds:.2f} s "
                f"(floor {floors[-1]:.2f} s)",
                file=sys.stderr,
                flush=True,
            )
        stored, *measured = pipe.reports
    finally:
        spark.stop()
    return {
        "history_records": stored.rows_in,
        "batches": [
            {
                "rows_in": r.rows_in,
                "seconds": round(r.seconds, 3),
                "floor_seconds": round(floor, 3),
                "phases": {k: round(v, 3) for k, v in sorted(r.phases.items())},
                "written": dict(r.rows_written),
            }
            for r, floor in zip(measured, floors, strict=True)
        ],
    }


def small_batch(runs: int = 3, scale: float = 1.0) -> list[Metric]:
    """``small_batch_s`` and its floor, from ``runs`` :func:`small_worker` runs over the
    throughput input (:func:`small_metrics`)."""
    source = Input(max(10, int(GROUPS * scale)), DURATION_S)
    source.generate()
    spec = {
        "log_dir": str(source.log_dir),
        "batch_fraction": SMALL_FRACTION,
        "history_fraction": SMALL_HISTORY,
        "batches": SMALL_BATCHES,
    }
    results = []
    for i in range(runs):
        results.append(run_worker("--small", spec, f"small-{i}"))
        print(f"  small-batch run {i}: {[b['seconds'] for b in results[-1]['batches']]} s")
    return small_metrics(results, source)


def small_metrics(results: list[dict[str, Any]], source: Input) -> list[Metric]:
    """The small-batch figures of :func:`small_worker` results: every warm batch of every run
    is a sample, and each batch's ratio to its own floor."""
    batches = [b for r in results for b in r["batches"]]
    seconds = [b["seconds"] for b in batches]
    floors = [b["floor_seconds"] for b in batches]
    last = results[-1]
    described = _small_described(results, source)
    return [
        Metric(
            "small_batch_s",
            "s",
            seconds,
            described,
            "each batch end to end (read, decode, every table, gates, lag, fold state, audit) "
            "as the query's foreachBatch runs it, local[2], after a warm-up batch; median of "
            "every batch of every run",
            extra={"profile": last["batches"], "peak_rss_mib": last.get("peak_rss_mib", {})},
        ),
        Metric(
            "small_batch_floor_s",
            "s",
            floors,
            described,
            "the same batch appended alone to raw_records (one Delta commit), right after the "
            "pipeline's batch in the same session",
        ),
        Metric(
            "small_batch_vs_floor_ratio",
            "x",
            [s / f for s, f in zip(seconds, floors, strict=True)],
            described,
            "each batch's small_batch_s over its own floor",
        ),
    ]


def _small_described(results: list[dict[str, Any]], source: Input) -> str:
    last = results[-1]
    rows = [b["rows_in"] for r in results for b in r["batches"]]
    return (
        f"{len(last['batches'])} consecutive micro-batches of {min(rows):,}-{max(rows):,} records "
        f"({SMALL_FRACTION:.1%} of every partition of `simulate scale` {source.groups:,} groups "
        f"x {PARTITIONS} partitions, {source.duration_s} s) after {last['history_records']:,} "
        f"stored records; {len(results)} run(s)"
    )


def history_scaling(source: Input, runs: int) -> list[Metric]:
    """The same micro-batch after 10x vs 1x stored history (``scaling_worker``)."""
    fraction = SCALING_BATCH
    ratios: list[float] = []
    last: dict[str, Any] = {}
    for i in range(max(1, runs - 1)):
        last = run_worker(
            "--scaling",
            {
                "log_dir": str(source.log_dir),
                "batch_fraction": fraction,
                "history_fraction": SCALING_HISTORY,
            },
            f"scaling-{i}",
        )
        ratios.append(last["10x"]["seconds"] / last["1x"]["seconds"])
        print(
            f"  scaling run {i}: 1x {last['1x']['seconds_each']} s, "
            f"10x {last['10x']['seconds_each']} s (batch of {last['1x']['rows_in']:,})",
            flush=True,
        )
    return [scaling_metric(ratios, last, source, fraction)]


def scaling_metric(
    ratios: list[float], last: dict[str, Any], source: Input, fraction: float
) -> Metric:
    """``history_scaling_ratio`` from :func:`scaling_worker` results."""
    return Metric(
        "history_scaling_ratio",
        "x",
        ratios,
        f"one micro-batch of {last['1x']['rows_in']:,} records (the last auto-commit round, "
        f"{fraction:.1%} of every partition, of `simulate scale` {source.groups:,} groups x "
        f"{PARTITIONS} partitions, {source.duration_s} s)",
        f"batch time after {last['10x']['history_records']:,} stored records / after "
        f"{last['1x']['history_records']:,}; measured 1x, 10x, 10x, 1x after a warm-up batch, "
        "each the mean of its two",
        extra={"profile": last, "peak_rss_mib": last.get("peak_rss_mib", {})},
    )


if __name__ == "__main__":
    jobs = {
        "--worker": worker,
        "--scaling": scaling_worker,
        "--floor": floor_worker,
        "--small": small_worker,
    }
    if len(sys.argv) == 4 and sys.argv[1] in jobs:
        job = jobs[sys.argv[1]]
        outcome = job(json.loads(sys.argv[2]))
        Path(sys.argv[3]).write_text(json.dumps(outcome))
    else:
        for metric in run(1, float(sys.argv[1]) if len(sys.argv) > 1 else 0.01):
            print(metric.name, f"{metric.median:,.1f}", metric.unit)
