"""A real Spark standalone cluster on loopback, started from the pyspark install, and jobs
submitted to it the way YARN gets them.

The master and each worker are Spark's own daemons, one JVM each in a process group of its
own::

    $SPARK_HOME/bin/spark-class org.apache.spark.deploy.master.Master --host 127.0.0.1 --port P
    $SPARK_HOME/bin/spark-class org.apache.spark.deploy.worker.Worker spark://127.0.0.1:P \\
        --cores N --memory M --work-dir <root>/<name>

A daemon is up when its output shows Spark's own line (``Starting Spark master at``,
``Successfully registered with master``); its output is kept in ``<root>/<name>.log``. Jobs go
through ``deploy/yarn/submit.sh`` in client mode with every node on this checkout's
interpreter, so the cluster runs exactly the code of the checkout.

Used by ``tests/cluster`` (``make test-cluster``) and the scale-out benchmark; nothing in the
pipelines imports it.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

import pyspark

ROOT = Path(__file__).resolve().parents[4]
# The pip-installed pyspark is a Spark home (bin/spark-class, jars/) unless one is named.
SPARK_HOME = Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)
START_TIMEOUT_S = 120.0


class ClusterError(RuntimeError):
    """A daemon did not come up, or a submitted job failed."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Daemon:
    """A Spark daemon (``spark-class <main> ...``) in its own process group, its output kept
    in a log file by a reader thread that also reports when a line containing ``ready`` shows."""

    def __init__(self, args: list[str], log: Path, ready: str) -> None:
        env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1"}
        self.log = log
        self.proc = subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            start_new_session=True,  # one group: spark-class and the JVM it starts
        )
        self._ready: queue.Queue[bool] = queue.Queue()
        self._marker = ready
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        seen = False
        with self.log.open("w") as out:
            for line in self.proc.stdout:
                out.write(line)
                out.flush()
                if not seen and self._marker in line:
                    seen = True
                    self._ready.put(True)
        if not seen:
            self._ready.put(False)

    def wait_ready(self) -> None:
        """Block until the ready line shows.

        Raises:
            ClusterError: the daemon exited, or did not say it within ``START_TIMEOUT_S``.
        """
        try:
            ok = self._ready.get(timeout=START_TIMEOUT_S)
        except queue.Empty:
            ok = False
        if not ok:
            raise ClusterError(
                f"{self.log.name}: no '{self._marker}'\n{self.log.read_text()[-3000:]}"
            )

    def stop(self) -> int:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
        return self.proc.returncode


class Cluster:
    """A standalone master on loopback and workers added to it, each a :class:`Daemon` with a
    work folder of its own under ``root``; :meth:`stop` ends every process it started."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.daemons: list[Daemon] = []
        self.workers: dict[str, Daemon] = {}

    def start_master(self) -> None:
        master = Daemon(
            ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(self.port),
             "--webui-port", str(free_port())],
            self.root / "master.log",
            f"Starting Spark master at {self.url}",
        )  # fmt: skip
        self.daemons.append(master)
        master.wait_ready()

    def add_worker(self, name: str, cores: int, memory: str = "2g") -> Path:
        """Start a worker of ``cores`` cores and ``memory``; returns its work folder once it is
        registered."""
        work = self.root / name
        worker = Daemon(
            ["org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1",
             "--cores", str(cores), "--memory", memory, "--webui-port", str(free_port()),
             "--work-dir", str(work)],
            self.root / f"{name}.log",
            "Successfully registered with master",
        )  # fmt: skip
        self.daemons.append(worker)
        self.workers[name] = worker
        worker.wait_ready()
        return work

    def kill_worker(self, name: str) -> None:
        """SIGKILL a worker's process group: its JVM and the executor JVMs it launched, as when
        the machine under it is lost."""
        worker = self.workers[name]
        os.killpg(worker.proc.pid, signal.SIGKILL)
        worker.proc.wait(timeout=30)

    def stop(self) -> None:
        for daemon in reversed(self.daemons):
            daemon.stop()
        if any(d.proc.poll() is None for d in self.daemons):
            raise ClusterError("a Spark daemon outlived stop()")


def site_config(
    work: Path,
    url: str,
    log_dir: Path,
    *,
    schema: str,
    max_records: int,
    pipeline: Mapping[str, str | bool] | None = None,
) -> Path:
    """An ingest job's site configuration (``work/site.toml``, for :func:`submit`): the
    cluster at ``url``, its warehouse, checkpoints and metastore under ``work``, ``log_dir``
    read in micro-batches of ``max_records``, and ``pipeline``'s ``[pipeline]`` settings."""
    settings = "".join(f"{key} = {json.dumps(value)}\n" for key, value in (pipeline or {}).items())
    site = work / "site.toml"
    site.write_text(
        f"""
[spark]
master = "{url}"
jars_dir = ""                       # shipped by submit.sh with --jars

[storage]
schema = "{schema}"
warehouse_dir = "{work / "warehouse"}"
checkpoint_dir = "{work / "checkpoints"}"
metastore_dir = "{work / "metastore"}"

[sources]
kind = "segments"

[sources.segments]
log_dir = "{log_dir}"
max_records_per_trigger = {max_records}

[pipeline]
{settings}"""
    )
    return site


def submit(
    work: Path, url: str, site: Path, *spark_conf: str, python: str = sys.executable
) -> subprocess.Popen[str]:
    """``submit.sh ingest --env local --conf site`` to the cluster at ``url`` in client mode, the
    driver working in ``work`` and its output in ``work/submit.log``; ``spark_conf``: further
    ``key=value`` settings for spark-submit."""
    confs = [a for c in ("spark.executor.memory=1g", "spark.ui.enabled=false", *spark_conf)
             for a in ("--conf", c)]  # fmt: skip
    return subprocess.Popen(
        [
            "bash", str(ROOT / "deploy" / "yarn" / "submit.sh"), "ingest",
            "--env", "local", "--conf", str(site), "--master", url, "--deploy-mode", "client",
            "--python", python, "--", *confs,
        ],
        stdout=(work / "submit.log").open("w"),
        stderr=subprocess.STDOUT,
        text=True,
        cwd=work,
        start_new_session=True,
    )  # fmt: skip


def finish(job: subprocess.Popen[str], work: Path, timeout: float) -> str:
    """Wait for a :func:`submit` job (killing its process group if it overruns); its output.

    Raises:
        ClusterError: the job failed or overran (the end of its output in the message).
    """
    try:
        job.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
    output = (work / "submit.log").read_text()
    if job.returncode != 0:
        raise ClusterError(f"the job exited {job.returncode}:\n{output[-4000:]}")
    return output
