"""Shared benchmark plumbing: repeated timings, machine facts, results file and docs table.

Every figure is the median of several runs measured in the same ``make bench`` invocation, so
ratios between tools compare like with like on the same machine and the same input.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results.json"
DOCS = ROOT / "docs" / "benchmarks.md"
WORK = ROOT / ".work" / "bench"


@dataclass
class Metric:
    """One reported figure: its samples, unit, and what it was measured on."""

    name: str
    unit: str
    samples: list[float]
    input: str
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    def as_json(self) -> dict[str, Any]:
        return {
            "value": round(self.median, 3),
            "unit": self.unit,
            "samples": [round(s, 3) for s in self.samples],
            "input": self.input,
            "notes": self.notes,
            **self.extra,
        }


@dataclass(frozen=True, slots=True)
class Finding:
    """Something a benchmark found instead of (or beside) a figure, kept verbatim."""

    name: str
    text: str


def timed(fn: Callable[[], Any]) -> float:
    """Wall seconds of one call."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def repeat(fn: Callable[[], Any], runs: int, warmup: int = 1) -> list[float]:
    """Wall seconds of ``runs`` calls after ``warmup`` discarded ones."""
    for _ in range(warmup):
        fn()
    return [timed(fn) for _ in range(runs)]


def run_process(
    cmd: Sequence[str], *, cpu: int | None = 0, stdout: Any = subprocess.DEVNULL
) -> float:
    """Wall seconds of a whole process, pinned to one CPU when ``cpu`` is given."""
    full = [*(["taskset", "-c", str(cpu)] if cpu is not None else []), *cmd]
    start = time.perf_counter()
    subprocess.run(full, check=True, stdout=stdout, stderr=subprocess.PIPE)
    return time.perf_counter() - start


@contextmanager
def child_process(module: str, *args: str, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``python -m module args`` from the checkout in a session of its own, its output in
    ``log``; the whole process group is stopped if it still runs when the block ends."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=ROOT,
        )
        try:
            yield proc
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait()


@contextmanager
def harness_broker(name: str) -> Iterator[Any]:
    """A fresh harness broker (``[broker]`` of ``conf/local``, work folder ``name``) for one
    benchmark: yields its handle; stopped and its folder removed when the block ends."""
    import dataclasses
    import shutil

    from offsetscope import config
    from offsetscope.verify.harness.broker import Broker

    broker = Broker(dataclasses.replace(config.load("local").broker, name=name))
    handle = broker.start(fresh=True, tie_to_parent=True)
    try:
        yield handle
    finally:
        handle.stop()
        shutil.rmtree(broker.paths.root, ignore_errors=True)


def machine() -> dict[str, Any]:
    def version(pkg: str) -> str:
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return "-"

    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    cpu = "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "java": (java.stderr.splitlines() or ["-"])[0],
        "versions": {
            p: version(p) for p in ("pyspark", "delta-spark", "pyarrow", "numpy", "confluent-kafka")
        },
        "measured_at": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "load_average": " ".join(f"{x:.1f}" for x in os.getloadavg()),
    }


def load_results() -> dict[str, Any]:
    if RESULTS.exists():
        data: dict[str, Any] = json.loads(RESULTS.read_text())
        return data
    return {"machine": {}, "metrics": {}}


def save_results(
    metrics: Sequence[Metric | Finding],
    targets: dict[str, str],
    limits: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Merge ``metrics`` into ``bench/results.json`` and rewrite ``docs/benchmarks.md``."""
    results = load_results()
    results["machine"] = machine()
    results.setdefault("findings", {})
    for m in metrics:
        if isinstance(m, Finding):
            results["findings"][m.name] = m.text
        else:
            results["metrics"][m.name] = {
                **m.as_json(),
                "measured_at": results["machine"]["measured_at"],
                "load_average": results["machine"]["load_average"],
            }
    results["limits"] = dict(limits or {})
    RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    write_docs(results, targets)
    return results


# A hand-written section of docs/benchmarks.md that the code's comments point to; kept as it is
# when the generated part above it is rewritten.
KEPT_SECTION = "## Measurements behind design choices"


def write_docs(results: dict[str, Any], targets: dict[str, str]) -> None:
    m = results["machine"]
    lines = [
        "# Benchmarks",
        "",
        "Written by `make bench` (`bench/run.py`); every figure is the median of the samples",
        "listed in `bench/results.json` (with when each was measured and the load average then;",
        "`BENCH_ONLY` runs update their own figures and keep the others), on this machine:",
        "",
        f"* CPU: {m.get('cpu')} ({m.get('cores')} cores), {m.get('memory_gib')} GiB",
        f"* {m.get('os')}, Python {m.get('python')}, {m.get('java')}",
        "* " + ", ".join(f"{k} {v}" for k, v in sorted(m.get("versions", {}).items())),
        (
            f"* measured {m.get('measured_at')}, load average {m.get('load_average')} "
            "(each figure's own time and load average are in bench/results.json; see 'Measuring "
            "conditions' below)"
        ),
        "",
        "| metric | value | unit | target | input | notes |",
        "| --- | ---: | --- | --- | --- | --- |",
    ]
    for name, r in sorted(results["metrics"].items()):
        value = r["value"]
        shown = f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.3g}"
        lines.append(
            f"| `{name}` | {shown} | {r['unit']} | {targets.get(name, '')} | {r['input']} | {r['notes']} |"
        )
    if results.get("findings"):
        lines += ["", "## Findings", ""]
        lines += [f"* **{k}**: {v}" for k, v in sorted(results["findings"].items())]
    if results.get("limits"):
        lines += ["", "## What limits it", ""]
        for k, v in results["limits"].items():
            lines += [f"**{k}.** {v}", ""]
    lines.append("")
    kept = ""
    if DOCS.exists() and KEPT_SECTION in (old := DOCS.read_text()):
        kept = KEPT_SECTION + old.split(KEPT_SECTION, 1)[1]
    DOCS.parent.mkdir(parents=True, exist_ok=True)
    DOCS.write_text("\n".join(lines) + ("\n" + kept if kept else ""))
