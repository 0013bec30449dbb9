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
    "pipeline_from_broker_records_per_s": ">= 2x Burrow; aim > 250,000 on 2 cores",
    "history_scaling_ratio": "<= 1.3",
    "pipeline_vs_burrow_ratio": ">= 2x",
    "freshness_p99_s": "<= 2 trigger intervals (20 s)",
}

# "What limits it", per figure, from the profiles of the last full-size run (per-phase times in
# bench/results.json: pipeline_records_per_s.phase_seconds_total).
LIMITS: dict[str, str] = {
    "Measuring conditions": (
        "Two sets of figures. The decode, framing and Burrow figures (and "
        "pipeline_on_burrow_input / pipeline_vs_burrow) were measured while the machine (2 "
        "cores) was shared with other test suites and Spark jobs: load average 9 to 20, each "
        "process getting a fraction of a core; single-core figures are pinned with taskset but "
        "still share that core, so ratios measured side by side are the trustworthy part. The "
        "pipeline, pipeline-from-broker, history-scaling and freshness figures were measured "
        "later with nothing but the benchmark running (load average about 3: the benchmark's "
        "own JVMs and Python workers on 2 cores), one sample each."
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
        "1,020,000 records in 306.6 s (3,326 records/s) in two micro-batches: 1,000,000 in "
        "246.0 s and 20,000 in 48.5 s -- a fixed cost of roughly 40 s per batch plus about "
        "0.2 ms per record. Profile of the two batches (`batches[].phases` in results.json; "
        "the table writes run 4 at a time, so their phases overlap inside `writes`, 164 s "
        "wall): the quality gate's great-expectations validation before each gold write is "
        "the largest share (offset_commits 61 s for 980k rows, group_generations 48 s, "
        "group_state_transitions 46 s, partition_lag 46 s, member_sessions 39 s; its timers "
        "include waiting for its turn, so they overstate its own cost), then the "
        "appends (raw_records 34 s, offset_commits 24 s, group_metadata_events 15 s) and "
        "MERGEs (group_generations 19 s, groups_current 17 s); outside the writes, the commit "
        "summary 29 s (980k commits aggregated and collected to the driver), read 27 s (the "
        "Python segment source framing batches of 1-8 records), decode 25 s, lag 13 s, "
        "fold-state load 12 s and save 6 s. The decoder alone does a million records in "
        "about 6 s of one core (decode_records_per_s). Levers, in order: the quality gate on "
        "large batches (its checks as Spark aggregates over the batch instead of a "
        "great-expectations pass per table), the commit summary kept columnar (Arrow) instead "
        "of collected as Rows, one MERGE instead of five for the group-history tables fed by "
        "one fold, and framing in the columnar scan. The target (250,000 records/s) is two "
        "orders of magnitude away; the micro-batch needs that redesign, not tuning."
    ),
    "pipeline_from_broker_records_per_s": (
        "The same 1,020,000 records mirrored to a harness broker (30 s to simulate and "
        "produce, not timed) and read by Spark's Kafka source: 372 s (2,742 records/s), "
        "batches of 1,000,000 in 254.3 s and 20,000 in 109.0 s -- slower than the log "
        "directory (306.6 s) measured minutes apart. Reading is no cheaper (29.8 s against "
        "27.3 s: the Kafka source's fetches replace the Python framing), and the lag work is "
        "heavier: the end-offset sampler asks the broker (AdminClient ListOffsets) instead of "
        "reading segment files, lag 22.4 s against 13.2 s, and the quality gate on the "
        "partition_lag rows 83.8 s against 46.1 s (34.8 s of the second batch's 109 s). The "
        "rest of the profile matches the log-directory run: the gate's validation, the Delta "
        "writes and MERGEs, the commit summary and decode."
    ),
    "history_scaling_ratio": (
        "Measured 2.55 (target 1.3: not met): the same 20,000-record batch took 27.7 s after "
        "20,000 stored records and 70.6 s after 200,000. Almost all of the growth is in two "
        "phases: lag (2.1 s -> 10.1 s) and the quality gate on partition_lag rows (2.8 s -> "
        "26.2 s); writes as a whole went 13 s -> 47 s, while the appends, the groups_current "
        "MERGE, decode and the commit summary stayed flat. A likely reason, not verified: the "
        "1x history is the first 2% of a 30 s scenario whose consumers auto-commit every 5 s, "
        "so no group has a stored commit yet; at 10x (the first 20%) every group has one, and "
        "the measured batch rebuilds partition_lag from the previous commit on for every "
        "partition -- more rows for the lag fold and the gate, i.e. different work rather than "
        "the cost of stored history. The earlier 1.21 was measured before the quality gate "
        "ran inside the batch. The input should be changed so both histories contain commits "
        "of every group (a longer scenario, history cut after the first auto-commit) before "
        "this ratio is trusted either way. Appends do not read their table; MERGEs are "
        "restricted to the batch's keys (IN-lists, and the date partition for offset_commits "
        "and partition_lag); beyond 1,000 distinct keys (`writes.MAX_PRUNE_VALUES`) no IN-list "
        "is added and a MERGE joins against the whole table."
    ),
    "freshness_p99_s": (
        "Steady state (16,080 commits appended after the query's first batch finished, 20 "
        "groups x 4 partitions committed every second = 80 commits/s, processing-time trigger "
        "10 s): p50 19.3 s, p99 28.5 s; counting the commits queued behind the first batch "
        "(start-up, 38 s) p99 is 53.8 s. Batches of about 1,000 commits took 10-18 s, longer "
        "than the 10 s interval, so the query ran back to back and a commit waited for the "
        "batch in progress and then its own: freshness is about one to two batch times. Two "
        "trigger intervals (20 s) would need batches under about 10 s at p99; the fixed cost "
        "per batch (a Delta commit per written table, fold state and audit, the quality "
        "gate's results, each with its Spark jobs) is what sets it. With the default 30 s "
        "trigger the same batch times would fall within two intervals -- not measured here."
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
        "records/s (measured side by side with Burrow on the loaded machine): one micro-batch with the fixed cost described under "
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
