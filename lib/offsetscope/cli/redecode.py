"""``offsetscope redecode``: rebuild the decoded and history tables from ``raw_records``
(:mod:`offsetscope.pipelines.redecode`).

::

    offsetscope redecode [--since T] [--tables t1,t2] [--stop-ingest] [--env local] [--conf F]

A batch job: it decodes the stored raw records again with this offsetscope's decoder, replaces
the rows that changed (one Delta commit per table, its version printed) and folds again every
group and transactional id those records belong to. It refuses to run while the ingest query
writes the same tables. ``--since`` takes a date or time (``2026-11-01``,
``2026-11-01T08:00:00Z``; UTC unless a zone is given), epoch milliseconds, or a duration back
from now (``6h``, ``30d``). Exit code 1 when the ingest query is running.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from typing import Any

from offsetscope.cli.common import env_args, load_config
from offsetscope.config import Duration


def register(subparsers: Any) -> None:
    """Add ``redecode`` to the ``offsetscope`` command."""
    parser = subparsers.add_parser(
        "redecode", help="decode raw_records again and replace what changed"
    )
    parser.add_argument(
        "--since",
        default=None,
        help="only records stored since: a date or time (UTC), epoch ms, or a duration ago",
    )
    parser.add_argument(
        "--tables",
        default=None,
        help="comma-separated tables to rewrite (default: every decoded and history table)",
    )
    parser.add_argument(
        "--stop-ingest",
        action="store_true",
        help="stop the ingest query of this session between two batches first",
    )
    env_args(parser)
    parser.set_defaults(handler=run)


def parse_since(text: str, now_ms: int) -> int:
    """Epoch ms of ``--since``: epoch ms, an ISO date or time, or a duration back from now.

    Raises:
        ValueError: none of those.
    """
    if text.isdigit():
        return int(text)
    try:
        return now_ms - Duration(text).ms
    except ValueError:  # not a duration: a date or time
        pass
    moment = dt.datetime.fromisoformat(text)  # Python 3.11 reads a trailing Z
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1000)


def run(args: argparse.Namespace) -> int:
    """Run the job and print what changed; 1 when the ingest query is running."""
    from offsetscope.clock import SystemClock
    from offsetscope.pipelines import redecode
    from offsetscope.spark.session import build_job_session

    cfg = load_config(args)
    clock = SystemClock()
    try:
        since = None if args.since is None else parse_since(args.since, clock.now_ms())
    except ValueError:
        print(
            f"redecode: --since {args.since!r} is not a time, epoch ms or duration", file=sys.stderr
        )
        return 2
    tables = [t.strip() for t in args.tables.split(",") if t.strip()] if args.tables else None
    spark = build_job_session(cfg, app_name=f"{cfg.spark.app_name}-redecode")
    try:
        report = redecode.redecode(
            spark, cfg, since=since, tables=tables, stop_ingest=args.stop_ingest, clock=clock
        )
    except redecode.IngestRunningError as exc:
        print(f"redecode: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"redecode: {exc}", file=sys.stderr)
        return 2
    for line in report.lines():
        print(line)
    return 0
