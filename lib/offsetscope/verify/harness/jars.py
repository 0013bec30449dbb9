"""Classpath hygiene for the resolved jar folders: no library twice, nothing pyspark already has.

Two copies of one library on a JVM classpath (two versions, or the same classes in two
artifacts such as ``commons-logging`` next to ``jcl-over-slf4j``) are resolved by jar order,
which differs between machines and launch modes, and fail late with ``NoSuchMethodError`` or
``LinkageError``. So after every resolution ``mk/jvm.mk`` runs::

    python -m offsetscope.verify.harness.jars check

which fails (exit 1, one line per conflict) when

* ``build/jvm/spark`` shares an artifact id or any ``.class`` entry with pyspark's own
  ``site-packages/pyspark/jars`` (Spark puts both on one classpath), or
* any ``build/jvm/<module>`` folder holds one artifact in two versions, or one class in two jars.

Classes are compared by their entry names in the jars' central directories, so the check reads
no class bytes. ``module-info.class`` and multi-release copies under ``META-INF/versions/`` are
not classes of their own and are skipped, and so is Spark's empty
``org.apache.spark.unused.UnusedStubClass``, which Spark's build puts into every module jar.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import zipfile
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from offsetscope import config as config_mod
from offsetscope.verify.harness.jvm import artifact_name, resolve_path

# Identical, empty classes that every jar of one project carries on purpose.
_SHARED_BY_DESIGN = frozenset({"org/apache/spark/unused/UnusedStubClass.class"})


@dataclass(frozen=True, slots=True)
class JarConflict:
    """Two jars that would put the same artifact or the same classes on one classpath."""

    kind: str  # "artifact" (same artifact id) or "classes" (same .class entries)
    jar: str
    other: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind} conflict: {self.jar} <-> {self.other}: {self.detail}"


def class_entries(jar: Path) -> frozenset[str]:
    """The ``.class`` entry names of one jar (without ``module-info`` and versioned copies)."""
    with zipfile.ZipFile(jar) as archive:
        return frozenset(
            name
            for name in archive.namelist()
            if name.endswith(".class")
            and not name.startswith("META-INF/")
            and not name.endswith("module-info.class")
            and name not in _SHARED_BY_DESIGN
        )


def pyspark_jars_dir() -> Path:
    """The folder of jars the installed pyspark ships (``site-packages/pyspark/jars``).

    Raises:
        FileNotFoundError: pyspark is not installed.
    """
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("pyspark is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "jars"


def _jars(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.jar") if p.is_file())


def _class_conflicts(
    ours: Sequence[Path], theirs: Sequence[Path], *, same_set: bool
) -> Iterable[JarConflict]:
    owner: dict[str, Path] = {}
    for jar in theirs:
        for name in class_entries(jar):
            owner.setdefault(name, jar)
    clashes: dict[tuple[Path, Path], list[str]] = defaultdict(list)
    for jar in ours:
        entries = class_entries(jar)
        for name in entries:
            other = owner.get(name)
            if other is not None and other != jar:
                clashes[(jar, other)].append(name)
        if same_set:
            # Within one folder each jar becomes an owner for the jars after it.
            for name in entries:
                owner.setdefault(name, jar)
    for (jar, other), names in sorted(clashes.items()):
        names.sort()
        yield JarConflict(
            "classes", jar.name, other.name, f"{len(names)} shared classes, e.g. {names[0]}"
        )


def folder_conflicts(folder: Path) -> list[JarConflict]:
    """Conflicts inside one folder: an artifact in two versions, or a class in two jars."""
    jars = _jars(folder)
    by_artifact: dict[str, list[Path]] = defaultdict(list)
    for jar in jars:
        by_artifact[artifact_name(jar)].append(jar)
    found = [
        JarConflict("artifact", group[0].name, other.name, f"artifact {artifact}")
        for artifact, group in sorted(by_artifact.items())
        for other in group[1:]
    ]
    found.extend(_class_conflicts(jars, jars, same_set=True))
    return found


def conflicts_with(extra: Path, base: Path) -> list[JarConflict]:
    """Conflicts between jars added from ``extra`` and a base classpath folder ``base``."""
    ours, theirs = _jars(extra), _jars(base)
    base_artifacts = {artifact_name(jar): jar for jar in theirs}
    found = [
        JarConflict("artifact", jar.name, base_artifacts[name].name, f"artifact {name}")
        for jar in ours
        if (name := artifact_name(jar)) in base_artifacts
    ]
    found.extend(_class_conflicts(ours, theirs, same_set=False))
    return found


def check(cfg: config_mod.Config) -> list[JarConflict]:
    """Every conflict in the configured jar folders (empty when the classpaths are clean).

    Raises:
        FileNotFoundError: a configured folder does not exist (``make install`` has not run).
    """
    folders = [
        resolve_path(cfg.broker.jars_dir),
        resolve_path(cfg.broker.tools_jars_dir),
    ]
    spark_dir = resolve_path(cfg.spark.jars_dir) if cfg.spark.jars_dir else None
    if spark_dir is not None:
        folders.append(spark_dir)
    for folder in folders:
        if not folder.is_dir():
            raise FileNotFoundError(f"{folder} does not exist: run `make install`")
    found: list[JarConflict] = []
    for folder in folders:
        found.extend(folder_conflicts(folder))
    if spark_dir is not None:
        found.extend(conflicts_with(spark_dir, pyspark_jars_dir()))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m offsetscope.verify.harness.jars check [--env ENV]``: exit 1 on any conflict."""
    parser = argparse.ArgumentParser(prog="python -m offsetscope.verify.harness.jars")
    parser.add_argument("command", choices=["check"])
    parser.add_argument("--env", default="local", help="configuration environment (conf/<env>)")
    args = parser.parse_args(argv)
    cfg = config_mod.load(args.env)
    found = check(cfg)
    for conflict in found:
        print(conflict, file=sys.stderr)
    if found:
        print(f"jars: {len(found)} classpath conflicts", file=sys.stderr)
        return 1
    print("jars: no classpath conflicts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
