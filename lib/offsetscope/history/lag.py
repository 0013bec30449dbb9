"""Consumer lag as of any time, from committed offsets and end-offset samples.

Inputs: the ``offset_commits`` rows of :mod:`offsetscope.history.offsets` (only ``committed``
ones count, at their ``effective_at``; a tombstone means "no committed offset") and
``end_offsets`` samples (log start offset, high watermark, last stable offset, sample time) taken
by the AdminClient (``ListOffsets`` earliest / latest / ``read_committed`` latest) or computed from
data-topic segments.

Rules, for one group, partition and time T (everything strictly "as of T": the latest commit
effective at or before T, and the latest sample taken at or before T):

* **records**: ``end - committed`` (never negative), against both ends: the high watermark
  (what a ``read_uncommitted`` consumer can read) and the last stable offset (what a
  ``read_committed`` one can: records above it are invisible to it, so they are not lag).
  Kafka's log does not record how a group reads, so every row carries both, and names the one
  views and rules use (:func:`lag_basis`): the LSO unless a hint says the group reads
  uncommitted, or the group has committed past the LSO (only a ``read_uncommitted`` consumer
  can), or no LSO was sampled (then the high watermark stands in). On a partition without an
  open transaction the two are equal;
* **seconds**: how long ago the first unconsumed record (offset ``committed``) was appended:
  exact when data-record timestamps per offset are available (the record's own timestamp, as
  klag-exporter does), otherwise interpolated from the high-watermark samples (the time the log
  end passed ``committed + 1``, linear between the two samples around it, as kafka-lag-exporter
  does) or extrapolated backwards from the first two samples when the commit is older than the
  sample history; 0 when caught up;
* **data loss**: the committed offset is below the log start offset: the records in between were
  deleted by retention before the group read them (``lost_records``).
"""

from __future__ import annotations

import bisect
import fnmatch
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from offsetscope.history.rows import EndOffsetSample, OffsetCommitRow, PartitionLagRow

# (topic, partition, offset) -> timestamp of the first data record at or after that offset
RecordTime = Callable[[str, int, int], int | None]
GroupPartition = tuple[str, str, int]
TopicPartitionKey = tuple[str, int]

# partition_lag.lag_basis: which end lag_records, lag_seconds and end_offset are measured to.
LSO = "lso"
HIGH_WATERMARK = "high_watermark"
# partition_lag.basis_reason: why.
HINT_READ_COMMITTED = "read_committed_groups"  # [pipeline] read_committed_groups names it
HINT_READ_UNCOMMITTED = "read_uncommitted_groups"  # [pipeline] read_uncommitted_groups does
READ_PAST_LSO = "read_past_lso"  # committed above the LSO: only read_uncommitted reads there
NO_LSO = "no_lso"  # the sample has no last stable offset
DEFAULT = "default"  # no hint: the LSO, equal to the high watermark without open transactions


def lag_basis(committed: int, lso: int | None, hint: bool | None) -> tuple[str, str]:
    """(basis, reason): the end a group's lag is measured to on one partition at one sample.

    Args:
        committed: the group's committed offset.
        lso: the sampled last stable offset (None: unknown).
        hint: True for a group listed as ``read_committed``, False for one listed as
            ``read_uncommitted``, None for no hint.
    """
    if lso is None:
        return HIGH_WATERMARK, NO_LSO
    if hint is True:
        return LSO, HINT_READ_COMMITTED
    if hint is False:
        return HIGH_WATERMARK, HINT_READ_UNCOMMITTED
    if committed > lso:
        return HIGH_WATERMARK, READ_PAST_LSO
    return LSO, DEFAULT


