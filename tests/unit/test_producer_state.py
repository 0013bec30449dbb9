"""The partition leader's producer state: sequences, epochs, transactions, markers, LSO."""

from __future__ import annotations

from typing import Any

import pytest

from offsetscope.protocol.log.control import EndTxnMarker
from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.log import AbortedTxn, LogRecord, LogStore
from offsetscope.sim.coordinator.producer_state import (
    INT_MAX,
    AppendOrigin,
    CompletedTxn,
    MarkerResult,
    PartitionLeader,
    PartitionLeaders,
    ProduceResult,
    ProducerSnapshotEntry,
    decrement_sequence,
    increment_sequence,
)

PID = 4000
T0 = 1_700_000_000_000


def recs(n: int, ts: int = T0) -> list[LogRecord]:
    return [
        LogRecord(key=f"k{i}".encode(), value=f"v{i}".encode(), timestamp=ts + i) for i in range(n)
    ]


@pytest.fixture
def leader() -> PartitionLeader:
    logs = LogStore()
    logs.create_topic("orders", 1)
    return PartitionLeaders(logs).leader("orders", 0)


def produce(leader: PartitionLeader, n: int, seq: int, epoch: int = 0, **kw: Any) -> ProduceResult:
    return leader.append(recs(n), producer_id=PID, producer_epoch=epoch, base_sequence=seq, **kw)


def marker(
    leader: PartitionLeader, committed: bool, epoch: int = 0, tv: int = 0, coord: int = 0
) -> MarkerResult:
    return leader.append_marker(
        producer_id=PID,
        producer_epoch=epoch,
        committed=committed,
        coordinator_epoch=coord,
        transaction_version=tv,
        timestamp=T0 + 99,
    )


# ------------------------------------------------------------------ sequences


def test_plain_producer_needs_no_state(leader: PartitionLeader) -> None:
    first = leader.append(recs(2))
    second = leader.append(recs(1))
    assert (first.error, first.base_offset, first.last_offset) == (Errors.NONE, 0, 1)
    assert (second.base_offset, second.last_offset) == (2, 2)
    assert leader.producers == {}
    assert leader.high_watermark == leader.last_stable_offset == 3


def test_idempotent_batches_must_be_in_sequence(leader: PartitionLeader) -> None:
    assert produce(leader, 3, seq=0).error is Errors.NONE
    assert produce(leader, 2, seq=3).error is Errors.NONE
    gap = produce(leader, 1, seq=6)
    assert gap.error is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert "6 (incoming seq. number), 4 (current end sequence number)" in gap.message
    assert leader.high_watermark == 5
    assert leader.entry(PID).last_seq == 4  # type: ignore[union-attr]


def test_retry_of_a_recent_batch_returns_the_original_offsets(leader: PartitionLeader) -> None:
    produce(leader, 3, seq=0)
    produce(leader, 2, seq=3)
    retry = produce(leader, 3, seq=0)
    assert (retry.error, retry.duplicate, retry.base_offset, retry.last_offset) == (
        Errors.NONE,
        True,
        0,
        2,
    )
    assert leader.high_watermark == 5  # nothing appended


def test_only_five_batches_are_remembered(leader: PartitionLeader) -> None:
    for i in range(6):
        assert produce(leader, 1, seq=i).error is Errors.NONE
    assert produce(leader, 1, seq=1).duplicate  # batch 2 of 6: still cached
    too_old = produce(leader, 1, seq=0)  # batch 1 was evicted: it looks out of order
    assert too_old.error is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert not too_old.duplicate


def test_unknown_producer_may_start_anywhere(leader: PartitionLeader) -> None:
    # KIP-360: state may have been removed by retention; the first batch is accepted as is.
    assert produce(leader, 1, seq=42).error is Errors.NONE
    assert produce(leader, 1, seq=44).error is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produce(leader, 1, seq=43).error is Errors.NONE


