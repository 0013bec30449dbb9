"""Crash trials of the ingest driver: SIGKILL at seeded moments, restart, compare every table.

The pipeline's exactly-once promise (``docs/reliability.md``, "Driver crashes"): a driver
killed at any moment and restarted from its checkpoint ends with the same rows as a run that was
never interrupted -- Delta writes are idempotent per (app id, batch id), MERGEs re-run on a
replayed batch match the rows they wrote, the fold state is saved beside the table writes and a
replay folds from the states as they were before it (``lib/offsetscope/pipelines/state.py``),
the audit row is written last.

Trials run in chains, to spend the machine on kills rather than on JVM starts. One chain::

    driver (own session, own schema and checkpoint) ──SIGKILL (process group: Python, JVM)──┐
    driver again, same checkpoint ──SIGKILL at the chain's next moment─────────────────────┤
    ... ``--kills-per-chain`` kills, each one trial ...                                    │
    driver again, runs to the end  <──────────────────────────────────────────────────────┘

Each restart recovers from what the previous kill left (a torn batch, a commit without its
audit row, a half-created table), so a chain checks every recovery and their combination; its
tables are compared once at the end, and a divergence counts against every trial of the chain.
A driver that exits non-zero on its own before its kill (a recovery that fails) is a
divergence.

Kill moments, seeded per trial, measured from the restart they interrupt: ``timed`` -- a
uniform moment of the first 15-70 % of the uninterrupted run's duration; ``commit`` -- the moment
the j-th new Delta commit file (``_delta_log/*.json``) of the schema's tables appears, j uniform
over one micro-batch's commits (the batch's other writes, the fold state and the audit row still
to come); ``inside`` -- the moment the j-th new data file (``*.parquet``) appears, j uniform over
one batch's data files: a write whose files exist and whose commit does not yet; ``audit`` -- the
moment the j-th new ``batch_audit`` commit appears, j of 1 or 2: a batch's last table commit is
its audit row, so the kill lands after every table write of the batch and before the streaming
checkpoint commits it (the window a restart must replay as a whole batch of skipped writes).
Files are polled every 5 ms.

What a kill interrupted is read from the files it left (:func:`interrupted`): the batch in
flight (logged in the checkpoint's ``offsets/``, not in its ``commits/``) and which of the
tables the uninterrupted run wrote for that batch already hold its commit (each commit's
``userMetadata`` mark, ``lib/offsetscope/spark/writes.py``). Each trial is placed in one window
(:data:`WINDOWS`): the restart's start-up (no Delta file written since it began: the batch in
flight is as the previous kill left it), between batches, before the batch's first table
commit, among its table commits with or without its fold-state commit, or after its last table
commit and before the checkpoint's -- so a run shows which windows its kills reached.

Afterwards one SparkSession compares, for every table of the catalogue, the rows of each trial
with the uninterrupted run's (``exceptAll`` both ways; maps as sorted entry arrays; the columns
that say when a batch ran -- ``ingest_batch_id``, ``ingested_at`` -- left out, and the tables
whose rows depend on batch boundaries -- ``fold_state``, ``batch_audit``, ``end_offsets``,
``partition_lag`` -- compared by their totals: audit records in, and the final lag sample).
Prints each divergence and ``chaos: N trials, M diverged``; exits 1 unless M is 0.

Input: a deterministic synthetic log directory (:mod:`offsetscope.sim.synthetic`). Every
process runs in its own warehouse and metastore under ``--out`` (the embedded metastore admits
one JVM at a time; the trials run one after another).

``python -m offsetscope.verify.chaos --trials 50 --kills-per-chain 5 --seed 1 --out .work/chaos``
(``make chaos``).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from offsetscope import config
from offsetscope.sim.synthetic import SyntheticLog, Workload

WORKLOAD: Final = Workload(groups=3, members=2, rebalance_every=4, transaction_every=2)
BATCH_DEPENDENT: Final = frozenset({"fold_state", "batch_audit", "end_offsets", "partition_lag"})
VOLATILE: Final = frozenset({"ingest_batch_id", "ingested_at"})
BASELINE: Final = "chaos_base"
QUERY: Final = "chaos"


MODES: Final = ("timed", "commit", "inside", "audit")
# Where a kill lands in the micro-batch it interrupts (see the module docstring).
STARTUP: Final = "start-up, nothing written since the restart"
BETWEEN_BATCHES: Final = "between batches"
BEFORE_WRITES: Final = "before the batch's table commits"
STATE_FIRST: Final = "fold state committed, other tables not yet"
AMONG_WRITES: Final = "some table commits, not the fold state's"
BEFORE_CHECKPOINT: Final = "every table commit, not the checkpoint's"
WINDOWS: Final = (
    STARTUP,
    BETWEEN_BATCHES,
    BEFORE_WRITES,
    STATE_FIRST,
    AMONG_WRITES,
    BEFORE_CHECKPOINT,
)
STATE_TABLE: Final = "fold_state"
AUDIT_TABLE: Final = "batch_audit"  # written last in a batch (``pipelines/batch.py``)
FIRST_COMMIT: Final = f"{0:020d}.json"  # a Delta table's version 0: CREATE TABLE


@dataclass(frozen=True, slots=True)
class Trial:
    """One kill: how it was chosen and what happened."""

    number: int
    chain: int
    mode: str  # timed | commit | inside | audit (see the module docstring)
    target: float  # seconds after the restart, or the j-th new commit / data file
    killed_after: float | None  # seconds after the restart; None: it ended before the kill
    files: tuple[int, int]  # (commit files, data files) of the schema when it was killed
    schema: str
    exit_code: int | None  # of a run that ended on its own before the kill
    interrupted: Interrupted | None = None  # what the kill left (None: it ended before)


@dataclass(frozen=True, slots=True)
class Interrupted:
    """The micro-batch a kill interrupted, as the files show it (:func:`interrupted`)."""

    batch: int | None  # in flight: logged offsets, no checkpoint commit; None: between batches
    landed: tuple[str, ...]  # tables holding the batch's commit
    missing: tuple[str, ...]  # tables the uninterrupted run committed the batch to, not yet these
    wrote: bool = True  # the killed run had written a Delta file since its start

    @property
    def window(self) -> str:
        """Where the kill landed, one of :data:`WINDOWS`."""
        if not self.wrote:
            return STARTUP
        if self.batch is None:
            return BETWEEN_BATCHES
        if not self.landed:
            return BEFORE_WRITES
        if not self.missing:
            return BEFORE_CHECKPOINT
        return STATE_FIRST if STATE_TABLE in self.landed else AMONG_WRITES


@dataclass(frozen=True, slots=True)
class Files:
    """Counts of a schema's Delta files so far."""

    commits: int  # _delta_log/*.json
    data: int  # *.parquet data files (checkpoints under _delta_log not counted)
    audits: int = 0  # batch_audit's commits after its creation: batches whose writes all landed


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
        "offsetscope.verify.chaos",
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


