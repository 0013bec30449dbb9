"""Re-decode: rebuild the decoded and history tables from ``raw_records`` with today's decoder.

The raw key and value bytes of every internal-topic record are kept (``raw_records``) so that a
better decoder can be applied to old data: a record type an older offsetscope quarantined as
unknown, or a field it read wrong. :func:`redecode` is that batch job:

1. **Nobody else writes.** The ingest query's lease (:mod:`offsetscope.pipelines.lease`) must say
   it is not running; a query running in this Spark session can be stopped between two
   batches instead (``stop_ingest``).
2. **Decode again** the ``raw_records`` rows (those stored at or after ``since``, when given)
   with the decoder the batch's own pipeline uses (:func:`offsetscope.spark.decode.decode`), and
   build each decoded table's rows from them as an ingest batch would.
3. **Compare** with what the decoded tables hold for the same records, table by table, on the
   record's coordinates: rows new to a table (a record that now decodes, or now decodes to
   another kind), rows that left it (a record that no longer belongs there: it left quarantine),
   and rows whose values differ. ``ingest_batch_id`` is kept from the row that was there.
4. **Fold again** what the changed records feed: every group and transactional id a changed
   record belongs to is folded from all of its records (decoded anew), with the fold step the
   ingest query runs (:func:`offsetscope.history.batch.fold_batch`), and its rows replace that
   key's rows in every history table, with its fold state.
5. **Write** each changed table in one Delta commit (a MERGE that inserts, updates and deletes
   the changed rows only), and report each commit's version.

``end_offsets``, ``partition_lag`` and ``stuck_partitions`` are measurements taken at sample
times from the data partitions, not decoded from the internal topics: they are not rebuilt.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from delta.tables import DeltaTable
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from offsetscope import config
from offsetscope.clock import Clock, SystemClock
from offsetscope.config import ClusterConfig, Config
from offsetscope.history import batch as step
from offsetscope.history import tables as history_tables
from offsetscope.history.batch import HistoryOutputs, fold_batch
from offsetscope.pipelines import lease
from offsetscope.pipelines import state as st
from offsetscope.pipelines.events import event_from_decoded
from offsetscope.pipelines.ingest import stop_between_batches
from offsetscope.protocol.records import OFFSETS_TOPIC, TRANSACTION_TOPIC
from offsetscope.spark import decode as dec
from offsetscope.spark import sources, writes
from offsetscope.spark import tables as catalogue

SILVER = tuple(t.logical for t in catalogue.SILVER_TABLES)
# History tables and the key column that says whose rows they are. share_partition_state is
# left out: it is folded from __share_group_state, which a group's refold does not read.
GROUP_TABLES = (
    "group_generations",
    "group_state_transitions",
    "member_sessions",
    "partition_assignments",
    "streams_assignments",
    "groups_current",
    "offset_commits",
)
TXN_TABLES = ("transactions", "transaction_status_timeline")
HISTORY = (*GROUP_TABLES, *TXN_TABLES)
# Every table the command can rebuild (``--tables``).
TABLES = (*SILVER, *HISTORY)
_COORDS = ("internal_topic", "record_partition", "record_offset")
# The group or transactional id a decoded row belongs to.
_OWNER = (
    "coalesce(offset_commit.`group`, group_metadata.`group`, consumer_group.group_id, "
    "transaction_log.transactional_id)"
)


class IngestRunningError(RuntimeError):
    """The ingest query writes the tables a re-decode would rewrite."""


@dataclass(frozen=True, slots=True)
class TableChange:
    """What a re-decode did to one table."""

    table: str
    inserted: int
    updated: int
    deleted: int
    version: int | None  # the Delta commit (None: nothing to write)

    @property
    def line(self) -> str:
        where = "unchanged" if self.version is None else f"version {self.version}"
        return (
            f"{self.table}: {self.inserted} inserted, {self.updated} updated, "
            f"{self.deleted} deleted ({where})"
        )


@dataclass(frozen=True, slots=True)
class RedecodeReport:
    """What changed (see the module docstring)."""

    records: int  # raw records decoded again
    since: int | None
    now_decoded: Mapping[str, int]  # quarantined before, decoded now: per kind
    newly_quarantined: int  # decoded before, quarantined now
    values_differ: int  # decoded before and now, to different values
    groups: tuple[str, ...]
    transactional_ids: tuple[str, ...]
    tables: tuple[TableChange, ...]
    seconds: float
    notes: tuple[str, ...] = field(default_factory=tuple)

    def lines(self) -> list[str]:
        since = "" if self.since is None else f" stored since {self.since} ms"
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.now_decoded.items()))
        out = [
            f"redecode: {self.records} raw records{since} decoded again",
            f"  quarantined before and decoded now: {sum(self.now_decoded.values())}"
            + (f" ({kinds})" if kinds else ""),
            f"  decoded before, quarantined now: {self.newly_quarantined}",
            f"  decoded to different values: {self.values_differ}",
            (
                f"  folded again: {len(self.groups)} groups, "
                f"{len(self.transactional_ids)} transactional ids"
            ),
        ]
        out += [f"  {c.line}" for c in self.tables]
        out += [f"  note: {n}" for n in self.notes]
        out.append(f"  ({self.seconds:.1f} s)")
        return out


# ----------------------------------------------------------------------------- guard


def ensure_not_running(
    spark: SparkSession, cfg: Config, now_ms: int, *, stop_ingest: bool = False
) -> list[str]:
    """Refuse while the ingest query runs (see the module docstring); returns notes.

    Raises:
        IngestRunningError: its lease says it runs elsewhere, or it runs in this session and
            ``stop_ingest`` is not set.
    """
    name = cfg.pipeline.query_name
    notes: list[str] = []
    for query in spark.streams.active:
        if query.name == name:
            if not stop_ingest:
                raise IngestRunningError(
                    f"the ingest query {name} runs in this session; stop it first "
                    "(or pass --stop-ingest)"
                )
            stop_between_batches(query)
            notes.append(f"stopped the ingest query {name} of this session between batches")
            lease.release(spark, cfg, name, now_ms)
    held = lease.holder(spark, cfg, name)
    if lease.running(held, now_ms):
        assert held is not None
        raise IngestRunningError(
            f"the {held.describe()}, is running (its lease is live for "
            f"{lease.liveness_ms(held.interval_ms) // 1000} s after a batch): stop it, then "
            "run redecode again"
        )
    if held is not None and not held.stopped:
        notes.append(f"the {held.describe()}, ended without stopping cleanly")
    return notes


# ----------------------------------------------------------------------------- decode again


def _raw_source(spark: SparkSession, cfg: Config, since: int | None, cluster: str) -> DataFrame:
    """``cluster``'s ``raw_records`` as source rows (epoch-ms timestamps), plus their ingest
    batch."""
    raw = _of(spark.table(catalogue.table_name(cfg, "raw_records")), cluster)
    if since is not None:
        raw = raw.where(F.col("timestamp") >= F.timestamp_millis(F.lit(since)))
    columns = [
        F.unix_millis(F.col("timestamp")).alias("timestamp")
        if f == "timestamp"
        else F.col(f"`{f}`")
        for f in sources.source_spark_schema().fieldNames()
    ]
    return raw.select(*columns, F.col("ingest_batch_id"))


def _decoded_with_batch(raw: DataFrame) -> DataFrame:
    """Decode ``raw`` and carry each record's ``ingest_batch_id`` over."""
    decoded = dec.decode(raw)
    batches = raw.select(
        F.col("topic").alias("_t"),
        F.col("partition").alias("_p"),
        F.col("offset").alias("_o"),
        F.col("ingest_batch_id"),
    )
    joined = decoded.join(
        batches,
        (decoded["topic"] == batches["_t"])
        & (decoded["partition"] == batches["_p"])
        & (decoded["offset"] == batches["_o"]),
        "left",
    )
    return joined.drop("_t", "_p", "_o")


