"""Burrow side by side: the distribution's ``burrow`` package against the harness broker.

``make bench`` first runs ``bench-burrow`` (``mk/bench.mk``), which installs Debian's ``burrow``
package (1.2.1 in bookworm; binary ``/usr/bin/Burrow``) when absent and keeps the installer's
output in ``.work/bench/burrow/install.log``.

This benchmark then starts a harness broker of its own (``offsetscope.verify.harness.broker``, the
Kafka release in ``build/jvm/kafka``, work folder ``.work/bench/kafka/burrow``), commits offsets
for ``GROUPS`` groups on a ``PARTITIONS``-partition topic with a real client, and starts Burrow
configured to consume that broker's ``__consumer_offsets`` (config in
``.work/bench/burrow/burrow.toml``, HTTP on a free loopback port, logs in
``.work/bench/burrow/burrow.log``). It polls ``/v3/kafka/bench/consumer`` and
``/v3/kafka/bench/consumer/<group>`` until every group reports its last committed offsets, or
``DEADLINE_S`` passes. Either way the result is recorded as a finding: how long Burrow took, or
what it logged instead (the error lines, verbatim). ``burrow_records_per_s`` is only reported
when Burrow reads every committed offset.

Which OffsetCommitValue versions the broker wrote is read back from its segment files with
offsetscope's own decoder (Kafka 4.1+ writes v4 with a tagged topic id, which Burrow releases
before PR #851 cannot decode).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import kafka39
from bench.common import ROOT, WORK, Finding, Metric
from bench.kafka39 import free_port

BURROW_DIR = WORK / "burrow"
BURROW = "Burrow"
GROUPS = 20
PARTITIONS = 4
# the Kafka 3.9 side-by-side input at scale 1: 500 groups x 20 partitions x 10 commits
K39_GROUPS = 500
K39_PARTITIONS = 20
K39_ROUNDS = 10
TOPIC = "bench-events"
DEADLINE_S = 60.0
CLUSTER = "bench"


def config_text(
    bootstrap: str, http_port: int, kafka_version: str, zookeeper: str | None = None
) -> str:
    """Burrow 1.2's TOML: one cluster, one ``kafka`` consumer module, in-memory storage."""
    zk_section = (
        f'\n[zookeeper]\nservers=["{zookeeper}"]\ntimeout=6\nroot-path="/burrow-bench"\n'
        if zookeeper
        else ""
    )
    return f"""[general]
pidfile="{BURROW_DIR / "burrow.pid"}"

[logging]
filename="{BURROW_DIR / "burrow.log"}"
level="info"
{zk_section}
[client-profile.bench]
client-id="burrow-bench"
kafka-version="{kafka_version}"

[cluster.{CLUSTER}]
class-name="kafka"
servers=["{bootstrap}"]
client-profile="bench"
topic-refresh=10
offset-refresh=2

[consumer.{CLUSTER}]
class-name="kafka"
cluster="{CLUSTER}"
servers=["{bootstrap}"]
client-profile="bench"
offsets-topic="__consumer_offsets"
start-latest=false

[httpserver.default]
address="127.0.0.1:{http_port}"

[storage.default]
class-name="inmemory"
workers=20
intervals=10
expire-group=604800
min-distance=1
"""


def _get(url: str) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            data: dict[str, Any] = json.loads(resp.read())
            return data
    except (urllib.error.URLError, OSError, ValueError):
        return None


def committed_versions(segment_files: list[Path]) -> Counter[str]:
    """(record type, value version) counts of ``__consumer_offsets`` segments, by our decoder."""
    from offsetscope.protocol.log import read_segment

    versions: Counter[str] = Counter()
    for path in segment_files:
        for batch in read_segment(path):
            for record in batch.records:
                if record.key is None or len(record.key) < 2:
                    continue
                key_version = int.from_bytes(record.key[:2], "big")
                value_version = (
                    "tombstone"
                    if record.value is None
                    else str(int.from_bytes(record.value[:2], "big"))
                )
                versions[f"key {key_version} value v{value_version}"] += 1
    return versions


def _error_lines(log: Path, limit: int = 8) -> list[str]:
    """Burrow's distinct warnings and errors (JSON log lines; plain lines such as a panic's)."""
    if not log.exists():
        return []
    seen: dict[str, str] = {}
    counts: Counter[str] = Counter()
    for line in log.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            if "panic" in line.lower() or "error" in line.lower():
                seen.setdefault(line.strip(), line.strip())
                counts[line.strip()] += 1
            continue
        if not isinstance(entry, dict) or entry.get("level") not in ("warn", "error", "panic"):
            continue
        detail = {k: v for k, v in entry.items() if k not in ("ts", "group", "offset_offset")}
        detail = {
            k: v for k, v in detail.items() if k not in ("partition", "offset_partition", "topic")
        }
        key = json.dumps(detail, sort_keys=True)
        seen.setdefault(key, json.dumps({k: v for k, v in entry.items() if k != "ts"}))
        counts[key] += 1
    return [f"{seen[k]} (x{counts[k]})" for k in list(seen)[:limit]]


