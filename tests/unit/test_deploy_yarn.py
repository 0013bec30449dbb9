"""deploy/yarn/submit.sh: the spark-submit command it builds for each mode (``--dry-run``)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUBMIT = ROOT / "deploy" / "yarn" / "submit.sh"
JARS = sorted((ROOT / "build" / "jvm" / "spark").glob("*.jar"))


def submit(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SUBMIT), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
        check=False,
    )


def command(*args: str, env: dict[str, str] | None = None) -> tuple[dict[str, str], list[str]]:
    """(environment assignments, spark-submit argv) of a dry run."""
    done = submit(*args, "--dry-run", env=env)
    assert done.returncode == 0, done.stderr
    words = shlex.split(done.stdout)
    assignments = {}
    while "=" in words[0] and not words[0].startswith("/"):
        name, _, value = words.pop(0).partition("=")
        assignments[name] = value
    return assignments, words


def options(argv: list[str], name: str) -> list[str]:
    return [argv[i + 1] for i, word in enumerate(argv) if word == name]


def confs(argv: list[str]) -> dict[str, str]:
    """spark-submit's --conf settings (those before the job script, not the job's --conf)."""
    script = next(i for i, w in enumerate(argv) if w.endswith(".py"))
    return dict(c.split("=", 1) for c in options(argv[:script], "--conf"))


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    path = tmp_path / "env.tar.gz"
    path.write_bytes(b"")  # the script only ships it
    return path


def test_cluster_mode_ships_environment_jars_and_configuration(archive: Path) -> None:
    _, argv = command("ingest", "--archive", str(archive))
    assert argv[0].endswith("spark-submit")
    assert options(argv, "--master") == ["yarn"]
    assert options(argv, "--deploy-mode") == ["cluster"]
    assert options(argv, "--archives") == [f"{archive}#environment"]
    assert JARS, "make install resolved the Spark jars"
    assert options(argv, "--jars")[0].split(",") == [str(j) for j in JARS]
    assert options(argv, "--files")[0].split(",") == [
        str(ROOT / "conf" / "base.toml"),
        str(ROOT / "conf" / "yarn.toml"),
    ]
    c = confs(argv)
    assert c["spark.yarn.appMasterEnv.PYSPARK_PYTHON"] == "./environment/bin/python"
    assert c["spark.executorEnv.PYSPARK_PYTHON"] == "./environment/bin/python"
    assert c["spark.yarn.appMasterEnv.OFFSETSCOPE_CONF_DIR"] == "."
    # the job gets --env and nothing else, as on Databricks
    assert argv[-3:] == [str(ROOT / "jobs" / "ingest.py"), "--env", "yarn"]
    assert Path(argv[-3]).is_file()


def test_client_mode_runs_the_driver_here(archive: Path, tmp_path: Path) -> None:
    extra = tmp_path / "site.toml"
    extra.write_text("[pipeline]\nquery_name = 'x'\n")
    env, argv = command(
        "alerts", "--deploy-mode", "client", "--archive", str(archive), "--conf", str(extra)
    )
    assert env["PYSPARK_DRIVER_PYTHON"] == str(ROOT / ".venv" / "bin" / "python")
    assert env["PYSPARK_PYTHON"] == "./environment/bin/python"
    assert env["OFFSETSCOPE_CONF_DIR"] == str(ROOT / "conf")
    assert "spark.yarn.appMasterEnv.PYSPARK_PYTHON" not in confs(argv)
    assert argv[-5:] == [str(ROOT / "jobs" / "alerts.py"), "--env", "yarn", "--conf", str(extra)]


def test_a_shared_interpreter_instead_of_an_archive() -> None:
    python = str(ROOT / ".venv" / "bin" / "python")
    env, argv = command(
        "ingest", "--env", "local", "--master", "spark://127.0.0.1:7077",
        "--deploy-mode", "client", "--python", python,
    )  # fmt: skip
    assert options(argv, "--master") == ["spark://127.0.0.1:7077"]
    assert "--archives" not in argv
    assert confs(argv)["spark.executorEnv.PYSPARK_PYTHON"] == python
    assert env["PYSPARK_DRIVER_PYTHON"] == python
    assert argv[-2:] == ["--env", "local"]


def test_forwarded_secrets_reach_the_driver_but_not_the_printout(archive: Path) -> None:
    env = {"OFFSETSCOPE_KAFKA_PASSWORD": "hunter2-secret"}
    done = submit(
        "ingest", "--archive", str(archive), "--forward-env", "OFFSETSCOPE_KAFKA_PASSWORD",
        "--dry-run", env=env,
    )  # fmt: skip
    assert done.returncode == 0
    assert "hunter2-secret" not in done.stdout
    assert "spark.yarn.appMasterEnv.OFFSETSCOPE_KAFKA_PASSWORD=***" in shlex.split(done.stdout)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["compact"], "unknown job 'compact'"),
        (["ingest", "--env", "staging", "--python", "/x"], "no "),
        (["ingest", "--archive", "/nonexistent.tar.gz"], "make yarn-env"),
        (["ingest", "--deploy-mode", "local"], "client or cluster"),
        (["ingest", "--forward-env", "NOT_SET_ANYWHERE", "--python", "/x"], "not set"),
    ],
)
def test_mistakes_stop_before_spark_submit(args: list[str], message: str) -> None:
    done = submit(*args, "--dry-run")
    assert done.returncode == 2
    assert message in done.stderr
    assert done.stdout == ""


def test_files_accumulate_with_the_configuration(archive: Path, tmp_path: Path) -> None:
    ca, krb5, extra = (tmp_path / n for n in ("ca.pem", "krb5.conf", "jaas.conf"))
    for f in (ca, krb5, extra):
        f.write_text("x")
    done = submit(
        "ingest", "--archive", str(archive), "--files", str(ca), "--files", str(krb5),
        "--dry-run", "--", "--files", str(extra), "--conf", "spark.yarn.maxAppAttempts=1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    argv = shlex.split(done.stdout)
    # One --files: spark-submit would keep only the last of several.
    assert len(options(argv, "--files")) == 1
    assert options(argv, "--files")[0].split(",") == [
        str(ROOT / "conf" / "base.toml"),
        str(ROOT / "conf" / "yarn.toml"),
        str(ca),
        str(krb5),
        str(extra),
    ]
    assert confs(argv)["spark.yarn.maxAppAttempts"] == "1"


def test_keytab_and_principal_log_in_and_ship_the_keytab(archive: Path, tmp_path: Path) -> None:
    keytab = tmp_path / "svc.keytab"
    keytab.write_bytes(b"\x05\x02")
    _, argv = command(
        "ingest", "--archive", str(archive), "--keytab", str(keytab),
        "--principal", "offsetscope@EXAMPLE.COM",
    )  # fmt: skip
    assert options(argv, "--principal") == ["offsetscope@EXAMPLE.COM"]
    assert options(argv, "--keytab") == [str(keytab)]
    # Kafka's login reads it by this name in every container's working folder.
    assert f"{keytab}#offsetscope.keytab" in options(argv, "--files")[0].split(",")


def test_several_jar_folders_are_shipped(archive: Path) -> None:
    spark, s3a = ROOT / "build" / "jvm" / "spark", ROOT / "build" / "jvm" / "kafka"
    _, argv = command(
        "ingest", "--archive", str(archive), "--jars-dir", str(spark), "--jars-dir", str(s3a)
    )
    shipped = options(argv, "--jars")[0].split(",")
    assert shipped[: len(JARS)] == [str(j) for j in JARS]
    assert shipped[len(JARS) :] == [str(j) for j in sorted(s3a.glob("*.jar"))]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--keytab", "/etc/hostname"], "--keytab and --principal go together"),
        (["--keytab", "/no/such.keytab", "--principal", "p"], "no keytab"),
        (["--files", "/no/such/ca.pem"], "no file /no/such/ca.pem"),
        (["--jars-dir", "/no/such/folder"], "no jars in /no/such/folder"),
    ],
)
def test_kerberos_and_file_mistakes_stop_before_spark_submit(args: list[str], message: str) -> None:
    done = submit("ingest", "--python", "/x", *args, "--dry-run")
    assert done.returncode == 2
    assert message in done.stderr


def test_a_client_mode_driver_runs_where_environment_is_its_own_interpreter(
    archive: Path, tmp_path: Path
) -> None:
    # Spark starts Python workers on the driver too (planning the segment source) with the
    # executors' PYSPARK_PYTHON, ./environment/bin/python: the driver's folder must have one.
    # The stand-in for spark-submit reports where it runs and what that interpreter is.
    fake = tmp_path / "spark-submit"
    fake.write_text(
        "#!/bin/sh\n"
        'echo "cwd=$(pwd)"\n'
        'echo "python=$PYSPARK_PYTHON"\n'
        '"$PYSPARK_PYTHON" -c "import sys, offsetscope; print(\'prefix=\' + sys.prefix)"\n'
    )
    fake.chmod(0o755)
    relative_jars = Path("build") / "jvm" / "spark"
    done = subprocess.run(
        [
            "bash",
            str(SUBMIT),
            "ingest",
            "--deploy-mode",
            "client",
            "--archive",
            str(archive),
            "--jars-dir",
            str(relative_jars),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,  # the relative --jars-dir is relative to here, not to the driver's folder
        env={"PATH": "/usr/bin:/bin", "SPARK_SUBMIT": str(fake)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    assert lines["cwd"] == str(ROOT / "build" / "yarn" / "client-driver")
    assert lines["python"] == "./environment/bin/python"
    assert Path(lines["prefix"]).resolve() == (ROOT / ".venv").resolve()
