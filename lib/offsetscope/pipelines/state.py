"""The folds' state between micro-batches: the ``fold_state`` table, read and written per key.

One row per (fold, key) -- ``offsets``/partition, ``group``/group id, ``txn``/transactional id,
``share``/share-partition (group:topic id:partition),
``positions``/data partition, ``samples``/data partition, ``lso``/data partition,
``source``/internal-topic partition, ``lease``/query name --
holding the fold's frozen state as JSON (:mod:`offsetscope.history.codec`), each in its
cluster: the same group id in two clusters is two keys. A micro-batch loads
only the keys its records touch (one filtered read; Delta skips files by the key statistics) and
writes back only the keys whose state changed, by MERGE under the batch's idempotency marks.
The table is the source of truth: a restarted query, or another process, picks up exactly the
state the last committed batch left.

A batch's state MERGE runs beside its table writes (:mod:`offsetscope.pipelines.batch`), so a
batch that failed may have saved its states and not all its rows. Its replay therefore reads
the states as they were before its own MERGE: :func:`replay_version` finds that MERGE by its
commit mark (:mod:`offsetscope.spark.writes`) and :func:`load` reads the table at the Delta
version before it (time travel), so the replay folds from the same states as the failed run
and yields the same rows, which its idempotent writes then complete.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import SparkSession

from offsetscope.config import Config
from offsetscope.history import batch as step
from offsetscope.spark import tables as catalogue
from offsetscope.spark import writes

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
    rows = (
        table.where(f"{catalogue.CLUSTER} = {writes.sql_literal(cluster)}")
        .where(" OR ".join(predicates))
        .select("fold", "key", "state", "last_offset")
        .toArrow()
        .to_pylist()
    )
    return {
        (r["fold"], r["key"]): StateRow(r["fold"], r["key"], r["state"], r["last_offset"], cluster)
        for r in rows
    }


def replay_version(
    spark: SparkSession, cfg: Config, *, query_name: str, batch_id: int
) -> int | None:
    """The Delta version of the table to read batch ``batch_id``'s states at: the one before
    that batch's own state MERGE when it landed (the batch is a replay of one that failed after
    it), else ``None`` (the latest)."""
    table = catalogue.table_name(cfg, STATE)
    found = writes.latest_mark(spark, table, writes.app_id(query_name, STATE, "merge"))
    if found is None or found[0] < batch_id:
        return None
    marked_batch, version = found
    if marked_batch > batch_id:
        # Spark replays only the last batch it did not commit: a later batch's states mean the
        # checkpoint is older than the tables (restored, or another query's under this name).
        raise RuntimeError(
            f"{table} holds the states of batch {marked_batch} of query {query_name}, which "
            f"is replaying batch {batch_id}: its checkpoint is behind its tables"
        )
    return version - 1


def records(rows: Iterable[StateRow], *, batch_id: int, now_ms: int) -> pa.Table:
    """``rows`` as the table's written columns, stamped with the batch that wrote them."""
    return pa.Table.from_pylist(
        [
            {
                "fold": r.fold,
                "key": r.key,
                "state": r.state,
                "last_offset": r.last_offset,
                "updated_batch_id": batch_id,
                "updated_at": now_ms,
                catalogue.CLUSTER: r.cluster,
            }
            for r in rows
        ],
        schema=catalogue.arrow_schema(_SPEC),
    )


def prune(rows: Iterable[StateRow]) -> list[str]:
    """The MERGE's restriction of the table to the folds and keys of ``rows``."""
    rows = list(rows)
    found = [
        writes.in_list("fold", [r.fold for r in rows]),
        writes.in_list("key", [r.key for r in rows]),
    ]
    return [p for p in found if p is not None]


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
    """Write changed states back (MERGE on (fold, key, cluster)); returns rows written.
    ``fresh``: the batch cannot be a replay (:mod:`offsetscope.spark.writes`)."""
    rows = list(rows)
    table = records(rows, batch_id=batch_id, now_ms=now_ms)
    if not table.num_rows:
        return 0
    # Each record names its cluster: one MERGE writes the states of every cluster of a batch.
    return writes.merge(
        writes.table_frame(spark, STATE, table),
        cfg,
        STATE,
        query_name=query_name,
        batch_id=batch_id,
        prune=prune(rows),
        fresh=fresh,
    )
