"""``make bench``: run the benchmarks, write ``bench/results.json`` and ``docs/benchmarks.md``.

Usage::

    python -m bench.run [--only NAME ...] [--runs N] [--scale F]
    make bench [BENCH_ONLY="decode pipeline"] [BENCH_SCALE=0.01]

Each benchmark module exposes ``run(runs, scale) -> list[Metric]``; every figure is the median of
``runs`` samples taken in this one invocation (ratios compare tools measured side by side).
Targets are the issue's goals, printed next to each figure; a benchmark never fails a build on
speed -- it reports.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Sequence

from bench.common import Finding, Metric, save_results

# name -> module; each module has run(runs: int, scale: float) -> list[Metric]
BENCHMARKS: dict[str, str] = {
    "decode": "bench.decode",
    "framing": "bench.framing",
    "pipeline": "bench.pipeline",
    "burrow": "bench.burrow",
}
TARGETS: dict[str, str] = {
    "decode_records_per_s": ">= 500,000 per core",
    "cli_vs_dumplog_ratio": ">= 2x",
    "framing_single_record_batches_per_s": "",
    "pipeline_records_per_s": ">= 2x Burrow; aim > 250,000 on 2 cores",
    "history_scaling_ratio": "<= 1.3",
}

# "What limits it", per figure, from the profiles of the last full-size run (per-phase times in
# bench/results.json: pipeline_records_per_s.phase_seconds_total).
LIMITS: dict[str, str] = {}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        nargs="*",
        choices=sorted(BENCHMARKS),
        default=os.environ.get("BENCH_ONLY", "").split() or None,
        help="benchmarks to run (default: $BENCH_ONLY or all)",
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--scale",
        type=float,
        default=float(os.environ.get("BENCH_SCALE", "1")),
        help="multiply every input size, e.g. 0.01 for a quick check (default: $BENCH_SCALE or 1)",
    )
    args = parser.parse_args(argv)
    names = args.only or list(BENCHMARKS)
    metrics: list[Metric | Finding] = []
    for name in names:
        print(f"bench: {name} ...", flush=True)
        try:
            module = importlib.import_module(BENCHMARKS[name])
            produced: list[Metric | Finding] = module.run(args.runs, args.scale)
        except Exception as exc:  # noqa: BLE001 -- one failed benchmark must not lose the others
            traceback.print_exc()
            produced = [Finding(f"{name} failed", f"{type(exc).__name__}: {str(exc)[-1500:]}")]
        for m in produced:
            if isinstance(m, Finding):
                print(f"  finding {m.name}: {m.text}")
            else:
                samples = ", ".join(f"{s:,.1f}" for s in m.samples)
                print(f"  {m.name}: {m.median:,.1f} {m.unit}  (samples {samples})")
        metrics.extend(produced)
    save_results(metrics, TARGETS, LIMITS)
    print("bench: wrote bench/results.json and docs/benchmarks.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