def _files(warehouse: Path, schema: str) -> Files:
    """The schema's Delta commit and data files so far."""
    root = warehouse / f"{schema}.db"
    commits = data = audits = 0
    if root.is_dir():
        for table in root.iterdir():
            if not table.is_dir():
                continue
            try:
                paths = list(table.rglob("*"))
            except FileNotFoundError:
                # A restart removing a table whose creation a kill interrupted
                # (lib/offsetscope/spark/tables.py, clear_interrupted_create): the next poll
                # counts what is there then.
                continue
            for path in paths:
                if path.parent.name == "_delta_log":
                    is_commit = path.name.endswith(".json")
                    commits += is_commit
                    # Version 0 is the table's creation, not a batch's audit row.
                    audits += is_commit and table.name == AUDIT_TABLE and path.name != FIRST_COMMIT
                elif path.name.endswith(".parquet"):
                    data += 1
    return Files(commits, data, audits)


def batch_in_flight(checkpoint: Path) -> int | None:
    """The micro-batch a streaming checkpoint has logged offsets for and not committed."""

    def ids(folder: str) -> set[int]:
        where = checkpoint / folder
        return (
            {int(p.name) for p in where.iterdir() if p.name.isdigit()} if where.is_dir() else set()
        )

    logged = ids("offsets")
    if not logged:
        return None
    last = max(logged)
    return None if last in ids("commits") else last


