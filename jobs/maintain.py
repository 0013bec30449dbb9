"""The maintenance job: retention, downsampling, OPTIMIZE, VACUUM (``offsetscope maintain``).

Run with ``python -m jobs.maintain --env local [--tables raw_records,...]`` (or
``spark-submit jobs/maintain.py --env prod``); the rules come from ``[maintenance]`` in ``conf/``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from offsetscope import cli


def main(argv: Sequence[str] | None = None) -> int:
    """``offsetscope maintain`` with this job's arguments."""
    return cli.main(["maintain", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
