"""The table catalogue in a real metastore (Delta tables, properties, idempotent creation, schema
drift caught) and the exactly-once writes (idempotent append and MERGE keyed by batch id)."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator

import pytest
from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession

from offsetscope import config
from offsetscope.clock import VirtualClock
from offsetscope.history.rows import EndOffsetSample, GroupCurrentRow, TxnStatusRow
from offsetscope.history.tables import TABLES as HISTORY_TABLES
from offsetscope.history.tables import as_record
from offsetscope.pipelines import state as st
from offsetscope.pipelines.writer import BatchWriter, Timings, Write
from offsetscope.quality import tables as qtables
from offsetscope.spark import tables as catalogue
from offsetscope.spark import writes

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
SOME = ("raw_records", "quarantine", "transaction_status_timeline", "end_offsets", "fold_state")


@pytest.fixture(scope="module")
def cfg(spark: SparkSession, offsetscope_config: config.Config) -> Iterator[config.Config]:
    schema = f"t_tables_{uuid.uuid4().hex[:8]}"
    cfg = dataclasses.replace(
        offsetscope_config,
        storage=dataclasses.replace(offsetscope_config.storage, schema=schema),
        tables=dataclasses.replace(offsetscope_config.tables, quarantine="bad_records"),
    )
    catalogue.ensure_tables(spark, cfg, SOME)
    try:
        yield cfg
    finally:
        spark.sql(f"DROP SCHEMA {schema} CASCADE")


def _properties(spark: SparkSession, name: str) -> dict[str, str]:
    rows = spark.sql(f"SHOW TBLPROPERTIES {name}").collect()
    return {r["key"]: r["value"] for r in rows}


def _version(spark: SparkSession, name: str) -> int:
    history = DeltaTable.forName(spark, name).history(1).collect()
    return int(history[0]["version"])


def test_catalogue_declares_every_table_of_the_design() -> None:
    assert set(catalogue.CATALOGUE) == {
        "raw_records",
        "group_metadata_events",
        "consumer_group_events",
        "transaction_log_events",
        "control_records",
        "quarantine",
        *HISTORY_TABLES,
        "fold_state",
        "batch_audit",
    }
    for spec in catalogue.CATALOGUE.values():
        names = spec.column_names
        assert len(names) == len(set(names)), spec.logical
        assert set(spec.key) <= set(names), spec.logical
        assert not (spec.partition_by and spec.cluster_by), spec.logical


def test_tables_exist_in_the_schema_with_their_layout_and_properties(
    spark: SparkSession, cfg: config.Config
) -> None:
    # Temporary views of other tests in the shared session are listed too: tables only.
    names = {
        r["tableName"]
        for r in spark.sql(f"SHOW TABLES IN {cfg.storage.schema}").collect()
        if not r["isTemporary"]
    }
    assert names == {
        "raw_records",
        "bad_records",
        "transaction_status_timeline",
        "end_offsets",
        "fold_state",
    }
    raw = catalogue.table_name(cfg, "raw_records")
    detail = DeltaTable.forName(spark, raw).detail().collect()[0]
    assert detail["format"] == "delta"
    assert list(detail["partitionColumns"]) == ["record_date"]
    props = _properties(spark, raw)
    # [maintenance.retention.raw_records] deletes old rows, which an append-only table refuses
    assert props["delta.appendOnly"] == "false"
    assert props["delta.logRetentionDuration"] == "interval 30 days"  # conf/: "30d"
    timeline = _properties(spark, catalogue.table_name(cfg, "transaction_status_timeline"))
    assert timeline["delta.enableChangeDataFeed"] == "true"
    assert timeline["delta.appendOnly"] == "false"
    fold = DeltaTable.forName(spark, catalogue.table_name(cfg, "fold_state")).detail().collect()[0]
    assert list(fold["clusteringColumns"]) == ["fold", "key"]
    quarantine = spark.table(catalogue.table_name(cfg, "quarantine"))
    assert [f.name for f in quarantine.schema.fields] == list(catalogue.QUARANTINE.column_names)


def test_ensure_tables_is_idempotent_and_catches_an_outdated_table(
    spark: SparkSession, cfg: config.Config
) -> None:
    before = _version(spark, catalogue.table_name(cfg, "end_offsets"))
    catalogue.ensure_tables(spark, cfg, ["end_offsets"])
    assert _version(spark, catalogue.table_name(cfg, "end_offsets")) == before

    outdated = dataclasses.replace(
        cfg, tables=dataclasses.replace(cfg.tables, batch_audit="old_audit")
    )
    spark.sql(
        f"CREATE TABLE {cfg.storage.schema}.old_audit (query_name string, batch_id bigint) USING DELTA"
    )
    with pytest.raises(catalogue.TableSchemaMismatchError, match="source_kind"):
        catalogue.ensure_tables(spark, outdated, ["batch_audit"])


def test_ensure_tables_adds_the_nullable_columns_a_newer_catalogue_declares(
    spark: SparkSession, cfg: config.Config
) -> None:
    """partition_lag as an earlier offsetscope created it (without both lags): the new
    nullable columns are added in place, the old rows keep their values and read them as null."""
    older = dataclasses.replace(
        cfg, tables=dataclasses.replace(cfg.tables, partition_lag="old_lag")
    )
    spec = catalogue.spec("partition_lag")
    added = ("lag_basis", "basis_reason", "lag_records_hwm", "lag_records_lso")
    old_columns = ", ".join(c.ddl for c in spec.columns if c.name not in added)
    name = catalogue.table_name(older, "partition_lag")
    spark.sql(
        f"CREATE TABLE {name} ({old_columns}) USING DELTA "
        f"PARTITIONED BY ({', '.join(spec.partition_by)})"
    )
    spark.sql(
        f"INSERT INTO {name} (group_id, topic, `partition`, as_of, read_committed, "
        "committed_offset, committed_at, data_loss, lost_records) VALUES ('g', 't', 0, "
        "timestamp_millis(1700000000000), false, 5, timestamp_millis(1700000000000), false, 0)"
    )
    catalogue.ensure_tables(spark, older, ["partition_lag"])
    fields = [f.name for f in spark.table(name).schema.fields]
    assert set(spec.column_names) <= set(fields)
    row = spark.table(name).collect()[0]
    assert (row["committed_offset"], row["lag_basis"], row["lag_records_lso"]) == (5, None, None)


def test_append_is_written_once_per_batch_id(spark: SparkSession, cfg: config.Config) -> None:
    name = catalogue.table_name(cfg, "end_offsets")
    rows = [EndOffsetSample("orders", p, 0, 10 + p, 10 + p, T0) for p in range(3)]
    df = writes.rows_frame(spark, "end_offsets", rows, cluster="default")
    writes.append(df, cfg, "end_offsets", query_name="q1", batch_id=0)
    version = _version(spark, name)
    writes.append(df, cfg, "end_offsets", query_name="q1", batch_id=0)  # a replay
    assert _version(spark, name) == version
    assert spark.table(name).count() == 3
    writes.append(df, cfg, "end_offsets", query_name="q2", batch_id=0)  # another query
    assert spark.table(name).count() == 6
    dates = {r["sampled_date"].isoformat() for r in spark.table(name).collect()}
    assert dates == {"2023-11-14"}  # the generated partition column


def test_merge_upserts_on_the_natural_key_once_per_batch_id(
    spark: SparkSession, cfg: config.Config
) -> None:
    name = catalogue.table_name(cfg, "transaction_status_timeline")

    def row(status: str, seq: int = 0) -> TxnStatusRow:
        return TxnStatusRow("t1", 2, 40, seq, T0, None, status, 5, 0, False, "test")

    first = writes.rows_frame(
        spark, "transaction_status_timeline", [row("Ongoing"), row("Empty", 1)], cluster="c"
    )
    assert writes.merge(first, cfg, "transaction_status_timeline", query_name="q", batch_id=0) == 2
    version = _version(spark, name)
    update = writes.rows_frame(
        spark, "transaction_status_timeline", [row("PrepareCommit")], cluster="c"
    )
    # Replayed batch id: skipped, nothing changes.
    assert writes.merge(update, cfg, "transaction_status_timeline", query_name="q", batch_id=0) == 0
    assert _version(spark, name) == version
    # The next batch id: the row with the same key is updated in place.
    prune = [writes.in_list("transactional_id", ["t1"])]
    assert (
        writes.merge(
            update,
            cfg,
            "transaction_status_timeline",
            query_name="q",
            batch_id=1,
            prune=[p for p in prune if p],
        )
        == 1
    )
    got = sorted((r["seq"], r["to_status"]) for r in spark.table(name).collect())
    assert got == [(0, "PrepareCommit"), (1, "Empty")]


def _end_offsets(
    spark: SparkSession, cfg: config.Config, topic: str, *, partitions: int, query: str
) -> tuple[str, DataFrame, str]:
    """The end_offsets table, rows of ``topic`` for it, and ``query``'s append app id."""
    rows = [EndOffsetSample(topic, p, 0, 5, 5, T0) for p in range(partitions)]
    df = writes.rows_frame(spark, "end_offsets", rows, cluster="default")
    name = catalogue.table_name(cfg, "end_offsets")
    return name, df, writes.app_id(query, "end_offsets", "append")


