"""A rebalance storm from the bundled coordinator, through the ingest job, into alerts.

The scenario runs on the bundled coordinator and writes a Kafka log directory plus its ground
truth; the ingest job reads the directory in micro-batches (``processAllAvailable``) and, after
each one, the alerts are evaluated for the keys the batch moved (the hook the ingest job can
call). The expected alerts come from the ground truth alone, by a millisecond scan of the
generations the coordinator started: the table must hold exactly those, each opened while the
storm raged, updated as it grew, and resolved once it was over -- and the alerts job, replaying
the whole change feed of the fold state afterwards, must not raise any of them a second time.
Logging is configured as the job's entry point configures it, so each event's line reaches the
log (stderr) and is recorded ``delivered`` because it did.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from jobs import alerts as alerts_job
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from offsetscope import config, logs
from offsetscope.alerts import tables as alert_tables
from offsetscope.alerts.model import AlertRow
from offsetscope.alerts.notify import LogNotifier
from offsetscope.alerts.runner import AlertsRunner
from offsetscope.pipelines import ingest
from offsetscope.quality import tables as qtables
from offsetscope.sim.scenarios.run import simulate_to

pytestmark = [pytest.mark.spark, pytest.mark.streaming]

GROUP = "alerting"
WINDOW = 60_000
MAX_GENERATIONS = 5
MAX_MEMBER_CHANGES = 12


def episodes(start: int, end: int, holds: Any) -> list[tuple[int, int | None]]:
    """``[a, b)`` intervals of ``[start, end]`` where ``holds(t)``, checked every millisecond."""
    out: list[tuple[int, int | None]] = []
    opened = None
    for t in range(start, end + 1):
        if holds(t):
            opened = t if opened is None else opened
        elif opened is not None:
            out.append((opened, t))
            opened = None
    if opened is not None:
        out.append((opened, None))
    return out


def in_window(times: list[int], t: int) -> int:
    return bisect.bisect_right(times, t) - bisect.bisect_right(times, t - WINDOW)


def expected_alerts(truth: list[dict[str, Any]], start: int, as_of: int) -> set[tuple[Any, ...]]:
    """(rule, group, episode start, resolved at) of every alert the ground truth implies."""
    stored = {t["generation_id"] for t in truth if t["type"] == "AssignmentStored"}
    started = [t for t in truth if t["type"] == "GenerationStarted" and t["group_id"] == GROUP]
    rebalances = sorted(t["at_ms"] for t in started)
    storm = episodes(start, as_of, lambda t: in_window(rebalances, t) > MAX_GENERATIONS)
    # Members join at the first stored generation that has them, leave at the next without.
    joins: list[int] = []
    leaves: list[int] = []
    present: set[str] = set()
    for t in sorted(started, key=lambda t: t["at_ms"]):
        if t["generation_id"] not in stored:
            continue
        joins += [t["at_ms"] for m in t["member_ids"] if m not in present]
        leaves += [t["at_ms"] for m in present if m not in t["member_ids"]]
        present = set(t["member_ids"])
    joins.sort()
    leaves.sort()
    churn = episodes(
        start,
        as_of,
        lambda t: in_window(joins, t) + in_window(leaves, t) > MAX_MEMBER_CHANGES,
    )
    return {("rebalance_storm", GROUP, a, b) for a, b in storm} | {
        ("member_churn", GROUP, a, b) for a, b in churn
    }


@pytest.mark.timeout(1200)
def test_storm_raises_exactly_the_expected_alerts_and_resolves_them(
    spark: SparkSession,
    offsetscope_config: config.Config,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    log_dir = tmp_path / "log"
    simulate_to("rebalance-storm", out=log_dir)
    truth = [json.loads(line) for line in (log_dir / "ground_truth.jsonl").open()]
    scenario = next(t for t in truth if t["type"] == "ScenarioStarted")

    base = offsetscope_config
    a = base.alerts
    cfg = dataclasses.replace(
        base,
        storage=dataclasses.replace(
            base.storage,
            schema=f"storm_{uuid.uuid4().hex[:8]}",
            checkpoint_dir=str(tmp_path / "checkpoints"),
        ),
        sources=dataclasses.replace(
            base.sources,
            kind="segments",
            segments=dataclasses.replace(
                base.sources.segments, log_dir=str(log_dir), max_records_per_trigger=150
            ),
        ),
        pipeline=dataclasses.replace(base.pipeline, trigger="available_now"),
        alerts=dataclasses.replace(
            a,
            rebalance_storm=dataclasses.replace(
                a.rebalance_storm, window="1m", max_generations=MAX_GENERATIONS
            ),
            member_churn=dataclasses.replace(
                a.member_churn, window="1m", max_member_changes=MAX_MEMBER_CHANGES
            ),
        ),
    )
    logs.configure(cfg.logging)
    hook = AlertsRunner(cfg, query_name="storm_hook", notifiers=[LogNotifier()])
    reports = ingest.run(
        spark, cfg, progress=lambda report: hook.after_ingest_batch(spark, report.batch_id)
    )
    hook.close(spark)
    assert len(reports) >= 3, "the storm spans several micro-batches"

    alerts_table = qtables.qualified_name(cfg, alert_tables.ALERTS)
    rows = qtables.rows_of(spark.table(alerts_table), AlertRow)
    as_of = hook.evaluations[-1].as_of
    expected = expected_alerts(truth, scenario["start_ms"], as_of)
    assert any(rule == "rebalance_storm" for rule, *_ in expected)
    assert {(r.rule, r.subject, r.episode_start, r.resolved_at) for r in rows} == expected
    assert all(r.status == "resolved" for r in rows)
    (storm,) = (r for r in rows if r.rule == "rebalance_storm")
    generations = {t["generation_id"] for t in truth if t["type"] == "AssignmentStored"}
    assert set(storm.generations) <= generations
    assert len(storm.generations) > MAX_GENERATIONS

    # Opened while the storm raged, updated as it grew, resolved once: the table's history.
    changes = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", 0)
        .table(alerts_table)
        .where((F.col("alert_id") == storm.alert_id) & (F.col("_change_type") != "update_preimage"))
        .orderBy("_commit_version")
        .select("status", "value", "last_batch_id")
        .collect()
    )
    statuses = [c["status"] for c in changes]
    assert statuses[0] == "open"
    assert statuses[-1] == "resolved"
    assert statuses.count("resolved") == 1
    assert [c["value"] for c in changes] == sorted(c["value"] for c in changes)
    assert len(changes) >= 3  # opened, updated while open, resolved

    # Each event told once, after its commit.
    told = spark.table(qtables.qualified_name(cfg, alert_tables.ALERT_NOTIFICATIONS)).collect()
    assert sorted((n["alert_id"], n["event"]) for n in told) == sorted(
        (r.alert_id, e) for r in rows for e in ("opened", "resolved")
    )
    assert {n["status"] for n in told} == {"delivered"}
    logged = capsys.readouterr().err
    churn = [r for r in rows if r.rule == "member_churn"]
    assert churn, "the storm's member churn is a warning: its lines are INFO"
    for r in rows:
        for event in ("opened", "resolved"):
            assert (
                f"offsetscope.alerts: alert {event} [{r.severity}] {r.rule} {r.subject} ({r.alert_id})"
                in logged
            )

    # The alerts job (jobs/alerts.py, on this process's session) replays the fold state's
    # whole change feed with its own checkpoint: it finds the same alerts and writes nothing.
    site = tmp_path / "site.toml"
    site.write_text(
        f"""
[spark]
shuffle_partitions = {spark.conf.get("spark.sql.shuffle.partitions")}
[storage]
schema = "{cfg.storage.schema}"
checkpoint_dir = "{cfg.storage.checkpoint_dir}"
[alerts]
query_name = "storm_job"
[alerts.rebalance_storm]
window = "1m"
max_generations = {MAX_GENERATIONS}
[alerts.member_churn]
window = "1m"
max_member_changes = {MAX_MEMBER_CHANGES}
"""
    )
    assert alerts_job.main(["--env", "local", "--conf", str(site)]) == 0
    assert "alerts: " in capsys.readouterr().out
    again = qtables.rows_of(spark.table(alerts_table), AlertRow)
    assert sorted(again, key=lambda r: r.alert_id) == sorted(rows, key=lambda r: r.alert_id)
