"""A real Kafka Streams application on the streams rebalance protocol (KIP-1071), for the checks.

``java/OffsetscopeStreamsApp.java`` (a word count, ``group.protocol = streams``; its group's
standby replicas set with :func:`set_standby_replicas`) is compiled with ``javac`` against the Kafka Streams jars of the broker's version
that ``make streams-jars`` resolves into ``build/jvm/kafka-streams/``
(``deploy/jvm/kafka-streams/pom.xml``), and each :class:`StreamsInstance` runs it as a JVM
process against the harness broker. The app prints JSON lines (its state, the tasks its threads
own); the instance keeps them, and reads the Streams process id from the state directory
(``<state.dir>/<application.id>/kafka-streams-process-metadata``), so a check can match what the
app observed with the members the group coordinator recorded.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from offsetscope.verify.harness.clients import wait_until
from offsetscope.verify.harness.jvm import java_executable, project_root

SOURCE = Path(__file__).with_name("java") / "OffsetscopeStreamsApp.java"
MAIN_CLASS = "OffsetscopeStreamsApp"
JARS_DIR = "build/jvm/kafka-streams"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def jars_dir() -> Path:
    """``build/jvm/kafka-streams``, which ``make streams-jars`` fills."""
    return project_root() / JARS_DIR


def classpath() -> str:
    folder = jars_dir()
    if not any(folder.glob("kafka-streams-*.jar")):
        raise FileNotFoundError(f"{folder} has no kafka-streams jar: run `make streams-jars`")
    return f"{folder}/*"


def set_standby_replicas(bootstrap: str, application_id: str, replicas: int) -> None:
    """The group's ``streams.num.standby.replicas`` (KIP-1071 moves the assignment settings to
    the group, where the broker's assignor reads them), through the Admin API."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    entry = ConfigEntry(
        "streams.num.standby.replicas",
        str(replicas),
        incremental_operation=AlterConfigOpType.SET,
    )
    resource = ConfigResource(ResourceType.GROUP, application_id, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)


def compile_app(out_dir: Path) -> Path:
    """Compile the app into ``out_dir`` (javac next to the java of the JDK in use)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    javac = str(Path(java_executable()).with_name("javac"))
    subprocess.run(
        [javac, "-d", str(out_dir), "-cp", classpath(), str(SOURCE)],
        check=True,
        capture_output=True,
        text=True,
    )
    return out_dir


@dataclass
class StreamsView:
    """What one instance reported last."""

    state: str | None = None
    active: frozenset[str] = frozenset()
    standby: frozenset[str] = frozenset()
    errors: list[str] = field(default_factory=list)
    closed: bool = False


class StreamsInstance:
    """One running instance of the app (see the module docstring)."""

    def __init__(
        self,
        classes: Path,
        bootstrap: str,
        application_id: str,
        input_topic: str,
        output_topic: str,
        state_dir: Path,
        endpoint: str,
    ) -> None:
        self.application_id = application_id
        self.state_dir = state_dir
        self.endpoint = endpoint
        self._view = StreamsView()
        self._lock = threading.Lock()
        self._stderr: list[str] = []
        state_dir.mkdir(parents=True, exist_ok=True)
        self._proc = subprocess.Popen(
            [
                java_executable(),
                "-Xmx256m",
                "-cp",
                f"{classes}:{classpath()}",
                MAIN_CLASS,
                bootstrap,
                application_id,
                input_topic,
                output_topic,
                str(state_dir),
                endpoint,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._threads = [
            threading.Thread(target=self._read, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            if not line.startswith("{"):
                continue
            event: dict[str, Any] = json.loads(line)
            with self._lock:
                v = self._view
                kind = event["event"]
                if kind == "tasks":
                    v.state = event["state"]
                    v.active = frozenset(event["active"])
                    v.standby = frozenset(event["standby"])
                elif kind == "state":
                    v.state = event["state"]
                elif kind == "error":
                    v.errors.append(event["message"])
                elif kind == "closed":
                    v.closed = True

    def _read_stderr(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            self._stderr = [*self._stderr[-200:], line.rstrip()]

    def view(self) -> StreamsView:
        with self._lock:
            v = self._view
            return StreamsView(v.state, v.active, v.standby, list(v.errors), v.closed)

    def wait_for(
        self, predicate: Callable[[StreamsView], bool], timeout_s: float, what: str
    ) -> None:
        def check() -> bool:
            v = self.view()
            if v.errors or (self._proc.poll() is not None and not v.closed):
                raise RuntimeError(
                    f"streams app {self.endpoint} failed: {v.errors} "
                    f"(exit {self._proc.poll()}; stderr: {self._stderr[-20:]})"
                )
            return predicate(v)

        wait_until(check, timeout_s, f"streams app {self.endpoint}: {what}")

    def process_id(self) -> str:
        """The Streams process id, as the app persisted it in its state directory."""
        path = self.state_dir / self.application_id / "kafka-streams-process-metadata"
        text = path.read_text(encoding="utf-8")
        match = _UUID.search(text)
        if match is None:
            raise ValueError(f"{path} holds no process id: {text[:200]!r}")
        return match.group(0)

    def stop(self, timeout_s: float = 60.0) -> None:
        """Close the app (it leaves the group) and wait for the JVM to end."""
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            try:
                self._proc.stdin.write("stop\n")
                self._proc.stdin.flush()
                self._proc.stdin.close()
            except BrokenPipeError:
                pass
            try:
                self._proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(10)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
