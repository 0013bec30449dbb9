"""``offsetscope report``: a self-contained HTML page of a group, or of the whole cluster.

::

    offsetscope report --group G [--since 24h] [--as-of TIME] [--cluster NAME] --out report.html
    offsetscope report [--since 24h] [--as-of TIME] [--cluster NAME] --out cluster.html

A group's page: its rebalances with their causes, its member sessions, its lag in records and
seconds, its transactions (:mod:`offsetscope.ops.report`); the cluster's page: groups by
rebalances in the last hour and day, lag leaders, hanging transactions. The page needs no
network to open (plotly.js is inside it). Prints the path written.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from offsetscope.cli.common import (
    cluster_arg,
    env_args,
    fail,
    queries_for,
    window_args,
    window_of,
)


def register(subparsers: Any) -> None:
    """Add ``report`` to the ``offsetscope`` command."""
    parser = subparsers.add_parser("report", help="an HTML page of a group or of the cluster")
    parser.add_argument("--group", help="the consumer group (default: the cluster's page)")
    parser.add_argument("--out", type=Path, required=True, help="the HTML file to write")
    parser.add_argument(
        "--include-own", action="store_true", help="include offsetscope's own consumer groups"
    )
    env_args(parser)
    window_args(parser)
    cluster_arg(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from offsetscope.ops import report
    from offsetscope.ops.queries import Window

    window = Window(*window_of(args))
    q = queries_for(args, "report")
    if args.group is None:
        page = report.render_cluster(report.cluster_report(q, window))
    else:
        if not len(q.group(args.group, window)):
            return fail(f"no consumer group {args.group!r} in the tables")
        page = report.render_group(report.group_report(q, args.group, window))
    print(report.write(page, args.out))
    return 0
