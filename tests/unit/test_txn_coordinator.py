"""Transaction coordinator handlers, each error where Kafka returns it, on a virtual clock."""

from __future__ import annotations

from typing import Any

import pytest

from offsetscope.clock import VirtualClock
from offsetscope.protocol.records import CoordinatorRecord
from offsetscope.protocol.states import TransactionState as S
from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.result import CoordinatorResult
from offsetscope.sim.coordinator.txn.config import TransactionCoordinatorConfig
from offsetscope.sim.coordinator.txn.coordinator import (
    EndTxnResponse,
    ListedTransaction,
    ProducerIdAndEpoch,
    TransactionCoordinator,
)
from offsetscope.sim.coordinator.txn.events import (
    TxnCause,
    TxnOutcome,
    TxnOutcomeKind,
    TxnStateChanged,
)
from offsetscope.sim.coordinator.txn.metadata import TopicPartition
from offsetscope.sim.coordinator.txn.producer_ids import ProducerIdManager

T0 = 1_700_000_000_000
OUT0 = TopicPartition("out", 0)
OUT1 = TopicPartition("out", 1)
AUDIT = TopicPartition("audit", 3)
MAX = 32_767


class Ctx:
    """Test context: a coordinator whose records are 'appended' to a list and replayed."""

    def __init__(self, **config: Any) -> None:
        self.clock = VirtualClock(T0)
        self.config = TransactionCoordinatorConfig(**config)
        self.pids = ProducerIdManager()
        self.coord = TransactionCoordinator(self.config, self.clock, self.pids)
        self.log: list[CoordinatorRecord] = []

    def run(self, result: CoordinatorResult[Any]) -> Any:
        for record in result.records:
            self.log.append(record)
            self.coord.replay(record)
        return result.response

    def written(self, result: CoordinatorResult[Any]) -> list[dict[str, Any] | None]:
        """Run ``result`` and return the values it wrote."""
        before = len(self.log)
        self.run(result)
        return [None if r.value is None else dict(r.value) for r in self.log[before:]]

    # requests
    def init(self, txn: str | None = "txn", timeout: int = 60_000, expected: Any = None) -> Any:
        return self.run(self.coord.init_producer_id(txn, timeout, expected))

    def add(self, pid: int, epoch: int, *tps: TopicPartition, txn: str = "txn", tv: int = 0) -> Any:
        return self.run(self.coord.add_partitions_to_txn(txn, pid, epoch, tps, tv))

    def end(self, pid: int, epoch: int, commit: bool, txn: str = "txn", tv: int = 0) -> Any:
        return self.run(self.coord.end_txn(txn, pid, epoch, commit, tv))

    def markers_done(self, txn: str = "txn") -> None:
        self.run(self.coord.complete_transaction(txn))

    def state(self, txn: str = "txn") -> S:
        meta = self.coord.metadata(txn)
        assert meta is not None
        return meta.state

    def epoch(self, txn: str = "txn") -> int:
        meta = self.coord.metadata(txn)
        assert meta is not None
        return meta.producer_epoch

    def load(self, txn: str, value: dict[str, Any]) -> None:
        """Replay a record as if read from an existing log (Kafka's loader path)."""
        full = {
            "previousProducerId": value["producerId"],
            "nextProducerId": -1,
            "nextProducerEpoch": -1,
            "transactionTimeoutMs": 60_000,
            "transactionPartitions": [],
            "transactionLastUpdateTimestampMs": T0,
            "transactionStartTimestampMs": T0,
            "clientTransactionVersion": 0,
            **value,
        }
        self.coord.replay(
            CoordinatorRecord(
                "__transaction_state",
                0,
                "TransactionLogKey",
                {"transactionalId": txn},
                "TransactionLogValue",
                1,
                full,
            )
        )


def value(**fields: Any) -> dict[str, Any]:
    """A v1 TransactionLogValue with defaults for a fresh producer id 0."""
    base: dict[str, Any] = {
        "producerId": 0,
        "previousProducerId": 0,
        "nextProducerId": -1,
        "producerEpoch": 0,
        "nextProducerEpoch": -1,
        "transactionTimeoutMs": 60_000,
        "transactionStatus": 0,
        "transactionPartitions": None,
        "transactionLastUpdateTimestampMs": T0,
        "transactionStartTimestampMs": -1,
        "clientTransactionVersion": 0,
    }
    base.update(fields)
    return base


