"""JoinGroup: member id required, initial delay, rebalance timeout, leader, protocol vote, limits."""

from __future__ import annotations

from offsetscope.protocol.states import ClassicGroupState as S
from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.group import events as ev
from offsetscope.sim.coordinator.group.messages import MemberIdentity
from offsetscope.sim.coordinator.group.testing import GroupTestContext, subscription

G = "orders"


def ctx_default() -> GroupTestContext:
    return GroupTestContext.builder().build()


def test_dynamic_member_without_id_gets_member_id_required_and_becomes_pending() -> None:
    ctx = ctx_default()
    response = ctx.join(G, client_id="app").result()
    assert response.error is Errors.MEMBER_ID_REQUIRED
    assert response.member_id.startswith("app-")
    assert len(response.member_id) == len("app-") + 36
    group = ctx.group(G)
    assert group.state is S.EMPTY
    assert group.is_pending_member(response.member_id)
    assert not group.has_member(response.member_id)
    # The pending member expires after its session timeout if it never rejoins.
    assert ctx.runtime.timer_deadline(G, f"heartbeat-{G}-{response.member_id}") == ctx.now + 45_000
    ctx.advance(45_000)
    assert not ctx.group(G).is_pending_member(response.member_id)


def test_join_v3_adds_a_dynamic_member_in_one_round() -> None:
    ctx = ctx_default()
    pending = ctx.join(G, client_id="app", api_version=3)
    assert not pending.done
    group = ctx.group(G)
    assert group.num_members == 1
    assert group.state is S.PREPARING_REBALANCE


def test_unknown_member_id_on_a_missing_group_is_rejected() -> None:
    ctx = ctx_default()
    response = ctx.join(G, member_id="ghost").result()
    assert response.error is Errors.UNKNOWN_MEMBER_ID
    assert response.member_id == "ghost"
    assert not ctx.has_group(G)
    assert ctx.records() == []


def test_invalid_group_id_and_session_timeout_are_checked_before_the_group() -> None:
    ctx = ctx_default()
    assert ctx.join("").result().error is Errors.INVALID_GROUP_ID
    assert ctx.join(G, session_timeout_ms=5_999).result().error is Errors.INVALID_SESSION_TIMEOUT
    assert (
        ctx.join(G, session_timeout_ms=1_800_001).result().error is Errors.INVALID_SESSION_TIMEOUT
    )
    assert not ctx.has_group(G)


def test_initial_rebalance_waits_the_delay_then_completes() -> None:
    ctx = ctx_default()
    member, pending = ctx.join_dynamic(G)
    assert ctx.group(G).state is S.PREPARING_REBALANCE
    ctx.advance(2_999)
    assert not pending.done
    ctx.advance(1)
    response = pending.result()
    assert response.error is Errors.NONE
    assert response.generation_id == 1
    assert response.leader == member
    assert response.protocol_type == "consumer"
    assert response.protocol_name == "range"
    assert [m.member_id for m in response.members] == [member]
    assert ctx.group(G).state is S.COMPLETING_REBALANCE


def test_initial_delay_is_extended_while_new_members_arrive() -> None:
    ctx = ctx_default()
    _, first = ctx.join_dynamic(G, client_id="a")
    ctx.advance(2_000)
    _, second = ctx.join_dynamic(G, client_id="b")
    ctx.advance(1_000)  # the first delay ends: a member was added, so wait another delay
    assert not first.done
    ctx.advance(2_000)
    _, third = ctx.join_dynamic(G, client_id="c")
    ctx.advance(1_000)  # second delay ends: again a member was added
    assert not first.done
    ctx.advance(3_000)  # third delay ends with nobody new
    assert first.done
    assert second.done
    assert third.done
    assert first.result().generation_id == 1
    assert len(first.result().members) == 3
    assert ctx.now == ctx.clock.now_ms()


def test_initial_delay_is_bounded_by_the_rebalance_timeout() -> None:
    ctx = ctx_default()
    # rebalance timeout 5000: delay 3000, then at most 2000 more however many members arrive.
    _, first = ctx.join_dynamic(G, client_id="a", rebalance_timeout_ms=5_000)
    ctx.advance(2_500)
    ctx.join_dynamic(G, client_id="b", rebalance_timeout_ms=5_000)
    ctx.advance(500)
    assert not first.done
    ctx.advance(1_500)
    ctx.join_dynamic(G, client_id="c", rebalance_timeout_ms=5_000)
    ctx.advance(500)
    assert first.done
    assert len(first.result().members) == 3


