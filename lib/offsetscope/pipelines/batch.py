"""One micro-batch of the ingest query: internal-topic records -> bronze, silver and gold tables.

Per micro-batch (``foreachBatch``, with ``batch_df.sparkSession``)::

    source rows ─persist─┬─> raw_records (bronze, idempotent append)
                         ├─> plain offset commits (by key) ─> decode inside the offset_commits
                         │     append, observed: counts, order, packed commit candidates ─┐
                         └─> the rest (light) ─> decode ─persist─┬─> silver appends,      │
                                                                 │   quarantine           │
                                                                 └─> light events ────────┤
                             fold step (history.batch) <── commit summary <───────────────┘
                             -> gold MERGEs, appends of groups_current, fold_state
    end-offset sampler ─> end_offsets ─> partition_lag          audit row: counts in/out, skips

* **Decode once, keep the few**: the source rows are persisted for the batch and split by what
  their coordinates and keys say (:func:`offsetscope.pipelines.frames.split_plain`). The plain
  offset commits -- most of a batch -- are decoded inside the append that writes their
  ``offset_commits`` rows and never kept or read again: that append's pass observes their
  counts per kind, whether each task's records ascended, and the commit candidates each decode
  task packed (:class:`offsetscope.pipelines.frames.PlainPass`). Every other record is decoded
  apart and persisted, so the silver tables and the light events read the same decoded rows.
  Counts in = events + quarantined + unknown is checked over both parts
  (:func:`offsetscope.spark.decode.kind_counts`) once the plain append is done, before any
  other table but ``raw_records`` is written. A replay's append may be skipped by its marks, so
  there the plain pass runs apart first (Spark's ``noop`` sink) and the append decodes again.
* **Plain commits in Spark SQL**: offset commits outside transactions are committed as read
  (``resolved_by = non_transactional``; with the Kafka source and ``read_committed`` every commit
  that arrives is committed: ``read_committed_source``). Their rows are final and their key
  (record partition and offset) is new by construction, so they are appended idempotently: a
  MERGE would add a scan of the day's partition to every batch. They never reach the driver:
  they are gated and appended from the executors, and the group fold's summary
  (:mod:`offsetscope.history.commits`) is made of the few commits each decode task picked
  as it decoded them (:func:`offsetscope.pipelines.frames.commit_candidates`). Their key is
  taken as unique when each of their topic partitions is read by one task
  (:func:`offsetscope.pipelines.frames.coordinates_unique`) and the task's records ascend,
  which the append's own pass reports: a task whose records did not ascend has its batch
  searched for repeated records after the append, and a repeat fails the batch
  (:class:`RepeatedRecordsError`; every source reads a partition's records once, in order).
* **The fold step** (:mod:`offsetscope.history.batch`, the same composition the tests run) folds
  the light events with the summary: transactional commits and markers per ``__consumer_offsets``
  partition (segment sources only), every group id with its chosen commits, every transactional
  id. Fold state is loaded for the keys in the batch only and the changed states appended as
  their next versions (:mod:`offsetscope.pipelines.state`): a batch costs what its records
  cost, whatever the history. ``groups_current`` is a log the same way: a group's row is
  appended at the version of the group state it was folded into (``GROUPS_CURRENT`` in
  :mod:`offsetscope.spark.tables`; the view of that name shows each group's latest).
* **Writes** (:mod:`offsetscope.pipelines.writer`): queued while the batch is worked out and
  started in four steps, table by table in parallel, each gold table behind its quality gate.
  The bronze append and the plain commits' append (with their decode) first, once the light
  part is decoded; the silver appends once the plain append reported, running while the
  driver folds; the gold writes and the lag once the fold is done; the ``groups_current`` and
  fold-state appends once the states are versioned; the audit row last, once every other write
  has finished. A batch that failed half-way is replayed from the states as they were before
  its own fold-state append (:func:`offsetscope.pipelines.state.replay_version`), so it is
  folded again from the same state and yields the same rows; every write is idempotent.
* Infrastructure errors are never caught: they fail the batch and the query.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from offsetscope import clusters, config
from offsetscope.clock import Clock, SystemClock
from offsetscope.clusters import StateKey
from offsetscope.config import Config, is_own_group
from offsetscope.history import batch as step
from offsetscope.history import lag as lag_history
from offsetscope.history import stuck, tables
from offsetscope.history.codec import evolve
from offsetscope.history.commits import Positions, summarize
from offsetscope.history.groups import GroupState
from offsetscope.history.lag import PartitionPositions, Position
from offsetscope.history.offsets import COMMITTED, OffsetsState
from offsetscope.history.rows import (
    EndOffsetSample,
    GroupCurrentRow,
    OffsetCommitRow,
    StuckPartitionRow,
    TransactionRow,
)
from offsetscope.history.share_state import SharePartitionState
from offsetscope.history.transactions import TxnIdState
from offsetscope.pipelines import frames, lease
from offsetscope.pipelines import lag as lagmod
from offsetscope.pipelines import state as st
from offsetscope.pipelines.heap import DriverHeap
from offsetscope.pipelines.writer import BatchWriter, BatchWrites, Timings, Write
from offsetscope.protocol.records import OFFSETS_TOPIC
from offsetscope.quality import tables as qtables
from offsetscope.spark import decode as dec
from offsetscope.spark import sources, writes
from offsetscope.spark import tables as catalogue

ProgressCallback = Callable[["BatchReport"], None]

_DECODE_STATE: dict[str, Callable[[str], step.FoldState]] = {
    step.OFFSETS: OffsetsState.from_json,
    step.GROUP: GroupState.from_json,
    step.TXN: TxnIdState.from_json,
    step.SHARE: SharePartitionState.from_json,
}
GROUPS_CURRENT = catalogue.GROUPS_CURRENT.logical
_GOLD = (
    ("group_generations", "group_generations"),
    ("group_state_transitions", "group_state_transitions"),
    ("member_sessions", "member_sessions"),
    ("partition_assignments", "partition_assignments"),
    ("transactions", "transactions"),
    ("transaction_status_timeline", "transaction_status_timeline"),
    ("streams_assignments", "streams_assignments"),
    ("share_partition_state", "share_partition_state"),
)


@dataclass(frozen=True, slots=True)
class BatchReport:
    """What one micro-batch read and wrote (also the ``batch_audit`` row)."""

    query_name: str
    batch_id: int
    rows_in: int
    counts: Mapping[str, int]
    rows_written: Mapping[str, int]
    keys_folded: Mapping[str, int]
    offsets_not_seen: int
    event_time: int | None
    seconds: float
    phases: Mapping[str, float] = field(default_factory=dict)

    @property
    def quarantined(self) -> int:
        return self.counts.get(dec.ERROR, 0)

    @property
    def unknown(self) -> int:
        return self.counts.get(dec.UNKNOWN, 0)

    @property
    def events(self) -> int:
        return sum(self.counts.get(k, 0) for k in dec.EVENT_KINDS)

    def line(self, backlog: str | None = None) -> str:
        """A one-line progress message; ``backlog`` (how far behind the source's latest offsets
        the query is, :mod:`offsetscope.pipelines.progress`) is appended when known."""
        rate = self.rows_in / self.seconds if self.seconds > 0 else 0.0
        line = (
            f"[{self.query_name}] batch {self.batch_id}: {self.rows_in} records "
            f"({self.events} events, {self.quarantined} quarantined, {self.unknown} unknown) "
            f"in {self.seconds:.1f} s ({rate:,.0f} records/s)"
        )
        return f"{line}; {backlog}" if backlog else line


@dataclass(slots=True)
class Batch:
    """Working data of one micro-batch of one cluster on the driver: the clusters of a batch
    share its timings, its writes and the states it saves (the same objects)."""

    batch_id: int
    spark: SparkSession
    started_ms: int
    cluster: str
    # The monotonic clock when the batch began (its report's seconds).
    started_s: float = field(default_factory=time.monotonic)
    timings: Timings = field(default_factory=Timings)
    tasks: list[Write] = field(default_factory=list)
    folded: dict[str, int] = field(default_factory=dict)
    new_states: list[st.StateRow] = field(default_factory=list)
    # The fold step's new states as the fold made them, beside their text: what
    # IngestPipeline._parsed becomes once the batch's states are saved.
    made: dict[StateKey, tuple[str, step.FoldState]] = field(default_factory=dict)
    loaded: dict[tuple[str, str], st.StateRow] = field(default_factory=dict)
    # The transactions rows the batch's fold step wrote (newer than the table's until written).
    transactions: Sequence[TransactionRow] = ()
    # The groups_current rows of the batch, by cluster: appended with their groups' versions
    # once the batch's states have theirs.
    current: list[tuple[str, GroupCurrentRow]] = field(default_factory=list)
    # Not a replay: its writes skip the replay check (offsetscope.spark.writes).
    fresh: bool = False
    # The fold_state version a replayed batch reads its states at (offsetscope.pipelines.state,
    # replay_version); None: the latest.
    state_version: int | None = None


class RepeatedRecordsError(RuntimeError):
    """The source delivered a record twice in one batch, found after the append that took the
    batch's records as unique (every source reads a partition's records once, in order)."""


@dataclass(frozen=True, slots=True)
class _Share:
    """One cluster's share of a batch once its first writes are queued (``IngestPipeline.
    _begin``)."""

    batch: Batch
    stats: Sequence[Any]
    rows_in: int
    # The light part's decoded rows, kept for the batch, and their counts.
    light: DataFrame
    found: dict[str, int]
    # The plain part decoded inside its append (None: the share read no __consumer_offsets).
    plain: frames.PlainPass | None
    # Its counts, when its pass ran apart before the append (a possible replay).
    counted: frames.PlainCounts | None
    # The append took the plain commits' keys as unique.
    unique: bool


@dataclass(frozen=True, slots=True)
class _Collected:
    """One cluster's share of a batch once the Spark work before its fold is done."""

    batch: Batch
    stats: Sequence[Any]
    # The plain part's source rows (None: the share read no __consumer_offsets).
    plain: DataFrame | None
    routed: step.Routed
    # The plain commits the summary picks from (None: the share has none).
    picked: pa.Table | None


