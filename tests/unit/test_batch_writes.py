"""A micro-batch's writes started in steps (:class:`offsetscope.pipelines.writer.BatchWrites`):
a table's writes in the order they were started, one write per table and kind, the quality
results recorded once after the last gate, and nothing left running when a batch fails.

No Spark: :class:`Recording` records each table write instead of running it (the real writes
run in the streaming tests, through the same class)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pytest

from offsetscope import config
from offsetscope.clock import VirtualClock
from offsetscope.pipelines.writer import BatchWriter, Timings, Write
from offsetscope.quality import suites

GATED = "offset_commits"
UNGATED = "raw_records"


class Recording(BatchWriter):
    """Records table writes: each waits for its table's event in ``hold`` first, and fails if
    its table is in ``fail``."""

    def __init__(self, cfg: config.Config, *, fail: Sequence[str] = ()) -> None:
        super().__init__(cfg, "q", VirtualClock(0))
        self.hold: dict[str, threading.Event] = {}
        self.fail = set(fail)
        self.log: list[tuple[str, str, bool]] = []
        self.recorded: list[list[Any]] = []
        self._log_lock = threading.Lock()

    def _note(self, *entry: Any) -> None:
        with self._log_lock:
            self.log.append(entry)

    def _write_table(
        self,
        spark: Any,
        batch_id: int,
        tasks: list[Write],
        results: list[Any],
        timings: Timings,
        gate_passed: Callable[[], None],
        fresh: bool,
    ) -> tuple[str, int]:
        logical = tasks[0].logical
        held = self.hold.get(logical)
        if held is not None and not held.wait(10):
            raise TimeoutError(f"{logical} was never released")
        if logical in self.fail:
            raise RuntimeError(f"{logical} failed")
        for task in tasks:
            if self._validates(task.logical):
                results.append((task.logical, task.merge))
                gate_passed()
            self._note("wrote", logical, task.merge)
        return logical, sum(t.rows or 0 for t in tasks)

    def _record_quality(
        self, spark: Any, batch_id: int, results: list[Any], timings: Timings, fresh: bool
    ) -> None:
        self.recorded.append(sorted(results))


def rows(n: int) -> Callable[[], pa.Table]:
    return lambda: pa.table({"x": list(range(n))})


@pytest.fixture
def cfg() -> config.Config:
    loaded = config.load("local")
    assert loaded.quality.enabled
    assert GATED in suites.TABLES
    assert UNGATED not in suites.TABLES
    return loaded


def test_a_later_step_of_a_table_waits_for_its_earlier_write(cfg: config.Config) -> None:
    writer = Recording(cfg)
    writer.hold[GATED] = threading.Event()
    with writer.open(None, 7, Timings(), fresh=True) as batch:  # type: ignore[arg-type]
        batch.start([Write(GATED, False, rows(3), 3), Write(UNGATED, False, rows(5), 5)])
        batch.start([Write(GATED, True, rows(2), 2)])
        # The MERGE of the table waits behind its append, which is held; the other table is
        # written meanwhile.
        threading.Timer(0.2, writer.hold[GATED].set).start()
        written = batch.finish()
    assert written == {GATED: 5, UNGATED: 5}
    order = [(logical, merge) for _, logical, merge in writer.log if logical == GATED]
    assert order == [(GATED, False), (GATED, True)]
    # Both gates of the table passed before the results were recorded, once.
    assert writer.recorded == [[(GATED, False), (GATED, True)]]


def test_results_are_recorded_once_when_every_gate_passed_before_the_last_step(
    cfg: config.Config,
) -> None:
    writer = Recording(cfg)
    with writer.open(None, 1, Timings()) as batch:  # type: ignore[arg-type]
        batch.start([Write(GATED, False, rows(1), 1)])
        batch.start([Write(UNGATED, False, rows(1), 1)])
        assert batch.finish() == {GATED: 1, UNGATED: 1}
    assert writer.recorded == [[(GATED, False)]]


def test_a_batch_without_gated_writes_records_no_results(cfg: config.Config) -> None:
    writer = Recording(cfg)
    with writer.open(None, 1, Timings()) as batch:  # type: ignore[arg-type]
        batch.start([Write(UNGATED, False, rows(1), 1)])
        batch.finish()
    assert writer.recorded == []


def test_a_second_write_of_a_table_and_kind_in_a_batch_is_refused(cfg: config.Config) -> None:
    writer = Recording(cfg)
    with writer.open(None, 3, Timings()) as batch:  # type: ignore[arg-type]
        # Within one step the clusters' shares are combined into one write.
        batch.start([Write(UNGATED, False, rows(1), 1), Write(UNGATED, False, rows(2), 2)])
        with pytest.raises(ValueError, match="a second append in batch 3"):
            batch.start([Write(UNGATED, False, rows(1), 1)])
        assert batch.finish() == {UNGATED: 3}


def test_a_failed_write_fails_the_batch_and_what_waits_behind_it(cfg: config.Config) -> None:
    writer = Recording(cfg, fail=[GATED])
    with writer.open(None, 1, Timings()) as batch:  # type: ignore[arg-type]
        batch.start([Write(GATED, False, rows(1), 1), Write(UNGATED, False, rows(1), 1)])
        batch.start([Write(GATED, True, rows(1), 1)])
        with pytest.raises(RuntimeError, match="offset_commits failed"):
            batch.finish()
    # The other table was written; nothing of the failed table, its MERGE included.
    assert [(logical, merge) for _, logical, merge in writer.log] == [(UNGATED, False)]
    assert writer.recorded == []


def test_leaving_a_failed_batch_waits_for_the_writes_it_started(cfg: config.Config) -> None:
    writer = Recording(cfg)
    writer.hold[UNGATED] = threading.Event()

    def failing_batch() -> None:
        with writer.open(None, 1, Timings()) as batch:  # type: ignore[arg-type]
            batch.start([Write(UNGATED, False, rows(1), 1)])
            threading.Timer(0.2, writer.hold[UNGATED].set).start()
            raise KeyError("the fold failed")

    with pytest.raises(KeyError):
        failing_batch()
    # The write had finished when the batch's block was left.
    assert writer.log == [("wrote", UNGATED, False)]


def test_a_write_that_fails_beside_a_failed_batch_is_logged(
    cfg: config.Config, caplog: pytest.LogCaptureFixture
) -> None:
    writer = Recording(cfg, fail=[UNGATED])

    def failing_batch() -> None:
        with writer.open(None, 4, Timings()) as batch:  # type: ignore[arg-type]
            batch.start([Write(UNGATED, False, rows(1), 1)])
            raise KeyError("the fold failed")

    with (
        caplog.at_level(logging.ERROR, logger="offsetscope.pipelines.writer"),
        pytest.raises(KeyError),
    ):
        failing_batch()
    # The batch's own error is raised; the write's is not lost.
    assert [r.getMessage() for r in caplog.records] == ["batch 4: a write failed too"]
    assert "raw_records failed" in caplog.text


def test_a_finished_batch_logs_nothing_more(
    cfg: config.Config, caplog: pytest.LogCaptureFixture
) -> None:
    writer = Recording(cfg, fail=[UNGATED])

    def finished_batch() -> None:
        with writer.open(None, 4, Timings()) as batch:  # type: ignore[arg-type]
            batch.start([Write(UNGATED, False, rows(1), 1)])
            batch.finish()

    with (
        caplog.at_level(logging.ERROR, logger="offsetscope.pipelines.writer"),
        pytest.raises(RuntimeError, match="raw_records failed"),
    ):
        finished_batch()
    # finish() raised the write's error itself.
    assert caplog.records == []


def test_every_failed_table_of_a_finished_batch_is_told(
    cfg: config.Config, caplog: pytest.LogCaptureFixture
) -> None:
    writer = Recording(cfg, fail=[GATED, UNGATED])
    with (
        caplog.at_level(logging.ERROR, logger="offsetscope.pipelines.writer"),
        writer.open(None, 5, Timings()) as batch,  # type: ignore[arg-type]
    ):
        batch.start([Write(GATED, False, rows(1), 1), Write(UNGATED, False, rows(1), 1)])
        batch.start([Write(GATED, True, rows(1), 1)])
        # The first write started raises; the other table's error is logged; the MERGE that
        # waited on the failed append fails with the append's error, which is not told twice.
        with pytest.raises(RuntimeError, match="offset_commits failed"):
            batch.finish()
    assert [r.getMessage() for r in caplog.records] == ["batch 5: another write failed too"]
    assert "raw_records failed" in caplog.text
    assert writer.recorded == []
