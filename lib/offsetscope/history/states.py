"""The group state machines as the history folds see them: an Enum plus valid previous states.

Classic groups (Kafka ``ClassicGroupState``)::

    Empty ──join──▶ PreparingRebalance ──join phase done──▶ CompletingRebalance ──leader sync──▶ Stable
      ▲                │  ▲  ▲                                   │                              │
      └──no members────┘  │  └───────────rejoin / leave / member failure──────────────────────┘
                          └──────────────────────────────────────┘
    any state ──group removed──▶ Dead

Only two of these moves are persisted (kafka-formats.md section 8.1): "leader's assignment stored"
(a GroupMetadata record with members: CompletingRebalance -> Stable at the record timestamp) and
"join phase ended with no members" (a GroupMetadata record without members: PreparingRebalance ->
Empty at ``currentStateTimestamp``); a tombstone is the move to Dead. The folds infer the others.

KIP-848 consumer groups (Kafka ``ConsumerGroup.maybeUpdateGroupState``) have no transition table in
Kafka: the state is recomputed from the replayed records after each one::

    no members                               -> Empty
    group epoch > target assignment epoch    -> Assigning
    some member not STABLE at the target     -> Reconciling
    otherwise                                -> Stable
    group record tombstoned                  -> Dead (final)
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum


class ClassicState(Enum):
    """A classic group's state; the value is Kafka's display name."""

    EMPTY = "Empty"
    """No members. Persisted by a member-less GroupMetadata record (or a new group's first one)."""
    PREPARING_REBALANCE = "PreparingRebalance"
    """Waiting for members to (re)join. Never persisted: its start time is only bounded."""
    COMPLETING_REBALANCE = "CompletingRebalance"
    """Join phase done, waiting for the leader's assignment. Its start time is persisted as the
    next stored record's ``currentStateTimestamp``."""
    STABLE = "Stable"
    """Assignment stored. Persisted by the GroupMetadata record written at the leader's sync."""
    DEAD = "Dead"
    """Removed (DeleteGroups, offsets expired, or converted to a consumer group): a tombstone."""


_C = ClassicState

CLASSIC_VALID_PREVIOUS: Mapping[ClassicState, frozenset[ClassicState]] = {
    _C.EMPTY: frozenset({_C.PREPARING_REBALANCE}),
    _C.PREPARING_REBALANCE: frozenset({_C.EMPTY, _C.STABLE, _C.COMPLETING_REBALANCE}),
    _C.COMPLETING_REBALANCE: frozenset({_C.PREPARING_REBALANCE}),
    _C.STABLE: frozenset({_C.COMPLETING_REBALANCE}),
    _C.DEAD: frozenset(ClassicState),
}


class ConsumerState(Enum):
    """A KIP-848 consumer group's state; the value is Kafka's display name."""

    EMPTY = "Empty"
    """No member records."""
    ASSIGNING = "Assigning"
    """The group epoch moved past the target assignment epoch: a new assignment is computed."""
    RECONCILING = "Reconciling"
    """A target assignment exists; some member has not reached it yet."""
    STABLE = "Stable"
    """Every member is STABLE at the target assignment epoch."""
    DEAD = "Dead"
    """The group record was tombstoned (deleted, or converted to a classic group)."""


_K = ConsumerState
_LIVE = frozenset({_K.EMPTY, _K.ASSIGNING, _K.RECONCILING, _K.STABLE})

# Recomputed states may jump between any two live states (several records can land in one
# batch); Dead is final.
CONSUMER_VALID_PREVIOUS: Mapping[ConsumerState, frozenset[ConsumerState]] = {
    **{s: _LIVE - {s} for s in _LIVE},
    _K.DEAD: _LIVE,
}


def is_valid_transition(kind: str, from_state: str | None, to_state: str) -> bool:
    """Whether ``from_state -> to_state`` is a legal move of a ``kind`` group.

    ``from_state`` is ``None`` when the fold knows nothing earlier about the group (its first
    record, or the first record of a new group life); any target is then legal.

    Args:
        kind: ``"classic"`` or ``"kip848"``.
        from_state: Kafka's display name of the previous state, or ``None``.
        to_state: Kafka's display name of the new state.
    """
    if kind == "classic":
        target = ClassicState(to_state)
        return from_state is None or ClassicState(from_state) in CLASSIC_VALID_PREVIOUS[target]
    if kind == "kip848":
        ctarget = ConsumerState(to_state)
        return from_state is None or ConsumerState(from_state) in CONSUMER_VALID_PREVIOUS[ctarget]
    raise ValueError(f"unknown group kind {kind!r}")
