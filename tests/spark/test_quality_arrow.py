"""The suites compiled to Arrow compute decide as great-expectations does on the same rows:
every gold table's suite, on random batches built from the table's own schema with nulls,
repeated keys, values outside the sets and bounds, and pairs out of order."""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
from typing import Any

import pyarrow as pa
import pytest
from generation_rows import T
from pyspark.sql import SparkSession
from quality_rows import CLEAN, DUPLICATES, NOW, PLANTED

from offsetscope.config import QualityConfig
from offsetscope.quality import arrow, suites
from offsetscope.quality.expressions import UnsupportedCheckError
from offsetscope.quality.validate import FAILED, bounds, validate_table
from offsetscope.spark import tables as catalogue
from offsetscope.spark import writes

pytestmark = pytest.mark.spark


@pytest.fixture(autouse=True)
def _session_first(spark: SparkSession) -> None:
    """No test here uses Spark (great-expectations' pandas engine is the oracle), but the run's
    session must exist before great-expectations' context is built: its Spark data source would
    otherwise start a session of its own, without Delta, which the later tests would get."""


UTC = dt.UTC


def _sets(table: str) -> dict[str, list[Any]]:
    """The value set of each in-set check's column."""
    out: dict[str, list[Any]] = {}
    for check in suites.checks_for(table, *bounds(QualityConfig(), NOW.now_ms())):
        kw = dict(check.kwargs)
        if check.expectation == "ExpectColumnValuesToBeInSet":
            out[kw["column"]] = list(kw["value_set"])
    return out


def _value(rng: random.Random, field: pa.Field, allowed: list[Any] | None) -> Any:
    t = field.type
    if rng.random() < 0.08:
        return None
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        if allowed is not None:
            return rng.choice([*allowed, *allowed, "bogus"])
        return rng.choice(["a", "b", "c"])
    if pa.types.is_integer(t):
        return rng.choice([-3, -1, 0, 0, 1, 2, 5, 99])
    if pa.types.is_floating(t):
        return rng.choice([-0.5, 0.0, 1.5, 99.0])
    if pa.types.is_boolean(t):
        return rng.random() < 0.5
    if pa.types.is_timestamp(t):
        at = T + rng.randrange(-5, 5) * 60_000
        ms = rng.choice([at, at, at, T + 400 * 86_400_000, 0, writes.MAX_TIMESTAMP_MS])
        return dt.datetime.fromtimestamp(ms / 1000, tz=UTC)
    if pa.types.is_date(t):
        return dt.date(2026, 11, rng.choice([1, 2]))
    return None  # lists, maps, structs: no check reads them


def _random_batch(rng: random.Random, table: str, n: int) -> pa.Table:
    schema = catalogue.arrow_schema(catalogue.spec(table))
    schema = pa.schema([f.with_nullable(True) for f in schema])
    sets = _sets(table)
    rows = [{f.name: _value(rng, f, sets.get(f.name)) for f in schema} for _ in range(n)]
    for row in rows:
        if catalogue.CLUSTER in row and row[catalogue.CLUSTER] is not None:
            row[catalogue.CLUSTER] = rng.choice(["east", "west"])
    rows += [dict(r) for r in rng.sample(rows, n // 10)]  # whole rows twice
    return pa.Table.from_pylist(rows, schema=schema)


def _same(table: pa.Table, logical: str, **settings: Any) -> None:
    quality = QualityConfig(**settings)
    good_a, failed_a, result_a = arrow.validate_rows(table, logical, 3, clock=NOW, settings=quality)
    good_g, failed_g, result_g = validate_table(table, logical, 3, clock=NOW, settings=quality)
    assert good_a.equals(good_g)
    assert failed_a.to_pylist() == failed_g.to_pylist()
    assert dataclasses.replace(result_a, seconds=0) == dataclasses.replace(result_g, seconds=0)


@pytest.mark.parametrize("logical", suites.TABLES)
@pytest.mark.parametrize("seed", [1, 2])
def test_random_batches_of_every_table_get_great_expectations_decision(
    logical: str, seed: int
) -> None:
    batch = _random_batch(random.Random(f"{logical}-{seed}"), logical, 120)
    _same(batch, logical)
    good, failed, result = arrow.validate_rows(batch, logical, 3, clock=NOW)
    # the random rows do break checks: the comparison is not between two empty verdicts
    assert not result.success
    assert failed.num_rows == result.failed_rows > 0
    assert good.num_rows + failed.num_rows == batch.num_rows


def test_planted_generations_and_duplicates_break_their_checks() -> None:
    rows = [*CLEAN, *(r for r, _ in PLANTED.values()), *DUPLICATES]
    batch = writes.rows_table("group_generations", rows, cluster="default")
    _same(batch, "group_generations")
    _same(batch, "group_generations", quarantine_failed_rows=False)
    _, failed, _ = arrow.validate_rows(batch, "group_generations", 3, clock=NOW)
    broke = {(r["group_id"], r["generation"]): set(r[FAILED]) for r in failed.to_pylist()}
    for row, checks in PLANTED.values():
        assert broke[(row.group_id, row.generation)] == checks
    assert broke[("k", 1)] == {"unique:group_id,group_life,generation"}


def test_a_clean_batch_and_an_empty_one_pass() -> None:
    clean = writes.rows_table("group_generations", CLEAN, cluster="default")
    _same(clean, "group_generations")
    _same(clean.slice(0, 0), "group_generations")
    good, failed, result = arrow.validate_rows(clean, "group_generations", 3, clock=NOW)
    assert result.success
    assert good.equals(clean)
    assert failed.num_rows == 0


def test_every_check_of_every_suite_compiles_and_others_are_refused() -> None:
    rows = writes.rows_table("group_generations", CLEAN, cluster="default")
    for table in suites.TABLES:
        batch = _random_batch(random.Random(table), table, 5)
        for check in suites.checks_for(table, *bounds(QualityConfig(), NOW.now_ms())):
            assert len(arrow.broken(check, batch)) == batch.num_rows
    bogus = suites.Check("x", "ExpectColumnValuesToMatchRegex", (("column", "state"),), ("state",))
    with pytest.raises(UnsupportedCheckError, match="no compiled form"):
        arrow.broken(bogus, rows)
