"""The tables the ingest query writes reach their Delta checkpoints in different micro-batches.

Delta checkpoints a table in the commit whose version is a multiple of its
``delta.checkpointInterval``; the tables a batch writes advance a version each a batch, so the
catalogue gives each an interval of its own (``CHECKPOINT_INTERVALS`` in
``lib/offsetscope/spark/tables.py``).
"""

from __future__ import annotations

import math
from itertools import combinations

from offsetscope import config
from offsetscope.quality import tables as quality_tables
from offsetscope.spark import tables as catalogue

CFG = config.load("local")
INGEST_TABLES = (
    *catalogue.CATALOGUE.values(),
    quality_tables.QUALITY_RESULTS,
    quality_tables.QUALITY_QUARANTINE,
)


def test_every_table_the_ingest_writes_declares_its_interval() -> None:
    for table in INGEST_TABLES:
        declared = table.properties(CFG)["delta.checkpointInterval"]
        assert int(declared) == catalogue.CHECKPOINT_INTERVALS[table.logical], table.logical
    assert set(catalogue.CHECKPOINT_INTERVALS) == {t.logical for t in INGEST_TABLES}


def test_no_two_tables_share_a_factor() -> None:
    for (a, p), (b, q) in combinations(catalogue.CHECKPOINT_INTERVALS.items(), 2):
        assert math.gcd(p, q) == 1, (a, p, b, q)
        assert min(p, q) > 10, "above Delta's default, which undeclared tables keep"


def test_tables_advancing_together_checkpoint_apart() -> None:
    # The steady state: every table written by every batch from the same version on.
    intervals = list(catalogue.CHECKPOINT_INTERVALS.values())
    per_batch = [sum(1 for i in intervals if v % i == 0) for v in range(1, 5_001)]
    # Two coincide first in the batch of the two smallest intervals' product, three in that
    # of the three smallest (hours apart at a trigger of seconds).
    assert per_batch.index(2) + 1 == intervals[0] * intervals[1]
    assert per_batch.index(3) + 1 == intervals[0] * intervals[1] * intervals[2]
    assert max(per_batch) == 3
    # With Delta's default every table checkpoints in one batch out of ten.
    assert sum(per_batch) < len(per_batch) * len(intervals) / 10


def test_the_hottest_tables_replay_the_fewest_commits() -> None:
    every_batch = ("fold_state", "batch_audit", "groups_current", "offset_commits")
    rare = ("transactions", "stuck_partitions", "share_partition_state")
    hot = max(catalogue.CHECKPOINT_INTERVALS[t] for t in every_batch)
    assert all(catalogue.CHECKPOINT_INTERVALS[t] > hot for t in rare)


def test_an_existing_table_gains_its_interval_in_place() -> None:
    table = catalogue.spec("offset_commits")
    before = dict(table.properties(CFG))
    del before["delta.checkpointInterval"]
    existing = catalogue.ExistingTable(
        columns={c.name: c.type for c in table.columns},
        partition_by=table.partition_by,
        cluster_by=table.cluster_by,
        properties=before,
    )
    plan = catalogue.plan_migration(table, existing, CFG)
    assert dict(plan.properties) == {
        "delta.checkpointInterval": str(catalogue.CHECKPOINT_INTERVALS["offset_commits"])
    }
    assert not plan.incompatible
