"""TransactionState: wire ids, Kafka's names, and the full transition table, edge by edge."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from offsetscope.protocol.states import (
    TRANSACTION_PREVIOUS,
    IllegalStateTransition,
    TransactionState,
    UnknownTransactionStateError,
    is_valid_transition,
)
from offsetscope.sim.coordinator.txn.metadata import (
    TopicPartition,
    TransactionMetadata,
    TxnTransit,
    new_transaction_metadata,
)

S = TransactionState

# Kafka 4.4 TransactionState.java, static block, written out as (previous, target) edges.
KAFKA_EDGES = {
    (S.Empty, S.Empty),
    (S.CompleteCommit, S.Empty),
    (S.CompleteAbort, S.Empty),
    (S.Ongoing, S.Ongoing),
    (S.Empty, S.Ongoing),
    (S.CompleteCommit, S.Ongoing),
    (S.CompleteAbort, S.Ongoing),
    (S.Ongoing, S.PrepareCommit),
    (S.Ongoing, S.PrepareAbort),
    (S.PrepareEpochFence, S.PrepareAbort),
    (S.Empty, S.PrepareAbort),
    (S.CompleteCommit, S.PrepareAbort),
    (S.CompleteAbort, S.PrepareAbort),
    (S.PrepareCommit, S.CompleteCommit),
    (S.PrepareAbort, S.CompleteAbort),
    (S.Empty, S.Dead),
    (S.CompleteAbort, S.Dead),
    (S.CompleteCommit, S.Dead),
    (S.Ongoing, S.PrepareEpochFence),
}


def test_wire_ids_and_names_are_kafkas() -> None:
    assert [(s.value, s.name) for s in S] == [
        (0, "Empty"),
        (1, "Ongoing"),
        (2, "PrepareCommit"),
        (3, "PrepareAbort"),
        (4, "CompleteCommit"),
        (5, "CompleteAbort"),
        (6, "Dead"),
        (7, "PrepareEpochFence"),
    ]
    assert str(S.PrepareEpochFence) == "PrepareEpochFence"
    # Same codes and names as the decoder's status enum.
    assert [(s.value, s.name) for s in S] == [(t.value, t.name) for t in TransactionState]


@pytest.mark.parametrize("state", list(S))
def test_from_id_and_from_name_round_trip(state: TransactionState) -> None:
    assert S.from_id(state.value) is state
    assert S.from_name(state.name) is state


@pytest.mark.parametrize("code", [-1, 8, 127])
def test_from_id_rejects_unknown_codes(code: int) -> None:
    with pytest.raises(UnknownTransactionStateError) as info:
        S.from_id(code)
    assert info.value.state_id == code
    assert f"Unknown transaction state id {code}" in str(info.value)


def test_from_name_unknown_is_none() -> None:
    assert S.from_name("EMPTY") is None
    assert S.from_name("Running") is None


def test_expiration_allowed_only_when_idle() -> None:
    assert {s for s in S if s.expiration_allowed} == {S.Empty, S.CompleteCommit, S.CompleteAbort}


@pytest.mark.parametrize(("previous", "target"), list(itertools.product(S, S)))
def test_transition_table_edge(previous: TransactionState, target: TransactionState) -> None:
    expected = (previous, target) in KAFKA_EDGES
    assert is_valid_transition(previous, target) is expected
    assert (previous in TRANSACTION_PREVIOUS[target]) is expected
    assert (previous in target.valid_previous) is expected


def _in_state(state: TransactionState) -> TransactionMetadata:
    base = new_transaction_metadata("t", 7, 60_000, 1_000)
    return dataclasses.replace(
        base,
        producer_epoch=3,
        state=state,
        partitions=frozenset() if state is S.Empty else frozenset({TopicPartition("a", 0)}),
        txn_start_timestamp=-1 if state is S.Empty else 900,
    )


def _prepare(meta: TransactionMetadata, target: TransactionState) -> TxnTransit:
    """The prepare_* step Kafka uses to reach ``target``."""
    if target is S.Empty:
        return meta.prepare_increment_producer_epoch(60_000, None, 2_000)
    if target is S.Ongoing:
        return meta.prepare_add_partitions([TopicPartition("b", 1)], 2_000, 0)
    if target in (S.PrepareCommit, S.PrepareAbort):
        return meta.prepare_abort_or_commit(target, 0, -1, 2_000, False)
    if target in (S.CompleteCommit, S.CompleteAbort):
        # prepare_complete picks the Complete* matching the current Prepare*.
        return meta.prepare_complete(2_000)
    if target is S.Dead:
        return meta.prepare_dead()
    return meta.prepare_fence_producer_epoch()


_PREPARABLE = [S.Empty, S.Ongoing, S.PrepareCommit, S.PrepareAbort, S.Dead, S.PrepareEpochFence]


@pytest.mark.parametrize(("current", "target"), list(itertools.product(S, _PREPARABLE)))
def test_prepare_obeys_the_table(current: TransactionState, target: TransactionState) -> None:
    meta = _in_state(current)
    if (current, target) in KAFKA_EDGES:
        transit = _prepare(meta, target)
        assert transit.state is target
        assert transit.prev_producer_id == meta.producer_id
    else:
        with pytest.raises(IllegalStateTransition) as info:
            _prepare(meta, target)
        assert info.value.entity_id == "t"
        assert info.value.current is current
        assert info.value.target is target
        assert info.value.allowed == TRANSACTION_PREVIOUS[target]
        assert f"cannot move from {current.name} to {target.name}" in str(info.value)


@pytest.mark.parametrize("current", list(S))
def test_prepare_complete_follows_the_prepare_state(current: TransactionState) -> None:
    meta = _in_state(current)
    if current is S.PrepareCommit:
        assert meta.prepare_complete(5).state is S.CompleteCommit
    elif current is S.PrepareAbort:
        assert meta.prepare_complete(5).state is S.CompleteAbort
    else:
        with pytest.raises(IllegalStateTransition):
            meta.prepare_complete(5)


@pytest.mark.parametrize("target", [S.Dead, S.PrepareEpochFence])
def test_transient_states_are_never_completed(target: TransactionState) -> None:
    meta = _in_state(S.Ongoing if target is S.PrepareEpochFence else S.Empty)
    transit = _prepare(meta, target)
    with pytest.raises(IllegalStateTransition):
        meta.complete(transit)