def isolation_hint(
    read_committed: Iterable[str], read_uncommitted: Iterable[str] = ()
) -> Callable[[str], bool | None]:
    """A group id -> hint function over the two lists of ``[pipeline]`` (exact ids or
    ``fnmatch`` patterns; an exact id wins, then ``read_committed_groups`` patterns)."""
    rc, ru = frozenset(read_committed), frozenset(read_uncommitted)
    rc_globs = [g for g in sorted(rc) if any(ch in g for ch in "*?[")]
    ru_globs = [g for g in sorted(ru) if any(ch in g for ch in "*?[")]

    def hint(group_id: str) -> bool | None:
        if group_id in rc:
            return True
        if group_id in ru:
            return False
        if any(fnmatch.fnmatchcase(group_id, g) for g in rc_globs):
            return True
        if any(fnmatch.fnmatchcase(group_id, g) for g in ru_globs):
            return False
        return None

    return hint


@dataclass(frozen=True, slots=True)
class Position:
    """A group's latest committed offset on a partition (``offset`` None: removed)."""

    group_id: str
    offset: int | None
    at: int
    record_offset: int


@dataclass(frozen=True, slots=True)
class PartitionPositions:
    """Every group's position on one data partition, column by column, in group-id order.

    Column-wise because a partition can hold the positions of every group in the cluster (100,000
    groups x 20 partitions is 2,000,000 positions, loaded and saved every batch that samples them):
    a ``Position`` object and a JSON object per group made lag the largest cost of a batch with many
    groups, four lists do not (``docs/benchmarks.md``, "Measurements behind design choices"). A
    batch's own positions come the same way from its commit summary
    (:func:`offsetscope.history.commits.summarize`), one group at most per partition.
    """

    groups: tuple[str, ...] = ()
    offsets: tuple[int | None, ...] = ()  # None: the group's commit was removed (tombstone)
    at: tuple[int, ...] = ()  # effective time of the commit, epoch ms
    record_offsets: tuple[int, ...] = ()  # its __consumer_offsets record, for ties in time

    def get(self, group_id: str) -> Position | None:
        i = bisect.bisect_left(self.groups, group_id)
        if i == len(self.groups) or self.groups[i] != group_id:
            return None
        return Position(group_id, self.offsets[i], self.at[i], self.record_offsets[i])

    def __iter__(self) -> Iterator[Position]:
        """The positions one by one, in group-id order."""
        for g, o, a, r in zip(self.groups, self.offsets, self.at, self.record_offsets, strict=True):
            yield Position(g, o, a, r)


@dataclass(frozen=True, slots=True)
class CommitPoint:
    """A group's committed offset for a partition from ``at`` on (``offset`` None: removed)."""

    group_id: str
    topic: str
    partition: int
    offset: int | None
    at: int
    record_offset: int


def commit_points(rows: Iterable[OffsetCommitRow]) -> list[CommitPoint]:
    """The commits that became a group's offset, in effect order.

    Pending, aborted, superseded and dropped transactional commits never do.
    """
    points = [
        CommitPoint(r.group_id, r.topic, r.partition, r.offset, r.effective_at, r.record_offset)
        for r in rows
        if r.status == "committed" and r.effective_at is not None
    ]
    points.sort(key=lambda p: (p.group_id, p.topic, p.partition, p.at, p.record_offset))
    return points


def record_time_lookup(
    timestamps: Mapping[TopicPartitionKey, Mapping[int, int]],
) -> RecordTime:
    """A :data:`RecordTime` over known data-record timestamps (offset -> timestamp per partition).

    Offsets missing from the map (compacted away, or control records) resolve to the next
    record that exists, which is the first record the group will actually read.
    """
    index = {tp: sorted(ts.items()) for tp, ts in timestamps.items()}

    def lookup(topic: str, partition: int, offset: int) -> int | None:
        entries = index.get((topic, partition))
        if not entries:
            return None
        i = bisect.bisect_left(entries, (offset, -(2**63)))
        return entries[i][1] if i < len(entries) else None

    return lookup


@dataclass(frozen=True, slots=True)
class _SampleView:
    """One partition's end-offset samples as of one time: what all its groups' lag rows share."""

    topic: str
    partition: int
    as_of: int
    history: list[EndOffsetSample]  # the samples taken at or before as_of, oldest first
    sample: EndOffsetSample | None  # the latest of them