def marked_tables(warehouse: Path, schema: str, query: str, batch: int) -> set[str]:
    """The tables of ``schema`` holding a commit ``query`` marked with ``batch``."""
    from offsetscope.spark.writes import marked

    root = warehouse / f"{schema}.db"
    found: set[str] = set()
    if not root.is_dir():
        return found
    for table in sorted(p for p in root.iterdir() if (p / "_delta_log").is_dir()):
        for commit in (table / "_delta_log").glob("*.json"):
            for line in commit.read_text().splitlines():
                action = json.loads(line) if line.strip() else {}
                info = action.get("commitInfo")
                mark = marked(info.get("userMetadata")) if isinstance(info, dict) else None
                if mark is not None and mark[1] == batch and mark[0].startswith(f"{query}:"):
                    found.add(table.name)
    return found


def interrupted(
    checkpoint: Path,
    warehouse: Path,
    schema: str,
    baseline: str,
    query: str = QUERY,
    *,
    wrote: bool = True,
) -> Interrupted:
    """What a kill left of the batch it interrupted in ``schema``, against the tables the
    uninterrupted run (``baseline``) committed that batch to. A table that is the baseline's
    table under another schema keeps its name, so the two compare by table name. ``wrote``:
    the killed run had written a Delta file since its start."""
    batch = batch_in_flight(checkpoint)
    if batch is None:
        return Interrupted(None, (), (), wrote)
    landed = marked_tables(warehouse, schema, query, batch)
    expected = marked_tables(warehouse, baseline, query, batch)
    return Interrupted(batch, tuple(sorted(landed)), tuple(sorted(expected - landed)), wrote)


