"""What offsetscope writes locally gets no wider permissions than ``[storage] umask``.

The umask must be in place before the JVM starts (the JVM inherits it, and Hadoop's local file
system chmods what it creates to ``fs.permissions.umask-mode``), so this test runs a job-like
child process with a SparkSession of its own rather than the run's shared session: it starts
Spark as the jobs do (:func:`offsetscope.spark.session.build_job_session`: the umask, the storage
folders, :func:`offsetscope.secrets.files.storage_spark_conf`), creates a catalogue table, and
streams a small segment log into a Delta table with a checkpoint.
The test then walks the warehouse, checkpoint and metastore folders.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from offsetscope import config
from offsetscope.secrets import files as secrets_files

pytestmark = [pytest.mark.spark, pytest.mark.streaming]

CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    from offsetscope import config
    from offsetscope.sim.synthetic import SyntheticLog, Workload
    from offsetscope.spark import sources, tables
    from offsetscope.spark.session import build_job_session

    cfg = config.load("local", extra=Path(sys.argv[1]))
    log_dir = Path(sys.argv[2])
    SyntheticLog(log_dir, Workload()).run(3)
    # What every job does: umask, storage folders, redaction, then the session.
    spark = build_job_session(
        cfg,
        app_name="offsetscope-storage-modes",
        extra_conf={
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
        },
    )
    try:
        tables.ensure_tables(spark, cfg, ["offset_commits"])
        query = (
            sources.segment_stream(spark, cfg, str(log_dir))
            .writeStream.format("delta")
            .option("checkpointLocation", str(Path(cfg.storage.checkpoint_dir) / "raw"))
            .toTable(f"{tables.schema_name(cfg)}.raw_copy")
        )
        try:
            query.processAllAvailable()
        finally:
            query.stop()
        rows = spark.table(f"{tables.schema_name(cfg)}.raw_copy").count()
        print(f"rows={rows}")
    finally:
        spark.stop()
    """
)


def test_tables_checkpoints_and_metastore_get_no_access_for_others(tmp_path: Path) -> None:
    storage = {
        "warehouse_dir": tmp_path / "warehouse",
        "checkpoint_dir": tmp_path / "checkpoints",
        "metastore_dir": tmp_path / "metastore",
    }
    overlay = tmp_path / "storage.toml"
    overlay.write_text(
        '[storage]\nschema = "modes"\numask = "027"\n'
        + "".join(f'{k} = "{v}"\n' for k, v in storage.items())
    )
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(overlay), str(tmp_path / "logdir")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    assert child.returncode == 0, child.stderr[-4000:]
    rows = int(child.stdout.strip().rsplit("rows=", 1)[1])
    assert rows > 0

    cfg = config.load("local", extra=overlay).storage
    written = {name: sorted(path.rglob("*")) for name, path in storage.items()}
    # The job really wrote Delta files, a checkpoint and a metastore there.
    assert any(p.suffix == ".parquet" for p in written["warehouse_dir"])
    assert any(p.name == "_delta_log" for p in written["warehouse_dir"])
    assert any(p.parent.name == "offsets" for p in written["checkpoint_dir"])
    assert any(p.name == "metastore_db" for p in written["metastore_dir"])
    for path in storage.values():
        assert secrets_files.permission_violations(path, cfg) == []
    # Hadoop's umask shaped Spark's own files, not just the process umask: rw-r----- exactly.
    modes = {
        stat.S_IMODE(p.stat().st_mode)
        for p in written["warehouse_dir"]
        if p.is_file() and p.suffix == ".parquet"
    }
    assert modes == {0o640}
