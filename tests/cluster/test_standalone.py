"""The ingest job on a real multi-process Spark cluster, submitted the way YARN gets it.

A Spark standalone master and one worker are started from the pyspark install
(:mod:`offsetscope.verify.harness.standalone`: ``bin/spark-class ...deploy.master.Master`` /
``...deploy.worker.Worker``) on loopback ports; ``deploy/yarn/submit.sh`` submits ``jobs/ingest.py`` to it with ``spark-submit`` (client mode,
the jars from ``build/jvm/spark`` shipped with ``--jars``, the configuration with ``--files``
and ``--conf``, every node on this checkout's interpreter instead of a packed archive). The job
reads a log directory the bundled coordinator wrote, in an executor process of the worker, into
Delta tables; the test reads them back and stops the cluster however it ends.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from offsetscope.protocol.log import read_partition_dir
from offsetscope.protocol.records import OFFSETS_TOPIC, TRANSACTION_TOPIC
from offsetscope.sim.scenarios.run import simulate_to
from offsetscope.verify.harness import standalone
from offsetscope.verify.harness.standalone import Cluster, finish, submit

# Several minutes on the project's 2-core machine (the ingest job's micro-batch in an executor,
# plus the cluster and the submitted driver's JVM): `make test-cluster` runs it.
pytestmark = [pytest.mark.spark, pytest.mark.streaming, pytest.mark.slow]


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
    read in micro-batches of ``max_records``, no end-offset sampling."""
    return standalone.site_config(
        tmp_path,
        url,
        log_dir,
        schema=schema,
        max_records=max_records,
        pipeline={"query_name": "cluster_ingest", "sample_end_offsets": False},
    )


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