def _run(
    command: list[str],
    log: Path,
    *,
    kill: Callable[[float, Files], bool] | None,
    files: Callable[[], Files],
) -> tuple[int | None, float | None, Files]:
    """Run a driver; SIGKILL its process group as soon as ``kill(seconds, files)`` holds.
    Returns (exit code, or None when killed; seconds when killed; files at the end)."""
    with log.open("ab") as sink:
        proc = subprocess.Popen(
            command, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
        began = time.monotonic()
        try:
            while proc.poll() is None:
                now = time.monotonic() - began
                if kill is not None and kill(now, files()):
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    return None, now, files()
                time.sleep(0.005 if kill is not None else 0.05)
            return proc.returncode, None, files()
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _kill_rule(mode: str, target: float, start: Files) -> Callable[[float, Files], bool]:
    """When a trial of ``mode`` kills: ``target`` seconds after the restart, or once the
    ``target``-th commit, data file or ``batch_audit`` commit after ``start`` exists."""
    if mode == "timed":
        return lambda seconds, _files: seconds >= target
    if mode == "commit":
        return lambda _seconds, now: now.commits >= start.commits + target
    if mode == "audit":
        return lambda _seconds, now: now.audits >= start.audits + target
    if mode == "inside":
        return lambda _seconds, now: now.data >= start.data + target
    raise ValueError(f"unknown kill mode {mode!r} (one of {', '.join(MODES)})")


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


def compare(
    spark: Any,
    base: config.Config,
    trial: config.Config,
    read: Callable[[config.Config, str], Any] | None = None,
) -> list[str]:
    """Divergences of ``trial``'s tables from ``base``'s (empty when they hold the same rows).

    ``read(cfg, logical)`` loads a table (default: by its name in the session's catalog).
    """
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    from offsetscope.pipelines import state as fold_state
    from offsetscope.spark import tables as catalogue

    def by_name(cfg: config.Config, logical: str) -> Any:
        if logical == STATE_TABLE:
            return spark.table(catalogue.table_name(cfg, logical))
        # A log of versions (groups_current) by each key's latest row: how many superseded
        # rows a run still holds depends on its batches and compactions.
        return catalogue.current_rows(spark, cfg, logical)

    load = read or by_name
    out: list[str] = []
    for logical in sorted(catalogue.CATALOGUE):
        a = load(base, logical)
        try:
            b = load(trial, logical)
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
                # The folds' final states, the ingest query's lease (who ran it and when: one
                # run's bookkeeping) aside.
                # A key's state is its latest version; how many superseded versions each run
                # still holds depends on its batches and compactions.
                keep = ["fold", "key", "state", "last_offset"]
                fa, fb = (
                    fold_state.latest(x.where(F.col("fold") != F.lit(fold_state.LEASE))).select(
                        *keep
                    )
                    for x in (a, b)
                )
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
    """``python -m offsetscope.verify.chaos --trials N --seed S --out DIR``."""
    parser = argparse.ArgumentParser(
        prog="offsetscope.verify.chaos", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--kills-per-chain", type=int, default=5)
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
    storage = trial_config(base_cfg, out, BASELINE, max_records).storage
    warehouse = Path(storage.warehouse_dir)
    checkpoints = Path(storage.checkpoint_dir).parent
    print(f"chaos: log of {truth.records} internal-topic records, batches of {max_records}")

    began = time.monotonic()
    code, _, reference = _run(
        _driver_command(out, BASELINE, max_records, args.env),
        out / f"{BASELINE}.log",
        kill=None,
        files=lambda: _files(warehouse, BASELINE),
    )
    duration = time.monotonic() - began
    chain_exit: dict[int, int | None] = {}
    if code != 0:
        print(f"chaos: the uninterrupted run failed ({out / f'{BASELINE}.log'})")
        return 2
    print(
        f"chaos: uninterrupted run {duration:.1f} s, {reference.commits} Delta commit files, "
        f"{reference.data} data files"
    )
    per_batch = Files(
        max(1, reference.commits // args.batches), max(1, reference.data // args.batches)
    )

    rng = random.Random(args.seed)
    trials: list[Trial] = []
    chains = -(-args.trials // args.kills_per_chain)
    for chain in range(chains):
        schema = f"chaos_c{chain:02d}"
        command = _driver_command(out, schema, max_records, args.env)
        chain_log = out / f"{schema}.log"
        count = functools.partial(_files, warehouse, schema)
        for _ in range(min(args.kills_per_chain, args.trials - len(trials))):
            n = len(trials)
            mode = MODES[n % len(MODES)]
            if mode == "timed":
                target: float = rng.uniform(0.15, 0.7) * duration
            elif mode == "audit":
                # A restart has at most ``--batches`` left; the first two are the likeliest.
                target = rng.randint(1, min(2, args.batches))
            else:
                target = rng.randint(1, per_batch.commits if mode == "commit" else per_batch.data)
            before = count()
            code, killed, seen = _run(
                command, chain_log, kill=_kill_rule(mode, target, before), files=count
            )
            left = (
                interrupted(
                    checkpoints / schema / QUERY, warehouse, schema, BASELINE, wrote=seen != before
                )
                if killed is not None
                else None
            )
            trial = Trial(
                n, chain, mode, target, killed, (seen.commits, seen.data), schema, code, left
            )
            trials.append(trial)
            what = (
                f"killed at {killed:.1f} s with {seen.commits} commit / {seen.data} data files"
                if killed is not None
                else f"ended before the kill, exit {code}"
            )
            if left is not None:
                what += f"; {left.window}"
                if left.batch is not None:
                    what += f" (batch {left.batch}: {len(left.landed)} of "
                    what += f"{len(left.landed) + len(left.missing)} tables)"
            print(f"trial {n:2d} chain {chain} {mode:6s} target {target:6.1f}: {what}", flush=True)
        final, _, _ = _run(command, chain_log, kill=None, files=count)
        print(f"chain {chain}: final restart exit {final}", flush=True)
        chain_exit[chain] = final

    from offsetscope.spark.session import build_job_session

    base = trial_config(base_cfg, out, BASELINE, max_records)
    spark = build_job_session(base, app_name="offsetscope-chaos-compare")
    diverged = 0
    for chain in range(chains):
        members = [t for t in trials if t.chain == chain]
        problems = [] if chain_exit[chain] == 0 else [f"final restart exit {chain_exit[chain]}"]
        problems += [
            f"trial {t.number}: the run it was to kill failed by itself (exit {t.exit_code})"
            for t in members
            if t.exit_code not in (None, 0)
        ]
        problems += compare(
            spark, base, trial_config(base_cfg, out, members[0].schema, max_records)
        )
        if problems:
            diverged += len(members)
            numbers = ", ".join(str(t.number) for t in members)
            print(f"chain {chain} (trials {numbers}) diverged:")
            for p in problems:
                print(f"  {p}")
    spark.stop()
    killed = sum(t.killed_after is not None for t in trials)
    reached = [t.interrupted.window for t in trials if t.interrupted is not None]
    print("chaos: kills by window: " + ", ".join(f"{w} {reached.count(w)}" for w in WINDOWS))
    print(
        f"chaos: {len(trials)} trials ({killed} kills landed) in {chains} chains, {diverged} diverged"
    )
    return 0 if diverged == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
