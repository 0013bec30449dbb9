"""End offsets and lag, per micro-batch: sample the data partitions, then measure every group.

How often lag is materialised is its own setting (``[pipeline] lag_interval``, default every
micro-batch): a sample is kept only in a later epoch-aligned interval than the partition's last
one (:func:`sample_due`), so a 10 s trigger can keep commits and groups 10 s fresh while
``end_offsets`` and ``partition_lag`` are written, say, every 30 s -- two Delta commits fewer in
two batches of three.

Samplers (one per source kind) return ``end_offsets`` rows for the data topics the groups
commit on:

* :class:`KafkaSampler` -- confluent-kafka ``AdminClient.list_offsets``: ``earliest`` (log start
  offset), ``latest`` with ``read_uncommitted`` (high watermark) and with ``read_committed``
  (last stable offset, KIP-98); sampled at the injected clock's time;
* :class:`SegmentSampler` -- the data topics' partition directories
  (:class:`~offsetscope.spark.logdir.EndOffsetTracker`: first segment, log end, open
  transactions) as they stood at the micro-batch's event time (its newest internal-topic record
  timestamp): a log directory has no wall clock, and replaying one offline must not measure
  early commits against the log's final end.

Lag (:class:`offsetscope.history.lag.LagIndex`, records and seconds, against the LSO for the
``read_committed_groups`` of ``[pipeline]``, data loss below the log start offset) is computed
at each new sample's time for every group with a committed offset on that partition. What it
needs between batches is kept per data partition in ``fold_state``: the groups' latest committed
positions (``positions``) and the partition's recent samples (``samples``, for lag in seconds by
interpolation), so a batch reads a few state rows, never the commit history. Lag in seconds is
exact where the sampler can read data records (the segment sampler: the timestamp of the first
unconsumed record) and interpolated from the samples otherwise (the Kafka sampler).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from offsetscope.config import Config
from offsetscope.coordinator.clock import Clock
from offsetscope.history.lag import CommitPoint, LagIndex, RecordTime
from offsetscope.history.rows import EndOffsetSample, PartitionLagRow
from offsetscope.spark import logdir

# Samples kept per partition for lag-in-seconds interpolation.
RECENT_SAMPLES = 64
# Data-record timestamps remembered by the segment sampler (see SegmentSampler.record_time).
RECORD_TIMES_CACHED = 100_000


class EndOffsetSampler(Protocol):
    """Something that samples data partitions' end offsets."""

    def sample(self, topics: Iterable[str], event_time: int | None) -> list[EndOffsetSample]:
        """Samples of every partition of ``topics``; ``event_time`` = newest record of the batch."""
        ...

    def record_time(self, topic: str, partition: int, offset: int) -> int | None:
        """Timestamp of the first record at or after ``offset``, if the sampler can read it."""
        ...


class SegmentSampler:
    """End offsets computed from data-topic segments (see the module docstring)."""

    def __init__(self, data_log_dir: str, internal_topics: Iterable[str]) -> None:
        self.data_log_dir = data_log_dir
        self.internal = frozenset(internal_topics)
        self.tracker = logdir.EndOffsetTracker()
        # (topic, partition, offset) -> timestamp: a group that is not consuming asks for the
        # same offset at every batch. Bounded: cleared when full (entries are cheap to redo).
        self._times: dict[tuple[str, int, int], int | None] = {}

    def sample(self, topics: Iterable[str], event_time: int | None) -> list[EndOffsetSample]:
        wanted = sorted(set(topics) - self.internal)
        if not wanted or event_time is None:
            return []
        at = event_time
        dirs = logdir.partition_dirs(self.data_log_dir, wanted)
        ends = [self.tracker.advance(d, until_ms=at) for d in dirs]
        return [
            EndOffsetSample(
                e.topic, e.partition, e.log_start_offset, e.high_watermark, e.last_stable_offset, at
            )
            for e in ends
        ]

    def record_time(self, topic: str, partition: int, offset: int) -> int | None:
        """Exact append time of the first unconsumed record, from the data segments."""
        key = (topic, partition, offset)
        if key not in self._times:
            if len(self._times) >= RECORD_TIMES_CACHED:
                self._times.clear()
            path = Path(self.data_log_dir) / f"{topic}-{partition}"
            self._times[key] = logdir.record_timestamp(path, offset) if path.is_dir() else None
        return self._times[key]


