"""What a micro-batch's DataFrames give the rest of the batch: Spark SQL over the source and
decoded rows, with only small results reaching the driver.

* :func:`source_stats` -- per source partition: offset range, record count, timestamps, the
  tasks its records are in;
* :func:`split_plain` -- the source rows as the plain offset commits (by key) and the rest;
  :func:`plain_pass` decodes the plain part inside the append of its ``offset_commits`` rows,
  observing its counts, order and commit candidates (:class:`PlainPass`);
* :func:`decoded_counts` -- the rest's decoded rows per kind; with the stats and the plain
  part's order, :func:`coordinates_unique` says whether the plain commits' coordinates are
  unique, known without a job over the batch;
* :func:`bronze_frame` -- source rows as ``raw_records`` rows;
* :func:`plain_commit_frame` -- the ``offset_commits`` rows of the offset commits outside
  transactions (final as read), appended from the executors;
* :func:`commit_candidates` -- of those, the few the commit summary can pick
  (:func:`offsetscope.history.commits.candidate_rows`), picked by the decode tasks as they
  decoded them (:mod:`offsetscope.spark.decode`, commit candidates), so that what reaches the
  driver grows with the batch's groups and partitions, not with its commits, and no pass over
  the commits is made for it;
* :func:`light_events` -- every other internal-topic event (group metadata, KIP-848 records, the
  transaction log, markers, transactional commits), few by nature, as history events;
* :func:`window_commits` -- the plain commits inside the windows the fold step asks for.
"""

from __future__ import annotations

import functools
import operator
import struct
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from offsetscope.history.batch import Window
from offsetscope.history.commits import COLUMNS, candidates
from offsetscope.history.events import Event, OffsetCommitEvent
from offsetscope.history.offsets import COMMITTED
from offsetscope.pipelines.events import event_from_decoded
from offsetscope.protocol.records import OFFSETS_TOPIC
from offsetscope.quality import expressions
from offsetscope.spark import decode as dec
from offsetscope.spark import tables as catalogue

# The light streams: everything but the plain offset commits.
LIGHT_KINDS = ("group_metadata", "consumer_group", "transaction_log", "control")
_LIGHT = f"kind IN {LIGHT_KINDS} OR (kind = 'offset_commit' AND is_transactional)"
# The source records that are plain offset commits by their coordinates and key alone: in
# __consumer_offsets, no control record, outside transactions, framed by the source, and a key
# of type 0 or 1 (OffsetCommitKey; the decoder's own dispatch, protocol/arrow_decode.py). Each
# decodes to a plain offset commit, or to an error or unknown row when its value does not
# decode; every other record is in the light part (:func:`split_plain`).
PLAIN_RECORDS = (
    f"topic = '{OFFSETS_TOPIC}' AND NOT coalesce(is_control, false) "
    "AND NOT coalesce(is_transactional, false) AND source_error IS NULL "
    "AND substring(key, 1, 2) IN (X'0000', X'0001')"
)


_TASK = "__task"


def source_stats(raw: DataFrame, *, clustered: bool = False) -> list[Any]:
    """Per source partition (and cluster, when the rows carry one): offsets, record count and
    timestamps of the batch, and the first and last task (Spark partition of ``raw``) holding
    its records."""
    keys = ["topic", "source_topic", "partition"]
    return (
        raw.withColumn(_TASK, F.spark_partition_id())
        .groupBy(*keys, *([catalogue.CLUSTER] if clustered else []))
        .agg(
            F.min("offset").alias("first"),
            F.max("offset").alias("last"),
            F.count(F.lit(1)).alias("records"),
            F.max("timestamp").alias("max_ts"),
            F.min("timestamp").alias("min_ts"),
            F.min(_TASK).alias("first_task"),
            F.max(_TASK).alias("last_task"),
        )
        .collect()
    )


def decoded_counts(decoded: DataFrame) -> dict[str, int]:
    """Decoded rows per kind (one aggregation; packed commit candidates are not records)."""
    rows = decoded.groupBy("kind").agg(F.count(F.lit(1)).alias("count")).collect()
    return {r["kind"]: int(r["count"]) for r in rows if r["kind"] != dec.CANDIDATE}


