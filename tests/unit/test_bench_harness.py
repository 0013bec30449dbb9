"""The benchmark harness on tiny inputs: the dump-log identity check and the decode input.

Speed is never asserted here; these check that the harness measures the right thing (the
input holds the records it claims, the identity check catches a difference).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from bench import decode


def _printer(*lines: str) -> list[str]:
    return [sys.executable, "-c", f"print({chr(10).join(lines)!r})"]


def test_identity_check_ignores_dumping_lines_and_counts_the_rest() -> None:
    ours = _printer("Dumping a/00.log", "Log starting offset: 0", "| offset: 0")
    theirs = _printer("Dumping /abs/a/00.log", "Log starting offset: 0", "| offset: 0")
    assert decode.check_identical(ours, theirs) == 2


def test_identity_check_names_the_first_differing_line() -> None:
    ours = _printer("Dumping x", "same", '"transactionStatus":"Ongoing"')
    theirs = _printer("Dumping y", "same", '"transactionStatus":1')
    with pytest.raises(RuntimeError, match="at line 2") as caught:
        decode.check_identical(ours, theirs)
    assert "Ongoing" in str(caught.value)


def test_identity_check_catches_a_shorter_output() -> None:
    with pytest.raises(RuntimeError, match="at line 2"):
        decode.check_identical(_printer("a", "b"), _printer("a"))


def test_identity_check_fails_when_a_tool_fails() -> None:
    failing = [sys.executable, "-c", "import sys; print('a'); sys.exit(3)"]
    with pytest.raises(RuntimeError, match="exited 3"):
        decode.check_identical(failing, _printer("a"))


def test_scaled_sizes_keep_every_kind() -> None:
    sizes = decode.Sizes.scaled(0.001)
    assert (sizes.commits, sizes.group_records, sizes.txn_records) == (1_000, 10, 20)
    assert sizes.total == 1_030
    assert decode.Sizes.scaled(1.0) == decode.Sizes()
    assert decode.Sizes().input_dir() == decode.INPUT
    assert sizes.input_dir() != decode.INPUT


def test_generated_input_decodes_to_its_record_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sizes = decode.Sizes.scaled(0.001)
    counts = decode.generate(sizes, tmp_path)
    assert counts["commits"] == 1_000
    assert decode.segments("__consumer_offsets", tmp_path)
    decode.library_worker(tmp_path)
    result = json.loads(capsys.readouterr().out)
    assert result["records"] == sizes.total
    assert result["errors"] == 0
    # a second call reuses the directory (manifest unchanged)
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.log")}
    decode.generate(sizes, tmp_path)
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.log")} == before


def test_results_keep_findings_and_limits_beside_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench import common

    monkeypatch.setattr(common, "RESULTS", tmp_path / "results.json")
    monkeypatch.setattr(common, "DOCS", tmp_path / "benchmarks.md")
    common.save_results(
        [
            common.Metric("x_per_s", "records/s", [3.0, 1.0, 2.0], "tiny input"),
            common.Finding("tool", "it panicked: No Zookeeper servers specified"),
        ],
        {"x_per_s": ">= 1"},
        {"x_per_s": "the fixed cost per batch"},
    )
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["metrics"]["x_per_s"]["value"] == 2.0
    assert saved["findings"] == {"tool": "it panicked: No Zookeeper servers specified"}
    docs = (tmp_path / "benchmarks.md").read_text()
    assert "| `x_per_s` | 2 | records/s | >= 1 | tiny input |" in docs
    assert "No Zookeeper servers specified" in docs
    assert "**x_per_s.** the fixed cost per batch" in docs
    # a later run of another benchmark keeps the earlier figures, and the hand-written section
    (tmp_path / "benchmarks.md").write_text(f"{docs}\n{common.KEPT_SECTION}\n\n| kept | row |\n")
    common.save_results([common.Metric("y", "x", [1.5], "other")], {})
    again = json.loads((tmp_path / "results.json").read_text())
    assert set(again["metrics"]) == {"x_per_s", "y"}
    rewritten = (tmp_path / "benchmarks.md").read_text()
    assert "| `y` | 1.5 | x |" in rewritten
    assert rewritten.count(common.KEPT_SECTION) == 1
    assert rewritten.endswith(f"{common.KEPT_SECTION}\n\n| kept | row |\n")


def test_rss_sampler_counts_the_root_and_its_children() -> None:
    import subprocess
    import time

    from bench.pipeline import RssSampler

    # A root of our own (this test process may have a Spark JVM child in a full run) with one
    # Python child.
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import subprocess, sys, time; "
                "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); "
                "time.sleep(30)"
            ),
        ]
    )
    try:
        sampler = RssSampler(parent.pid)
        deadline = time.monotonic() + 20
        now = sampler.sample()
        while now["python_workers"] == 0 and time.monotonic() < deadline:
            now = sampler.sample()  # until the child has started
        assert now["python_driver"] > 0
        assert now["python_workers"] > 0  # the child is neither the root nor a JVM
        assert now["driver_jvm"] == 0
        assert sampler.peak["driver_jvm"] == 0
    finally:
        subprocess.run(["pkill", "-P", str(parent.pid)], check=False)
        parent.kill()
        parent.wait()


def test_cpu_accounting_gives_each_process_of_the_tree_its_role() -> None:
    import subprocess
    import time

    from bench.pipeline import CPU_ROLES, cpu_seconds

    # A root of our own with one Python child that spends 0.3 s of CPU, then waits.
    burn = "import time\nwhile time.process_time() < 0.3:\n    pass\ntime.sleep(30)"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import subprocess, sys, time; "
                f"subprocess.Popen([sys.executable, '-c', {burn!r}]); "
                "time.sleep(30)"
            ),
        ]
    )
    try:
        deadline = time.monotonic() + 20
        spent = cpu_seconds(parent.pid)
        # /proc counts in clock ticks, which may round the child's 0.3 s down by one.
        while spent["python_workers"] < 0.28 and time.monotonic() < deadline:
            spent = cpu_seconds(parent.pid)  # until the child has spent its 0.3 s
        assert set(spent) == set(CPU_ROLES)
        assert spent["python_workers"] >= 0.28  # the child: neither the root nor a JVM
        assert 0 < spent["python_driver"] < spent["python_workers"]
        assert spent["jvm_jit"] == spent["jvm_gc"] == spent["jvm_other"] == 0
        assert spent["other_jvm"] == 0
    finally:
        subprocess.run(["pkill", "-P", str(parent.pid)], check=False)
        parent.kill()
        parent.wait()


def test_a_jvm_is_the_spark_driver_only_when_it_runs_spark_submit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bench import pipeline

    commands = {
        2: "/usr/bin/java -cp x org.apache.spark.deploy.SparkSubmit pyspark-shell",
        3: "/usr/lib/jvm/bin/java -Xmx1g kafka.Kafka server.properties",
        4: "/work/.venv/bin/python -m pyspark.daemon",
    }
    monkeypatch.setattr(pipeline, "_cmdline", lambda pid: commands[pid])
    assert pipeline._role(1, root=1) == "python_driver"
    assert pipeline._role(2, root=1) == "driver_jvm"
    assert pipeline._role(3, root=1) == "other_jvm"  # a harness broker is not the driver
    assert pipeline._role(4, root=1) == "python_workers"


def test_jvm_threads_are_told_apart_by_their_names() -> None:
    from bench.pipeline import jvm_thread_role

    assert jvm_thread_role("C2 CompilerThre") == "jvm_jit"
    assert jvm_thread_role("C1 CompilerThre") == "jvm_jit"
    assert jvm_thread_role("GC Thread#1") == "jvm_gc"
    assert jvm_thread_role("G1 Conc#0") == "jvm_gc"
    assert jvm_thread_role("Executor task l") is None
    assert jvm_thread_role("VM Thread") is None


def test_the_warm_up_run_counts_in_no_figure() -> None:
    from bench.steady import RUNS, steady_metrics

    assert RUNS[0] == "warm_up"  # before anything measured
    res = _result(_run("warm_up", 90, 1, 1), _run("floor", 9, 10, 10), _run("pipeline", 9, 20, 25))
    by_name = {m.name: m for m in steady_metrics(res, 10_000, 1_000_000)}
    assert by_name["pipeline_steady_records_per_s"].samples == [50_000.0, 40_000.0]
    assert by_name["floor_steady_records_per_s"].samples == [100_000.0, 100_000.0]
    # Its batches stay in the record, beside the measured runs'.
    assert by_name["pipeline_steady_records_per_s"].extra["runs"][0]["kind"] == "warm_up"


def test_steady_figures_carry_the_cpu_each_role_spent_a_steady_batch() -> None:
    from bench.steady import steady_metrics

    def run(kind: str, *jit: float) -> dict[str, object]:
        batches = []
        for i, seconds in enumerate(jit):
            cpu = dict.fromkeys(
                ("python_driver", "jvm_gc", "jvm_other", "python_workers", "other_jvm"), 1.0
            )
            batches.append(
                {
                    "batch_id": i,
                    "rows_in": 1_000_000,
                    "wall_s": 10.0,
                    "cpu_s": {**cpu, "jvm_jit": seconds},
                }
            )
        return {"kind": kind, "batches": batches}

    # The first batch of each run (JIT 50 s) is not steady.
    res = _result(run("floor", 50.0, 3.0, 5.0), run("pipeline", 50.0, 7.0, 9.0, 11.0))
    by_name = {m.name: m for m in steady_metrics(res, 10_000, 1_000_000)}
    pipeline = by_name["pipeline_steady_records_per_s"]
    assert pipeline.extra["cpu_s_per_steady_batch"]["jvm_jit"] == 9.0
    assert pipeline.extra["cpu_s_per_steady_batch"]["cores_busy"] == 1.4  # (9 + 5) / 10
    assert "JIT compiler threads 9.0" in pipeline.notes
    assert "1.4 cores busy" in pipeline.notes
    assert by_name["floor_steady_records_per_s"].extra["cpu_s_per_steady_batch"]["jvm_jit"] == 4.0
    # Batches recorded before the CPU was measured give the figures without it.
    plain = {
        m.name: m
        for m in steady_metrics(_result(_run("floor", 9, 9), _run("pipeline", 9, 9)), 1, 1_000_000)
    }
    assert "cpu_s_per_steady_batch" not in plain["pipeline_steady_records_per_s"].extra
    assert "CPU-seconds" not in plain["pipeline_steady_records_per_s"].notes


def test_steady_figures_carry_the_driver_pythons_garbage_collection() -> None:
    from bench.steady import steady_metrics

    def run(kind: str, *collected: float) -> dict[str, object]:
        cpu = dict.fromkeys(
            ("python_driver", "jvm_jit", "jvm_gc", "jvm_other", "python_workers", "other_jvm"),
            1.0,
        )
        return {
            "kind": kind,
            "batches": [
                {
                    "batch_id": i,
                    "rows_in": 1_000_000,
                    "wall_s": 10.0,
                    "cpu_s": cpu,
                    "python_gc_s": seconds,
                }
                for i, seconds in enumerate(collected)
            ],
        }

    res = _result(run("floor", 9.0, 0.1, 0.3), run("pipeline", 9.0, 0.5, 0.7, 0.9))
    pipeline = {m.name: m for m in steady_metrics(res, 10_000, 1_000_000)}[
        "pipeline_steady_records_per_s"
    ]
    assert pipeline.extra["cpu_s_per_steady_batch"]["python_gc"] == 0.7
    assert "driver Python 1.0 (its cyclic garbage collector 0.7)" in pipeline.notes


def test_the_python_gc_clock_counts_collections() -> None:
    import gc

    from bench.steady import PythonGc

    clock = PythonGc()
    try:
        before = clock.seconds
        for _ in range(3):
            gc.collect()
        assert clock.seconds > before
    finally:
        gc.callbacks.remove(clock._on)


def test_freshness_percentile_is_nearest_rank() -> None:
    from bench.freshness import _percentile

    values = [float(v) for v in range(1, 101)]  # 1 .. 100
    assert _percentile(values, 50) == 50.0
    assert _percentile(values, 99) == 99.0
    assert _percentile(values, 100) == 100.0
    assert _percentile([7.0, 1.0, 3.0], 50) == 3.0
    assert _percentile([4.0], 99) == 4.0


def test_child_process_logs_its_output_and_is_stopped_when_the_block_ends(tmp_path: Path) -> None:
    from bench import common

    log = tmp_path / "logs" / "platform.log"
    with common.child_process("platform", log=log) as proc:
        assert proc.wait(timeout=60) == 0
    assert "Linux" in log.read_text()

    # A child that would run for ever (an HTTP server on a free port) is stopped on leaving.
    with common.child_process("http.server", "0", "--bind", "127.0.0.1", log=log) as proc:
        assert proc.poll() is None
    assert proc.poll() is not None


def test_freshness_is_also_measured_at_the_shipped_trigger() -> None:
    from bench.freshness import shipped_trigger_s

    from offsetscope import config

    # conf/ ships "30s"; the benchmark reads it rather than repeating it.
    assert config.load("local").pipeline.processing_time == "30s"
    assert shipped_trigger_s() == 30


def test_freshness_triggers_are_ten_five_and_the_shipped_one_each_once() -> None:
    from bench.freshness import triggers

    assert triggers() == [
        (10, "freshness"),
        (5, "freshness_trigger_5s"),
        (30, "freshness_trigger_30s"),
    ]


def test_groups_scaling_figures_from_a_worker_result() -> None:
    from bench.groups import metrics
    from bench.pipeline import Input

    def one(groups: int, seconds: list[float]) -> dict[str, object]:
        return {
            "groups": groups,
            "history_records": groups * 22,
            "rows_in": 19_688,
            "seconds": sum(seconds) / len(seconds),
            "seconds_each": seconds,
            "phases": {},
        }

    result = {
        "10": one(10, [20.0, 10.0]),
        "100": one(100, [30.0]),
        "1000": one(1000, [45.0]),
        "peak_rss_mib": {"driver_jvm": 2000.0, "python_driver": 500.0},
    }
    by_name = {m.name: m for m in metrics(result, [10, 100, 1000], Input(10, 300))}
    assert by_name["groups_scaling_batch_s_10"].samples == [20.0, 10.0]
    assert by_name["groups_scaling_batch_s_1000"].median == 45.0
    # The largest count over the smallest, whose figure is the mean of its two runs.
    assert by_name["groups_scaling_ratio"].median == 3.0
    assert by_name["groups_scaling_peak_rss_python_driver_mib"].median == 500.0
    assert "19,688 records" in by_name["groups_scaling_ratio"].input


def test_small_batch_figures_take_every_batch_and_its_own_floor() -> None:
    from bench.pipeline import Input, small_metrics

    def batch(rows: int, seconds: float, floor: float) -> dict[str, object]:
        return {"rows_in": rows, "seconds": seconds, "floor_seconds": floor, "phases": {}}

    results = [
        {"history_records": 204_000, "batches": [batch(1_004, 12.0, 2.0), batch(1_050, 9.0, 3.0)]},
        {
            "history_records": 204_000,
            "batches": [batch(1_008, 6.0, 1.0)],
            "peak_rss_mib": {"python_driver": 700.0},
        },
    ]
    by_name = {m.name: m for m in small_metrics(results, Input(10_000, 30))}
    assert by_name["small_batch_s"].samples == [12.0, 9.0, 6.0]
    assert by_name["small_batch_s"].median == 9.0
    assert by_name["small_batch_floor_s"].median == 2.0
    # Each batch over its own floor, not the medians' ratio (4.5).
    assert by_name["small_batch_vs_floor_ratio"].samples == [6.0, 3.0, 6.0]
    assert by_name["small_batch_vs_floor_ratio"].median == 6.0
    assert "1,004-1,050 records" in by_name["small_batch_s"].input
    assert "204,000 stored records; 2 run(s)" in by_name["small_batch_s"].input
    assert by_name["small_batch_s"].extra["peak_rss_mib"] == {"python_driver": 700.0}


def test_maintain_figures_are_per_million_records_before_and_after() -> None:
    from bench.maintain import TABLES, metrics

    def sizes(files: int, size: int) -> dict[str, dict[str, int]]:
        return {t: {"files": files, "bytes": size, "disk_bytes": 2 * size} for t in TABLES}

    result = {
        "records": 250_000,
        "lag_rows": 57_600,
        "lag_keys": "1 groups x 1 partitions",
        "rows": {"before": dict.fromkeys(TABLES, 100), "after": dict.fromkeys(TABLES, 75)},
        "before": sizes(240, 1_000_000),
        "after": sizes(30, 400_000),
        "seconds": 12.5,
        "steps": ["raw_records: retention: 25 rows removed ..."],
    }
    by_name = {m.name: m for m in metrics(result)}
    assert by_name["maintain_raw_records_bytes_per_million_before"].median == 4_000_000
    after = by_name["maintain_partition_lag_bytes_per_million_after"]
    assert after.median == 1_600_000
    assert after.extra == {"disk_bytes": 800_000, "files": 30, "rows": 75}
    assert by_name["maintain_end_offsets_files_after"].median == 30
    assert by_name["maintain_seconds"].extra["steps"] == result["steps"]


def test_steady_figures_leave_out_the_first_batch_and_the_tail_of_every_run() -> None:
    from bench.steady import steady_metrics

    def run(kind: str, *batches: tuple[int, float]) -> dict[str, object]:
        return {
            "kind": kind,
            "batches": [
                {"batch_id": i, "rows_in": rows, "wall_s": wall}
                for i, (rows, wall) in enumerate(batches)
            ],
        }

    res = {
        "records": 3_120_000,
        "peak_rss_mib": {"driver_jvm": 3000.0},
        "runs": [
            # first batch (warm-up) and the 120,000-record tail are not steady
            run("floor", (1_000_000, 40.0), (1_000_000, 10.0), (1_000_000, 8.0), (120_000, 1.0)),
            run("pipeline", (1_000_000, 90.0), (1_000_000, 25.0), (1_000_000, 20.0)),
            run("floor", (1_000_000, 30.0), (950_000, 9.5), (170_000, 2.0)),
        ],
    }
    by_name = {m.name: m for m in steady_metrics(res, 10_000, 1_000_000)}
    assert by_name["pipeline_steady_records_per_s"].samples == [40_000.0, 50_000.0]
    assert by_name["floor_steady_records_per_s"].samples == [100_000.0, 125_000.0, 100_000.0]
    # Over the mean of the floor runs beside it: 112,500 and 100,000 records/s.
    assert by_name["pipeline_vs_floor_ratio"].samples == [pytest.approx(45_000 / 106_250)]
    assert by_name["pipeline_vs_floor_ratio"].extra["pooled"] == 0.45
    assert (
        "3,120,000 records, micro-batches of 1,000,000"
        in by_name["floor_steady_records_per_s"].input
    )
    assert by_name["pipeline_steady_records_per_s"].extra["runs"] == res["runs"]


def _run(kind: str, *walls: float) -> dict[str, object]:
    """A steady-run result's run of batches of 1,000,000 records taking ``walls`` seconds."""
    return {
        "kind": kind,
        "batches": [
            {"batch_id": i, "rows_in": 1_000_000, "wall_s": wall} for i, wall in enumerate(walls)
        ],
    }