def _fingerprint(columns: Iterable[str]) -> Column:
    """One value per row over ``columns`` (null-safe), to compare two versions of a row."""
    return F.sha2(F.to_json(F.struct(*[F.col(f"`{c}`") for c in columns])), 256)


@dataclass(frozen=True, slots=True)
class _Diff:
    table: str
    source: DataFrame | None  # the rows to insert or update, or None
    delete_keys: DataFrame | None  # coordinates to delete
    inserted: int
    updated: int
    deleted: int
    # coordinates of every changed record of this table, with what it is now
    changed: list[dict[str, Any]]


def _change_kinds() -> tuple[Column, Column, Column]:
    """Inserted, updated and deleted rows of a full outer join of the new rows (fingerprint
    ``n_fp``) with the stored ones (``o_fp``)."""
    o, n = F.col("o_fp"), F.col("n_fp")
    return o.isNull(), o.isNotNull() & n.isNotNull() & (o != n), n.isNull()


def _count_changes(joined: DataFrame) -> tuple[int, int, int]:
    """How many rows :func:`_change_kinds` finds of each kind, in one Spark job."""
    kinds = _change_kinds()
    counts = joined.select(
        *[F.sum(F.when(k, 1).otherwise(0)).alias(f"c{i}") for i, k in enumerate(kinds)]
    ).collect()[0]
    ins, upd, dele = (int(counts[f"c{i}"] or 0) for i in range(len(kinds)))
    return ins, upd, dele


