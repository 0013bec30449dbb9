"""One transactional id's metadata and Kafka's two-phase transitions.

Mirrors ``TransactionMetadata.java`` / ``TxnTransitMetadata.java`` (Kafka 4.4). Every change is
made in two phases:

1. ``prepare_*`` checks the transition table and returns a frozen :class:`TxnTransit` (what the
   metadata will look like); nothing changes yet.
2. the transit becomes one ``TransactionLog`` record; once it is appended the coordinator
   *replays* it and :meth:`TransactionMetadata.complete` re-checks the per-state invariants
   (``completeTransitionTo``) and returns the new metadata.

Kafka keeps a mutable ``pendingState`` between the phases. In this coordinator a handler's
records are appended and replayed before the next request is handled, so the only time a
transition is "pending" across requests is while markers are being written, i.e. exactly while
the state is PrepareCommit / PrepareAbort (Kafka sets pendingState to Complete* right after the
Prepare* append). :attr:`TransactionMetadata.pending_transition_in_progress` derives it from that.

Epochs: an epoch is "exhausted" at ``Short.MAX_VALUE - 1`` (32766); the last value, 32767, is
reserved so the coordinator can always fence once more.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from offsetscope.protocol.states import IllegalStateTransition, TransactionState
from offsetscope.sim.coordinator.errors import Errors, TxnError
from offsetscope.sim.coordinator.txn.config import TV_0, TV_2

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32_767

_S = TransactionState


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """Kafka: no epoch above ``Short.MAX_VALUE - 1`` is handed to a client."""
    return producer_epoch >= SHORT_MAX - 1


@dataclass(frozen=True, slots=True)
class TxnTransit:
    """The metadata a transition leads to (Kafka's ``TxnTransitMetadata``); one log record.

    ``prev_producer_id`` is the producer id *before* the transition (written as
    ``previousProducerId``). ``last_producer_epoch`` is kept in memory only. ``epoch_fence`` marks
    a PrepareAbort that follows an in-memory PrepareEpochFence (Kafka's pending fence state).
    """

    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    client_transaction_version: int
    next_producer_epoch: int = NO_PRODUCER_EPOCH
    epoch_fence: bool = False


@dataclass(frozen=True, slots=True)
class TransactionMetadata:
    """The coordinator's view of one transactional id (replaced, never mutated, on replay)."""

    transactional_id: str
    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    client_transaction_version: int
    next_producer_epoch: int = NO_PRODUCER_EPOCH

    # ------------------------------------------------------------------ derived

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def pending_transition_in_progress(self) -> bool:
        # Markers in flight: Kafka's pendingState is Complete* for exactly this span.
        return self.state in (_S.PrepareCommit, _S.PrepareAbort)

    @property
    def has_pending_transaction(self) -> bool:
        return self.state in (_S.Ongoing, _S.PrepareAbort, _S.PrepareCommit)

    # ------------------------------------------------------------------ prepare_*

    def prepare_fence_producer_epoch(self) -> TxnTransit:
        """Bump the epoch in memory to fence the current producer (never logged as such)."""
        # At Short.MAX_VALUE the epoch cannot move; Kafka logs an error and keeps it (KAFKA-20090).
        bumped = (
            self.producer_epoch if self.producer_epoch == SHORT_MAX else self.producer_epoch + 1
        )
        return self._transit(_S.PrepareEpochFence, producer_epoch=bumped)

    def prepare_increment_producer_epoch(
        self, new_txn_timeout_ms: int, expected_producer_epoch: int | None, now_ms: int
    ) -> TxnTransit:
        """InitProducerId on Empty/Complete*: bump the epoch (or confirm a retried bump).

        Raises:
            TxnError: PRODUCER_FENCED when the expected epoch is neither current nor last.
            IllegalStateTransition: the epoch is exhausted (callers rotate the id instead).
        """
        if self.is_producer_epoch_exhausted:
            raise IllegalStateTransition(
                self.transactional_id,
                self.state,
                _S.Empty,
                f"cannot allocate any more producer epochs for producer id {self.producer_id}",
            )
        bumped = self.producer_epoch + 1
        if expected_producer_epoch is None:
            # A new producer: bump, forget the last epoch (a new instance fences retries).
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif (
            self.producer_epoch == NO_PRODUCER_EPOCH
            or expected_producer_epoch == self.producer_epoch
        ):
            # The same producer continuing after an error (KIP-360): bump, remember the old one.
            epoch, last = bumped, self.producer_epoch
        elif expected_producer_epoch == self.last_producer_epoch:
            # A retry of a bump that succeeded: hand back the current epoch again.
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            raise TxnError(
                Errors.PRODUCER_FENCED,
                f"expected epoch {expected_producer_epoch} is neither the current epoch "
                f"{self.producer_epoch} nor the last epoch {self.last_producer_epoch}",
            )
        return self._transit(
            _S.Empty,
            producer_epoch=epoch,
            last_producer_epoch=last,
            txn_timeout_ms=new_txn_timeout_ms,
            partitions=frozenset(),
            txn_start_timestamp=-1,
            txn_last_update_timestamp=now_ms,
        )

    def prepare_producer_id_rotation(
        self, new_producer_id: int, new_txn_timeout_ms: int, now_ms: int, record_last_epoch: bool
    ) -> TxnTransit:
        """InitProducerId with an exhausted epoch: a new producer id at epoch 0."""
        if self.has_pending_transaction:
            raise IllegalStateTransition(
                self.transactional_id,
                self.state,
                _S.Empty,
                "cannot rotate producer ids while a transaction is still pending",
            )
        return self._transit(
            _S.Empty,
            producer_id=new_producer_id,
            producer_epoch=0,
            last_producer_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
            txn_timeout_ms=new_txn_timeout_ms,
            partitions=frozenset(),
            txn_start_timestamp=-1,
            txn_last_update_timestamp=now_ms,
        )

    def prepare_add_partitions(
        self, added: Iterable[TopicPartition], now_ms: int, client_transaction_version: int
    ) -> TxnTransit:
        """AddPartitionsToTxn / AddOffsetsToTxn: Ongoing with the cumulative partition set."""
        starting = self.state in (_S.Empty, _S.CompleteAbort, _S.CompleteCommit)
        return self._transit(
            _S.Ongoing,
            partitions=self.partitions | frozenset(added),
            txn_start_timestamp=now_ms if starting else self.txn_start_timestamp,
            txn_last_update_timestamp=now_ms,
            client_transaction_version=client_transaction_version,
        )

    def prepare_abort_or_commit(
        self,
        new_state: TransactionState,
        client_transaction_version: int,
        next_producer_id: int,
        now_ms: int,
        no_partition_added: bool,
        *,
        epoch_fence: bool = False,
    ) -> TxnTransit:
        """EndTxn: PrepareCommit / PrepareAbort; transactions V2 bump the epoch here."""
        if client_transaction_version >= TV_2:
            if self.producer_epoch == SHORT_MAX and new_state is _S.PrepareAbort:
                # Already broken: let the abort through without overflowing (KAFKA-20090).
                epoch = self.producer_epoch
            else:
                epoch = self.producer_epoch + 1
            last = self.producer_epoch
        else:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        return self._transit(
            new_state,
            producer_epoch=epoch,
            last_producer_epoch=last,
            # TV2 may abort with no partition added; the start is then the abort time.
            txn_start_timestamp=now_ms if no_partition_added else self.txn_start_timestamp,
            next_producer_id=next_producer_id,
            txn_last_update_timestamp=now_ms,
            client_transaction_version=client_transaction_version,
            epoch_fence=epoch_fence,
        )

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        """All markers written: CompleteCommit / CompleteAbort, partitions emptied."""
        target = _S.CompleteCommit if self.state is _S.PrepareCommit else _S.CompleteAbort
        if self.client_transaction_version >= TV_2 and self.next_producer_id != NO_PRODUCER_ID:
            # Epoch overflow under TV2: switch to the id reserved at EndTxn, epoch 0. The last
            # epoch stays what the client last saw.
            producer_id, epoch = self.next_producer_id, 0
        else:
            producer_id, epoch = self.producer_id, self.producer_epoch
        return self._transit(
            target,
            producer_id=producer_id,
            producer_epoch=epoch,
            next_producer_id=NO_PRODUCER_ID,
            partitions=frozenset(),
            txn_last_update_timestamp=now_ms,
        )

    def prepare_dead(self) -> TxnTransit:
        """Expiry: Dead (never logged; a tombstone is written and the id removed)."""
        return self._transit(_S.Dead, partitions=frozenset())

    def _transit(self, state: TransactionState, **changes: object) -> TxnTransit:
        values: dict[str, object] = {
            "producer_id": self.producer_id,
            "prev_producer_id": self.producer_id,
            "next_producer_id": self.next_producer_id,
            "producer_epoch": self.producer_epoch,
            "last_producer_epoch": self.last_producer_epoch,
            "txn_timeout_ms": self.txn_timeout_ms,
            "state": state,
            "partitions": self.partitions,
            "txn_start_timestamp": self.txn_start_timestamp,
            "txn_last_update_timestamp": self.txn_last_update_timestamp,
            "client_transaction_version": self.client_transaction_version,
            "next_producer_epoch": self.next_producer_epoch,
        }
        values.update(changes)
        transit = TxnTransit(**values)  # type: ignore[arg-type]
        if transit.producer_id < 0:
            raise ValueError(f"illegal new producer id {transit.producer_id}")
        # A just-created id has epoch -1 and may stay so until it expires (Dead).
        if state is not _S.Dead and transit.producer_epoch < 0:
            raise ValueError(f"illegal new producer epoch {transit.producer_epoch}")
        if self.state not in state.valid_previous:
            raise IllegalStateTransition(self.transactional_id, self.state, state)
        return transit

    # ------------------------------------------------------------------ complete

    def complete(self, transit: TxnTransit) -> TransactionMetadata:
        """The metadata after ``transit``'s record was appended (``completeTransitionTo``).

        Raises:
            IllegalStateTransition: the transit breaks the table or a per-state invariant.
        """
        target = transit.state
        if self.state not in target.valid_previous:
            raise IllegalStateTransition(self.transactional_id, self.state, target)
        base = self
        if transit.epoch_fence and transit.client_transaction_version < TV_2:
            # TV0/1 fence: the fenced epoch was installed before the PrepareAbort was prepared.
            base = dataclasses.replace(
                self, producer_epoch=transit.producer_epoch, last_producer_epoch=NO_PRODUCER_EPOCH
            )
        ok = True
        if target is _S.Empty:
            ok = (
                base.producer_epoch == transit.producer_epoch or base._valid_epoch_bump(transit)
            ) and (not transit.partitions and transit.txn_start_timestamp == -1)
        elif target is _S.Ongoing:
            ok = (
                base._valid_producer_epoch(transit)
                and base.partitions <= transit.partitions
                and base.txn_timeout_ms == transit.txn_timeout_ms
            )
        elif target in (_S.PrepareCommit, _S.PrepareAbort):
            empty_abort = (
                target is _S.PrepareAbort
                and transit.client_transaction_version >= TV_2
                and base.state in (_S.Empty, _S.CompleteCommit, _S.CompleteAbort)
            )
            ok = (
                base._valid_producer_epoch(transit)
                and base.partitions == transit.partitions
                and base.txn_timeout_ms == transit.txn_timeout_ms
                and (base.txn_start_timestamp == transit.txn_start_timestamp or empty_abort)
            )
        elif target in (_S.CompleteCommit, _S.CompleteAbort):
            ok = (
                base._valid_producer_epoch(transit)
                and base.txn_timeout_ms == transit.txn_timeout_ms
                and transit.txn_start_timestamp != -1
            )
        else:
            # PrepareEpochFence and Dead are never completed: a fence is followed by
            # PrepareAbort, an expired id is removed by its tombstone.
            ok = False
        if not ok:
            raise IllegalStateTransition(
                self.transactional_id, self.state, target, f"unexpected metadata {transit}"
            )
        return TransactionMetadata(
            transactional_id=self.transactional_id,
            producer_id=transit.producer_id,
            prev_producer_id=transit.prev_producer_id,
            next_producer_id=transit.next_producer_id,
            producer_epoch=transit.producer_epoch,
            last_producer_epoch=transit.last_producer_epoch,
            txn_timeout_ms=transit.txn_timeout_ms,
            state=target,
            partitions=transit.partitions,
            txn_start_timestamp=transit.txn_start_timestamp,
            txn_last_update_timestamp=transit.txn_last_update_timestamp,
            client_transaction_version=transit.client_transaction_version,
            next_producer_epoch=transit.next_producer_epoch,
        )

    def _valid_producer_epoch(self, transit: TxnTransit) -> bool:
        tv2 = transit.client_transaction_version >= TV_2
        if (
            tv2
            and transit.state in (_S.CompleteCommit, _S.CompleteAbort)
            and (transit.producer_epoch == 0)
        ):
            # Overflow: the id changed at completion; the last epoch did not.
            return (
                transit.last_producer_epoch == self.last_producer_epoch
                and transit.prev_producer_id == self.producer_id
            )
        if tv2 and transit.state in (_S.PrepareCommit, _S.PrepareAbort):
            return (
                transit.last_producer_epoch == self.producer_epoch
                and transit.producer_id == self.producer_id
            )
        return (
            transit.producer_epoch == self.producer_epoch
            and transit.producer_id == self.producer_id
        )

    def _valid_epoch_bump(self, transit: TxnTransit) -> bool:
        return transit.producer_epoch == self.producer_epoch + 1 or (
            transit.producer_epoch == 0 and transit.producer_id != self.producer_id
        )


def new_transaction_metadata(
    transactional_id: str, producer_id: int, txn_timeout_ms: int, now_ms: int
) -> TransactionMetadata:
    """The placeholder Kafka creates for an unknown transactional id (epoch -1, Empty, TV0)."""
    return TransactionMetadata(
        transactional_id=transactional_id,
        producer_id=producer_id,
        prev_producer_id=NO_PRODUCER_ID,
        next_producer_id=NO_PRODUCER_ID,
        producer_epoch=NO_PRODUCER_EPOCH,
        last_producer_epoch=NO_PRODUCER_EPOCH,
        txn_timeout_ms=txn_timeout_ms,
        state=_S.Empty,
        partitions=frozenset(),
        txn_start_timestamp=-1,
        txn_last_update_timestamp=now_ms,
        client_transaction_version=TV_0,
    )