def ongoing(ctx: Ctx, *tps: TopicPartition, tv: int = 0) -> tuple[int, int]:
    """Init 'txn' and open a transaction on ``tps``; returns (producer id, epoch)."""
    r = ctx.init()
    assert r.error is Errors.NONE
    assert ctx.add(r.producer_id, r.producer_epoch, *(tps or (OUT0,)), tv=tv).error is Errors.NONE
    return r.producer_id, r.producer_epoch


# ====================================================================== InitProducerId


def test_init_new_transactional_id_writes_empty_with_epoch_zero() -> None:
    ctx = Ctx()
    result = ctx.coord.init_producer_id("txn", 60_000)
    (record,) = result.records
    assert record.topic == "__transaction_state"
    assert (record.record_type, record.key_schema, record.key) == (
        0,
        "TransactionLogKey",
        {"transactionalId": "txn"},
    )
    assert (record.value_schema, record.value_version) == ("TransactionLogValue", 1)
    assert record.value == value()
    assert ctx.coord.metadata("txn") is None  # nothing changes before the replay
    response = ctx.run(result)
    assert (response.error, response.producer_id, response.producer_epoch) == (Errors.NONE, 0, 0)
    assert ctx.state() is S.Empty


def test_transaction_version_zero_writes_value_version_zero() -> None:
    ctx = Ctx(transaction_version=0)
    (record,) = ctx.coord.init_producer_id("txn", 60_000).records
    assert record.value_version == 0
    assert record.value == {
        "producerId": 0,
        "producerEpoch": 0,
        "transactionTimeoutMs": 60_000,
        "transactionStatus": 0,
        "transactionPartitions": None,
        "transactionLastUpdateTimestampMs": T0,
        "transactionStartTimestampMs": -1,
    }


def test_idempotent_producers_get_fresh_ids_without_records() -> None:
    ctx = Ctx()
    assert [(ctx.init(None).producer_id, ctx.init(None).producer_epoch) for _ in range(2)] == [
        (0, 0),
        (2, 0),
    ]
    assert ctx.init("txn").producer_id == 4
    assert ctx.init(None).producer_id == 5
    assert len(ctx.log) == 1


@pytest.mark.parametrize(
    ("txn", "timeout", "error"),
    [
        ("", 60_000, Errors.INVALID_REQUEST),
        ("txn", 0, Errors.INVALID_TRANSACTION_TIMEOUT),
        ("txn", 900_001, Errors.INVALID_TRANSACTION_TIMEOUT),
    ],
)
def test_init_rejects_bad_requests(txn: str, timeout: int, error: Errors) -> None:
    ctx = Ctx()
    response = ctx.init(txn, timeout)
    assert (response.error, response.producer_id, response.producer_epoch) == (error, -1, -1)
    assert ctx.log == []


def test_init_accepts_the_maximum_timeout() -> None:
    assert Ctx().init("txn", 900_000).error is Errors.NONE


def test_reinit_bumps_the_epoch_and_takes_the_new_timeout() -> None:
    ctx = Ctx()
    ctx.init()
    ctx.clock.advance(10)
    written = ctx.written(ctx.coord.init_producer_id("txn", 30_000))
    assert written == [
        value(
            producerEpoch=1, transactionTimeoutMs=30_000, transactionLastUpdateTimestampMs=T0 + 10
        )
    ]
    assert ctx.epoch() == 1


def test_reinit_after_a_commit_returns_to_empty() -> None:
    ctx = Ctx()
    pid, epoch = ongoing(ctx, OUT0)
    ctx.end(pid, epoch, commit=True)
    ctx.markers_done()
    assert ctx.state() is S.CompleteCommit
    ctx.clock.advance(5)
    written = ctx.written(ctx.coord.init_producer_id("txn", 60_000))
    assert written == [value(producerEpoch=1, transactionLastUpdateTimestampMs=T0 + 5)]


def test_init_with_expected_epoch_bumps_and_a_retry_gets_the_same_epoch() -> None:
    ctx = Ctx()
    ctx.init()
    bumped = ctx.init(expected=ProducerIdAndEpoch(0, 0))
    assert (bumped.error, bumped.producer_epoch) == (Errors.NONE, 1)
    # The response was lost; the producer retries with its old epoch (== last epoch).
    retried = ctx.init(expected=ProducerIdAndEpoch(0, 0))
    assert (retried.error, retried.producer_epoch) == (Errors.NONE, 1)


def test_init_with_a_stale_expected_epoch_is_fenced() -> None:
    ctx = Ctx()
    ctx.init()
    ctx.init()
    ctx.init()  # epoch 2, last epoch forgotten (new instances)
    assert ctx.init(expected=ProducerIdAndEpoch(0, 1)).error is Errors.PRODUCER_FENCED
    assert ctx.init(expected=ProducerIdAndEpoch(99, 2)).error is Errors.PRODUCER_FENCED
    assert ctx.epoch() == 2


