"""The Databricks bundle of ``deploy/databricks`` as the Databricks CLI computes it for a target,
offline: what ``databricks bundle validate -t <target>`` builds before it checks the result.

It follows the CLI's initialize phase (``bundle/phases/initialize.go`` and the mutators it runs,
in databricks/cli v1.13.0) for the parts of the configuration this bundle uses:

1. **Load**: ``databricks.yml`` and the files ``include`` names; resources are merged by type and
   key (a key defined twice is an error, as the CLI reports it).
2. **Target**: ``targets.<name>`` is merged over the root (``mode``, ``workspace``, ``run_as``,
   ``presets``, variable values, resources).
3. **Variables** (``SetVariables``): the target's value, else a ``--var`` value, else the default;
   a variable left without one is the CLI's "no value assigned to required variable" error.
4. **Workspace paths** (``DefineDefaultWorkspaceRoot``, ``DefineDefaultWorkspacePaths``):
   ``root_path`` defaults to ``/Workspace/Users/<user>/.bundle/<bundle>/<target>``, and
   ``file_path``, ``artifact_path``, ``state_path``, ``resource_path`` sit under it.
5. **Interpolation** of ``${bundle.*}``, ``${workspace.*}`` and ``${var.*}``
   (``ResolveVariableReferencesWithoutResources``).
6. **Target mode and presets** (``ApplyTargetMode``, ``ApplyPresets``): development mode's name
   prefix ``[dev <short name>] `` on job, alert and dashboard names and ``dev_<short name>_`` on
   schema names, its ``dev`` tag, four concurrent runs and paused triggers where a job leaves
   them unset; any target's ``trigger_pause_status`` preset likewise.
7. **Resource references**: ``${resources.schemas.<key>.name}`` and the computed
   ``${resources.volumes.<key>.volume_path}`` (``InitializeVolumePaths``).

:func:`resolve` returns the result in the shape of a configuration document (what the CLI's JSON
Schema describes); :class:`Resolved` also carries the mode and the volumes' paths.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "deploy" / "databricks"
REFERENCE = re.compile(r"\$\{([A-Za-z0-9_.\-\[\]]+)\}")


class BundleError(ValueError):
    """What the CLI would refuse before validating against its schema."""


@dataclass(frozen=True)
class User:
    """The identity the CLI deploys as (``workspace.current_user``)."""

    user_name: str
    display_name: str = ""
    service_principal: bool = False

    @property
    def short_name(self) -> str:
        # iamutil.GetShortUserName: a service principal's display name, else the user name's
        # local part, normalised.
        name = self.display_name if self.service_principal and self.display_name else self.user_name
        return normalize(name.partition("@")[0])


def normalize(name: str) -> str:
    """textutil.NormalizeString: lower case, letters and digits kept, the rest one ``_``."""
    mapped = "".join(c if c.isalnum() else "_" for c in name.lower())
    return re.sub(r"_+", "_", mapped).strip("_")


def _normalize_prefix(prefix: str) -> str:
    """``[dev alice] `` -> ``dev_alice_`` (apply_presets.go normalizePrefix)."""
    prefix = prefix.replace("[", "").strip(" ")
    suffix = "_" if prefix.endswith("]") else ""
    return normalize(prefix) + suffix


def load_yaml(path: Path) -> dict[str, Any]:
    data = YAML(typ="safe").load(path.read_text())
    assert isinstance(data, dict), path
    return data


@cache
def _documents() -> dict[Path, dict[str, Any]]:
    root = load_yaml(BUNDLE / "databricks.yml")
    files = sorted({p for pattern in root.get("include", []) for p in BUNDLE.glob(pattern)})
    if not files:
        raise BundleError("the bundle includes no resource files")
    return {BUNDLE / "databricks.yml": root, **{p: load_yaml(p) for p in files}}


def documents() -> dict[Path, dict[str, Any]]:
    """``databricks.yml`` and every file it includes, as written (a copy to change at will)."""
    return copy.deepcopy(_documents())


def loaded() -> tuple[dict[str, Any], dict[str, Path]]:
    """The root document with every included file's resources merged in, and the file that
    defines each resource (``jobs.offsetscope`` -> path)."""
    docs = documents()
    root = copy.deepcopy(docs[BUNDLE / "databricks.yml"])
    resources: dict[str, dict[str, Any]] = root.setdefault("resources", {})
    origin: dict[str, Path] = {}
    for path, doc in docs.items():
        if path == BUNDLE / "databricks.yml":
            continue
        if set(doc) - {"resources"}:
            raise BundleError(f"{path.name} sets more than resources: {sorted(doc)}")
        for kind, items in doc.get("resources", {}).items():
            for key, value in items.items():
                if key in resources.setdefault(kind, {}):
                    raise BundleError(f"resources.{kind}.{key} is defined twice")
                resources[kind][key] = value
                origin[f"{kind}.{key}"] = path
    return root, origin


def _merge(base: Any, overlay: Any) -> Any:
    if isinstance(base, dict) and isinstance(overlay, dict):
        out = dict(base)
        for key, value in overlay.items():
            out[key] = _merge(base.get(key), value) if key in base else value
        return out
    return overlay


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


def _substitute(node: Any, lookup: Mapping[str, str], prefixes: tuple[str, ...]) -> Any:
    """``node`` with every ``${path}`` whose path starts with one of ``prefixes`` replaced."""
    if isinstance(node, str):

        def one(match: re.Match[str]) -> str:
            path = match.group(1)
            if not path.startswith(prefixes):
                return match.group(0)
            if path not in lookup:
                raise BundleError(f"reference does not exist: ${{{path}}}")
            return str(lookup[path])

        return REFERENCE.sub(one, node)
    if isinstance(node, dict):
        return {k: _substitute(v, lookup, prefixes) for k, v in node.items()}
    if isinstance(node, list):
        return [_substitute(v, lookup, prefixes) for v in node]
    return node


@dataclass(frozen=True)
class Resolved:
    """A target as the CLI computes it."""

    target: str
    mode: str
    config: dict[str, Any]  # a configuration document: bundle, workspace, resources, ...
    variables: dict[str, str]
    volume_paths: dict[str, str]

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        result: dict[str, dict[str, Any]] = self.config["resources"]
        return result


def required_variables(target: str) -> set[str]:
    """Variables the target leaves without a value: each needs a ``--var``."""
    root, _ = loaded()
    overrides = (root["targets"][target] or {}).get("variables", {})
    return {
        name
        for name, spec in root.get("variables", {}).items()
        if name not in overrides and "default" not in (spec or {})
    }


def resolve(target: str, user: User, var: Mapping[str, str] | None = None) -> Resolved:
    """The configuration of ``target`` deployed by ``user`` with ``--var`` values ``var``.

    Raises:
        BundleError: an unknown target or variable, a variable without a value, a reference to
            something that does not exist.
    """
    root, _ = loaded()
    targets = root.pop("targets", {})
    if target not in targets:
        raise BundleError(f"{target}: no such target (known: {', '.join(sorted(targets))})")
    spec = dict(targets[target] or {})
    declared = root.pop("variables", {})
    root.pop("include", None)
    mode = spec.pop("mode", "")
    spec.pop("default", None)
    target_values = spec.pop("variables", {})
    for unknown in sorted(set(target_values) | set(var or {})):
        if unknown not in declared:
            raise BundleError(f"variable {unknown} is not declared")
    config = _merge(root, spec)

    # 3. variables: target value, --var, default
    values: dict[str, str] = {}
    for name, decl in declared.items():
        if name in target_values:
            values[name] = target_values[name]
        elif var and name in var:
            values[name] = var[name]
        elif "default" in (decl or {}):
            values[name] = decl["default"]
        else:
            raise BundleError(
                f"no value assigned to required variable {name}. Variables are usually assigned"
                ' in databricks.yml, and they can be overridden using "--var"'
            )

    # 4. workspace paths
    bundle_name = config["bundle"]["name"]
    workspace = dict(config.get("workspace") or {})
    current = {
        "workspace.current_user.userName": user.user_name,
        "workspace.current_user.short_name": user.short_name,
        "bundle.name": bundle_name,
        "bundle.target": target,
    }
    values = {
        k: _substitute(
            v,
            {**current, **{f"var.{n}": x for n, x in values.items()}},
            ("workspace.current_user.", "bundle.", "var."),
        )
        for k, v in values.items()
    }
    lookup = {**current, **{f"var.{n}": v for n, v in values.items()}}
    workspace = _substitute(workspace, lookup, ("workspace.current_user.", "bundle.", "var."))
    root_path = workspace.get("root_path") or f"~/.bundle/{bundle_name}/{target}"
    if root_path.startswith("~"):
        root_path = f"/Workspace/Users/{user.user_name}{root_path[1:]}"
    if not root_path.startswith("/Workspace"):
        root_path = "/Workspace" + root_path
    workspace["root_path"] = root_path
    for key, leaf in (
        ("file_path", "files"),
        ("artifact_path", "artifacts"),
        ("state_path", "state"),
        ("resource_path", "resources"),
    ):
        workspace.setdefault(key, f"{root_path}/{leaf}")
    config["workspace"] = workspace
    lookup.update({f"workspace.{k}": v for k, v in workspace.items()})

    # 5. ${bundle.*}, ${workspace.*}, ${var.*} everywhere
    config = _substitute(config, lookup, ("bundle.", "workspace.", "var."))

    # 6. target mode and presets
    presets = dict(config.get("presets") or {})
    if mode == "development":
        presets.setdefault("name_prefix", f"[dev {user.short_name}] ")
        presets.setdefault("tags", {}).setdefault("dev", user.short_name)
        presets.setdefault("jobs_max_concurrent_runs", 4)
        presets.setdefault("trigger_pause_status", "PAUSED")
    resources = config.get("resources", {})
    _apply_presets(resources, presets)
    if presets:
        config["presets"] = presets

    # 7. resource references
    volume_paths: dict[str, str] = {}
    refs = {
        f"resources.schemas.{k}.name": s["name"] for k, s in resources.get("schemas", {}).items()
    }
    for key, vol in resources.get("volumes", {}).items():
        parts = [
            _substitute(vol[f], refs, ("resources.",))
            for f in ("catalog_name", "schema_name", "name")
        ]
        volume_paths[key] = "/Volumes/" + "/".join(parts)
        refs[f"resources.volumes.{key}.volume_path"] = volume_paths[key]
    config = _substitute(config, refs, ("resources.",))
    left = sorted({m for s in _strings(config) for m in REFERENCE.findall(s)})
    if left:
        raise BundleError(f"references left unresolved: {left}")
    return Resolved(target, mode, config, {k: str(v) for k, v in values.items()}, volume_paths)


def _apply_presets(resources: dict[str, Any], presets: Mapping[str, Any]) -> None:
    prefix = presets.get("name_prefix", "")
    pause = presets.get("trigger_pause_status", "")
    tags = presets.get("tags", {})
    for job in resources.get("jobs", {}).values():
        job["name"] = prefix + job["name"]
        if tags:
            job.setdefault("tags", {})
            for key, value in tags.items():
                job["tags"].setdefault(key, value)
        if not job.get("max_concurrent_runs") and presets.get("jobs_max_concurrent_runs"):
            job["max_concurrent_runs"] = presets["jobs_max_concurrent_runs"]
        if pause:
            for trigger in ("schedule", "continuous", "trigger"):
                if trigger in job and not job[trigger].get("pause_status"):
                    job[trigger]["pause_status"] = pause
    for alert in resources.get("alerts", {}).values():
        alert["display_name"] = prefix + alert["display_name"]
        schedule = alert.get("schedule", {})
        if pause and schedule.get("quartz_cron_schedule") and not schedule.get("pause_status"):
            schedule["pause_status"] = pause
    for dashboard in resources.get("dashboards", {}).values():
        dashboard["display_name"] = prefix + dashboard["display_name"]
    for schema in resources.get("schemas", {}).values():
        schema["name"] = _normalize_prefix(prefix) + schema["name"] if prefix else schema["name"]
