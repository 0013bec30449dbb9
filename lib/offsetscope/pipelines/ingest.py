"""The ingest job: internal topics -> bronze, silver and gold Delta tables, exactly once.

Per micro-batch (``foreachBatch``, with ``batch_df.sparkSession``)::

    source rows ─persist─┬─> raw_records (bronze, idempotent append)
                         └─> decode once (mapInArrow) ─persist─┬─> silver appends, quarantine
                                                               ├─> offset_commits (Spark SQL)
                                                               └─> light streams -> driver folds
                                                                   -> gold MERGEs, fold_state
    end-offset sampler ─> end_offsets ─> partition_lag          audit row: counts in/out, skips

Quality gate: before a gold table is written, its great-expectations suite
(:mod:`offsetscope.quality`) validates the batch's rows; the result goes to ``quality_results``,
failing rows to ``quality_quarantine`` instead of the table (``[quality]``), and a failed suite
raises a ``quality`` alert, never an error.

Table writes of a batch run concurrently, one thread per table (``[pipeline] write_threads``),
each MERGE in a session of its own (the idempotency confs are per session), each behind its
gate (on the driver: the gated tables' rows are there already; great-expectations runs one
suite at a time), and the batch's quality results are recorded once the last gate has passed,
while the slower writes finish. The fold state is saved after all of them and the audit row last.

* **Decode once**: the source rows and the decoded rows are persisted for the batch, so every
  table reads the same decoded rows; counts in = events + quarantined + unknown is checked
  (:func:`offsetscope.spark.decode.kind_counts`) before anything is written.
* **Heavy stream in Spark SQL**: offset commits outside transactions are committed as read
  (``resolved_by = non_transactional``; with the Kafka source and ``read_committed`` every commit
  that arrives is committed: ``read_committed_source``). Their rows are final and their key
  (record partition and offset) is new by construction, so they are appended idempotently: a
  MERGE would add a scan of the day's partition to every batch. Transactional commits, whose
  status changes when the marker arrives, are MERGEd.
* **Light streams on the driver** (group metadata, KIP-848 records, the transaction log,
  markers, transactional offset commits of a segment source) are collected as Arrow and folded
  with the pure folds of :mod:`offsetscope.history`: ``fold_offsets`` per ``__consumer_offsets``
  partition (transactional commits, markers, and the plain commits or tombstones of keys with a
  pending transactional offset), ``fold_group`` per group id (its records plus a summary of its
  commits: first, last, first after its last deletion, one per topic id), ``fold_transactions``
  per transactional id. Fold state is loaded for the keys in the batch only and written back by
  MERGE: a batch costs what its records cost, whatever the history.
* **Exactly once**: appends carry ``txnAppId``/``txnVersion``, MERGEs the matching session confs
  (:mod:`offsetscope.pipelines.writes`); gold MERGEs are on natural keys, restricted to the keys
  of the batch. A replayed batch id writes nothing twice; fold state is written last, so a batch
  that failed half-way is folded again from the same state and yields the same rows.
* Infrastructure errors are never caught: they fail the batch and the query.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from offsetscope import secrets
from offsetscope.config import Config
from offsetscope.coordinator.clock import Clock, SystemClock
from offsetscope.history.events import (
    ConsumerGroupEvent,
    ControlEvent,
    Event,
    GroupMetadataEvent,
    OffsetCommitEvent,
    TransactionLogEvent,
)
from offsetscope.history.groups import GroupInput, GroupState, fold_group
from offsetscope.history.offsets import COMMITTED, OffsetsState, fold_offsets
from offsetscope.history.rows import EndOffsetSample, OffsetCommitRow
from offsetscope.history.transactions import TxnIdState, fold_transactions
from offsetscope.pipelines import commits, writes
from offsetscope.pipelines import lag as lagmod
from offsetscope.pipelines import state as st
from offsetscope.pipelines.events import event_from_decoded
from offsetscope.protocol.records import OFFSETS_TOPIC
from offsetscope.quality import suites as quality_suites
from offsetscope.quality import tables as qtables
from offsetscope.quality import validate as quality
from offsetscope.quality.model import QualityResultRow
from offsetscope.spark import decode as dec
from offsetscope.spark import sources
from offsetscope.spark import tables as catalogue

ProgressCallback = Callable[["BatchReport"], None]

_LIGHT = (
    "kind IN ('group_metadata', 'consumer_group', 'transaction_log', 'control') "
    "OR (kind = 'offset_commit' AND is_transactional)"
)
_GROUP_TABLES = (
    ("generations", "group_generations"),
    ("transitions", "group_state_transitions"),
    ("sessions", "member_sessions"),
    ("assignments", "partition_assignments"),
    ("current", "groups_current"),
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

    def line(self) -> str:
        """A one-line progress message."""
        rate = self.rows_in / self.seconds if self.seconds > 0 else 0.0
        return (
            f"[{self.query_name}] batch {self.batch_id}: {self.rows_in} records "
            f"({self.events} events, {self.quarantined} quarantined, {self.unknown} unknown) "
            f"in {self.seconds:.1f} s ({rate:,.0f} records/s)"
        )


# ----------------------------------------------------------------------------- transforms


def bronze_frame(raw: DataFrame, batch_id: int, ingested_at_ms: int) -> DataFrame:
    """Source rows -> ``raw_records`` rows."""
    spec = catalogue.spec("raw_records")
    extra = {
        "ingest_batch_id": F.lit(batch_id).cast("bigint"),
        "ingested_at": F.timestamp_millis(F.lit(ingested_at_ms)),
    }
    cols = []
    for c in spec.written_columns:
        expr = extra[c.name] if c.source is None else F.expr(c.source)
        cols.append(expr.cast(c.type).alias(c.name))
    return raw.select(*cols)


def commit_rows_ms(
    decoded: DataFrame, *, read_committed_source: bool, transactional: bool = False
) -> DataFrame:
    """``offset_commits`` rows of the offset commits committed as read (timestamps in epoch ms;
    :func:`offsetscope.pipelines.writes.ms_table` gives them the table's types on the driver).

    Args:
        decoded: decoded rows.
        read_committed_source: the rows come from a ``read_committed`` Kafka source.
        transactional: select the transactional commits instead of the plain ones (their rows
            are only used to find keys; their status comes from the offsets fold).
    """
    how = "read_committed_source" if read_committed_source else "non_transactional"
    flag = "is_transactional" if transactional else "NOT is_transactional"
    return decoded.where(f"kind = 'offset_commit' AND {flag}").selectExpr(
        "offset_commit.`group` AS group_id",
        "offset_commit.topic AS topic",
        "offset_commit.`partition` AS `partition`",
        "CASE WHEN is_tombstone THEN NULL ELSE offset_commit.`offset` END AS `offset`",
        "coalesce(offset_commit.leader_epoch, -1) AS leader_epoch",
        "coalesce(offset_commit.metadata, '') AS metadata",
        "CASE WHEN is_tombstone OR offset_commit.commit_timestamp < 0 THEN NULL "
        "ELSE offset_commit.commit_timestamp END AS commit_timestamp",
        "CASE WHEN is_tombstone OR offset_commit.expire_timestamp < 0 THEN NULL "
        "ELSE offset_commit.expire_timestamp END AS expire_timestamp",
        "offset_commit.topic_id AS topic_id",
        "is_tombstone",
        "`partition` AS record_partition",
        "`offset` AS record_offset",
        "`timestamp` AS record_timestamp",
        "is_transactional AS transactional",
        "CASE WHEN is_transactional THEN producer_id END AS producer_id",
        "CASE WHEN is_transactional THEN CAST(producer_epoch AS INT) END AS producer_epoch",
        f"'{COMMITTED}' AS status",
        "`timestamp` AS resolved_at",
        f"CASE WHEN is_tombstone THEN 'tombstone' ELSE '{how}' END AS resolved_by",
        "`timestamp` AS effective_at",
    )


# ----------------------------------------------------------------------------- pipeline


@dataclass(frozen=True, slots=True)
class _Write:
    """One table write of a batch, run by :meth:`IngestPipeline._execute_writes`.

    ``source`` is a DataFrame of the batch, or rows built on the driver (fold outputs) given as
    a function that makes them an Arrow table of the table's written columns: it runs in the
    writing thread (converting large fold outputs overlaps the other tables' Delta work), the
    gate checks the table without a Spark job, and it becomes a DataFrame in the session that
    writes it.
    """

    logical: str
    merge: bool
    source: DataFrame | Callable[[], pa.Table]
    rows: int
    prune: tuple[str, ...] = ()
    update_condition: str | None = None


@dataclass(slots=True)
class _Batch:
    """Working data of one micro-batch on the driver."""

    batch_id: int
    spark: SparkSession
    started_ms: int
    written: dict[str, int] = field(default_factory=dict)
    folded: dict[str, int] = field(default_factory=dict)
    new_states: list[st.StateRow] = field(default_factory=list)
    loaded: dict[tuple[str, str], st.StateRow] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    tasks: list[_Write] = field(default_factory=list)
    quality: list[QualityResultRow] = field(default_factory=list)  # the gate's results

    @contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        """Adds the block's wall time to ``phase`` (the report's per-phase timings)."""
        began = time.monotonic()
        try:
            yield
        finally:
            self.seconds[phase] = self.seconds.get(phase, 0.0) + time.monotonic() - began


class _Countdown:
    """Counts events down from ``n``; :meth:`done_one` is true for exactly the last one."""

    def __init__(self, n: int) -> None:
        self._left = n
        self._lock = threading.Lock()

    def done_one(self) -> bool:
        with self._lock:
            self._left -= 1
            return self._left == 0


class IngestPipeline:
    """One ingest query's ``foreachBatch`` logic; see the module docstring.

    Args:
        cfg: the configuration.
        query_name: the query (idempotency app ids, audit rows); default ``[pipeline]``'s.
        source_kind: ``kafka`` or ``segments``; default ``[sources] kind``.
        clock: wall clock for ``ingested_at`` and Kafka end-offset samples.
        sampler: end-offset sampler; default from the source kind (``None`` with
            ``sample_end_offsets = false``).
        progress: called with each batch's report.
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
        self.kind = source_kind or cfg.sources.kind
        self.clock: Clock = clock or SystemClock()
        self.progress = progress
        self.reports: list[BatchReport] = []
        self.markers_visible = self.kind == sources.SEGMENTS
        self.read_committed_source = (
            self.kind == sources.KAFKA and cfg.sources.kafka.isolation_level == "read_committed"
        )
        # A query that reads its partitions from their beginning (a log directory, or a Kafka
        # source starting at "earliest") knows that offsets below the first record it reads of a
        # partition existed and are gone -- deleted by retention or compacted away before it
        # started -- and counts them as not seen. One started "latest" or at given offsets
        # skipped them by choice, and does not.
        self.reads_from_start = self.kind == sources.SEGMENTS or (
            self.kind == sources.KAFKA and cfg.sources.kafka.starting_offsets == "earliest"
        )
        self.sampler = sampler
        if sampler is None and cfg.pipeline.sample_end_offsets:
            self.sampler = default_sampler(cfg, self.kind, self.clock, log_dir)
        # The fold states this query read or wrote (None: known to have none). The table stays
        # the source of truth: a key is read from it the first time this query needs it, and
        # the mirror takes a batch's states only once that batch saved them.
        self._states: dict[tuple[str, str], st.StateRow | None] = {}
        self._sessions: dict[str, SparkSession] = {}
        self._sessions_lock = threading.Lock()
        self._quality_lock = threading.Lock()
        self._quality_tables_ready = False

    def _load_states(
        self, b: _Batch, wanted: Mapping[str, Sequence[str]]
    ) -> dict[tuple[str, str], st.StateRow]:
        missing = {
            fold: [k for k in keys if (fold, k) not in self._states]
            for fold, keys in wanted.items()
        }
        if any(missing.values()):
            with b.timed("load state"):
                found = st.load(b.spark, self.cfg, missing)
            for fold, absent in missing.items():
                for k in absent:
                    self._states[(fold, k)] = found.get((fold, k))
        out: dict[tuple[str, str], st.StateRow] = {}
        for fold, keys in wanted.items():
            for k in keys:
                row = self._states.get((fold, k))
                if row is not None:
                    out[(fold, k)] = row
        return out

    # ------------------------------------------------------------------ the batch

    def process_batch(self, batch_df: DataFrame, batch_id: int) -> None:
        """The ``foreachBatch`` function."""
        spark = batch_df.sparkSession
        started = time.monotonic()
        b = _Batch(batch_id, spark, self.clock.now_ms())
        # One source partition per topic partition (50 of __consumer_offsets by default) would
        # make every stage of the batch -- the decode's Python tasks, each append's files --
        # 50 tasks or files however few records arrived; the batch works in as many partitions
        # as its shuffles do (``[spark] shuffle_partitions``), merged without a shuffle.
        raw = batch_df.coalesce(self.cfg.spark.shuffle_partitions).persist(
            StorageLevel.MEMORY_AND_DISK
        )
        decoded: DataFrame | None = None
        try:
            with b.timed("read"):
                stats = self._stats(raw)
            rows_in = sum(int(s["records"]) for s in stats)
            if rows_in == 0:
                return
            decoded = dec.decode(raw).persist(StorageLevel.MEMORY_AND_DISK)
            with b.timed("decode"):
                found = {
                    r["kind"]: int(r["count"]) for r in decoded.groupBy("kind").count().collect()
                }
            counts = dec.kind_counts(rows_in, found)
            event_time = max(
                (int(s["max_ts"]) for s in stats if s["max_ts"] is not None), default=None
            )
            self._bronze_and_silver(b, raw, decoded, rows_in, counts)
            self._gold(b, decoded, counts, stats, event_time)
            not_seen, partitions = self._source_progress(b, stats)
            self._execute_writes(b)
            with b.timed("save state"):
                st.save(
                    spark,
                    self.cfg,
                    b.new_states,
                    query_name=self.query_name,
                    batch_id=batch_id,
                    now_ms=b.started_ms,
                )
            for row in b.new_states:
                self._states[(row.fold, row.key)] = row
            report = BatchReport(
                self.query_name,
                batch_id,
                rows_in,
                counts,
                dict(b.written),
                dict(b.folded),
                not_seen,
                event_time,
                time.monotonic() - started,
                dict(b.seconds),
            )
            self._audit(b, report, partitions)
        finally:
            if decoded is not None:
                decoded.unpersist()
            raw.unpersist()
        self.reports.append(report)
        if self.progress is not None:
            self.progress(report)

    @staticmethod
    def _stats(raw: DataFrame) -> list[Any]:
        """Per source partition: offsets, record count and timestamps of the batch."""
        return (
            raw.groupBy("topic", "source_topic", "partition")
            .agg(
                F.min("offset").alias("first"),
                F.max("offset").alias("last"),
                F.count(F.lit(1)).alias("records"),
                F.max("timestamp").alias("max_ts"),
                F.min("timestamp").alias("min_ts"),
            )
            .collect()
        )

    def _append(
        self, b: _Batch, source: DataFrame | Callable[[], pa.Table], logical: str, rows: int
    ) -> None:
        b.tasks.append(_Write(logical, False, source, rows))

    def _session_for(self, spark: SparkSession, logical: str) -> SparkSession:
        # Delta reads a MERGE's idempotency marker from session confs, so MERGEs that run at
        # the same time need sessions of their own (same SparkContext, own SQL conf).
        with self._sessions_lock:
            session = self._sessions.get(logical)
            if session is None:
                session = spark.newSession()
                self._sessions[logical] = session
            return session

    def _execute_writes(self, b: _Batch) -> None:
        """Run the batch's table writes, tables in parallel, each table's writes in order.

        Writes to one table stay sequential (a MERGE and an append of the same day would
        conflict); different tables are independent Delta logs, and most of a small write's
        time is commit latency rather than CPU, so ``[pipeline] write_threads`` of them overlap.
        Tables with a MERGE start first: they take longest (longest-first keeps the last
        thread from starting the slowest table). The quality results of all the batch's tables
        are recorded in one append as soon as the last gate has passed, while the remaining
        table writes run, and before this returns: the fold state is saved after both.
        """
        by_table: dict[str, list[_Write]] = defaultdict(list)
        for task in b.tasks:
            by_table[task.logical].append(task)
        ordered = sorted(by_table.values(), key=lambda ts: not any(t.merge for t in ts))
        gates = _Countdown(sum(1 for t in b.tasks if self._validates(t.logical)))

        with (
            b.timed("writes"),
            ThreadPoolExecutor(self.cfg.pipeline.write_threads) as pool,
            ThreadPoolExecutor(1) as results_pool,
        ):
            recorded: list[Future[None]] = []

            def gate_passed() -> None:
                if gates.done_one():
                    recorded.append(results_pool.submit(self._record_quality, b))

            for logical, n in pool.map(lambda ts: self._write_table(b, ts, gate_passed), ordered):
                b.written[logical] = n
            for future in recorded:
                future.result()

    def _write_table(
        self, b: _Batch, tasks: list[_Write], gate_passed: Callable[[], None]
    ) -> tuple[str, int]:
        """One table's writes of the batch, in order, each behind its quality gate."""
        written = 0
        for task in tasks:
            session = self._session_for(b.spark, task.logical) if task.merge else b.spark
            gated = self._validates(task.logical)
            if isinstance(task.source, DataFrame):
                # The gated tables are the gold ones, whose rows are on the driver (fold
                # outputs, the collected commits): a DataFrame here would go unchecked.
                if gated:
                    raise TypeError(f"{task.logical} is gated: write it from driver rows")
                frame = task.source
            else:
                rows = task.source()
                if gated:
                    rows = self._quality_gate(b, rows, task.logical)
                    gate_passed()
                frame = writes.table_frame(session, task.logical, rows)
            with b.timed(f"{'merge' if task.merge else 'write'} {task.logical}"):
                if task.merge:
                    written += writes.merge(
                        frame,
                        self.cfg,
                        task.logical,
                        query_name=self.query_name,
                        batch_id=b.batch_id,
                        prune=task.prune,
                        update_condition=task.update_condition,
                    )
                else:
                    writes.append(
                        frame,
                        self.cfg,
                        task.logical,
                        query_name=self.query_name,
                        batch_id=b.batch_id,
                    )
                    written += task.rows
        return tasks[0].logical, written

    def _record_quality(self, b: _Batch) -> None:
        # All tables' results of the batch in one Delta commit (a replayed batch's append is
        # skipped by its idempotency marker).
        with b.timed("quality results"):
            quality.record_results(
                self._session_for(b.spark, "quality"),
                self.cfg,
                b.quality,
                app_id=writes.app_id(self.query_name, "quality_results", "append"),
                batch_id=b.batch_id,
            )

    def _validates(self, logical: str) -> bool:
        return self.cfg.quality.enabled and logical in quality_suites.TABLES

    def _quality_gate(self, b: _Batch, rows: pa.Table, logical: str) -> pa.Table:
        """The table's great-expectations suite on this batch's rows, on the driver with no
        Spark job (:func:`offsetscope.quality.validate.validate_table`): the results row is
        kept, failing rows go to ``quality_quarantine`` (``[quality] quarantine_failed_rows``),
        and the rest is what gets written.

        Gates of different tables run in their tables' threads; great-expectations' own step
        runs one at a time. The results row joins the batch's others, recorded in one append
        once every gate of the batch has passed (:meth:`_execute_writes`).
        """
        with b.timed(f"quality {logical}"):
            good, failed, result = quality.validate_table(
                rows, logical, b.batch_id, settings=self.cfg.quality, clock=self.clock
            )
            session = self._session_for(b.spark, "quality")
            # The session's confs are shared: one quarantine append at a time.
            with self._quality_lock:
                if not self._quality_tables_ready:
                    qtables.ensure(
                        session, self.cfg, (qtables.QUALITY_RESULTS, qtables.QUALITY_QUARANTINE)
                    )
                    self._quality_tables_ready = True
                if result.failed_rows:  # rare
                    ddl = (
                        f"{catalogue.spec(logical).written_ddl()}, `{quality.FAILED}` array<string>"
                    )
                    quality.quarantine(
                        session,
                        self.cfg,
                        result,
                        session.createDataFrame(failed, ddl),
                        query_name=self.query_name,
                    )
            b.quality.append(result)
            return good

    def _bronze_and_silver(
        self, b: _Batch, raw: DataFrame, decoded: DataFrame, rows_in: int, counts: Mapping[str, int]
    ) -> None:
        self._append(b, bronze_frame(raw, b.batch_id, b.started_ms), "raw_records", rows_in)
        per_table = {
            "group_metadata_events": counts["group_metadata"],
            "consumer_group_events": counts["consumer_group"],
            "transaction_log_events": counts["transaction_log"],
            "control_records": counts["control"],
            "quarantine": counts[dec.ERROR] + counts[dec.UNKNOWN],
        }
        batch = {"ingest_batch_id": F.lit(b.batch_id).cast("bigint")}
        for table in catalogue.SILVER_TABLES:
            n = per_table[table.logical]
            if n:
                self._append(b, dec.silver_frame(decoded, table, batch), table.logical, n)

    # ------------------------------------------------------------------ gold

    def _gold(
        self,
        b: _Batch,
        decoded: DataFrame,
        counts: Mapping[str, int],
        stats: Sequence[Any],
        event_time: int | None,
    ) -> None:
        light: list[Event] = []
        if any(
            counts[k] for k in ("group_metadata", "consumer_group", "transaction_log", "control")
        ) or (self.markers_visible and counts["offset_commit"]):
            with b.timed("collect light streams"):
                table = decoded.where(_LIGHT).drop("raw_key", "raw_value").toArrow()
            for row in table.to_pylist():
                event = event_from_decoded(row)
                if event is not None:
                    light.append(event)
        light.sort(key=lambda e: (e.at.topic, e.at.partition, e.at.offset))

        by_group: dict[str, list[GroupInput]] = defaultdict(list)
        by_txn: dict[str, list[TransactionLogEvent]] = defaultdict(list)
        by_partition: dict[int, list[OffsetCommitEvent | ControlEvent]] = defaultdict(list)
        tombstones: dict[str, int] = {}
        for e in light:
            if isinstance(e, TransactionLogEvent):
                by_txn[e.transactional_id].append(e)
            elif isinstance(e, GroupMetadataEvent | ConsumerGroupEvent):
                if e.at.topic != OFFSETS_TOPIC:
                    continue
                by_group[e.group].append(e)
                if (isinstance(e, GroupMetadataEvent) and e.tombstone) or (
                    isinstance(e, ConsumerGroupEvent) and e.record_type == 3 and e.value is None
                ):
                    tombstones[e.group] = e.at.offset
            elif e.at.topic == OFFSETS_TOPIC:
                by_partition[e.at.partition].append(e)

        plain_ms = (
            commit_rows_ms(decoded, read_committed_source=self.read_committed_source)
            if counts["offset_commit"]
            else None
        )
        summary: dict[str, list[OffsetCommitRow]] = {}
        positions: list[tuple[str, int, lagmod.Position]] = []
        plain: pa.Table | None = None
        if plain_ms is not None:
            with b.timed("commit summary"):
                plain = _collect_commits(plain_ms)
                summary, positions = commits.summarize(plain, tombstones)
        offsets_partitions = (
            sorted({int(s["partition"]) for s in stats if s["topic"] == OFFSETS_TOPIC})
            if self.markers_visible
            else []
        )
        groups = sorted(set(by_group) | set(summary))
        loaded = self._load_states(
            b,
            {
                st.OFFSETS: [str(p) for p in offsets_partitions],
                st.GROUP: groups,
                st.TXN: sorted(by_txn),
                st.SOURCE: [_source_key(s) for s in stats],
                st.SAMPLER: ["topics"],
            },
        )
        b.loaded.update(loaded)

        with b.timed("fold offsets"):
            txn_commit_rows = self._fold_offsets(
                b, decoded, by_partition, offsets_partitions, loaded
            )
        if plain is not None:
            # Commits outside transactions are final as read and their key (record partition
            # and offset) is new by construction: an idempotent append, whose cost does not
            # grow with the table (a MERGE would scan the day's partition every batch). Their
            # rows are on the driver already (the summary's collect): gated and written from
            # there rather than computed a second time from the decoded rows by a Spark job.
            rows = plain
            self._append(
                b, lambda: writes.ms_table("offset_commits", rows), "offset_commits", rows.num_rows
            )
        if txn_commit_rows:
            self._merge_rows(b, "offset_commits", txn_commit_rows, prune_dates=True)

        for row in txn_commit_rows:
            summary.setdefault(row.group_id, []).append(row)
        self._fold_groups(b, by_group, summary, loaded)
        self._fold_txns(b, by_txn, loaded)
        if self.sampler is not None:
            with b.timed("lag"):
                self._lag(b, positions, txn_commit_rows, event_time, loaded)

    def _fold_offsets(
        self,
        b: _Batch,
        decoded: DataFrame,
        by_partition: Mapping[int, list[OffsetCommitEvent | ControlEvent]],
        partitions: Sequence[int],
        loaded: Mapping[tuple[str, str], st.StateRow],
    ) -> list[OffsetCommitRow]:
        """Transactional commits and markers per partition (segment sources only)."""
        if not self.markers_visible:
            return []
        states: dict[int, OffsetsState] = {}
        for p in partitions:
            row = loaded.get((st.OFFSETS, str(p)))
            if row is not None:
                states[p] = OffsetsState.from_json(row.state)
        # A plain commit or tombstone of a key, written between one of the key's pending
        # transactional commits and the marker resolving it, decides the outcome: Kafka
        # materialises the pending offset only if no newer record for the key exists, and a
        # tombstone drops it. Only those records are fetched, per key and offset window.
        markers: dict[tuple[int, int], list[int]] = defaultdict(list)
        for p, evs in by_partition.items():
            for e in evs:
                if isinstance(e, ControlEvent):
                    markers[(p, e.at.producer_id)].append(e.at.offset)
        pending: list[tuple[int, str, str, int, int, int]] = [
            (p, pc.row.group_id, pc.row.topic, pc.row.partition, pc.row.record_offset, pid)
            for p, s in states.items()
            for pc in s.pending
            for pid in [pc.row.producer_id if pc.row.producer_id is not None else -1]
        ]
        pending += [
            (e.at.partition, e.group, e.topic, e.partition, e.at.offset, e.at.producer_id)
            for evs in by_partition.values()
            for e in evs
            if isinstance(e, OffsetCommitEvent)
        ]
        windows: set[tuple[int, str, str, int, int, int | None]] = set()
        for p, group, topic, tp, lo, pid in pending:
            hi = next((m for m in sorted(markers.get((p, pid), ())) if m > lo), None)
            if hi is None or hi > lo + 1:
                windows.add((p, group, topic, tp, lo, hi))
        events: dict[int, list[OffsetCommitEvent | ControlEvent]] = {
            p: list(v) for p, v in by_partition.items()
        }
        if windows:
            wanted = b.spark.createDataFrame(
                sorted(windows, key=lambda w: (w[:5], w[5] is None, w[5] or 0)),
                "k_partition int, k_group string, k_topic string, k_tp int, k_lo bigint, "
                "k_hi bigint",
            )
            plain = decoded.where("kind = 'offset_commit' AND NOT is_transactional").join(
                F.broadcast(wanted),
                (F.col("partition") == F.col("k_partition"))
                & (F.col("offset_commit.group") == F.col("k_group"))
                & (F.col("offset_commit.topic") == F.col("k_topic"))
                & (F.col("offset_commit.partition") == F.col("k_tp"))
                & (F.col("offset") > F.col("k_lo"))
                & (F.col("k_hi").isNull() | (F.col("offset") < F.col("k_hi"))),
            )
            columns = [c for c in decoded.columns if c not in ("raw_key", "raw_value")]
            # A record inside several windows of its key arrives once per window.
            plain = plain.select(*columns).dropDuplicates(["partition", "offset"])
            for row in plain.toArrow().to_pylist():
                event = event_from_decoded(row)
                assert isinstance(event, OffsetCommitEvent)
                events.setdefault(event.at.partition, []).append(event)
        out: list[OffsetCommitRow] = []
        for p in sorted(events):
            ordered = sorted(events[p], key=lambda e: e.at.offset)
            new, rows = fold_offsets(states.get(p), ordered, markers_visible=True)
            out.extend(r for r in rows if r.transactional)
            if new is not None and new != states.get(p):
                b.new_states.append(st.StateRow(st.OFFSETS, str(p), new.to_json(), new.last_offset))
        b.folded[st.OFFSETS] = len(events)
        return writes.dedupe_last(out)

    def _fold_groups(
        self,
        b: _Batch,
        by_group: Mapping[str, list[GroupInput]],
        summary: Mapping[str, list[OffsetCommitRow]],
        loaded: Mapping[tuple[str, str], st.StateRow],
    ) -> None:
        outputs: dict[str, list[Any]] = {name: [] for name, _ in _GROUP_TABLES}
        groups = sorted(set(by_group) | set(summary))
        for group in groups:
            row = loaded.get((st.GROUP, group))
            before = GroupState.from_json(row.state) if row is not None else None
            events: list[GroupInput] = [*by_group.get(group, ()), *summary.get(group, ())]
            new, out = fold_group(before, events)
            for name, _ in _GROUP_TABLES:
                outputs[name].extend(getattr(out, name))
            if new is not None and new != before:
                b.new_states.append(st.StateRow(st.GROUP, group, new.to_json(), new.last_offset))
        b.folded[st.GROUP] = len(groups)
        for name, logical in _GROUP_TABLES:
            self._merge_rows(b, logical, outputs[name])

    def _fold_txns(
        self,
        b: _Batch,
        by_txn: Mapping[str, list[TransactionLogEvent]],
        loaded: Mapping[tuple[str, str], st.StateRow],
    ) -> None:
        txns: list[Any] = []
        timeline: list[Any] = []
        for txn_id in sorted(by_txn):
            row = loaded.get((st.TXN, txn_id))
            before = TxnIdState.from_json(row.state) if row is not None else None
            new, out = fold_transactions(before, by_txn[txn_id])
            txns.extend(out.transactions)
            timeline.extend(out.timeline)
            if new is not None and new != before:
                b.new_states.append(st.StateRow(st.TXN, txn_id, new.to_json(), new.last_offset))
        b.folded[st.TXN] = len(by_txn)
        self._merge_rows(b, "transactions", txns)
        self._merge_rows(b, "transaction_status_timeline", timeline)

    def _merge_rows(
        self, b: _Batch, logical: str, rows: Sequence[Any], *, prune_dates: bool = False
    ) -> None:
        """MERGE fold output rows, restricted to the batch's keys (and days, when partitioned)."""
        rows = writes.dedupe_last(rows)
        if not rows:
            return
        spec = catalogue.spec(logical)
        prune = [writes.in_list(spec.key[0], [getattr(r, spec.key[0]) for r in rows])]
        if prune_dates and spec.partition_by:
            column = spec.column(spec.partition_by[0])
            # The partition column is generated from a timestamp column: CAST(<ts> AS DATE).
            source = (column.generated or "").removeprefix("CAST(").split(" AS ")[0]
            if source:
                prune.append(
                    writes.in_list(
                        column.name, [_date(getattr(r, source)) for r in rows], literal="DATE"
                    )
                )
        b.tasks.append(
            _Write(
                logical,
                True,
                lambda: writes.rows_table(logical, rows),
                len(rows),
                tuple(p for p in prune if p is not None),
            )
        )

    # ------------------------------------------------------------------ lag

    def _lag(
        self,
        b: _Batch,
        positions: Sequence[tuple[str, int, lagmod.Position]],
        txn_rows: Sequence[OffsetCommitRow],
        event_time: int | None,
        loaded: Mapping[tuple[str, str], st.StateRow],
    ) -> None:
        assert self.sampler is not None
        updates: dict[tuple[str, int], list[lagmod.Position]] = defaultdict(list)
        for topic, partition, position in positions:
            updates[(topic, partition)].append(position)
        for row in txn_rows:
            if row.status == COMMITTED and row.effective_at is not None:
                updates[(row.topic, row.partition)].append(
                    lagmod.Position(row.group_id, row.offset, row.effective_at, row.record_offset)
                )
        tracked_row = loaded.get((st.SAMPLER, "topics"))
        tracked = set(json.loads(tracked_row.state)) if tracked_row else set()
        topics = tracked | {t for t, _ in updates}
        if topics != tracked:
            b.new_states.append(st.StateRow(st.SAMPLER, "topics", json.dumps(sorted(topics)), None))
        samples = self.sampler.sample(topics, event_time)
        keys = {lagmod.partition_key(t, p) for t, p in updates} | {
            lagmod.partition_key(s.topic, s.partition) for s in samples
        }
        more = self._load_states(b, {st.POSITIONS: sorted(keys), st.SAMPLES: sorted(keys)})
        new_samples: list[EndOffsetSample] = []
        lag_tables: list[pa.Table] = []
        by_tp: dict[tuple[str, int], list[EndOffsetSample]] = defaultdict(list)
        for s in samples:
            by_tp[(s.topic, s.partition)].append(s)
        for tp in sorted(set(updates) | set(by_tp)):
            key = lagmod.partition_key(*tp)
            pos_row = more.get((st.POSITIONS, key))
            before = lagmod.positions_from_json(pos_row.state if pos_row else None)
            current = lagmod.update_positions(before, updates.get(tp, ()))
            if current is not before:
                b.new_states.append(
                    st.StateRow(st.POSITIONS, key, lagmod.positions_to_json(current), None)
                )
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
            lag_tables.append(
                lagmod.lag_table(
                    tp[0],
                    tp[1],
                    current,
                    history,
                    fresh,
                    self.cfg.pipeline.read_committed_groups,
                    self.sampler.record_time,
                )
            )
            b.new_states.append(
                st.StateRow(st.SAMPLES, key, lagmod.samples_to_json([*history, *fresh]), None)
            )
        if new_samples:
            self._append(
                b,
                lambda: writes.rows_table("end_offsets", new_samples),
                "end_offsets",
                len(new_samples),
            )
        lag = pa.concat_tables(lag_tables) if lag_tables else None
        if lag is not None and lag.num_rows:
            self._append(
                b, lambda: writes.ms_table("partition_lag", lag), "partition_lag", lag.num_rows
            )

    # ------------------------------------------------------------------ audit

    def _source_progress(self, b: _Batch, stats: Sequence[Any]) -> tuple[int, list[dict[str, Any]]]:
        loaded = b.loaded
        not_seen_total = 0
        partitions = []
        for s in sorted(stats, key=lambda s: (s["source_topic"], s["partition"])):
            key = _source_key(s)
            row = loaded.get((st.SOURCE, key))
            first, last, records = int(s["first"]), int(s["last"]), int(s["records"])
            if row is not None and row.last_offset is not None:
                gap = max(0, first - int(row.last_offset) - 1)
            else:  # the first records this query reads of the partition
                gap = first if self.reads_from_start else 0
            not_seen = gap + (last - first + 1 - records)
            not_seen_total += not_seen
            partitions.append(
                {
                    "topic": s["source_topic"],
                    "partition": int(s["partition"]),
                    "first_offset": first,
                    "last_offset": last,
                    "records": records,
                    "offsets_not_seen": not_seen,
                }
            )
            if row is None or row.last_offset is None or last > int(row.last_offset):
                b.new_states.append(st.StateRow(st.SOURCE, key, "{}", last))
        return not_seen_total, partitions

    def _audit(self, b: _Batch, report: BatchReport, partitions: list[dict[str, Any]]) -> None:
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
        )


