"""``offsetscope sql``: a SQL query against the offsetscope tables.

::

    offsetscope sql "SELECT group_id, generation, leader FROM group_generations" [--env local]

The configured schema is the current one, so unqualified names resolve to
``offsetscope.<table>`` (or ``catalog.schema.<table>``), and the result is printed as an aligned
text table (``--limit`` rows, default 100; ``--truncate`` characters per cell).

Exit codes: 0 success, 1 the query failed (Spark's message on stderr), 2 bad usage. Nothing here
starts a JVM until the command runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from offsetscope import config
from offsetscope.cli.common import env_args, format_arg, load_config, render_rows


def register(subparsers: Any) -> None:
    """Add ``sql`` to the ``offsetscope`` command."""
    sql = subparsers.add_parser("sql", help="run a SQL query against the offsetscope tables")
    sql.add_argument("query", help="the SQL text (tables resolve in the configured schema)")
    env_args(sql)
    sql.add_argument("--limit", type=int, default=100, help="rows to print (default 100)")
    sql.add_argument("--truncate", type=int, default=60, help="characters per cell (0: all)")
    format_arg(sql)
    sql.set_defaults(handler=_sql)


def format_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], truncate: int = 60) -> str:
    """Rows as an aligned text table with a header rule (``NULL`` for nulls)."""

    def cell(value: Any) -> str:
        text = "NULL" if value is None else str(value)
        text = text.replace("\n", " ")
        if truncate and len(text) > truncate:
            text = text[: max(truncate - 3, 1)] + "..."
        return text

    body = [[cell(v) for v in row] for row in rows]
    widths = [len(c) for c in columns]
    for row in body:
        widths = [max(w, len(v)) for w, v in zip(widths, row, strict=True)]
    lines = [
        " | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip(),
        "-+-".join("-" * w for w in widths),
    ]
    lines += [
        " | ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in body
    ]
    return "\n".join(lines)


def run_sql(
    spark: Any, cfg: config.Config, query: str, limit: int
) -> tuple[list[str], list[Any], bool]:
    """Run ``query`` with the configured schema as the current one.

    Returns:
        Column names, up to ``limit`` rows, and whether more rows were left out.
    """
    from offsetscope.spark.tables import schema_name

    if cfg.storage.catalog:
        spark.sql(f"USE CATALOG `{cfg.storage.catalog}`")
    spark.sql(f"USE {schema_name(cfg)}")
    df = spark.sql(query)
    rows = df.limit(limit + 1).collect() if limit >= 0 else df.collect()
    more = 0 <= limit < len(rows)
    return list(df.columns), rows[:limit] if limit >= 0 else rows, more


def _sql(args: argparse.Namespace) -> int:
    from pyspark.errors import PySparkException

    from offsetscope.spark.session import build_job_session

    cfg = load_config(args)
    # Read-only: a reader without write access to the tables' storage may query them.
    spark = build_job_session(cfg, app_name=f"{cfg.spark.app_name}-sql", write=False)
    try:
        columns, rows, more = run_sql(spark, cfg, args.query, args.limit)
    except PySparkException as exc:
        # A user's query error (unknown table, syntax): one readable line, exit 1.
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 1
    if args.format != "table":
        print(render_rows(columns, [tuple(r) for r in rows], args.format))
        return 0
    print(format_table(columns, [tuple(r) for r in rows], args.truncate))
    noun = "row" if len(rows) == 1 else "rows"
    suffix = f" shown, more left out by --limit {args.limit}" if more else ""
    print(f"({len(rows)} {noun}{suffix})")
    return 0
