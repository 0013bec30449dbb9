"""Lag as of any time: records vs high watermark or LSO, seconds, data loss."""

from __future__ import annotations

import random
import struct

import numpy as np
import pytest
from history_log import T0, Log

from offsetscope.history import LagIndex, fold_offsets, record_time_lookup
from offsetscope.history.lag import append_time, append_times, watermark_series
from offsetscope.history.rows import EndOffsetSample, OffsetCommitRow
from offsetscope.sim.coordinator.log import LogRecord, PartitionLog

G = "billing"
S = 1_000


def commits(*entries: tuple[int, int]) -> tuple[OffsetCommitRow, ...]:
    """Non-transactional commits of G on orders-0: (seconds after T0, offset)."""
    log = Log()
    for sec, offset in entries:
        log.commit(G, "orders", 0, offset, T0 + sec * S)
    _, rows = fold_offsets(None, log.events)
    return rows


def sample(sec: int, hwm: int, *, lso: int = -1, start: int = 0) -> EndOffsetSample:
    return EndOffsetSample("orders", 0, start, hwm, lso, T0 + sec * S)


SAMPLES = [sample(0, 50), sample(30, 200), sample(60, 300), sample(90, 400)]


def index() -> LagIndex:
    return LagIndex(commits((10, 100), (70, 250)), SAMPLES)


def test_no_commit_yet_means_no_lag_row() -> None:
    assert index().lag(G, "orders", 0, T0 + 5 * S) is None


def test_commit_ahead_of_a_stale_sample_is_caught_up() -> None:
    row = index().lag(G, "orders", 0, T0 + 10 * S)
    assert row is not None
    assert (row.committed_offset, row.high_watermark, row.lag_records) == (100, 50, 0)
    assert (row.lag_seconds, row.lag_method) == (0.0, "caught_up")


@pytest.mark.parametrize(
    ("sec", "committed", "hwm", "records", "seconds"),
    [
        # target 101 lies between (0 s, 50) and (30 s, 200): appended at 10.2 s
        (45, 100, 200, 100, 34.8),
        # target 251 lies between (30 s, 200) and (60 s, 300): appended at 45.3 s
        (75, 250, 300, 50, 29.7),
        (95, 250, 400, 150, 49.7),
    ],
)
def test_lag_as_of_several_times_interpolates_seconds(
    sec: int, committed: int, hwm: int, records: int, seconds: float
) -> None:
    row = index().lag(G, "orders", 0, T0 + sec * S)
    assert row is not None
    assert (row.committed_offset, row.end_offset, row.lag_records) == (committed, hwm, records)
    assert row.lag_seconds == pytest.approx(seconds)
    assert row.lag_method == "interpolated"
    assert row.as_of == T0 + sec * S
    assert not row.data_loss


def test_commit_older_than_the_samples_extrapolates_backwards() -> None:
    idx = LagIndex(commits((10, 21)), SAMPLES)
    row = idx.lag(G, "orders", 0, T0 + 45 * S)
    assert row is not None
    # rate 150 records / 30 s from the first two samples: record 21 appended at -5.6 s
    assert row.lag_seconds == pytest.approx(50.6)
    assert row.lag_method == "extrapolated"


def test_exact_seconds_from_record_timestamps() -> None:
    times = record_time_lookup({("orders", 0): {99: T0 + 8_000, 101: T0 + 9_000}})
    row = index().lag(G, "orders", 0, T0 + 45 * S, record_time=times)
    assert row is not None
    # offset 100 is missing (compacted): the next record the group reads is 101
    assert (row.lag_seconds, row.lag_method) == (36.0, "exact")


def test_read_committed_lag_is_measured_against_the_last_stable_offset() -> None:
    idx = LagIndex(commits((70, 250)), [sample(80, 300, lso=260)])
    committed = idx.lag(G, "orders", 0, T0 + 80 * S, read_committed=True)
    uncommitted = idx.lag(G, "orders", 0, T0 + 80 * S, read_committed=False)
    assert committed is not None
    assert uncommitted is not None
    assert (committed.end_offset, committed.lag_records, committed.last_stable_offset) == (
        260,
        10,
        260,
    )
    assert (uncommitted.end_offset, uncommitted.lag_records) == (300, 50)
    # Either way the row carries both lags, and says which one lag_records is.
    for row in (committed, uncommitted):
        assert (row.lag_records_hwm, row.lag_records_lso) == (50, 10)
    assert (committed.lag_basis, committed.basis_reason) == ("lso", "read_committed_groups")
    assert (uncommitted.lag_basis, uncommitted.basis_reason) == (
        "high_watermark",
        "read_uncommitted_groups",
    )


