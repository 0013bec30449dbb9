"""The partition leader's producer state: idempotent and transactional appends, and markers.

Mirrors Kafka 4.4's ``ProducerStateManager`` / ``ProducerAppendInfo`` / ``ProducerStateEntry``
and the producer-state part of ``UnifiedLog.append``. For every producer id a partition keeps
the epoch, up to five recent batches (sequence ranges and offsets), the coordinator epoch of the
last marker and the first offset of its open transaction. A batch with a producer id is checked
in this order before it is appended:

1. client batches: a batch whose epoch and exact sequence range match one of the five cached
   batches is a **duplicate** (a retry): nothing is appended, the original offsets are returned
   with no error. (Kafka defines ``DUPLICATE_SEQUENCE_NUMBER``, but a broker answers
   duplicates this way since the five-batch cache exists; older retries fail the sequence check.)
2. a transactional batch that would open a transaction here must have been verified with the
   transaction coordinator (KIP-890); otherwise ``INVALID_TXN_STATE``;
3. epoch lower than the partition's: ``INVALID_PRODUCER_EPOCH`` (since Kafka 2.7, instead of
   PRODUCER_FENCED, so the client can abort and retry);
4. client batches only (coordinator writes such as TxnOffsetCommit carry no sequence): a new
   epoch must start at sequence 0 (unless the partition never saw an epoch for this id); the
   same epoch must continue at last sequence + 1 (wrapping after ``Integer.MAX_VALUE``);
   otherwise ``OUT_OF_ORDER_SEQUENCE_NUMBER``. An unknown producer id is accepted with any
   sequence (KIP-360);
5. a non-transactional batch while this producer has an open transaction: ``INVALID_TXN_STATE``.

A transaction marker (control batch, appended for the coordinator by WriteTxnMarkers)::

    batch: producerId, producerEpoch, baseSequence -1, isTransactional, isControl, one record
    key   = int16 version 0 | int16 type (0 ABORT, 1 COMMIT)
    value = int16 version 0 | int32 coordinatorEpoch

is rejected with ``INVALID_PRODUCER_EPOCH`` when its epoch is lower than the partition's
(transactions V2, KIP-1228: lower *or equal*, because the coordinator bumps the epoch before
writing markers; an equal epoch with no open transaction is an idempotent retry and is accepted),
and with ``TRANSACTION_COORDINATOR_FENCED`` when its coordinator epoch is older than the last one
seen. It closes the producer's open transaction: the last stable offset moves on and an abort is
listed for ``.txnindex``. Markers go to every partition of the transaction, also those the
producer never wrote to.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from enum import Enum

from offsetscope.protocol.log.control import EndTxnMarker
from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.log import LogRecord, LogStore, PartitionLog

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
INT_MAX = 2_147_483_647
# ProducerStateEntry.NUM_BATCHES_TO_RETAIN: how many batches a retry is recognised against.
NUM_BATCHES_TO_RETAIN = 5


class AppendOrigin(Enum):
    """Who appends: a client (full validation) or a coordinator (epoch only, no sequences)."""

    CLIENT = "client"
    COORDINATOR = "coordinator"


def increment_sequence(sequence: int, increment: int) -> int:
    """``DefaultRecordBatch.incrementSequence``: sequences wrap from INT_MAX to 0."""
    if sequence > INT_MAX - increment:
        return increment - (INT_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    """``DefaultRecordBatch.decrementSequence``: the inverse of :func:`increment_sequence`."""
    if sequence < decrement:
        return INT_MAX - (decrement - sequence) + 1
    return sequence - decrement


def control_record(committed: bool, coordinator_epoch: int, timestamp: int) -> LogRecord:
    """The single record of a COMMIT/ABORT control batch (key type + EndTxnMarker value)."""
    marker = EndTxnMarker(committed=committed, coordinator_epoch=coordinator_epoch)
    return LogRecord(key=marker.encode_key(), value=marker.encode_value(), timestamp=timestamp)


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """A cached batch: its last sequence and offset and the distance back to its first."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(frozen=True, slots=True)
class ProducerStateEntry:
    """What a partition remembers about one producer id (``ProducerStateEntry``)."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int | None = None
    batches: tuple[BatchMetadata, ...] = ()

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def duplicate_of(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None

    def with_batch(self, epoch: int, batch: BatchMetadata) -> ProducerStateEntry:
        # A new epoch forgets the old epoch's batches (maybeUpdateProducerEpoch).
        kept = self.batches if epoch == self.producer_epoch else ()
        kept = (*kept, batch)[-NUM_BATCHES_TO_RETAIN:]
        return replace(self, producer_epoch=epoch, batches=kept, last_timestamp=batch.timestamp)


@dataclass(frozen=True, slots=True)
class ProduceResult:
    """A partition's answer to one batch (a ProduceResponse partition entry)."""

    error: Errors
    base_offset: int = -1
    last_offset: int = -1
    duplicate: bool = False
    message: str = ""


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction closed by a marker in this partition (``CompletedTxn``)."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass(frozen=True, slots=True)
class MarkerResult:
    """A partition's answer to one WriteTxnMarkers entry."""

    error: Errors
    offset: int = -1
    completed: CompletedTxn | None = None
    message: str = ""


