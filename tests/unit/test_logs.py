"""Logging as the entry points configure it: one stderr handler with the redacting filter, levels
from ``[logging]``; an INFO alert reaches the log, a secret never does, and the log notifier
records ``delivered`` only when a handler took its line."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from service_doubles import alert

from offsetscope import config, logs, redaction
from offsetscope.alerts.notify import DELIVERED, FAILED, OPENED, SKIPPED, AlertEvent, LogNotifier
from offsetscope.cli import main
from offsetscope.secrets.references import Resolver

ROOT = Path(__file__).resolve().parents[2]
SECRET = "kafka-pa55word-0123456789"


def ours(root: logging.Logger) -> list[logging.Handler]:
    return [h for h in root.handlers if h.get_name() == logs.HANDLER_NAME]


def test_configure_installs_one_redacting_handler_with_the_levels() -> None:
    settings = config.from_mapping(
        config.LoggingConfig,
        {
            "level": "WARNING",
            "format": "%(levelname)s|%(name)s|%(message)s",
            "loggers": {"a.b": "DEBUG"},
        },
    )
    handler = logs.configure(settings)
    root = logging.getLogger()
    assert ours(root) == [handler]
    assert any(isinstance(f, redaction.RedactingFilter) for f in handler.filters)
    assert root.level == logging.WARNING
    assert logging.getLogger("a.b").level == logging.DEBUG
    # Again, with other settings: the same one handler; a logger no longer named is reset.
    assert logs.configure(config.LoggingConfig(level="INFO")) is handler
    assert ours(root) == [handler]
    assert (root.level, logging.getLogger("a.b").level) == (logging.INFO, logging.NOTSET)


def test_an_info_alert_reaches_the_log_and_a_secret_never_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    logs.configure(config.load("base").logging)
    # A secret as a job resolves it: from its reference, registered for redaction.
    resolved = Resolver(environ={"KAFKA_PASSWORD": SECRET}).resolve(
        "env:KAFKA_PASSWORD", "sources.kafka.security.sasl_password"
    )
    notifier = LogNotifier()
    notifier.submit(AlertEvent(OPENED, alert(severity="info", rule="member_churn")))
    notifier.submit(AlertEvent(OPENED, alert("b" * 32, severity="critical")))
    other = logging.getLogger("offsetscope.pipelines")
    other.info("connecting with sasl.jaas.config=... password=%s", resolved)
    try:
        raise RuntimeError(f"login failed for offsetscope/{resolved}")
    except RuntimeError:
        other.exception("the source failed")
    err = capsys.readouterr().err
    assert [o.status for o in notifier.drain()] == [DELIVERED, DELIVERED]
    assert " INFO offsetscope.alerts: alert opened [info] member_churn payments" in err
    assert " WARNING offsetscope.alerts: alert opened [critical] rebalance_storm payments" in err
    assert "the source failed" in err
    assert "RuntimeError: login failed for offsetscope/***" in err
    assert SECRET not in err


def test_without_logging_configured_an_info_alert_is_not_recorded_delivered() -> None:
    # A logger outside the hierarchy stands for a process that never configured logging: no
    # handler anywhere; Python's last resort prints WARNING and above only.
    bare = logging.Logger("offsetscope.alerts", logging.NOTSET)  # noqa: LOG001
    notifier = LogNotifier(logger=bare)
    notifier.submit(AlertEvent(OPENED, alert(severity="warning")))  # logged at INFO
    notifier.submit(AlertEvent(OPENED, alert("b" * 32, severity="critical")))  # at WARNING
    lost, printed = notifier.drain()
    assert (lost.status, lost.attempts) == (FAILED, 0)
    assert lost.error == (
        "no log handler takes INFO records of offsetscope.alerts (logging is not configured)"
    )
    assert printed.status == DELIVERED


def test_levels_that_leave_alerts_out_record_them_skipped() -> None:
    logs.configure(config.LoggingConfig(loggers={"offsetscope.alerts": "ERROR"}))
    notifier = LogNotifier()
    notifier.submit(AlertEvent(OPENED, alert(severity="critical")))
    (outcome,) = notifier.drain()
    assert (outcome.status, outcome.error) == (
        SKIPPED,
        "logger offsetscope.alerts writes ERROR and above, not WARNING",
    )


def test_the_handler_follows_a_replaced_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    logs.configure(config.LoggingConfig())
    logging.getLogger("offsetscope.x").warning("first")
    first = capsys.readouterr().err
    logging.getLogger("offsetscope.x").warning("second")
    assert "first" in first
    assert "second" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("section", "key", "message"),
    [
        ({"format": "%(no_such_field)s"}, "format", "Formatting field not found"),
        ({"level": "VERBOSE"}, "level", "not one of"),
        ({"loggers": {"py4j": "LOUD"}}, "loggers.py4j", "not one of"),
    ],
)
def test_bad_logging_settings_name_their_key(
    section: dict[str, object], key: str, message: str
) -> None:
    with pytest.raises(config.InvalidConfigError, match=message) as bad:
        config.from_mapping(config.LoggingConfig, section)
    assert bad.value.key_path == key


def test_the_cli_configures_logging_before_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["partition-for", "payments"]) == 0
    assert ours(logging.getLogger())
    logging.getLogger("offsetscope.test").info("after the command")
    assert "INFO offsetscope.test: after the command" in capsys.readouterr().err


def test_a_job_entry_point_logs_with_the_configured_format(tmp_path: Path) -> None:
    # jobs/alerts.py as spark-submit, YARN or a Databricks wheel task runs it, in its own
    # process; a jar folder that does not exist stops it before a JVM starts.
    conf = tmp_path / "conf"
    shutil.copytree(ROOT / "conf", conf)
    (conf / "site.toml").write_text(
        '[spark]\njars_dir = "no-such-jars"\n'
        '[storage]\nwarehouse_dir = "w"\ncheckpoint_dir = "c"\nmetastore_dir = "m"\n'
        '[logging]\nformat = "LOG %(levelname)s %(name)s %(message)s"\n'
    )
    env = {**os.environ, "OFFSETSCOPE_CONF_DIR": str(conf), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "jobs.alerts", "--env", "local", "--conf", str(conf / "site.toml")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    assert "SparkJarsMissingError" in done.stderr
    expected = (
        f"LOG INFO offsetscope.cli offsetscope alerts --env local --conf {conf / 'site.toml'}"
    )
    assert f"{expected}: configuration from {conf}" in done.stderr