def test_new_epoch_restarts_at_zero_and_old_epoch_is_rejected(leader: PartitionLeader) -> None:
    produce(leader, 2, seq=0, epoch=0)
    not_zero = produce(leader, 1, seq=2, epoch=1)
    assert not_zero.error is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert "invalid sequence number for new epoch" in not_zero.message
    assert produce(leader, 1, seq=0, epoch=1).error is Errors.NONE
    zombie = produce(leader, 1, seq=2, epoch=0)
    assert zombie.error is Errors.INVALID_PRODUCER_EPOCH
    assert "is 0, which is < the last seen epoch 1" in zombie.message
    # A duplicate is only recognised within the same epoch.
    assert produce(leader, 2, seq=0, epoch=0).error is Errors.INVALID_PRODUCER_EPOCH


def test_sequences_wrap_after_int_max(leader: PartitionLeader) -> None:
    assert increment_sequence(INT_MAX - 1, 2) == 0
    assert decrement_sequence(0, 2) == INT_MAX - 1
    assert produce(leader, 3, seq=INT_MAX - 1).error is Errors.NONE
    assert leader.entry(PID).last_seq == 0  # type: ignore[union-attr]
    assert produce(leader, 1, seq=1).error is Errors.NONE
    assert produce(leader, 3, seq=INT_MAX - 1).duplicate


def test_wrap_from_int_max_to_zero_is_in_sequence(leader: PartitionLeader) -> None:
    assert produce(leader, 1, seq=INT_MAX).error is Errors.NONE
    assert produce(leader, 1, seq=0).error is Errors.NONE


def test_coordinator_writes_skip_sequence_checks(leader: PartitionLeader) -> None:
    # TxnOffsetCommit batches carry no sequence; only the epoch is checked.
    kw = {"origin": AppendOrigin.COORDINATOR, "is_transactional": True}
    assert produce(leader, 1, seq=-1, epoch=2, **kw).error is Errors.NONE
    assert produce(leader, 1, seq=-1, epoch=2, **kw).error is Errors.NONE
    assert produce(leader, 1, seq=-1, epoch=1, **kw).error is Errors.INVALID_PRODUCER_EPOCH


# ------------------------------------------------------------------ transactions and LSO


def test_unverified_transactional_batch_cannot_open_a_transaction(leader: PartitionLeader) -> None:
    result = produce(leader, 1, seq=0, is_transactional=True, verified=False)
    assert result.error is Errors.INVALID_TXN_STATE
    assert leader.high_watermark == 0


def test_open_transaction_holds_back_the_lso(leader: PartitionLeader) -> None:
    leader.append(recs(2))
    assert produce(leader, 3, seq=0, is_transactional=True).error is Errors.NONE
    assert leader.has_ongoing_transaction(PID)
    assert leader.high_watermark == 5
    assert leader.last_stable_offset == 2
    # Later batches of the same transaction need no verification.
    assert produce(leader, 1, seq=3, is_transactional=True, verified=False).error is Errors.NONE
    assert leader.last_stable_offset == 2
    # Other producers' plain writes move the high watermark only.
    leader.append(recs(1))
    assert (leader.high_watermark, leader.last_stable_offset) == (7, 2)


def test_plain_write_inside_own_transaction_is_rejected(leader: PartitionLeader) -> None:
    produce(leader, 1, seq=0, is_transactional=True)
    result = produce(leader, 1, seq=1)
    assert result.error is Errors.INVALID_TXN_STATE
    assert leader.high_watermark == 1


def test_commit_marker_closes_the_transaction(leader: PartitionLeader) -> None:
    produce(leader, 3, seq=0, is_transactional=True)
    result = marker(leader, committed=True, coord=5)
    assert result.error is Errors.NONE
    assert result.offset == 3
    assert result.completed == CompletedTxn(PID, 0, 3, is_aborted=False)
    assert (leader.high_watermark, leader.last_stable_offset) == (4, 4)
    assert leader.log.aborted == []
    control = leader.log.batches[-1]
    assert (control.is_control, control.is_transactional, control.base_sequence) == (True, True, -1)
    assert (control.producer_id, control.producer_epoch) == (PID, 0)
    (rec,) = control.records
    assert rec.key == bytes.fromhex("0000 0001")  # version 0, type COMMIT
    assert rec.value == bytes.fromhex("0000 00000005")  # version 0, coordinator epoch 5
    assert rec.timestamp == T0 + 99
    assert EndTxnMarker.decode(rec.key, rec.value) == EndTxnMarker(True, 5)