class LagIndex:
    """Commit and end-offset histories, indexed so that lag as of any time is a lookup."""

    def __init__(
        self,
        commits: Iterable[OffsetCommitRow | CommitPoint],
        samples: Iterable[EndOffsetSample],
    ) -> None:
        rows = list(commits)
        points = [p for p in rows if isinstance(p, CommitPoint)]
        points += commit_points(r for r in rows if isinstance(r, OffsetCommitRow))
        self._commits: dict[GroupPartition, tuple[list[tuple[int, int]], list[CommitPoint]]] = {}
        for p in sorted(points, key=lambda p: (p.at, p.record_offset)):
            keys, values = self._commits.setdefault((p.group_id, p.topic, p.partition), ([], []))
            keys.append((p.at, p.record_offset))
            values.append(p)
        self._samples: dict[TopicPartitionKey, tuple[list[int], list[EndOffsetSample]]] = {}
        for s in sorted(samples, key=lambda s: s.sampled_at):
            times, values2 = self._samples.setdefault((s.topic, s.partition), ([], []))
            times.append(s.sampled_at)
            values2.append(s)

    def group_partitions(self) -> list[GroupPartition]:
        """Every (group, topic, partition) with a commit, sorted."""
        return sorted(self._commits)

    def committed_as_of(
        self, group_id: str, topic: str, partition: int, as_of: int
    ) -> CommitPoint | None:
        """The commit in effect at ``as_of`` (``None`` if none, or removed by a tombstone)."""
        entry = self._commits.get((group_id, topic, partition))
        if entry is None:
            return None
        keys, values = entry
        i = bisect.bisect_right(keys, (as_of, 2**63)) - 1
        if i < 0 or values[i].offset is None:
            return None
        return values[i]

    def commit_history(
        self, group_id: str, topic: str, partition: int, as_of: int
    ) -> list[CommitPoint]:
        """The commits (and removals) in effect order, up to ``as_of``."""
        entry = self._commits.get((group_id, topic, partition))
        if entry is None:
            return []
        keys, values = entry
        return values[: bisect.bisect_right(keys, (as_of, 2**63))]

    def samples_until(self, topic: str, partition: int, as_of: int) -> list[EndOffsetSample]:
        """The partition's samples taken at or before ``as_of``, oldest first."""
        entry = self._samples.get((topic, partition))
        if entry is None:
            return []
        times, values = entry
        return values[: bisect.bisect_right(times, as_of)]

    def lag(
        self,
        group_id: str,
        topic: str,
        partition: int,
        as_of: int,
        *,
        read_committed: bool | None = None,
        record_time: RecordTime | None = None,
    ) -> PartitionLagRow | None:
        """One group's lag on one partition as of ``as_of``; ``None`` without a commit.

        Args:
            group_id: the consumer group.
            topic: the data topic.
            partition: the data partition.
            as_of: epoch ms; only commits and samples at or before it are used.
            read_committed: how the group reads, when known (``isolation.level``): True
                measures ``lag_records`` against the last stable offset, False against the high
                watermark; None lets :func:`lag_basis` choose. Both lags are in the row either way.
            record_time: data-record timestamps, for exact lag in seconds.
        """
        commit = self.committed_as_of(group_id, topic, partition, as_of)
        if commit is None or commit.offset is None:
            return None
        view = self._view(topic, partition, as_of)
        return self._row(group_id, commit, view, read_committed, record_time)

    def _view(self, topic: str, partition: int, as_of: int) -> _SampleView:
        history = self.samples_until(topic, partition, as_of)
        return _SampleView(topic, partition, as_of, history, history[-1] if history else None)

    def _row(
        self,
        group_id: str,
        commit: CommitPoint,
        view: _SampleView,
        hint: bool | None,
        record_time: RecordTime | None,
    ) -> PartitionLagRow:
        """A group's lag row from its commit in effect and the partition's samples then."""
        topic, partition, as_of, sample = view.topic, view.partition, view.as_of, view.sample
        committed = commit.offset
        assert committed is not None  # the caller skips removed commits
        if sample is None:
            return PartitionLagRow(
                group_id, topic, partition, as_of, bool(hint), committed, commit.at,
                None, None, None, None, None, None, None, None, False, 0,
            )  # fmt: skip
        lso = sample.last_stable_offset if sample.last_stable_offset >= 0 else None
        basis, reason = lag_basis(committed, lso, hint)
        hwm = sample.high_watermark
        lag_hwm = max(0, hwm - committed)
        lag_lso = None if lso is None else max(0, lso - committed)
        lag_records = lag_lso if basis == LSO and lag_lso is not None else lag_hwm
        appended: float | None = None
        method: str | None = None
        if lag_hwm > 0:  # the committed record exists: when was it appended
            appended, method = append_time(topic, partition, committed, view.history, record_time)
        seconds_hwm = _seconds(lag_hwm, appended, as_of)
        seconds_lso = None if lag_lso is None else _seconds(lag_lso, appended, as_of)
        lag_seconds = seconds_lso if basis == LSO else seconds_hwm
        if lag_records == 0:
            method = "caught_up"
        lost = max(0, sample.log_start_offset - committed)
        return PartitionLagRow(
            group_id=group_id,
            topic=topic,
            partition=partition,
            as_of=as_of,
            read_committed=basis == LSO,
            committed_offset=committed,
            committed_at=commit.at,
            end_offset=lso if basis == LSO else hwm,
            high_watermark=hwm,
            last_stable_offset=lso,
            log_start_offset=sample.log_start_offset,
            sampled_at=sample.sampled_at,
            lag_records=lag_records,
            lag_seconds=lag_seconds,
            lag_method=method if lag_seconds is not None else None,
            data_loss=lost > 0,
            lost_records=lost,
            lag_basis=basis,
            basis_reason=reason,
            lag_records_hwm=lag_hwm,
            lag_records_lso=lag_lso,
            lag_seconds_hwm=seconds_hwm,
            lag_seconds_lso=seconds_lso,
        )

    def rows(
        self,
        as_of_times: Iterable[int],
        *,
        read_committed_groups: Iterable[str] = (),
        read_uncommitted_groups: Iterable[str] = (),
        record_time: RecordTime | None = None,
    ) -> list[PartitionLagRow]:
        """``partition_lag`` rows for every group partition with a commit, at each time."""
        hint = isolation_hint(read_committed_groups, read_uncommitted_groups)
        times = sorted(set(as_of_times))
        out: list[PartitionLagRow] = []
        for group_id, topic, partition in self.group_partitions():
            for t in times:
                row = self.lag(
                    group_id,
                    topic,
                    partition,
                    t,
                    read_committed=hint(group_id),
                    record_time=record_time,
                )
                if row is not None:
                    out.append(row)
        return out


