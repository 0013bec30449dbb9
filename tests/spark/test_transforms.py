"""Each transform of the pipeline on a small DataFrame, against explicit expected rows and schemas
(chispa): source rows -> decode (mapInArrow) -> bronze, silver, quarantine, offset commits; and
the segment directory read as a batch through the Python data source."""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from chispa import assert_df_equality
from chispa.schema_comparer import assert_schema_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from offsetscope import config
from offsetscope.history.commits import COLUMNS, COMMIT_SCHEMA, candidates, summarize
from offsetscope.history.events import Coordinates, OffsetCommitEvent, event_from_record
from offsetscope.history.offsets import plain_row
from offsetscope.pipelines import frames
from offsetscope.protocol import encode_record, make_record
from offsetscope.protocol.codec import decode_record
from offsetscope.protocol.consumer_protocol import encode_assignment, encode_subscription
from offsetscope.protocol.errors import DecodeError
from offsetscope.sim.synthetic import SyntheticLog, Workload
from offsetscope.spark import decode as dec
from offsetscope.spark import logdir, sources, writes
from offsetscope.spark import tables as catalogue

pytestmark = pytest.mark.spark

OFFSETS = "__consumer_offsets"
T0 = 1_700_000_000_000
UTC = dt.UTC


def _ts(ms: int) -> dt.datetime:
    # Spark returns timestamps as naive datetimes in the session time zone (UTC here).
    return dt.datetime.fromtimestamp(ms / 1000, tz=UTC).replace(tzinfo=None)


