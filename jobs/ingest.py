"""The ingest job: internal topics -> Delta tables (``offsetscope.pipelines.ingest``).

Run with ``python -m jobs.ingest --env local`` (or ``spark-submit jobs/ingest.py --env prod``);
everything else comes from ``conf/``: the source (``[sources]``), the tables and checkpoints
(``[storage]``, ``[tables]``) and the trigger (``[pipeline]``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from offsetscope import config
from offsetscope.pipelines import ingest
from offsetscope.spark.session import build_job_session


def main(argv: Sequence[str] | None = None) -> int:
    """Load the configuration, build the session, run the query; 0 when it ends cleanly."""
    parser = argparse.ArgumentParser(prog="jobs.ingest", description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="local", help="conf/<env>.toml (default local)")
    parser.add_argument("--conf", type=Path, default=None, help="a further TOML file, last")
    args = parser.parse_args(argv)
    cfg = config.load(args.env, extra=args.conf)
    spark = build_job_session(cfg, app_name=f"{cfg.spark.app_name}-ingest")
    reports = ingest.run(spark, cfg, progress=lambda r: print(r.line(), flush=True))
    print(f"ingest: {len(reports)} micro-batches, {sum(r.rows_in for r in reports)} records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
