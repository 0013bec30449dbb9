"""Transaction fold: outcomes, timeouts, fencing, expiry; checked against the bundled coordinator."""

from __future__ import annotations

import pytest
from history_log import T0, txn_log

from offsetscope.clock import VirtualClock
from offsetscope.history import fold_transactions
from offsetscope.history.events import Coordinates, Event, event_from_record
from offsetscope.history.rows import TransactionRow
from offsetscope.history.signals import hanging_transactions
from offsetscope.history.tables import materialize
from offsetscope.history.transactions import TxnIdState
from offsetscope.protocol import decode_record
from offsetscope.protocol.records import TRANSACTION_TOPIC, CoordinatorRecord
from offsetscope.protocol.states import TransactionState as St
from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.log import LogStore
from offsetscope.sim.coordinator.txn.config import TransactionCoordinatorConfig
from offsetscope.sim.coordinator.txn.coordinator import EndTxnResponse
from offsetscope.sim.coordinator.txn.events import TxnCause, TxnOutcome
from offsetscope.sim.coordinator.txn.metadata import TopicPartition
from offsetscope.sim.coordinator.txn.runtime import TxnRuntime

TID = "orders-writer"
PID = 9000


def fold(events: list[Event]) -> tuple[TxnIdState, list[TransactionRow]]:
    state, out = fold_transactions(None, events)
    assert state is not None
    rows = sorted(materialize(out.transactions).values(), key=lambda r: r.first_record_offset)
    return state, rows


def test_commit_then_client_abort_v0() -> None:
    log = txn_log()
    log.txn(TID, St.Empty, PID, 0, T0)
    log.txn(TID, St.Ongoing, PID, 0, T0 + 10, partitions=[("orders", 0)], start=T0 + 10)
    log.txn(TID, St.Ongoing, PID, 0, T0 + 20, partitions=[("orders", 0), ("orders", 1)],
            start=T0 + 10)  # fmt: skip
    log.txn(TID, St.PrepareCommit, PID, 0, T0 + 50, partitions=[("orders", 0), ("orders", 1)],
            start=T0 + 10)  # fmt: skip
    log.txn(TID, St.CompleteCommit, PID, 0, T0 + 55, start=T0 + 10)
    log.txn(TID, St.Ongoing, PID, 0, T0 + 100, partitions=[("orders", 2)], start=T0 + 100)
    log.txn(TID, St.PrepareAbort, PID, 0, T0 + 130, partitions=[("orders", 2)], start=T0 + 100)
    log.txn(TID, St.CompleteAbort, PID, 0, T0 + 131, start=T0 + 100)
    state, (t1, t2) = fold(log.events)
    assert (t1.outcome, t1.end_reason, t1.started_at, t1.ended_at, t1.completed_at) == (
        "committed",
        "client_commit",
        T0 + 10,
        T0 + 50,
        T0 + 55,
    )
    assert t1.duration_ms == 40
    assert t1.partitions == (("orders", 0), ("orders", 1))
    assert t1.state == "CompleteCommit"
    assert (t2.outcome, t2.end_reason, t2.timed_out, t2.fenced) == (
        "aborted",
        "client_abort",
        False,
        False,
    )
    assert not t2.end_reason_inferred
    assert state.open is None
    assert state.status == "CompleteAbort"


def test_timeout_v0_epoch_bump_after_the_timeout() -> None:
    log = txn_log()
    log.txn(TID, St.Ongoing, PID, 4, T0, partitions=[("orders", 0)], start=T0, timeout=10_000)
    log.txn(TID, St.PrepareAbort, PID, 5, T0 + 15_000, partitions=[("orders", 0)], start=T0,
            timeout=10_000)  # fmt: skip
    log.txn(TID, St.CompleteAbort, PID, 5, T0 + 15_000, start=T0, timeout=10_000)
    _, (t,) = fold(log.events)
    assert (t.end_reason, t.timed_out, t.fenced, t.end_reason_inferred) == (
        "timeout",
        True,
        False,
        False,
    )
    assert (t.producer_epoch, t.end_producer_epoch) == (4, 5)


def test_fencing_v0_names_the_fencing_epoch() -> None:
    log = txn_log()
    log.txn(TID, St.Ongoing, PID, 4, T0, partitions=[("orders", 0)], start=T0, timeout=60_000)
    log.txn(TID, St.PrepareAbort, PID, 5, T0 + 100, partitions=[("orders", 0)], start=T0)
    log.txn(TID, St.CompleteAbort, PID, 5, T0 + 100, start=T0)
    log.txn(TID, St.Empty, PID, 6, T0 + 200)
    _, out = fold_transactions(None, log.events)
    (t,) = materialize(out.transactions).values()
    assert (t.end_reason, t.fenced, t.timed_out, t.fenced_by_epoch, t.fenced_by_producer_id) == (
        "fenced",
        True,
        False,
        6,
        PID,
    )
    timeline = sorted(out.timeline, key=lambda r: (r.record_offset, r.seq))
    assert [(r.from_status, r.to_status, r.inferred) for r in timeline] == [
        (None, "Ongoing", False),
        ("Ongoing", "PrepareEpochFence", True),
        ("PrepareEpochFence", "PrepareAbort", False),
        ("PrepareAbort", "CompleteAbort", False),
        ("CompleteAbort", "Empty", False),
    ]


