"""The Databricks bundle, checked structurally and offline: every entry point, parameter, table,
variable, configuration key and dashboard field it names exists in this repository, and the job
cluster's settings give each target the configuration and storage the bundle declares."""

from __future__ import annotations

import dataclasses
import importlib
import json
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from databricks_bundle import BUNDLE, ROOT, Resolved, User, loaded, resolve

from offsetscope import config

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
VAR = re.compile(r"\$\{var\.([A-Za-z_][A-Za-z0-9_]*)\}")
HEALTH_METRICS = {
    "STREAMING_BACKLOG_BYTES",
    "STREAMING_BACKLOG_RECORDS",
    "STREAMING_BACKLOG_SECONDS",
    "STREAMING_BACKLOG_FILES",
    "RUN_DURATION_SECONDS",
}
# Databricks Runtime -> the Apache Spark line it ships (Databricks' release notes).
RUNTIME_SPARK = {"17": "4.0", "18": "4.1", "19": "4.2"}
DASHBOARD = BUNDLE / "dashboards" / "offsetscope.lvdash.json"
VALUES = {
    "warehouse_id": "0123456789abcdef",
    "alert_email": "kafka-oncall@example.com",
    "notification_destination_id": "00000000-0000-0000-0000-000000000001",
    "jobs_principal": "6f1c3b8e-5a2d-4c1b-9e7f-0a1b2c3d4e5f",
}

BUNDLE_DOC, ORIGIN = loaded()
JOBS: dict[str, Any] = BUNDLE_DOC["resources"]["jobs"]
TARGETS: list[str] = sorted(BUNDLE_DOC["targets"])


def target(name: str) -> Resolved:
    values = dict(VALUES)
    if name != "prod":
        values.pop("jobs_principal")
    return resolve(name, User("alice@example.com"), values)


def wheel_tasks() -> Iterator[tuple[str, dict[str, Any]]]:
    for key, job in sorted(JOBS.items()):
        for task in job["tasks"]:
            if "python_wheel_task" in task:
                yield key, task


def job_module(entry_point: str) -> Any:
    """``offsetscope-<name>`` runs ``jobs/<name>.py``'s ``main``."""
    prefix = "offsetscope-"
    assert entry_point.startswith(prefix), entry_point
    return importlib.import_module(f"jobs.{entry_point.removeprefix(prefix)}")


def strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value)


def cluster_env(resolved: Resolved, key: str = "offsetscope") -> dict[str, str]:
    (cluster,) = resolved.resources["jobs"][key]["job_clusters"]
    env: dict[str, str] = cluster["new_cluster"]["spark_env_vars"]
    return env


def test_one_continuous_job_runs_ingest_and_alerts_beside_each_other() -> None:
    assert TARGETS == ["dev", "prod"]
    assert sorted(JOBS) == ["offsetscope", "offsetscope_maintain"]
    job = JOBS["offsetscope"]
    assert set(job["continuous"]) == {"task_retry_mode"}
    assert job["continuous"]["task_retry_mode"] == "ON_FAILURE"
    assert "schedule" not in job
    assert "trigger" not in job
    assert job["max_concurrent_runs"] == 1
    tasks = {
        t["python_wheel_task"]["entry_point"]: t for k, t in wheel_tasks() if k == "offsetscope"
    }
    assert sorted(tasks) == ["offsetscope-alerts", "offsetscope-ingest"]
    # Beside each other: one warm cluster, neither waiting for the other.
    assert {t["job_cluster_key"] for t in tasks.values()} == {"offsetscope"}
    assert all("depends_on" not in t for t in tasks.values())


def test_every_entry_point_is_a_project_script_of_the_wheel() -> None:
    scripts = PYPROJECT["project"]["scripts"]
    for _, task in wheel_tasks():
        entry = task["python_wheel_task"]["entry_point"]
        name = entry.removeprefix("offsetscope-")
        assert scripts.get(entry) == f"jobs.{name}:main", entry
    find = PYPROJECT["tool"]["setuptools"]["packages"]["find"]
    assert "jobs" in find.get("include", []), "jobs/ is packaged into the wheel"


def test_every_task_installs_the_project_wheel_built_by_make_dist() -> None:
    project = PYPROJECT["project"]["name"]
    (artifact,) = BUNDLE_DOC["artifacts"].values()
    assert artifact["type"] == "whl"
    assert (BUNDLE / artifact["path"]).resolve() == ROOT
    assert artifact["build"] == "make dist"
    assert re.search(r"^dist:", (ROOT / "mk" / "deploy.mk").read_text(), re.MULTILINE)
    for key, task in wheel_tasks():
        assert task["python_wheel_task"]["package_name"] == project
        (library,) = task["libraries"]
        wheel = (ORIGIN[f"jobs.{key}"].parent / library["whl"]).resolve()
        assert wheel.parent == ROOT / "dist"
        assert wheel.name == "*.whl"


