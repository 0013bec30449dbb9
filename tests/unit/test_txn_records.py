"""``__transaction_state`` records: exact bytes, and a log read back gives the same state."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from offsetscope.clock import VirtualClock
from offsetscope.protocol import decode_record, encode_record
from offsetscope.protocol.records import CoordinatorRecord
from offsetscope.protocol.states import TransactionState as S
from offsetscope.sim.coordinator.txn.config import TransactionCoordinatorConfig
from offsetscope.sim.coordinator.txn.coordinator import TransactionCoordinator
from offsetscope.sim.coordinator.txn.events import TxnCause
from offsetscope.sim.coordinator.txn.metadata import TopicPartition, TxnTransit
from offsetscope.sim.coordinator.txn.producer_ids import ProducerIdManager
from offsetscope.sim.coordinator.txn.records import (
    TransactionLogRecord,
    new_transaction_log_record,
    new_transaction_log_tombstone,
)

T0 = 1_700_000_000_000


def i16(n: int) -> bytes:
    return struct.pack(">h", n)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


ONGOING = TxnTransit(
    producer_id=4000,
    prev_producer_id=4000,
    next_producer_id=-1,
    producer_epoch=3,
    last_producer_epoch=2,
    txn_timeout_ms=60_000,
    state=S.Ongoing,
    partitions=frozenset({TopicPartition("out", 1), TopicPartition("out", 0)}),
    txn_start_timestamp=T0,
    txn_last_update_timestamp=T0 + 100,
    client_transaction_version=2,
)

KEY = b"".join(
    [
        i16(0),  # record type 0: TransactionLogKey
        i16(5),  # transactionalId length
        b"txn-1",  # transactionalId
    ]
)


def test_ongoing_record_v1_bytes() -> None:
    record = new_transaction_log_record(
        "txn-1", ONGOING, value_version=1, cause=TxnCause.ADD_PARTITIONS
    )
    key, value = encode_record(record)
    assert key == KEY
    assert value == b"".join(
        [
            i16(1),  # value version 1 (flexible)
            i64(4000),  # producerId
            i16(3),  # producerEpoch
            i32(60_000),  # transactionTimeoutMs
            b"\x01",  # transactionStatus: Ongoing
            b"\x02",  # transactionPartitions: compact array, 1 entry
            b"\x04out",  # .topic: compact string
            b"\x03" + i32(0) + i32(1),  # .partitionIds: compact array of 2
            b"\x00",  # .tagged fields: none
            i64(T0 + 100),  # transactionLastUpdateTimestampMs
            i64(T0),  # transactionStartTimestampMs
            b"\x02",  # tagged fields: 2 (the others hold their defaults)
            b"\x00\x08" + i64(4000),  # tag 0 previousProducerId, 8 bytes
            b"\x02\x02" + i16(2),  # tag 2 clientTransactionVersion, 2 bytes
        ]
    )
    decoded = decode_record("__transaction_state", key, value)
    assert isinstance(decoded, CoordinatorRecord)
    assert decoded.value == record.value


def test_ongoing_record_v0_bytes() -> None:
    record = new_transaction_log_record(
        "txn-1", ONGOING, value_version=0, cause=TxnCause.ADD_PARTITIONS
    )
    _, value = encode_record(record)
    assert value == b"".join(
        [
            i16(0),  # value version 0
            i64(4000),  # producerId
            i16(3),  # producerEpoch
            i32(60_000),  # transactionTimeoutMs
            b"\x01",  # transactionStatus: Ongoing
            i32(1),  # transactionPartitions: 1 entry
            i16(3) + b"out",  # .topic
            i32(2) + i32(0) + i32(1),  # .partitionIds
            i64(T0 + 100),  # transactionLastUpdateTimestampMs
            i64(T0),  # transactionStartTimestampMs
        ]
    )


def test_empty_record_has_null_partitions_and_tombstone_has_no_value() -> None:
    empty = TxnTransit(7, 7, -1, 0, -1, 60_000, S.Empty, frozenset(), -1, T0, 0)
    _, value = encode_record(
        new_transaction_log_record("t", empty, value_version=1, cause=TxnCause.INIT_PRODUCER_ID)
    )
    assert value == b"".join(
        [
            i16(1),  # version
            i64(7),  # producerId
            i16(0),  # producerEpoch
            i32(60_000),  # transactionTimeoutMs
            b"\x00",  # transactionStatus: Empty
            b"\x00",  # transactionPartitions: null
            i64(T0),  # transactionLastUpdateTimestampMs
            i64(-1),  # transactionStartTimestampMs
            b"\x01",  # tagged fields: 1
            b"\x00\x08" + i64(7),  # tag 0 previousProducerId
        ]
    )
    tombstone = new_transaction_log_tombstone("t")
    assert encode_record(tombstone) == (i16(0) + i16(1) + b"t", None)
    assert tombstone.is_tombstone


def test_empty_state_with_partitions_is_refused() -> None:
    bad = TxnTransit(
        7, 7, -1, 0, -1, 60_000, S.Empty, frozenset({TopicPartition("a", 0)}), -1, T0, 0
    )
    with pytest.raises(ValueError, match="Empty transaction cannot list partitions"):
        new_transaction_log_record("t", bad, value_version=1, cause=TxnCause.INIT_PRODUCER_ID)


def _drive(
    coord: TransactionCoordinator, clock: VirtualClock, sink: list[TransactionLogRecord]
) -> None:
    def run(result: Any) -> Any:
        for record in result.records:
            sink.append(record)
            coord.replay(record)
        return result.response

    a = run(coord.init_producer_id("a", 30_000))
    run(
        coord.add_partitions_to_txn(
            "a", a.producer_id, a.producer_epoch, [TopicPartition("x", 0)], 2
        )
    )
    clock.advance(10)
    run(coord.end_txn("a", a.producer_id, a.producer_epoch, True, 2))
    run(coord.complete_transaction("a"))
    b = run(coord.init_producer_id("b", 30_000))
    run(coord.add_offsets_to_txn("b", b.producer_id, b.producer_epoch, "g"))
    clock.advance(10)
    run(coord.end_txn("b", b.producer_id, b.producer_epoch, False, 0))  # markers still pending
    c = run(coord.init_producer_id("c", 30_000))
    run(coord.add_partitions_to_txn("c", c.producer_id, c.producer_epoch, [TopicPartition("y", 2)]))


def test_a_log_read_back_rebuilds_the_same_state() -> None:
    config = TransactionCoordinatorConfig()
    clock = VirtualClock(T0)
    live = TransactionCoordinator(config, clock, ProducerIdManager())
    written: list[TransactionLogRecord] = []
    _drive(live, clock, written)

    loaded = TransactionCoordinator(config, clock, ProducerIdManager())
    for record in written:
        decoded = decode_record("__transaction_state", *encode_record(record))
        assert isinstance(decoded, CoordinatorRecord)
        assert not isinstance(decoded, TransactionLogRecord)
        loaded.replay(decoded)
    for txn in ("a", "b", "c"):
        mine, theirs = live.metadata(txn), loaded.metadata(txn)
        assert mine is not None
        assert theirs is not None
        # The last epoch is never written: Kafka's loader does not know it either.
        assert theirs == mine.__class__(**{**_fields(mine), "last_producer_epoch": -1})
    # A loaded PrepareAbort still owes its markers.
    assert [m.transactional_id for m in loaded.pending_markers()] == ["b"]
    assert loaded.pending_markers() == live.pending_markers()
    assert loaded.events == []  # no causes in a log


def _fields(meta: Any) -> dict[str, Any]:
    return {name: getattr(meta, name) for name in meta.__dataclass_fields__}