def _of(table: DataFrame, cluster: str) -> DataFrame:
    return table.where(F.col(catalogue.CLUSTER) == F.lit(cluster))


def _silver_diff(
    spark: SparkSession, cfg: Config, logical: str, new: DataFrame, since: int | None, cluster: str
) -> _Diff:
    """One decoded table's rows now against its stored rows for the same records (of
    ``cluster``)."""
    spec = catalogue.spec(logical)
    compared = [c.name for c in spec.written_columns if c.name != "ingest_batch_id"]
    old = _of(spark.table(catalogue.table_name(cfg, logical)), cluster)
    if since is not None:
        old = old.where(F.col("record_timestamp") >= F.timestamp_millis(F.lit(since)))
    o = old.select(
        *[F.col(c).alias(f"o_{c}") for c in _COORDS], _fingerprint(compared).alias("o_fp")
    )
    n = new.select("*", _fingerprint(compared).alias("n_fp"))
    on = [n[c] == o[f"o_{c}"] for c in _COORDS]
    cond = on[0] & on[1] & on[2]
    joined = n.join(o, cond, "full_outer").persist(StorageLevel.MEMORY_AND_DISK)
    try:
        inserted, updated, deleted = _change_kinds()
        inserted_df = joined.where(inserted)
        updated_df = joined.where(updated)
        deleted_df = joined.where(deleted)
        ins, upd, dele = _count_changes(joined)
        written = [c.name for c in spec.written_columns]
        source = (
            inserted_df.unionByName(updated_df).select(*[F.col(f"`{c}`") for c in written])
            if ins or upd
            else None
        )
        keys = (
            deleted_df.select(
                *[F.col(f"o_{c}").alias(c) for c in _COORDS],
                F.lit(cluster).alias(catalogue.CLUSTER),
            )
            if dele
            else None
        )
        changed = (
            [
                {"table": logical, "change": "inserted", **r.asDict()}
                for r in inserted_df.select(*_COORDS).collect()
            ]
            + [
                {"table": logical, "change": "updated", **r.asDict()}
                for r in updated_df.select(*_COORDS).collect()
            ]
            + [
                {"table": logical, "change": "deleted", **{c: r[f"o_{c}"] for c in _COORDS}}
                for r in deleted_df.select(*[f"o_{c}" for c in _COORDS]).collect()
            ]
        )
        if source is not None:
            source = source.localCheckpoint()
        if keys is not None:
            keys = keys.localCheckpoint()
        return _Diff(logical, source, keys, ins, upd, dele, changed)
    finally:
        joined.unpersist()


# ----------------------------------------------------------------------------- fold again