def test_init_while_markers_are_pending_is_concurrent() -> None:
    ctx = Ctx()
    pid, epoch = ongoing(ctx)
    ctx.end(pid, epoch, commit=True)
    assert ctx.state() is S.PrepareCommit
    assert ctx.init().error is Errors.CONCURRENT_TRANSACTIONS
    ctx.markers_done()
    assert ctx.init().error is Errors.NONE


@pytest.mark.parametrize("tv", [1, 2])
def test_init_on_ongoing_fences_aborts_and_asks_to_retry(tv: int) -> None:
    ctx = Ctx(transaction_version=tv)
    ongoing(ctx, OUT0, OUT1)
    ctx.clock.advance(1_000)
    result = ctx.coord.init_producer_id("txn", 60_000)
    written = ctx.written(result)
    assert result.response.error is Errors.CONCURRENT_TRANSACTIONS
    # One record: the fence itself (PrepareEpochFence) is never written.
    assert written == [
        value(
            producerEpoch=1,
            transactionStatus=3,
            transactionPartitions=[{"topic": "out", "partitionIds": [0, 1]}],
            transactionLastUpdateTimestampMs=T0 + 1_000,
            transactionStartTimestampMs=T0,
            clientTransactionVersion=2 if tv == 2 else 0,
        )
    ]
    markers = ctx.coord.pending_markers_for("txn")
    assert markers is not None
    assert (markers.producer_epoch, markers.committed, markers.partitions) == (
        1,
        False,
        (OUT0, OUT1),
    )
    assert ctx.init().error is Errors.CONCURRENT_TRANSACTIONS  # markers not written yet
    ctx.clock.advance(3)
    assert ctx.written(ctx.coord.complete_transaction("txn"))[0] == value(
        producerEpoch=1,
        transactionStatus=5,
        transactionPartitions=[],
        transactionLastUpdateTimestampMs=T0 + 1_000,
        transactionStartTimestampMs=T0,
        clientTransactionVersion=2 if tv == 2 else 0,
    )
    retry = ctx.init()
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (Errors.NONE, 0, 2)


def test_fencing_emits_the_in_memory_step_and_the_outcome() -> None:
    ctx = Ctx()
    ongoing(ctx, OUT0)
    ctx.clock.advance(7)
    ctx.init()
    ctx.markers_done()
    changes = [e for e in ctx.coord.events if isinstance(e, TxnStateChanged)][-3:]
    assert [
        (e.from_state, e.to_state, e.cause, e.persisted, e.producer_epoch) for e in changes
    ] == [
        (S.Ongoing, S.PrepareEpochFence, TxnCause.FENCED_BY_NEW_INSTANCE, False, 1),
        (S.PrepareEpochFence, S.PrepareAbort, TxnCause.FENCED_BY_NEW_INSTANCE, True, 1),
        (S.PrepareAbort, S.CompleteAbort, TxnCause.MARKERS_WRITTEN, True, 1),
    ]
    outcome = ctx.coord.events[-1]
    assert outcome == TxnOutcome(
        transactional_id="txn",
        producer_id=0,
        producer_epoch=0,
        outcome=TxnOutcomeKind.ABORTED,
        cause=TxnCause.FENCED_BY_NEW_INSTANCE,
        started_ms=T0,
        decided_ms=T0 + 7,
        completed_ms=T0 + 7,
        partitions=(OUT0,),
    )
    assert outcome.fenced
    assert not outcome.timed_out


def test_exhausted_epoch_rotates_the_producer_id() -> None:
    ctx = Ctx()
    ctx.pids.generate_producer_id()  # id 0 is taken; the next new id is 1
    ctx.load("txn", {"producerId": 500, "producerEpoch": MAX - 1, "transactionStatus": 4})
    ctx.clock.advance(1)
    result = ctx.coord.init_producer_id("txn", 60_000)
    assert ctx.written(result) == [
        value(
            producerId=1,
            previousProducerId=500,
            producerEpoch=0,
            transactionLastUpdateTimestampMs=T0 + 1,
        )
    ]
    assert (result.response.producer_id, result.response.producer_epoch) == (1, 0)
    assert [e.cause for e in ctx.coord.events] == [TxnCause.EPOCH_EXHAUSTED]