def test_the_runtime_ships_the_spark_line_the_project_is_tested_on() -> None:
    version = BUNDLE_DOC["variables"]["spark_version"]["default"]
    match = re.fullmatch(r"(\d+)(?:\.\d+)?\.x-scala2\.13", version)
    assert match, version
    pins = dict(line.split("==") for line in (ROOT / "requirements.lock").read_text().splitlines())
    tested = ".".join(pins["pyspark"].split(".")[:2])
    assert RUNTIME_SPARK[match.group(1)] == tested, f"{version} does not ship Spark {tested}"
    readme = (ROOT / "README.md").read_text()
    assert f"Databricks Runtime {match.group(1)}" in readme
    assert f"`{version}`" in readme


@pytest.mark.parametrize("name", TARGETS)
def test_every_parameter_is_accepted_by_the_jobs_parser(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # With an empty conf folder, a job gets past its argument parser and stops at loading
    # the configuration (the error on one line): that proves the parser accepted every
    # parameter (argparse raises SystemExit otherwise, as the last check shows).
    monkeypatch.setenv("OFFSETSCOPE_CONF_DIR", str(tmp_path))
    tasks = [t for job in target(name).resources["jobs"].values() for t in job["tasks"]]
    assert len(tasks) == 3
    for task in tasks:
        wheel_task = task["python_wheel_task"]
        params = wheel_task["parameters"]
        assert params == ["--env", name]
        main = job_module(wheel_task["entry_point"]).main
        assert main(params) == 2
        assert re.search(r"base\.toml does not exist", capsys.readouterr().err)
        with pytest.raises(SystemExit) as bad:
            main([*params, "--catalog", "x"])
        assert bad.value.code == 2


@pytest.mark.parametrize("name", TARGETS)
def test_the_cluster_gives_each_target_the_bundles_storage(name: str) -> None:
    # The configuration a task loads: conf/<target>.toml, with the job cluster's environment
    # (OFFSETSCOPE__STORAGE__* overrides) as the cluster sets it.
    resolved = target(name)
    env = {k: v for k, v in cluster_env(resolved).items() if k.startswith("OFFSETSCOPE__")}
    cfg = config.load(name, conf_dir=ROOT / "conf", environ=env)
    schema = resolved.resources["schemas"]["offsetscope"]
    assert (cfg.storage.catalog, cfg.storage.schema) == (schema["catalog_name"], schema["name"])
    assert cfg.storage.checkpoint_dir == resolved.volume_paths["checkpoints"]
    volume = resolved.resources["volumes"]["checkpoints"]
    assert (volume["catalog_name"], volume["schema_name"]) == (cfg.storage.catalog, schema["name"])
    assert cfg.spark.jars_dir == "", "the runtime brings Delta and the Kafka source"
    assert cfg.sources.kind == "kafka"
    # Both queries stream until stopped, as tasks of a continuous job.
    assert cfg.pipeline.trigger == "processing_time"
    assert cfg.alerts.trigger == "processing_time"


@pytest.mark.parametrize("name", TARGETS)
def test_secret_references_of_a_target_are_provided_by_its_cluster(name: str) -> None:
    cfg = config.load(name)
    refs: list[str] = []

    def walk(node: Any) -> None:
        if dataclasses.is_dataclass(node):
            for f in dataclasses.fields(node):
                walk(getattr(node, f.name))
        elif isinstance(node, dict):
            for v in node.values():
                walk(v)
        elif isinstance(node, str) and config.SECRET_REFERENCE.match(node):
            refs.append(node)

    walk(cfg)
    assert refs, "a production-like target reads its Kafka password by reference"
    env = cluster_env(target(name))
    for ref in refs:
        if ref.startswith("env:"):
            assert ref.removeprefix("env:") in env, ref


def test_jobs_find_the_synced_configuration() -> None:
    synced = [(BUNDLE / p).resolve() for p in BUNDLE_DOC["sync"]["paths"]]
    assert ROOT / "conf" in synced
    for job in JOBS.values():
        for cluster in job["job_clusters"]:
            env = cluster["new_cluster"]["spark_env_vars"]
            assert env["OFFSETSCOPE_CONF_DIR"] == "${workspace.file_path}/conf"


def test_the_maintenance_job_runs_daily_with_the_same_storage_and_configuration() -> None:
    job = JOBS["offsetscope_maintain"]
    assert "continuous" not in job
    assert job["max_concurrent_runs"] == 1
    assert re.fullmatch(r"0 \d+ \d+ \* \* \?", job["schedule"]["quartz_cron_expression"])
    assert job["schedule"]["timezone_id"] == "UTC"
    ((_, task),) = [(k, t) for k, t in wheel_tasks() if k == "offsetscope_maintain"]
    assert task["python_wheel_task"]["entry_point"] == "offsetscope-maintain"
    assert job_module("offsetscope-maintain").main is not None
    for name in TARGETS:
        resolved = target(name)
        assert cluster_env(resolved, "offsetscope_maintain") == cluster_env(resolved)
        schedule = resolved.resources["jobs"]["offsetscope_maintain"]["schedule"]
        assert schedule["pause_status"] == ("PAUSED" if name == "dev" else "UNPAUSED")
    rules = job["health"]["rules"]
    assert [r["metric"] for r in rules] == ["RUN_DURATION_SECONDS"]
    assert job["email_notifications"]["on_failure"] == ["${var.alert_email}"]
    assert job["webhook_notifications"]["on_failure"] == [
        {"id": "${var.notification_destination_id}"}
    ]


def test_health_rules_and_notifications() -> None:
    for key, job in JOBS.items():
        if key == "offsetscope_maintain":  # a batch job: its own rules, tested above
            continue
        rules = job["health"]["rules"]
        assert {r["metric"] for r in rules} >= {"STREAMING_BACKLOG_SECONDS"}
        assert {r["metric"] for r in rules} <= HEALTH_METRICS
        assert all(r["op"] == "GREATER_THAN" and r["value"] > 0 for r in rules), key
        assert job["email_notifications"]["on_failure"] == ["${var.alert_email}"]
        assert "on_streaming_backlog_exceeded" in job["email_notifications"]
        assert job["webhook_notifications"]["on_failure"] == [
            {"id": "${var.notification_destination_id}"}
        ]


def tables_named(sql: str) -> set[str]:
    return set(re.findall(r"\b(?:FROM|JOIN)\s+(?:[`\w${}.]+\.)?`?([A-Za-z_]\w*)`?", sql))


def test_sql_alerts_read_tables_the_configuration_names() -> None:
    alerts = BUNDLE_DOC["resources"]["alerts"]
    assert len(alerts) >= 3
    prefix = "${var.catalog}.${resources.schemas.offsetscope.name}."
    for name in TARGETS:
        names = set(dataclasses.asdict(config.load(name).tables).values())
        for key, alert in alerts.items():
            sql = alert["query_text"]
            tables = re.findall(re.escape(prefix) + r"(\w+)", sql)
            assert tables, key
            assert set(tables) <= names, key
            source = alert["evaluation"]["source"]["name"]
            assert re.search(rf"\bAS {source}\b", sql), key
            assert alert["warehouse_id"] == "${var.warehouse_id}"
            assert alert["schedule"]["quartz_cron_schedule"]


def test_sql_alerts_aggregate_per_kafka_cluster_where_they_aggregate_per_group() -> None:
    for key, alert in BUNDLE_DOC["resources"]["alerts"].items():
        for clause in re.findall(r"(?:PARTITION|GROUP) BY (.*)", alert["query_text"]):
            if re.search(r"\b(?:group_id|transactional_id)\b", clause):
                assert re.search(r"\bcluster\b", clause), f"{key}: {clause}"


def test_every_variable_is_declared_and_used() -> None:
    declared = set(BUNDLE_DOC["variables"])
    used = {m for s in strings(BUNDLE_DOC) for m in VAR.findall(s)}
    assert used == declared
    for name in TARGETS:
        overrides = (BUNDLE_DOC["targets"][name] or {}).get("variables", {})
        assert set(overrides) <= declared


# ----------------------------------------------------------------------------- the dashboard


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def dataset_sql(dataset: dict[str, Any]) -> str:
    return "".join(dataset["queryLines"])


def test_the_dashboard_resource_points_at_the_file_and_the_schema() -> None:
    (resource,) = BUNDLE_DOC["resources"]["dashboards"].values()
    path = (ORIGIN["dashboards.offsetscope"].parent / resource["file_path"]).resolve()
    assert path == DASHBOARD
    assert resource["dataset_catalog"] == "${var.catalog}"
    assert resource["dataset_schema"] == "${resources.schemas.offsetscope.name}"
    assert resource["warehouse_id"] == "${var.warehouse_id}"


def test_dashboard_datasets_read_the_gold_tables_unqualified() -> None:
    names = set(dataclasses.asdict(config.load("prod").tables).values())
    read: set[str] = set()
    for dataset in dashboard()["datasets"]:
        sql = dataset_sql(dataset)
        tables = tables_named(sql)
        assert tables, dataset["name"]
        # dataset_catalog and dataset_schema qualify them per target.
        assert not re.search(r"\b(?:FROM|JOIN)\s+\S+\.", sql), dataset["name"]
        read |= tables
    assert read <= names
    assert read >= {
        "groups_current",
        "group_generations",
        "partition_lag",
        "transactions",
        "alerts",
    }


def test_every_widget_reads_a_dataset_and_fits_the_grid() -> None:
    doc = dashboard()
    datasets = {d["name"] for d in doc["datasets"]}
    assert len(datasets) == len(doc["datasets"])
    used: set[str] = set()
    for page in doc["pages"]:
        cells: set[tuple[int, int]] = set()
        for item in page["layout"]:
            widget, pos = item["widget"], item["position"]
            assert pos["x"] >= 0, widget["name"]
            assert pos["x"] + pos["width"] <= 6, widget["name"]
            area = {
                (x, y)
                for x in range(pos["x"], pos["x"] + pos["width"])
                for y in range(pos["y"], pos["y"] + pos["height"])
            }
            assert not area & cells, f"{widget['name']} overlaps another widget"
            cells |= area
            queries = widget_fields(widget)
            for query in widget["queries"]:
                assert query["query"]["datasetName"] in datasets
                used.add(query["query"]["datasetName"])
            encodings = widget["spec"]["encodings"]
            if is_filter(widget):
                # a filter names its field once per query, and so per dataset it filters
                for field in encodings["fields"]:
                    assert field["fieldName"] in queries[field["queryName"]], widget["name"]
                continue
            (fields,) = queries.values()
            named = [c["fieldName"] for c in encodings.get("columns", [])] + [
                e["fieldName"] for k, e in encodings.items() if k != "columns"
            ]
            assert set(named) <= fields, widget["name"]
    assert used == datasets, "every dataset is shown"


def widget_fields(widget: dict[str, Any]) -> dict[str, set[str]]:
    """Query name -> the names of its fields."""
    return {q["name"]: {f["name"] for f in q["query"]["fields"]} for q in widget["queries"]}


def is_filter(widget: dict[str, Any]) -> bool:
    return bool(widget["spec"]["widgetType"].startswith("filter-"))


def test_every_dataset_keeps_kafka_clusters_apart() -> None:
    # The same group id (or transactional id) in two Kafka clusters is two groups: each row
    # names its cluster, and whatever ranks or aggregates per group does so per cluster too.
    for dataset in dashboard()["datasets"]:
        sql, name = dataset_sql(dataset), dataset["name"]
        assert re.search(r"\bcluster\b", sql[: sql.index("FROM")]), f"{name} shows no cluster"
        if not re.search(r"\b(?:group_id|transactional_id)\b", sql):
            continue
        for clause in re.findall(r"(?:PARTITION|GROUP) BY (.*?)(?: ORDER BY|\n|$)", sql):
            assert re.search(r"\bcluster\b", clause), f"{name}: {clause}"


def test_each_page_has_a_cluster_filter_over_every_dataset_it_shows() -> None:
    for page in dashboard()["pages"]:
        shown: set[str] = set()
        filtered: set[str] = set()
        for item in page["layout"]:
            widget = item["widget"]
            datasets = {q["query"]["datasetName"] for q in widget["queries"]}
            if not is_filter(widget):
                shown |= datasets
                continue
            assert widget["spec"]["widgetType"] == "filter-multi-select"
            assert widget["spec"]["version"] == 2
            for query in widget["queries"]:
                assert [f["expression"] for f in query["query"]["fields"]] == ["`cluster`"]
            filtered |= datasets
        # a dataset the filter does not reach would go on showing every cluster's rows
        assert filtered == shown, page["name"]


def test_charts_of_one_series_per_group_tell_the_clusters_apart() -> None:
    datasets = {d["name"]: dataset_sql(d) for d in dashboard()["datasets"]}
    for page in dashboard()["pages"]:
        for item in page["layout"]:
            widget = item["widget"]
            color = widget["spec"]["encodings"].get("color")
            if color is None:
                continue
            assert color["fieldName"] != "group_id", widget["name"]
            if color["fieldName"] == "cluster_group":
                (query,) = widget["queries"]
                sql = datasets[query["query"]["datasetName"]]
                # <cluster>/<group>, as the alerts' per-group overrides name a cluster's group
                assert "concat_ws('/', cluster, group_id) AS cluster_group" in sql
