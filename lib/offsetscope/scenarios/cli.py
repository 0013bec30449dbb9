"""``offsetscope simulate``: run a scenario on the bundled coordinator.

::

    offsetscope simulate SCENARIO --out DIR [--seed N] [--param NAME=VALUE ...] [--replace]
    offsetscope simulate SCENARIO --bootstrap HOST:PORT [--topic-prefix P]
                                  [--offsets-topic T] [--transaction-topic T]
    offsetscope simulate --list

``SCENARIO`` is a catalogue name (``--list`` shows them) or a path to a scenario file. With
``--out`` the run writes a Kafka log directory (``__consumer_offsets-N``,
``__transaction_state-N``, data-topic partitions; segments as a broker writes them) plus
``ground_truth.jsonl``; with ``--bootstrap`` it produces the same records to mirror topics on a
real broker (both may be given). The same scenario and seed give the same bytes every run.

Exit codes: 0 done, 1 the scenario is invalid (one line naming the key path) or the output
could not be written, 2 bad usage.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

# The scenario modules (spec, engine, coordinator) are imported by the handlers, not here: the
# ``offsetscope`` parser registers this sub-command for every command, and ``decode`` should
# not pay for them.


def register(subparsers: Any) -> None:
    """Add the ``simulate`` sub-command to the ``offsetscope`` parser."""
    parser = subparsers.add_parser(
        "simulate",
        help="run a scenario on the bundled coordinator: log directory + ground truth",
        description=__doc__.split("\n\n", 2)[1] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("scenario", nargs="?", help="catalogue name or scenario file")
    parser.add_argument("--list", action="store_true", help="list the catalogue scenarios")
    parser.add_argument("--out", type=Path, help="write the log directory here")
    parser.add_argument("--replace", action="store_true", help="overwrite partitions in --out")
    parser.add_argument("--seed", type=int, default=None, help="override scenario.seed")
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a [parameters] value (repeatable)",
    )
    parser.add_argument("--no-ground-truth", action="store_true", help="skip ground_truth.jsonl")
    parser.add_argument("--bootstrap", help="also produce the records to this broker")
    parser.add_argument("--topic-prefix", default="sim.", help="mirror name prefix of data topics")
    parser.add_argument("--offsets-topic", default="sim.consumer_offsets")
    parser.add_argument("--transaction-topic", default="sim.transaction_state")
    parser.add_argument(
        "--keep-timestamps", action="store_true", help="mirror with the virtual timestamps"
    )
    parser.add_argument(
        "--include-aborted", action="store_true", help="mirror aborted transactional records too"
    )
    parser.add_argument("--quiet", action="store_true", help="print nothing but errors")
    parser.set_defaults(handler=run)


def _params(pairs: list[str]) -> dict[str, str]:
    from offsetscope.scenarios.spec import ScenarioError

    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ScenarioError(f"parameters.{name or pair}", "--param wants NAME=VALUE")
        out[name] = value
    return out


def run(args: argparse.Namespace) -> int:
    """The ``simulate`` handler."""
    from offsetscope.scenarios.catalogue import names
    from offsetscope.scenarios.spec import ScenarioError

    if args.list:
        from offsetscope.scenarios.spec import load_scenario

        for name in names():
            print(f"{name:22} {load_scenario(name).description}")
        return 0
    if not args.scenario:
        print(
            "error: a scenario (name or file) is required; --list shows the catalogue",
            file=sys.stderr,
        )
        return 2
    if args.out is None and args.bootstrap is None:
        print("error: give --out DIR and/or --bootstrap HOST:PORT", file=sys.stderr)
        return 2
    try:
        summary = simulate_to(
            args.scenario,
            out=args.out,
            params=_params(args.param),
            seed=args.seed,
            replace=args.replace,
            ground_truth=not args.no_ground_truth,
            bootstrap=args.bootstrap,
            mirror={
                "prefix": args.topic_prefix,
                "offsets_topic": args.offsets_topic,
                "transaction_topic": args.transaction_topic,
                "keep_timestamps": args.keep_timestamps,
                "include_aborted": args.include_aborted,
            },
        )
    except ScenarioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except FileExistsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(summary)
    return 0


def simulate_to(
    scenario: str,
    *,
    out: Path | None,
    params: dict[str, str] | None = None,
    seed: int | None = None,
    replace: bool = False,
    ground_truth: bool = True,
    bootstrap: str | None = None,
    mirror: dict[str, Any] | None = None,
) -> str:
    """Run a scenario and write its outputs; returns a one-line summary.

    Raises:
        ScenarioError: the scenario is invalid.
        FileExistsError: ``out`` holds partitions already and ``replace`` is False.
    """
    import time

    from offsetscope.scenarios.engine import simulate
    from offsetscope.scenarios.logdir import write_log_dir
    from offsetscope.scenarios.spec import load_scenario

    spec = load_scenario(scenario, params=params, seed=seed)
    started = time.perf_counter()
    result = simulate(spec)
    parts = [
        (
            f"simulate: {spec.name} (seed {spec.seed}): {spec.duration_ms / 1000:g} s of virtual "
            f"time in {result.stats.wall_seconds:.1f} s"
        )
    ]
    if out is not None:
        # Big logs are written by two processes (the bytes are the same either way).
        total = sum(len(b.records) for log in result.cluster.logs for b in log.batches)
        workers = min(2, os.cpu_count() or 1) if total > 200_000 else 1
        written = write_log_dir(
            result.cluster.logs, out, spec.log, seed=spec.seed, replace=replace, workers=workers
        )
        records = sum(w.records for w in written)
        segments = sum(w.segments for w in written)
        parts.append(f"{records} records in {len(written)} partitions ({segments} segments)")
        if ground_truth:
            lines = result.cluster.truth.write(out / "ground_truth.jsonl")
            parts.append(f"{lines} ground-truth lines")
        parts.append(f"-> {out}")
    if bootstrap is not None:
        from offsetscope.scenarios.mirror import MirrorNames, mirror_to_broker

        options = dict(mirror or {})
        names = MirrorNames(
            offsets_topic=options.get("offsets_topic", "sim.consumer_offsets"),
            transaction_topic=options.get("transaction_topic", "sim.transaction_state"),
            prefix=options.get("prefix", "sim."),
        )
        report = mirror_to_broker(
            result.cluster.logs,
            bootstrap,
            names=names,
            start_ms=spec.start_ms,
            keep_timestamps=bool(options.get("keep_timestamps", False)),
            include_aborted=bool(options.get("include_aborted", False)),
        )
        parts.append(
            f"mirrored {report.produced} records to {len(report.topics)} topics on {bootstrap}"
        )
    parts.append(f"total {time.perf_counter() - started:.1f} s")
    return "; ".join(parts)
