"""Offset retention, the periodic expiry job and OffsetDelete (``docs/formats.md`` section 8.2)."""

from __future__ import annotations

from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.group import events as ev
from offsetscope.sim.coordinator.group.messages import (
    MemberIdentity,
    OffsetDeleteRequest,
    OffsetFetchTopic,
)
from offsetscope.sim.coordinator.group.testing import GroupTestContext, subscription

G = "analytics"
HOUR = 3_600_000
TEN_MIN = 600_000


def ctx_with_retention(ms: int = HOUR) -> GroupTestContext:
    return GroupTestContext.builder().with_offsets_retention_ms(ms).build()


def tombstones(ctx: GroupTestContext) -> list[tuple[int, dict[str, object]]]:
    return [(r.record_type, dict(r.key)) for r in ctx.take_records() if r.value is None]


def keep_alive(ctx: GroupTestContext, member_id: str, ms: int) -> None:
    """Heartbeat every 10 minutes (the members use a 30-minute session timeout)."""
    for _ in range(ms // TEN_MIN):
        ctx.advance(TEN_MIN)
        assert ctx.heartbeat(G, 1, member_id).error is Errors.NONE


SESSION = 1_800_000


def test_offsets_of_an_empty_group_expire_a_retention_after_it_became_empty() -> None:
    ctx = ctx_with_retention()
    formed = ctx.form_group(
        G, ["a"], session_timeout_ms=SESSION, protocols=[("range", subscription("foo", "bar"))]
    )
    ctx.commit(G, {("foo", 0): 1, ("bar", 0): 2}, generation_id=1, member_id=formed["a"])
    keep_alive(ctx, formed["a"], 2 * HOUR)  # older than the retention, but not Empty
    assert tombstones(ctx) == []
    ctx.leave(G, MemberIdentity(formed["a"]))
    empty_at = ctx.now
    ctx.take_records()
    ctx.take_events()
    ctx.advance(HOUR - 1)
    assert tombstones(ctx) == []
    # The job runs every 10 minutes (from the runtime's start): the first run past the
    # retention writes the offset tombstones, then the group tombstone, in one batch.
    ctx.advance(TEN_MIN)
    batch = ctx.appends[-1]
    assert [(r.record_type, r.value) for r in batch.records] == [(1, None), (1, None), (2, None)]
    assert [dict(r.key) for r in batch.records] == [
        {"group": G, "topic": "foo", "partition": 0},
        {"group": G, "topic": "bar", "partition": 0},
        {"group": G},
    ]
    assert batch.records[0] is not None
    assert batch.batch.records[0].timestamp - empty_at >= HOUR
    assert not ctx.has_group(G)
    events = ctx.take_events()
    assert [type(e) for e in events] == [
        ev.OffsetsExpired,
        ev.GroupDeleted,
        ev.GroupStateChanged,
    ]
    assert events[0].partitions == (("foo", 0), ("bar", 0))  # type: ignore[union-attr]
    assert events[1].cause is ev.DeleteCause.EXPIRED  # type: ignore[union-attr]
    assert events[2].state == "Dead"  # type: ignore[union-attr]
    assert ctx.fetch(G, [("foo", 0)]).offsets()[("foo", 0)].committed_offset == -1


def test_a_stable_consumer_group_expires_only_topics_it_no_longer_subscribes() -> None:
    ctx = ctx_with_retention()
    formed = ctx.form_group(
        G, ["a"], protocols=[("range", subscription("foo"))], session_timeout_ms=SESSION
    )
    a = formed["a"]
    ctx.commit(G, {("foo", 0): 1, ("old", 0): 2}, generation_id=1, member_id=a)
    keep_alive(ctx, a, 80 * 60_000)
    records = ctx.take_records()
    assert [(dict(r.key), r.value) for r in records if r.value is None] == [
        ({"group": G, "topic": "old", "partition": 0}, None)
    ]
    assert ctx.has_group(G)
    assert ctx.fetch(G, [("foo", 0)]).offsets()[("foo", 0)].committed_offset == 1


def test_a_group_with_another_protocol_type_keeps_offsets_while_not_empty() -> None:
    ctx = ctx_with_retention()
    connect = [("default", b"\x00\x00")]
    first = ctx.join(G, protocol_type="connect", protocols=connect, session_timeout_ms=SESSION)
    member = first.result().member_id
    joined = ctx.join(
        G, member_id=member, protocol_type="connect", protocols=connect, session_timeout_ms=SESSION
    )
    ctx.advance(3_000)
    assert joined.result().generation_id == 1
    ctx.sync(G, 1, member, {member: b""})
    ctx.commit(G, {("cfg", 0): 1}, generation_id=1, member_id=member)
    ctx.take_records()
    keep_alive(ctx, member, 2 * HOUR)
    # Not a consumer group: Kafka does not know its subscriptions, so nothing expires.
    assert tombstones(ctx) == []


def test_simple_group_offsets_expire_by_commit_time_and_then_the_group_goes() -> None:
    ctx = ctx_with_retention()
    ctx.commit(G, {("foo", 0): 1})
    ctx.advance(30 * 60_000)
    ctx.commit(G, {("foo", 1): 1})
    ctx.take_records()
    ctx.advance(50 * 60_000)  # 80 min: foo-0 (committed at 0) expired at the 60-min run
    assert tombstones(ctx) == [(1, {"group": G, "topic": "foo", "partition": 0})]
    ctx.advance(10 * 60_000)  # 90 min: foo-1 (committed at 30) expires, then the group
    assert tombstones(ctx) == [
        (1, {"group": G, "topic": "foo", "partition": 1}),
        (2, {"group": G}),
    ]


def test_an_explicit_retention_time_expires_the_offset_at_its_expire_timestamp() -> None:
    ctx = ctx_with_retention(7 * 24 * HOUR)
    ctx.commit(G, {("foo", 0): 1}, retention_time_ms=5 * 60_000, api_version=4)
    ctx.take_records()
    ctx.advance(TEN_MIN)
    assert tombstones(ctx) == [
        (1, {"group": G, "topic": "foo", "partition": 0}),
        (2, {"group": G}),
    ]


def test_a_pending_transactional_offset_blocks_expiry_of_its_partition_and_the_group() -> None:
    ctx = ctx_with_retention()
    ctx.commit(G, {("foo", 0): 1, ("foo", 1): 1})
    ctx.txn_commit(G, {("foo", 0): 2}, producer_id=11)
    ctx.take_records()
    ctx.advance(2 * HOUR)
    assert tombstones(ctx) == [(1, {"group": G, "topic": "foo", "partition": 1})]
    assert ctx.has_group(G)
    ctx.marker(G, 11, committed=False)
    ctx.advance(TEN_MIN)
    assert tombstones(ctx) == [
        (1, {"group": G, "topic": "foo", "partition": 0}),
        (2, {"group": G}),
    ]


def test_an_empty_group_without_offsets_is_deleted_by_the_next_run() -> None:
    ctx = ctx_with_retention()
    first = ctx.join(G).result()  # a brand-new group record; the member never comes back
    assert first.error is Errors.MEMBER_ID_REQUIRED
    ctx.take_records()
    ctx.advance(TEN_MIN)
    assert tombstones(ctx) == [(2, {"group": G})]
    assert not ctx.has_group(G)


def test_offset_delete_refuses_subscribed_topics_and_tombstones_the_others() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a"], protocols=[("range", subscription("foo"))])
    ctx.commit(G, {("foo", 0): 1, ("old", 0): 2}, generation_id=1, member_id=formed["a"])
    ctx.take_records()
    response = ctx.runtime.delete_offsets(
        OffsetDeleteRequest(G, (OffsetFetchTopic("foo", (0,)), OffsetFetchTopic("old", (0, 1))))
    )
    assert response.error is Errors.NONE
    assert [(t.name, [(p.partition, p.error) for p in t.partitions]) for t in response.topics] == [
        ("foo", [(0, Errors.GROUP_SUBSCRIBED_TO_TOPIC)]),
        ("old", [(0, Errors.NONE), (1, Errors.NONE)]),
    ]
    # A tombstone only where an offset exists.
    assert tombstones(ctx) == [(1, {"group": G, "topic": "old", "partition": 0})]
    assert ctx.fetch(G, [("old", 0)]).offsets()[("old", 0)].committed_offset == -1


def test_offset_delete_errors() -> None:
    ctx = GroupTestContext.builder().build()
    request = OffsetDeleteRequest(G, (OffsetFetchTopic("foo", (0,)),))
    assert ctx.runtime.delete_offsets(request).error is Errors.GROUP_ID_NOT_FOUND
    pending = ctx.join(G, protocol_type="connect", protocols=[("default", b"")])
    ctx.join(
        G,
        member_id=pending.result().member_id,
        protocol_type="connect",
        protocols=[("default", b"")],
    )
    assert ctx.runtime.delete_offsets(request).error is Errors.NON_EMPTY_GROUP
