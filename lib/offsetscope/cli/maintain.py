"""``offsetscope maintain``: bounded growth of the tables (:mod:`offsetscope.pipelines.maintain`).

::

    offsetscope maintain [--tables t1,t2] [--env local] [--conf F]

A batch job, scheduled once a day (the Databricks bundle's ``offsetscope-maintain`` job, ``make
maintain``): per table, the retention deletes and downsampling of ``[maintenance.retention]``,
OPTIMIZE (clustering by ``group_id`` where declared) and VACUUM, each printed with the rows and
files it removed and the Delta version it made. It may run while the ingest query runs.
"""

from __future__ import annotations

import argparse
from typing import Any

from offsetscope.cli.common import UsageError, load_config, register_job


def register(subparsers: Any) -> None:
    """Add ``maintain`` to the ``offsetscope`` command."""
    parser = register_job(
        subparsers, "maintain", "retention, downsampling, OPTIMIZE and VACUUM of the tables", run
    )
    parser.add_argument(
        "--tables", default=None, help="comma-separated tables (default: every table)"
    )


def tables_arg(text: str | None) -> list[str] | None:
    """``--tables`` as logical names (None: all)."""
    return [t.strip() for t in text.split(",") if t.strip()] if text else None


def run(args: argparse.Namespace) -> int:
    """Run one maintenance pass and print a line per step."""
    from offsetscope.pipelines import maintain
    from offsetscope.spark.session import build_job_session

    cfg = load_config(args)
    spark = build_job_session(cfg, app_name=f"{cfg.spark.app_name}-maintain")
    try:
        report = maintain.maintain(spark, cfg, tables=tables_arg(args.tables))
    except KeyError as exc:
        raise UsageError(f"--tables: {exc.args[0]}") from None
    for line in report.lines():
        print(line)
    return 0
