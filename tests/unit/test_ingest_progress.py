"""The ingest's progress: the backlog read from a source's offsets, the catch-up estimate, and
the printed line (the listener that prints it runs in tests/streaming)."""

from __future__ import annotations

import pytest

from offsetscope.pipelines.batch import BatchReport
from offsetscope.pipelines.progress import (
    Backlog,
    CatchUp,
    ProgressPrinter,
    behind,
    parse_offsets,
)


def test_offsets_of_both_sources_are_keyed_by_topic_and_partition() -> None:
    kafka = '{"__consumer_offsets":{"0":12,"1":7},"__transaction_state":{"0":3}}'
    assert parse_offsets(kafka) == {
        "__consumer_offsets-0": 12,
        "__consumer_offsets-1": 7,
        "__transaction_state-0": 3,
    }
    assert parse_offsets('{"__consumer_offsets-0": 5}') == {"__consumer_offsets-0": 5}
    assert parse_offsets(None) == {}


def test_backlog_sums_the_partitions_behind_their_latest_offset() -> None:
    latest = {"a-0": 100, "a-1": 50, "b-0": 9}
    assert behind(latest, {"a-0": 40, "a-1": 50, "b-0": 10}) == (60, 1)
    # A partition the batch did not name has no known position: not counted as behind.
    assert behind(latest, {"a-0": 100}) == (0, 0)


def test_catch_up_uses_how_fast_the_backlog_shrank() -> None:
    eta = CatchUp()
    # First batch: only its processing rate is known (1,000 records/s).
    assert eta.update(10.0, 5_000, 2_000, 2.0) == pytest.approx(5.0)
    # 5,000 -> 3,000 in 4 s: 500 records/s net of new arrivals, 6 s to go.
    assert eta.update(14.0, 3_000, 2_000, 2.0) == pytest.approx(6.0)
    # Growing: no estimate.
    assert eta.update(18.0, 3_500, 2_000, 2.0) is None
    assert eta.update(20.0, 0, 3_500, 2.0) == 0.0


def test_backlog_text() -> None:
    assert Backlog(0, 0, 0.0).text() == "caught up"
    assert Backlog(1_234_567, 3, 125.0).text() == (
        "backlog 1,234,567 records in 3 partitions, caught up in ~2 min"
    )
    assert Backlog(10, 1, None).text() == "backlog 10 records in 1 partitions, not catching up"


def _report(batch_id: int) -> BatchReport:
    return BatchReport("q", batch_id, 1_000, {"offset_commit": 1_000}, {}, {}, 0, None, 2.0)


def test_the_printer_prints_each_batch_once_with_its_backlog() -> None:
    lines: list[str] = []
    reports = [_report(0), _report(1)]
    printer = ProgressPrinter("q", reports, lines.append)
    progress = {
        "name": "q",
        "batchId": 0,
        "sources": [{"endOffset": '{"t":{"0":10}}', "latestOffset": '{"t":{"0":4010}}'}],
    }
    printer.progress(progress)
    printer.progress(progress)  # the event, and again from recentProgress: one line
    printer.progress({**progress, "name": "another query"})
    assert lines == [
        (
            "[q] batch 0: 1000 records (1000 events, 0 quarantined, 0 unknown) in 2.0 s "
            "(500 records/s); backlog 4,000 records in 1 partitions, caught up in ~8 s"
        )
    ]
    printer.flush([])  # batch 1's progress never came: its line without a backlog
    assert lines[-1].startswith("[q] batch 1: ")
    assert "backlog" not in lines[-1]


def test_offsets_rebuilt_by_recent_progress_parse_too() -> None:
    # StreamingQuery.recentProgress rebuilds progress from JSON: offsets come parsed, or as
    # the text of a Python dict.
    assert parse_offsets({"t": {"0": 4}}) == {"t-0": 4}
    assert parse_offsets("{'t-0': 4}") == {"t-0": 4}


def test_a_progress_it_cannot_read_still_prints_the_line() -> None:
    lines: list[str] = []
    printer = ProgressPrinter("q", [_report(0)], lines.append)
    printer.progress({"name": "q", "batchId": 0, "sources": [{"endOffset": "{not offsets"}]})
    assert len(lines) == 1
    assert "backlog" not in lines[0]
