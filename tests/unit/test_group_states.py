"""The classic group state machine: the transition table, exhaustively, and Java iteration order."""

from __future__ import annotations

import itertools

import pytest

from offsetscope.protocol.states import (
    CLASSIC_GROUP_PREVIOUS,
    ClassicGroupState,
    IllegalStateTransition,
    check_transition,
)
from offsetscope.sim.coordinator.group import changes as ch
from offsetscope.sim.coordinator.group.events import LeaveCause
from offsetscope.sim.coordinator.group.group import ClassicGroup
from offsetscope.sim.coordinator.group.messages import Protocol
from offsetscope.sim.coordinator.java import grown_capacity, hashmap_order, java_string_hash

S = ClassicGroupState

# Kafka's ClassicGroupState static block, written out edge by edge.
LEGAL = {
    (S.PREPARING_REBALANCE, S.EMPTY),
    (S.STABLE, S.PREPARING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.PREPARING_REBALANCE),
    (S.EMPTY, S.PREPARING_REBALANCE),
    (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.STABLE),
    (S.STABLE, S.DEAD),
    (S.PREPARING_REBALANCE, S.DEAD),
    (S.COMPLETING_REBALANCE, S.DEAD),
    (S.EMPTY, S.DEAD),
    (S.DEAD, S.DEAD),
}


@pytest.mark.parametrize(("current", "target"), list(itertools.product(S, S)))
def test_every_transition_is_legal_exactly_when_the_table_says(
    current: ClassicGroupState, target: ClassicGroupState
) -> None:
    group = ClassicGroup("g", 0)
    group.state = current
    change = ch.StateTransitioned("g", target, 1234, "test")
    if (current, target) in LEGAL:
        group.apply(change)
        assert group.state is target
        assert group.previous_state is current
        assert group.current_state_timestamp == 1234
    else:
        with pytest.raises(IllegalStateTransition) as info:
            group.apply(change)
        err = info.value
        assert (err.entity_id, err.current, err.target) == ("g", current, target)
        assert err.allowed == CLASSIC_GROUP_PREVIOUS[target]
        assert str(current) in str(err)
        assert str(target) in str(err)
        # A refused transition changes nothing.
        assert group.state is current
        assert group.current_state_timestamp == 0


def test_table_has_every_state_and_only_kafkas_edges() -> None:
    assert set(CLASSIC_GROUP_PREVIOUS) == set(S)
    edges = {(prev, target) for target, prevs in CLASSIC_GROUP_PREVIOUS.items() for prev in prevs}
    assert edges == LEGAL


def test_check_transition_names_group_current_target_and_allowed() -> None:
    with pytest.raises(
        IllegalStateTransition,
        match=r"group 'orders' cannot move from Empty to Stable "
        r"\(allowed previous states: CompletingRebalance\)",
    ):
        check_transition("orders", S.EMPTY, S.STABLE)


@pytest.mark.parametrize("state", list(S))
def test_can_rebalance_from_stable_completing_and_empty_only(state: ClassicGroupState) -> None:
    assert state.can_rebalance == (state in {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY})


def test_state_names_are_kafkas_display_names() -> None:
    assert [s.value for s in S] == [
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "Dead",
    ]


# ----------------------------------------------------------------------------- Java order


def test_java_string_hash_matches_javas_values() -> None:
    # Values printed by Java 17's String.hashCode.
    assert java_string_hash("range") == 108280125
    assert java_string_hash("roundrobin") == -128548644
    assert java_string_hash("my-group") == -1906497762
    assert java_string_hash("") == 0


def test_hashmap_order_matches_java() -> None:
    # Orders printed by iterating a java.util.HashMap after the same insertions (Java 17).
    assert hashmap_order(["consumer-a", "consumer-b", "consumer-c", "consumer-d"]) == [
        "consumer-d",
        "consumer-c",
        "consumer-b",
        "consumer-a",
    ]
    assert hashmap_order(["roundrobin", "range"]) == ["range", "roundrobin"]
    assert hashmap_order(["sticky", "roundrobin"]) == ["sticky", "roundrobin"]


def test_capacity_grows_past_three_quarters_and_never_shrinks() -> None:
    assert grown_capacity(16, 12) == 16
    assert grown_capacity(16, 13) == 32
    assert grown_capacity(32, 1) == 32


def _member(member_id: str) -> ch.MemberSpec:
    return ch.MemberSpec(
        member_id, None, "c", "/h", 1000, 1000, "consumer", (Protocol("range", b""),)
    )


def test_members_iterate_in_java_order_and_the_next_leader_is_the_first_of_them() -> None:
    group = ClassicGroup("g", 0)
    for mid in ["consumer-a", "consumer-b", "consumer-c", "consumer-d"]:
        group.apply(ch.MemberAdded("g", _member(mid), None, 0))
    assert group.leader_id == "consumer-a"
    assert [m.member_id for m in group.ordered_members()] == [
        "consumer-d",
        "consumer-c",
        "consumer-b",
        "consumer-a",
    ]
    group.apply(ch.MemberRemoved("g", "consumer-a", LeaveCause.LEFT, "", 1))
    # Kafka: members.keySet().iterator().next() of the remaining members.
    assert group.leader_id == "consumer-d"
