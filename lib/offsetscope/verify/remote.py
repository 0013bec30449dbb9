"""The jobs on remote storage and real clusters, compared table by table with a local run.

The slow targets (``make test-s3``, ``make test-yarn``, ``make test-kerberos``, ``tests/remote/``)
run the real entry points -- ``python -m jobs.ingest`` / ``jobs.alerts``, or
``deploy/yarn/submit.sh`` -- as separate processes with a site configuration written here
(:func:`site_config`), against S3Proxy, MiniHadoop (HDFS + YARN) or a KDC-secured broker
(:mod:`offsetscope.verify.harness`). A run's tables are then compared with a local run's of the
same log directory (:func:`compare_runs`, in a process of its own that reads both by location,
:mod:`offsetscope.verify.chaos`'s comparison): every table of the catalogue, rows as a multiset,
the columns that say when a batch ran left out. The outcome line is ``<what>: N tables checked,
M differ``.

``python -m offsetscope.verify.remote compare A.toml B.toml`` is that comparison process: it
loads both site configurations over ``conf/local.toml``, starts a session with B's Spark
settings (S3A's jars and endpoint, say) and a Derby metastore of its own, and prints one JSON
line ``{"tables": N, "differ": M, "problems": [...]}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offsetscope import config, paths
from offsetscope.verify import chaos

# A small catalogue scenario: several groups rebalancing and committing, a few seconds of
# simulated time, each record type of both internal topics.
SCENARIO = "steady"
# Spark's message when a Python worker did not connect back in time (see run_module).
WORKER_TIMEOUT = "Python worker failed to connect back"


def toml_text(tree: Mapping[str, Any], prefix: str = "") -> str:
    """``tree`` (tables of strings, numbers, booleans and arrays of them) as TOML."""

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            return repr(v)
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list | tuple):
            return "[" + ", ".join(value(x) for x in v) + "]"
        raise TypeError(f"no TOML for {type(v).__name__}")

    lines = [f"{k} = {value(v)}" for k, v in tree.items() if not isinstance(v, Mapping)]
    out = "\n".join(lines) + ("\n" if lines else "")
    for k, v in tree.items():
        if isinstance(v, Mapping):
            name = f"{prefix}.{k}" if prefix else k
            out += f"\n[{name}]\n" + toml_text(v, name).removeprefix("\n")
    return out


def _quote_keys(tree: Mapping[str, Any]) -> dict[str, Any]:
    """Keys with dots quoted, so ``spark.conf``'s entries stay one key each."""
    out: dict[str, Any] = {}
    for k, v in tree.items():
        key = json.dumps(k) if "." in k else k
        out[key] = _quote_keys(v) if isinstance(v, Mapping) else v
    return out


@dataclass(frozen=True)
class Site:
    """Where one run reads and writes."""

    name: str  # the schema, and the file name of its configuration
    log_dir: str
    warehouse_dir: str
    checkpoint_dir: str
    metastore_dir: str
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    extra_jars_dirs: tuple[str, ...] = ()
    max_records: int = 400


def site_config(site: Site, folder: Path, **sections: Mapping[str, Any]) -> Path:
    """Write ``<folder>/<name>.toml``: the segment source on ``site.log_dir``, available-now in
    micro-batches of ``site.max_records``, the tables of schema ``site.name`` and their
    checkpoints where ``site`` says; ``sections`` add or replace whole sections' keys."""
    tree: dict[str, Any] = {
        "sources": {
            "kind": "segments",
            "segments": {"log_dir": site.log_dir, "max_records_per_trigger": site.max_records},
        },
        "storage": {
            "schema": site.name,
            "warehouse_dir": site.warehouse_dir,
            "checkpoint_dir": site.checkpoint_dir,
            "metastore_dir": site.metastore_dir,
        },
        "pipeline": {"trigger": "available_now"},
        "alerts": {"trigger": "available_now"},
        # These runs check where the tables live, not their contents' gates (make test runs the
        # suites); without them a micro-batch is several times shorter on a small machine.
        "quality": {"enabled": False},
        "spark": {
            "extra_jars_dirs": list(site.extra_jars_dirs),
            "conf": dict(site.spark_conf),
        },
    }
    for name, keys in sections.items():
        tree[name] = {**tree.get(name, {}), **keys}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{site.name}.toml"
    path.write_text(toml_text(_quote_keys(tree)))
    return path


def run_job(
    job: str,
    conf_file: Path,
    *,
    env: Mapping[str, str] | None = None,
    log: Path,
    timeout_s: float = 1200.0,
    env_name: str = "local",
) -> subprocess.CompletedProcess[str]:
    """``python -m jobs.<job> --env <env_name> --conf <conf_file>``; output also kept in ``log``."""
    return run_module(
        [f"jobs.{job}", "--env", env_name, "--conf", str(conf_file)],
        env=env,
        log=log,
        timeout_s=timeout_s,
    )