def _seconds(lag_records: int, appended: float | None, as_of: int) -> float | None:
    """Lag in seconds behind one end: 0 when caught up to it, else since the first unconsumed
    record was appended (None when that time is unknown)."""
    if lag_records == 0:
        return 0.0
    return None if appended is None else max(0, as_of - appended) / 1000.0


def append_time(
    topic: str,
    partition: int,
    committed: int,
    history: list[EndOffsetSample],
    record_time: RecordTime | None,
    *,
    series: list[tuple[int, int]] | None = None,
) -> tuple[float | None, str | None]:
    """When record ``committed`` was appended, and how that was found.

    ``series``: :func:`watermark_series` of ``history``, for a caller that asks about many
    offsets against the same samples (it is derived from all of them each time otherwise).
    """
    if record_time is not None:
        exact = record_time(topic, partition, committed)
        if exact is not None:
            return float(exact), "exact"
    points = watermark_series(history) if series is None else series
    target = committed + 1  # the log end passes committed + 1 when record `committed` lands
    for i, (t, hwm) in enumerate(points):
        if hwm < target:
            continue
        if i > 0:
            # The last sample below the target and the first at or above it bracket the append.
            t0, h0 = points[i - 1]
            return t0 + (target - h0) * (t - t0) / (hwm - h0), "interpolated"
        later = next(((t1, h1) for t1, h1 in points if h1 > hwm and t1 > t), None)
        if later is None:
            return None, None
        t1, h1 = later
        return t - (hwm - target) * (t1 - t) / (h1 - hwm), "extrapolated"
    return None, None


