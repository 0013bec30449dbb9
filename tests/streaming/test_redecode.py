"""``offsetscope redecode`` on tables an older decoder wrote: what it quarantined decodes now.

The ``steady`` scenario is ingested by today's pipeline (schema A). Schema B is a clone of it
turned into what a decoder that did not know the group's ``GroupMetadataValue`` version wrote
(``tests/support/redecode_support.py``): those records in quarantine, the group's history
folded without them. Re-decoding B must give back A: the records leave quarantine, the decoded
table and the group's history gain them, nothing else changes -- each changed table in one
Delta commit, every other table untouched.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator

import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from redecode_support import OlderState, clone_all, older_decoder_tables, table_rows
from run_config import segment_run_config

from offsetscope import config
from offsetscope.clock import VirtualClock
from offsetscope.pipelines import ingest, lease, redecode
from offsetscope.pipelines import state as st
from offsetscope.sim.scenarios.run import simulate_to
from offsetscope.spark import tables as catalogue

pytestmark = [pytest.mark.spark, pytest.mark.streaming]

GROUP = "billing"
# Tables whose rows the history folds or the decoder write (fold_state and batch_audit carry
# bookkeeping of their own: compared apart).
COMPARED = [t for t in catalogue.CATALOGUE if t not in (st.STATE, "batch_audit")]


@pytest.fixture(scope="module")
def schemas(
    spark: SparkSession, offsetscope_config: config.Config, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[config.Config, config.Config, OlderState]]:
    root = tmp_path_factory.mktemp("redecode")
    simulate_to("steady", out=root / "logs")
    tag = uuid.uuid4().hex[:8]
    today = config.with_segment_source(
        segment_run_config(offsetscope_config, f"t_redecode_a_{tag}", root), root / "logs"
    )
    ingest.run(spark, today, query_name="redecode_a")
    older = segment_run_config(offsetscope_config, f"t_redecode_b_{tag}", root)
    older = dataclasses.replace(
        older, pipeline=dataclasses.replace(older.pipeline, query_name="redecode_a")
    )
    clone_all(spark, today, older)
    state = older_decoder_tables(spark, older, GROUP)
    try:
        yield today, older, state
    finally:
        for cfg in (today, older):
            spark.sql(f"DROP SCHEMA IF EXISTS {catalogue.schema_name(cfg)} CASCADE")


def _versions(spark: SparkSession, cfg: config.Config) -> dict[str, int]:
    return {
        t: int(
            DeltaTable.forName(spark, catalogue.table_name(cfg, t)).history(1).first()["version"]
        )
        for t in catalogue.CATALOGUE
    }


def _states(spark: SparkSession, cfg: config.Config) -> set[tuple[str, str, str, int | None]]:
    df = spark.table(catalogue.table_name(cfg, st.STATE)).where("fold <> 'lease'")
    return {
        (r[0], r[1], r[2], r[3]) for r in df.select("fold", "key", "state", "last_offset").collect()
    }


def test_the_fixture_is_what_an_older_decoder_wrote(
    spark: SparkSession, schemas: tuple[config.Config, config.Config, OlderState]
) -> None:
    today, older, state = schemas
    quarantined = spark.table(catalogue.table_name(older, "quarantine")).collect()
    assert len(quarantined) == len(state.coordinates) > 0
    assert {r["disposition"] for r in quarantined} == {catalogue.SKIPPED_UNKNOWN}
    assert table_rows(spark, today, "quarantine") == []
    assert table_rows(spark, older, "group_generations") != table_rows(
        spark, today, "group_generations"
    )


def test_redecode_refuses_while_the_ingest_query_runs(
    spark: SparkSession, schemas: tuple[config.Config, config.Config, OlderState]
) -> None:
    _, older, _ = schemas
    live = dataclasses.replace(
        older, pipeline=dataclasses.replace(older.pipeline, query_name="redecode_live")
    )
    now = 1_700_000_600_000
    st.save(
        spark,
        live,
        [lease.lease_row(live, "redecode_live", 7, now - 1_000)],
        query_name="redecode_live",
        batch_id=7,
        now_ms=now,
    )
    before = _versions(spark, live)
    with pytest.raises(redecode.IngestRunningError, match=r"redecode_live .* is running"):
        redecode.redecode(spark, live, clock=VirtualClock(now))
    assert _versions(spark, live) == before  # nothing written
    # A query stopped cleanly holds nothing; one silent past its lease is taken as dead.
    assert not lease.running(lease.holder(spark, live, "redecode_live"), now + 3_600_000)
    lease.release(spark, live, "redecode_live", now + 1)
    assert not lease.running(lease.holder(spark, live, "redecode_live"), now + 2)


def test_what_was_quarantined_decodes_and_nothing_else_changes(
    spark: SparkSession,
    schemas: tuple[config.Config, config.Config, OlderState],
) -> None:
    today, older, state = schemas
    before = _versions(spark, older)
    report = redecode.redecode(spark, older)
    assert report.now_decoded == {"group_metadata_events": len(state.coordinates)}
    assert (report.newly_quarantined, report.values_differ) == (0, 0)
    assert report.groups == (GROUP,)
    assert report.transactional_ids == ()
    # Every table as today's pipeline wrote it.
    for logical in COMPARED:
        assert table_rows(spark, older, logical) == table_rows(spark, today, logical), logical
    assert _states(spark, older) == _states(spark, today)
    # One commit per changed table, its version reported; the others untouched.
    after = _versions(spark, older)
    written = {c.table: c.version for c in report.tables if c.version is not None}
    assert {"quarantine", "group_metadata_events", "group_generations", st.STATE} <= set(written)
    for table, version in after.items():
        if table in written:
            assert version == before[table] + 1 == written[table], table
        else:
            assert version == before[table], table
    by_table = {c.table: c for c in report.tables}
    assert by_table["quarantine"].deleted == len(state.coordinates)
    assert by_table["group_metadata_events"].inserted == len(state.coordinates)
    # Run again: nothing left to change, nothing written.
    again = redecode.redecode(spark, older)
    assert all(c.version is None for c in again.tables)
    assert _versions(spark, older) == after
