"""Shared fixtures: one real Kafka broker and one SparkSession for the whole test run.

* ``offsetscope_config``: the ``local`` configuration (``conf/base.toml`` + ``conf/local.toml``).
* ``kafka_broker`` (tests marked ``kafka``): a single-node KRaft broker from ``build/jvm/kafka``
  (:mod:`offsetscope.verify.harness.broker`), started fresh once per run under
  ``.work/kafka/pytest-<pid>/`` on free loopback ports, stopped at the end of the run however
  the run ends (Linux also SIGTERMs it if pytest itself is killed). Its folder is deleted after
  a run without failures and kept for inspection otherwise; a broker that died during the run
  fails the run with its log tail.
* ``spark`` (tests marked ``spark``): one SparkSession from
  :func:`offsetscope.spark.session.build_session`, ``local[2]``, 2 shuffle partitions, UI off,
  UTC, Delta's small-log test settings, a warehouse and its own Derby metastore in a pytest
  temporary folder, and the Python workers on this interpreter.

Both start only when a test asks for them, so ``make test-unit`` never starts a JVM; a test
that uses one without the matching marker is a collection error.

Every test leaves Python's logging as it found it: an entry point a test runs (``cli.main``, a
job's ``main``) configures the process's logging as a job would (:mod:`offsetscope.logs`).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from offsetscope import config, logs
from offsetscope.verify.harness.broker import Broker, BrokerHandle

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_MARKED_FIXTURES = {"kafka_broker": "kafka", "spark": "spark"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Fail loudly when a test uses a JVM fixture without its marker (it would run in test-unit)."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        for fixture, marker in _MARKED_FIXTURES.items():
            if fixture in fixtures and item.get_closest_marker(marker) is None:
                raise pytest.UsageError(f"{item.nodeid} uses {fixture} but is not marked {marker}")


@pytest.fixture(autouse=True)
def _logging_as_found() -> Iterator[None]:
    """Remove the handler an entry point installed and restore every logger's level."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {
        name: logger.level
        for name, logger in logging.Logger.manager.loggerDict.items()
        if isinstance(logger, logging.Logger)
    }
    yield
    # pytest's own capture handlers come and go around this fixture: only ours is removed.
    for handler in [h for h in root.handlers if h not in handlers]:
        if isinstance(handler, logs.StderrHandler):
            root.removeHandler(handler)
    if root.level != level:
        root.setLevel(level)
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and logger.level != levels.get(name, logging.NOTSET):
            logger.setLevel(levels.get(name, logging.NOTSET))


@pytest.fixture(scope="session")
def offsetscope_config() -> config.Config:
    """The ``local`` configuration."""
    return config.load("local")


def _remove_orphans(work_dir: Path) -> None:
    # Folders of earlier runs whose pytest process is gone (a killed run keeps its folder).
    for folder in work_dir.glob("pytest-*"):
        pid = folder.name.removeprefix("pytest-")
        if pid.isdigit() and int(pid) != os.getpid() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def kafka_broker(
    offsetscope_config: config.Config, request: pytest.FixtureRequest
) -> Iterator[BrokerHandle]:
    """The run's Kafka broker (see the module docstring)."""
    cfg = dataclasses.replace(offsetscope_config.broker, name=f"pytest-{os.getpid()}")
    broker = Broker(cfg)
    if Path("/proc").is_dir():
        _remove_orphans(broker.paths.root.parent)
    handle = broker.start(fresh=True, tie_to_parent=True)
    try:
        yield handle
    finally:
        died = not handle.is_running()
        handle.stop()
        if request.session.testsfailed == 0 and not died:
            shutil.rmtree(broker.paths.root, ignore_errors=True)
    if died:
        # Tests after the crash failed with connection errors; the cause is in the broker's log.
        pytest.fail(f"the Kafka broker died during the run:\n{handle.log_tail()}")


@pytest.fixture(scope="session")
def spark(
    offsetscope_config: config.Config, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SparkSession]:
    """The run's SparkSession (see the module docstring)."""
    # Imported here so that collecting the unit tests never imports pyspark.
    from offsetscope.spark.session import build_session

    root = tmp_path_factory.mktemp("spark")
    cfg = dataclasses.replace(
        offsetscope_config,
        spark=dataclasses.replace(
            offsetscope_config.spark, master="local[2]", shuffle_partitions=2
        ),
        storage=dataclasses.replace(
            offsetscope_config.storage,
            warehouse_dir=str(root / "warehouse"),
            checkpoint_dir=str(root / "checkpoints"),
            metastore_dir=str(root / "metastore"),
        ),
    )
    with pytest.MonkeyPatch.context() as env:
        # Python workers must import this venv's pyarrow and offsetscope, not python3 on PATH.
        env.setenv("PYSPARK_PYTHON", sys.executable)
        env.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
        session = build_session(
            cfg,
            app_name="offsetscope-tests",
            extra_conf={
                "spark.ui.enabled": "false",
                "spark.ui.showConsoleProgress": "false",
                "spark.driver.host": "127.0.0.1",
                "spark.driver.bindAddress": "127.0.0.1",
                "spark.default.parallelism": "2",
                # Delta's own test settings: small snapshot state and log cache.
                "spark.databricks.delta.snapshotPartitions": "1",
                "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2",
                "spark.driver.extraJavaOptions": "-Ddelta.log.cacheSize=3",
            },
        )
        try:
            yield session
        finally:
            session.stop()
