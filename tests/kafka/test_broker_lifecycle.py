"""Broker lifecycle beyond one test run: restart on kept data, the CLI, and no leaked JVM when
the starting process is killed. Each test starts brokers of its own, so these are ``slow``
(``make test-kafka-slow``), outside ``make test``."""

from __future__ import annotations

import dataclasses
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from offsetscope import config
from offsetscope.verify.harness.broker import Broker, _is_our_broker

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def _config(base: config.Config, tmp_path: Path, name: str) -> config.BrokerConfig:
    return dataclasses.replace(base.broker, work_dir=str(tmp_path), name=name)


def test_restart_keeps_topics_ports_and_cluster(
    offsetscope_config: config.Config, tmp_path: Path
) -> None:
    broker = Broker(_config(offsetscope_config, tmp_path, "restart"))
    with broker.start() as first:
        admin = AdminClient({"bootstrap.servers": first.bootstrap})
        admin.create_topics([NewTopic("kept", 2, 1)])["kept"].result(timeout=30)
        before = first.endpoints
    assert broker.attach() is None

    with broker.start() as second:
        topics = AdminClient({"bootstrap.servers": second.bootstrap}).list_topics(timeout=10)
        assert second.endpoints == before
        assert len(topics.topics["kept"].partitions) == 2


def test_broker_dies_with_the_process_that_tied_it(
    offsetscope_config: config.Config, tmp_path: Path
) -> None:
    cfg = _config(offsetscope_config, tmp_path, "tied")
    script = textwrap.dedent(
        f"""
        import dataclasses, sys, time
        from offsetscope import config
        from offsetscope.verify.harness.broker import Broker
        cfg = dataclasses.replace(
            config.load("local").broker, work_dir={cfg.work_dir!r}, name={cfg.name!r}
        )
        handle = Broker(cfg).start(tie_to_parent=True)
        print(handle.pid, flush=True)
        time.sleep(600)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        broker = Broker(cfg)
        assert _is_our_broker(pid, broker.paths)
    finally:
        # SIGKILL: the parent gets no chance to clean up; only the kernel's death signal is left.
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + cfg.stop_timeout.seconds
    while _is_our_broker(pid, broker.paths) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _is_our_broker(pid, broker.paths)
    assert broker.attach() is None


def test_cli_up_status_down_wipe(offsetscope_config: config.Config, tmp_path: Path) -> None:
    extra = tmp_path / "broker.toml"
    extra.write_text(f'[broker]\nwork_dir = "{tmp_path}"\nname = "cli"\n')

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "offsetscope.verify.harness.broker",
                *args,
                "--conf",
                str(extra),
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )

    assert cli("status").returncode == 3
    up = cli("up")
    try:
        assert up.returncode == 0, up.stderr
        assert "broker cli: ready in" in up.stdout
        status = cli("status")
        assert status.returncode == 0
        assert "broker cli: running" in status.stdout
        assert cli("up").stdout.startswith("broker cli: already running")
    finally:
        down = cli("down", "--wipe")
    assert down.returncode == 0, down.stderr
    assert "stopped" in down.stdout
    assert not (tmp_path / "cli").exists()
    assert cli("status").returncode == 3
    assert [p.name for p in tmp_path.iterdir()] == ["broker.toml"]