def _result(*runs: dict[str, object]) -> dict[str, Any]:
    """A steady-run worker's result of 3,000,000 records read in ``runs``."""
    return {"records": 3_000_000, "peak_rss_mib": {}, "runs": list(runs)}


def test_the_log_directory_run_gets_its_own_figure_against_the_same_floor() -> None:
    from bench.steady import steady_metrics

    res = _result(
        _run("floor", 30.0, 10.0, 10.0),
        _run("pipeline", 60.0, 20.0, 25.0),
        _run("pipeline_logdir", 70.0, 40.0, 50.0),
        _run("floor", 30.0, 10.0, 10.0),
    )
    by_name = {m.name: m for m in steady_metrics(res, 10_000, 1_000_000)}
    assert by_name["pipeline_steady_logdir_records_per_s"].samples == [25_000.0, 20_000.0]
    assert by_name["pipeline_logdir_vs_floor_ratio"].median == 0.225
    assert by_name["pipeline_vs_floor_ratio"].median == 0.45
    assert [r["kind"] for r in by_name["pipeline_steady_logdir_records_per_s"].extra["runs"]] == [
        "pipeline_logdir"
    ]
    # A log-directory run without a steady batch is an error, not a missing figure.
    res["runs"][2] = _run("pipeline_logdir", 70.0)
    with pytest.raises(RuntimeError, match="pipeline_logdir run"):
        steady_metrics(res, 10_000, 1_000_000)


