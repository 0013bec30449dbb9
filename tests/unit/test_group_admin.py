"""ListGroups, DescribeGroups and DeleteGroups."""

from __future__ import annotations

from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.group import events as ev
from offsetscope.sim.coordinator.group.messages import (
    DescribedGroupMember,
    ListedGroup,
    MemberIdentity,
)
from offsetscope.sim.coordinator.group.testing import GroupTestContext, subscription


def test_list_groups_with_state_filter() -> None:
    ctx = GroupTestContext.builder().build()
    ctx.form_group("stable", ["a"])
    ctx.commit("simple", {("foo", 0): 1})
    ctx.join_dynamic("preparing")
    listed = sorted(ctx.runtime.list_groups(), key=lambda g: g.group_id)
    assert listed == [
        ListedGroup("preparing", "consumer", "PreparingRebalance"),
        ListedGroup("simple", "", "Empty"),
        ListedGroup("stable", "consumer", "Stable"),
    ]
    assert [g.group_id for g in ctx.runtime.list_groups(["  STABLE", "empty"])] in (
        ["stable", "simple"],
        ["simple", "stable"],
    )


def test_describe_a_stable_group_shows_member_metadata_and_assignment() -> None:
    ctx = GroupTestContext.builder().build()
    sub = subscription("foo")
    formed = ctx.form_group("g", ["a"], protocols=[("range", sub)])
    (described,) = ctx.runtime.describe_groups(["g"])
    assert described.group_state == "Stable"
    assert described.protocol_type == "consumer"
    assert described.protocol_data == "range"
    assert described.members == (
        DescribedGroupMember(formed["a"], None, "a", "/127.0.0.1", sub, b"a"),
    )


def test_describe_a_rebalancing_group_omits_metadata_and_a_missing_group_is_dead() -> None:
    ctx = GroupTestContext.builder().build()
    member, _ = ctx.join_dynamic("g")
    (described,) = ctx.runtime.describe_groups(["g"])
    assert described.group_state == "PreparingRebalance"
    assert described.protocol_data == ""
    assert [(m.member_id, m.member_metadata) for m in described.members] == [(member, b"")]
    (missing,) = ctx.runtime.describe_groups(["nope"])
    assert (missing.group_state, missing.error) == ("Dead", Errors.GROUP_ID_NOT_FOUND)
    (old,) = ctx.runtime.describe_groups(["nope"], api_version=5)
    assert (old.group_state, old.error) == ("Dead", Errors.NONE)


def test_delete_groups_errors_and_success() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group("busy", ["a"])
    ctx.commit("idle", {("foo", 0): 1})
    response = ctx.runtime.delete_groups(["busy", "missing", "idle", ""])
    assert response.errors() == {
        "busy": Errors.NON_EMPTY_GROUP,
        "missing": Errors.GROUP_ID_NOT_FOUND,
        "idle": Errors.NONE,
        "": Errors.INVALID_GROUP_ID,
    }
    assert [r.group_id for r in response.results] == ["busy", "missing", "idle", ""]
    assert not ctx.has_group("idle")
    assert ctx.fetch("idle", [("foo", 0)]).offsets()[("foo", 0)].committed_offset == -1
    deleted = [e for e in ctx.events if isinstance(e, ev.GroupDeleted)]
    assert [(e.group_id, e.cause) for e in deleted] == [("idle", ev.DeleteCause.DELETE_GROUPS)]
    ctx.leave("busy", MemberIdentity(formed["a"]))
    assert ctx.runtime.delete_groups(["busy"]).errors() == {"busy": Errors.NONE}


def test_a_deleted_group_can_be_created_again() -> None:
    ctx = GroupTestContext.builder().build()
    ctx.commit("g", {("foo", 0): 1})
    ctx.runtime.delete_groups(["g"])
    ctx.take_records()
    ctx.join("g")
    (record,) = ctx.take_records()
    assert record.value is not None
    assert record.value["generation"] == 0
