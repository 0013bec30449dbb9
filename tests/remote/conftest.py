"""The slow checks against real remote components: each records its outcome line, printed at
the end of the run (``make test-s3`` -> ``s3: N tables checked, M differ``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

_OUTCOMES: list[str] = []


@pytest.fixture
def record_outcome() -> Callable[[str], None]:
    """Keep a one-line outcome for the end of the run."""
    return _OUTCOMES.append


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in _OUTCOMES:
        terminalreporter.write_line(line)
