"""The group coordinator runtime: routing, appends, replay, timers and parked requests.

Kafka's ``CoordinatorRuntime`` runs one state machine (shard) per ``__consumer_offsets``
partition; a request goes to the shard of ``partition_for(group_id)`` (FindCoordinator,
``docs/formats.md`` section 10) and every write operation is::

    result = handler(state)                  # pure: records + changes + response
    batch  = log.append(result.records)      # one batch per operation, CREATE_TIME = now
    state.apply(result.changes)              # in-memory changes (the soft state)
    state.replay(record, offset) for each    # unless the result says not to (live GroupMetadata)

Timers (heartbeat/session expiry, join completion, initial rebalance delay, pending-sync
expiry, the periodic offsets expiry job) are keyed like Kafka's (``heartbeat-<g>-<m>``,
``join-<g>``, ``sync-<g>``, ``expire-group-metadata``): scheduling a key replaces its deadline.
They live on the injected clock and fire only when the runtime is told to move time
(:meth:`GroupCoordinatorRuntime.advance`, :meth:`~GroupCoordinatorRuntime.run_until`) or before a
request is handled: due timers fire in (deadline, scheduling order), each as its own operation,
so the same sequence of calls always produces the same records.

Transactions (the interface the transaction coordinator uses):

* :meth:`~GroupCoordinatorRuntime.txn_commit_offsets` appends TxnOffsetCommit records as a
  transactional batch of the producer to the group's partition; they stay pending. As Kafka 4.x
  does (``CoordinatorRuntime.scheduleTransactionalWriteOperation``), a producer without an open
  transaction in that partition is first *verified* with the transaction coordinator (KIP-890;
  see :meth:`~GroupCoordinatorRuntime.set_transaction_verifier`), whose PRODUCER_FENCED the
  broker hands back as INVALID_PRODUCER_EPOCH (``AddPartitionsToTxnManager``); then the
  partition's producer state checks the epoch: a zombie's commit gets INVALID_PRODUCER_EPOCH;
* :meth:`~GroupCoordinatorRuntime.append_txn_marker` appends the COMMIT/ABORT control batch of a
  producer to one offsets partition (the one AddOffsetsToTxn added, see
  :meth:`~GroupCoordinatorRuntime.partition_for`) and replays it: pending offsets of that producer
  in that partition are committed (unless a later plain commit won) or dropped.

Transactional batches and markers go through the partition's
:class:`~offsetscope.sim.coordinator.producer_state.PartitionLeader` (``leaders``, shared with the
transaction runtime), so producer epochs, open transactions and the last stable offset of the
``__consumer_offsets`` partitions are tracked in one place for both coordinators.
"""

from __future__ import annotations

import functools
import heapq
import random
import struct
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from offsetscope.protocol import decode_record, encode_record, partition_for
from offsetscope.protocol.records import OFFSETS_TOPIC, CoordinatorRecord
from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.group import changes as ch
from offsetscope.sim.coordinator.group import messages as msg
from offsetscope.sim.coordinator.group.config import GroupCoordinatorConfig
from offsetscope.sim.coordinator.group.coordinator import GroupCoordinatorShard, GroupResult
from offsetscope.sim.coordinator.group.events import GroupEvent
from offsetscope.sim.coordinator.log import Batch, LogRecord, LogStore
from offsetscope.sim.coordinator.producer_state import AppendOrigin, MarkerResult, PartitionLeaders

T = TypeVar("T")

# Control record key (int16 version 0, int16 type), read back when a log is loaded
# (docs/formats.md section 6); markers are written by the partition leader.
_CONTROL_KEY = struct.Struct(">hh")
ABORT_MARKER_TYPE = 0
COMMIT_MARKER_TYPE = 1

# Coordinator batches carry base sequence 0 (Kafka's runtime builds them so); markers -1.
COORDINATOR_BASE_SEQUENCE = 0
NO_SEQUENCE = -1


class SteppableClock(Protocol):
    """A clock the runtime can move forward (``VirtualClock``)."""

    def now_ms(self) -> int: ...

    def advance_to(self, at_ms: int) -> int: ...