def run_module(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    log: Path,
    timeout_s: float = 1200.0,
) -> subprocess.CompletedProcess[str]:
    """``python -m <argv...>`` from the project root; output also kept in ``log``."""
    root = config.project_root()
    command = [sys.executable, "-m", *argv]
    environment = dict(env if env is not None else os.environ)
    # Everything runs on loopback: this machine's name resolves to 127.0.0.1, and Spark would
    # otherwise bind its driver to the first external interface.
    environment.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Output goes to files as it comes (a slow run can be watched), then is read back.
    out, err = log.with_suffix(".out"), log.with_suffix(".err")
    for _attempt in range(2):
        with out.open("w") as stdout, err.open("w") as stderr:
            code = subprocess.run(
                command,
                cwd=root,
                env=environment,
                stdout=stdout,
                stderr=stderr,
                text=True,
                timeout=timeout_s,
                check=False,
            ).returncode
        result = subprocess.CompletedProcess(command, code, out.read_text(), err.read_text())
        # Spark gives a Python worker a fixed 10 s to connect back to the JVM; on an
        # overloaded machine a worker still importing can miss it. The job restarts from its
        # checkpoint (exactly once), so one more run is the job's own recovery, not a retry of
        # a wrong result. Any other failure is final.
        if code == 0 or WORKER_TIMEOUT not in result.stderr:
            break
    log.write_text(result.stdout + result.stderr)
    return result


def compare_runs(
    a: Path, b: Path, *, env: Mapping[str, str] | None = None, timeout_s: float = 1200.0
) -> dict[str, Any]:
    """Compare two runs' tables (site configurations ``a`` and ``b``) in a process of its own."""
    environment = dict(env if env is not None else os.environ)
    environment.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    result = subprocess.run(
        [sys.executable, "-m", "offsetscope.verify.remote", "compare", str(a), str(b)],
        cwd=config.project_root(),
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"comparison failed ({result.returncode}):\n{result.stderr[-4000:]}")
    out: dict[str, Any] = json.loads(lines[-1])
    return out


def outcome_line(what: str, result: Mapping[str, Any]) -> str:
    return f"{what}: {result['tables']} tables checked, {result['differ']} differ"


def table_location(cfg: config.Config, logical: str) -> str:
    """Where a managed table of ``cfg`` lives: ``<warehouse>/<schema>.db/<physical name>``."""
    from offsetscope.spark import tables as catalogue

    warehouse = paths.resolve(cfg.storage.warehouse_dir)
    name = catalogue.physical_name(cfg, logical).lower()
    location = warehouse.join(f"{cfg.storage.schema}.db", name)
    # The comparing session has the other run's Hadoop settings, whose fs.defaultFS (a
    # cluster's HDFS) would take a bare local path for one of its own.
    return location.path.as_uri() if location.is_local else str(location)


def _compare(a_file: Path, b_file: Path) -> dict[str, Any]:
    import dataclasses

    from offsetscope.spark import tables as catalogue
    from offsetscope.spark.session import build_session

    a = config.load("local", extra=a_file)
    b = config.load("local", extra=b_file)
    metastore = Path(tempfile.mkdtemp(prefix="offsetscope-compare-"))
    # B's file systems (S3A's jars and endpoint, the cluster's HDFS through HADOOP_CONF_DIR),
    # but a local session with the project's jars, whatever master B's jobs ran on.
    reader = dataclasses.replace(
        b,
        storage=dataclasses.replace(b.storage, metastore="derby", metastore_dir=str(metastore)),
        spark=dataclasses.replace(
            b.spark, master="local[2]", jars_dir=config.SparkConfig().jars_dir
        ),
    )
    spark = build_session(reader, app_name="offsetscope-remote-compare")

    def read(cfg: config.Config, logical: str) -> Any:
        return spark.read.format("delta").load(table_location(cfg, logical))

    problems = chaos.compare(spark, a, b, read=read)
    differ = len({p.split(":", 1)[0].split(" ", 1)[0] for p in problems})
    spark.stop()
    return {"tables": len(catalogue.CATALOGUE), "differ": differ, "problems": problems}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m offsetscope.verify.remote")
    sub = parser.add_subparsers(dest="command", required=True)
    cmp = sub.add_parser("compare", help="compare two runs' tables (site TOML files)")
    cmp.add_argument("a", type=Path)
    cmp.add_argument("b", type=Path)
    args = parser.parse_args(argv)
    result = _compare(args.a, args.b)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
