"""Incremental folds: any batching of the log gives the same tables, states and bytes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from history_scenario import EVENTS, WHOLE, WHOLE_STATES, digest, fold_in_chunks
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetscope.history import fold_batch
from offsetscope.history.tables import TABLES


def test_the_scenario_exercises_every_table() -> None:
    for name, rows in WHOLE.items():
        assert rows, name
        assert name in TABLES
    statuses = {r.status for r in WHOLE["offset_commits"].values()}
    assert statuses == {"committed", "aborted", "superseded"}
    reasons = {r.end_reason for r in WHOLE["transactions"].values()}
    assert reasons == {"client_commit", "timeout", "fenced"}
    assert any(r.static_replacements for r in WHOLE["group_generations"].values())
    topics = {r.topic for r in WHOLE["partition_assignments"].values() if r.group_id == "k"}
    assert topics == {"events", "audit"}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(EVENTS)), max_size=10))
def test_any_split_gives_the_same_tables_and_states(cuts: list[int]) -> None:
    states, tables = fold_in_chunks(cuts)
    assert states == WHOLE_STATES
    for name, rows in WHOLE.items():
        assert tables[name] == rows, name


def test_one_event_per_batch_gives_the_same_tables() -> None:
    states, tables = fold_in_chunks(list(range(len(EVENTS))))
    assert states == WHOLE_STATES
    assert tables == WHOLE


def test_a_replayed_batch_adds_nothing() -> None:
    states, _ = fold_batch(None, EVENTS)
    again, out = fold_batch(states, EVENTS)
    assert again == states
    assert out.group_generations == ()
    assert out.offset_commits == ()
    assert out.transactions == ()
    assert out.group_state_transitions == ()


def test_outputs_are_deterministic_across_runs_and_hash_seeds() -> None:
    here = digest()
    assert digest() == here
    code = "import history_scenario as t; print(t.digest())"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).parents[1] / "support",
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert done.stdout.strip() == here


def test_every_history_table_and_column_says_what_it_holds() -> None:
    # The catalog shows these comments to SQL users (DESCRIBE, the Databricks catalog explorer);
    # the streaming test of the operator's view reads them back from the metastore.
    for table in TABLES.values():
        assert table.comment, table.name
        assert [c.name for c in table.columns if not c.comment] == [], table.name
