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
    "groups": "bench.groups",
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
    "freshness_trigger_30s_p99_s": "<= 2 trigger intervals (60 s)",
}

# "What limits it", per figure, from the profiles of the last full-size run (per-phase times in
# bench/results.json: pipeline_records_per_s.phase_seconds_total).
LIMITS: dict[str, str] = {
    "Measuring conditions": (
        "Every figure in the table except the framing_* ones was measured between 05:34 and "
        "06:10 on 2026-11-24 (UTC), one benchmark at a time with nothing else running (load "
        "average 2-3: their own JVMs and Python workers on the 2 cores): decode and the CLI "
        "comparison three samples each, everything else one sample (each sample of pipeline, "
        "scaling and freshness is a whole run of minutes). Single-core figures are pinned "
        "with taskset. This machine ran faster in this session than in the previous one: the "
        "previous session's final code, run here on the same inputs shortly before, took 98.0 "
        "s for the pipeline input (144.4 s last session) and gave freshness p99 18.0 s at a "
        "10 s trigger (24.6 s last session). So figures are compared within a session -- the "
        "changes against that same-session run of the previous code, offsetscope against "
        "Burrow in the same hour -- and not with last session's table. The framing_* figures "
        "are from an earlier session, measured while other test suites shared the machine "
        "(load average 9 to 20): compare them with each other, not with the rest."
    ),
    "decode_records_per_s": (
        "951,198 records/s (samples 862,917-990,833; target 500,000 per core: met), measured "
        "with nothing else running; 665,341 in the previous session, on its slower machine "
        "state -- the decode path did not change in this session, so the difference is the "
        "machine. How it gets there (previous session): transaction-log and classic "
        "GroupMetadata records are decoded column-wise (`protocol/arrow_walk.py`): the "
        "message's field tables are read over the whole batch in lock step -- one numpy step "
        "per field, arrays of structs one element index at a time, flexible varints and "
        "tagged fields included -- and a record the walk cannot read exactly as the "
        "per-record reader would (a decode error, a null where the field is not nullable, a "
        "tag of the wrong size, more than 64 members, invalid UTF-8) still goes to the "
        "per-record path, which reports the field path and byte offset; offset commits take a "
        "vectorised path of their own; keys and values, and strings of 16 bytes or more on "
        "average, become Arrow arrays through binary views instead of a numpy gather per "
        "byte. Where the time goes (previous session's timers, one pinned core, 1.55 s then): "
        "reading 1.0 s (framing the segments 0.26 s, the column scan 0.50 s -- it frames each "
        "run a second time, a Python step and a CRC-32C call per batch -- and building the "
        "Arrow batches), the offset-commit path 0.67 s for 1,000,000 records, the column-wise "
        "path for the other 30,000 about 0.1 s. Letting the scan take the frames `read_range` "
        "already found would save about 0.08 s of 1.55 s (measured), which is why it was "
        "left."
    ),
    "cli_vs_dumplog_ratio": (
        "2.2x (paired runs: 2.1, 2.2, 2.4; target 2x: met): offsetscope's CLI 287,309 "
        "records/s against DumpLogSegments 125,615 (medians), whole processes on one pinned "
        "core, outputs compared line for line first (1,282,797 lines identical). The previous "
        "session measured 2.21x (166,851 against 77,108 on its slower machine state): the "
        "ratio held while both tools sped up with the machine. The CLI decodes through the "
        "same `decode_batch`, but most of its time is writing Kafka's text: what is left "
        "(profiles of the offsets file, an earlier session) is Arrow's string kernels (joins, "
        "casts, the take that interleaves batch and record lines), the largest share, the "
        "per-record GroupMetadata text, and per process the interpreter, pyarrow and pandas "
        "imports, about 0.8 s (pyarrow imports pandas at its first array conversion)."
    ),
    "pipeline_records_per_s": (
        "1,020,000 records in 69.6 s (14,645 records/s) in two micro-batches: 1,000,000 in "
        "53.9 s and 20,000 in 8.8 s. The previous session's final code (4463874), run on this "
        "machine minutes before, took 98.0 s (10,404 records/s; batches 70.7 s and 20.3 s): "
        "1.41x from this session's changes. Last session's own figure, 144.4 s, was taken on "
        "a slower machine state: the same code took 98.0 s today, so compare within a "
        "session, not across. What changed: (1) offset_commits is gated and appended from the "
        "Arrow rows the commit summary already collects, instead of a Spark job computing the "
        "commit columns again for the gate and again for the write (its gate 6.6 s -> 3.2 s); "
        "(2) a batch works in `[spark] shuffle_partitions` partitions: the source's 53 "
        "partitions (50 of __consumer_offsets, 3 of the transaction log) are coalesced before "
        "anything is persisted, and the segment source packs its ranges into as many tasks, "
        "so neither the decode's Python tasks nor the appends' files number one per topic "
        "partition (the 20,000-record batch: read 4.3 s -> 0.6 s, decode 4.8 s -> 0.4 s; the "
        "big batch's read and decode 20.8 s -> 9.5 s); (3) the fold-state load is one SQL "
        "IN-list, not `Column.isin`, which sent each of the 10,000 group ids through py4j "
        "(7.7 s -> 3.0 s); (4) quality results are appended, not MERGEd. Profile of the "
        "1,000,000 batch (`batches[].phases`; table writes 4 at a time): writes 28.1 s wall "
        "-- the appends of offset_commits 9.9 s, partition_lag 7.8 s, group_metadata_events "
        "6.5 s and raw_records 6.2 s, the groups_current MERGE 9.1 s and the four other "
        "group-history MERGEs 6.5-8.5 s each, side by side -- then read 4.9 s, decode 4.6 s, "
        "commit summary 4.3 s, fold-state load 3.0 s, lag 2.6 s. What limits it: the writes, "
        "thirteen Delta commits of up to 1,000,000 rows each on 2 cores (about 85 s of thread "
        "time, gates included, in 28 s of wall). 2x Burrow (212,600 records/s against this "
        "session's Burrow) would mean the whole 1,000,000-record batch in about 4.7 s, less "
        "than the raw_records append alone takes now; that is not reachable with a bronze, "
        "silver and gold copy of every record in Delta on 2 cores, and it is not met. What "
        "would move it further is fewer, larger writes: the five group-history tables in one "
        "MERGE."
    ),
    "pipeline_from_broker_records_per_s": (
        "The same 1,020,000 records mirrored to a harness broker (30 s to simulate and "
        "produce, not timed) and read by Spark's Kafka source: 90.1 s (11,316 records/s), "
        "batches of 1,000,000 in 58.1 s and 20,000 in 25.2 s, measured minutes after the "
        "log-directory run (69.6 s). Two sessions ago it measured 178.4 s (5,717 records/s), "
        "on the slower machine state of that night; it was not measured with the previous "
        "code in this session. The big batch costs about what it costs from the log directory "
        "(58.1 s against 53.9 s: read 6.0 s and decode 6.2 s against 4.9 s and 4.6 s); the "
        "small one is slower (25.2 s against 8.8 s) in reading (12.5 s: the Kafka source "
        "still runs one task per partition of the 50-partition mirror topic, each a consumer "
        "fetch -- the batch's own partitions are merged only after the read) and in lag (3.7 "
        "s: the end-offset sampler asks the broker with AdminClient ListOffsets instead of "
        "reading segment files)."
    ),
    "history_scaling_ratio": (
        "Measured 0.93 (target 1.3: met): the last auto-commit round (19,688 records) took "
        "6.4 s and 6.2 s after 106,398 stored records and 5.8 s and 5.9 s after 1,063,810, in "
        "the order 1x, 10x, 10x, 1x after a warm-up batch (each figure the mean of its two). "
        "The previous session measured 0.94 (8.7-11.9 s a batch on that night's slower "
        "machine state). Both histories come from a 300 s run of 1,000 groups (the first 9% "
        "and 90%), so every group has stored commits either way. Appends do not read their "
        "table; MERGEs are restricted to the batch's keys (IN-lists, and the date partition "
        "for offset_commits); beyond 1,000 distinct keys (`writes.MAX_PRUNE_VALUES`) no "
        "IN-list is added and a MERGE joins against the whole table. quality_results, which "
        "was MERGEd with no key restriction -- every batch joined against every result row "
        "stored, a cost that grew with each batch -- is now appended under Delta's "
        "idempotency marker. What does grow is the number of groups on the batch's "
        "partitions: see groups_scaling_ratio."
    ),
    "groups_scaling_ratio": (
        "The same micro-batch (the last auto-commit round of 1,000 groups, 19,688 records) "
        "took 7.0 s after the history of 1,000 groups (7.7 s and 6.4 s, the first and last "
        "runs), 11.2 s after 10,000 and 67.1 s after 100,000: 9.6x for 100x the groups (no "
        "target set; the history-scaling bound is 1.3). The previous session measured 10.4 / "
        "18.2 / 89.2 s (8.6x) on its slower machine state; the ratio rose because the small "
        "cases gained more (the per-batch changes of this session remove fixed costs) than "
        "the lag work that dominates at 100,000 groups. Each history is `simulate scale` N "
        "groups x 20 partitions of one shared topic for 10 s, so every group has a position "
        "on every partition the batch samples. What grows is lag: it is materialised for "
        "every group with a position on a partition whose end offset has a new sample, "
        "2,000,000 partition_lag rows per batch at 100,000 groups, whatever the batch holds. "
        "At 100,000 groups the lag phase took 38.6 s of the 67.1 (60.0 s last session) and "
        "the writes 23.6 s wall, of which the partition_lag append 8.8 s and its driver-side "
        "gate 2.9 s; the lag phase is loading and rewriting each partition's positions state "
        "-- one JSON object holding every group -- and building 2,000,000 row objects; the "
        "per-sample lag computation itself (`LagIndex.latest_rows_at_samples`, 20,000 groups "
        "in 0.15 s in isolation) is a small part of it. Peak RSS over the whole run, history "
        "ingests of up to 730,000 records a batch included: driver JVM 9,604 MiB, Python "
        "driver 3,605 MiB, Python workers 1,100 MiB. Levers: positions stored per (group, "
        "partition) so a batch reads and rewrites only the groups it touches, and lag built "
        "column-wise as Arrow from the positions (no row objects). `[pipeline] lag_interval` "
        "(new) bounds how often this is paid -- once per interval instead of every batch -- "
        "but not what one sample costs."
    ),
    "freshness_p99_s": (
        "Steady state (17,760 commits appended after the query's first batch finished, 20 "
        "groups x 4 partitions committed every second = 80 commits/s): with a 10 s trigger "
        "p50 10.0 s, p99 16.6 s (target 20 s: met); with the shipped 30 s trigger "
        "(`[pipeline] processing_time`) p50 21.2 s, p99 36.2 s (two intervals, 60 s: met). "
        "Counting the commits queued behind the first batch (start-up, 17 s), p99 is 23.0 s "
        "and 36.2 s. Last session's 24.6 s at 10 s was taken on a slower machine state: the "
        "previous session's final code, run here minutes before this session's changes were "
        "measured, gave p50 11.2 s and p99 18.0 s (steady batches 4.3-6.5 s), against 10.0 s "
        "and 16.6 s now: most of the move since then is the machine, and these are single "
        "runs, so the 1.4 s of p99 between them is about the size of the run-to-run spread (a "
        "run with only the first change below gave 17.7 s). Steady batches now take 4.1-5.5 s "
        "(7.9 and 7.0 s once each): read about 0.5 s, decode 0.4 s, writes 3.0-3.3 s wall, "
        "fold-state save 1.0-1.5 s. What the batch no longer does: a Spark job that computed "
        "the commit columns again for the offset_commits gate (the rows the commit summary "
        "collects are gated and appended from the driver), a quality-results MERGE that "
        "joined the whole results table (an idempotent append now), and tasks per topic "
        "partition (a batch works in `[spark] shuffle_partitions` partitions). A batch still "
        "makes seven Delta commits (raw_records, offset_commits, end_offsets, partition_lag "
        "and quality_results appends, the groups_current and fold-state MERGEs) plus the "
        "audit append; the groups_current MERGE, 2.9-3.9 s beside the appends, is the "
        "longest. `[pipeline] lag_interval` (new, unset by default and in this run) writes "
        "end_offsets and partition_lag once per interval instead of every batch -- two "
        "commits fewer in two batches of three at a 10 s trigger with a 30 s interval -- for "
        "a deployment that wants commits fresher than lag."
    ),
    "Burrow": (
        "On Kafka 4.4 (the harness broker) Debian's Burrow 1.2.1 reads nothing: every offset "
        "commit is OffsetCommitValue v4 and is dropped with `failed to decode ... reason: "
        "value version, version: 4`, and its cluster module's offset fetches are refused "
        "(`failed to fetch offsets from broker`, sarama error EOF; most likely the request "
        "versions Kafka 4 no longer accepts, KIP-896). It also panics at start without "
        "ZooKeeper (`No Zookeeper servers specified`), so the benchmark runs a ZooKeeper from "
        "the Kafka 3.9 jars for it. On Kafka 3.9.1 (value v3) it read 100,000 commits (500 "
        "groups x 20 partitions x 10) in 0.9 s from process start to its HTTP API showing "
        "every last offset: 106,309 records/s, start-up included (80,944 in the previous "
        "session, on that night's slower machine state); it keeps only an in-memory ring per "
        "partition. offsetscope's pipeline on the same segment files: 23.6 s (4,234 "
        "records/s; 2,706 in the previous session), one micro-batch plus the query's start; "
        "in that batch the writes took 8.7 s wall, reading 3.2 s, the fold-state load 2.0 s, "
        "decode 1.3 s. This is the fixed cost of a batch that stores the full history in "
        "Delta, gated. On the larger input (pipeline_records_per_s, 14,645 records/s) "
        "offsetscope is at 0.14x of this Burrow figure (0.09x in the previous session); the "
        "2x target (about 212,600 records/s against this run of Burrow) is not met and is "
        "about 14.5x away."
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