def test_rotation_retry_is_recognised_and_stale_producers_are_fenced() -> None:
    ctx = Ctx()
    ctx.load("txn", {"producerId": 500, "producerEpoch": MAX - 1, "transactionStatus": 0})
    rotated = ctx.init(expected=ProducerIdAndEpoch(500, MAX - 1))
    assert (rotated.error, rotated.producer_id, rotated.producer_epoch) == (Errors.NONE, 0, 0)
    # The same request again (lost response): the old id with its exhausted epoch is accepted
    # and gets the same id and epoch back.
    again = ctx.init(expected=ProducerIdAndEpoch(500, MAX - 1))
    assert (again.error, again.producer_id, again.producer_epoch) == (Errors.NONE, 0, 0)
    stale = ctx.init(expected=ProducerIdAndEpoch(500, MAX - 2))
    assert stale.error is Errors.PRODUCER_FENCED


def test_fence_at_the_last_epoch_rotates_on_the_retry() -> None:
    ctx = Ctx(transaction_version=1)
    ctx.load(
        "txn",
        {
            "producerId": 500,
            "producerEpoch": MAX - 1,
            "transactionStatus": 1,
            "transactionPartitions": [{"topic": "out", "partitionIds": [0]}],
        },
    )
    assert ctx.init().error is Errors.CONCURRENT_TRANSACTIONS
    assert ctx.epoch() == MAX  # the reserved last epoch fences the old producer
    ctx.markers_done()
    retry = ctx.init()
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (Errors.NONE, 0, 0)


def test_fence_at_the_last_epoch_under_v2_reserves_the_next_id() -> None:
    ctx = Ctx(transaction_version=2)
    ctx.load(
        "txn",
        {
            "producerId": 500,
            "producerEpoch": MAX - 1,
            "transactionStatus": 1,
            "transactionPartitions": [{"topic": "out", "partitionIds": [0]}],
        },
    )
    ctx.init()
    assert (ctx.log[-1].value["producerEpoch"], ctx.log[-1].value["nextProducerId"]) == (MAX, 0)
    ctx.markers_done()
    assert ctx.log[-1].value["producerId"] == 0
    assert ctx.log[-1].value["producerEpoch"] == 0
    assert ctx.log[-1].value["previousProducerId"] == 500


# ====================================================================== AddPartitionsToTxn


def test_add_partitions_opens_and_extends_the_transaction() -> None:
    ctx = Ctx()
    r = ctx.init()
    ctx.clock.advance(100)
    first = ctx.coord.add_partitions_to_txn("txn", 0, 0, [OUT1, OUT0], 0)
    assert first.response.partitions == (OUT0, OUT1)
    assert ctx.written(first) == [
        value(
            transactionStatus=1,
            transactionPartitions=[{"topic": "out", "partitionIds": [0, 1]}],
            transactionLastUpdateTimestampMs=T0 + 100,
            transactionStartTimestampMs=T0 + 100,
        )
    ]
    ctx.clock.advance(50)
    assert ctx.written(ctx.coord.add_partitions_to_txn("txn", 0, r.producer_epoch, [AUDIT], 2)) == [
        value(
            transactionStatus=1,
            transactionPartitions=[
                {"topic": "audit", "partitionIds": [3]},
                {"topic": "out", "partitionIds": [0, 1]},
            ],
            transactionLastUpdateTimestampMs=T0 + 150,
            transactionStartTimestampMs=T0 + 100,
            clientTransactionVersion=2,
        )
    ]


def test_adding_known_partitions_writes_nothing() -> None:
    ctx = Ctx()
    ongoing(ctx, OUT0, OUT1)
    n = len(ctx.log)
    assert ctx.add(0, 0, OUT1).error is Errors.NONE
    assert len(ctx.log) == n


@pytest.mark.parametrize(
    ("txn", "pid", "epoch", "error"),
    [
        ("", 0, 0, Errors.INVALID_REQUEST),
        ("other", 0, 0, Errors.INVALID_PRODUCER_ID_MAPPING),
        ("txn", 1, 0, Errors.INVALID_PRODUCER_ID_MAPPING),
        ("txn", 0, 1, Errors.PRODUCER_FENCED),
    ],
)
def test_add_partitions_errors(txn: str, pid: int, epoch: int, error: Errors) -> None:
    ctx = Ctx()
    ctx.init()
    response = ctx.add(pid, epoch, OUT0, txn=txn)
    assert (response.error, response.partitions) == (error, (OUT0,))
    assert len(ctx.log) == 1


def test_add_partitions_during_markers_is_concurrent_even_for_a_stale_epoch() -> None:
    ctx = Ctx()
    pid, epoch = ongoing(ctx)
    ctx.end(pid, epoch, commit=True)
    assert ctx.add(pid, epoch, OUT1).error is Errors.CONCURRENT_TRANSACTIONS
    assert ctx.add(pid, epoch + 5, OUT1).error is Errors.CONCURRENT_TRANSACTIONS


