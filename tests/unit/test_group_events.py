"""Ground-truth events: the full story of a group, and their JSON form."""

from __future__ import annotations

import json

from offsetscope.sim.coordinator.group import events as ev
from offsetscope.sim.coordinator.group.messages import MemberIdentity
from offsetscope.sim.coordinator.group.testing import GroupTestContext

G = "story"
T0 = 1_700_000_000_000


def test_a_group_lifecycle_is_told_event_by_event() -> None:
    ctx = GroupTestContext.builder().with_offsets_retention_ms(60_000).build()
    formed = ctx.form_group(G, ["a", "b"], session_timeout_ms=10_000)
    a, b = formed["a"], formed["b"]
    ctx.commit(G, {("foo", 0): 1}, generation_id=1, member_id=a)
    ctx.leave(G, MemberIdentity(b, reason="consumer poll timeout has expired."))
    ctx.advance(10_000)  # a neither rejoins nor heartbeats: session timeout, group Empty
    ctx.advance(600_000)  # the expiry job: offsets expired, group deleted
    story = [
        (type(e).__name__, e.at_ms - T0, getattr(e, "state", None) or getattr(e, "cause", None))
        for e in ctx.events
    ]
    assert story == [
        ("GroupCreated", 0, None),
        ("MemberJoined", 0, ev.JoinCause.JOINED),
        ("GroupStateChanged", 0, "PreparingRebalance"),
        ("MemberJoined", 0, ev.JoinCause.JOINED),
        ("GroupStateChanged", 6_000, "CompletingRebalance"),
        ("GenerationStarted", 6_000, None),
        ("AssignmentStored", 6_000, None),
        ("GroupStateChanged", 6_000, "Stable"),
        ("MemberLeft", 6_000, ev.LeaveCause.LEFT),
        ("GroupStateChanged", 6_000, "PreparingRebalance"),
        ("MemberLeft", 16_000, ev.LeaveCause.SESSION_TIMEOUT),
        ("GroupStateChanged", 16_000, "Empty"),
        ("GenerationStarted", 16_000, None),
        ("OffsetsExpired", 600_000, None),
        ("GroupDeleted", 600_000, ev.DeleteCause.EXPIRED),
        ("GroupStateChanged", 600_000, "Dead"),
    ]
    left = [e for e in ctx.events if isinstance(e, ev.MemberLeft)]
    assert left[0].reason == "consumer poll timeout has expired."
    generations = [e for e in ctx.events if isinstance(e, ev.GenerationStarted)]
    assert [(g.generation_id, g.protocol, g.leader, len(g.member_ids)) for g in generations] == [
        (1, "range", a, 2),
        (2, None, None, 0),
    ]


def test_events_serialise_to_json_lines() -> None:
    ctx = GroupTestContext.builder().build()
    ctx.form_group(G, ["a"], static=True)
    lines = [json.dumps(ev.event_to_dict(e), sort_keys=True) for e in ctx.events]
    decoded = [json.loads(line) for line in lines]
    assert [d["type"] for d in decoded][:3] == ["GroupCreated", "MemberJoined", "GroupStateChanged"]
    joined = decoded[1]
    assert joined["cause"] == "joined"
    assert joined["group_instance_id"] == "a"
    stored = next(d for d in decoded if d["type"] == "AssignmentStored")
    # Assignment bytes in standard Base64, as Kafka's JSON formatters print bytes.
    assert stored["assignments"] == [[stored["leader"], "YQ=="]]
