"""What the quarantine table holds for a corpus, next to what its manifest says it must hold.

Shared by the corpus tests of both sources (a log directory, and mirror topics on a broker).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import SparkSession

from offsetscope import config
from offsetscope.spark import tables as catalogue

Coordinates = tuple[str, int, int]
# kind, error class, field path, byte offset, key, value
Outcome = tuple[str, str | None, str | None, int | None, bytes | None, bytes | None]

_QUARANTINE_COLUMNS = (
    "internal_topic", "record_partition", "record_offset", "kind", "error_class", "field_path",
    "byte_offset", "key", "value", "disposition",
)  # fmt: skip


def quarantine_rows(spark: SparkSession, cfg: config.Config) -> list[Any]:
    """Every row of ``cfg``'s quarantine table."""
    table = spark.table(catalogue.table_name(cfg, "quarantine"))
    return table.select(*_QUARANTINE_COLUMNS).collect()


def found_outcomes(rows: Iterable[Any]) -> dict[Coordinates, Outcome]:
    """Quarantine rows by record coordinates; a record quarantined twice fails here."""
    found: dict[Coordinates, Outcome] = {}
    for r in rows:
        at = (r["internal_topic"], r["record_partition"], r["record_offset"])
        assert at not in found, f"{at} quarantined twice"
        found[at] = (
            r["kind"],
            r["error_class"],
            r["field_path"],
            r["byte_offset"],
            r["key"],
            r["value"],
        )
    return found


def expected_outcomes(manifest: Iterable[Mapping[str, Any]]) -> dict[Coordinates, Outcome]:
    """The manifest's records the pipeline must quarantine (errors and unknown types)."""
    return {
        (m["topic"], m["partition"], m["offset"]): (
            m["expected_kind"],
            m["error_class"],
            m["field_path"],
            m["byte_offset"],
            m["key"],
            m["value"],
        )
        for m in manifest
        if m["expected_kind"] in ("error", "unknown")
    }
