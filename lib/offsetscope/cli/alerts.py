"""``offsetscope alerts``: the alert rules over the history tables (:mod:`offsetscope.alerts`).

::

    offsetscope alerts [--env local] [--conf extra.toml]

It follows the change data feed of the ``fold_state`` table the ingest job writes, evaluates the
rules for the groups and transactional ids each change names, MERGEs the ``alerts`` table and
notifies; everything else comes from ``conf/`` (``[alerts]``: rules, overrides, notifiers,
trigger; ``[storage]``/``[tables]``: where the tables and checkpoints are). ``python -m
jobs.alerts`` and the wheel's ``offsetscope-alerts`` run the same.
"""

from __future__ import annotations

import argparse
from typing import Any

from offsetscope.cli.common import load_config, register_job


def register(subparsers: Any) -> None:
    """Add ``alerts`` to the ``offsetscope`` command."""
    register_job(subparsers, "alerts", "run the alert rules (see [alerts])", run)


def run(args: argparse.Namespace) -> int:
    """Load the configuration, build the session, run the alerts query; 0 when it ends cleanly."""
    from offsetscope.alerts import runner
    from offsetscope.spark.session import build_job_session

    cfg = load_config(args)
    spark = build_job_session(cfg, app_name=f"{cfg.spark.app_name}-alerts")
    done = runner.run(spark, cfg)
    rows = {r.alert_id: r for e in done.evaluations for r in e.rows}
    still_open = sum(1 for r in rows.values() if r.status == "open")
    print(
        f"alerts: {len(done.evaluations)} evaluations, {len(rows)} alerts seen, {still_open} open"
    )
    return 0
