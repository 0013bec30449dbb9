"""The fidelity scenarios on the simulator side, and the comparison they feed (no broker).

``make fidelity`` runs the same scenarios on a real broker; here the simulator side runs alone,
must reach every waited-for state, and the comparison must see a planted difference.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from offsetscope.config import BrokerConfig
from offsetscope.verify.fidelity import (
    SCENARIOS,
    SimDriver,
    compare,
    group_facts,
    transaction_facts,
)
from offsetscope.verify.simlog import DecodedLogDir


def _sim(name: str, root: Path, seed: int = 0) -> tuple[DecodedLogDir, tuple[list[str], list[str]]]:
    driver = SimDriver(BrokerConfig(), seed=seed)
    names = SCENARIOS[name](driver, "t")
    return driver.finish(root), names


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_simulator_side_runs_and_agrees_with_itself(name: str, tmp_path: Path) -> None:
    first, names = _sim(name, tmp_path / "a")
    # Another seed: other member ids, the same facts (they are named by client id).
    second, again = _sim(name, tmp_path / "b", seed=7)
    assert names == again
    assert compare(first, second, names, again) == []
    groups, tids = names
    assert all(group_facts(first, g) for g in groups)
    assert all(transaction_facts(first, t) for t in tids)


def test_expected_facts_of_a_join_and_leave(tmp_path: Path) -> None:
    decoded, (groups, _) = _sim("join-leave-range", tmp_path)
    facts = group_facts(decoded, groups[0])
    topic = groups[0]
    assert facts[0] == ("empty", 0, "")  # the 4.x brand-new group record
    kinds = [f[0] for f in facts]
    assert kinds == ["empty", "generation", "generation", "generation", "empty", "deleted"]
    assert facts[2][3:] == (
        "range",
        2,
        "a",
        (("a", ((topic, 0), (topic, 1), (topic, 2))), ("b", ((topic, 3), (topic, 4), (topic, 5)))),
    )


def test_sticky_protocols_compare_by_shape(tmp_path: Path) -> None:
    decoded, (groups, _) = _sim("join-leave-cooperative-sticky", tmp_path)
    shapes = [f[6] for f in group_facts(decoded, groups[0]) if f[0] == "generation"]
    # Two-phase: the newcomer holds nothing until the owner revoked, then half.
    assert shapes == [(("a", 6),), (("a", 3), ("b", 0)), (("a", 3), ("b", 3)), (("a", 6),)]


def test_a_planted_difference_is_reported(tmp_path: Path) -> None:
    decoded, names = _sim("transactions", tmp_path / "a")
    other, _ = _sim("transactions", tmp_path / "b")
    tid = names[1][0]
    other.txn_states[tid] = other.txn_states[tid][:-3]
    group = names[0][0]
    first = other.group_metadata[group][1]
    other.group_metadata[group][1] = dataclasses.replace(first, protocol="roundrobin")
    problems = compare(decoded, other, names, names)
    assert any(p.startswith(f"transaction {tid}") for p in problems)
    assert any(p.startswith(f"group {group}") for p in problems)