def test_tv2_commit_bumps_the_epoch_and_is_a_client_commit() -> None:
    log = txn_log()
    log.txn(TID, St.Ongoing, PID, 3, T0, partitions=[("orders", 0)], start=T0, ctv=2)
    log.txn(TID, St.PrepareCommit, PID, 4, T0 + 5, partitions=[("orders", 0)], start=T0, ctv=2)
    log.txn(TID, St.CompleteCommit, PID, 4, T0 + 5, start=T0, ctv=2)
    _, (t,) = fold(log.events)
    assert (t.end_reason, t.client_transaction_version, t.producer_epoch, t.end_producer_epoch) == (
        "client_commit",
        2,
        3,
        4,
    )


def test_tv2_epoch_overflow_rotates_the_producer_id() -> None:
    log = txn_log()
    log.txn(TID, St.Ongoing, PID, 32766, T0, partitions=[("orders", 0)], start=T0, ctv=2)
    log.txn(TID, St.PrepareCommit, PID, 32767, T0 + 5, partitions=[("orders", 0)], start=T0,
            ctv=2, next_pid=PID + 1)  # fmt: skip
    log.txn(TID, St.CompleteCommit, PID + 1, 0, T0 + 5, start=T0, ctv=2, prev_pid=PID)
    _, (t,) = fold(log.events)
    assert (t.next_producer_id, t.end_producer_id, t.end_producer_epoch) == (PID + 1, PID + 1, 0)


def test_tv2_abort_with_nothing_added_is_a_zero_length_transaction() -> None:
    log = txn_log()
    log.txn(TID, St.Empty, PID, 0, T0)
    log.txn(TID, St.PrepareAbort, PID, 1, T0 + 40, start=T0 + 40, ctv=2)
    log.txn(TID, St.CompleteAbort, PID, 1, T0 + 40, start=T0 + 40, ctv=2)
    _, (t,) = fold(log.events)
    assert (t.outcome, t.end_reason, t.duration_ms, t.partition_count, t.producer_epoch) == (
        "aborted",
        "client_abort",
        0,
        0,
        0,
    )


def test_reinit_while_ongoing_without_abort_records_is_a_fence() -> None:
    log = txn_log()
    log.txn(TID, St.Ongoing, PID, 4, T0, partitions=[("orders", 0)], start=T0)
    log.txn(TID, St.Empty, PID, 6, T0 + 100)
    state, (t,) = fold(log.events)
    assert (t.outcome, t.end_reason, t.fenced, t.fenced_by_epoch, t.end_reason_inferred) == (
        "aborted",
        "fenced",
        True,
        6,
        True,
    )
    assert state.open is None


def test_expiry_tombstone_ends_the_timeline() -> None:
    log = txn_log()
    log.txn(TID, St.Empty, PID, 0, T0)
    log.txn_tombstone(TID, T0 + 7 * 86_400_000)
    state, out = fold_transactions(None, log.events)
    assert state is not None
    assert out.transactions == ()
    last = max(out.timeline, key=lambda r: r.record_offset)
    assert (last.from_status, last.to_status, last.producer_id) == ("Empty", "Dead", None)
    assert state.status == "Dead"


def test_open_transaction_is_hanging_after_timeout_plus_margin() -> None:
    log = txn_log()
    log.txn(TID, St.Ongoing, PID, 0, T0, partitions=[("orders", 0)], start=T0, timeout=60_000)
    state, _ = fold(log.events)
    assert hanging_transactions([state], T0 + 60_000 + 29_999, 30_000) == []
    (hang,) = hanging_transactions([state], T0 + 95_000, 30_000)
    assert (hang.transactional_id, hang.state, hang.open_for_ms) == (TID, "Ongoing", 95_000)
    log.txn(TID, St.PrepareCommit, PID, 0, T0 + 1000, partitions=[("orders", 0)], start=T0)
    state, _ = fold(log.events)
    # markers never written: still open in PrepareCommit
    assert [h.state for h in hanging_transactions([state], T0 + 95_000, 30_000)] == [
        "PrepareCommit"
    ]
    log.txn(TID, St.CompleteCommit, PID, 0, T0 + 1001, start=T0)
    state, _ = fold(log.events)
    assert hanging_transactions([state], T0 + 95_000, 30_000) == []


def test_replay_is_idempotent_and_state_round_trips() -> None:
    log = txn_log()
    log.txn(TID, St.Ongoing, PID, 0, T0, partitions=[("orders", 0)], start=T0)
    log.txn(TID, St.PrepareAbort, PID, 1, T0 + 5, partitions=[("orders", 0)], start=T0)
    state, _ = fold_transactions(None, log.events)
    assert state is not None
    assert TxnIdState.from_json(state.to_json()) == state
    again, out = fold_transactions(state, log.events)
    assert again == state
    assert out.transactions == ()