def test_a_fresh_write_carries_only_its_mark_and_a_checked_replay_finds_it(
    spark: SparkSession, cfg: config.Config
) -> None:
    name, df, application = _end_offsets(spark, cfg, "fresh", partitions=2, query="qf")
    writes.append(df, cfg, "end_offsets", query_name="qf", batch_id=7, fresh=True)
    version = _version(spark, name)
    commit = DeltaTable.forName(spark, name).history(1).collect()[0]
    assert writes.marked(commit["userMetadata"]) == (application, 7)
    # The crash case: batch 7 was written without Delta's marker; the restarted query replays
    # it as a checked write, which must find the mark in the history and write nothing.
    assert not writes.append_once(df, name, application, 7)
    assert _version(spark, name) == version
    assert writes.recorded_version(spark, name, application) == 7
    # Another query's commits in between do not hide the mark.
    writes.append(df, cfg, "end_offsets", query_name="other", batch_id=9, fresh=True)
    assert writes.written(spark, name, application, 7)
    assert not writes.written(spark, name, application, 8)
    writes.append(df, cfg, "end_offsets", query_name="qf", batch_id=8)
    assert spark.table(name).where("topic = 'fresh'").count() == 6


def test_a_checked_write_honours_delta_s_own_marker(
    spark: SparkSession, cfg: config.Config
) -> None:
    # Tables written before the userMetadata mark carry only Delta's SetTransaction.
    name, df, application = _end_offsets(spark, cfg, "legacy", partitions=1, query="ql")
    (
        df.write.format("delta")
        .mode("append")
        .option("txnAppId", application)
        .option("txnVersion", "3")
        .saveAsTable(name)
    )
    assert writes.recorded_version(spark, name, application) is None
    writes.append(df, cfg, "end_offsets", query_name="ql", batch_id=3)
    assert spark.table(name).where("topic = 'legacy'").count() == 1


