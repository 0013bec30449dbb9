"""The transaction coordinator: Kafka 4.4's ``TransactionCoordinator`` + ``TransactionStateManager``.

Event-sourced like the group coordinator: every handler is a function of the current state that
returns ``CoordinatorResult(records, response)`` and changes nothing; the runtime appends the
records to ``__transaction_state`` and then calls :meth:`TransactionCoordinator.replay`, the only
place state changes. (Two side effects sit outside ``__transaction_state`` exactly as in Kafka:
producer ids come from the controller's blocks, and are used up even if a request fails.)

Request flows and the records they write (``docs/formats.md`` section 8.5)::

    InitProducerId  new id                 -> Empty (epoch 0, partitions null, start -1)
                    Empty/Complete*        -> Empty (epoch + 1; exhausted epoch: new producer id,
                                              epoch 0, previousProducerId = old id)
                    Ongoing                -> [PrepareEpochFence in memory] -> PrepareAbort
                                              (epoch + 1); reply CONCURRENT_TRANSACTIONS; after
                                              the markers CompleteAbort; the retry -> Empty
                    PrepareCommit/Abort    -> CONCURRENT_TRANSACTIONS
    AddPartitionsToTxn / AddOffsetsToTxn   -> Ongoing (cumulative partitions, start = first add)
    EndTxn(commit|abort)                   -> PrepareCommit / PrepareAbort; then WriteTxnMarkers
                                              to every partition; then CompleteCommit /
                                              CompleteAbort (partitions [])
    timeout (periodic check)               -> like InitProducerId on Ongoing, cause TIMEOUT
    expiry (periodic job)                  -> tombstone

Transactions V2 (client transaction version 2, KIP-890 part 2): EndTxn bumps the epoch in
Prepare* (markers carry the new epoch, the reply returns it); an exhausted epoch reserves
``nextProducerId`` in Prepare* and switches to it, epoch 0, in Complete*; EndTxn(abort) is
allowed from Empty/Complete* (PrepareAbort with no partitions); retries are recognised by epoch.
Kafka fixes through 4.4 are followed: the fence of an ongoing V2 transaction bumps the epoch
once, not twice (KAFKA-19367); a fence at an exhausted epoch also reserves a new producer id
(KAFKA-20090). Checked against a real 4.4.0 broker (Java producer, TV2; librdkafka, TV0): a
commit that races the coordinator's timeout abort still gets INVALID_TXN_STATE in 4.4.0 (the
PRODUCER_FENCED answer of KAFKA-20785 is not in that release).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from offsetscope.clock import Clock
from offsetscope.protocol.records import OFFSETS_TOPIC, TRANSACTION_TOPIC, CoordinatorRecord
from offsetscope.protocol.states import IllegalStateTransition, TransactionState
from offsetscope.sim.coordinator.errors import Errors, TxnError
from offsetscope.sim.coordinator.result import CoordinatorResult
from offsetscope.sim.coordinator.txn.config import TV_2, TransactionCoordinatorConfig
from offsetscope.sim.coordinator.txn.events import (
    TxnCause,
    TxnEvent,
    TxnOutcome,
    TxnOutcomeKind,
    TxnStateChanged,
)
from offsetscope.sim.coordinator.txn.metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    SHORT_MAX,
    TopicPartition,
    TransactionMetadata,
    TxnTransit,
    is_epoch_exhausted,
    new_transaction_metadata,
)
from offsetscope.sim.coordinator.txn.producer_ids import ProducerIdManager
from offsetscope.sim.coordinator.txn.records import (
    TransactionLogRecord,
    new_transaction_log_record,
    new_transaction_log_tombstone,
)

_S = TransactionState


# --------------------------------------------------------------------------- requests/responses


@dataclass(frozen=True, slots=True)
class ProducerIdAndEpoch:
    producer_id: int
    epoch: int


@dataclass(frozen=True, slots=True)
class InitProducerIdResponse:
    error: Errors
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnResponse:
    """One error for all partitions of the request (Kafka answers per partition, all alike)."""

    error: Errors
    partitions: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True, slots=True)
class EndTxnResponse:
    """EndTxn's answer; transactions V2 return the producer id and epoch to use next."""

    error: Errors
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class DescribedTransaction:
    transactional_id: str
    error: Errors
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    state: TransactionState | None = None
    transaction_timeout_ms: int = 0
    transaction_start_time_ms: int = -1
    partitions: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True, slots=True)
