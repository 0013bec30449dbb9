"""The ``offsetscope`` command line: one sub-command per module of this package.

Sub-commands::

    offsetscope decode record --topic __consumer_offsets --key HEX [--value HEX]   (decode)
    offsetscope decode segment FILE.log [--format json|dump-log] [--topic T]       (decode)
    offsetscope partition-for ID [--partitions 50]                                 (decode)
    offsetscope simulate SCENARIO --out DIR | --list                               (simulate)
    offsetscope sql "SELECT ..." [--env E]                                         (sql)
    offsetscope ingest [--env E] [--conf F]                                        (ingest)
    offsetscope alerts [--env E] [--conf F]                                        (alerts)
    offsetscope init [DIR] [--force]                                               (init)

Each module adds its parsers through ``register(subparsers)`` and imports what its handler needs
(Spark, the simulator) inside the handler, so ``decode`` never pays for a JVM. Exit codes: 0
success, 1 the command failed on its input (one line on stderr), 2 bad usage.

Logging is configured here, once per process and before the command runs
(:func:`offsetscope.logs.configure`): from ``[logging]`` of the configuration a command reads
(``--env``/``--conf``), or with that section's defaults for commands that read none. The jobs
(``jobs/ingest.py``, ``jobs/alerts.py``) are this function with their arguments.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence

from offsetscope import config, logs
from offsetscope.cli import alerts, decode, ingest, init, simulate, sql
from offsetscope.cli.common import load_config, reads_config

Handler = Callable[[argparse.Namespace], int]

log = logging.getLogger("offsetscope.cli")

COMMANDS = (decode, simulate, sql, ingest, alerts, init)


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
    if reads_config(args):
        try:
            cfg = load_config(args)
        except config.InvalidConfigError as exc:
            # A job's configuration error is one line naming the key, as register_job says.
            print(f"offsetscope {args.command}: {exc}", file=sys.stderr, flush=True)
            return 1
        logs.configure(cfg.logging)
        # Which configuration a job runs with, first in its log (a deployment's first question).
        log.info(
            "offsetscope %s --env %s%s: configuration from %s",
            args.command,
            args.env,
            f" --conf {args.conf}" if args.conf else "",
            config.default_conf_dir(),
        )
    else:
        logs.configure(config.LoggingConfig())
    try:
        return handler(args)
    except BrokenPipeError:
        # The reader went away (``| head``): not an error of ours. Point stdout at devnull so
        # the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
