"""``make demo`` and ``make live-demo``: the questions offsetscope answers, end to end.

``make demo`` (``python -m offsetscope.verify.demo``), no broker needed::

    [1/3] simulate   the `demo` catalogue scenario on the bundled coordinators (15 minutes of a
                     small shop: six groups, an exactly-once pipeline, a crash, a static rolling
                     restart, a max.poll.interval eviction, a storm, an expiry, aborted, hanging
                     and fenced transactions) -> a Kafka log directory under .work/demo/logs
    [2/3] ingest     the streaming pipeline (segment source, available now) on local Spark ->
                     Delta tables in a fresh warehouse, metastore and checkpoints under
                     .work/demo/ (deleted at the start of every run), one line per micro-batch
    [3/3] questions  SQL over the gold tables, each printed with its SQL and its answer

The questions (:func:`questions`) are relative to the scenario's end time, as if asked the
moment the log was copied off the broker: groups by rebalances in the last hour, the
generation history of the group that rebalanced most (leaders and members by client id), the
current lag per group in records and seconds (against the last stable offset for the
``read_committed`` groups, which the truth's ``ScenarioStarted`` line names), transactions by
outcome, member churn, hanging and fenced transactions, and every group's current state. Then
the time of each stage.

``make live-demo`` (``python -m offsetscope.verify.demo live``): the same questions against a real
Kafka broker (:mod:`offsetscope.verify.harness.broker`, a fresh one named ``live-demo``) while real
clients (:mod:`offsetscope.verify.harness.clients`) make traffic -- an order producer, groups whose
members join, leave and get restarted, and a transactional producer that commits, aborts and
once leaves a transaction hanging until the coordinator's timeout aborts it -- and the ingest
query reads ``__consumer_offsets`` / ``__transaction_state`` with Spark's Kafka source on a
processing-time trigger, end offsets from the AdminClient. The answers are printed every
``--every`` seconds (relative to the wall clock) for ``--seconds``; then the clients, the query
and the broker are stopped, in that order, however the run ends.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from offsetscope import config as config_mod

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from offsetscope.verify.harness.clients import ClientPool, ConsumerMember

Progress = Callable[[str], None]
SCENARIO = "demo"
# Spark's console progress bars and INFO logs would bury the answers.
QUIET_SPARK = {"spark.ui.showConsoleProgress": "false", "spark.ui.enabled": "false"}


# ----------------------------------------------------------------------------- questions


@dataclass(frozen=True, slots=True)
class Question:
    """One question: a title and the SQL that answers it (tables of the configured schema)."""

    title: str
    sql: str


@dataclass(frozen=True, slots=True)
class Answer:
    """A question with its result rows."""

    question: Question
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    seconds: float


def _at(ms: int) -> str:
    return f"timestamp_millis({ms})"


def rebalances_question(now_ms: int) -> Question:
    """Groups by rebalances in the hour before ``now_ms``."""
    return Question(
        "Which groups rebalanced in the last hour?",
        f"""SELECT group_id,
       sum(rebalances) AS rebalances_last_hour,
       max(generation) AS latest_generation,
       date_format(max(stored_at), 'HH:mm:ss') AS last_rebalance_utc
FROM group_generations
WHERE stored_at > {_at(now_ms)} - INTERVAL 1 HOUR AND stored_at <= {_at(now_ms)}
GROUP BY group_id
HAVING sum(rebalances) > 0
ORDER BY rebalances_last_hour DESC, group_id""",
    )


def history_question(group_id: str) -> Question:
    """One group's generations with their leader and members (client ids)."""
    quoted = group_id.replace("'", "\\'")
    return Question(
        f"Generation history of '{group_id}' (the group that rebalanced most)",
        f"""SELECT generation,
       date_format(stored_at, 'HH:mm:ss') AS stored_utc,
       protocol AS assignor,
       try_element_at(filter(members, m -> m.member_id = leader), 1).client_id AS leader,
       member_count AS members,
       array_join(array_sort(transform(members, m -> m.client_id)), ' ') AS member_clients,
       size(members_joined) AS joined,
       size(members_left) AS left,
       partitions_moved AS moved
FROM group_generations
WHERE group_id = '{quoted}'
ORDER BY group_life, generation""",
    )


