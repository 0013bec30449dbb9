"""``offsetscope metrics serve``: Prometheus gauges from the tables (:mod:`offsetscope.ops.metrics`).

::

    offsetscope metrics serve [--host 127.0.0.1] [--port 9308] [--interval 30s] [--include-own]
                              [--cluster NAME]

Reads the tables every ``--interval`` and serves the last reading at ``/metrics`` until stopped
(SIGINT or SIGTERM). ``docs/operations.md`` lists the metrics and their kminion, Burrow and
kafka-lag-exporter counterparts.
"""

from __future__ import annotations

import argparse
import signal
import threading
from typing import Any

from offsetscope import config
from offsetscope.cli.common import cluster_arg, env_args, positive_int, queries_for


def _interval(text: str) -> float:
    try:
        return config.duration_ms(text) / 1000.0
    except config.InvalidConfigError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 30s") from None


def register(subparsers: Any) -> None:
    """Add ``metrics serve`` to the ``offsetscope`` command."""
    metrics = subparsers.add_parser("metrics", help="Prometheus gauges from the tables")
    sub = metrics.add_subparsers(dest="metrics_command", required=True)
    serve = sub.add_parser("serve", help="serve /metrics until stopped")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=positive_int, default=9308, help="port (default 9308)")
    serve.add_argument(
        "--interval", type=_interval, default=30.0, help="how often the tables are read (30s)"
    )
    serve.add_argument(
        "--include-own", action="store_true", help="include offsetscope's own consumer groups"
    )
    env_args(serve)
    cluster_arg(serve)
    serve.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from offsetscope.ops import metrics

    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():  # signals reach the main thread
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
    queries = queries_for(args, "metrics")
    metrics.serve(
        queries,
        host=args.host,
        port=args.port,
        interval_s=args.interval,
        stop=stop,
        say=lambda line: print(line, flush=True),
    )
    return 0