def test_the_outputs_floor_is_a_figure_and_a_ratio_against_the_same_floor() -> None:
    from bench.steady import steady_metrics

    res = _result(
        _run("floor", 30.0, 10.0, 10.0),
        _run("pipeline", 60.0, 20.0, 25.0),
        _run("outputs_floor", 40.0, 12.5, 12.5),
        _run("floor", 30.0, 8.0, 12.5),
    )
    by_name = {m.name: m for m in steady_metrics(res, 10_000, 1_000_000)}
    # Its batches are neither the floor's nor the pipeline's.
    assert by_name["floor_steady_records_per_s"].samples == [100_000.0] * 2 + [125_000.0, 80_000.0]
    assert by_name["outputs_floor_steady_records_per_s"].samples == [80_000.0, 80_000.0]
    # The floor runs beside both: 100,000 and 102,500 records/s.
    assert by_name["outputs_floor_vs_floor_ratio"].median == pytest.approx(80_000 / 101_250)
    assert by_name["pipeline_vs_floor_ratio"].median == pytest.approx(45_000 / 101_250)
    # Without the run there is no such figure.
    del res["runs"][2]
    assert "outputs_floor_vs_floor_ratio" not in {m.name for m in steady_metrics(res, 1, 1)}


def test_steady_figures_need_a_steady_batch_of_each_query() -> None:
    from bench.steady import steady_metrics

    res = {
        "records": 1_000_000,
        "peak_rss_mib": {},
        "runs": [
            {"kind": "floor", "batches": [{"batch_id": 0, "rows_in": 1_000_000, "wall_s": 9.0}]},
            {"kind": "pipeline", "batches": [{"batch_id": 0, "rows_in": 1_000_000, "wall_s": 9.0}]},
        ],
    }
    with pytest.raises(RuntimeError, match="no steady batch"):
        steady_metrics(res, 10_000, 1_000_000)


