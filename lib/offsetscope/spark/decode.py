"""Decode once: the Spark adapter around ``protocol.arrow_decode.decode_batch``.

``decode(df)`` is a single ``mapInArrow`` over the source rows (``SOURCE_SCHEMA``): each Arrow
batch the source delivers is decoded column-wise where it can be (offset commits) and per
record otherwise, and comes back as one row per input row of :data:`DECODE_OUTPUT_SCHEMA` --
``DECODED_SCHEMA`` plus the raw key and value bytes of the rows that go to quarantine, and
``out_of_sequence``: whether the task's records had stopped arriving in ascending offsets per
topic partition (what lets a batch's coordinates be known unique without a job over it). The
Spark schema is derived from that Arrow schema (``from_arrow_schema``), never written here.

Rows the source could not frame (``source_error`` set: a CRC mismatch, an undecodable batch, an
unreadable segment tail) become ``error`` rows with the source's error class, path and byte
offset; nothing is dropped, so per batch::

    rows in = events (offset_commit, group_metadata, transaction_log, consumer_group, control)
              + quarantined (error) + unknown

which :func:`kind_counts` checks (:class:`CountMismatchError` when it does not hold).

**Commit candidates** (``decode(df, commit_candidates=True)``, the ingest pipeline's decode of
its plain offset commits): after a task's last decoded row comes one more row, of ``kind`` =
:data:`CANDIDATE`, whose ``raw_value`` holds the task's plain offset commits (outside
transactions) that the commit summary can pick -- :func:`offsetscope.history.commits.
candidate_rows` over the task's commits, their :data:`_COMMIT_COLUMNS` as decoded -- packed as
one zstd-compressed Arrow IPC stream, its text columns dictionary-encoded
(:func:`unpack_candidates` decodes them). The picks are made where the commits already are, in
the decode's own Python pass, so the summary needs no second pass over
the batch's commits, and the pipeline reads them as an observed metric of the append that
writes the commits (:mod:`offsetscope.pipelines.frames`, ``PlainPass``): a task's candidates
are one value however many, where as rows they would be carried and converted one by one.
The packed row is not a record: :data:`KINDS` and the count above leave it out. The picks
read no tombstones (a group deleted in the batch gets its picks after the deletion
elsewhere), so a task's candidates are the same whatever order or split its records come in,
and the running picks are reduced as the task's batches arrive: the task holds its
candidates so far and the commits since (at most ``REDUCE_ROWS`` or twice the candidates),
not all of its commits::

    source batch -> decoded batch -> (yielded)
                        plain commits -> pending ──(pending >= max(REDUCE_ROWS, 2 kept))──>
                                         kept = candidate_rows(kept + pending)
    end of task: kept -> text columns as dictionaries -> Arrow IPC (zstd)
                 -> one row, kind = commit_candidate -> (yielded)

The dictionaries are for the bytes the driver receives: a text column's offsets buffer (one
ascending int32 per row) is most of what zstd leaves of the usual candidates, whose texts are
a few topic and group names repeated row after row; the packed value is several times smaller
dictionary-encoded, and it reaches the driver through Spark's observed metrics and py4j, which
convert a binary value byte by byte in Python.

The silver projections (:func:`silver_frame`) read their column lists and expressions from the
table catalogue (:mod:`offsetscope.spark.tables`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from offsetscope.history.commits import candidate_rows
from offsetscope.protocol.arrow_decode import (
    COORDINATE_COLUMNS,
    DECODED_SCHEMA,
    RAW_SCHEMA,
    decode_batch,
)
from offsetscope.spark.tables import DECODE_EXTRA, SOURCE_SCHEMA, TableSpec

DECODE_OUTPUT_SCHEMA: Final = pa.schema([*DECODED_SCHEMA, *DECODE_EXTRA])

EVENT_KINDS: Final = (
    "offset_commit",
    "group_metadata",
    "transaction_log",
    "consumer_group",
    "control",
)
ERROR = "error"
UNKNOWN = "unknown"
KINDS: Final = (*EVENT_KINDS, ERROR, UNKNOWN)
# The kind of a task's packed commit candidates (module docstring): not a record's kind.
CANDIDATE: Final = "commit_candidate"
# A task reduces its pending commits to candidates once they are this many, or twice as many as
# the candidates it keeps (so a task's reductions cost at most about twice one pass over its
# commits, and hold this many pending commits' columns at most beside the candidates).
REDUCE_ROWS: Final = 262_144
# What a plain offset commit's decoded row can fill: the picks' inputs and what the candidates'
# rows become (offsetscope.pipelines.frames.plain_commit_frame); the other kinds' columns and
# the quarantine's reason and bytes are null in every one of them.
_COMMIT_COLUMNS: Final = pa.schema(
    [
        f
        for f in DECODE_OUTPUT_SCHEMA
        if f.name not in {"group_metadata", "transaction_log", "consumer_group", "control"}
        and f.name not in {"unknown_reason", "error", "raw_key", "raw_value"}
    ]
)
_RAW_NAMES = RAW_SCHEMA.names
_JOIN_KEYS = ["topic", "partition", "offset"]


class CountMismatchError(RuntimeError):
    """Decoded rows do not add up to the rows read: a row was lost or invented."""


def decoded_spark_schema() -> StructType:
    """The Spark schema of :func:`decode`'s output (from :data:`DECODE_OUTPUT_SCHEMA`)."""
    schema: StructType = from_arrow_schema(DECODE_OUTPUT_SCHEMA)
    return schema


