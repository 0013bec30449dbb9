"""``offsetscope sql``: answers from the configured schema's tables as an aligned text table."""

from __future__ import annotations

import uuid

import pytest
from pyspark.sql import SparkSession

from offsetscope import cli, config
from offsetscope.spark.tables import schema_name

pytestmark = pytest.mark.spark


def test_sql_answers_from_the_configured_schema(
    spark: SparkSession, offsetscope_config: config.Config, capsys: pytest.CaptureFixture[str]
) -> None:
    table = f"cli_probe_{uuid.uuid4().hex[:8]}"
    schema = schema_name(offsetscope_config)
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    spark.sql(f"CREATE TABLE {schema}.{table} (group_id string, generation int) USING DELTA")
    try:
        spark.sql(f"INSERT INTO {schema}.{table} VALUES ('billing', 3), ('audit', NULL)")
        code = cli.main(["sql", f"SELECT * FROM {table} ORDER BY group_id", "--limit", "1"])
        out = capsys.readouterr().out.splitlines()
        assert code == 0
        assert out == [
            "group_id | generation",
            "---------+-----------",
            "audit    | NULL",
            "(1 row shown, more left out by --limit 1)",
        ]

        assert cli.main(["sql", "SELECT * FROM no_such_table_here"]) == 1
        errors = [
            line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")
        ]
        assert len(errors) == 1
        assert "no_such_table_here" in errors[0]
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {schema}.{table}")
