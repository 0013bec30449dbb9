"""``offsetscope ingest``: the ingest query (:mod:`offsetscope.pipelines.ingest`).

::

    offsetscope ingest [--env local] [--conf extra.toml]

It runs with ``[pipeline]``'s trigger and prints one progress line per micro-batch; everything
else comes from ``conf/``: the source (``[sources]``), the tables and checkpoints (``[storage]``,
``[tables]``). ``python -m jobs.ingest`` and the wheel's ``offsetscope-ingest`` run the same.
"""

from __future__ import annotations

import argparse
from typing import Any

from offsetscope.cli.common import load_config, register_job


def register(subparsers: Any) -> None:
    """Add ``ingest`` to the ``offsetscope`` command."""
    register_job(subparsers, "ingest", "run the ingest query (see [pipeline])", run)


def run(args: argparse.Namespace) -> int:
    """Load the configuration, build the session, run the query; 0 when it ends cleanly."""
    from offsetscope.pipelines import ingest
    from offsetscope.spark.session import build_job_session

    def say(line: str) -> None:
        print(line, flush=True)

    cfg = load_config(args)
    say(f"ingest: starting Spark ({cfg.spark.master}) and its JVM ...")
    spark = build_job_session(cfg, app_name=f"{cfg.spark.app_name}-ingest")
    reports = ingest.run(spark, cfg, say=say)
    print(f"ingest: {len(reports)} micro-batches, {sum(r.rows_in for r in reports)} records")
    return 0