def test_followers_get_no_member_list_only_the_leader_does() -> None:
    ctx = ctx_default()
    a, pa = ctx.join_dynamic(G, client_id="a")
    b, pb = ctx.join_dynamic(G, client_id="b")
    ctx.advance(6_000)
    ra, rb = pa.result(), pb.result()
    assert ra.leader == rb.leader == a  # the first member to join leads
    assert {m.member_id for m in ra.members} == {a, b}
    assert rb.members == ()
    assert ra.generation_id == rb.generation_id == 1


def test_rebalance_timeout_removes_members_that_did_not_rejoin() -> None:
    ctx = ctx_default()
    formed = ctx.form_group(G, ["a", "b"], rebalance_timeout_ms=60_000)
    leader = formed.leader
    other = formed["b"] if leader == formed["a"] else formed["a"]
    ctx.take_events()
    # The leader rejoins: a rebalance starts; the other member only heartbeats.
    rejoin = ctx.join(G, member_id=leader, rebalance_timeout_ms=60_000)
    assert ctx.group(G).state is S.PREPARING_REBALANCE
    for _ in range(5):
        ctx.advance(10_000)
        hb = ctx.heartbeat(G, formed.generation, other)
        assert hb.error is Errors.REBALANCE_IN_PROGRESS
    assert not rejoin.done
    ctx.advance(10_000)
    response = rejoin.result()
    assert response.generation_id == formed.generation + 1
    assert [m.member_id for m in response.members] == [leader]
    assert not ctx.group(G).has_member(other)
    left = [e for e in ctx.events if isinstance(e, ev.MemberLeft)]
    assert [(e.member_id, e.cause) for e in left] == [(other, ev.LeaveCause.REBALANCE_TIMEOUT)]


def test_all_members_rejoining_completes_the_join_phase_immediately() -> None:
    ctx = ctx_default()
    formed = ctx.form_group(G, ["a", "b"])
    pa = ctx.join(G, member_id=formed["a"], protocols=[("range", subscription("foo", "bar"))])
    assert not pa.done
    pb = ctx.join(G, member_id=formed["b"])
    assert pa.done
    assert pb.done
    assert pa.result().generation_id == formed.generation + 1


def test_follower_rejoining_with_same_metadata_in_stable_gets_the_current_generation() -> None:
    ctx = ctx_default()
    formed = ctx.form_group(G, ["a", "b"])
    follower = formed["b"] if formed.leader == formed["a"] else formed["a"]
    response = ctx.join(G, member_id=follower).result()
    assert response.error is Errors.NONE
    assert response.generation_id == formed.generation
    assert response.leader == formed.leader
    assert response.members == ()
    assert ctx.group(G).state is S.STABLE


def test_follower_with_new_metadata_triggers_a_rebalance() -> None:
    ctx = ctx_default()
    formed = ctx.form_group(G, ["a", "b"])
    follower = formed["b"] if formed.leader == formed["a"] else formed["a"]
    pending = ctx.join(G, member_id=follower, protocols=[("range", subscription("bar"))])
    assert not pending.done
    assert ctx.group(G).state is S.PREPARING_REBALANCE


def test_protocol_with_most_votes_among_common_protocols_wins() -> None:
    ctx = ctx_default()
    sub = subscription("foo")
    both = [("roundrobin", sub), ("range", sub)]
    _, pa = ctx.join_dynamic(G, client_id="a", protocols=both)
    _, _pb = ctx.join_dynamic(G, client_id="b", protocols=both)
    _, _pc = ctx.join_dynamic(G, client_id="c", protocols=[("range", sub), ("roundrobin", sub)])
    ctx.advance(9_000)
    assert pa.result().protocol_name == "roundrobin"
    assert ctx.group(G).protocol_name == "roundrobin"


def test_only_protocols_every_member_supports_are_candidates() -> None:
    ctx = ctx_default()
    sub = subscription("foo")
    _, pa = ctx.join_dynamic(G, client_id="a", protocols=[("sticky", sub), ("range", sub)])
    _, _pb = ctx.join_dynamic(G, client_id="b", protocols=[("sticky", sub), ("range", sub)])
    _, _pc = ctx.join_dynamic(G, client_id="c", protocols=[("range", sub)])
    ctx.advance(9_000)
    assert pa.result().protocol_name == "range"


def test_a_tied_vote_goes_to_the_protocol_javas_hashmap_iterates_first() -> None:
    ctx = ctx_default()
    sub = subscription("foo")
    _, pa = ctx.join_dynamic(G, client_id="a", protocols=[("roundrobin", sub), ("range", sub)])
    _, _pb = ctx.join_dynamic(G, client_id="b", protocols=[("range", sub), ("roundrobin", sub)])
    ctx.advance(6_000)
    # One vote each; a java.util.HashMap iterates "range" before "roundrobin" (Java 17).
    assert pa.result().protocol_name == "range"