def _commit_rounds(bootstrap: str, groups: int, partitions: int, rounds: int) -> dict[str, int]:
    """``groups`` groups commit all ``partitions`` ``rounds`` times (one OffsetCommit each).

    Returns each group's final offset per partition as ``{"<group>/<partition>": offset}``.
    """
    from confluent_kafka import Consumer, TopicPartition

    final: dict[str, int] = {}
    for g in range(groups):
        group = f"bench-{g:05d}"
        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
        )
        try:
            for r in range(rounds):
                offsets = [TopicPartition(TOPIC, p, 1000 * (r + 1) + p) for p in range(partitions)]
                done = consumer.commit(offsets=offsets, asynchronous=False) or []
                failed = [t for t in done if t.error is not None]
                if failed:
                    raise RuntimeError(f"commit failed for {group}: {failed}")
            for p in range(partitions):
                final[f"{group}/{p}"] = 1000 * rounds + p
        finally:
            consumer.close()
    return final


@dataclass
class BurrowRun:
    """What one Burrow run saw: seconds until complete (None: never), offsets seen, errors."""

    seconds: float | None
    seen: int
    groups_listed: int
    exit_code: int | None
    errors: list[str]


def run_burrow(bootstrap: str, zookeeper: str | None, final: dict[str, int]) -> BurrowRun:
    """Start Burrow on ``bootstrap`` and time it until its HTTP API shows every final offset."""
    port = free_port()
    log = BURROW_DIR / "burrow.log"
    log.unlink(missing_ok=True)
    # sarama in Burrow 1.2 knows protocol versions up to Kafka 2.x; 4.x brokers dropped the
    # oldest request versions (KIP-896), so the newest version it knows is its best chance.
    (BURROW_DIR / "burrow.toml").write_text(config_text(bootstrap, port, "2.0.0", zookeeper))
    out = BURROW_DIR / "stdout.log"
    with out.open("wb") as stdout:
        started = time.perf_counter()
        proc = subprocess.Popen(
            [BURROW, "-config-dir", str(BURROW_DIR)],
            stdout=stdout,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            start_new_session=True,
        )
        try:
            base_url = f"http://127.0.0.1:{port}/v3/kafka/{CLUSTER}"
            want: dict[str, dict[int, int]] = {}
            for key, offset in final.items():
                group, partition = key.rsplit("/", 1)
                want.setdefault(group, {})[int(partition)] = offset
            complete: set[str] = set()
            seen: dict[str, int] = {}
            listed: set[str] = set()
            done_at: float | None = None
            while time.perf_counter() - started < DEADLINE_S and proc.poll() is None:
                found = _get(f"{base_url}/consumer") or {}
                groups: list[str] = found.get("consumers") or []
                listed.update(g for g in groups if g in want)
                for group in sorted(listed - complete):
                    answer = _get(f"{base_url}/consumer/{group}") or {}
                    topics: dict[str, list[dict[str, Any]]] = answer.get("topics") or {}
                    got = 0
                    for p, part in enumerate(topics.get(TOPIC, [])):
                        offsets = [o["offset"] for o in part.get("offsets") or [] if o]
                        if offsets and max(offsets) >= want[group].get(p, 1 << 62):
                            got += 1
                    seen[group] = got
                    if got == len(want[group]):
                        complete.add(group)
                if len(complete) == len(want):
                    done_at = time.perf_counter()
                    break
                time.sleep(0.2)
            code = proc.poll()
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
    return BurrowRun(
        None if done_at is None else done_at - started,
        sum(seen.values()),
        len(listed),
        code,
        _error_lines(log) + _error_lines(out),
    )


def _describe(label: str, result: BurrowRun, commits: int) -> str:
    if result.seconds is not None:
        return f"{label}: Burrow read all {commits:,} commits in {result.seconds:.1f} s."
    status = (
        f"exited with {result.exit_code}"
        if result.exit_code is not None
        else f"was still running after {DEADLINE_S:.0f} s"
    )
    return (
        f"{label}: Burrow {status}; its HTTP API showed the last offset of "
        f"{result.seen} of the committed partitions ({result.groups_listed} groups listed). "
        "Log lines: " + " | ".join(result.errors or ["(none)"])
    )


def run(runs: int = 1, scale: float = 1.0) -> list[Metric | Finding]:
    install_log = BURROW_DIR / "install.log"
    if shutil.which(BURROW) is None:
        detail = install_log.read_text()[-1500:] if install_log.exists() else "no install log"
        return [Finding("burrow", f"Burrow is not installed (`make bench-burrow`): {detail}")]
    BURROW_DIR.mkdir(parents=True, exist_ok=True)
    findings: list[str] = []
    out: list[Metric | Finding] = []
    zk: kafka39.Jvm | None = None
    try:
        if kafka39.jars_ready():
            zk = kafka39.start_zookeeper(WORK / "zookeeper")
        else:
            findings.append("ZooKeeper jars missing (`make bench-jars`): Burrow started without")
        findings.append(_on_harness_broker(zk))
        if zk is not None:
            text, metrics = _on_kafka39(zk, scale, runs)
            findings.append(text)
            out.extend(metrics)
    finally:
        if zk is not None:
            zk.stop()
    out.append(Finding("burrow", " ".join(findings)))
    return out