def test_memory_figures_divide_the_large_batches_peak_by_the_small_ones() -> None:
    from bench.memory import catchup_metric, rss_metrics

    def result(python: float, jvm: float, seconds: float) -> dict[str, object]:
        return {
            "records": 4_000_000,
            "seconds": seconds,
            "batches": [{"batch_id": 0}, {"batch_id": 1}],
            "peak_rss_mib": {"python_driver": python, "driver_jvm": jvm, "python_workers": 900.0},
        }

    large, small = result(420.0, 3_000.0, 200.0), result(400.0, 2_000.0, 250.0)
    by_name = {m.name: m for m in rss_metrics(large, small, "input")}
    assert by_name["driver_rss_growth"].median == 1.05
    assert by_name["driver_jvm_rss_growth"].median == 1.5
    assert by_name["driver_rss_growth"].extra["peak_rss_mib"]["250000"]["python_driver"] == 400.0
    catchup = catchup_metric(large, "input")
    assert catchup.median == 200.0
    assert "2 batches, 20,000 records/s" in catchup.notes


def test_scale_out_reads_a_jobs_batches_from_its_progress_lines() -> None:
    from bench.scale_out import job_batches, scale_metrics

    def line(batch: int, rows: int, seconds: float, tail: str = "") -> str:
        return (
            f"[offsetscope_ingest] batch {batch}: {rows} records ({rows} events, 0 quarantined, "
            f"0 unknown) in {seconds:.1f} s ({rows / seconds:,.0f} records/s){tail}"
        )

    output = "\n".join(
        [
            "ingest: query offsetscope_ingest started, reading ...",
            line(0, 250_000, 40.0, "; backlog 770,000 records in 50 partitions"),
            line(1, 250_000, 20.0),
            line(2, 250_000, 30.0),
            line(3, 20_000, 9.0),
        ]
    )
    batches = job_batches(output)
    assert [(b["batch_id"], b["rows_in"], b["seconds"]) for b in batches] == [
        (0, 250_000, 40.0), (1, 250_000, 20.0), (2, 250_000, 30.0), (3, 20_000, 9.0),
    ]  # fmt: skip
    slow = [dict(b, seconds=b["seconds"] * 2) for b in batches]
    jobs = [{"cores": 1, "batches": slow}, {"cores": 2, "batches": batches}]
    by_name = {m.name: m for m in scale_metrics(jobs, "input", 250_000)}
    # steady: batches 1 and 2 only (500,000 records in 50 s with 2 cores)
    assert by_name["scale_out_records_per_s_2_cores"].samples == [10_000.0]
    assert by_name["scale_out_records_per_s_1_core"].samples == [5_000.0]
    assert by_name["scale_out_ratio"].median == 2.0
    assert not any(name.startswith("scale_out_floor") for name in by_name)