LAG = Question(
    "Current lag per group (records and seconds; read_committed groups against the LSO)",
    """WITH latest AS (
  SELECT *, row_number() OVER (PARTITION BY group_id, topic, `partition`
                               ORDER BY as_of DESC) AS n
  FROM partition_lag)
SELECT group_id,
       CASE WHEN read_committed THEN 'last stable offset' ELSE 'high watermark' END
         AS measured_against,
       count(*) AS partitions,
       sum(lag_records) AS lag_records,
       round(max(lag_seconds), 1) AS max_lag_seconds,
       sum(CAST(data_loss AS INT)) AS partitions_with_data_loss,
       date_format(max(as_of), 'HH:mm:ss') AS as_of_utc
FROM latest
WHERE n = 1
GROUP BY group_id, read_committed
ORDER BY lag_records DESC, group_id""",
)

TRANSACTIONS = Question(
    "Transactions by outcome",
    """SELECT outcome,
       coalesce(end_reason, '-') AS end_reason,
       count(*) AS transactions,
       sum(CAST(timed_out AS INT)) AS timed_out,
       sum(CAST(fenced AS INT)) AS fenced,
       CAST(round(avg(duration_ms)) AS BIGINT) AS avg_ms,
       max(duration_ms) AS max_ms
FROM transactions
GROUP BY outcome, end_reason
ORDER BY transactions DESC""",
)

CHURN = Question(
    "Member churn: sessions started and ended per group",
    """SELECT group_id,
       count(*) AS member_sessions,
       count(left_at) AS ended,
       count(DISTINCT client_id) AS clients,
       count(replaces) AS static_rejoins,
       sum(CASE WHEN end_reason = 'left' THEN 1 ELSE 0 END) AS left_or_evicted,
       sum(CASE WHEN end_reason = 'group_emptied' THEN 1 ELSE 0 END) AS group_emptied
FROM member_sessions
GROUP BY group_id
ORDER BY member_sessions DESC, group_id""",
)


def hanging_question(now_ms: int) -> Question:
    """Transactions the coordinator had to end, and any still open past their timeout."""
    return Question(
        "Hanging and fenced transactions (timed out, fenced, or open past their timeout)",
        f"""SELECT transactional_id,
       producer_epoch AS epoch,
       date_format(started_at, 'HH:mm:ss') AS started_utc,
       outcome,
       coalesce(end_reason, '-') AS end_reason,
       duration_ms,
       timeout_ms,
       timed_out,
       fenced
FROM transactions
WHERE timed_out OR fenced
   OR (outcome = 'ongoing'
       AND timestampadd(MILLISECOND, timeout_ms, started_at) < {_at(now_ms)})
ORDER BY started_at""",
    )


CURRENT = Question(
    "Every group now",
    """SELECT group_id,
       coalesce(state, '-') AS state,
       generation,
       member_count AS members,
       rebalances_1h,
       deleted,
       date_format(last_commit_at, 'HH:mm:ss') AS last_commit_utc
FROM groups_current
ORDER BY group_id""",
)


def questions(now_ms: int, group_id: str) -> list[Question]:
    """Every question, in the order printed, for the moment ``now_ms``."""
    return [
        rebalances_question(now_ms),
        history_question(group_id),
        LAG,
        TRANSACTIONS,
        CHURN,
        hanging_question(now_ms),
        CURRENT,
    ]


def ask(spark: SparkSession, cfg: config_mod.Config, question: Question) -> Answer:
    """Run one question in the configured schema."""
    from offsetscope.cli.sql import run_sql

    began = time.monotonic()
    columns, rows, _ = run_sql(spark, cfg, question.sql, limit=-1)
    return Answer(question, tuple(columns), tuple(tuple(r) for r in rows), time.monotonic() - began)


def answer_all(spark: SparkSession, cfg: config_mod.Config, now_ms: int) -> list[Answer]:
    """The rebalance question first (its top group is the one whose history is shown)."""
    first = ask(spark, cfg, rebalances_question(now_ms))
    group = str(first.rows[0][0]) if first.rows else _any_group(spark, cfg)
    rest = questions(now_ms, group)[1:]
    return [first, *(ask(spark, cfg, q) for q in rest)]


