"""A table's suite as Spark column expressions: the quality gate evaluated where the rows are.

great-expectations validates a batch by computing one metric per expectation, a Spark job each,
or on pandas after the rows were collected to the driver. A gate in front of every gold write
of every micro-batch can afford neither once batches are large, so the suites' checks
(:mod:`offsetscope.quality.suites`, all row-level) are compiled here into one boolean column
per check -- true where the row breaks it -- and the batch is annotated, split and counted in
the executors: one aggregation returns the counts, and nothing per row reaches the driver.
A batch that cannot be a replay is counted in the pass that writes it instead
(:func:`observe_frame`, a Spark ``Observation`` of the write): the batch is read once, and the
write counts rows and failed rows only; the count per check, when some row failed, comes from
the failed rows afterwards.
A uniqueness check names its rows with a window over the batch, which sorts it; a hash
aggregation first (:func:`repeats`) finds whether any key repeats at all, and the window runs
only when one does -- a batch whose keys are unique by construction skips the sort. A producer
that knows its rows' key columns cannot repeat says so (``unique``: the plain offset commits,
keyed by their records' coordinates, when the batch's tasks read them in ascending order:
:func:`offsetscope.pipelines.frames.coordinates_unique`), and the check then runs no job at
all. Otherwise that aggregation is still a job that reads the batch again: a batch computed in
Python in the executors (``partition_lag``'s rows, :mod:`offsetscope.pipelines.lag`) would be
computed twice.
Such a producer can mark the repeats itself, where it builds the rows, in a column the check
reads instead (:func:`mark_column`; :func:`offsetscope.quality.arrow.broken` decides them, so
the semantics stay great-expectations'); the gate drops the marks, and :func:`drop_marks`
drops them from a batch written without a gate.

The semantics are great-expectations' own for the six expectation types the suites use, which
the tests hold to great-expectations on the same rows:

=====================================  =========================================================
expectation                            a row breaks it when
=====================================  =========================================================
ExpectColumnValuesToNotBeNull          the value is null
ExpectColumnValuesToBeUnique           the value is not null and appears more than once
ExpectCompoundColumnsToBeUnique        the combination appears more than once (a row whose
                                       values are all null is ignored)
ExpectColumnValuesToBeInSet            the value is not null and not in the set
ExpectColumnValuesToBeBetween          the value is not null and outside ``[min, max]``
                                       (either bound may be absent)
ExpectColumnPairValuesAToBeGreaterThanB  neither value is null and ``A > B`` (``>=``) fails
=====================================  =========================================================

Results are recorded as :func:`offsetscope.quality.validate.validate` records them: one
``quality_results`` row per table and batch, failing rows to ``quality_quarantine`` with the
names of the checks they broke.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pyspark.sql import Column, DataFrame, Observation, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DecimalType

from offsetscope.clock import Clock
from offsetscope.config import QualityConfig
from offsetscope.quality import suites
from offsetscope.quality.model import ExpectationResult, QualityResultRow
from offsetscope.quality.validate import FAILED, in_micros, result_row, start, timestamp_columns

# great-expectations' snake-case name of each expectation class the suites use.
EXPECTATION_TYPES = {
    "ExpectColumnValuesToNotBeNull": "expect_column_values_to_not_be_null",
    "ExpectColumnValuesToBeUnique": "expect_column_values_to_be_unique",
    "ExpectCompoundColumnsToBeUnique": "expect_compound_columns_to_be_unique",
    "ExpectColumnValuesToBeInSet": "expect_column_values_to_be_in_set",
    "ExpectColumnValuesToBeBetween": "expect_column_values_to_be_between",
    "ExpectColumnPairValuesAToBeGreaterThanB": "expect_column_pair_values_a_to_be_greater_than_b",
}


_UNIQUE = ("ExpectColumnValuesToBeUnique", "ExpectCompoundColumnsToBeUnique")


class UnsupportedCheckError(ValueError):
    """A check whose expectation type has no compiled form (add it here before using it)."""


def broken(
    check: suites.Check,
    timestamps: frozenset[str] = frozenset(),
    *,
    repeats: bool = True,
) -> Column:
    """A boolean column: true where a row breaks ``check``, false otherwise (never null).

    ``repeats=False`` says that no value of a uniqueness check's columns appears twice in the
    batch (:func:`repeats`): its column is then false without the window over the batch.

    ``timestamps`` are the timestamp columns among the check's: compared as epoch microseconds
    with the check's bounds likewise (:func:`offsetscope.quality.validate.in_micros`), as the
    great-expectations gate compares them -- a Python datetime literal would be read in the
    driver's local time zone.

    Raises:
        UnsupportedCheckError: the check's expectation type is not compiled here.
    """

    def _col(name: str) -> Column:
        c = F.col(f"`{name}`")
        return F.unix_micros(c) if name in timestamps else c

    kw: dict[str, Any] = dict(in_micros(check, timestamps).kwargs)
    kind = check.expectation
    if kind == "ExpectColumnValuesToNotBeNull":
        return _col(kw["column"]).isNull()
    if kind in _UNIQUE and not repeats:
        return F.lit(False)
    if kind == "ExpectColumnValuesToBeUnique":
        c = _col(kw["column"])
        return c.isNotNull() & (F.count(F.lit(1)).over(Window.partitionBy(c)) > 1)
    if kind == "ExpectCompoundColumnsToBeUnique":
        cols = [_col(c) for c in kw["column_list"]]
        any_value = F.greatest(*[c.isNotNull().cast("int") for c in cols]) == 1
        return any_value & (F.count(F.lit(1)).over(Window.partitionBy(*cols)) > 1)
    if kind == "ExpectColumnValuesToBeInSet":
        c = _col(kw["column"])
        return F.coalesce(c.isNotNull() & ~c.isin(list(kw["value_set"])), F.lit(False))
    if kind == "ExpectColumnValuesToBeBetween":
        c = _col(kw["column"])
        outside = F.lit(False)
        if kw.get("min_value") is not None:
            outside = outside | (c < F.lit(kw["min_value"]))
        if kw.get("max_value") is not None:
            if kw["column"] in timestamps:
                outside = outside | _after(c, kw["max_value"])
            else:
                outside = outside | (c > F.lit(kw["max_value"]))
        return F.coalesce(c.isNotNull() & outside, F.lit(False))
    if kind == "ExpectColumnPairValuesAToBeGreaterThanB":
        if kw.get("ignore_row_if") != "either_value_is_missing":
            raise UnsupportedCheckError(f"{check.name}: only ignore_row_if=either_value_is_missing")
        a, b = _col(kw["column_A"]), _col(kw["column_B"])
        ordered = a >= b if kw.get("or_equal") else a > b
        return F.coalesce(a.isNotNull() & b.isNotNull() & ~ordered, F.lit(False))
    raise UnsupportedCheckError(f"{check.name}: {kind} has no compiled form")


# The epoch microseconds of every Spark timestamp (years 1 to 9999) have at most 18 digits.
_MICROS = DecimalType(18, 0)
_MAX_MICROS = 10**18 - 1


def _after(micros: Column, bound: int) -> Column:
    """True where ``micros`` (epoch microseconds, non-null) is above ``bound``: a timestamp's
    upper bound, the validation time plus ``[quality] future_tolerance``, new in every batch.

    Spark writes a ``bigint`` literal into the generated code itself, so each batch's bound
    would be new code for the stage that reads the batch -- the plain commits' decode and
    append, the lag rows' write: compiled again, and then compiled again by the JVM's JIT,
    every batch. A ``decimal`` literal reaches the generated code as a reference, so the code
    stays the same from batch to batch; the comparison is still exact. ``decimal(18,0)``
    holds every timestamp's microseconds, and it is narrower than a ``bigint``, so Spark does
    not unwrap the cast back into a ``bigint`` comparison (``UnwrapCastInBinaryComparison``
    only unwraps casts that cannot lose a value).
    """
    # Bounds beyond every timestamp Spark holds, either way: no decimal(18,0) literal.
    if bound >= _MAX_MICROS:
        return F.lit(False)
    if bound <= -_MAX_MICROS:
        return F.lit(True)
    return micros.cast(_MICROS) > F.lit(Decimal(bound)).cast(_MICROS)


def repeats(df: DataFrame, columns: Sequence[str]) -> bool:
    """Whether some value of ``columns`` (a uniqueness check's, or a batch's record
    coordinates) appears more than once in ``df``.

    One hash aggregation (partial counts in each task, no sort), and a Spark job: cheaper
    than the window the check needs to name the rows, which sorts the whole batch and which
    the usual batch -- whose keys are unique by construction -- does not need.
    """
    cols = [F.col(f"`{c}`") for c in columns]
    return not df.groupBy(*cols).count().where(F.col("count") > 1).isEmpty()


_MARK_PREFIX = "__repeats__"
# The gate's own column in a written batch: whether the row breaks some check.
_BAD = "__breaks_some_check"


def mark_column(check: suites.Check) -> str:
    """The column in which a batch's producer marks the rows that break the uniqueness check
    ``check`` (true: the row's values repeat in the batch). It must mark them over the whole
    batch -- where it knows that rows sharing the values are built together."""
    return _MARK_PREFIX + re.sub(r"\W", "_", check.name)


def drop_marks(df: DataFrame) -> DataFrame:
    """``df`` without its producer's marks (:func:`mark_column`)."""
    return df.drop(*[c for c in df.columns if c.startswith(_MARK_PREFIX)])


def annotate(
    df: DataFrame, checks: Sequence[suites.Check], unique: Sequence[str] = ()
) -> DataFrame:
    """``df`` plus ``failed_expectations``: the names of the checks each row breaks (empty
    for a row that passes), in the suite's order; without the producer's marks.

    A uniqueness check whose :func:`mark_column` the batch carries reads it; one over every
    column of ``unique`` (columns the producer knows no two rows share) or more finds no
    repeats and runs no job; any other finds its repeats with a job over the batch
    (:func:`repeats`) and names them with a window.
    """
    return drop_marks(df.withColumn(FAILED, _named(checks, _breaks(df, checks, unique))))


def _breaks(df: DataFrame, checks: Sequence[suites.Check], unique: Sequence[str]) -> list[Column]:
    """One :func:`broken` column per check, in order (see :func:`annotate`)."""
    timestamps = timestamp_columns(df.schema)

    def breaks(c: suites.Check) -> Column:
        if c.expectation in _UNIQUE and mark_column(c) in df.columns:
            return F.col(f"`{mark_column(c)}`")
        if c.expectation in _UNIQUE and unique and set(unique) <= set(c.columns):
            return broken(c, timestamps, repeats=False)
        return broken(c, timestamps, repeats=c.expectation not in _UNIQUE or repeats(df, c.columns))

    return [breaks(c) for c in checks]


def _named(checks: Sequence[suites.Check], breaks: Sequence[Column]) -> Column:
    """``failed_expectations`` from the checks' :func:`broken` columns. The names array is
    built only for a row that breaks some check: building it and filtering out its nulls (a
    higher-order function, evaluated row by row outside Spark's generated code) for every row
    made most of a gate's cost, and the usual row breaks nothing."""
    names = F.array(*[F.when(b, F.lit(c.name)) for c, b in zip(checks, breaks, strict=True)])
    return F.when(_any(breaks), F.filter(names, lambda n: n.isNotNull())).otherwise(
        F.array().cast("array<string>")
    )


def _any(breaks: Sequence[Column]) -> Column:
    """True where a row breaks some check (no checks: never)."""
    return functools.reduce(operator.or_, breaks, F.lit(False))


@dataclass(frozen=True, slots=True)
class Gated:
    """A batch through its gate: what to write, what to quarantine, and the results row.

    ``good`` and ``failed`` read the annotated batch, computed once and kept until
    :meth:`release` (call it once both are written).
    """

    good: DataFrame
    failed: DataFrame
    result: QualityResultRow
    annotated: DataFrame

    def release(self) -> None:
        self.annotated.unpersist()


def validate_frame(
    df: DataFrame,
    table: str,
    batch_id: int,
    *,
    settings: QualityConfig | None = None,
    clock: Clock | None = None,
    unique: Sequence[str] = (),
) -> Gated:
    """Validate a batch of ``table`` with its suite, in the executors; split good from failed.

    One aggregation brings the counts to the driver; ``good`` is every row no check named (all
    rows when ``quarantine_failed_rows`` is off), ``failed`` the named rows plus
    ``failed_expectations``. ``unique``: see :func:`annotate`.

    Raises:
        KeyError: ``table`` has no suite.
    """
    settings, started, now, checks = start(table, df.columns, settings, clock)
    annotated = annotate(df, checks, unique).persist()
    counts = annotated.agg(*_counters(checks)).first()
    if counts is None:  # an aggregation without grouping returns one row, even on no rows
        raise RuntimeError(f"no counts for the {table} gate")
    row = _result(table, batch_id, counts.asDict(), checks, now, started)
    failed = annotated.where(F.size(FAILED) > 0)
    passing = annotated.where(F.size(FAILED) == 0) if settings.quarantine_failed_rows else annotated
    return Gated(passing.drop(FAILED), failed, row, annotated)


@dataclass(frozen=True, slots=True)
class Observed:
    """A batch through its gate in the pass that writes it (:func:`observe_frame`).

    ``good`` is what to write: the rows no check named, counted as the write reads them. Once
    that write has run, :meth:`result` is the results row and :meth:`failed` the named rows
    (computed again from the batch, so only worth reading when the result counts some).
    """

    good: DataFrame
    annotated: DataFrame
    observation: Observation
    table: str
    batch_id: int
    checks: tuple[suites.Check, ...]
    now: int
    started: float

    def result(self) -> QualityResultRow:
        """The results row; call it after ``good`` was written (it waits for that write).

        The write counted the rows and the failed rows only; when some failed, the count per
        check is a job over the failed rows (:meth:`failed`).
        """
        counts = self.observation.get
        if not counts:
            raise RuntimeError(f"the {self.table} gate's write reported no counts")
        per_check: Mapping[str, Any] = {f"c{i}": 0 for i in range(len(self.checks))}
        if int(counts["failed"]):
            found = self.failed().agg(*_per_check(self.checks)).first()
            if found is None:  # an aggregation without grouping returns one row
                raise RuntimeError(f"no counts per check for the {self.table} gate")
            per_check = found.asDict()
        counts = {**counts, **per_check}
        return _result(self.table, self.batch_id, counts, self.checks, self.now, self.started)

    def failed(self) -> DataFrame:
        """The rows some check named, with ``failed_expectations``."""
        return self.annotated.where(F.size(FAILED) > 0)


def observe_frame(
    df: DataFrame,
    table: str,
    batch_id: int,
    *,
    settings: QualityConfig | None = None,
    clock: Clock | None = None,
    unique: Sequence[str] = (),
) -> Observed:
    """Validate a batch of ``table`` in the pass that writes it: the counts
    :func:`validate_frame` aggregates in a job of their own are a Spark ``Observation`` of the
    write instead (the totals; the count per check after it, from the failed rows, when there
    are any), so the batch is read once rather than annotated, persisted and counted first.
    Only a uniqueness check still costs a job before the write (:func:`repeats`), unless
    ``unique`` says its columns cannot repeat (:func:`annotate`).

    The write must run: a write skipped as a replay never reports the counts, so only a batch
    that cannot be a replay (``offsetscope.spark.writes``, fresh) takes this path. Failing rows
    reach quarantine after the table's write, not before it.

    Raises:
        KeyError: ``table`` has no suite.
    """
    settings, started, now, checks = start(table, df.columns, settings, clock)
    observation = Observation()
    breaks = _breaks(df, checks, unique)
    annotated = drop_marks(df.withColumn(FAILED, _named(checks, breaks)))
    # The write reads one boolean per row, not the names: those are only wanted for the
    # failed rows, afterwards. Only the totals: an observation's aggregates are evaluated row
    # by row, each costing the write about as much as the two totals together
    # (docs/benchmarks.md, "Measurements behind design choices"), and the usual batch fails
    # no check.
    counted = df.withColumn(_BAD, _any(breaks)).observe(
        observation, F.count(F.lit(1)).alias("rows"), F.count_if(_BAD).alias("failed")
    )
    good = counted.where(~F.col(_BAD)) if settings.quarantine_failed_rows else counted
    return Observed(
        drop_marks(good.drop(_BAD)), annotated, observation, table, batch_id, checks, now, started
    )


def _counters(checks: Sequence[suites.Check]) -> list[Column]:
    """The aggregates of a gate over an annotated batch: rows, failed rows, rows per check."""
    return [*_totals(), *_per_check(checks)]


def _totals() -> list[Column]:
    return [F.count(F.lit(1)).alias("rows"), F.count_if(F.size(FAILED) > 0).alias("failed")]


def _per_check(checks: Sequence[suites.Check]) -> list[Column]:
    return [
        F.count_if(F.array_contains(FAILED, c.name)).alias(f"c{i}") for i, c in enumerate(checks)
    ]


def _result(
    table: str,
    batch_id: int,
    counts: Mapping[str, Any],
    checks: Sequence[suites.Check],
    now: int,
    started: float,
) -> QualityResultRow:
    expectations = [
        ExpectationResult(
            name=c.name,
            expectation_type=EXPECTATION_TYPES[c.expectation],
            columns=c.columns,
            success=int(counts[f"c{i}"]) == 0,
            unexpected_count=int(counts[f"c{i}"]),
        )
        for i, c in enumerate(checks)
    ]
    return result_row(
        table, batch_id, int(counts["rows"]), int(counts["failed"]), expectations, now, started
    )