def test_add_offsets_adds_the_groups_offsets_partition() -> None:
    ctx = Ctx()
    ctx.init()
    result = ctx.coord.add_offsets_to_txn("txn", 0, 0, "my-group")
    # partition_for("my-group", 50) == 12 (docs/formats.md section 10)
    assert result.response.partitions == (TopicPartition("__consumer_offsets", 12),)
    written = ctx.written(result)
    assert written[0]["transactionPartitions"] == [
        {"topic": "__consumer_offsets", "partitionIds": [12]}
    ]
    assert written[0]["clientTransactionVersion"] == 0
    assert ctx.coord.events[-1].cause is TxnCause.ADD_OFFSETS


def test_verify_partitions_in_transaction() -> None:
    ctx = Ctx()
    ongoing(ctx, OUT0)
    verify = ctx.coord.verify_partitions_in_transaction
    assert verify("txn", 0, 0, [OUT0, OUT1]) == {
        OUT0: Errors.NONE,
        OUT1: Errors.TRANSACTION_ABORTABLE,
    }
    assert verify("txn", 0, 1, [OUT0]) == {OUT0: Errors.PRODUCER_FENCED}
    assert verify("txn", 3, 0, [OUT0]) == {OUT0: Errors.INVALID_PRODUCER_ID_MAPPING}
    assert verify("nope", 0, 0, [OUT0]) == {OUT0: Errors.INVALID_PRODUCER_ID_MAPPING}


# ====================================================================== EndTxn, client TV0


def test_commit_writes_prepare_then_complete() -> None:
    ctx = Ctx()
    pid, epoch = ongoing(ctx, OUT0)
    ctx.clock.advance(200)
    result = ctx.coord.end_txn("txn", pid, epoch, True, 0)
    assert ctx.written(result) == [
        value(
            transactionStatus=2,
            transactionPartitions=[{"topic": "out", "partitionIds": [0]}],
            transactionLastUpdateTimestampMs=T0 + 200,
            transactionStartTimestampMs=T0,
        )
    ]
    assert result.response == EndTxnResponse(Errors.NONE)
    pending = ctx.coord.pending_markers()
    assert [
        (m.transactional_id, m.producer_id, m.producer_epoch, m.committed) for m in pending
    ] == [("txn", 0, 0, True)]
    assert (pending[0].coordinator_epoch, pending[0].transaction_version) == (0, 0)
    assert ctx.end(pid, epoch, commit=True).error is Errors.CONCURRENT_TRANSACTIONS
    ctx.clock.advance(30)
    assert ctx.written(ctx.coord.complete_transaction("txn")) == [
        value(
            transactionStatus=4,
            transactionPartitions=[],
            # Kafka prepares Complete* right after Prepare* is logged: the decision's time.
            transactionLastUpdateTimestampMs=T0 + 200,
            transactionStartTimestampMs=T0,
        )
    ]
    assert ctx.coord.pending_markers() == []
    assert ctx.coord.events[-1] == TxnOutcome(
        "txn",
        0,
        0,
        TxnOutcomeKind.COMMITTED,
        TxnCause.CLIENT_COMMIT,
        T0,
        T0 + 200,
        T0 + 230,
        (OUT0,),
    )


def test_retried_end_txn_after_completion() -> None:
    ctx = Ctx()
    pid, epoch = ongoing(ctx)
    ctx.end(pid, epoch, commit=True)
    ctx.markers_done()
    n = len(ctx.log)
    assert ctx.end(pid, epoch, commit=True).error is Errors.NONE
    assert ctx.end(pid, epoch, commit=False).error is Errors.INVALID_TXN_STATE
    assert len(ctx.log) == n


def test_abort_writes_prepare_abort_then_complete_abort() -> None:
    ctx = Ctx()
    pid, epoch = ongoing(ctx, OUT0)
    assert ctx.end(pid, epoch, commit=False).error is Errors.NONE
    assert ctx.log[-1].value["transactionStatus"] == 3
    ctx.markers_done()
    assert ctx.log[-1].value["transactionStatus"] == 5
    assert ctx.end(pid, epoch, commit=False).error is Errors.NONE
    assert ctx.end(pid, epoch, commit=True).error is Errors.INVALID_TXN_STATE
    assert ctx.coord.events[-1].outcome is TxnOutcomeKind.ABORTED


