"""The segment data source's offset logic, driven directly (no JVM): initial and latest offsets,
admission control, the restart handshake, and the partitions a range becomes."""

from __future__ import annotations

from pathlib import Path

import pytest

from offsetscope.sim.synthetic import SyntheticLog, Workload
from offsetscope.spark import logdir
from offsetscope.spark.sources import (
    SegmentRange,
    SegmentRanges,
    SegmentStreamReader,
    _read,
    cap_offsets,
)


def test_cap_offsets_without_a_budget_is_the_latest() -> None:
    assert cap_offsets({"a": 1}, {"a": 10, "b": 4}, None) == {"a": 10, "b": 4}


def test_cap_offsets_shares_the_budget_and_passes_on_what_is_not_needed() -> None:
    start = {"a": 0, "b": 100, "c": 50, "idle": 7}
    latest = {"a": 1_000, "b": 103, "c": 1_050, "idle": 7}
    end = cap_offsets(start, latest, 600)
    # b needs 3; a and c split the rest evenly.
    assert end["b"] == 103
    assert end["idle"] == 7
    assert end["a"] - start["a"] + end["c"] - start["c"] + 3 == 600
    assert abs((end["a"] - start["a"]) - (end["c"] - start["c"])) <= 1


@pytest.mark.parametrize("budget", [1, 2, 5, 37])
def test_cap_offsets_never_exceeds_the_budget_or_the_latest(budget: int) -> None:
    start = {"p0": 0, "p1": 10, "p2": 3}
    latest = {"p0": 20, "p1": 11, "p2": 40}
    end = cap_offsets(start, latest, budget)
    total = sum(end[k] - start[k] for k in start)
    backlog = sum(latest[k] - start[k] for k in start)
    assert total == min(budget, backlog)
    assert all(start[k] <= end[k] <= latest[k] for k in start)


def _reader(root: Path, max_records: int | None) -> SegmentStreamReader:
    options = {"path": str(root)}
    if max_records is not None:
        options["maxRecordsPerTrigger"] = str(max_records)
    return SegmentStreamReader(options)


def test_stream_reader_hands_out_bounded_batches_until_the_log_end(tmp_path: Path) -> None:
    log = SyntheticLog(tmp_path, Workload())
    truth = log.run(10)
    reader = _reader(tmp_path, 50)

    start = reader.initialOffset()
    assert set(start) == {
        *(f"__consumer_offsets-{p}" for p in range(3)),
        *(f"__transaction_state-{p}" for p in range(3)),
    }  # data topics are not part of the stream
    assert set(start.values()) == {0}
    delivered = 0
    batches = 0
    while True:
        end = reader.latestOffset()
        if end == start:
            break
        ranges = reader.partitions(start, end)
        assert all(isinstance(r, SegmentRange) for r in ranges)
        size = sum(r.end - r.start for r in ranges)
        assert 0 < size <= 50
        delivered += size
        batches += 1
        start = end
    assert delivered == truth.records  # no compaction here: offsets = records
    assert batches >= truth.records // 50

    log.run(2)  # appended later: the next latest offset covers exactly the new records
    end = reader.latestOffset()
    assert sum(end[k] - start[k] for k in end) == truth.records - delivered
    log.close()


def test_a_restarted_reader_learns_the_checkpointed_offset_from_partitions(
    tmp_path: Path,
) -> None:
    log = SyntheticLog(tmp_path, Workload())
    log.run(10)
    first = _reader(tmp_path, 40)
    first.latestOffset()
    committed = first.latestOffset()  # the end of the second batch handed out

    # A new reader (a restarted query): Spark calls partitions(latest, latest) with the last
    # logged offset (AcceptsLatestSeenOffset) before it asks for the latest offset.
    restarted = _reader(tmp_path, 40)
    assert restarted.partitions(committed, committed) == []
    following = restarted.latestOffset()
    assert all(following[k] >= committed[k] for k in committed)
    assert sum(following[k] - committed[k] for k in committed) == 40
    log.close()


def test_partitions_cover_new_directories_from_their_log_start(tmp_path: Path) -> None:
    log = SyntheticLog(tmp_path, Workload())
    log.run(3)
    reader = _reader(tmp_path, None)
    end = reader.latestOffset()
    ranges = reader.partitions({}, end)
    by_name = {f"{r.topic}-{r.partition}": r for r in ranges}
    for name, offset in end.items():
        if offset:
            assert (by_name[name].start, by_name[name].end) == (0, offset)
        else:
            assert name not in by_name  # nothing to read: no task
    request = ranges[0].request()
    assert isinstance(request, logdir.RangeRequest)
    assert request.internal_topic in ("__consumer_offsets", "__transaction_state")
    log.close()


@pytest.mark.parametrize("tasks", [1, 2, 4, 100])
def test_ranges_are_packed_into_at_most_the_tasks_asked_for(tmp_path: Path, tasks: int) -> None:
    log = SyntheticLog(tmp_path, Workload())
    log.run(10)
    single = _reader(tmp_path, None)
    end = single.latestOffset()
    ranges = single.partitions({}, end)
    packed = SegmentStreamReader({"path": str(tmp_path), "tasks": str(tasks)}).partitions({}, end)
    assert len(packed) == min(tasks, len(ranges))
    assert all(isinstance(p, SegmentRanges) for p in packed)
    # Every range exactly once.
    flat = sorted(r.value for p in packed for r in p.ranges)
    assert flat == sorted(r.value for r in ranges)
    # Balanced: no task holds more than the lightest one plus the largest range.
    loads = [sum(r.end - r.start for r in p.ranges) for p in packed]
    assert max(loads) - min(loads) <= max(r.end - r.start for r in ranges)

    # A task reads its ranges' records, no more, no less.
    def offsets(part: object) -> list[tuple[str, int, int]]:
        return sorted(
            (t, p, o)
            for batch in _read(part)  # type: ignore[arg-type]
            for t, p, o in zip(
                batch.column("source_topic").to_pylist(),
                batch.column("partition").to_pylist(),
                batch.column("offset").to_pylist(),
                strict=True,
            )
        )

    assert sorted(x for p in packed for x in offsets(p)) == sorted(
        x for r in ranges for x in offsets(r)
    )
    log.close()
