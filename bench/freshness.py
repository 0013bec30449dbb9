"""Freshness: from an offset commit on the live broker to its row in the Delta tables.

Setup: a harness broker of its own (Kafka 4.x, KRaft, loopback, a fresh work folder) takes a
steady commit load for ``DURATION_S`` seconds: ``GROUPS`` simple groups, one confluent-kafka
consumer each that never joins (OffsetCommit with generation -1, what ``assign()``-mode
consumers and admin tools send), each committing every partition of a ``PARTITIONS``-partition
data topic every ``COMMIT_EVERY_S`` seconds, with a rising offset. The ingest query
(``offsetscope.pipelines.ingest.start``, Spark's Kafka source on ``local[2]``, end-offset
sampling on) runs with a processing-time trigger (:func:`triggers`) in a process of its
own, from before the first commit until it has read the last one.

Freshness of one commit = the ``finished_at`` of the micro-batch that read its record, minus the
record's timestamp (the broker's clock when it appended the commit). ``finished_at`` is taken
after the batch's gold writes -- ``offset_commits`` and ``groups_current`` among them -- are
committed to Delta, so the row is queryable by then. The batch of each commit is found from the
tables alone: ``batch_audit.source_partitions`` holds each batch's first and last offset per
``__consumer_offsets`` partition. Steady state only: the commits appended after the query's
first micro-batch with records had finished (that batch pays the start-up -- JVM warm-up, first
Delta writes -- and the commits queued behind it wait for it; their p99 is kept beside the figure
as ``p99_with_startup_backlog_s``). Reported: ``freshness_p50_s`` and ``freshness_p99_s``; the
target is p99 within two trigger intervals. The run also checks that every group's ``groups_current.
last_commit_at`` is its newest commit, so a figure is never reported for tables that are wrong.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import WORK, Metric, child_process, harness_broker

GROUPS = 20
PARTITIONS = 4
COMMIT_EVERY_S = 1.0
DURATION_S = 240.0
TRIGGER_S = 10
# Also measured: the trigger a live cluster's steady state asks of a small batch, and the
# shipped default (``[pipeline] processing_time``).
FAST_TRIGGER_S = 5
CATCH_UP_S = 900.0  # after the load stops, the query has this long to read the last commit


def _percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(q / 100 * len(ordered))))
    return ordered[rank - 1]


class CommitLoad:
    """``groups`` consumers committing ``partitions`` partitions of ``topic`` every ``every_s``
    seconds on a thread, until :meth:`stop`."""

    def __init__(self, bootstrap: str, topic: str, groups: int, partitions: int, every_s: float):
        from confluent_kafka import Consumer

        self.topic, self.partitions, self.every_s = topic, partitions, every_s
        self.consumers = [
            Consumer(
                {
                    "bootstrap.servers": bootstrap,
                    "group.id": f"fresh-{g:03d}",
                    "enable.auto.commit": False,
                }
            )
            for g in range(groups)
        ]
        self.commits = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        from confluent_kafka import TopicPartition

        round_no = 0
        next_at = time.monotonic()
        while not self._stop.is_set():
            round_no += 1
            for consumer in self.consumers:
                parts = [TopicPartition(self.topic, p, round_no) for p in range(self.partitions)]
                consumer.commit(offsets=parts, asynchronous=False)
                self.commits += len(parts)
            next_at += self.every_s
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        for consumer in self.consumers:
            consumer.close()


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Broker, load and query in this process; returns per-commit freshness and batch times."""
    from offsetscope import config
    from offsetscope.pipelines import ingest
    from offsetscope.protocol.records import OFFSETS_TOPIC
    from offsetscope.spark.session import build_session
    from offsetscope.spark.tables import ensure_tables
    from offsetscope.verify.harness import clients

    out = Path(spec["out"]).resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    base = config.load("local")
    with harness_broker("bench-freshness") as handle:
        bootstrap = handle.bootstrap
        topic = "fresh-orders"
        clients.create_topic(bootstrap, topic, spec["partitions"])
        cfg = config.with_kafka_source(base, bootstrap)
        cfg = config.with_storage(cfg, work_dir=out, schema="offsetscope_fresh")
        cfg = config.with_pipeline(
            cfg,
            trigger="processing_time",
            processing_time=f"{spec['trigger_s']}s",
            lag_interval=spec.get("lag_interval"),
        )
        spark = build_session(cfg, app_name="offsetscope-bench-freshness")
        try:
            ensure_tables(spark, cfg)
            reports: list[ingest.BatchReport] = []
            load = CommitLoad(
                bootstrap, topic, spec["groups"], spec["partitions"], spec["commit_every_s"]
            )
            query, _ = ingest.start(spark, cfg, progress=reports.append)
            try:
                load.start()
                time.sleep(spec["duration_s"])  # the load runs for a fixed time: what is measured
                load.stop()
                parts = clients.list_offsets(
                    bootstrap, [(OFFSETS_TOPIC, p) for p in range(base.broker.offsets_partitions)]
                )
                written = sum(parts.values())
                deadline = time.monotonic() + CATCH_UP_S
                while sum(r.rows_in for r in reports) < written:
                    if query.exception() is not None or time.monotonic() > deadline:
                        raise RuntimeError(
                            f"the query read {sum(r.rows_in for r in reports)} of {written} "
                            f"records: {query.exception()}"
                        )
                    time.sleep(1.0)  # waiting for the query to catch up, not timing it
            finally:
                query.stop()
            return {
                "commits": load.commits,
                "records": written,
                "freshness_s": _freshness(spark, cfg),
                "batches": [
                    {
                        "batch_id": r.batch_id,
                        "rows_in": r.rows_in,
                        "seconds": round(r.seconds, 2),
                        "phases": {k: round(v, 3) for k, v in sorted(r.phases.items())},
                    }
                    for r in reports
                ],
                "groups_current_ok": _groups_current_ok(spark, cfg),
            }
        finally:
            spark.stop()


