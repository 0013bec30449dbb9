"""What every command that reads ``conf/`` shares: the ``--env``/``--conf`` arguments."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from offsetscope import config, paths


def env_args(parser: argparse.ArgumentParser) -> None:
    """Add ``--env`` (``conf/<env>.toml``) and ``--conf`` (a further TOML file, read last)."""
    parser.add_argument("--env", default="local", help="conf/<env>.toml (default local)")
    parser.add_argument("--conf", type=Path, default=None, help="a further TOML file, last")


def reads_config(args: argparse.Namespace) -> bool:
    """Whether the command was given ``--env``/``--conf`` (see :func:`env_args`)."""
    return hasattr(args, "env") and hasattr(args, "conf")


def load_config(args: argparse.Namespace) -> config.Config:
    """The configuration the command's ``--env`` and ``--conf`` name, loaded once per command
    (the ``offsetscope`` entry point reads it first for ``[logging]``)."""
    loaded: config.Config | None = getattr(args, "loaded_config", None)
    if loaded is None:
        loaded = config.load(args.env, extra=args.conf)
        args.loaded_config = loaded
    return loaded


# What a job refuses to start on: the message names the key and the cause, so one line on stderr
# says it all (a traceback would bury it).
START_ERRORS = (config.InvalidConfigError, paths.InvalidLocationError, paths.StorageAccessError)


def register_job(
    subparsers: Any, name: str, help_text: str, handler: Callable[[argparse.Namespace], int]
) -> None:
    """Add a sub-command that takes only ``--env`` and ``--conf`` (a job). A configuration or
    storage error at start is one line on stderr and exit code 1."""

    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except START_ERRORS as exc:
            print(f"offsetscope {name}: {exc}", file=sys.stderr, flush=True)
            return 1

    parser = subparsers.add_parser(name, help=help_text)
    env_args(parser)
    parser.set_defaults(handler=run)
