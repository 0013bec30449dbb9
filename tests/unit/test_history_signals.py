"""Alert inputs: rebalance windows, member churn, stuck rebalances, Burrow windows."""

from __future__ import annotations

import uuid

import pytest
from history_log import T0, Log, M

from offsetscope.history import LagIndex, fold_batch, fold_offsets
from offsetscope.history.groups import rebalances_in_window
from offsetscope.history.rows import EndOffsetSample
from offsetscope.history.signals import (
    CommitWindowEntry,
    burrow_status,
    commit_window,
    member_churn,
    rebalance_times,
    rebalances_between,
    stuck_rebalances,
)
from offsetscope.history.tables import materialize

G = "storm"
S = 1_000
MIN = 60 * S


def storm_log() -> Log:
    """Generations 1..10 a minute apart, then 14 after a gap (11..13 never stored)."""
    log = Log()
    for gen in range(1, 11):
        ts = T0 + gen * MIN
        log.group(G, gen, [M("a", [("orders", 0)]), M(f"x{gen}", [("orders", 1)])], ts,
                  cst=ts - S)  # fmt: skip
    log.group(G, 14, [M("a", [("orders", 0)])], T0 + 30 * MIN, cst=T0 + 30 * MIN - S)
    return log


def test_rebalances_in_windows_over_generation_rows() -> None:
    _, out = fold_batch(None, storm_log().events)
    rows = list(materialize(out.group_generations).values())
    times = rebalance_times(rows, G)
    assert len(times) == 14  # 10 + a jump of 4
    # (T0 + 5 min - 1 s, T0 + 10 min - 1 s]: generations 6..10
    assert rebalances_between(rows, G, T0 + 5 * MIN - S, T0 + 10 * MIN - S) == 5
    assert rebalances_in_window(times, T0 + 30 * MIN, 5 * MIN) == 4
    assert rebalances_in_window(times, T0 + 20 * MIN, 5 * MIN) == 0
    current = out.groups_current[-1]
    assert current.rebalances_1h == 14
    assert rebalances_in_window(current.rebalance_times, T0 + 89 * MIN, 60 * MIN) == 4


def test_rebalance_times_are_pruned_to_24_hours_in_the_state() -> None:
    log = storm_log()
    log.group(G, 15, [M("a", [("orders", 0)])], T0 + 25 * 60 * MIN)
    states, out = fold_batch(None, log.events)
    assert states.groups[G].rebalance_times == (T0 + 25 * 60 * MIN,)
    assert out.groups_current[-1].rebalances_24h == 1


def test_member_churn_counts_joins_leaves_and_cycling_instances() -> None:
    log = Log()
    log.group(G, 1, [M("a-1", instance_id="pod-a"), M("b")], T0 + MIN)
    log.group(G, 2, [M("a-2", instance_id="pod-a"), M("c")], T0 + 2 * MIN)
    log.group(G, 3, [M("a-3", instance_id="pod-a"), M("c")], T0 + 3 * MIN)
    _, out = fold_batch(None, log.events)
    sessions = list(materialize(out.member_sessions).values())
    churn = member_churn(sessions, G, T0 + MIN + S, T0 + 3 * MIN)
    assert churn.joined == ("a-2", "a-3", "c")
    assert churn.left == ("a-1", "a-2", "b")
    assert churn.cycling_instances == ("pod-a",)
    assert churn.distinct_member_ids == 5  # a-1, b, a-2, c, a-3 overlap the window
    assert churn.distinct_instance_ids == 1
    quiet = member_churn(sessions, G, T0 + 3 * MIN, T0 + 9 * MIN)
    assert (quiet.joined, quiet.left, quiet.cycling_instances) == ((), (), ())


def test_stuck_classic_rebalance_is_a_generation_that_never_stored() -> None:
    states, out = fold_batch(None, storm_log().events)
    rows = list(materialize(out.group_generations).values())
    (stuck,) = stuck_rebalances(rows, states.groups.values(), T0 + 40 * MIN)
    assert (stuck.group_id, stuck.generations, stuck.since, stuck.until) == (
        G,
        (11, 12, 13),
        T0 + 10 * MIN,
        T0 + 30 * MIN - S,
    )
    assert stuck_rebalances(rows, states.groups.values(), T0 + 20 * MIN) == []


