"""The ``offsetscope`` command line: one sub-command per module of this package.

Sub-commands::

    offsetscope decode record --topic __consumer_offsets --key HEX [--value HEX]   (decode)
    offsetscope decode segment FILE.log [--format json|dump-log] [--topic T]       (decode)
    offsetscope partition-for ID [--partitions 50]                                 (decode)
    offsetscope simulate SCENARIO --out DIR | --list                               (simulate)
    offsetscope sql "SELECT ..." [--env E]                                         (sql)
    offsetscope ingest [--env E] [--conf F]                                        (ingest)
    offsetscope alerts [--env E] [--conf F]                                        (alerts)
    offsetscope redecode [--since T] [--tables T1,T2] [--stop-ingest] [--env E]    (redecode)
    offsetscope init [DIR] [--force]                                               (init)

Each module adds its parsers through ``register(subparsers)`` and imports what its handler needs
(Spark, the simulator) inside the handler, so ``decode`` never pays for a JVM. Exit codes: 0
success, 1 the command failed on its input (one line on stderr), 2 bad usage.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from offsetscope.cli import alerts, decode, ingest, init, redecode, simulate, sql

Handler = Callable[[argparse.Namespace], int]

COMMANDS = (decode, simulate, sql, ingest, alerts, redecode, init)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="offsetscope",
        description="Decode Kafka's internal topics and query their history.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except BrokenPipeError:
        # The reader went away (``| head``): not an error of ours. Point stdout at devnull so
        # the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
