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
    "small_batch": "bench.small_batch",
    "groups": "bench.groups",
    "pipeline_broker": "bench.pipeline_broker",
    "steady": "bench.steady",
    "memory": "bench.memory",
    "scale_out": "bench.scale_out",
    "burrow": "bench.burrow",
    "freshness": "bench.freshness",
    "maintain": "bench.maintain",
    "state_store": "bench.state_store",
}
TARGETS: dict[str, str] = {
    "decode_records_per_s": ">= 500,000 per core",
    "cli_vs_dumplog_ratio": ">= 2x",
    "framing_single_record_batches_per_s": "",
    "pipeline_records_per_s": ">= 2x Burrow; aim > 250,000 on 2 cores",
    "pipeline_from_broker_records_per_s": ">= 2x Burrow; aim > 250,000 on 2 cores",
    "history_scaling_ratio": "<= 1.1",
    "pipeline_vs_burrow_ratio": ">= 2x",
    "floor_vs_burrow_ratio": "none: the ceiling of any Spark + Delta ingest here (see Burrow)",
    "pipeline_floor_records_per_s": "none: the ceiling for pipeline_records_per_s",
    "burrow_input_floor_records_per_s": "none: the ceiling on Burrow's input",
    "freshness_p99_s": "<= 2 trigger intervals (20 s)",
    "freshness_trigger_30s_p99_s": "<= 2 trigger intervals (60 s)",
    "freshness_trigger_5s_p99_s": "<= 2 trigger intervals (10 s)",
    "small_batch_s": "<= 3 s on local[2]",
    "small_batch_floor_s": "none: one Delta commit of the same batch",
    "small_batch_without_merges_s": "none: a measured floor (bench/pipeline.py)",
    "pipeline_steady_records_per_s": "the floor's 0.7x",
    "floor_steady_records_per_s": "none: raw and decoded offset-commit appends only",
    "pipeline_vs_floor_ratio": ">= 0.7",
    "pipeline_steady_logdir_records_per_s": "the floor's 0.7x",
    "pipeline_logdir_vs_floor_ratio": ">= 0.7",
    "driver_rss_growth": "<= 1.2",
    "driver_jvm_rss_growth": "none: on local[2] the JVM also runs the executors",
    "catchup_10m_s": "none: reported with peak memory",
    "scale_out_ratio": ">= 1.6",
    "scale_out_records_per_s_1_core": "none: the base of scale_out_ratio",
    "scale_out_records_per_s_2_cores": "none: scale_out_ratio x the 1-core figure",
    "fold_state_store_vs_merge_50": "none: the choice of where fold states live",
    "fold_state_store_vs_merge_10000": "none: the choice of where fold states live",
    "fold_state_append_vs_merge_50": "none: the choice of how fold states are written",
    "fold_state_append_vs_merge_10000": "none: the choice of how fold states are written",
}