def test_abort_marker_lists_the_aborted_transaction(leader: PartitionLeader) -> None:
    leader.append(recs(1))
    produce(leader, 2, seq=0, is_transactional=True)
    result = marker(leader, committed=False)
    assert result.completed == CompletedTxn(PID, 1, 3, is_aborted=True)
    assert leader.log.batches[-1].records[0].key == bytes.fromhex("0000 0000")  # ABORT
    assert leader.log.aborted == [AbortedTxn(PID, 1, 3, 4)]
    assert leader.last_stable_offset == 4


def test_lso_is_the_oldest_open_transaction(leader: PartitionLeader) -> None:
    other = PID + 1
    produce(leader, 1, seq=0, is_transactional=True)  # offset 0
    leader.append(
        recs(1), producer_id=other, producer_epoch=0, base_sequence=0, is_transactional=True
    )
    assert leader.last_stable_offset == 0
    assert marker(leader, committed=False).error is Errors.NONE  # offset 2, other still open
    assert leader.log.aborted == [AbortedTxn(PID, 0, 2, 1)]
    assert leader.last_stable_offset == 1
    leader.append_marker(
        producer_id=other,
        producer_epoch=0,
        committed=True,
        coordinator_epoch=0,
        transaction_version=0,
        timestamp=T0,
    )
    assert (leader.high_watermark, leader.last_stable_offset) == (4, 4)


def test_marker_without_data_still_takes_an_offset(leader: PartitionLeader) -> None:
    result = marker(leader, committed=True)
    assert (result.error, result.offset, result.completed) == (Errors.NONE, 0, None)
    assert (leader.high_watermark, leader.last_stable_offset) == (1, 1)


def test_v1_marker_with_an_older_epoch_is_rejected(leader: PartitionLeader) -> None:
    produce(leader, 1, seq=0, epoch=3, is_transactional=True)
    late = marker(leader, committed=True, epoch=2)
    assert late.error is Errors.INVALID_PRODUCER_EPOCH
    assert marker(leader, committed=True, epoch=3).error is Errors.NONE


def test_v2_marker_must_carry_a_bumped_epoch(leader: PartitionLeader) -> None:
    produce(leader, 1, seq=0, epoch=3, is_transactional=True)
    same = marker(leader, committed=True, epoch=3, tv=2)
    assert same.error is Errors.INVALID_PRODUCER_EPOCH
    assert "which is <= the last seen epoch 3 (TV2)" in same.message
    assert marker(leader, committed=True, epoch=4, tv=2).error is Errors.NONE
    # The same marker again, with the transaction already closed, is an idempotent retry.
    retry = marker(leader, committed=True, epoch=4, tv=2)
    assert (retry.error, retry.completed) == (Errors.NONE, None)
    # The next transaction's data carries the bumped epoch from sequence 0.
    assert produce(leader, 1, seq=0, epoch=4, is_transactional=True).error is Errors.NONE


def test_marker_from_an_older_coordinator_is_fenced(leader: PartitionLeader) -> None:
    produce(leader, 1, seq=0, is_transactional=True)
    assert marker(leader, committed=True, coord=2).error is Errors.NONE
    produce(leader, 1, seq=1, is_transactional=True)
    zombie = marker(leader, committed=False, coord=1)
    assert zombie.error is Errors.TRANSACTION_COORDINATOR_FENCED
    assert leader.has_ongoing_transaction(PID)


def test_snapshot_lists_producer_state(leader: PartitionLeader) -> None:
    produce(leader, 2, seq=0, epoch=1)
    leader.append(recs(1), producer_id=9, producer_epoch=0, base_sequence=0, is_transactional=True)
    assert leader.snapshot() == (
        ProducerSnapshotEntry(9, 0, 0, 2, 0, T0, -1, 2),
        ProducerSnapshotEntry(PID, 1, 1, 1, 1, T0 + 1, -1, -1),
    )
