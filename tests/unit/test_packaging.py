"""The wheel's dependencies: ranges that leave a platform's packages alone, the platform packages
in an extra, a lock inside every range, a venv holding exactly the lock, and a `make dist` that
needs Python only."""

from __future__ import annotations

import importlib.metadata
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
PLATFORM = {"pyspark", "delta-spark"}


def requirements(group: str | None = None) -> list[Requirement]:
    texts = PROJECT["dependencies"] if group is None else PROJECT["optional-dependencies"][group]
    return [Requirement(t) for t in texts]


def lock() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        name, _, version = line.partition("==")
        assert version, f"requirements.lock: {line!r} is not an exact pin"
        pins[canonicalize_name(name)] = Version(version)
    return pins


def test_runtime_dependencies_are_ranges_without_the_platform_packages() -> None:
    runtime = requirements()
    names = {canonicalize_name(r.name) for r in runtime}
    assert not names & PLATFORM, "a cluster's own Spark and Delta must not be replaced"
    for req in runtime:
        operators = {spec.operator for spec in req.specifier}
        assert "==" not in operators, f"{req} pins an exact version"
        assert ">=" in operators, f"{req} has no lower bound"
    for needed in ("requests", "urllib3", "jinja2", "pydantic"):
        assert needed in names


def test_the_platform_packages_are_the_spark_extra() -> None:
    spark = {canonicalize_name(r.name): r for r in requirements("spark")}
    assert set(spark) == PLATFORM
    assert Version("4.1.3") in spark["pyspark"].specifier
    assert Version("4.2.0") not in spark["pyspark"].specifier


def test_the_lock_is_sorted_as_pip_freeze_writes_it() -> None:
    lines = (ROOT / "requirements.lock").read_text().splitlines()
    assert lines == sorted(lines, key=str.lower)
    assert len(lines) == len(set(lines))


@pytest.mark.parametrize("group", [None, "spark", "dev"])
def test_every_locked_version_satisfies_the_ranges(group: str | None) -> None:
    pins = lock()
    for req in requirements(group):
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is not in requirements.lock"
        assert pins[name] in req.specifier, f"requirements.lock pins {name} {pins[name]}: {req}"


def test_the_venv_holds_exactly_the_lock() -> None:
    # `make install` installs offsetscope[spark,dev] constrained by the lock; nothing else may
    # creep in (an unpinned transitive dependency would make CI and laptops differ).
    installer = {"pip", "setuptools", "offsetscope"}
    installed = {
        canonicalize_name(d.metadata["Name"]): Version(d.version)
        for d in importlib.metadata.distributions()
    }
    pins = lock()
    for name in installer:
        installed.pop(name, None)
    assert installed == pins


def test_make_dist_plans_no_maven_and_no_project_venv() -> None:
    # -n -B: every command `make dist` would run from a fresh clone, none executed.
    plan = subprocess.run(
        ["make", "-n", "-B", "dist"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert "build --wheel" in plan
    assert "mvn" not in plan
    assert "build/jvm" not in plan
    assert ".venv/" not in plan, "the wheel does not need the development venv"
