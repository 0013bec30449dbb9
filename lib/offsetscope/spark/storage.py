"""The storage locations of ``conf/``, checked for access when a job starts.

A job that cannot write its checkpoint or its tables must fail before its first micro-batch,
naming the key, and not half-way through a batch with a Hadoop stack trace. For every remote
location (:mod:`offsetscope.paths`; local ones are created and tightened by
:func:`offsetscope.secrets.files.prepare_storage`):

* ``storage.warehouse_dir``, ``storage.checkpoint_dir``: through the session's Hadoop file
  system (the one Spark and Delta write with, with its credentials and ``fs.*`` settings),
  ``mkdirs`` and a probe file created and deleted -- ``mkdirs`` alone succeeds on an existing
  folder without write access;
* ``sources.segments.log_dir`` and ``data_log_dir`` (segment source): listed from Python,
  as the source's Python workers read them.

Hadoop fails fast on each failure the checks are for: a refused connection to a name node, a
bucket that does not exist (S3A's ``UnknownStoreException``), a write without permission
(``AccessControlException`` / S3 403).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

from pyspark.sql import SparkSession

from offsetscope import paths
from offsetscope.config import Config, cluster_key_path, clusters
from offsetscope.paths import StorageAccessError

__all__ = [
    "StorageAccessError",
    "check_storage",
    "check_writable",
    "locations_to_check",
    "qualified",
]

PROBE_PREFIX = ".offsetscope-access-"


def locations_to_check(cfg: Config) -> Iterator[tuple[str, str, bool]]:
    """(key, value, written) of every location the configured jobs use."""
    yield "storage.warehouse_dir", cfg.storage.warehouse_dir, True
    yield "storage.checkpoint_dir", cfg.storage.checkpoint_dir, True
    for name, cluster in clusters(cfg).items():
        if cluster.kind == "segments":
            key = cluster_key_path(cfg, name)
            s = cluster.segments
            yield f"{key}.segments.log_dir", s.log_dir, False
            if s.data_log_dir and cfg.pipeline.sample_end_offsets:
                yield f"{key}.segments.data_log_dir", s.data_log_dir, False


def _java_text(exc: BaseException) -> str:
    """The Java exception's ``toString()`` and its causes' (a Py4J error's own text starts with
    "An error occurred while calling ..."), one per line."""
    java = getattr(exc, "java_exception", None)
    if java is None:
        return f"{type(exc).__name__}: {exc}"
    lines: list[str] = []
    while java is not None and len(lines) < 8:
        lines.append(str(java.toString()))
        java = java.getCause()
    return "\n".join(lines)


def check_writable(spark: SparkSession, key_path: str, value: str) -> paths.Location:
    """Create the folder if needed, and a probe file in it, through the session's Hadoop file
    system; the probe is deleted again.

    Raises:
        StorageAccessError: naming ``key_path``, the location and the file system's error.
    """
    location = paths.resolve(value)
    jvm = spark.sparkContext._jvm
    assert jvm is not None, "a running session has a JVM gateway"
    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()
    folder = jvm.org.apache.hadoop.fs.Path(str(location))
    try:
        fs = folder.getFileSystem(hadoop_conf)
        fs.mkdirs(folder)
        probe = jvm.org.apache.hadoop.fs.Path(folder, f"{PROBE_PREFIX}{uuid.uuid4().hex}")
        fs.create(probe, True).close()
        fs.delete(probe, False)
    # Py4J raises Py4JJavaError for any Java exception; all of them mean "not usable".
    except Exception as exc:  # noqa: BLE001
        raise StorageAccessError(key_path, str(location), "write there", _java_text(exc)) from None
    return location


def qualified(spark: SparkSession, value: str) -> str:
    """``value`` with the authority of its file system filled in, as Hadoop resolves it:
    ``hdfs:///x`` becomes ``hdfs://<fs.defaultFS's name node>/x``.

    A streaming query's checkpoint location needs it: Spark opens the checkpoint through
    Hadoop's ``FileContext`` before it qualifies the path, and ``FileContext`` refuses an
    ``hdfs`` URI without an authority ("Uri without authority") where ``FileSystem`` -- Delta's
    tables -- takes the default file system's. Local paths and URIs that name their authority
    (or whose file system has none, ``dbfs:/x``) come back as they are.

    Raises:
        StorageAccessError: the file system cannot be reached to qualify the path.
    """
    location = paths.resolve(value)
    parts = urlsplit(str(location))
    if location.is_local or parts.netloc or location.scheme == "dbfs":
        return str(location)
    jvm = spark.sparkContext._jvm
    assert jvm is not None, "a running session has a JVM gateway"
    path = jvm.org.apache.hadoop.fs.Path(str(location))
    try:
        fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        return str(fs.makeQualified(path).toString())
    # Py4J raises Py4JJavaError for any Java exception; all of them mean "not usable".
    except Exception as exc:  # noqa: BLE001
        raise StorageAccessError(
            "storage.checkpoint_dir", str(location), "resolve its file system", _java_text(exc)
        ) from None


def check_reachable(spark: SparkSession, key_path: str, value: str) -> paths.Location:
    """Check that a folder exists and can be read, through the session's Hadoop file system.

    Raises:
        StorageAccessError: naming ``key_path``, the location and the file system's error.
    """
    location = paths.resolve(value)
    jvm = spark.sparkContext._jvm
    assert jvm is not None, "a running session has a JVM gateway"
    folder = jvm.org.apache.hadoop.fs.Path(str(location))
    try:
        fs = folder.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        fs.listStatus(folder)
    # Py4J raises Py4JJavaError for any Java exception; all of them mean "not usable".
    except Exception as exc:  # noqa: BLE001
        raise StorageAccessError(key_path, str(location), "read it", _java_text(exc)) from None
    return location


def has_entries(spark: SparkSession, location: str) -> bool:
    """Whether a folder exists and holds anything, through the session's Hadoop file system
    (a checkpoint may be remote)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None, "a running session has a JVM gateway"
    folder = jvm.org.apache.hadoop.fs.Path(location)
    fs = folder.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return bool(fs.exists(folder)) and len(fs.listStatus(folder)) > 0


def check_storage(spark: SparkSession, cfg: Config, *, write: bool = True) -> None:
    """Check every remote location of ``cfg`` (see the module docstring); with ``write`` false
    (a command that only reads the tables, ``offsetscope sql``) the table and checkpoint
    locations are only listed, so a reader without write access passes.

    Raises:
        StorageAccessError: the first location that fails, with its key.
    """
    # The log directory is read from Python (pyarrow) as the segment source reads it: with the
    # S3A endpoint, region and path style of [spark] conf, not the file system's defaults.
    paths.configure(paths.python_fs_options(cfg.spark.conf))
    for key, value, written in locations_to_check(cfg):
        location = paths.resolve(value)
        if location.is_local or (not written and not write):
            continue  # a reader of the tables never opens the log directory
        if written and write:
            check_writable(spark, key, value)
        elif written:
            check_reachable(spark, key, value)
        else:
            paths.check_readable(key, value)
