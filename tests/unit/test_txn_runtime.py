"""The transaction runtime end to end: logs, markers, LSO/HW, timers, fencing, determinism."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from offsetscope.clock import VirtualClock
from offsetscope.protocol import decode_record, partition_for
from offsetscope.protocol.records import CoordinatorRecord
from offsetscope.protocol.states import TransactionState as S
from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.log import AbortedTxn, LogRecord, LogStore, PartitionLog
from offsetscope.sim.coordinator.producer_state import MarkerResult
from offsetscope.sim.coordinator.txn.config import TransactionCoordinatorConfig
from offsetscope.sim.coordinator.txn.events import TxnCause, TxnOutcome, TxnOutcomeKind
from offsetscope.sim.coordinator.txn.metadata import TopicPartition
from offsetscope.sim.coordinator.txn.runtime import MarkerWriteError, TxnRuntime

T0 = 1_700_000_000_000
OUT0 = TopicPartition("out", 0)
OUT1 = TopicPartition("out", 1)
COMMIT_KEY = bytes.fromhex("00000001")
ABORT_KEY = bytes.fromhex("00000000")


def make(**config: Any) -> tuple[TxnRuntime, VirtualClock, LogStore]:
    clock = VirtualClock(T0)
    logs = LogStore()
    logs.create_topic("out", 2)
    logs.create_topic("__consumer_offsets", 4)
    cfg = TransactionCoordinatorConfig(**{"transaction_state_partitions": 3, **config})
    return TxnRuntime(clock=clock, logs=logs, config=cfg), clock, logs


def send(
    rt: TxnRuntime, tp: TopicPartition, n: int, pid: int, epoch: int, seq: int, **kw: Any
) -> Any:
    now = rt.clock.now_ms()
    records = [LogRecord(key=b"k%d" % i, value=b"v%d" % i, timestamp=now) for i in range(n)]
    return rt.produce(
        tp.topic,
        tp.partition,
        records,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        **kw,
    )


def txn_state_values(rt: TxnRuntime, txn: str) -> list[tuple[int, dict[str, Any] | None]]:
    """(batch timestamp, decoded value) of every record of ``txn`` in ``__transaction_state``."""
    log = rt.logs.partition("__transaction_state", rt.transaction_state_partition(txn))
    out = []
    for batch in log.batches:
        assert (batch.producer_id, batch.is_transactional, batch.is_control) == (-1, False, False)
        for rec in batch.records:
            decoded = decode_record("__transaction_state", rec.key, rec.value)
            assert isinstance(decoded, CoordinatorRecord)
            if decoded.key["transactionalId"] == txn:
                out.append((rec.timestamp, None if decoded.value is None else dict(decoded.value)))
    return out


def controls(log: PartitionLog) -> list[tuple[int, bytes | None, int]]:
    """(offset, control key, epoch) of every marker in a partition."""
    return [
        (b.base_offset, b.records[0].key, b.producer_epoch) for b in log.batches if b.is_control
    ]


# ---------------------------------------------------------------------- commit / abort


def test_committed_transaction_end_to_end() -> None:
    rt, clock, logs = make()
    init = rt.init_producer_id("app-1", 60_000)
    pid, epoch = init.producer_id, init.producer_epoch
    assert rt.add_partitions_to_txn("app-1", pid, epoch, [OUT0, OUT1]).error is Errors.NONE
    assert send(rt, OUT0, 3, pid, epoch, 0, transactional_id="app-1").error is Errors.NONE
    assert send(rt, OUT1, 1, pid, epoch, 0, transactional_id="app-1").error is Errors.NONE
    assert rt.add_offsets_to_txn("app-1", pid, epoch, "grp").error is Errors.NONE
    out0, out1 = logs.partition("out", 0), logs.partition("out", 1)
    # While open: the high watermark moves, the last stable offset stays at the first record.
    assert (out0.high_watermark, out0.last_stable_offset) == (3, 0)
    assert (out1.high_watermark, out1.last_stable_offset) == (1, 0)

    clock.advance(25)
    assert rt.end_txn("app-1", pid, epoch, committed=True).error is Errors.NONE
    # Markers were written at once (marker_delay_ms = 0).
    assert controls(out0) == [(3, COMMIT_KEY, 0)]
    assert controls(out1) == [(1, COMMIT_KEY, 0)]
    offsets = logs.partition("__consumer_offsets", partition_for("grp", 4))
    assert controls(offsets) == [(0, COMMIT_KEY, 0)]
    assert (out0.high_watermark, out0.last_stable_offset) == (4, 4)
    assert (out1.high_watermark, out1.last_stable_offset) == (2, 2)
    assert out0.aborted == out1.aborted == []

    statuses = [(ts, v["transactionStatus"]) for ts, v in txn_state_values(rt, "app-1") if v]
    assert statuses == [(T0, 0), (T0, 1), (T0, 1), (T0 + 25, 2), (T0 + 25, 4)]
    outcome = rt.events[-1]
    assert isinstance(outcome, TxnOutcome)
    assert outcome.outcome is TxnOutcomeKind.COMMITTED
    assert outcome.partitions == (
        TopicPartition("__consumer_offsets", partition_for("grp", 4)),
        OUT0,
        OUT1,
    )


def test_aborted_transaction_is_indexed_and_releases_the_lso() -> None:
    rt, _clock, logs = make()
    out0 = logs.partition("out", 0)
    out0.append([LogRecord(b"a", b"b", T0)])  # a plain record first
    r = rt.init_producer_id("app-1", 60_000)
    rt.add_partitions_to_txn("app-1", r.producer_id, r.producer_epoch, [OUT0])
    send(rt, OUT0, 2, r.producer_id, r.producer_epoch, 0, transactional_id="app-1")
    assert out0.last_stable_offset == 1
    rt.end_txn("app-1", r.producer_id, r.producer_epoch, committed=False)
    assert controls(out0) == [(3, ABORT_KEY, 0)]
    assert out0.aborted == [AbortedTxn(r.producer_id, 1, 3, 4)]
    assert (out0.high_watermark, out0.last_stable_offset) == (4, 4)


def test_marker_delay_keeps_the_transaction_pending() -> None:
    rt, _clock, logs = make(marker_delay_ms=50)
    r = rt.init_producer_id("app-1", 60_000)
    rt.add_partitions_to_txn("app-1", r.producer_id, r.producer_epoch, [OUT0])
    send(rt, OUT0, 1, r.producer_id, r.producer_epoch, 0, transactional_id="app-1")
    rt.end_txn("app-1", r.producer_id, r.producer_epoch, committed=True)
    out0 = logs.partition("out", 0)
    assert out0.last_stable_offset == 0
    assert rt.next_deadline() == T0 + 50
    assert rt.init_producer_id("app-1", 60_000).error is Errors.CONCURRENT_TRANSACTIONS
    add = rt.add_partitions_to_txn("app-1", r.producer_id, r.producer_epoch, [OUT1])
    assert add.error is Errors.CONCURRENT_TRANSACTIONS
    rt.run_until(T0 + 49)
    assert rt.coordinator.metadata("app-1").state is S.PrepareCommit  # type: ignore[union-attr]
    rt.run_until(T0 + 50)
    assert rt.coordinator.metadata("app-1").state is S.CompleteCommit  # type: ignore[union-attr]
    assert out0.last_stable_offset == 2
    # The marker's record carries the time it was written.
    assert out0.batches[-1].records[0].timestamp == T0 + 50
    assert txn_state_values(rt, "app-1")[-1][0] == T0 + 50


# ---------------------------------------------------------------------- transactions V2


def test_v2_producer_adds_partitions_through_the_leader_and_bumps_per_transaction() -> None:
    rt, _clock, logs = make()
    r = rt.init_producer_id("app-2", 60_000)
    pid, epoch = r.producer_id, r.producer_epoch
    # No AddPartitionsToTxn: the leader adds the partition when the first batch arrives.
    assert send(
        rt, OUT0, 2, pid, epoch, 0, transactional_id="app-2", client_transaction_version=2
    ).error is (Errors.NONE)
    meta = rt.coordinator.metadata("app-2")
    assert meta is not None
    assert (meta.state, meta.partitions, meta.client_transaction_version) == (S.Ongoing, {OUT0}, 2)
    end = rt.end_txn("app-2", pid, epoch, committed=True, client_transaction_version=2)
    assert (end.error, end.producer_id, end.producer_epoch) == (Errors.NONE, pid, epoch + 1)
    out0 = logs.partition("out", 0)
    assert controls(out0) == [(2, COMMIT_KEY, epoch + 1)]
    # The next transaction uses the returned epoch, restarting sequences at 0.
    nxt = send(
        rt, OUT0, 1, pid, epoch + 1, 0, transactional_id="app-2", client_transaction_version=2
    )
    assert nxt.error is Errors.NONE
    assert out0.last_stable_offset == 3
    end2 = rt.end_txn("app-2", pid, epoch + 1, committed=False, client_transaction_version=2)
    assert end2.producer_epoch == epoch + 2
    assert controls(out0)[-1] == (4, ABORT_KEY, epoch + 2)
    assert out0.aborted == [AbortedTxn(pid, 3, 4, 5)]


# ---------------------------------------------------------------------- verification


def test_transactional_write_to_a_partition_not_in_the_transaction_is_refused() -> None:
    rt, _clock, logs = make()
    r = rt.init_producer_id("app-1", 60_000)
    rt.add_partitions_to_txn("app-1", r.producer_id, r.producer_epoch, [OUT0])
    refused = send(rt, OUT1, 1, r.producer_id, r.producer_epoch, 0, transactional_id="app-1")
    assert refused.error is Errors.TRANSACTION_ABORTABLE
    assert logs.partition("out", 1).high_watermark == 0


def test_without_verification_the_leader_takes_any_transactional_write() -> None:
    rt, _clock, logs = make(transaction_partition_verification_enable=False)
    r = rt.init_producer_id("app-1", 60_000)
    accepted = send(rt, OUT1, 1, r.producer_id, r.producer_epoch, 0, transactional_id="app-1")
    # The coordinator does not know this partition: a hanging transaction (what KIP-890 fixes).
    assert accepted.error is Errors.NONE
    assert logs.partition("out", 1).last_stable_offset == 0


# ---------------------------------------------------------------------- zombies


def test_zombie_producer_is_fenced_everywhere() -> None:
    rt, _clock, logs = make()
    old = rt.init_producer_id("app-1", 60_000)
    pid, zombie = old.producer_id, old.producer_epoch
    rt.add_partitions_to_txn("app-1", pid, zombie, [OUT0, OUT1])
    send(rt, OUT0, 2, pid, zombie, 0, transactional_id="app-1")
    # A new instance starts: the open transaction is fenced and aborted.
    assert rt.init_producer_id("app-1", 60_000).error is Errors.CONCURRENT_TRANSACTIONS
    out0 = logs.partition("out", 0)
    assert controls(out0) == [(2, ABORT_KEY, zombie + 1)]
    assert out0.aborted == [AbortedTxn(pid, 0, 2, 3)]
    new = rt.init_producer_id("app-1", 60_000)
    assert (new.error, new.producer_id, new.producer_epoch) == (Errors.NONE, pid, zombie + 2)
    # The zombie's next batch starts a transaction here: verification fences it.
    assert (
        send(rt, OUT0, 1, pid, zombie, 2, transactional_id="app-1").error is Errors.PRODUCER_FENCED
    )
    assert rt.end_txn("app-1", pid, zombie, committed=True).error is Errors.PRODUCER_FENCED
    # Once the new instance writes, the partition itself rejects the old epoch.
    rt.add_partitions_to_txn("app-1", pid, new.producer_epoch, [OUT0])
    assert (
        send(rt, OUT0, 1, pid, new.producer_epoch, 0, transactional_id="app-1").error is Errors.NONE
    )
    late = send(rt, OUT0, 1, pid, zombie, 2, transactional_id="app-1")
    assert late.error is Errors.INVALID_PRODUCER_EPOCH
    fenced = [e for e in rt.events if isinstance(e, TxnOutcome)]
    assert [(o.cause, o.outcome, o.producer_epoch) for o in fenced] == [
        (TxnCause.FENCED_BY_NEW_INSTANCE, TxnOutcomeKind.ABORTED, zombie)
    ]


# ---------------------------------------------------------------------- timers


def test_timeout_check_aborts_on_its_period() -> None:
    rt, _clock, logs = make()
    r = rt.init_producer_id("slow", 20_000)
    rt.add_partitions_to_txn("slow", r.producer_id, r.producer_epoch, [OUT0])
    send(rt, OUT0, 1, r.producer_id, r.producer_epoch, 0, transactional_id="slow")
    rt.run_until(T0 + 20_000)  # checks at +10 s and +20 s: not older than 20 s yet
    assert rt.coordinator.metadata("slow").state is S.Ongoing  # type: ignore[union-attr]
    rt.run_until(T0 + 30_000)
    meta = rt.coordinator.metadata("slow")
    assert meta is not None
    assert (meta.state, meta.producer_epoch) == (S.CompleteAbort, r.producer_epoch + 1)
    values = txn_state_values(rt, "slow")
    assert [(ts, v["transactionStatus"]) for ts, v in values[-2:] if v] == [
        (T0 + 30_000, 3),
        (T0 + 30_000, 5),
    ]
    out0 = logs.partition("out", 0)
    assert (out0.high_watermark, out0.last_stable_offset) == (2, 2)
    outcome = rt.events[-1]
    assert isinstance(outcome, TxnOutcome)
    assert outcome.timed_out
    assert rt.next_deadline() == T0 + 40_000


def test_expiry_job_tombstones_idle_ids_in_one_batch_per_partition() -> None:
    rt, clock, logs = make(
        transactional_id_expiration_ms=7_200_000,
        transaction_state_partitions=1,
    )
    rt.init_producer_id("a", 60_000)
    rt.init_producer_id("b", 60_000)
    clock.advance(60_000)
    rt.init_producer_id("c", 60_000)
    rt.run_until(T0 + 7_200_000)
    log = logs.partition("__transaction_state", 0)
    last = log.batches[-1]
    assert [(rec.value, rec.timestamp) for rec in last.records] == [
        (None, T0 + 7_200_000),
        (None, T0 + 7_200_000),
    ]
    keys = [decode_record("__transaction_state", rec.key, None) for rec in last.records]
    assert [k.key["transactionalId"] for k in keys if isinstance(k, CoordinatorRecord)] == [
        "a",
        "b",
    ]
    assert rt.coordinator.transactional_ids() == ["c"]
    rt.run_until(T0 + 10_800_000)
    assert rt.coordinator.transactional_ids() == []


# ---------------------------------------------------------------------- marker sinks


@dataclass
class RecordingOffsetStore:
    """A stand-in for the group coordinator's marker sink: appends through the real leader."""

    rt: TxnRuntime | None = None
    calls: list[tuple[int, int, bool]] = field(default_factory=list)

    def write_txn_marker(self, **kw: Any) -> MarkerResult:
        assert self.rt is not None
        self.calls.append((kw["partition"], kw["producer_id"], kw["committed"]))
        return self.rt.leaders.leader(kw["topic"], kw["partition"]).append_marker(
            producer_id=kw["producer_id"],
            producer_epoch=kw["producer_epoch"],
            committed=kw["committed"],
            coordinator_epoch=kw["coordinator_epoch"],
            transaction_version=kw["transaction_version"],
            timestamp=kw["timestamp"],
        )


