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
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.find_spark_home import _find_spark_home
from pyspark.sql import SparkSession

from offsetscope.protocol.log import read_partition_dir
from offsetscope.protocol.records import OFFSETS_TOPIC, TRANSACTION_TOPIC
from offsetscope.sim.scenarios.run import simulate_to

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


class Cluster:
    """A standalone master on loopback and workers added to it, each a :class:`Daemon` with a
    work folder of its own; :meth:`stop` ends every process it started."""

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

    def add_worker(self, name: str, cores: int) -> Path:
        """Start a worker of ``cores`` cores; returns its work folder once it is registered."""
        work = self.root / name
        worker = Daemon(
            ["org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1",
             "--cores", str(cores), "--memory", "2g", "--webui-port", str(free_port()),
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
        assert all(d.proc.poll() is not None for d in self.daemons)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A standalone master on loopback, stopped (with every worker added) however the test ends."""
    started = Cluster(tmp_path)
    try:
        started.start_master()
        yield started
    finally:
        started.stop()


def internal_records(log_dir: Path) -> int:
    count = 0
    for directory in log_dir.iterdir():
        topic, _, number = directory.name.rpartition("-")
        if topic in (OFFSETS_TOPIC, TRANSACTION_TOPIC) and number.isdigit():
            count += sum(b.records_count for b in read_partition_dir(directory, strict=True))
    return count


def site_config(tmp_path: Path, url: str, log_dir: Path, schema: str, max_records: int) -> Path:
    """The job's site configuration: the cluster, a warehouse under ``tmp_path``, ``log_dir``
    read in micro-batches of ``max_records``."""
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
max_records_per_trigger = {max_records}

[pipeline]
query_name = "cluster_ingest"
sample_end_offsets = false
"""
    )
    return site


def submit(tmp_path: Path, url: str, site: Path, *spark_conf: str) -> subprocess.Popen[str]:
    """``submit.sh ingest`` to the cluster in client mode, its output in ``tmp_path/submit.log``."""
    confs = [a for c in ("spark.executor.memory=1g", "spark.ui.enabled=false", *spark_conf)
             for a in ("--conf", c)]  # fmt: skip
    return subprocess.Popen(
        [
            "bash", str(ROOT / "deploy" / "yarn" / "submit.sh"), "ingest",
            "--env", "local", "--conf", str(site), "--master", url, "--deploy-mode", "client",
            "--python", sys.executable, "--", *confs,
        ],
        stdout=(tmp_path / "submit.log").open("w"),
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,
        start_new_session=True,
    )  # fmt: skip


def finish(job: subprocess.Popen[str], tmp_path: Path, timeout: float) -> str:
    """Wait for the submitted job (killing it if it overruns); its output, asserted successful."""
    try:
        job.wait(timeout=timeout)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
    output = (tmp_path / "submit.log").read_text()
    assert job.returncode == 0, output[-4000:]
    return output


def assert_tables_hold_the_log(
    spark: SparkSession, tmp_path: Path, schema: str, log_dir: Path
) -> int:
    """Every internal-topic record of ``log_dir`` is in ``raw_records`` once and audited once, and
    every stored assignment of the scenario's ground truth is a generation row. Returns the
    record count."""
    records = internal_records(log_dir)
    tables = tmp_path / "warehouse" / f"{schema}.db"
    raw = spark.read.format("delta").load(str(tables / "raw_records"))
    assert raw.count() == records
    assert raw.select("topic", "partition", "offset").distinct().count() == records
    truth = [json.loads(line) for line in (log_dir / "ground_truth.jsonl").open()]
    stored = {(t["group_id"], t["generation_id"]) for t in truth if t["type"] == "AssignmentStored"}
    rows = spark.read.format("delta").load(str(tables / "group_generations")).collect()
    written = {(r["group_id"], r["generation"]) for r in rows}
    assert stored
    assert stored <= written
    assert all((r["group_id"], r["generation"]) in stored or r["member_count"] == 0 for r in rows)
    audit = spark.read.format("delta").load(str(tables / "batch_audit")).collect()
    assert sum(a["rows_in"] for a in audit) == records
    assert len({a["batch_id"] for a in audit}) == len(audit)
    return records


@pytest.mark.timeout(900)
def test_ingest_job_runs_on_a_standalone_cluster_into_delta(
    cluster: Cluster, spark: SparkSession, tmp_path: Path
) -> None:
    work = cluster.add_worker("worker", cores=2)
    log_dir = tmp_path / "log"
    simulate_to("steady", out=log_dir)
    schema = f"cluster_{uuid.uuid4().hex[:8]}"
    site = site_config(tmp_path, cluster.url, log_dir, schema, max_records=1_000_000)
    output = finish(submit(tmp_path, cluster.url, site), tmp_path, timeout=840)

    records = assert_tables_hold_the_log(spark, tmp_path, schema, log_dir)
    assert f"micro-batches, {records} records" in output
    # The work ran in the worker's executor, not in the driver.
    (app,) = work.iterdir()
    assert app.name.startswith("app-")
    assert any((executor / "stderr").is_file() for executor in app.iterdir())


def running_tasks(work: Path) -> bool:
    """Whether an executor under the worker folder ``work`` has started a task."""
    for stderr in work.glob("app-*/*/stderr"):
        with stderr.open(errors="replace") as f:
            if any("Running task" in line for line in f):
                return True
    return False


@pytest.mark.timeout(1200)
def test_a_worker_killed_mid_job_leaves_the_tables_complete(
    cluster: Cluster, spark: SparkSession, tmp_path: Path
) -> None:
    """The worker running the job's only executor is SIGKILLed (worker and executor JVMs) while a
    micro-batch's tasks run: the master gives the application an executor on the other worker,
    the lost tasks run again there, and the job ends with every record once in the tables."""
    works = {name: cluster.add_worker(name, cores=1) for name in ("worker-a", "worker-b")}
    log_dir = tmp_path / "log"
    simulate_to("steady", out=log_dir)
    schema = f"cluster_kill_{uuid.uuid4().hex[:8]}"
    # Several micro-batches, so the kill lands with work still to do.
    records = internal_records(log_dir)
    site = site_config(tmp_path, cluster.url, log_dir, schema, max_records=max(1, records // 4))
    # One executor of one core: the application holds exactly one worker.
    job = submit(tmp_path, cluster.url, site, "spark.cores.max=1", "spark.executor.cores=1")
    try:
        victim = None
        while victim is None and job.poll() is None:
            victim = next((n for n, w in works.items() if running_tasks(w)), None)
            time.sleep(0.1)  # polling the executor's log for its first task, not timing a result
        assert victim is not None, "the job ended before any executor ran a task"
        cluster.kill_worker(victim)
        survivor = next(n for n in works if n != victim)
        output = finish(job, tmp_path, timeout=1000)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()

    assert_tables_hold_the_log(spark, tmp_path, schema, log_dir)
    assert f"micro-batches, {records} records" in output
    # The kill landed inside a task, which the driver ran again without counting it as a failure.
    assert "its executor exited for a reason unrelated to the task" in output
    # The work went on in an executor on the other worker.
    assert running_tasks(works[survivor])