def _source(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    defaults = {
        "producer_id": -1,
        "producer_epoch": -1,
        "is_transactional": False,
        "is_control": False,
        "source_topic": None,
        "source_error": None,
    }
    full = [{**defaults, **r} for r in rows]
    for r in full:
        r["source_topic"] = r["source_topic"] or r["topic"]
    table = pa.Table.from_pylist(full, schema=catalogue.SOURCE_SCHEMA)
    df: DataFrame = spark.createDataFrame(table, schema=sources.source_spark_schema())
    return df


def _commit(
    group: str, partition: int, offset: int | None, at: int, topic_id: uuid.UUID | None = None
) -> tuple[bytes, bytes | None]:
    """An offset commit record: value v3, or v4 carrying ``topic_id``."""
    value: dict[str, Any] | None = None
    if offset is not None:
        value = {"offset": offset, "leaderEpoch": 3, "metadata": "m", "commitTimestamp": at}
        if topic_id is not None:
            value["topicId"] = topic_id
    return encode_record(
        make_record(
            OFFSETS,
            1,
            {"group": group, "topic": "orders", "partition": partition},
            value,
            3 if topic_id is None else 4,
        )
    )


def _group(generation: int) -> tuple[bytes, bytes | None]:
    member = {
        "memberId": "m-1",
        "groupInstanceId": None,
        "clientId": "c",
        "clientHost": "/10.0.0.1",
        "rebalanceTimeout": 300_000,
        "sessionTimeout": 45_000,
        "subscription": encode_subscription(0, {"topics": ["orders"], "userData": None}),
        "assignment": encode_assignment(
            0, {"assignedPartitions": [{"topic": "orders", "partitions": [0, 1]}], "userData": None}
        ),
    }
    value = {
        "protocolType": "consumer",
        "generation": generation,
        "protocol": "range",
        "leader": "m-1",
        "currentStateTimestamp": T0 - 50,
        "members": [member],
    }
    return encode_record(make_record(OFFSETS, 2, {"group": "g1"}, value, 3))


@pytest.fixture(scope="module")
def sample(spark: SparkSession) -> DataFrame:
    """Five records of one offsets partition: commits, a tombstone, group metadata, garbage."""
    k1, v1 = _commit("g1", 0, 42, T0)
    k2, v2 = _commit("g1", 1, None, T0 + 1)
    k3, v3 = _group(7)
    k4, v4 = _commit("g2", 0, 9, T0 + 3)
    rows = [
        {"topic": OFFSETS, "partition": 2, "offset": 10, "timestamp": T0, "key": k1, "value": v1},
        {
            "topic": OFFSETS,
            "partition": 2,
            "offset": 11,
            "timestamp": T0 + 1,
            "key": k2,
            "value": v2,
        },
        {
            "topic": OFFSETS,
            "partition": 2,
            "offset": 12,
            "timestamp": T0 + 2,
            "key": k3,
            "value": v3,
        },
        {
            "topic": OFFSETS,
            "partition": 2,
            "offset": 13,
            "timestamp": T0 + 3,
            "key": k4,
            "value": v4,
            "producer_id": 77,
            "producer_epoch": 1,
            "is_transactional": True,
        },
        {
            "topic": OFFSETS,
            "partition": 2,
            "offset": 14,
            "timestamp": T0 + 4,
            "key": k1,
            "value": v1[:5],  # truncated
        },
    ]
    return _source(spark, rows)


def test_decode_schema_is_the_arrow_declaration_and_rows_match_the_pure_decoder(
    spark: SparkSession, sample: DataFrame
) -> None:
    decoded = dec.decode(sample)
    assert_schema_equality(decoded.schema, dec.decoded_spark_schema(), ignore_nullable=True)
    pure = pa.Table.from_batches(
        list(dec.decode_arrow(sample.toArrow().to_batches())), schema=dec.DECODE_OUTPUT_SCHEMA
    )
    expected = spark.createDataFrame(pure, schema=dec.decoded_spark_schema())
    assert_df_equality(decoded, expected, ignore_row_order=True, ignore_nullable=True)
    kinds = {r["offset"]: r["kind"] for r in decoded.select("offset", "kind").collect()}
    assert kinds == {
        10: "offset_commit",
        11: "offset_commit",
        12: "group_metadata",
        13: "offset_commit",
        14: "error",
    }


def test_bronze_keeps_the_bytes_and_converts_the_timestamp(
    spark: SparkSession, sample: DataFrame
) -> None:
    bronze = frames.bronze_frame(
        sample.where("offset = 10"), batch_id=5, ingested_at_ms=T0 + 99, cluster="east"
    )
    k1, v1 = _commit("g1", 0, 42, T0)
    expected_schema = StructType(
        [
            StructField("topic", StringType()),
            StructField("partition", IntegerType()),
            StructField("offset", LongType()),
            StructField("timestamp", TimestampType()),
            StructField("key", BinaryType()),
            StructField("value", BinaryType()),
            StructField("ingest_batch_id", LongType()),
            StructField("ingested_at", TimestampType()),
            StructField("cluster", StringType()),
        ]
    )
    expected = spark.createDataFrame(
        [(OFFSETS, 2, 10, _ts(T0), bytearray(k1), bytearray(v1), 5, _ts(T0 + 99), "east")],
        expected_schema,
    )
    assert_df_equality(bronze.select(*expected_schema.names), expected, ignore_nullable=True)
    assert bronze.columns == [c.name for c in catalogue.RAW_RECORDS.written_columns]


def test_group_metadata_silver_rows_are_the_flattened_struct(
    spark: SparkSession, sample: DataFrame
) -> None:
    silver = dec.silver_frame(
        dec.decode(sample),
        catalogue.GROUP_METADATA_EVENTS,
        {"ingest_batch_id": F.lit(3), "cluster": F.lit("east")},
    )
    assert silver.columns == [c.name for c in catalogue.GROUP_METADATA_EVENTS.written_columns]
    member = StructType(
        [
            StructField("member_id", StringType()),
            StructField("client_host", StringType()),
            StructField("subscribed_topics", ArrayType(StringType())),
            StructField(
                "assigned_partitions",
                ArrayType(
                    StructType(
                        [
                            StructField("topic", StringType()),
                            StructField("partition", IntegerType()),
                        ]
                    )
                ),
            ),
        ]
    )
    expected_schema = StructType(
        [
            StructField("internal_topic", StringType()),
            StructField("record_partition", IntegerType()),
            StructField("record_offset", LongType()),
            StructField("record_timestamp", TimestampType()),
            StructField("record_type", ShortType()),
            StructField("value_version", ShortType()),
            StructField("group_id", StringType()),
            StructField("generation", IntegerType()),
            StructField("leader", StringType()),
            StructField("members", ArrayType(member)),
            StructField("ingest_batch_id", LongType()),
        ]
    )
    expected = spark.createDataFrame(
        [
            (
                OFFSETS,
                2,
                12,
                _ts(T0 + 2),
                2,
                3,
                "g1",
                7,
                "m-1",
                [("m-1", "/10.0.0.1", ["orders"], [("orders", 0), ("orders", 1)])],
                3,
            )
        ],
        expected_schema,
    )
    actual = silver.select(
        *[c for c in expected_schema.names if c != "members"][:-1],
        F.transform(
            "members",
            lambda m: F.struct(
                m["member_id"].alias("member_id"),
                m["client_host"].alias("client_host"),
                m["subscribed_topics"].alias("subscribed_topics"),
                m["assigned_partitions"].alias("assigned_partitions"),
            ),
        ).alias("members"),
        "ingest_batch_id",
    )
    assert_df_equality(actual, expected, ignore_nullable=True)


def test_quarantine_rows_carry_bytes_coordinates_error_and_disposition(
    spark: SparkSession, sample: DataFrame
) -> None:
    q = dec.silver_frame(
        dec.decode(sample),
        catalogue.QUARANTINE,
        {"ingest_batch_id": F.lit(1), "cluster": F.lit("east")},
    )
    k1, v1 = _commit("g1", 0, 42, T0)
    expected_schema = StructType(
        [
            StructField("record_offset", LongType()),
            StructField("kind", StringType()),
            StructField("error_class", StringType()),
            StructField("field_path", StringType()),
            StructField("key", BinaryType()),
            StructField("value", BinaryType()),
            StructField("disposition", StringType()),
        ]
    )
    expected = spark.createDataFrame(
        [
            (
                14,
                "error",
                "TruncatedError",
                "value.offset",
                bytearray(k1),
                bytearray(v1[:5]),
                catalogue.QUARANTINED,
            )
        ],
        expected_schema,
    )
    assert_df_equality(q.select(*expected_schema.names), expected, ignore_nullable=True)
    row = q.collect()[0]
    assert row["byte_offset"] == 2  # the offset field starts after the int16 version
    assert row["error_message"]


def test_offset_commit_rows_of_plain_commits_are_committed_as_read(
    spark: SparkSession, sample: DataFrame
) -> None:
    # As the pipeline writes them: typed in Spark, never collected.
    plain = frames.plain_commit_frame(dec.decode(sample), read_committed_source=False)
    rows = writes.ms_frame("offset_commits", plain, cluster="east")
    # The same rows as typing them on the driver gives (fold outputs' way).
    on_driver = writes.table_frame(
        spark, "offset_commits", writes.ms_table("offset_commits", plain.toArrow(), cluster="east")
    )
    assert_df_equality(rows, on_driver, ignore_row_order=True, ignore_nullable=True)
    assert rows.columns == [c.name for c in catalogue.spec("offset_commits").written_columns]
    expected_schema = StructType(
        [
            StructField("group_id", StringType()),
            StructField("partition", IntegerType()),
            StructField("offset", LongType()),
            StructField("leader_epoch", IntegerType()),
            StructField("commit_timestamp", TimestampType()),
            StructField("is_tombstone", BooleanType()),
            StructField("record_offset", LongType()),
            StructField("transactional", BooleanType()),
            StructField("producer_id", LongType()),
            StructField("status", StringType()),
            StructField("resolved_by", StringType()),
            StructField("effective_at", TimestampType()),
        ]
    )
    expected = spark.createDataFrame(
        [
            (
                "g1",
                0,
                42,
                3,
                _ts(T0),
                False,
                10,
                False,
                None,
                "committed",
                "non_transactional",
                _ts(T0),
            ),
            ("g1", 1, None, -1, None, True, 11, False, None, "committed", "tombstone", _ts(T0 + 1)),
        ],
        expected_schema,
    )
    assert_df_equality(
        rows.select(*expected_schema.names), expected, ignore_row_order=True, ignore_nullable=True
    )
    # The transactional one is left to the offsets fold (it is pending until its marker).
    txn = frames.plain_commit_frame(
        dec.decode(sample), read_committed_source=False, transactional=True
    )
    assert [(r["record_offset"], r["producer_id"]) for r in txn.collect()] == [(13, 77)]


@pytest.mark.parametrize("read_committed", [False, True])
def test_plain_commit_rows_are_the_in_memory_folds_rows(
    sample: DataFrame, read_committed: bool
) -> None:
    """The SQL the pipeline appends plain commits with gives the rows the in-memory fold step
    gives the same records (``plain_row``), column for column."""
    frame = frames.plain_commit_frame(dec.decode(sample), read_committed_source=read_committed)
    table = frame.select(*[f"`{c}`" for c in COLUMNS]).toArrow()
    got = sorted(table.to_pylist(), key=lambda r: r["record_offset"])
    expected = []
    for r in sample.orderBy("offset").collect():
        if r["is_transactional"]:
            continue
        try:
            record = decode_record(r["topic"], r["key"], r["value"])
        except DecodeError:
            continue
        at = Coordinates(r["topic"], r["partition"], r["offset"], r["timestamp"])
        event = event_from_record(at, record)  # type: ignore[arg-type]
        if isinstance(event, OffsetCommitEvent):
            row = plain_row(event, read_committed_source=read_committed)
            expected.append(dataclasses.asdict(row))
    assert [r["record_offset"] for r in expected] == [10, 11]
    assert got == expected


def test_timestamps_beyond_spark_are_typed_in_spark_as_on_the_driver(spark: SparkSession) -> None:
    """A corrupt commit's timestamps: nulled where the column may be null, clamped where not,
    the same by ms_frame (rows that stay in Spark) as by ms_table (driver columns)."""
    rows = [
        dict.fromkeys(COLUMNS)
        | {"group_id": "g", "topic": "t", "partition": 0, "record_partition": 0}
        | {"record_offset": o, "is_tombstone": False, "transactional": False, "status": "x"}
        | {"leader_epoch": -1, "metadata": "", "resolved_by": "r"}
        | {"record_timestamp": at, "resolved_at": at, "effective_at": at, "commit_timestamp": at}
        for o, at in enumerate([T0, writes.MAX_TIMESTAMP_MS + 1, writes.MIN_TIMESTAMP_MS - 1])
    ]
    table = pa.Table.from_pylist(rows, schema=COMMIT_SCHEMA)
    in_spark = writes.ms_frame("offset_commits", spark.createDataFrame(table), cluster="c")
    on_driver = writes.table_frame(
        spark, "offset_commits", writes.ms_table("offset_commits", table, cluster="c")
    )
    assert in_spark.dtypes == on_driver.dtypes

    def millis(df: DataFrame) -> DataFrame:
        # Year 1 does not become a Python datetime in every time zone: compare epoch ms.
        return df.select(
            *[
                F.unix_millis(F.col(f.name)).alias(f.name)
                if isinstance(f.dataType, TimestampType)
                else F.col(f.name)
                for f in df.schema.fields
            ]
        )

    assert_df_equality(
        millis(in_spark), millis(on_driver), ignore_row_order=True, ignore_nullable=True
    )
    got = {r["record_offset"]: r for r in millis(in_spark).collect()}
    assert got[1]["commit_timestamp"] is None  # nullable: nulled
    assert got[1]["record_timestamp"] == writes.MAX_TIMESTAMP_MS  # NOT NULL: clamped
    assert got[2]["record_timestamp"] == writes.MIN_TIMESTAMP_MS
    with pytest.raises(ValueError, match="rows need a cluster"):
        writes.ms_frame("offset_commits", spark.createDataFrame(table))


def test_commit_candidates_summarize_as_all_the_commits(spark: SparkSession) -> None:
    """The summary of the few commits the decode tasks picked is the summary of all of the
    batch's plain commits, with a group's commits spread over several tasks, and with groups
    deleted in the batch (picked again with their tombstones)."""
    rng = random.Random(5)
    rows = []
    for offset in range(600):
        group = f"g{rng.randrange(12)}"
        committed = None if rng.random() < 0.1 else rng.randrange(1_000)
        at = T0 + rng.randrange(50) * 1_000  # many equal times: the record offset decides
        # Some v4, with the topic's id: its first commit is a pick.
        topic_id = uuid.UUID(int=rng.randrange(3) + 1) if rng.random() < 0.3 else None
        key, value = _commit(group, rng.randrange(4), committed, at, topic_id)
        rows.append(
            {"topic": OFFSETS, "partition": 2, "offset": offset, "timestamp": at}
            | {"key": key, "value": value}
        )
    source = _source(spark, rows)
    every = frames.plain_commit_frame(dec.decode(source), read_committed_source=False)
    whole = every.select(*[f"`{c}`" for c in COLUMNS]).toArrow()
    by_record = {_record(r): r for r in whole.to_pylist()}
    tombstones = {"g3": 200, "g7": 599}

    spread = frames.plain_pass(source.repartition(5), read_committed_source=False)
    spread.run_apart()
    counted = spread.counts()
    assert counted.by_kind == {"offset_commit": 600}
    assert counted.commits == 600
    for deleted in (tombstones, {}):
        picked = frames.commit_candidates(
            counted.candidates, source, read_committed_source=False, tombstones=deleted
        )
        # Whole rows of the batch's commits, among them every row the pure picks keep.
        assert all(by_record[_record(r)] == r for r in picked.to_pylist())
        assert {_record(r) for r in candidates(whole, deleted).to_pylist()} <= {
            _record(r) for r in picked.to_pylist()
        }
        summary, positions = summarize(picked, deleted)
        want_summary, want_positions = summarize(whole, deleted)
        assert summary == want_summary
        assert positions == want_positions
    assert sum(len(p.groups) for p in want_positions.values()) > 40
    assert 0 < sum(r is not None for r in whole["topic_id"].to_pylist()) < whole.num_rows

    # A partition's commits in one task, no group deleted: exactly the picks, each once.
    one = frames.plain_pass(source.coalesce(1), read_committed_source=False)
    one.run_apart()
    counted = one.counts()
    assert counted.ascending
    picked = frames.commit_candidates(
        counted.candidates, source, read_committed_source=False, tombstones={}
    )
    assert sorted(map(_record, picked.to_pylist())) == sorted(
        map(_record, candidates(whole, {}).to_pylist())
    )
    assert picked.num_rows < whole.num_rows / 4
    # The Arrow projection of the candidates is the Spark one, column for column.
    assert picked.column_names == list(COLUMNS)


def test_the_plain_part_is_every_plain_commit_by_its_key(spark: SparkSession) -> None:
    """The source rows split by key alone: the plain part decodes to plain offset commits (or
    quarantine for a value that does not decode), the rest holds every other kind; a group's
    records are found by their key bytes."""
    rows = []
    for offset, group in enumerate(["g1", "g2", "gé", "g1"]):
        key, value = _commit(group, 0, offset, T0, None)
        rows.append(
            {"topic": OFFSETS, "partition": 1, "offset": offset, "timestamp": T0}
            | {"key": key, "value": value}
        )
    key, _ = _commit("g2", 0, 1, T0, None)
    bad = {"topic": OFFSETS, "partition": 1, "offset": 4, "timestamp": T0, "key": key}
    rows.append(bad | {"value": b"\x00\x09garbage"})
    rows.append(bad | {"offset": 5, "key": b"\x00", "value": b"v"})
    rows.append(bad | {"offset": 6, "key": None, "value": b"v"})
    source = _source(spark, rows)
    plain, light = frames.split_plain(source)
    assert plain.count() + light.count() == len(rows)
    by_offset = {r["offset"]: r["kind"] for r in dec.decode(plain).collect()}
    assert {by_offset.pop(o) for o in range(4)} == {"offset_commit"}
    # The type-1 key whose value does not decode: in the plain part, bound for quarantine.
    assert list(by_offset) == [4]
    assert by_offset[4] in {dec.ERROR, dec.UNKNOWN}
    light_kinds = [r["kind"] for r in dec.decode(light).collect()]
    assert len(light_kinds) == 2
    assert set(light_kinds) <= {dec.ERROR, dec.UNKNOWN}
    chosen = frames.of_groups(plain, ["g1", "gé"])
    assert sorted(r["offset"] for r in chosen.collect()) == [0, 2, 3]
    assert frames.of_groups(plain, []).count() == 0


def _record(row: dict[str, Any]) -> tuple[int, int]:
    return row["record_partition"], row["record_offset"]


def test_kafka_source_commits_are_resolved_by_the_read_committed_source(
    spark: SparkSession, sample: DataFrame
) -> None:
    rows = frames.plain_commit_frame(dec.decode(sample), read_committed_source=True)
    by_offset = {r["record_offset"]: r["resolved_by"] for r in rows.collect()}
    assert by_offset == {10: "read_committed_source", 11: "tombstone"}


def test_kafka_rows_map_mirror_topics_to_their_internal_kind(spark: SparkSession) -> None:
    kafka_like = spark.createDataFrame(
        [
            ("mirror.offsets", 0, 5, _ts(T0), b"k", b"v"),
            ("mirror.txn", 1, 6, _ts(T0 + 1), b"k", None),
        ],
        "topic string, partition int, offset bigint, timestamp timestamp, key binary, value binary",
    )
    rows = sources.from_kafka_rows(
        kafka_like, sources.topic_kinds("mirror.offsets", "mirror.txn")
    ).collect()
    assert [(r["topic"], r["source_topic"], r["timestamp"], r["producer_id"]) for r in rows] == [
        ("__consumer_offsets", "mirror.offsets", T0, -1),
        ("__transaction_state", "mirror.txn", T0 + 1, -1),
    ]
    assert rows[1]["value"] is None


def test_a_batch_read_of_a_directory_without_internal_topics_names_it(
    spark: SparkSession, offsetscope_config: config.Config, tmp_path: Path
) -> None:
    (tmp_path / "orders-0").mkdir()
    with pytest.raises(FileNotFoundError, match=f"{tmp_path}: no partition directory of"):
        sources.read_segments(spark, offsetscope_config, str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no partition directory"):
        sources.read_segments(spark, offsetscope_config, str(tmp_path / "missing"))


def test_a_batch_read_of_empty_internal_partitions_is_empty(
    spark: SparkSession, offsetscope_config: config.Config, tmp_path: Path
) -> None:
    (tmp_path / f"{OFFSETS}-0").mkdir()
    (tmp_path / "__transaction_state-3").mkdir()
    assert sources.read_segments(spark, offsetscope_config, str(tmp_path)).count() == 0


def test_segment_directory_batch_read_is_every_internal_record(
    spark: SparkSession, offsetscope_config: config.Config, tmp_path: Path
) -> None:
    with SyntheticLog(tmp_path, Workload()) as log:
        truth = log.run(6)
    df = sources.read_segments(spark, offsetscope_config, str(tmp_path))
    assert_schema_equality(df.schema, sources.source_spark_schema(), ignore_nullable=True)
    cache = logdir.LogEndCache()
    expected_rows = [
        row
        for d in logdir.partition_dirs(tmp_path, [OFFSETS, "__transaction_state"])
        for batch in logdir.read_range(
            logdir.RangeRequest(d, d.topic, 0, cache.log_end_offset(d)), catalogue.SOURCE_SCHEMA
        )
        for row in batch.to_pylist()
    ]
    expected = spark.createDataFrame(
        pa.Table.from_pylist(expected_rows, schema=catalogue.SOURCE_SCHEMA),
        schema=sources.source_spark_schema(),
    )
    assert_df_equality(df, expected, ignore_row_order=True, ignore_nullable=True)
    assert df.count() == truth.records


def test_coordinates_are_known_unique_when_each_partition_is_one_tasks_ascending_run(
    spark: SparkSession, sample: DataFrame
) -> None:
    def ascending(raw: DataFrame) -> bool:
        plain = frames.plain_pass(raw, read_committed_source=False)
        plain.run_apart()
        return plain.counts().ascending

    def known(raw: DataFrame) -> bool:
        return frames.coordinates_unique(frames.source_stats(raw), ascending(raw))

    once = sample.coalesce(1)
    assert known(once)
    # The same records twice in one task: their offsets stop ascending.
    assert not known(once.union(once).coalesce(1))
    # ... and in two tasks, each ascending: one partition's records span both.
    copies = [once.withColumn("copy", F.lit(i)) for i in (0, 1)]
    twice = (
        copies[0]
        .union(copies[1])
        .repartitionByRange(2, "copy")
        .sortWithinPartitions("offset")
        .drop("copy")
    )
    tasks = {(r["first_task"], r["last_task"]) for r in frames.source_stats(twice)}
    assert tasks == {(0, 1)}
    assert ascending(twice)
    assert not known(twice)
