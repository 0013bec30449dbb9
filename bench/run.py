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
        "Every figure in the table except the framing_* and pipeline_from_broker_* ones was "
        "measured between 02:19 and 03:58 on 2026-11-24 (UTC) with nothing but the benchmarks "
        "running (load average 1.5-3: their own JVMs and Python workers on the 2 cores): decode "
        "and the CLI comparison three samples each (at 03:27, on the final code), everything "
        "else one sample (each sample of pipeline, scaling and freshness is a whole run of "
        "minutes). Single-core figures are pinned with taskset. Run-to-run drift over the night "
        "was about 6% (the same decode worker on the same input: 1.55 s at 02:19, 1.65 s at "
        "02:45, 1.55 s at 03:27). pipeline_from_broker_* is from the previous session "
        "(2026-11-24 00:10 UTC) and was not re-measured. The framing_* figures are from an "
        "earlier session, measured while other test suites shared the machine (load average 9 "
        "to 20): compare them with each other, not with the rest."
    ),
    "decode_records_per_s": (
        "665,341 records/s (samples 660,307-674,248; target 500,000 per core: met), measured "
        "with nothing else running. At the start of this session the previous session's code "
        "measured 2.6 s for these 1,030,000 records (about 396,000 records/s; 389,411 in its "
        "own run). What changed: (1) transaction-log and classic GroupMetadata records are "
        "decoded column-wise (`protocol/arrow_walk.py`): the message's field tables are read "
        "over the whole batch in lock step -- one numpy step per field, arrays of structs one "
        "element index at a time, flexible varints and tagged fields included -- and a record "
        "the walk cannot read exactly as the per-record reader would (a decode error, a null "
        "where the field is not nullable, a tag of the wrong size, more than 64 members, "
        "invalid UTF-8) still goes to the per-record path, which reports the field path and "
        "byte offset; those 30,000 records went from 0.91 s to 0.09 s (transaction log 0.50 -> "
        "0.016 s, GroupMetadata 0.41 -> 0.075 s); (2) keys and values, and strings of 16 bytes "
        "or more on average, become Arrow arrays through binary views (16 bytes per value "
        "written by numpy, the bytes copied by Arrow's cast) instead of a numpy gather per "
        "byte: 2.6 s -> 2.3 s over this input before (1). Output identical to the code before "
        "(Arrow tables equal, sorted by topic, partition and offset). Where the 1.55 s go now "
        "(timers around each step, one pinned core): reading 1.0 s (framing the segments 0.26 "
        "s, the column scan 0.50 s -- it frames each run a second time, a Python step and a "
        "CRC-32C call per batch -- and building the Arrow batches), the vectorised "
        "offset-commit path 0.67 s for 1,000,000 records, the column-wise path for the other "
        "30,000 about 0.1 s. Letting the scan take the frames `read_range` already found would "
        "save about 0.08 s (measured: 0.21 s of framing loop against 0.14 s of header copies "
        "and CRC calls alone), which is why it was left."
    ),
    "cli_vs_dumplog_ratio": (
        "2.21x (paired runs: 2.23, 2.09, 2.21; target 2x: met): offsetscope's CLI 166,851 "
        "records/s against DumpLogSegments 77,108 (medians), whole processes on one pinned "
        "core, outputs compared line for line first (1,282,797 lines identical). The previous "
        "session measured 2.06x (157,012 against 75,263). The CLI decodes through the same "
        "`decode_batch`, so tonight's column-wise path for transaction-log and GroupMetadata "
        "records and the binary views apply to it too, but most of its time is writing Kafka's "
        "text: what is left (profiles of the offsets file, previous session) is Arrow's string "
        "kernels (joins, casts, the take that interleaves batch and record lines), the largest "
        "share, about 3 s, the per-record GroupMetadata text 0.8 s, and per process the "
        "interpreter, pyarrow and pandas imports, about 0.8 s (pyarrow imports pandas at its "
        "first array conversion)."
    ),
    "pipeline_records_per_s": (
        "1,020,000 records in 144.4 s (7,065 records/s) in two micro-batches: 1,000,000 in "
        "105.0 s and 20,000 in 29.9 s. Earlier tonight, after the gate changes below but before "
        "the driver-side gates and the partition_lag append, 139.0 s (7,337 records/s); the "
        "previous session 136.3 s (7,484). Tonight's changes did not move this figure beyond "
        "the machine's drift over the night (the same decode worker read its input in 1.55 s at "
        "02:19 and 1.65 s at 02:45): a batch of this size is CPU-bound on the 2 cores, so "
        "letting the gates and the quality-results MERGE overlap the writes moved the waiting "
        "around rather than removing work. Profile of the 1,000,000 batch (`batches[].phases`; "
        "the table writes run 4 at a time): writes 45.2 s wall -- the gate on offset_commits "
        "17.8 s (its Spark job recomputes the commit columns), the groups_current MERGE 20.3 s "
        "and the partition_assignments, group_state_transitions, group_generations and "
        "member_sessions MERGEs 8.5-12.3 s each side by side, the appends of "
        "group_metadata_events 14.2 s, raw_records 11.9 s and offset_commits 9.3 s; the five "
        "group-history gates now take 4.1-4.5 s each with no wait (before: up to 7.9 s plus up "
        "to 17 s waiting for the quality lock); outside the writes, decode 15.2 s, read 14.8 s, "
        "fold-state load 8.6 s, lag 4.9 s, commit summary 3.8 s. One change landed after this "
        "run: the fold outputs' conversion to Arrow runs in the writing threads again (it had "
        "moved ahead of all the writes). 2x Burrow (Burrow read 65,846 records/s: about "
        "132,000) is about 19x away, and the 250,000 aim about 35x. At this size the batch is "
        "bounded by its Delta commits and the Spark jobs behind them (fifteen commits for this "
        "batch), not by decoding (the same 1,030,000 records decode in 1.6 s on one core in the "
        "library, 15 s in the Spark job that also reads and persists them): the levers are "
        "fewer, larger commits -- the five group-history tables in one MERGE, the bronze append "
        "without a Python worker."
    ),
    "pipeline_from_broker_records_per_s": (
        "The same 1,020,000 records mirrored to a harness broker (30 s to simulate and produce, "
        "not timed) and read by Spark's Kafka source: 178.4 s (5,717 records/s), batches of "
        "1,000,000 in 119.3 s and 20,000 in 52.9 s, measured minutes after the log-directory "
        "run (136.3 s). Two sessions ago it measured 372 s (2,742 records/s); the previous "
        "session did not re-measure it. Against the log directory, reading the big batch costs "
        "about the same (15.4 s against 13.9 s: the Kafka source's fetches instead of the "
        "segment framing), and the second batch is slower (52.9 s against 30.3 s): reading 11.6 "
        "s, and lag 7.1 s because the end-offset sampler asks the broker (AdminClient "
        "ListOffsets) instead of reading segment files. The rest of the profile matches the "
        "log-directory run: the quality gates (offset_commits 24.3 s, up to 20 s waiting for "
        "the lock), the Delta appends and MERGEs, decode and the commit summary."
    ),
    "history_scaling_ratio": (
        "Measured 0.94 (target 1.3: met): the last auto-commit round (19,688 records) took 11.9 "
        "s and 8.8 s after 106,398 stored records and 10.7 s and 8.7 s after 1,063,810, in the "
        "order 1x, 10x, 10x, 1x after a warm-up batch (each figure the mean of its two; the "
        "later batch of each pair ran warmer, so the spread inside a pair is larger than the "
        "effect of history). The previous session measured 0.82. Both histories come from a 300 "
        "s run of 1,000 groups (the first 9% and 90%), so every group has stored commits either "
        "way. Appends do not read their table; MERGEs are restricted to the batch's keys "
        "(IN-lists, and the date partition for offset_commits); beyond 1,000 distinct keys "
        "(`writes.MAX_PRUNE_VALUES`) no IN-list is added and a MERGE joins against the whole "
        "table; partition_lag is now appended, like end_offsets. What does grow is the number "
        "of groups on the batch's partitions: see groups_scaling_ratio."
    ),
    "groups_scaling_ratio": (
        "The same micro-batch (the last auto-commit round of 1,000 groups, 19,688 records) took "
        "10.4 s after the history of 1,000 groups (10.6 s and 10.2 s, the first and last runs), "
        "18.2 s after 10,000 and 89.2 s after 100,000: 8.6x for 100x the groups (no target set; "
        "the history-scaling bound is 1.3). The previous session measured 11.3 / 19.9 / 100.5 s "
        "(8.9x). Each history is `simulate scale` N groups x 20 partitions of one shared topic "
        "for 10 s, so every group has a position on every partition the batch samples. What "
        "grows is lag: it is materialised for every group with a position on a partition whose "
        "end offset has a new sample, 2,000,000 partition_lag rows per batch at 100,000 groups, "
        "whatever the batch holds. At 100,000 groups the writes went from 39.1 s to 21.7 s: "
        "partition_lag is appended (11.7 s) instead of MERGEd (13.7 s), and its 2,000,000 rows "
        "are gated on the driver with pandas (7.2 s, before 9.3 s through Spark). The lag phase "
        "did not improve (52.6 s then, 60.0 s now): it is loading and rewriting each "
        "partition's positions state -- one JSON object holding every group -- and building "
        "2,000,000 row objects; the per-sample lag computation itself "
        "(`LagIndex.latest_rows_at_samples`, 20,000 groups in 0.15 s in isolation) is a small "
        "part of it. Peak RSS over the whole run, history ingests of up to 730,000 records a "
        "batch included: driver JVM 10,648 MiB, Python driver 3,307 MiB, Python workers 1,078 "
        "MiB. Levers: positions stored per (group, partition) so a batch reads and rewrites "
        "only the groups it touches, lag built column-wise as Arrow from the positions (no row "
        "objects), and lag sampled at its own cadence rather than at every batch."
    ),
    "freshness_p99_s": (
        "Steady state (16,480 commits appended after the query's first batch finished, 20 "
        "groups x 4 partitions committed every second = 80 commits/s): with a 10 s trigger p50 "
        "15.2 s, p99 24.6 s (target 20 s: not met); with the shipped 30 s trigger (`[pipeline] "
        "processing_time`) p50 24.9 s, p99 40.2 s (two intervals, 60 s: met). Counting the "
        "commits queued behind the first batch (start-up, 31-33 s), p99 is 43.2 s and 41.8 s. "
        "The previous session measured the same p99 at 10 s (p50 15.4 s / p99 24.6 s), and so "
        "did a run earlier tonight after the first of the changes below (15.2 / 25.0 s). What "
        "changed tonight: the quality gates no longer wait for each other (only "
        "great-expectations' own step is serialised; the row hashing and collects run in each "
        "table's thread); the batch's quality results are MERGEd as soon as the last gate has "
        "passed, beside the slower writes, instead of after them (still before the fold state); "
        "MERGE tables start first; fold outputs (groups_current, partition_lag, end_offsets) "
        "are validated on the driver as Arrow with no Spark job (`validate_table`: their gates "
        "went from 0.4-1.5 s to 0.1-0.5 s); partition_lag is appended instead of MERGEd (its "
        "keys are new by construction). Steady batches still take 8-10 s (7.4-11.6 s): the work "
        "overlaps more, but a batch is CPU-bound on the 2 cores, so what now runs side by side "
        "takes longer each -- the groups_current MERGE 2.5-3.3 s before, 5.0-5.3 s now beside "
        "the quality-results MERGE (about 3 s) and four appends (raw_records, offset_commits, "
        "end_offsets, partition_lag, 1.8-2.9 s each). Profile of a steady batch "
        "(`batches[].phases`): read 0.6-1.2 s, decode 0.5-0.9 s, writes 5.5-6.5 s wall, "
        "fold-state save 1.5-2.1 s. A batch makes eight Delta commits (four appends, three "
        "MERGEs, the audit append), each a few Spark jobs and a log commit that cost 0.7-1.9 s "
        "of a core on this machine even for 80 rows (a 20-row MERGE into a 100-row table alone: "
        "1.6-1.9 s median, measured; neither disabling adaptive execution nor skipping Delta's "
        "source materialisation changed that beyond noise, and without the change feed it took "
        "0.1-0.2 s less). p99 within 20 s at a 10 s trigger needs batches under about 6-7 s: "
        "fewer commits per batch (the fold state and the quality results carried by tables the "
        "batch writes anyway), not more overlap, is what is left."
    ),
    "Burrow": (
        "On Kafka 4.4 (the harness broker) Debian's Burrow 1.2.1 reads nothing: every offset "
        "commit is OffsetCommitValue v4 and is dropped with `failed to decode ... reason: value "
        "version, version: 4`, and its cluster module's offset fetches are refused (`failed to "
        "fetch offsets from broker`, sarama error EOF; most likely the request versions Kafka 4 "
        "no longer accepts, KIP-896). It also panics at start without ZooKeeper (`No Zookeeper "
        "servers specified`), so the benchmark runs a ZooKeeper from the Kafka 3.9 jars for it. "
        "On Kafka 3.9.1 (value v3) it read 100,000 commits (500 groups x 20 partitions x 10) in "
        "1.2 s from process start to its HTTP API showing every last offset: 80,944 records/s, "
        "start-up included (80,143 in an earlier run tonight, 65,846 in the previous "
        "session's); it keeps only an in-memory ring per partition. offsetscope's pipeline on "
        "the same segment files: 36.9 s (2,706 records/s; 2,719 earlier tonight, 2,202 in the "
        "previous session), one micro-batch plus the query's start; in that batch the writes "
        "took 12.5 s wall, reading 4.6 s, the fold-state load 4.1 s. The query now builds "
        "great-expectations' context in a background thread when it starts, so the first gates "
        "took 2-2.9 s each instead of about 7 s (each had waited for the import) -- but the run "
        "took as long: on 2 cores the import's CPU time moved earlier rather than away (the "
        "groups_current MERGE 7.2 s -> 9.8 s beside it); the warm-up only helps where the query "
        "starts with idle time. This is the fixed cost of a batch that stores the full history "
        "in Delta, gated. On the larger input (pipeline_records_per_s, 7,065 records/s) "
        "offsetscope is at 0.09x of this Burrow figure; the 2x target (about 160,000 records/s "
        "against this run of Burrow) is not met."
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
