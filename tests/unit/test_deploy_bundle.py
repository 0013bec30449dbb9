"""The Databricks bundle, checked structurally and offline: every entry point, parameter, table,
variable and configuration key it names exists in this repository."""

from __future__ import annotations

import dataclasses
import importlib
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from offsetscope import config

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "deploy" / "databricks"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
VAR = re.compile(r"\$\{var\.([A-Za-z_][A-Za-z0-9_]*)\}")
TABLE_REF = re.compile(r"\$\{var\.catalog\}\.\$\{var\.schema\}\.([A-Za-z_][A-Za-z0-9_]*)")
HEALTH_METRICS = {
    "STREAMING_BACKLOG_BYTES",
    "STREAMING_BACKLOG_RECORDS",
    "STREAMING_BACKLOG_SECONDS",
    "STREAMING_BACKLOG_FILES",
    "RUN_DURATION_SECONDS",
}


def _load(path: Path) -> dict[str, Any]:
    data = YAML(typ="safe").load(path.read_text())
    assert isinstance(data, dict), path
    return data


def bundle() -> tuple[dict[str, Any], dict[str, Path]]:
    """The bundle's documents merged the way the CLI merges ``include``, and the file each
    resource was defined in (relative paths in a resource are relative to its file)."""
    root = _load(BUNDLE / "databricks.yml")
    merged = dict(root)
    resources: dict[str, dict[str, Any]] = {}
    origin: dict[str, Path] = {}
    files = sorted(p for pattern in root["include"] for p in BUNDLE.glob(pattern))
    assert files, "the bundle includes resource files"
    for path in files:
        for kind, items in _load(path).get("resources", {}).items():
            for key, value in items.items():
                assert key not in resources.setdefault(kind, {}), f"{kind}.{key} defined twice"
                resources[kind][key] = value
                origin[f"{kind}.{key}"] = path
    merged["resources"] = resources
    return merged, origin


BUNDLE_DOC, ORIGIN = bundle()
JOBS: dict[str, Any] = BUNDLE_DOC["resources"]["jobs"]
TARGETS: list[str] = sorted(BUNDLE_DOC["targets"])


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


def resolve(text: str, target: str) -> str:
    """``${bundle.target}`` and ``${var.*}`` as the bundle resolves them for ``target``."""
    values = {k: v.get("default") for k, v in BUNDLE_DOC["variables"].items()}
    values.update((BUNDLE_DOC["targets"][target] or {}).get("variables", {}))
    text = text.replace("${bundle.target}", target)
    return VAR.sub(lambda m: str(values[m.group(1)]), text)


def strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value)


def test_the_bundle_has_dev_and_prod_targets_and_both_jobs() -> None:
    assert TARGETS == ["dev", "prod"]
    assert BUNDLE_DOC["targets"]["dev"]["mode"] == "development"
    assert BUNDLE_DOC["targets"]["prod"]["mode"] == "production"
    assert sorted(t["python_wheel_task"]["entry_point"] for _, t in wheel_tasks()) == [
        "offsetscope-alerts",
        "offsetscope-ingest",
    ]


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


@pytest.mark.parametrize("target", TARGETS)
def test_every_parameter_is_accepted_by_the_jobs_parser(
    target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # With an empty conf folder, a job gets past its argument parser and stops at loading
    # the configuration (exit 1, the error on one line): that proves the parser accepted every
    # parameter (argparse exits with status 2 otherwise, as the last check shows).
    monkeypatch.setenv("OFFSETSCOPE_CONF_DIR", str(tmp_path))
    for _, task in wheel_tasks():
        wheel_task = task["python_wheel_task"]
        params = [resolve(p, target) for p in wheel_task["parameters"]]
        main = job_module(wheel_task["entry_point"]).main
        assert main(params) == 1
        assert re.search(r"base\.toml does not exist", capsys.readouterr().err)
        with pytest.raises(SystemExit) as bad:
            main([*params, "--catalog", "x"])
        assert bad.value.code == 2


@pytest.mark.parametrize("target", TARGETS)
def test_each_target_has_a_configuration_matching_the_bundle_variables(target: str) -> None:
    cfg = config.load(target)
    assert resolve("${var.catalog}", target) == cfg.storage.catalog
    assert resolve("${var.schema}", target) == cfg.storage.schema
    assert cfg.spark.jars_dir == "", "the runtime brings Delta and the Kafka source"
    assert cfg.sources.kind == "kafka"
    # The ingest job runs continuously, the alerts job on a schedule, each until it stops.
    assert "continuous" in JOBS["offsetscope_ingest"]
    assert cfg.pipeline.trigger == "processing_time"
    assert "schedule" in JOBS["offsetscope_alerts"]
    assert cfg.alerts.trigger == "available_now"


@pytest.mark.parametrize("target", TARGETS)
def test_secret_references_of_a_target_are_provided_by_its_clusters(target: str) -> None:
    cfg = config.load(target)
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
    for key, job in JOBS.items():
        for cluster in job["job_clusters"]:
            env = cluster["new_cluster"].get("spark_env_vars", {})
            for ref in refs:
                if ref.startswith("env:"):
                    assert ref.removeprefix("env:") in env, f"{key}: {ref}"


def test_jobs_find_the_synced_configuration() -> None:
    synced = [(BUNDLE / p).resolve() for p in BUNDLE_DOC["sync"]["paths"]]
    assert ROOT / "conf" in synced
    for job in JOBS.values():
        for cluster in job["job_clusters"]:
            env = cluster["new_cluster"]["spark_env_vars"]
            assert env["OFFSETSCOPE_CONF_DIR"] == "${workspace.file_path}/conf"


def test_health_rules_and_notifications() -> None:
    for key, job in JOBS.items():
        assert not ("continuous" in job and "schedule" in job), key
        assert job["max_concurrent_runs"] == 1
        rules = job["health"]["rules"]
        assert rules
        assert {r["metric"] for r in rules} <= HEALTH_METRICS
        assert all(r["op"] == "GREATER_THAN" and r["value"] > 0 for r in rules)
        assert job["email_notifications"]["on_failure"] == ["${var.alert_email}"]
        assert job["webhook_notifications"]["on_failure"] == [
            {"id": "${var.notification_destination_id}"}
        ]
    ingest = JOBS["offsetscope_ingest"]
    assert {r["metric"] for r in ingest["health"]["rules"]} >= {"STREAMING_BACKLOG_SECONDS"}
    assert "on_streaming_backlog_exceeded" in ingest["email_notifications"]


def test_sql_alerts_read_tables_the_configuration_names() -> None:
    alerts = BUNDLE_DOC["resources"]["alerts"]
    assert len(alerts) >= 3
    for target in TARGETS:
        names = set(dataclasses.asdict(config.load(target).tables).values())
        for key, alert in alerts.items():
            tables = TABLE_REF.findall(alert["query_text"])
            assert tables, key
            assert set(tables) <= names, key
            source = alert["evaluation"]["source"]["name"]
            assert re.search(rf"\bAS {source}\b", alert["query_text"]), key
            assert alert["warehouse_id"] == "${var.warehouse_id}"
            assert alert["schedule"]["quartz_cron_schedule"]


def test_every_variable_is_declared_and_used() -> None:
    declared = set(BUNDLE_DOC["variables"])
    used = {m for s in strings(BUNDLE_DOC) for m in VAR.findall(s)}
    assert used == declared
    for target in TARGETS:
        overrides = (BUNDLE_DOC["targets"][target] or {}).get("variables", {})
        assert set(overrides) <= declared