def test_a_fresh_merge_is_marked_and_its_checked_replay_skipped(
    spark: SparkSession, cfg: config.Config
) -> None:
    name = catalogue.table_name(cfg, "transaction_status_timeline")
    row = TxnStatusRow("fresh-t", 2, 40, 0, T0, None, "Ongoing", 5, 0, False, "test")
    source = writes.rows_frame(spark, "transaction_status_timeline", [row], cluster="c")
    logical = "transaction_status_timeline"
    assert writes.merge(source, cfg, logical, query_name="qm", batch_id=4, fresh=True) == 1
    version = _version(spark, name)
    application = writes.app_id("qm", logical, "merge")
    assert writes.recorded_version(spark, name, application) == 4
    assert writes.merge(source, cfg, logical, query_name="qm", batch_id=4) == 0
    assert _version(spark, name) == version
    # The mark's conf is gone after the block: later commits of the session are not qm's.
    assert spark.conf.get(writes.USER_METADATA, None) is None


def test_fold_state_loads_exactly_the_keys_asked_for(
    spark: SparkSession, cfg: config.Config
) -> None:
    # Group ids are any string a client sends: quotes, backslashes, newlines, SQL words.
    odd = ["it's", "back\\slash", "new\nline", "') OR (1=1", "grüße", "g"]
    saved = [st.StateRow(st.GROUP, k, f'{{"n": {i}}}', i, "east") for i, k in enumerate(odd)]
    saved += [st.StateRow(st.OFFSETS, "g", "{}", 7, "east")]  # the same key under another fold
    # The same keys in another cluster are other states.
    west = [st.StateRow(st.GROUP, k, '{"west": true}', 99, "west") for k in odd]
    st.save(spark, cfg, [*saved, *west], query_name="q", batch_id=0, now_ms=T0)
    wanted = {st.GROUP: [*odd[:5], "absent"], st.OFFSETS: ["g"], st.TXN: []}
    loaded = st.load(spark, cfg, wanted, cluster="east")
    first = [dataclasses.replace(r, seq=0) for r in saved]
    assert loaded == {(r.fold, r.key): r for r in first if r.key != "g" or r.fold == st.OFFSETS}
    assert st.load(spark, cfg, {st.GROUP: []}, cluster="east") == {}
    in_west = st.load(spark, cfg, {st.GROUP: odd}, cluster="west")
    assert {(r.fold, r.key): dataclasses.replace(r, seq=0) for r in west} == in_west


