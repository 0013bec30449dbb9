"""The jobs submitted to YARN with deploy/yarn/submit.sh, tables and checkpoints on HDFS.

MiniHadoop (``make infra-jars``) runs a name node, a data node, a resource manager and a node
manager on loopback. ``deploy/yarn/submit.sh`` submits the ingest job and then the alerts job
with the packed environment (``make yarn-env``), once in cluster mode (the driver in the
application master's container) and once in client mode (the driver here), each into its own
schema on ``hdfs:///`` (the cluster's ``fs.defaultFS``, from ``HADOOP_CONF_DIR``). Every table
of both runs must hold the rows a local run of the same log directory writes.

The log directory stays a local folder: every container runs on this machine, and reading a
log directory on HDFS from Python needs libhdfs (the Hadoop distribution's native library),
which no jar from Maven Central carries (``docs/design.md``, "Real components"). The registered
tables need a metastore both drivers share: Derby in a local folder, which the cluster-mode
driver opens from its container on the same machine -- the one-machine stand-in for a cluster's
Hive metastore.

Then the bad inputs, against the same HDFS: an unreachable name node and a folder without
write access each fail the job at start with the key and the cause.

``make test-yarn`` (tens of minutes on two cores: four YARN applications).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyspark.find_spark_home import _find_spark_home

from offsetscope.sim.scenarios.run import simulate_to
from offsetscope.verify import remote
from offsetscope.verify.harness import hadoop
from offsetscope.verify.harness.hadoop import MiniHadoop

pytestmark = [pytest.mark.slow, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[2]
ENV_ARCHIVE = ROOT / "build" / "yarn" / "offsetscope-env.tar.gz"
# Small containers so that an application master and an executor fit beside the mini cluster
# on a small machine; the cluster's own Spark jars instead of an upload per application.
SPARK_CONF = {
    "spark.yarn.jars": f"local:{Path(_find_spark_home()) / 'jars'}/*",
    "spark.yarn.maxAppAttempts": "1",
    "spark.yarn.am.memory": "512m",
    "spark.driver.memory": "1g",
    "spark.executor.memory": "1g",
    "spark.executor.instances": "1",
    "spark.executor.cores": "1",
    "spark.ui.enabled": "false",
    "spark.driver.host": "127.0.0.1",
}


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("yarn")


@pytest.fixture(scope="module")
def cluster(work: Path) -> Iterator[MiniHadoop]:
    started = hadoop.start(work / "hadoop")
    try:
        yield started
    finally:
        started.stop()
    assert not started.launcher.running()


@pytest.fixture(scope="module")
def log_dir(work: Path) -> Path:
    out = work / "log"
    simulate_to(remote.SCENARIO, out=out)
    return out


@pytest.fixture(scope="module")
def local_run(work: Path, log_dir: Path) -> Path:
    site = remote.Site(
        name="local_run",
        log_dir=str(log_dir),
        warehouse_dir=str(work / "local" / "warehouse"),
        checkpoint_dir=str(work / "local" / "checkpoints"),
        metastore_dir=str(work / "local" / "metastore"),
    )
    file = remote.site_config(site, work / "sites")
    for job in ("ingest", "alerts"):
        result = remote.run_job(job, file, log=work / f"local-{job}.log")
        assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    return file


def yarn_site(work: Path, log_dir: Path, name: str) -> Path:
    site = remote.Site(
        name=name,
        log_dir=str(log_dir),
        warehouse_dir="hdfs:///user/offsetscope/warehouse",
        checkpoint_dir=f"hdfs:///user/offsetscope/checkpoints/{name}",
        metastore_dir=str(work / "shared-metastore"),
    )
    return remote.site_config(
        site,
        work / "sites",
        # The jars travel with --jars; the cluster's master.
        spark={"master": "yarn", "jars_dir": "", "extra_jars_dirs": [], "conf": {}},
    )


def submit(
    cluster: MiniHadoop, work: Path, job: str, mode: str, site: Path
) -> subprocess.CompletedProcess[str]:
    confs = [a for k, v in SPARK_CONF.items() for a in ("--conf", f"{k}={v}")]
    env = cluster.client_env()
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    command = [
        "bash", str(ROOT / "deploy" / "yarn" / "submit.sh"), job, "--env", "local",
        "--conf", str(site), "--deploy-mode", mode, "--archive", str(ENV_ARCHIVE), "--", *confs,
    ]  # fmt: skip
    result = subprocess.run(
        command, cwd=work, env=env, capture_output=True, text=True, timeout=1500, check=False
    )
    (work / f"yarn-{mode}-{job}.log").write_text(result.stdout + result.stderr)
    return result


def container_stdout(cluster: MiniHadoop) -> str:
    """Every container's stdout (a cluster-mode driver prints there)."""
    folder = cluster.container_log_dir
    assert folder is not None
    return "\n".join(p.read_text(errors="replace") for p in sorted(folder.rglob("stdout")))


