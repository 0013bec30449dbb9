"""The Delta table kept under ``tests/fixtures/delta/partition_lag``: ``partition_lag`` as a
release before tables had a ``cluster`` column created it, with rows in three commits, so that
later releases' tests upgrade a table an earlier one wrote
(``tests/spark/test_table_evolution.py``, ``tests/spark/test_maintain.py``).

Do not regenerate it for a new column (it is the *old* table: a new column in the catalogue is
what the tests add to it, and the tests expect it without ``cluster``); the command, with the
catalogue of that older release::

    flock /tmp/heavy.lock .venv/bin/python tests/support/delta_fixture.py

Rows: two groups x one topic x two partitions, a sample every 15 minutes, three hours on
2026-11-01 (commits 1 and 2) and one hour on 2026-11-09 (commit 3). :data:`NOW_MS` is the
moment the tests maintain it at: the first day is then past a 7-day downsampling cutoff.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "delta" / "partition_lag"
LOGICAL = "partition_lag"
GROUPS = ("payments", "fraud-detection")
PARTITIONS = (0, 1)
SAMPLE_MS = 15 * 60_000
DAY1_MS = int(dt.datetime(2026, 11, 1, tzinfo=dt.UTC).timestamp() * 1000)
DAY9_MS = int(dt.datetime(2026, 11, 9, tzinfo=dt.UTC).timestamp() * 1000)
NOW_MS = int(dt.datetime(2026, 11, 10, tzinfo=dt.UTC).timestamp() * 1000)
# Commits after the CREATE: (first sample, number of samples per key).
COMMITS = ((DAY1_MS, 8), (DAY1_MS + 8 * SAMPLE_MS, 4), (DAY9_MS, 4))


def rows(start_ms: int, samples: int) -> list[dict[str, Any]]:
    """``partition_lag`` rows: every group and partition at each sample from ``start_ms``."""
    out = []
    for n in range(samples):
        at = dt.datetime.fromtimestamp((start_ms + n * SAMPLE_MS) / 1000, dt.UTC)
        for group in GROUPS:
            for partition in PARTITIONS:
                end = 1_000 + 10 * n
                committed = end - 5 - partition
                out.append(
                    {
                        "group_id": group,
                        "topic": "orders",
                        "partition": partition,
                        "as_of": at,
                        "read_committed": True,
                        "committed_offset": committed,
                        "committed_at": at,
                        "end_offset": end,
                        "high_watermark": end,
                        "last_stable_offset": end,
                        "log_start_offset": 0,
                        "sampled_at": at,
                        "lag_records": end - committed,
                        "lag_seconds": 1.5,
                        "lag_method": "exact",
                        "data_loss": False,
                        "lost_records": 0,
                        "lag_basis": "lso",
                        "basis_reason": "default",
                        "lag_records_hwm": end - committed,
                        "lag_records_lso": end - committed,
                        "lag_seconds_hwm": 1.5,
                        "lag_seconds_lso": 1.5,
                    }
                )
    return out


@contextlib.contextmanager
def registered(spark: Any, cfg: Any, tmp_path: Path, prefix: str) -> Iterator[Any]:
    """The fixture table copied under ``tmp_path`` and registered in a schema of its own;
    yields ``cfg`` naming that schema, drops it afterwards."""
    from offsetscope import config
    from offsetscope.spark import tables as catalogue

    schema = f"{prefix}_{uuid.uuid4().hex[:8]}"
    cfg = config.with_storage(cfg, schema=schema)
    location = tmp_path / LOGICAL
    shutil.copytree(FIXTURE, location)
    spark.sql(f"CREATE SCHEMA {schema}")
    try:
        spark.sql(
            f"CREATE TABLE {catalogue.table_name(cfg, LOGICAL)} USING DELTA LOCATION '{location}'"
        )
        yield cfg
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def expected_rows() -> int:
    return sum(samples for _, samples in COMMITS) * len(GROUPS) * len(PARTITIONS)


def append(spark: Any, qualified: str, start_ms: int, samples: int) -> None:
    from offsetscope.spark import tables as catalogue

    table = catalogue.spec(LOGICAL)
    frame = spark.createDataFrame(rows(start_ms, samples), schema=table.written_ddl())
    frame.write.format("delta").mode("append").saveAsTable(qualified)


def main() -> int:
    from offsetscope import config
    from offsetscope.spark import tables as catalogue
    from offsetscope.spark.session import build_session

    work = Path(tempfile.mkdtemp(prefix="delta-fixture-"))
    cfg = config.with_storage(config.load("local"), work_dir=work, schema="fixture")
    cfg = dataclasses.replace(cfg, spark=dataclasses.replace(cfg.spark, master="local[1]"))
    spark = build_session(cfg, app_name="delta-fixture", extra_conf={"spark.ui.enabled": "false"})
    try:
        spark.sql("CREATE SCHEMA fixture")
        table = catalogue.spec(LOGICAL)
        spark.sql(catalogue.create_table_sql(cfg, table))
        qualified = catalogue.table_name(cfg, LOGICAL)
        for start, samples in COMMITS:
            append(spark, qualified, start, samples)
        location = spark.sql(f"DESCRIBE DETAIL {qualified}").collect()[0]["location"]
    finally:
        spark.stop()
    source = Path(location.removeprefix("file:"))
    if FIXTURE.exists():
        shutil.rmtree(FIXTURE)
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    # The .crc files are checksums of the files beside them; the table reads without them.
    shutil.copytree(source, FIXTURE, ignore=shutil.ignore_patterns(".*.crc"))
    shutil.rmtree(work)
    print(f"{FIXTURE.relative_to(ROOT)}: {expected_rows()} rows in {len(COMMITS) + 1} commits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