class Pending(Generic[T]):
    """The response to a request that may be parked (JoinGroup, SyncGroup).

    ``done`` tells whether it arrived; callbacks run once the operation that answered it is
    complete, so they may send new requests.
    """

    __slots__ = ("_callbacks", "_done", "_value", "request_id")

    def __init__(self, request_id: int) -> None:
        self.request_id = request_id
        self._done = False
        self._value: T | None = None
        self._callbacks: list[Callable[[T], None]] = []

    @property
    def done(self) -> bool:
        return self._done

    def result(self) -> T:
        """The response.

        Raises:
            RuntimeError: the request is still parked.
        """
        if not self._done:
            raise RuntimeError(f"request {self.request_id} has no response yet")
        return self._value  # type: ignore[return-value]

    def add_done_callback(self, callback: Callable[[T], None]) -> None:
        if self._done:
            callback(self._value)  # type: ignore[arg-type]
        else:
            self._callbacks.append(callback)

    def _resolve(self, value: T) -> list[Callable[[], None]]:
        self._done = True
        self._value = value
        return [functools.partial(cb, value) for cb in self._callbacks]


class OffsetCommitEncoder:
    """``encode_record`` with a fast path for the dominant record: OffsetCommit, value v4.

    At scale nearly every record the coordinator writes is an offset commit, and the same
    (group, topic, partition) keys are written again and again. Their key bytes are cached;
    a v4 value without a topic id is packed directly (``int16 4 | int64 offset | int32
    leaderEpoch | compact string metadata | int64 commitTimestamp | empty tagged section``),
    byte-identical to the generic writer (a unit test holds the two together). Everything else
    goes through :func:`offsetscope.protocol.encode_record`.
    """

    __slots__ = ("_keys",)

    _HEAD = struct.Struct(">hqi")
    # version, offset, leaderEpoch, compact length of "" (1), commitTimestamp, no tagged fields
    _EMPTY_METADATA = struct.Struct(">hqiBqB")
    _TIMESTAMP = struct.Struct(">q")
    # Bound the key cache: beyond this many keys, fall back to encoding keys every time.
    MAX_KEYS = 2_000_000

    def __init__(self) -> None:
        self._keys: dict[tuple[str, str, int], bytes] = {}

    def encode(self, record: CoordinatorRecord) -> tuple[bytes, bytes | None]:
        value = record.value
        if record.record_type != 1 or value is None or record.value_version != 4:
            return encode_record(record)
        topic_id = value.get("topicId")
        metadata = value["metadata"]
        if (topic_id is not None and topic_id.int != 0) or not metadata.isascii():
            return encode_record(record)
        key = record.key
        cache_key = (key["group"], key["topic"], key["partition"])
        key_bytes = self._keys.get(cache_key)
        if key_bytes is None:
            key_bytes, _ = encode_record(record)
            if len(self._keys) < self.MAX_KEYS:
                self._keys[cache_key] = key_bytes
        if not metadata:
            # The common case (empty metadata): one pack call for the whole value.
            return key_bytes, self._EMPTY_METADATA.pack(
                4, value["offset"], value["leaderEpoch"], 1, value["commitTimestamp"], 0
            )
        raw = metadata.encode("ascii")
        n = len(raw) + 1
        if n < 0x80:
            length = bytes((n,))
        else:
            out = bytearray()
            while n >= 0x80:
                out.append((n & 0x7F) | 0x80)
                n >>= 7
            out.append(n)
            length = bytes(out)
        return key_bytes, b"".join(
            (
                self._HEAD.pack(4, value["offset"], value["leaderEpoch"]),
                length,
                raw,
                self._TIMESTAMP.pack(value["commitTimestamp"]),
                b"\x00",
            )
        )


class TransactionVerifier(Protocol):
    """The transaction coordinator's side of KIP-890 verification (``TxnRuntime``)."""

    def verify_transactional_write(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        topic: str,
        partition: int,
    ) -> Errors:
        """NONE when ``topic-partition`` is in the producer's ongoing transaction."""
        ...


class MarkerRejectedError(RuntimeError):
    """A partition refused a transaction marker (the coordinators disagree about an epoch)."""

    def __init__(self, partition: int, result: MarkerResult) -> None:
        super().__init__(
            f"marker rejected by offsets partition {partition}: {result.error.name} {result.message}"
        )
        self.partition = partition
        self.result = result


# TxnOffsetCommit v5+ (KIP-890 part 2) understands TRANSACTION_ABORTABLE; older clients get
# INVALID_TXN_STATE for it (AddPartitionsToTxnManager's backward-compatible conversion).
TXN_OFFSET_COMMIT_GENERIC_ERROR_VERSION = 5

