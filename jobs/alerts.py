"""The alerts job: the alert rules, evaluated as the history tables change (``offsetscope.alerts``).

Run with ``python -m jobs.alerts --env local`` (or ``spark-submit jobs/alerts.py --env prod``).
It follows the change data feed of the ``fold_state`` table the ingest job writes, evaluates the
rules for the groups and transactional ids each change names, MERGEs the ``alerts`` table and
notifies; everything else comes from ``conf/`` (``[alerts]``: rules, overrides, notifiers,
trigger; ``[storage]``/``[tables]``: where the tables and checkpoints are).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from offsetscope import config
from offsetscope.alerts import runner
from offsetscope.spark.session import build_job_session


def build_parser() -> argparse.ArgumentParser:
    """The job's arguments: the environment and an optional extra TOML file, nothing else."""
    parser = argparse.ArgumentParser(prog="jobs.alerts", description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="local", help="conf/<env>.toml (default local)")
    parser.add_argument("--conf", type=Path, default=None, help="a further TOML file, last")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Load the configuration, build the session, run the alerts query; 0 when it ends cleanly."""
    args = build_parser().parse_args(argv)
    cfg = config.load(args.env, extra=args.conf)
    spark = build_job_session(cfg, app_name=f"{cfg.spark.app_name}-alerts")
    done = runner.run(spark, cfg)
    rows = {r.alert_id: r for e in done.evaluations for r in e.rows}
    still_open = sum(1 for r in rows.values() if r.status == "open")
    print(
        f"alerts: {len(done.evaluations)} evaluations, {len(rows)} alerts seen, {still_open} open"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