# Below this, an int64 product and divisor convert to float64 exactly, so numpy's division
# rounds once, as Python's division of the exact integers does.
_EXACT = 2.0**53


def append_times(
    committed: np.ndarray, series: Sequence[tuple[int, int]]
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`append_time` from the samples alone (no ``record_time``) for many committed
    offsets at once: the append times (NaN where unknown) and their methods (None there).

    Each value is the float :func:`append_time` returns, to the last bit. The series'
    watermarks never go down (:func:`watermark_series`), so the first point at or above an
    offset's target is a binary search; a bracket is interpolated as there, and a target at
    or below the first point is extrapolated from the first later point above it. The
    division is numpy's where its integer operands convert to floats exactly (the product of
    two differences below 2**53: a sample interval's records times its milliseconds), which
    then rounds as Python's exact one does; any other offset goes through
    :func:`append_time`.
    """
    n = committed.size
    appended = np.full(n, np.nan, np.float64)
    methods = np.full(n, None, dtype=object)
    if not series or not n:
        return appended, methods
    times = np.array([t for t, _ in series], np.int64)
    marks = np.array([h for _, h in series], np.int64)
    target = committed.astype(np.int64) + 1
    above = np.searchsorted(marks, target, side="left")  # first point at or above the target
    inner = (above > 0) & (above < len(series))
    lo, hi = above[inner] - 1, above[inner]
    # Interpolated: t0 + (target - h0) * (t - t0) / (h - h0).
    slow = _divide(
        appended, methods, np.flatnonzero(inner), times[lo], target[inner] - marks[lo],
        times[hi] - times[lo], marks[hi] - marks[lo], 1, "interpolated",
    )  # fmt: skip
    first_t, first_h = series[0]
    later = next(((t1, h1) for t1, h1 in series if h1 > first_h and t1 > first_t), None)
    if later is not None:
        # Extrapolated back from the first point: t - (h - target) * (t1 - t) / (h1 - h).
        before = np.flatnonzero(above == 0)
        m = before.size
        slow += _divide(
            appended, methods, before, np.full(m, first_t, np.int64), first_h - target[before],
            np.full(m, later[0] - first_t, np.int64), np.full(m, later[1] - first_h, np.int64),
            -1, "extrapolated",
        )  # fmt: skip
    points = list(series)
    for i in slow:
        appended[i] = append_time("", 0, int(committed[i]), [], None, series=points)[0]
    return appended, methods


def _divide(
    appended: np.ndarray,
    methods: np.ndarray,
    rows: np.ndarray,
    base: np.ndarray,
    records: np.ndarray,
    millis: np.ndarray,
    divisor: np.ndarray,
    sign: int,
    method: str,
) -> list[int]:
    """``appended[rows] = base + sign * records * millis / divisor`` as Python computes it on
    exact integers, and ``methods[rows] = method``; returns the rows whose operands are too
    large for that, left NaN for the caller to compute one by one."""
    methods[rows] = method
    exact = (records.astype(np.float64) * millis < _EXACT) & (divisor < _EXACT)
    quotient = (records[exact] * millis[exact]).astype(np.float64) / divisor[exact]
    appended[rows[exact]] = base[exact].astype(np.float64) + sign * quotient
    return [int(i) for i in rows[~exact]]


def watermark_series(history: Sequence[EndOffsetSample]) -> list[tuple[int, int]]:
    """(time, high watermark) points since the watermark last went backwards, oldest first.

    A watermark that went backwards (topic re-created, unclean leader election) makes the
    earlier samples meaningless for this log.
    """
    points: list[tuple[int, int]] = []
    for s in history:
        if points and s.high_watermark < points[-1][1]:
            points = []
        points.append((s.sampled_at, s.high_watermark))
    return points
