"""Transaction states: Kafka's ``TransactionState`` enum and its table of valid previous states.

Mirrors ``transaction-coordinator/.../TransactionState.java`` (Kafka 4.4). The value of each
member is the wire id stored as ``TransactionStatus`` (int8) in ``TransactionLogValue``
(``../shared/reference/kafka-formats.md`` section 5); the member *names* are exactly the names
Kafka prints (``TransactionState.getName``, the formatter, ``DescribeTransactions``), so
``TransactionState.PrepareCommit.name == "PrepareCommit"``.

Transition table (target <- allowed previous states)::

    Empty             <- Empty, CompleteCommit, CompleteAbort
    Ongoing           <- Ongoing, Empty, CompleteCommit, CompleteAbort
    PrepareCommit     <- Ongoing
    PrepareAbort      <- Ongoing, PrepareEpochFence, Empty, CompleteCommit, CompleteAbort
    CompleteCommit    <- PrepareCommit
    CompleteAbort     <- PrepareAbort
    Dead              <- Empty, CompleteAbort, CompleteCommit
    PrepareEpochFence <- Ongoing

``Dead`` and ``PrepareEpochFence`` are never written to the log: expiry writes a tombstone, and
an epoch fence is followed at once by a ``PrepareAbort`` carrying the bumped epoch.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum
from types import MappingProxyType


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
    def valid_previous_states(self) -> frozenset[TransactionState]:
        return VALID_PREVIOUS_STATES[self]

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


_S = TransactionState

_EXPIRATION_ALLOWED = frozenset({_S.Empty, _S.CompleteCommit, _S.CompleteAbort})

VALID_PREVIOUS_STATES: Mapping[TransactionState, frozenset[TransactionState]] = MappingProxyType(
    {
        _S.Empty: frozenset({_S.Empty, _S.CompleteCommit, _S.CompleteAbort}),
        _S.Ongoing: frozenset({_S.Ongoing, _S.Empty, _S.CompleteCommit, _S.CompleteAbort}),
        _S.PrepareCommit: frozenset({_S.Ongoing}),
        # Transactions V2 lets a client abort from Empty/Complete* when unsure of the state.
        _S.PrepareAbort: frozenset(
            {_S.Ongoing, _S.PrepareEpochFence, _S.Empty, _S.CompleteCommit, _S.CompleteAbort}
        ),
        _S.CompleteCommit: frozenset({_S.PrepareCommit}),
        _S.CompleteAbort: frozenset({_S.PrepareAbort}),
        _S.Dead: frozenset({_S.Empty, _S.CompleteAbort, _S.CompleteCommit}),
        _S.PrepareEpochFence: frozenset({_S.Ongoing}),
    }
)


class IllegalStateTransition(RuntimeError):
    """A transition the table (or a per-state invariant) forbids; a coordinator bug, never I/O."""

    def __init__(
        self,
        transactional_id: str,
        current: TransactionState,
        target: TransactionState,
        detail: str = "",
    ) -> None:
        self.transactional_id = transactional_id
        self.current = current
        self.target = target
        self.allowed = VALID_PREVIOUS_STATES[target]
        allowed = ", ".join(s.name for s in sorted(self.allowed))
        why = f": {detail}" if detail else ""
        super().__init__(
            f"transactional id {transactional_id!r} cannot move from {current.name} to "
            f"{target.name} (allowed previous states: {allowed}){why}"
        )


def is_valid_transition(current: TransactionState, target: TransactionState) -> bool:
    """Whether the table allows ``current -> target``."""
    return current in VALID_PREVIOUS_STATES[target]