def coordinates_unique(stats: Iterable[Any], ascending: bool) -> bool:
    """Whether no two of a batch's records share a topic, partition and offset, known from
    what the batch computed anyway: every task's records ascended within each topic partition
    (:attr:`PlainCounts.ascending`), and each topic partition's records -- whichever source topic
    they came from -- are in one task (:func:`source_stats` of the same rows). Then the
    repeats a uniqueness check over the records' coordinates looks for cannot exist; when
    either fails, nothing is known and the check runs as usual. ``stats`` are one cluster's:
    coordinates are unique within a cluster."""
    if not ascending:
        return False
    task_of: dict[tuple[str, int], int] = {}
    for s in stats:
        if s["topic"] is None or s["partition"] is None:
            continue  # rows without coordinates key nothing
        if s["first_task"] != s["last_task"]:
            return False
        tp = (s["topic"], int(s["partition"]))
        if task_of.setdefault(tp, int(s["first_task"])) != int(s["first_task"]):
            return False
    return True


def split_plain(raw: DataFrame) -> tuple[DataFrame, DataFrame]:
    """``raw``'s source rows as (the plain offset commits, the rest): :data:`PLAIN_RECORDS`,
    and every row it does not hold true for (a null key among them)."""
    plain = F.expr(PLAIN_RECORDS)
    return raw.where(plain), raw.where(~F.coalesce(plain, F.lit(False)))


@dataclass(frozen=True, slots=True)
class PlainCounts:
    """What the plain part's decode tells the batch (:class:`PlainPass`)."""

    # Its decoded rows per kind: offset_commit, and error or unknown for values that did not
    # decode.
    by_kind: dict[str, int]
    # No task saw its records' offsets stop ascending (spark.decode: out_of_sequence).
    ascending: bool
    # The decode tasks' commit candidates (spark.decode: _COMMIT_COLUMNS, as decoded).
    candidates: pa.Table

    @property
    def commits(self) -> int:
        """Its offset commits: all outside transactions, as the plain part holds no others."""
        return self.by_kind.get("offset_commit", 0)


@dataclass(frozen=True, slots=True)
class PlainPass:
    """The plain part of a batch (:func:`split_plain`) decoded once, inside the append of its
    ``offset_commits`` rows: ``rows`` are those rows, and the append's pass over them observes
    the counts per kind, the records' order and the decode tasks' packed commit candidates
    (:mod:`offsetscope.spark.decode`), so the plain commits -- most of a batch's records --
    are never kept, read again or carried to the driver.

    ``rows`` must be written once (the observation takes the first action's metrics), or the
    pass run alone (:meth:`run_apart`) when the append may be skipped as a replay.
    """

    source: DataFrame
    rows: DataFrame
    observation: Observation

    def run_apart(self) -> None:
        """Run the decode without writing (Spark's ``noop`` sink), to fill the observation."""
        self.rows.write.format("noop").mode("overwrite").save()

    def counts(self) -> PlainCounts:
        """The observed metrics, once ``rows`` were written or :meth:`run_apart` ran (this
        waits for that action)."""
        got = self.observation.get
        by_kind = {k: int(got[k]) for k in dec.KINDS if got[k]}
        return PlainCounts(
            by_kind,
            not got["broken"],
            dec.unpack_candidates(got["packed"]),
        )


def plain_pass(source: DataFrame, *, read_committed_source: bool) -> PlainPass:
    """The :class:`PlainPass` of ``source`` (the plain part of a batch's source rows)."""
    observation = Observation()
    metrics: list[Column] = [F.count_if(F.col("kind") == F.lit(k)).alias(k) for k in dec.KINDS]
    metrics += [
        F.coalesce(F.max("out_of_sequence"), F.lit(False)).alias("broken"),
        F.collect_list(F.when(F.col("kind") == F.lit(dec.CANDIDATE), F.col("raw_value"))).alias(
            "packed"
        ),
    ]
    observed = dec.decode(source, commit_candidates=True).observe(observation, *metrics)
    rows = plain_commit_frame(observed, read_committed_source=read_committed_source)
    return PlainPass(source, rows, observation)


def repeated_coordinates(raw: DataFrame) -> bool:
    """Whether two of ``raw``'s source rows share a topic, partition and offset (rows without
    an offset key nothing)."""
    return expressions.repeats(
        raw.where(F.col("offset").isNotNull()), ("topic", "partition", "offset")
    )


