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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

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
    spark: SparkSession, cfg: Config, wanted: Mapping[str, Iterable[str]], *, cluster: str
) -> dict[tuple[str, str], StateRow]:
    """The stored states of ``wanted`` (fold -> keys) in ``cluster``; keys without a state are
    absent.

    Args:
        spark: the micro-batch's session.
        cfg: table names.
        wanted: per fold, the keys this batch touches.
        cluster: the cluster whose states (:data:`DEPLOYMENT` for the deployment's own).
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
    rows = (
        spark.table(catalogue.table_name(cfg, STATE))
        .where(f"{catalogue.CLUSTER} = {writes.sql_literal(cluster)}")
        .where(" OR ".join(predicates))
        .select("fold", "key", "state", "last_offset")
        .toArrow()
        .to_pylist()
    )
    return {
        (r["fold"], r["key"]): StateRow(r["fold"], r["key"], r["state"], r["last_offset"], cluster)
        for r in rows
    }


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
    records: list[dict[str, Any]] = [
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
    ]
    if not records:
        return 0
    # Each record names its cluster: one MERGE writes the states of every cluster of a batch.
    source = writes.table_frame(
        spark, STATE, pa.Table.from_pylist(records, schema=catalogue.arrow_schema(_SPEC))
    )
    prune = [writes.in_list("fold", [r["fold"] for r in records])]
    keys = writes.in_list("key", [r["key"] for r in records])
    if keys is not None:
        prune.append(keys)
    return writes.merge(
        source,
        cfg,
        STATE,
        query_name=query_name,
        batch_id=batch_id,
        prune=[p for p in prune if p is not None],
        fresh=fresh,
    )
