"""The alerts job: the alert rules, evaluated as the history tables change (``offsetscope alerts``).

Run with ``python -m jobs.alerts --env local`` (or ``spark-submit jobs/alerts.py --env prod``);
everything else comes from ``conf/`` (``[alerts]``: rules, overrides, notifiers, trigger;
``[storage]``/``[tables]``: where the tables and checkpoints are).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from offsetscope import cli


def main(argv: Sequence[str] | None = None) -> int:
    """``offsetscope alerts`` with this job's arguments (``--env``, ``--conf``)."""
    return cli.main(["alerts", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
