"""The ingest query's lease: who runs it, and when it counts as running (no Spark needed)."""

from __future__ import annotations

from offsetscope import config
from offsetscope.pipelines import lease

NOW = 1_700_000_000_000


def _lease(at: int, *, stopped: bool = False, interval_ms: int = 30_000) -> lease.Lease:
    return lease.Lease("ingest", "host-1", 4242, 17, at, interval_ms, stopped)


def test_a_lease_round_trips_through_its_state_text() -> None:
    held = _lease(NOW)
    assert lease.Lease.from_json("ingest", held.to_json()) == held
    assert "host-1 (pid 4242), last batch 17" in held.describe()


def test_running_until_the_lease_runs_out_or_the_query_says_it_stopped() -> None:
    assert not lease.running(None, NOW)
    assert lease.running(_lease(NOW - 1_000), NOW)
    # Three intervals, and at least five minutes, after its last batch.
    assert lease.liveness_ms(30_000) == lease.MIN_LIVENESS_MS
    assert lease.liveness_ms(600_000) == 1_800_000
    assert lease.running(_lease(NOW - lease.MIN_LIVENESS_MS + 1), NOW)
    assert not lease.running(_lease(NOW - lease.MIN_LIVENESS_MS), NOW)
    assert lease.running(_lease(NOW - 1_700_000, interval_ms=600_000), NOW)
    assert not lease.running(_lease(NOW - 1_000, stopped=True), NOW)


def test_each_batch_saves_a_lease_row_keyed_by_the_query_name() -> None:
    cfg = config.load("base")
    row = lease.lease_row(cfg, "ingest", 9, NOW)
    assert (row.fold, row.key, row.last_offset) == ("lease", "ingest", None)
    saved = lease.Lease.from_json("ingest", row.state)
    assert (saved.batch_id, saved.at, saved.stopped) == (9, NOW, False)
    assert saved.interval_ms == cfg.pipeline.processing_time.ms
