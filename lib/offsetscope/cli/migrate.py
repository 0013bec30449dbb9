"""``offsetscope migrate``: rewrite the tables whose declaration changed in a way that cannot be
added in place (:func:`offsetscope.pipelines.maintain.migrate`).

::

    offsetscope migrate [--tables t1,t2] [--env local] [--conf F]

A job that starts (``ingest``, ``alerts``, ``maintain``) adds new nullable columns itself; a
column that may not be null, a changed type, key or partitioning, or a removed column stops it
with a message naming this command. ``migrate`` casts every row to the declaration (checked in
full before anything is written), replaces the table and refills it, keeping its Delta history
(time travel reaches the old versions). It refuses to run while the ingest query's lease is
live (exit 1).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from offsetscope.cli.common import UsageError, load_config, register_job
from offsetscope.cli.maintain import tables_arg


def register(subparsers: Any) -> None:
    """Add ``migrate`` to the ``offsetscope`` command."""
    parser = register_job(
        subparsers, "migrate", "rewrite tables whose declaration changed beyond new columns", run
    )
    parser.add_argument(
        "--tables", default=None, help="comma-separated tables (default: every table)"
    )


def run(args: argparse.Namespace) -> int:
    """Rewrite what needs it; one line per table rewritten; 1 while the ingest query runs."""
    from offsetscope.pipelines import maintain
    from offsetscope.pipelines.redecode import IngestRunningError
    from offsetscope.spark.session import build_job_session
    from offsetscope.spark.tables import TableSchemaMismatchError

    cfg = load_config(args)
    spark = build_job_session(cfg, app_name=f"{cfg.spark.app_name}-migrate")
    try:
        done = maintain.migrate(spark, cfg, tables=tables_arg(args.tables))
    except KeyError as exc:
        raise UsageError(f"--tables: {exc.args[0]}") from None
    except (IngestRunningError, TableSchemaMismatchError) as exc:
        print(f"migrate: {exc}", file=sys.stderr)
        return 1
    for r in done:
        changes = "; ".join(f"{i.column}: {i.change}" for i in r.changes) or "resumed"
        print(
            f"{r.logical}: rewritten ({changes}): {r.rows} rows of version {r.from_version}, "
            f"now version {r.version}"
        )
    if not done:
        print("migrate: every table matches its declaration")
    return 0
