"""The fold states' versions (``pipelines/state.py``): a batch's states are appended one version
past the states they replace, and only states whose predecessors were looked up can be."""

from __future__ import annotations

import pytest

from offsetscope.pipelines import state as st


def _row(key: str, text: str = "{}", cluster: str = "c", seq: int | None = None) -> st.StateRow:
    return st.StateRow(st.GROUP, key, text, None, cluster, seq)


def test_a_state_is_one_version_past_the_one_it_replaces_and_a_new_key_starts_at_zero() -> None:
    before = {
        ("c", st.GROUP, "old"): _row("old", seq=4),
        ("c", st.GROUP, "new"): None,
        ("d", st.GROUP, "old"): _row("old", cluster="d", seq=0),
    }
    rows = [_row("old", "a"), _row("new", "b"), _row("old", "c", cluster="d")]
    assert st.versioned(rows, before) == [
        _row("old", "a", seq=5),
        _row("new", "b", seq=0),
        _row("old", "c", cluster="d", seq=1),
    ]


def test_a_key_written_twice_in_a_batch_keeps_its_last_state() -> None:
    rows = [_row("g", "first"), _row("g", "second")]
    assert st.versioned(rows, {("c", st.GROUP, "g"): _row("g", seq=1)}) == [
        _row("g", "second", seq=2)
    ]


def test_a_state_whose_predecessor_was_not_looked_up_is_refused() -> None:
    with pytest.raises(KeyError):
        st.versioned([_row("unknown")], {})
    # Nor can an unversioned state be written.
    with pytest.raises(ValueError, match="has no version"):
        st.records([_row("g")], batch_id=1, now_ms=0)
