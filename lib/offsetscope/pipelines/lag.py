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
* :class:`JavaKafkaSampler` -- the same three answers from Kafka's Java AdminClient in the Spark
  driver's JVM (the kafka-clients jar of Spark's Kafka source), for the mechanisms librdkafka
  cannot do as the confluent-kafka wheel is built: GSSAPI and AWS_MSK_IAM
  (:mod:`offsetscope.secrets.kafka`). It logs in with exactly the Kafka source's settings, and
  the driver's ``-Djava.security.krb5.conf``;
* :class:`SegmentSampler` -- the data topics' partition directories
  (:class:`~offsetscope.spark.logdir.EndOffsetTracker`: first segment, log end, open
  transactions) as they stood at the time up to which the micro-batch has read every
  internal-topic partition it read (the earliest of their newest record timestamps): a log
  directory has no wall clock, and replaying one offline must not measure early commits
  against the log's final end, nor a partition read ahead against commits not yet read.

Lag (:class:`offsetscope.history.lag.LagIndex`, records and seconds, against the LSO for the
``read_committed_groups`` of ``[pipeline]``, data loss below the log start offset) is computed
at each new sample's time for every group with a committed offset on that partition. What it
needs between batches is kept per data partition in ``fold_state``: the groups' latest committed
positions (``positions``) and the partition's recent samples (``samples``, for lag in seconds by
interpolation), so a batch reads a few state rows, never the commit history. Lag in seconds is
exact where the sampler can read data records (the segment sampler: the timestamp of the first
unconsumed record) and interpolated from the samples otherwise (the Kafka sampler).

Both are column-wise, because one partition can carry every group of the cluster: the
positions state is ``["positions/2", [group ids, sorted], [offsets], [effective times],
[record offsets]]`` (:class:`PartitionPositions`; the earlier ``{group: [offset, at, record
offset]}`` object still loads), and a sample's lag rows come out as Arrow columns
(:func:`lag_table`), not a row object per group.

