"""``python -m offsetscope.scenarios simulate ...``: the simulate command on its own."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from offsetscope.scenarios.cli import register


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m offsetscope.scenarios")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
