"""Ground truth: what really happened to each transactional id, as frozen events.

The coordinator emits these while replaying the records it wrote itself (a log loaded from disk
carries no causes, so replaying it emits nothing). Scenarios write them as JSON lines next to the
log directory; tests compare the history tables rebuilt from the decoded log against them.

* :class:`TxnStateChanged`: one per state change, including the in-memory PrepareEpochFence
  step and Dead (expiry), with the cause Kafka does not persist.
* :class:`TxnOutcome`: one per finished transaction (CompleteCommit / CompleteAbort written).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from offsetscope.protocol.states import TransactionState
from offsetscope.sim.coordinator.txn.metadata import TopicPartition


class TxnCause(Enum):
    """Why a transactional id changed state."""

    INIT_PRODUCER_ID = "init_producer_id"
    """A producer (re)initialised: epoch bump or new id."""
    EPOCH_EXHAUSTED = "epoch_exhausted"
    """InitProducerId on an exhausted epoch: the transactional id got a new producer id."""
    ADD_PARTITIONS = "add_partitions"
    """AddPartitionsToTxn, or the partition leader's implicit add under transactions V2."""
    ADD_OFFSETS = "add_offsets"
    """AddOffsetsToTxn: the group's ``__consumer_offsets`` partition joined the transaction."""
    CLIENT_COMMIT = "client_commit"
    CLIENT_ABORT = "client_abort"
    TIMEOUT = "timeout"
    """The coordinator aborted a transaction open longer than its timeout."""
    FENCED_BY_NEW_INSTANCE = "fenced_by_new_instance"
    """InitProducerId from a new instance aborted the previous instance's open transaction."""
    MARKERS_WRITTEN = "markers_written"
    """Every partition has its COMMIT/ABORT marker: Complete*."""
    EXPIRED = "expired"
    """Idle longer than ``transactional.id.expiration.ms``: tombstoned."""


class TxnOutcomeKind(Enum):
    COMMITTED = "committed"
    ABORTED = "aborted"


@dataclass(frozen=True, slots=True)
class TxnStateChanged:
    """A transactional id moved from one state to another at ``at_ms``."""

    at_ms: int
    transactional_id: str
    producer_id: int
    producer_epoch: int
    from_state: TransactionState | None
    to_state: TransactionState
    cause: TxnCause
    persisted: bool


@dataclass(frozen=True, slots=True)
class TxnOutcome:
    """A finished transaction.

    ``producer_epoch`` is the epoch its data batches carry (under transactions V2 the markers
    carry that epoch + 1). ``started_ms`` is the first add (or the abort time for a V2 abort
    with nothing added); ``decided_ms`` is when Prepare* was logged; ``completed_ms`` when
    Complete* was logged.
    """

    transactional_id: str
    producer_id: int
    producer_epoch: int
    outcome: TxnOutcomeKind
    cause: TxnCause
    started_ms: int
    decided_ms: int
    completed_ms: int
    partitions: tuple[TopicPartition, ...]

    @property
    def timed_out(self) -> bool:
        return self.cause is TxnCause.TIMEOUT

    @property
    def fenced(self) -> bool:
        return self.cause is TxnCause.FENCED_BY_NEW_INSTANCE


TxnEvent = TxnStateChanged | TxnOutcome


def event_to_dict(event: TxnEvent) -> dict[str, object]:
    """A JSON-ready view of an event (one ground-truth JSON line).

    States are Kafka's names, causes and outcomes their lower-case values, partitions
    ``{"topic", "partition"}`` objects; ``event`` says which kind of event it is.
    """
    if isinstance(event, TxnStateChanged):
        return {
            "event": "transaction_state_changed",
            "at_ms": event.at_ms,
            "transactional_id": event.transactional_id,
            "producer_id": event.producer_id,
            "producer_epoch": event.producer_epoch,
            "from_state": None if event.from_state is None else event.from_state.name,
            "to_state": event.to_state.name,
            "cause": event.cause.value,
            "persisted": event.persisted,
        }
    return {
        "event": "transaction_outcome",
        "transactional_id": event.transactional_id,
        "producer_id": event.producer_id,
        "producer_epoch": event.producer_epoch,
        "outcome": event.outcome.value,
        "cause": event.cause.value,
        "timed_out": event.timed_out,
        "fenced": event.fenced,
        "started_ms": event.started_ms,
        "decided_ms": event.decided_ms,
        "completed_ms": event.completed_ms,
        "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in event.partitions],
    }
