"""What a batch's plain offset commits tell the folds, computed column-wise.

Input: the batch's plain commits (outside transactions, final as read) as an Arrow table with the
``offset_commits`` columns (timestamps as epoch ms), one row per ``__consumer_offsets``
OffsetCommit record, tombstones included. Output, for the batch step
(:mod:`offsetscope.history.batch`):

* per group, the commits the group fold reads (``fold_group``): the first live commit (lowest
  record offset), the latest live one (highest ``(effective_at, record_offset)``), the first
  live one after the group's last deletion in the batch (its group-metadata tombstone), and the
  first live one per topic id -- never all of them;
* per (group, topic, partition), the position for lag: the latest record of any kind by
  ``(effective_at, record_offset)``; a tombstone's position has no offset (removed). They
  come per data partition as columns in group-id order (``PartitionPositions``), as lag keeps
  them.

"Live" is a commit that is not a tombstone. Every choice is an arg-min or arg-max, so it can be
made in parts: :func:`candidates` keeps the rows a part can contribute, and summarizing the
candidates of every part gives the summary of the whole (the ingest query picks candidates in
each Spark partition, and only they reach the driver). Each choice is done with one
``numpy.lexsort`` over the candidate rows (keys as dictionary codes), so the cost is a few sorts
of the batch and no Python object per commit. A Spark ``groupBy`` with ``min_by`` / ``max_by``
over row structs computes the same, but the structs force a sort-based aggregate
(``docs/benchmarks.md``, "Measurements behind design choices", has the comparison).

:func:`commit_table` is the inverse view for in-memory callers: ``OffsetCommitRow`` objects as
such a table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from offsetscope.history.lag import PartitionPositions
from offsetscope.history.rows import OffsetCommitRow

# The written columns of offset_commits (the table's rows are OffsetCommitRow).
COLUMNS = tuple(f.name for f in dataclasses.fields(OffsetCommitRow))

_ARROW_TYPES = {"str": pa.string(), "int": pa.int64(), "bool": pa.bool_()}
# offset_commits' columns as an in-memory Arrow table (timestamps as epoch ms).
COMMIT_SCHEMA = pa.schema(
    [
        pa.field(f.name, _ARROW_TYPES[str(f.type).split(" | ")[0]])
        for f in dataclasses.fields(OffsetCommitRow)
    ]
)

# What the picks read of a row (:class:`_Picks`); a row is named by its record's coordinates
# (``record_partition``, ``record_offset``), unique among one cluster's commits of a batch.
PICK_COLUMNS = (
    "group_id",
    "topic",
    "partition",
    "topic_id",
    "record_partition",
    "record_offset",
    "effective_at",
    "is_tombstone",
)

Summary = dict[str, list[OffsetCommitRow]]
# (topic, partition) -> the batch's latest position of each group on it.
Positions = dict[tuple[str, int], PartitionPositions]


def commit_table(rows: Iterable[OffsetCommitRow]) -> pa.Table:
    """``rows`` as an Arrow table of :data:`COMMIT_SCHEMA` (what :func:`summarize` reads)."""
    return pa.Table.from_pylist([dataclasses.asdict(r) for r in rows], schema=COMMIT_SCHEMA)


def summarize(table: pa.Table, tombstones: Mapping[str, int]) -> tuple[Summary, Positions]:
    """The group fold's commits and the lag positions of a batch's plain commits.

    Args:
        table: the commits, with (at least) :data:`COLUMNS`; timestamps as epoch ms.
        tombstones: group -> record offset of its last group-metadata tombstone in the batch.

    Returns:
        (group -> chosen commit rows in record-offset order, (topic, partition) -> positions).
    """
    if table.num_rows == 0:
        return {}, {}
    picks = _Picks(table, tombstones)
    return _chosen_rows(picks, table), _positions(picks, table["offset"])


def _chosen_rows(picks: _Picks, table: pa.Table) -> Summary:
    """The picked rows as ``OffsetCommitRow``s per group in record-offset order, built column
    by column: ordered and cut with numpy, then one Python list per column, so no per-row
    mapping is made on the way."""
    chosen = np.concatenate(picks.chosen)  # one row can be several of the four
    if chosen.size == 0:  # only tombstones: nothing for the group fold
        return {}
    group, record_offset = picks.group[chosen], picks.record_offset[chosen]
    order = np.lexsort((chosen, record_offset, group))
    chosen, group, record_offset = chosen[order], group[order], record_offset[order]
    # One row per group and record offset: a group's records are in one __consumer_offsets
    # partition, so its offsets name its rows; of rows that share one, the last one read.
    last = np.concatenate(
        ((group[1:] != group[:-1]) | (record_offset[1:] != record_offset[:-1]), [True])
    )
    chosen, group = chosen[last], group[last]
    picked = table.select(list(COLUMNS)).take(pa.array(chosen))
    rows = list(map(OffsetCommitRow, *(_values(column) for column in picked.columns)))
    starts = np.flatnonzero(np.concatenate(([True], group[1:] != group[:-1]))).tolist()
    return {
        picks.groups[int(group[lo])]: rows[lo:hi]
        for lo, hi in zip(starts, [*starts[1:], len(rows)], strict=True)
    }


def _positions(picks: _Picks, offsets: pa.ChunkedArray) -> Positions:
    """The lag positions as columns per data partition, in group-id order (what
    :class:`~offsetscope.history.lag.PartitionPositions` holds): sorted and cut with numpy,
    then one list per column, so no Python object per position."""
    latest = picks.latest
    # The rank of each group code in group-id order (Python's string order, which the
    # positions' bisection uses).
    rank = np.empty(len(picks.groups), dtype=np.int64)
    rank[np.argsort(np.array(picks.groups, dtype=object), kind="stable")] = np.arange(rank.size)
    topic, partition = picks.topic[latest], picks.partition[latest]
    order = np.lexsort((rank[picks.group[latest]], partition, topic))
    rows = latest[order]
    topic, partition = topic[order], partition[order]
    starts = np.flatnonzero(
        np.concatenate(([True], (topic[1:] != topic[:-1]) | (partition[1:] != partition[:-1])))
    ).tolist()
    groups = [picks.groups[g] for g in picks.group[rows].tolist()]
    committed = _values(offsets.take(pa.array(rows)))
    at = picks.effective_at[rows].tolist()
    record_offsets = picks.record_offset[rows].tolist()
    out: Positions = {}
    for lo, hi in zip(starts, [*starts[1:], rows.size], strict=True):
        out[(picks.topics[int(topic[lo])], int(partition[lo]))] = PartitionPositions(
            tuple(groups[lo:hi]),
            tuple(committed[lo:hi]),
            tuple(at[lo:hi]),
            tuple(record_offsets[lo:hi]),
        )
    return out


def candidates(table: pa.Table, tombstones: Mapping[str, int]) -> pa.Table:
    """The rows of ``table`` that :func:`summarize` can pick (:func:`candidate_rows`)."""
    if table.num_rows == 0:
        return table
    return table.take(pa.array(candidate_rows(table, tombstones)))


def candidate_rows(table: pa.Table, tombstones: Mapping[str, int]) -> np.ndarray:
    """The indices, ascending, of the rows of ``table`` that :func:`summarize` can pick: each a
    per-key arg-min or arg-max, so ``summarize(concat(candidates(part) for part in parts))``
    equals ``summarize(concat(parts))`` however the commits are split -- as long as every
    part is given the same ``tombstones`` -- and adding any other of the batch's commits to
    the candidates changes no pick. This is how the batch's commits are summarized where they
    are: each decode task keeps its candidates (:mod:`offsetscope.spark.decode`), and only
    those reach the driver (:func:`offsetscope.pipelines.frames.commit_candidates`).

    ``table`` needs only :data:`PICK_COLUMNS` (the picks read nothing else).
    """
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    picks = _Picks(table, tombstones)
    rows: np.ndarray = np.unique(np.concatenate([*picks.chosen, picks.latest]))
    return rows


class _Picks:
    """The row indices :func:`summarize` picks from ``table``."""

    def __init__(self, table: pa.Table, tombstones: Mapping[str, int]) -> None:
        self.group, self.groups = _codes(table["group_id"])
        self.topic, self.topics = _codes(table["topic"])
        topic_id, _ = _codes(table["topic_id"])
        self.partition = _ints(table["partition"])
        self.record_offset = _ints(table["record_offset"])
        self.effective_at = _ints(table["effective_at"])
        group, record_offset = self.group, self.record_offset
        # A group's commits are in one __consumer_offsets partition, so its record offsets
        # differ; the record partition breaks a tie anyway, so that no pick depends on the
        # order the rows arrive in (candidates are gathered from Spark partitions).
        where = _ints(table["record_partition"])
        first = (record_offset, where)
        live = ~table["is_tombstone"].combine_chunks().to_numpy(zero_copy_only=False).astype(bool)
        deleted_at = np.array([tombstones.get(g, -1) for g in self.groups], dtype=np.int64)
        after_deletion = live & (deleted_at[group] >= 0) & (record_offset > deleted_at[group])
        newest = (self.effective_at, record_offset, where)
        # The group fold's commits: the first live one, the latest live one, the first live one
        # after the group's deletion, the first live one per topic id.
        self.chosen = [
            _pick((group,), first, live, largest=False),
            _pick((group,), newest, live, largest=True),
            _pick((group,), first, after_deletion, largest=False),
            _pick((group, topic_id), first, live & (topic_id >= 0), largest=False),
        ]
        # The lag positions: the latest record of any kind per group and partition.
        self.latest = _pick(
            (group, self.topic, self.partition), newest, np.ones_like(live), largest=True
        )


def _pick(
    by: Sequence[np.ndarray], keys: Sequence[np.ndarray], mask: np.ndarray, *, largest: bool
) -> np.ndarray:
    """Per distinct value of the ``by`` columns (among the ``mask`` rows): the row index with
    the smallest (or largest) ``keys``, compared in order."""
    rows = np.flatnonzero(mask)
    if rows.size == 0:
        return rows
    # lexsort's last key is the primary one: by columns first, then the keys.
    order = np.lexsort(tuple(k[rows] for k in reversed(keys)) + tuple(b[rows] for b in by[::-1]))
    ranked: np.ndarray = rows[order]
    changes = np.zeros(ranked.size - 1, dtype=bool)
    for b in by:
        v = b[ranked]
        changes |= v[1:] != v[:-1]
    # A run's first row is its smallest, its last row its largest.
    edge = np.concatenate((changes, [True])) if largest else np.concatenate(([True], changes))
    picked: np.ndarray = ranked[edge]
    return picked


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """Dictionary codes of a string column (null: -1) and the values they stand for."""
    encoded = column.combine_chunks().dictionary_encode()
    codes: np.ndarray = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False)
    return codes.astype(np.int64), encoded.dictionary.to_pylist()


def _values(column: pa.ChunkedArray) -> list[Any]:
    """``column.to_pylist()``; integers and booleans through numpy, which makes their Python
    objects several times faster than Arrow's per-value conversion."""
    if not (pa.types.is_integer(column.type) or pa.types.is_boolean(column.type)):
        listed: list[Any] = column.to_pylist()
        return listed
    array = column.combine_chunks()
    filled = array.fill_null(False if pa.types.is_boolean(array.type) else 0)
    values: list[Any] = filled.to_numpy(zero_copy_only=False).tolist()
    if array.null_count:
        for i in np.flatnonzero(array.is_null().to_numpy(zero_copy_only=False)).tolist():
            values[i] = None
    return values


def _ints(column: pa.ChunkedArray) -> np.ndarray:
    # The columns read here are never null in a decoded commit; -1 keeps a null from turning
    # into an arbitrary integer through a float NaN.
    values: np.ndarray = column.combine_chunks().fill_null(-1).to_numpy(zero_copy_only=False)
    return values.astype(np.int64)
