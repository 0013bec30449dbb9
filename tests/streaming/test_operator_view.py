"""The operator's view end to end, on the demo scenario ingested once by the streaming pipeline:
the views and their comments, the task-shaped commands and their formats, the report pages
opened in a real headless Chromium (marks counted in the rendered DOM against the rows each
chart was built from, and a screenshot), and the exporter scraped by a real Prometheus whose
HTTP API gives a value back.

offsetscope's own consumer groups are exercised by naming one of the scenario's groups
(``legacy-export``) as the own-group prefix: the ingest labels it and every view, command and
page leaves it out unless asked. Chromium (``/usr/bin/chromium``) and Prometheus
(``/usr/bin/prometheus``) come from ``make operator-deps``; every process started here is
stopped here (Chromium by :mod:`offsetscope.verify.browser`).
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import io
import json
import re
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from offsetscope import cli, config
from offsetscope.alerts import tables as alert_tables
from offsetscope.ops import metrics, report
from offsetscope.ops.queries import Queries, Window
from offsetscope.pipelines import ingest
from offsetscope.quality import tables as qtables
from offsetscope.spark import tables as catalogue
from offsetscope.verify import browser, demo

pytestmark = [pytest.mark.spark, pytest.mark.streaming]

PROMETHEUS = Path("/usr/bin/prometheus")
OWN = "legacy-export"  # one of the demo's groups, configured as offsetscope's own
DAY_MS = 24 * 3600 * 1000


@dataclasses.dataclass(frozen=True)
class World:
    cfg: config.Config
    conf_file: Path  # --conf for the commands: the schema and the own-group prefix
    end_ms: int
    lines: list[str]
    reports: list[ingest.BatchReport]
    work: Path

    @property
    def window(self) -> Window:
        return Window(self.end_ms - DAY_MS, self.end_ms)

    def queries(self, spark: SparkSession, include_own: bool = False) -> Queries:
        return Queries(spark, self.cfg, include_own=include_own)

    def as_of(self) -> str:
        return dt.datetime.fromtimestamp(self.end_ms / 1000, tz=dt.UTC).isoformat()


@pytest.fixture(scope="module")
def world(
    spark: SparkSession, offsetscope_config: config.Config, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    work = tmp_path_factory.mktemp("operator")
    schema = f"t_ops_{uuid.uuid4().hex[:8]}"
    sim = demo.simulate(work, "demo")
    # three micro-batches: a backlog to report, then none
    cfg = demo.demo_config(offsetscope_config, work, sim, batch_records=10_000)
    cfg = config.with_storage(cfg, schema=schema)
    cfg = dataclasses.replace(
        cfg,
        sources=dataclasses.replace(
            cfg.sources,
            kafka=dataclasses.replace(cfg.sources.kafka, group_id_prefix=OWN),
        ),
    )
    lines: list[str] = []
    reports = ingest.run(spark, cfg, query_name="ops_ingest", say=lines.append)
    conf_file = work / "extra.toml"
    conf_file.write_text(
        f'[storage]\nschema = "{schema}"\n\n[sources.kafka]\ngroup_id_prefix = "{OWN}"\n'
        '\n[pipeline]\nquery_name = "ops_ingest"\n'
    )
    try:
        yield World(cfg, conf_file, sim.end_ms, lines, reports, work)
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _cli(world: World, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main([*argv, "--conf", str(world.conf_file)])
    out = capsys.readouterr()
    return code, out.out, out.err


# ----------------------------------------------------------------------------- ingest


def test_the_ingest_says_what_it_does_and_how_far_behind_it_is(world: World) -> None:
    assert world.lines[0].startswith("ingest: creating or checking the tables in")
    assert world.lines[1].startswith("ingest: query ops_ingest started, reading ")
    batches = [line for line in world.lines if "] batch " in line]
    assert len(batches) == len(world.reports) >= 3
    assert "backlog " in batches[0]
    first = int(batches[0].split("backlog ")[1].split(" records")[0].replace(",", ""))
    # The simulator's logs have no gaps: what was behind is what the later batches read.
    assert first == sum(r.rows_in for r in world.reports[1:])
    assert batches[-1].endswith("caught up")


# ----------------------------------------------------------------------------- tables and views


def test_every_column_of_every_table_and_view_has_its_comment_in_the_catalog(
    spark: SparkSession, world: World
) -> None:
    cfg = world.cfg
    qtables.ensure(
        spark,
        cfg,
        (
            qtables.QUALITY_RESULTS,
            qtables.QUALITY_QUARANTINE,
            alert_tables.ALERTS,
            alert_tables.ALERT_NOTIFICATIONS,
        ),
    )
    declared: dict[str, tuple[str, dict[str, str]]] = {
        getattr(cfg.tables, s.logical): (s.comment, {c.name: c.comment for c in s.columns})
        for s in (
            *catalogue.CATALOGUE.values(),
            qtables.QUALITY_RESULTS,
            qtables.QUALITY_QUARANTINE,
            alert_tables.ALERTS,
            alert_tables.ALERT_NOTIFICATIONS,
        )
    }
    declared |= {
        getattr(cfg.tables, v.logical): (v.comment, dict(v.columns))
        for v in catalogue.VIEWS.values()
    }
    schema = cfg.storage.schema
    found = {t.name for t in spark.catalog.listTables(schema) if not t.isTemporary}
    assert set(declared) <= found
    for name, (comment, columns) in declared.items():
        assert spark.catalog.getTable(f"{schema}.{name}").description == comment, name
        read = {c.name: c.description for c in spark.catalog.listColumns(name, schema)}
        assert read == columns, name
        assert all(read.values()), name


def test_views_answer_at_query_time(spark: SparkSession, world: World) -> None:
    cfg = world.cfg

    def view(logical: str) -> list[dict[str, Any]]:
        return [r.asDict() for r in spark.table(catalogue.view_name(cfg, logical)).collect()]

    overview = {r["group_id"]: r for r in view("group_overview")}
    current = {
        r["group_id"]: r.asDict()
        for r in catalogue.current_rows(spark, cfg, "groups_current").collect()
    }
    assert set(overview) == set(current) - {OWN}
    assert current[OWN]["offsetscope_own"] is True
    assert not any(r["offsetscope_own"] for g, r in current.items() if g != OWN)
    # The demo happened in 2023: nothing rebalanced in the hour before now, whatever the
    # stored as-of-the-last-record count says.
    stale = {g for g, r in current.items() if r["rebalances_1h"] and g != OWN}
    assert stale
    assert all(overview[g]["rebalances_1h"] == 0 for g in stale)
    # As of the scenario's end, the view's own SELECT counts the generations of that hour.
    at_end = world.queries(spark).groups(world.window).dicts()
    gens = spark.sql(
        f"SELECT group_id, sum(rebalances) AS n FROM {catalogue.table_name(cfg, 'group_generations')}"
        f" WHERE stored_at > timestamp_millis({world.end_ms - 3_600_000})"
        f" AND stored_at <= timestamp_millis({world.end_ms}) GROUP BY group_id"
    ).collect()
    expected = {r["group_id"]: r["n"] for r in gens if r["group_id"] != OWN}
    assert {r["group_id"]: r["rebalances_1h"] for r in at_end if r["rebalances_1h"]} == {
        g: n for g, n in expected.items() if n
    }
    lag = view("current_lag")
    assert lag
    assert OWN not in {r["group_id"] for r in lag}
    latest = spark.sql(
        f"SELECT group_id, topic, `partition`, max(as_of) AS as_of "
        f"FROM {catalogue.table_name(cfg, 'partition_lag')} GROUP BY 1, 2, 3"
    ).collect()
    assert {(r["group_id"], r["topic"], r["partition"], r["as_of"]) for r in lag} == {
        (r["group_id"], r["topic"], r["partition"], r["as_of"])
        for r in latest
        if r["group_id"] != OWN
    }
    churn = {r["group_id"]: r for r in view("member_churn")}
    sessions = Counter(
        r["group_id"]
        for r in spark.table(catalogue.table_name(cfg, "member_sessions")).collect()
        if r["group_id"] != OWN
    )
    assert {g: r["sessions"] for g, r in churn.items()} == dict(sessions)
    # The log was copied off while a transaction was open: seen from now it has been open for
    # years; as of the demo's end, only if its timeout had passed by then.
    transactions = [
        r.asDict() for r in spark.table(catalogue.table_name(cfg, "transactions")).collect()
    ]
    open_at_end = {t["transactional_id"] for t in transactions if t["completed_at"] is None}
    assert open_at_end
    assert {r["transactional_id"] for r in view("hanging_transactions")} == open_at_end
    end = dt.datetime.fromtimestamp(world.end_ms / 1000, tz=dt.UTC).replace(tzinfo=None)
    hanging_at_end = {
        t["transactional_id"]
        for t in transactions
        if t["completed_at"] is None
        and t["started_at"] + dt.timedelta(milliseconds=t["timeout_ms"]) < end
    }
    assert set(world.queries(spark).hanging(world.window).column("transactional_id")) == (
        hanging_at_end
    )
    timeline = view("group_timeline")
    events = Counter(r["event"] for r in timeline)
    assert events["rebalance"] == sum(
        1
        for r in spark.table(catalogue.table_name(cfg, "group_generations")).collect()
        if r["group_id"] != OWN
    )
    assert events["member joined"] == sum(sessions.values())


# ----------------------------------------------------------------------------- commands


def test_group_commands_in_every_format(
    spark: SparkSession, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    at = ("--as-of", world.as_of())
    code, out, _ = _cli(world, capsys, "group", "list", *at, "--format", "json")
    assert code == 0
    listed = json.loads(out)
    expected = world.queries(spark).groups(world.window)
    assert [r["group_id"] for r in listed] == expected.column("group_id")
    assert OWN not in {r["group_id"] for r in listed}
    code, out, _ = _cli(world, capsys, "group", "list", *at, "--format", "json", "--include-own")
    assert OWN in {r["group_id"] for r in json.loads(out)}

    storm = world.queries(spark).stormiest_group(world.window)
    assert storm is not None
    code, out, _ = _cli(world, capsys, "group", "history", storm, *at, "--format", "csv")
    assert code == 0
    history = list(csv.DictReader(io.StringIO(out)))
    generations = world.queries(spark).generations(storm, world.window)
    assert [int(r["generation"]) for r in history] == generations.column("generation")
    assert all(r["cause"] for r in history)

    code, out, _ = _cli(world, capsys, "group", "describe", storm, *at)
    assert code == 0
    header = out.splitlines()[0].split(" | ")
    assert [h.strip() for h in header][:8] == [
        "CLUSTER", "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
        "LAG-SECONDS",
    ]  # fmt: skip
    lag = world.queries(spark).lag(storm, world.window)
    assert len(out.splitlines()) == 2 + len(lag)
    code, out, _ = _cli(world, capsys, "group", "lag", storm, *at, "--format", "json")
    assert [r["lag_records"] for r in json.loads(out)] == lag.column("lag_records")
    code, out, _ = _cli(world, capsys, "group", "describe", storm, "--members", *at)
    assert code == 0
    assert "CONSUMER-ID" in out

    code, out, err = _cli(world, capsys, "group", "lag", "no-such-group", *at)
    assert (code, out) == (1, "")
    assert err.strip() == "error: no consumer group 'no-such-group' in the tables"
    code, out, err = _cli(world, capsys, "group", "history", OWN, *at)
    assert code == 1  # offsetscope's own: left out unless --include-own


def test_txn_commands(
    spark: SparkSession, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    at = ("--as-of", world.as_of())
    code, out, _ = _cli(world, capsys, "txn", "list", *at, "--format", "json")
    assert code == 0
    txns = json.loads(out)
    all_txns = spark.table(catalogue.table_name(world.cfg, "transactions")).count()
    assert len(txns) == all_txns > 0
    code, out, _ = _cli(
        world, capsys, "txn", "list", *at, "--outcome", "aborted", "--format", "csv"
    )
    aborted = list(csv.DictReader(io.StringIO(out)))
    assert aborted
    assert {r["outcome"] for r in aborted} == {"aborted"}
    code, out, _ = _cli(world, capsys, "txn", "hanging", "--format", "json")
    assert code == 0
    hanging = {r["transactional_id"] for r in json.loads(out)}
    assert hanging == set(
        world.queries(spark).hanging(Window(0, int(time.time() * 1000))).column("transactional_id")
    )
    assert hanging


def test_alerts_runs_once_and_ends_whatever_the_trigger(
    spark: SparkSession, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """``[alerts] trigger = "processing_time"`` would run until stopped; the command evaluates
    once, ends, and prints the alerts open now (offsetscope's own group among none of them)."""
    conf = world.work / "alerts.toml"
    checkpoints = world.work / "alert-checkpoints"
    conf.write_text(
        world.conf_file.read_text().replace(
            "[storage]\n", f'[storage]\ncheckpoint_dir = "{checkpoints}"\n'
        )
        + '\n[alerts]\ntrigger = "processing_time"\nprocessing_time = "1s"\n'
    )
    code = cli.main(["alerts", "--conf", str(conf)])
    out = capsys.readouterr().out
    assert code == 0
    summary = re.fullmatch(
        r"alerts: (\d+) evaluations, (\d+) alerts seen, (\d+) open", out.splitlines()[-1]
    )
    assert summary, out
    evaluations, seen, open_now = (int(g) for g in summary.groups())
    # A fresh checkpoint reads fold_state's snapshot: every group and transaction is evaluated.
    assert evaluations >= 1
    assert seen >= open_now
    stored = [
        r.asDict()
        for r in spark.table(qtables.qualified_name(world.cfg, alert_tables.ALERTS)).collect()
    ]
    assert OWN not in {r["subject"] for r in stored}
    opened = {(r["rule"], r["subject"], r["detail"]) for r in stored if r["status"] == "open"}
    assert open_now == len(opened)
    # A second run has nothing new to evaluate, ends as well, and still prints what is open.
    code = cli.main(["alerts", "--conf", str(conf), "--format", "json"])
    printed = json.loads(capsys.readouterr().out)
    assert code == 0
    assert {(r["rule"], r["subject"], r["detail"]) for r in printed} == opened


# ----------------------------------------------------------------------------- pages


def _rendered(page: Path, charts: set[str], shot: Path) -> dict[str, int]:
    counts = browser.marks(browser.dump_dom(page), charts)
    browser.screenshot(page, shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return dict(counts)


def test_report_page_renders_every_mark_in_chromium(
    spark: SparkSession, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """The stormiest group's page (the README's picture) and the transactional pipeline's:
    every bar and marker the rows call for is drawn, and nothing else."""
    storm = world.queries(spark).stormiest_group(world.window)
    assert storm is not None
    drawn: set[str] = set()
    for group in (storm, "order-enricher"):
        out = world.work / f"report-{group}.html"
        code, printed, _ = _cli(
            world, capsys, "report", "--group", group, "--as-of", world.as_of(), "--out", str(out)
        )
        assert (code, printed.strip()) == (0, str(out))
        assert "<script src" not in out.read_text()  # plotly.js is inside: no network needed
        built = report.group_report(world.queries(spark), group, world.window)
        expected = {chart: n for chart, n in built.marks().items() if n}
        shot = world.work / f"report-{group}.png"
        assert _rendered(out, set(built.marks()), shot) == expected
        drawn |= set(expected)
    assert drawn == {"timeline", "sessions", "lag", "transactions"}


def test_cluster_page_renders_in_chromium(
    spark: SparkSession, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    out = world.work / "cluster.html"
    code, _, _ = _cli(world, capsys, "report", "--as-of", world.as_of(), "--out", str(out))
    assert code == 0
    built = report.cluster_report(world.queries(spark), world.window)
    expected = built.marks()
    assert expected["rebalances"]
    assert expected["lag-leaders"]
    assert _rendered(out, set(expected), world.work / "cluster.png") == expected
    assert OWN not in out.read_text()


# ----------------------------------------------------------------------------- metrics


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return str(response.read().decode())


def test_prometheus_scrapes_the_exporter_and_answers_with_its_values(
    spark: SparkSession, world: World
) -> None:
    storm = world.queries(spark).stormiest_group(world.window)
    lag = world.queries(spark).lag(storm, Window(0, int(time.time() * 1000))).dicts()
    probe = max(lag, key=lambda r: (r["lag_records"] or 0, r["topic"], r["partition"]))
    exporter_port, prometheus_port = _free_port(), _free_port()
    stop = threading.Event()
    served = threading.Thread(
        target=metrics.serve,
        kwargs={
            "queries": world.queries(spark),
            "host": "127.0.0.1",
            "port": exporter_port,
            "interval_s": 3600.0,
            "stop": stop,
            "say": lambda _: None,
        },
        daemon=True,
    )
    served.start()
    prom_dir = world.work / "prometheus"
    prom_dir.mkdir()
    (prom_dir / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: offsetscope\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{exporter_port}']\n"
    )
    prometheus: subprocess.Popen[bytes] | None = None
    try:
        deadline = time.monotonic() + 120
        while True:  # the exporter reads the tables before it opens its port
            try:
                scraped = _get(f"http://127.0.0.1:{exporter_port}/metrics")
                break
            except OSError:
                assert time.monotonic() < deadline, "the exporter never listened"
                time.sleep(0.5)
        for name in metrics.METRICS:
            assert f"# TYPE {name} gauge" in scraped, name
        assert f'group_id="{OWN}"' not in scraped
        prometheus = subprocess.Popen(
            [
                str(PROMETHEUS),
                f"--config.file={prom_dir / 'prometheus.yml'}",
                f"--storage.tsdb.path={prom_dir / 'data'}",
                f"--web.listen-address=127.0.0.1:{prometheus_port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=(prom_dir / "prometheus.log").open("wb"),
            start_new_session=True,
        )
        selector = (
            f'offsetscope_kafka_consumer_group_topic_partition_lag{{group_id="{storm}",'
            f'topic_name="{probe["topic"]}",partition_id="{probe["partition"]}"}}'
        )
        url = f"http://127.0.0.1:{prometheus_port}/api/v1/query?" + urllib.parse.urlencode(
            {"query": selector}
        )
        result: list[dict[str, Any]] = []
        deadline = time.monotonic() + 90
        while not result:
            assert prometheus.poll() is None, (prom_dir / "prometheus.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "Prometheus never had the value"
            try:
                answer = json.loads(_get(url))
                result = answer["data"]["result"]
            except OSError:
                pass
            if not result:
                time.sleep(1.0)
        assert float(result[0]["value"][1]) == float(probe["lag_records"])
        assert result[0]["metric"]["job"] == "offsetscope"
    finally:
        if prometheus is not None:
            prometheus.terminate()
            try:
                prometheus.wait(30)
            except subprocess.TimeoutExpired:
                prometheus.kill()
                prometheus.wait()
        stop.set()
        served.join(60)
    assert not served.is_alive()
    assert prometheus is not None
    assert prometheus.returncode is not None
