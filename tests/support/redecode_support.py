"""A table set as an older decoder left it, for ``tests/streaming/test_redecode.py``.

An offsetscope whose decoder stopped at an earlier version of ``GroupMetadataValue`` quarantined
every group-metadata record of a later version as unknown: no ``group_metadata_events`` row,
a ``quarantine`` row with the bytes (``skipped_unknown``), and history folded from the group's
other records only. :func:`older_decoder_tables` builds exactly that state from tables today's
pipeline wrote: shallow clones of every table, then, for one group, the records moved to
quarantine as such a decoder words it, and the group's history rows and fold state replaced
by the history folds' output over every record but those (the folds the pipeline runs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from offsetscope import config
from offsetscope.history import fold_batch
from offsetscope.history import tables as history_tables
from offsetscope.history.events import Event, GroupMetadataEvent
from offsetscope.pipelines import state as st
from offsetscope.pipelines.events import event_from_decoded
from offsetscope.pipelines.redecode import GROUP_TABLES
from offsetscope.spark import decode as dec
from offsetscope.spark import tables as catalogue
from offsetscope.spark import writes


@dataclass(frozen=True)
class OlderState:
    """What the fixture changed: the group and the records it moved to quarantine."""

    group: str
    version: int
    coordinates: tuple[tuple[str, int, int], ...]


def clone_all(spark: SparkSession, source: config.Config, target: config.Config) -> None:
    """Shallow clones of every table of ``source``'s schema into ``target``'s."""
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {catalogue.schema_name(target)}")
    for logical in catalogue.CATALOGUE:
        spark.sql(
            f"CREATE TABLE {catalogue.table_name(target, logical)} SHALLOW CLONE "
            f"{catalogue.table_name(source, logical)}"
        )
    # A clone's metastore entry has no table comment: bring it to the catalogue now, as a job
    # start would, so that the redecode under test is the only writer after this.
    catalogue.ensure_tables(spark, target)


def _events(spark: SparkSession, cfg: config.Config) -> list[Event]:
    raw = spark.table(catalogue.table_name(cfg, "raw_records"))
    source = raw.select(
        *[
            F.unix_millis("timestamp").alias("timestamp") if c == "timestamp" else F.col(f"`{c}`")
            for c in dec.SOURCE_SCHEMA.names
        ]
    )
    rows = dec.decode(source).drop("raw_key", "raw_value").toArrow().to_pylist()
    rows.sort(key=lambda r: (r["topic"], r["partition"], r["offset"]))
    return [e for r in rows if (e := event_from_decoded(r)) is not None]


def older_decoder_tables(spark: SparkSession, cfg: config.Config, group: str) -> OlderState:
    """Turn ``cfg``'s tables (a clone) into what a decoder without ``group``'s
    ``GroupMetadataValue`` version would have written (see the module docstring)."""
    events = _events(spark, cfg)
    hidden = [e for e in events if isinstance(e, GroupMetadataEvent) and e.group == group]
    version = max(e.value_version or 0 for e in hidden)
    hidden = [e for e in hidden if e.value_version == version]
    assert hidden, f"{group} has no group metadata records"
    coords = tuple(sorted((e.at.topic, e.at.partition, e.at.offset) for e in hidden))
    where = " OR ".join(
        f"(internal_topic = '{t}' AND record_partition = {p} AND record_offset = {o})"
        for t, p, o in coords
    )
    raw_where = " OR ".join(
        f"(topic = '{t}' AND `partition` = {p} AND `offset` = {o})" for t, p, o in coords
    )
    spark.sql(f"DELETE FROM {catalogue.table_name(cfg, 'group_metadata_events')} WHERE {where}")
    reason = (
        f"GroupMetadataValue has no version {version} (known: 0-{version - 1})"
        if version > 1
        else f"GroupMetadataValue has no version {version} (known: 0)"
    )
    spark.sql(
        f"""
        INSERT INTO {catalogue.table_name(cfg, "quarantine")}
          (internal_topic, record_partition, record_offset, record_timestamp, batch_producer_id,
           batch_producer_epoch, batch_is_transactional, kind, record_type, value_version,
           is_tombstone, error_class, error_message, field_path, byte_offset, unknown_reason,
           key, value, disposition, ingest_batch_id, {catalogue.CLUSTER})
        SELECT topic, `partition`, `offset`, `timestamp`, producer_id, producer_epoch,
               is_transactional, 'unknown', CAST(2 AS SMALLINT), CAST({version} AS SMALLINT),
               false, NULL, NULL, NULL, NULL, '{reason}', key, value,
               '{catalogue.SKIPPED_UNKNOWN}', ingest_batch_id, {catalogue.CLUSTER}
        FROM {catalogue.table_name(cfg, "raw_records")} WHERE {raw_where}
        """
    )
    visible = [e for e in events if e not in hidden]
    states, outputs = fold_batch(None, visible)
    for logical in GROUP_TABLES:
        name = catalogue.table_name(cfg, logical)
        spark.sql(f"DELETE FROM {name} WHERE group_id = '{group}'")
        rows = [r for r in getattr(outputs, logical) if r.group_id == group]
        rows = list(history_tables.materialize(rows).values())
        if rows:
            frame = writes.rows_frame(spark, logical, rows, cluster="default")
            if catalogue.spec(logical).version_column is not None:
                # A log of versions (groups_current): the group's first.
                frame = frame.withColumn(catalogue.SEQ, F.lit(0).cast("bigint"))
            frame.write.format("delta").mode("append").saveAsTable(name)
    state = states.groups[group]
    fold = catalogue.table_name(cfg, st.STATE)
    spark.sql(
        f"UPDATE {fold} SET state = {writes.sql_literal(state.to_json())}, "
        f"last_offset = {state.last_offset} WHERE fold = 'group' AND key = '{group}'"
    )
    return OlderState(group, version, coords)


def table_rows(
    spark: SparkSession, cfg: config.Config, logical: str, drop: Sequence[str] = ()
) -> list[str]:
    """A table's rows as sorted JSON texts (to compare two schemas' tables); a log of
    versions' latest rows (how many versions each holds depends on its batches)."""
    df = catalogue.current_rows(spark, cfg, logical).drop(*drop)
    return sorted(r[0] for r in df.select(F.to_json(F.struct(*df.columns))).collect())
