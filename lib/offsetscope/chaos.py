"""Crash trials of the ingest driver: SIGKILL at seeded moments, restart, compare every table.

The pipeline's exactly-once promise (issue 6, ``DESIGN.md``): a driver killed at any moment and
restarted from its checkpoint ends with the same rows as a run that was never interrupted --
Delta writes are idempotent per (app id, batch id), MERGEs re-run on a replayed batch match the
rows they wrote, the fold state is saved after the table writes and the audit row last.

One trial::

    driver process (own session)  ──SIGKILL (whole process group: Python, JVM, workers)──┐
      └ ingest.run, available now, several micro-batches                               │
    driver process again, same checkpoint and schema, runs to the end  <────────────────┘

Kill moments, seeded per trial: ``timed`` -- a uniform moment of the uninterrupted run's
duration; ``commit`` -- the moment the k-th Delta commit file of the trial's tables appears in a
``_delta_log`` (the batch's other writes, the fold state and the audit row still to come;
files are polled every 5 ms), k uniform over the uninterrupted run's commit count.

Afterwards one SparkSession compares, for every table of the catalogue, the rows of each trial
with the uninterrupted run's (``exceptAll`` both ways; maps as sorted entry arrays; the columns
that say when a batch ran -- ``ingest_batch_id``, ``ingested_at`` -- left out, and the tables
whose rows depend on batch boundaries -- ``fold_state``, ``batch_audit``, ``end_offsets``,
``partition_lag`` -- compared by their totals: audit records in, and the final lag sample).
Prints each divergence and ``chaos: N trials, M diverged``; exits 1 unless M is 0.

Input: a deterministic synthetic log directory (:mod:`offsetscope.pipelines.synthetic`). Every
process runs in its own warehouse and metastore under ``--out`` (the embedded metastore admits
one JVM at a time; the trials run one after another).

``python -m offsetscope.chaos --trials 20 --seed 1 --out .work/chaos`` (``make chaos``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from offsetscope import config
from offsetscope.pipelines.synthetic import SyntheticLog, Workload

WORKLOAD: Final = Workload(groups=3, members=2, rebalance_every=4, transaction_every=2)
BATCH_DEPENDENT: Final = frozenset({"fold_state", "batch_audit", "end_offsets", "partition_lag"})
VOLATILE: Final = frozenset({"ingest_batch_id", "ingested_at"})
BASELINE: Final = "chaos_base"
QUERY: Final = "chaos"


@dataclass(frozen=True, slots=True)
class Trial:
    """One kill: how it was chosen and what happened."""

    number: int
    mode: str  # timed | commit
    target: float  # seconds after start (timed) or the k-th commit file (commit)
    killed_after: float | None  # seconds after start; None: the run ended before the kill
    commits_seen: int  # Delta commit files when it was killed
    schema: str
    restart_exit: int | None


def trial_config(base: config.Config, out: Path, schema: str, max_records: int) -> config.Config:
    """``base`` reading ``out/logs`` available-now in batches of ``max_records`` into ``schema``,
    with its own warehouse, metastore and checkpoint under ``out``."""
    work = (out / "runs").resolve()
    cfg = config.with_segment_source(
        base, (out / "logs").resolve(), max_records_per_trigger=max_records
    )
    cfg = config.with_storage(
        cfg, work_dir=work, schema=schema, checkpoint_dir=work / "checkpoints" / schema
    )
    return config.with_pipeline(cfg, trigger="available_now")


def _driver_command(out: Path, schema: str, max_records: int, env: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "offsetscope.chaos",
        "--driver",
        "--out",
        str(out),
        "--schema",
        schema,
        "--max-records",
        str(max_records),
        "--env",
        env,
    ]


def _driver(out: Path, schema: str, max_records: int, env: str) -> int:
    """The driver process: ingest everything available, then exit."""
    from offsetscope.pipelines import ingest
    from offsetscope.spark.session import build_job_session

    cfg = trial_config(config.load(env), out, schema, max_records)
    spark = build_job_session(cfg, app_name=f"offsetscope-chaos-{schema}")
    reports = ingest.run(spark, cfg, query_name=QUERY)
    print(json.dumps({"batches": len(reports), "records": sum(r.rows_in for r in reports)}))
    spark.stop()
    return 0


def _delta_commits(warehouse: Path, schema: str) -> int:
    """Commit files (``_delta_log/*.json``) of the schema's tables so far."""
    root = warehouse / f"{schema}.db"
    if not root.is_dir():
        return 0
    count = 0
    for table in root.iterdir():
        log = table / "_delta_log"
        if log.is_dir():
            count += sum(1 for f in log.iterdir() if f.name.endswith(".json"))
    return count


def _run(
    command: list[str],
    log: Path,
    *,
    kill_at: float | None,
    kill_on_commit: int | None,
    warehouse: Path,
    schema: str,
) -> tuple[int | None, float | None, int]:
    """Run a driver; SIGKILL its process group at ``kill_at`` seconds or when the
    ``kill_on_commit``-th commit file appears. Returns (exit code or None when killed, seconds
    when killed, commits seen)."""
    with log.open("ab") as sink:
        proc = subprocess.Popen(
            command, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
        began = time.monotonic()
        try:
            while proc.poll() is None:
                now = time.monotonic() - began
                commits = _delta_commits(warehouse, schema) if kill_on_commit else 0
                if (kill_at is not None and now >= kill_at) or (
                    kill_on_commit is not None and commits >= kill_on_commit
                ):
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    return None, now, _delta_commits(warehouse, schema)
                time.sleep(0.005 if kill_on_commit else 0.05)
            return proc.returncode, None, _delta_commits(warehouse, schema)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _stable(df: Any) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql.types import MapType

    cols = []
    for f in df.schema.fields:
        if f.name in VOLATILE:
            continue
        if isinstance(f.dataType, MapType):
            cols.append(F.array_sort(F.map_entries(F.col(f"`{f.name}`"))).alias(f.name))
        else:
            cols.append(F.col(f"`{f.name}`"))
    return df.select(*cols)


def compare(spark: Any, base: config.Config, trial: config.Config) -> list[str]:
    """Divergences of ``trial``'s tables from ``base``'s (empty when they hold the same rows)."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    from offsetscope.spark import tables as catalogue

    out: list[str] = []
    for logical in sorted(catalogue.CATALOGUE):
        a = spark.table(catalogue.table_name(base, logical))
        try:
            b = spark.table(catalogue.table_name(trial, logical))
        except AnalysisException as exc:
            out.append(f"{logical}: missing after the restart ({str(exc).splitlines()[0]})")
            continue
        if logical in BATCH_DEPENDENT:
            if logical == "batch_audit":
                ra = a.agg(F.sum("rows_in")).collect()[0][0]
                rb = b.agg(F.sum("rows_in")).collect()[0][0]
                if ra != rb:
                    out.append(f"batch_audit: {rb} records in, uninterrupted {ra}")
                dup = b.groupBy("batch_id").count().where("count > 1").count()
                if dup:
                    out.append(f"batch_audit: {dup} batch ids audited more than once")
            if logical == "partition_lag":
                fa, fb = (
                    x.where(x["as_of"] == x.agg(F.max("as_of")).collect()[0][0]).drop(
                        "lag_seconds", "lag_method"
                    )
                    for x in (a, b)
                )
                extra, missing = fb.exceptAll(fa).count(), fa.exceptAll(fb).count()
                if extra or missing:
                    out.append(f"partition_lag final sample: {extra} extra, {missing} missing")
            if logical == "fold_state":
                # The folds' final states, end-offset samples (taken per batch) aside.
                keep = ["fold", "key", "state", "last_offset"]
                fa, fb = (x.where("fold != 'end_offsets'").select(*keep) for x in (a, b))
                extra, missing = fb.exceptAll(fa).count(), fa.exceptAll(fb).count()
                if extra or missing:
                    out.append(
                        f"fold_state: {extra} states only after the restart, {missing} missing"
                    )
            continue
        sa, sb = _stable(a), _stable(b)
        extra = sb.exceptAll(sa)
        missing = sa.exceptAll(sb)
        n_extra, n_missing = extra.count(), missing.count()
        if n_extra or n_missing:
            line = f"{logical}: {n_extra} rows only after the restart, {n_missing} rows missing"
            for r in extra.limit(3).collect():
                line += f"\n    + {r.asDict()}"
            for r in missing.limit(3).collect():
                line += f"\n    - {r.asDict()}"
            out.append(line)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m offsetscope.chaos --trials N --seed S --out DIR``."""
    parser = argparse.ArgumentParser(prog="offsetscope.chaos", description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path(".work/chaos"))
    parser.add_argument("--ticks", type=int, default=12, help="synthetic workload ticks")
    parser.add_argument("--batches", type=int, default=3, help="micro-batches per run")
    parser.add_argument("--env", default="local")
    parser.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--schema", default=BASELINE, help=argparse.SUPPRESS)
    parser.add_argument("--max-records", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    if args.driver:
        return _driver(out, args.schema, args.max_records, args.env)

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with SyntheticLog(out / "logs", WORKLOAD) as log:
        truth = log.run(args.ticks)
    max_records = max(20, -(-truth.records // args.batches))
    base_cfg = config.load(args.env)
    warehouse = Path(trial_config(base_cfg, out, BASELINE, max_records).storage.warehouse_dir)
    print(f"chaos: log of {truth.records} internal-topic records, batches of {max_records}")

    began = time.monotonic()
    code, _, commits = _run(
        _driver_command(out, BASELINE, max_records, args.env),
        out / f"{BASELINE}.log",
        kill_at=None,
        kill_on_commit=None,
        warehouse=warehouse,
        schema=BASELINE,
    )
    duration = time.monotonic() - began
    if code != 0:
        print(f"chaos: the uninterrupted run failed ({out / f'{BASELINE}.log'})")
        return 2
    print(f"chaos: uninterrupted run {duration:.1f} s, {commits} Delta commit files")

    rng = random.Random(args.seed)
    trials: list[Trial] = []
    for n in range(args.trials):
        schema = f"chaos_t{n:02d}"
        mode = "commit" if n % 2 else "timed"
        target = rng.uniform(0.15, 0.95) * duration if mode == "timed" else rng.randint(1, commits)
        command = _driver_command(out, schema, max_records, args.env)
        trial_log = out / f"{schema}.log"
        code, killed, seen = _run(
            command,
            trial_log,
            kill_at=target if mode == "timed" else None,
            kill_on_commit=int(target) if mode == "commit" else None,
            warehouse=warehouse,
            schema=schema,
        )
        restart, _, _ = _run(
            command,
            trial_log,
            kill_at=None,
            kill_on_commit=None,
            warehouse=warehouse,
            schema=schema,
        )
        trial = Trial(n, mode, target, killed, seen, schema, restart)
        trials.append(trial)
        what = f"killed at {killed:.1f} s after {seen} commits" if killed else "not killed"
        print(
            f"trial {n:2d} {mode:6s} target {target:7.1f}: {what}; restart exit {restart}",
            flush=True,
        )
        if restart != 0:
            print(f"    restart failed: see {trial_log}")

    from offsetscope.spark.session import build_job_session

    base = trial_config(base_cfg, out, BASELINE, max_records)
    spark = build_job_session(base, app_name="offsetscope-chaos-compare")
    diverged = 0
    for trial in trials:
        problems = [] if trial.restart_exit == 0 else [f"restart exit {trial.restart_exit}"]
        problems += compare(spark, base, trial_config(base_cfg, out, trial.schema, max_records))
        if problems:
            diverged += 1
            print(f"trial {trial.number} ({trial.mode}) diverged:")
            for p in problems:
                print(f"  {p}")
    spark.stop()
    print(f"chaos: {len(trials)} trials, {diverged} diverged")
    return 0 if diverged == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