def _any_group(spark: SparkSession, cfg: config_mod.Config) -> str:
    answer = ask(spark, cfg, Question("", "SELECT min(group_id) FROM groups_current"))
    return str(answer.rows[0][0]) if answer.rows and answer.rows[0][0] is not None else ""


def render(answers: Sequence[Answer], *, truncate: int = 90) -> str:
    """Answers as text: title, SQL (indented), aligned table."""
    from offsetscope.cli.sql import format_table

    out = []
    for i, a in enumerate(answers, 1):
        sql = "\n".join("    " + line for line in a.question.sql.splitlines())
        out.append(f"Q{i}. {a.question.title}\n\n{sql}\n")
        if a.rows:
            out.append(format_table(a.columns, a.rows, truncate))
        else:
            out.append("(no rows)")
        out.append(f"({len(a.rows)} rows, {a.seconds:.1f} s)\n")
    return "\n".join(out)


# ----------------------------------------------------------------------------- the demo


@dataclass(frozen=True, slots=True)
class Scenario:
    """A simulated log directory and what its truth says about it."""

    log_dir: Path
    end_ms: int
    read_committed_groups: tuple[str, ...]
    records: int
    seconds: float


def simulate(work_dir: Path, scenario: str = SCENARIO) -> Scenario:
    """Run ``scenario`` into ``work_dir/logs`` (replacing what was there)."""
    from offsetscope.sim.scenarios.run import simulate_to
    from offsetscope.sim.scenarios.truth import read_ground_truth
    from offsetscope.verify.accuracy import read_committed_groups

    began = time.monotonic()
    log_dir = work_dir / "logs"
    shutil.rmtree(log_dir, ignore_errors=True)
    simulate_to(scenario, out=log_dir, replace=True)
    lines = read_ground_truth(log_dir / "ground_truth.jsonl")
    end = next(line["end_ms"] for line in lines if line["type"] == "ScenarioStarted")
    return Scenario(
        log_dir,
        int(end),
        tuple(read_committed_groups(lines)),
        _internal_records(log_dir),
        time.monotonic() - began,
    )


def _internal_records(log_dir: Path) -> int:
    from offsetscope.protocol.log import read_partition_dir

    total = 0
    for d in sorted(log_dir.iterdir()):
        if d.is_dir() and d.name.startswith(("__consumer_offsets-", "__transaction_state-")):
            total += sum(len(b.records) for b in read_partition_dir(d))
    return total


# Records per micro-batch: the log is read in several batches, so the progress lines show the
# backlog going down and lag is measured at several moments (once per batch), which the
# report draws as lines over time.
BATCH_RECORDS = 4_000


def demo_config(
    base: config_mod.Config,
    work_dir: Path,
    scenario: Scenario,
    batch_records: int | None = BATCH_RECORDS,
) -> config_mod.Config:
    """``base`` with the demo's log directory and its own storage under ``work_dir``, read
    ``batch_records`` records per micro-batch (None: as configured)."""
    cfg = config_mod.with_segment_source(base, scenario.log_dir)
    if batch_records is not None:
        segments = dataclasses.replace(cfg.sources.segments, max_records_per_trigger=batch_records)
        cfg = dataclasses.replace(cfg, sources=dataclasses.replace(cfg.sources, segments=segments))
    cfg = config_mod.with_storage(cfg, work_dir=work_dir)
    return config_mod.with_pipeline(
        cfg, trigger="available_now", read_committed_groups=scenario.read_committed_groups
    )


@dataclass(slots=True)
class Timings:
    """Wall time per stage, in order."""

    stages: dict[str, float] = dataclasses.field(default_factory=dict)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        began = time.monotonic()
        try:
            yield
        finally:
            self.stages[name] = self.stages.get(name, 0.0) + time.monotonic() - began

    def line(self) -> str:
        total = sum(self.stages.values())
        parts = ", ".join(f"{k} {v:.1f} s" for k, v in self.stages.items())
        return f"demo: {total:.1f} s ({parts})"


