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
* Catalog, by ``storage.metastore``: ``derby`` (the local default) -- Hive support with an
  embedded Derby metastore in ``storage.metastore_dir`` (``metastore_db/`` and ``derby.log``;
  embedded Derby admits one JVM at a time, so each concurrent process needs its own
  ``metastore_dir``); ``hive`` -- Hive support with the cluster's metastore
  (``hive.metastore.uris`` from ``storage.metastore_uri``, or the ``hive-site.xml`` the cluster
  puts on the classpath), no Derby URL; ``unity`` -- the platform's own catalog, nothing set.
  Tables live under ``storage.warehouse_dir`` (a local path or a URI: :mod:`offsetscope.paths`).
* Kerberos for Kafka (``sources.kafka.security.kerberos_krb5_conf``):
  ``-Djava.security.krb5.conf`` in the driver's and the executors' JVM options.
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
from collections.abc import Mapping, Sequence
from pathlib import Path

from pyspark.sql import SparkSession

from offsetscope import paths, redaction
from offsetscope.config import Config
from offsetscope.secrets import files as secrets_files
from offsetscope.secrets import kafka as secrets_kafka
from offsetscope.spark import storage

# The jars that must be in ``spark.jars_dir`` for the features above to exist at all.
REQUIRED_JARS = ("delta-spark_", "spark-sql-kafka-0-10_")

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
KAFKA_OFFSET_FETCHING = "spark.sql.streaming.kafka.useDeprecatedOffsetFetching"
_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
_EXECUTOR_JAVA_OPTIONS = "spark.executor.extraJavaOptions"


class SparkJarsMissingError(FileNotFoundError):
    """``spark.jars_dir`` lacks Delta or the Kafka source: ``make install`` has not run."""


def local_jars(jars_dir: str, extra_dirs: Sequence[str] = ()) -> list[Path]:
    """The jars to pass as ``spark.jars``: ``jars_dir``'s (none when it is empty), then those
    of each of ``extra_dirs`` (``[spark] extra_jars_dirs``).

    Raises:
        SparkJarsMissingError: ``jars_dir`` is missing or lacks Delta or the Kafka source, or an
            extra folder holds no jar.
    """
    jars: list[Path] = []
    if jars_dir:
        folder = paths.local_path(jars_dir, "spark.jars_dir")
        jars = sorted(folder.glob("*.jar"))
        for prefix in REQUIRED_JARS:
            if not any(jar.name.startswith(prefix) for jar in jars):
                raise SparkJarsMissingError(
                    f"no {prefix}*.jar in {folder}: run `make install` (target jvm-jars)"
                )
    for i, extra in enumerate(extra_dirs):
        folder = paths.local_path(extra, f"spark.extra_jars_dirs[{i}]")
        found = sorted(folder.glob("*.jar"))
        if not found:
            raise SparkJarsMissingError(
                f"spark.extra_jars_dirs[{i}]: no jar in {folder}"
                " (build/jvm/s3a comes from `make infra-jars`)"
            )
        jars += found
    return jars


def catalog_conf(cfg: Config) -> dict[str, str]:
    """The catalog settings of ``storage.metastore`` (see the module docstring)."""
    st = cfg.storage
    conf = {"spark.sql.warehouse.dir": paths.resolve_path(st.warehouse_dir)}
    if st.metastore == "unity":
        return {}
    conf["spark.sql.catalogImplementation"] = "hive"
    if st.metastore == "derby":
        metastore = paths.local_path(st.metastore_dir, "storage.metastore_dir")
        conf["spark.hadoop.javax.jdo.option.ConnectionURL"] = (
            f"jdbc:derby:;databaseName={metastore / 'metastore_db'};create=true"
        )
    elif st.metastore_uri:
        conf["spark.hadoop.hive.metastore.uris"] = st.metastore_uri
    return conf


