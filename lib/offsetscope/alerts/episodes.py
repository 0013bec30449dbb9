"""Episodes of a condition over time, found exactly from the times where it can change.

A windowed count such as "rebalances in ``(T - W, T]``" is a step function of ``T``: it changes
only when an event enters the window (at the event's time ``t``) or leaves it (at ``t + W``).
Evaluating the condition at exactly those change points, in order, therefore finds every
interval where it holds, with no sampling error and independently of when or how often the
alerts job runs::

    change points   t1    t2  t3      t1+W   t2+W t3+W
    condition       ──────████████████████████──────────
    episode               start=t2               end=t2+W (first point where it fails)

``end`` is ``None`` while the condition still holds at the last change point up to ``as_of``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Episode(Generic[V]):
    """One interval ``[start, end)`` in which the condition held."""

    start: int
    end: int | None  # first change point where it no longer held; None: it still holds
    peak: V  # the measurement with the highest score within the episode
    peak_at: int
    last: V  # the measurement at the episode's last change point


def change_points(times: Iterable[int], *windows: int) -> list[int]:
    """Every time at which a window of each length in ``windows`` gains or loses one of ``times``.

    With no window, the times themselves (conditions on point observations).
    """
    points = set()
    for t in times:
        points.add(t)
        for w in windows:
            points.add(t + w)
    return sorted(points)


def find_episodes(
    points: Iterable[int],
    measure: Callable[[int], V],
    holds: Callable[[V], bool],
    score: Callable[[V], float],
    *,
    since: int | None,
    as_of: int,
) -> list[Episode[V]]:
    """The episodes of a condition, evaluated at each change point up to ``as_of``.

    Points before ``since`` are evaluated too, so that an episode in progress at ``since`` keeps
    the start it had when it was first found; only episodes over by ``since`` are left out.

    Args:
        points: times at which the measurement can change (any order, duplicates allowed).
        measure: the measurement at a time (e.g. a windowed count and what it counted).
        holds: whether a measurement satisfies the alert condition.
        score: orders measurements to pick an episode's peak (first highest wins).
        since: leave out episodes that ended at or before this; ``None`` keeps all.
        as_of: only points up to this (inclusive): the evaluation time.

    Returns:
        Episodes in time order; only the last one can have ``end`` None.
    """
    out: list[Episode[V]] = []
    start: int | None = None
    peak: V | None = None
    peak_at = 0
    last: V | None = None
    for t in sorted(set(points)):
        if t > as_of:
            break
        value = measure(t)
        if holds(value):
            if start is None:
                start, peak, peak_at = t, value, t
            elif score(value) > score(peak):  # type: ignore[arg-type]
                peak, peak_at = value, t
            last = value
        elif start is not None:
            assert peak is not None
            assert last is not None
            if since is None or t > since:
                out.append(Episode(start, t, peak, peak_at, last))
            start = peak = last = None
    if start is not None:
        assert peak is not None
        assert last is not None
        out.append(Episode(start, None, peak, peak_at, last))
    return out