# ---------------------------------------------------------------------- ground truth

_CAUSES = {
    TxnCause.CLIENT_COMMIT: "client_commit",
    TxnCause.CLIENT_ABORT: "client_abort",
    TxnCause.TIMEOUT: "timeout",
    TxnCause.FENCED_BY_NEW_INSTANCE: "fenced",
}


class _Client:
    """A transactional producer against the bundled coordinator's runtime."""

    def __init__(self, rt: TxnRuntime, tv: int) -> None:
        self.rt, self.tv = rt, tv
        self.init()

    def init(self) -> Errors:
        r = self.rt.init_producer_id(TID, 20_000)
        if r.error is Errors.NONE:
            self.pid, self.epoch = r.producer_id, r.producer_epoch
        return r.error

    def add(self, partition: int) -> None:
        tp = TopicPartition("orders", partition)
        r = self.rt.add_partitions_to_txn(TID, self.pid, self.epoch, [tp], self.tv)
        assert r.error is Errors.NONE

    def end(self, commit: bool) -> None:
        r: EndTxnResponse = self.rt.end_txn(TID, self.pid, self.epoch, commit, self.tv)
        assert r.error is Errors.NONE
        if r.producer_id >= 0:  # TV2 hands back the next id/epoch
            self.pid, self.epoch = r.producer_id, r.producer_epoch


def _drive(tv: int) -> tuple[list[Event], list[TxnOutcome]]:
    clock = VirtualClock(T0)
    logs = LogStore()
    logs.create_topic("orders", 3)
    config = TransactionCoordinatorConfig(
        transaction_state_partitions=1, offsets_topic_partitions=1, transaction_version=tv
    )
    rt = TxnRuntime(clock=clock, logs=logs, config=config)
    c = _Client(rt, tv)
    clock.advance(10)
    c.add(0)
    clock.advance(40)
    c.end(True)
    clock.advance(10)
    c.add(1)
    clock.advance(30)
    c.end(False)  # a client abort, then the producer carries on
    clock.advance(10)
    c.add(2)
    c.add(0)
    clock.advance(5)
    c.end(True)
    clock.advance(10)
    c.add(1)
    rt.run_until(clock.now_ms() + 35_000)  # timed out and aborted by the coordinator
    assert c.init() is Errors.NONE  # the producer re-initialises after its fence error
    clock.advance(10)
    c.add(2)
    clock.advance(100)
    assert c.init() is Errors.CONCURRENT_TRANSACTIONS  # a new instance fences the open one
    clock.advance(100)
    assert c.init() is Errors.NONE
    c.add(0)
    clock.advance(20)
    c.end(True)
    events: list[Event] = []
    part = logs.partition(TRANSACTION_TOPIC, 0)
    for batch in part.batches:
        for i, rec in enumerate(batch.records):
            decoded = decode_record(TRANSACTION_TOPIC, rec.key, rec.value)
            assert isinstance(decoded, CoordinatorRecord)
            at = Coordinates(TRANSACTION_TOPIC, 0, batch.base_offset + i, rec.timestamp)
            events.append(event_from_record(at, decoded))
    truth = [e for e in rt.events if isinstance(e, TxnOutcome)]
    return events, truth


@pytest.mark.parametrize("tv", [0, 2])
def test_matches_the_bundled_coordinators_ground_truth(tv: int) -> None:
    events, truth = _drive(tv)
    assert [_CAUSES[t.cause] for t in truth] == [
        "client_commit",
        "client_abort",
        "client_commit",
        "timeout",
        "fenced",
        "client_commit",
    ]
    _, rows = fold(events)
    assert len(rows) == len(truth)
    for row, t in zip(rows, truth, strict=True):
        assert row.end_reason == _CAUSES[t.cause]
        assert row.outcome == t.outcome.value
        assert (row.started_at, row.ended_at, row.completed_at) == (
            t.started_ms,
            t.decided_ms,
            t.completed_ms,
        )
        assert (row.producer_id, row.producer_epoch) == (t.producer_id, t.producer_epoch)
        assert row.partitions == tuple(sorted((p.topic, p.partition) for p in t.partitions))
        assert row.timed_out == (t.cause is TxnCause.TIMEOUT)
        assert row.fenced == (t.cause is TxnCause.FENCED_BY_NEW_INSTANCE)
        # V0/V1: the epoch proves the cause; V2: the timeout and the fence are inferred.
        certain = tv < 2 or t.cause in (TxnCause.CLIENT_COMMIT, TxnCause.CLIENT_ABORT)
        assert row.end_reason_inferred == (not certain)
    fenced = next(r for r in rows if r.fenced)
    assert fenced.fenced_by_epoch is not None
    assert fenced.fenced_by_epoch > (fenced.end_producer_epoch or 0)