def test_offsets_partition_markers_go_to_the_offset_store() -> None:
    clock = VirtualClock(T0)
    logs = LogStore()
    logs.create_topic("out", 1)
    logs.create_topic("__consumer_offsets", 4)
    store = RecordingOffsetStore()
    rt = TxnRuntime(clock=clock, logs=logs, offset_markers=store)
    store.rt = rt
    r = rt.init_producer_id("app", 60_000)
    rt.add_partitions_to_txn("app", r.producer_id, r.producer_epoch, [TopicPartition("out", 0)])
    rt.add_offsets_to_txn("app", r.producer_id, r.producer_epoch, "grp")
    rt.end_txn("app", r.producer_id, r.producer_epoch, committed=False)
    assert store.calls == [(partition_for("grp", 4), r.producer_id, False)]
    assert controls(logs.partition("out", 0)) == [(0, ABORT_KEY, 0)]


def test_rejected_marker_is_a_coordinator_bug() -> None:
    rt, _clock, _logs = make()
    r = rt.init_producer_id("app", 60_000)
    rt.add_partitions_to_txn("app", r.producer_id, r.producer_epoch, [OUT0])
    # A newer coordinator already wrote a marker here for this producer.
    rt.leaders.leader("out", 0).append_marker(
        producer_id=r.producer_id,
        producer_epoch=r.producer_epoch,
        committed=True,
        coordinator_epoch=9,
        transaction_version=0,
        timestamp=T0,
    )
    with pytest.raises(MarkerWriteError) as info:
        rt.end_txn("app", r.producer_id, r.producer_epoch, committed=True)
    assert info.value.result.error is Errors.TRANSACTION_COORDINATOR_FENCED
    assert info.value.partition == OUT0


