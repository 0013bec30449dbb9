"""Tables, checkpoints and the log directory on an S3 API server (S3Proxy), against a local run.

A catalogue scenario is simulated to a local log directory and uploaded through the S3 API to a
bucket. The ingest and the alerts jobs (``python -m jobs.ingest`` / ``jobs.alerts``, the real
entry points) run twice: once all local, once with the log directory, the warehouse and the
checkpoints on ``s3a://`` (S3A from ``make infra-jars``, credentials from the AWS variables
only). Every table must hold the same rows. Then the bad inputs, each failing at start with the
key and the cause: a bucket that does not exist, a wrong secret key, a log directory in a
missing bucket. ``make test-s3`` (several minutes; needs ``make infra-jars``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from offsetscope.sim.scenarios.run import simulate_to
from offsetscope.verify import remote
from offsetscope.verify.harness import s3proxy
from offsetscope.verify.harness.s3proxy import S3Proxy

pytestmark = [pytest.mark.slow, pytest.mark.spark]

BUCKET = "offsetscope"
S3A_JARS = ("build/jvm/s3a",)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("s3")


@pytest.fixture(scope="module")
def server(work: Path) -> Iterator[S3Proxy]:
    started = s3proxy.start(work / "s3proxy")
    try:
        yield started
    finally:
        started.stop()
    assert started.process.poll() is not None


@pytest.fixture(scope="module")
def log_dir(work: Path) -> Path:
    out = work / "log"
    simulate_to(remote.SCENARIO, out=out)
    return out


def upload(server: S3Proxy, local: Path, bucket: str, prefix: str) -> None:
    """Copy a folder into the bucket through the S3 API (not the server's backing folder)."""
    fs = pafs.S3FileSystem(
        access_key=server.access_key,
        secret_key=server.secret_key,
        endpoint_override=server.endpoint.removeprefix("http://"),
        scheme="http",
        region=s3proxy.REGION,
    )
    pafs.copy_files(str(local), f"{bucket}/{prefix}", destination_filesystem=fs)


def s3_site(server: S3Proxy, work: Path, name: str, **where: str) -> remote.Site:
    return remote.Site(
        name=name,
        log_dir=where.get("log_dir", f"s3a://{BUCKET}/log"),
        warehouse_dir=where.get("warehouse_dir", f"s3a://{BUCKET}/warehouse"),
        checkpoint_dir=where.get("checkpoint_dir", f"s3a://{BUCKET}/checkpoints"),
        metastore_dir=str(work / name / "metastore"),
        spark_conf=server.s3a_conf(),
        extra_jars_dirs=S3A_JARS,
    )


@pytest.mark.timeout(2400)
def test_jobs_on_s3_write_the_tables_a_local_run_writes(
    server: S3Proxy, log_dir: Path, work: Path, record_outcome: Callable[[str], None]
) -> None:
    server.create_bucket(BUCKET)
    upload(server, log_dir, BUCKET, "log")
    local = remote.Site(
        name="local_run",
        log_dir=str(log_dir),
        warehouse_dir=str(work / "local" / "warehouse"),
        checkpoint_dir=str(work / "local" / "checkpoints"),
        metastore_dir=str(work / "local" / "metastore"),
    )
    sites = work / "sites"
    local_file = remote.site_config(local, sites)
    s3_file = remote.site_config(s3_site(server, work, "s3_run"), sites)
    env = server.client_env()
    for job in ("ingest", "alerts"):
        for name, file in (("local", local_file), ("s3", s3_file)):
            result = remote.run_job(job, file, env=env, log=work / f"{name}-{job}.log")
            assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]

    compared = remote.compare_runs(local_file, s3_file, env=env)
    record_outcome(remote.outcome_line("s3", compared))
    assert compared["differ"] == 0, "\n".join(compared["problems"])
    assert compared["tables"] >= 20
    # The tables and checkpoints are objects in the bucket, nothing landed in a local folder
    # named after the URI.
    objects = server.blobs / BUCKET
    assert (objects / "warehouse" / "s3_run.db" / "raw_records" / "_delta_log").is_dir()
    assert any((objects / "checkpoints").iterdir())
    assert not any(p.name.startswith("s3a:") for p in Path.cwd().iterdir())


@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    ("case", "expected"),
    [
        (
            "missing bucket",
            (
                "storage.checkpoint_dir = s3a://no-such-bucket/checkpoints: cannot write there"
                " (the bucket does not exist)"
            ),
        ),
        (
            "wrong secret",
            f"storage.warehouse_dir = s3a://{BUCKET}/warehouse: cannot write there (no access)",
        ),
        (
            "log directory in a missing bucket",
            "sources.segments.log_dir = s3a://no-such-bucket/log: cannot read it",
        ),
    ],
)
def test_bad_storage_fails_at_start_naming_the_key(
    server: S3Proxy, work: Path, case: str, expected: str
) -> None:
    server.create_bucket(BUCKET)
    where = {
        "missing bucket": {"checkpoint_dir": "s3a://no-such-bucket/checkpoints"},
        "wrong secret": {},
        "log directory in a missing bucket": {"log_dir": "s3a://no-such-bucket/log"},
    }[case]
    name = "bad_" + case.replace(" ", "_")
    file = remote.site_config(s3_site(server, work, name, **where), work / "sites")
    env = server.client_env()
    if case == "wrong secret":
        env["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"
    result = remote.run_job("ingest", file, env=env, log=work / f"{name}.log")
    assert result.returncode == 1, result.stderr[-4000:]
    assert f"offsetscope ingest: {expected}" in result.stderr
    # It failed before the query started: no micro-batch ran, nothing was written.
    assert "micro-batches" not in result.stdout
    assert not (server.blobs / BUCKET / "warehouse" / f"{name}.db").exists()
