"""What a quality validation produces: a results row per (table, batch) and quarantined rows.

Kept free of Spark and great-expectations so that the alert rules (which read results back)
and unit tests import it for nothing.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ExpectationResult:
    """One expectation of a suite on one batch."""

    name: str  # the check's name in the suite, e.g. "generation_increases"
    expectation_type: str  # great-expectations' name, e.g. "expect_column_values_to_not_be_null"
    columns: tuple[str, ...]
    success: bool
    unexpected_count: int  # rows that broke it (for table-level checks: the offending rows)


@dataclass(frozen=True, slots=True)
class QualityResultRow:
    """``quality_results``: one suite run on one micro-batch of one table."""

    table_name: str
    batch_id: int
    suite: str
    success: bool
    evaluated_rows: int
    failed_rows: int  # rows sent to quarantine (a row breaking several checks counts once)
    expectations: tuple[ExpectationResult, ...]
    failed_expectations: tuple[str, ...]
    validated_at: int  # epoch ms
    seconds: float


@dataclass(frozen=True, slots=True)
class QuarantinedRow:
    """``quality_quarantine``: a row that broke at least one expectation, kept with why."""

    table_name: str
    batch_id: int
    row_key: str  # the row's natural key as JSON (stable across replays)
    failed_expectations: tuple[str, ...]
    row_json: str  # the whole row as JSON (tables differ in columns)
    quarantined_at: int
