"""Transactional offsets: pending until the marker, commit/abort, later plain commits win."""

from __future__ import annotations

from offsetscope.protocol.records import OFFSETS_TOPIC
from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.group import events as ev
from offsetscope.sim.coordinator.group.messages import (
    OffsetDeleteRequest,
    OffsetFetchTopic,
    TxnOffsetCommitRequest,
)
from offsetscope.sim.coordinator.group.testing import GroupTestContext
from offsetscope.sim.coordinator.runtime import GroupCoordinatorRuntime

G = "etl"
FOO0 = ("foo", 0)
PID = 4242


def committed(ctx: GroupTestContext, tp: tuple[str, int] = FOO0) -> int:
    return ctx.fetch(G, [tp]).offsets()[tp].committed_offset


def test_transactional_offsets_are_pending_until_a_commit_marker() -> None:
    ctx = GroupTestContext.builder().build()
    ctx.commit(G, {FOO0: 5})
    response = ctx.txn_commit(G, {FOO0: 9, ("foo", 1): 3}, producer_id=PID, producer_epoch=2)
    assert set(response.errors().values()) == {Errors.NONE}
    assert committed(ctx) == 5
    assert committed(ctx, ("foo", 1)) == -1
    log = ctx.log.partition(OFFSETS_TOPIC, ctx.runtime.partition_for(G))
    txn_batch = log.batches[-1]
    assert txn_batch.is_transactional
    assert not txn_batch.is_control
    assert (txn_batch.producer_id, txn_batch.producer_epoch) == (PID, 2)
    assert [r.value_version for r in ctx.records()[-2:]] == [4, 4]  # never v1
    # The open transaction holds back the partition's last stable offset.
    assert log.last_stable_offset == txn_batch.base_offset
    marker = ctx.marker(G, PID, committed=True, producer_epoch=2)
    assert marker.is_control
    assert [(r.key, r.value) for r in marker.records] == [
        (bytes.fromhex("00000001"), bytes.fromhex("000000000000"))
    ]
    assert log.last_stable_offset == log.high_watermark
    assert committed(ctx) == 9
    assert committed(ctx, ("foo", 1)) == 3
    resolved = [e for e in ctx.events if isinstance(e, ev.TransactionalOffsetsCompleted)]
    assert [(e.producer_id, e.committed, e.offsets) for e in resolved] == [
        (PID, True, ((G, "foo", 0), (G, "foo", 1)))
    ]


def test_an_abort_marker_drops_the_pending_offsets() -> None:
    ctx = GroupTestContext.builder().build()
    ctx.commit(G, {FOO0: 5})
    ctx.txn_commit(G, {FOO0: 9}, producer_id=PID)
    ctx.marker(G, PID, committed=False)
    assert committed(ctx) == 5
    log = ctx.log.partition(OFFSETS_TOPIC, ctx.runtime.partition_for(G))
    assert [(a.producer_id, a.first_offset) for a in log.aborted] == [(PID, 1)]
    assert log.batches[-1].records[0].key == bytes.fromhex("00000000")


def test_a_later_plain_commit_wins_over_a_committed_transaction() -> None:
    ctx = GroupTestContext.builder().build()
    ctx.txn_commit(G, {FOO0: 9}, producer_id=PID)
    ctx.commit(G, {FOO0: 20})  # appended after the transactional record
    ctx.marker(G, PID, committed=True)
    assert committed(ctx) == 20


def test_an_earlier_plain_commit_loses_to_the_transaction() -> None:
    ctx = GroupTestContext.builder().build()
    ctx.commit(G, {FOO0: 20})
    ctx.txn_commit(G, {FOO0: 9}, producer_id=PID)
    ctx.marker(G, PID, committed=True)
    assert committed(ctx) == 9


def test_require_stable_fetch_reports_unstable_partitions() -> None:
    ctx = GroupTestContext.builder().build()
    ctx.commit(G, {FOO0: 5, ("foo", 1): 6})
    ctx.txn_commit(G, {FOO0: 9}, producer_id=PID)
    stable = ctx.fetch(G, [FOO0, ("foo", 1)], require_stable=True).offsets()
    assert stable[FOO0].error is Errors.UNSTABLE_OFFSET_COMMIT
    assert stable[FOO0].committed_offset == -1
    assert stable[("foo", 1)].error is Errors.NONE
    assert stable[("foo", 1)].committed_offset == 6
    everything = ctx.fetch(G, None, require_stable=True).offsets()
    assert everything[FOO0].error is Errors.UNSTABLE_OFFSET_COMMIT
    # Without require_stable the committed (pre-transaction) offset is returned.
    assert ctx.fetch(G, [FOO0]).offsets()[FOO0].committed_offset == 5
    ctx.marker(G, PID, committed=True)
    assert ctx.fetch(G, [FOO0], require_stable=True).offsets()[FOO0].committed_offset == 9


