"""Lag between micro-batches (offsetscope.pipelines.lag): positions, samples, the segment
sampler as of the batch's event time, lag rows. Pure Python, no JVM."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest

from offsetscope import config
from offsetscope.clusters import StateKey
from offsetscope.history.lag import CommitPoint, LagIndex, Position
from offsetscope.history.rows import EndOffsetSample, PartitionLagRow
from offsetscope.pipelines import batch, lag
from offsetscope.pipelines import state as st
from offsetscope.protocol.log import read_partition_dir
from offsetscope.sim.synthetic import SyntheticLog, Workload
from offsetscope.spark import tables as catalogue
from offsetscope.spark import writes

T0 = 1_700_000_000_000


def test_positions_keep_the_newest_commit_per_group_and_survive_json() -> None:
    before = lag.update_positions(lag.PartitionPositions(), [Position("g", 10, T0, 5)])
    after = lag.update_positions(
        before,
        [
            Position("g", 8, T0 - 1, 3),  # older: ignored
            Position("g", 12, T0 + 5, 9),
            Position("h", None, T0 + 1, 2),  # a tombstone: no committed offset
            Position("a", 1, T0, 1),  # a new group sorts first
            Position("a", 2, T0, 1),  # same time and record: the held position stays
        ],
    )
    assert after == lag.PartitionPositions(
        ("a", "g", "h"), (1, 12, None), (T0, T0 + 5, T0 + 1), (1, 9, 2)
    )
    assert after.get("g") == Position("g", 12, T0 + 5, 9)
    assert after.get("b") is None
    assert lag.positions_from_json(lag.positions_to_json(after)) == after
    assert lag.positions_from_json(None) == lag.PartitionPositions()
    # Nothing newer: the same object back, so the batch saves no state row.
    assert lag.update_positions(after, [Position("g", 11, T0 + 4, 99)]) is after
    assert lag.update_positions(after, []) is after


def test_positions_saved_by_the_earlier_format_still_load() -> None:
    old = '{"g":[12,1700000000005,9],"a":[1,1700000000000,1],"h":[null,1700000000001,2]}'
    assert lag.positions_from_json(old) == lag.PartitionPositions(
        ("a", "g", "h"), (1, 12, None), (T0, T0 + 5, T0 + 1), (1, 9, 2)
    )
    with pytest.raises(ValueError, match="unknown format 'positions/9'"):
        lag.positions_from_json('["positions/9",[],[],[],[]]')


@pytest.mark.parametrize("seed", range(10))
def test_positions_match_a_per_group_reference(seed: int) -> None:
    """Random batches of updates, applied column-wise, against a dict of the newest per group;
    the same batches as columns (a commit summary's: the newest per group, in group order)
    move the positions the same way."""
    rng = random.Random(seed)
    current = by_columns = lag.PartitionPositions()
    reference: dict[str, tuple[int, int, int | None]] = {}
    for _ in range(6):
        updates = [
            Position(
                f"g{rng.randrange(40):02d}",
                None if rng.random() < 0.1 else rng.randrange(1_000),
                T0 + rng.randrange(20),
                rng.randrange(5),
            )
            for _ in range(rng.randrange(30))
        ]
        for p in updates:
            held = reference.get(p.group_id)
            if held is None or (p.at, p.record_offset) > held[:2]:
                reference[p.group_id] = (p.at, p.record_offset, p.offset)
        current = lag.update_positions(current, updates)
        batch_columns = lag.update_positions(lag.PartitionPositions(), updates)
        moved = lag.update_positions(by_columns, batch_columns)
        assert moved == current
        # Nothing newer: the same object back (no state row saved).
        assert (moved is by_columns) == (moved == by_columns)
        by_columns = moved
        assert current.groups == tuple(sorted(reference))
        assert [
            (a, r, o)
            for a, r, o in zip(current.at, current.record_offsets, current.offsets, strict=True)
        ] == [reference[g] for g in current.groups]
        assert lag.positions_from_json(lag.positions_to_json(current)) == current


def test_samples_json_keeps_the_most_recent_ones() -> None:
    samples = [EndOffsetSample("t", 0, 0, 10 + i, 10 + i, T0 + i) for i in range(100)]
    kept = lag.samples_from_json("t", 0, lag.samples_to_json(samples))
    assert kept == samples[-lag.RECENT_SAMPLES :]


def _positions(*entries: Position) -> lag.PartitionPositions:
    return lag.update_positions(lag.PartitionPositions(), entries)


def _rows(table: pa.Table) -> list[PartitionLagRow]:
    return [PartitionLagRow(**r) for r in table.to_pylist()]


def test_lag_rows_measure_read_committed_groups_against_the_lso() -> None:
    positions = _positions(
        Position("plain", 90, T0, 1),
        Position("rc", 90, T0, 2),
        Position("gone", None, T0, 3),
    )
    history = [EndOffsetSample("t", 0, 0, 50, 50, T0 - 10_000)]
    new = [EndOffsetSample("t", 0, 95, 120, 100, T0 + 10_000)]
    table = lag.lag_table("t", 0, positions, history, new, ["rc"], None, ["plain"])
    rows = {r.group_id: r for r in _rows(table)}
    assert set(rows) == {"plain", "rc"}  # no committed offset, no lag row
    assert (rows["plain"].end_offset, rows["plain"].lag_records) == (120, 30)
    for row in rows.values():  # both lags, whatever the hint
        assert (row.lag_records_hwm, row.lag_records_lso) == (30, 10)
    assert (rows["rc"].end_offset, rows["rc"].lag_records, rows["rc"].read_committed) == (
        100,
        10,
        True,
    )
    assert rows["plain"].data_loss
    assert rows["plain"].lost_records == 5
    assert rows["plain"].as_of == T0 + 10_000
    # Two samples bracket the append of offset 90: lag in seconds is interpolated.
    assert rows["plain"].lag_method == "interpolated"
    assert rows["plain"].lag_seconds is not None
    assert 0 < rows["plain"].lag_seconds < 20


def test_lag_table_has_partition_lags_columns_even_when_empty() -> None:
    sample = EndOffsetSample("t", 0, 0, 10, 10, T0)
    empty = lag.lag_table("t", 0, lag.PartitionPositions(), [], [sample], [])
    assert empty.num_rows == 0
    later = lag.lag_table("t", 0, _positions(Position("g", 1, T0 + 1, 1)), [], [sample], [])
    assert later.num_rows == 0  # the commit is newer than the sample: not in effect yet
    for table in (empty, later):
        typed = writes.ms_table("partition_lag", table, cluster="default")
        assert typed.schema == catalogue.arrow_schema(catalogue.spec("partition_lag"))


@pytest.mark.parametrize("seed", range(30))
def test_lag_table_gives_the_rows_the_full_index_gives(seed: int) -> None:
    """The column-wise form against the indexed lookup (``LagIndex.lag``) with each group's
    position as its only commit: every group, every new sample, ties in time, removed
    positions, read_committed groups, exact and interpolated seconds."""
    rng = random.Random(seed)
    samples: list[EndOffsetSample] = []
    hwm = 0
    for k in range(rng.randint(0, 6)):
        hwm += rng.randint(0, 40)
        lso = hwm - rng.randint(0, 5) if rng.random() < 0.3 else -1
        samples.append(EndOffsetSample("t", 0, rng.randint(0, 8), hwm, lso, T0 + 1_000 * k))
    cut = rng.randint(0, len(samples))
    history, new = samples[:cut], samples[cut:]
    positions = _positions(
        *(
            Position(
                f"g{g:02d}",
                None if rng.random() < 0.15 else rng.randint(0, max(hwm, 1)),
                # often exactly at a sample's time: a commit then is in effect at that sample
                T0 + 1_000 * rng.randint(-2, 7) + rng.choice([0, 0, rng.randint(-999, 999)]),
                rng.randint(0, 10**6),
            )
            for g in rng.sample(range(60), rng.randint(0, 25))
        )
    )
    rc = {g for g in positions.groups if rng.random() < 0.3}
    ru = {g for g in positions.groups if g not in rc and rng.random() < 0.3}
    times = {T0 + 1_000 * k - 1: T0 + 1_000 * k - rng.randint(0, 2_000) for k in range(8)}

    def reader(topic: str, partition: int, offset: int) -> int | None:
        return None if offset % 3 == 0 else times[T0 + 1_000 * (offset % 8) - 1]

    # Odd seeds have no data records to read: every append time comes from the samples.
    record_time = reader if seed % 2 == 0 else None

    points = [
        CommitPoint(g, "t", 0, o, at, r)
        for g, o, at, r in zip(
            positions.groups, positions.offsets, positions.at, positions.record_offsets, strict=True
        )
    ]
    index = LagIndex(points, samples)
    expected = [
        row
        for s in sorted(new, key=lambda s: s.sampled_at)
        for group_id in positions.groups
        if (
            row := index.lag(
                group_id,
                "t",
                0,
                s.sampled_at,
                read_committed=True if group_id in rc else False if group_id in ru else None,
                record_time=record_time,
            )
        )
        is not None
    ]
    got = lag.lag_table("t", 0, positions, history, new, rc, record_time, ru)
    assert _rows(got) == expected


def test_segment_sampler_reads_the_data_log_as_it_stood_at_the_event_time(
    tmp_path: Path,
) -> None:
    workload = Workload(transactional_ids=0, records_per_tick=3, tick_ms=1_000)
    with SyntheticLog(tmp_path, workload) as log:
        truth = log.run(10)
    sampler = lag.SegmentSampler(str(tmp_path), ["__consumer_offsets", "__transaction_state"])

    assert sampler.sample(["orders"], None) == []
    assert sampler.sample(["__consumer_offsets"], T0) == []
    early = {s.partition: s for s in sampler.sample(["orders"], T0 + 2_500)}
    assert set(early) == set(range(workload.data_partitions))
    assert {s.high_watermark for s in early.values()} == {9}  # ticks 0, 1, 2 written by then
    assert {s.sampled_at for s in early.values()} == {T0 + 2_500}
    final = {s.partition: s for s in sampler.sample(["orders"], T0 + 60_000)}
    assert {p: s.high_watermark for p, s in final.items()} == {
        p: truth.high_watermarks[("orders", p)] for p in final
    }
    assert all(s.last_stable_offset == s.high_watermark for s in final.values())


def test_segment_sampler_reads_the_exact_time_of_the_first_unconsumed_record(
    tmp_path: Path,
) -> None:
    workload = Workload(transactional_ids=2, records_per_tick=3, tick_ms=1_000)
    with SyntheticLog(tmp_path, workload) as log:
        log.run(30)
    sampler = lag.SegmentSampler(str(tmp_path), ["__consumer_offsets", "__transaction_state"])
    for partition_dir in sorted(tmp_path.glob("orders-*")):
        partition = int(partition_dir.name.rsplit("-", 1)[1])
        batches = list(read_partition_dir(partition_dir))
        data = [(r.offset, r.timestamp) for b in batches if not b.is_control for r in b.records]
        markers = [r.offset for b in batches if b.is_control for r in b.records]
        end = max(o for o, _ in data) + 1
        for offset in range(end + 2):
            # Oracle: a full scan; a marker offset reads as the next data record.
            expected = next((t for o, t in data if o >= offset), None)
            assert sampler.record_time("orders", partition, offset) == expected, offset
    assert markers, "the workload writes transaction markers into the data topic"
    assert sampler.record_time("no-such-topic", 0, 0) is None


def test_samples_are_kept_once_per_interval_aligned_to_the_epoch() -> None:
    # Every sample newer than the last one, without an interval.
    assert lag.sample_due(T0 + 1, T0, None)
    assert not lag.sample_due(T0, T0, None)
    assert lag.sample_due(T0, None, 30_000)
    # 30 s intervals from the epoch: T0 is 1,700,000,000,000 ms = 56,666,666 intervals + 20 s.
    assert not lag.sample_due(T0 + 9_999, T0, 30_000)  # same interval
    assert lag.sample_due(T0 + 10_000, T0, 30_000)  # the next interval starts
    # A batch every 30 s whose sample lands a little earlier or later each time still keeps
    # one sample per batch (a "last + 30 s" rule would skip the early ones).
    start = (T0 // 30_000 + 1) * 30_000
    times = [start + 30_000 * i + jitter for i, jitter in enumerate([900, 400, 1_800, 50, 1_200])]
    kept, last = [], None
    for at in times:
        if lag.sample_due(at, last, 30_000):
            kept.append(at)
            last = at
    assert kept == times
    # Batches every 10 s with a 30 s interval: one sample in three.
    times = [start + 10_000 * i + 500 for i in range(9)]
    kept, last = [], None
    for at in times:
        if lag.sample_due(at, last, 30_000):
            kept.append(at)
            last = at
    assert kept == times[::3]


class _Sampler:
    """End offsets of one data partition, rising 100 records a sample, at the batch's time."""

    def sample(self, topics: object, event_time: int | None) -> list[EndOffsetSample]:
        assert event_time is not None
        return [EndOffsetSample("orders", 0, 0, event_time // 100, event_time // 100, event_time)]

    def record_reader(self) -> None:
        return None

    def producers(self, topic: str, partition: int) -> dict[int, int] | None:
        return None


@pytest.mark.parametrize(("interval", "written"), [(None, 9), ("30s", 3)])
def test_the_pipeline_writes_lag_at_its_own_cadence(interval: str | None, written: int) -> None:
    """Nine batches 10 s apart: every one writes end_offsets and measures partition_lag (its
    rows computed in the executors from the inputs ``_lag`` returns), or, with
    ``lag_interval = "30s"``, one in three; the group's position moves on every batch either
    way. The batches' state is kept as ``process_batch`` keeps it (no table: nothing loaded)."""
    cfg = config.with_pipeline(config.load("local"), lag_interval=interval)
    pipe = batch.IngestPipeline(cfg, source_kind="segments", sampler=_Sampler())
    start = (T0 // 30_000 + 1) * 30_000
    cluster = pipe.clusters[0]
    pipe._states = {StateKey(cluster, st.SAMPLER, "topics"): None}
    key = lag.partition_key("orders", 0)
    pipe._states.update(
        {StateKey(cluster, fold, key): None for fold in (st.POSITIONS, st.SAMPLES, st.LSO)}
    )
    lag_batches, positions = [], []
    for i in range(9):
        at = start + 10_000 * i + 500
        b = batch.Batch(i, None, at, cluster)  # type: ignore[arg-type]
        moved = {("orders", 0): _positions(Position("g", at // 100 - 7, at, i))}
        inputs = pipe._lag(b, moved, [], at)
        tables = {t.logical for t in b.tasks}
        assert bool(tables) == bool(inputs)
        if tables:
            assert tables == {"end_offsets"}
            [measured] = inputs
            rows = _rows(_lag_rows(measured))
            assert [(r.group_id, r.committed_offset, r.as_of) for r in rows] == [
                ("g", at // 100 - 7, at)
            ]
            assert rows[0].lag_records == 7
            lag_batches.append(i)
        for row in b.new_states:
            assert row.cluster == cluster
            pipe._states[StateKey(row.cluster, row.fold, row.key)] = row
            if row.fold == st.POSITIONS:
                held = lag.positions_from_json(row.state).get("g")
                assert held is not None
                positions.append(held.offset)
    assert len(lag_batches) == written
    assert lag_batches == list(range(0, 9, 9 // written))
    assert len(positions) == 9  # every batch's commit moved the position


def test_the_sample_is_taken_when_every_offsets_partition_read_is_current() -> None:
    """The earliest of the newest commits of the ``__consumer_offsets`` partitions a batch read
    (a partition read ahead in time must not move the sample past the others' commits); the
    newest record of the batch when it read none."""

    def stat(topic: str, partition: int, max_ts: int | None) -> dict[str, object]:
        return {"topic": topic, "partition": partition, "max_ts": max_ts}

    stats = [
        stat("__consumer_offsets", 0, T0 + 9_000),
        stat("__consumer_offsets", 1, T0 + 4_000),
        stat("__transaction_state", 0, T0 + 2_000),
        stat("__consumer_offsets", 2, None),
    ]
    assert batch._read_up_to(stats) == T0 + 4_000
    assert batch._read_up_to([stat("__transaction_state", 0, T0 + 2_000)]) == T0 + 2_000
    assert batch._read_up_to([]) is None


def _lag_rows(*inputs: lag.LagInput) -> pa.Table:
    """What the executors compute from ``inputs`` (the body of ``lag_frame``'s mapInArrow)."""
    table = lag.inputs_table(inputs)
    batches = list(lag.lag_rows(table.to_batches(), read_committed_groups=()))
    return pa.Table.from_batches(batches, schema=lag.LAG_SCHEMA)


@pytest.mark.parametrize("seed", range(10))
def test_lag_rows_from_the_stored_texts_are_lag_tables_rows(seed: int) -> None:
    """The executors' side: each input's positions and samples as ``fold_state`` texts give
    the rows ``lag_table`` gives on the parsed values, partitions one after another, with the
    groups' isolation hints and a record-time reader handed over."""
    rng = random.Random(seed)
    inputs, expected = [], []
    rc = ["g0*"]
    ru = ["g1?"]

    def record_time(topic: str, partition: int, offset: int) -> int | None:
        return None if offset % 4 == 0 else T0 - 7 * offset

    for partition in range(rng.randint(1, 4)):
        hwm, samples = 0, []
        for k in range(rng.randint(1, 5)):
            hwm += rng.randint(0, 30)
            lso = hwm - rng.randint(0, 3)
            samples.append(EndOffsetSample("t", partition, 0, hwm, lso, T0 + 1_000 * k))
        cut = rng.randint(0, len(samples) - 1)
        history, new = samples[:cut], samples[cut:]
        positions = _positions(
            *(
                Position(f"g{g:02d}", rng.randint(0, hwm + 2), T0 + rng.randint(-500, 4_000), g)
                for g in rng.sample(range(40), rng.randint(0, 20))
            )
        )
        text = lag.positions_to_json(positions) if positions.groups else ""
        inputs.append(
            lag.LagInput(
                "t",
                partition,
                text,
                lag.samples_to_json(history) if history else "",
                lag.samples_to_json(new, keep=None),
            )
        )
        expected.extend(
            _rows(lag.lag_table("t", partition, positions, history, new, rc, record_time, ru))
        )
    table = lag.inputs_table(inputs)
    got = pa.Table.from_batches(
        list(
            lag.lag_rows(
                table.to_batches(max_chunksize=2),
                read_committed_groups=rc,
                read_uncommitted_groups=ru,
                record_time=record_time,
            )
        ),
        schema=lag.LAG_SCHEMA,
    )
    assert _rows(got) == expected


def test_live_positions_are_parsed_only_when_read() -> None:
    """The stuck-LSO fold's view of a partition's positions: live ones in effect by the time,
    from the stored text, which is not parsed until a group is asked for."""
    positions = _positions(
        Position("a", 5, T0, 1), Position("b", None, T0, 2), Position("c", 9, T0 + 10, 3)
    )
    text = lag.positions_to_json(positions)
    view = lag.LivePositions(text, T0 + 5)
    assert view._offsets is None
    assert dict(view) == {"a": 5}
    assert dict(lag.LivePositions(positions, T0 + 10)) == {"a": 5, "c": 9}
    assert dict(lag.LivePositions("", T0)) == {}
    broken = lag.LivePositions('["positions/9", [], [], [], []]', T0)
    with pytest.raises(ValueError, match="unknown format"):
        len(broken)


def test_segment_record_times_travel_to_another_process(tmp_path: Path) -> None:
    """The reader the executors get is the sampler's, and reads the same times after a pickle
    round trip (what shipping it to a Python worker does)."""
    import pickle

    workload = Workload(transactional_ids=0, records_per_tick=3, tick_ms=1_000)
    with SyntheticLog(tmp_path, workload) as log:
        log.run(5)
    sampler = lag.SegmentSampler(str(tmp_path), ["__consumer_offsets", "__transaction_state"])
    reader = pickle.loads(pickle.dumps(sampler.record_reader()))
    assert reader == sampler.record_reader()
    lag._RECORD_TIMES.clear()
    for offset in range(8):
        assert reader("orders", 0, offset) == sampler.record_time("orders", 0, offset)
    assert reader("orders", 0, 10**9) is None
