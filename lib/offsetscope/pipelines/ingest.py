"""The ingest query: internal topics -> Delta tables, exactly once, one micro-batch at a time.

:func:`start` creates the tables if needed and starts a Structured Streaming query over the
source (Spark's Kafka source on ``__consumer_offsets`` and ``__transaction_state``, or a directory
of segment files, :mod:`offsetscope.spark.sources`) whose ``foreachBatch`` is an
:class:`~offsetscope.pipelines.batch.IngestPipeline`; :func:`run` runs it to the end of what is
available (``available_now``) or until it is stopped (``processing_time``). The checkpoint is
``<storage.checkpoint_dir>/<query name>``; with the Delta writes' idempotency markers it makes
a restart continue where the last committed batch ended, writing nothing twice.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from offsetscope import paths
from offsetscope.config import Config
from offsetscope.pipelines import lease
from offsetscope.pipelines.batch import BatchReport, IngestPipeline, ProgressCallback
from offsetscope.pipelines.progress import ProgressPrinter
from offsetscope.quality import validate as quality
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
        .option(
            "checkpointLocation",
            checkpoint or storage.qualified(spark, checkpoint_path(cfg, name)),
        )
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
    k = cfg.sources.kafka
    # On a cluster, a failure for lack of an ACL or a rejected login is re-raised naming what
    # is missing (docs/security.md), and no error text carries a secret.
    access = (
        secrets_access.kafka_access(
            k, "ingesting the internal topics", topics=sources.internal_topics(k)
        )
        if cfg.sources.kind == sources.KAFKA
        else contextlib.nullcontext()
    )
    name = query_name or cfg.pipeline.query_name
    with access:
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
            where = (
                f"{k.offsets_topic} and {k.transaction_topic} at {k.bootstrap_servers}"
                if pipe.kind == sources.KAFKA
                else sources.resolve_path(log_dir or cfg.sources.segments.log_dir)
            )
            say(f"ingest: query {name} started, reading {where} (a line per micro-batch)")
            latest = (
                sources.segment_log_ends(cfg, log_dir) if pipe.kind == sources.SEGMENTS else None
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
            # py4j keeps the batch function (and so this pipeline) alive after the query ends;
            # the sampler's AdminClient would go on reconnecting to a cluster nobody reads.
            pipe.sampler = None
            if printer is not None:
                spark.streams.removeListener(printer)
                printer.flush(list(query.recentProgress))
        error = query.exception()
        if error is not None:
            raise error
        # A query that failed says nothing: its lease runs out (offsetscope.pipelines.lease).
        lease.release(spark, cfg, pipe.query_name, pipe.clock.now_ms())
    return pipe.reports
