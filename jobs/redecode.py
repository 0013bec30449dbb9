"""The re-decode job: ``raw_records`` decoded again, changed rows replaced (``offsetscope redecode``).

Run with ``python -m jobs.redecode --env local [--since 7d] [--tables quarantine,...]`` (or
``spark-submit jobs/redecode.py --env prod``); the tables come from ``conf/``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from offsetscope import cli


def main(argv: Sequence[str] | None = None) -> int:
    """``offsetscope redecode`` with this job's arguments."""
    return cli.main(["redecode", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