def _on_harness_broker(zk: kafka39.Jvm | None) -> str:
    """Burrow against the harness broker (Kafka 4.4): what it logs."""
    import dataclasses

    from offsetscope import config
    from offsetscope.verify.harness.broker import Broker, broker_version

    base = config.load("local")
    broker_cfg = dataclasses.replace(
        base.broker, work_dir=str(WORK / "kafka"), name="burrow", offsets_partitions=3
    )
    version = broker_version(broker_cfg)
    broker = Broker(broker_cfg)
    existing = broker.attach()
    if existing is not None:
        existing.stop()
    handle = broker.start(fresh=True, tie_to_parent=True)
    try:
        from offsetscope.verify.harness.clients import create_topic

        create_topic(handle.bootstrap, TOPIC, PARTITIONS)
        final = _commit_rounds(handle.bootstrap, GROUPS, PARTITIONS, 1)
        versions = committed_versions(handle.segment_files("__consumer_offsets"))
        result = run_burrow(handle.bootstrap, zk.address if zk else None, final)
    finally:
        handle.stop()
    on_disk = ", ".join(f"{k}: {n}" for k, n in sorted(versions.items()))
    return _describe(
        f"Kafka {version} harness broker, {len(final)} commits ({on_disk})", result, len(final)
    )


def _on_kafka39(zk: kafka39.Jvm, scale: float, runs: int) -> tuple[str, list[Metric]]:
    """Burrow and offsetscope's pipeline on the same Kafka 3.9 ``__consumer_offsets``."""
    from offsetscope.verify.harness.clients import create_topic

    groups = max(2, int(K39_GROUPS * scale))
    broker = kafka39.start_broker(WORK / "kafka39")
    try:
        create_topic(broker.address, TOPIC, K39_PARTITIONS)
        final = _commit_rounds(broker.address, groups, K39_PARTITIONS, K39_ROUNDS)
        commits = len(final) * K39_ROUNDS
        results = [run_burrow(broker.address, zk.address, final) for _ in range(runs)]
        data = WORK / "kafka39" / "data"
        versions = committed_versions(sorted(data.glob("__consumer_offsets-*/*.log")))
    finally:
        broker.stop()
    on_disk = ", ".join(f"{k}: {n}" for k, n in sorted(versions.items()))
    label = (
        f"Kafka 3.9.1 broker, {groups:,} groups x {K39_PARTITIONS} partitions x {K39_ROUNDS} "
        f"commits = {commits:,} commits ({on_disk})"
    )
    text = " ".join(_describe(f"{label}, run {i}", r, commits) for i, r in enumerate(results))
    times = [r.seconds for r in results if r.seconds is not None]
    if not times:
        return text, []
    # offsetscope on the same records: the broker's partition directories as a log directory
    logs = WORK / "kafka39-logs"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    for d in data.iterdir():
        if d.name.startswith(("__consumer_offsets-", f"{TOPIC}-")):
            shutil.copytree(d, logs / d.name)
    from bench.pipeline import floor_metric, ingest_once

    ours = ingest_once(logs, 1_000_000, "kafka39")
    pipeline_rate = ours["records"] / ours["seconds"]
    burrow_rates = [commits / s for s in times]
    input_text = f"{label}; Burrow from process start to its HTTP API showing every last offset"
    same_records = f"the same broker's __consumer_offsets segments ({ours['records']:,} records)"
    floor = floor_metric(logs, 1_000_000, 1, same_records, "floor-kafka39", "burrow_input")
    return text, [
        floor,
        Metric(
            "floor_vs_burrow_ratio",
            "x",
            [floor.median / r for r in burrow_rates],
            input_text,
            "burrow_input_floor_records_per_s / Burrow records/s: the most any Spark + Delta "
            "ingest reaches against Burrow here",
        ),
        Metric(
            "burrow_records_per_s", "records/s", burrow_rates, input_text, "Debian burrow 1.2.1"
        ),
        Metric(
            "pipeline_on_burrow_input_records_per_s",
            "records/s",
            [pipeline_rate],
            same_records,
            "offsetscope ingest, log directory -> Delta, local[2], tables created beforehand",
            extra={"phase_seconds_total": ours["batches"][0]["phases"] if ours["batches"] else {}},
        ),
        Metric(
            "pipeline_vs_burrow_ratio",
            "x",
            [pipeline_rate / r for r in burrow_rates],
            input_text,
            "offsetscope pipeline records/s / Burrow records/s on the same records",
        ),
    ]
