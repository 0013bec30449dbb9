"""The Databricks bundle against the CLI's own rules, offline: its published JSON Schema (every
file as written, and each target resolved as the CLI resolves it), production mode's rules,
development mode's per-user copies, and the variables the README's deploy commands pass.

The schema is the Databricks CLI's ``bundle/schema/jsonschema.json`` of the release recorded in
``tests/fixtures/databricks/README.md``; the resolution is ``tests/support/databricks_bundle.py``.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from databricks_bundle import (
    BUNDLE,
    ROOT,
    BundleError,
    Resolved,
    User,
    documents,
    required_variables,
    resolve,
)
from jsonschema.exceptions import ValidationError

FIXTURES = ROOT / "tests" / "fixtures" / "databricks"
SCHEMA_FILE = FIXTURES / "bundle-jsonschema.json"
README = ROOT / "README.md"
SP = "6f1c3b8e-5a2d-4c1b-9e7f-0a1b2c3d4e5f"  # a service principal's application id
ALICE = User("alice.smith@example.com")
BOB = User("bob@example.com")
CI = User(SP, display_name="offsetscope-deployer", service_principal=True)


def _python_pattern(pattern: str) -> str:
    # The schema's patterns are Go/ECMA-262 regular expressions with Unicode property classes,
    # which Python's re lacks: \p{L} is a letter, \p{N} a digit, [\p{L}\p{N}] either.
    return (
        pattern.replace(r"[\p{L}\p{N}]", r"[^\W_]")
        .replace(r"\p{L}", r"[^\W\d_]")
        .replace(r"\p{N}", r"\d")
    )


def _pattern(
    validator: Any, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not re.search(_python_pattern(pattern), instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@cache
def validator() -> Any:
    schema = json.loads(SCHEMA_FILE.read_text())
    cls = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"pattern": _pattern})
    return cls(schema)


def problems(document: dict[str, Any]) -> list[str]:
    """Every error, with the errors of each alternative a ``oneOf`` tried (the schema allows an
    interpolation string beside every typed value, so the typed branch says what is wrong)."""

    def leaves(error: ValidationError) -> Iterator[str]:
        if error.context:
            for sub in error.context:
                yield from leaves(sub)
        else:
            where = ".".join(map(str, error.absolute_path)) or "<root>"
            yield f"{where}: {error.message[:300]}"

    return [leaf for error in validator().iter_errors(document) for leaf in leaves(error)]


def deploy_commands() -> dict[str, dict[str, str]]:
    """The README's ``databricks bundle deploy -t <target>`` commands: target -> --var values."""
    text = README.read_text().replace("\\\n", " ")
    out: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        if "databricks bundle deploy" not in line:
            continue
        words = shlex.split(line.split("databricks bundle deploy", 1)[1].split("#")[0])
        target = words[words.index("-t") + 1]
        values = [words[i + 1] for i, w in enumerate(words) if w == "--var"]
        out[target] = dict(v.split("=", 1) for v in values)
    return out


def resolved(target: str, user: User) -> Resolved:
    """``target`` with the README's ``--var`` values (prod's service principal: ``SP``)."""
    values = dict(deploy_commands()[target])
    if "jobs_principal" in values:
        values["jobs_principal"] = SP
    return resolve(target, user, values)


TARGETS = ["dev", "prod"]


# ----------------------------------------------------------------------------- the schema


def test_the_schema_is_the_recorded_release() -> None:
    digest = hashlib.sha256(SCHEMA_FILE.read_bytes()).hexdigest()
    notes = (FIXTURES / "README.md").read_text()
    assert digest in notes, "tests/fixtures/databricks/README.md records another file"
    assert "Databricks License" in (FIXTURES / "LICENSE").read_text()
    assert re.search(r"Databricks CLI \*\*v\d+\.\d+\.\d+\*\*", notes)


@pytest.mark.parametrize("path", sorted(documents()), ids=lambda p: p.name)
def test_every_file_as_written_is_valid(path: Path) -> None:
    assert problems(documents()[path]) == []


@pytest.mark.parametrize("target", TARGETS)
def test_each_target_resolved_is_valid(target: str) -> None:
    for user in (ALICE, CI):
        result = resolved(target, user)
        assert problems(result.config) == [], f"{target} deployed by {user.user_name}"


def test_the_schema_catches_what_the_cli_would_refuse() -> None:
    config = resolved("prod", CI).config
    config["resources"]["jobs"]["offsetscope"]["continous"] = {}
    config["resources"]["schemas"]["offsetscope"]["grants"][0]["privileges"] = ["SELECTT"]
    config["resources"]["volumes"]["checkpoints"]["volume_type"] = "LOCAL"
    found = "\n".join(problems(config))
    assert "continous" in found
    assert "SELECTT" in found
    assert "LOCAL" in found


# ----------------------------------------------------------------------------- production mode


def test_production_has_one_copy_run_by_a_service_principal() -> None:
    # validate_target_mode.go: production mode must set workspace.root_path explicitly (a
    # run_as or a service principal deploying lowers it to a recommendation; both are set here).
    root = documents()[BUNDLE / "databricks.yml"]
    prod = root["targets"]["prod"]
    assert prod["mode"] == "production"
    assert prod["workspace"]["root_path"], "production mode needs an explicit root_path"
    assert set(prod["run_as"]) == {"service_principal_name"}, "run as a service principal"
    for user in (ALICE, CI):
        result = resolved("prod", user)
        assert result.config["workspace"]["root_path"] == (
            f"/Workspace/Users/{SP}/.bundle/offsetscope/prod"
        ), "the same single copy whoever deploys"
        assert result.config["run_as"] == {"service_principal_name": SP}
    # A shared root would need CAN_MANAGE for all users (permissions/validate.go).
    assert not prod["workspace"]["root_path"].startswith("/Workspace/Shared")
    assert not documents()[BUNDLE / "databricks.yml"].get("resources", {}).get("pipelines")


