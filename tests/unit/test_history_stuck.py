"""Stuck last stable offsets: the fold over end-offset samples, what holds the LSO (a
transaction its coordinator knows, or a hanging one), the groups blocked behind it."""

from __future__ import annotations

import dataclasses

import pytest
from history_log import T0

from offsetscope.history import stuck
from offsetscope.history.rows import EndOffsetSample, TransactionRow
from offsetscope.sim.coordinator.log import LogRecord, PartitionLog

S = 1_000
MIN = 60 * S
BOUND = 5 * MIN


def sample(at: int, hwm: int, lso: int) -> EndOffsetSample:
    return EndOffsetSample("payments", 2, 0, hwm, lso, at)


def open_txn(
    tid: str, pid: int, started: int, parts: tuple[tuple[str, int], ...]
) -> TransactionRow:
    return TransactionRow(
        transactional_id=tid,
        record_partition=0,
        first_record_offset=started // S,
        producer_id=pid,
        producer_epoch=3,
        end_producer_id=None,
        end_producer_epoch=None,
        previous_producer_id=None,
        next_producer_id=None,
        client_transaction_version=2,
        timeout_ms=15 * MIN,
        state="Ongoing",
        outcome="ongoing",
        started_at=started,
        ended_at=None,
        completed_at=None,
        duration_ms=None,
        partitions=parts,
        partition_count=len(parts),
        timed_out=False,
        fenced=False,
        fenced_by_producer_id=None,
        fenced_by_epoch=None,
        end_reason=None,
        end_reason_inferred=False,
        last_record_offset=started // S,
        updated_at=started,
    )


def fold(
    samples: list[EndOffsetSample],
    txns: tuple[TransactionRow, ...] = (),
    *,
    batch: int = 1,
    producers: dict[int, int] | None = None,
    positions: dict[str, int] | None = None,
) -> tuple[stuck.LsoWatch | None, list]:
    """Fold ``samples`` in batches of ``batch``, the state through its JSON form as the
    pipeline keeps it; the rows as materialised (the last version per episode)."""
    state: stuck.LsoWatch | None = None
    rows: dict[int, object] = {}
    asked = []

    def open_transactions() -> tuple[TransactionRow, ...]:
        asked.append(1)
        return txns

    for i in range(0, len(samples), batch):
        chunk = samples[i : i + batch]
        state, out = stuck.fold_lso(
            state,
            chunk,
            bound_ms=BOUND,
            open_transactions=open_transactions,
            producers=producers,
            positions=positions,
            read_uncommitted=lambda g: g == "audit",
        )
        if state is not None:
            state = stuck.LsoWatch.from_json(state.to_json())
        for row in out:
            rows[row.stuck_since] = row
    return state, list(rows.values())


def test_an_lso_held_past_the_bound_while_records_arrive_is_stuck_until_it_moves() -> None:
    # LSO 100 from T0 on while the high watermark grows; it moves at T0 + 9 min.
    samples = [sample(T0 + m * MIN, 100 + 10 * m, 100) for m in range(9)]
    samples.append(sample(T0 + 9 * MIN, 200, 190))
    txn = open_txn("billing-tx", 42, T0 - 2 * S, (("payments", 2), ("ledger", 0)))
    _, (row,) = fold(samples, (txn,), positions={"billing": 100, "reports": 60, "audit": 150})
    assert (row.stuck_since, row.detected_at, row.resolved_at) == (T0, T0 + 5 * MIN, T0 + 9 * MIN)
    assert row.stuck_ms == 9 * MIN
    assert (row.cause, row.transactional_id, row.producer_id, row.producer_epoch) == (
        "open_transaction",
        "billing-tx",
        42,
        3,
    )
    assert row.open_for_ms == 8 * MIN + 2 * S  # at the last sample still at LSO 100
    assert (row.first_offset, row.first_offset_source, row.abort_command) == (100, "lso", None)
    # At the committed offset = the LSO: blocked; below it: will be; read_uncommitted: never.
    assert (row.blocked_groups, row.behind_groups) == (("billing",), ("reports",))
    assert (row.high_watermark, row.records_held) == (180, 80)


