"""Bounds the hostile corpus showed were missing: a corrupt GroupMetadata generation can jump by
up to 2^31, and each skipped generation used to become an entry of a list (the fold's rebalance
times, the signals' rebalance times, a stuck rebalance's generation numbers)."""

from __future__ import annotations

from history_log import T0, Log, M

from offsetscope.history import fold_batch
from offsetscope.history.groups import MAX_REBALANCE_TIMES, rebalances_in_window
from offsetscope.history.signals import (
    MAX_LISTED_GENERATIONS,
    rebalance_times,
    stuck_rebalances,
)
from offsetscope.history.tables import materialize

G = "hostile"
S = 1_000
MIN = 60 * S
INT32_MAX = 2**31 - 1


def jump_log(to_generation: int) -> Log:
    log = Log()
    log.group(G, 1, [M("a", [("orders", 0)])], T0)
    log.group(G, to_generation, [M("a", [("orders", 0)])], T0 + 10 * MIN, cst=T0 + 10 * MIN - S)
    return log


def test_a_generation_jump_above_the_bound_keeps_the_fold_bounded() -> None:
    jump = MAX_REBALANCE_TIMES * 5 // 2
    states, out = fold_batch(None, jump_log(1 + jump).events)
    state = states.groups[G]
    assert len(state.rebalance_times) == MAX_REBALANCE_TIMES
    (_, second) = sorted(materialize(out.group_generations).values(), key=lambda r: r.generation)
    assert second.rebalances == jump  # the row still says what the record claims
    assert state.current is not None
    assert state.current.generation == 1 + jump
    # The window counts saturate at the bound.
    assert rebalances_in_window(state.rebalance_times, T0 + 10 * MIN, 3_600_000) == (
        MAX_REBALANCE_TIMES
    )


def test_an_int32_generation_jump_folds_without_allocating_it() -> None:
    states, out = fold_batch(None, jump_log(INT32_MAX).events)
    assert len(states.groups[G].rebalance_times) == MAX_REBALANCE_TIMES
    rows = list(materialize(out.group_generations).values())
    times = rebalance_times(rows, G)
    assert len(times) <= 2 * MAX_REBALANCE_TIMES


def test_signals_rebalance_times_are_bounded_per_row() -> None:
    _, out = fold_batch(None, jump_log(1 + 3 * MAX_REBALANCE_TIMES).events)
    rows = list(materialize(out.group_generations).values())
    assert len(rebalance_times(rows, G)) == 1 + MAX_REBALANCE_TIMES


def test_a_stuck_rebalance_lists_a_bounded_number_of_generations() -> None:
    jump = 5 * MAX_LISTED_GENERATIONS
    states, out = fold_batch(None, jump_log(2 + jump).events)
    rows = list(materialize(out.group_generations).values())
    (stuck,) = stuck_rebalances(rows, states.groups.values(), T0 + 20 * MIN)
    assert stuck.generations == tuple(range(2, 2 + MAX_LISTED_GENERATIONS))
    assert f"and {jump - MAX_LISTED_GENERATIONS} more" in stuck.reason
    states, out = fold_batch(None, jump_log(INT32_MAX).events)
    rows = list(materialize(out.group_generations).values())
    (stuck,) = stuck_rebalances(rows, states.groups.values(), T0 + 20 * MIN)
    assert len(stuck.generations) == MAX_LISTED_GENERATIONS


def test_a_jump_from_a_negative_generation_saturates_at_int32() -> None:
    # Found by make corpus at 100,000 records: generation -2^31 then 2 made rebalances 2^31 + 2,
    # which the int column of group_generations cannot hold (the batch failed in Arrow).
    log = Log()
    log.group(G, -(2**31), [M("a", [("orders", 0)])], T0)
    log.group(G, 2, [M("a", [("orders", 0)])], T0 + MIN)
    _, out = fold_batch(None, log.events)
    rows = sorted(materialize(out.group_generations).values(), key=lambda r: r.generation)
    assert (rows[-1].generations_skipped, rows[-1].rebalances) == (INT32_MAX - 1, INT32_MAX)
    assert all(-(2**31) <= r.rebalances <= INT32_MAX for r in rows)