**Where lag rows are made.** The driver decides, per data partition, what a batch measures: the
positions (updated with the batch's commits, or as stored), the samples kept before and the
batch's new ones -- a :class:`LagInput` of JSON texts, one per partition with a new sample.
The rows themselves are computed in the executors (:func:`lag_frame`: one task per few
partitions, each a :func:`lag_table`), gated and appended from there, so ``partition_lag``
(every group with a position on a sampled partition, at every new sample) never reaches the
driver. Where exact append times are read from data segments, the executors read them: the
sampler hands over a picklable reader (:meth:`EndOffsetSampler.record_reader`). A partition
without commits in the batch costs the driver no work per group: its stored positions text is
passed on as it is, and the stuck-LSO fold parses it only if the partition is stuck
(:class:`LivePositions`).

    driver:    positions (fold_state) + samples ─> [LagInput per sampled partition]
    executors: LagInput ─lag_table─> partition_lag rows ─gate─> append
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pyarrow as pa

from offsetscope import paths
from offsetscope.clock import Clock
from offsetscope.config import Config
from offsetscope.history import lag as lag_history
from offsetscope.history.lag import (
    LagIndex,
    PartitionPositions,
    Position,
    RecordTime,
)
from offsetscope.history.rows import EndOffsetSample
from offsetscope.history.tables import TABLES as HISTORY_TABLES
from offsetscope.quality import arrow as arrow_checks
from offsetscope.quality import expressions, suites
from offsetscope.spark import logdir, sources, writes
from offsetscope.spark import tables as catalogue

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# The fold-state encoding of a partition's positions (PartitionPositions).
POSITIONS_FORMAT = "positions/2"
# partition_lag's columns as lag_table builds them (timestamps as epoch ms).
LAG_SCHEMA = writes.ms_schema("partition_lag")
KEY = tuple(HISTORY_TABLES["partition_lag"].key)  # within a cluster
# The key's uniqueness check, and the column lag_rows marks its repeats in.
KEY_CHECK = suites.unique(KEY)
KEY_MARK = expressions.mark_column(KEY_CHECK)
# Samples kept per partition for lag-in-seconds interpolation.
RECENT_SAMPLES = 64
# Data-record timestamps remembered by the segment sampler (see SegmentSampler.record_time).
RECORD_TIMES_CACHED = 100_000


class EndOffsetSampler(Protocol):
    """Something that samples data partitions' end offsets."""

    def sample(self, topics: Iterable[str], event_time: int | None) -> list[EndOffsetSample]:
        """Samples of every partition of ``topics``; ``event_time``: the time up to which the
        batch has read every internal-topic partition it read (the earliest of their newest
        record timestamps)."""
        ...

    def record_reader(self) -> RecordTime | None:
        """Timestamp of the first record at or after an offset, where the sampler can read
        data records: a picklable callable, since lag is computed in the executors (None:
        lag in seconds is interpolated from the samples)."""
        ...

    def producers(self, topic: str, partition: int) -> Mapping[int, int] | None:
        """The partition's open transactions at the last sample (producer id -> first offset),
        or None when the sampler cannot see them."""
        ...


# (data log dir, topic, partition, offset) -> timestamp, per process (the driver's, or a Python
# worker's, which Spark reuses across tasks): a group that is not consuming asks for the same
# offset at every batch. Bounded: cleared when full (entries are cheap to redo).
_RECORD_TIMES: dict[tuple[str, str, int, int], int | None] = {}


@dataclass(frozen=True, slots=True)
class SegmentRecordTimes:
    """Exact append times of data records, read from a data log directory wherever it is
    called: picklable, so the executors computing lag read the segments themselves.

    ``fs_options``: the S3A settings a remote directory is read with
    (:func:`offsetscope.paths.python_fs_options`), applied in the process that reads.
    """

    data_log_dir: str
    fs_options: tuple[tuple[str, str], ...] = ()

    def __call__(self, topic: str, partition: int, offset: int) -> int | None:
        key = (self.data_log_dir, topic, partition, offset)
        if key not in _RECORD_TIMES:
            if len(_RECORD_TIMES) >= RECORD_TIMES_CACHED:
                _RECORD_TIMES.clear()
            paths.configure(dict(self.fs_options))
            path = paths.readable(self.data_log_dir) / f"{topic}-{partition}"
            _RECORD_TIMES[key] = logdir.record_timestamp(path, offset) if path.is_dir() else None
        return _RECORD_TIMES[key]


class SegmentSampler:
    """End offsets computed from data-topic segments (see the module docstring)."""

    def __init__(
        self,
        data_log_dir: str,
        internal_topics: Iterable[str],
        fs_options: Mapping[str, str] | None = None,
    ) -> None:
        self.data_log_dir = data_log_dir
        self.internal = frozenset(internal_topics)
        self.tracker = logdir.EndOffsetTracker()
        self._producers: dict[tuple[str, int], dict[int, int]] = {}
        self._times = SegmentRecordTimes(data_log_dir, tuple(sorted((fs_options or {}).items())))

    def sample(self, topics: Iterable[str], event_time: int | None) -> list[EndOffsetSample]:
        wanted = sorted(set(topics) - self.internal)
        if not wanted or event_time is None:
            return []
        at = event_time
        dirs = logdir.partition_dirs(self.data_log_dir, wanted)
        ends = [self.tracker.advance(d, until_ms=at) for d in dirs]
        for d in dirs:
            self._producers[(d.topic, d.partition)] = self.tracker.open_transactions(d)
        return [
            EndOffsetSample(
                e.topic, e.partition, e.log_start_offset, e.high_watermark, e.last_stable_offset, at
            )
            for e in ends
        ]

    def producers(self, topic: str, partition: int) -> Mapping[int, int] | None:
        """Open transactions as the data segments show them (control batches close them)."""
        return self._producers.get((topic, partition))

    def record_time(self, topic: str, partition: int, offset: int) -> int | None:
        """Exact append time of the first unconsumed record, from the data segments."""
        return self._times(topic, partition, offset)

    def record_reader(self) -> SegmentRecordTimes:
        """The data segments' record times, for the executors."""
        return self._times


class KafkaSampler:
    """End offsets from a cluster with the AdminClient (see the module docstring)."""

    def __init__(self, cfg: Config, clock: Clock, timeout_s: float = 30.0) -> None:
        from offsetscope.secrets import kafka as secrets_kafka
        from offsetscope.secrets import references as secrets_references

        # [sources.kafka.security] and the admin_options pass-through, secrets resolved here.
        self.admin = secrets_kafka.KafkaAdmin(cfg.sources.kafka, secrets_references.resolver_for())
        self.clock = clock
        self.timeout_s = timeout_s

    def record_reader(self) -> RecordTime | None:
        """None: lag in seconds is interpolated from the samples (reading data records would
        need READ on every data topic, beyond the documented least-privilege ACLs)."""
        return None

    def producers(self, topic: str, partition: int) -> Mapping[int, int] | None:
        """None: Kafka's DescribeProducers (each producer's current transaction start offset)
        is not in confluent-kafka's AdminClient; a stuck LSO is then itself the first offset
        of the oldest open transaction (offsetscope.history.stuck)."""
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


class JavaKafkaSampler:
    """End offsets from a cluster with Kafka's Java AdminClient (see the module docstring)."""

    def __init__(self, cfg: Config, clock: Clock, timeout_s: float = 30.0) -> None:
        from offsetscope.secrets import kafka as secrets_kafka
        from offsetscope.secrets import references as secrets_references

        k = cfg.sources.kafka
        options = secrets_kafka.spark_kafka_options(k, secrets_references.resolver_for())
        self.properties = {
            "bootstrap.servers": k.bootstrap_servers,
            **{name.removeprefix("kafka."): value for name, value in options.items()},
        }
        self.clock = clock
        self.timeout_s = timeout_s
        self._admin: Any = None

    def _jvm(self) -> Any:
        from pyspark import SparkContext

        sc = SparkContext._active_spark_context
        if sc is None or sc._jvm is None:
            raise RuntimeError("the Java AdminClient sampler runs in a Spark driver")
        return sc._jvm

    def admin(self) -> Any:
        """The AdminClient, created at the first sample (the driver's JVM runs by then)."""
        if self._admin is None:
            jvm = self._jvm()
            props = jvm.java.util.Properties()
            for name, value in self.properties.items():
                props.setProperty(name, value)
            self._admin = jvm.org.apache.kafka.clients.admin.AdminClient.create(props)
        return self._admin

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    def record_reader(self) -> RecordTime | None:
        """None, as :meth:`KafkaSampler.record_reader`."""
        return None

    def producers(self, topic: str, partition: int) -> Mapping[int, int] | None:
        """None, as for :class:`KafkaSampler`: the stuck-LSO rule then takes the LSO itself as
        the first offset of the oldest open transaction (offsetscope.history.stuck)."""
        return None

    def _get(self, future: Any) -> Any:
        jvm = self._jvm()
        return future.get(
            int(self.timeout_s * 1000), jvm.java.util.concurrent.TimeUnit.MILLISECONDS
        )

    def sample(self, topics: Iterable[str], event_time: int | None) -> list[EndOffsetSample]:
        jvm = self._jvm()
        admin_pkg = jvm.org.apache.kafka.clients.admin
        admin = self.admin()
        existing = set(self._get(admin.listTopics().names()))
        wanted = sorted(set(topics) & existing)
        if not wanted:
            return []
        names = jvm.java.util.ArrayList()
        for name in wanted:
            names.add(name)
        described = self._get(admin.describeTopics(names).allTopicNames())
        tps = [(t, int(info.partition())) for t in wanted for info in described.get(t).partitions()]
        tps.sort()
        at = self.clock.now_ms()
        java_tps = {tp: jvm.org.apache.kafka.common.TopicPartition(tp[0], tp[1]) for tp in tps}
        isolation = jvm.org.apache.kafka.common.IsolationLevel

        def offsets(spec: Any, level: Any) -> dict[tuple[str, int], int]:
            request = jvm.java.util.HashMap()
            for java_tp in java_tps.values():
                request.put(java_tp, spec)
            result = self._get(
                admin.listOffsets(request, admin_pkg.ListOffsetsOptions(level)).all()
            )
            return {tp: int(result.get(java_tp).offset()) for tp, java_tp in java_tps.items()}

        start = offsets(admin_pkg.OffsetSpec.earliest(), isolation.READ_UNCOMMITTED)
        high = offsets(admin_pkg.OffsetSpec.latest(), isolation.READ_UNCOMMITTED)
        stable = offsets(admin_pkg.OffsetSpec.latest(), isolation.READ_COMMITTED)
        return [
            EndOffsetSample(t, p, start[(t, p)], high[(t, p)], stable[(t, p)], at) for t, p in tps
        ]


# ----------------------------------------------------------------------------- state


def partition_key(topic: str, partition: int) -> str:
    """The ``fold_state`` key of a data partition."""
    return f"{topic}:{partition}"


def positions_from_json(text: str | None) -> PartitionPositions:
    """A partition's positions from ``fold_state``: ``["positions/2", groups, offsets, at,
    record offsets]``, or the earlier ``{group: [offset, at, record offset]}``."""
    if not text:
        return PartitionPositions()
    data = json.loads(text)
    if isinstance(data, dict):
        items = sorted(data.items())
        return PartitionPositions(
            tuple(g for g, _ in items),
            tuple(v[0] for _, v in items),
            tuple(v[1] for _, v in items),
            tuple(v[2] for _, v in items),
        )
    tag, groups, offsets, at, record_offsets = data
    if tag != POSITIONS_FORMAT:
        raise ValueError(f"fold_state positions: unknown format {tag!r}")
    return PartitionPositions(tuple(groups), tuple(offsets), tuple(at), tuple(record_offsets))


def positions_to_json(positions: PartitionPositions) -> str:
    p = positions
    return json.dumps(
        [POSITIONS_FORMAT, p.groups, p.offsets, p.at, p.record_offsets], separators=(",", ":")
    )


def update_positions(
    current: PartitionPositions, updates: Iterable[Position] | PartitionPositions
) -> PartitionPositions:
    """Apply commit updates; the newest (by effective time, then record offset) wins, and on
    a tie the position already held. Returns ``current`` itself when nothing changed.

    ``updates`` as :class:`PartitionPositions` (a batch's commit summary) are read column by
    column, with no ``Position`` per group. A group already held is found by bisection and new
    ones are spliced in between slices of the columns, so the work per group of the partition
    is copying, not Python per group: a partition can hold every group of the cluster while a
    batch moves a few of them."""
    entries: Iterable[tuple[str, int | None, int, int]]
    if isinstance(updates, PartitionPositions):
        if not current.groups:  # already in group order, one position per group
            return updates if updates.groups else current
        entries = zip(
            updates.groups, updates.offsets, updates.at, updates.record_offsets, strict=True
        )
    else:
        entries = ((p.group_id, p.offset, p.at, p.record_offset) for p in updates)
    groups = current.groups
    offsets, at, record_offsets = (
        list(current.offsets),
        list(current.at),
        list(current.record_offsets),
    )
    added: dict[str, tuple[int | None, int, int]] = {}
    changed = False
    for group_id, offset, when, record_offset in entries:
        i = bisect.bisect_left(groups, group_id)
        if i < len(groups) and groups[i] == group_id:
            if (when, record_offset) > (at[i], record_offsets[i]):
                offsets[i], at[i], record_offsets[i] = offset, when, record_offset
                changed = True
            continue
        first = added.get(group_id)
        if first is None or (when, record_offset) > first[1:]:
            added[group_id] = (offset, when, record_offset)
    if not (changed or added):
        return current
    if not added:
        return PartitionPositions(groups, tuple(offsets), tuple(at), tuple(record_offsets))
    held: tuple[Sequence[Any], ...] = (groups, offsets, at, record_offsets)
    columns: tuple[list[Any], ...] = ([], [], [], [])
    start = 0
    for name in sorted(added):
        end = bisect.bisect_left(groups, name, lo=start)
        for column, values, value in zip(columns, held, (name, *added[name]), strict=True):
            column.extend(values[start:end])
            column.append(value)
        start = end
    for column, values in zip(columns, held, strict=True):
        column.extend(values[start:])
    return PartitionPositions(*(tuple(c) for c in columns))


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


def samples_to_json(samples: Sequence[EndOffsetSample], keep: int | None = RECENT_SAMPLES) -> str:
    """The most recent ``keep`` of ``samples`` (all of them with None) as ``fold_state`` keeps
    them (:func:`samples_from_json` reads them back)."""
    kept = samples if keep is None else samples[-keep:]
    return json.dumps(
        [[s.log_start_offset, s.high_watermark, s.last_stable_offset, s.sampled_at] for s in kept],
        separators=(",", ":"),
    )


class LivePositions(Mapping[str, int]):
    """The groups' committed offsets on a partition as of a time (what the stuck-LSO fold
    names blocked and lagging groups with), parsed from the positions only when asked: the
    fold reads them for a stuck partition alone, and every other sampled partition of a batch
    then costs the driver nothing per group."""

    def __init__(self, positions: PartitionPositions | str | None, until: int) -> None:
        self._source = positions
        self._until = until
        self._offsets: dict[str, int] | None = None

    def _live(self) -> dict[str, int]:
        if self._offsets is None:
            p = self._source
            if not isinstance(p, PartitionPositions):
                p = positions_from_json(p)
            self._offsets = {
                g: o
                for g, o, at in zip(p.groups, p.offsets, p.at, strict=True)
                if o is not None and at <= self._until
            }
            self._source = None
        return self._offsets

    def __getitem__(self, group_id: str) -> int:
        return self._live()[group_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._live())

    def __len__(self) -> int:
        return len(self._live())


def lag_table(
    topic: str,
    partition: int,
    positions: PartitionPositions,
    history: Sequence[EndOffsetSample],
    new: Sequence[EndOffsetSample],
    read_committed_groups: Iterable[str],
    record_time: RecordTime | None = None,
    read_uncommitted_groups: Iterable[str] = (),
) -> pa.Table:
    """Lag of every group with a position on the partition, at each new sample's time, as
    ``partition_lag`` columns (timestamps in epoch ms, for :func:`~.writes.ms_table`).

    Rows are ordered by sample time, then group id; each is the row
    :meth:`offsetscope.history.lag.LagIndex.lag` gives for that group and time with the
    group's position as its only commit and the group's hint from the two lists: a position is
    in effect from its time on, a removed one (no offset) has no row. Computed over the
    partition's groups at once. The append time of each distinct committed offset behind the
    high watermark is interpolated from the samples for all of them together
    (:func:`~offsetscope.history.lag.append_times`); only with ``record_time`` (a sampler that
    reads data records) is each offset looked up one by one, the costly part when segments
    are read.
    """
    index = LagIndex((), [*history, *new])
    rc_groups, ru_groups = tuple(read_committed_groups), tuple(read_uncommitted_groups)
    hints: Sequence[bool | None] = [None] * len(positions.groups)
    if rc_groups or ru_groups:  # no lists (the default): no group has a hint, none is matched
        hint_of = lag_history.isolation_hint(rc_groups, ru_groups)
        hints = [hint_of(g) for g in positions.groups]
    live = np.array([o is not None for o in positions.offsets], dtype=bool)
    committed_all = np.array([o if o is not None else 0 for o in positions.offsets], np.int64)
    at = np.array(positions.at, dtype=np.int64)
    hint_rc = np.array([h is True for h in hints], dtype=bool)
    hint_ru = np.array([h is False for h in hints], dtype=bool)
    groups = pa.array(positions.groups, pa.string())
    parts: list[pa.Table] = []
    for s in sorted(new, key=lambda s: s.sampled_at):
        seen = index.samples_until(topic, partition, s.sampled_at)
        sample = seen[-1]  # the latest sample at or before this one's time (it, or a tie)
        rows = np.flatnonzero(live & (at <= s.sampled_at))
        n = rows.size
        committed = committed_all[rows]
        hwm = sample.high_watermark
        lso = sample.last_stable_offset if sample.last_stable_offset >= 0 else None
        lag_hwm = np.maximum(0, hwm - committed)
        # The rules of history.lag.lag_basis, column-wise.
        reason = np.full(n, lag_history.DEFAULT, dtype=object)
        if lso is None:
            on_lso = np.zeros(n, dtype=bool)
            reason[:] = lag_history.NO_LSO
            lag_lso = None
            end = np.full(n, hwm, np.int64)
        else:
            rc, ru = hint_rc[rows], hint_ru[rows]
            past = committed > lso
            on_lso = rc | (~ru & ~past)
            reason[past] = lag_history.READ_PAST_LSO
            reason[ru] = lag_history.HINT_READ_UNCOMMITTED
            reason[rc] = lag_history.HINT_READ_COMMITTED
            lag_lso = np.maximum(0, lso - committed)
            end = np.where(on_lso, lso, hwm)
        lag_records = np.where(on_lso, lag_lso, lag_hwm) if lag_lso is not None else lag_hwm
        lost = np.maximum(0, sample.log_start_offset - committed)
        behind = lag_hwm > 0
        distinct, which = np.unique(committed[behind], return_inverse=True)
        # All distinct offsets against the samples at once: the groups of a partition can
        # each sit at an offset of their own (docs/benchmarks.md, "Measurements behind design
        # choices").
        appended_at, methods = lag_history.append_times(
            distinct, lag_history.watermark_series(seen)
        )
        if record_time is not None:  # a data record's own timestamp wins where it is read
            for k, offset in enumerate(distinct.tolist()):
                exact = record_time(topic, partition, offset)
                if exact is not None:
                    appended_at[k], methods[k] = float(exact), "exact"
        appended = np.full(n, np.nan, np.float64)
        method = np.full(n, None, dtype=object)
        if distinct.size:
            appended[behind] = appended_at[which]
            method[behind] = methods[which]
        since = np.maximum(0, s.sampled_at - appended) / 1000.0  # NaN where unknown
        seconds_hwm = np.where(lag_hwm > 0, since, 0.0)
        seconds_lso = np.where(lag_lso > 0, since, 0.0) if lag_lso is not None else None
        lag_seconds = (
            np.where(on_lso, seconds_lso, seconds_hwm) if seconds_lso is not None else seconds_hwm
        )
        method[lag_records == 0] = "caught_up"
        unknown = np.isnan(lag_seconds)  # no append time found: its method is None too
        method[unknown] = None

        def repeat(value: Any, typ: pa.DataType, n: int = n) -> pa.Array:
            return pa.repeat(pa.scalar(value, typ), n)

        parts.append(
            pa.table(
                {
                    "group_id": groups.take(pa.array(rows)),
                    "topic": pa.repeat(topic, n),
                    "partition": repeat(partition, pa.int32()),
                    "as_of": repeat(s.sampled_at, pa.int64()),
                    "read_committed": pa.array(on_lso),
                    "committed_offset": pa.array(committed),
                    "committed_at": pa.array(at[rows]),
                    "end_offset": pa.array(end.astype(np.int64)),
                    "high_watermark": repeat(hwm, pa.int64()),
                    "last_stable_offset": repeat(lso, pa.int64()),
                    "log_start_offset": repeat(sample.log_start_offset, pa.int64()),
                    "sampled_at": repeat(sample.sampled_at, pa.int64()),
                    "lag_records": pa.array(lag_records.astype(np.int64)),
                    "lag_seconds": pa.array(lag_seconds, mask=unknown),
                    "lag_method": pa.array(method, pa.string()),
                    "data_loss": pa.array(lost > 0),
                    "lost_records": pa.array(lost.astype(np.int64)),
                    "lag_basis": pa.array(
                        np.where(on_lso, lag_history.LSO, lag_history.HIGH_WATERMARK), pa.string()
                    ),
                    "basis_reason": pa.array(reason, pa.string()),
                    "lag_records_hwm": pa.array(lag_hwm.astype(np.int64)),
                    "lag_records_lso": (
                        pa.array(lag_lso.astype(np.int64))
                        if lag_lso is not None
                        else repeat(None, pa.int64())
                    ),
                    "lag_seconds_hwm": pa.array(seconds_hwm, mask=np.isnan(seconds_hwm)),
                    "lag_seconds_lso": (
                        pa.array(seconds_lso, mask=np.isnan(seconds_lso))
                        if seconds_lso is not None
                        else repeat(None, pa.float64())
                    ),
                },
                schema=LAG_SCHEMA,
            )
        )
    return pa.concat_tables(parts) if parts else LAG_SCHEMA.empty_table()


# ----------------------------------------------------------------------------- executors


@dataclass(frozen=True, slots=True)
class LagInput:
    """What one data partition's lag rows of a batch are computed from, as ``fold_state``
    keeps it: the positions after the batch's commits (``positions/2`` JSON, or empty), the
    samples kept before the batch and the batch's new ones (:func:`samples_to_json`)."""

    topic: str
    partition: int
    positions: str
    history: str
    fresh: str


LAG_INPUT_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string(), False),
        pa.field("partition", pa.int32(), False),
        pa.field("positions", pa.large_string(), False),
        pa.field("history", pa.string(), False),
        pa.field("fresh", pa.string(), False),
    ]
)
_LAG_INPUT_DDL = "topic string, partition int, positions string, history string, fresh string"
# Output rows per Arrow batch a lag task yields (a partition can hold every group).
_ROWS_PER_CHUNK = 100_000


