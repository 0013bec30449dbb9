"""The jars ``make install`` resolved never put a library on a classpath twice.

Needs the resolved ``build/jvm`` folders but no JVM: the check reads jar directories only.
"""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from offsetscope import config
from offsetscope.verify.harness import jars
from offsetscope.verify.harness.jvm import artifact_name, artifact_version, resolve_path

pytestmark = pytest.mark.spark


def _jar(path: Path, *classes: str) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
        for name in classes:
            archive.writestr(name, b"\xca\xfe\xba\xbe")
    return path


def test_resolved_jar_folders_are_conflict_free(offsetscope_config: config.Config) -> None:
    assert jars.check(offsetscope_config) == []


def test_spark_folder_has_delta_and_the_kafka_source_at_the_pinned_versions(
    offsetscope_config: config.Config,
) -> None:
    spark_dir = resolve_path(offsetscope_config.spark.jars_dir)
    assert artifact_version(spark_dir, "delta-spark_4.1_2.13") == "4.4.0"
    assert artifact_version(spark_dir, "spark-sql-kafka-0-10_2.13") == "4.1.3"
    # Nothing of Spark, Scala, Hadoop or Jackson came along.
    names = {artifact_name(jar) for jar in spark_dir.glob("*.jar")}
    assert not {n for n in names if n.startswith(("spark-core", "scala-", "hadoop-", "jackson-"))}


def test_check_flags_a_jar_pyspark_already_ships(
    offsetscope_config: config.Config, tmp_path: Path
) -> None:
    extra = tmp_path / "spark"
    shutil.copytree(resolve_path(offsetscope_config.spark.jars_dir), extra)
    [shipped] = sorted(jars.pyspark_jars_dir().glob("slf4j-api-*.jar"))
    shutil.copy(shipped, extra / "slf4j-api-2.0.9.jar")  # "another version" of the same library

    found = jars.conflicts_with(extra, jars.pyspark_jars_dir())

    assert {(c.kind, c.jar, c.other) for c in found} == {
        ("artifact", "slf4j-api-2.0.9.jar", shipped.name),
        ("classes", "slf4j-api-2.0.9.jar", shipped.name),
    }


def test_check_flags_two_versions_and_shared_classes_in_one_folder(tmp_path: Path) -> None:
    _jar(tmp_path / "lib-a-1.0.jar", "a/A.class", "shared/S.class")
    _jar(tmp_path / "lib-a-1.1.jar", "a/A2.class")
    _jar(tmp_path / "lib-b-2.0.jar", "b/B.class", "shared/S.class", "module-info.class")
    _jar(tmp_path / "lib-c-3.0.jar", "c/C.class", "META-INF/versions/11/module-info.class")

    found = jars.folder_conflicts(tmp_path)

    assert {(c.kind, c.jar, c.other, c.detail) for c in found} == {
        ("artifact", "lib-a-1.0.jar", "lib-a-1.1.jar", "artifact lib-a"),
        ("classes", "lib-b-2.0.jar", "lib-a-1.0.jar", "1 shared classes, e.g. shared/S.class"),
    }


@pytest.mark.parametrize(
    ("file_name", "artifact"),
    [
        ("spark-sql-kafka-0-10_2.13-4.1.3.jar", "spark-sql-kafka-0-10_2.13"),
        ("log4j-1.2-api-2.24.3.jar", "log4j-1.2-api"),
        ("zstd-jni-1.5.7-6.jar", "zstd-jni"),
        ("hive-shims-0.23-2.3.10.jar", "hive-shims-0.23"),
        ("netty-codec-native-quic-4.2.7.Final-linux-x86_64.jar", "netty-codec-native-quic"),
        ("jackson-annotations-2.21.jar", "jackson-annotations"),
        ("kafka_2.13-4.4.0.jar", "kafka_2.13"),
    ],
)
def test_artifact_names_are_read_from_maven_file_names(file_name: str, artifact: str) -> None:
    assert artifact_name(file_name) == artifact