def test_markers_skip_deleted_partitions() -> None:
    rt, _clock, logs = make()
    r = rt.init_producer_id("app", 60_000)
    rt.add_partitions_to_txn(
        "app", r.producer_id, r.producer_epoch, [OUT0, TopicPartition("gone", 0)]
    )
    rt.end_txn("app", r.producer_id, r.producer_epoch, committed=True)
    assert rt.coordinator.metadata("app").state is S.CompleteCommit  # type: ignore[union-attr]
    assert controls(logs.partition("out", 0)) == [(0, COMMIT_KEY, 0)]


# ---------------------------------------------------------------------- determinism


def _run_scenario() -> tuple[list[Any], list[Any]]:
    rt, clock, logs = make(marker_delay_ms=5)
    for i, txn in enumerate(["a", "b", "c"]):
        r = rt.init_producer_id(txn, 15_000)
        tv = 2 if i == 1 else 0
        if tv == 0:
            rt.add_partitions_to_txn(txn, r.producer_id, r.producer_epoch, [OUT0, OUT1])
        send(
            rt,
            OUT0,
            2,
            r.producer_id,
            r.producer_epoch,
            0,
            transactional_id=txn,
            client_transaction_version=tv,
        )
        clock.advance(3)
    rt.end_txn("a", 0, 0, committed=True)
    rt.end_txn("b", 1, 0, committed=False, client_transaction_version=2)
    rt.run_until(T0 + 40_000)  # 'c' times out
    rt.init_producer_id("a", 15_000)
    dump = [
        (
            log.topic,
            log.partition,
            b.base_offset,
            b.producer_id,
            b.producer_epoch,
            b.is_control,
            b.records,
        )
        for log in logs
        for b in log.batches
    ]
    return dump, list(rt.events)


