"""A micro-batch's table writes: queued while the batch is worked out, and started in steps,
each step's writes as soon as their sources are ready (:class:`BatchWrites`).

Each table's writes of a batch run in order (a MERGE and an append of the same day would
conflict); different tables are independent Delta logs, and most of a small write's time is
commit latency rather than CPU, so ``[pipeline] write_threads`` of them overlap. Tables with a
MERGE start first within a step: they take longest (longest-first keeps the last thread from
starting the slowest table). The batch starts the appends of what it read and decoded before
its fold (lib/offsetscope/pipelines/batch.py): they need nothing the fold computes, and run
on the cores the driver's own work leaves idle.

**Quality gate.** Before a gold table is written, its suite (:mod:`offsetscope.quality`)
validates the batch's rows where they are, compiled rather than through great-expectations'
own engines (whose decisions the tests hold both compiled forms to). Fold outputs are on the
driver already: the suite compiled to Arrow compute checks them there, with no Spark job
(:func:`offsetscope.quality.arrow.validate_rows`). Rows that stay in Spark (the batch's plain
offset commits, most of its records) are checked in the executors by the suite compiled to
column expressions, and only counts reach the driver: a batch that cannot be a replay is
counted by the append itself (:func:`offsetscope.quality.expressions.observe_frame`: one pass
over the rows, failing rows quarantined once it has run), any other batch before it
(:func:`offsetscope.quality.expressions.validate_frame`). Either way the results row is kept,
failing rows go to ``quality_quarantine`` (``[quality] quarantine_failed_rows``) and the rest
is what gets written. Gates of different tables run in their tables' threads. The results of
all the batch's gates are recorded in one append as soon as the last gate of its last step has
passed, while the slower writes finish, and before :meth:`BatchWrites.finish` returns.

**Exactly once.** Every write is marked with its app id and batch id and, unless the batch is
known not to be a replay (``fresh``), checked against the marks already in its table
(:mod:`offsetscope.spark.writes`); a replayed batch id writes nothing twice. MERGEs that run at
the same time each get a session of their own, because Delta reads a MERGE's marks from
session confs (same SparkContext, own SQL conf).
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Self

import pyarrow as pa
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from offsetscope.clock import Clock
from offsetscope.config import Config
from offsetscope.quality import arrow as arrow_gate
from offsetscope.quality import expressions
from offsetscope.quality import suites as quality_suites
from offsetscope.quality import tables as qtables
from offsetscope.quality import validate as quality
from offsetscope.quality.model import QualityResultRow
from offsetscope.spark import tables as catalogue
from offsetscope.spark import writes

log = logging.getLogger(__name__)

# Rows built on the driver, made an Arrow table of the table's written columns when the write
# runs: converting large fold outputs in the writing thread overlaps the other tables' Delta work.
RowsSource = Callable[[], pa.Table]


@dataclass(frozen=True, slots=True)
class Write:
    """One table write of a batch.

    ``source`` is a DataFrame of the batch, gated in the executors, or driver rows as a
    :data:`RowsSource`: the gate checks those without a Spark job, and they become a DataFrame
    in the session that writes them. ``rows`` None: the rows of an appended DataFrame are
    computed in the executors and counted by the append that writes them. ``unique_key``:
    the producer knows that no two rows share the table's key, so the gate's key uniqueness
    check runs no job over the rows.
    """

    logical: str
    merge: bool
    source: DataFrame | RowsSource
    rows: int | None
    prune: tuple[str, ...] = ()
    unique_key: bool = False


@dataclass(slots=True)
class Timings:
    """Wall seconds per phase of a batch (the report's phases)."""

    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        """Adds the block's wall time to ``phase``."""
        began = time.monotonic()
        try:
            yield
        finally:
            self.seconds[phase] = self.seconds.get(phase, 0.0) + time.monotonic() - began


class _Countdown:
    """Counts events down as they are announced; once :meth:`close` says no more will be,
    exactly one of :meth:`close` and :meth:`done_one` is true: the one that sees the last
    event (none, when no event was ever announced)."""

    def __init__(self) -> None:
        self._left = 0
        self._announced = False
        self._closed = False
        self._lock = threading.Lock()

    def add(self, n: int) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("events announced after the countdown closed")
            self._left += n
            self._announced = self._announced or n > 0

    def done_one(self) -> bool:
        with self._lock:
            self._left -= 1
            return self._closed and self._left == 0

    def close(self) -> bool:
        with self._lock:
            self._closed = True
            return self._announced and self._left == 0


class BatchWriter:
    """The writes of one query's micro-batches; see the module docstring.

    Args:
        cfg: the configuration (tables, ``[pipeline] write_threads``, ``[quality]``).
        query_name: the query (idempotency app ids, quarantine rows).
        clock: the time the quality results are stamped with.
    """

    def __init__(self, cfg: Config, query_name: str, clock: Clock) -> None:
        self.cfg = cfg
        self.query_name = query_name
        self.clock = clock
        self._sessions: dict[str, SparkSession] = {}
        self._sessions_lock = threading.Lock()
        self._quality_lock = threading.Lock()
        self._quality_tables_ready = False

    # ------------------------------------------------------------------ queueing

    @staticmethod
    def append(
        tasks: list[Write],
        logical: str,
        source: DataFrame | RowsSource,
        rows: int | None,
        *,
        unique_key: bool = False,
    ) -> None:
        """Queue an idempotent append (``rows`` None: a DataFrame's, counted as it is written;
        ``unique_key``: see :class:`Write`)."""
        if rows is None and not isinstance(source, DataFrame):
            raise TypeError(f"{logical}: rows from the driver are counted when queued")
        tasks.append(Write(logical, False, source, rows, unique_key=unique_key))

    @staticmethod
    def merge_rows(
        tasks: list[Write],
        logical: str,
        rows: Sequence[Any],
        cluster: str,
        *,
        prune_dates: bool = False,
    ) -> None:
        """Queue a MERGE of one cluster's fold output rows, restricted to the batch's keys (and
        days, when the table is partitioned by a date generated from one of its timestamps)."""
        rows = writes.dedupe_last(rows)
        if not rows:
            return
        spec = catalogue.spec(logical)
        prune = [
            writes.in_list(catalogue.CLUSTER, [cluster]),
            writes.in_list(spec.key[0], [getattr(r, spec.key[0]) for r in rows]),
        ]
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
        tasks.append(
            Write(
                logical,
                True,
                lambda: writes.rows_table(logical, rows, cluster=cluster),
                len(rows),
                tuple(p for p in prune if p is not None),
            )
        )

    @staticmethod
    def combine(tasks: Sequence[Write]) -> list[Write]:
        """``tasks`` with the writes of the same table and kind (the clusters' shares of a
        batch) made one, in the order of their first: one Delta commit per table and batch,
        and one idempotency version (a second write under the same app id and batch id would
        be skipped as a replay of the first). A combined MERGE is restricted to what any of
        its parts is."""
        groups: dict[tuple[str, bool], list[Write]] = {}
        for task in tasks:
            groups.setdefault((task.logical, task.merge), []).append(task)
        out = []
        for (logical, merge), parts in groups.items():
            if len(parts) == 1:
                out.append(parts[0])
                continue
            frames = [p.source for p in parts if isinstance(p.source, DataFrame)]
            if frames and len(frames) != len(parts):
                raise TypeError(f"{logical}: a batch writes it from frames or rows, not both")
            source: DataFrame | RowsSource
            if frames:
                source = functools.reduce(DataFrame.unionByName, frames)
            else:
                sources = [p.source for p in parts if not isinstance(p.source, DataFrame)]
                source = functools.partial(_concat, sources)
            prune: tuple[str, ...] = ()
            if all(p.prune for p in parts):
                prune = (" OR ".join(f"({' AND '.join(p.prune)})" for p in parts),)
            counts = [p.rows for p in parts]
            total = None if None in counts else sum(n for n in counts if n is not None)
            # The parts are the clusters' and every key holds its cluster: the union's keys
            # are unique when each part's are.
            unique_key = all(p.unique_key for p in parts)
            out.append(Write(logical, merge, source, total, prune, unique_key))
        return out

    # ------------------------------------------------------------------ running

    def open(
        self, spark: SparkSession, batch_id: int, timings: Timings, *, fresh: bool = False
    ) -> BatchWrites:
        """The writes of batch ``batch_id``, to be started as their sources are ready
        (:class:`BatchWrites`); ``fresh``: the batch cannot be a replay
        (:mod:`offsetscope.spark.writes`)."""
        return BatchWrites(self, spark, batch_id, timings, fresh=fresh)

    def _session_for(self, spark: SparkSession, logical: str) -> SparkSession:
        with self._sessions_lock:
            session = self._sessions.get(logical)
            if session is None:
                session = spark.newSession()
                self._sessions[logical] = session
            return session

    def _write_table(
        self,
        spark: SparkSession,
        batch_id: int,
        tasks: list[Write],
        results: list[QualityResultRow],
        timings: Timings,
        gate_passed: Callable[[], None],
        fresh: bool,
    ) -> tuple[str, int]:
        """One table's writes of the batch, in order, each behind its quality gate."""
        written = 0
        for task in tasks:
            session = self._session_for(spark, task.logical) if task.merge else spark
            gated = self._validates(task.logical)
            checked: expressions.Gated | None = None
            observed: expressions.Observed | None = None
            if isinstance(task.source, DataFrame):
                frame = task.source
                if gated and fresh and not task.merge:
                    # Counted by the append, which runs: a fresh batch is no replay.
                    with timings.timed(f"quality {task.logical}"):
                        observed = expressions.observe_frame(
                            frame,
                            task.logical,
                            batch_id,
                            settings=self.cfg.quality,
                            clock=self.clock,
                            unique=self._known_unique(task),
                        )
                    frame = observed.good
                elif gated:
                    checked = self._gate_frame(
                        spark, batch_id, frame, task.logical, timings, self._known_unique(task)
                    )
                    results.append(checked.result)
                    gate_passed()
                    frame = checked.good
                else:
                    frame = expressions.drop_marks(frame)
            else:
                rows = task.source()
                if gated:
                    rows = self._gate(spark, batch_id, rows, task.logical, results, timings)
                    gate_passed()
                frame = writes.table_frame(session, task.logical, rows)
            counted: Observation | None = None
            uncounted = 0
            if task.rows is None and not task.merge:  # a MERGE reports its own count
                if fresh:
                    # Counted by the append, which runs: an observation costs no job.
                    counted = Observation(f"{task.logical}_rows_written")
                    frame = frame.observe(counted, F.count(F.lit(1)).alias("rows"))
                else:
                    # A possible replay may be skipped by Delta's own marker, and then would
                    # never fill an observation: counted apart (a restart's first batch).
                    uncounted = frame.count()
            try:
                with timings.timed(f"{'merge' if task.merge else 'write'} {task.logical}"):
                    if task.merge:
                        written += writes.merge(
                            frame,
                            self.cfg,
                            task.logical,
                            query_name=self.query_name,
                            batch_id=batch_id,
                            prune=task.prune,
                            fresh=fresh,
                        )
                    else:
                        writes.append(
                            frame,
                            self.cfg,
                            task.logical,
                            query_name=self.query_name,
                            batch_id=batch_id,
                            fresh=fresh,
                        )
                        if counted is not None:
                            written += int(counted.get["rows"])
                        else:
                            written += uncounted if task.rows is None else task.rows
            finally:
                # The gate's cached annotation, also when the write failed.
                if checked is not None:
                    checked.release()
            if observed is not None:
                results.append(self._observed_result(spark, observed, timings))
                gate_passed()
        return tasks[0].logical, written

    def _validates(self, logical: str) -> bool:
        return self.cfg.quality.enabled and logical in quality_suites.TABLES

    def _gate(
        self,
        spark: SparkSession,
        batch_id: int,
        rows: pa.Table,
        logical: str,
        results: list[QualityResultRow],
        timings: Timings,
    ) -> pa.Table:
        """The table's suite on the batch's rows (:func:`offsetscope.quality.arrow.
        validate_rows`): failing rows to ``quality_quarantine``, the rest returned."""
        with timings.timed(f"quality {logical}"):
            good, failed, result = arrow_gate.validate_rows(
                rows, logical, batch_id, settings=self.cfg.quality, clock=self.clock
            )
            ddl = f"{catalogue.spec(logical).written_ddl()}, `{quality.FAILED}` array<string>"
            self._quarantine(spark, result, lambda session: session.createDataFrame(failed, ddl))
            results.append(result)
            return good

    @staticmethod
    def _known_unique(task: Write) -> tuple[str, ...]:
        """The columns the gate may take as unique in ``task``'s rows: the table's key, when
        the producer knows it is."""
        return catalogue.spec(task.logical).key if task.unique_key else ()

    def _gate_frame(
        self,
        spark: SparkSession,
        batch_id: int,
        frame: DataFrame,
        logical: str,
        timings: Timings,
        unique: Sequence[str] = (),
    ) -> expressions.Gated:
        """The table's suite on a batch that stays in Spark (:func:`offsetscope.quality.
        expressions.validate_frame`): failing rows to ``quality_quarantine``; the rows to write
        are the result's ``good`` (release it once they are written)."""
        with timings.timed(f"quality {logical}"):
            checked = expressions.validate_frame(
                frame,
                logical,
                batch_id,
                settings=self.cfg.quality,
                clock=self.clock,
                unique=unique,
            )
            self._quarantine(spark, checked.result, lambda _: checked.failed)
            return checked

    def _observed_result(
        self, spark: SparkSession, observed: expressions.Observed, timings: Timings
    ) -> QualityResultRow:
        """The results row of a batch its write counted; its failing rows to quarantine."""
        with timings.timed(f"quality {observed.table}"):
            result = observed.result()
            self._quarantine(spark, result, lambda _: observed.failed())
            return result

    def _quarantine(
        self,
        spark: SparkSession,
        result: QualityResultRow,
        failed: Callable[[SparkSession], DataFrame],
    ) -> None:
        """Make sure the quality tables exist; append ``failed`` (built in the quality session)
        to ``quality_quarantine`` when the gate failed rows."""
        session = self._session_for(spark, "quality")
        # The session's confs are shared: one quarantine append at a time.
        with self._quality_lock:
            if not self._quality_tables_ready:
                qtables.ensure(
                    session, self.cfg, (qtables.QUALITY_RESULTS, qtables.QUALITY_QUARANTINE)
                )
                self._quality_tables_ready = True
            if result.failed_rows:  # rare
                quality.quarantine(
                    session, self.cfg, result, failed(session), query_name=self.query_name
                )

    def _record_quality(
        self,
        spark: SparkSession,
        batch_id: int,
        results: list[QualityResultRow],
        timings: Timings,
        fresh: bool,
    ) -> None:
        # All tables' results of the batch in one Delta commit (a replayed batch's append is
        # skipped by its marks).
        with timings.timed("quality results"):
            quality.record_results(
                self._session_for(spark, "quality"),
                self.cfg,
                results,
                app_id=writes.app_id(self.query_name, "quality_results", "append"),
                batch_id=batch_id,
                fresh=fresh,
            )


class BatchWrites:
    """The writes of one micro-batch, started in steps as the batch works out their sources.

    A step's writes (:meth:`start`) begin at once: tables in parallel in ``[pipeline]
    write_threads`` threads, a table's writes in the order they were started -- a later step's
    write of a table waits for the earlier ones. Each write of a batch is one table and kind
    (append or MERGE), because a second append or MERGE of a table under the batch's marks
    would be skipped as a replay of the first (:mod:`offsetscope.spark.writes`).
    :meth:`finish` waits for every write and for the batch's quality results, recorded once
    the last gate has passed. Used as a context manager, leaving it waits for what was
    started, also when the batch failed: nothing of the batch is written after it.
    """

    def __init__(
        self,
        writer: BatchWriter,
        spark: SparkSession,
        batch_id: int,
        timings: Timings,
        *,
        fresh: bool,
    ) -> None:
        self._writer = writer
        self._spark = spark
        self._batch_id = batch_id
        self._timings = timings
        self._fresh = fresh
        self._pool = ThreadPoolExecutor(writer.cfg.pipeline.write_threads)
        self._results_pool = ThreadPoolExecutor(1)
        self._started: set[tuple[str, bool]] = set()
        self._last: dict[str, Future[tuple[str, int]]] = {}
        self._futures: list[Future[tuple[str, int]]] = []
        self._recorded: list[Future[None]] = []
        self._gates = _Countdown()
        self._results: list[QualityResultRow] = []
        self._finished = False

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, tasks: Sequence[Write]) -> None:
        """Begin ``tasks`` (the clusters' shares of a table and kind made one,
        :meth:`BatchWriter.combine`); MERGEs first, as they take longest."""
        by_table: dict[str, list[Write]] = defaultdict(list)
        for task in BatchWriter.combine(tasks):
            kind = (task.logical, task.merge)
            if kind in self._started:
                raise ValueError(
                    f"{task.logical}: a second {'MERGE' if task.merge else 'append'} in batch "
                    f"{self._batch_id} (it would be skipped as a replay of the first)"
                )
            self._started.add(kind)
            by_table[task.logical].append(task)
        self._gates.add(
            sum(1 for ts in by_table.values() for t in ts if self._writer._validates(t.logical))
        )
        for ts in sorted(by_table.values(), key=lambda ts: not any(t.merge for t in ts)):
            logical = ts[0].logical
            # Submitted after it to the same queue, this runs once the earlier write has begun.
            future = self._pool.submit(self._one_table, ts, self._last.get(logical))
            self._last[logical] = future
            self._futures.append(future)

    def wait(self, logical: str) -> None:
        """Wait for the writes of ``logical`` started so far (a table's later write waits for
        its earlier ones); raises the error of a failed one."""
        future = self._last.get(logical)
        if future is not None:
            future.result()

    def finish(self) -> dict[str, int]:
        """Wait for every write started and record the batch's quality results.

        Returns:
            Rows written per table.

        Raises:
            Exception: the error of the first failed write, in the order they were started;
                the other tables' errors are logged (a table's later write that waited on a
                failed one fails with that same error, logged once).
        """
        self._finished = True  # the batch fails with what this raises
        written: dict[str, int] = defaultdict(int)
        failed: list[BaseException] = []
        with self._timings.timed("writes"):
            for future in self._futures:
                error = future.exception()
                if error is None:
                    logical, n = future.result()
                    written[logical] += n
                elif not any(error is seen for seen in failed):
                    failed.append(error)
            if failed:
                for other in failed[1:]:
                    log.error("batch %d: another write failed too", self._batch_id, exc_info=other)
                raise failed[0]
            if self._gates.close():
                self._record()
            for recorded in list(self._recorded):
                recorded.result()
        return dict(written)

    def close(self) -> None:
        """Wait for whatever was started. Their errors are :meth:`finish`'s to raise; when
        the batch failed before calling it (its own error is the one raised), they are
        logged."""
        self._pool.shutdown(wait=True)
        self._results_pool.shutdown(wait=True)
        if self._finished:
            return
        started: list[Future[Any]] = [*self._futures, *self._recorded]
        for future in started:
            error = future.exception()
            if error is not None:
                log.error("batch %d: a write failed too", self._batch_id, exc_info=error)

    def _one_table(
        self, tasks: list[Write], before: Future[tuple[str, int]] | None
    ) -> tuple[str, int]:
        if before is not None:
            before.result()  # this table's earlier write of the batch (its error is raised)
        return self._writer._write_table(
            self._spark,
            self._batch_id,
            tasks,
            self._results,
            self._timings,
            self._gate_passed,
            self._fresh,
        )

    def _gate_passed(self) -> None:
        if self._gates.done_one():
            self._record()

    def _record(self) -> None:
        self._recorded.append(
            self._results_pool.submit(
                self._writer._record_quality,
                self._spark,
                self._batch_id,
                self._results,
                self._timings,
                self._fresh,
            )
        )


def _concat(sources: Sequence[RowsSource]) -> pa.Table:
    return pa.concat_tables([source() for source in sources])


def _date(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).date().isoformat()
