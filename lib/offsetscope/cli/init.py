"""``offsetscope init``: the configuration templates, written where a deployment keeps its own.

::

    offsetscope init [DIR] [--force]

An installed wheel carries ``conf/*.toml`` and their JSON Schema (``offsetscope._conf``); this
writes them to ``DIR`` (default ``./conf``) to be edited, and refuses to overwrite a file there
unless ``--force`` is given. Point ``OFFSETSCOPE_CONF_DIR`` at the folder, or run the jobs from
its parent.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from offsetscope import config


def register(subparsers: Any) -> None:
    """Add ``init`` to the ``offsetscope`` command."""
    parser = subparsers.add_parser(
        "init", help="write the configuration templates (conf/*.toml, schema)"
    )
    parser.add_argument("dir", nargs="?", type=Path, default=Path("conf"), help="default: ./conf")
    parser.add_argument("--force", action="store_true", help="overwrite files already there")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Write the templates; 1 when a file is already there (nothing is written then)."""
    try:
        written = config.write_templates(args.dir, overwrite=args.force)
    except FileExistsError as exc:
        print(f"error: {exc} (--force overwrites)", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0
