"""OffsetFetch: asked partitions, all partitions, unknown groups, topic ids."""

from __future__ import annotations

import uuid

from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.group import messages as msg
from offsetscope.sim.coordinator.group.testing import GroupTestContext

G = "reports"
TOPIC_ID = uuid.UUID("11111111-2222-3333-4444-555555555555")


def test_fetch_asked_partitions_returns_minus_one_for_unknown_ones() -> None:
    ctx = GroupTestContext.builder().build()
    ctx.commit(G, {("foo", 0): 10, ("bar", 2): 30}, metadata="m", leader_epoch=4)
    response = ctx.fetch(G, [("foo", 0), ("foo", 1), ("bar", 2)])
    assert response.error is Errors.NONE
    assert [
        (t.name, [(p.partition, p.committed_offset) for p in t.partitions]) for t in response.topics
    ] == [
        ("foo", [(0, 10), (1, -1)]),
        ("bar", [(2, 30)]),
    ]
    foo0 = response.offsets()[("foo", 0)]
    assert (foo0.committed_leader_epoch, foo0.metadata) == (4, "m")
    missing = response.offsets()[("foo", 1)]
    assert (missing.committed_leader_epoch, missing.metadata, missing.error) == (
        -1,
        "",
        Errors.NONE,
    )


def test_fetch_all_returns_every_committed_partition() -> None:
    ctx = GroupTestContext.builder().build()
    ctx.commit(G, {("foo", 0): 10, ("foo", 1): 11})
    ctx.commit(G, {("bar", 0): 20})
    everything = ctx.fetch(G, None).offsets()
    assert {k: v.committed_offset for k, v in everything.items()} == {
        ("foo", 0): 10,
        ("foo", 1): 11,
        ("bar", 0): 20,
    }


def test_an_unknown_group_has_no_offsets() -> None:
    ctx = GroupTestContext.builder().build()
    assert ctx.fetch(G, None).topics == ()
    asked = ctx.fetch(G, [("foo", 0)]).offsets()[("foo", 0)]
    assert (asked.committed_offset, asked.error) == (-1, Errors.NONE)
    assert not ctx.has_group(G)


def test_a_later_commit_replaces_the_offset() -> None:
    ctx = GroupTestContext.builder().build()
    ctx.commit(G, {("foo", 0): 10})
    ctx.commit(G, {("foo", 0): 7})  # offsets may go back: the last record wins
    assert ctx.fetch(G, [("foo", 0)]).offsets()[("foo", 0)].committed_offset == 7


def test_a_topic_id_mismatch_hides_the_offset() -> None:
    ctx = GroupTestContext.builder().build()
    ctx.runtime.commit_offsets(
        msg.OffsetCommitRequest(
            G, (msg.OffsetCommitTopic("foo", (msg.OffsetCommitPartition(0, 10),), TOPIC_ID),)
        )
    )

    def fetch(topic_id: uuid.UUID | None) -> int:
        request = msg.OffsetFetchRequest(G, (msg.OffsetFetchTopic("foo", (0,), topic_id),))
        return ctx.runtime.fetch_offsets(request).offsets()[("foo", 0)].committed_offset

    assert fetch(TOPIC_ID) == 10
    assert fetch(None) == 10
    assert fetch(uuid.UUID(int=0)) == 10
    # The topic was deleted and recreated under another id: the old offset does not apply.
    assert fetch(uuid.uuid5(uuid.NAMESPACE_DNS, "other")) == -1
