"""The driver's parsed fold states (``IngestPipeline._parse``): a state is parsed from its
stored text once, and used again only while the mirror's text of its key is that same text.

No Spark: the pipeline is built without samplers, and its mirror rows are made here. That the
fold's own states, kept after a batch, fold the same as states parsed after a restart is what
the streaming restart tests and the chaos trials compare."""

from __future__ import annotations

from history_log import T0, Log, M

from offsetscope import config
from offsetscope.clusters import StateKey
from offsetscope.history import fold_group
from offsetscope.history.groups import GroupState
from offsetscope.pipelines import batch
from offsetscope.pipelines import state as st

KEY = StateKey("default", "group", "g")


def _state(generation: int) -> GroupState:
    log = Log()
    log.group("g", generation, [M("a", [("orders", 0)])], T0)
    state, _ = fold_group(None, log.events)
    assert state is not None
    return state


def _row(state: GroupState) -> st.StateRow:
    return st.StateRow(KEY.fold, KEY.key, state.to_json(), state.last_offset, KEY.cluster)


def _pipeline() -> batch.IngestPipeline:
    return batch.IngestPipeline(
        config.with_pipeline(config.load("local"), sample_end_offsets=False)
    )


def test_a_state_is_parsed_once_for_its_text() -> None:
    pipe = _pipeline()
    row = _row(_state(1))
    first = pipe._parse(KEY, row)
    assert first == GroupState.from_json(row.state)
    assert pipe._parse(KEY, row) is first
    # The same text in a new row (a later version of an unchanged state): still the same state.
    assert pipe._parse(KEY, _row(_state(1))) is first


def test_a_new_text_of_the_key_is_parsed_again() -> None:
    pipe = _pipeline()
    old = pipe._parse(KEY, _row(_state(1)))
    newer = _row(_state(2))
    state = pipe._parse(KEY, newer)
    assert state is not old
    assert state == GroupState.from_json(newer.state)
    assert state.current is not None
    assert state.current.generation == 2


def test_a_state_the_fold_made_is_used_for_its_own_text_only() -> None:
    pipe = _pipeline()
    made = _state(3)
    row = _row(made)
    pipe._parsed[KEY] = (row.state, made)
    assert pipe._parse(KEY, row) is made
    # Another key's row of the same text is parsed for that key.
    other = StateKey("default", "group", "h")
    assert pipe._parse(other, row) is not made
