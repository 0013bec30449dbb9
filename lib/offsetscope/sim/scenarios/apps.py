"""The applications around the simulated clients: rate-driven producers and read-process-write
pipelines.

* :class:`ProducerApp` sends ``rate`` records per second, one batch per partition every
  ``linger`` (``linger.ms``); keyed records go to ``murmur2(key) % partitions`` as the Java
  producer's default partitioner sends them, null keys stick to one partition per linger tick and
  move on (the uniform sticky partitioner, KIP-794). Keys and values are deterministic: a seeded
  random key out of ``keys``, a value naming the producer and the record's sequence number.
* :class:`PipelineInstance` is one instance of an exactly-once read-process-write application
  (Kafka Streams with ``exactly_once_v2``, or the classic loop): a ``read_committed`` consumer
  and a transactional producer with its own ``transactional.id``. Every polled record becomes one
  output record (same key) inside the open transaction; every ``commit_interval`` the consumed
  positions go into the transaction (``sendOffsetsToTransaction``) and it commits. Revoked
  partitions commit the open transaction first, lost ones abort it. A fatal producer error
  (fenced after a timeout) re-initialises the producer and rewinds the consumer to the committed
  offsets, as Streams does when a task migrates.
* Timeline hooks on a pipeline instance: abort the next transaction instead of committing it;
  hang with a transaction open (the poll loop stalls, the coordinator times the transaction out);
  become a zombie (freeze between AddOffsetsToTxn and TxnOffsetCommit while a replacement with the
  same ``transactional.id`` takes over and fences it; when it wakes, its TxnOffsetCommit is refused
  and it shuts down); lose a marker (the next transaction that wrote to a given output partition
  commits, but its COMMIT marker never reaches that partition -- the coordinator completes the
  transaction all the same, so the partition holds a transaction no coordinator knows, a hanging
  transaction in the sense of KIP-664 -- and the instance shuts down, so its producer never
  writes there again).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from offsetscope.sim.coordinator.assignors import TopicPartition
from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.log import LogRecord
from offsetscope.sim.scenarios.clients import (
    FetchedRecord,
    SimConsumer,
    SimProducer,
    TransactionalProducer,
    TxnProducerState,
    murmur2_partition,
)
from offsetscope.sim.scenarios.cluster import Cluster
from offsetscope.sim.scenarios.spec import PipelineSpec, ProducerSpec


class ProducerApp:
    """A producer application sending at a steady rate (changeable by the timeline)."""

    def __init__(self, cluster: Cluster, spec: ProducerSpec, end_ms: int) -> None:
        self.cluster = cluster
        self.spec = spec
        self.rate = spec.rate
        self.stop_ms = end_ms if spec.stop_ms is None else cluster.now + spec.stop_ms
        self.producer: SimProducer | None = None
        self._rng = cluster.rng("producer", spec.name)
        self._carry = 0.0
        self._sequence = 0
        self._sticky = 0
        self._partition_of: dict[bytes, int] = {}
        self.errors: dict[str, int] = {}

    def start(self) -> None:
        self.producer = SimProducer(self.cluster, self.spec.name, idempotent=self.spec.idempotent)
        self.cluster.truth.add(
            "ClientLifecycle",
            client="producer",
            client_id=self.spec.name,
            producer_id=self.producer.producer_id,
            producer_epoch=self.producer.producer_epoch,
            event="started",
        )
        self.cluster.at(self.cluster.now + self.spec.linger_ms, self._tick)

    def _tick(self) -> None:
        now = self.cluster.now
        if now > self.stop_ms or self.producer is None:
            return
        due = self._carry + self.rate * self.spec.linger_ms / 1000
        count = int(due)
        self._carry = due - count
        if count:
            self._send(count, now)
        self.cluster.at(now + self.spec.linger_ms, self._tick)

    def _send(self, count: int, now: int) -> None:
        assert self.producer is not None
        spec = self.spec
        partitions = self.cluster.partitions(spec.topic)
        batches: dict[int, list[LogRecord]] = {}
        sticky = self._sticky % partitions
        self._sticky += 1
        for _ in range(count):
            seq = self._sequence
            self._sequence += 1
            if spec.keys:
                key: bytes | None = b"key-%06d" % self._rng.randrange(spec.keys)
                assert key is not None
                partition = self._partition_of.get(key)
                if partition is None:
                    partition = murmur2_partition(key, partitions)
                    self._partition_of[key] = partition
            else:
                key, partition = None, sticky
            value = _value(f"{spec.name}:{seq}", spec.value_bytes)
            batches.setdefault(partition, []).append(LogRecord(key, value, now))
        for partition in sorted(batches):
            error = self.producer.send(spec.topic, partition, batches[partition])
            if error is not Errors.NONE:
                self.errors[error.name] = self.errors.get(error.name, 0) + 1


def _value(text: str, size: int) -> bytes:
    raw = text.encode()
    if len(raw) >= size:
        return raw[:size]
    return raw + b"." * (size - len(raw))


class PipelineInstance:
    """One instance of a read-process-write application (see the module docstring)."""

    def __init__(
        self,
        cluster: Cluster,
        spec: PipelineSpec,
        index: int,
        *,
        on_replaced: Callable[[PipelineInstance, PipelineInstance], None] | None = None,
        incarnation: int = 0,
    ) -> None:
        self.cluster = cluster
        self.spec = spec
        self.index = index
        self.incarnation = incarnation
        self.transactional_id = spec.transactional_id.format(pipeline=spec.name, instance=index)
        self.client_id = f"{spec.name}-{index}" + (f"-r{incarnation}" if incarnation else "")
        self.consumer = SimConsumer(
            cluster,
            group_id=spec.group,
            client_id=self.client_id,
            topics=(spec.input,),
            spec=spec.consumer,
            app=self,
        )
        self.producer = self._new_producer()
        self.retired = False
        self._on_replaced = on_replaced
        self._abort_next = False
        self._hang_ms: int | None = None
        self._zombie_ms: int | None = None
        self._lose_marker: int | None = None
        self._started_consumer = False
        self._recovering = False
        self.transactions = {"committed": 0, "aborted": 0, "failed": 0}

    def _new_producer(self) -> TransactionalProducer:
        return TransactionalProducer(
            self.cluster,
            self.transactional_id,
            transaction_timeout_ms=self.spec.transaction_timeout_ms,
            client_transaction_version=self.spec.client_transaction_version,
            retry_backoff_ms=self.spec.consumer.retry_backoff_ms,
        )

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """``initTransactions()``, then subscribe and start polling."""
        self.producer.init_transactions(self._initialised)

    def _initialised(self, error: Errors) -> None:
        if self.retired:
            return
        if self._recovering:
            # Records polled while the producer was re-initialising were not processed.
            self.consumer.seek_to_committed()
        self._recovering = False
        if error is not Errors.NONE:
            self._retire(f"initTransactions failed: {error.name}")
            return
        if not self._started_consumer:
            self._started_consumer = True
            self.consumer.start()

    def _retire(self, reason: str) -> None:
        """The application stops: the producer is closed, the consumer closed (leaves)."""
        if self.retired:
            return
        self.retired = True
        self.cluster.truth.add(
            "ClientLifecycle",
            client="pipeline",
            pipeline=self.spec.name,
            instance=self.index,
            client_id=self.client_id,
            transactional_id=self.transactional_id,
            event="stopped",
            reason=reason,
        )
        self.consumer.close()

    def _recover(self, error: Errors) -> None:
        """A fatal producer error: new producer (epoch bump), rewind to committed offsets."""
        if self._recovering:
            return
        self._recovering = True
        self.transactions["failed"] += 1
        self.cluster.truth.add(
            "ClientLifecycle",
            client="pipeline",
            pipeline=self.spec.name,
            instance=self.index,
            client_id=self.client_id,
            transactional_id=self.transactional_id,
            event="producer_reinitialised",
            reason=error.name,
        )
        self.consumer.seek_to_committed()
        self.producer = self._new_producer()
        self.producer.init_transactions(self._initialised)

    # ------------------------------------------------------------------ timeline hooks

    def abort_next(self) -> None:
        self._abort_next = True

    def hang(self, duration_ms: int) -> None:
        self._hang_ms = duration_ms

    def become_zombie(self, duration_ms: int) -> None:
        self._zombie_ms = duration_ms

    def lose_marker(self, partition: int) -> None:
        self._lose_marker = partition

    # ------------------------------------------------------------------ ConsumerApp

    def wants_records(self) -> bool:
        return True

    def on_records(self, consumer: SimConsumer, records: Sequence[FetchedRecord]) -> None:
        if self.retired or self._recovering or not records:
            return
        producer = self.producer
        if producer.state is TxnProducerState.READY:
            producer.begin()
        if not producer.in_transaction:
            return
        out_partitions = self.cluster.partitions(self.spec.output)
        now = self.cluster.now
        batches: dict[int, list[LogRecord]] = {}
        for record in records:
            if record.key is not None:
                partition = murmur2_partition(record.key, out_partitions)
            else:
                partition = record.partition % out_partitions
            value = b"processed:" + (record.value or b"")
            batches.setdefault(partition, []).append(LogRecord(record.key, value, now))
        for partition in sorted(batches):
            error = producer.send(self.spec.output, partition, batches[partition])
            if error is not Errors.NONE:
                self._producer_error(error)
                return

    def after_poll(self, consumer: SimConsumer) -> None:
        if self.retired or self._recovering:
            return
        producer = self.producer
        if not producer.in_transaction:
            return
        if self._hang_ms is not None:
            duration, self._hang_ms = self._hang_ms, None
            consumer.pause(duration)
            return
        if self.cluster.now - producer.transaction_started_ms >= self.spec.commit_interval_ms:
            self._end_transaction()

    def on_partitions_revoked(
        self, consumer: SimConsumer, partitions: Sequence[TopicPartition]
    ) -> None:
        if not self.retired and not self._recovering and self.producer.in_transaction:
            self._end_transaction()

    def on_partitions_assigned(
        self, consumer: SimConsumer, partitions: Sequence[TopicPartition]
    ) -> None:
        return None

    def on_partitions_lost(
        self, consumer: SimConsumer, partitions: Sequence[TopicPartition]
    ) -> None:
        if not self.retired and not self._recovering and self.producer.in_transaction:
            self._abort()

    # ------------------------------------------------------------------ transactions

    def _end_transaction(self) -> None:
        producer = self.producer
        consumer = self.consumer
        offsets = consumer.consumed_offsets()
        if self._abort_next:
            self._abort_next = False
            self._abort()
            return
        if offsets:
            error = producer.add_offsets(self.spec.group)
            if error is not Errors.NONE:
                self._producer_error(error)
                return
            if self._zombie_ms is not None:
                self._turn_zombie(offsets)
                return
            error = self._send_offsets(offsets)
            if error is not Errors.NONE:
                self._producer_error(error)
                return
        lost = self._lose_marker
        if lost is not None and (self.spec.output, lost) in producer.partitions:
            self._lose_marker = None
            self._commit_losing_marker(lost)
            return
        error = producer.end(commit=True)
        if error is Errors.NONE:
            self.transactions["committed"] += 1
        else:
            self._producer_error(error)

    def _commit_losing_marker(self, partition: int) -> None:
        """Commit; the marker to ``partition`` is lost on its way; the application stops."""
        producer = self.producer
        log = self.cluster.logs.partition(self.spec.output, partition)
        pid, epoch = producer.producer_id, producer.producer_epoch
        first = log.open_txns.get(pid)
        self.cluster.txns.lose_marker(self.transactional_id, self.spec.output, partition)
        error = producer.end(commit=True)
        if error is not Errors.NONE:
            self._producer_error(error)
            return
        self.transactions["committed"] += 1
        self.cluster.truth.add(
            "MarkerLost",
            transactional_id=self.transactional_id,
            producer_id=pid,
            producer_epoch=epoch,
            topic=self.spec.output,
            partition=partition,
            first_offset=first,
        )
        self._retire(f"its COMMIT marker to {self.spec.output}-{partition} was lost")

    def _send_offsets(self, offsets: dict[TopicPartition, int]) -> Errors:
        generation = self.consumer.generation
        return self.producer.commit_offsets(
            offsets,
            group_id=self.spec.group,
            generation_id=generation.generation_id,
            member_id=generation.member_id,
            group_instance_id=self.consumer.instance_id,
        )

    def _abort(self) -> None:
        error = self.producer.end(commit=False)
        if error is Errors.NONE:
            self.transactions["aborted"] += 1
            self.consumer.seek_to_committed()
        else:
            self._producer_error(error)

    def _producer_error(self, error: Errors) -> None:
        if self.producer.state is TxnProducerState.FATAL_ERROR:
            self._recover(error)
        elif self.producer.state is TxnProducerState.ABORTABLE_ERROR:
            self._abort()

    def _turn_zombie(self, offsets: dict[TopicPartition, int]) -> None:
        """Freeze between AddOffsetsToTxn and TxnOffsetCommit; a replacement takes over."""
        duration = self._zombie_ms
        assert duration is not None
        self._zombie_ms = None
        self.consumer.freeze(duration)
        replacement = PipelineInstance(
            self.cluster,
            self.spec,
            self.index,
            on_replaced=self._on_replaced,
            incarnation=self.incarnation + 1,
        )
        if self._on_replaced is not None:
            self._on_replaced(self, replacement)
        replacement.start()

        def wake() -> None:
            # The zombie carries on where it stopped: its offsets are refused (fenced).
            error = self._send_offsets(offsets)
            if error is Errors.NONE:
                error = self.producer.end(commit=True)
            self._retire(f"zombie fenced: {error.name}")

        self.cluster.at(self.cluster.now + duration, wake)
