"""The test folders and the markers agree, and tests import helpers, never other tests.

* ``tests/unit``: no JVM (no ``spark``, ``kafka`` or ``jvm`` marker), so ``make test-unit`` runs
  them all without one;
* ``tests/spark``: ``spark`` and not ``streaming``; ``tests/streaming``: ``streaming``;
* ``tests/kafka``: ``kafka``; ``tests/jvm``: ``jvm``;
* helpers live in ``tests/support`` (no ``test_*.py`` without a test), and no test module
  imports another test module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
JVM_MARKERS = {"spark", "kafka", "jvm"}
# folder -> (markers every module must carry, markers none may carry)
RULES: dict[str, tuple[set[str], set[str]]] = {
    "unit": (set(), JVM_MARKERS | {"streaming"}),
    "spark": ({"spark"}, {"streaming"}),
    "streaming": ({"streaming", "spark"}, set()),
    "kafka": ({"kafka"}, set()),
    "jvm": ({"jvm"}, set()),
}


def _markers(tree: ast.Module) -> set[str]:
    """Every ``pytest.mark.<name>`` the module names (module-wide or on a test)."""
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "mark"
    }


def _module_markers(tree: ast.Module) -> set[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            return _markers(ast.Module(body=[node], type_ignores=[]))
    return set()


def _test_modules() -> list[Path]:
    return sorted(TESTS.glob("*/test_*.py"))


@pytest.mark.parametrize("path", _test_modules(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_folder_and_markers_agree(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    folder = path.parent.name
    if folder not in RULES:
        return  # cluster/ and fuzz/ are whole make targets of their own (marked slow)
    required, forbidden = RULES[folder]
    module_wide = _module_markers(tree)
    assert required <= module_wide, f"{path.name} lacks {required - module_wide}"
    assert not (_markers(tree) & forbidden), f"{path.name} carries {_markers(tree) & forbidden}"


@pytest.mark.parametrize("path", _test_modules(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_test_module_has_tests_and_imports_no_other_test_module(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    assert any(n.startswith(("test_", "Test")) for n in names), f"{path.name} has no test"
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert not {m for m in imported if m.startswith("test_")}, imported