@pytest.mark.parametrize("tv", [0, 2])
@pytest.mark.parametrize(
    ("txn", "pid", "epoch", "error"),
    [
        ("", 0, 1, Errors.INVALID_REQUEST),
        ("other", 0, 1, Errors.INVALID_PRODUCER_ID_MAPPING),
        ("txn", 7, 1, Errors.INVALID_PRODUCER_ID_MAPPING),
        ("txn", 0, 0, Errors.PRODUCER_FENCED),
        ("txn", 0, 2, Errors.PRODUCER_FENCED),
    ],
)
def test_end_txn_errors(txn: str, pid: int, epoch: int, error: Errors, tv: int) -> None:
    ctx = Ctx()
    ctx.init()
    ctx.init()  # epoch 1
    ctx.add(0, 1, OUT0)
    result = ctx.coord.end_txn(txn, pid, epoch, True, tv)
    assert result.response == EndTxnResponse(error)
    assert result.records == ()


def test_end_txn_in_empty_is_an_invalid_state() -> None:
    ctx = Ctx()
    ctx.init()
    assert ctx.end(0, 0, commit=True).error is Errors.INVALID_TXN_STATE
    assert ctx.end(0, 0, commit=False).error is Errors.INVALID_TXN_STATE


# ====================================================================== EndTxn, client TV2


def test_v2_commit_bumps_the_epoch_and_returns_it() -> None:
    ctx = Ctx()
    pid, epoch = ongoing(ctx, OUT0, tv=2)
    result = ctx.coord.end_txn("txn", pid, epoch, True, 2)
    assert ctx.written(result)[0] == value(
        producerEpoch=1,
        transactionStatus=2,
        transactionPartitions=[{"topic": "out", "partitionIds": [0]}],
        transactionStartTimestampMs=T0,
        clientTransactionVersion=2,
    )
    assert result.response == EndTxnResponse(Errors.NONE, 0, 1)
    markers = ctx.coord.pending_markers_for("txn")
    assert markers is not None
    assert (markers.producer_epoch, markers.transaction_version) == (1, 2)
    ctx.markers_done()
    assert ctx.log[-1].value["producerEpoch"] == 1
    # A retry carries the old epoch: recognised, answered with the new one.
    assert ctx.end(pid, 0, commit=True, tv=2) == EndTxnResponse(Errors.NONE, 0, 1)
    assert ctx.end(pid, 0, commit=False, tv=2).error is Errors.INVALID_TXN_STATE
    # The outcome names the epoch the data used.
    assert ctx.coord.events[-1].producer_epoch == 0


def test_v2_abort_without_partitions() -> None:
    ctx = Ctx()
    ctx.init()
    assert ctx.end(0, 0, commit=True, tv=2).error is Errors.INVALID_TXN_STATE
    ctx.clock.advance(40)
    result = ctx.coord.end_txn("txn", 0, 0, False, 2)
    assert ctx.written(result) == [
        value(
            producerEpoch=1,
            transactionStatus=3,
            transactionPartitions=[],
            transactionLastUpdateTimestampMs=T0 + 40,
            transactionStartTimestampMs=T0 + 40,
            clientTransactionVersion=2,
        )
    ]
    assert ctx.coord.pending_markers_for("txn").partitions == ()  # type: ignore[union-attr]
    ctx.markers_done()
    assert ctx.state() is S.CompleteAbort
    # Abort at the current epoch again: another empty abort; at the old epoch: a retry.
    assert ctx.end(0, 0, commit=False, tv=2) == EndTxnResponse(Errors.NONE, 0, 1)
    assert ctx.end(0, 1, commit=False, tv=2) == EndTxnResponse(Errors.NONE, 0, 2)


def test_v2_stale_epoch_in_empty_is_fenced() -> None:
    ctx = Ctx()
    ctx.init()
    ctx.init()
    assert ctx.end(0, 0, commit=False, tv=2).error is Errors.PRODUCER_FENCED


def test_v2_commit_racing_a_coordinator_abort_is_an_invalid_state() -> None:
    # Observed on a real 4.4.0 broker: the Java producer's commit after the coordinator's timeout
    # abort fails with InvalidTxnStateException (KAFKA-20785's PRODUCER_FENCED is not in 4.4.0).
    ctx = Ctx(transaction_version=2)
    pid, epoch = ongoing(ctx, OUT0, tv=2)
    ctx.clock.advance(60_001)
    ctx.run(ctx.coord.abort_timed_out_transactions())
    ctx.markers_done()
    assert (ctx.state(), ctx.epoch()) == (S.CompleteAbort, 1)
    assert ctx.end(pid, epoch, commit=True, tv=2).error is Errors.INVALID_TXN_STATE
    assert ctx.end(pid, 1, commit=True, tv=2).error is Errors.INVALID_TXN_STATE
    # Its abort at the retry epoch is the retry of the coordinator's abort: accepted.
    assert ctx.end(pid, epoch, commit=False, tv=2) == EndTxnResponse(Errors.NONE, pid, 1)


