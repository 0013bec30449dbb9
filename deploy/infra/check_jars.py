"""Classpath check for the infrastructure jar folders (run by `make infra-jars`, mk/infra.mk).

    python deploy/infra/check_jars.py [BUILD_JVM_DIR]

* build/jvm/s3a goes on Spark's classpath next to pyspark's own jars and build/jvm/spark, so it
  must share no artifact and no class with either, and hold no library twice: any conflict
  fails (exit 1), as `python -m offsetscope.harness.jars check` does for build/jvm/spark.
* build/jvm/hadoop, build/jvm/kdc and build/jvm/s3proxy are each the whole classpath of a JVM
  of their own: a class found in two of their jars fails too, except the artifact-name
  coincidences listed in _KNOWN (same artifact id, different group and packages).

The comparison itself is the project's own (offsetscope.verify.harness.jars on main after the
restructure, offsetscope.harness.jars before it).
"""

from __future__ import annotations

import sys
from pathlib import Path

try:  # main moved the module to offsetscope.verify.harness (the layout after the restructure)
    from offsetscope.verify.harness.jars import (
        JarConflict,
        conflicts_with,
        folder_conflicts,
        pyspark_jars_dir,
    )
except ModuleNotFoundError:  # this branch's base: offsetscope.harness
    from offsetscope.harness.jars import (  # type: ignore[no-redef]
        JarConflict,
        conflicts_with,
        folder_conflicts,
        pyspark_jars_dir,
    )

SPARK_SIDE = "s3a"
OWN_JVM = ("hadoop", "kdc", "s3proxy")
# S3Proxy's closure: Jackson 2 (com.fasterxml) next to Jackson 3 (tools.jackson), and the AWS
# SDK's `annotations` next to Android's: same artifact ids, no shared class.
_KNOWN = {
    ("s3proxy", "artifact", "jackson-core"),
    ("s3proxy", "artifact", "jackson-databind"),
    ("s3proxy", "artifact", "jackson-dataformat-xml"),
    ("s3proxy", "artifact", "annotations"),
}


def _known(module: str, conflict: JarConflict) -> bool:
    artifact = conflict.detail.removeprefix("artifact ")
    return (module, conflict.kind, artifact) in _KNOWN


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path("build/jvm")
    s3a = root / SPARK_SIDE
    found = [f"{SPARK_SIDE}: {c}" for c in folder_conflicts(s3a)]
    found += [f"{SPARK_SIDE} vs pyspark: {c}" for c in conflicts_with(s3a, pyspark_jars_dir())]
    spark = root / "spark"
    if spark.is_dir():
        found += [f"{SPARK_SIDE} vs build/jvm/spark: {c}" for c in conflicts_with(s3a, spark)]
    for module in OWN_JVM:
        found += [
            f"{module}: {c}" for c in folder_conflicts(root / module) if not _known(module, c)
        ]
    for line in found:
        print(line, file=sys.stderr)
    if found:
        print(f"infra jars: {len(found)} classpath conflicts", file=sys.stderr)
        return 1
    print("infra jars: no classpath conflicts")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
