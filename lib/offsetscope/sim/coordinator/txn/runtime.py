"""The transaction coordinator's shell: append, replay, write markers, run the periodic jobs.

Kafka's ``TransactionStateManager.appendTransactionToLog`` + ``TransactionMarkerChannelManager``
+ the broker's scheduler, for one deterministic process:

* each handler result is appended to ``__transaction_state-<partition_for(transactional id)>``
  (one uncompressed, non-transactional batch per request and partition, record timestamp = now;
  the expiry job puts all tombstones of a partition in one batch) and then replayed;
* a transaction that reached PrepareCommit/PrepareAbort gets its markers ``marker_delay_ms``
  later (0 = in the same call): one COMMIT/ABORT control batch per partition of the
  transaction, appended by that partition's leader (data partitions) or handed to the group
  coordinator's offset store (``__consumer_offsets`` partitions, see :class:`TxnMarkerSink`),
  then CompleteCommit/CompleteAbort is logged;
* the timeout check runs every ``abort_timed_out_transaction_cleanup_interval_ms`` and the
  expiry job every ``remove_expired_transactional_id_cleanup_interval_ms``, first one interval
  after start-up, as Kafka's scheduler does;
* :meth:`TxnRuntime.produce` is the partition leader's side of a Produce request: the KIP-890
  verification (transactions V1) or implicit add (V2) with the coordinator, then the producer
  state checks of :mod:`offsetscope.sim.coordinator.producer_state`.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from offsetscope.clock import Clock
from offsetscope.protocol import encode_record, partition_for
from offsetscope.protocol.records import OFFSETS_TOPIC, TRANSACTION_TOPIC, CoordinatorRecord
from offsetscope.protocol.states import TransactionState
from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.log import LogRecord, LogStore
from offsetscope.sim.coordinator.producer_state import (
    MarkerResult,
    PartitionLeaders,
    ProduceResult,
)
from offsetscope.sim.coordinator.txn.config import TV_2, TransactionCoordinatorConfig
from offsetscope.sim.coordinator.txn.coordinator import (
    AddPartitionsToTxnResponse,
    DescribedTransaction,
    EndTxnResponse,
    InitProducerIdResponse,
    ListTransactionsResponse,
    ProducerIdAndEpoch,
    TransactionCoordinator,
)
from offsetscope.sim.coordinator.txn.events import TxnEvent
from offsetscope.sim.coordinator.txn.metadata import TopicPartition
from offsetscope.sim.coordinator.txn.producer_ids import ProducerIdManager

RecordEncoder = Callable[[CoordinatorRecord], tuple[bytes, bytes | None]]


class SteppableClock(Clock, Protocol):
    def advance_to(self, at_ms: int) -> int:
        """Move the clock forward to ``at_ms``."""
        ...


class TxnMarkerSink(Protocol):
    """Where WriteTxnMarkers for ``__consumer_offsets`` partitions go: the group coordinator.

    The implementation appends the control batch to the group's ``__consumer_offsets``
    partition (through that partition's :class:`~offsetscope.sim.coordinator.producer_state.PartitionLeader`,
    so epochs are checked the same way) and then completes the producer's pending transactional
    offsets: COMMIT materialises them (unless a later non-transactional commit of the same key
    is already in the log), ABORT drops them.
    """

    def write_txn_marker(
        self,
        *,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        coordinator_epoch: int,
        transaction_version: int,
        timestamp: int,
    ) -> MarkerResult:
        """Append the marker and resolve pending offsets; return the partition's answer."""
        ...


class GroupCoordinatorMarkers(Protocol):
    """What :class:`GroupRuntimeMarkerSink` needs of the group coordinator runtime."""

    def append_txn_marker(
        self,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        committed: bool,
        *,
        transaction_version: int = 0,
    ) -> MarkerResult:
        """Append a COMMIT/ABORT control batch to an offsets partition and replay it."""
        ...


class GroupRuntimeMarkerSink:
    """A :class:`TxnMarkerSink` that hands ``__consumer_offsets`` markers to the group runtime.

    ``offsetscope.sim.coordinator.runtime.GroupCoordinatorRuntime`` appends the control batch through
    the partition's leader (epoch checks) and resolves the producer's pending transactional
    offsets (Kafka 4.x: the group coordinator writes and replays that marker).
    """

    __slots__ = ("_group",)

    def __init__(self, group: GroupCoordinatorMarkers) -> None:
        self._group = group

    def write_txn_marker(
        self,
        *,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        coordinator_epoch: int,
        transaction_version: int,
        timestamp: int,
    ) -> MarkerResult:
        """Forward one marker; the group runtime stamps it with its own (shared) clock."""
        return self._group.append_txn_marker(
            partition,
            producer_id,
            producer_epoch,
            coordinator_epoch,
            committed,
            transaction_version=transaction_version,
        )


