"""Building the SparkSession: Delta, Spark's Kafka source, a Hive metastore, all from ``conf/``.

The JVM side comes from local jars only: ``make install`` resolves ``deploy/jvm/spark/pom.xml``
into ``spark.jars_dir`` (``build/jvm/spark``: delta-spark_4.1_2.13, spark-sql-kafka-0-10_2.13
and what they need beyond pyspark's own jars), and they are passed as ``spark.jars``. Nothing
is resolved through Ivy (``spark.jars.packages``) at session start, so a session starts the same
with or without network. An empty ``jars_dir`` means the platform provides Delta and the Kafka
source itself (Databricks).

Settings this module always applies (the platform facts behind them: ``docs/design.md``, "Real
components"):

* Delta: ``spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension`` and
  ``spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog``.
* Catalog: Hive support with an embedded Derby metastore in ``storage.metastore_dir``
  (``metastore_db/`` and ``derby.log``), tables under ``storage.warehouse_dir``. Embedded Derby
  admits one JVM at a time, so each concurrent process needs its own ``metastore_dir``.
* ``spark.sql.streaming.kafka.useDeprecatedOffsetFetching=true``: since Spark 3.4 the Kafka
  source lists partitions with an AdminClient and drops every topic the broker marks internal
  (``ConsumerStrategy.retrieveAllPartitions`` filters ``isInternal``), for ``assign``,
  ``subscribe`` and ``subscribePattern`` alike. ``__consumer_offsets`` and
  ``__transaction_state`` are internal, so without this setting a query on them finds no
  partitions and reads nothing, without an error. The consumer-based offset reader this selects
  asks the broker for the subscribed topic's partitions directly.
* ``spark.sql.session.timeZone=UTC``: Kafka timestamps are UTC epoch milliseconds, and tables
  must not depend on the machine's zone.

Then ``spark.conf`` from the configuration, then ``extra_conf`` (the caller's last word).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

from offsetscope import redaction
from offsetscope.config import Config, project_root
from offsetscope.secrets import files as secrets_files
from offsetscope.secrets import kafka as secrets_kafka

# The jars that must be in ``spark.jars_dir`` for the features above to exist at all.
REQUIRED_JARS = ("delta-spark_", "spark-sql-kafka-0-10_")

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
KAFKA_OFFSET_FETCHING = "spark.sql.streaming.kafka.useDeprecatedOffsetFetching"
_JAVA_OPTIONS = "spark.driver.extraJavaOptions"


class SparkJarsMissingError(FileNotFoundError):
    """``spark.jars_dir`` lacks Delta or the Kafka source: ``make install`` has not run."""


def _resolve(path: str) -> Path:
    # Relative paths in conf/ are relative to the project root (the folder holding conf/).
    candidate = Path(path).expanduser()
    return candidate if candidate.is_absolute() else project_root() / path


def local_jars(jars_dir: str) -> list[Path]:
    """The jars to pass as ``spark.jars`` (none when ``jars_dir`` is empty).

    Raises:
        SparkJarsMissingError: the folder is missing or lacks Delta or the Kafka source.
    """
    if not jars_dir:
        return []
    folder = _resolve(jars_dir)
    jars = sorted(folder.glob("*.jar"))
    for prefix in REQUIRED_JARS:
        if not any(jar.name.startswith(prefix) for jar in jars):
            raise SparkJarsMissingError(
                f"no {prefix}*.jar in {folder}: run `make install` (target jvm-jars)"
            )
    return jars


def session_conf(
    cfg: Config, *, app_name: str | None = None, extra_conf: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Every setting :func:`build_session` applies, in order (later keys win).

    Args:
        cfg: the loaded configuration (``spark`` and ``storage`` sections are used).
        app_name: overrides ``spark.app_name``.
        extra_conf: settings applied last.

    Returns:
        Spark configuration keys and values. ``spark.driver.extraJavaOptions`` from the
        configuration or ``extra_conf`` is appended to this module's own JVM options rather
        than replacing them.

    Raises:
        SparkJarsMissingError: see :func:`local_jars`.
    """
    metastore = _resolve(cfg.storage.metastore_dir)
    warehouse = _resolve(cfg.storage.warehouse_dir)
    conf: dict[str, str] = {
        "spark.master": cfg.spark.master,
        "spark.app.name": app_name or cfg.spark.app_name,
        "spark.sql.extensions": DELTA_EXTENSION,
        "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(warehouse),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={metastore / 'metastore_db'};create=true"
        ),
        KAFKA_OFFSET_FETCHING: "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": str(cfg.spark.shuffle_partitions),
        # derby.log is written to derby.system.home, else into the working directory.
        _JAVA_OPTIONS: f"-Dderby.system.home={metastore}",
        # Kafka credentials out of plans, the UI and logs; [storage] umask on what Spark writes.
        **secrets_kafka.spark_redaction_conf(),
        **secrets_files.storage_spark_conf(cfg.storage),
    }
    jars = local_jars(cfg.spark.jars_dir)
    if jars:
        conf["spark.jars"] = ",".join(str(jar) for jar in jars)
    for overrides in (cfg.spark.conf, extra_conf or {}):
        for key, value in overrides.items():
            if key == _JAVA_OPTIONS:
                conf[key] = f"{conf[key]} {value}"
            else:
                conf[key] = value
    return conf


def build_session(
    cfg: Config, *, app_name: str | None = None, extra_conf: Mapping[str, str] | None = None
) -> SparkSession:
    """Start (or join) the SparkSession described by ``cfg``; see the module docstring.

    Never called at import time: entry points and the test fixture call it and pass the
    session on. JVM-level settings (``spark.jars``, the metastore, driver options) take effect
    only if this starts the JVM; a session already running in the process keeps its own.

    Args:
        cfg: the loaded configuration.
        app_name: overrides ``spark.app_name``.
        extra_conf: settings applied after everything else (tests: UI off, small partitions).

    Returns:
        The session.

    Raises:
        SparkJarsMissingError: the local jar folder is missing or incomplete.
    """
    conf = session_conf(cfg, app_name=app_name, extra_conf=extra_conf)
    if "spark.pyspark.python" not in conf:
        # Python workers (UDFs, mapInArrow, Python data sources) must run this interpreter --
        # the environment where offsetscope and pyarrow live -- not whatever `python3` is first
        # on PATH; PySpark reads the choice from the environment of the driver process.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    _resolve(cfg.storage.metastore_dir).mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.enableHiveSupport().getOrCreate()


def build_job_session(
    cfg: Config, *, app_name: str | None = None, extra_conf: Mapping[str, str] | None = None
) -> SparkSession:
    """What a job process does before its first Spark call, then :func:`build_session`.

    Python's log handlers get the redacting filter (secrets registered when references are
    resolved never reach a log line), the process umask becomes ``[storage] umask`` -- the JVM
    inherits it at launch, so it must come first -- and the warehouse, checkpoint and metastore
    folders are created with no wider access than it allows (``docs/security.md``).
    """
    redaction.install()
    secrets_files.apply_umask(cfg.storage)
    secrets_files.prepare_storage(cfg.storage)
    return build_session(cfg, app_name=app_name, extra_conf=extra_conf)
