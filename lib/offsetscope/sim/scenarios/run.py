"""Run a scenario and write what it produced: a Kafka log directory, its ground truth, and
(optionally) the same records mirrored to a real broker. The ``offsetscope simulate`` command
(:mod:`offsetscope.cli.simulate`) and the checks call :func:`simulate_to`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any


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
    progress: Callable[[str], None] | None = None,
) -> str:
    """Run a scenario and write its outputs; returns a one-line summary.

    Raises:
        ScenarioError: the scenario is invalid.
        FileExistsError: ``out`` holds partitions already and ``replace`` is False.
    """
    import time

    from offsetscope.sim.scenarios.engine import simulate
    from offsetscope.sim.scenarios.logdir import write_log_dir
    from offsetscope.sim.scenarios.spec import load_scenario

    spec = load_scenario(scenario, params=params, seed=seed)
    started = time.perf_counter()
    result = simulate(spec, _reporter(progress, started) if progress else None)
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
        if progress is not None and time.perf_counter() - started > PROGRESS_AFTER_S:
            progress(f"simulate: writing {total:,} records to {out} ...")
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
        from offsetscope.sim.scenarios.mirror import MirrorNames, mirror_to_broker

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


# A run shorter than this prints no progress; a longer one prints at most every this often.
PROGRESS_AFTER_S = 3.0


def _reporter(say: Callable[[str], None], started: float) -> Callable[[int, int], None]:
    import time

    last = [started]

    def report(done_ms: int, total_ms: int) -> None:
        now = time.perf_counter()
        if now - last[0] < PROGRESS_AFTER_S:
            return
        last[0] = now
        say(
            f"simulate: {100 * done_ms / total_ms:.0f}% of {total_ms / 1000:g} s of virtual "
            f"time after {now - started:.0f} s"
        )

    return report
