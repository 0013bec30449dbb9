"""``offsetscope group``: consumer groups, in the style of ``kafka-consumer-groups``.

::

    offsetscope group list [--state STATE]               every group: state, members, rebalances
                                                          in the last hour and day, lag
    offsetscope group describe G [--members | --state]   per partition: offsets, lag, owner
                                                          (like kafka-consumer-groups --describe)
    offsetscope group lag G                              current lag per partition, records and s
    offsetscope group history G [--since 24h]            one row per rebalance: cause, leader,
                                                          members joined and left, moved

Every form takes ``--cluster`` (one Kafka cluster's rows; default every cluster's, each row
naming its cluster), ``--as-of`` (default now), ``--format table|json|csv``, ``--include-own``
(offsetscope's own consumer groups, left out by default) and ``--env``/``--conf``. A group that
is unknown (or one of offsetscope's own, without ``--include-own``) exits 1 naming it.
"""

from __future__ import annotations

import argparse
from typing import Any

from offsetscope.cli.common import (
    cluster_arg,
    env_args,
    fail,
    format_arg,
    print_rows,
    queries_for,
    window_args,
    window_of,
)


def _common(parser: argparse.ArgumentParser, since: str = "24h") -> None:
    env_args(parser)
    format_arg(parser)
    window_args(parser, since)
    cluster_arg(parser)
    parser.add_argument(
        "--include-own", action="store_true", help="include offsetscope's own consumer groups"
    )


def register(subparsers: Any) -> None:
    """Add ``group`` and its sub-commands to the ``offsetscope`` command."""
    group = subparsers.add_parser("group", help="consumer groups (like kafka-consumer-groups)")
    sub = group.add_subparsers(dest="group_command", required=True)
    listing = sub.add_parser("list", help="every group with its state, rebalances and lag")
    listing.add_argument("--state", help="only groups in this state (Stable, Empty, ...)")
    _common(listing)
    listing.set_defaults(handler=_list)
    describe = sub.add_parser("describe", help="offsets, lag and owner per partition")
    describe.add_argument("group_id")
    shown = describe.add_mutually_exclusive_group()
    shown.add_argument("--members", action="store_true", help="the members instead")
    shown.add_argument("--state", action="store_true", help="the group's state instead")
    _common(describe)
    describe.set_defaults(handler=_describe)
    lag = sub.add_parser("lag", help="current lag per partition, in records and seconds")
    lag.add_argument("group_id")
    _common(lag)
    lag.set_defaults(handler=_lag)
    history = sub.add_parser("history", help="one row per rebalance, with its cause")
    history.add_argument("group_id")
    _common(history)
    history.set_defaults(handler=_history)


def _list(args: argparse.Namespace) -> int:
    from offsetscope.ops.queries import Window

    window = Window(*window_of(args))
    rows = queries_for(args, "group")
    answer = rows.groups(window, state=args.state)
    print_rows(answer.columns, answer.rows, args.format, empty="(no groups)")
    return 0


def _known(q: Any, group_id: str, window: Any) -> bool:
    return len(q.group(group_id, window)) > 0


def _describe(args: argparse.Namespace) -> int:
    from offsetscope.ops.queries import Window

    window = Window(*window_of(args))
    q = queries_for(args, "group")
    if args.state:
        answer = q.group(args.group_id, window)
    elif not _known(q, args.group_id, window):
        return fail(f"no consumer group {args.group_id!r} in the tables")
    elif args.members:
        answer = q.members(args.group_id, window)
    else:
        answer = q.describe(args.group_id, window)
    if args.state and not answer.rows:
        return fail(f"no consumer group {args.group_id!r} in the tables")
    print_rows(answer.columns, answer.rows, args.format, empty=f"({args.group_id}: no rows)")
    return 0


def _lag(args: argparse.Namespace) -> int:
    from offsetscope.ops.queries import Window

    window = Window(*window_of(args))
    q = queries_for(args, "group")
    if not _known(q, args.group_id, window):
        return fail(f"no consumer group {args.group_id!r} in the tables")
    answer = q.lag(args.group_id, window)
    print_rows(
        answer.columns, answer.rows, args.format, empty=f"({args.group_id}: no lag measured)"
    )
    return 0


def _history(args: argparse.Namespace) -> int:
    from offsetscope.ops.queries import Window

    window = Window(*window_of(args))
    q = queries_for(args, "group")
    if not _known(q, args.group_id, window):
        return fail(f"no consumer group {args.group_id!r} in the tables")
    answer = q.generations(args.group_id, window)
    print_rows(
        answer.columns,
        answer.rows,
        args.format,
        empty=f"({args.group_id}: no rebalance in the window)",
    )
    return 0
