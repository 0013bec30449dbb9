"""The dependency rule of docs/design.md holds, and `make lint` rejects an import that breaks it.

import-linter checks the contracts of ``pyproject.toml`` against a copy of the tree; the copy
comes first on the module path, so a file added to it is what the linter sees.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{tree / 'lib'}{os.pathsep}{tree}"}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", str(tree / "pyproject.toml")],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """The package, the jobs and the contracts, copied."""
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "lib" / "offsetscope", tmp_path / "lib" / "offsetscope", ignore=ignore)
    shutil.copytree(ROOT / "jobs", tmp_path / "jobs", ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_tree_keeps_every_contract(tree: Path) -> None:
    result = _lint(tree)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


# Each breaks one contract: (file, its content, the contract named as broken).
BREAKS = [
    (
        "pipelines/_breaks.py",
        "from offsetscope.sim import synthetic",
        "production imports neither the simulator nor the checks",
    ),
    (
        "alerts/_breaks.py",
        "from offsetscope.verify.harness import broker",
        "production imports neither the simulator nor the checks",
    ),
    (
        "quality/_breaks.py",
        "def later() -> None:\n    from offsetscope.pipelines import ingest",
        "production is layered",
    ),
    (
        "sim/_breaks.py",
        "from offsetscope.history import batch",
        "the simulator imports foundation and protocol only",
    ),
    ("history/_breaks.py", "import pyspark", "protocol and history run without Spark"),
]


def test_imports_against_the_rule_are_rejected(tree: Path) -> None:
    for where, line, _ in BREAKS:
        (tree / "lib" / "offsetscope" / where).write_text(f"{line}\n", encoding="utf-8")
    result = _lint(tree)
    assert result.returncode != 0
    broken = result.stdout.split("Broken contracts", 1)[1]
    for where, _, contract in BREAKS:
        assert contract in broken
        assert f"offsetscope.{where.removesuffix('.py').replace('/', '.')} " in broken, where
    assert "4 broken" in result.stdout