def of_groups(plain: DataFrame, groups: Iterable[str]) -> DataFrame:
    """The rows of ``plain`` (plain offset commits' source rows) whose key names one of
    ``groups``, chosen by their key bytes in the JVM so that only they are decoded: an
    OffsetCommitKey is int16 type, int16 length and the group's UTF-8 bytes, then the topic and
    partition (the decoder's offset-commit key, lib/offsetscope/protocol/arrow_decode.py)."""
    by_length: dict[int, list[bytes]] = defaultdict(list)
    for group in sorted(set(groups)):
        name = group.encode()
        head = struct.pack(">h", len(name)) + name
        by_length[len(head)].append(head)
    if not by_length:
        return plain.limit(0)
    chosen = [
        F.substring(F.col("key"), 3, n).isin([F.lit(bytearray(h)) for h in heads])
        for n, heads in sorted(by_length.items())
    ]
    return plain.where(functools.reduce(operator.or_, chosen))


def bronze_frame(raw: DataFrame, batch_id: int, ingested_at_ms: int, cluster: str) -> DataFrame:
    """Source rows of ``cluster`` -> ``raw_records`` rows."""
    spec = catalogue.spec("raw_records")
    extra = {
        "ingest_batch_id": F.lit(batch_id).cast("bigint"),
        "ingested_at": F.timestamp_millis(F.lit(ingested_at_ms)),
        catalogue.CLUSTER: F.lit(cluster),
    }
    cols = []
    for c in spec.written_columns:
        expr = extra[c.name] if c.source is None else F.expr(c.source)
        cols.append(expr.cast(c.type).alias(c.name))
    return raw.select(*cols)