def test_production_runs_the_job_and_the_sql_alerts() -> None:
    result = resolved("prod", CI)
    job = result.resources["jobs"]["offsetscope"]
    assert job["continuous"]["pause_status"] == "UNPAUSED"
    assert job["name"] == "offsetscope-prod"
    maintain = result.resources["jobs"]["offsetscope_maintain"]
    assert maintain["schedule"]["pause_status"] == "UNPAUSED"
    assert maintain["name"] == "offsetscope-maintain-prod"
    for alert in result.resources["alerts"].values():
        assert alert["schedule"]["pause_status"] == "UNPAUSED"
    assert result.resources["schemas"]["offsetscope"]["name"] == "offsetscope"
    assert result.volume_paths["checkpoints"] == "/Volumes/ops/offsetscope/checkpoints"


def test_production_without_its_service_principal_is_refused() -> None:
    values = {k: v for k, v in deploy_commands()["prod"].items() if k != "jobs_principal"}
    with pytest.raises(BundleError, match="no value assigned to required variable jobs_principal"):
        resolve("prod", CI, values)


# ----------------------------------------------------------------------------- development mode


def test_development_paths_and_prefixes_name_the_user() -> None:
    # validate_target_mode.go: in development mode, workspace paths set explicitly must contain
    # the user name, a name_prefix must name the user, and presets must not unpause triggers.
    root = documents()[BUNDLE / "databricks.yml"]
    dev = root["targets"]["dev"]
    assert dev["mode"] == "development"
    presets = dev.get("presets", {})
    assert presets.get("trigger_pause_status") != "UNPAUSED"
    assert "name_prefix" not in presets or "${workspace.current_user" in presets["name_prefix"]
    result = resolved("dev", ALICE)
    for key in ("root_path", "file_path", "artifact_path", "state_path", "resource_path"):
        path = result.config["workspace"][key]
        assert ALICE.user_name in path or ALICE.short_name in path, key


def test_each_developer_gets_own_paused_job_schema_and_checkpoints() -> None:
    alice, bob = resolved("dev", ALICE), resolved("dev", BOB)
    a_job, b_job = (r.resources["jobs"]["offsetscope"] for r in (alice, bob))
    for r in (alice, bob):
        # The daily maintenance too: nothing of a developer's deploy runs until started.
        assert r.resources["jobs"]["offsetscope_maintain"]["schedule"]["pause_status"] == "PAUSED"
    assert a_job["name"] == "[dev alice_smith] offsetscope-dev"
    assert b_job["name"] == "[dev bob] offsetscope-dev"
    for job in (a_job, b_job):
        # Paused: a developer's deploy starts no continuous cluster.
        assert job["continuous"]["pause_status"] == "PAUSED"
        assert job["max_concurrent_runs"] == 1
    schemas = {r.resources["schemas"]["offsetscope"]["name"] for r in (alice, bob)}
    assert schemas == {"dev_alice_smith_offsetscope", "dev_bob_offsetscope"}
    assert (
        alice.volume_paths["checkpoints"] == "/Volumes/dev/dev_alice_smith_offsetscope/checkpoints"
    )
    envs = [job["job_clusters"][0]["new_cluster"]["spark_env_vars"] for job in (a_job, b_job)]
    assert envs[0]["OFFSETSCOPE__STORAGE__SCHEMA"] == "dev_alice_smith_offsetscope"
    assert envs[0]["OFFSETSCOPE__STORAGE__CHECKPOINT_DIR"] == alice.volume_paths["checkpoints"]
    assert envs[0]["OFFSETSCOPE_CONF_DIR"] != envs[1]["OFFSETSCOPE_CONF_DIR"]
    for result in (alice, bob):
        for alert in result.resources["alerts"].values():
            assert alert["schedule"]["pause_status"] == "PAUSED"
            assert result.resources["schemas"]["offsetscope"]["name"] in alert["query_text"]
        (dashboard,) = result.resources["dashboards"].values()
        assert dashboard["dataset_schema"] == result.resources["schemas"]["offsetscope"]["name"]


def test_no_resource_fixes_a_pause_status_the_targets_decide() -> None:
    for doc in documents().values():
        for job in doc.get("resources", {}).get("jobs", {}).values():
            for trigger in ("schedule", "continuous", "trigger"):
                assert "pause_status" not in job.get(trigger, {})
        for alert in doc.get("resources", {}).get("alerts", {}).values():
            assert "pause_status" not in alert.get("schedule", {})


# ----------------------------------------------------------------------------- grants, README


def test_the_schema_and_volume_are_resources_with_grants() -> None:
    result = resolved("prod", CI)
    schema = result.resources["schemas"]["offsetscope"]
    grants = {g["principal"]: set(g["privileges"]) for g in schema["grants"]}
    assert grants[SP] >= {"USE_SCHEMA", "CREATE_TABLE", "SELECT", "MODIFY"}
    assert grants["account users"] == {"USE_SCHEMA", "SELECT"}
    volume = result.resources["volumes"]["checkpoints"]
    assert {g["principal"]: set(g["privileges"]) for g in volume["grants"]} == {
        SP: {"READ_VOLUME", "WRITE_VOLUME"}
    }, "only the job touches the checkpoints"


@pytest.mark.parametrize("target", TARGETS)
def test_the_readme_deploy_command_passes_every_required_variable(target: str) -> None:
    commands = deploy_commands()
    assert target in commands, f"the README shows no deploy command for -t {target}"
    assert required_variables(target) <= set(commands[target])
    resolved(target, ALICE)  # and nothing else is missing
