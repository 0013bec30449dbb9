"""The folds' state between micro-batches: the ``fold_state`` table, read and written per key.

One state per (fold, key) -- ``offsets``/partition, ``group``/group id, ``txn``/transactional id,
``share``/share-partition (group:topic id:partition),
``positions``/data partition, ``samples``/data partition, ``lso``/data partition,
``source``/internal-topic partition, ``lease``/query name --
holding the fold's frozen state as JSON (:mod:`offsetscope.history.codec`), each in its
cluster: the same group id in two clusters is two keys. A micro-batch loads
only the keys its records touch (one filtered read; Delta skips files by the key statistics) and
writes only the keys whose state changed. The table is the source of truth: a restarted query,
or another process, picks up exactly the state the last committed batch left.

**A log, compacted.** A batch *appends* its changed states, each with ``seq``, the key's
version: one more than the state it replaces (0 for a key's first). A key's state is its row
with the highest ``seq`` (:func:`load`, :func:`latest`); older rows are superseded and removed
by :func:`compact` (every ``[pipeline] state_compaction_batches`` batches, and by ``offsetscope
maintain``). An append is one blind Delta commit; a MERGE of the same rows reads the target's
files that hold the keys and rewrites them -- a dozen Spark jobs, the longest write of a small
batch (docs/benchmarks.md, small_batch_s). Rows written by a MERGE outside the query (a redecode)
update every row of their key, so the rule still holds; a table from before ``seq`` existed has
one row per key, filled with 0.

A batch's states are appended beside its table writes (:mod:`offsetscope.pipelines.batch`), so a
batch that failed may have saved its states and not all its rows. Its replay therefore reads
the states as they were before its own append: :func:`replay_version` finds that commit by its
mark (:mod:`offsetscope.spark.writes`) and :func:`load` reads the table at the Delta
version before it (time travel), so the replay folds from the same states as the failed run,
gives them the same versions and yields the same rows, which its idempotent writes then
complete.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from offsetscope.config import Config
from offsetscope.history import batch as step
from offsetscope.history.codec import evolve
from offsetscope.spark import maintenance, writes
from offsetscope.spark import tables as catalogue

STATE = "fold_state"
_SPEC = catalogue.FOLD_STATE
# The fold step's folds (offsets, group, txn) and the pipeline's own keys.
OFFSETS, GROUP, TXN, SHARE = step.OFFSETS, step.GROUP, step.TXN, step.SHARE
POSITIONS = "positions"
SAMPLES = "samples"
SOURCE = "source"
SAMPLER = "sampler"
LSO = "lso"  # per data partition: the stuck-LSO watch (offsetscope.history.stuck.LsoWatch)
# per query name: who runs it and when its last batch ended (offsetscope.pipelines.lease)
LEASE = "lease"
# The cluster of rows that belong to the deployment rather than to one cluster (a lease).
DEPLOYMENT = ""


@dataclass(frozen=True, slots=True)
class StateRow:
    """One fold state as stored."""

    fold: str
    key: str
    state: str  # JSON text
    last_offset: int | None
    cluster: str
    # The key's version (module docstring); None until the batch that writes it assigns it.
    seq: int | None = None


SEQ = "seq"
# The operation of the query's state writes in their commit marks (offsetscope.spark.writes);
# "merge" is that of versions that MERGEd the states, whose marks a replay also looks for.
_WRITE, _OLD_WRITE = "append", "merge"
_KEY = (catalogue.CLUSTER, "fold", "key")


def latest(frame: DataFrame) -> DataFrame:
    """Each key's state of ``fold_state`` rows: the row with the highest ``seq`` (module
    docstring), one per (cluster, fold, key), with the table's columns."""
    columns = [c for c in frame.columns if c not in _KEY]
    picked = F.max_by(F.struct(*columns), F.coalesce(F.col(SEQ), F.lit(-1)))
    return frame.groupBy(*_KEY).agg(picked.alias("_s")).select(*_KEY, "_s.*")


def load(
    spark: SparkSession,
    cfg: Config,
    wanted: Mapping[str, Iterable[str]],
    *,
    cluster: str,
    version: int | None = None,
) -> dict[tuple[str, str], StateRow]:
    """The stored states of ``wanted`` (fold -> keys) in ``cluster``; keys without a state are
    absent.

    Args:
        spark: the micro-batch's session.
        cfg: table names.
        wanted: per fold, the keys this batch touches.
        cluster: the cluster whose states (:data:`DEPLOYMENT` for the deployment's own).
        version: read the table as of this Delta version (:func:`replay_version`); the latest
            when ``None``.
    """
    # One SQL expression, parsed once by the JVM: Column.isin sends every key through py4j on its
    # own, a round trip per key of a large batch (docs/benchmarks.md, "Measurements behind design
    # choices").
    predicates = [
        f"(fold = {writes.sql_literal(fold)} AND key IN ({', '.join(map(writes.sql_literal, ks))}))"
        for fold, keys in wanted.items()
        if (ks := sorted(set(keys)))
    ]
    if not predicates:
        return {}
    name = catalogue.table_name(cfg, STATE)
    table = (
        spark.table(name)
        if version is None
        else spark.sql(f"SELECT * FROM {name} VERSION AS OF {version}")
    )
    if SEQ not in table.columns:
        # A version from before the log (a replay across the upgrade): one row per key.
        table = table.withColumn(SEQ, F.lit(0).cast("bigint"))
    rows = (
        latest(
            table.where(f"{catalogue.CLUSTER} = {writes.sql_literal(cluster)}")
            .where(" OR ".join(predicates))
            .select(*_KEY, "state", "last_offset", SEQ)
        )
        .toArrow()
        .to_pylist()
    )
    return {
        (r["fold"], r["key"]): StateRow(
            r["fold"], r["key"], r["state"], r["last_offset"], cluster, r[SEQ] or 0
        )
        for r in rows
    }


