"""What the commands share: ``--env``/``--conf``, ``--format``, time windows, usage errors."""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from offsetscope import config

FORMATS = ("table", "json", "csv")


class UsageError(ValueError):
    """A mistake in how a command was called: one line on stderr, exit code 2."""


def env_args(parser: argparse.ArgumentParser) -> None:
    """Add ``--env`` (``conf/<env>.toml``) and ``--conf`` (a further TOML file, read last)."""
    parser.add_argument("--env", default="local", help="conf/<env>.toml (default local)")
    parser.add_argument("--conf", type=Path, default=None, help="a further TOML file, last")


def reads_config(args: argparse.Namespace) -> bool:
    """Whether the command was given ``--env``/``--conf`` (see :func:`env_args`)."""
    return hasattr(args, "env") and hasattr(args, "conf")


def load_config(args: argparse.Namespace) -> config.Config:
    """The configuration the command's ``--env`` and ``--conf`` name, loaded once per command
    (the ``offsetscope`` entry point reads it first for ``[logging]``)."""
    loaded: config.Config | None = getattr(args, "loaded_config", None)
    if loaded is None:
        loaded = config.load(args.env, extra=args.conf)
        args.loaded_config = loaded
    return loaded


def register_job(
    subparsers: Any, name: str, help_text: str, handler: Callable[[argparse.Namespace], int]
) -> argparse.ArgumentParser:
    """Add a job: a sub-command that reads ``conf/`` (``--env``, ``--conf``) and runs
    ``handler``, whose log starts with the configuration it runs with; the ``offsetscope`` entry
    point turns its start errors into one line (see the package)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(name, help=help_text)
    env_args(parser)
    parser.set_defaults(handler=handler, job=True)
    return parser


def format_arg(parser: argparse.ArgumentParser) -> None:
    """Add ``--format table|json|csv`` (how rows are printed)."""
    parser.add_argument(
        "--format", choices=FORMATS, default="table", help="how rows are printed (default table)"
    )


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def instant(text: str) -> int:
    """An argparse type: ``now`` or an ISO-8601 time (UTC unless it says) -> epoch ms."""
    if text == "now":
        return int(time.time() * 1000)
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time: give 'now' or ISO 8601, e.g. 2026-11-22T14:00:00"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return int(parsed.timestamp() * 1000)


def since(text: str) -> str:
    """An argparse type: a duration back from ``--as-of`` (``1h``, ``30m``) or an ISO time."""
    try:
        config.duration_ms(text)
    except config.InvalidConfigError:
        instant(text)  # raises the argparse error naming both forms
    return text


def window_args(parser: argparse.ArgumentParser, default_since: str = "24h") -> None:
    """Add ``--as-of`` (the moment asked about) and ``--since`` (how far back)."""
    parser.add_argument(
        "--as-of",
        type=instant,
        default=None,
        metavar="TIME",
        help="the moment asked about: now (default) or an ISO time",
    )
    parser.add_argument(
        "--since",
        type=since,
        default=default_since,
        metavar="SINCE",
        help=f"how far back: a duration before --as-of or an ISO time (default {default_since})",
    )


def window_of(args: argparse.Namespace) -> tuple[int, int]:
    """``(since_ms, as_of_ms)`` from ``--since`` and ``--as-of``."""
    as_of = args.as_of if args.as_of is not None else int(time.time() * 1000)
    try:
        start = as_of - config.duration_ms(args.since)
    except config.InvalidConfigError:
        start = instant(args.since)
    if start >= as_of:
        raise UsageError(f"--since {args.since} is not before --as-of")
    return start, as_of


def _plain(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "asDict"):
        return _plain(value.asDict(recursive=True))
    return value


def _cell(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, float):
        return f"{value:.1f}"
    if isinstance(value, list | tuple):
        return ",".join(str(_plain(v)) for v in value)
    return "NULL" if value is None else str(_plain(value))


def render_rows(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    fmt: str,
    *,
    truncate: int = 60,
) -> str:
    """Rows as ``table`` (aligned text), ``json`` (an array of objects) or ``csv``."""
    if fmt == "json":
        return json.dumps(
            [{c: _plain(v) for c, v in zip(columns, r, strict=True)} for r in rows], indent=1
        )
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        for r in rows:
            # Full precision in files; the table rounds seconds to tenths for reading.
            writer.writerow(
                ["" if v is None else repr(v) if isinstance(v, float) else _cell(v) for v in r]
            )
        return out.getvalue().rstrip("\n")
    from offsetscope.cli.sql import format_table

    return format_table(columns, [[_cell(v) for v in r] for r in rows], truncate)


def print_rows(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str, *, empty: str = ""
) -> None:
    """Print rows in ``fmt``; a table with no rows prints ``empty`` instead when given."""
    if fmt == "table" and not rows and empty:
        print(empty)
        return
    print(render_rows(columns, rows, fmt))


def fail(message: str) -> int:
    """One line on stderr; exit code 1 (the command failed on its input)."""
    print(f"error: {message}", file=sys.stderr)
    return 1


def spark_for(cfg: config.Config, command: str) -> Any:
    """The job session for ``command``, with Spark's own console chatter off (the rows are the
    output)."""
    from offsetscope.spark.session import build_job_session

    spark = build_job_session(
        cfg,
        app_name=f"{cfg.spark.app_name}-{command}",
        extra_conf={"spark.ui.showConsoleProgress": "false"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def cluster_arg(parser: argparse.ArgumentParser) -> None:
    """Add ``--cluster``: only one cluster's rows (group and transactional ids are unique
    within a cluster only)."""
    parser.add_argument(
        "--cluster", default=None, help="only this Kafka cluster's rows (default: every cluster)"
    )


def queries_for(args: argparse.Namespace, command: str) -> Any:
    """:class:`offsetscope.ops.queries.Queries` over the tables ``args`` configure (and the
    cluster ``--cluster`` names)."""
    from offsetscope.ops.queries import Queries

    cfg = load_config(args)
    return Queries(
        spark_for(cfg, command),
        cfg,
        include_own=getattr(args, "include_own", False),
        cluster=getattr(args, "cluster", None),
    )