def plain_commit_frame(
    decoded: DataFrame, *, read_committed_source: bool, transactional: bool = False
) -> DataFrame:
    """``offset_commits`` rows of the offset commits committed as read (timestamps in epoch ms;
    :func:`offsetscope.spark.writes.ms_table` gives them the table's types on the driver).

    The columns are :func:`offsetscope.history.offsets.plain_row`'s, in Spark SQL.

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


def commit_candidates(
    candidates: pa.Table,
    plain: DataFrame,
    *,
    read_committed_source: bool,
    tombstones: Mapping[str, int],
) -> pa.Table:
    """The batch's plain commits the summary can pick, on the driver as Arrow (the columns of
    ``offset_commits``, timestamps in epoch ms).

    :func:`offsetscope.history.commits.summarize` of the result equals its summary of all the
    batch's plain commits: every pick is a per-key arg-min or arg-max, kept by the decode task
    that read the commit (``candidates``: :attr:`PlainCounts.candidates`). Those picks know no
    tombstones; the commits of the groups deleted in the batch are picked again here, all in
    one task, with them -- decoded again from ``plain`` (the plain part's source rows), only
    the records of those groups (:func:`of_groups`).

    Args:
        candidates: the decode tasks' candidates, as decoded.
        plain: the plain part's source rows (:func:`split_plain`).
        read_committed_source: the rows come from a ``read_committed`` Kafka source.
        tombstones: group -> record offset of its last group-metadata tombstone in the batch.
    """
    parts = [plain_commit_table(candidates, read_committed_source=read_committed_source)]
    if tombstones:
        deleted = dict(tombstones)
        columns = [f"`{c}`" for c in COLUMNS]
        # A batch's deleted groups are few: their commits are picked with their tombstones in
        # one task, beside what the decode picked of them without.
        of_deleted = (
            plain_commit_frame(
                dec.decode(of_groups(plain, deleted)), read_committed_source=read_committed_source
            )
            .where(F.col("group_id").isin(sorted(deleted)))
            .select(*columns)
        )
        parts.append(of_deleted.coalesce(1).mapInArrow(_keep(deleted), of_deleted.schema).toArrow())
    return pa.concat_tables(parts, promote_options="permissive")


def plain_commit_table(decoded: pa.Table, *, read_committed_source: bool) -> pa.Table:
    """:func:`plain_commit_frame`'s columns in Arrow, for decoded offset commits on the driver
    (the same values, each column as that function's expression gives it)."""
    how = "read_committed_source" if read_committed_source else "non_transactional"
    n = decoded.num_rows
    commit = decoded.column("offset_commit").combine_chunks()

    def field(name: str) -> pa.Array:
        return pc.struct_field(commit, name)

    def column(name: str) -> pa.Array:
        return decoded.column(name).combine_chunks()

    # CASE WHEN <null> takes the ELSE branch.
    tombstone = column("is_tombstone").fill_null(False)
    transactional = column("is_transactional").fill_null(False)
    no_long = pa.nulls(n, pa.int64())

    def unless_removed(value: pa.Array) -> pa.Array:
        value = value.cast(pa.int64())
        removed = pc.or_kleene(tombstone, pc.less(value, 0)).fill_null(False)
        return pc.if_else(removed, no_long, value)

    at = column("timestamp").cast(pa.int64())
    values = {
        "group_id": field("group"),
        "topic": field("topic"),
        "partition": field("partition").cast(pa.int32()),
        "offset": pc.if_else(tombstone, no_long, field("offset").cast(pa.int64())),
        "leader_epoch": field("leader_epoch").cast(pa.int32()).fill_null(-1),
        "metadata": field("metadata").fill_null(""),
        "commit_timestamp": unless_removed(field("commit_timestamp")),
        "expire_timestamp": unless_removed(field("expire_timestamp")),
        "topic_id": field("topic_id"),
        "is_tombstone": column("is_tombstone"),
        "record_partition": column("partition").cast(pa.int32()),
        "record_offset": column("offset").cast(pa.int64()),
        "record_timestamp": at,
        "transactional": column("is_transactional"),
        "producer_id": pc.if_else(transactional, column("producer_id").cast(pa.int64()), no_long),
        "producer_epoch": pc.if_else(
            transactional, column("producer_epoch").cast(pa.int32()), pa.nulls(n, pa.int32())
        ),
        "status": pa.array([COMMITTED] * n, pa.string()),
        "resolved_at": at,
        "resolved_by": pc.if_else(tombstone, pa.scalar("tombstone"), pa.scalar(how)),
        "effective_at": at,
    }
    return pa.table({name: values[name] for name in COLUMNS})


def _keep(
    tombstones: dict[str, int],
) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A ``mapInArrow`` function keeping each task's :func:`candidates`."""

    def keep(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # All of a task's rows at once: a pick compares rows across Arrow batches.
        whole = list(batches)
        if whole:
            yield from candidates(pa.Table.from_batches(whole), tombstones).to_batches()

    return keep


def light_events(decoded: DataFrame) -> list[Event]:
    """The batch's light events, collected as Arrow and turned into history events."""
    table = decoded.where(_LIGHT).drop(*catalogue.DECODE_EXTRA_NAMES).toArrow()
    return [e for row in table.to_pylist() if (e := event_from_decoded(row)) is not None]


def window_commits(plain: DataFrame, windows: set[Window]) -> list[OffsetCommitEvent]:
    """The batch's plain commits inside ``windows`` (one broadcast join; see
    :data:`offsetscope.history.batch.Window`), decoded again from ``plain`` (the plain part's
    source rows, :func:`split_plain`): only the records of the windows' groups
    (:func:`of_groups`)."""
    decoded = dec.decode(of_groups(plain, {w[1] for w in windows}))
    wanted = decoded.sparkSession.createDataFrame(
        sorted(windows, key=lambda w: (w[:5], w[5] is None, w[5] or 0)),
        "k_partition int, k_group string, k_topic string, k_tp int, k_lo bigint, k_hi bigint",
    )
    inside = decoded.where("kind = 'offset_commit' AND NOT is_transactional").join(
        F.broadcast(wanted),
        (F.col("partition") == F.col("k_partition"))
        & (F.col("offset_commit.group") == F.col("k_group"))
        & (F.col("offset_commit.topic") == F.col("k_topic"))
        & (F.col("offset_commit.partition") == F.col("k_tp"))
        & (F.col("offset") > F.col("k_lo"))
        & (F.col("k_hi").isNull() | (F.col("offset") < F.col("k_hi"))),
    )
    columns = [c for c in decoded.columns if c not in catalogue.DECODE_EXTRA_NAMES]
    # A record inside several windows of its key arrives once per window.
    inside = inside.select(*columns).dropDuplicates(["partition", "offset"])
    out: list[OffsetCommitEvent] = []
    for row in inside.toArrow().to_pylist():
        event = event_from_decoded(row)
        if not isinstance(event, OffsetCommitEvent):
            raise TypeError(f"a plain offset commit decoded as {type(event).__name__}")
        out.append(event)
    return out