def test_same_scenario_same_bytes_and_events() -> None:
    first, second = _run_scenario(), _run_scenario()
    assert first == second
    dump, events = first
    # __transaction_state: a 5, b 4, c 4 batches; out-0: 3 data + 3 markers; out-1: 2 markers
    assert len(dump) == 21
    assert [e.cause for e in events if isinstance(e, TxnOutcome)] == [
        TxnCause.CLIENT_COMMIT,
        TxnCause.CLIENT_ABORT,
        TxnCause.TIMEOUT,
    ]


# ---------------------------------------------------------------------- with the group coordinator


def test_transactional_offsets_resolve_through_the_group_coordinator() -> None:
    from offsetscope.sim.coordinator.group import messages as msg
    from offsetscope.sim.coordinator.group.config import GroupCoordinatorConfig
    from offsetscope.sim.coordinator.runtime import GroupCoordinatorRuntime
    from offsetscope.sim.coordinator.txn.runtime import GroupRuntimeMarkerSink

    clock = VirtualClock(T0)
    logs = LogStore()
    logs.create_topic("out", 1)
    groups = GroupCoordinatorRuntime(
        logs, clock, GroupCoordinatorConfig(offsets_topic_partitions=4)
    )
    rt = TxnRuntime(clock=clock, logs=logs, offset_markers=GroupRuntimeMarkerSink(groups))

    def fetch() -> int:
        response = groups.fetch_offsets(
            msg.OffsetFetchRequest("grp", (msg.OffsetFetchTopic("out", (0,)),))
        )
        return response.offsets()[("out", 0)].committed_offset

    def txn_commit(offset: int, committed: bool) -> None:
        r = rt.init_producer_id("app", 60_000)
        assert (
            rt.add_offsets_to_txn("app", r.producer_id, r.producer_epoch, "grp").error
            is Errors.NONE
        )
        request = msg.TxnOffsetCommitRequest(
            "app",
            "grp",
            r.producer_id,
            r.producer_epoch,
            (msg.OffsetCommitTopic("out", (msg.OffsetCommitPartition(0, offset),)),),
        )
        assert set(groups.txn_commit_offsets(request).errors().values()) == {Errors.NONE}
        assert fetch() == (-1 if offset == 7 else 7)  # pending: not visible yet
        assert rt.end_txn("app", r.producer_id, r.producer_epoch, committed=committed).error is (
            Errors.NONE
        )

    txn_commit(7, committed=True)
    assert fetch() == 7
    txn_commit(9, committed=False)
    assert fetch() == 7
    offsets_log = logs.partition("__consumer_offsets", partition_for("grp", 4))
    assert controls(offsets_log) == [(1, COMMIT_KEY, 0), (3, ABORT_KEY, 1)]
    assert offsets_log.aborted == [AbortedTxn(0, 2, 3, 4)]