def _owners(decoded: DataFrame, changed: Sequence[dict[str, Any]]) -> dict[str, set[str]]:
    """The groups and transactional ids of the changed records, as decoded now or as stored."""
    if not changed:
        return {step.GROUP: set(), step.TXN: set()}
    spark = decoded.sparkSession
    wanted = spark.createDataFrame(
        sorted({(c["internal_topic"], c["record_partition"], c["record_offset"]) for c in changed}),
        "w_topic string, w_partition int, w_offset bigint",
    )
    rows = (
        decoded.join(
            F.broadcast(wanted),
            (decoded["topic"] == wanted["w_topic"])
            & (decoded["partition"] == wanted["w_partition"])
            & (decoded["offset"] == wanted["w_offset"]),
        )
        .select("topic", F.expr(_OWNER).alias("owner"))
        .distinct()
        .collect()
    )
    out: dict[str, set[str]] = {step.GROUP: set(), step.TXN: set()}
    for r in rows:
        if r["owner"] is None:
            continue
        out[step.TXN if r["topic"] == TRANSACTION_TOPIC else step.GROUP].add(r["owner"])
    return out


def _refold(
    spark: SparkSession,
    cfg: Config,
    groups: set[str],
    txns: set[str],
    read_committed_source: bool,
    cluster: str,
) -> tuple[HistoryOutputs, dict[tuple[str, str], Any], dict[tuple[str, str], int]]:
    """Fold every record of ``groups`` and ``txns`` of ``cluster`` again, from all of its
    ``raw_records``.

    Returns the history rows, the fold states by (fold, key), and the highest ingest batch
    of each key's records (its fold state's ``updated_batch_id``).
    """
    decoded = _decoded_with_batch(_raw_source(spark, cfg, None, cluster))
    owner = F.expr(_OWNER)
    topic = F.col("topic")
    mine = ((topic == F.lit(OFFSETS_TOPIC)) & owner.isin(sorted(groups) or [""])) | (
        (topic == F.lit(TRANSACTION_TOPIC)) & owner.isin(sorted(txns) or [""])
    )
    # Markers resolve the groups' transactional commits: those of their offsets partitions.
    partitions = [
        r[0]
        for r in decoded.where(mine & (topic == F.lit(OFFSETS_TOPIC)))
        .select("partition")
        .distinct()
        .collect()
    ]
    markers = (
        (F.col("kind") == F.lit("control"))
        & (topic == F.lit(OFFSETS_TOPIC))
        & F.col("partition").isin(partitions or [-1])
    )
    rows = (
        decoded.where(mine | markers)
        .drop(*catalogue.DECODE_EXTRA_NAMES)
        .withColumn("_owner", owner)
        .toArrow()
        .to_pylist()
    )
    rows.sort(key=lambda r: (r["topic"], r["partition"], r["offset"]))
    events = [e for r in rows if (e := event_from_decoded(r)) is not None]
    states, outputs = fold_batch(None, events, read_committed_source=read_committed_source)
    batches: dict[tuple[str, str], int] = {}
    for r in rows:
        if r["_owner"] is None or r["ingest_batch_id"] is None:
            continue
        fold = step.TXN if r["topic"] == TRANSACTION_TOPIC else step.GROUP
        key = (fold, r["_owner"])
        batches[key] = max(batches.get(key, -1), int(r["ingest_batch_id"]))
    found: dict[tuple[str, str], Any] = {
        (step.GROUP, g): state for g, state in states.groups.items() if g in groups
    }
    found.update({(step.TXN, t): state for t, state in states.transactions.items() if t in txns})
    return outputs, found, batches


def _history_diff(
    spark: SparkSession,
    cfg: Config,
    logical: str,
    rows: Sequence[Any],
    owner_column: str,
    owners: set[str],
    cluster: str,
) -> _Diff:
    """One history table's rows of ``owners`` in ``cluster`` now against the stored ones."""
    spec = catalogue.spec(logical)
    written = _compared(spec)
    new = writes.rows_frame(
        spark, logical, list(history_tables.materialize(rows).values()), cluster=cluster
    )
    # A log of versions (groups_current) is compared by each key's latest row.
    old = _of(catalogue.current_rows(spark, cfg, logical), cluster).where(
        F.col(owner_column).isin(sorted(owners))
    )
    key = list(spec.key)
    o = old.select(
        *[F.col(f"`{c}`").alias(f"o_{c}") for c in key], _fingerprint(written).alias("o_fp")
    )
    n = new.select("*", _fingerprint(written).alias("n_fp"))
    cond = None
    for c in key:
        term = n[c].eqNullSafe(o[f"o_{c}"])
        cond = term if cond is None else cond & term
    assert cond is not None
    joined = n.join(o, cond, "full_outer").persist(StorageLevel.MEMORY_AND_DISK)
    try:
        ins, upd, dele = _count_changes(joined)
        source = None
        if ins or upd:
            source = (
                joined.where(F.col("o_fp").isNull() | (F.col("o_fp") != F.col("n_fp")))
                .where(F.col("n_fp").isNotNull())
                .select(*[F.col(f"`{c}`") for c in written])
                .localCheckpoint()
            )
        keys = None
        if dele:
            keys = (
                joined.where(F.col("n_fp").isNull())
                .select(*[F.col(f"o_{c}").alias(c) for c in key])
                .localCheckpoint()
            )
        return _Diff(logical, source, keys, ins, upd, dele, [])
    finally:
        joined.unpersist()