def _freshness(spark: Any, cfg: Any) -> dict[str, list[float]]:
    """Seconds from each commit record's timestamp to the end of the batch that read it.

    ``steady``: the commits appended after the query's first batch with records had finished
    (that batch pays the query's start-up, and the commits queued behind it wait for it too);
    ``all``: every commit but those of the first batch.
    """
    schema = cfg.storage.schema
    rows = spark.sql(
        f"""
        WITH first AS (
          SELECT batch_id, finished_at FROM {schema}.batch_audit ORDER BY batch_id LIMIT 1
        ), ranges AS (
          SELECT a.batch_id, a.finished_at, p.partition, p.first_offset, p.last_offset
          FROM {schema}.batch_audit a LATERAL VIEW explode(a.source_partitions) s AS p
          WHERE p.topic = '__consumer_offsets' AND a.batch_id > (SELECT batch_id FROM first)
        )
        SELECT (unix_millis(r.finished_at) - unix_millis(c.record_timestamp)) / 1000.0 AS s,
               c.record_timestamp > (SELECT finished_at FROM first) AS steady
        FROM {schema}.offset_commits c JOIN ranges r
          ON c.record_partition = r.partition
         AND c.record_offset BETWEEN r.first_offset AND r.last_offset
        """
    ).collect()
    return {
        "all": [float(r["s"]) for r in rows],
        "steady": [float(r["s"]) for r in rows if r["steady"]],
    }


def _groups_current_ok(spark: Any, cfg: Any) -> bool:
    """Every group's ``groups_current.last_commit_at`` is when its newest commit of
    ``offset_commits`` took effect.

    ``effective_at`` (the record's timestamp for a plain commit), not ``commit_timestamp``: a
    Kafka 4.4 broker wrote a commitTimestamp 1-23 ms off its record's timestamp in 180 of
    2,080 commits (measured), so the newest of one need not be the newest of the other.
    """
    schema = cfg.storage.schema
    wrong = spark.sql(
        f"""
        SELECT c.group_id FROM (
          SELECT group_id, max(effective_at) AS newest FROM {schema}.offset_commits
          WHERE status = 'committed' AND NOT is_tombstone
          GROUP BY group_id) c
        LEFT JOIN {schema}.groups_current g ON g.group_id = c.group_id
        WHERE g.last_commit_at IS NULL OR g.last_commit_at != c.newest
        """
    ).count()
    return bool(wrong == 0)


def run(runs: int = 1, scale: float = 1.0) -> list[Metric]:
    """One run per trigger at scale 1 takes about ``DURATION_S`` plus the query's catch-up;
    ``runs`` is capped at 2 (each sample is a whole live run).

    Measured at ``TRIGGER_S`` (``freshness_p50_s``, ``freshness_p99_s``), at ``FAST_TRIGGER_S``
    and at the shipped default trigger, ``[pipeline] processing_time``
    (``freshness_trigger_<N>s_p50_s`` ...): :func:`triggers`.
    """
    spec = {
        "groups": max(2, int(GROUPS * scale)),
        "partitions": PARTITIONS,
        "commit_every_s": COMMIT_EVERY_S,
        "duration_s": max(120.0, DURATION_S * scale),  # outlasting the first batch
    }
    metrics: list[Metric] = []
    for trigger_s, prefix in triggers():
        metrics += measure(spec, trigger_s, runs, prefix)
    return metrics