@pytest.mark.timeout(3600)
def test_jobs_on_yarn_write_to_hdfs_the_tables_a_local_run_writes(
    cluster: MiniHadoop,
    work: Path,
    log_dir: Path,
    local_run: Path,
    record_outcome: Callable[[str], None],
) -> None:
    assert ENV_ARCHIVE.is_file(), "make yarn-env packs the environment"
    checked = differ = 0
    problems: list[str] = []
    for mode in ("cluster", "client"):
        site = yarn_site(work, log_dir, f"yarn_{mode}")
        for job in ("ingest", "alerts"):
            result = submit(cluster, work, job, mode, site)
            assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
            assert "YarnClientImpl: Submitted application application_" in result.stderr
            if mode == "cluster":  # the client waits for the application master's verdict
                assert "final status: SUCCEEDED" in result.stderr
            elif job == "ingest":  # the driver ran here, printing its progress
                assert "micro-batches" in result.stdout
        compared = remote.compare_runs(local_run, site, env=cluster.client_env())
        checked += compared["tables"]
        differ += compared["differ"]
        problems += [f"{mode}: {p}" for p in compared["problems"]]
    record_outcome(f"yarn: {checked} tables checked, {differ} differ")
    assert differ == 0, "\n".join(problems)
    # The cluster-mode driver ran in a container, on the packed environment's interpreter.
    printed = container_stdout(cluster)
    assert "ingest: " in printed
    assert "micro-batches" in printed


@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    ("case", "warehouse", "meaning"),
    [
        (
            "unreachable name node",
            "hdfs://127.0.0.1:1/offsetscope/warehouse",
            "cannot reach the file system's server",
        ),
        ("no write access", "hdfs:///offsetscope-forbidden/warehouse", "no access"),
    ],
)
def test_bad_hdfs_storage_fails_at_start_naming_the_key(
    cluster: MiniHadoop, work: Path, log_dir: Path, case: str, warehouse: str, meaning: str
) -> None:
    name = "bad_" + case.replace(" ", "_")
    site = remote.Site(
        name=name,
        log_dir=str(log_dir),
        warehouse_dir=warehouse,
        checkpoint_dir=str(work / name / "checkpoints"),
        metastore_dir=str(work / name / "metastore"),
    )
    file = remote.site_config(site, work / "sites")
    env = cluster.client_env()
    if case == "no write access":
        # A user without rights on the cluster: "/" is the HDFS superuser's, mode 755.
        env["HADOOP_USER_NAME"] = "alice"
    result = remote.run_job("ingest", file, env=env, log=work / f"{name}.log")
    assert result.returncode == 1, result.stderr[-4000:]
    expected = f"offsetscope ingest: storage.warehouse_dir = {warehouse}: cannot write there"
    assert f"{expected} ({meaning}): " in result.stderr
    assert "micro-batches" not in result.stdout