def _compared(spec: catalogue.TableSpec) -> list[str]:
    """The written columns a re-decode compares and writes: all but a log's version column,
    which the rows it folds do not have (:func:`_write`)."""
    return [c.name for c in spec.written_columns if c.name != spec.version_column]


# ----------------------------------------------------------------------------- write


def _write(spark: SparkSession, cfg: Config, diff: _Diff, key: Sequence[str]) -> TableChange:
    """One Delta commit: upsert the new rows, delete the rows that left (the MERGE's
    ``WHEN NOT MATCHED BY SOURCE`` cannot name them, so the deletions ride in the source)."""
    if diff.source is None and diff.delete_keys is None:
        return TableChange(diff.table, 0, 0, 0, None)
    spec = catalogue.spec(diff.table)
    name = catalogue.table_name(cfg, diff.table)
    _allow_rewrites(spark, name)
    written = _compared(spec)
    parts = []
    if diff.source is not None:
        parts.append(diff.source.withColumn("_delete", F.lit(False)))
    if diff.delete_keys is not None:
        deletions = diff.delete_keys
        for c in spec.written_columns:
            if c.name not in key:
                deletions = deletions.withColumn(c.name, F.lit(None).cast(c.type))
        parts.append(deletions.select(*written).withColumn("_delete", F.lit(True)))
    source = parts[0]
    for more in parts[1:]:
        source = source.unionByName(more)
    condition = " AND ".join(f"t.`{c}` <=> s.`{c}`" for c in key)
    values: dict[str, str | Column] = {f"`{c}`": f"s.`{c}`" for c in written}
    inserted = dict(values)
    if spec.version_column is not None:
        # A log's key (not its version) matches every version of the key: all are updated or
        # deleted, and keep their versions, so the latest stays the latest. A new key starts at
        # 0, not above its fold state's version, which its next row takes
        # (lib/offsetscope/spark/tables.py, GROUPS_CURRENT).
        inserted[f"`{spec.version_column}`"] = "0"
    (
        DeltaTable.forName(spark, name)
        .alias("t")
        .merge(source.alias("s"), condition)
        .whenMatchedDelete(condition="s._delete")
        .whenMatchedUpdate(set=values)
        .whenNotMatchedInsert(condition="NOT s._delete", values=inserted)
        .execute()
    )
    version = int(DeltaTable.forName(spark, name).history(1).collect()[0]["version"])
    return TableChange(diff.table, diff.inserted, diff.updated, diff.deleted, version)


def _allow_rewrites(spark: SparkSession, name: str) -> None:
    """Decoded tables created append-only by an earlier offsetscope take updates and deletes
    from this job only: their property is turned off once (a metadata commit of its own)."""
    props = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}
    if props.get("delta.appendOnly") == "true":
        spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('delta.appendOnly' = 'false')")


