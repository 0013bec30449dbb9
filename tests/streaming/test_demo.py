"""``make demo`` end to end on the run's shared session: a catalogue scenario through the bundled
coordinators into a log directory, the ingest pipeline into Delta, and the demo's questions,
whose answers are checked against the scenario's ground truth (not against a stored copy)."""

from __future__ import annotations

import dataclasses
import uuid
from collections import Counter
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from offsetscope import config
from offsetscope.sim.scenarios.truth import read_ground_truth
from offsetscope.verify import demo
from offsetscope.verify.accuracy import CAUSES

pytestmark = [pytest.mark.spark, pytest.mark.streaming]

# Rebalances, a static member, a crash and transactions that commit, abort and time out.
SCENARIO = "transactions"


@pytest.fixture(scope="module")
def run(
    spark: SparkSession, offsetscope_config: config.Config, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[list[demo.Answer], list[dict[str, object]], config.Config, str]]:
    schema = f"t_demo_{uuid.uuid4().hex[:8]}"
    base = dataclasses.replace(
        offsetscope_config,
        storage=dataclasses.replace(offsetscope_config.storage, schema=schema),
    )
    work = tmp_path_factory.mktemp("demo")
    lines: list[str] = []
    answers, timings = demo.run_demo(
        lambda cfg: spark, base, work, progress=lines.append, scenario=SCENARIO
    )
    truth = read_ground_truth(work / "logs" / "ground_truth.jsonl")
    try:
        yield answers, truth, base, "\n".join([*lines, timings.line()])
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _answer(answers: list[demo.Answer], title_start: str) -> list[dict[str, object]]:
    (a,) = [a for a in answers if a.question.title.startswith(title_start)]
    return [dict(zip(a.columns, row, strict=True)) for row in a.rows]


def test_progress_lines_name_every_stage_and_the_batches(run: tuple) -> None:
    _, _, _, progress = run
    for stage in ("[1/3] simulate", "[2/3] ingest", "[3/3] questions", "batch 0:"):
        assert stage in progress
    assert "0 quarantined, 0 unknown" in progress


def test_rebalances_in_the_last_hour_match_the_truth(run: tuple) -> None:
    answers, truth, _, _ = run
    (start,) = [t for t in truth if t["type"] == "ScenarioStarted"]
    window = start["end_ms"] - 3_600_000
    expected = Counter(
        t["group_id"]
        for t in truth
        if t["type"] == "GenerationStarted" and window < t["at_ms"] <= start["end_ms"]
    )
    got = {r["group_id"]: r["rebalances_last_hour"] for r in _answer(answers, "Which groups")}
    assert got == dict(expected)
    # The history question shows the group that rebalanced most, every generation of it.
    top = min(expected, key=lambda g: (-expected[g], g))  # the question's ORDER BY
    history = _answer(answers, "Generation history")
    assert (
        answers[1].question.title
        == f"Generation history of '{top}' (the group that rebalanced most)"
    )
    stored = {
        t["generation_id"]
        for t in truth
        if t["type"] == "AssignmentStored" and t["group_id"] == top
    }
    assert stored <= {r["generation"] for r in history}


def test_transactions_by_outcome_match_the_truth(run: tuple) -> None:
    answers, truth, _, _ = run
    expected = Counter(
        (t["outcome"], CAUSES.get(t["cause"], t["cause"]))
        for t in truth
        if t["type"] == "TxnOutcome"
    )
    got = {
        (r["outcome"], r["end_reason"]): r["transactions"]
        for r in _answer(answers, "Transactions by outcome")
        if r["outcome"] != "ongoing"
    }
    assert got == dict(expected)
    hanging = _answer(answers, "Hanging and fenced")
    assert {r["transactional_id"] for r in hanging} == {
        t["transactional_id"]
        for t in truth
        if t["type"] == "TxnOutcome" and (t["timed_out"] or t["fenced"])
    }


def test_every_group_of_the_truth_has_a_current_state_and_lag(run: tuple) -> None:
    answers, truth, _, _ = run
    groups = {t["group_id"] for t in truth if t["type"] == "GenerationStarted"}
    current = {r["group_id"]: r for r in _answer(answers, "Every group now")}
    assert groups <= set(current)
    lag = _answer(answers, "Current lag")
    assert lag, "lag per group"
    for r in lag:
        # Segment data is readable offline: lag in seconds is exact, and present whenever
        # there is lag in records.
        assert r["lag_records"] >= 0
        assert (r["max_lag_seconds"] is not None) or r["lag_records"] == 0


def test_the_accuracy_check_passes_on_the_tables_and_catches_planted_errors(
    spark: SparkSession, run: tuple
) -> None:
    """``make accuracy``'s comparison on the demo's tables: 0 wrong, and each planted error in
    the gold rows is reported in its category (the check can fail)."""
    from offsetscope.verify import accuracy

    _, truth, cfg, _ = run
    gold = accuracy.read_gold(spark, cfg)
    clean = accuracy.compare(SCENARIO, truth, gold).result()
    assert clean.wrong == 0, [m.line() for m in clean.mismatches]
    assert {"generation", "rebalances", "transaction", "lag"} <= set(clean.checked)

    def planted(**changes: object) -> set[str]:
        result = accuracy.compare(SCENARIO, truth, dataclasses.replace(gold, **changes)).result()
        return {m.category for m in result.mismatches}

    gens = list(gold.generations)
    stored = next(i for i, g in enumerate(gens) if g["member_ids"])
    gens[stored] = {**gens[stored], "leader": "someone-else"}
    assert "generation" in planted(generations=gens)
    extra = [*gold.generations, {**gens[stored], "generation": 999, "rebalances": 1}]
    assert "rebalances" in planted(generations=extra)
    txns = [dict(t) for t in gold.transactions]
    flipped = next(t for t in txns if t["outcome"] == "committed")
    flipped["outcome"] = "aborted"
    assert planted(transactions=txns) == {"transaction"}
    commits = [dict(c) for c in gold.commits]
    for c in commits:
        if c["status"] == "committed":
            c["offset"] += 1
    assert "lag" in planted(commits=commits)
