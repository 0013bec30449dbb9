"""Heartbeat: session expiry and the exact error of each situation."""

from __future__ import annotations

from offsetscope.protocol.states import ClassicGroupState as S
from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.group import events as ev
from offsetscope.sim.coordinator.group.messages import MemberIdentity
from offsetscope.sim.coordinator.group.testing import GroupTestContext

G = "billing"


def test_heartbeats_keep_a_member_alive_and_silence_expires_it() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a", "b"], session_timeout_ms=10_000)
    a, b = formed["a"], formed["b"]
    ctx.advance(9_000)
    assert ctx.heartbeat(G, formed.generation, a).error is Errors.NONE
    assert ctx.group(G).has_member(b)
    ctx.advance(1_000)  # b was silent for its whole session timeout
    assert ctx.heartbeat(G, formed.generation, a).error is Errors.REBALANCE_IN_PROGRESS
    group = ctx.group(G)
    assert group.has_member(a)
    assert not group.has_member(b)
    left = [e for e in ctx.events if isinstance(e, ev.MemberLeft)]
    assert [(e.member_id, e.cause) for e in left] == [(b, ev.LeaveCause.SESSION_TIMEOUT)]
    # b's departure started a rebalance; a learns it from its heartbeat.
    assert group.state is S.PREPARING_REBALANCE


def test_session_expires_exactly_at_the_session_timeout() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a"], session_timeout_ms=10_000)
    ctx.heartbeat(G, formed.generation, formed["a"])
    ctx.advance(9_999)
    assert ctx.group(G).has_member(formed["a"])
    ctx.advance(1)
    assert not ctx.group(G).has_member(formed["a"])
    assert ctx.group(G).state is S.EMPTY


def test_heartbeat_errors() -> None:
    ctx = GroupTestContext.builder().build()
    assert ctx.heartbeat(G, 1, "m").error is Errors.UNKNOWN_MEMBER_ID  # no group
    assert ctx.heartbeat("", 1, "m").error is Errors.INVALID_GROUP_ID
    formed = ctx.form_group(G, ["a", "b"], static=True)
    a = formed["a"]
    assert ctx.heartbeat(G, formed.generation, a, "a").error is Errors.NONE
    assert ctx.heartbeat(G, formed.generation, "nobody").error is Errors.UNKNOWN_MEMBER_ID
    assert ctx.heartbeat(G, formed.generation + 1, a).error is Errors.ILLEGAL_GENERATION
    assert ctx.heartbeat(G, formed.generation, "a-old", "a").error is Errors.FENCED_INSTANCE_ID
    assert ctx.heartbeat(G, formed.generation, a, "zzz").error is Errors.UNKNOWN_MEMBER_ID
    ctx.join(G, member_id=a, group_instance_id="a")  # the leader rejoins: rebalance
    assert ctx.heartbeat(G, formed.generation, formed["b"], "b").error is (
        Errors.REBALANCE_IN_PROGRESS
    )


def test_heartbeat_is_accepted_while_completing_rebalance() -> None:
    ctx = GroupTestContext.builder().build()
    a, pending = ctx.join_dynamic(G)
    ctx.advance(3_000)
    assert ctx.group(G).state is S.COMPLETING_REBALANCE
    assert ctx.heartbeat(G, pending.result().generation_id, a).error is Errors.NONE


def test_heartbeat_to_an_empty_group_is_unknown_member() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a"])
    ctx.leave(G, MemberIdentity(formed["a"]))
    assert ctx.group(G).state is S.EMPTY
    assert ctx.heartbeat(G, formed.generation + 1, formed["a"]).error is Errors.UNKNOWN_MEMBER_ID


def test_members_awaiting_a_rebalance_do_not_expire() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a", "b"], session_timeout_ms=10_000, rebalance_timeout_ms=60_000)
    # a rejoins (parked, awaiting join); b keeps heartbeating. a's session passes unnoticed.
    parked = ctx.join(
        G, member_id=formed["a"], session_timeout_ms=10_000, rebalance_timeout_ms=60_000
    )
    for _ in range(4):
        ctx.advance(9_000)
        ctx.heartbeat(G, formed.generation, formed["b"])
    assert ctx.group(G).has_member(formed["a"])
    assert not parked.done