def test_fold_state_is_a_log_whose_highest_version_is_the_state(
    spark: SparkSession, cfg: config.Config
) -> None:
    name = catalogue.table_name(cfg, st.STATE)
    key = "log-g"

    def versions() -> list[tuple[int, str]]:
        rows = spark.table(name).where(f"key = '{key}'").select("seq", "state").collect()
        return sorted((r["seq"], r["state"]) for r in rows)

    def state_of() -> st.StateRow:
        return st.load(spark, cfg, {st.GROUP: [key]}, cluster="c")[(st.GROUP, key)]

    for n in range(3):
        st.save(spark, cfg, [st.StateRow(st.GROUP, key, f'{{"n": {n}}}', n, "c")],
                query_name="log", batch_id=n, now_ms=T0, fresh=True)  # fmt: skip
    # Each save appended a version after the one it found; the last is the state.
    assert versions() == [(0, '{"n": 0}'), (1, '{"n": 1}'), (2, '{"n": 2}')]
    assert state_of() == st.StateRow(st.GROUP, key, '{"n": 2}', 2, "c", 2)
    # Compaction deletes the superseded versions only (other tests' keys may have some too).
    assert st.compact(spark, cfg) >= 2
    assert versions() == [(2, '{"n": 2}')]
    assert st.compact(spark, cfg) == 0
    assert state_of().seq == 2
    st.save(spark, cfg, [st.StateRow(st.GROUP, key, '{"n": 3}', 3, "c")], query_name="log",
            batch_id=3, now_ms=T0, fresh=True)  # fmt: skip
    assert state_of() == st.StateRow(st.GROUP, key, '{"n": 3}', 3, "c", 3)
    # A replayed save (same query and batch id) writes nothing twice.
    assert st.save(spark, cfg, [st.StateRow(st.GROUP, key, '{"n": 3}', 3, "c")],
                   query_name="log", batch_id=3, now_ms=T0) == 0  # fmt: skip
    assert versions() == [(2, '{"n": 2}'), (3, '{"n": 3}')]


def test_groups_current_is_a_log_its_view_shows_each_groups_latest_row(
    spark: SparkSession, cfg: config.Config
) -> None:
    log = catalogue.table_name(cfg, "groups_current")
    view = catalogue.view_name(cfg, "groups_current")
    assert log != view
    # The view comes with the table it shows.
    catalogue.ensure_tables(spark, cfg, ["groups_current"])

    def row(group: str, members: int) -> GroupCurrentRow:
        return GroupCurrentRow(
            group, 0, "classic", "Stable", T0, 1, "consumer", "range", "m-1", members,
            None, None, (), 0, 0, False, T0 + members,
        )  # fmt: skip

    def append(batch: int, rows: list[tuple[str, GroupCurrentRow, int]]) -> None:
        for cluster in sorted({c for c, _, _ in rows}):
            records = [{**as_record(r), catalogue.SEQ: seq} for c, r, seq in rows if c == cluster]
            frame = writes.table_frame(
                spark,
                "groups_current",
                writes.records_table("groups_current", records, cluster=cluster),
            )
            writes.append(frame, cfg, "groups_current", query_name=f"gc-{cluster}",
                          batch_id=batch, fresh=True)  # fmt: skip

    append(0, [("c", row("log-a", 1), 0), ("c", row("log-b", 5), 3), ("d", row("log-a", 7), 0)])
    append(1, [("c", row("log-a", 2), 1)])
    append(2, [("c", row("log-a", 3), 2)])

    def shown() -> dict[tuple[str, str], int]:
        got = spark.table(view).where("group_id LIKE 'log-%'").collect()
        assert "seq" not in spark.table(view).columns
        return {(r["cluster"], r["group_id"]): r["member_count"] for r in got}

    latest = {("c", "log-a"): 3, ("c", "log-b"): 5, ("d", "log-a"): 7}
    assert shown() == latest
    # The SQL the views and commands read is the view's.
    current = catalogue.current_rows(spark, cfg, "groups_current").where("group_id LIKE 'log-%'")
    assert {(r["cluster"], r["group_id"]): r["member_count"] for r in current.collect()} == latest
    # Compaction deletes the superseded rows only: a group's in another cluster is another key.
    assert st.compact(spark, cfg, catalogue.GROUPS_CURRENT) >= 2
    kept = spark.table(log).where("group_id LIKE 'log-%'").select("cluster", "group_id", "seq")
    assert sorted(tuple(r) for r in kept.collect()) == [
        ("c", "log-a", 2), ("c", "log-b", 3), ("d", "log-a", 0)
    ]  # fmt: skip
    assert shown() == latest


