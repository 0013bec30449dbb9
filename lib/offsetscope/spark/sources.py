"""Where internal-topic records come from: Spark's Kafka source, or a Kafka log directory.

Both deliver :data:`offsetscope.spark.tables.SOURCE_SCHEMA`: the decoder's ``RAW_SCHEMA``
(``topic`` = the internal topic whose schemas apply, partition, offset, timestamp ms, key, value,
producer id/epoch, transactional and control flags) plus ``source_topic`` (the topic actually
read) and ``source_error`` (bytes the source could not frame). ``cfg.sources.kind`` chooses.

**Kafka** (``[sources.kafka]``): ``readStream.format("kafka")`` subscribed to the configured
offsets, transaction and share-state topics -- the internal ones, or mirror topics holding their
records (mapped back to ``__consumer_offsets``/``__transaction_state``/``__share_group_state``
by name; an empty ``share_state_topic`` leaves share-partition state out) -- with
``kafka.isolation.level`` (``read_committed``: aborted transactional offset commits never
arrive), ``startingOffsets``, ``maxOffsetsPerTrigger`` (a bounded first batch on a big cluster),
``failOnDataLoss`` (off by default, deliberately: compaction removes records under a stale
checkpoint; the audit table records the offsets a batch did not see), the consumers'
``fetch.max.wait.ms`` (:data:`FETCH_MAX_WAIT_MS`: a batch that reads a partition to its end
would otherwise wait half a second for it), ``groupIdPrefix`` (the
consumer-based offset reader joins a group of its own, which then shows up in
``__consumer_offsets`` too) and the connection settings of :mod:`offsetscope.secrets`
(``[sources.kafka.security]`` and the ``options`` pass-through, secret references resolved here,
at the edge). Spark's Kafka source does not expose producer ids or batch flags, and never
delivers control records: ``producer_id`` is -1 and both flags false.

**Segments** (``[sources.segments]``): a Python streaming data source (Spark 4.1
``pyspark.sql.datasource``) over ``<log_dir>/<topic>-<partition>/`` segment files, the only
source that sees transaction markers and producer ids. Offsets: ``{"<topic>-<p>": next offset}``.
``latestOffset`` frames only what was appended since the previous call
(:class:`~offsetscope.spark.logdir.LogEndCache`); admission control caps a micro-batch at
``max_records_per_trigger`` offsets, shared among the partitions with a backlog. Spark 4.1 calls
``latestOffset()`` without the batch's start, so the reader remembers the end it handed out and
learns the checkpointed one from ``partitions(start, end)`` (Spark calls it with the last logged
offset when a query restarts). Spark 4.1 also asks a Python source for its latest offset only
once under ``Trigger.AvailableNow``, which would read everything in a single micro-batch; the
pipeline therefore drives "available now" for this source as default-trigger micro-batches
until ``processAllAvailable`` returns (``offsetscope.pipelines.ingest.run``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from offsetscope import clusters, config, paths
from offsetscope.config import Config, KafkaSourceConfig
from offsetscope.protocol.records import OFFSETS_TOPIC, TRANSACTION_TOPIC
from offsetscope.protocol.registry import SHARE_STATE_TOPIC
from offsetscope.secrets import kafka as secrets_kafka
from offsetscope.secrets import references as secrets_references
from offsetscope.spark import logdir
from offsetscope.spark.tables import SOURCE_SCHEMA

SEGMENTS_FORMAT = "offsetscope_segments"
KAFKA = "kafka"
SEGMENTS = "segments"
# The column naming each row's cluster in the stream of several clusters (cluster_stream).
CLUSTER = clusters.COLUMN


def source_spark_schema() -> StructType:
    """The Spark schema of every source, derived from the Arrow declaration."""
    schema: StructType = from_arrow_schema(SOURCE_SCHEMA)
    return schema


# ----------------------------------------------------------------------------- Kafka


# The executors' consumers' fetch.max.wait.ms. Spark reads exactly a batch's offset ranges and
# asks for the partition's offset range after each poll; once a poll has reached the log end,
# the consumer's next fetch waits at the broker for data that is not coming, for
# fetch.max.wait.ms (Kafka's default: 500 ms), and the broker answers the following request on
# that connection only after it. So every partition a batch reads to its end -- in a live query,
# every partition with new records -- cost half a second of a task (measured with Spark's own
# Kafka source: docs/benchmarks.md, pipeline_steady_records_per_s). A bounded read has no use
# for waiting on data.
FETCH_MAX_WAIT_MS = "10"


def kafka_options(
    cfg: Config, resolver: secrets_references.Resolver | None = None
) -> dict[str, str]:
    """The options of Spark's Kafka source for ``cfg`` (see the module docstring).

    Connection settings come from :func:`offsetscope.secrets.kafka.spark_kafka_options`:
    ``[sources.kafka.security]`` plus the ``options`` pass-through, secret references resolved
    by ``resolver`` (default: environment variables only). The pass-through may also replace
    the consumer's ``fetch.max.wait.ms`` (:data:`FETCH_MAX_WAIT_MS`).
    """
    k = cfg.sources.kafka
    options = {
        "kafka.fetch.max.wait.ms": FETCH_MAX_WAIT_MS,
        "kafka.bootstrap.servers": k.bootstrap_servers,
        "subscribe": ",".join(internal_topics(k)),
        "startingOffsets": k.starting_offsets,
        "maxOffsetsPerTrigger": str(k.max_offsets_per_trigger),
        "failOnDataLoss": "true" if k.fail_on_data_loss else "false",
        "kafka.isolation.level": k.isolation_level,
        "groupIdPrefix": k.group_id_prefix,
        "includeHeaders": "false",
    }
    options.update(secrets_kafka.spark_kafka_options(k, resolver or secrets_references.Resolver()))
    return options


def topic_kinds(
    offsets_topic: str, transaction_topic: str, share_state_topic: str = ""
) -> dict[str, str]:
    """Topic actually read -> internal topic whose schemas apply (``share_state_topic`` ""
    leaves ``__share_group_state`` out)."""
    kinds = {
        OFFSETS_TOPIC: OFFSETS_TOPIC,
        TRANSACTION_TOPIC: TRANSACTION_TOPIC,
        offsets_topic: OFFSETS_TOPIC,
        transaction_topic: TRANSACTION_TOPIC,
    }
    if share_state_topic:
        kinds[SHARE_STATE_TOPIC] = SHARE_STATE_TOPIC
        kinds[share_state_topic] = SHARE_STATE_TOPIC
    return kinds


def internal_topics(k: KafkaSourceConfig) -> tuple[str, ...]:
    """The topics the Kafka source subscribes to."""
    return tuple(t for t in (k.offsets_topic, k.transaction_topic, k.share_state_topic) if t)


def from_kafka_rows(df: DataFrame, kinds: Mapping[str, str]) -> DataFrame:
    """Spark Kafka source rows -> :data:`SOURCE_SCHEMA` rows."""
    kind = F.lit(None).cast("string")
    for read, internal in kinds.items():
        kind = F.when(F.col("topic") == F.lit(read), F.lit(internal)).otherwise(kind)
    error_type = source_spark_schema()["source_error"].dataType
    return df.select(
        kind.alias("topic"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("bigint").alias("offset"),
        F.unix_millis(F.col("timestamp")).alias("timestamp"),
        F.col("key"),
        F.col("value"),
        F.lit(-1).cast("bigint").alias("producer_id"),
        F.lit(-1).cast("smallint").alias("producer_epoch"),
        F.lit(False).alias("is_transactional"),
        F.lit(False).alias("is_control"),
        F.col("topic").alias("source_topic"),
        F.lit(None).cast(error_type).alias("source_error"),
    )


def kafka_stream(spark: SparkSession, cfg: Config) -> DataFrame:
    """The internal topics from a Kafka cluster as a stream of :data:`SOURCE_SCHEMA` rows."""
    reader = spark.readStream.format("kafka")
    for name, value in kafka_options(cfg, secrets_references.resolver_for(spark)).items():
        reader = reader.option(name, value)
    k = cfg.sources.kafka
    return from_kafka_rows(
        reader.load(), topic_kinds(k.offsets_topic, k.transaction_topic, k.share_state_topic)
    )


# ----------------------------------------------------------------------------- segments


class SegmentRange(InputPartition):
    """One partition directory's offsets ``[start, end)`` for one Spark task."""

    def __init__(
        self, path: str, topic: str, partition: int, internal: str, start: int, end: int
    ) -> None:
        super().__init__((path, start, end))
        self.path = path
        self.topic = topic
        self.partition = partition
        self.internal = internal
        self.start = start
        self.end = end

    def request(self) -> logdir.RangeRequest:
        return logdir.RangeRequest(
            logdir.PartitionDir(self.path, self.topic, self.partition),
            self.internal,
            self.start,
            self.end,
        )