# "What limits it", per figure, from the profiles of the last full-size run (per-phase times in
# bench/results.json: pipeline_records_per_s.phase_seconds_total).
LIMITS: dict[str, str] = {
    "Measuring conditions": (
        "Figures measured on 2026-11-27 (UTC) -- small_batch_s, freshness_trigger_5s_*, "
        "maintain_*, pipeline_steady_records_per_s, its log-directory twin and their floor, "
        "pipeline_records_per_s and its floor, history_scaling_ratio, groups_scaling_*, the "
        "Burrow figures, driver_rss_growth, "
        "catchup_10m_s, scale_out_* -- say so in their own paragraphs below; the machine ran "
        "about three times slower that day, so compare them with each other, not with the "
        "figures of 2026-11-24. Every other figure except the framing_* and decode ones was "
        "measured between 07:09 and 08:10 on 2026-11-24 (UTC), one benchmark at a time with nothing else "
        "running (load average 2-3: their own JVMs and Python workers on the 2 cores), one "
        "sample each (each sample of pipeline, scaling, groups and freshness is a whole run "
        "of minutes). decode and the CLI comparison (three samples each, single-core figures "
        "pinned with taskset) are from 05:34-06:10 the same day; the decode path has not "
        "changed since. Figures are compared within a session: this session's changes against "
        "the previous code run here the same morning (a worktree at 93fbea3 for the groups "
        "benchmark), offsetscope against Burrow and against the floor in the same hour; the "
        "floor runs beside the pipeline on the same input and doubles as a control for "
        "run-to-run spread (its code does not change). The framing_* figures are from an "
        "earlier session, measured while other test suites shared the machine (load average 9 "
        "to 20): compare them with each other, not with the rest."
    ),
    "decode_records_per_s": (
        "951,198 records/s (samples 862,917-990,833; target 500,000 per core: met), measured "
        "at 05:34-06:10 on 2026-11-24 (the previous session) with nothing else running; the "
        "decode path has not changed since. 665,341 the session before, on its slower machine "
        "state, with the same decode path: that difference is the machine. How it gets there "
        "(previous session): transaction-log and classic GroupMetadata records are decoded "
        "column-wise (`protocol/arrow_walk.py`): the message's field tables are read over the "
        "whole batch in lock step -- one numpy step per field, arrays of structs one element "
        "index at a time, flexible varints and tagged fields included -- and a record the "
        "walk cannot read exactly as the per-record reader would (a decode error, a null "
        "where the field is not nullable, a tag of the wrong size, more than 64 members, "
        "invalid UTF-8) still goes to the per-record path, which reports the field path and "
        "byte offset; offset commits take a vectorised path of their own; keys and values, "
        "and strings of 16 bytes or more on average, become Arrow arrays through binary views "
        "instead of a numpy gather per byte. Where the time goes (previous session's timers, "
        "one pinned core, 1.55 s then): reading 1.0 s (framing the segments 0.26 s, the "
        "column scan 0.50 s -- it frames each run a second time, a Python step and a CRC-32C "
        "call per batch -- and building the Arrow batches), the offset-commit path 0.67 s for "
        "1,000,000 records, the column-wise path for the other 30,000 about 0.1 s. Letting "
        "the scan take the frames `read_range` already found would save about 0.08 s of 1.55 "
        "s (measured), which is why it was left."
    ),
    "cli_vs_dumplog_ratio": (
        "2.2x (paired runs: 2.1, 2.2, 2.4; target 2x: met): offsetscope's CLI 287,309 "
        "records/s against DumpLogSegments 125,615 (medians), whole processes on one pinned "
        "core, outputs compared line for line first (1,282,797 lines identical); measured at "
        "05:34-06:10 on 2026-11-24 (the previous session). The session before measured 2.21x "
        "(166,851 against 77,108 on its slower machine state): the ratio held while both "
        "tools sped up with the machine. The CLI decodes through the same `decode_batch`, but "
        "most of its time is writing Kafka's text: what is left (profiles of the offsets "
        "file, an earlier session) is Arrow's string kernels (joins, casts, the take that "
        "interleaves batch and record lines), the largest share, the per-record GroupMetadata "
        "text, and per process the interpreter, pyarrow and pandas imports, about 0.8 s "
        "(pyarrow imports pandas at its first array conversion)."
    ),
    "pipeline_records_per_s": (
        "Measured again 22:22-22:33 on 2026-11-27 (UTC), nothing else running, with a job's "
        "start reading each table's metadata from its Delta log (`spark/delta_meta.py`) and "
        "the fold outputs' gates compiled to Arrow, on a machine state slower than the evening "
        "run below (the floor took 28.2, 23.7 and 26.6 s against 22.2, 21.7 and 22.2 s): "
        "8,252 records/s (127.6, 117.5 and 123.6 s) against a floor of 38,346, 0.22 of the "
        "floor as in the evening run. The two batches took 86.2 + 14.8, 78.1 + 12.2 and "
        "83.4 + 12.4 s; 26.5-27.8 s of each run came before the first batch, against 32 s in "
        "the evening run on the faster state. This benchmark creates its tables, so the check "
        "of existing tables, which every later start of a job pays, is not in it: probed alone "
        "in a fresh process on 21 existing tables it went from 31.3 s and 63 Spark jobs to "
        "9.7 s and none (4.6 s of which is the metastore's first statement), see "
        "'Measurements behind design choices'. What the cold run pays before its first batch "
        "is the tables' creation (about 10 s for 21 tables), recording the clusters (the "
        "JVM's first Delta read) and the source. The evening run: "
        "Measured again 19:17-19:24 on 2026-11-27 (UTC), nothing else running, on a machine "
        "state about 1.5 times slower than 2026-11-24's: 9,907 records/s (three runs: 107.4, "
        "93.8 and 103.0 s for 1,020,000 records) against a floor of 45,990 (22.2, 21.7 and 22.2 "
        "s), 0.22 of the floor against 0.24 on 2026-11-24. Of the median run's 103.0 s, the "
        "two micro-batches took 61.7 s (1,000,000 records) and 9.6 s (20,000); the other 32 s "
        "came before the first batch (from the start of `ingest.run` to the query's first "
        "plan: 19:21:50 to 19:22:20 in its log), against about 7 s on 2026-11-24. Probed "
        "alone in a fresh process on the 21 tables just created: `ensure_tables`' check "
        "22.7 s (3.0 s when run again), recording the clusters 5.5 s, the source 3.6 s. Since "
        "tables evolve in place, the check reads each table's `DESCRIBE DETAIL`, which loads "
        "its Delta snapshot cold: 1.1-1.6 s a table here (`SHOW TBLPROPERTIES` and `DESCRIBE "
        "TABLE EXTENDED` the same, the catalog schema alone 0.3 s; four threads no faster, "
        "31.9 against 23.6 s: driver CPU). It counts in this "
        "figure, which is one cold run of two batches, and not in the steady ones "
        "(pipeline_steady_records_per_s). The big batch's writes took 43.6 s wall (the "
        "fold-state MERGE is among them now; it ran after them, 3.0 s, before), read 6.5 s, "
        "decode 6.0 s, the commit summary 5.3 s. From 2026-11-24: "
        "1,020,000 records in 62.0 s (16,452 records/s) in two micro-batches: 1,000,000 in "
        "48.3 s and 20,000 in 6.8 s. Earlier in this session, before the lag change (see "
        "groups_scaling_ratio), the same benchmark took 71.3 s (14,301 records/s); the change "
        "accounts for about 2 s of that (the big batch's lag phase 2.6 s -> 0.6 s), and the "
        "rest is run-to-run spread: the floor run beside it (pipeline_floor_records_per_s, "
        "code unchanged) moved from 17.0 s to 14.7 s between the same two runs. The floor -- "
        "the same streaming query and segment source with each micro-batch only appended to "
        "raw_records, nothing decoded, folded, gated or audited -- is 69,334 records/s "
        "(60,068 in the earlier run): the pipeline runs at about a quarter of what any Spark "
        "+ Delta ingest reaches on this machine. Profile of the 1,000,000 batch "
        "(`batches[].phases`; table writes 4 at a time): writes 28.2 s wall -- the appends of "
        "offset_commits 11.4 s, end_offsets 9.4 s, partition_lag 9.2 s, group_metadata_events "
        "7.7 s and raw_records 6.6 s, the groups_current MERGE 9.1 s and the four other "
        "group-history MERGEs 6.6-8.7 s each, quality results 8.5 s, side by side on 2 cores "
        "-- then read 4.6 s, decode 3.8 s, commit summary 2.6 s, fold-state load 2.5 s. What "
        "limits it is the writes: thirteen Delta commits of up to 1,000,000 rows each. "
        "Measured in this session, a 200,000-row insert-only MERGE into a group-history table "
        "takes 2.8-3.6 s against 1.4 s for the same rows appended, and 8.2 s when the rows "
        "update earlier ones; so writing rows whose key is new (all of them in a first batch) "
        "as appends would take about a third of the MERGE time, at the price of a second "
        "write path per table and a rule for which rows are new -- left for now, since it "
        "changes nothing in the steady state, where groups_current rows are updates. 2x "
        "Burrow (220,300 records/s against this session's Burrow) is above the floor on "
        "either input; see Burrow."
    ),
    "pipeline_from_broker_records_per_s": (
        "The same 1,020,000 records mirrored to a harness broker (30 s to simulate and "
        "produce, not timed) and read by Spark's Kafka source: 80.9 s (12,616 records/s), "
        "batches of 1,000,000 in 52.2 s and 20,000 in 22.6 s, measured after the "
        "log-directory run (62.0 s). The previous session measured 90.1 s (11,316 records/s), "
        "big batch 58.1 s: the lag change (partition_lag built as columns) and spread. The "
        "big batch costs about what it costs from the log directory (52.2 s against 48.3 s); "
        "the small one is slower (22.6 s against 6.8 s) in reading (12.9 s: the Kafka source "
        "still runs one task per partition of the 50-partition mirror topic, each a consumer "
        "fetch -- the batch's own partitions are merged only after the read) and in lag (the "
        "end-offset sampler asks the broker with AdminClient ListOffsets instead of reading "
        "segment files)."
    ),
    "history_scaling_ratio": (
        "Measured again 22:33-22:42 on 2026-11-27 (UTC), nothing else running, with the fold "
        "outputs' gates compiled to Arrow: 0.8 (target 1.1: met), two runs of 1x, 10x (ratios "
        "0.8 and 0.8; batch times 10.3 and 8.1 s at 1x, 7.2 and 7.4 s at 10x in the first "
        "run, 13.9 and 9.2 s, 9.8 and 9.5 s in the second: each run's first 1x batch is its "
        "process's first). The evening run: "
        "Measured again 19:17-19:33 on 2026-11-27 (UTC), nothing else running, on a machine "
        "state about 1.5 times slower than 2026-11-24's (pipeline_floor_records_per_s 45,990 "
        "against 69,334): 0.97 (target 1.1: met), the same batch of 19,688 records after "
        "106,398 and after 1,063,810 stored records, two runs of 1x, 10x (ratios 0.99 and "
        "0.94; batch times 8.4 and 6.7 s at 1x, 8.0 and 6.9 s at 10x in the first run, 8.9 "
        "and 7.2 s, 8.3 and 6.9 s in the second). The fold-state and groups_current MERGEs, "
        "about 4.5 s each of the batch side by side, restrict their targets to the batch's "
        "keys, so they do not grow with the history. From 2026-11-24: "
        "Measured 0.90 (target 1.3 then: met): the last auto-commit round (19,688 records) took "
        "6.8 s and 5.4 s after 106,398 stored records and 5.5 s and 5.5 s after 1,063,810, in "
        "the order 1x, 10x, 10x, 1x after a warm-up batch (each figure the mean of its two); "
        "0.90 in a run earlier in this session too, 0.93 in the previous one. Both histories "
        "come from a 300 s run of 1,000 groups (the first 9% and 90%), so every group has "
        "stored commits either way. Appends do not read their table; MERGEs are restricted to "
        "the batch's keys (IN-lists, and the date partition for offset_commits); beyond 1,000 "
        "distinct keys (`writes.MAX_PRUNE_VALUES`) no IN-list is added and a MERGE joins "
        "against the whole table; quality_results is an idempotent append. What does grow is "
        "the number of groups on the batch's partitions: see groups_scaling_ratio."
    ),
    "groups_scaling_ratio": (
        "Measured again 08:06-08:20 on 2026-11-28 (UTC), nothing else running (the JVM with "
        "native memory tracking on, sampled every 15 s), one run each, with partition_lag's "
        "key marked where its rows are built: 9.3 s after the history of 1,000 groups (9.5 "
        "and 9.1 s), 13.1 s after 10,000 and 35.7 s after 100,000: 3.9x. At 100,000 groups the "
        "gate's uniqueness job (10.3 s below) is gone, and partition_lag's one pass -- rows "
        "computed, marked, gated and appended -- took 27.5 s beside the groups_current and "
        "fold-state MERGEs (14.6 and 12.5 s), in writes of 30.7 s wall: the job and the "
        "append of the run below took 25.9 s together in writes of 27.9 s. On 2 cores shared "
        "by every write of the batch, the pass no longer made twice is taken up by the "
        "MERGEs beside it; single runs, whose spread the two runs below show. Peak RSS: the "
        "driver JVM 10,277 MiB (16,416 below), the Python driver 3,457 MiB. The native "
        "memory tracking samples never saw more than 5.6 GB resident (the heap 3.8 GB "
        "committed of its 4 GB, direct and other native allocations 0.6 GB), so the peaks "
        "of the 0.2 s sampler are spikes shorter than 15 s, of memory the tracking does not "
        "attribute to the heap or to Java's own native allocations. The previous run: "
        "Measured again 01:46-02:00 on 2026-11-28 (UTC), nothing else running, one run each, "
        "with partition_lag computed in the executors (`pipelines/lag.py`, `lag_frame`: the "
        "driver hands each sampled partition's positions and samples over as their "
        "`fold_state` texts, a `mapInArrow` task computes the rows, the gate compiled to "
        "column expressions checks them and the append counts them): 9.5 s after the history "
        "of 1,000 groups (11.5 and 7.5 s), 15.6 s after 10,000 and 32.0 s after 100,000: 3.4x "
        "for 100x the groups. Two runs before it in the same hour, of the first version of the "
        "change (37.8 s at 100,000) and of one that persisted the lag rows for the gate's "
        "uniqueness job and the append (46.0 s), show the spread. At 100,000 groups the "
        "driver's lag phase is now 1.5 s (5.7 s below: positions moved by bisection, partitions "
        "without commits passed on unparsed, no lag row built); the rows are computed twice in "
        "the executors, once by the uniqueness job of partition_lag's gate (10.3 s) and once by "
        "its append (15.6 s), beside the fold-state and groups_current MERGEs (10.8 and 8.4 s) "
        "in writes of 27.9 s wall. Alone, 2,000,000 such rows took 20.1 s on the driver, 22.4 s "
        "in the executors and 28.0 s persisted ('Measurements behind design choices'): on 2 "
        "cores shared by the driver and the executors, moving the rows gains nothing; what it "
        "buys is a driver that holds no lag row and lag that spreads over a cluster's "
        "executors. Peak RSS over the run: driver JVM 16,416 MiB, Python driver 3,425 MiB, "
        "Python workers 1,282 MiB. What still grows with the groups on the driver is each "
        "partition's positions text while the batch's commits move it (20 texts of about 4 MB "
        "at 100,000 groups). The previous run: "
        "Measured again 22:08-22:18 on 2026-11-27 (UTC), nothing else running, one run each, "
        "after the gates on fold outputs were compiled to Arrow compute (`quality/arrow.py`) "
        "instead of running great-expectations' pandas engine: 9.2 s after the history of "
        "1,000 groups (11.2 and 7.2 s), 13.6 s after 10,000 and 35.2 s after 100,000: 3.8x "
        "for 100x the groups (4.5x in the evening run below, same machine state). At 100,000 "
        "groups partition_lag's gate took 4.3 s (13.3 s below; alone, outside the pipeline, "
        "1.0-1.5 s against 6.9-8.4 s for great-expectations on 2,000,000 such rows), inside "
        "writes of 27.1 s wall: partition_lag's append 17.3 s (2,000,000 rows built on the "
        "driver, made a DataFrame and appended), the groups_current and fold-state MERGEs "
        "10.9 and 9.3 s, the quality results 4.4 s, side by side on 2 cores; lag 5.7 s before "
        "them. So what is left at this size is the lag rows themselves: computed on the "
        "driver from each partition's positions held in the fold state, then shipped to Spark. "
        "Peak RSS over the run: driver JVM 11,345 MiB, Python driver 3,539 MiB, Python workers "
        "1,285 MiB. The evening run: "
        "Measured again 19:33-19:47 on 2026-11-27 (UTC), nothing else running, on a machine "
        "state about 1.5 times slower than 2026-11-24's (see pipeline_records_per_s), one run "
        "each: the same batch took 8.8 s after the history of 1,000 groups (10.2 and 7.4 s), "
        "15.5 s after 10,000 and 39.9 s after 100,000: 4.5x for 100x the groups, against 3.2x "
        "on 2026-11-24 -- slower than the machine alone explains. Profile at 100,000 groups: "
        "writes 30.6 s wall, of which partition_lag's gate 13.3 s (4.5 s then) and its append "
        "12.7 s (2,000,000 lag rows built on the driver), the fold-state MERGE 10.3 s (now "
        "beside the other writes; 4.4 s in sequence after them then) and the groups_current "
        "MERGE 7.7 s; lag 6.6 s (2.4 s then). At 10,000 groups: writes 11.5 s, the two MERGEs "
        "9.6 and 8.1 s side by side, partition_lag 7.8 s. partition_lag's 2,000,000 rows are "
        "within `[quality] pandas_max_rows`, so its gate is great-expectations' pandas "
        "engine on the driver, which now shares the 2 cores with the fold-state MERGE as "
        "well. Not looked into further in this session: lag computed in the executors, and "
        "its gate compiled to Spark expressions and counted by its append (as offset_commits' "
        "is for a fresh batch), are the candidates. From "
        "2026-11-24: The same micro-batch (the last auto-commit round of 1,000 groups, 19,688 records) "
        "took 7.0 s after the history of 1,000 groups (7.5 s and 6.5 s, the first and last "
        "runs), 8.2 s after 10,000 and 22.7 s after 100,000: 3.2x for 100x the groups (no "
        "target set; the history-scaling bound is 1.3). The previous code (93fbea3), run in "
        "this session minutes before: 6.0 / 13.8 / 64.8 s (10.8x); single runs, so the "
        "1,000-group figures (6.0 against 7.0 s) are within their spread (samples 5.3-7.5 s). "
        "What changed is lag, which is materialised for every group with a position on a "
        "partition whose end offset has a new sample: 2,000,000 partition_lag rows per batch "
        "at 100,000 groups, whatever the batch holds. Each partition's positions state was a "
        "JSON object of one entry per group, loaded into a Python object per group and dumped "
        "back, and every sample's lag became a row object per group, then a dict, then Arrow; "
        "now the state is four sorted columns (`PartitionPositions`, fold_state format "
        '"positions/2"; the earlier format still loads) and a sample\'s lag is computed over '
        "the partition's groups at once into Arrow columns (`lag_table`). The lag phase at "
        "100,000 groups: 37.9 s -> 2.4 s (outside Spark, the same 2,000,000 positions and "
        "rows: 38.0 s -> 2.7 s). What is left at 100,000 groups is the size of the output: "
        "writes 14.7 s wall (21.6 s before), of which the partition_lag append 8.7 s and its "
        "driver-side gate 4.5 s (2.7 s before, now sharing the cores with more of the other "
        "writes), and the fold-state save 4.4 s (twenty positions rows of 100,000 groups "
        "each). `[pipeline] lag_interval` bounds how often that is paid. Peak RSS over the "
        "whole run, history ingests of up to 730,000 records a batch included: driver JVM "
        "9,859 MiB, Python driver 3,496 MiB, Python workers 1,106 MiB."
    ),
    "freshness_p99_s": (
        "Steady state (17,600 commits appended after the query's first batch finished, 20 "
        "groups x 4 partitions committed every second = 80 commits/s): with a 10 s trigger "
        "p50 10.3 s, p99 17.1 s (target 20 s: met); with the shipped 30 s trigger "
        "(`[pipeline] processing_time`) p50 20.3 s, p99 36.1 s (two intervals, 60 s: met). "
        "Counting the commits queued behind the first batch (start-up, 19.6 s), p99 is 26.0 s "
        "and 36.0 s. The previous session measured 10.0 / 16.6 s and 21.2 / 36.2 s on the "
        "same machine state with code whose small-batch path is the same (this session's lag "
        "change moves a batch of 20 groups by a few milliseconds: lag 0.005 s); these are "
        "single runs, and the differences are their spread. Steady batches take 4.5-6.4 s "
        "(7.5-8.8 s a few times): read about 0.5-0.9 s, decode 0.3 s, writes 3.5-3.8 s wall, "
        "fold-state save 1.0-1.5 s. A batch makes seven Delta commits (raw_records, "
        "offset_commits, end_offsets, partition_lag and quality_results appends, the "
        "groups_current and fold-state MERGEs) plus the audit append; the groups_current "
        "MERGE, 3-3.5 s beside the appends, is the longest. `[pipeline] lag_interval` (unset "
        "by default and in this run) writes end_offsets and partition_lag once per interval "
        "instead of every batch -- two commits fewer in two batches of three at a 10 s "
        "trigger with a 30 s interval -- for a deployment that wants commits fresher than "
        "lag. At a 5 s trigger, measured again 15:21-15:29 on 2026-11-28 (UTC), nothing else "
        "running, with the fold states appended instead of MERGEd (see small_batch_s): "
        "17,360 steady commits, p50 7.7 s, p99 13.8 s (9.4 and 16.3 s in the run below; "
        "target 10 s: not met; 29.1 s counting the start-up backlog). Its 42 batches took "
        "4.6 s (median; 3.6-8.6 s after the first of 22.5 s): under the trigger most of the "
        "time now, but close enough to it that a commit still often waits for the batch "
        "running when it arrives and then its own. The previous run: "
        "At a 5 s trigger (freshness_trigger_5s_*, measured 13:19-13:27 on 2026-11-27 "
        "UTC with the Kafka source's fetch.max.wait.ms at 10 ms, nothing else running): 17,680 "
        "steady commits, p50 9.4 s, p99 16.3 s (target 10 s: not met; 26.5 s counting the "
        "start-up backlog). The previous code run right after it (13:27-13:35, a worktree at "
        "44fbb00: fetch.max.wait.ms at Kafka's 500 ms) gave p50 11.4 s, p99 19.9 s: its "
        "batches' read took 0.89 s (median; 0.26-1.19 s) against 0.22 s (0.16-0.45 s), and "
        "its steady batches 7.0 s (median; 5.9-11.6 s) against 5.8 s (4.5-10.0 s). The same "
        "figure measured at 09:18-09:24 (p50 21.4 s, p99 32.7 s, batches 11.2-18.7 s) came "
        "from a slower machine state. The query still does not keep up with the trigger: its "
        "steady batches take longer than 5 s more often than not, so they run back to back "
        "and a commit waits for the batch running when it arrives and then its own; the "
        "batch is what small_batch_s measures, and a 5 s trigger needs it under 5 s."
    ),
    "small_batch_s": (
        "Measured again 14:25-14:35 on 2026-11-28 (UTC), nothing else running, with the fold "
        "states appended as versions instead of MERGEd (`pipelines/state.py`): 24 warm "
        "batches in three runs (run medians 4.7, 4.2 and 4.2 s), median 4.4 s against 0.35 s "
        "for the same batch appended alone, 12.4x (6.2 s and 14.1x in the run below, three "
        "hours before; the 3 s target is not met). Median phases of the last run: the "
        "groups_current MERGE 2.5 s in writes of 2.5 s wall, beside the fold-state append "
        "0.6 s (the MERGE it replaced showed 4.0-4.4 s beside groups_current's), offset_commits' "
        "gate 0.7 s and append 0.6 s, raw_records 0.6 s and the quality results 0.5 s; before "
        "them the commit summary 0.8 s, decode 0.3 s, read 0.15 s, lag 0.1 s. The same batches "
        "with the groups_current MERGE made a no-op (small_batch_without_merges_s, one run: no "
        "MERGE left in the batch) took 2.4 s: writes 1.2 s wall. So groups_current's MERGE, "
        "the last one of a small batch, is the whole distance to the target: alone a MERGE of "
        "50 of 10,000 groups_current rows takes 1.1-1.5 s here and a replaceWhere overwrite of "
        "the same rows 1.2-1.3 s (a probe, not kept: no gain); beside the appends on 2 cores "
        "it takes 2.5 s. Reaching 3 s needs groups_current written without a MERGE in a small "
        "batch: the same log as the fold states, its rows carried in each group's state "
        "version, with `groups_current` a view of each group's latest. Not done in this "
        "session: it changes a user-facing table into a view, with its migration, redecode "
        "and quality gate. The previous run: "
        "Measured again 11:42-11:56 on 2026-11-28 (UTC), nothing else running, with the "
        "measured floors beside it: 24 warm batches in three runs (run medians 6.2, 5.6 and "
        "6.5 s), median 6.2 s against 0.4 s for the same batch appended alone, 14.1x (the 3 s "
        "target is not met). In the same session, one run each of the same batches with "
        "MERGEs made no-ops (`bench/pipeline.py`, `WITHOUT_MERGES`: nothing written there, "
        "everything else as it runs): without the groups_current MERGE 5.3 s "
        "(a figure no longer measured), without it and the fold-state MERGE "
        "3.0 s (small_batch_without_merges_s then). So the two MERGEs are 3.2 s of the 6.2 s; "
        "groups_current's alone about 0.9 s, since beside it the fold-state MERGE takes 4.4 s "
        "and alone among the appends 3.2 s (median phases); and what is left when neither "
        "runs -- read 0.2 s, decode 0.4 s, the commit summary 0.6 s, lag 0.1 s, the appends "
        "with their gates and the quality results in writes of 1.2 s wall, the audit -- is at "
        "the 3 s target by itself. A job timeline of such a batch (Spark's status API, one "
        "batch of 4.6 s without the groups_current MERGE) shows ten small jobs before the "
        "writes (1.4 s: the source statistics, the decode with its counts, the commit "
        "summary), 0.5 s of driver work (fold, lag, the tasks), then the fold-state MERGE's "
        "twelve jobs from 2.2 to 4.3 s, each 0.01-0.4 s with planning between them, then the "
        "audit. What this leaves: carrying groups_current's rows in the fold-state MERGE (one "
        "MERGE a batch) is worth about 0.9 s here and cannot reach 3 s; reaching it needs "
        "both MERGEs out of a small batch and the rest trimmed -- the states in a store "
        "committed with the checkpoint for small batches (fold_state_store_vs_merge_50), "
        "with groups_current then written from them. Deletion vectors on the MERGEd tables "
        "made it slower (see 'Measurements behind design choices'). The previous run: "
        "Measured again 08:33-08:43 on 2026-11-28 (UTC), nothing else running, with the "
        "commit candidates picked from the columns the picks read and the gates' writes "
        "observing their totals only: 24 warm batches in three runs (run medians 7.3, 6.0 and "
        "6.1 s), median 6.3 s against 0.5 s for the same batch appended alone, 14.3x (the 3 s "
        "target is not met). Median phases: the groups_current and fold-state MERGEs side by "
        "side, 4.2 and 4.0 s, in writes of 4.4 s wall, beside the offset_commits append 1.0 s "
        "and gate 0.7 s, raw_records 0.7 s and the quality results 0.6 s; before them the "
        "commit summary 0.6 s, decode 0.4 s, read 0.2 s and lag 0.1 s. The fold-state MERGE "
        "(2.0 s alone, `fold_state_merge_s_50`) is where Spark's state store would save time "
        "here (0.44 s for the same 50 states, `fold_state_store_vs_merge_50`), but it would "
        "cost the steady batch 2.5x its MERGE (`fold_state_store_vs_merge_10000`). The "
        "previous run: "
        "Measured again 22:43-22:53 on 2026-11-27 (UTC), nothing else running, on tonight's "
        "slower machine state (see pipeline_records_per_s), with the fold outputs' gates "
        "compiled to Arrow: 24 warm batches in three runs (run medians 7.6, 6.5 and 8.4 s), "
        "median 7.3 s against 0.5 s for the same batch appended alone, 14.0x (14.4x in the "
        "afternoon's run below, 6.3 s against 0.43 s; the 3 s target is not met). The "
        "groups_current gate now takes 0.01 s (0.14-0.3 s with great-expectations); the "
        "batch is the two MERGEs side by side, 5.1 and 5.2 s (median phases), in writes of "
        "5.3 s wall, after commit summary 0.6 s, decode 0.5 s, read 0.3 s and lag 0.2 s. "
        "The afternoon's run: "
        "Measured again 16:49-16:59 on 2026-11-27 (UTC), nothing else running, with the "
        "fold-state MERGE among the table writes and the offset_commits gate counted by its "
        "append, on the afternoon's faster machine state: 24 warm batches of 1,004-1,042 "
        "records in three runs (run medians 6.3, 6.4 and 6.0 s), median 6.3 s against "
        "0.43 s for the same batch appended alone, 14.4x (the 3 s target is not met). Where a "
        "batch's time goes (medians of the phases): the table writes 4.4 s wall -- the "
        "groups_current and fold-state MERGEs side by side, 4.1 and 4.2 s, beside the "
        "offset_commits gate 1.0 s and append 1.2 s, raw_records 0.75 s and the quality "
        "results 0.6 s -- after commit summary 0.5 s, decode 0.4 s, read 0.2 s and lag 0.2 s. "
        "The two MERGEs are what is left: alone, in sequence, they took about 3 and 1.9 s on "
        "this machine state, so fewer MERGEs, not more overlap, is what brings the batch "
        "down on 2 cores. What follows was measured in the morning, before both changes. "
        "Measured 08:15-08:41 on 2026-11-27 (UTC), nothing else running, on a machine state "
        "about three times slower than 2026-11-24's (the freshness batches of that day took "
        "4.5-6.4 s; the same path takes 10-17 s now). Eight warm batches of 1,004-1,042 "
        "records after 204,008 stored records, two runs (run medians 11.8 s and 12.3 s) "
        "interleaved with two runs of the previous code (13.9 s and 13.0 s; see 'Measurements "
        "behind design choices', the writes' commit mark): median 11.9 s against 0.74 s for "
        "the same batch appended alone to raw_records as the pipeline's appends now are (a "
        "fresh write, without Delta's idempotency check), 15.6x its floor batch by batch; the "
        "3 s target is not met. The floor fell more than the batch (1.41 s to 0.74 s: it is one "
        "append, and the check was half of it), hence the larger ratio. Where a batch's time "
        "goes (medians of the phases): the table writes 5.9 s wall -- the groups_current MERGE "
        "5.2 s, beside the offset_commits gate 2.2 s then append 1.5 s, the raw_records append "
        "1.2 s and the quality_results append 1.1 s (2.9, 2.9 and 2.9 s before) -- then the "
        "fold-state MERGE 3.2 s and the audit append, after commit summary 0.9 s, decode 0.7 s, "
        "lag 0.5 s and read 0.4 s. The appends no longer ask Delta for their idempotency "
        "marker, which the Spark connector reads by reconstructing the table's whole snapshot "
        "state (three Spark jobs, 'Delta: Compute snapshot', whatever the write's size: found "
        "with a Java Flight Recorder profile of the driver); a batch that follows one the same "
        "process completed cannot be a replay and carries only its commit mark. What is left "
        "is the two MERGEs, in sequence: a MERGE reads its target through the snapshot's file "
        "list, so it still reconstructs the snapshot, materializes its source, scans for "
        "matching files and rewrites them (nine jobs beside the snapshot's). Outside the "
        "pipeline, on this machine, a 1,000-row append takes 0.59 s with the mark alone and "
        "1.55 s with Delta's check, and a 50-row MERGE into 10,000 rows 2.1-2.6 s. So 3 s is "
        "about one MERGE here, and a batch has two in sequence (groups_current among the "
        "parallel writes, then the fold state). What would bring it down is fewer MERGEs per "
        "small batch: the fold state in Spark's state store, committed with the checkpoint (no "
        "fold-state MERGE), and groups_current written from that state rather than MERGEd "
        "every batch. Since this was measured the fold-state MERGE runs beside the table "
        "writes: warm small batches, runs interleaved with the code before it, took run "
        "medians of 7.0 and 6.55 s against 6.85 and 6.65 s (15:17-15:30 the same day, a "
        "faster machine state): no gain on 2 cores, where the two MERGEs side by side take "
        "about what they took in sequence ('Measurements behind design choices')."
    ),
    "pipeline_steady_records_per_s": (
        "Measured again 16:12-16:20 on 2026-11-28 (UTC), nothing else running, with the fold "
        "states appended as versions instead of MERGEd (`pipelines/state.py`): the pipeline "
        "from the broker took 31.2 and 29.1 s a steady batch (33,165 records/s; 30,828 in the "
        "run below), from the log directory 28.1 and 26.5 s (36,635; 23,884), the floor 11.3 "
        "and 9.7 s before them and 7.9 and 7.6 s after (114,638; 103,277): "
        "pipeline_vs_floor_ratio 0.29 (target 0.7: not met), 0.32 from the log directory "
        "(0.23). The writes took 12.0-14.0 s wall (15.8-16.3 s below), nearly all of it the "
        "groups_current MERGE (11.8-13.8 s: 10,000 groups' rows every batch), beside the "
        "offset_commits gate 5.0-7.6 s and append 4.2-7.6 s, end_offsets and partition_lag "
        "3-4 s each; the fold-state append no longer shows among the longest. Before the "
        "writes: the commit summary 3.8-5.1 s, decode 3.1-4.0 s, the fold 2-2.5 s. So the "
        "floor of this ratio is now groups_current's MERGE and the Python passes over the "
        "batch (commit summary, fold), as for small_batch_s. The previous run: "
        "Measured again 07:56-08:02 on 2026-11-28 (UTC), nothing else running, with "
        "partition_lag's key marked where its rows are built (its gate no longer runs a job "
        "that computes them first): the pipeline from the broker took 33.5 and 31.4 s a steady "
        "batch (30,828 records/s), from the log directory 38.9 and 45.3 s (23,884), the floor "
        "10.9 and 8.7 s before them and 10.9 and 8.6 s after (103,277): pipeline_vs_floor_ratio "
        "0.30 (target 0.7: not met), 0.23 from the log directory. partition_lag's gate is gone "
        "from the profile (6.9-7.2 s below; now 0.1-0.5 s), and its append took 3.3-7.5 s; the "
        "writes 15.8-16.3 s wall from the broker (16.3-18.3 s below), 20.0-20.1 s from the log "
        "directory. What holds the ratio is unchanged: the groups_current and fold-state "
        "MERGEs, which show 15.0-19.5 s each beside the appends; the commit summary 4.0-6.5 s, "
        "decode 3.5-5.3 s, the fold 2.1-3.9 s. The tail batch of 420,000 records took 24.4 s "
        "(32.0 s from the log directory) against 31.0-33.1 s for 1,000,000: the MERGEs, 12.0-"
        "14.2 s there, cost what the batch's groups (10,000 in every batch) and not its records "
        "make them cost. The log-directory run was slower than the broker's this time (34.0 "
        "and 32.3 s below, faster than the broker's then): the two alternate within the "
        "spread of a run, as the floor runs do (10.9 and 8.7 s, 15.3 s first). The previous run: "
        "Measured again 01:59-02:06 on 2026-11-28 (UTC), nothing else running, with "
        "partition_lag computed in the executors (see groups_scaling_ratio): the pipeline from "
        "the broker took 38.2 and 33.5 s a steady batch (28,010 records/s), from the log "
        "directory 34.0 and 32.3 s (30,178), the floor 12.8 and 13.3 s before them and 8.3 "
        "and 8.3 s after (99,133): pipeline_vs_floor_ratio 0.28 (0.29 below; target 0.7: not "
        "met). The writes took 16.3-18.3 s wall (19.2-19.7 s below): partition_lag's append "
        "3.2-3.8 s (8.9-9.5 s), its gate 6.9-7.2 s, the first pass over the executors' lag rows "
        "(its uniqueness job); the fold-state and groups_current MERGEs still show 15.6-17.8 s "
        "each, queued behind the appends. So the lag rows left the driver at no cost to the "
        "batch; what holds the ratio is unchanged: the commit summary 4.0-5.3 s, decode "
        "3.6-5.3 s, the fold 2.2-2.4 s and the two MERGEs. The previous run: "
        "Measured 18:18-18:28 on 2026-11-27 (UTC), nothing else running, the code of the "
        "afternoon's run below with the log-directory run added. One process, one harness "
        "broker, 3,420,000 records in batches of 1,000,000: the floor, the pipeline from the "
        "broker, the pipeline from the same scenario as a log directory, the floor again. "
        "Steady batches: the pipeline from the broker took 38.5 and 36.6 s (25,965 and 27,346 "
        "records/s), the floor 12.2 and 10.8 s before the pipelines and 10.8 and 9.5 s after "
        "them (81,840-104,811 records/s): pipeline_vs_floor_ratio 0.29 (target 0.7: not met). "
        "Where a steady batch goes (`runs[].batches[].phases` in bench/results.json), in "
        "sequence: read 3.4-3.5 s, decode 4.1-4.5 s, the commit summary 4.5-5.8 s, the group "
        "fold 2.0-2.1 s, lag 0.8-0.9 s, then the table writes 19.2-19.7 s wall. Inside the "
        "writes the phases overlap on the 2 cores and queue behind one another (Spark's FIFO "
        "scheduler runs a job's tasks after those of jobs submitted earlier): the fold-state "
        "and groups_current MERGEs show 17.9-19.1 s each, the offset_commits append 9.3-9.9 s "
        "after its gate 5.5-6.0 s, partition_lag 8.9-9.5 s (199,176 lag rows a batch), "
        "raw_records 3.5-3.8 s. Alone, the same two MERGEs take far less: MERGEing the 10,000 "
        "groups_current rows and the 10,113 fold states of a 10,000-group run into themselves "
        "took 2.1-2.8 s and 2.0-2.4 s after a first one of 4.8 and 3.3 s (the fold states are "
        "29 MB of JSON a batch: 10,000 group states of 2.1 KB and 20 partitions' lag positions "
        "of 380 KB; 6.4 MB on disk). So the writes' wall time is the sum of their work on two "
        "cores, not one slow write, and what the pipeline adds to the floor is spread out: the "
        "commit summary (a second Python pass over the batch's commits), the fold, lag, "
        "partition_lag's rows, the gate, the two MERGEs, the results and end-offset appends. "
        "0.7 (about 15 s a batch here) needs most of them gone from the batch: the fold state "
        "in Spark's state store, committed with the checkpoint (no fold-state MERGE), "
        "groups_current and the commit summary from Spark's built-in stateful aggregation, "
        "the uniqueness check off the batch (the key is the record's coordinates, unique by "
        "construction of the source). The afternoon's run of the same code (15:37-15:46): "
        "34.6 and 31.9 s (30,098 records/s) against floors of 97,839, ratio 0.31; the previous "
        "code, with the gate before the append and the fold-state MERGE after the writes, run "
        "right after it (16:05-16:14): 46.4 and 37.9 s (23,974 records/s), floors 91,992, "
        "ratio 0.26. The input's tail batch (420,000 records, every partition read to its log "
        "end) is left out of the steady figures: 25.9 s in the pipeline, 5.4-5.7 s in the "
        "floor. Spark's Kafka source runs its consumers with fetch.max.wait.ms 10 "
        "(`spark/sources.py`, replaceable through `[sources.kafka] options`); with Kafka's "
        "default of 500 ms each partition read to its end cost half a second of a task "
        "(measured alone: floor query, 1,000 groups mirrored, batches of 40,000, interleaved "
        "500, 10, 10, 500 ms: the 22,000-record tail batch took 14.4 and 13.8 s with 500 ms, "
        "2.7 and 2.3 s with 10 ms)."
    ),
    "pipeline_steady_logdir_records_per_s": (
        "Measured 18:18-18:28 on 2026-11-27 (UTC) in the same process as "
        "pipeline_steady_records_per_s, between the pipeline from the broker and the second "
        "floor: the same scenario written as a Kafka log directory (3,420,000 records, no "
        "control records: the scale scenario runs no transactions), read by the segment "
        "source (a Python data source) in batches of 1,000,000, lag against the data topics' "
        "segments in the same directory. Steady batches 36.6 and 38.3 s (27,299 and 26,116 "
        "records/s), against 38.5 and 36.6 s from the broker: the same within the run's noise. "
        "pipeline_logdir_vs_floor_ratio 0.29 against the broker floor (target 0.7: not met). "
        "Phases: read 2.8-3.2 s (3.4-3.5 from the broker: the segment source frames the "
        "records in Python, the Kafka source fetches them over the loopback), decode 4.1-4.6 "
        "s, the commit summary 4.7 s, the fold 2.5-2.7 s, lag 1.1 s (the segment sampler "
        "reads the data partitions' segment ends), writes 18.2-18.5 s wall with the same "
        "composition as from the broker. So the source is not what limits the pipeline from "
        "a log directory either; the batch's own work is."
    ),
    "driver_rss_growth": (
        "Measured 12:10-12:38 on 2026-11-27 (UTC), nothing else running, one run each: the "
        "ingest query over the same 4,620,000-record log directory with batches of 4,000,000 "
        "(2 batches, 230.5 s) and of 250,000 (19 batches, 640.8 s). Peak RSS: the Python "
        "driver 785.5 MiB against 943.0 MiB (0.83: target 1.2, met), the JVM 8,141.8 against "
        "9,077.6 MiB (0.90), the Python workers 2,291.7 against 1,214.6 MiB. The driver does "
        "not grow with the batch: no per-record data reaches it (the plain commits, most of "
        "the records, are gated and appended from the executors and summarized there; what "
        "the driver folds is one row per group or transactional id of the batch). The Python "
        "workers, which decode and summarize, do grow (1.9x for 16x the records: Arrow "
        "batches of a larger task). That the driver's peak is higher with small batches was "
        "noticed and not looked into: the small-batch run is 2.8 times longer, and its peak "
        "may be the fold-state cache of the longer run or allocator growth over 19 batches; "
        "it is a question for a long-running query, which a test of hours would answer. The "
        "JVM on local[2] is the driver and the executors together and sits near its heap "
        "limit in both runs."
    ),
    "catchup_10m_s": (
        "Measured 12:29-12:38 on 2026-11-27 (UTC), nothing else running, one run: a cold start "
        "on 11,820,000 records (a log directory; fresh tables and checkpoint) in 12 batches of "
        "1,000,000: 507.4 s, 23,293 records/s, peak RSS JVM 8,672.5 MiB, Python driver "
        "916.3 MiB, Python workers 1,348.1 MiB. The first batch took 66.4 s (the JVM's first "
        "jobs, and every group's rows new: the group-history MERGEs insert), the eleven others "
        "32.6-42.2 s with no trend, so a backlog costs its batches and not its history "
        "(history_scaling_ratio). Each steady batch has the profile of "
        "pipeline_steady_records_per_s: the groups_current MERGE (13.5-18.8 s) and the "
        "offset_commits gate (8.4-15.4 s) side by side inside 14-20 s of writes, the commit "
        "summary 4.1-4.9 s, the decode 3.9-4.7 s. Batch 9's raw_records and end_offsets "
        "appends took about 12 s each against 4-5: their tenth commit, where Delta writes a "
        "checkpoint of the log."
    ),
    "scale_out_ratio": (
        "Measured 12:41-13:00 on 2026-11-27 (UTC), nothing else running: a standalone master "
        "and one 2-core worker from the pyspark install, the ingest job submitted four times "
        "with one executor of 1, 2, 2, 1 cores (client mode, batches of 250,000, 1,020,000 "
        "records). Steady batches: 7,500 and 9,102 records/s with 1 core, 7,396 and 6,739 "
        "with 2: scale_out_ratio 0.85 (target 1.6: not met). What stops it is this machine, "
        "which has 2 cores for the driver, the executor and the daemons together. Sampled "
        "beside the benchmark (per process, from /proc, every 2 s; the benchmark itself does "
        "not sample CPU), a steady batch of the last 1-core job (27.3-27.7 s) used 22.0-25.6 "
        "CPU-seconds in the executor (JVM and Python workers: the executor's one core 81-93% "
        "busy) and 20.0-20.5 in the driver (JVM 11.6-14.7, Python 5.8-8.4): 1.5-1.7 of the 2 "
        "cores, before a second executor core is added. With 2 executor cores the whole job "
        "used 234 CPU-seconds in the executor and 270 in the driver in about 245 s -- every "
        "core of the machine -- and the executor's tasks took 214 task-seconds against 140 "
        "for the same tasks with 1 core (from the driver's task log): two tasks and the "
        "driver were waiting for the same two cores. So the figure needs a machine with more "
        "cores than the driver's share plus two (for this workload about four), which this "
        "one is not. What it shows here, beside the machine: the driver's CPU is close to the "
        "executor's (20 CPU-seconds a 250,000-record batch: planning and code "
        "generation of each table's queries, the Delta commit protocol, the Python folds), "
        "and no executor takes that part; fewer queries and commits per batch (the MERGEs) "
        "are what would shrink it."
    ),
    "maintain_seconds": (
        "Measured 01:14-01:24 on 2026-11-27 (UTC), nothing else running, one sample: the first "
        "maintenance of 40 days that were never maintained, at the end of the last day, with "
        "the shipped rules. Per million internal-topic records written, the live files of "
        "raw_records went from 29.8 MB to 20.0 MB (retention, 30 days: 250,000 of 1,000,000 "
        "records deleted, and OPTIMIZE compacting each day's 6 files into 1: 240 files -> "
        "30), partition_lag from 345.1 MB to 63.0 MB (downsampling after 7 days to one row per "
        "partition and group per hour removed 9,345,600 of 11,520,000 rows; 240 files -> 40) "
        "and end_offsets from 8.6 MB to 1.3 MB (467,280 rows removed). The bytes still on "
        "disk right after the run include the files the run replaced, which VACUUM deletes "
        "once `[pipeline] deleted_file_retention` (7 days) has passed. Where the 400 s go "
        "(`steps` in bench/results.json): the three VACUUMs 182 s (77.0, 51.9 and 52.8 s: "
        "each lists every file of its table, and the first run deletes nothing because no "
        "replaced file is 7 days old yet), the partition_lag downsample 140.7 s (a rewrite of "
        "11,520,000 rows into 2,174,400), the OPTIMIZEs 60.3 s, retention 4.5 s. A daily "
        "run after this one has less to do: its downsample reads the older days again, but "
        "they hold one row in sixty by then; OPTIMIZE takes the last `optimize_days` and the "
        "days at the downsampling cutoff; VACUUM lists every file of the table each time."
    ),
    "fold_state_append_vs_merge_50": (
        "Measured 14:40-14:43 on 2026-11-28 (UTC), nothing else running, one run "
        "(`bench/state_store.py`, after the pipeline began appending its fold states as "
        "versions, `pipelines/state.py`): the same changed states written to a `fold_state` of "
        "10,000 by a MERGE restricted to their keys, as the pipeline did, and by an append, as "
        "it does now. 50 states: the MERGE 1.58 s (1.37-1.91 s, after a first of 3.5 s), the "
        "append 0.28 s (0.25-0.31): 0.18x. 10,000 states: 1.85 s against 0.43 s: 0.23x. In the "
        "same run the Python stateful operators took 0.36 and 0.48 s for 50 states and 5.4 and "
        "7.1 s for 10,000 (fold_state_store_vs_merge_*): the append is the cheapest of the four "
        "at both sizes. Its price is the superseded versions, deleted every `[pipeline] "
        "state_compaction_batches` batches and by `offsetscope maintain`, and a read of a key's "
        "state that picks its highest version (only for keys the query's mirror does not hold: "
        "after a start, or a new key)."
    ),
    "fold_state_store_vs_merge_10000": (
        "Measured again 14:40-14:43 on 2026-11-28 (UTC), one run: the MERGE 1.85 s, "
        "applyInPandasWithState 5.38 s, transformWithStateInPandas 7.10 s: 2.9x; with 50 "
        "states 1.58, 0.36 and 0.48 s: 0.23x (fold_state_append_vs_merge_50 has the append "
        "the pipeline now uses). The previous run: "
        "Measured 07:45-07:51 on 2026-11-28 (UTC), nothing else running, one run "
        "(`bench/state_store.py`): what carrying a micro-batch's changed fold states costs "
        "in the `fold_state` table (the pipeline's MERGE) and in Spark's state store (RocksDB) "
        "through the two Python stateful operators, the fold being the same JSON read, change "
        "and write per key. With every one of 10,000 states changing, as in a steady batch of "
        "1,000,000 records of 10,000 groups: the MERGE 1.96 s (1.66-3.29 s), "
        "applyInPandasWithState 4.92 s (4.44-5.81), transformWithStateInPandas 8.31 s "
        "(6.87-11.09): the state store 2.5x the MERGE. With 50 changing, as in a small batch: "
        "the MERGE 2.02 s, applyInPandasWithState 0.44 s, transformWithStateInPandas 0.50 s: "
        "0.22x. The MERGE's cost is nearly flat in the number of states (its jobs and its "
        "commit; 'Measurements behind design choices' has its parts); the stateful operators' "
        "grows by about 0.45 ms (applyInPandasWithState) and 0.8 ms (transformWithStateInPandas, "
        "whose state reads and writes are calls from the Python worker to the JVM) per key, "
        "which is the Python path per key, not RocksDB. So moving the fold states to the state "
        "store would take about 1.6 s from a small batch and add about 3 s to a steady "
        "batch of 1,000,000 records, and it would move the light streams' folds into the "
        "streaming plan, before `foreachBatch`: the offset-commit summaries they read would "
        "have to come from the plan too. `fold_state` stays a Delta table, which also keeps "
        "every state readable in SQL and the alerts query reading its change feed."
    ),
    "Burrow": (
        "Measured again 19:57-20:02 on 2026-11-27 (UTC), nothing else running, on the slower "
        "machine state of that evening (see pipeline_records_per_s): Burrow 71,669 records/s "
        "(three runs, 69,655-73,600), the floor on its input 4,569 (21.9 s), offsetscope's "
        "pipeline 1,448 (69.0 s): pipeline_vs_burrow_ratio 0.020 (0.037 on 2026-11-24), "
        "floor_vs_burrow_ratio 0.064. Of the pipeline's 69 s, about 25 s more than the "
        "machine state explains is the start-up the tables' check now costs (see "
        "pipeline_records_per_s: the catalogue's tables checked one by one, each one's Delta "
        "snapshot loaded cold); on 100,000 records that is a third of the run. Burrow on "
        "Kafka 4.4 read nothing again (the v4 values). From 2026-11-24: "
        "On Kafka 4.4 (the harness broker) Debian's Burrow 1.2.1 reads nothing: every offset "
        "commit is OffsetCommitValue v4 and is dropped with `failed to decode ... reason: "
        "value version, version: 4`, and its cluster module's offset fetches are refused "
        "(`failed to fetch offsets from broker`, sarama error EOF; most likely the request "
        "versions Kafka 4 no longer accepts, KIP-896). It also panics at start without "
        "ZooKeeper (`No Zookeeper servers specified`), so the benchmark runs a ZooKeeper from "
        "the Kafka 3.9 jars for it. On Kafka 3.9.1 (value v3) it read 100,000 commits (500 "
        "groups x 20 partitions x 10) in 0.9 s from process start to its HTTP API showing "
        "every last offset: 110,148 records/s, start-up included (108,523 in a run earlier in "
        "this session); it keeps only an in-memory ring per partition. On the same segment "
        "files offsetscope's pipeline took 24.3 s (4,116 records/s; 21.1 s, 4,749 records/s, "
        "earlier in the session with the previous lag code -- single runs of a batch made of "
        "fixed costs, so the difference is spread: its phases are the same to a few tenths of "
        "a second). The floor (burrow_input_floor_records_per_s: the same streaming query and "
        "source, each micro-batch only appended to raw_records) took 10.5 s: 9,517 records/s, "
        "0.086x Burrow (floor_vs_burrow_ratio). Of those 10.5 s about 8 are the JVM's first "
        "streaming query -- the Python data source's first plan and tasks, Delta's first "
        "commit, code generation: the same floor query run a second time in the same process "
        "took 2.5 s (measured in this session) -- and Burrow is timed from its own process "
        "start. So the 2x target (220,300 records/s against this Burrow) is not met and "
        "cannot be met on this stack: on Burrow's input it is 23x above what a Spark + Delta "
        "query that does nothing but land the records reaches, and on the 10x larger input "
        "(pipeline_floor_records_per_s, 69,334 records/s) still 3.2x above it. Meeting it "
        "would take an ingest outside Spark and Delta -- decoding in one process and keeping "
        "state in memory, as Burrow does -- which the project's fixed choices (PySpark jobs "
        "writing Delta tables) rule out. Within the stack, the pipeline runs at 0.43x of the "
        "floor on Burrow's input and 0.24x on the larger one."
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
