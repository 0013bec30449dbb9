"""The fold states the driver keeps parsed (``IngestPipeline._parse``): the states the last
saved batch's fold made, each used only while the mirror's text of its key is that state's
text; any other state is parsed from its text.

No Spark: the pipeline is built without samplers, and its rows are made here. That the fold's
own states, kept after a batch, fold the same as states parsed after a restart is what the
streaming restart tests and the chaos trials compare."""

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


def _row(state: GroupState, seq: int | None = None) -> st.StateRow:
    return st.StateRow(KEY.fold, KEY.key, state.to_json(), state.last_offset, KEY.cluster, seq)


def _pipeline(made: GroupState | None = None) -> batch.IngestPipeline:
    pipe = batch.IngestPipeline(
        config.with_pipeline(config.load("local"), sample_end_offsets=False)
    )
    if made is not None:
        pipe._parsed = {KEY: (made.to_json(), made)}
    return pipe


def test_a_state_the_last_batch_made_is_taken_for_its_text() -> None:
    made = _state(3)
    pipe = _pipeline(made)
    assert pipe._parse(KEY, _row(made)) is made
    # The mirror's row at a later version of the same state: the same text, the same state.
    assert pipe._parse(KEY, _row(made, seq=4)) is made


def test_another_text_of_the_key_is_parsed() -> None:
    made = _state(3)
    pipe = _pipeline(made)
    newer = _row(_state(4))
    state = pipe._parse(KEY, newer)
    assert state is not made
    assert state == GroupState.from_json(newer.state)
    assert state.current is not None
    assert state.current.generation == 4


def test_a_state_is_kept_for_its_own_key_only() -> None:
    made = _state(3)
    pipe = _pipeline(made)
    other = StateKey("default", "group", "h")
    parsed = pipe._parse(other, _row(made))
    assert parsed is not made
    assert parsed == made
    # Nothing read is kept: a state parsed from its text is parsed again the next time.
    assert pipe._parse(other, _row(made)) is not parsed
