"""A driver killed inside CREATE TABLE (found by ``make chaos``): Delta had committed version 0
to the managed location, the metastore had not registered the table yet, and every restart
failed with DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION. ``ensure_tables`` now removes such a
location when it holds nothing but that first commit, and leaves anything with data alone; so
does the quality tables' ``ensure``."""

from __future__ import annotations

import dataclasses
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from offsetscope import config
from offsetscope.quality import tables as qtables
from offsetscope.spark import tables as catalogue

pytestmark = [pytest.mark.spark, pytest.mark.streaming]

TABLE = "member_sessions"


def _orphan(
    spark: SparkSession,
    cfg: config.Config,
    create: Callable[[], object],
    physical: str,
    qualified: str,
    keep: Path,
) -> Path:
    """Create the table (``create``), then leave its files without the metastore entry."""
    create()
    uri = spark.catalog.getDatabase(cfg.storage.schema).locationUri
    location = Path(urlparse(uri).path) / physical.lower()
    shutil.copytree(location, keep)
    spark.sql(f"DROP TABLE {qualified}")
    assert not location.exists()
    shutil.copytree(keep, location)
    return location


def _orphan_catalogue_table(spark: SparkSession, cfg: config.Config, keep: Path) -> Path:
    return _orphan(
        spark,
        cfg,
        lambda: catalogue.ensure_tables(spark, cfg, [TABLE]),
        catalogue.physical_name(cfg, TABLE),
        catalogue.table_name(cfg, TABLE),
        keep,
    )


def test_a_create_table_interrupted_before_registration_does_not_block_a_restart(
    spark: SparkSession, offsetscope_config: config.Config, tmp_path: Path
) -> None:
    schema = f"t_restart_{uuid.uuid4().hex[:8]}"
    cfg = dataclasses.replace(
        offsetscope_config, storage=dataclasses.replace(offsetscope_config.storage, schema=schema)
    )
    try:
        location = _orphan_catalogue_table(spark, cfg, tmp_path / "first")
        assert {p.name for p in (location / "_delta_log").glob("*.json")} == {f"{0:020d}.json"}
        catalogue.ensure_tables(spark, cfg, [TABLE])
        assert spark.table(catalogue.table_name(cfg, TABLE)).count() == 0

        # With a data file next to the log, nothing is removed and Delta refuses.
        location = _orphan_catalogue_table(spark, cfg, tmp_path / "second")
        (location / "part-00000.parquet").write_bytes(b"PAR1")
        with pytest.raises(AnalysisException, match="NON_EMPTY_LOCATION"):
            catalogue.ensure_tables(spark, cfg, [TABLE])
        assert (location / "part-00000.parquet").exists()
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def test_a_quality_table_create_interrupted_before_registration_does_not_block_a_restart(
    spark: SparkSession, offsetscope_config: config.Config, tmp_path: Path
) -> None:
    """The quality tables are created by the first batch that records results, so a kill can
    land inside their CREATE TABLE too (found by ``make chaos``: quality_quarantine)."""
    schema = f"t_restart_q_{uuid.uuid4().hex[:8]}"
    cfg = dataclasses.replace(
        offsetscope_config, storage=dataclasses.replace(offsetscope_config.storage, schema=schema)
    )
    spec = qtables.QUALITY_QUARANTINE
    try:
        qualified = qtables.qualified_name(cfg, spec)
        location = _orphan(
            spark,
            cfg,
            lambda: qtables.ensure(spark, cfg, [spec]),
            getattr(cfg.tables, spec.logical),
            qualified,
            tmp_path / "kept",
        )
        assert {p.name for p in (location / "_delta_log").glob("*.json")} == {f"{0:020d}.json"}

        qtables.ensure(spark, cfg, [spec])
        assert spark.table(qualified).count() == 0
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