def test_inconsistent_protocol_type_or_protocols_are_rejected() -> None:
    ctx = ctx_default()
    ctx.form_group(G, ["a"])
    sub = subscription("foo")
    wrong_type = ctx.join(G, protocol_type="connect", protocols=[("range", sub)]).result()
    assert wrong_type.error is Errors.INCONSISTENT_GROUP_PROTOCOL
    assert wrong_type.member_id == ""
    no_common = ctx.join(G, protocols=[("sticky", sub)]).result()
    assert no_common.error is Errors.INCONSISTENT_GROUP_PROTOCOL


def test_an_empty_group_rejects_a_member_without_protocol_type() -> None:
    ctx = ctx_default()
    response = ctx.join(G, protocol_type="").result()
    assert response.error is Errors.INCONSISTENT_GROUP_PROTOCOL
    # Kafka 4.x still writes the brand-new group's empty record.
    assert [r.value for r in ctx.records()] == [
        {
            "protocolType": "",
            "generation": 0,
            "protocol": None,
            "leader": None,
            "currentStateTimestamp": ctx.now,
            "members": [],
        }
    ]


def test_group_max_size_rejects_new_members() -> None:
    ctx = GroupTestContext.builder().with_max_size(2).build()
    ctx.form_group(G, ["a", "b"])
    response = ctx.join(G, client_id="c").result()
    assert response.error is Errors.GROUP_MAX_SIZE_REACHED
    assert response.member_id == ""
    assert ctx.group(G).num_members == 2


def test_group_max_size_counts_awaiting_members_during_a_rebalance() -> None:
    ctx = GroupTestContext.builder().with_max_size(1).build()
    _, first = ctx.join_dynamic(G, client_id="a")
    # PreparingRebalance: one member already awaits, so even the first round is refused.
    second = ctx.join(G, client_id="b").result()
    assert second.error is Errors.GROUP_MAX_SIZE_REACHED
    ctx.advance(3_000)
    assert first.result().error is Errors.NONE


def test_last_rejoining_member_is_kicked_out_when_the_rebalance_is_full() -> None:
    ctx = GroupTestContext.builder().with_max_size(2).build()
    formed = ctx.form_group(G, ["a", "b"])
    ctx.join(G, member_id=formed["a"])  # rebalance; one awaiting member
    c_id, c_join = ctx.join_dynamic(G, client_id="c")  # fits: one awaiting < 2
    assert ctx.group(G).num_members_awaiting_join == 2
    late = ctx.join(G, member_id=formed["b"]).result()
    assert late.error is Errors.GROUP_MAX_SIZE_REACHED
    assert not ctx.group(G).has_member(formed["b"])
    left = [e for e in ctx.events if isinstance(e, ev.MemberLeft)]
    assert [(e.member_id, e.cause) for e in left] == [(formed["b"], ev.LeaveCause.GROUP_MAX_SIZE)]
    # Kafka does not re-check the join phase after the removal: it completes, with a and c,
    # when the rebalance timeout fires.
    assert not c_join.done
    ctx.advance(300_000)
    assert c_join.result().generation_id == formed.generation + 1
    assert set(ctx.group(G).members) == {formed["a"], c_id}


def test_empty_group_rejoin_with_old_member_id_is_unknown_member() -> None:
    ctx = ctx_default()
    formed = ctx.form_group(G, ["a"])
    ctx.leave(G, MemberIdentity(formed["a"]))
    assert ctx.group(G).state is S.EMPTY
    response = ctx.join(G, member_id=formed["a"]).result()
    assert response.error is Errors.UNKNOWN_MEMBER_ID


def test_new_member_join_expires_after_the_new_member_join_timeout() -> None:
    ctx = ctx_default()
    formed = ctx.form_group(G, ["a"])
    # A rebalance that never completes: "a" keeps heartbeating but never rejoins.
    _, parked = ctx.join_dynamic(G, client_id="b", rebalance_timeout_ms=600_000)
    assert ctx.group(G).state is S.PREPARING_REBALANCE
    for _ in range(29):
        ctx.advance(10_000)
        ctx.heartbeat(G, formed.generation, formed["a"])
    assert not parked.done
    ctx.advance(10_000)  # 300 s: the new member's join timeout
    response = parked.result()
    assert response.error is Errors.UNKNOWN_MEMBER_ID
    left = [e for e in ctx.events if isinstance(e, ev.MemberLeft)]
    assert [e.cause for e in left] == [ev.LeaveCause.JOIN_TIMEOUT]