def inputs_table(inputs: Iterable[LagInput]) -> pa.Table:
    """``inputs`` as the Arrow rows :func:`lag_rows` reads."""
    columns: dict[str, list[Any]] = {f.name: [] for f in LAG_INPUT_SCHEMA}
    for i in inputs:
        for name, values in columns.items():
            values.append(getattr(i, name))
    return pa.table(columns, schema=LAG_INPUT_SCHEMA)


def lag_rows(
    batches: Iterable[pa.RecordBatch],
    *,
    read_committed_groups: Sequence[str],
    read_uncommitted_groups: Sequence[str] = (),
    record_time: RecordTime | None = None,
    mark_repeats: bool = False,
) -> Iterator[pa.RecordBatch]:
    """The ``partition_lag`` rows (:data:`LAG_SCHEMA`) of :class:`LagInput` rows: the body of
    :func:`lag_frame`'s ``mapInArrow``, one :func:`lag_table` per input row.

    ``mark_repeats``: each row also says whether its key repeats (the key's uniqueness check,
    :func:`offsetscope.quality.expressions.mark_column`). A key names its topic partition, so
    its rows all come from one input, and one input's rows are checked together: marked here,
    the gate needs no job that computes the rows again.
    """
    for batch in batches:
        for row in batch.to_pylist():
            topic, partition = row["topic"], row["partition"]
            table = lag_table(
                topic,
                partition,
                positions_from_json(row["positions"]),
                samples_from_json(topic, partition, row["history"]),
                samples_from_json(topic, partition, row["fresh"]),
                read_committed_groups,
                record_time,
                read_uncommitted_groups,
            )
            if mark_repeats:
                table = table.append_column(
                    KEY_MARK, pa.array(arrow_checks.broken(KEY_CHECK, table), pa.bool_())
                )
            yield from table.to_batches(max_chunksize=_ROWS_PER_CHUNK)