def _save_states(
    spark: SparkSession,
    cfg: Config,
    states: Mapping[tuple[str, str], Any],
    batches: Mapping[tuple[str, str], int],
    owners: Mapping[str, set[str]],
    now_ms: int,
    cluster: str,
) -> TableChange:
    """The refolded keys' fold states of ``cluster``, in one commit (keys left without a state
    are deleted)."""
    records = [
        {
            "fold": fold,
            "key": key,
            "state": state.to_json(),
            "last_offset": state.last_offset,
            "updated_batch_id": batches.get((fold, key)),
            "updated_at": now_ms,
        }
        for (fold, key), state in sorted(states.items())
    ]
    gone = [
        (fold, key)
        for fold, keys in owners.items()
        for key in sorted(keys)
        if (fold, key) not in states
    ]
    if not records and not gone:
        return TableChange(st.STATE, 0, 0, 0, None)
    name = catalogue.table_name(cfg, st.STATE)
    wanted: dict[str, list[str]] = {}
    for fold, key in [*states, *gone]:
        wanted.setdefault(fold, []).append(key)
    # Each key's state (its latest version); the MERGE below writes every row of a key, so
    # the key's rows agree again, at one version past the one they replace.
    stored = st.load(spark, cfg, wanted, cluster=cluster)
    changed = []
    for r in records:
        old = stored.get((r["fold"], r["key"]))
        if old is None or old.state != r["state"]:
            changed.append({**r, st.SEQ: 0 if old is None else (old.seq or 0) + 1})
    records = changed
    gone = [k for k in gone if k in stored]
    if not records and not gone:
        return TableChange(st.STATE, 0, 0, 0, None)
    inserted = sum(1 for r in records if (r["fold"], r["key"]) not in stored)
    parts = []
    if records:
        parts.append(
            writes.records_frame(spark, st.STATE, records, cluster=cluster).withColumn(
                "_delete", F.lit(False)
            )
        )
    if gone:
        rows = [
            {"fold": f, "key": k, "state": "", "last_offset": None, "updated_batch_id": None,
             "updated_at": now_ms}
            for f, k in gone
        ]  # fmt: skip
        parts.append(
            writes.records_frame(spark, st.STATE, rows, cluster=cluster).withColumn(
                "_delete", F.lit(True)
            )
        )
    source = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
    cols = [c.name for c in catalogue.spec(st.STATE).written_columns]
    values: dict[str, str | Column] = {f"`{c}`": f"s.`{c}`" for c in cols}
    (
        DeltaTable.forName(spark, name)
        .alias("t")
        .merge(source.alias("s"), catalogue.FOLD_STATE.merge_condition("t", "s"))
        .whenMatchedDelete(condition="s._delete")
        .whenMatchedUpdate(set=values)
        .whenNotMatchedInsert(condition="NOT s._delete", values=values)
        .execute()
    )
    version = int(DeltaTable.forName(spark, name).history(1).collect()[0]["version"])
    return TableChange(st.STATE, inserted, len(records) - inserted, len(gone), version)


# ----------------------------------------------------------------------------- the job


def redecode(
    spark: SparkSession,
    cfg: Config,
    *,
    since: int | None = None,
    tables: Sequence[str] | None = None,
    stop_ingest: bool = False,
    clock: Clock | None = None,
) -> RedecodeReport:
    """Re-decode ``raw_records`` and replace what changed (see the module docstring).

    Args:
        spark: the session.
        cfg: the configuration (table names, the ingest query's name and source).
        since: only records stored at or after this time (epoch ms) are decoded again; their
            keys are still folded from all their records.
        tables: the tables to rewrite (default :data:`TABLES`; ``fold_state`` follows the
            history tables).
        stop_ingest: stop the ingest query of this session between two batches first.
        clock: for the fold states' ``updated_at`` and the guard.

    Raises:
        IngestRunningError: the ingest query is running (see :func:`ensure_not_running`).
        ValueError: an unknown table name.
    """
    clock = clock or SystemClock()
    began = time.monotonic()
    wanted = tuple(tables) if tables else TABLES
    unknown = sorted(set(wanted) - set(TABLES))
    if unknown:
        raise ValueError(f"cannot redecode {', '.join(unknown)} (tables: {', '.join(TABLES)})")
    now = clock.now_ms()
    notes = ensure_not_running(spark, cfg, now, stop_ingest=stop_ingest)
    catalogue.ensure_tables(spark, cfg)

    records = 0
    now_decoded: Counter[str] = Counter()
    newly_quarantined = differ = 0
    groups: set[str] = set()
    txns: set[str] = set()
    results: list[TableChange] = []
    # Each cluster's records, rows and fold states apart: its own commits.
    for name, source in config.clusters(cfg).items():
        part = _redecode_cluster(spark, cfg, name, source, since, wanted, now)
        records += part.records
        now_decoded.update(part.now_decoded)
        newly_quarantined += part.newly_quarantined
        differ += part.values_differ
        groups.update(part.groups)
        txns.update(part.transactional_ids)
        results.extend(part.tables)
    return RedecodeReport(
        records=records,
        since=since,
        now_decoded=dict(now_decoded),
        newly_quarantined=newly_quarantined,
        values_differ=differ,
        groups=tuple(sorted(groups)),
        transactional_ids=tuple(sorted(txns)),
        tables=tuple(results),
        seconds=time.monotonic() - began,
        notes=tuple(notes),
    )