def test_a_replayed_batch_reads_the_states_from_before_its_own_save(
    spark: SparkSession, cfg: config.Config
) -> None:
    query, key = "replayed", "replay-g"
    st.save(spark, cfg, [st.StateRow(st.GROUP, key, '{"at": 1}', 1, "c")], query_name=query,
            batch_id=1, now_ms=T0, fresh=True)  # fmt: skip
    st.save(spark, cfg, [st.StateRow(st.GROUP, key, '{"at": 2}', 2, "c")], query_name=query,
            batch_id=2, now_ms=T0, fresh=True)  # fmt: skip
    # Another writer's commit after the batch's save is no part of the batch.
    st.save(spark, cfg, [st.StateRow(st.GROUP, "other", "{}", 0, "c")], query_name="else",
            batch_id=9, now_ms=T0, fresh=True)  # fmt: skip

    def state_at(version: int | None) -> str:
        return st.load(spark, cfg, {st.GROUP: [key]}, cluster="c", version=version)[
            (st.GROUP, key)
        ].state

    # Batch 2 failed after its save: its replay reads what batch 1 left.
    assert state_at(st.replay_version(spark, cfg, query_name=query, batch_id=2)) == '{"at": 1}'
    # Batch 3 never saved: it reads the latest.
    assert st.replay_version(spark, cfg, query_name=query, batch_id=3) is None
    assert state_at(None) == '{"at": 2}'
    # A checkpoint behind the states it would fold from is refused.
    with pytest.raises(RuntimeError, match="batch 2 of query replayed, which is replaying batch 1"):
        st.replay_version(spark, cfg, query_name=query, batch_id=1)


def test_a_fold_state_from_before_versions_gains_them_and_goes_on_as_a_log(
    spark: SparkSession, cfg: config.Config
) -> None:
    """A fold_state made when states were MERGEd (one row per key, no seq): the column is added
    in place and filled with 0, so each stored row is its key's state and the next is 1."""
    renamed = dataclasses.replace(
        cfg, tables=dataclasses.replace(cfg.tables, fold_state="old_fold_state")
    )
    spec = catalogue.spec(st.STATE)
    old = dataclasses.replace(spec, columns=tuple(c for c in spec.columns if c.name != st.SEQ))
    spark.sql(catalogue.create_table_sql(renamed, old))
    name = catalogue.table_name(renamed, st.STATE)
    spark.sql(
        f"INSERT INTO {name} (fold, key, state, last_offset, updated_batch_id, updated_at, "
        f"{catalogue.CLUSTER}) VALUES ('group', 'g', '{{}}', 5, 7, timestamp_millis({T0}), 'c')"
    )
    before = catalogue.delta_version(spark, name)
    catalogue.ensure_tables(spark, renamed, [st.STATE])
    assert [r["seq"] for r in spark.table(name).collect()] == [0]
    # A replay across the upgrade reads a version without the column: its rows are version 0.
    old_state = st.load(spark, renamed, {st.GROUP: ["g"]}, cluster="c", version=before)
    assert old_state[(st.GROUP, "g")] == st.StateRow(st.GROUP, "g", "{}", 5, "c", 0)
    assert st.load(spark, renamed, {st.GROUP: ["g"]}, cluster="c")[(st.GROUP, "g")].seq == 0
    st.save(spark, renamed, [st.StateRow(st.GROUP, "g", '{"new": 1}', 6, "c")],
            query_name="q", batch_id=8, now_ms=T0, fresh=True)  # fmt: skip
    assert st.load(spark, renamed, {st.GROUP: ["g"]}, cluster="c")[(st.GROUP, "g")] == (
        st.StateRow(st.GROUP, "g", '{"new": 1}', 6, "c", 1)
    )


