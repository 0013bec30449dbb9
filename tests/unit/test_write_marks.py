"""The commit mark of an idempotent write (offsetscope.spark.writes): written and read back."""

from __future__ import annotations

import json

import pytest

from offsetscope.spark import writes


def test_a_mark_reads_back_as_its_app_id_and_version() -> None:
    text = writes.mark("q:raw_records:append", 41)
    assert writes.marked(text) == ("q:raw_records:append", 41)
    assert json.loads(text) == {"offsetscope_write": {"app": "q:raw_records:append", "version": 41}}


@pytest.mark.parametrize(
    "metadata",
    [
        None,
        "",
        "a note a user left on a commit",
        "[1, 2]",
        '{"offsetscope_write": "q:t:append"}',
        '{"offsetscope_write": {"app": "q:t:append"}}',
        '{"offsetscope_write": {"app": "q:t:append", "version": "4"}}',
        '{"offsetscope_write": {"app": 7, "version": 4}}',
        '{"other": {"app": "q:t:append", "version": 4}}',
    ],
)
def test_commits_without_a_well_formed_mark_are_nobody_s(metadata: str | None) -> None:
    assert writes.marked(metadata) is None


def test_only_a_batch_right_after_one_completed_here_is_fresh() -> None:
    sequence = writes.BatchSequence()
    assert not sequence.begin(4)  # the first batch after a start may be a replay
    sequence.done(4)
    assert sequence.begin(5)
    sequence.done(5)
    assert not sequence.begin(5)  # the same id again: Spark replays it
    sequence.done(5)
    assert sequence.begin(6)
    # Batch 6 fails (no done): whatever comes next is checked, 6 included.
    assert not sequence.begin(6)
    sequence.done(6)
    assert not sequence.begin(8)  # a gap: not the batch Spark starts after 6
    sequence.done(8)
    assert not sequence.begin(0)  # a new checkpoint's first batch