class KafkaSampler:
    """End offsets from a cluster with the AdminClient (see the module docstring)."""

    def __init__(self, cfg: Config, clock: Clock, timeout_s: float = 30.0) -> None:
        from offsetscope import secrets

        # [sources.kafka.security] and the admin_options pass-through, secrets resolved here.
        self.admin = secrets.KafkaAdmin(cfg.sources.kafka, secrets.resolver_for())
        self.clock = clock
        self.timeout_s = timeout_s

    def record_time(self, topic: str, partition: int, offset: int) -> int | None:
        """None: lag in seconds is interpolated from the samples (reading data records would
        need READ on every data topic, beyond the documented least-privilege ACLs)."""
        return None

    def sample(self, topics: Iterable[str], event_time: int | None) -> list[EndOffsetSample]:
        from confluent_kafka import IsolationLevel, TopicPartition
        from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

        wanted = sorted(set(topics))
        if not wanted:
            return []
        metadata = self.admin.list_topics(timeout=self.timeout_s)
        tps = [
            TopicPartition(t, p)
            for t in wanted
            if t in metadata.topics and metadata.topics[t].error is None
            for p in sorted(metadata.topics[t].partitions)
        ]
        if not tps:
            return []
        at = self.clock.now_ms()

        def offsets(spec: Any, isolation: Any) -> dict[tuple[str, int], int]:
            futures = self.admin.list_offsets(
                dict.fromkeys(tps, spec), isolation_level=isolation, request_timeout=self.timeout_s
            )
            return {(tp.topic, tp.partition): f.result().offset for tp, f in futures.items()}

        earliest = OffsetSpec.earliest()  # type: ignore[no-untyped-call]
        latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
        start = offsets(earliest, IsolationLevel.READ_UNCOMMITTED)
        high = offsets(latest, IsolationLevel.READ_UNCOMMITTED)
        stable = offsets(latest, IsolationLevel.READ_COMMITTED)
        return [
            EndOffsetSample(
                tp.topic,
                tp.partition,
                start[(tp.topic, tp.partition)],
                high[(tp.topic, tp.partition)],
                stable[(tp.topic, tp.partition)],
                at,
            )
            for tp in tps
        ]


# ----------------------------------------------------------------------------- state


def partition_key(topic: str, partition: int) -> str:
    """The ``fold_state`` key of a data partition."""
    return f"{topic}:{partition}"


@dataclass(frozen=True, slots=True)
class Position:
    """A group's latest committed offset on a partition (``offset`` None: removed)."""

    group_id: str
    offset: int | None
    at: int
    record_offset: int

    def newer_than(self, other: Position) -> bool:
        return (self.at, self.record_offset) > (other.at, other.record_offset)


def positions_from_json(text: str | None) -> dict[str, Position]:
    if not text:
        return {}
    data = json.loads(text)
    return {g: Position(g, v[0], v[1], v[2]) for g, v in data.items()}


def positions_to_json(positions: Mapping[str, Position]) -> str:
    return json.dumps(
        {g: [p.offset, p.at, p.record_offset] for g, p in sorted(positions.items())},
        separators=(",", ":"),
    )


def sample_due(at: int, last_at: int | None, interval_ms: int | None) -> bool:
    """Whether a sample taken at ``at`` is kept after the partition's last one (``last_at``):
    it must be newer and, with an interval, fall in a later interval counted from the epoch.
    Epoch-aligned intervals, not ``last_at + interval``: Spark fires processing-time triggers
    on multiples of their interval, so with a trigger as long as the interval every batch
    lands in an interval of its own, where a sample a few milliseconds early would otherwise
    be skipped and leave a gap of two."""
    if last_at is None:
        return True
    if at <= last_at:
        return False
    return interval_ms is None or at // interval_ms > last_at // interval_ms


def samples_from_json(topic: str, partition: int, text: str | None) -> list[EndOffsetSample]:
    if not text:
        return []
    return [EndOffsetSample(topic, partition, *entry) for entry in json.loads(text)]


def samples_to_json(samples: Sequence[EndOffsetSample]) -> str:
    return json.dumps(
        [
            [s.log_start_offset, s.high_watermark, s.last_stable_offset, s.sampled_at]
            for s in samples[-RECENT_SAMPLES:]
        ],
        separators=(",", ":"),
    )


def update_positions(
    current: Mapping[str, Position], updates: Iterable[Position]
) -> dict[str, Position]:
    """Apply commit updates; the newest (by effective time, then record offset) wins."""
    out = dict(current)
    for p in updates:
        old = out.get(p.group_id)
        if old is None or p.newer_than(old):
            out[p.group_id] = p
    return out


def lag_rows(
    topic: str,
    partition: int,
    positions: Mapping[str, Position],
    history: Sequence[EndOffsetSample],
    new: Sequence[EndOffsetSample],
    read_committed_groups: Iterable[str],
    record_time: RecordTime | None = None,
) -> list[PartitionLagRow]:
    """Lag of every group with a position on the partition, at each new sample's time.

    ``record_time`` (the sampler's) gives exact lag in seconds where data records are readable;
    without it, or where it returns None, lag in seconds is interpolated from the samples.
    """
    latest = [
        CommitPoint(p.group_id, topic, partition, p.offset, p.at, p.record_offset)
        for p in positions.values()
    ]
    index = LagIndex((), [*history, *new])
    return index.latest_rows_at_samples(
        latest, new, read_committed_groups=read_committed_groups, record_time=record_time
    )