class MarkerWriteError(RuntimeError):
    """A partition rejected a transaction marker: the coordinator and the leader disagree."""

    def __init__(self, transactional_id: str, partition: TopicPartition, result: MarkerResult):
        self.transactional_id = transactional_id
        self.partition = partition
        self.result = result
        super().__init__(
            f"marker for {transactional_id!r} rejected by {partition}: "
            f"{result.error.name} {result.message}"
        )


class _Job(Enum):
    MARKERS = 0
    ABORT_TIMED_OUT = 1
    EXPIRE_IDS = 2


@dataclass(order=True, slots=True)
class _Scheduled:
    deadline: int
    seq: int
    job: _Job = field(compare=False)
    transactional_id: str = field(default="", compare=False)


class TxnRuntime:
    """Runs a :class:`TransactionCoordinator` against in-memory partition logs.

    Args:
        clock: the injected clock (a :class:`~offsetscope.clock.VirtualClock`):
            :meth:`run_until` moves it from job to job.
        logs: the log store; ``__transaction_state`` is created with
            ``config.transaction_state_partitions`` partitions unless it exists.
        config: coordinator settings.
        producer_ids: the broker's producer-id generator (a fresh one from id 0 by default).
        leaders: partition leaders over ``logs`` (shared with the group coordinator so both see
            the same producer state in ``__consumer_offsets``).
        offset_markers: the group coordinator's marker sink; without one, markers for
            ``__consumer_offsets`` partitions are appended by their partition leader directly.
        encoder: record -> (key bytes, value bytes) (default :func:`offsetscope.protocol.encode_record`).
    """

    def __init__(
        self,
        *,
        clock: SteppableClock,
        logs: LogStore,
        config: TransactionCoordinatorConfig | None = None,
        producer_ids: ProducerIdManager | None = None,
        leaders: PartitionLeaders | None = None,
        offset_markers: TxnMarkerSink | None = None,
        encoder: RecordEncoder = encode_record,
    ) -> None:
        self.config = config or TransactionCoordinatorConfig()
        self.clock = clock
        self.logs = logs
        if TRANSACTION_TOPIC not in logs.partition_counts:
            logs.create_topic(TRANSACTION_TOPIC, self.config.transaction_state_partitions)
        self.leaders = leaders or PartitionLeaders(logs)
        self.offset_markers = offset_markers
        self._encode = encoder
        self.coordinator = TransactionCoordinator(
            self.config,
            clock,
            producer_ids or ProducerIdManager(),
            offsets_partitions=self._offsets_partition_count,
        )
        self._jobs: list[_Scheduled] = []
        self._seq = 0
        self._lost_markers: set[tuple[str, str, int]] = set()
        now = clock.now_ms()
        self._schedule(
            now + self.config.abort_timed_out_transaction_cleanup_interval_ms, _Job.ABORT_TIMED_OUT
        )
        self._schedule(
            now + self.config.remove_expired_transactional_id_cleanup_interval_ms, _Job.EXPIRE_IDS
        )

    # ------------------------------------------------------------------ queries

    @property
    def events(self) -> list[TxnEvent]:
        return self.coordinator.events

    def transaction_state_partition(self, transactional_id: str) -> int:
        """The ``__transaction_state`` partition (and so the coordinator) of an id."""
        return partition_for(transactional_id, self.logs.partition_counts[TRANSACTION_TOPIC])

    def _offsets_partition_count(self) -> int:
        return self.logs.partition_counts.get(OFFSETS_TOPIC, self.config.offsets_topic_partitions)

    # ------------------------------------------------------------------ client requests

    def init_producer_id(
        self,
        transactional_id: str | None,
        transaction_timeout_ms: int = 60_000,
        expected: ProducerIdAndEpoch | None = None,
    ) -> InitProducerIdResponse:
        """InitProducerId; see :meth:`TransactionCoordinator.init_producer_id`."""
        result = self.coordinator.init_producer_id(
            transactional_id, transaction_timeout_ms, expected
        )
        self._apply(result.records)
        assert result.response is not None
        return result.response

    def add_partitions_to_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        client_transaction_version: int = 0,
    ) -> AddPartitionsToTxnResponse:
        """AddPartitionsToTxn; see :meth:`TransactionCoordinator.add_partitions_to_txn`."""
        result = self.coordinator.add_partitions_to_txn(
            transactional_id, producer_id, producer_epoch, partitions, client_transaction_version
        )
        self._apply(result.records)
        assert result.response is not None
        return result.response

    def add_offsets_to_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str
    ) -> AddPartitionsToTxnResponse:
        """AddOffsetsToTxn; see :meth:`TransactionCoordinator.add_offsets_to_txn`."""
        result = self.coordinator.add_offsets_to_txn(
            transactional_id, producer_id, producer_epoch, group_id
        )
        self._apply(result.records)
        assert result.response is not None
        return result.response

    def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        client_transaction_version: int = 0,
    ) -> EndTxnResponse:
        """EndTxn; markers follow after ``marker_delay_ms`` (at once when it is 0)."""
        result = self.coordinator.end_txn(
            transactional_id, producer_id, producer_epoch, committed, client_transaction_version
        )
        self._apply(result.records)
        assert result.response is not None
        return result.response

    def describe_transactions(
        self, transactional_ids: Sequence[str]
    ) -> tuple[DescribedTransaction, ...]:
        return self.coordinator.describe_transactions(transactional_ids)

    def list_transactions(
        self, states: Iterable[str] = (), producer_ids: Iterable[int] = (), duration_ms: int = -1
    ) -> ListTransactionsResponse:
        return self.coordinator.list_transactions(states, producer_ids, duration_ms)

    def verify_transactional_write(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        topic: str,
        partition: int,
    ) -> Errors:
        """KIP-890 verification for a coordinator's transactional write (TxnOffsetCommit).

        Returns:
            NONE when verification is off or the partition is in the producer's ongoing
            transaction; otherwise the transaction coordinator's error (PRODUCER_FENCED for a
            stale epoch, TRANSACTION_ABORTABLE for a partition never added, ...).
        """
        if not self.config.transaction_partition_verification_enable:
            return Errors.NONE
        tp = TopicPartition(topic, partition)
        return self.coordinator.verify_partitions_in_transaction(
            transactional_id, producer_id, producer_epoch, (tp,)
        )[tp]

    # ------------------------------------------------------------------ the leader's Produce

    def produce(
        self,
        topic: str,
        partition: int,
        records: Sequence[LogRecord],
        *,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        transactional_id: str | None = None,
        client_transaction_version: int = 0,
    ) -> ProduceResult:
        """One batch of a Produce request, as the partition leader handles it.

        A transactional batch that would start a transaction in this partition is first
        checked with the coordinator: transactions V2 *add* the partition (the client sends no
        AddPartitionsToTxn), older clients must have added it and are *verified*
        (``transaction.partition.verification.enable``).

        Raises:
            KeyError: the partition does not exist.
        """
        leader = self.leaders.leader(topic, partition)
        transactional = transactional_id is not None
        if (
            transactional_id is not None
            and producer_id >= 0
            and not leader.has_ongoing_transaction(producer_id)
        ):
            tp = TopicPartition(topic, partition)
            if client_transaction_version >= TV_2:
                added = self.add_partitions_to_txn(
                    transactional_id, producer_id, producer_epoch, (tp,), TV_2
                )
                if added.error is not Errors.NONE:
                    return ProduceResult(added.error, message="implicit AddPartitionsToTxn failed")
            elif self.config.transaction_partition_verification_enable:
                error = self.coordinator.verify_partitions_in_transaction(
                    transactional_id, producer_id, producer_epoch, (tp,)
                )[tp]
                if error is not Errors.NONE:
                    return ProduceResult(error, message="transaction verification failed")
        return leader.append(
            records,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            is_transactional=transactional,
        )

    # ------------------------------------------------------------------ time

    def next_deadline(self) -> int | None:
        """When the next scheduled job (markers, timeout check, expiry) is due."""
        return self._jobs[0].deadline if self._jobs else None

    def run_until(self, until_ms: int) -> None:
        """Advance the clock job by job up to ``until_ms``, running each job at its deadline."""
        while self._jobs and self._jobs[0].deadline <= until_ms:
            job = heapq.heappop(self._jobs)
            if job.deadline > self.clock.now_ms():
                self.clock.advance_to(job.deadline)
            self._run(job)
        if until_ms > self.clock.now_ms():
            self.clock.advance_to(until_ms)

    def _schedule(self, deadline: int, job: _Job, transactional_id: str = "") -> None:
        self._seq += 1
        heapq.heappush(self._jobs, _Scheduled(deadline, self._seq, job, transactional_id))

    def _run(self, scheduled: _Scheduled) -> None:
        if scheduled.job is _Job.MARKERS:
            self._write_markers(scheduled.transactional_id)
        elif scheduled.job is _Job.ABORT_TIMED_OUT:
            self._apply(self.coordinator.abort_timed_out_transactions().records)
            self._schedule(
                scheduled.deadline + self.config.abort_timed_out_transaction_cleanup_interval_ms,
                _Job.ABORT_TIMED_OUT,
            )
        else:
            self._apply(self.coordinator.expire_transactional_ids().records)
            self._schedule(
                scheduled.deadline
                + self.config.remove_expired_transactional_id_cleanup_interval_ms,
                _Job.EXPIRE_IDS,
            )

    # ------------------------------------------------------------------ append + replay

    def _apply(self, records: Sequence[CoordinatorRecord]) -> None:
        if not records:
            return
        now = self.clock.now_ms()
        batches: dict[int, list[CoordinatorRecord]] = {}
        for record in records:
            txn_id = str(record.key["transactionalId"])
            batches.setdefault(self.transaction_state_partition(txn_id), []).append(record)
        decided: list[str] = []
        for partition, batch in batches.items():
            encoded = [self._encode(record) for record in batch]
            self.logs.partition(TRANSACTION_TOPIC, partition).append(
                [LogRecord(key=key, value=value, timestamp=now) for key, value in encoded]
            )
            for record in batch:
                self.coordinator.replay(record)
                if record.value is not None and record.value["transactionStatus"] in (
                    TransactionState.PrepareCommit,
                    TransactionState.PrepareAbort,
                ):
                    decided.append(str(record.key["transactionalId"]))
        for txn_id in decided:
            if self.config.marker_delay_ms == 0:
                self._write_markers(txn_id)
            else:
                self._schedule(now + self.config.marker_delay_ms, _Job.MARKERS, txn_id)

    def lose_marker(self, transactional_id: str, topic: str, partition: int) -> None:
        """Drop the next marker of ``transactional_id`` to a data partition, as if the write
        were lost (a fault to inject: the coordinator completes the transaction all the same,
        leaving the partition with a transaction no coordinator knows -- KIP-664)."""
        self._lost_markers.add((transactional_id, topic, partition))

    def _write_markers(self, transactional_id: str) -> None:
        pending = self.coordinator.pending_markers_for(transactional_id)
        if pending is None:
            return
        now = self.clock.now_ms()
        for tp in pending.partitions:
            if (transactional_id, tp.topic, tp.partition) in self._lost_markers:
                self._lost_markers.discard((transactional_id, tp.topic, tp.partition))
                continue
            sink: TxnMarkerSink = self
            if tp.topic == OFFSETS_TOPIC and self.offset_markers is not None:
                sink = self.offset_markers
            try:
                result = sink.write_txn_marker(
                    topic=tp.topic,
                    partition=tp.partition,
                    producer_id=pending.producer_id,
                    producer_epoch=pending.producer_epoch,
                    committed=pending.committed,
                    coordinator_epoch=pending.coordinator_epoch,
                    transaction_version=pending.transaction_version,
                    timestamp=now,
                )
            except KeyError:
                # UNKNOWN_TOPIC_OR_PARTITION: the topic was deleted; Kafka drops the partition.
                continue
            if result.error is not Errors.NONE:
                raise MarkerWriteError(transactional_id, tp, result)
        self._apply(self.coordinator.complete_transaction(transactional_id).records)

    def write_txn_marker(
        self,
        *,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        coordinator_epoch: int,
        transaction_version: int,
        timestamp: int,
    ) -> MarkerResult:
        """The default marker sink: the partition leader appends the control batch."""
        return self.leaders.leader(topic, partition).append_marker(
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            committed=committed,
            coordinator_epoch=coordinator_epoch,
            transaction_version=transaction_version,
            timestamp=timestamp,
        )
