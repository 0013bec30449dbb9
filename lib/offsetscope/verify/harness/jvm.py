"""Locating the JVM, the project's resolved jar folders and the Log4j2 configurations.

``make install`` (``mk/jvm.mk``) resolves ``deploy/jvm/pom.xml`` into ``build/jvm/<module>/``;
each folder is one complete classpath, passed to ``java -cp '<folder>/*'`` (the JVM expands the
wildcard itself). Relative paths in ``conf/`` are relative to the project root, the folder that
holds ``conf/``, so a harness started from any working directory finds the same files.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from offsetscope import config, paths


class MissingJarsError(FileNotFoundError):
    """A resolved jar folder is missing or incomplete: ``make install`` has not run."""


class JavaNotFoundError(FileNotFoundError):
    """No ``java`` executable in ``$JAVA_HOME/bin`` or on ``PATH``."""


# A Maven file name is <artifactId>-<version>[-<classifier>].jar and artifact ids may contain
# digits and dashes (spark-sql-kafka-0-10_2.13), so the version is taken to start at the *last*
# dash followed by "<digits>.<digit>".
_VERSION_START = re.compile(r"-(?=\d+\.\d)")


def project_root() -> Path:
    """The folder relative configuration paths are resolved against (parent of ``conf/``)."""
    return config.project_root()


def resolve_path(path: str | Path) -> Path:
    """Return ``path`` as an absolute local path, relative ones taken from :func:`project_root`
    (:func:`offsetscope.paths.local_path`: the harness's folders are local)."""
    return paths.local_path(path)


def broker_log4j_config() -> Path:
    """Log4j2 configuration of the harness broker (everything into ``server.log``)."""
    return project_root() / "deploy" / "kafka" / "log4j2.properties"


def tools_log4j_config() -> Path:
    """Log4j2 configuration of Kafka's CLI tools (warnings to stderr, stdout left clean)."""
    return project_root() / "deploy" / "kafka" / "log4j2-tools.properties"


def java_executable() -> str:
    """The ``java`` to run: ``$JAVA_HOME/bin/java`` if set, else the one on ``PATH``.

    Raises:
        JavaNotFoundError: neither exists.
    """
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file():
            return str(candidate)
    found = shutil.which("java")
    if found is None:
        raise JavaNotFoundError("no java executable: install Java 17+ or set JAVA_HOME")
    return found


def artifact_name(jar: str | Path) -> str:
    """The Maven artifact id in a jar file name: ``kafka-clients-3.9.1.jar`` -> ``kafka-clients``."""
    stem = Path(jar).name.removesuffix(".jar")
    starts = [m.start() for m in _VERSION_START.finditer(stem)]
    return stem[: starts[-1]] if starts else stem


def artifact_version(jars_dir: Path, artifact: str) -> str:
    """The version of ``artifact`` in a resolved folder (``kafka-tools`` -> ``4.3.1``).

    Raises:
        MissingJarsError: the folder holds no jar of that artifact.
    """
    for jar in sorted(jars_dir.glob(f"{artifact}-*.jar")):
        if artifact_name(jar) == artifact:
            return jar.name.removesuffix(".jar")[len(artifact) + 1 :]
    raise MissingJarsError(f"no {artifact} jar in {jars_dir}: run `make install`")


def classpath(jars_dir: Path, *, required: tuple[str, ...] = ()) -> str:
    """The ``-cp`` value for a resolved folder, after checking the folder is usable.

    Args:
        jars_dir: absolute path of a ``build/jvm/<module>`` folder.
        required: artifact ids that must be present (a half-copied folder fails here, not
            later with a ClassNotFoundException).

    Raises:
        MissingJarsError: the folder is missing, empty, or lacks a required artifact.
    """
    if not jars_dir.is_dir() or not any(jars_dir.glob("*.jar")):
        raise MissingJarsError(f"no jars in {jars_dir}: run `make install` (target jvm-jars)")
    for artifact in required:
        artifact_version(jars_dir, artifact)
    return str(jars_dir / "*")