def test_without_a_hint_the_lso_is_used_unless_the_group_committed_past_it() -> None:
    behind = LagIndex(commits((70, 250)), [sample(80, 300, lso=260)])
    row = behind.lag(G, "orders", 0, T0 + 80 * S)
    assert row is not None
    assert (row.lag_basis, row.basis_reason, row.lag_records, row.read_committed) == (
        "lso",
        "default",
        10,
        True,
    )
    # Only a read_uncommitted consumer can read past the LSO: its lag is to the high watermark.
    past = LagIndex(commits((70, 280)), [sample(80, 300, lso=260)]).lag(G, "orders", 0, T0 + 80 * S)
    assert past is not None
    assert (past.lag_basis, past.basis_reason, past.lag_records, past.lag_records_lso) == (
        "high_watermark",
        "read_past_lso",
        20,
        0,
    )
    # No LSO sampled: the high watermark stands in, and the row says so.
    unknown = index().lag(G, "orders", 0, T0 + 80 * S)
    assert unknown is not None
    assert (unknown.lag_basis, unknown.basis_reason, unknown.lag_records_lso) == (
        "high_watermark",
        "no_lso",
        None,
    )


def test_lag_in_seconds_against_each_end() -> None:
    # Offset 100 was appended at T0 + 10 s (interpolated between the samples around it); at
    # T0 + 60 s the group is 200 behind the high watermark and caught up with the LSO.
    idx = LagIndex(commits((10, 100)), [sample(0, 50), sample(20, 150), sample(60, 300, lso=100)])
    row = idx.lag(G, "orders", 0, T0 + 60 * S)
    assert row is not None
    assert (row.lag_records_hwm, row.lag_records_lso) == (200, 0)
    assert row.lag_seconds_hwm == pytest.approx(49.8)
    assert (row.lag_seconds_lso, row.lag_seconds, row.lag_method) == (0.0, 0.0, "caught_up")


def test_open_transaction_in_a_real_partition_log_hides_records_from_read_committed() -> None:
    data = PartitionLog("orders", 0)
    data.append([LogRecord(None, b"v", T0)] * 5)
    data.append([LogRecord(None, b"t", T0 + 1)] * 3, producer_id=7, producer_epoch=0,
                is_transactional=True)  # fmt: skip
    data.append([LogRecord(None, b"v", T0 + 2)] * 2)
    s = EndOffsetSample(
        "orders", 0, data.log_start_offset, data.high_watermark, data.last_stable_offset, T0 + 3
    )
    idx = LagIndex(commits((0, 5)), [s])
    rc = idx.lag(G, "orders", 0, T0 + 3, read_committed=True)
    ru = idx.lag(G, "orders", 0, T0 + 3, read_committed=False)
    assert rc is not None
    assert ru is not None
    assert (rc.lag_records, rc.lag_method) == (0, "caught_up")
    assert ru.lag_records == 5


def test_committed_offset_below_log_start_is_data_loss() -> None:
    idx = LagIndex(commits((10, 100)), [sample(20, 500, start=130)])
    row = idx.lag(G, "orders", 0, T0 + 20 * S)
    assert row is not None
    assert (row.data_loss, row.lost_records, row.lag_records) == (True, 30, 400)


def test_tombstone_removes_the_committed_offset() -> None:
    log = Log()
    log.commit(G, "orders", 0, 100, T0)
    log.offset_tombstone(G, "orders", 0, T0 + 50 * S)
    _, rows = fold_offsets(None, log.events)
    idx = LagIndex(rows, SAMPLES)
    assert idx.lag(G, "orders", 0, T0 + 40 * S) is not None
    assert idx.lag(G, "orders", 0, T0 + 50 * S) is None


def test_aborted_and_pending_transactional_commits_never_count() -> None:
    log = Log()
    log.commit(G, "orders", 0, 100, T0)
    log.commit(G, "orders", 0, 300, T0 + 10 * S, pid=5)
    log.marker("ABORT", 5, T0 + 20 * S)
    log.commit(G, "orders", 0, 350, T0 + 30 * S, pid=6)  # still pending
    _, rows = fold_offsets(None, log.events)
    row = LagIndex(rows, SAMPLES).lag(G, "orders", 0, T0 + 95 * S)
    assert row is not None
    assert row.committed_offset == 100


