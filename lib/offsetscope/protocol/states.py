"""Kafka's coordinator state machines: one Enum and one table of valid previous states each.

The bundled coordinators (:mod:`offsetscope.sim`) move through these states and the history folds
(:mod:`offsetscope.history`) infer them from the records, so both read this one definition. Each
table maps a target state to the states it may be entered from, exactly as Kafka's enums
(``ClassicGroupState``, ``TransactionState``) declare it, and every guarded move goes through
:func:`check_transition`.

**Classic groups** (Kafka ``ClassicGroupState``)::

    Empty ──join──▶ PreparingRebalance ──join phase done──▶ CompletingRebalance ──leader sync──▶ Stable
      ▲                │  ▲  ▲                                   │                              │
      └──no members────┘  │  └───────────rejoin / leave / member failure──────────────────────┘
                          └──────────────────────────────────────┘
    any state ──group removed──▶ Dead

Only two of these moves are persisted (``docs/formats.md``, "When the coordinators write"):
the leader's assignment stored (a GroupMetadata record with members: CompletingRebalance ->
Stable at the record timestamp) and a join phase that ended with no members (a GroupMetadata
record without members: PreparingRebalance -> Empty at ``currentStateTimestamp``); a tombstone
is the move to Dead. The folds infer the others.

**KIP-848 consumer groups** (Kafka ``ConsumerGroup.maybeUpdateGroupState``) have no transition
table in Kafka: the state is recomputed from the replayed records after each one::

    no members                               -> Empty
    group epoch > target assignment epoch    -> Assigning
    some member not STABLE at the target     -> Reconciling
    otherwise                                -> Stable
    group record tombstoned                  -> Dead (final)

**Transactions** (Kafka ``TransactionState``; the value of each member is the wire id stored as
``TransactionStatus`` (int8) in ``TransactionLogValue``, and the member *names* are the names
Kafka prints, so ``TransactionState.PrepareCommit.name == "PrepareCommit"``)::

    Empty             <- Empty, CompleteCommit, CompleteAbort
    Ongoing           <- Ongoing, Empty, CompleteCommit, CompleteAbort
    PrepareCommit     <- Ongoing
    PrepareAbort      <- Ongoing, PrepareEpochFence, Empty, CompleteCommit, CompleteAbort
    CompleteCommit    <- PrepareCommit
    CompleteAbort     <- PrepareAbort
    Dead              <- Empty, CompleteAbort, CompleteCommit
    PrepareEpochFence <- Ongoing

``Dead`` and ``PrepareEpochFence`` are never written to the log: expiry writes a tombstone, and an
epoch fence is followed at once by a ``PrepareAbort`` carrying the bumped epoch.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum, IntEnum
from types import MappingProxyType
from typing import TypeVar

StateT = TypeVar("StateT", "ClassicGroupState", "ConsumerGroupState", "TransactionState")


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
    """Waiting for members to (re)join. Never persisted: its start time is only bounded.

    action: heartbeat and sync -> REBALANCE_IN_PROGRESS; leave removes the member; joins from new
    and existing members are parked until every expected member joined or the rebalance timeout
    (the initial delay for a group coming from Empty) fires; offset commits of the previous
    generation are allowed.
    transition: join phase completes with members => COMPLETING_REBALANCE;
    join phase completes without members => EMPTY; group removed => DEAD.
    """

    COMPLETING_REBALANCE = "CompletingRebalance"
    """Waiting for the leader's assignment. Its start time is persisted as the next stored
    record's ``currentStateTimestamp``.

    action: heartbeat and offset commit -> REBALANCE_IN_PROGRESS; follower syncs are parked until
    the leader's assignment is stored; offset fetches are allowed.
    transition: leader's assignment stored => STABLE; join with new metadata, leave, member
    failure or pending-sync expiry => PREPARING_REBALANCE; group removed => DEAD.
    """

    STABLE = "Stable"
    """Every member has its assignment (persisted by the record written at the leader's sync).

    action: heartbeats answered normally; sync returns the stored assignment; a follower's join
    with unchanged metadata returns the current generation; offset commits of the current
    generation are allowed.
    transition: member failure, leave, leader join, follower join with new metadata, static
    member join that changes the selected protocol => PREPARING_REBALANCE; group removed => DEAD.
    """

    DEAD = "Dead"
    """Removed (DeleteGroups, offsets expired, or converted to a consumer group): a tombstone.

    action: join, sync, heartbeat, leave, offset commit -> COORDINATOR_NOT_AVAILABLE or
    UNKNOWN_MEMBER_ID; offset fetches return nothing.
    transition: none (final).
    """

    @property
    def valid_previous(self) -> frozenset[ClassicGroupState]:
        return CLASSIC_GROUP_PREVIOUS[self]

    @property
    def can_rebalance(self) -> bool:
        """Whether a group in this state may start a rebalance (Kafka ``canRebalance``)."""
        return self in CLASSIC_GROUP_PREVIOUS[ClassicGroupState.PREPARING_REBALANCE]

    def __str__(self) -> str:
        return self.value


class ConsumerGroupState(Enum):
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

    @property
    def valid_previous(self) -> frozenset[ConsumerGroupState]:
        return CONSUMER_GROUP_PREVIOUS[self]

    def __str__(self) -> str:
        return self.value


class UnknownTransactionStateError(ValueError):
    """A ``TransactionStatus`` code that names no transaction state."""

    def __init__(self, state_id: int) -> None:
        self.state_id = state_id
        super().__init__(
            f"Unknown transaction state id {state_id} from the transaction status message"
        )


class TransactionState(IntEnum):
    """A transactional id's state; the value is the wire id, the name is Kafka's printed name."""

    Empty = 0
    """No transaction open (after InitProducerId).

    Transitions: AddPartitionsToTxn / AddOffsetsToTxn => Ongoing; EndTxn(abort) with
    transactions V2 => PrepareAbort; InitProducerId => Empty (epoch bump); expiry => Dead.
    """

    Ongoing = 1
    """A transaction is open; partitions are being added.

    Transitions: EndTxn(commit) => PrepareCommit; EndTxn(abort) => PrepareAbort;
    AddPartitionsToTxn / AddOffsetsToTxn => Ongoing; InitProducerId or the transaction timeout
    => PrepareEpochFence (in memory) => PrepareAbort.
    """

    PrepareCommit = 2
    """The commit decision is logged; markers are being written.

    Action: InitProducerId, AddPartitionsToTxn and EndTxn get CONCURRENT_TRANSACTIONS.
    Transition: all markers written => CompleteCommit.
    """

    PrepareAbort = 3
    """The abort decision is logged; markers are being written.

    Action: as PrepareCommit. Transition: all markers written => CompleteAbort.
    """

    CompleteCommit = 4
    """The last transaction committed; its markers are in every partition.

    Transitions: InitProducerId => Empty; AddPartitionsToTxn => Ongoing; EndTxn(abort) with
    transactions V2 => PrepareAbort; expiry => Dead.
    """

    CompleteAbort = 5
    """The last transaction aborted; its markers are in every partition.

    Transitions: as CompleteCommit.
    """

    Dead = 6
    """The transactional id expired; it is about to be removed (a tombstone, never a record)."""

    PrepareEpochFence = 7
    """In memory only: the epoch is being bumped to fence an older producer.

    Transition: PrepareAbort with the bumped epoch (same request).
    """

    @property
    def expiration_allowed(self) -> bool:
        """Whether an idle transactional id in this state may expire (Kafka's flag)."""
        return self in _EXPIRATION_ALLOWED

    @property
    def valid_previous(self) -> frozenset[TransactionState]:
        return TRANSACTION_PREVIOUS[self]

    @classmethod
    def from_id(cls, state_id: int) -> TransactionState:
        """The state with wire id ``state_id``.

        Raises:
            UnknownTransactionStateError: no state has that id (Kafka's reader throws too).
        """
        try:
            return cls(state_id)
        except ValueError:
            raise UnknownTransactionStateError(state_id) from None

    @classmethod
    def from_name(cls, name: str) -> TransactionState | None:
        """The state Kafka prints as ``name``, or ``None`` (ListTransactions ignores those)."""
        return cls.__members__.get(name)

    def __str__(self) -> str:
        return self.name


def transaction_status_name(code: int) -> str:
    """Kafka 4.4's formatter rule: the state name, or the number itself for an unknown code."""
    try:
        return TransactionState(code).name
    except ValueError:
        return str(code)


_G = ClassicGroupState

CLASSIC_GROUP_PREVIOUS: Mapping[ClassicGroupState, frozenset[ClassicGroupState]] = MappingProxyType(
    {
        _G.EMPTY: frozenset({_G.PREPARING_REBALANCE}),
        _G.PREPARING_REBALANCE: frozenset({_G.STABLE, _G.COMPLETING_REBALANCE, _G.EMPTY}),
        _G.COMPLETING_REBALANCE: frozenset({_G.PREPARING_REBALANCE}),
        _G.STABLE: frozenset({_G.COMPLETING_REBALANCE}),
        _G.DEAD: frozenset(ClassicGroupState),
    }
)

_K = ConsumerGroupState
_LIVE = frozenset({_K.EMPTY, _K.ASSIGNING, _K.RECONCILING, _K.STABLE})

# Recomputed states may jump between any two live states (several records can land in one
# batch); Dead is final.
CONSUMER_GROUP_PREVIOUS: Mapping[ConsumerGroupState, frozenset[ConsumerGroupState]] = (
    MappingProxyType({**{s: _LIVE - {s} for s in _LIVE}, _K.DEAD: _LIVE})
)

_T = TransactionState

_EXPIRATION_ALLOWED = frozenset({_T.Empty, _T.CompleteCommit, _T.CompleteAbort})

TRANSACTION_PREVIOUS: Mapping[TransactionState, frozenset[TransactionState]] = MappingProxyType(
    {
        _T.Empty: frozenset({_T.Empty, _T.CompleteCommit, _T.CompleteAbort}),
        _T.Ongoing: frozenset({_T.Ongoing, _T.Empty, _T.CompleteCommit, _T.CompleteAbort}),
        _T.PrepareCommit: frozenset({_T.Ongoing}),
        # Transactions V2 lets a client abort from Empty/Complete* when unsure of the state.
        _T.PrepareAbort: frozenset(
            {_T.Ongoing, _T.PrepareEpochFence, _T.Empty, _T.CompleteCommit, _T.CompleteAbort}
        ),
        _T.CompleteCommit: frozenset({_T.PrepareCommit}),
        _T.CompleteAbort: frozenset({_T.PrepareAbort}),
        _T.Dead: frozenset({_T.Empty, _T.CompleteAbort, _T.CompleteCommit}),
        _T.PrepareEpochFence: frozenset({_T.Ongoing}),
    }
)

_ENTITY = {
    ClassicGroupState: "group",
    ConsumerGroupState: "group",
    TransactionState: "transactional id",
}


class IllegalStateTransition(RuntimeError):
    """A move the state's table (or a per-state invariant) forbids: a coordinator bug, never I/O.

    Attributes:
        entity_id: the group id or transactional id.
        current: the state it is in.
        target: the state it was asked to enter.
        allowed: the target's valid previous states.
    """

    def __init__(
        self,
        entity_id: str,
        current: ClassicGroupState | ConsumerGroupState | TransactionState,
        target: ClassicGroupState | ConsumerGroupState | TransactionState,
        detail: str = "",
    ) -> None:
        self.entity_id = entity_id
        self.current = current
        self.target = target
        self.allowed: frozenset[ClassicGroupState | ConsumerGroupState | TransactionState] = (
            frozenset(target.valid_previous)
        )
        names = ", ".join(sorted(str(s) for s in self.allowed))
        why = f": {detail}" if detail else ""
        super().__init__(
            f"{_ENTITY[type(target)]} {entity_id!r} cannot move from {current} to {target} "
            f"(allowed previous states: {names}){why}"
        )


def is_valid_transition(current: StateT, target: StateT) -> bool:
    """Whether the target's table allows ``current -> target``."""
    return current in target.valid_previous


def check_transition(entity_id: str, current: StateT, target: StateT) -> None:
    """Raise unless ``current`` is a valid previous state of ``target``.

    Args:
        entity_id: the group or transactional id, named in the error.
        current: the state now.
        target: the state it is asked to enter.

    Raises:
        IllegalStateTransition: the move is not in the target's table.
    """
    if current not in target.valid_previous:
        raise IllegalStateTransition(entity_id, current, target)
