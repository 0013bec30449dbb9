"""Injected time for the bundled coordinator and the simulated clients.

Kafka's coordinators read ``Time`` through an injected object (``MockTime`` in tests); ours do the
same so a scenario with a seed produces the same bytes on every run. Times are epoch milliseconds.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Current time in epoch milliseconds."""
        ...


class SystemClock:
    """Wall-clock time, for live use only."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class VirtualClock:
    """A clock that moves only when told to; the deterministic time of scenarios and tests."""

    __slots__ = ("_now",)

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> int:
        if ms < 0:
            raise ValueError(f"a clock cannot go back ({ms} ms)")
        self._now += ms
        return self._now

    def advance_to(self, at_ms: int) -> int:
        if at_ms < self._now:
            raise ValueError(f"a clock cannot go back (from {self._now} to {at_ms})")
        self._now = at_ms
        return self._now