def test_events_serialise_as_json_lines() -> None:
    import json

    from offsetscope.sim.coordinator.txn.events import event_to_dict

    rt, clock, _ = make()
    r = rt.init_producer_id("app", 60_000)
    rt.add_partitions_to_txn("app", r.producer_id, r.producer_epoch, [OUT1])
    clock.advance(9)
    rt.end_txn("app", r.producer_id, r.producer_epoch, committed=True)
    lines = [json.loads(json.dumps(event_to_dict(e))) for e in rt.events]
    assert lines[0] == {
        "event": "transaction_state_changed",
        "at_ms": T0,
        "transactional_id": "app",
        "producer_id": 0,
        "producer_epoch": 0,
        "from_state": None,
        "to_state": "Empty",
        "cause": "init_producer_id",
        "persisted": True,
    }
    assert [(x["from_state"], x["to_state"]) for x in lines[1:4]] == [
        ("Empty", "Ongoing"),
        ("Ongoing", "PrepareCommit"),
        ("PrepareCommit", "CompleteCommit"),
    ]
    assert lines[-1] == {
        "event": "transaction_outcome",
        "transactional_id": "app",
        "producer_id": 0,
        "producer_epoch": 0,
        "outcome": "committed",
        "cause": "client_commit",
        "timed_out": False,
        "fenced": False,
        "started_ms": T0,
        "decided_ms": T0 + 9,
        "completed_ms": T0 + 9,
        "partitions": [{"topic": "out", "partition": 1}],
    }
