"""``offsetscope alerts``: the alert rules over the history tables (:mod:`offsetscope.alerts`).

::

    offsetscope alerts [--env local] [--conf extra.toml] [--follow] [--format table|json|csv]

It follows the change data feed of the ``fold_state`` table the ingest job writes, evaluates the
rules for the groups and transactional ids each change names, MERGEs the ``alerts`` table and
notifies; everything else comes from ``conf/`` (``[alerts]``: rules, overrides, notifiers;
``[storage]``/``[tables]``: where the tables and checkpoints are). By default it evaluates what
the ingest wrote since its last run, once, prints the alerts open now and ends -- whatever
``[alerts] trigger`` says; ``--follow`` keeps running on that trigger instead. ``python -m
jobs.alerts`` and the wheel's ``offsetscope-alerts`` run the same.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
from typing import Any

from offsetscope.cli.common import format_arg, load_config, print_rows, register_job, spark_for

_SHOWN = ("rule", "subject", "detail", "severity", "episode_start", "value", "threshold", "reason")


def register(subparsers: Any) -> None:
    """Add ``alerts`` to the ``offsetscope`` command."""
    parser = register_job(subparsers, "alerts", "run the alert rules once (see [alerts])", run)
    parser.add_argument(
        "--follow",
        action="store_true",
        help="keep evaluating on [alerts] trigger instead of once",
    )
    format_arg(parser)


def run(args: argparse.Namespace) -> int:
    """Load the configuration, build the session, run the alerts query; 0 when it ends cleanly."""
    from offsetscope.alerts import runner
    from offsetscope.alerts import tables as alert_tables
    from offsetscope.alerts.model import AlertRow
    from offsetscope.config import clusters
    from offsetscope.quality import tables as qtables

    cfg = load_config(args)
    if not args.follow:
        cfg = dataclasses.replace(
            cfg, alerts=dataclasses.replace(cfg.alerts, trigger="available_now")
        )
    spark = spark_for(cfg, "alerts")
    done = runner.run(spark, cfg)
    seen = {r.alert_id for e in done.evaluations for r in e.rows}
    # Every alert open now, not only those this run touched: a run with nothing new to
    # evaluate still shows what is open.
    table = qtables.qualified_name(cfg, alert_tables.ALERTS)
    still_open = sorted(
        qtables.rows_of(spark.table(table).where("status = 'open'"), AlertRow),
        key=lambda r: (r.severity, r.rule, r.cluster or "", r.subject, r.detail),
    )
    # The same group id can be in two clusters: name the cluster when there are several.
    shown = ("cluster", *_SHOWN) if len(clusters(cfg)) > 1 else _SHOWN
    print_rows(
        shown,
        [
            tuple(
                _ms(v) if c == "episode_start" else v
                for c, v in ((c, getattr(r, c)) for c in shown)
            )
            for r in still_open
        ],
        args.format,
        empty="(no open alerts)",
    )
    if args.format == "table":
        print(
            f"alerts: {len(done.evaluations)} evaluations, {len(seen)} alerts seen, "
            f"{len(still_open)} open"
        )
    return 0


def _ms(value: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(value / 1000, tz=dt.UTC)