def test_a_table_from_before_clusters_gains_the_column_filled_with_the_default_cluster(
    spark: SparkSession, cfg: config.Config
) -> None:
    """end_offsets (appended to) and groups_current as an offsetscope without clusters
    created them: the cluster column is added in place, every old row is the default
    cluster's ([sources] cluster), and the append-only flag is the declared one afterwards."""
    renamed = dataclasses.replace(
        cfg,
        sources=dataclasses.replace(cfg.sources, cluster="prod-eu"),
        tables=dataclasses.replace(
            cfg.tables, end_offsets="old_end_offsets", groups_current_log="old_groups_current"
        ),
    )
    for logical in ("end_offsets", "groups_current"):
        spec = catalogue.spec(logical)
        old = dataclasses.replace(
            spec,
            columns=tuple(c for c in spec.columns if c.name != catalogue.CLUSTER),
            key=tuple(k for k in spec.key if k != catalogue.CLUSTER),
        )
        spark.sql(catalogue.create_table_sql(renamed, old))
    samples = catalogue.table_name(renamed, "end_offsets")
    spark.sql(
        f"INSERT INTO {samples} (topic, `partition`, log_start_offset, high_watermark, "
        "last_stable_offset, sampled_at) VALUES ('orders', 0, 0, 10, 10, "
        "timestamp_millis(1700000000000))"
    )
    current = catalogue.table_name(renamed, "groups_current")
    spark.sql(
        f"INSERT INTO {current} (group_id, group_life, kind, member_count, rebalance_times, "
        "rebalances_1h, rebalances_24h, deleted, updated_at) VALUES ('g', 0, 'classic', 1, "
        "array(), 0, 0, false, timestamp_millis(1700000000000))"
    )
    catalogue.ensure_tables(spark, renamed, ["end_offsets", "groups_current"])
    for name in (samples, current):
        assert [r[catalogue.CLUSTER] for r in spark.table(name).collect()] == ["prod-eu"]
    declared = catalogue.spec("end_offsets").properties(renamed)["delta.appendOnly"]
    assert _properties(spark, samples)["delta.appendOnly"] == declared
    # New rows of the same key in another cluster stand beside the old ones.
    sample = EndOffsetSample("orders", 0, 0, 10, 10, T0)
    more = writes.rows_frame(spark, "end_offsets", [sample], cluster="prod-us")
    writes.append(more, renamed, "end_offsets", query_name="q", batch_id=0)
    assert sorted(r[catalogue.CLUSTER] for r in spark.table(samples).collect()) == [
        "prod-eu",
        "prod-us",
    ]


def test_a_frame_append_is_gated_and_counted_fresh_or_replayed(
    spark: SparkSession, cfg: config.Config
) -> None:
    """A batch that cannot be a replay gates and counts a frame in the pass that writes it; a
    possible replay gates and counts it with jobs first. Both write the good rows, quarantine
    the bad one and record the result."""
    good = [EndOffsetSample("gated", p, 0, 10 + p, 10 + p, T0) for p in range(3)]
    bad = EndOffsetSample("gated", 9, 50, 40, -1, T0)  # high watermark below the log start
    df = writes.rows_frame(spark, "end_offsets", [*good, bad], cluster="default")
    writer = BatchWriter(cfg, "q_gated", VirtualClock(T0))
    for batch_id, fresh in ((0, True), (1, False)):
        timings = Timings()
        with writer.open(spark, batch_id, timings, fresh=fresh) as batch:
            batch.start([Write("end_offsets", False, df, None)])
            assert batch.finish() == {"end_offsets": len(good)}
        assert "quality end_offsets" in timings.seconds
    name = catalogue.table_name(cfg, "end_offsets")
    assert spark.table(name).where("topic = 'gated'").count() == 2 * len(good)
    results = spark.table(qtables.qualified_name(cfg, qtables.QUALITY_RESULTS)).where(
        "table_name = 'end_offsets'"
    )
    assert sorted(
        (r["batch_id"], r["evaluated_rows"], r["failed_rows"]) for r in results.collect()
    ) == [
        (0, 4, 1),
        (1, 4, 1),
    ]
    quarantined = spark.table(qtables.qualified_name(cfg, qtables.QUALITY_QUARANTINE)).where(
        "table_name = 'end_offsets'"
    )
    assert sorted(r["batch_id"] for r in quarantined.collect()) == [0, 1]
