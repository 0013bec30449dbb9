"""A JVM launcher process that reports on stdout in JSON lines, started and stopped by a test.

The project's launchers (``deploy/infra/*``: ``MiniHadoop``, ``MiniKdcServer``) print only JSON
lines on stdout: ``{"event":"ready",...}`` once serving (with addresses, files and folders),
``{"event":"failed","error":...}`` before exiting 1, ``{"event":"stopped"}`` on the way out.
Started with ``-exit-on-stdin-close`` they stop when their stdin reaches end of file, which
happens when :meth:`Launcher.stop` closes it -- or when this process dies, however it dies, so
a crashed test leaves no JVM behind. Linux's parent-death signal backs that up.

:class:`Launcher` reads stdout until the ready line (or a failure, or the process's end, which
then raises with the tail of its stderr file), keeps stdin open for the process's lifetime, and
stops it: stdin closed, then SIGTERM, then SIGKILL, each after a timeout.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

_PR_SET_PDEATHSIG = 1


class LauncherError(RuntimeError):
    """A launcher failed to start; the message holds its own error or its stderr tail."""


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on ``host`` now (the caller binds it soon after)."""
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def _tie_to_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def tail(path: Path, limit: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-limit:]
    except FileNotFoundError:
        return ""


class Launcher:
    """One launcher process (see the module docstring).

    Args:
        name: for messages and the stderr file (``<work>/<name>.stderr.log``).
        command: the command line (``-exit-on-stdin-close`` included by the caller).
        work: the launcher's work folder.
        env: the process environment (default: this process's).
        timeout_s: how long to wait for the ready line.
    """

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        work: Path,
        *,
        env: Mapping[str, str] | None = None,
        timeout_s: float = 180.0,
    ) -> None:
        self.name = name
        self.work = work
        self.command = list(command)
        self.env = dict(env) if env is not None else None
        self.timeout_s = timeout_s
        self.stderr_path = work / f"{name}.stderr.log"
        self.ready: dict[str, Any] = {}
        self.events: list[dict[str, Any]] = []
        self.process: subprocess.Popen[str] | None = None
        self.started_s = 0.0

    def start(self) -> Self:
        """Start the process and wait for its ready line.

        Raises:
            LauncherError: it reported a failure, exited, or was not ready in time (then it is
                stopped first).
        """
        self.work.mkdir(parents=True, exist_ok=True)
        began = time.monotonic()
        with self.stderr_path.open("wb") as err:
            self.process = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                cwd=self.work,
                env=self.env,
                text=True,
                preexec_fn=_tie_to_parent if sys.platform.startswith("linux") else None,  # noqa: PLW1509
            )
        lines: list[str] = []
        done = threading.Event()

        def read() -> None:
            assert self.process is not None
            assert self.process.stdout is not None
            for line in self.process.stdout:
                lines.append(line)
                if '"event":"ready"' in line or '"event":"failed"' in line:
                    break
            done.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        if not done.wait(self.timeout_s):
            self.stop()
            raise LauncherError(
                f"{self.name}: not ready after {self.timeout_s:.0f} s\n{tail(self.stderr_path)}"
            )
        for line in lines:
            line = line.strip()
            if line.startswith("{"):
                self.events.append(json.loads(line))
        last = self.events[-1] if self.events else {}
        if last.get("event") == "ready":
            self.ready = last
            self.started_s = time.monotonic() - began
            return self
        code = self.process.wait(timeout=30)
        error = last.get("error") if last.get("event") == "failed" else f"exited with code {code}"
        raise LauncherError(f"{self.name}: {error}\n{tail(self.stderr_path)}")

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout_s: float = 60.0) -> int | None:
        """Close stdin (the launcher stops), then SIGTERM, then SIGKILL; the exit code."""
        process = self.process
        if process is None:
            return None
        if process.poll() is None and process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None and process.poll() is None:
                process.send_signal(sig)
            try:
                process.wait(timeout=timeout_s if sig is None else 30)
                break
            except subprocess.TimeoutExpired:
                continue
        if process.stdout is not None:
            with contextlib.suppress(OSError, ValueError):
                process.stdout.close()
        return process.returncode

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def java_home(java: str) -> str:
    """The JDK folder of a ``java`` executable (``.../bin/java`` -> ``...``)."""
    return str(Path(os.path.realpath(java)).parent.parent)