class SegmentRanges(InputPartition):
    """Several partition directories' ranges, read one after another by one Spark task."""

    def __init__(self, ranges: Sequence[SegmentRange]) -> None:
        super().__init__(tuple(r.value for r in ranges))
        self.ranges = tuple(ranges)


def pack(ranges: Sequence[SegmentRange], tasks: int) -> list[SegmentRanges]:
    """``ranges`` as at most ``tasks`` tasks of about equal offsets: largest range first, each
    to the task with the fewest offsets so far. A task per partition directory would cost a
    Python task each (50 for ``__consumer_offsets``) however few records a batch holds."""
    bins: list[list[SegmentRange]] = [[] for _ in range(min(tasks, len(ranges)))]
    sizes = [0] * len(bins)
    for r in sorted(ranges, key=lambda r: (-(r.end - r.start), r.topic, r.partition)):
        i = sizes.index(min(sizes))
        bins[i].append(r)
        sizes[i] += r.end - r.start
    return [SegmentRanges(b) for b in bins]


def _read(
    partition: InputPartition, fs_options: Mapping[str, str] | None = None
) -> Iterator[pa.RecordBatch]:
    # An executor's Python worker: the log directory's file system is created here.
    paths.configure(fs_options or {})
    if isinstance(partition, SegmentRanges):
        ranges = partition.ranges
    elif isinstance(partition, SegmentRange):
        ranges = (partition,)
    else:
        raise TypeError(f"not a segment range: {partition!r}")
    for r in ranges:
        yield from logdir.read_range(r.request(), SOURCE_SCHEMA)


