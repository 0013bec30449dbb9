"""The ingest query: internal topics -> Delta tables, exactly once, one micro-batch at a time.

:func:`start` creates the tables if needed and starts a Structured Streaming query over the
source (Spark's Kafka source on ``__consumer_offsets`` and ``__transaction_state``, or a directory
of segment files, :mod:`offsetscope.spark.sources`) whose ``foreachBatch`` is an
:class:`~offsetscope.pipelines.batch.IngestPipeline`; :func:`run` runs it to the end of what is
available (``available_now``) or until it is stopped (``processing_time``). The checkpoint is
``<storage.checkpoint_dir>/<query name>``; with the writes' idempotency marks it makes
a restart continue where the last committed batch ended, writing nothing twice.

Several clusters (``[clusters.<name>]``) are one query over the union of their sources
(:func:`offsetscope.spark.sources.cluster_stream`). Spark keeps the offsets of a query's
sources by their position in the plan, so a checkpoint serves the clusters it was made with
only: the query records them (``fold_state``, fold ``clusters``) and :func:`start` refuses to
continue a checkpoint of other clusters, naming the way on (``docs/design.md``, "Several
clusters").
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from offsetscope import config, paths
from offsetscope.config import ClusterConfig, Config, InvalidConfigError
from offsetscope.pipelines import lease
from offsetscope.pipelines import state as st
from offsetscope.pipelines.batch import BatchReport, IngestPipeline, ProgressCallback
from offsetscope.pipelines.progress import ProgressPrinter
from offsetscope.secrets import access as secrets_access
from offsetscope.spark import sources, storage
from offsetscope.spark import tables as catalogue

__all__ = [
    "BatchReport",
    "IngestPipeline",
    "checkpoint_path",
    "run",
    "start",
    "stop_between_batches",
]


def checkpoint_path(cfg: Config, query_name: str) -> str:
    """``<storage.checkpoint_dir>/<query name>``."""
    return str(paths.resolve(cfg.storage.checkpoint_dir).join(query_name))


CLUSTERS = "clusters"  # fold_state: per query name, the clusters its checkpoint reads


def check_clusters(
    spark: SparkSession, cfg: Config, query_name: str, *, checkpoint_exists: bool, now_ms: int
) -> None:
    """Record the clusters ``query_name`` reads, or refuse a checkpoint made for others.

    Raises:
        InvalidConfigError: the query's checkpoint exists and was made for other clusters.
    """
    now = sorted(config.clusters(cfg))
    row = st.load(spark, cfg, {CLUSTERS: [query_name]}, cluster=st.DEPLOYMENT).get(
        (CLUSTERS, query_name)
    )
    before = json.loads(row.state) if row is not None else None
    if before == now:
        return
    if before is not None and checkpoint_exists:
        raise InvalidConfigError(
            "clusters",
            f"the checkpoint of query {query_name} reads clusters {', '.join(before)}, the "
            f"configuration {', '.join(now)}: Spark cannot continue a checkpoint whose sources "
            "changed. Start a new query ([pipeline] query_name) for the new set of clusters "
            "(docs/design.md, 'Several clusters')",
        )
    st.save(
        spark,
        cfg,
        [st.StateRow(CLUSTERS, query_name, json.dumps(now), None, st.DEPLOYMENT)],
        query_name=f"{query_name}:{CLUSTERS}",
        # Its own idempotency id, versioned by the wall clock as a lease's release is.
        batch_id=now_ms,
        now_ms=now_ms,
    )


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
    catalogue.ensure_tables(spark, cfg)
    location = checkpoint or storage.qualified(spark, checkpoint_path(cfg, name))
    pipe = pipeline or IngestPipeline(cfg, query_name=name, progress=progress, log_dir=log_dir)
    # A query whose checkpoint logged offsets has started on its clusters.
    check_clusters(
        spark,
        cfg,
        name,
        checkpoint_exists=storage.has_entries(spark, f"{location}/offsets"),
        now_ms=pipe.clock.now_ms(),
    )
    df = sources.cluster_stream(spark, cfg, log_dir)
    writer = (
        df.writeStream.foreachBatch(pipe.process_batch)
        .queryName(name)
        .option("checkpointLocation", location)
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
    say: Callable[[str], None] | None = None,
) -> list[BatchReport]:
    """Run the ingest query: until everything available is read (``available_now``), or until
    it is stopped or fails (``processing_time``).

    Args:
        progress: called with each batch's report, inside the batch (``foreachBatch``).
        say: receives what the run is doing -- creating the tables, starting the query -- and
            one line per micro-batch with the backlog left behind it
            (:class:`~offsetscope.pipelines.progress.ProgressPrinter`).

    Returns:
        The reports of the batches this run processed.

    Raises:
        pyspark.errors.StreamingQueryException: a batch failed.
    """
    found = config.clusters(cfg)
    name = query_name or cfg.pipeline.query_name
    with _access(cfg):
        if say is not None:
            say(f"ingest: creating or checking the tables in {catalogue.schema_name(cfg)} ...")
        query, pipe = start(
            spark,
            cfg,
            query_name=name,
            checkpoint=checkpoint,
            log_dir=log_dir,
            progress=progress,
        )
        printer = None
        if say is not None:
            where = "; ".join(
                _where(cluster, c, log_dir, several=len(found) > 1)
                for cluster, c in sorted(found.items())
            )
            say(f"ingest: query {name} started, reading {where} (a line per micro-batch)")
            # The backlog is a segment source's, of one cluster.
            latest = (
                sources.segment_log_ends(cfg, log_dir)
                if pipe.kind == sources.SEGMENTS and len(found) == 1
                else None
            )
            printer = ProgressPrinter(name, pipe.reports, say, latest)
            spark.streams.addListener(printer)
        try:
            if cfg.pipeline.trigger == "available_now" and pipe.kind == sources.SEGMENTS:
                query.processAllAvailable()
            else:
                query.awaitTermination()
        finally:
            query.stop()
            pipe.close()
            if printer is not None:
                spark.streams.removeListener(printer)
                printer.flush(list(query.recentProgress))
        error = query.exception()
        if error is not None:
            raise error
        # A query that failed says nothing: its lease runs out (offsetscope.pipelines.lease).
        lease.release(spark, cfg, pipe.query_name, pipe.clock.now_ms())
    return pipe.reports


@contextlib.contextmanager
def _access(cfg: Config) -> Iterator[None]:
    """On a Kafka cluster, a failure for lack of an ACL or a rejected login is re-raised naming
    what is missing (docs/security.md), and no error text carries a secret."""
    with contextlib.ExitStack() as stack:
        for c in config.clusters(cfg).values():
            if c.kind == sources.KAFKA:
                stack.enter_context(
                    secrets_access.kafka_access(
                        c.kafka,
                        "ingesting the internal topics",
                        topics=sources.internal_topics(c.kafka),
                    )
                )
        yield


def _where(cluster: str, c: ClusterConfig, log_dir: str | None, *, several: bool) -> str:
    k = c.kafka
    where = (
        f"{k.offsets_topic} and {k.transaction_topic} at {k.bootstrap_servers}"
        if c.kind == sources.KAFKA
        else sources.resolve_path(log_dir or c.segments.log_dir)
    )
    return f"{cluster}: {where}" if several else where
