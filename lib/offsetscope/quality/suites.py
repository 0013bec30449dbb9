"""One data-quality suite per gold table, written in code as a list of checks.

A :class:`Check` names one great-expectations expectation and its arguments; :func:`suite_for`
turns a table's checks into a ``gx.ExpectationSuite`` (each expectation carries its check name in
``meta``, so results and quarantined rows say which check failed). What every suite checks:

* **keys**: every natural-key column is non-null, and no natural key appears twice in a batch
  (a batch of upserts has one row per key);
* **state names**: group states are Kafka's names for classic and KIP-848 groups
  (:mod:`offsetscope.protocol.states`), transaction states the coordinator's
  (:class:`offsetscope.protocol.states.TransactionState`), and the fold's enumerations
  (commit status, transaction outcome, lag method) their declared values;
* **order**: a generation is above the previous one of its group, an end is not before its
  start (a session's ``left_at``, a transaction's ``completed_at``), the high watermark not below
  the log start;
* **offsets and counts** non-negative (``last_stable_offset`` may be -1: unknown);
* **timestamps plausible**: between ``[quality] earliest_timestamp`` and the validation time plus
  ``future_tolerance``.

All checks are row-level (column, column-pair and multi-column map expectations), so each
failure names the rows that caused it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from offsetscope.history import lag, stuck
from offsetscope.history import tables as history
from offsetscope.history.offsets import ABORTED, COMMITTED, DROPPED, PENDING, SUPERSEDED
from offsetscope.protocol.states import ClassicGroupState, ConsumerGroupState, TransactionState

GROUP_STATES = tuple(
    sorted({s.value for s in ClassicGroupState} | {s.value for s in ConsumerGroupState})
)
TXN_STATES = tuple(sorted(s.name for s in TransactionState))
COMMIT_STATUSES = (COMMITTED, PENDING, ABORTED, SUPERSEDED, DROPPED)
TXN_OUTCOMES = ("ongoing", "committed", "aborted")
LAG_METHODS = ("caught_up", "exact", "interpolated", "extrapolated")
LAG_BASIS_REASONS = (
    lag.HINT_READ_COMMITTED,
    lag.HINT_READ_UNCOMMITTED,
    lag.READ_PAST_LSO,
    lag.NO_LSO,
    lag.DEFAULT,
)


@dataclass(frozen=True, slots=True)
class Check:
    """One expectation of a suite: its name, great-expectations class and arguments."""

    name: str
    expectation: str
    kwargs: tuple[tuple[str, Any], ...]
    columns: tuple[str, ...]

    def build(self) -> Any:
        """The great-expectations expectation (imported here: ``import`` costs seconds)."""
        import great_expectations as gx

        cls = getattr(gx.expectations, self.expectation)
        return cls(**dict(self.kwargs), meta={"check": self.name})


def not_null(column: str) -> Check:
    return Check(
        f"not_null:{column}", "ExpectColumnValuesToNotBeNull", (("column", column),), (column,)
    )


def unique(columns: Sequence[str]) -> Check:
    cols = tuple(columns)
    if len(cols) == 1:
        return Check(
            f"unique:{cols[0]}", "ExpectColumnValuesToBeUnique", (("column", cols[0]),), cols
        )
    return Check(
        f"unique:{','.join(cols)}",
        "ExpectCompoundColumnsToBeUnique",
        (("column_list", list(cols)),),
        cols,
    )


def in_set(column: str, values: Sequence[str]) -> Check:
    return Check(
        f"valid:{column}",
        "ExpectColumnValuesToBeInSet",
        (("column", column), ("value_set", list(values))),
        (column,),
    )


def at_least(column: str, minimum: int = 0) -> Check:
    return Check(
        f"at_least_{minimum}:{column}",
        "ExpectColumnValuesToBeBetween",
        (("column", column), ("min_value", minimum)),
        (column,),
    )


def above(a: str, b: str, *, or_equal: bool = False) -> Check:
    sign = ">=" if or_equal else ">"
    return Check(
        f"order:{a}{sign}{b}",
        "ExpectColumnPairValuesAToBeGreaterThanB",
        (
            ("column_A", a),
            ("column_B", b),
            ("or_equal", or_equal),
            ("ignore_row_if", "either_value_is_missing"),
        ),
        (a, b),
    )


def plausible_time(column: str, earliest: dt.datetime, latest: dt.datetime) -> Check:
    return Check(
        f"plausible_time:{column}",
        "ExpectColumnValuesToBeBetween",
        (("column", column), ("min_value", earliest), ("max_value", latest)),
        (column,),
    )


# Per table: the checks beyond keys and timestamps (which every suite gets from the table).
_SPECIFIC: Mapping[str, tuple[Check, ...]] = {
    "group_generations": (
        in_set("state", GROUP_STATES),
        above("generation", "previous_generation"),
        at_least("generation"),
        at_least("member_count"),
        at_least("rebalances"),
        at_least("partitions_moved"),
        at_least("first_record_offset"),
        above("last_record_offset", "first_record_offset", or_equal=True),
    ),
    "group_state_transitions": (
        in_set("to_state", GROUP_STATES),
        in_set("from_state", GROUP_STATES),
        at_least("record_offset"),
    ),
    "member_sessions": (
        above("left_at", "joined_at", or_equal=True),
        above("last_generation", "first_generation", or_equal=True),
    ),
    "partition_assignments": (at_least("generation"), at_least("partition")),
    "groups_current": (
        in_set("state", GROUP_STATES),
        at_least("member_count"),
        above("rebalances_24h", "rebalances_1h", or_equal=True),
    ),
    "offset_commits": (
        at_least("offset"),
        at_least("partition"),
        at_least("record_offset"),
        in_set("status", COMMIT_STATUSES),
    ),
    "transactions": (
        in_set("state", TXN_STATES),
        in_set("outcome", TXN_OUTCOMES),
        at_least("producer_id"),
        at_least("timeout_ms"),
        above("completed_at", "started_at", or_equal=True),
        at_least("partition_count"),
    ),
    "transaction_status_timeline": (
        in_set("to_status", TXN_STATES),
        in_set("from_status", TXN_STATES),
        at_least("record_offset"),
    ),
    "end_offsets": (
        at_least("log_start_offset"),
        above("high_watermark", "log_start_offset", or_equal=True),
        at_least("last_stable_offset", -1),
    ),
    "partition_lag": (
        at_least("committed_offset"),
        at_least("lag_records"),
        at_least("lost_records"),
        in_set("lag_method", LAG_METHODS),
        in_set("lag_basis", (lag.LSO, lag.HIGH_WATERMARK)),
        in_set("basis_reason", LAG_BASIS_REASONS),
        at_least("lag_records_hwm"),
        at_least("lag_records_lso"),
    ),
    "streams_assignments": (at_least("assignment_epoch"), at_least("port")),
    "share_partition_state": (
        at_least("partition"),
        at_least("record_offset"),
        at_least("start_offset", -1),
        at_least("in_flight_records"),
        at_least("acknowledged_records"),
        at_least("archived_records"),
        at_least("max_delivery_count"),
        in_set("record_kind", ("snapshot", "update")),
    ),
    "stuck_partitions": (
        at_least("partition"),
        at_least("last_stable_offset"),
        above("high_watermark", "last_stable_offset"),
        at_least("records_held", 1),
        at_least("first_offset"),
        in_set("cause", (stuck.OPEN_TRANSACTION, stuck.HANGING_TRANSACTION)),
        in_set("first_offset_source", (stuck.FROM_SEGMENTS, stuck.FROM_LSO)),
        above("resolved_at", "stuck_since"),
        above("detected_at", "stuck_since"),
    ),
}

TABLES = tuple(sorted(_SPECIFIC))


def checks_for(table: str, earliest: dt.datetime, latest: dt.datetime) -> tuple[Check, ...]:
    """Every check of ``table``'s suite, timestamps bounded by ``[earliest, latest]``.

    Raises:
        KeyError: ``table`` has no suite.
    """
    if table not in _SPECIFIC:
        raise KeyError(f"no quality suite for table {table!r} (suites: {', '.join(TABLES)})")
    spec = history.TABLES[table]
    keys = tuple(spec.key)
    out = [not_null(c) for c in keys]
    out.append(unique(keys))
    out += [
        plausible_time(c.name, earliest, latest)
        for c in spec.field_columns
        if c.type == "timestamp"
    ]
    out += _SPECIFIC[table]
    return tuple(out)


def suite_for(table: str, checks: Sequence[Check]) -> Any:
    """A ``gx.ExpectationSuite`` named after ``table`` with ``checks``' expectations."""
    import great_expectations as gx

    return gx.ExpectationSuite(name=f"{table}_suite", expectations=[c.build() for c in checks])
