"""SyncGroup: the leader's assignment is stored, followers wait, pending-sync expiry, errors."""

from __future__ import annotations

from offsetscope.protocol.states import ClassicGroupState as S
from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.group import events as ev
from offsetscope.sim.coordinator.group.testing import GroupTestContext, assignment

G = "payments"


def joined(ctx: GroupTestContext, clients: list[str]) -> tuple[int, str, dict[str, str]]:
    """Join ``clients`` and complete the join phase; returns (generation, leader, ids)."""
    pendings = {c: ctx.join_dynamic(G, client_id=c) for c in clients}
    ctx.advance(3_000 * (len(clients) + 1))
    ids = {c: mid for c, (mid, _) in pendings.items()}
    first = next(iter(pendings.values()))[1].result()
    return first.generation_id, first.leader, ids


def test_followers_wait_for_the_leader_then_get_their_assignment() -> None:
    ctx = GroupTestContext.builder().build()
    generation, leader, ids = joined(ctx, ["a", "b", "c"])
    followers = [m for m in ids.values() if m != leader]
    waiting = [ctx.sync(G, generation, f) for f in followers]
    assert not any(p.done for p in waiting)
    assert ctx.group(G).state is S.COMPLETING_REBALANCE
    given = {m: assignment({"foo": [i]}) for i, m in enumerate(ids.values())}
    mine = ctx.sync(G, generation, leader, given)
    assert ctx.group(G).state is S.STABLE
    for f, p in zip(followers, waiting, strict=True):
        response = p.result()
        assert response.error is Errors.NONE
        assert response.assignment == given[f]
        assert response.protocol_type == "consumer"
        assert response.protocol_name == "range"
    assert mine.result().assignment == given[leader]
    stored = [e for e in ctx.events if isinstance(e, ev.AssignmentStored)]
    assert len(stored) == 1
    assert dict(stored[0].assignments) == given


def test_members_the_leader_did_not_assign_get_an_empty_assignment() -> None:
    ctx = GroupTestContext.builder().build()
    generation, leader, ids = joined(ctx, ["a", "b"])
    follower = next(m for m in ids.values() if m != leader)
    ctx.sync(G, generation, leader, {leader: b"x", "not-a-member": b"y"})
    assert ctx.sync(G, generation, follower).result().assignment == b""
    record = ctx.records()[-1]
    assert record.value is not None
    members = {m["memberId"]: m["assignment"] for m in record.value["members"]}
    assert members == {leader: b"x", follower: b""}


def test_sync_in_stable_returns_the_stored_assignment() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a", "b"])
    again = ctx.sync(G, formed.generation, formed["b"]).result()
    assert again.error is Errors.NONE
    assert again.assignment == b"b"


def test_sync_errors() -> None:
    ctx = GroupTestContext.builder().build()
    assert ctx.sync(G, 0, "nobody").result().error is Errors.UNKNOWN_MEMBER_ID  # no group
    formed = ctx.form_group(G, ["a", "b"])
    a = formed["a"]
    assert ctx.sync(G, formed.generation, "nobody").result().error is Errors.UNKNOWN_MEMBER_ID
    assert ctx.sync(G, formed.generation + 1, a).result().error is Errors.ILLEGAL_GENERATION
    assert (
        ctx.sync(G, formed.generation, a, protocol_type="connect").result().error
        is Errors.INCONSISTENT_GROUP_PROTOCOL
    )
    assert (
        ctx.sync(G, formed.generation, a, protocol_name="roundrobin").result().error
        is Errors.INCONSISTENT_GROUP_PROTOCOL
    )
    assert (
        ctx.sync(G, formed.generation, a, protocol_type="consumer", protocol_name="range")
        .result()
        .error
        is Errors.NONE
    )
    ctx.join(G, member_id=formed["b"], protocols=[("range", b"\x00\x00\x00\x00\x00\x00")])
    assert ctx.group(G).state is S.PREPARING_REBALANCE
    assert ctx.sync(G, formed.generation, a).result().error is Errors.REBALANCE_IN_PROGRESS


def test_sync_of_an_empty_group_is_unknown_member() -> None:
    ctx = GroupTestContext.builder().build()
    ctx.commit(G, {("foo", 0): 1})  # a simple group: Empty
    assert ctx.sync(G, 0, "x").result().error is Errors.UNKNOWN_MEMBER_ID


def test_a_rebalance_during_completing_rebalance_answers_parked_syncs() -> None:
    ctx = GroupTestContext.builder().build()
    generation, leader, ids = joined(ctx, ["a", "b"])
    follower = next(m for m in ids.values() if m != leader)
    parked = ctx.sync(G, generation, follower)
    ctx.join(G, member_id=follower, protocols=[("range", b"\x00\x00\x00\x00\x00\x00")])
    response = parked.result()
    assert response.error is Errors.REBALANCE_IN_PROGRESS
    assert response.protocol_type is None
    assert response.protocol_name is None
    assert ctx.group(G).state is S.PREPARING_REBALANCE


def test_members_that_never_sync_are_removed_after_the_rebalance_timeout() -> None:
    ctx = GroupTestContext.builder().build()
    pa = ctx.join_dynamic(G, client_id="a", rebalance_timeout_ms=20_000, session_timeout_ms=60_000)
    pb = ctx.join_dynamic(G, client_id="b", rebalance_timeout_ms=20_000, session_timeout_ms=60_000)
    ctx.advance(6_000)
    generation = pa[1].result().generation_id
    leader = pa[1].result().leader
    follower = pb[0] if leader == pa[0] else pa[0]
    # Only the follower syncs; the leader never sends its assignment.
    parked = ctx.sync(G, generation, follower)
    ctx.advance(19_999)
    assert ctx.group(G).has_member(leader)
    ctx.advance(1)
    group = ctx.group(G)
    assert not group.has_member(leader)
    assert group.state is S.PREPARING_REBALANCE
    assert parked.result().error is Errors.REBALANCE_IN_PROGRESS
    left = [e for e in ctx.events if isinstance(e, ev.MemberLeft)]
    assert [(e.member_id, e.cause) for e in left] == [(leader, ev.LeaveCause.SYNC_TIMEOUT)]


def test_pending_sync_expiry_of_an_old_generation_does_nothing() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a"], rebalance_timeout_ms=20_000)
    assert ctx.runtime.timer_deadline(G, f"sync-{G}") is None  # everyone synced: cancelled
    ctx.advance(25_000)
    ctx.heartbeat(G, formed.generation, formed["a"])
    assert ctx.group(G).state is S.STABLE
