"""What every command that reads ``conf/`` shares: the ``--env``/``--conf`` arguments."""

from __future__ import annotations

import argparse
from pathlib import Path

from offsetscope import config


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