def _redecode_cluster(
    spark: SparkSession,
    cfg: Config,
    cluster: str,
    source: ClusterConfig,
    since: int | None,
    wanted: Sequence[str],
    now: int,
) -> RedecodeReport:
    """:func:`redecode` of one cluster's records (its report without the notes and time)."""
    raw = _raw_source(spark, cfg, since, cluster).persist(StorageLevel.MEMORY_AND_DISK)
    decoded = _decoded_with_batch(raw).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        records = raw.count()
        diffs: list[_Diff] = []
        extra = {
            "ingest_batch_id": F.col("ingest_batch_id"),
            catalogue.CLUSTER: F.lit(cluster),
        }
        for table in catalogue.SILVER_TABLES:
            new = dec.silver_frame(decoded, table, extra)
            diffs.append(_silver_diff(spark, cfg, table.logical, new, since, cluster))
        changed = [c for d in diffs for c in d.changed]
        now_decoded, newly_quarantined, differ = _summarise(changed)
        owners = _owners(decoded, changed)
    finally:
        decoded.unpersist()
        raw.unpersist()

    silver_key = (*_COORDS, catalogue.CLUSTER)
    results = [_write(spark, cfg, d, silver_key) for d in diffs if d.table in wanted]
    groups, txns = owners[step.GROUP], owners[step.TXN]
    if (groups or txns) and any(t in wanted for t in HISTORY):
        read_committed_source = (
            source.kind == sources.KAFKA and source.kafka.isolation_level == "read_committed"
        )
        outputs, states, batches = _refold(spark, cfg, groups, txns, read_committed_source, cluster)
        for logical in HISTORY:
            if logical not in wanted:
                continue
            owner_column = "group_id" if logical in GROUP_TABLES else "transactional_id"
            keys = groups if logical in GROUP_TABLES else txns
            if not keys:
                continue
            d = _history_diff(
                spark, cfg, logical, getattr(outputs, logical), owner_column, keys, cluster
            )
            results.append(_write(spark, cfg, d, catalogue.spec(logical).key))
        results.append(_save_states(spark, cfg, states, batches, owners, now, cluster))
    return RedecodeReport(
        records=records,
        since=since,
        now_decoded=now_decoded,
        newly_quarantined=newly_quarantined,
        values_differ=differ,
        groups=tuple(sorted(groups)),
        transactional_ids=tuple(sorted(txns)),
        tables=tuple(results),
        seconds=0.0,
        notes=(),
    )


def _summarise(changed: Sequence[dict[str, Any]]) -> tuple[dict[str, int], int, int]:
    """(quarantined before and decoded now, by kind; decoded before and quarantined now;
    decoded before and now to different values)."""
    by_record: dict[tuple[str, int, int], dict[str, str]] = {}
    for c in changed:
        coords = (c["internal_topic"], c["record_partition"], c["record_offset"])
        by_record.setdefault(coords, {})[c["table"]] = c["change"]
    now_decoded: Counter[str] = Counter()
    quarantined = differ = 0
    for tables in by_record.values():
        left = tables.get("quarantine") == "deleted"
        entered = tables.get("quarantine") == "inserted"
        if left:
            kind = next((t for t, ch in tables.items() if ch == "inserted"), "dropped")
            now_decoded[kind] += 1
        elif entered:
            quarantined += 1
        elif any(ch in ("updated", "inserted") for ch in tables.values()):
            differ += 1
    return dict(now_decoded), quarantined, differ
