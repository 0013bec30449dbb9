"""HDFS and YARN on loopback for the slow tests: the ``MiniHadoop`` launcher of ``make infra-jars``.

``deploy/infra/hadoop`` builds ``build/jvm/hadoop/offsetscope-hadoop-launcher-*.jar`` (Hadoop
3.4.2's mini clusters, the client version pyspark bundles): one JVM with a name node, a data
node and, unless ``yarn=False``, a resource manager (FIFO scheduler) and a node manager. Its
ready line names the name node (``hdfs://127.0.0.1:<port>``), the client configuration folder
(``HADOOP_CONF_DIR``: core-, hdfs- and yarn-site.xml), the resource manager's address and the
containers' log folder. Everything lives under the work folder and is wiped at each start.

Two settings must reach the YARN containers (which inherit the node manager's environment for
the variables in its whitelist): ``JAVA_HOME`` -- YARN appends an admin value to the
application's with ``:``, so the launcher forces none and the containers take the launcher's --
and ``SPARK_LOCAL_IP=127.0.0.1``, without which Spark in a container binds to the machine's
external interface. :func:`start` exports both to the launcher; :meth:`MiniHadoop.client_env`
gives a ``spark-submit`` the same plus ``HADOOP_CONF_DIR``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from offsetscope.verify.harness.jvm import MissingJarsError, java_executable, resolve_path
from offsetscope.verify.harness.launcher import Launcher, java_home

JARS_DIR = "build/jvm/hadoop"
LOOPBACK = "127.0.0.1"


def launcher_jar(jars_dir: str = JARS_DIR) -> Path:
    """The launcher jar (its manifest names the rest of the folder as its classpath).

    Raises:
        MissingJarsError: ``make infra-jars`` has not run.
    """
    found = sorted(resolve_path(jars_dir).glob("offsetscope-hadoop-launcher-*.jar"))
    if not found:
        raise MissingJarsError(f"no Hadoop launcher in {jars_dir}: run `make infra-jars`")
    return found[-1]


@dataclass
class MiniHadoop:
    """A running mini cluster (see the module docstring); :meth:`stop` ends it."""

    launcher: Launcher

    @property
    def namenode(self) -> str:
        """``hdfs://127.0.0.1:<port>``."""
        return str(self.launcher.ready["namenode"])

    @property
    def conf_dir(self) -> Path:
        return Path(self.launcher.ready["conf_dir"])

    @property
    def resourcemanager(self) -> str | None:
        value = self.launcher.ready.get("resourcemanager")
        return str(value) if value else None

    @property
    def container_log_dir(self) -> Path | None:
        value = self.launcher.ready.get("container_log_dir")
        return Path(value) if value else None

    @property
    def log_file(self) -> Path:
        return Path(self.launcher.ready["log_file"])

    def uri(self, path: str) -> str:
        """``hdfs://127.0.0.1:<port>/<path>``."""
        return f"{self.namenode}/{path.lstrip('/')}"

    def client_env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """An environment for Hadoop clients of this cluster (spark-submit, a local session)."""
        env = dict(os.environ if base is None else base)
        env["HADOOP_CONF_DIR"] = str(self.conf_dir)
        env["SPARK_LOCAL_IP"] = LOOPBACK
        env["JAVA_HOME"] = java_home(java_executable())
        return env

    def stop(self) -> int | None:
        return self.launcher.stop()


def start(
    work: Path,
    *,
    yarn: bool = True,
    heap: str = "1g",
    nm_memory_mb: int = 8192,
    timeout_s: float = 300.0,
    jars_dir: str = JARS_DIR,
) -> MiniHadoop:
    """Start HDFS (and YARN) under ``work`` and wait until ready.

    Raises:
        MissingJarsError: ``make infra-jars`` has not run.
        LauncherError: the cluster did not come up; the message has the launcher's error.
    """
    java = java_executable()
    command = [
        java,
        f"-Xmx{heap}",
        "-jar",
        str(launcher_jar(jars_dir)),
        "-work",
        str(work),
        "-host",
        LOOPBACK,
        "-nm-memory-mb",
        str(nm_memory_mb),
        "-exit-on-stdin-close",
    ]
    if not yarn:
        command.append("-no-yarn")
    env = {**os.environ, "JAVA_HOME": java_home(java), "SPARK_LOCAL_IP": LOOPBACK}
    launcher = Launcher("minihadoop", command, work, env=env, timeout_s=timeout_s)
    return MiniHadoop(launcher.start())
