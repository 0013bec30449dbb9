"""``offsetscope check-access``: the ACLs the configured principal lacks.

::

    offsetscope check-access [--topic T ...] [--format table|json|csv] [--env E] [--conf F]

Asks the cluster of ``[sources.kafka]``, as the configured principal, which operations it may
perform on the internal topics, on a group named with ``group_id_prefix`` and on the data
topics given (:func:`offsetscope.secrets.access.check_access`), and prints every documented
ACL (``docs/security.md``) that is missing, with the ``kafka-acls.sh`` lines that grant them.
Exit codes: 0 nothing is missing, 1 something is (or the login failed), 2 bad usage.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from offsetscope.cli.common import env_args, format_arg, load_config, print_rows


def register(subparsers: Any) -> None:
    """Add ``check-access`` to the ``offsetscope`` command."""
    parser = subparsers.add_parser(
        "check-access", help="the ACLs the configured Kafka principal lacks"
    )
    parser.add_argument(
        "--topic", action="append", default=[], help="a data topic to check DESCRIBE on"
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    env_args(parser)
    format_arg(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from offsetscope.secrets.access import (
        KafkaAccessError,
        check_access,
        kafka_acls_commands,
        principal_of,
    )
    from offsetscope.secrets.kafka import KafkaAdmin
    from offsetscope.secrets.references import resolver_for

    k = load_config(args).sources.kafka
    admin = KafkaAdmin(k, resolver_for())
    try:
        check_access(admin, k, args.topic, timeout_s=args.timeout)
    except KafkaAccessError as exc:
        if not exc.missing:  # a failed login: nothing to list
            print(f"error: {exc}", file=sys.stderr)
            return 1
        columns = ("resource_type", "name", "pattern", "operation", "reason")
        rows = [(r.resource_type, r.name, r.pattern, r.operation, r.reason) for r in exc.missing]
        print_rows(columns, rows, args.format)
        if args.format == "table":
            principal = principal_of(k.security)
            print(f"\n{principal} lacks {len(rows)} ACL(s); grant them with:")
            for line in kafka_acls_commands(principal, exc.missing):
                print(f"  {line}")
        return 1
    if args.format == "table":
        print(f"{principal_of(k.security)} has every ACL offsetscope needs")
    else:
        print_rows(("resource_type", "name", "pattern", "operation", "reason"), [], args.format)
    return 0
