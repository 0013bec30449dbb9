"""LeaveGroup: single and batch, by instance id, pending members, the group becoming Empty."""

from __future__ import annotations

from offsetscope.protocol.states import ClassicGroupState as S
from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.group import events as ev
from offsetscope.sim.coordinator.group.messages import LeaveGroupMemberResponse, MemberIdentity
from offsetscope.sim.coordinator.group.testing import GroupTestContext

G = "shipping"


def test_a_member_leaving_a_stable_group_starts_a_rebalance() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a", "b"])
    response = ctx.leave(G, MemberIdentity(formed["b"], reason="shutting down"))
    assert response.error is Errors.NONE
    assert response.members == (LeaveGroupMemberResponse(formed["b"], None),)
    group = ctx.group(G)
    assert not group.has_member(formed["b"])
    assert group.state is S.PREPARING_REBALANCE
    left = [e for e in ctx.events if isinstance(e, ev.MemberLeft)]
    assert [(e.member_id, e.cause, e.reason) for e in left] == [
        (formed["b"], ev.LeaveCause.LEFT, "shutting down")
    ]


def test_the_last_member_leaving_empties_the_group_with_a_new_generation_record() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a"])
    ctx.take_records()
    ctx.advance(1_000)
    ctx.leave(G, MemberIdentity(formed["a"]))
    assert ctx.group(G).state is S.EMPTY
    (record,) = ctx.take_records()
    assert record.key == {"group": G}
    assert record.value == {
        "protocolType": "consumer",
        "generation": formed.generation + 1,
        "protocol": None,
        "leader": None,
        "currentStateTimestamp": ctx.now,
        "members": [],
    }


def test_batch_leave_reports_each_member_and_rebalances_once() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a", "b", "c"], static=True)
    response = ctx.leave(
        G,
        MemberIdentity(formed["a"], "a"),
        MemberIdentity("", "b"),  # administrative removal by instance id
        MemberIdentity("ghost"),
        MemberIdentity("", "nobody"),
        MemberIdentity(formed["c"], "not-c"),
    )
    assert [(r.member_id, r.group_instance_id, r.error) for r in response.members] == [
        (formed["a"], "a", Errors.NONE),
        ("", "b", Errors.NONE),
        ("ghost", None, Errors.UNKNOWN_MEMBER_ID),
        ("", "nobody", Errors.UNKNOWN_MEMBER_ID),
        (formed["c"], "not-c", Errors.UNKNOWN_MEMBER_ID),
    ]
    group = ctx.group(G)
    assert set(group.members) == {formed["c"]}
    assert group.state is S.PREPARING_REBALANCE
    transitions = [e for e in ctx.events if isinstance(e, ev.GroupStateChanged)]
    assert [t.state for t in transitions][-1] == "PreparingRebalance"
    assert sum(1 for t in transitions if t.state == "PreparingRebalance") == 2  # initial + this


def test_leave_with_a_fenced_instance_id_is_refused() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a"], static=True)
    response = ctx.leave(G, MemberIdentity("a-stale", "a"))
    assert response.members[0].error is Errors.FENCED_INSTANCE_ID
    assert ctx.group(G).has_member(formed["a"])


def test_a_pending_member_can_leave_before_rejoining() -> None:
    ctx = GroupTestContext.builder().build()
    first = ctx.join(G).result()
    assert first.error is Errors.MEMBER_ID_REQUIRED
    response = ctx.leave(G, MemberIdentity(first.member_id))
    assert response.members[0].error is Errors.NONE
    assert not ctx.group(G).is_pending_member(first.member_id)
    assert ctx.runtime.timer_deadline(G, f"heartbeat-{G}-{first.member_id}") is None


def test_leaving_while_preparing_rebalance_completes_the_join_phase() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a", "b", "c"])
    rejoin_a = ctx.join(G, member_id=formed["a"])
    rejoin_b = ctx.join(G, member_id=formed["b"])
    assert ctx.group(G).state is S.PREPARING_REBALANCE
    assert not rejoin_a.done
    # b leaves although it rejoined: its parked join is answered; c leaves: everyone left has
    # rejoined, so the join phase completes with a alone.
    ctx.leave(G, MemberIdentity(formed["b"]), MemberIdentity(formed["c"]))
    assert rejoin_b.result().error is Errors.UNKNOWN_MEMBER_ID
    response = rejoin_a.result()
    assert response.generation_id == formed.generation + 1
    assert [m.member_id for m in response.members] == [formed["a"]]


def test_leave_of_a_missing_group_is_unknown_member() -> None:
    ctx = GroupTestContext.builder().build()
    assert ctx.leave(G, MemberIdentity("m")).error is Errors.UNKNOWN_MEMBER_ID
    assert ctx.leave("", MemberIdentity("m")).error is Errors.INVALID_GROUP_ID
