"""The ``offsetscope`` command line: one sub-command per module of this package.

Sub-commands::

    offsetscope decode record --topic __consumer_offsets --key HEX [--value HEX]   (decode)
    offsetscope decode segment FILE.log [--format json|dump-log] [--topic T]       (decode)
    offsetscope partition-for ID [--partitions 50]                                 (decode)
    offsetscope simulate SCENARIO --out DIR | --list                               (simulate)
    offsetscope sql "SELECT ..." [--env E]                                         (sql)
    offsetscope ingest [--env E] [--conf F]                                        (ingest)
    offsetscope alerts [--env E] [--conf F] [--follow]                             (alerts)
    offsetscope group list | describe G | lag G | history G                        (group)
    offsetscope txn list | hanging                                                 (txn)
    offsetscope report [--group G] --out FILE.html                                 (report)
    offsetscope metrics serve [--port 9308]                                        (metrics)
    offsetscope check-access [--topic T]                                           (check_access)
    offsetscope redecode [--since T] [--tables T1,T2] [--stop-ingest] [--env E]    (redecode)
    offsetscope init [DIR] [--force]                                               (init)
    offsetscope --version

Each module adds its parsers through ``register(subparsers)`` and imports what its handler needs
(Spark, the simulator) inside the handler, so ``decode`` never pays for a JVM. Commands that
print rows take ``--format table|json|csv``. Exit codes: 0 success, 1 the command failed on its
input (one line on stderr), 2 bad usage -- a bad argument, a configuration key that does not
exist or a value it refuses, a missing ``conf/<env>.toml`` -- also one line, never a traceback.

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
from importlib import metadata

from offsetscope import config, logs, paths
from offsetscope.cli import (
    alerts,
    check_access,
    decode,
    group,
    ingest,
    init,
    metrics,
    redecode,
    report,
    simulate,
    sql,
    txn,
)
from offsetscope.cli.common import UsageError, load_config, reads_config

Handler = Callable[[argparse.Namespace], int]

log = logging.getLogger("offsetscope.cli")

COMMANDS = (
    decode,
    simulate,
    sql,
    ingest,
    alerts,
    group,
    txn,
    report,
    metrics,
    check_access,
    redecode,
    init,
)


def version() -> str:
    """The installed package's version."""
    try:
        return metadata.version("offsetscope")
    except metadata.PackageNotFoundError:  # run from a source tree without an install
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="offsetscope",
        description="Decode Kafka's internal topics and query their history.",
    )
    parser.add_argument("--version", action="version", version=f"offsetscope {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        if reads_config(args):
            cfg = load_config(args)
            logs.configure(cfg.logging)
            # Which configuration a job runs with, first in its log (a deployment's first
            # question); a command that prints rows keeps stderr for its one-line errors.
            log.log(
                logging.INFO if getattr(args, "job", False) else logging.DEBUG,
                "offsetscope %s --env %s%s: configuration from %s",
                args.command,
                args.env,
                f" --conf {args.conf}" if args.conf else "",
                config.default_conf_dir(),
            )
        else:
            logs.configure(config.LoggingConfig())
        return handler(args)
    except (UsageError, config.InvalidConfigError, paths.InvalidLocationError) as exc:
        # The user's mistake (a flag, a key in conf/, a missing file, a location that is no
        # URI): say which, in one line.
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 2
    except (PermissionError, paths.StorageAccessError) as exc:
        # A missing ACL (offsetscope.secrets.access.KafkaAccessError) or a storage location the
        # job cannot reach or write, found before its first micro-batch: named, no traceback.
        print(f"offsetscope {args.command}: {exc}", file=sys.stderr, flush=True)
        return 1
    except BrokenPipeError:
        # The reader went away (``| head``): not an error of ours. Point stdout at devnull so
        # the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
