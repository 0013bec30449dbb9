"""Static membership: replacement without a rebalance, fencing of the old member id."""

from __future__ import annotations

from offsetscope.protocol.states import ClassicGroupState as S
from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.group import events as ev
from offsetscope.sim.coordinator.group.testing import GroupTestContext, subscription

G = "inventory"


def test_static_member_rejoining_while_stable_is_replaced_without_a_rebalance() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a", "b"], static=True)
    old_b = formed["b"]
    ctx.take_records()
    ctx.take_events()
    ctx.advance(5_000)
    response = ctx.join(G, group_instance_id="b", client_id="b").result()
    new_b = response.member_id
    assert new_b != old_b
    assert new_b.startswith("b-")
    assert response.error is Errors.NONE
    assert response.generation_id == formed.generation
    assert response.leader == formed.leader
    assert response.skip_assignment is False
    group = ctx.group(G)
    assert group.state is S.STABLE
    assert group.generation_id == formed.generation
    assert group.static_member_id("b") == new_b
    assert group.member(new_b).assignment == b"b"  # the old member's assignment carries over
    (record,) = ctx.take_records()
    assert record.value is not None
    assert record.value["generation"] == formed.generation
    assert {m["memberId"] for m in record.value["members"]} == {formed["a"], new_b}
    events = ctx.take_events()
    assert [(type(e).__name__, getattr(e, "cause", None)) for e in events] == [
        ("MemberLeft", ev.LeaveCause.FENCED),
        ("MemberJoined", ev.JoinCause.STATIC_REPLACEMENT),
    ]


def test_the_replaced_member_id_is_fenced() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a", "b"], static=True)
    ctx.join(G, group_instance_id="b", client_id="b")
    old_b = formed["b"]
    assert ctx.heartbeat(G, formed.generation, old_b, "b").error is Errors.FENCED_INSTANCE_ID
    assert ctx.sync(G, formed.generation, old_b, group_instance_id="b").result().error is (
        Errors.FENCED_INSTANCE_ID
    )
    assert ctx.commit(
        G, {("foo", 0): 5}, generation_id=formed.generation, member_id=old_b, group_instance_id="b"
    ).errors() == {("foo", 0): Errors.FENCED_INSTANCE_ID}


def test_a_parked_request_of_the_old_member_id_is_answered_fenced() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a", "b"], static=True)
    # b's old id rejoins with new metadata (rebalance, parked), then b restarts with a new id.
    parked = ctx.join(
        G,
        member_id=formed["b"],
        group_instance_id="b",
        client_id="b",
        protocols=[("range", subscription("foo", "bar"))],
    )
    assert not parked.done
    ctx.join(G, group_instance_id="b", client_id="b")
    assert parked.result().error is Errors.FENCED_INSTANCE_ID
    assert parked.result().member_id == formed["b"]


def test_replaced_leader_gets_the_members_and_skips_the_assignment_on_v9() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a", "b"], static=True)
    assert formed.leader == formed["a"]
    response = ctx.join(G, group_instance_id="a", client_id="a").result()
    assert response.skip_assignment is True
    assert response.leader == response.member_id
    assert {m.member_id for m in response.members} == {response.member_id, formed["b"]}
    assert {m.group_instance_id for m in response.members} == {"a", "b"}


def test_replaced_leader_on_old_versions_is_told_the_previous_leader_id() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a", "b"], static=True)
    response = ctx.join(G, group_instance_id="a", client_id="a", api_version=8).result()
    assert response.skip_assignment is False
    assert response.members == ()
    assert response.leader == formed["a"]  # Kafka answers with the leader before replacement
    assert ctx.group(G).leader_id == response.member_id


def test_static_rejoin_that_changes_the_selected_protocol_rebalances() -> None:
    ctx = GroupTestContext.builder().build()
    sub = subscription("foo")
    formed = ctx.form_group(G, ["a"], static=True, protocols=[("range", sub), ("roundrobin", sub)])
    parked = ctx.join(G, group_instance_id="a", client_id="a", protocols=[("roundrobin", sub)])
    assert ctx.group(G).state is S.COMPLETING_REBALANCE  # sole member: join completes at once
    response = parked.result()
    assert response.generation_id == formed.generation + 1
    assert response.protocol_name == "roundrobin"


def test_static_rejoin_during_completing_rebalance_restarts_the_rebalance() -> None:
    ctx = GroupTestContext.builder().build()
    a = ctx.join(G, group_instance_id="a", client_id="a")
    b = ctx.join(G, group_instance_id="b", client_id="b")
    ctx.advance(6_000)
    assert ctx.group(G).state is S.COMPLETING_REBALANCE
    again = ctx.join(G, group_instance_id="b", client_id="b")
    assert a.done
    assert b.done
    assert ctx.group(G).state is S.PREPARING_REBALANCE
    assert not again.done


def test_static_members_are_kept_when_they_do_not_rejoin_in_time() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a", "b"], static=True, rebalance_timeout_ms=30_000)
    rejoin = ctx.join(
        G, member_id=formed["a"], group_instance_id="a", client_id="a", rebalance_timeout_ms=30_000
    )
    for _ in range(3):
        ctx.advance(10_000)
        ctx.heartbeat(G, formed.generation, formed["b"], "b")
    # Dynamic members would be removed here; the static member b stays in the new generation.
    response = rejoin.result()
    assert response.generation_id == formed.generation + 1
    assert {m.member_id for m in response.members} == {formed["a"], formed["b"]}
