"""The ingest job: internal topics -> Delta tables (``offsetscope ingest``).

Run with ``python -m jobs.ingest --env local`` (or ``spark-submit jobs/ingest.py --env prod``);
everything else comes from ``conf/``: the source (``[sources]``), the tables and checkpoints
(``[storage]``, ``[tables]``) and the trigger (``[pipeline]``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from offsetscope import cli


def main(argv: Sequence[str] | None = None) -> int:
    """``offsetscope ingest`` with this job's arguments (``--env``, ``--conf``)."""
    return cli.main(["ingest", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