def _collect_commits(plain_ms: DataFrame) -> pa.Table:
    """The batch's plain commits on the driver through Arrow (the columns of ``offset_commits``,
    timestamps in epoch ms: about 150 bytes a commit): the summary reads them, and they are
    the rows the ``offset_commits`` append writes."""
    return plain_ms.select(*[f"`{c}`" for c in commits.COLUMNS]).toArrow()


def _source_key(s: Any) -> str:
    return f"{s['source_topic']}:{int(s['partition'])}"


def _date(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).date().isoformat()


def default_sampler(
    cfg: Config, kind: str, clock: Clock, log_dir: str | None = None
) -> lagmod.EndOffsetSampler:
    """The end-offset sampler of a source kind (see :mod:`offsetscope.pipelines.lag`)."""
    if kind == sources.KAFKA:
        return lagmod.KafkaSampler(cfg, clock)
    s = cfg.sources.segments
    data_dir = s.data_log_dir or log_dir or s.log_dir
    internal = sources.topic_kinds(s.offsets_topic, s.transaction_topic)
    return lagmod.SegmentSampler(sources.resolve_path(data_dir), internal)


# ----------------------------------------------------------------------------- the query


def checkpoint_path(cfg: Config, query_name: str) -> str:
    """``<storage.checkpoint_dir>/<query name>``."""
    return str(Path(sources.resolve_path(cfg.storage.checkpoint_dir)) / query_name)


