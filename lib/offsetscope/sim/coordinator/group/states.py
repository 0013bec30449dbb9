"""The classic consumer-group state machine (Kafka ``ClassicGroupState``).

Five states; the legal moves are data (:data:`VALID_PREVIOUS_STATES`, one set of allowed previous
states per target), guarded in one place (:func:`check_transition`), exactly as Kafka's enum does::

    Empty ──join──▶ PreparingRebalance ──join phase done──▶ CompletingRebalance ──leader sync──▶ Stable
      ▲                │  ▲  ▲                                   │                              │
      └──no members────┘  │  └───────────rejoin / leave / member failure──────────────────────┘
                          └──────────────────────────────────────┘
    any state ──group removed──▶ Dead

Only GroupMetadata records persist a view of this machine (a group with members loads as Stable,
one without as Empty; ``../shared/reference/kafka-formats.md`` section 8.1); the other states exist
only in memory, which is why the bundled coordinator also emits ground-truth events.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum


class ClassicGroupState(Enum):
    """A classic group's state; the value is Kafka's display name (``DescribeGroups``)."""

    EMPTY = "Empty"
    """No members; lingers until its offsets expire. Also the state of "simple" groups that only
    commit offsets.

    action: join from a new member -> accepted; sync, heartbeat, leave, member offset commit ->
    UNKNOWN_MEMBER_ID; simple offset commits (generation -1) and offset fetches are allowed.
    transition: join from a new member => PREPARING_REBALANCE;
    offsets expired or group deleted => DEAD.
    """

    PREPARING_REBALANCE = "PreparingRebalance"
    """Waiting for members to (re)join.

    action: heartbeat and sync -> REBALANCE_IN_PROGRESS; leave removes the member; joins from new
    and existing members are parked until every expected member joined or the rebalance timeout
    (the initial delay for a group coming from Empty) fires; offset commits of the previous
    generation are allowed.
    transition: join phase completes with members => COMPLETING_REBALANCE;
    join phase completes without members => EMPTY; group removed => DEAD.
    """

    COMPLETING_REBALANCE = "CompletingRebalance"
    """Waiting for the leader's assignment.

    action: heartbeat and offset commit -> REBALANCE_IN_PROGRESS; follower syncs are parked until
    the leader's assignment is stored; offset fetches are allowed.
    transition: leader's assignment stored => STABLE; join with new metadata, leave, member
    failure or pending-sync expiry => PREPARING_REBALANCE; group removed => DEAD.
    """

    STABLE = "Stable"
    """Every member has its assignment.

    action: heartbeats answered normally; sync returns the stored assignment; a follower's join
    with unchanged metadata returns the current generation; offset commits of the current
    generation are allowed.
    transition: member failure, leave, leader join, follower join with new metadata, static
    member join that changes the selected protocol => PREPARING_REBALANCE; group removed => DEAD.
    """

    DEAD = "Dead"
    """The group's metadata is being removed.

    action: join, sync, heartbeat, leave, offset commit -> COORDINATOR_NOT_AVAILABLE or
    UNKNOWN_MEMBER_ID; offset fetches return nothing.
    transition: none (final).
    """

    def __str__(self) -> str:
        return self.value


_S = ClassicGroupState

VALID_PREVIOUS_STATES: Mapping[ClassicGroupState, frozenset[ClassicGroupState]] = {
    _S.EMPTY: frozenset({_S.PREPARING_REBALANCE}),
    _S.PREPARING_REBALANCE: frozenset({_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY}),
    _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
    _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
    _S.DEAD: frozenset(
        {_S.STABLE, _S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE, _S.EMPTY, _S.DEAD}
    ),
}


class IllegalStateTransition(RuntimeError):
    """A group was asked to move to a state its current state cannot lead to."""

    def __init__(
        self,
        group_id: str,
        current: ClassicGroupState,
        target: ClassicGroupState,
        allowed: frozenset[ClassicGroupState],
    ) -> None:
        names = ", ".join(sorted(s.value for s in allowed))
        super().__init__(
            f"group {group_id!r} should be in one of [{names}] before moving to {target}, "
            f"but it is in {current}"
        )
        self.group_id = group_id
        self.current = current
        self.target = target
        self.allowed = allowed


def check_transition(group_id: str, current: ClassicGroupState, target: ClassicGroupState) -> None:
    """Raise unless ``current`` is a valid previous state of ``target``.

    Args:
        group_id: the group, named in the error.
        current: the group's state now.
        target: the state it is asked to enter.

    Raises:
        IllegalStateTransition: the move is not in :data:`VALID_PREVIOUS_STATES`.
    """
    allowed = VALID_PREVIOUS_STATES[target]
    if current not in allowed:
        raise IllegalStateTransition(group_id, current, target, allowed)


def can_rebalance(state: ClassicGroupState) -> bool:
    """Whether a group in ``state`` may start a rebalance (Kafka ``canRebalance``)."""
    return state in VALID_PREVIOUS_STATES[_S.PREPARING_REBALANCE]
