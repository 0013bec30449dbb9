"""A table's suite compiled to Arrow compute: the gate on rows already on the driver.

Fold outputs are built on the driver as Arrow tables (:mod:`offsetscope.pipelines.batch`).
great-expectations' pandas engine checks them there (:func:`offsetscope.quality.validate.
validate_table`), but its own machinery -- a metric graph per expectation, the unexpected rows'
index lists -- costs more than the checks, on a batch of millions of rows (``partition_lag``
of a cluster with many groups) and on one of a hundred, which pays a fixed cost per table
(``docs/benchmarks.md``, "Measurements behind design choices"). Here each check is one vectorized mask over the
columns (``pyarrow.compute``; the uniqueness checks through pandas' ``duplicated``, which is
how great-expectations' pandas engine decides them), and the result is built as
:func:`offsetscope.quality.validate.validate_table` builds it: the same good and failed rows,
the same ``quality_results`` row.

The semantics are great-expectations' own (``offsetscope.quality.expressions`` has the table);
the tests hold this gate to great-expectations on the same rows. Timestamps are compared as
epoch microseconds with bounds likewise (:func:`offsetscope.quality.validate.in_micros`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsetscope.clock import Clock
from offsetscope.config import QualityConfig
from offsetscope.quality import suites
from offsetscope.quality.expressions import EXPECTATION_TYPES, UnsupportedCheckError
from offsetscope.quality.model import ExpectationResult, QualityResultRow
from offsetscope.quality.validate import (
    FAILED,
    arrow_timestamp_columns,
    in_micros,
    micros_array,
    result_row,
    start,
)

__all__ = ["broken", "validate_rows"]


def _false(n: int) -> np.ndarray[Any, np.dtype[np.bool_]]:
    return np.zeros(n, dtype=bool)


def _mask(values: Any) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """A boolean Arrow result as a numpy mask, null read as false (the row passes)."""
    return np.asarray(pc.fill_null(values, False).to_numpy(zero_copy_only=False), dtype=bool)


def broken(
    check: suites.Check, rows: pa.Table, timestamps: frozenset[str] | None = None
) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Where a row of ``rows`` breaks ``check``: one boolean per row.

    ``timestamps``: the timestamp columns of ``rows`` (default: read from its schema).

    Raises:
        UnsupportedCheckError: the check's expectation type is not compiled here.
    """
    stamps = arrow_timestamp_columns(rows.schema) if timestamps is None else timestamps

    def col(name: str) -> pa.ChunkedArray:
        column = rows.column(name)
        return micros_array(column) if name in stamps else column

    kw: dict[str, Any] = dict(in_micros(check, stamps).kwargs)
    kind = check.expectation
    if kind == "ExpectColumnValuesToNotBeNull":
        return _mask(pc.is_null(col(kw["column"])))
    if kind == "ExpectColumnValuesToBeUnique":
        values = col(kw["column"]).to_pandas()
        return np.asarray(values.notna() & values.duplicated(keep=False), dtype=bool)
    if kind == "ExpectCompoundColumnsToBeUnique":
        frame = pa.table({c: col(c) for c in kw["column_list"]}).to_pandas()
        # A row whose values are all missing is ignored, as great-expectations ignores it.
        some_value = frame.notna().any(axis=1)
        return np.asarray(some_value & frame.duplicated(keep=False), dtype=bool)
    if kind == "ExpectColumnValuesToBeInSet":
        column = col(kw["column"])
        allowed = pa.array(list(kw["value_set"]), type=column.type)
        return _mask(pc.and_(pc.is_valid(column), pc.invert(pc.is_in(column, allowed))))
    if kind == "ExpectColumnValuesToBeBetween":
        column = col(kw["column"])
        outside = _false(rows.num_rows)
        if kw.get("min_value") is not None:
            outside |= _mask(pc.less(column, pa.scalar(kw["min_value"])))
        if kw.get("max_value") is not None:
            outside |= _mask(pc.greater(column, pa.scalar(kw["max_value"])))
        return outside
    if kind == "ExpectColumnPairValuesAToBeGreaterThanB":
        if kw.get("ignore_row_if") != "either_value_is_missing":
            raise UnsupportedCheckError(f"{check.name}: only ignore_row_if=either_value_is_missing")
        a, b = col(kw["column_A"]), col(kw["column_B"])
        ordered = pc.greater_equal(a, b) if kw.get("or_equal") else pc.greater(a, b)
        # Null where either value is: read as passing.
        return _mask(pc.invert(ordered))
    raise UnsupportedCheckError(f"{check.name}: {kind} has no compiled form")


def validate_rows(
    rows: pa.Table,
    table: str,
    batch_id: int,
    *,
    settings: QualityConfig | None = None,
    clock: Clock | None = None,
) -> tuple[pa.Table, pa.Table, QualityResultRow]:
    """:func:`offsetscope.quality.validate.validate_table` with the compiled checks.

    Returns:
        ``good`` (the rows no check named; all rows when ``quarantine_failed_rows`` is off),
        ``failed`` (the named rows, in their order, plus ``failed_expectations``: the names of
        the checks each broke, sorted) and the results row.

    Raises:
        KeyError: ``table`` has no suite.
    """
    settings, started, now, checks = start(table, rows.schema.names, settings, clock)
    timestamps = arrow_timestamp_columns(rows.schema)
    masks = [broken(c, rows, timestamps) for c in checks]
    named = np.logical_or.reduce(masks) if masks else _false(rows.num_rows)
    order = np.flatnonzero(named)
    # Each failing row's names, sorted as validate_table sorts them.
    names = sorted(range(len(checks)), key=lambda i: checks[i].name)
    failed_names = [[checks[i].name for i in names if masks[i][row]] for row in order]
    failed = rows.take(pa.array(order, pa.int64())).append_column(
        FAILED, pa.array(failed_names, pa.list_(pa.string()))
    )
    good = rows.filter(pa.array(~named)) if settings.quarantine_failed_rows else rows
    expectations = [
        ExpectationResult(
            name=c.name,
            expectation_type=EXPECTATION_TYPES[c.expectation],
            columns=c.columns,
            success=not m.any(),
            unexpected_count=int(m.sum()),
        )
        for c, m in zip(checks, masks, strict=True)
    ]
    row = result_row(table, batch_id, rows.num_rows, len(order), expectations, now, started)
    return good, failed, row
