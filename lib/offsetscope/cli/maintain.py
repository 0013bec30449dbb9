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
from collections.abc import Callable
from typing import Any, TypeVar

from offsetscope.cli.common import UsageError, load_config, register_job

T = TypeVar("T")


def register_with_tables(
    subparsers: Any, name: str, help_text: str, handler: Callable[[argparse.Namespace], int]
) -> None:
    """Add a job that takes ``--tables`` (``maintain``, ``migrate``)."""
    parser = register_job(subparsers, name, help_text, handler)
    parser.add_argument(
        "--tables", default=None, help="comma-separated tables (default: every table)"
    )


def register(subparsers: Any) -> None:
    """Add ``maintain`` to the ``offsetscope`` command."""
    register_with_tables(
        subparsers, "maintain", "retention, downsampling, OPTIMIZE and VACUUM of the tables", run
    )


def on_tables(args: argparse.Namespace, name: str, job: Callable[..., T]) -> T:
    """``job(spark, cfg, tables=...)`` in the command's own session; an unknown table in
    ``--tables`` is a usage error."""
    from offsetscope.spark.session import build_job_session

    cfg = load_config(args)
    spark = build_job_session(cfg, app_name=f"{cfg.spark.app_name}-{name}")
    tables = [t.strip() for t in args.tables.split(",") if t.strip()] if args.tables else None
    try:
        return job(spark, cfg, tables=tables)
    except KeyError as exc:
        raise UsageError(f"--tables: {exc.args[0]}") from None


def run(args: argparse.Namespace) -> int:
    """Run one maintenance pass and print a line per step."""
    from offsetscope.pipelines import maintain

    for line in on_tables(args, "maintain", maintain.maintain).lines():
        print(line)
    return 0