def start(
    spark: SparkSession,
    cfg: Config,
    *,
    query_name: str | None = None,
    checkpoint: str | None = None,
    log_dir: str | None = None,
    pipeline: IngestPipeline | None = None,
    progress: ProgressCallback | None = None,
) -> tuple[StreamingQuery, IngestPipeline]:
    """Create the tables if needed and start the ingest query.

    The trigger follows ``[pipeline] trigger``: ``processing_time`` runs one micro-batch every
    ``processing_time``; ``available_now`` uses ``Trigger.AvailableNow`` on the Kafka source
    (bounded by ``maxOffsetsPerTrigger``) and default-trigger micro-batches on the segment source
    (see :mod:`offsetscope.spark.sources`), which :func:`run` stops once all is read.

    Args:
        spark: the session.
        cfg: the configuration.
        query_name: overrides ``[pipeline] query_name`` (checkpoint folder, idempotency ids).
        checkpoint: overrides ``<storage.checkpoint_dir>/<query name>``.
        log_dir: overrides ``[sources.segments] log_dir``.
        pipeline: the batch logic (default: a new :class:`IngestPipeline`).
        progress: called with each batch's report.

    Returns:
        The running query and its pipeline (which keeps the batch reports).
    """
    name = query_name or cfg.pipeline.query_name
    if cfg.quality.enabled:
        quality.warm_up()  # the first batch's gates would each wait seconds for the import
    catalogue.ensure_tables(spark, cfg)
    pipe = pipeline or IngestPipeline(cfg, query_name=name, progress=progress, log_dir=log_dir)
    if pipe.kind == sources.KAFKA:
        df = sources.kafka_stream(spark, cfg)
    else:
        df = sources.segment_stream(spark, cfg, log_dir)
    writer = (
        df.writeStream.foreachBatch(pipe.process_batch)
        .queryName(name)
        .option("checkpointLocation", checkpoint or checkpoint_path(cfg, name))
    )
    if cfg.pipeline.trigger == "processing_time":
        writer = writer.trigger(processingTime=cfg.pipeline.processing_time.spark_interval)
    elif pipe.kind == sources.KAFKA:
        writer = writer.trigger(availableNow=True)
    return writer.start(), pipe