@pytest.mark.parametrize("batch", [1, 3, 10])
def test_the_episode_is_the_same_whatever_the_batches(batch: int) -> None:
    samples = [sample(T0 + m * MIN, 100 + 10 * m, 100) for m in range(9)]
    samples.append(sample(T0 + 9 * MIN, 200, 190))
    _, one = fold(samples)
    _, many = fold(samples, batch=batch)
    strip = [
        dataclasses.replace(r, blocked_groups=(), behind_groups=(), open_for_ms=None)
        for r in (*one, *many)
    ]
    assert strip[: len(one)] == strip[len(one) :]
    assert [(r.stuck_since, r.detected_at, r.resolved_at) for r in many] == [
        (T0, T0 + 5 * MIN, T0 + 9 * MIN)
    ]


def test_a_transaction_that_ends_within_the_bound_is_not_stuck() -> None:
    samples = [sample(T0 + m * MIN, 100 + 10 * m, 100) for m in range(5)]  # 4 min < bound
    samples += [sample(T0 + 5 * MIN, 160, 160), sample(T0 + 11 * MIN, 160, 160)]
    state, rows = fold(samples)
    assert rows == []
    assert state is not None
    assert state.stuck is None


def test_an_idle_partition_is_not_stuck() -> None:
    # No record after the LSO: nothing is held back, however long it stays.
    _, rows = fold([sample(T0 + m * MIN, 100, 100) for m in range(20)])
    assert rows == []
    # Records behind an LSO that never moved, but no record since: nothing new is held either.
    _, rows = fold([sample(T0 + m * MIN, 150, 100) for m in range(20)])
    assert rows == []


def test_samples_without_an_lso_say_nothing() -> None:
    samples = [sample(T0 + m * MIN, 100 + m, -1) for m in range(20)]
    state, rows = fold(samples)
    assert (state, rows) == (None, [])


def test_a_transaction_no_coordinator_knows_is_hanging_with_its_abort_command() -> None:
    samples = [sample(T0 + m * MIN, 100 + 10 * m, 100) for m in range(7)]
    other = open_txn("elsewhere", 9, T0, (("payments", 3),))
    _, (row,) = fold(samples, (other,), producers={77: 100, 81: 140})
    assert row.cause == "hanging_transaction"
    assert (row.producer_id, row.first_offset, row.first_offset_source) == (77, 100, "segments")
    assert row.transactional_id is None
    assert row.abort_command == (
        "kafka-transactions.sh --bootstrap-server HOST:PORT abort "
        "--topic payments --partition 2 --start-offset 100"
    )
    assert row.resolved_at is None


def test_producers_from_the_segments_pick_the_transaction_that_holds_the_lso() -> None:
    # Two open transactions list the partition; the segments say producer 42's began at the LSO.
    first = open_txn("early", 41, T0 - 10 * S, (("payments", 2),))
    holding = open_txn("late", 42, T0 - 5 * S, (("payments", 2),))
    samples = [sample(T0 + m * MIN, 100 + 10 * m, 100) for m in range(7)]
    _, (row,) = fold(samples, (first, holding), producers={42: 100, 41: 120})
    assert (row.transactional_id, row.producer_id, row.first_offset_source) == (
        "late",
        42,
        "segments",
    )
    # Without them (the AdminClient sampler) the oldest open transaction is named.
    _, (row,) = fold(samples, (first, holding))
    assert (row.transactional_id, row.first_offset, row.first_offset_source) == (
        "early",
        100,
        "lso",
    )


def test_open_transactions_are_read_only_when_a_partition_is_stuck() -> None:
    calls: list[int] = []

    def open_transactions() -> tuple[TransactionRow, ...]:
        calls.append(1)
        return ()

    stuck.fold_lso(
        None,
        [sample(T0 + m * MIN, 100 + m, 100 + m) for m in range(10)],
        bound_ms=BOUND,
        open_transactions=open_transactions,
    )
    assert calls == []


def test_the_lso_of_a_real_partition_log_with_an_open_transaction() -> None:
    """The bundled coordinator's partition log: a transaction left open holds its LSO while
    later non-transactional records raise the high watermark."""
    log = PartitionLog("payments", 2)
    log.append([LogRecord(None, b"v", T0)] * 5)
    samples = []
    log.append([LogRecord(None, b"t", T0)] * 2, producer_id=77, producer_epoch=0,
               is_transactional=True)  # fmt: skip
    for m in range(8):
        log.append([LogRecord(None, b"v", T0 + m * MIN)] * 3)
        samples.append(sample(T0 + m * MIN, log.high_watermark, log.last_stable_offset))
    _, (row,) = fold(samples, producers={77: 5})
    assert (row.last_stable_offset, row.cause, row.producer_id) == (5, "hanging_transaction", 77)
    assert row.records_held == log.high_watermark - 5
