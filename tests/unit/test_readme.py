"""The README's decode example runs and prints what the README says."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from offsetscope.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_decode_record_example(capsys: pytest.CaptureFixture[str]) -> None:
    text = README.read_text()
    match = re.search(
        r"\$ \.venv/bin/offsetscope (decode record [^\n]*\\\n[^\n]*)\n([^\n]+)\n", text
    )
    assert match, "the README lost its decode record example"
    argv = shlex.split(match.group(1).replace("\\\n", " "))
    assert main(argv) == 0
    assert capsys.readouterr().out.strip() == match.group(2).strip()


def _listed(block: str) -> set[str]:
    """The package's entries a layout block names: ``name/`` folders and ``name.py`` files."""
    names: set[str] = set()
    for line in block.splitlines():
        if line.startswith("  ") and not line.startswith("   "):
            first = line.split("  ")[1] if line.startswith("  ") else ""
            names |= {n.strip(" ,") for n in re.findall(r"[a-z_]+(?:/|\.py)", first)}
    return names


def test_readme_layout_is_the_tree() -> None:
    block = README.read_text().split("## Layout", 1)[1].split("```")[1]
    package = README.parent / "lib" / "offsetscope"
    on_disk = {
        f"{p.name}/" if p.is_dir() else p.name
        for p in package.iterdir()
        if p.name not in ("__init__.py", "__pycache__", "py.typed")
    }
    assert _listed(block) == on_disk


def test_design_doc_names_every_package() -> None:
    design = (README.parent / "docs" / "design.md").read_text()
    package = README.parent / "lib" / "offsetscope"
    for p in package.iterdir():
        if p.is_dir() and p.name != "__pycache__":
            assert f"{p.name}/" in design, p.name
        elif p.suffix == ".py" and p.name != "__init__.py":
            assert p.name in design, p.name