def test_v2_epoch_overflow_rotates_at_completion() -> None:
    ctx = Ctx()
    ctx.load(
        "txn",
        {
            "producerId": 500,
            "producerEpoch": MAX - 1,
            "transactionStatus": 1,
            "transactionPartitions": [{"topic": "out", "partitionIds": [0]}],
            "clientTransactionVersion": 2,
        },
    )
    result = ctx.coord.end_txn("txn", 500, MAX - 1, True, 2)
    prepare = ctx.written(result)[0]
    assert (prepare["producerId"], prepare["producerEpoch"], prepare["nextProducerId"]) == (
        500,
        MAX,
        0,
    )
    assert result.response == EndTxnResponse(Errors.NONE, 0, 0)
    ctx.markers_done()
    complete = ctx.log[-1].value
    assert (complete["producerId"], complete["previousProducerId"]) == (0, 500)
    assert (complete["producerEpoch"], complete["nextProducerId"]) == (0, -1)
    # The client retries with the old id and epoch: a retry across the rotation.
    assert ctx.end(500, MAX - 1, commit=True, tv=2) == EndTxnResponse(Errors.NONE, 0, 0)
    assert ctx.end(500, MAX - 1, commit=False, tv=2).error is Errors.INVALID_TXN_STATE
    assert ctx.end(501, 0, commit=True, tv=2).error is Errors.INVALID_PRODUCER_ID_MAPPING


# ====================================================================== timeouts


def test_timed_out_transaction_is_fenced_and_aborted() -> None:
    ctx = Ctx(transaction_version=1)
    ongoing(ctx, OUT0)
    ctx.clock.advance(60_000)
    assert ctx.run(ctx.coord.abort_timed_out_transactions()) == ()  # not strictly older yet
    ctx.clock.advance(1)
    assert ctx.run(ctx.coord.abort_timed_out_transactions()) == ("txn",)
    assert ctx.log[-1].value == value(
        producerEpoch=1,
        transactionStatus=3,
        transactionPartitions=[{"topic": "out", "partitionIds": [0]}],
        transactionLastUpdateTimestampMs=T0 + 60_001,
        transactionStartTimestampMs=T0,
    )
    assert ctx.run(ctx.coord.abort_timed_out_transactions()) == ()  # markers pending
    ctx.markers_done()
    outcome = ctx.coord.events[-1]
    assert isinstance(outcome, TxnOutcome)
    assert outcome.timed_out
    assert (outcome.outcome, outcome.producer_epoch) == (TxnOutcomeKind.ABORTED, 0)


def test_v2_timeout_bumps_the_epoch_once() -> None:
    ctx = Ctx(transaction_version=2)
    ongoing(ctx, OUT0, tv=2)
    ctx.clock.advance(60_001)
    ctx.run(ctx.coord.abort_timed_out_transactions())
    assert ctx.log[-1].value["producerEpoch"] == 1  # KAFKA-19367: not 2
    assert ctx.log[-1].value["clientTransactionVersion"] == 2


def test_only_ongoing_transactions_time_out() -> None:
    ctx = Ctx()
    ctx.init("idle")
    pid, epoch = ongoing(ctx, OUT0)
    assert ctx.end(pid, epoch, commit=True).error is Errors.NONE  # markers never written
    assert ctx.state() is S.PrepareCommit
    ctx.clock.advance(10 * 60_000)
    assert ctx.run(ctx.coord.abort_timed_out_transactions()) == ()


# ====================================================================== zombie fencing


def test_zombie_requests_are_fenced_after_a_new_instance_initialises() -> None:
    ctx = Ctx()
    pid, zombie_epoch = ongoing(ctx, OUT0)
    assert ctx.init().error is Errors.CONCURRENT_TRANSACTIONS
    ctx.markers_done()
    new = ctx.init()
    assert (new.producer_id, new.producer_epoch) == (pid, 2)
    assert ctx.end(pid, zombie_epoch, commit=True).error is Errors.PRODUCER_FENCED
    assert ctx.add(pid, zombie_epoch, OUT1).error is Errors.PRODUCER_FENCED
    assert ctx.run(ctx.coord.add_offsets_to_txn("txn", pid, zombie_epoch, "g")).error is (
        Errors.PRODUCER_FENCED
    )
    assert ctx.add(pid, new.producer_epoch, OUT1).error is Errors.NONE


