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

from offsetscope.cli.maintain import on_tables, register_with_tables


def register(subparsers: Any) -> None:
    """Add ``migrate`` to the ``offsetscope`` command."""
    register_with_tables(
        subparsers, "migrate", "rewrite tables whose declaration changed beyond new columns", run
    )


def run(args: argparse.Namespace) -> int:
    """Rewrite what needs it; one line per table rewritten; 1 while the ingest query runs."""
    from offsetscope.pipelines import maintain
    from offsetscope.pipelines.redecode import IngestRunningError
    from offsetscope.spark.tables import TableSchemaMismatchError

    try:
        done = on_tables(args, "migrate", maintain.migrate)
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
