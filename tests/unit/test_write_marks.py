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
