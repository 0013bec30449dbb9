"""The two coordinators wired as the scenario engine wires them: one log, one clock, shared
partition leaders, TxnOffsetCommit verified with the transaction coordinator."""

from __future__ import annotations

import pytest

from offsetscope.clock import VirtualClock
from offsetscope.protocol import partition_for
from offsetscope.sim.coordinator import errors as shared_errors
from offsetscope.sim.coordinator.group import messages as msg
from offsetscope.sim.coordinator.group.config import GroupCoordinatorConfig
from offsetscope.sim.coordinator.log import AbortedTxn, LogStore
from offsetscope.sim.coordinator.producer_state import PartitionLeaders
from offsetscope.sim.coordinator.runtime import GroupCoordinatorRuntime, MarkerRejectedError
from offsetscope.sim.coordinator.txn.config import TransactionCoordinatorConfig
from offsetscope.sim.coordinator.txn.runtime import GroupRuntimeMarkerSink, TxnRuntime

Errors = shared_errors.Errors
T0 = 1_700_000_000_000


def _wire(verify: bool = True) -> tuple[GroupCoordinatorRuntime, TxnRuntime, LogStore]:
    clock = VirtualClock(T0)
    logs = LogStore()
    logs.create_topic("out", 1)
    leaders = PartitionLeaders(logs)
    groups = GroupCoordinatorRuntime(
        logs, clock, GroupCoordinatorConfig(offsets_topic_partitions=3), leaders=leaders
    )
    txns = TxnRuntime(
        clock=clock,
        logs=logs,
        config=TransactionCoordinatorConfig(
            transaction_state_partitions=3,
            offsets_topic_partitions=3,
            transaction_partition_verification_enable=verify,
        ),
        leaders=leaders,
        offset_markers=GroupRuntimeMarkerSink(groups),
    )
    groups.set_transaction_verifier(txns)
    return groups, txns, logs


def _commit(
    groups: GroupCoordinatorRuntime, pid: int, epoch: int, offset: int
) -> set[shared_errors.Errors]:
    request = msg.TxnOffsetCommitRequest(
        "app",
        "grp",
        pid,
        epoch,
        (msg.OffsetCommitTopic("out", (msg.OffsetCommitPartition(0, offset),)),),
    )
    return set(groups.txn_commit_offsets(request).errors().values())


def test_kafka_error_codes() -> None:
    assert Errors.INVALID_PRODUCER_EPOCH == 47
    assert Errors.MEMBER_ID_REQUIRED == 79


def test_zombie_txn_offset_commit_is_refused_by_verification() -> None:
    groups, txns, logs = _wire()
    old = txns.init_producer_id("app", 60_000)
    assert txns.add_offsets_to_txn("app", old.producer_id, old.producer_epoch, "grp").error is (
        Errors.NONE
    )
    # A new instance fences the open transaction before the old one sent its offsets.
    assert txns.init_producer_id("app", 60_000).error is Errors.CONCURRENT_TRANSACTIONS
    new = txns.init_producer_id("app", 60_000)
    assert new.producer_epoch == old.producer_epoch + 2
    offsets = logs.partition("__consumer_offsets", partition_for("grp", 3))
    before = offsets.high_watermark
    # The coordinator says PRODUCER_FENCED; the broker answers INVALID_PRODUCER_EPOCH.
    assert _commit(groups, old.producer_id, old.producer_epoch, 5) == {
        Errors.INVALID_PRODUCER_EPOCH
    }
    assert offsets.high_watermark == before
    # The new instance commits through the same path.
    assert txns.add_offsets_to_txn("app", new.producer_id, new.producer_epoch, "grp").error is (
        Errors.NONE
    )
    assert _commit(groups, new.producer_id, new.producer_epoch, 5) == {Errors.NONE}


def test_stale_epoch_is_refused_by_the_partition_without_verification() -> None:
    groups, txns, logs = _wire(verify=False)
    first = txns.init_producer_id("app", 60_000)
    pid = first.producer_id
    txns.add_offsets_to_txn("app", pid, first.producer_epoch, "grp")
    assert _commit(groups, pid, first.producer_epoch, 3) == {Errors.NONE}
    assert txns.end_txn("app", pid, first.producer_epoch, committed=True).error is Errors.NONE
    second = txns.init_producer_id("app", 60_000)
    txns.add_offsets_to_txn("app", pid, second.producer_epoch, "grp")
    assert _commit(groups, pid, second.producer_epoch, 4) == {Errors.NONE}
    # The partition now knows the newer epoch: an old-epoch batch is a zombie's.
    assert _commit(groups, pid, first.producer_epoch, 9) == {Errors.INVALID_PRODUCER_EPOCH}
    offsets = logs.partition("__consumer_offsets", partition_for("grp", 3))
    leader = groups.leaders.leader("__consumer_offsets", partition_for("grp", 3))
    assert leader.has_ongoing_transaction(pid)
    assert offsets.last_stable_offset < offsets.high_watermark


def test_markers_go_through_the_shared_partition_leader() -> None:
    groups, txns, logs = _wire()
    init = txns.init_producer_id("app", 60_000)
    pid, epoch = init.producer_id, init.producer_epoch
    txns.add_offsets_to_txn("app", pid, epoch, "grp")
    assert _commit(groups, pid, epoch, 7) == {Errors.NONE}
    assert txns.end_txn("app", pid, epoch, committed=False).error is Errors.NONE
    partition = partition_for("grp", 3)
    offsets = logs.partition("__consumer_offsets", partition)
    # The abort is indexed and releases the LSO; the producer state saw the marker.
    assert offsets.aborted == [AbortedTxn(pid, 0, 1, 2)]
    assert offsets.last_stable_offset == offsets.high_watermark == 2
    entry = groups.leaders.leader("__consumer_offsets", partition).entry(pid)
    assert entry is not None
    assert entry.current_txn_first_offset is None
    fetched = groups.fetch_offsets(
        msg.OffsetFetchRequest("grp", (msg.OffsetFetchTopic("out", (0,)),))
    )
    assert fetched.offsets()[("out", 0)].committed_offset == -1
    # A marker with an epoch older than the partition's is refused, not silently appended.
    txns.init_producer_id("app", 60_000)
    txns.add_offsets_to_txn("app", pid, epoch + 1, "grp")
    assert _commit(groups, pid, epoch + 1, 8) == {Errors.NONE}
    with pytest.raises(MarkerRejectedError) as rejected:
        groups.write_txn_marker(partition, pid, epoch, 0, committed=True)
    assert rejected.value.result.error is Errors.INVALID_PRODUCER_EPOCH
    assert offsets.high_watermark == 3