class ListedTransaction:
    transactional_id: str
    producer_id: int
    state: TransactionState


@dataclass(frozen=True, slots=True)
class ListTransactionsResponse:
    transactions: tuple[ListedTransaction, ...]
    unknown_state_filters: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PendingMarkers:
    """The WriteTxnMarkers a transaction in PrepareCommit/PrepareAbort still needs."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    coordinator_epoch: int
    transaction_version: int
    partitions: tuple[TopicPartition, ...]
    decided_ms: int


@dataclass(frozen=True, slots=True)
class _PendingEnd:
    """Ground-truth facts about a decided transaction, kept until Complete* is replayed."""

    cause: TxnCause
    data_epoch: int
    producer_id: int
    started_ms: int
    decided_ms: int
    partitions: tuple[TopicPartition, ...]


_Result = CoordinatorResult


# --------------------------------------------------------------------------- the coordinator


class TransactionCoordinator:
    """State and handlers of the transaction coordinator (all ``__transaction_state`` partitions).

    Args:
        config: coordinator settings.
        clock: the injected clock.
        producer_ids: the broker's producer-id generator.
        offsets_partitions: the number of ``__consumer_offsets`` partitions (AddOffsetsToTxn
            routes a group by ``partition_for``); a callable is asked at each request.
    """

    def __init__(
        self,
        config: TransactionCoordinatorConfig,
        clock: Clock,
        producer_ids: ProducerIdManager,
        offsets_partitions: int | Callable[[], int] | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self.producer_ids = producer_ids
        if offsets_partitions is None:
            offsets_partitions = config.offsets_topic_partitions
        self._offsets_partitions = offsets_partitions
        self._txns: dict[str, TransactionMetadata] = {}
        self._ends: dict[str, _PendingEnd] = {}
        self.events: list[TxnEvent] = []

    # ------------------------------------------------------------------ queries

    def metadata(self, transactional_id: str) -> TransactionMetadata | None:
        return self._txns.get(transactional_id)

    def transactional_ids(self) -> list[str]:
        return sorted(self._txns)

    @property
    def transaction_version(self) -> int:
        return self.config.transaction_version

    def pending_markers(self) -> list[PendingMarkers]:
        """Every transaction whose markers are still to be written, oldest decision first."""
        out = [
            self._markers_for(t) for t in self._txns.values() if t.pending_transition_in_progress
        ]
        return sorted(out, key=lambda m: (m.decided_ms, m.transactional_id))

    def pending_markers_for(self, transactional_id: str) -> PendingMarkers | None:
        meta = self._txns.get(transactional_id)
        if meta is None or not meta.pending_transition_in_progress:
            return None
        return self._markers_for(meta)

    def _markers_for(self, meta: TransactionMetadata) -> PendingMarkers:
        return PendingMarkers(
            transactional_id=meta.transactional_id,
            producer_id=meta.producer_id,
            producer_epoch=meta.producer_epoch,
            committed=meta.state is _S.PrepareCommit,
            coordinator_epoch=self.config.coordinator_epoch,
            transaction_version=meta.client_transaction_version,
            partitions=tuple(sorted(meta.partitions)),
            decided_ms=meta.txn_last_update_timestamp,
        )

    def offsets_partition_for(self, group_id: str) -> TopicPartition:
        """The ``__consumer_offsets`` partition holding ``group_id``."""
        from offsetscope.protocol.partitioner import partition_for

        count = self._offsets_partitions
        n = count() if callable(count) else count
        return TopicPartition(OFFSETS_TOPIC, partition_for(group_id, n))

    # ------------------------------------------------------------------ InitProducerId

    def init_producer_id(
        self,
        transactional_id: str | None,
        transaction_timeout_ms: int,
        expected: ProducerIdAndEpoch | None = None,
    ) -> CoordinatorResult[InitProducerIdResponse]:
        """InitProducerId (``handleInitProducerId``).

        Args:
            transactional_id: ``None`` for an idempotent producer without transactions.
            transaction_timeout_ms: the producer's ``transaction.timeout.ms``.
            expected: the producer's current id and epoch when it re-initialises (KIP-360).

        Returns:
            The Empty record (or, on Ongoing, the fencing PrepareAbort) and the response.
        """
        now = self.clock.now_ms()
        if transactional_id is None:
            # Not transactional: blindly hand out a fresh id; nothing is logged.
            return _Result((), InitProducerIdResponse(Errors.NONE, self._generate(), 0))
        if not transactional_id:
            return _Result((), InitProducerIdResponse(Errors.INVALID_REQUEST))
        if not 0 < transaction_timeout_ms <= self.config.transaction_max_timeout_ms:
            return _Result((), InitProducerIdResponse(Errors.INVALID_TRANSACTION_TIMEOUT))
        meta = self._txns.get(transactional_id)
        if meta is None:
            meta = new_transaction_metadata(
                transactional_id, self._generate(), transaction_timeout_ms, now
            )
        if meta.pending_transition_in_progress:
            return _Result((), InitProducerIdResponse(Errors.CONCURRENT_TRANSACTIONS))
        if expected is not None and not self._valid_expected_producer(meta, expected):
            return _Result((), InitProducerIdResponse(Errors.PRODUCER_FENCED))

        if meta.state in (_S.Empty, _S.CompleteCommit, _S.CompleteAbort):
            cause = TxnCause.INIT_PRODUCER_ID
            try:
                if meta.is_producer_epoch_exhausted and (
                    expected is None or expected.epoch == meta.producer_epoch
                ):
                    cause = TxnCause.EPOCH_EXHAUSTED
                    transit = meta.prepare_producer_id_rotation(
                        self._generate(), transaction_timeout_ms, now, expected is not None
                    )
                else:
                    transit = meta.prepare_increment_producer_epoch(
                        transaction_timeout_ms,
                        None if expected is None else expected.epoch,
                        now,
                    )
            except TxnError as exc:
                return _Result((), InitProducerIdResponse(exc.error))
            except IllegalStateTransition:
                # Kafka maps the exception to its error code: an unknown server error.
                return _Result((), InitProducerIdResponse(Errors.UNKNOWN_SERVER_ERROR))
            record = self._record(transactional_id, transit, cause)
            response = InitProducerIdResponse(
                Errors.NONE, transit.producer_id, transit.producer_epoch
            )
            return _Result((record,), response)

        if meta.state is _S.Ongoing:
            # Abort the open transaction with a fenced epoch first. That epoch is never handed
            # out: the client gets CONCURRENT_TRANSACTIONS, retries, and bumps once more (which
            # rotates the producer id if the fence exhausted the epochs).
            fence = meta.prepare_fence_producer_epoch()
            result = self._end_transaction(
                meta,
                fence.producer_id,
                fence.producer_epoch,
                committed=False,
                from_client=False,
                client_transaction_version=self.config.transaction_version,
                epoch_fence=True,
                cause=TxnCause.FENCED_BY_NEW_INSTANCE,
            )
            end = result.response
            assert end is not None
            error = Errors.CONCURRENT_TRANSACTIONS if end.error is Errors.NONE else end.error
            return _Result(result.records, InitProducerIdResponse(error))

        raise IllegalStateTransition(
            transactional_id,
            meta.state,
            _S.Empty,
            "this state is never current: it is either transient or removed",
        )

    @staticmethod
    def _valid_expected_producer(meta: TransactionMetadata, expected: ProducerIdAndEpoch) -> bool:
        # Accept when the metadata was just created, when the id matches (the epoch is checked
        # when bumping), or when the id is the previous one and its epoch was exhausted (a retry
        # of a rotation whose response was lost).
        return (
            meta.producer_epoch == NO_PRODUCER_EPOCH
            or expected.producer_id == meta.producer_id
            or (
                expected.producer_id == meta.prev_producer_id and is_epoch_exhausted(expected.epoch)
            )
        )

    # ------------------------------------------------------------------ AddPartitionsToTxn

    def add_partitions_to_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        client_transaction_version: int = 0,
        *,
        cause: TxnCause = TxnCause.ADD_PARTITIONS,
    ) -> CoordinatorResult[AddPartitionsToTxnResponse]:
        """AddPartitionsToTxn (also the TV2 partition leader's implicit add).

        Args:
            transactional_id: the producer's transactional id.
            producer_id: the producer's id.
            producer_epoch: the producer's epoch.
            partitions: partitions to add.
            client_transaction_version: 2 for AddPartitionsToTxn v4+ (or the leader's add),
                else 0.
            cause: ground-truth cause of the resulting Ongoing record.
        """
        added = tuple(sorted(set(partitions)))
        if not transactional_id:
            return _Result((), AddPartitionsToTxnResponse(Errors.INVALID_REQUEST, added))
        meta = self._txns.get(transactional_id)
        if meta is None:
            error = Errors.INVALID_PRODUCER_ID_MAPPING
        elif meta.pending_transition_in_progress:
            # Checked first (Kafka >= 4.0): under TV2 the producer may already use the id that is
            # only pending, so id and epoch checks would fence it wrongly.
            error = Errors.CONCURRENT_TRANSACTIONS
        elif meta.producer_id != producer_id:
            error = Errors.INVALID_PRODUCER_ID_MAPPING
        elif meta.producer_epoch != producer_epoch:
            error = Errors.PRODUCER_FENCED
        elif meta.state is _S.Ongoing and set(added) <= meta.partitions:
            # Already there: answer at once, nothing to log.
            error = Errors.NONE
        else:
            now = self.clock.now_ms()
            transit = meta.prepare_add_partitions(added, now, client_transaction_version)
            record = self._record(transactional_id, transit, cause)
            return _Result((record,), AddPartitionsToTxnResponse(Errors.NONE, added))
        return _Result((), AddPartitionsToTxnResponse(error, added))

    def add_offsets_to_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str
    ) -> CoordinatorResult[AddPartitionsToTxnResponse]:
        """AddOffsetsToTxn: add the group's ``__consumer_offsets`` partition.

        Only clients below transactions V2 send it (V2 clients go straight to TxnOffsetCommit and
        the group coordinator adds the partition), so Kafka handles it with client version 0.
        """
        partition = self.offsets_partition_for(group_id)
        return self.add_partitions_to_txn(
            transactional_id,
            producer_id,
            producer_epoch,
            (partition,),
            0,
            cause=TxnCause.ADD_OFFSETS,
        )

    def verify_partitions_in_transaction(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> Mapping[TopicPartition, Errors]:
        """A partition leader's check before the first transactional batch (KIP-890 part 1)."""
        wanted = tuple(sorted(set(partitions)))
        meta = self._txns.get(transactional_id)
        if not transactional_id:
            error = Errors.INVALID_REQUEST
        elif meta is None or meta.producer_id != producer_id:
            error = Errors.INVALID_PRODUCER_ID_MAPPING
        elif meta.producer_epoch != producer_epoch:
            error = Errors.PRODUCER_FENCED
        elif meta.pending_transition_in_progress:
            error = Errors.CONCURRENT_TRANSACTIONS
        else:
            # Partitions join at the Ongoing append and leave at the markers.
            return {
                tp: Errors.NONE if tp in meta.partitions else Errors.TRANSACTION_ABORTABLE
                for tp in wanted
            }
        return dict.fromkeys(wanted, error)

    # ------------------------------------------------------------------ EndTxn

    def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        client_transaction_version: int = 0,
    ) -> CoordinatorResult[EndTxnResponse]:
        """EndTxn (``handleEndTransaction``): log PrepareCommit / PrepareAbort.

        The markers and Complete* follow through :meth:`pending_markers` and
        :meth:`complete_transaction`.
        """
        if not transactional_id:
            return _Result((), EndTxnResponse(Errors.INVALID_REQUEST))
        meta = self._txns.get(transactional_id)
        if meta is None:
            return _Result((), EndTxnResponse(Errors.INVALID_PRODUCER_ID_MAPPING))
        return self._end_transaction(
            meta,
            producer_id,
            producer_epoch,
            committed=committed,
            from_client=True,
            client_transaction_version=client_transaction_version,
            epoch_fence=False,
            cause=TxnCause.CLIENT_COMMIT if committed else TxnCause.CLIENT_ABORT,
        )

    def _end_transaction(
        self,
        meta: TransactionMetadata,
        producer_id: int,
        producer_epoch: int,
        *,
        committed: bool,
        from_client: bool,
        client_transaction_version: int,
        epoch_fence: bool,
        cause: TxnCause,
    ) -> CoordinatorResult[EndTxnResponse]:
        if client_transaction_version >= TV_2:
            return self._end_transaction_v2(
                meta, producer_id, producer_epoch, committed, from_client, epoch_fence, cause
            )
        return self._end_transaction_v1(
            meta, producer_id, producer_epoch, committed, from_client, epoch_fence, cause
        )

    def _end_transaction_v1(
        self,
        meta: TransactionMetadata,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        from_client: bool,
        epoch_fence: bool,
        cause: TxnCause,
    ) -> CoordinatorResult[EndTxnResponse]:
        def fail(error: Errors) -> CoordinatorResult[EndTxnResponse]:
            return _Result((), EndTxnResponse(error))

        if meta.producer_id != producer_id:
            return fail(Errors.INVALID_PRODUCER_ID_MAPPING)
        # Clients must match exactly: they never bump the epoch themselves in V0/V1.
        if (from_client and producer_epoch != meta.producer_epoch) or (
            producer_epoch < meta.producer_epoch
        ):
            return fail(Errors.PRODUCER_FENCED)
        if meta.pending_transition_in_progress:
            return fail(Errors.CONCURRENT_TRANSACTIONS)
        state = meta.state
        if state is _S.Ongoing:
            target = _S.PrepareCommit if committed else _S.PrepareAbort
            base = meta
            if target is _S.PrepareAbort and epoch_fence:
                # The fenced epoch becomes the transaction's epoch before PrepareAbort is logged.
                base = dataclasses.replace(
                    meta, producer_epoch=producer_epoch, last_producer_epoch=NO_PRODUCER_EPOCH
                )
            transit = base.prepare_abort_or_commit(
                target, 0, NO_PRODUCER_ID, self.clock.now_ms(), False, epoch_fence=epoch_fence
            )
            record = self._record(meta.transactional_id, transit, cause)
            return _Result((record,), EndTxnResponse(Errors.NONE))
        if state is _S.CompleteCommit:
            return fail(Errors.NONE if committed else Errors.INVALID_TXN_STATE)
        if state is _S.CompleteAbort:
            return fail(Errors.INVALID_TXN_STATE if committed else Errors.NONE)
        if state is _S.Empty:
            return fail(Errors.INVALID_TXN_STATE)
        raise IllegalStateTransition(
            meta.transactional_id, state, _S.PrepareAbort, "EndTxn found an impossible state"
        )

    def _end_transaction_v2(
        self,
        meta: TransactionMetadata,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        from_client: bool,
        epoch_fence: bool,
        cause: TxnCause,
    ) -> CoordinatorResult[EndTxnResponse]:
        # A retry of an EndTxn that rotated the id on overflow: the client still has the old id.
        retry_on_overflow = (
            not epoch_fence
            and meta.prev_producer_id == producer_id
            and producer_epoch == SHORT_MAX - 1
            and meta.producer_epoch == 0
        )
        # A retry of an EndTxn that bumped the epoch: the stored epoch is one ahead.
        retry_on_epoch_bump = not epoch_fence and meta.producer_epoch == producer_epoch + 1
        is_retry = retry_on_epoch_bump or retry_on_overflow
        state = meta.state
        if epoch_fence:
            valid_epoch = (not from_client or producer_epoch == meta.producer_epoch) and (
                producer_epoch >= meta.producer_epoch
            )
        elif state in (_S.PrepareCommit, _S.PrepareAbort):
            valid_epoch = retry_on_epoch_bump
        elif state in (_S.CompleteCommit, _S.CompleteAbort):
            valid_epoch = is_retry or producer_epoch == meta.producer_epoch
        else:
            valid_epoch = producer_epoch == meta.producer_epoch

        def fail(error: Errors) -> CoordinatorResult[EndTxnResponse]:
            if error is Errors.NONE:
                # A retry of a completed EndTxn: answer with the current id and epoch.
                return _Result((), EndTxnResponse(error, meta.producer_id, meta.producer_epoch))
            return _Result((), EndTxnResponse(error))

        def prepare(target: TransactionState, no_partition_added: bool) -> _Result[EndTxnResponse]:
            now = self.clock.now_ms()
            # Bumping an exhausted epoch: reserve the next producer id now, switch in Complete*.
            next_pid = self._generate() if meta.is_producer_epoch_exhausted else NO_PRODUCER_ID
            transit = meta.prepare_abort_or_commit(
                target, TV_2, next_pid, now, no_partition_added, epoch_fence=epoch_fence
            )
            record = self._record(meta.transactional_id, transit, cause)
            after = meta.complete(transit).prepare_complete(now)
            return _Result(
                (record,), EndTxnResponse(Errors.NONE, after.producer_id, after.producer_epoch)
            )

        if meta.producer_id != producer_id and not retry_on_overflow:
            return fail(Errors.INVALID_PRODUCER_ID_MAPPING)
        # Pending first: a commit's Complete* must land before, say, a following empty abort
        # (KAFKA-18464).
        if meta.pending_transition_in_progress:
            return fail(Errors.CONCURRENT_TRANSACTIONS)
        if not valid_epoch:
            return fail(Errors.PRODUCER_FENCED)
        if state is _S.Ongoing:
            return prepare(_S.PrepareCommit if committed else _S.PrepareAbort, False)
        if state is _S.CompleteCommit:
            if committed:
                return fail(Errors.NONE if is_retry else Errors.INVALID_TXN_STATE)
            if is_retry:
                return fail(Errors.INVALID_TXN_STATE)
            return prepare(_S.PrepareAbort, True)
        if state is _S.CompleteAbort:
            if not committed:
                return fail(Errors.NONE) if is_retry else prepare(_S.PrepareAbort, True)
            # Also at a retry epoch: a commit racing the coordinator's own abort (timeout) gets
            # INVALID_TXN_STATE in Kafka 4.4.0 (PRODUCER_FENCED only from KAFKA-20785 on).
            return fail(Errors.INVALID_TXN_STATE)
        if state is _S.Empty:
            return fail(Errors.INVALID_TXN_STATE) if committed else prepare(_S.PrepareAbort, True)
        raise IllegalStateTransition(
            meta.transactional_id, state, _S.PrepareAbort, "EndTxn found an impossible state"
        )

    # ------------------------------------------------------------------ markers written

    def complete_transaction(self, transactional_id: str) -> CoordinatorResult[TransactionMetadata]:
        """All markers are written: log CompleteCommit / CompleteAbort.

        Kafka prepares this transition right after Prepare* is appended, so its
        ``transactionLastUpdateTimestampMs`` is the decision's time, not the markers'.

        Raises:
            IllegalStateTransition: the transaction is not waiting for markers.
        """
        meta = self._txns.get(transactional_id)
        if meta is None or not meta.pending_transition_in_progress:
            state = _S.Dead if meta is None else meta.state
            raise IllegalStateTransition(
                transactional_id, state, _S.CompleteCommit, "no markers are pending"
            )
        transit = meta.prepare_complete(meta.txn_last_update_timestamp)
        record = self._record(transactional_id, transit, TxnCause.MARKERS_WRITTEN)
        return _Result((record,), meta)

    # ------------------------------------------------------------------ periodic jobs

    def abort_timed_out_transactions(self) -> CoordinatorResult[tuple[str, ...]]:
        """The periodic check: fence and abort every transaction open longer than its timeout.

        Returns:
            The PrepareAbort records and the transactional ids being aborted.
        """
        now = self.clock.now_ms()
        records: list[CoordinatorRecord] = []
        aborted: list[str] = []
        for txn_id in sorted(self._txns):
            meta = self._txns[txn_id]
            if meta.pending_transition_in_progress or meta.state is not _S.Ongoing:
                continue
            if meta.txn_start_timestamp + meta.txn_timeout_ms >= now:
                continue
            fence = meta.prepare_fence_producer_epoch()
            result = self._end_transaction(
                meta,
                fence.producer_id,
                fence.producer_epoch,
                committed=False,
                from_client=False,
                # Not from a client: the cluster's finalized version decides.
                client_transaction_version=self.config.transaction_version,
                epoch_fence=True,
                cause=TxnCause.TIMEOUT,
            )
            if result.response is not None and result.response.error is Errors.NONE:
                records.extend(result.records)
                aborted.append(txn_id)
        return _Result(tuple(records), tuple(aborted))

    def expire_transactional_ids(self) -> CoordinatorResult[tuple[str, ...]]:
        """The periodic expiry: tombstone ids idle in Empty/Complete* for the expiration time."""
        now = self.clock.now_ms()
        horizon = now - self.config.transactional_id_expiration_ms
        records: list[CoordinatorRecord] = []
        expired: list[str] = []
        for txn_id in sorted(self._txns):
            meta = self._txns[txn_id]
            if meta.pending_transition_in_progress or not meta.state.expiration_allowed:
                continue
            if meta.txn_last_update_timestamp > horizon:
                continue
            meta.prepare_dead()  # checks the table
            records.append(new_transaction_log_tombstone(txn_id))
            expired.append(txn_id)
        return _Result(tuple(records), tuple(expired))

    # ------------------------------------------------------------------ admin

    def describe_transactions(
        self, transactional_ids: Sequence[str]
    ) -> tuple[DescribedTransaction, ...]:
        """DescribeTransactions: TRANSACTIONAL_ID_NOT_FOUND for unknown (or expiring) ids."""
        out = []
        for txn_id in transactional_ids:
            meta = self._txns.get(txn_id)
            if not txn_id:
                out.append(DescribedTransaction(txn_id, Errors.INVALID_REQUEST))
            elif meta is None or meta.state is _S.Dead:
                out.append(DescribedTransaction(txn_id, Errors.TRANSACTIONAL_ID_NOT_FOUND))
            else:
                out.append(
                    DescribedTransaction(
                        transactional_id=txn_id,
                        error=Errors.NONE,
                        producer_id=meta.producer_id,
                        producer_epoch=meta.producer_epoch,
                        state=meta.state,
                        transaction_timeout_ms=meta.txn_timeout_ms,
                        transaction_start_time_ms=meta.txn_start_timestamp,
                        partitions=tuple(sorted(meta.partitions)),
                    )
                )
        return tuple(out)

    def list_transactions(
        self,
        states: Iterable[str] = (),
        producer_ids: Iterable[int] = (),
        duration_ms: int = -1,
    ) -> ListTransactionsResponse:
        """ListTransactions with Kafka's filters (state names, producer ids, running longer than)."""
        now = self.clock.now_ms()
        wanted: set[TransactionState] = set()
        unknown: list[str] = []
        names = list(states)
        for name in names:
            state = _S.from_name(name)
            if state is None:
                unknown.append(name)
            else:
                wanted.add(state)
        pids = set(producer_ids)
        listed = []
        for txn_id in sorted(self._txns):
            meta = self._txns[txn_id]
            if meta.state is _S.Dead:
                continue
            if pids and meta.producer_id not in pids:
                continue
            if names and meta.state not in wanted:
                continue
            if duration_ms >= 0 and now - meta.txn_start_timestamp <= duration_ms:
                continue
            listed.append(ListedTransaction(txn_id, meta.producer_id, meta.state))
        return ListTransactionsResponse(tuple(listed), tuple(unknown))

    # ------------------------------------------------------------------ replay

    def replay(self, record: CoordinatorRecord) -> None:
        """Apply one appended ``__transaction_state`` record: the only way state changes.

        A :class:`TransactionLogRecord` written by this coordinator completes its transit
        (checked like ``completeTransitionTo``) and emits ground-truth events. Any other record
        (loaded from a log) is taken as Kafka's loader takes it: the last record per key wins,
        the last producer epoch is unknown (-1), a tombstone removes the id.
        """
        if record.topic != TRANSACTION_TOPIC or record.record_type != 0:
            raise ValueError(
                f"not a TransactionLog record: {record.topic} type {record.record_type}"
            )
        txn_id = str(record.key["transactionalId"])
        transit = record.transit if isinstance(record, TransactionLogRecord) else None
        cause = record.cause if isinstance(record, TransactionLogRecord) else None
        now = self.clock.now_ms()
        if record.value is None:
            old = self._txns.pop(txn_id, None)
            self._ends.pop(txn_id, None)
            if cause is not None and old is not None:
                self._emit_change(now, old, old.state, _S.Dead, cause, persisted=True)
            return
        if transit is None or cause is None:
            self._txns[txn_id] = _metadata_from_value(txn_id, record.value)
            return
        current = self._txns.get(txn_id)
        base = current or new_transaction_metadata(
            txn_id, transit.producer_id, transit.txn_timeout_ms, transit.txn_last_update_timestamp
        )
        updated = base.complete(transit)
        self._txns[txn_id] = updated
        self._on_transition(now, current, base, updated, transit, cause)

    def _on_transition(
        self,
        now: int,
        current: TransactionMetadata | None,
        base: TransactionMetadata,
        updated: TransactionMetadata,
        transit: TxnTransit,
        cause: TxnCause,
    ) -> None:
        txn_id = updated.transactional_id
        if transit.epoch_fence:
            fenced = dataclasses.replace(base, producer_epoch=transit.producer_epoch)
            self._emit_change(now, fenced, base.state, _S.PrepareEpochFence, cause, persisted=False)
            self._emit_change(now, updated, _S.PrepareEpochFence, updated.state, cause, True)
        else:
            previous = None if current is None else current.state
            self._emit_change(now, updated, previous, updated.state, cause, persisted=True)
        if updated.state in (_S.PrepareCommit, _S.PrepareAbort):
            self._ends[txn_id] = _PendingEnd(
                cause=cause,
                data_epoch=base.producer_epoch,
                producer_id=base.producer_id,
                started_ms=updated.txn_start_timestamp,
                decided_ms=updated.txn_last_update_timestamp,
                partitions=tuple(sorted(updated.partitions)),
            )
        elif updated.state in (_S.CompleteCommit, _S.CompleteAbort):
            end = self._ends.pop(txn_id, None)
            if end is not None:
                committed = updated.state is _S.CompleteCommit
                self.events.append(
                    TxnOutcome(
                        transactional_id=txn_id,
                        producer_id=end.producer_id,
                        producer_epoch=end.data_epoch,
                        outcome=TxnOutcomeKind.COMMITTED if committed else TxnOutcomeKind.ABORTED,
                        cause=end.cause,
                        started_ms=end.started_ms,
                        decided_ms=end.decided_ms,
                        completed_ms=now,
                        partitions=end.partitions,
                    )
                )

    def _emit_change(
        self,
        now: int,
        meta: TransactionMetadata,
        from_state: TransactionState | None,
        to_state: TransactionState,
        cause: TxnCause,
        persisted: bool,
    ) -> None:
        self.events.append(
            TxnStateChanged(
                at_ms=now,
                transactional_id=meta.transactional_id,
                producer_id=meta.producer_id,
                producer_epoch=meta.producer_epoch,
                from_state=from_state,
                to_state=to_state,
                cause=cause,
                persisted=persisted,
            )
        )

    # ------------------------------------------------------------------ helpers

    def _generate(self) -> int:
        return self.producer_ids.generate_producer_id()

    def _record(
        self, transactional_id: str, transit: TxnTransit, cause: TxnCause
    ) -> TransactionLogRecord:
        return new_transaction_log_record(
            transactional_id,
            transit,
            value_version=self.config.transaction_log_value_version,
            cause=cause,
        )


def _metadata_from_value(transactional_id: str, value: Mapping[str, Any]) -> TransactionMetadata:
    """Kafka's loader: a TransactionLogValue becomes metadata (last epoch unknown)."""
    state = TransactionState.from_id(int(value["transactionStatus"]))
    partitions: frozenset[TopicPartition] = frozenset()
    if state is not _S.Empty:
        partitions = frozenset(
            TopicPartition(str(group["topic"]), int(p))
            for group in value.get("transactionPartitions") or ()
            for p in group["partitionIds"]
        )
    return TransactionMetadata(
        transactional_id=transactional_id,
        producer_id=int(value["producerId"]),
        prev_producer_id=int(value.get("previousProducerId", NO_PRODUCER_ID)),
        next_producer_id=int(value.get("nextProducerId", NO_PRODUCER_ID)),
        producer_epoch=int(value["producerEpoch"]),
        last_producer_epoch=NO_PRODUCER_EPOCH,
        txn_timeout_ms=int(value["transactionTimeoutMs"]),
        state=state,
        partitions=partitions,
        txn_start_timestamp=int(value["transactionStartTimestampMs"]),
        txn_last_update_timestamp=int(value["transactionLastUpdateTimestampMs"]),
        client_transaction_version=int(value.get("clientTransactionVersion", 0)),
        next_producer_epoch=int(value.get("nextProducerEpoch", NO_PRODUCER_EPOCH)),
    )
