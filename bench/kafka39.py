"""A Kafka 3.9 broker and a ZooKeeper server for the Burrow benchmark only.

Both run from ``.work/bench/jars`` (``bench/jvm/pom.xml``, resolved by ``make bench-jars``):

* ZooKeeper 3.8 (``ZooKeeperServerMain <port> <dir>``): Debian's Burrow 1.2.1 panics at start
  without a ZooKeeper ensemble, even with no notifier configured.
* Kafka 3.9.1, KRaft single node (broker and controller in one JVM, a static voter list,
  ``kafka.tools.StorageTool format`` then ``kafka.Kafka``), as the harness starts 4.4: its group
  coordinator writes OffsetCommitValue v3 (v4, with the topic id, starts with 4.1), which Burrow
  1.2.1 can read.

Every process is started in a session of its own and stopped (SIGTERM, then SIGKILL) by
:meth:`Jvm.stop`.
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from bench.common import WORK

JARS = WORK / "jars"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _cluster_id() -> str:
    # Kafka's cluster id: a random UUID in URL-safe base64 without padding (22 characters)
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def jars_ready() -> bool:
    return any(JARS.glob("kafka_2.13-3.9*.jar")) and any(JARS.glob("zookeeper-3*.jar"))


@dataclass
class Jvm:
    """A started JVM: its process, its log, and the port clients use."""

    proc: subprocess.Popen[bytes]
    log: Path
    port: int

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def _java(main: str, args: list[str], log: Path, heap: str = "512m") -> subprocess.Popen[bytes]:
    log4j = log.parent / "log4j.properties"
    log4j.write_text(
        "log4j.rootLogger=INFO, file\n"
        "log4j.appender.file=org.apache.log4j.FileAppender\n"
        f"log4j.appender.file.File={log}\n"
        "log4j.appender.file.layout=org.apache.log4j.PatternLayout\n"
        "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
    )
    return subprocess.Popen(
        [
            "java",
            f"-Xmx{heap}",
            f"-Dlog4j.configuration=file:{log4j}",
            "-cp",
            f"{JARS}/*",
            main,
            *args,
        ],
        stdout=log.with_suffix(".out").open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{log.stem} exited {proc.returncode}: {_tail(log)}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise RuntimeError(f"{log.stem} did not listen on {port} in {timeout_s:.0f} s: {_tail(log)}")


def _tail(log: Path) -> str:
    text = ""
    for p in (log, log.with_suffix(".out")):
        if p.exists():
            text += p.read_text(errors="replace")[-1500:]
    return text


def start_zookeeper(root: Path) -> Jvm:
    """ZooKeeper standalone on a free loopback port, data in ``root``."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    port = free_port()
    log = root / "zookeeper.log"
    proc = _java(
        "org.apache.zookeeper.server.ZooKeeperServerMain", [str(port), str(root / "data")], log
    )
    jvm = Jvm(proc, log, port)
    try:
        _wait_port(port, proc, log, 60)
    except BaseException:
        jvm.stop()
        raise
    return jvm


def start_broker(root: Path, offsets_partitions: int = 3) -> Jvm:
    """Kafka 3.9 KRaft broker+controller on free loopback ports, logs in ``root / "data"``."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    port, controller = free_port(), free_port()
    data = root / "data"
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(data),
        "num.network.threads": "2",
        "num.io.threads": "2",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": str(offsets_partitions),
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "log.cleaner.dedupe.buffer.size": str(16 * 2**20),
        "auto.create.topics.enable": "false",
    }
    server = root / "server.properties"
    server.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    fmt_log = root / "format.log"
    fmt = _java(
        "kafka.tools.StorageTool",
        ["format", "-t", _cluster_id(), "-c", str(server)],
        fmt_log,
    )
    if fmt.wait(120) != 0:
        raise RuntimeError(f"formatting the Kafka 3.9 log dir failed: {_tail(fmt_log)}")
    log = root / "server.log"
    proc = _java("kafka.Kafka", [str(server)], log, heap="768m")
    jvm = Jvm(proc, log, port)
    try:
        _wait_port(port, proc, log, 120)
    except BaseException:
        jvm.stop()
        raise
    return jvm