def run_demo(
    spark_factory: Callable[[config_mod.Config], SparkSession],
    base: config_mod.Config,
    work_dir: Path,
    *,
    progress: Progress = print,
    scenario: str = SCENARIO,
) -> tuple[list[Answer], Timings]:
    """The whole demo; the caller owns the session that ``spark_factory`` returns.

    Args:
        spark_factory: builds (or returns) the session for the demo's configuration.
        base: the loaded configuration; storage is redirected under ``work_dir``.
        work_dir: ``logs/``, ``warehouse/``, ``metastore/`` and ``checkpoints/`` go here; the
            last three are deleted first, so every run starts from empty tables.
        progress: receives one line per step.
        scenario: the catalogue scenario (default ``demo``).

    Returns:
        The answers and the stage timings.
    """
    from offsetscope.pipelines import ingest as pipeline
    from offsetscope.spark import tables as catalogue

    timings = Timings()
    progress(f"[1/3] simulate: the '{scenario}' scenario on the bundled coordinators ...")
    with timings.stage("simulate"):
        sim = simulate(work_dir, scenario)
    progress(f"      {sim.records} internal-topic records in {sim.log_dir} ({sim.seconds:.1f} s)")
    for folder in ("warehouse", "metastore", "checkpoints"):
        shutil.rmtree(work_dir / folder, ignore_errors=True)
    cfg = demo_config(base, work_dir, sim)
    progress("[2/3] ingest: starting local Spark, creating the Delta tables ...")
    with timings.stage("spark start"):
        spark = spark_factory(cfg)
    with timings.stage("tables"):
        catalogue.ensure_tables(spark, cfg)
    progress("      reading the log directory (one line per micro-batch) ...")
    with timings.stage("ingest"):
        reports = pipeline.run(
            spark,
            cfg,
            query_name="demo_ingest",
            say=lambda line: progress("      " + line),
        )
    records = sum(r.rows_in for r in reports)
    seconds = timings.stages["ingest"]
    progress(
        f"      {records} records in {len(reports)} micro-batches, {seconds:.1f} s "
        f"({records / seconds if seconds else 0:,.0f} records/s)"
    )
    progress(f"[3/3] questions, as of the scenario's end ({_utc(sim.end_ms)}) ...")
    with timings.stage("questions"):
        answers = answer_all(spark, cfg, sim.end_ms)
    with timings.stage("report"):
        pages = write_reports(spark, cfg, sim.end_ms, work_dir)
    for page in pages:
        progress(f"      report: {page}")
    return answers, timings


def write_reports(
    spark: SparkSession, cfg: config_mod.Config, end_ms: int, work_dir: Path
) -> list[Path]:
    """The report of the group that rebalanced most in the day before ``end_ms``, and the
    cluster's page (``offsetscope report``), under ``work_dir``; their paths."""
    from offsetscope.ops import report
    from offsetscope.ops.queries import Queries, Window

    queries = Queries(spark, cfg)
    window = Window(end_ms - 24 * 3600 * 1000, end_ms)
    pages = [
        report.write(
            report.render_cluster(report.cluster_report(queries, window)),
            work_dir / "report-cluster.html",
        )
    ]
    group = queries.stormiest_group(window)
    if group is not None:
        page = report.render_group(report.group_report(queries, group, window))
        pages.insert(0, report.write(page, work_dir / f"report-{group}.html"))
    return pages


