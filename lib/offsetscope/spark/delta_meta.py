"""A Delta table's metadata as its log has it, read without reconstructing its file list.

Every job start checks each table against its declaration (``tables.ensure_tables``). The
catalog's views of a Delta table -- ``DESCRIBE DETAIL``, ``SHOW TBLPROPERTIES``,
``spark.catalog.getTable`` -- each reconstruct the table's state (three Spark jobs over the log
and its last checkpoint) because they report the file count or the clustering columns, which
for the whole catalogue was most of a job's start (``docs/benchmarks.md``, "Measurements
behind design choices"). What the check needs is cheaper to get from the log itself (Delta's
``PROTOCOL.md``):

* the ``metaData`` action of the latest version: ``schemaString`` (column types and comments
  in Spark's JSON schema), ``partitionColumns``, ``configuration`` (the table properties) and
  ``description`` (the table comment). Delta reads it from the version's checksum file (where
  there is none, from the last checkpoint and the commits after it);
* the clustering columns: the ``delta.clustering`` domain metadata, whose ``configuration`` is
  ``{"clusteringColumns": [["col"], ["nested", "col"]], ...}``. The version checksum file
  (``_delta_log/<version>.crc``) carries every domain of the version while there are few of
  them; without it, only a state reconstruction knows them (:data:`UNKNOWN`).

This goes through Delta's ``DeltaLog`` of the session's JVM (Delta Lake on Apache Spark with
the session catalog). Other runtimes or catalogs (Unity Catalog's three-part names) get None
and the caller asks the catalog instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from py4j.java_gateway import JavaClass
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

__all__ = ["UNKNOWN", "TableMetadata", "clustering_columns", "read"]

CLUSTERING_DOMAIN = "delta.clustering"

# The clustering columns when the version's checksum does not carry its domains.
UNKNOWN = None


@dataclass(frozen=True, slots=True)
class TableMetadata:
    """A table's latest version as its ``metaData`` action and checksum describe it."""

    version: int
    schema: StructType
    partition_by: tuple[str, ...]
    properties: Mapping[str, str]
    comment: str
    cluster_by: tuple[str, ...] | None  # UNKNOWN: only a state reconstruction knows


def clustering_columns(domains: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The clustering columns named by a version's domain metadata actions (their JSON
    objects); () when the table is not clustered. A nested column is its dotted path."""
    for domain in domains:
        if domain.get("domain") != CLUSTERING_DOMAIN or domain.get("removed"):
            continue
        columns = json.loads(domain["configuration"]).get("clusteringColumns") or []
        return tuple(".".join(path) for path in columns)
    return ()


def _jvm(spark: SparkSession) -> Any:
    jvm = spark.sparkContext._jvm
    assert jvm is not None, "a running session has a JVM gateway"
    return jvm


def _delta_log_class(spark: SparkSession) -> Any | None:
    log_class = _jvm(spark).org.apache.spark.sql.delta.DeltaLog
    # Py4J answers a class it cannot load with a JavaPackage: another Delta runtime.
    return log_class if isinstance(log_class, JavaClass) else None


def read(spark: SparkSession, qualified: str) -> TableMetadata | None:
    """The latest version's metadata of the Delta table ``qualified`` (``schema.table``, quoted
    or not); None when this session's Delta or catalog does not expose the log this way."""
    log_class = _delta_log_class(spark)
    if log_class is None:
        return None
    jvm = _jvm(spark)
    session = spark._jsparkSession
    parts = list(
        jvm.scala.jdk.javaapi.CollectionConverters.asJava(
            session.sessionState().sqlParser().parseMultipartIdentifier(qualified)
        )
    )
    if len(parts) != 2:
        return None  # a catalog's three-part name: not the session catalog's table
    identifier = jvm.org.apache.spark.sql.catalyst.TableIdentifier(
        parts[1], jvm.scala.Some(parts[0])
    )
    empty = jvm.scala.Option.empty()
    snapshot = log_class.forTable(session, identifier).update(False, empty, empty)
    action = json.loads(snapshot.metadata().json())["metaData"]
    cluster_by: tuple[str, ...] | None = UNKNOWN
    checksum = snapshot.checksumOpt()
    if checksum.isDefined() and checksum.get().domainMetadata().isDefined():
        domains = jvm.scala.jdk.javaapi.CollectionConverters.asJava(
            checksum.get().domainMetadata().get()
        )
        cluster_by = clustering_columns([json.loads(d.json())["domainMetadata"] for d in domains])
    return TableMetadata(
        version=int(snapshot.version()),
        schema=StructType.fromJson(json.loads(action["schemaString"])),
        partition_by=tuple(action.get("partitionColumns") or ()),
        properties=dict(action.get("configuration") or {}),
        comment=action.get("description") or "",
        cluster_by=cluster_by,
    )
