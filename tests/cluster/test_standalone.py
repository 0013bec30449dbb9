"""The ingest job on a real multi-process Spark cluster, submitted the way YARN gets it.

A Spark standalone master and one worker are started from the pyspark install
(``bin/spark-class ...deploy.master.Master`` / ``...deploy.worker.Worker``) on loopback ports;
``deploy/yarn/submit.sh`` submits ``jobs/ingest.py`` to it with ``spark-submit`` (client mode,
the jars from ``build/jvm/spark`` shipped with ``--jars``, the configuration with ``--files``
and ``--conf``, every node on this checkout's interpreter instead of a packed archive). The job
reads a log directory the bundled coordinator wrote, in an executor process of the worker, into
Delta tables; the test reads them back and stops the cluster however it ends.
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
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.find_spark_home import _find_spark_home
from pyspark.sql import SparkSession

from offsetscope.protocol.log import read_partition_dir
from offsetscope.protocol.records import OFFSETS_TOPIC, TRANSACTION_TOPIC
from offsetscope.scenarios.cli import simulate_to

# Several minutes on the project's 2-core machine (the ingest job's micro-batch in an executor,
# plus the cluster and the submitted driver's JVM): `make test-cluster` runs it.
pytestmark = [pytest.mark.spark, pytest.mark.streaming, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SPARK_HOME = Path(_find_spark_home())
START_TIMEOUT_S = 120.0


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
        try:
            ok = self._ready.get(timeout=START_TIMEOUT_S)
        except queue.Empty:
            ok = False
        if not ok:
            pytest.fail(f"{self.log.name}: no '{self._marker}'\n{self.log.read_text()[-3000:]}")

    def stop(self) -> int:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
        return self.proc.returncode


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A standalone master and worker on loopback: (master URL, the worker's work folder)."""
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    work = tmp_path / "worker"
    daemons = []
    try:
        master = Daemon(
            ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
             "--webui-port", str(free_port())],
            tmp_path / "master.log",
            f"Starting Spark master at {url}",
        )  # fmt: skip
        daemons.append(master)
        master.wait_ready()
        worker = Daemon(
            ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "2",
             "--memory", "2g", "--webui-port", str(free_port()), "--work-dir", str(work)],
            tmp_path / "worker.log",
            "Successfully registered with master",
        )  # fmt: skip
        daemons.append(worker)
        worker.wait_ready()
        yield url, work
    finally:
        for daemon in reversed(daemons):
            daemon.stop()
        assert all(d.proc.poll() is not None for d in daemons)


def internal_records(log_dir: Path) -> int:
    count = 0
    for directory in log_dir.iterdir():
        topic, _, number = directory.name.rpartition("-")
        if topic in (OFFSETS_TOPIC, TRANSACTION_TOPIC) and number.isdigit():
            count += sum(b.records_count for b in read_partition_dir(directory, strict=True))
    return count


@pytest.mark.timeout(900)
def test_ingest_job_runs_on_a_standalone_cluster_into_delta(
    cluster: tuple[str, Path], spark: SparkSession, tmp_path: Path
) -> None:
    url, work = cluster
    log_dir = tmp_path / "log"
    simulate_to("steady", out=log_dir)
    schema = f"cluster_{uuid.uuid4().hex[:8]}"
    site = tmp_path / "site.toml"
    site.write_text(
        f"""
[spark]
master = "{url}"
jars_dir = ""                       # shipped by submit.sh with --jars

[storage]
schema = "{schema}"
warehouse_dir = "{tmp_path / "warehouse"}"
checkpoint_dir = "{tmp_path / "checkpoints"}"
metastore_dir = "{tmp_path / "metastore"}"

[sources]
kind = "segments"

[sources.segments]
log_dir = "{log_dir}"

[pipeline]
query_name = "cluster_ingest"
sample_end_offsets = false
"""
    )
    done = subprocess.run(
        [
            "bash", str(ROOT / "deploy" / "yarn" / "submit.sh"), "ingest",
            "--env", "local", "--conf", str(site), "--master", url, "--deploy-mode", "client",
            "--python", sys.executable,
            "--", "--conf", "spark.executor.memory=1g", "--conf", "spark.ui.enabled=false",
        ],
        capture_output=True,
        text=True,
        timeout=840,
        cwd=tmp_path,
        check=False,
    )  # fmt: skip
    (tmp_path / "submit.log").write_text(done.stdout + done.stderr)
    assert done.returncode == 0, done.stderr[-4000:]

    records = internal_records(log_dir)
    assert f"micro-batches, {records} records" in done.stdout
    # The work ran in the worker's executor, not in the driver.
    (app,) = work.iterdir()
    assert app.name.startswith("app-")
    assert any((executor / "stderr").is_file() for executor in app.iterdir())

    tables = tmp_path / "warehouse" / f"{schema}.db"
    raw = spark.read.format("delta").load(str(tables / "raw_records"))
    assert raw.count() == records
    truth = [json.loads(line) for line in (log_dir / "ground_truth.jsonl").open()]
    stored = {(t["group_id"], t["generation_id"]) for t in truth if t["type"] == "AssignmentStored"}
    rows = spark.read.format("delta").load(str(tables / "group_generations")).collect()
    written = {(r["group_id"], r["generation"]) for r in rows}
    assert stored
    assert stored <= written
    assert all((r["group_id"], r["generation"]) in stored or r["member_count"] == 0 for r in rows)
    audit = spark.read.format("delta").load(str(tables / "batch_audit")).collect()
    assert sum(a["rows_in"] for a in audit) == records
