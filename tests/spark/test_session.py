"""The session from build_session: Delta tables registered in a Hive metastore, MERGE, and
Delta's idempotent writes, all from the local jars (no Ivy)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from offsetscope import config
from offsetscope.spark.session import KAFKA_OFFSET_FETCHING, local_jars

pytestmark = pytest.mark.spark


@pytest.fixture
def schema(spark: SparkSession) -> Iterator[str]:
    name = f"t_session_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE SCHEMA {name}")
    try:
        yield name
    finally:
        spark.sql(f"DROP SCHEMA {name} CASCADE")


def test_session_uses_the_local_jars_and_the_internal_topic_setting(
    spark: SparkSession, offsetscope_config: config.Config
) -> None:
    conf = spark.sparkContext.getConf()
    jars = set(conf.get("spark.jars").split(","))
    assert jars == {str(p) for p in local_jars(offsetscope_config.spark.jars_dir)}
    assert any("/delta-spark_4.1_2.13-" in jar for jar in jars)
    assert any("/spark-sql-kafka-0-10_2.13-4.1.3" in jar for jar in jars)
    assert conf.get("spark.jars.packages") is None
    assert spark.conf.get(KAFKA_OFFSET_FETCHING) == "true"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.conf.get("spark.sql.catalogImplementation") == "hive"
    assert spark.version == "4.1.3"


def test_delta_table_in_a_metastore_schema_and_merge(spark: SparkSession, schema: str) -> None:
    table = f"{schema}.groups"
    spark.sql(f"CREATE TABLE {table} (group_id STRING, generation INT, state STRING) USING DELTA")
    spark.sql(f"INSERT INTO {table} VALUES ('payments', 3, 'Stable'), ('audit', 1, 'Empty')")
    spark.createDataFrame(
        [("payments", 4, "PreparingRebalance"), ("billing", 1, "Stable")],
        "group_id STRING, generation INT, state STRING",
    ).createOrReplaceTempView("group_updates")

    spark.sql(
        f"""
        MERGE INTO {table} AS t USING group_updates AS u ON t.group_id = u.group_id
        WHEN MATCHED THEN UPDATE SET *
        WHEN NOT MATCHED THEN INSERT *
        """
    )
    spark.catalog.dropTempView("group_updates")  # the session is shared by every Spark test

    rows = {tuple(r) for r in spark.table(table).collect()}
    assert rows == {
        ("payments", 4, "PreparingRebalance"),
        ("audit", 1, "Empty"),
        ("billing", 1, "Stable"),
    }
    # Registered in the Hive metastore (embedded Derby), stored as Delta in the warehouse.
    meta = spark.catalog.getTable(table)
    assert (meta.database, meta.tableType) == (schema, "MANAGED")
    detail = spark.sql(f"DESCRIBE DETAIL {table}").first()
    assert detail is not None
    assert detail["format"] == "delta"
    warehouse = spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:")
    location = Path(detail["location"].removeprefix("file:"))
    assert location == Path(warehouse) / f"{schema}.db" / "groups"
    operations = [r["operation"] for r in DeltaTable.forName(spark, table).history().collect()]
    assert operations == ["MERGE", "WRITE", "CREATE TABLE"]


def test_idempotent_writes_skip_a_replayed_batch(spark: SparkSession, schema: str) -> None:
    table = f"{schema}.commits"
    spark.sql(f"CREATE TABLE {table} (batch BIGINT, n INT) USING DELTA")

    def write(batch_id: int) -> None:
        rows = [(batch_id, i) for i in range(3)]
        (
            spark.createDataFrame(rows, "batch BIGINT, n INT")
            .write.format("delta")
            .mode("append")
            .option("txnAppId", "offsets-query")
            .option("txnVersion", batch_id)
            .saveAsTable(table)
        )

    write(0)
    write(1)
    write(1)  # a restarted query replays batch 1
    write(0)

    counts = {r["batch"]: r["count"] for r in spark.table(table).groupBy("batch").count().collect()}
    assert counts == {0: 3, 1: 3}
    assert DeltaTable.forName(spark, table).history().count() == 3  # create + two appends


def test_the_string_redaction_regex_survives_long_plan_strings_in_the_jvm(
    spark: SparkSession,
) -> None:
    """Spark applies ``spark.sql.redaction.string.regex`` to every plan string with Java's regex
    engine, which recursed once per character on the old pattern and overflowed the stream
    thread's stack (the live demo died of it)."""
    from offsetscope.secrets import kafka as secrets_kafka

    regex = secrets_kafka.spark_redaction_conf()["spark.sql.redaction.string.regex"]
    assert spark.conf.get("spark.sql.redaction.string.regex") == regex
    pattern = spark.sparkContext._jvm.java.util.regex.Pattern.compile(regex)  # type: ignore[union-attr]
    long_value = 'password="' + 'a\\"b' * 60_000 + '" rest'
    assert pattern.matcher(long_value).replaceAll("***") == "*** rest"
