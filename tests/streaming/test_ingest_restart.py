"""The ingest pipeline end to end on a segment directory: what lands in every table, a restart
after a batch failed half-way, and a replayed batch id.

One synthetic log (three consumer groups rebalancing and committing, two transactional producers
committing and aborting, data partitions with transactional records and markers) is ingested
twice, into two schemas:

* **interrupted**: the first part of the log is ingested and the query stops; the log grows; the
  next query fails one micro-batch after its fold state was saved and every table was written
  but the group fold's (:data:`NOT_WRITTEN`); a third query restarts from the checkpoint and
  replays that batch, which must fold from the states as they were before the failed run saved
  its own;
* **uninterrupted**: the whole log in one query.

Every table must hold the same rows in both (except what depends on when batches ran: ingest
batch ids and times, the audit, and lag samples other than the final one), and the facts the
generator wrote must be in the history tables.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from delta.tables import DeltaTable
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import MapType
from run_config import segment_run_config

from offsetscope import config
from offsetscope.pipelines import frames, ingest
from offsetscope.pipelines.batch import RepeatedRecordsError
from offsetscope.pipelines.writer import BatchWriter, BatchWrites, Timings
from offsetscope.sim.synthetic import SyntheticLog, Truth, Workload
from offsetscope.spark import sources
from offsetscope.spark import tables as catalogue

pytestmark = [pytest.mark.spark, pytest.mark.streaming]

WORKLOAD = Workload(groups=3, members=2, rebalance_every=8, transaction_every=3, abort_every=3)
FIRST_TICKS = 14
MORE_TICKS = 10
VOLATILE = {"ingest_batch_id", "ingested_at"}
BATCH_DEPENDENT = {"fold_state", "batch_audit", "end_offsets", "partition_lag"}


# The group fold's tables: the failed batch writes none of them.
NOT_WRITTEN = frozenset(
    {"group_generations", "group_state_transitions", "groups_current", "member_sessions"}
)


class FailWithoutOneWrite(BatchWriter):
    """Fails its first batch after every write but :data:`NOT_WRITTEN`'s, the fold state's
    included."""

    failed = False
    skipped = False

    def _write_table(self, spark: SparkSession, batch_id: int, tasks: Any, *args: Any) -> Any:
        if tasks[0].logical in NOT_WRITTEN and not FailWithoutOneWrite.failed:
            FailWithoutOneWrite.skipped = True
            return tasks[0].logical, 0
        return super()._write_table(spark, batch_id, tasks, *args)

    def open(
        self, spark: SparkSession, batch_id: int, timings: Timings, *, fresh: bool = False
    ) -> BatchWrites:
        return FailAfterWrites(self, spark, batch_id, timings, fresh=fresh)


class FailAfterWrites(BatchWrites):
    """:class:`FailWithoutOneWrite`'s batch: fails once its writes have finished."""

    def finish(self) -> dict[str, int]:
        written = super().finish()
        if not FailWithoutOneWrite.failed:
            FailWithoutOneWrite.failed = True
            if not (FailWithoutOneWrite.skipped and written.get("fold_state")):
                raise AssertionError(f"the failing batch did not write as intended: {written}")
            raise RuntimeError("injected failure after the fold state, without the group tables")
        return written


def _failing_pipeline(cfg: config.Config, query: str, log_dir: Path) -> ingest.IngestPipeline:
    pipeline = ingest.IngestPipeline(cfg, query_name=query, log_dir=str(log_dir))
    pipeline.writer = FailWithoutOneWrite(cfg, query, pipeline.clock)
    return pipeline


@dataclass(frozen=True)
class Runs:
    interrupted: config.Config
    uninterrupted: config.Config
    truth: Truth
    log_dir: Path
    query: str


