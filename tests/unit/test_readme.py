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
