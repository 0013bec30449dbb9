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
    "pipeline_broker": "bench.pipeline_broker",
    "burrow": "bench.burrow",
    "freshness": "bench.freshness",
}
TARGETS: dict[str, str] = {
    "decode_records_per_s": ">= 500,000 per core",
    "cli_vs_dumplog_ratio": ">= 2x",
    "framing_single_record_batches_per_s": "",
    "pipeline_records_per_s": ">= 2x Burrow; aim > 250,000 on 2 cores",
    "history_scaling_ratio": "<= 1.3",
    "pipeline_vs_burrow_ratio": ">= 2x",
    "freshness_p99_s": "<= 2 trigger intervals (20 s)",
}

# "What limits it", per figure, from the profiles of the last full-size run (per-phase times in
# bench/results.json: pipeline_records_per_s.phase_seconds_total).
LIMITS: dict[str, str] = {
    "Measuring conditions": (
        "The machine (2 cores) was shared with other engineers' test suites and Spark jobs "
        "during every measurement of this run: load average 9 to 20, i.e. each process got a "
        "fraction of a core. Single-core figures are pinned with taskset but still share that "
        "core; the pipeline figures are the most affected (three to four Spark JVMs ran at "
        "once). Ratios measured side by side (dump-log vs DumpLogSegments) are the most "
        "trustworthy numbers here; absolute pipeline rates are lower bounds."
    ),
    "decode_records_per_s": (
        "Framing, not decoding, is the larger share for this input: its batches hold 1-8 "
        "records as OffsetCommit requests write them, and segment framing "
        "(`logdir.frame_file` / `_frame`, a Python step per batch) is the top own-time entry "
        "of a cProfile of the worker after imports; the per-column decode is vectorised. "
        "`framing_100_record_batches_per_s` against `framing_single_record_batches_per_s` "
        "shows the per-batch cost. The whole-process CLI adds interpreter start-up and text "
        "formatting; DumpLogSegments pays JVM start-up and Jackson."
    ),
    "pipeline_records_per_s": (
        "A micro-batch is a sequence of phases with a large fixed cost: one batch of 10,200 "
        "records took 185 s, of 102,000 records 244 s and of 1,000,000 records 612 s on the "
        "loaded machine (about 0.4 ms per extra record on top of roughly 180-250 s per "
        "batch; the 20,000-record batch after the 1M one took 254 s). Profile of the 1M "
        "batch (`batches[].phases` in results.json; the phases add up to the batch time "
        "but for the untimed group fold): table writes 286 s wall (13 Delta writes, 4 at a "
        "time, each inflated by those it overlaps: MERGE group_generations 187 s for 20k "
        "rows, append group_metadata_events 149 s for 20k rows with member arrays, append "
        "offset_commits 127 s for 980k rows, MERGE partition_lag 99 s and "
        "partition_assignments 89 s for 200k rows each, group_state_transitions 90 s, append "
        "raw_records 88 s), read 87 s (the Python segment source framing the batch, and the "
        "per-partition statistics), commit summary 84 s (aggregating 980k commits to 200k "
        "group/partition rows and collecting them to the driver), decode 62 s, fold-state "
        "load 31 s and save 18 s, lag 24 s. The decoder alone does a million records in "
        "about 6 s of one core (decode_records_per_s); the rest is Spark job scheduling, "
        "Python/JVM round trips, driver-side row conversion and one Delta commit per table "
        "per batch. The driver JVM peaked at 5.2 GiB RSS. Levers, in order: fewer, larger "
        "batches (max_records_per_trigger here is 1,000,000); one MERGE instead of five for "
        "the group-history tables fed by one fold; the commit summary kept columnar "
        "(Arrow) instead of collected as Rows; and the measurement repeated on an idle "
        "machine."
    ),
    "history_scaling_ratio": (
        "Measured 1.21: the same 20,000-record batch took 97 s after 20,000 "
        "stored records and 118 s after 200,000. The phase that grew most is the "
        "partition_lag MERGE (27 s -> 40 s: pruned to the batch's dates, but all of this "
        "input is one day, so that partition grows with every batch); the rest moved within the noise of the "
        "shared machine (groups_current went 39 s -> 21 s). Appends (raw_records, offset_commits, the silver tables) do not read the table, and "
        "MERGEs are restricted to the batch's keys (IN-lists on the natural key, and on the "
        "date partition for offset_commits and partition_lag), so Delta prunes files by "
        "their statistics; the fold state is read per key the batch touches. What still "
        "grows with history is the Delta log replay per write (snapshotPartitions=1 keeps it "
        "a single task) and the files a MERGE's key IN-list cannot exclude; beyond 1,000 "
        "distinct keys in a batch (`writes.MAX_PRUNE_VALUES`) no IN-list is added at all and "
        "the MERGE joins against the whole table, which is the case for the group-history "
        "tables when a batch touches thousands of groups."
    ),
    "Burrow": (
        "On Kafka 4.4 (the harness broker) Debian's Burrow 1.2.1 reads nothing: every offset "
        "commit is OffsetCommitValue v4 and is dropped with `failed to decode ... reason: "
        "value version, version: 4`, and its cluster module's offset fetches are refused "
        "(`failed to fetch offsets from broker`, sarama error EOF; most likely the request "
        "versions Kafka 4 no longer accepts, KIP-896). It also panics at start without ZooKeeper (`No "
        "Zookeeper servers specified`), so the benchmark runs a ZooKeeper from the Kafka 3.9 "
        "jars for it. On Kafka 3.9.1 (value v3) it read 100,000 commits (500 groups x 20 "
        "partitions x 10) in 5.2 s from process start to its HTTP API showing every last "
        "offset: about 19,000 records/s, start-up included; it keeps only an in-memory ring "
        "per partition. offsetscope's pipeline on the same segment files ran at 387 "
        "records/s: one micro-batch with the fixed cost described under "
        "pipeline_records_per_s, for the full history in Delta. The 2x target is not met on "
        "this machine."
    ),
}


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