def _utc(ms: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _session(extra: dict[str, str]) -> Callable[[config_mod.Config], SparkSession]:
    def build(cfg: config_mod.Config) -> SparkSession:
        from offsetscope.spark.session import build_job_session

        spark = build_job_session(cfg, app_name="offsetscope-demo", extra_conf=extra)
        spark.sparkContext.setLogLevel("ERROR")
        return spark

    return build


# ----------------------------------------------------------------------------- live demo


class Traffic:
    """Real clients making traffic on the broker until :meth:`stop` (one driver thread).

    * ``shop-frontend``: an idempotent producer, a few orders per partition every second;
    * ``billing`` (range, 2 members; a third joins and leaves again every ``period``),
      ``shipping`` (cooperative-sticky, 2 members), ``fraud-detection`` (roundrobin, 2 members;
      one is restarted every ``period``): auto-committing consumers;
    * ``order-enricher-0``: a transactional producer sending offsets for the
      ``order-enricher`` group; every fourth transaction aborts, and once a transaction is
      left open until the coordinator's timeout aborts it (the producer then starts again
      with a bumped epoch).
    """

    TOPIC = "orders"
    PARTITIONS = 6
    TXN_GROUP = "order-enricher"

    def __init__(self, pool: ClientPool, *, period_s: float = 20.0, txn_timeout_ms: int = 6000):
        self.pool = pool
        self.period_s = period_s
        self.txn_timeout_ms = txn_timeout_ms
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._members: dict[str, list[ConsumerMember]] = {}
        self.errors: list[str] = []
        self.counts = {"orders": 0, "transactions": 0, "rebalances_triggered": 0}

    def start(self) -> None:
        from offsetscope.verify.harness.clients import create_topic

        create_topic(self.pool.bootstrap, self.TOPIC, self.PARTITIONS)
        for group, strategy in (
            ("billing", "range"),
            ("shipping", "cooperative-sticky"),
            ("fraud-detection", "roundrobin"),
        ):
            self._members[group] = [self._member(group, strategy, i) for i in range(2)]
        self._thread = threading.Thread(target=self._run, name="live-demo-traffic", daemon=True)
        self._thread.start()

    def _member(self, group: str, strategy: str, i: int) -> ConsumerMember:
        from offsetscope.verify.harness.clients import MemberConfig

        return self.pool.member(
            MemberConfig(
                group,
                (self.TOPIC,),
                strategy=strategy,
                client_id=f"{group}-{i}",
                auto_commit=True,
                auto_commit_interval_ms=1000,
                isolation_level="read_uncommitted",
            )
        )

    def _run(self) -> None:
        try:
            self._loop()
        except Exception as exc:  # noqa: BLE001 - reported by the demo, which keeps going
            self.errors.append(f"{type(exc).__name__}: {exc}")

    def _loop(self) -> None:
        from offsetscope.verify.harness.clients import standalone_group_metadata

        producer = self.pool.idempotent_producer()
        metadata = standalone_group_metadata(self.pool.bootstrap, self.TXN_GROUP)
        epoch = 0
        txn = self._txn_producer(epoch)
        tick = 0
        next_change = time.monotonic() + self.period_s
        extra: ConsumerMember | None = None
        hung = False
        while not self._stop.wait(1.0):
            tick += 1
            for p in range(self.PARTITIONS):
                for i in range(5):
                    producer.send(self.TOPIC, f"order-{tick}-{i}".encode(), partition=p)
            producer.flush()
            self.counts["orders"] += 5 * self.PARTITIONS
            if tick % 2 == 0:
                if not hung and tick >= 12:
                    # Left open: the coordinator aborts it after transaction.timeout.ms and
                    # bumps the epoch; this instance is then fenced and replaced.
                    txn.begin()
                    txn.send(self.TOPIC, b"enriched", partition=tick % self.PARTITIONS)
                    txn.leave_open()
                    hung = True
                    self._stop.wait(self.txn_timeout_ms / 1000 + 3)
                    txn.close()
                    epoch += 1
                    txn = self._txn_producer(epoch)
                else:
                    txn.begin()
                    txn.send(self.TOPIC, b"enriched", partition=tick % self.PARTITIONS)
                    txn.send_offsets({(self.TOPIC, tick % self.PARTITIONS): tick}, metadata)
                    if (tick // 2) % 4 == 3:
                        txn.abort()
                    else:
                        txn.commit()
                self.counts["transactions"] += 1
            if time.monotonic() >= next_change:
                next_change = time.monotonic() + self.period_s
                if extra is None:
                    extra = self._member("billing", "range", 9)
                else:
                    extra.leave()
                    extra = None
                fraud = self._members["fraud-detection"]
                fraud[0].leave()
                fraud[0] = self._member("fraud-detection", "roundrobin", 0)
                self.counts["rebalances_triggered"] += 2

    def _txn_producer(self, epoch: int) -> Any:
        producer = self.pool.transactional_producer(
            f"{self.TXN_GROUP}-0",
            client_id=f"{self.TXN_GROUP}-0-e{epoch}",
            transaction_timeout_ms=self.txn_timeout_ms,
        )
        return producer.init()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(60.0)


def live_config(
    base: config_mod.Config, work_dir: Path, bootstrap: str, trigger: str
) -> config_mod.Config:
    """``base`` reading the broker with the Kafka source on a processing-time trigger."""
    cfg = config_mod.with_kafka_source(base, bootstrap)
    cfg = config_mod.with_storage(cfg, work_dir=work_dir)
    return config_mod.with_pipeline(
        cfg,
        trigger="processing_time",
        processing_time=trigger,
        read_committed_groups=(Traffic.TXN_GROUP,),
    )


def run_live(
    base: config_mod.Config,
    work_dir: Path,
    *,
    seconds: float,
    every: float,
    trigger: str,
    progress: Progress = print,
) -> int:
    """The live demo (see the module docstring); 0 unless the query or the traffic failed."""
    from offsetscope.pipelines import ingest as pipeline
    from offsetscope.spark import tables as catalogue
    from offsetscope.verify.harness.broker import Broker
    from offsetscope.verify.harness.clients import ClientPool

    for folder in ("warehouse", "metastore", "checkpoints"):
        shutil.rmtree(work_dir / folder, ignore_errors=True)
    progress("[1/4] starting a Kafka broker (KRaft, loopback) ...")
    broker = Broker(dataclasses.replace(base.broker, name="live-demo"))
    handle = broker.start(fresh=True, tie_to_parent=True)
    failed = False
    try:
        cfg = live_config(base, work_dir, handle.bootstrap, trigger)
        progress(f"      broker at {handle.bootstrap}; starting local Spark ...")
        spark = _session(QUIET_SPARK)(cfg)
        catalogue.ensure_tables(spark, cfg)
        with ClientPool(handle.bootstrap) as pool:
            progress("[2/4] real clients: a producer, three groups, a transactional producer")
            traffic = Traffic(pool)
            traffic.start()
            progress(f"[3/4] ingest query on a '{trigger}' trigger; answers every {every:g} s")
            query, pipe = pipeline.start(
                spark,
                cfg,
                query_name="live_demo",
                progress=lambda r: progress("      " + r.line()),
            )
            try:
                deadline = time.monotonic() + seconds
                while time.monotonic() < deadline and query.isActive:
                    query.awaitTermination(max(1, round(min(every, deadline - time.monotonic()))))
                    if not pipe.reports:
                        continue
                    now = int(time.time() * 1000)
                    progress(f"\n=== answers at {_utc(now)} (traffic: {traffic.counts}) ===\n")
                    progress(render(answer_all(spark, cfg, now)))
            finally:
                progress("[4/4] stopping the clients, the query and the broker ...")
                traffic.stop()
                pipeline.stop_between_batches(query)
            error = query.exception()
            if error is not None:
                progress(f"the ingest query failed: {error}")
                failed = True
            if traffic.errors:
                progress("traffic errors: " + "; ".join(traffic.errors))
                failed = True
        spark.stop()
    finally:
        handle.stop()
    return 1 if failed else 0


# ----------------------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m offsetscope.verify.demo [live]``."""
    parser = argparse.ArgumentParser(
        prog="offsetscope.verify.demo", description=__doc__.splitlines()[0]
    )
    parser.add_argument("mode", nargs="?", choices=("offline", "live"), default="offline")
    parser.add_argument("--env", default="local")
    parser.add_argument("--conf", type=Path, default=None)
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--scenario", default=SCENARIO, help="offline: the catalogue scenario")
    parser.add_argument("--seconds", type=float, default=120.0, help="live: how long")
    parser.add_argument("--every", type=float, default=30.0, help="live: answers every N s")
    parser.add_argument("--trigger", default="5s", help="live: processing-time trigger")
    args = parser.parse_args(argv)
    from offsetscope.spark.sources import resolve_path

    base = config_mod.load(args.env, extra=args.conf)
    default_dir = ".work/live-demo" if args.mode == "live" else ".work/demo"
    work_dir = Path(resolve_path(str(args.work_dir or default_dir)))
    work_dir.mkdir(parents=True, exist_ok=True)

    def say(line: str) -> None:
        print(line, flush=True)

    if args.mode == "live":
        return run_live(
            base,
            work_dir,
            seconds=args.seconds,
            every=args.every,
            trigger=args.trigger,
            progress=say,
        )
    built: list[SparkSession] = []

    def factory(cfg: config_mod.Config) -> SparkSession:
        spark = _session(QUIET_SPARK)(cfg)
        built.append(spark)
        return spark

    try:
        answers, timings = run_demo(factory, base, work_dir, progress=say, scenario=args.scenario)
        say("")
        say(render(answers))
        say(timings.line())
    finally:
        for spark in built:
            spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
