"""``offsetscope simulate``: run a scenario on the bundled coordinator (:mod:`offsetscope.sim`).

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
import sys
from pathlib import Path
from typing import Any

# The simulator (spec, engine, coordinators) is imported by the handler, not here: the
# ``offsetscope`` parser registers this sub-command for every command, and ``decode`` should
# not pay for it.


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
    from offsetscope.sim.scenarios.spec import ScenarioError

    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ScenarioError(f"parameters.{name or pair}", "--param wants NAME=VALUE")
        out[name] = value
    return out


def run(args: argparse.Namespace) -> int:
    """The ``simulate`` handler."""
    from offsetscope.sim.scenarios.catalogue import names
    from offsetscope.sim.scenarios.spec import ScenarioError

    if args.list:
        from offsetscope.sim.scenarios.spec import load_scenario

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
    from offsetscope.sim.scenarios.run import simulate_to

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
            # On stderr: stdout is the summary line.
            progress=None if args.quiet else lambda line: print(line, file=sys.stderr, flush=True),
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