class _LogDir:
    """Options shared by the batch and the stream reader."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.path = options["path"]
        self.kinds = topic_kinds(
            options.get("offsetsTopic", OFFSETS_TOPIC),
            options.get("transactionTopic", TRANSACTION_TOPIC),
            options.get("shareStateTopic", ""),
        )
        self.max_records = int(options.get("maxRecordsPerTrigger", "0")) or None
        self.tasks = int(options.get("tasks", "0")) or None  # None: one per partition directory
        # fs.s3a.* settings for reading a remote log directory from Python (offsetscope.paths).
        self.fs_options = {k: v for k, v in options.items() if k.startswith("fs.")}
        paths.configure(self.fs_options)

    def dirs(self) -> list[logdir.PartitionDir]:
        return logdir.partition_dirs(self.path, sorted(self.kinds))

    def tasks_for(
        self, start: Mapping[str, int], end: Mapping[str, int]
    ) -> Sequence[SegmentRange | SegmentRanges]:
        """The input partitions of ``[start, end)``: the ranges, packed into ``tasks``."""
        ranges = self.ranges(start, end)
        return ranges if self.tasks is None else pack(ranges, self.tasks)

    def ranges(self, start: Mapping[str, int], end: Mapping[str, int]) -> list[SegmentRange]:
        out = []
        for d in self.dirs():
            lo = start.get(d.name)
            hi = end.get(d.name)
            if hi is None:
                continue
            if lo is None:
                lo = logdir.log_start_offset(d)
            if lo < hi:
                out.append(SegmentRange(d.path, d.topic, d.partition, self.kinds[d.topic], lo, hi))
        return out


def cap_offsets(
    start: Mapping[str, int], latest: Mapping[str, int], budget: int | None
) -> dict[str, int]:
    """End offsets for one micro-batch: ``latest``, or at most ``budget`` offsets past ``start``.

    The budget is shared evenly among the partitions with a backlog; what a partition does not
    need goes to the others (so one busy partition cannot starve the rest, and none waits idle).
    """
    end = dict(latest)
    if budget is None:
        return end
    backlog = {k: max(0, v - start.get(k, v)) for k, v in latest.items()}
    waiting = sorted(k for k, n in backlog.items() if n > 0)
    left = budget
    grant = dict.fromkeys(waiting, 0)
    while waiting and left > 0:
        share = max(1, left // len(waiting))
        still = []
        for k in waiting:
            take = min(share, backlog[k] - grant[k], left)
            grant[k] += take
            left -= take
            if grant[k] < backlog[k]:
                still.append(k)
            if left == 0:
                break
        waiting = still
    for k, n in backlog.items():
        if n > 0:
            end[k] = start[k] + grant[k]
    return end


class SegmentStreamReader(DataSourceStreamReader):
    """The streaming reader of :class:`SegmentDataSource`; see the module docstring."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.log = _LogDir(options)
        self.ends = logdir.LogEndCache()
        self.frontier: dict[str, int] | None = None

    def initialOffset(self) -> dict[str, int]:
        return {d.name: logdir.log_start_offset(d) for d in self.log.dirs()}

    def latestOffset(self) -> dict[str, int]:
        dirs = self.log.dirs()
        latest = {d.name: self.ends.log_end_offset(d) for d in dirs}
        if self.frontier is None:
            self.frontier = self.initialOffset()
        frontier = self.frontier
        # A directory that appeared since the last batch starts at its log start offset.
        start = {
            d.name: frontier[d.name] if d.name in frontier else logdir.log_start_offset(d)
            for d in dirs
        }
        end = cap_offsets(start, latest, self.log.max_records)
        # Never hand out less than an earlier batch already covered (a directory that vanished
        # keeps its last offset).
        merged = {**self.frontier, **{k: max(v, self.frontier.get(k, v)) for k, v in end.items()}}
        self.frontier = merged
        return merged

    def partitions(
        self, start: dict[str, int], end: dict[str, int]
    ) -> Sequence[SegmentRange | SegmentRanges]:
        self.frontier = {**(self.frontier or {}), **end}
        return self.log.tasks_for(start, end)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(partition, self.log.fs_options)

    def commit(self, end: dict[str, int]) -> None:
        return None


