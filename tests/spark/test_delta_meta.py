"""``describe_table`` reads what the start of a job checks -- columns, comments, partitioning,
clustering, properties -- from the table's Delta log without a Spark job, and agrees with the
catalog's ``DESCRIBE DETAIL``; a version without a checksum file still gets its clustering."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest
from pyspark.sql import SparkSession

from offsetscope import config
from offsetscope.spark import delta_meta
from offsetscope.spark import tables as catalogue

pytestmark = pytest.mark.spark

# Clustered, partitioned with generated columns, and clustered by two columns.
TABLES = ("groups_current", "raw_records", "fold_state")


@pytest.fixture
def cfg(spark: SparkSession, offsetscope_config: config.Config) -> Iterator[config.Config]:
    schema = f"t_meta_{uuid.uuid4().hex[:8]}"
    cfg = config.with_storage(offsetscope_config, schema=schema)
    catalogue.ensure_tables(spark, cfg, TABLES)
    try:
        yield cfg
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _jobs(spark: SparkSession) -> int:
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(None))


@pytest.mark.parametrize("logical", TABLES)
def test_the_log_and_the_catalog_describe_a_table_alike_and_the_log_runs_no_job(
    spark: SparkSession, cfg: config.Config, logical: str
) -> None:
    name = catalogue.table_name(cfg, logical)
    spec = catalogue.spec(logical)
    before = _jobs(spark)
    read = catalogue.describe_table(spark, name)
    assert _jobs(spark) == before, "the table's state was reconstructed"

    asked = catalogue._describe_from_catalog(spark, name)
    assert read.columns == asked.columns
    assert read.partition_by == asked.partition_by == spec.partition_by
    assert read.cluster_by == asked.cluster_by == spec.cluster_by
    assert read.properties == asked.properties
    assert read.comment == spark.catalog.getTable(name.replace("`", "")).description
    assert read.column_comments == {c.name: c.comment for c in spec.columns}


def test_a_clustering_changed_by_hand_is_read_from_the_new_version_and_restored(
    spark: SparkSession, cfg: config.Config
) -> None:
    name = catalogue.table_name(cfg, "groups_current")
    spark.sql(f"ALTER TABLE {name} CLUSTER BY (kind)")
    assert catalogue.describe_table(spark, name).cluster_by == ("kind",)

    catalogue.ensure_tables(spark, cfg, ["groups_current"])
    assert catalogue.describe_table(spark, name).cluster_by == (
        catalogue.spec("groups_current").cluster_by
    )


def test_a_version_without_a_checksum_file_gets_its_clustering_from_the_catalog(
    spark: SparkSession, cfg: config.Config
) -> None:
    """A writer that writes no checksum files (another Delta client, or the setting off)."""
    name = catalogue.table_name(cfg, "fold_state")
    key = "spark.databricks.delta.writeChecksumFile.enabled"
    spark.conf.set(key, "false")
    try:
        spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('offsetscope.test' = 'no-crc')")
    finally:
        spark.conf.unset(key)
    location = spark.sql(f"DESCRIBE DETAIL {name}").collect()[0]["location"]
    log = Path(urlparse(location).path) / "_delta_log"
    assert (log / f"{1:020d}.json").exists()
    assert not (log / f"{1:020d}.crc").exists()
    # This session keeps the checksum it computed in memory; another process reads the files.
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()

    meta = delta_meta.read(spark, name)
    assert meta is not None
    assert meta.properties["offsetscope.test"] == "no-crc"
    assert meta.cluster_by is delta_meta.UNKNOWN
    assert catalogue.describe_table(spark, name).cluster_by == ("fold", "key")


def test_a_catalogs_three_part_name_is_left_to_the_catalog(spark: SparkSession) -> None:
    assert delta_meta.read(spark, "main.offsetscope.groups_current") is None


def test_the_clustering_domain_names_the_columns_and_a_removed_one_none() -> None:
    def domain(columns: str, *, removed: bool = False, name: str = "delta.clustering") -> dict:
        configuration = f'{{"clusteringColumns":{columns},"domainName":"{name}"}}'
        return {"domain": name, "configuration": configuration, "removed": removed}

    assert delta_meta.clustering_columns([domain('[["fold"],["key"]]')]) == ("fold", "key")
    assert delta_meta.clustering_columns([domain('[["a","b"]]')]) == ("a.b",)
    assert delta_meta.clustering_columns([domain('[["fold"]]', removed=True)]) == ()
    assert delta_meta.clustering_columns([domain('[["x"]]', name="delta.rowTracking")]) == ()
    assert delta_meta.clustering_columns([]) == ()