@pytest.fixture(scope="module")
def runs(
    spark: SparkSession,
    offsetscope_config: config.Config,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Runs]:
    root = tmp_path_factory.mktemp("ingest")
    log_dir = root / "logs"
    tag = uuid.uuid4().hex[:8]
    query = f"ingest_{tag}"
    interrupted = segment_run_config(offsetscope_config, f"t_interrupted_{tag}", root)
    uninterrupted = segment_run_config(offsetscope_config, f"t_uninterrupted_{tag}", root)
    log = SyntheticLog(log_dir, WORKLOAD)
    try:
        log.run(FIRST_TICKS)
        first = ingest.run(spark, interrupted, query_name=query, log_dir=str(log_dir))
        assert len(first) == 1
        truth = log.run(MORE_TICKS)
        failing, _ = ingest.start(
            spark,
            interrupted,
            query_name=query,
            log_dir=str(log_dir),
            pipeline=_failing_pipeline(interrupted, query, log_dir),
        )
        try:
            with pytest.raises(StreamingQueryException, match="injected failure"):
                failing.processAllAvailable()
        finally:
            failing.stop()
        assert FailWithoutOneWrite.failed
        ingest.run(spark, interrupted, query_name=query, log_dir=str(log_dir))
        ingest.run(spark, uninterrupted, query_name=query, log_dir=str(log_dir))
    finally:
        log.close()
    try:
        yield Runs(interrupted, uninterrupted, truth, log_dir, query)
    finally:
        for cfg in (interrupted, uninterrupted):
            spark.sql(f"DROP SCHEMA IF EXISTS {cfg.storage.schema} CASCADE")


def _table(spark: SparkSession, cfg: config.Config, logical: str) -> DataFrame:
    # A log of versions (groups_current) by its latest rows: how many versions a run holds
    # depends on its batches.
    return catalogue.current_rows(spark, cfg, logical)


def _stable(df: DataFrame) -> DataFrame:
    """Without the columns that depend on when batches ran; maps as sorted entry arrays (Spark
    cannot sort or hash maps, and chispa sorts rows to compare them)."""
    columns = []
    for f in df.schema.fields:
        if f.name in VOLATILE:
            continue
        if isinstance(f.dataType, MapType):
            columns.append(F.array_sort(F.map_entries(F.col(f.name))).alias(f.name))
        else:
            columns.append(F.col(f.name))
    return df.select(*columns)


@pytest.mark.parametrize(
    "logical", sorted(set(catalogue.CATALOGUE) - BATCH_DEPENDENT), ids=lambda n: n
)
def test_a_restarted_run_holds_the_same_rows_as_an_uninterrupted_one(
    spark: SparkSession, runs: Runs, logical: str
) -> None:
    restarted = _stable(_table(spark, runs.interrupted, logical))
    straight = _stable(_table(spark, runs.uninterrupted, logical))
    assert_df_equality(restarted, straight, ignore_row_order=True, ignore_nullable=True)


# Lag in seconds is interpolated between a partition's samples, and each run took one sample
# per micro-batch: the run with more batches can interpolate where the other cannot.
SAMPLE_HISTORY = ("lag_seconds", "lag_method")


def test_end_offsets_and_lag_agree_at_the_final_sample(spark: SparkSession, runs: Runs) -> None:
    for logical, column in (("end_offsets", "sampled_at"), ("partition_lag", "as_of")):
        frames = []
        for cfg in (runs.interrupted, runs.uninterrupted):
            df = _table(spark, cfg, logical)
            last = df.agg({column: "max"}).collect()[0][0]
            final = df.where(df[column] == last)
            frames.append(final.drop(*[c for c in SAMPLE_HISTORY if c in final.columns]))
        assert frames[0].count() > 0
        assert_df_equality(*frames, ignore_row_order=True, ignore_nullable=True)
    # The data topics' segments are readable, so lag in seconds is exact (the timestamp of the
    # first unconsumed record) in both runs, however often each sampled.
    for cfg in (runs.interrupted, runs.uninterrupted):
        lag = _table(spark, cfg, "partition_lag")
        final = lag.agg({"as_of": "max"}).collect()[0][0]
        methods = {r["lag_method"] for r in lag.where(lag["as_of"] == final).collect()}
        assert methods == {"exact"}