class SegmentBatchReader(DataSourceReader):
    """The batch reader: every record of every internal-topic partition directory."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.log = _LogDir(options)

    def partitions(self) -> Sequence[SegmentRange | SegmentRanges]:
        ends = logdir.LogEndCache()
        return self.log.tasks_for({}, {d.name: ends.log_end_offset(d) for d in self.log.dirs()})

    def read(self, partition: InputPartition | None) -> Iterator[pa.RecordBatch]:
        if partition is None:  # no ranges: Spark still runs one task, with no partition
            return iter(())
        return _read(partition, self.log.fs_options)


class SegmentDataSource(DataSource):
    """``spark.readStream.format("offsetscope_segments").option("path", log_dir)``.

    Options: ``path`` (the log directory: a local path or a URI, :mod:`offsetscope.paths`),
    ``maxRecordsPerTrigger``, ``offsetsTopic`` and ``transactionTopic`` (directory names holding
    the internal topics' records), ``tasks`` (Spark tasks a read is packed into; default one per
    partition directory), and ``fs.s3a.*`` settings for reading an ``s3a://`` log directory
    from Python (:func:`offsetscope.paths.python_fs_options`).
    """

    @classmethod
    def name(cls) -> str:
        return SEGMENTS_FORMAT

    def schema(self) -> StructType:
        return source_spark_schema()

    def reader(self, schema: StructType) -> SegmentBatchReader:
        return SegmentBatchReader(self.options)

    def streamReader(self, schema: StructType) -> SegmentStreamReader:
        return SegmentStreamReader(self.options)


def register(spark: SparkSession) -> None:
    """Make ``offsetscope_segments`` known to the session (idempotent)."""
    spark.dataSource.register(SegmentDataSource)


def _segment_options(cfg: Config, log_dir: str | None) -> dict[str, str]:
    s = cfg.sources.segments
    return {
        "path": resolve_path(log_dir or s.log_dir),
        "maxRecordsPerTrigger": str(s.max_records_per_trigger),
        "offsetsTopic": s.offsets_topic,
        "transactionTopic": s.transaction_topic,
        "shareStateTopic": s.share_state_topic,
        # As many tasks as the batch has partitions (ingest coalesces to as many).
        "tasks": str(cfg.spark.shuffle_partitions),
        **paths.python_fs_options(cfg.spark.conf),
    }


def resolve_path(path: str) -> str:
    """A location from ``conf/`` as Spark gets it: a URI as written, a local path absolute
    (relative ones from the project root); see :mod:`offsetscope.paths`."""
    return paths.resolve_path(path)


def segment_stream(spark: SparkSession, cfg: Config, log_dir: str | None = None) -> DataFrame:
    """The internal topics of a log directory as a stream of :data:`SOURCE_SCHEMA` rows."""
    register(spark)
    reader = spark.readStream.format(SEGMENTS_FORMAT)
    for name, value in _segment_options(cfg, log_dir).items():
        reader = reader.option(name, value)
    return reader.load()


def cluster_stream(spark: SparkSession, cfg: Config, log_dir: str | None = None) -> DataFrame:
    """Every configured cluster's internal topics as one stream: each cluster's source
    (:func:`kafka_stream` or :func:`segment_stream` with its own settings), its rows tagged
    with the cluster's name in :data:`CLUSTER`, united.

    One query over all of them has one writer per Delta table (``docs/design.md``, "Several
    clusters"). Spark keeps a query's offsets per source, by position: a checkpoint holds the
    clusters it was started with, and :func:`offsetscope.pipelines.ingest.start` refuses one
    made for other clusters.

    Args:
        log_dir: overrides the log directory of a single segment cluster.
    """
    found = config.clusters(cfg)
    if log_dir is not None and len(found) > 1:
        raise ValueError("a log directory override reads one cluster")
    streams = []
    # By name: the checkpoint knows the sources by their position in the union.
    for name in sorted(found):
        one = config.for_cluster(cfg, name)
        df = (
            kafka_stream(spark, one)
            if one.sources.kind == KAFKA
            else segment_stream(spark, one, log_dir)
        )
        streams.append(df.withColumn(CLUSTER, F.lit(name)))
    united = streams[0]
    for df in streams[1:]:
        united = united.unionByName(df)
    return united


def segment_log_ends(cfg: Config, log_dir: str | None = None) -> Callable[[], dict[str, int]]:
    """The segment source's latest offsets, read again at each call: ``{"<topic>-<p>": log end
    offset}`` of the internal topics' partition directories, keyed as the source's offsets are.

    The stream reader's own ``latestOffset`` is capped per micro-batch (admission control), so
    the backlog a query reports (:mod:`offsetscope.pipelines.progress`) asks the directory; the
    cache frames only what was appended since the previous call.
    """
    options = _LogDir(_segment_options(cfg, log_dir))
    ends = logdir.LogEndCache()

    def latest() -> dict[str, int]:
        return {d.name: ends.log_end_offset(d) for d in options.dirs()}

    return latest


def read_segments(spark: SparkSession, cfg: Config, log_dir: str | None = None) -> DataFrame:
    """Every record of a log directory's internal topics, as a batch DataFrame (offline use).

    Raises:
        FileNotFoundError: the directory holds no partition directory of an internal topic
            (a wrong path would otherwise read as an empty log).
    """
    register(spark)
    options = _segment_options(cfg, log_dir)
    log = _LogDir(options)
    if not log.dirs():
        raise FileNotFoundError(
            f"{log.path}: no partition directory of {', '.join(sorted(log.kinds))} "
            "(is it a Kafka log directory?)"
        )
    reader = spark.read.format(SEGMENTS_FORMAT)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()