def test_a_tombstone_drops_pending_offsets_of_its_key() -> None:
    ctx = GroupTestContext.builder().build()
    ctx.txn_commit(G, {FOO0: 9, ("foo", 1): 1}, producer_id=PID)

    response = ctx.runtime.delete_offsets(OffsetDeleteRequest(G, (OffsetFetchTopic("foo", (0,)),)))
    assert response.error is Errors.NONE
    assert ctx.records()[-1].value is None  # a tombstone although nothing was committed
    ctx.marker(G, PID, committed=True)
    assert committed(ctx) == -1
    assert committed(ctx, ("foo", 1)) == 1


def test_a_marker_resolves_only_its_own_partition_and_producer() -> None:
    ctx = GroupTestContext.builder().build()
    other = next(
        g
        for g in (f"g{i}" for i in range(100))
        if ctx.runtime.partition_for(g) != ctx.runtime.partition_for(G)
    )
    ctx.txn_commit(G, {FOO0: 9}, producer_id=PID)
    ctx.txn_commit(other, {FOO0: 9}, producer_id=PID)
    ctx.txn_commit(G, {("foo", 1): 4}, producer_id=PID + 1)
    ctx.marker(G, PID, committed=True)
    assert committed(ctx) == 9
    assert committed(ctx, ("foo", 1)) == -1  # another producer's transaction
    assert ctx.fetch(other, [FOO0]).offsets()[FOO0].committed_offset == -1  # other partition
    ctx.marker(other, PID, committed=True)
    assert ctx.fetch(other, [FOO0]).offsets()[FOO0].committed_offset == 9


def test_txn_commit_validation() -> None:
    ctx = GroupTestContext.builder().build()
    request = TxnOffsetCommitRequest("tx", G, PID, 0, (), generation_id=1, member_id="m")
    assert ctx.runtime.txn_commit_offsets(request).topics == ()
    bad = ctx.txn_commit(G, {FOO0: 1}, producer_id=PID, generation_id=1, member_id="m")
    assert set(bad.errors().values()) == {Errors.ILLEGAL_GENERATION}  # v5: no GROUP_ID_NOT_FOUND
    member, joined = ctx.join_dynamic(G)
    ctx.advance(3_000)
    generation = joined.result().generation_id
    # CompletingRebalance: a plain commit is refused, a transactional one is not.
    plain = ctx.commit(G, {FOO0: 1}, generation_id=generation, member_id=member)
    assert set(plain.errors().values()) == {Errors.REBALANCE_IN_PROGRESS}
    txn = ctx.txn_commit(G, {FOO0: 1}, producer_id=PID, generation_id=generation, member_id=member)
    assert set(txn.errors().values()) == {Errors.NONE}
    # Old TxnOffsetCommit versions carry neither member nor generation: accepted on a
    # non-empty group, where a plain commit would be UNKNOWN_MEMBER_ID.
    assert set(ctx.txn_commit(G, {FOO0: 1}, producer_id=PID).errors().values()) == {Errors.NONE}
    stale = ctx.txn_commit(G, {FOO0: 1}, producer_id=PID, generation_id=9, member_id=member)
    assert set(stale.errors().values()) == {Errors.ILLEGAL_GENERATION}


def test_load_rebuilds_pending_and_committed_offsets_from_the_log() -> None:
    ctx = GroupTestContext.builder().build()
    ctx.commit(G, {FOO0: 5})
    ctx.txn_commit(G, {FOO0: 9}, producer_id=PID)
    ctx.txn_commit(G, {("foo", 1): 2}, producer_id=PID + 1)
    ctx.marker(G, PID + 1, committed=True)
    reloaded = GroupCoordinatorRuntime(ctx.log, ctx.clock, ctx.runtime.config)
    reloaded.load()
    store = reloaded.shard_for(G).offsets
    assert store.offset(G, "foo", 0).committed_offset == 5  # type: ignore[union-attr]
    assert store.offset(G, "foo", 1).committed_offset == 2  # type: ignore[union-attr]
    assert store.has_pending_transactional_offsets(G, "foo", 0)
    reloaded.write_txn_marker(reloaded.partition_for(G), PID, 0, 0, True)
    assert store.offset(G, "foo", 0).committed_offset == 9  # type: ignore[union-attr]