def versioned(
    rows: Iterable[StateRow], before: Mapping[tuple[str, str, str], StateRow | None]
) -> list[StateRow]:
    """``rows`` with their versions: one more than the state each replaces in ``before``
    ((cluster, fold, key) -> the stored state, None for a key that has none), 0 for a new key.
    A key written twice keeps its last row.

    Raises:
        KeyError: a key of ``rows`` is not in ``before`` (its stored state was not looked up).
    """
    out: dict[tuple[str, str, str], StateRow] = {}
    for row in rows:
        key = (row.cluster, row.fold, row.key)
        previous = before[key]
        seq = 0 if previous is None else (previous.seq or 0) + 1
        out[key] = evolve(row, seq=seq)
    return list(out.values())


def load_keys(
    spark: SparkSession,
    cfg: Config,
    keys: Iterable[tuple[str, str, str]],
    version: int | None = None,
) -> dict[tuple[str, str, str], StateRow | None]:
    """The stored states of (cluster, fold, key) triples of any clusters; None where absent."""
    wanted: dict[str, dict[str, set[str]]] = {}
    for cluster, fold, key in keys:
        wanted.setdefault(cluster, {}).setdefault(fold, set()).add(key)
    out: dict[tuple[str, str, str], StateRow | None] = {}
    for cluster, folds in wanted.items():
        found = load(spark, cfg, folds, cluster=cluster, version=version)
        for fold, ks in folds.items():
            for k in ks:
                out[(cluster, fold, k)] = found.get((fold, k))
    return out


def replay_version(
    spark: SparkSession, cfg: Config, *, query_name: str, batch_id: int
) -> int | None:
    """The Delta version of the table to read batch ``batch_id``'s states at: the one before
    that batch's own state write when it landed (the batch is a replay of one that failed after
    it), else ``None`` (the latest)."""
    table = catalogue.table_name(cfg, STATE)
    marks = [
        found
        for operation in (_WRITE, _OLD_WRITE)
        if (found := writes.latest_mark(spark, table, writes.app_id(query_name, STATE, operation)))
    ]
    if not marks:
        return None
    marked_batch, version = max(marks, key=lambda m: m[1])
    if marked_batch < batch_id:
        return None
    if marked_batch > batch_id:
        # Spark replays only the last batch it did not commit: a later batch's states mean the
        # checkpoint is older than the tables (restored, or another query's under this name).
        raise RuntimeError(
            f"{table} holds the states of batch {marked_batch} of query {query_name}, which "
            f"is replaying batch {batch_id}: its checkpoint is behind its tables"
        )
    return version - 1


def records(rows: Iterable[StateRow], *, batch_id: int, now_ms: int) -> pa.Table:
    """``rows`` (versioned: :func:`versioned`) as the table's written columns, stamped with the
    batch that wrote them."""
    rows = list(rows)
    for r in rows:
        if r.seq is None:
            raise ValueError(f"fold state {r.fold}/{r.key} of {r.cluster!r} has no version")
    # Column by column: a batch writes a state per group it touched, and a dict per row
    # (Arrow's from_pylist) cost about 1.7 times the columns for 10,000 group states.
    columns: dict[str, list[Any]] = {
        "fold": [r.fold for r in rows],
        "key": [r.key for r in rows],
        "state": [r.state for r in rows],
        "last_offset": [r.last_offset for r in rows],
        "updated_batch_id": [batch_id] * len(rows),
        "updated_at": [now_ms] * len(rows),
        catalogue.CLUSTER: [r.cluster for r in rows],
        SEQ: [r.seq for r in rows],
    }
    schema = catalogue.arrow_schema(_SPEC)
    return pa.Table.from_arrays([pa.array(columns[f.name], f.type) for f in schema], schema=schema)


def save(
    spark: SparkSession,
    cfg: Config,
    rows: Iterable[StateRow],
    *,
    query_name: str,
    batch_id: int,
    now_ms: int,
    fresh: bool = False,
) -> int:
    """Append states written outside a micro-batch (a lease's release, a query's clusters),
    versioned after the stored ones; returns rows written (0: the write was a replay of one
    that landed). ``fresh``: the write cannot be a replay (:mod:`offsetscope.spark.writes`)."""
    rows = list(rows)
    if not rows:
        return 0
    before = load_keys(spark, cfg, [(r.cluster, r.fold, r.key) for r in rows])
    table = records(versioned(rows, before), batch_id=batch_id, now_ms=now_ms)
    appended = writes.append_once(
        writes.table_frame(spark, STATE, table),
        catalogue.table_name(cfg, STATE),
        writes.app_id(query_name, STATE, _WRITE),
        batch_id,
        fresh=fresh,
    )
    return table.num_rows if appended else 0


def compact(spark: SparkSession, cfg: Config, table: catalogue.TableSpec = _SPEC) -> int:
    """Delete the superseded states (a key's rows below its highest ``seq``:
    :func:`offsetscope.spark.maintenance.compaction_sql`), or the superseded rows of another
    log of versions (``table``: ``groups_current``); returns the rows deleted. Safe beside
    a running query: its appends are blind, so they do not conflict with this delete, and a row
    they add is never below the rows deleted here."""
    metrics = spark.sql(maintenance.compaction_sql(cfg, table)).collect()
    return int((metrics[0].asDict().get("num_deleted_rows") or 0) if metrics else 0)