def decode_arrow(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function: source batches -> decoded batches (same number of rows).

    Every row also says whether the task's records had stopped ascending by the end of its
    source batch (``out_of_sequence``, :class:`_Sequence`).
    """
    sequence = _Sequence()
    for batch in batches:
        if batch.num_rows == 0:
            continue
        broken = sequence.see(batch)
        errors = batch.column("source_error").is_valid()
        if pc.any(errors).as_py():
            yield _source_errors(batch.filter(errors), broken)
            batch = batch.filter(pc.invert(errors))
            if batch.num_rows == 0:
                continue
        raw = batch.select(_RAW_NAMES)
        for out in decode_batch(raw):
            yield _with_raw_bytes(out, raw, broken)


class _Sequence:
    """Whether one task's records have come so far in strictly ascending offsets within each
    topic partition, as every source delivers a partition's records.

    While they have, no two of the task's records share a topic, partition and offset; a batch
    whose every topic partition is read by one task then has unique coordinates with no job
    to find repeats (:func:`offsetscope.pipelines.frames.coordinates_unique`). Once broken --
    a repeat, or a source that reorders -- every later row says so, and the batch's uniqueness
    is checked the ordinary way. Only the last offset of each topic partition is kept.
    """

    def __init__(self) -> None:
        self._last: dict[tuple[str, int], int] = {}
        self.broken = False

    def see(self, batch: pa.RecordBatch) -> bool:
        """Take the next source batch; whether the sequence is broken after it."""
        if self.broken:
            return True
        known = pc.and_(
            pc.and_(batch.column("topic").is_valid(), batch.column("partition").is_valid()),
            batch.column("offset").is_valid(),
        )
        rows = batch.filter(known)
        if rows.num_rows == 0:
            return False
        topics = pc.dictionary_encode(rows.column("topic"))
        codes = topics.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        partitions = rows.column("partition").to_numpy(zero_copy_only=False).astype(np.int64)
        offsets = rows.column("offset").to_numpy(zero_copy_only=False).astype(np.int64)
        # One key per topic partition; a stable sort keeps each one's records in their order.
        keys = (codes << 32) | (partitions & 0xFFFFFFFF)
        order = np.argsort(keys, kind="stable")
        keys, offsets = keys[order], offsets[order]
        same = keys[1:] == keys[:-1]
        if np.any(offsets[1:][same] <= offsets[:-1][same]):
            self.broken = True
            return True
        starts = np.concatenate(([0], np.flatnonzero(~same) + 1))
        ends = np.concatenate((starts[1:], [len(keys)])) - 1
        names = topics.dictionary.to_pylist()
        for first, last in zip(starts.tolist(), ends.tolist(), strict=True):
            tp = (names[int(keys[first]) >> 32], int(keys[first]) & 0xFFFFFFFF)
            before = self._last.get(tp)
            if before is not None and offsets[first] <= before:
                self.broken = True
                return True
            self._last[tp] = int(offsets[last])
        return False


def _with_raw_bytes(out: pa.RecordBatch, raw: pa.RecordBatch, broken: bool) -> pa.RecordBatch:
    """Append the raw key/value of quarantined and unknown rows (null for every other row), and
    ``out_of_sequence``."""
    kinds = out.column("kind")
    bad = pc.is_in(kinds, pa.array([ERROR, UNKNOWN]))
    n = out.num_rows
    if not pc.any(bad).as_py():
        return _extend(out, pa.nulls(n, pa.binary()), pa.nulls(n, pa.binary()), broken)
    rows = np.flatnonzero(bad.to_numpy(zero_copy_only=False))
    wanted = out.select(_JOIN_KEYS).take(pa.array(rows))
    wanted = pa.Table.from_batches([wanted]).append_column("row", pa.array(rows, pa.int64()))
    source = pa.Table.from_batches([raw.select([*_JOIN_KEYS, "key", "value"])])
    found = wanted.join(source, _JOIN_KEYS, join_type="left outer")
    keys: list[bytes | None] = [None] * n
    values: list[bytes | None] = [None] * n
    for row, key, value in zip(
        found.column("row").to_pylist(),
        found.column("key").to_pylist(),
        found.column("value").to_pylist(),
        strict=True,
    ):
        keys[row] = key
        values[row] = value
    return _extend(out, pa.array(keys, pa.binary()), pa.array(values, pa.binary()), broken)


def _extend(out: pa.RecordBatch, key: pa.Array, value: pa.Array, broken: bool) -> pa.RecordBatch:
    flag = pa.array(np.full(out.num_rows, broken), pa.bool_())
    return pa.RecordBatch.from_arrays([*out.columns, key, value, flag], schema=DECODE_OUTPUT_SCHEMA)


def _source_errors(batch: pa.RecordBatch, broken: bool) -> pa.RecordBatch:
    """Rows the source could not frame, as ``error`` rows carrying the bytes it kept."""
    rows = []
    for r in batch.to_pylist():
        err = r["source_error"]
        row = {name: r[name] for name in COORDINATE_COLUMNS}
        row.update(
            kind=ERROR,
            error={
                "error_class": err["error_class"],
                "message": err["message"],
                "field_path": err["field_path"],
                "byte_offset": _int32(err["byte_offset"]),
            },
            raw_key=r["key"],
            raw_value=r["value"],
            out_of_sequence=broken,
        )
        rows.append(row)
    return pa.RecordBatch.from_pylist(rows, schema=DECODE_OUTPUT_SCHEMA)


def _int32(value: int | None) -> int | None:
    # The decoder's byte_offset is an int32; a segment position beyond it is clamped, the
    # message keeps the exact value.
    if value is None:
        return None
    return min(value, 2**31 - 1)


def decode(df: DataFrame, *, commit_candidates: bool = False) -> DataFrame:
    """Decode every record of ``df`` (``SOURCE_SCHEMA`` columns) once, in one ``mapInArrow``.

    Args:
        df: source rows (a stream or a batch; extra columns are ignored).
        commit_candidates: also yield each task's commit candidates (module docstring).

    Returns:
        One row per input row, :func:`decoded_spark_schema` (and the candidates' rows).
    """
    columns = [F.col(f"`{name}`") for name in SOURCE_SCHEMA.names]
    work = decode_with_candidates if commit_candidates else decode_arrow
    return df.select(*columns).mapInArrow(work, decoded_spark_schema())


def decode_with_candidates(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """:func:`decode_arrow`, then the task's commit candidates (module docstring)."""
    kept = _Candidates()
    for out in decode_arrow(batches):
        kept.add(out)
        yield out
    yield from kept.finish()


class _Candidates:
    """One task's commit candidates so far, and its plain commits decoded since, each with the
    columns a plain commit's decoded row can fill (:data:`_COMMIT_COLUMNS`): the others are
    null in every such row, and are made null again for the candidates' rows."""

    def __init__(self) -> None:
        self._reduce_rows = REDUCE_ROWS
        self._kept: pa.Table | None = None
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0

    @property
    def _kept_rows(self) -> int:
        return 0 if self._kept is None else self._kept.num_rows

    def add(self, decoded: pa.RecordBatch) -> None:
        """Take a decoded batch's plain commits."""
        plain = pc.and_(
            pc.equal(decoded.column("kind"), "offset_commit"),
            pc.invert(decoded.column("is_transactional").fill_null(False)),
        )
        commits = decoded.select(_COMMIT_COLUMNS.names).filter(plain)
        if commits.num_rows == 0:
            return
        self._pending.append(commits)
        self._pending_rows += commits.num_rows
        if self._pending_rows >= max(self._reduce_rows, 2 * self._kept_rows):
            self._reduce()

    def finish(self) -> Iterator[pa.RecordBatch]:
        """The task's candidates, packed in one :data:`CANDIDATE` row (none without any)."""
        self._reduce()
        if self._kept is None:
            return
        packed = pa.table(
            [_dictionaries(c.combine_chunks()) for c in self._kept.columns],
            names=self._kept.column_names,
        )
        sink = pa.BufferOutputStream()
        options = pa.ipc.IpcWriteOptions(compression="zstd")
        with pa.ipc.new_stream(sink, packed.schema, options=options) as stream:
            stream.write_table(packed)
        columns = []
        for f in DECODE_OUTPUT_SCHEMA:
            if f.name == "kind":
                columns.append(pa.array([CANDIDATE], f.type))
            elif f.name == "raw_value":
                columns.append(pa.array([sink.getvalue().to_pybytes()], f.type))
            elif f.name == "out_of_sequence":
                columns.append(pa.array([False], f.type))
            else:
                columns.append(pa.nulls(1, f.type))
        yield pa.RecordBatch.from_arrays(columns, schema=DECODE_OUTPUT_SCHEMA)

    def _reduce(self) -> None:
        if not self._pending:
            return
        parts = [pa.Table.from_batches(self._pending, _COMMIT_COLUMNS)]
        if self._kept is not None:
            parts.insert(0, self._kept)
        table = pa.concat_tables(parts)
        self._kept = table.take(pa.array(candidate_rows(_pick_columns(table), {})))
        self._pending, self._pending_rows = [], 0


def unpack_candidates(packed: Iterable[bytes]) -> pa.Table:
    """The commit candidates of the :data:`CANDIDATE` rows' ``raw_value`` s, as one table of
    :data:`_COMMIT_COLUMNS` (decoded plain commits; empty without any)."""
    parts = [pa.ipc.open_stream(p).read_all().cast(_COMMIT_COLUMNS) for p in packed]
    return pa.concat_tables(parts) if parts else _COMMIT_COLUMNS.empty_table()


def _dictionaries(column: pa.Array) -> pa.Array:
    """``column`` with its text values, nested in structs too, dictionary-encoded (the packed
    candidates' form, module docstring); :func:`unpack_candidates` casts them back."""
    kind = column.type
    if pa.types.is_string(kind):
        encoded: pa.Array = pc.dictionary_encode(column)
        return encoded
    if pa.types.is_struct(kind):
        assert isinstance(column, pa.StructArray)
        children = [_dictionaries(column.field(i)) for i in range(kind.num_fields)]
        fields = [kind.field(i).with_type(c.type) for i, c in enumerate(children)]
        mask = column.is_null() if column.null_count else None
        return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
    return column


def _pick_columns(decoded: pa.Table) -> pa.Table:
    """Decoded plain commits as the columns the picks read (``offset_commits``' names and
    values, as :func:`offsetscope.pipelines.frames.plain_commit_frame` makes them)."""
    commit = decoded.column("offset_commit")
    return pa.table(
        {
            "group_id": pc.struct_field(commit, "group"),
            "topic": pc.struct_field(commit, "topic"),
            "partition": pc.struct_field(commit, "partition"),
            "topic_id": pc.struct_field(commit, "topic_id"),
            "record_partition": decoded.column("partition"),
            "record_offset": decoded.column("offset"),
            "effective_at": decoded.column("timestamp"),
            "is_tombstone": decoded.column("is_tombstone"),
        }
    )


def kind_counts(rows_in: int, counts: Mapping[str, int]) -> dict[str, int]:
    """Every kind's count (zeros filled in), after checking ``rows in = events + errors + unknown``.

    Raises:
        CountMismatchError: the decoded rows do not add up to ``rows_in``, or a kind is unknown.
    """
    strange = sorted(set(counts) - set(KINDS))
    if strange:
        raise CountMismatchError(f"decoded rows of unknown kinds {strange}")
    full = {kind: int(counts.get(kind, 0)) for kind in KINDS}
    decoded = sum(full.values())
    if decoded != rows_in:
        raise CountMismatchError(
            f"{rows_in} records in, {decoded} decoded rows out "
            f"({', '.join(f'{k}={v}' for k, v in full.items())})"
        )
    return full


def silver_frame(
    decoded: DataFrame, table: TableSpec, extra: Mapping[str, Column] | None = None
) -> DataFrame:
    """The rows of a silver table: the table's filter and column expressions over ``decoded``.

    Args:
        decoded: :func:`decode` output.
        table: a silver table of the catalogue (its columns carry ``source`` expressions).
        extra: values for columns without a source expression (``ingest_batch_id``).
    """
    extra = extra or {}
    selected = []
    for c in table.written_columns:
        if c.source is not None:
            expr = F.expr(c.source)
        elif c.name in extra:
            expr = extra[c.name]
        else:
            raise KeyError(f"{table.logical}.{c.name} has no source expression and no value")
        selected.append(expr.cast(c.type).alias(c.name))
    rows = decoded.where(table.where) if table.where else decoded
    return rows.select(*selected)