EventHook = Callable[[GroupEvent], None]
AppendHook = Callable[[int, Batch, Sequence[CoordinatorRecord]], None]


class GroupCoordinatorRuntime:
    """The bundled group coordinator: shards per offsets partition, one shared log and clock."""

    def __init__(
        self,
        log: LogStore,
        clock: SteppableClock,
        config: GroupCoordinatorConfig | None = None,
        *,
        seed: int = 0,
        topic: str = OFFSETS_TOPIC,
        on_event: EventHook | None = None,
        on_append: AppendHook | None = None,
        leaders: PartitionLeaders | None = None,
    ) -> None:
        """Create the runtime and its shards; the offsets topic is created in ``log``.

        Args:
            log: where batches are appended (``topic`` gets ``config.offsets_topic_partitions``).
            clock: the injected time; the runtime moves it when timers fire.
            config: coordinator settings (Kafka defaults when None).
            seed: seeds the random part of member ids, so runs are reproducible.
            topic: the offsets topic name in ``log``.
            on_event: receives every ground-truth event.
            on_append: receives (partition, batch, records) after each coordinator append.
            leaders: the partition leaders of ``log`` (share them with the transaction runtime);
                a private set when None.
        """
        self.config = config or GroupCoordinatorConfig()
        self.log = log
        self.clock = clock
        self.topic = topic
        self._encode = OffsetCommitEncoder().encode
        self._partition_for = partition_for
        # Java's String.hashCode in Python is slow enough to matter on the commit path.
        self._partitions: dict[str, int] = {}
        self._rng = random.Random(seed)
        self._emit: EventHook = on_event or _ignore_event
        self._on_append = on_append
        self.leaders = leaders or PartitionLeaders(log)
        self._verifier: TransactionVerifier | None = None
        log.create_topic(topic, self.config.offsets_topic_partitions)
        self.shards = [
            GroupCoordinatorShard(p, self.config, clock, self._new_uuid)
            for p in range(self.config.offsets_topic_partitions)
        ]
        # (partition, key) -> (deadline, seq, action); the heap may hold stale entries.
        self._timers: dict[tuple[int, str], tuple[int, int, ch.TimerAction]] = {}
        self._heap: list[tuple[int, int, int, str]] = []
        self._seq = 0
        self._next_request_id = 0
        self._parked: dict[int, Pending[Any]] = {}
        self._firing = False
        now = clock.now_ms()
        for shard in self.shards:
            self._schedule(shard.partition, shard.cleanup_timer(now))

    def _new_uuid(self) -> uuid.UUID:
        return uuid.UUID(int=self._rng.getrandbits(128), version=4)

    # ------------------------------------------------------------------------- routing

    def partition_for(self, group_id: str) -> int:
        """The offsets partition (and shard) of ``group_id``."""
        partition = self._partitions.get(group_id)
        if partition is None:
            partition = self._partition_for(group_id, self.config.offsets_topic_partitions)
            self._partitions[group_id] = partition
        return partition

    def shard_for(self, group_id: str) -> GroupCoordinatorShard:
        return self.shards[self.partition_for(group_id)]

    # ------------------------------------------------------------------------- group APIs

    def join_group(self, request: msg.JoinGroupRequest) -> Pending[msg.JoinGroupResponse]:
        """JoinGroup; the response may arrive later (when the join phase completes)."""
        pending: Pending[msg.JoinGroupResponse] = self._new_pending()
        if not request.group_id:
            return self._answer(
                pending, msg.JoinGroupResponse(Errors.INVALID_GROUP_ID, member_id=request.member_id)
            )
        if not (
            self.config.min_session_timeout_ms
            <= request.session_timeout_ms
            <= self.config.max_session_timeout_ms
        ):
            return self._answer(
                pending,
                msg.JoinGroupResponse(Errors.INVALID_SESSION_TIMEOUT, member_id=request.member_id),
            )
        shard = self._before_request(request.group_id)
        self._run(shard, shard.join_group(request, pending.request_id), pending)
        return pending

    def sync_group(self, request: msg.SyncGroupRequest) -> Pending[msg.SyncGroupResponse]:
        """SyncGroup; followers' responses arrive when the leader's assignment is stored."""
        pending: Pending[msg.SyncGroupResponse] = self._new_pending()
        if not request.group_id:
            return self._answer(pending, msg.SyncGroupResponse(Errors.INVALID_GROUP_ID))
        shard = self._before_request(request.group_id)
        self._run(shard, shard.sync_group(request, pending.request_id), pending)
        return pending

    def heartbeat(self, request: msg.HeartbeatRequest) -> msg.HeartbeatResponse:
        if not request.group_id:
            return msg.HeartbeatResponse(Errors.INVALID_GROUP_ID)
        shard = self._before_request(request.group_id)
        return self._run_now(shard, shard.heartbeat(request))

    def leave_group(self, request: msg.LeaveGroupRequest) -> msg.LeaveGroupResponse:
        if not request.group_id:
            return msg.LeaveGroupResponse(Errors.INVALID_GROUP_ID)
        shard = self._before_request(request.group_id)
        return self._run_now(shard, shard.leave_group(request))

    def delete_groups(self, group_ids: Sequence[str]) -> msg.DeleteGroupsResponse:
        """DeleteGroups; one batch per offsets partition involved, results in request order."""
        self.run_until(self.clock.now_ms())
        by_partition: dict[int, list[str]] = {}
        results: dict[str, msg.DeletableGroupResult] = {}
        for gid in group_ids:
            if not gid:
                results[gid] = msg.DeletableGroupResult(gid, Errors.INVALID_GROUP_ID)
            else:
                by_partition.setdefault(self.partition_for(gid), []).append(gid)
        for partition, ids in by_partition.items():
            shard = self.shards[partition]
            response = self._run_now(shard, shard.delete_groups(ids))
            for r in response.results:
                results[r.group_id] = r
        return msg.DeleteGroupsResponse(tuple(results[g] for g in dict.fromkeys(group_ids)))

    def list_groups(self, states: Iterable[str] = ()) -> list[msg.ListedGroup]:
        self.run_until(self.clock.now_ms())
        wanted = list(states)
        return [g for shard in self.shards for g in shard.list_groups(wanted)]

    def describe_groups(
        self, group_ids: Sequence[str], api_version: int = msg.DESCRIBE_GROUPS_LATEST_VERSION
    ) -> list[msg.DescribedGroup]:
        self.run_until(self.clock.now_ms())
        return [self.shard_for(g).describe_group(g, api_version) for g in group_ids]

    # ------------------------------------------------------------------------- offset APIs

    def commit_offsets(self, request: msg.OffsetCommitRequest) -> msg.OffsetCommitResponse:
        shard = self._before_request(request.group_id)
        return self._run_now(shard, shard.commit_offsets(request))

    def set_transaction_verifier(self, verifier: TransactionVerifier | None) -> None:
        """Verify TxnOffsetCommit producers with the transaction coordinator (KIP-890)."""
        self._verifier = verifier

    def txn_commit_offsets(self, request: msg.TxnOffsetCommitRequest) -> msg.OffsetCommitResponse:
        """TxnOffsetCommit: pending offsets in a transactional batch of the producer.

        A producer with no open transaction in the group's partition is verified with the
        transaction coordinator first; the batch must then pass the partition's producer-epoch
        check. Either failure answers every partition with the error and writes nothing.
        """
        shard = self._before_request(request.group_id)
        leader = self.leaders.leader(self.topic, shard.partition)
        pid, epoch = request.producer_id, request.producer_epoch
        error = Errors.NONE
        if self._verifier is not None and not leader.has_ongoing_transaction(pid):
            error = self._verifier.verify_transactional_write(
                request.transactional_id, pid, epoch, self.topic, shard.partition
            )
            if error is Errors.PRODUCER_FENCED:
                error = Errors.INVALID_PRODUCER_EPOCH
            elif (
                error is Errors.TRANSACTION_ABORTABLE
                and request.api_version < TXN_OFFSET_COMMIT_GENERIC_ERROR_VERSION
            ):
                error = Errors.INVALID_TXN_STATE
        if error is Errors.NONE:
            entry = leader.entry(pid)
            if entry is not None and epoch < entry.producer_epoch:
                error = Errors.INVALID_PRODUCER_EPOCH
        if error is not Errors.NONE:
            return msg.OffsetCommitResponse(
                tuple(
                    msg.TopicResult(
                        t.name, tuple(msg.PartitionResult(p.partition, error) for p in t.partitions)
                    )
                    for t in request.topics
                )
            )
        return self._run_now(shard, shard.commit_transactional_offsets(request))

    def fetch_offsets(self, request: msg.OffsetFetchRequest) -> msg.OffsetFetchResponse:
        if not request.group_id and request.topics is None:
            return msg.OffsetFetchResponse(request.group_id, error=Errors.INVALID_GROUP_ID)
        shard = self._before_request(request.group_id)
        return shard.fetch_offsets(request)

    def delete_offsets(self, request: msg.OffsetDeleteRequest) -> msg.OffsetDeleteResponse:
        if not request.group_id:
            return msg.OffsetDeleteResponse(Errors.INVALID_GROUP_ID)
        shard = self._before_request(request.group_id)
        return self._run_now(shard, shard.delete_offsets(request))

    def write_txn_marker(
        self,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        committed: bool,
        transaction_version: int = 0,
    ) -> Batch:
        """Append a COMMIT/ABORT marker of ``producer_id`` to one offsets partition and replay it.

        Args:
            partition: the ``__consumer_offsets`` partition the transaction added.
            producer_id: the transaction's producer id.
            producer_epoch: the marker's epoch.
            coordinator_epoch: the transaction coordinator's epoch (the marker value).
            committed: COMMIT (True) or ABORT (False).
            transaction_version: the transaction's client transaction version (2: the epoch was
                bumped for the markers).

        Returns:
            The appended control batch.

        Raises:
            MarkerRejectedError: the partition's producer state refused the marker.
        """
        result = self.append_txn_marker(
            partition,
            producer_id,
            producer_epoch,
            coordinator_epoch,
            committed,
            transaction_version=transaction_version,
        )
        if result.error is not Errors.NONE:
            raise MarkerRejectedError(partition, result)
        return self.log.partition(self.topic, partition).batches[-1]

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
        """WriteTxnMarkers for one offsets partition: the leader appends, the shard replays.

        Returns:
            The partition leader's answer; on an error nothing was appended or replayed.
        """
        self.run_until(self.clock.now_ms())
        result = self.leaders.leader(self.topic, partition).append_marker(
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            committed=committed,
            coordinator_epoch=coordinator_epoch,
            transaction_version=transaction_version,
            timestamp=self.clock.now_ms(),
        )
        if result.error is Errors.NONE:
            self.shards[partition].replay_end_transaction_marker(producer_id, committed, self._emit)
        return result

    # ------------------------------------------------------------------------- time

    def advance(self, ms: int) -> int:
        """Move time forward by ``ms``, firing due timers in order; returns the new time."""
        return self.run_until(self.clock.now_ms() + ms)

    def run_until(self, at_ms: int) -> int:
        """Fire every timer due at or before ``at_ms`` (deadline, then scheduling order), then
        move the clock to ``at_ms``."""
        if self._firing:
            return self.clock.now_ms()
        self._firing = True
        try:
            while self._heap and self._heap[0][0] <= at_ms:
                deadline, seq, partition, key = heapq.heappop(self._heap)
                entry = self._timers.get((partition, key))
                if entry is None or entry[1] != seq:
                    continue  # cancelled or rescheduled
                del self._timers[(partition, key)]
                if deadline > self.clock.now_ms():
                    self.clock.advance_to(deadline)
                shard = self.shards[partition]
                self._run(shard, shard.fire_timer(entry[2]), None)
        finally:
            self._firing = False
        if at_ms > self.clock.now_ms():
            self.clock.advance_to(at_ms)
        return self.clock.now_ms()

    def next_deadline(self) -> int | None:
        """The earliest pending timer deadline, if any."""
        heap = self._heap
        while heap:
            deadline, seq, partition, key = heap[0]
            entry = self._timers.get((partition, key))
            if entry is not None and entry[1] == seq:
                return deadline
            heapq.heappop(heap)  # cancelled or rescheduled: drop it now
        return None

    def timer_deadline(self, group_id: str, key: str) -> int | None:
        """The deadline of timer ``key`` on ``group_id``'s partition (tests, scenarios)."""
        entry = self._timers.get((self.partition_for(group_id), key))
        return None if entry is None else entry[0]

    # ------------------------------------------------------------------------- loading

    def load(self) -> None:
        """Rebuild every shard from the offsets partitions already in ``log`` (coordinator
        failover), then schedule what Kafka schedules after a load."""
        for shard in self.shards:
            log = self.log.partition(self.topic, shard.partition)
            for batch in log.batches:
                if batch.is_control:
                    (_, marker_type) = _CONTROL_KEY.unpack(batch.records[0].key or b"")
                    shard.replay_end_transaction_marker(
                        batch.producer_id, marker_type == COMMIT_MARKER_TYPE
                    )
                    continue
                pid = batch.producer_id if batch.is_transactional else -1
                for i, rec in enumerate(batch.records):
                    decoded = decode_record(OFFSETS_TOPIC, rec.key, rec.value)
                    if isinstance(decoded, CoordinatorRecord):
                        shard.replay(decoded, batch.base_offset + i, pid)
            self._timers = {k: v for k, v in self._timers.items() if k[0] != shard.partition}
            self._run(shard, shard.on_loaded(), None)

    # ------------------------------------------------------------------------- internals

    def _new_pending(self) -> Pending[Any]:
        self._next_request_id += 1
        return Pending(self._next_request_id)

    def _answer(self, pending: Pending[T], response: T) -> Pending[T]:
        for callback in pending._resolve(response):
            callback()
        return pending

    def _before_request(self, group_id: str) -> GroupCoordinatorShard:
        # Timers due by now fire before the request is handled.
        self.run_until(self.clock.now_ms())
        return self.shard_for(group_id)

    def _run_now(self, shard: GroupCoordinatorShard, result: GroupResult[T]) -> T:
        self._run(shard, result, None)
        if result.response is None:
            raise RuntimeError("handler returned no response")
        return result.response

    def _run(
        self,
        shard: GroupCoordinatorShard,
        result: GroupResult[Any],
        pending: Pending[Any] | None,
    ) -> None:
        """Append the result's records as one batch, apply its changes, replay its records."""
        now = self.clock.now_ms()
        batch = None
        if result.records:
            encoded = [self._encode(r) for r in result.records]
            log = self.log.partition(self.topic, shard.partition)
            records = [LogRecord(k, v, now) for k, v in encoded]
            if result.producer_id == -1:
                batch = log.append(records, base_sequence=COORDINATOR_BASE_SEQUENCE)
            else:
                # TxnOffsetCommit: through the partition's producer state (epoch, open txn).
                produced = self.leaders.leader(self.topic, shard.partition).append(
                    records,
                    producer_id=result.producer_id,
                    producer_epoch=result.producer_epoch,
                    base_sequence=COORDINATOR_BASE_SEQUENCE,
                    is_transactional=True,
                    origin=AppendOrigin.COORDINATOR,
                )
                if produced.error is not Errors.NONE:
                    raise RuntimeError(
                        f"transactional offsets append refused after the epoch check: {produced}"
                    )
                batch = log.batches[-1]
            if self._on_append is not None:
                self._on_append(shard.partition, batch, result.records)
        callbacks: list[Callable[[], None]] = []
        for change in result.changes:
            shard.apply(change, self._emit)
            match change:
                case ch.TimerScheduled():
                    self._schedule(shard.partition, change)
                case ch.TimerCancelled(key=key):
                    self._timers.pop((shard.partition, key), None)
                case (
                    ch.JoinResponded(request_id=rid, response=response)
                    | ch.SyncResponded(request_id=rid, response=response)
                ):
                    parked = self._parked.pop(
                        rid, pending if pending and pending.request_id == rid else None
                    )
                    if parked is not None:
                        callbacks.extend(parked._resolve(response))
                case _:
                    pass
        if batch is not None and result.replay_records:
            for i, record in enumerate(result.records):
                shard.replay(record, batch.base_offset + i, result.producer_id, self._emit)
        if pending is not None and not pending.done:
            if result.response is not None:
                callbacks.extend(pending._resolve(result.response))
            else:
                self._parked[pending.request_id] = pending
        for callback in callbacks:
            callback()

    def _schedule(self, partition: int, timer: ch.TimerScheduled) -> None:
        self._seq += 1
        self._timers[(partition, timer.key)] = (timer.deadline_ms, self._seq, timer.action)
        heapq.heappush(self._heap, (timer.deadline_ms, self._seq, partition, timer.key))


def _ignore_event(_: GroupEvent) -> None:
    return None