@dataclass(frozen=True, slots=True)
class ProducerSnapshotEntry:
    """One entry of a ``.snapshot`` file (``docs/formats.md`` section 7.7)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


class PartitionLeader:
    """The leader of one partition: its log plus its producer state."""

    __slots__ = ("log", "producers")

    def __init__(self, log: PartitionLog) -> None:
        self.log = log
        self.producers: dict[int, ProducerStateEntry] = {}

    # ----------------------------------------------------------------- queries

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        return self.log.last_stable_offset

    def entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def has_ongoing_transaction(self, producer_id: int) -> bool:
        entry = self.producers.get(producer_id)
        return entry is not None and entry.current_txn_first_offset is not None

    def snapshot(self) -> tuple[ProducerSnapshotEntry, ...]:
        """The producer state as Kafka snapshots it, ordered by producer id."""
        out = []
        for pid in sorted(self.producers):
            e = self.producers[pid]
            last = e.batches[-1] if e.batches else None
            out.append(
                ProducerSnapshotEntry(
                    producer_id=pid,
                    producer_epoch=e.producer_epoch,
                    last_sequence=e.last_seq,
                    last_offset=last.last_offset if last else -1,
                    offset_delta=last.offset_delta if last else 0,
                    timestamp=e.last_timestamp,
                    coordinator_epoch=e.coordinator_epoch,
                    current_txn_first_offset=(
                        -1 if e.current_txn_first_offset is None else e.current_txn_first_offset
                    ),
                )
            )
        return tuple(out)

    # ----------------------------------------------------------------- data batches

    def append(
        self,
        records: Sequence[LogRecord],
        *,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        is_transactional: bool = False,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        verified: bool = True,
    ) -> ProduceResult:
        """Validate and append one data batch.

        Args:
            records: the batch's records (at least one).
            producer_id: -1 for a plain producer.
            producer_epoch: the producer's epoch.
            base_sequence: sequence of the first record (-1 for coordinator writes).
            is_transactional: the batch belongs to a transaction.
            origin: CLIENT (sequence checks) or COORDINATOR (TxnOffsetCommit: epoch only).
            verified: the transaction coordinator confirmed this partition is in the producer's
                transaction (only consulted when the batch would open a transaction here).

        Returns:
            The error (``Errors.NONE`` on success) and the batch's offsets; duplicates return
            the original batch's offsets with ``duplicate=True``.
        """
        if not records:
            raise ValueError(f"{self.log.name}: cannot append an empty batch")
        if producer_id < 0:
            if is_transactional:
                return ProduceResult(Errors.INVALID_REQUEST, message="transactional without id")
            batch = self.log.append(records)
            return ProduceResult(Errors.NONE, batch.base_offset, batch.last_offset)

        current = self.producers.get(producer_id) or ProducerStateEntry(producer_id)
        count = len(records)
        last_seq = (
            NO_SEQUENCE
            if base_sequence == NO_SEQUENCE
            else increment_sequence(base_sequence, count - 1)
        )
        if origin is AppendOrigin.CLIENT:
            dup = current.duplicate_of(producer_epoch, base_sequence, last_seq)
            if dup is not None:
                return ProduceResult(Errors.NONE, dup.first_offset, dup.last_offset, duplicate=True)
        opens_txn = is_transactional and current.current_txn_first_offset is None
        if opens_txn and not verified:
            return ProduceResult(
                Errors.INVALID_TXN_STATE, message="Record was not part of an ongoing transaction"
            )
        error = self._check_epoch(current, producer_epoch)
        if error is None and origin is AppendOrigin.CLIENT:
            error = self._check_sequence(current, producer_epoch, base_sequence)
        if error is not None:
            return error
        if current.current_txn_first_offset is not None and not is_transactional:
            return ProduceResult(
                Errors.INVALID_TXN_STATE,
                message=f"expected a transactional write from producer {producer_id}",
            )

        batch = self.log.append(
            records,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            is_transactional=is_transactional,
        )
        meta = BatchMetadata(
            last_seq=last_seq,
            last_offset=batch.last_offset,
            offset_delta=batch.last_offset - batch.base_offset,
            timestamp=batch.max_timestamp,
        )
        updated = current.with_batch(producer_epoch, meta)
        if opens_txn:
            updated = replace(updated, current_txn_first_offset=batch.base_offset)
        self.producers[producer_id] = updated
        return ProduceResult(Errors.NONE, batch.base_offset, batch.last_offset)

    def _check_epoch(self, entry: ProducerStateEntry, epoch: int) -> ProduceResult | None:
        if epoch < entry.producer_epoch:
            return ProduceResult(
                Errors.INVALID_PRODUCER_EPOCH,
                message=(
                    f"epoch of producer {entry.producer_id} in {self.log.name} is {epoch}, "
                    f"which is < the last seen epoch {entry.producer_epoch}"
                ),
            )
        return None

    def _check_sequence(
        self, entry: ProducerStateEntry, epoch: int, first_seq: int
    ) -> ProduceResult | None:
        if epoch != entry.producer_epoch:
            # A new epoch restarts sequences at 0, unless this partition has no epoch for the id.
            if first_seq != 0 and entry.producer_epoch != NO_PRODUCER_EPOCH:
                return ProduceResult(
                    Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    message=(
                        f"invalid sequence number for new epoch of producer {entry.producer_id} "
                        f"in {self.log.name}: {epoch} (request epoch), {first_seq} (seq. number), "
                        f"{entry.producer_epoch} (current producer epoch)"
                    ),
                )
            return None
        last = entry.last_seq
        in_sequence = first_seq == last + 1 or (first_seq == 0 and last == INT_MAX)
        if entry.producer_epoch != NO_PRODUCER_EPOCH and not in_sequence:
            return ProduceResult(
                Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                message=(
                    f"out of order sequence number for producer {entry.producer_id} in "
                    f"{self.log.name}: {first_seq} (incoming seq. number), {last} "
                    "(current end sequence number)"
                ),
            )
        return None

    # ----------------------------------------------------------------- markers

    def append_marker(
        self,
        *,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        coordinator_epoch: int,
        transaction_version: int,
        timestamp: int,
    ) -> MarkerResult:
        """Validate and append a COMMIT/ABORT control batch for ``producer_id``.

        Args:
            producer_id: the transaction's producer id.
            producer_epoch: the marker's epoch (TV2: the epoch the coordinator bumped to).
            committed: COMMIT or ABORT.
            coordinator_epoch: the transaction coordinator's epoch.
            transaction_version: the transaction's client transaction version (KIP-1228).
            timestamp: the control record's timestamp.

        Returns:
            The error and, on success, the marker offset and the transaction it closed
            (``None`` when this producer wrote nothing here).
        """
        entry = self.producers.get(producer_id) or ProducerStateEntry(producer_id)
        current = entry.producer_epoch
        tv2 = transaction_version >= 2
        invalid = producer_epoch <= current if tv2 else producer_epoch < current
        # TV2: a marker at the current epoch after the transaction ended is a retry (KAFKA-19999).
        retry = tv2 and producer_epoch == current and entry.current_txn_first_offset is None
        if invalid and not retry:
            cmp = "<=" if tv2 else "<"
            return MarkerResult(
                Errors.INVALID_PRODUCER_EPOCH,
                message=(
                    f"epoch of producer {producer_id} in {self.log.name} is {producer_epoch}, "
                    f"which is {cmp} the last seen epoch {current} (TV{transaction_version})"
                ),
            )
        if entry.coordinator_epoch > coordinator_epoch:
            return MarkerResult(
                Errors.TRANSACTION_COORDINATOR_FENCED,
                message=(
                    f"invalid coordinator epoch for producer {producer_id} in {self.log.name}: "
                    f"{coordinator_epoch} (zombie), {entry.coordinator_epoch} (current)"
                ),
            )
        batch = self.log.append(
            [control_record(committed, coordinator_epoch, timestamp)],
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=NO_SEQUENCE,
            is_transactional=True,
            is_control=True,
        )
        completed = None
        if entry.current_txn_first_offset is not None:
            completed = CompletedTxn(
                producer_id, entry.current_txn_first_offset, batch.base_offset, not committed
            )
        self.log.end_transaction(producer_id, marker_offset=batch.base_offset, committed=committed)
        kept = entry.batches if producer_epoch == entry.producer_epoch else ()
        self.producers[producer_id] = replace(
            entry,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
            last_timestamp=timestamp,
            current_txn_first_offset=None,
            batches=kept,
        )
        return MarkerResult(Errors.NONE, batch.base_offset, completed)


class PartitionLeaders:
    """The partition leaders of every topic partition in a :class:`LogStore` (created lazily)."""

    __slots__ = ("_leaders", "logs")

    def __init__(self, logs: LogStore) -> None:
        self.logs = logs
        self._leaders: dict[tuple[str, int], PartitionLeader] = {}

    def leader(self, topic: str, partition: int) -> PartitionLeader:
        """The leader of ``topic-partition``.

        Raises:
            KeyError: the partition does not exist in the log store.
        """
        key = (topic, partition)
        found = self._leaders.get(key)
        if found is None:
            found = PartitionLeader(self.logs.partition(topic, partition))
            self._leaders[key] = found
        return found

    def __iter__(self) -> Iterator[PartitionLeader]:
        return iter(self._leaders[k] for k in sorted(self._leaders))
