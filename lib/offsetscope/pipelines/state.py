"""The folds' state between micro-batches: the ``fold_state`` table, read and written per key.

One row per (fold, key) -- ``offsets``/partition, ``group``/group id, ``txn``/transactional id,
``share``/share-partition (group:topic id:partition),
``positions``/data partition, ``samples``/data partition, ``lso``/data partition,
``source``/internal-topic partition, ``lease``/query name --
holding the fold's frozen state as JSON (:mod:`offsetscope.history.codec`). A micro-batch loads
only the keys its records touch (one filtered read; Delta skips files by the key statistics) and
writes back only the keys whose state changed, by MERGE under the batch's idempotency marker.
The table is the source of truth: a restarted query, or another process, picks up exactly the
state the last committed batch left.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from offsetscope.config import Config
from offsetscope.history import batch as step
from offsetscope.spark import tables as catalogue
from offsetscope.spark import writes

STATE = "fold_state"
# The fold step's folds (offsets, group, txn) and the pipeline's own keys.
OFFSETS, GROUP, TXN, SHARE = step.OFFSETS, step.GROUP, step.TXN, step.SHARE
POSITIONS = "positions"
SAMPLES = "samples"
SOURCE = "source"
SAMPLER = "sampler"
LSO = "lso"  # per data partition: the stuck-LSO watch (offsetscope.history.stuck.LsoWatch)
# per query name: who runs it and when its last batch ended (offsetscope.pipelines.lease)
LEASE = "lease"


@dataclass(frozen=True, slots=True)
class StateRow:
    """One fold state as stored."""

    fold: str
    key: str
    state: str  # JSON text
    last_offset: int | None


def load(
    spark: SparkSession, cfg: Config, wanted: Mapping[str, Iterable[str]]
) -> dict[tuple[str, str], StateRow]:
    """The stored states of ``wanted`` (fold -> keys); keys without a state are absent.

    Args:
        spark: the micro-batch's session.
        cfg: table names.
        wanted: per fold, the keys this batch touches.
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
        .where(" OR ".join(predicates))
        .select("fold", "key", "state", "last_offset")
        .toArrow()
        .to_pylist()
    )
    return {
        (r["fold"], r["key"]): StateRow(r["fold"], r["key"], r["state"], r["last_offset"])
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
) -> int:
    """Write changed states back (MERGE on (fold, key)); returns rows written."""
    records: list[dict[str, Any]] = [
        {
            "fold": r.fold,
            "key": r.key,
            "state": r.state,
            "last_offset": r.last_offset,
            "updated_batch_id": batch_id,
            "updated_at": now_ms,
        }
        for r in rows
    ]
    if not records:
        return 0
    source = writes.records_frame(spark, STATE, records)
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
    )