def stop_between_batches(query: StreamingQuery, timeout_s: float = 120.0) -> None:
    """Stop ``query`` when no micro-batch is running (waiting up to ``timeout_s`` for one to end).

    ``StreamingQuery.stop`` interrupts a running ``foreachBatch``; Spark then recognises the
    interruption by matching a regular expression on the Python traceback's text, which
    overflows the stream thread's stack on a long traceback (PySpark 4.1.3, see SPARK-39218 and
    SPARK-48717) and prints a StackOverflowError. Between batches there is nothing to interrupt.
    A batch's writes are idempotent either way: this only keeps the shutdown clean.
    """
    deadline = time.monotonic() + timeout_s
    while query.isActive and query.status["isTriggerActive"] and time.monotonic() < deadline:
        time.sleep(0.1)  # a poll of the query's own status, outside any test
    query.stop()


def run(
    spark: SparkSession,
    cfg: Config,
    *,
    query_name: str | None = None,
    checkpoint: str | None = None,
    log_dir: str | None = None,
    progress: ProgressCallback | None = None,
) -> list[BatchReport]:
    """Run the ingest query: until everything available is read (``available_now``), or until
    it is stopped or fails (``processing_time``).

    Returns:
        The reports of the batches this run processed.

    Raises:
        pyspark.errors.StreamingQueryException: a batch failed.
    """
    k = cfg.sources.kafka
    # On a cluster, a failure for lack of an ACL or a rejected login is re-raised naming what
    # is missing (docs/security.md), and no error text carries a secret.
    access = (
        secrets.kafka_access(
            k, "ingesting the internal topics", topics=(k.offsets_topic, k.transaction_topic)
        )
        if cfg.sources.kind == sources.KAFKA
        else contextlib.nullcontext()
    )
    with access:
        query, pipe = start(
            spark,
            cfg,
            query_name=query_name,
            checkpoint=checkpoint,
            log_dir=log_dir,
            progress=progress,
        )
        try:
            if cfg.pipeline.trigger == "available_now" and pipe.kind == sources.SEGMENTS:
                query.processAllAvailable()
            else:
                query.awaitTermination()
        finally:
            query.stop()
            # py4j keeps the batch function (and so this pipeline) alive after the query ends;
            # the sampler's AdminClient would go on reconnecting to a cluster nobody reads.
            pipe.sampler = None
        error = query.exception()
        if error is not None:
            raise error
    return pipe.reports