def test_generation_superseded_within_the_rebalance_timeout_is_not_stuck() -> None:
    log = Log()
    log.group(G, 1, [M("a", [("orders", 0)])], T0)
    # generation 2 never stored, generation 3 completed 20 s later: a join superseded it
    log.group(G, 3, [M("a", [("orders", 0)]), M("b", [("orders", 1)])], T0 + 21 * S,
              cst=T0 + 20 * S)  # fmt: skip
    # generation 4 never stored, and 5 completed 6 minutes after 3: over the 5 min timeout
    log.group(G, 5, [M("a", [("orders", 0)])], T0 + 7 * MIN, cst=T0 + 21 * S + 6 * MIN)
    states, out = fold_batch(None, log.events)
    rows = list(materialize(out.group_generations).values())
    (stuck,) = stuck_rebalances(rows, states.groups.values(), T0 + 10 * MIN)
    assert (stuck.generations, stuck.since, stuck.until) == (
        (4,),
        T0 + 21 * S,
        T0 + 21 * S + 6 * MIN,
    )
    assert "300000 ms rebalance timeout" in stuck.reason


def test_kip848_group_not_converging_within_the_rebalance_timeout() -> None:
    topic = uuid.UUID(int=1)
    log = Log()
    log.member(G, "m1", T0)
    log.epoch(G, 1, T0)
    log.target(G, "m1", {topic: [0]}, T0)
    log.target_epoch(G, 1, T0)
    log.current(G, "m1", 0, {topic: []}, T0, state=1)  # never reaches the target
    states, out = fold_batch(None, log.events)
    rows = list(materialize(out.group_generations).values())
    groups = list(states.groups.values())
    assert groups[0].state == "Reconciling"
    assert stuck_rebalances(rows, groups, T0 + 30 * S) == []  # member timeout is 30 s
    (stuck,) = stuck_rebalances(rows, groups, T0 + 30 * S + 1)
    assert (stuck.kind, stuck.generations, stuck.since, stuck.until) == ("kip848", (1,), T0, None)


def _window(offsets: list[int], hwms: list[int]) -> tuple[CommitWindowEntry, ...]:
    log = Log()
    samples = []
    for i, (off, hwm) in enumerate(zip(offsets, hwms, strict=True)):
        log.commit(G, "orders", 0, off, T0 + i * MIN)
        samples.append(EndOffsetSample("orders", 0, 0, hwm, -1, T0 + i * MIN - S))
    _, rows = fold_offsets(None, log.events)
    return commit_window(LagIndex(rows, samples), G, "orders", 0, T0 + 20 * MIN, intervals=5)


def test_commit_window_keeps_the_last_intervals_with_lag_at_commit_time() -> None:
    window = _window([10, 20, 30, 40, 50, 60, 70], [15, 25, 35, 45, 55, 65, 75])
    assert [(e.offset, e.lag) for e in window] == [(30, 5), (40, 5), (50, 5), (60, 5), (70, 5)]


@pytest.mark.parametrize(
    ("offsets", "lags", "as_of", "status"),
    [
        ([10, 20, 30], [5, 0, 5], 3, "OK"),  # lag reached zero once
        ([10, 20, 15], [5, 5, 5], 3, "REWIND"),
        ([10, 20, 30], [5, 6, 7], 10, "STOP"),  # silent for longer than the window's span
        ([10, 10, 10], [5, 8, 9], 3, "STALL"),
        ([10, 20, 30], [5, 6, 7], 3, "WARN"),  # moving, but lag never decreases
        ([10, 20, 30], [9, 6, 7], 3, "OK"),
    ],
)
def test_burrow_status_rules(offsets: list[int], lags: list[int], as_of: int, status: str) -> None:
    window = tuple(
        CommitWindowEntry(o, T0 + i * MIN, lag)
        for i, (o, lag) in enumerate(zip(offsets, lags, strict=True))
    )
    assert burrow_status(window, T0 + as_of * MIN) == status


def test_burrow_status_of_an_empty_window_is_unknown() -> None:
    assert burrow_status((), T0) == "UNKNOWN"
