"""``offsetscope txn``: transactions, in the style of ``kafka-transactions``.

::

    offsetscope txn list [--since 24h] [--outcome committed|aborted|ongoing] [--group G]
    offsetscope txn hanging                  open longer than their timeout (like find-hanging)

Both take ``--as-of`` (default now), ``--format table|json|csv`` and ``--env``/``--conf``.
"""

from __future__ import annotations

import argparse
from typing import Any

from offsetscope.cli.common import (
    cluster_arg,
    env_args,
    format_arg,
    print_rows,
    queries_for,
    window_args,
    window_of,
)


def register(subparsers: Any) -> None:
    """Add ``txn`` and its sub-commands to the ``offsetscope`` command."""
    txn = subparsers.add_parser("txn", help="transactions (like kafka-transactions)")
    sub = txn.add_subparsers(dest="txn_command", required=True)
    listing = sub.add_parser("list", help="transactions that began in the window")
    listing.add_argument("--outcome", choices=("committed", "aborted", "ongoing"))
    listing.add_argument("--group", help="only those that committed offsets for this group")
    for parser in (listing, sub.add_parser("hanging", help="open longer than their timeout")):
        env_args(parser)
        format_arg(parser)
        window_args(parser)
        cluster_arg(parser)
    listing.set_defaults(handler=_list)
    sub.choices["hanging"].set_defaults(handler=_hanging)


def _list(args: argparse.Namespace) -> int:
    from offsetscope.ops.queries import Window

    window = Window(*window_of(args))
    answer = queries_for(args, "txn").transactions(
        window, group_id=args.group, outcome=args.outcome
    )
    print_rows(answer.columns, answer.rows, args.format, empty="(no transactions in the window)")
    return 0


def _hanging(args: argparse.Namespace) -> int:
    from offsetscope.ops.queries import Window

    window = Window(*window_of(args))
    answer = queries_for(args, "txn").hanging(window)
    print_rows(answer.columns, answer.rows, args.format, empty="(no hanging transactions)")
    return 0