def test_transactional_commit_counts_from_its_marker_time() -> None:
    log = Log()
    log.commit(G, "orders", 0, 100, T0)
    log.commit(G, "orders", 0, 300, T0 + 10 * S, pid=5)
    log.marker("COMMIT", 5, T0 + 40 * S)
    _, rows = fold_offsets(None, log.events)
    idx = LagIndex(rows, SAMPLES)
    before = idx.lag(G, "orders", 0, T0 + 39 * S)
    after = idx.lag(G, "orders", 0, T0 + 40 * S)
    assert before is not None
    assert after is not None
    assert (before.committed_offset, after.committed_offset) == (100, 300)
    assert after.committed_at == T0 + 40 * S


def test_rows_for_every_group_partition_and_time() -> None:
    log = Log()
    log.commit(G, "orders", 0, 100, T0)
    log.commit("other", "orders", 0, 40, T0)
    log.commit(G, "orders", 1, 7, T0)
    _, rows = fold_offsets(None, log.events)
    idx = LagIndex(rows, [*SAMPLES, EndOffsetSample("orders", 1, 0, 10, -1, T0 + 30 * S)])
    out = idx.rows([T0 + 30 * S, T0 + 60 * S], read_committed_groups=["oth*"])
    assert [(r.group_id, r.partition, r.as_of, r.lag_records, r.basis_reason) for r in out] == [
        (G, 0, T0 + 30 * S, 100, "no_lso"),
        (G, 0, T0 + 60 * S, 200, "no_lso"),
        (G, 1, T0 + 30 * S, 3, "no_lso"),
        (G, 1, T0 + 60 * S, 3, "no_lso"),
        # Listed, but no LSO was sampled: the high watermark stands in.
        ("other", 0, T0 + 30 * S, 160, "no_lso"),
        ("other", 0, T0 + 60 * S, 260, "no_lso"),
    ]
    with_lso = LagIndex(rows, [EndOffsetSample("orders", 0, 0, 300, 250, T0 + 60 * S)])
    hinted = with_lso.rows(
        [T0 + 60 * S], read_committed_groups=["oth*"], read_uncommitted_groups=[G]
    )
    on_0 = [r for r in hinted if r.partition == 0]
    assert [(r.group_id, r.lag_records, r.lag_basis, r.basis_reason) for r in on_0] == [
        (G, 200, "high_watermark", "read_uncommitted_groups"),
        ("other", 210, "lso", "read_committed_groups"),
    ]


def test_lag_without_any_sample_keeps_the_commit_and_no_lag() -> None:
    row = LagIndex(commits((0, 100)), []).lag(G, "orders", 0, T0)
    assert row is not None
    assert (row.committed_offset, row.lag_records, row.lag_seconds, row.end_offset) == (
        100,
        None,
        None,
        None,
    )


def _bits(value: float | None) -> bytes | None:
    return None if value is None else struct.pack("<d", value)


@pytest.mark.parametrize("seed", range(40))
def test_append_times_are_append_time_to_the_last_bit(seed: int) -> None:
    """The column-wise form gives, for every offset, the float ``append_time`` gives (the same
    bits, not approximately) and the same method: brackets, repeated watermarks, samples at
    the same time, offsets before the first sample and past the last, a watermark that went
    back, and magnitudes whose products exceed 2**53 (computed one by one)."""
    rng = random.Random(seed)
    huge = seed % 4 == 3
    hwm, at, history = rng.randint(0, 10**15 if huge else 10**6), T0, []
    for _ in range(rng.randint(0, 12)):
        at += rng.choice([0, rng.randint(1, 90_000), rng.randint(1, 10**9 if huge else 10**5)])
        step = rng.choice([0, rng.randint(1, 10**4), rng.randint(1, 10**12 if huge else 10**6)])
        hwm = max(0, hwm - rng.randint(1, 10**3)) if rng.random() < 0.1 else hwm + step
        history.append(EndOffsetSample("orders", 0, 0, hwm, -1, at))
    series = watermark_series(history)
    top = max([h for _, h in series], default=10) + 10
    committed = sorted({rng.randint(-1, top) for _ in range(200)} | {h - 1 for _, h in series})
    got, methods = append_times(np.array(committed, np.int64), series)
    for offset, value, method in zip(committed, got.tolist(), methods.tolist(), strict=True):
        want = append_time("orders", 0, offset, history, None)
        assert (_bits(None if np.isnan(value) else value), method) == (_bits(want[0]), want[1])