# ====================================================================== expiry


def test_idle_transactional_id_expires_with_a_tombstone() -> None:
    ctx = Ctx(transactional_id_expiration_ms=1_000)
    ctx.init("a")
    ctx.init("b")
    ongoing(ctx, OUT0)  # 'txn' is Ongoing: never expires
    ctx.clock.advance(999)
    assert ctx.run(ctx.coord.expire_transactional_ids()) == ()
    ctx.clock.advance(1)
    result = ctx.coord.expire_transactional_ids()
    assert result.response == ("a", "b")
    assert [(r.key, r.value, r.value_schema, r.value_version) for r in result.records] == [
        ({"transactionalId": "a"}, None, None, None),
        ({"transactionalId": "b"}, None, None, None),
    ]
    ctx.run(result)
    assert ctx.coord.metadata("a") is None
    assert ctx.coord.transactional_ids() == ["txn"]
    last = ctx.coord.events[-1]
    assert isinstance(last, TxnStateChanged)
    assert (last.transactional_id, last.from_state, last.to_state, last.cause) == (
        "b",
        S.Empty,
        S.Dead,
        TxnCause.EXPIRED,
    )
    described = ctx.coord.describe_transactions(["a"])[0]
    assert described.error is Errors.TRANSACTIONAL_ID_NOT_FOUND
    # The id comes back as a brand-new one with a new producer id.
    assert ctx.init("a").producer_id == 3


def test_completed_transaction_expires_counting_from_its_last_update() -> None:
    ctx = Ctx(transactional_id_expiration_ms=1_000)
    pid, epoch = ongoing(ctx)
    ctx.clock.advance(500)
    ctx.end(pid, epoch, commit=False)
    ctx.markers_done()
    ctx.clock.advance(999)
    assert ctx.run(ctx.coord.expire_transactional_ids()) == ()
    ctx.clock.advance(1)
    assert ctx.run(ctx.coord.expire_transactional_ids()) == ("txn",)


# ====================================================================== admin


def test_describe_and_list_transactions() -> None:
    ctx = Ctx()
    ongoing(ctx, OUT1, OUT0)
    ctx.init("idle")
    ctx.clock.advance(5_000)
    (described,) = ctx.coord.describe_transactions(["txn"])
    assert (described.error, described.state, described.partitions) == (
        Errors.NONE,
        S.Ongoing,
        (OUT0, OUT1),
    )
    assert described.transaction_start_time_ms == T0
    assert ctx.coord.describe_transactions([""])[0].error is Errors.INVALID_REQUEST
    listed = ctx.coord.list_transactions()
    assert listed.transactions == (
        ListedTransaction("idle", 1, S.Empty),
        ListedTransaction("txn", 0, S.Ongoing),
    )
    by_state = ctx.coord.list_transactions(states=["Ongoing", "Bogus"])
    assert [t.transactional_id for t in by_state.transactions] == ["txn"]
    assert by_state.unknown_state_filters == ("Bogus",)
    assert [
        t.transactional_id for t in ctx.coord.list_transactions(producer_ids=[1]).transactions
    ] == ["idle"]
    # Running longer than 4 s: only the open transaction (Empty has start -1, so it is 'long').
    long_running = ctx.coord.list_transactions(states=["Ongoing"], duration_ms=4_000)
    assert [t.transactional_id for t in long_running.transactions] == ["txn"]
    assert ctx.coord.list_transactions(states=["Ongoing"], duration_ms=5_000).transactions == ()


# ====================================================================== determinism


def _scenario() -> Ctx:
    ctx = Ctx()
    for i in range(3):
        txn = f"t{i}"
        r = ctx.init(txn)
        ctx.add(r.producer_id, r.producer_epoch, OUT0, TopicPartition("out", i), txn=txn)
        ctx.clock.advance(10)
        ctx.end(r.producer_id, r.producer_epoch, commit=i != 1, txn=txn, tv=i % 2 * 2)
    ctx.run(ctx.coord.abort_timed_out_transactions())
    for m in ctx.coord.pending_markers():
        ctx.markers_done(m.transactional_id)
    ctx.init("t0")
    return ctx


def test_same_calls_give_the_same_records_and_events() -> None:
    a, b = _scenario(), _scenario()
    assert [(r.key, r.value) for r in a.log] == [(r.key, r.value) for r in b.log]
    assert a.coord.events == b.coord.events
    # 3 x (Empty, Ongoing, Prepare*, Complete*) + the final Empty
    assert len(a.log) == 13