def java_options(cfg: Config) -> str:
    """System properties the driver JVM starts with (executors get the Kerberos one too)."""
    options = []
    if cfg.storage.metastore == "derby":
        # derby.log is written to derby.system.home, else into the working directory.
        metastore = paths.local_path(cfg.storage.metastore_dir, "storage.metastore_dir")
        options.append(f"-Dderby.system.home={metastore}")
    options += kerberos_java_options(cfg)
    return " ".join(options)


def kerberos_java_options(cfg: Config) -> list[str]:
    """``-Djava.security.krb5.conf=...`` when ``kerberos_krb5_conf`` is set. Kept as written:
    a relative path is the file spark-submit's ``--files`` put in each container's folder."""
    krb5 = cfg.sources.kafka.security.kerberos_krb5_conf
    return [f"-Djava.security.krb5.conf={krb5}"] if krb5 else []


def session_conf(
    cfg: Config, *, app_name: str | None = None, extra_conf: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Every setting :func:`build_session` applies, in order (later keys win).

    Args:
        cfg: the loaded configuration (``spark`` and ``storage`` sections are used).
        app_name: overrides ``spark.app_name``.
        extra_conf: settings applied last.

    Returns:
        Spark configuration keys and values. ``spark.driver.extraJavaOptions`` and
        ``spark.executor.extraJavaOptions`` from the configuration or ``extra_conf`` are
        appended to this module's own JVM options rather than replacing them.

    Raises:
        SparkJarsMissingError: see :func:`local_jars`.
    """
    conf: dict[str, str] = {
        "spark.master": cfg.spark.master,
        "spark.app.name": app_name or cfg.spark.app_name,
        "spark.sql.extensions": DELTA_EXTENSION,
        "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
        **catalog_conf(cfg),
        KAFKA_OFFSET_FETCHING: "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": str(cfg.spark.shuffle_partitions),
        # Kafka credentials out of plans, the UI and logs; [storage] umask on what Spark writes.
        **secrets_kafka.spark_redaction_conf(),
        **secrets_files.storage_spark_conf(cfg.storage),
    }
    driver_options = java_options(cfg)
    if driver_options:
        conf[_JAVA_OPTIONS] = driver_options
    krb5 = kerberos_java_options(cfg)
    if krb5:
        conf[_EXECUTOR_JAVA_OPTIONS] = " ".join(krb5)
    jars = local_jars(cfg.spark.jars_dir, cfg.spark.extra_jars_dirs)
    if jars:
        conf["spark.jars"] = ",".join(str(jar) for jar in jars)
    for overrides in (cfg.spark.conf, extra_conf or {}):
        for key, value in overrides.items():
            if key in (_JAVA_OPTIONS, _EXECUTOR_JAVA_OPTIONS) and key in conf:
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
    if cfg.storage.metastore == "derby":
        paths.local_path(cfg.storage.metastore_dir).mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    if cfg.storage.metastore != "unity":
        builder = builder.enableHiveSupport()
    return builder.getOrCreate()


def build_job_session(
    cfg: Config,
    *,
    app_name: str | None = None,
    extra_conf: Mapping[str, str] | None = None,
    write: bool = True,
) -> SparkSession:
    """What a job process does before its first Spark call, then :func:`build_session`, then
    the storage check.

    Python's log handlers get the redacting filter (secrets registered when references are
    resolved never reach a log line), the process umask becomes ``[storage] umask`` -- the JVM
    inherits it at launch, so it must come first -- and the local warehouse, checkpoint and
    metastore folders are created with no wider access than it allows (``docs/security.md``).
    Once the session runs, every remote location of ``conf/`` is checked for access
    (:func:`offsetscope.spark.storage.check_storage`): a job that cannot write its tables fails
    here, naming the key, never half-way through a batch. ``write=False`` (a command that only
    reads the tables) checks that they can be read instead.

    Raises:
        StorageAccessError: a location cannot be reached, read or written.
    """
    redaction.install()
    secrets_files.apply_umask(cfg.storage)
    secrets_files.prepare_storage(cfg.storage)
    spark = build_session(cfg, app_name=app_name, extra_conf=extra_conf)
    storage.check_storage(spark, cfg, write=write)
    return spark