def triggers() -> list[tuple[int, str]]:
    """(trigger seconds, figure prefix) of every measured trigger: ``TRIGGER_S`` as
    ``freshness``, then ``FAST_TRIGGER_S`` and the shipped default as
    ``freshness_trigger_<N>s`` (each once)."""
    out = [(TRIGGER_S, "freshness")]
    for trigger_s in (FAST_TRIGGER_S, shipped_trigger_s()):
        if trigger_s not in {t for t, _ in out}:
            out.append((trigger_s, f"freshness_trigger_{trigger_s}s"))
    return out


def shipped_trigger_s() -> int:
    """The processing-time trigger interval ``conf/`` ships, in whole seconds."""
    from offsetscope import config

    return round(config.load("local").pipeline.processing_time.seconds)


def measure(spec: dict[str, Any], trigger_s: int, runs: int, prefix: str) -> list[Metric]:
    """``<prefix>_p50_s`` and ``<prefix>_p99_s`` with a ``trigger_s`` processing-time trigger."""
    spec = {**spec, "trigger_s": trigger_s}
    p50: list[float] = []
    p99: list[float] = []
    backlog = math.nan
    last: dict[str, Any] = {}
    for i in range(min(runs, 2)):
        last = _run_child(spec, f"{prefix}-{i}")
        if not last["groups_current_ok"]:
            raise RuntimeError("groups_current.last_commit_at disagrees with offset_commits")
        values = last["freshness_s"]["steady"]
        if not values:
            raise RuntimeError(f"no commit read after the first batch: {last['batches']}")
        p50.append(_percentile(values, 50))
        p99.append(_percentile(values, 99))
        backlog = _percentile(last["freshness_s"]["all"], 99)
        print(
            f"  {prefix} run {i} (trigger {trigger_s} s): {len(values):,} steady commits, "
            f"p50 {p50[-1]:.1f} s, p99 {p99[-1]:.1f} s (p99 {backlog:.1f} s with the start-up "
            f"backlog), batches {[b['seconds'] for b in last['batches']]}",
            flush=True,
        )
    described = (
        f"{spec['groups']} simple groups x {PARTITIONS} partitions committed every "
        f"{COMMIT_EVERY_S:g} s for {spec['duration_s']:g} s "
        f"({spec['groups'] * PARTITIONS / COMMIT_EVERY_S:g} commits/s) on a harness broker"
    )
    notes = (
        f"processing-time trigger {trigger_s} s, Kafka source, local[2]; commit record "
        "timestamp -> batch_audit.finished_at of the batch that read it (offset_commits and "
        "groups_current written by then); commits appended after the first batch finished"
    )
    extra = {
        "trigger_s": trigger_s,
        "batches": last.get("batches", []),
        "commits_measured": len(last["freshness_s"]["steady"]),
        "p99_with_startup_backlog_s": backlog,  # of the last run, like "batches"
    }
    return [
        Metric(f"{prefix}_p50_s", "s", p50, described, notes, extra=extra),
        Metric(f"{prefix}_p99_s", "s", p99, described, notes, extra=extra),
    ]


def _run_child(spec: dict[str, Any], tag: str) -> dict[str, Any]:
    """:func:`worker` in a process of its own (its JVM and broker go with it)."""
    out = WORK / "freshness" / tag
    result_file = WORK / "freshness" / f"{tag}.json"
    log_path = WORK / "freshness" / f"{tag}.log"
    result_file.parent.mkdir(parents=True, exist_ok=True)
    result_file.unlink(missing_ok=True)
    args = (json.dumps({**spec, "out": str(out)}), str(result_file))
    with child_process("bench.freshness", *args, log=log_path) as proc:
        code = proc.wait()
    if code != 0 or not result_file.exists():
        raise RuntimeError(f"freshness run {tag} exited {code}:\n{log_path.read_text()[-3000:]}")
    result: dict[str, Any] = json.loads(result_file.read_text())
    if result["groups_current_ok"]:
        shutil.rmtree(out, ignore_errors=True)  # a failed check keeps its tables to inspect
    return result


if __name__ == "__main__":
    Path(sys.argv[2]).write_text(json.dumps(worker(json.loads(sys.argv[1]))))