def test_scale_out_floor_jobs_get_figures_of_their_own() -> None:
    from bench.scale_out import scale_metrics

    def job(kind: str, cores: int, seconds: float) -> dict[str, object]:
        busy = {"cores_busy": 1.5 + cores / 4} if kind == "floor" else {}
        batches = [
            {"batch_id": 0, "rows_in": 250_000, "seconds": 60.0, **busy},  # the warm-up
            {"batch_id": 1, "rows_in": 250_000, "seconds": seconds, **busy},
            {"batch_id": 2, "rows_in": 1_000, "seconds": 1.0},  # the tail: left out
        ]
        return {"kind": kind, "cores": cores, "batches": batches}

    jobs = [
        job("ingest", 1, 25.0), job("floor", 1, 10.0),
        job("ingest", 2, 20.0), job("floor", 2, 8.0),
        job("ingest", 2, 20.0), job("floor", 2, 8.0),
        job("ingest", 1, 25.0), job("floor", 1, 10.0),
    ]  # fmt: skip
    by_name = {m.name: m for m in scale_metrics(jobs, "input", 250_000)}
    assert by_name["scale_out_records_per_s_1_core"].samples == [10_000.0, 10_000.0]
    assert by_name["scale_out_ratio"].median == 1.25
    assert by_name["scale_out_floor_records_per_s_1_core"].samples == [25_000.0, 25_000.0]
    assert by_name["scale_out_floor_records_per_s_2_cores"].samples == [31_250.0, 31_250.0]
    assert by_name["scale_out_floor_ratio"].median == 1.25
    assert "busy in the steady batches (median): 1.75 with 1 executor core, 2.00 with 2" in (
        by_name["scale_out_floor_records_per_s_1_core"].notes
    )
    assert "busy" not in by_name["scale_out_records_per_s_1_core"].notes