def test_history_tables_hold_what_the_log_says(spark: SparkSession, runs: Runs) -> None:
    cfg, truth = runs.uninterrupted, runs.truth
    assert _table(spark, cfg, "raw_records").count() == truth.records
    assert _table(spark, cfg, "quarantine").count() == 0
    commits = _table(spark, cfg, "offset_commits")
    assert commits.count() == truth.commits + truth.transactional_commits
    statuses = {
        (r["transactional"], r["status"]): r["count"]
        for r in commits.groupBy("transactional", "status").count().collect()
    }
    assert statuses == {
        (False, "committed"): truth.commits,
        (True, "committed"): truth.outcomes["committed"],
        (True, "aborted"): truth.outcomes["aborted"],
    }

    generations = _table(spark, cfg, "group_generations")
    per_group = {
        r["group_id"]: (r["rows"], r["last"])
        for r in generations.groupBy("group_id")
        .agg({"generation": "max", "*": "count"})
        .withColumnsRenamed({"max(generation)": "last", "count(1)": "rows"})
        .collect()
    }
    assert per_group == {g: (n, n) for g, n in truth.generations.items()}
    leaders = {
        (r["group_id"], r["generation"]): r["leader"]
        for r in generations.select("group_id", "generation", "leader").collect()
    }
    assert all(leader is not None for leader in leaders.values())

    current = {r["group_id"]: r for r in _table(spark, cfg, "groups_current").collect()}
    assert set(current) == set(truth.generations)
    for group, row in current.items():
        assert (row["state"], row["generation"]) == ("Stable", truth.generations[group])
        assert row["member_count"] == WORKLOAD.members

    outcomes = {
        r["outcome"]: r["count"]
        for r in _table(spark, cfg, "transactions").groupBy("outcome").count().collect()
    }
    assert outcomes == dict(truth.outcomes)

    lag = _table(spark, cfg, "partition_lag")
    final = lag.agg({"as_of": "max"}).collect()[0][0]
    at_end = {
        (r["group_id"], r["topic"], r["partition"]): (r["committed_offset"], r["lag_records"])
        for r in lag.where(lag["as_of"] == final).collect()
    }
    expected = {
        key: (offset, truth.high_watermarks[(key[1], key[2])] - offset)
        for key, offset in truth.last_offsets.items()
    }
    assert at_end == expected


def test_audit_rows_add_up_in_both_runs(spark: SparkSession, runs: Runs) -> None:
    for cfg in (runs.interrupted, runs.uninterrupted):
        rows = _table(spark, cfg, "batch_audit").collect()
        assert sum(r["rows_in"] for r in rows) == runs.truth.records
        for r in rows:
            assert r["events"] + r["quarantined"] + r["unknown"] == r["rows_in"]
            assert sum(r["rows_by_kind"].values()) == r["rows_in"]
            assert r["rows_written"]["raw_records"] == r["rows_in"]
            assert r["offsets_not_seen"] == 0  # a log directory has no gaps here
        # Lag rows are computed in the executors and counted by their append (a run's first
        # batch, which may be a replay, apart): both add up to the table.
        lag_rows = _table(spark, cfg, "partition_lag").count()
        assert lag_rows > 0
        assert sum(r["rows_written"].get("partition_lag", 0) for r in rows) == lag_rows
        assert sum(1 for r in rows if r["rows_written"].get("partition_lag")) == len(rows)
    batches = sorted(
        r["batch_id"] for r in _table(spark, runs.interrupted, "batch_audit").collect()
    )
    assert batches == [0, 1]  # the failed batch was replayed under the same id, audited once


def _versions(spark: SparkSession, cfg: config.Config) -> dict[str, int]:
    return {
        logical: int(
            DeltaTable.forName(spark, catalogue.table_name(cfg, logical))
            .history(1)
            .collect()[0]["version"]
        )
        for logical in catalogue.CATALOGUE
    }


def test_a_replayed_batch_id_writes_nothing(spark: SparkSession, runs: Runs) -> None:
    cfg = runs.uninterrupted
    before = _versions(spark, cfg)
    counts = {n: _table(spark, cfg, n).count() for n in catalogue.CATALOGUE}
    # The uninterrupted run read the whole log as batch 0; run batch 0 again with a new
    # pipeline instance (as a restarted query would).
    batch = sources.read_segments(spark, cfg, str(runs.log_dir))
    pipeline = ingest.IngestPipeline(cfg, query_name=runs.query, log_dir=str(runs.log_dir))
    pipeline.process_batch(batch, 0)

    assert _versions(spark, cfg) == before
    assert {n: _table(spark, cfg, n).count() for n in catalogue.CATALOGUE} == counts
    assert pipeline.reports[0].rows_in == runs.truth.records