class IngestPipeline:
    """One ingest query's ``foreachBatch`` logic; see the module docstring.

    Args:
        cfg: the configuration.
        query_name: the query (idempotency app ids, audit rows); default ``[pipeline]``'s.
        source_kind: ``kafka`` or ``segments``; default the clusters' ``kind``.
        clock: wall clock for ``ingested_at`` and Kafka end-offset samples.
        sampler: end-offset sampler of a single-cluster configuration; default one per cluster
            from the source kind (none with ``sample_end_offsets = false``).
        progress: called with each batch's report.
        log_dir: the segment source's log directory, when not ``[sources.segments]``'s.
    """

    def __init__(
        self,
        cfg: Config,
        *,
        query_name: str | None = None,
        source_kind: str | None = None,
        clock: Clock | None = None,
        sampler: lagmod.EndOffsetSampler | None = None,
        progress: ProgressCallback | None = None,
        log_dir: str | None = None,
    ) -> None:
        self.cfg = cfg
        self.query_name = query_name or cfg.pipeline.query_name
        found = config.clusters(cfg)
        self.clusters = tuple(found)
        self.kind = source_kind or next(iter(found.values())).kind
        self.clock: Clock = clock or SystemClock()
        self.progress = progress
        self.reports: list[BatchReport] = []
        self.sequence = writes.BatchSequence()  # which batches cannot be replays
        self.markers_visible = self.kind == sources.SEGMENTS
        self.read_committed_source = {
            name: self.kind == sources.KAFKA and c.kafka.isolation_level == "read_committed"
            for name, c in found.items()
        }
        # A query that reads its partitions from their beginning (a log directory, or a Kafka
        # source starting at "earliest") knows that offsets below the first record it reads of a
        # partition existed and are gone -- deleted by retention or compacted away before it
        # started -- and counts them as not seen. One started "latest" or at given offsets
        # skipped them by choice, and does not.
        self.reads_from_start = {
            name: self.kind == sources.SEGMENTS
            or (self.kind == sources.KAFKA and c.kafka.starting_offsets == "earliest")
            for name, c in found.items()
        }
        # Each cluster's end offsets come from its own brokers or log directory.
        self.samplers: dict[str, lagmod.EndOffsetSampler] = {}
        if sampler is not None:
            if len(found) > 1:
                raise ValueError("one sampler for several clusters: let each have its own")
            self.samplers = {self.clusters[0]: sampler}
        elif cfg.pipeline.sample_end_offsets:
            self.samplers = {
                name: lagmod.default_sampler(
                    config.for_cluster(cfg, name), self.kind, self.clock, log_dir
                )
                for name in self.clusters
            }
        self.writer = BatchWriter(cfg, self.query_name, self.clock)
        # The fold states this query read or wrote (None: known to have none). The table stays
        # the source of truth: a key is read from it the first time this query needs it, and
        # the mirror takes a batch's states only once that batch saved them.
        self._states: dict[StateKey, st.StateRow | None] = {}
        # The states the last saved batch's fold made, beside their text: the next batch folds
        # mostly the same keys, and parsing them again was most of the driver's own work in a
        # batch over many groups. Each is used only while its text is still the mirror's, so
        # it is never newer or older than the mirror. Only the last batch's: a parsed state
        # takes about 2.5 times its text's memory, and the mirror holds every key's text.
        self._parsed: dict[StateKey, tuple[str, step.FoldState]] = {}
        # What a batch leaves alive (those states among it) is kept out of the cyclic garbage
        # collector's walks between batches (lib/offsetscope/pipelines/heap.py).
        self.heap = DriverHeap()

    @property
    def sampler(self) -> lagmod.EndOffsetSampler | None:
        """The end-offset sampler of a single-cluster configuration."""
        return next(iter(self.samplers.values()), None)

    def close(self) -> None:
        """Drop the samplers: py4j keeps the batch function (and so this pipeline) alive after
        the query ends, and a sampler's AdminClient would go on reconnecting to a cluster
        nobody reads. The heap the batches froze is collected as usual again."""
        self.samplers = {}
        self.heap.release()

    # ------------------------------------------------------------------ the batch

    def process_batch(self, batch_df: DataFrame, batch_id: int) -> None:
        """The ``foreachBatch`` function."""
        spark = batch_df.sparkSession
        fresh = self.sequence.begin(batch_id)
        shared = Batch(batch_id, spark, self.clock.now_ms(), "", fresh=fresh)
        # One source partition per topic partition (50 of __consumer_offsets by default) would
        # make every stage of the batch -- the decode's Python tasks, each append's files --
        # 50 tasks or files however few records arrived; the batch works in as many partitions
        # as its shuffles do (``[spark] shuffle_partitions``), merged without a shuffle.
        raw = batch_df.coalesce(self.cfg.spark.shuffle_partitions).persist(
            StorageLevel.MEMORY_AND_DISK
        )
        decoded: list[DataFrame] = []
        try:
            with self.writer.open(spark, batch_id, shared.timings, fresh=fresh) as batch_writes:
                report = self._work(shared, raw, decoded, batch_writes)
        finally:
            # Leaving ``batch_writes`` waited for the writes that read them, also on failure.
            for part in decoded:
                part.unpersist()
            raw.unpersist()
        self.sequence.done(batch_id)
        self.heap.batch_done()
        if report is None:
            return
        self.reports.append(report)
        if self.progress is not None:
            self.progress(report)

    def _work(
        self, shared: Batch, raw: DataFrame, decoded: list[DataFrame], batch_writes: BatchWrites
    ) -> BatchReport | None:
        """The batch's work and writes (None: the batch read no records); ``decoded``
        collects the clusters' persisted decoded rows."""
        spark, batch_id = shared.spark, shared.batch_id
        with shared.timings.timed("read"):
            stats = frames.source_stats(raw, clustered=sources.CLUSTER in raw.columns)
        rows_in = sum(int(s["records"]) for s in stats)
        if rows_in == 0:
            return None
        if not shared.fresh:
            shared.state_version = st.replay_version(
                spark, self.cfg, query_name=self.query_name, batch_id=batch_id
            )
        counts: dict[str, int] = defaultdict(int)
        folded: dict[str, int] = defaultdict(int)
        not_seen = 0
        partitions: list[dict[str, Any]] = []
        # Each cluster's records are decoded and folded apart: its fold states, its lag, its
        # rows. The clusters' writes of a table are started together: one write per table and
        # kind for the batch.
        shares = [
            self._begin(
                dataclasses.replace(shared, cluster=cluster, folded={}, loaded={}),
                raw if len(self.clusters) == 1 else _of_cluster(raw, cluster),
                cluster_stats,
                decoded,
            )
            for cluster, cluster_stats in self._by_cluster(stats).items()
        ]
        # raw_records and the plain commits' appends, the plain part's decode inside them;
        # what the fold needs of it comes with the append.
        self._start_queued(shared, batch_writes)
        if any(s.plain is not None and s.counted is None for s in shares):
            with shared.timings.timed("plain commits"):
                batch_writes.wait("offset_commits")
        collected: list[_Collected] = []
        for share in shares:
            c, cluster_counts = self._collect(share)
            collected.append(c)
            for kind, n in cluster_counts.items():
                counts[kind] += n
        # The silver appends run while the driver folds.
        self._start_queued(shared, batch_writes)
        for c in collected:
            b = c.batch
            positions, txn_rows = self._fold(b, c)
            if b.cluster in self.samplers:
                with b.timings.timed("lag"):
                    lag_inputs = self._lag(b, positions, txn_rows, _read_up_to(c.stats))
                if lag_inputs:
                    self._queue_lag(b, lag_inputs)
            cluster_not_seen, cluster_partitions = self._source_progress(b, c.stats)
            not_seen += cluster_not_seen
            partitions.extend(cluster_partitions)
            for fold, n in b.folded.items():
                folded[fold] += n
        # The gold tables and the lag, while the states are versioned: only the groups_current
        # rows and the fold-state append need those versions.
        self._start_queued(shared, batch_writes)
        event_time = max((int(s["max_ts"]) for s in stats if s["max_ts"] is not None), default=None)
        shared.new_states.append(
            lease.lease_row(self.cfg, self.query_name, batch_id, self.clock.now_ms())
        )
        self._with_group_states(shared)
        new_states = self._versioned(shared, shared.new_states)
        self._queue_current(shared, new_states)
        # Beside the table writes: a replay reads the states from before this append.
        shared.tasks.append(
            Write(
                st.STATE,
                False,
                lambda: st.records(new_states, batch_id=batch_id, now_ms=shared.started_ms),
                len(new_states),
            )
        )
        self._start_queued(shared, batch_writes)
        written = batch_writes.finish()
        for row in new_states:
            self._states[StateKey(row.cluster, row.fold, row.key)] = row
        self._parsed = shared.made
        self._compact(shared)
        report = BatchReport(
            self.query_name,
            batch_id,
            rows_in,
            dict(counts),
            written,
            dict(folded),
            not_seen,
            event_time,
            time.monotonic() - shared.started_s,
            dict(shared.timings.seconds),
        )
        self._audit(shared, report, partitions)
        return report

    @staticmethod
    def _start_queued(shared: Batch, batch_writes: BatchWrites) -> None:
        """Start the writes the batch's clusters have queued (one step), and empty the queue."""
        batch_writes.start(shared.tasks)
        shared.tasks.clear()

    def _by_cluster(self, stats: Sequence[Any]) -> dict[str, list[Any]]:
        """The batch's source partitions per cluster (a source without a cluster column: the
        one cluster of a single-cluster configuration)."""
        out: dict[str, list[Any]] = defaultdict(list)
        for s in stats:
            try:
                cluster = s[sources.CLUSTER]
            except (KeyError, ValueError):  # a Row without the field raises ValueError
                cluster = None
            if cluster is None:
                if len(self.clusters) > 1:
                    raise ValueError("the source rows of several clusters must name theirs")
                cluster = self.clusters[0]
            out[cluster].append(s)
        return dict(out)

    def _begin(
        self, b: Batch, raw: DataFrame, stats: Sequence[Any], decoded: list[DataFrame]
    ) -> _Share:
        """One cluster's share of the batch up to its first writes: the light part decoded,
        kept (into ``decoded``) and counted; the ``raw_records`` append and the plain part's
        ``offset_commits`` append queued (:func:`offsetscope.pipelines.frames.plain_pass`)."""
        rows_in = sum(int(s["records"]) for s in stats)
        BatchWriter.append(
            b.tasks,
            "raw_records",
            frames.bronze_frame(raw, b.batch_id, b.started_ms, b.cluster),
            rows_in,
        )
        plain_source, light_source = frames.split_plain(raw)
        light = dec.decode(light_source).persist(StorageLevel.MEMORY_AND_DISK)
        decoded.append(light)
        with b.timings.timed("decode"):
            found = frames.decoded_counts(light)
        if not any(s["topic"] == OFFSETS_TOPIC for s in stats):
            return _Share(b, stats, rows_in, light, found, None, None, unique=True)
        read_committed = self.read_committed_source[b.cluster]
        plain = frames.plain_pass(plain_source, read_committed_source=read_committed)
        counted = None
        if b.fresh:
            # The append runs (a fresh batch is no replay) and its pass fills the observation;
            # the order of the records it decodes is known after it (_collect).
            unique = frames.coordinates_unique(stats, True)
            rows = plain.rows
            expected = None
        else:
            # A possible replay's append may be skipped: the pass runs apart, before it.
            with b.timings.timed("plain commits"):
                plain.run_apart()
            counted = plain.counts()
            unique = frames.coordinates_unique(stats, counted.ascending)
            rows = frames.plain_commit_frame(
                dec.decode(plain_source), read_committed_source=read_committed
            )
            expected = counted.commits
        if expected != 0:
            # Final as read: gated and appended from the executors.
            BatchWriter.append(
                b.tasks,
                "offset_commits",
                writes.ms_frame("offset_commits", rows, cluster=b.cluster),
                expected,
                unique_key=unique,
            )
        return _Share(b, stats, rows_in, light, found, plain, counted, unique=unique)

    def _silver(self, share: _Share, light: Mapping[str, int], plain: Mapping[str, int]) -> None:
        """Queue the silver appends: the light part's rows, and the plain part's records whose
        values did not decode (quarantine; decoded again, as they are rare)."""
        b = share.batch
        per_table = {
            "group_metadata_events": light.get("group_metadata", 0),
            "consumer_group_events": light.get("consumer_group", 0),
            "transaction_log_events": light.get("transaction_log", 0),
            "control_records": light.get("control", 0),
            "quarantine": light.get(dec.ERROR, 0) + light.get(dec.UNKNOWN, 0),
        }
        batch = {
            "ingest_batch_id": F.lit(b.batch_id).cast("bigint"),
            catalogue.CLUSTER: F.lit(b.cluster),
        }
        for table in catalogue.SILVER_TABLES:
            n = per_table[table.logical]
            if n:
                BatchWriter.append(
                    b.tasks, table.logical, dec.silver_frame(share.light, table, batch), n
                )
        bad = plain.get(dec.ERROR, 0) + plain.get(dec.UNKNOWN, 0)
        if bad and share.plain is not None:
            BatchWriter.append(
                b.tasks,
                catalogue.QUARANTINE.logical,
                dec.silver_frame(dec.decode(share.plain.source), catalogue.QUARANTINE, batch),
                bad,
            )

    def _collect(self, share: _Share) -> tuple[_Collected, dict[str, int]]:
        """The Spark work of the fold step over one cluster's share of the batch, once its
        plain commits are appended (:meth:`_begin`): its counts checked, its silver appends
        queued, its light events and commit candidates on the driver."""
        b = share.batch
        plain = share.counted
        if plain is None and share.plain is not None:
            plain = share.plain.counts()
            # The append took the records' coordinates as unique from the tasks they are in;
            # a task whose records did not ascend may have repeated one.
            if (
                share.unique
                and not plain.ascending
                and frames.repeated_coordinates(share.plain.source)
            ):
                raise RepeatedRecordsError(
                    f"batch {b.batch_id} ({b.cluster}): the source delivered a record of "
                    "__consumer_offsets twice; its offset_commits rows were appended "
                    "without the uniqueness check"
                )
        strays = set(plain.by_kind if plain else {}) - {"offset_commit", dec.ERROR, dec.UNKNOWN}
        if strays:
            # Its silver rows would be written from the light part only: lost.
            raise RuntimeError(
                f"batch {b.batch_id} ({b.cluster}): plain offset-commit records decoded as "
                f"{sorted(strays)}"
            )
        by_kind = dict(share.found)
        for kind, n in (plain.by_kind if plain else {}).items():
            by_kind[kind] = by_kind.get(kind, 0) + n
        counts = dec.kind_counts(share.rows_in, by_kind)
        self._silver(share, share.found, plain.by_kind if plain else {})
        light = []
        if any(counts[k] for k in frames.LIGHT_KINDS) or (
            self.markers_visible and counts["offset_commit"]
        ):
            with b.timings.timed("collect light streams"):
                light = frames.light_events(share.light)
        routed = step.route(light)
        picked = None
        if plain is not None and plain.commits and share.plain is not None:
            with b.timings.timed("commit summary"):
                picked = frames.commit_candidates(
                    plain.candidates,
                    share.plain.source,
                    read_committed_source=self.read_committed_source[b.cluster],
                    tombstones=routed.tombstones,
                )
        source = share.plain.source if share.plain is not None else None
        return _Collected(b, share.stats, source, routed, picked), counts

    def _fold(self, b: Batch, c: _Collected) -> tuple[Positions, Sequence[OffsetCommitRow]]:
        """The fold step over one cluster's share of the batch (:meth:`_collect`): queues the
        gold writes and new states; returns the lag positions and transactional rows."""
        summary: dict[str, list[OffsetCommitRow]] = {}
        positions: Positions = {}
        if c.picked is not None:
            with b.timings.timed("commit summary"):
                summary, positions = summarize(c.picked, c.routed.tombstones)
        offsets_partitions = (
            sorted({int(s["partition"]) for s in c.stats if s["topic"] == OFFSETS_TOPIC})
            if self.markers_visible
            else []
        )
        # The fold step's keys and this batch's own, read in one query.
        wanted = c.routed.wanted(summary, offsets_partitions)
        b.loaded.update(
            self._load_states(
                b, {**wanted, st.SOURCE: [_source_key(s) for s in c.stats], st.SAMPLER: ["topics"]}
            )
        )
        with b.timings.timed("fold"):
            folded = step.fold(
                c.routed,
                summary,
                lambda keys: {
                    k: self._parse(StateKey(b.cluster, *k), row)
                    for k, row in self._load_states(b, keys).items()
                },
                offsets_partitions=offsets_partitions,
                window_commits=lambda windows: (
                    frames.window_commits(c.plain, windows) if c.plain is not None else []
                ),
            )
        b.folded.update(folded.folded)
        for (fold_name, key), state in folded.states.items():
            text = state.to_json()
            b.new_states.append(st.StateRow(fold_name, key, text, state.last_offset, b.cluster))
            b.made[StateKey(b.cluster, fold_name, key)] = (text, state)
        out = folded.outputs
        b.transactions = out.transactions
        BatchWriter.merge_rows(
            b.tasks, "offset_commits", out.offset_commits, b.cluster, prune_dates=True
        )
        for name, logical in _GOLD:
            BatchWriter.merge_rows(b.tasks, logical, getattr(out, name), b.cluster)
        b.current.extend((b.cluster, row) for row in self._label_own(out.groups_current))
        return positions, out.offset_commits

    def _parse(self, key: StateKey, row: st.StateRow) -> step.FoldState:
        """The fold state of ``row``, the mirror's row of ``key``: the state the last batch's
        fold made of it when ``row`` holds that state's text, else parsed from the text."""
        made = self._parsed.get(key)
        if made is not None and made[0] == row.state:
            return made[1]
        return _DECODE_STATE[key.fold](row.state)

    def _label_own(self, rows: Sequence[GroupCurrentRow]) -> list[GroupCurrentRow]:
        """``rows`` with offsetscope's own groups labelled (``offsetscope_own``): the groups
        Spark's Kafka source joins live in the same ``__consumer_offsets`` as the groups
        offsetscope reports on (:func:`offsetscope.config.is_own_group`)."""
        out = []
        for r in rows:
            own = is_own_group(self.cfg, r.group_id)
            out.append(r if r.offsetscope_own is own else evolve(r, offsetscope_own=own))
        return out

    def _with_group_states(self, b: Batch) -> None:
        """Put the state of every group the batch writes a ``groups_current`` row of among the
        batch's new states: a row's version is its group state's (lib/offsetscope/spark/
        tables.py, GROUPS_CURRENT). A row is folded from its group's state, so a group whose
        state did not move gets its stored state again, at the next version."""
        written = {StateKey(r.cluster, r.fold, r.key) for r in b.new_states}
        keys = [StateKey(cluster, st.GROUP, row.group_id) for cluster, row in b.current]
        self._mirror(b, keys)
        for k in keys:
            if k in written:
                continue
            stored = self._states[k]
            if stored is None:
                raise RuntimeError(
                    f"groups_current row of group {k.key!r} ({k.cluster}) without a state"
                )
            b.new_states.append(evolve(stored, seq=None))
            written.add(k)

    def _queue_current(self, b: Batch, states: Sequence[st.StateRow]) -> None:
        """Queue the append of the batch's ``groups_current`` rows, each at its group state's
        version in ``states`` (:meth:`_with_group_states`)."""
        if not b.current:
            return
        seq = {(r.cluster, r.key): r.seq for r in states if r.fold == st.GROUP}
        by_cluster: dict[str, list[GroupCurrentRow]] = defaultdict(list)
        for cluster, row in b.current:
            by_cluster[cluster].append(row)
        parts = {cluster: writes.dedupe_last(rows) for cluster, rows in by_cluster.items()}

        def rows() -> pa.Table:
            return pa.concat_tables(
                writes.records_table(
                    GROUPS_CURRENT,
                    [
                        {**tables.as_record(r), catalogue.SEQ: seq[(cluster, r.group_id)]}
                        for r in part
                    ],
                    cluster=cluster,
                )
                for cluster, part in parts.items()
            )

        BatchWriter.append(b.tasks, GROUPS_CURRENT, rows, sum(map(len, parts.values())))

    def _versioned(self, b: Batch, rows: Sequence[st.StateRow]) -> list[st.StateRow]:
        """``rows`` versioned after the states they replace (:func:`offsetscope.pipelines.state.
        versioned`), as the mirror holds them."""
        keys = {StateKey(r.cluster, r.fold, r.key) for r in rows}
        self._mirror(b, keys)
        return st.versioned(rows, {(k.cluster, k.fold, k.key): self._states[k] for k in keys})

    def _compact(self, b: Batch) -> None:
        """Every ``[pipeline] state_compaction_batches`` batches, delete the superseded states
        and ``groups_current`` rows (:func:`offsetscope.pipelines.state.compact`), after the
        batch's writes: it reads the whole table, which they would otherwise wait for."""
        every = self.cfg.pipeline.state_compaction_batches
        if b.batch_id % every == every - 1:
            for table in (catalogue.FOLD_STATE, catalogue.GROUPS_CURRENT):
                with b.timings.timed(f"compact {table.logical}"):
                    st.compact(b.spark, self.cfg, table)

    def _mirror(self, b: Batch, keys: Iterable[StateKey]) -> None:
        """Read the states of ``keys`` the mirror does not hold into it (one query per
        cluster; None for a key without a state)."""
        missing = [k for k in keys if k not in self._states]
        if not missing:
            return
        with b.timings.timed("load state"):
            found = st.load_keys(b.spark, self.cfg, missing, version=b.state_version)
        for k in missing:
            self._states[k] = found[k]

    def _load_states(
        self, b: Batch, wanted: Mapping[str, Sequence[str]]
    ) -> dict[tuple[str, str], st.StateRow]:
        keys = [StateKey(b.cluster, fold, k) for fold, ks in wanted.items() for k in ks]
        self._mirror(b, keys)
        return {(k.fold, k.key): row for k in keys if (row := self._states[k]) is not None}

    # ------------------------------------------------------------------ lag

    def _lag(
        self,
        b: Batch,
        positions: Positions,
        txn_rows: Sequence[OffsetCommitRow],
        event_time: int | None,
    ) -> list[lagmod.LagInput]:
        """Sample the end offsets, move the positions, fold the LSO watch; queues the
        ``end_offsets`` and ``stuck_partitions`` writes and the state rows, and returns what the
        executors compute ``partition_lag`` from (:mod:`offsetscope.pipelines.lag`)."""
        sampler = self.samplers.get(b.cluster)
        if sampler is None:
            raise RuntimeError(f"lag needs an end-offset sampler (cluster {b.cluster})")
        # The plain commits' positions come as columns; the few transactional ones one by one.
        txn_updates: dict[tuple[str, int], list[Position]] = defaultdict(list)
        for row in txn_rows:
            if row.status == COMMITTED and row.effective_at is not None:
                txn_updates[(row.topic, row.partition)].append(
                    Position(row.group_id, row.offset, row.effective_at, row.record_offset)
                )
        updates = positions.keys() | txn_updates.keys()
        tracked_row = b.loaded.get((st.SAMPLER, "topics"))
        tracked = set(json.loads(tracked_row.state)) if tracked_row else set()
        topics = tracked | {t for t, _ in updates}
        if topics != tracked:
            b.new_states.append(
                st.StateRow(st.SAMPLER, "topics", json.dumps(sorted(topics)), None, b.cluster)
            )
        samples = sampler.sample(topics, event_time)
        keys = {lagmod.partition_key(t, p) for t, p in updates} | {
            lagmod.partition_key(s.topic, s.partition) for s in samples
        }
        more = self._load_states(
            b, {st.POSITIONS: sorted(keys), st.SAMPLES: sorted(keys), st.LSO: sorted(keys)}
        )
        hint = lag_history.isolation_hint(
            self.cfg.pipeline.read_committed_groups, self.cfg.pipeline.read_uncommitted_groups
        )
        open_txns: list[list[TransactionRow]] = []

        def open_transactions() -> list[TransactionRow]:
            if not open_txns:
                open_txns.append(self._open_transactions(b))
            return open_txns[0]

        stuck_rows: list[StuckPartitionRow] = []
        new_samples: list[EndOffsetSample] = []
        lag_inputs: list[lagmod.LagInput] = []
        by_tp: dict[tuple[str, int], list[EndOffsetSample]] = defaultdict(list)
        for s in samples:
            by_tp[(s.topic, s.partition)].append(s)
        for tp in sorted(set(updates) | set(by_tp)):
            key = lagmod.partition_key(*tp)
            pos_row = more.get((st.POSITIONS, key))
            # Parsed only when the batch moves a position on the partition: otherwise the
            # stored text goes to the executors as it is (the module docstring of lag).
            current = (pos_row.state if pos_row else "") or ""
            live: PartitionPositions | str = current
            if tp in updates:
                before = lagmod.positions_from_json(current)
                live = before
                if tp in positions:
                    live = lagmod.update_positions(live, positions[tp])
                live = lagmod.update_positions(live, txn_updates.get(tp, ()))
                if live is not before:
                    current = lagmod.positions_to_json(live)
                    b.new_states.append(st.StateRow(st.POSITIONS, key, current, None, b.cluster))
            hist_row = more.get((st.SAMPLES, key))
            history = lagmod.samples_from_json(tp[0], tp[1], hist_row.state if hist_row else None)
            last_at = history[-1].sampled_at if history else None
            fresh = [
                s
                for s in by_tp.get(tp, ())
                if lagmod.sample_due(s.sampled_at, last_at, self.cfg.pipeline.lag_interval_ms)
            ]
            if not fresh:
                continue
            new_samples.extend(fresh)
            lag_inputs.append(
                lagmod.LagInput(
                    tp[0],
                    tp[1],
                    current,
                    hist_row.state if hist_row and hist_row.state else "[]",
                    lagmod.samples_to_json(fresh, keep=None),
                )
            )
            b.new_states.append(
                st.StateRow(
                    st.SAMPLES, key, lagmod.samples_to_json([*history, *fresh]), None, b.cluster
                )
            )
            watch_row = more.get((st.LSO, key))
            watch = stuck.LsoWatch.from_json(watch_row.state) if watch_row else None
            after, rows = stuck.fold_lso(
                watch,
                sorted(fresh, key=lambda s: s.sampled_at),
                bound_ms=self.cfg.pipeline.stuck_lso_bound.ms,
                open_transactions=open_transactions,
                producers=sampler.producers(*tp),
                positions=lagmod.LivePositions(live, fresh[-1].sampled_at),
                read_uncommitted=lambda group: hint(group) is False,
            )
            stuck_rows.extend(rows)
            if after is not None and after != watch:
                b.new_states.append(st.StateRow(st.LSO, key, after.to_json(), None, b.cluster))
        BatchWriter.merge_rows(b.tasks, "stuck_partitions", stuck_rows, b.cluster)
        if new_samples:
            BatchWriter.append(
                b.tasks,
                "end_offsets",
                lambda: writes.rows_table("end_offsets", new_samples, cluster=b.cluster),
                len(new_samples),
            )
        return lag_inputs

    def _queue_lag(self, b: Batch, inputs: Sequence[lagmod.LagInput]) -> None:
        """Queue ``partition_lag``'s append, its rows computed in the executors (counted by
        the write)."""
        sampler = self.samplers[b.cluster]
        frame = lagmod.lag_frame(
            b.spark,
            inputs,
            read_committed_groups=self.cfg.pipeline.read_committed_groups,
            read_uncommitted_groups=self.cfg.pipeline.read_uncommitted_groups,
            record_time=sampler.record_reader(),
            cluster=b.cluster,
        )
        BatchWriter.append(b.tasks, "partition_lag", frame, None)

    def _open_transactions(self, b: Batch) -> list[TransactionRow]:
        """Transactions not completed: the table's, with this batch's versions of its rows
        (not written yet) in their place. Read only when a partition's LSO is stuck."""
        mine = {tables.key_of(t): t for t in b.transactions}
        stored = qtables.rows_of(
            b.spark.table(catalogue.table_name(self.cfg, "transactions")).where(
                F.col("completed_at").isNull() & (F.col(catalogue.CLUSTER) == F.lit(b.cluster))
            ),
            TransactionRow,
        )
        merged = {tables.key_of(t): t for t in stored}
        merged.update(mine)
        return [t for t in merged.values() if t.completed_at is None]

    # ------------------------------------------------------------------ audit

    def _source_progress(self, b: Batch, stats: Sequence[Any]) -> tuple[int, list[dict[str, Any]]]:
        not_seen_total = 0
        partitions = []
        for s in sorted(stats, key=lambda s: (s["source_topic"], s["partition"])):
            key = _source_key(s)
            row = b.loaded.get((st.SOURCE, key))
            first, last, records = int(s["first"]), int(s["last"]), int(s["records"])
            if row is not None and row.last_offset is not None:
                gap = max(0, first - int(row.last_offset) - 1)
            else:  # the first records this query reads of the partition
                gap = first if self.reads_from_start[b.cluster] else 0
            not_seen = gap + (last - first + 1 - records)
            not_seen_total += not_seen
            partitions.append(
                {
                    # A topic of one of several clusters is named with its cluster.
                    "topic": s["source_topic"]
                    if len(self.clusters) == 1
                    else f"{b.cluster}{clusters.SEPARATOR}{s['source_topic']}",
                    "partition": int(s["partition"]),
                    "first_offset": first,
                    "last_offset": last,
                    "records": records,
                    "offsets_not_seen": not_seen,
                }
            )
            if row is None or row.last_offset is None or last > int(row.last_offset):
                b.new_states.append(st.StateRow(st.SOURCE, key, "{}", last, b.cluster))
        return not_seen_total, partitions

    def _audit(self, b: Batch, report: BatchReport, partitions: list[dict[str, Any]]) -> None:
        record = {
            "query_name": self.query_name,
            "batch_id": b.batch_id,
            "source_kind": self.kind,
            "started_at": b.started_ms,
            "finished_at": self.clock.now_ms(),
            "rows_in": report.rows_in,
            "events": report.events,
            "quarantined": report.quarantined,
            "unknown": report.unknown,
            "rows_by_kind": sorted(report.counts.items()),
            "rows_written": sorted(report.rows_written.items()),
            "source_partitions": partitions,
            "offsets_not_seen": report.offsets_not_seen,
            "keys_folded": sorted(report.keys_folded.items()),
            "event_time": report.event_time,
        }
        writes.append(
            writes.records_frame(b.spark, "batch_audit", [record]),
            self.cfg,
            "batch_audit",
            query_name=self.query_name,
            batch_id=b.batch_id,
            fresh=b.fresh,
        )


def _read_up_to(stats: Sequence[Any]) -> int | None:
    """When the batch's end-offset sample is taken: the time up to which it has read every
    ``__consumer_offsets`` partition it read (the earliest of their newest record timestamps;
    the newest record of the batch when it read none).

    Lag is measured from the groups' positions, which hold each group's latest commit: a sample
    must not be older than them (a position newer than the sample has no lag row then), nor
    newer than a partition whose commits are not read yet (its groups would be measured
    against records appended after their next commits). Replaying a log directory, the segment
    source shares a batch's records among partitions by count, not by time, so partitions run
    ahead of one another; live, every partition is current."""
    offsets = [
        int(s["max_ts"]) for s in stats if s["topic"] == OFFSETS_TOPIC and s["max_ts"] is not None
    ]
    if offsets:
        return min(offsets)
    return max((int(s["max_ts"]) for s in stats if s["max_ts"] is not None), default=None)


def _of_cluster(raw: DataFrame, cluster: str) -> DataFrame:
    return raw.where(F.col(sources.CLUSTER) == F.lit(cluster))


def _source_key(s: Any) -> str:
    return f"{s['source_topic']}:{int(s['partition'])}"