def lag_frame(
    spark: SparkSession,
    inputs: Sequence[LagInput],
    *,
    read_committed_groups: Sequence[str],
    read_uncommitted_groups: Sequence[str] = (),
    record_time: RecordTime | None = None,
    cluster: str | None = None,
) -> DataFrame:
    """The ``partition_lag`` rows of ``inputs`` as a DataFrame computed in the executors (its
    written columns, timestamps typed: :func:`offsetscope.spark.writes.ms_frame`), each marked
    with whether its key repeats (:func:`lag_rows`; the gate reads the mark and drops it).

    Raises:
        ValueError: two inputs of the same topic partition (their rows' keys could repeat
            across inputs, which the marks would not see).
    """
    seen: set[tuple[str, int]] = set()
    for i in inputs:
        if (i.topic, i.partition) in seen:
            raise ValueError(f"two lag inputs for {i.topic}-{i.partition}")
        seen.add((i.topic, i.partition))
    # The largest first: a local relation is split into contiguous slices, and the partitions
    # with the most groups should not share one.
    table = inputs_table(sorted(inputs, key=lambda i: -len(i.positions)))
    frame = spark.createDataFrame(table, schema=_LAG_INPUT_DDL)
    rc, ru = tuple(read_committed_groups), tuple(read_uncommitted_groups)

    def compute(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return lag_rows(
            batches,
            read_committed_groups=rc,
            read_uncommitted_groups=ru,
            record_time=record_time,
            mark_repeats=True,
        )

    rows = frame.mapInArrow(compute, f"{_ms_ddl('partition_lag')}, `{KEY_MARK}` boolean")
    return writes.ms_frame("partition_lag", rows, cluster=cluster, keep=(KEY_MARK,))


def _ms_ddl(logical: str) -> str:
    """Spark DDL of :func:`offsetscope.spark.writes.ms_schema`: the table's written columns
    but its cluster, timestamps as epoch-ms ``bigint``."""
    return ", ".join(
        f"`{c.name}` {'bigint' if c.type == 'timestamp' else c.type}"
        for c in catalogue.spec(logical).written_columns
        if c.name != catalogue.CLUSTER
    )


def default_sampler(
    cfg: Config, kind: str, clock: Clock, log_dir: str | None = None
) -> EndOffsetSampler:
    """The end-offset sampler of a source kind (see :mod:`offsetscope.pipelines.lag`)."""
    if kind == sources.KAFKA:
        from offsetscope.secrets import kafka as secrets_kafka

        if cfg.sources.kafka.security.sasl_mechanism in secrets_kafka.JAVA_ONLY_MECHANISMS:
            return JavaKafkaSampler(cfg, clock)
        return KafkaSampler(cfg, clock)
    s = cfg.sources.segments
    data_dir = s.data_log_dir or log_dir or s.log_dir
    internal = sources.topic_kinds(s.offsets_topic, s.transaction_topic, s.share_state_topic)
    # The driver reads a remote data log directory from Python with the source's S3 settings,
    # and so do the executors that read record times for lag.
    fs_options = paths.python_fs_options(cfg.spark.conf)
    paths.configure(fs_options)
    return SegmentSampler(paths.resolve_path(data_dir), internal, fs_options)