def _delta_marker_in_last_commit(spark: SparkSession, cfg: config.Config, logical: str) -> bool:
    """Whether the table's latest commit holds Delta's own ``txn`` (SetTransaction) action."""
    detail = spark.sql(f"DESCRIBE DETAIL {catalogue.table_name(cfg, logical)}").collect()[0]
    log = Path(str(detail["location"]).removeprefix("file:")) / "_delta_log"
    latest = max(log.glob("*.json"))
    return any(line.startswith('{"txn"') for line in latest.read_text().splitlines())


def test_a_batch_that_followed_a_completed_one_is_not_written_again_on_replay(
    spark: SparkSession, offsetscope_config: config.Config, runs: Runs, tmp_path: Path
) -> None:
    cfg = segment_run_config(offsetscope_config, f"t_fresh_{uuid.uuid4().hex[:8]}", tmp_path)
    catalogue.ensure_tables(spark, cfg)
    try:
        records = sources.read_segments(spark, cfg, str(runs.log_dir))
        # Every partition's first records, then the rest: two batches in log order.
        first, rest = records.where(F.col("offset") < 20), records.where(F.col("offset") >= 20)
        pipeline = ingest.IngestPipeline(cfg, query_name="fresh", log_dir=str(runs.log_dir))
        pipeline.process_batch(first, 0)
        assert _delta_marker_in_last_commit(spark, cfg, "raw_records")  # checked: first batch
        pipeline.process_batch(rest, 1)
        # Batch 1 followed a batch this pipeline completed: written with the commit mark only.
        assert not _delta_marker_in_last_commit(spark, cfg, "raw_records")
        before = _versions(spark, cfg)
        counts = {n: _table(spark, cfg, n).count() for n in catalogue.CATALOGUE}

        # A restart that replays batch 1 (the process died before Spark committed it).
        replay = ingest.IngestPipeline(cfg, query_name="fresh", log_dir=str(runs.log_dir))
        replay.process_batch(rest, 1)

        assert _versions(spark, cfg) == before
        assert {n: _table(spark, cfg, n).count() for n in catalogue.CATALOGUE} == counts
        assert counts["raw_records"] == runs.truth.records
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {cfg.storage.schema} CASCADE")


def test_a_record_repeated_in_a_fresh_batch_fails_it_and_a_replay_gates_it(
    spark: SparkSession, offsetscope_config: config.Config, runs: Runs, tmp_path: Path
) -> None:
    """The plain commits' append takes their keys as unique when each partition is one task's
    (their order is known only once the append has decoded them): a fresh batch whose task
    repeats a record fails after its append; a possible replay, decoded and counted before its
    append, gates the repeated key instead, and writes that record's row once at most."""
    cfg = segment_run_config(offsetscope_config, f"t_repeat_{uuid.uuid4().hex[:8]}", tmp_path)
    catalogue.ensure_tables(spark, cfg)
    try:
        records = sources.read_segments(spark, cfg, str(runs.log_dir))
        first, rest = records.where(F.col("offset") < 20), records.where(F.col("offset") >= 20)
        # A plain offset commit of the batch, before its partition's last record.
        again = rest.where(F.expr(frames.PLAIN_RECORDS)).orderBy("partition", "offset").limit(1)
        (once,) = again.collect()
        assert rest.where(
            (F.col("topic") == once["topic"])
            & (F.col("partition") == once["partition"])
            & (F.col("offset") > once["offset"])
        ).count()
        # One task: the repeat follows its partition's later records.
        repeated = rest.unionByName(again).coalesce(1)

        replaying = ingest.IngestPipeline(cfg, query_name="repeat", log_dir=str(runs.log_dir))
        replaying.process_batch(repeated, 0)  # a new pipeline's batch may be a replay
        rows = _table(spark, cfg, "offset_commits").where(
            (F.col("record_partition") == once["partition"])
            & (F.col("record_offset") == once["offset"])
        )
        assert rows.count() <= 1

        pipeline = ingest.IngestPipeline(cfg, query_name="repeat_fresh", log_dir=str(runs.log_dir))
        pipeline.process_batch(first, 0)
        with pytest.raises(RepeatedRecordsError, match="twice"):
            pipeline.process_batch(repeated, 1)
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {cfg.storage.schema} CASCADE")
