"""The fold states' JSON form (``offsetscope.history.codec``): exact round trips, and the errors
of values or types outside the shapes it reads."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from offsetscope.history.codec import JsonState, dumps, from_jsonable, loads, to_jsonable


@dataclass(frozen=True, slots=True)
class Member:
    member_id: str
    instance_id: str | None
    partitions: tuple[int, ...]
    span: tuple[int, str]


@dataclass(frozen=True, slots=True)
class Group(JsonState):
    group_id: str
    generation: int
    stable: bool
    ratio: float
    members: tuple[Member, ...]
    leader: Member | None
    extra: Any


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    child: Node | None


@dataclass(frozen=True, slots=True)
class Odd:
    value: int | str | None


@dataclass(frozen=True, slots=True)
class Unreadable:
    value: set[int] | None


GROUP = Group(
    "g",
    3,
    True,
    0.5,
    (Member("m-1", None, (0, 1), (5, "a")), Member("m-2", "i-2", (), (7, "b"))),
    Member("m-1", None, (0, 1), (5, "a")),
    [1, "form"],
)


def test_a_state_survives_its_text_exactly() -> None:
    text = GROUP.to_json()
    assert Group.from_json(text) == GROUP
    assert Group.from_json(text).to_json() == text
    assert to_jsonable(GROUP)["members"][1] == {
        "member_id": "m-2",
        "instance_id": "i-2",
        "partitions": [],
        "span": [7, "b"],
    }


def test_integers_read_as_floats_where_a_float_is_declared() -> None:
    data = to_jsonable(GROUP) | {"ratio": 2}
    rebuilt = from_jsonable(Group, data)
    assert rebuilt.ratio == 2.0
    assert isinstance(rebuilt.ratio, float)


def test_a_dataclass_that_refers_to_itself_round_trips() -> None:
    tree = Node("a", Node("b", Node("c", None)))
    assert loads(Node, dumps(tree)) == tree


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"generation": True}, "expected int, got True"),
        ({"generation": "3"}, "expected int, got '3'"),
        ({"stable": 1}, "expected bool, got 1"),
        ({"group_id": None}, "expected str, got None"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused(change: dict[str, Any], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        from_jsonable(Group, to_jsonable(GROUP) | change)


def test_a_fixed_tuple_of_the_wrong_length_is_refused() -> None:
    member = to_jsonable(GROUP.leader) | {"span": [5]}
    with pytest.raises(TypeError, match="needs 2 items, got 1"):
        from_jsonable(Member, member)


def test_an_unknown_field_is_refused() -> None:
    with pytest.raises(KeyError):
        from_jsonable(Member, to_jsonable(GROUP.leader) | {"surplus": 1})


def test_unreadable_types_fail_when_a_value_reaches_them() -> None:
    assert from_jsonable(Odd, {"value": None}) == Odd(None)
    with pytest.raises(TypeError, match="only X \\| None unions"):
        from_jsonable(Odd, {"value": 1})
    assert from_jsonable(Unreadable, {"value": None}) == Unreadable(None)
    with pytest.raises(TypeError, match="unsupported type"):
        from_jsonable(Unreadable, {"value": [1]})


def test_values_outside_the_shapes_are_not_written() -> None:
    with pytest.raises(TypeError, match="cannot serialise set"):
        to_jsonable(Unreadable({1}))
    with pytest.raises(TypeError, match="cannot serialise set"):
        dumps(Unreadable({1}))


def test_the_text_is_that_of_the_jsonable_values() -> None:
    # dumps encodes the dataclasses itself: its text must stay that of to_jsonable's values,
    # or a state written before and after would differ for the same value.
    for value in (
        GROUP,
        Node("a", Node("b", None)),
        Odd(None),
        Group("g", 1, False, 1e-3, (), None, None),
    ):
        assert dumps(value) == json.dumps(to_jsonable(value), separators=(",", ":"), sort_keys=True)