def test_machine_cores_busy_comes_from_proc_stat_deltas(tmp_path: Path) -> None:
    from bench.scale_out import cores_busy, machine_jiffies

    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal (guest columns are inside user's)
    stat.write_text("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\n")
    before = machine_jiffies(stat)
    assert before == (150, 1000)
    stat.write_text("cpu  250 0 100 850 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\n")
    after = machine_jiffies(stat)
    # 200 of the 250 ticks since were busy: 0.8 of the machine, 1.6 of 2 cores
    assert cores_busy(before, after, cores=2) == 1.6
    assert cores_busy(after, after, cores=2) == 0.0


def test_a_floor_query_counts_each_batch_from_its_progress() -> None:
    from types import SimpleNamespace

    from bench.steady import rows_read

    progress = [
        {"batchId": 0, "numInputRows": 250_000},
        {"batchId": 1, "numInputRows": 0},  # a trigger that found nothing new yet
        {"batchId": 1, "numInputRows": 20_000},  # batch 1 itself
        {"batchId": 2, "numInputRows": 0},  # nothing after it
    ]
    assert rows_read(SimpleNamespace(recentProgress=progress)) == {0: 250_000, 1: 20_000, 2: 0}


def test_each_run_is_measured_against_the_floor_runs_beside_it() -> None:
    from bench.steady import RUNS, beside_floors, steady_metrics

    # Every measured run but the floor has a floor run on each side (not always next to it).
    for i, kind in enumerate(RUNS):
        if kind not in ("warm_up", "floor"):
            assert "floor" in RUNS[:i]
            assert "floor" in RUNS[i + 1 :]
    # A machine that doubles its speed between the first two floor runs: the pipeline run
    # goes as fast as the first floor (1.0), the log-directory run half as fast as the floors
    # beside it (0.5). The pooled floor (median 200,000) would put both at 0.5.
    res = _result(
        _run("floor", 30.0, 10.0, 10.0),
        _run("pipeline", 60.0, 10.0, 10.0),
        _run("floor", 30.0, 5.0, 5.0),
        _run("pipeline_logdir", 60.0, 10.0, 10.0),
        _run("floor", 30.0, 5.0, 5.0),
    )
    by_name = {m.name: m for m in steady_metrics(res, 10_000, 1_000_000)}
    assert by_name["pipeline_vs_floor_ratio"].samples == [pytest.approx(100_000 / 150_000)]
    assert by_name["pipeline_logdir_vs_floor_ratio"].samples == [0.5]
    assert by_name["pipeline_vs_floor_ratio"].extra["pooled"] == 0.5
    # At an end of the runs, the one floor run beside it; with none, no ratio to take.
    assert beside_floors(res["runs"][:2], "pipeline", 1_000_000) == [1.0]
    with pytest.raises(RuntimeError, match="no floor run beside the pipeline run 0"):
        beside_floors(res["runs"][1:2], "pipeline", 1_000_000)


def test_several_workers_pool_their_batches_and_give_a_ratio_each() -> None:
    from bench.steady import combined, steady_metrics

    first = _result(
        _run("warm_up", 90.0, 30.0),
        _run("floor", 30.0, 10.0),
        _run("pipeline", 60.0, 20.0),
        _run("floor", 30.0, 10.0),
    )
    second = _result(
        _run("warm_up", 90.0, 30.0),
        _run("floor", 30.0, 5.0),
        _run("pipeline", 60.0, 8.0),
        _run("floor", 30.0, 5.0),
    )
    first["peak_rss_mib"] = {"driver_jvm": 3000.0, "python_driver": 900.0}
    second["peak_rss_mib"] = {"driver_jvm": 3500.0, "python_driver": 800.0}
    both = combined([first, second])
    assert both["peak_rss_mib"] == {"driver_jvm": 3500.0, "python_driver": 900.0}
    by_name = {m.name: m for m in steady_metrics(both, 10_000, 1_000_000)}
    # Each pipeline run against its own process's floors, never the other's.
    assert by_name["pipeline_vs_floor_ratio"].samples == [0.5, 0.625]
    assert by_name["pipeline_steady_records_per_s"].samples == [50_000.0, 125_000.0]
    assert len(by_name["floor_steady_records_per_s"].samples) == 4
    with pytest.raises(ValueError, match="different inputs"):
        combined([first, {**second, "records": 1}])
