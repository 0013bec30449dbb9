"""Simulated Kafka clients with the Java clients' behaviour, driving the bundled coordinators.

:class:`SimConsumer` is ``KafkaConsumer`` with the classic group protocol, i.e.
``AbstractCoordinator`` + ``ConsumerCoordinator`` (Kafka 4.x), on the virtual clock:

* **membership**: FindCoordinator (``partition_for``), JoinGroup v9 -- a dynamic member first
  gets MEMBER_ID_REQUIRED and rejoins with the id it was given; a static member sends its
  ``group.instance.id`` -- then SyncGroup: the leader runs the selected assignor over the members
  *in JoinGroup-response order* and sends every assignment, followers send none. The member
  states are Kafka's ``MemberState`` (:class:`MemberState`, with a table of valid previous
  states); the rebalance protocol is the highest one every configured assignor supports
  (``range`` + ``cooperative-sticky``, the default list, gives EAGER);
* **the heartbeat thread** runs on its own schedule (``heartbeat.interval.ms``) while the member
  is COMPLETING_REBALANCE or STABLE, separately from the poll loop. It notices
  ``max.poll.interval.ms`` passing without a ``poll()`` and leaves the group (dynamic members
  send LeaveGroup, static ones only reset); REBALANCE_IN_PROGRESS makes the next ``poll()``
  rejoin; ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID reset the generation (the member id too for
  UNKNOWN_MEMBER_ID) and rejoin; FENCED_INSTANCE_ID is fatal;
* **the poll loop** (the application): ``poll()`` completes a finished rebalance
  (``onJoinComplete``), starts a rejoin when one is needed (``onJoinPrepare`` first: auto-commit,
  then revoke everything (EAGER) or nothing (COOPERATIVE); a reset generation *loses* the
  partitions), auto-commits every ``auto.commit.interval.ms``, fetches committed offsets for new
  partitions (OffsetFetch with ``requireStable``; UNSTABLE_OFFSET_COMMIT is retried after
  ``retry.backoff.ms``) or resets them (``auto.offset.reset``), and returns up to
  ``max.poll.records`` records (up to the high watermark, or the last stable offset for
  ``read_committed``). The application then processes them at ``processing_rate`` records/s
  before it polls again, committing (commitSync/commitAsync) if so configured;
* **cooperative rebalancing** (KIP-429): owned partitions travel in the subscription; after a
  rebalance the member revokes what it lost and rejoins at once (the second phase);
* **close** commits (auto-commit), revokes and leaves (dynamic members); **crash** stops
  everything at once (the coordinator finds out by session timeout); **freeze** stops the whole
  process (a GC pause: no heartbeats either); **pause** stalls only the poll loop.

:class:`SimProducer` is an idempotent (or plain) producer: InitProducerId, one sequence per
partition, batches appended by the partition leader. :class:`TransactionalProducer` adds
``initTransactions`` (retrying CONCURRENT_TRANSACTIONS), AddPartitionsToTxn (transactions V0; V2
adds partitions implicitly), ``sendOffsetsToTransaction`` (AddOffsetsToTxn + TxnOffsetCommit to the
group coordinator), commit and abort; fatal errors (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH) leave
it unusable, as the Java producer is.

Records are partitioned as the Java producer's default partitioner does: ``murmur2`` of the key
(:func:`murmur2_partition`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Protocol

from offsetscope.protocol.consumer_protocol import (
    PROTOCOL_TYPE,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from offsetscope.protocol.log import AbortedTxn
from offsetscope.sim.coordinator.assignors import (
    Assignor,
    ClusterMetadata,
    RebalanceProtocol,
    Subscription,
    TopicPartition,
    assignor_by_name,
)
from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.group import messages as msg
from offsetscope.sim.coordinator.log import Batch, LogRecord, PartitionLog
from offsetscope.sim.coordinator.producer_state import increment_sequence
from offsetscope.sim.coordinator.txn.metadata import TopicPartition as TxnTopicPartition
from offsetscope.sim.scenarios.cluster import Cluster
from offsetscope.sim.scenarios.spec import ConsumerSpec

CONSUMER_PROTOCOL_VERSION = 3  # ConsumerProtocolSubscription/Assignment HIGHEST_SUPPORTED_VERSION
NO_GENERATION = -1
# JoinGroup v9 (the newest the classic protocol has); OffsetCommit v9, as librdkafka and the
# Java client without topic ids send it (the record value is then v3, without topicId).
JOIN_GROUP_VERSION = 9
OFFSET_COMMIT_VERSION = 9
TXN_OFFSET_COMMIT_VERSION = 3
CLIENT_HOST = "/127.0.0.1"


# ----------------------------------------------------------------------------- partitioner


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (signed 32-bit), the default partitioner's hash."""
    m = 0x5BD1E995
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(0, length - length % 4, 4):
        k = data[i] | data[i + 1] << 8 | data[i + 2] << 16 | data[i + 3] << 24
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    tail = length & ~3
    rest = length % 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def murmur2_partition(key: bytes, partitions: int) -> int:
    """``BuiltInPartitioner.partitionForKey``: ``toPositive(murmur2(key)) % partitions``."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


# ----------------------------------------------------------------------------- consumer


class MemberState(Enum):
    """``AbstractCoordinator.MemberState``: the client's view of its membership."""

    UNJOINED = "UNJOINED"
    """Not in a group (start, after a reset or a leave). Heartbeats off."""
    PREPARING_REBALANCE = "PREPARING_REBALANCE"
    """JoinGroup sent, waiting for the response. Heartbeats off."""
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"
    """Joined; SyncGroup sent, waiting for the assignment. Heartbeats on."""
    STABLE = "STABLE"
    """Assignment received. Heartbeats on; commits carry this generation."""


VALID_PREVIOUS_STATES: Mapping[MemberState, frozenset[MemberState]] = {
    MemberState.UNJOINED: frozenset(MemberState),
    MemberState.PREPARING_REBALANCE: frozenset(
        {
            MemberState.UNJOINED,
            MemberState.PREPARING_REBALANCE,
            MemberState.COMPLETING_REBALANCE,
            MemberState.STABLE,
        }
    ),
    MemberState.COMPLETING_REBALANCE: frozenset({MemberState.PREPARING_REBALANCE}),
    MemberState.STABLE: frozenset({MemberState.COMPLETING_REBALANCE}),
}


class IllegalMemberTransition(RuntimeError):
    """A simulated consumer tried a state change Kafka's client never makes."""

    def __init__(self, client_id: str, current: MemberState, target: MemberState) -> None:
        allowed = sorted(s.value for s in VALID_PREVIOUS_STATES[target])
        super().__init__(
            f"consumer {client_id}: {current.value} -> {target.value} is illegal "
            f"(valid previous states: {', '.join(allowed)})"
        )


class Process(Enum):
    """What the consumer's process is doing."""

    RUNNING = "running"
    FROZEN = "frozen"
    CLOSED = "closed"
    CRASHED = "crashed"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Generation:
    """``AbstractCoordinator.Generation``."""

    generation_id: int = NO_GENERATION
    member_id: str = msg.UNKNOWN_MEMBER_ID
    protocol_name: str | None = None


NO_GENERATION_INFO = Generation()


class _Owned:
    """An assigned partition: its log and the consumer's position in it."""

    __slots__ = ("log", "position", "tp")

    def __init__(self, tp: TopicPartition, log: PartitionLog) -> None:
        self.tp = tp
        self.log = log
        self.position: int | None = None


@dataclass(frozen=True, slots=True)
class FetchedRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


class ConsumerApp(Protocol):
    """The application around a :class:`SimConsumer` (what it does with records and callbacks)."""

    def on_records(self, consumer: SimConsumer, records: Sequence[FetchedRecord]) -> None:
        """Records returned by ``poll()`` (before they are processed)."""
        ...

    def after_poll(self, consumer: SimConsumer) -> None:
        """End of one poll-loop iteration (records processed, or an idle poll)."""
        ...

    def on_partitions_revoked(
        self, consumer: SimConsumer, partitions: Sequence[TopicPartition]
    ) -> None: ...

    def on_partitions_assigned(
        self, consumer: SimConsumer, partitions: Sequence[TopicPartition]
    ) -> None: ...

    def on_partitions_lost(
        self, consumer: SimConsumer, partitions: Sequence[TopicPartition]
    ) -> None: ...

    def wants_records(self) -> bool:
        """Whether ``on_records`` needs the records themselves (else only counts move)."""
        ...


class SimConsumer:
    """One consumer process in one group (see the module docstring for the behaviour)."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        group_id: str,
        client_id: str,
        topics: Sequence[str],
        spec: ConsumerSpec,
        app: ConsumerApp | None = None,
        group_instance_id: str | None = None,
    ) -> None:
        self.cluster = cluster
        self.group_id = group_id
        self.client_id = client_id
        self.topics = tuple(sorted(set(topics)))
        self.spec = spec
        self.app = app
        self.instance_id = group_instance_id or (client_id if spec.static else None)
        self.assignors: dict[str, Assignor] = {n: assignor_by_name(n) for n in spec.assignors}
        self.protocol = _rebalance_protocol(self.assignors.values())
        # assignor name -> (its last assignment, that generation): the Java assignors' state
        self._assignor_memory: dict[str, tuple[tuple[TopicPartition, ...], int]] = {}
        self.process = Process.RUNNING
        self.state = MemberState.UNJOINED
        self.generation = NO_GENERATION_INFO
        self.rejoin_needed = True
        self.rejoin_reason = ""
        self.needs_join_prepare = True
        self.join_in_flight = False
        self.is_leader = False
        self.assigned: list[TopicPartition] = []
        # One entry per assigned partition, in ``assigned`` order: its log and its position
        # (None until OffsetFetch or the offset reset gives one).
        self._owned: list[_Owned] = []
        self._needs_position = False
        self._completed: tuple[Generation, bytes] | None = None
        self._poll_token = 0
        self._idle = False
        self._paused_until = -1
        self._hb_token = 0
        self._hb_enabled = False
        self._poll_check_token = 0
        self._poll_timer_start = cluster.now
        self._next_auto_commit = cluster.now + spec.auto_commit_interval_ms
        self._fetch_rotation = 0
        self._deferred: list[Callable[[], None]] = []
        self._incarnation = 0
        self.records_consumed = 0

    # ------------------------------------------------------------------ lifecycle

    @property
    def member_id(self) -> str:
        return self.generation.member_id

    @property
    def alive(self) -> bool:
        return self.process in (Process.RUNNING, Process.FROZEN)

    def _running(self) -> bool:
        # A method, not an inline check: callbacks may stop the process between two checks.
        return self.process is Process.RUNNING

    def start(self) -> None:
        """``subscribe()`` + the first ``poll()``."""
        self._lifecycle("started")
        self._schedule_poll(self.cluster.now)

    def close(self) -> None:
        """``KafkaConsumer.close()``: auto-commit, revoke, leave (dynamic members)."""
        if not self._running():
            return
        if self.spec.commit == "auto":
            self.commit("close")
        self._on_leave_prepare()
        self._maybe_leave_group("the consumer is being closed")
        self._stop(Process.CLOSED, "closed")

    def crash(self) -> None:
        """The process dies: no commit, no LeaveGroup."""
        if not self.alive:
            return
        self._stop(Process.CRASHED, "crashed")

    def fail(self, reason: str) -> None:
        """A fatal error (FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED, ...): the app stops."""
        if not self.alive:
            return
        self._stop(Process.FAILED, "failed", reason=reason)

    def freeze(self, duration_ms: int) -> None:
        """The whole process stops (a long GC pause) for ``duration_ms``."""
        if not self._running():
            return
        self.process = Process.FROZEN
        self._poll_token += 1
        self._hb_token += 1
        self._poll_check_token += 1
        self._lifecycle("frozen", duration_ms=duration_ms)
        self.cluster.at(self.cluster.now + duration_ms, self._thaw)

    def pause(self, duration_ms: int) -> None:
        """The application stalls between two polls for ``duration_ms`` (heartbeats go on)."""
        if not self._running():
            return
        self._lifecycle("paused", duration_ms=duration_ms)
        self._paused_until = max(self._paused_until, self.cluster.now + duration_ms)
        self._poll_token += 1
        self._idle = False
        self.cluster.at(self._paused_until, self._resume_after_pause)

    def resume(self) -> None:
        """End a :meth:`pause` now."""
        if self._paused_until > self.cluster.now:
            self._paused_until = self.cluster.now
            self._resume_after_pause()

    def set_processing_rate(self, rate: float) -> None:
        self.spec = replace(self.spec, processing_rate=rate)

    def _resume_after_pause(self) -> None:
        if self._running() and self.cluster.now >= self._paused_until:
            self._lifecycle("resumed")
            self._after_processing()

    def _thaw(self) -> None:
        if self.process is not Process.FROZEN:
            return
        self.process = Process.RUNNING
        self._lifecycle("thawed")
        deferred, self._deferred = self._deferred, []
        for task in deferred:
            task()
        if not self._running():
            return
        if self._hb_enabled:
            # The heartbeat thread wakes first and checks the poll timer and the session.
            self._hb_token += 1
            self._heartbeat_tick(self._hb_token)
            if self._heartbeat_on() and self._running():
                self._schedule_poll_check()
        if self._running():
            self._schedule_poll(self.cluster.now)

    def _stop(self, process: Process, what: str, **extra: object) -> None:
        self.process = process
        self._poll_token += 1
        self._hb_token += 1
        self._poll_check_token += 1
        self._incarnation += 1
        self._hb_enabled = False
        self._deferred.clear()
        self._lifecycle(what, **extra)

    def _lifecycle(self, event: str, **extra: object) -> None:
        self.cluster.truth.add(
            "ClientLifecycle",
            client="consumer",
            group_id=self.group_id,
            client_id=self.client_id,
            group_instance_id=self.instance_id,
            member_id=self.member_id,
            generation_id=self.generation.generation_id,
            event=event,
            **extra,
        )

    # ------------------------------------------------------------------ member state

    def _heartbeat_on(self) -> bool:
        return self._hb_enabled

    def _rebalancing(self) -> bool:
        return self.state is MemberState.PREPARING_REBALANCE

    def _transition(self, target: MemberState) -> None:
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise IllegalMemberTransition(self.client_id, self.state, target)
        self.state = target

    def _request_rejoin(self, reason: str) -> None:
        self.rejoin_reason = reason
        self.rejoin_needed = True

    def _reset_state_and_generation(self, reset_member_id: bool) -> None:
        self._transition(MemberState.UNJOINED)
        self._hb_enabled = False
        if reset_member_id:
            self.generation = NO_GENERATION_INFO
        else:
            # Keep the member id: the coordinator may still know it (ILLEGAL_GENERATION).
            self.generation = Generation(NO_GENERATION, self.generation.member_id, None)

    def _reset_state_and_rejoin(self, reason: str, reset_member_id: bool) -> None:
        self._reset_state_and_generation(reset_member_id)
        self._request_rejoin(reason)
        self.needs_join_prepare = True

    def _deliver(self, incarnation: int, task: Callable[[], None]) -> None:
        """Hand a coordinator response to the client (deferred while the process is frozen)."""

        def run() -> None:
            if incarnation != self._incarnation or not self.alive:
                return
            if self.process is Process.FROZEN:
                self._deferred.append(task)
            else:
                task()

        self.cluster.soon(run)

    def _wake(self) -> None:
        """A response arrived while ``poll()`` was waiting for data: the poll loop goes on."""
        if self._idle and self._running():
            self._schedule_poll(self.cluster.now)

    # ------------------------------------------------------------------ the poll loop

    def _schedule_poll(self, when: int) -> None:
        if self._paused_until > when:
            return  # the application is stuck; the end of the pause polls again
        self._poll_token += 1
        token = self._poll_token
        self._idle = False
        self.cluster.at(when, lambda: self._poll(token))

    def _poll(self, token: int) -> None:
        if token != self._poll_token or not self._running():
            return
        now = self.cluster.now
        self._idle = False
        self._poll_timer_start = max(self._poll_timer_start, now)
        if self._completed is not None:
            self._on_join_complete()
            if not self._running():
                return
        if self.rejoin_needed and not self.join_in_flight:
            if self.needs_join_prepare:
                self.needs_join_prepare = False
                self._on_join_prepare()
            self._send_join()
            if not self._running() or token != self._poll_token:
                return
        if self.spec.commit == "auto" and now >= self._next_auto_commit:
            self._next_auto_commit = now + self.spec.auto_commit_interval_ms
            self.commit("auto")
        if self._needs_position:
            self._refresh_positions()
        records, count = self._fetch()
        if count:
            self.records_consumed += count
            if self.app is not None:
                self.app.on_records(self, records)
            rate = self.spec.processing_rate
            busy = 0 if rate <= 0 else max(1, round(count * 1000 / rate))
            self._poll_token += 1
            done = self._poll_token
            self.cluster.at(now + busy, lambda: self._processing_done(done))
        else:
            if self.app is not None:
                self.app.after_poll(self)
            if not self._running() or token != self._poll_token:
                return
            # poll() blocks until data arrives or the fetch wait passes; responses wake it.
            self._poll_token += 1
            idle = self._poll_token
            self._idle = True
            wait = self.spec.poll_idle_ms
            if self._needs_position:
                wait = min(wait, self.spec.retry_backoff_ms)
            if self.spec.commit == "auto":
                wait = max(0, min(wait, self._next_auto_commit - now))
            self.cluster.at(now + wait, lambda: self._poll(idle))

    def _processing_done(self, token: int) -> None:
        if token != self._poll_token or not self._running():
            return
        self._after_processing()

    def _after_processing(self) -> None:
        if self.spec.commit in ("sync", "async"):
            self.commit(self.spec.commit)
        if self.app is not None:
            self.app.after_poll(self)
        if self._running():
            self._schedule_poll(self.cluster.now)

    @property
    def positions(self) -> dict[TopicPartition, int]:
        """The position of every assigned partition that has one."""
        return {o.tp: o.position for o in self._owned if o.position is not None}

    def _set_assigned(self, partitions: Sequence[TopicPartition]) -> None:
        """Keep the positions of partitions still assigned; new ones need a position."""
        kept = {o.tp: o for o in self._owned}
        logs = self.cluster.logs
        owned = []
        for tp in partitions:
            entry = kept.get(tp)
            if entry is None:
                entry = _Owned(tp, logs.partition(tp.topic, tp.partition))
                self._needs_position = True
            owned.append(entry)
        self._owned = owned
        self.assigned = [o.tp for o in owned]

    def _fetch(self) -> tuple[list[FetchedRecord], int]:
        """Up to ``max.poll.records`` from the assigned partitions, rotating the start."""
        owned = self._owned
        if not owned:
            return [], 0
        budget = self.spec.max_poll_records
        committed_only = self.spec.isolation_level == "read_committed"
        want = self.app is not None and self.app.wants_records()
        out: list[FetchedRecord] = []
        count = 0
        n = len(owned)
        start = self._fetch_rotation % n
        self._fetch_rotation += 1
        for entry in owned[start:] + owned[:start]:
            if budget <= 0:
                break
            position = entry.position
            if position is None:
                continue
            log = entry.log
            end = log.last_stable_offset if committed_only else log.next_offset
            if end <= position:
                continue
            upto = end if end - position <= budget else position + budget
            if want:
                out.extend(
                    _read(log.batches, log.aborted, entry.tp, position, upto, committed_only)
                )
            budget -= upto - position
            count += upto - position
            entry.position = upto
        return out, count

    def _refresh_positions(self) -> None:
        """OffsetFetch (requireStable) for partitions without a position, else reset."""
        wanted = [o for o in self._owned if o.position is None]
        if not wanted:
            self._needs_position = False
            return
        by_topic: dict[str, list[int]] = {}
        for o in wanted:
            by_topic.setdefault(o.tp.topic, []).append(o.tp.partition)
        response = self.cluster.groups.fetch_offsets(
            msg.OffsetFetchRequest(
                self.group_id,
                tuple(msg.OffsetFetchTopic(t, tuple(ps)) for t, ps in by_topic.items()),
                require_stable=True,
            )
        )
        fetched = response.offsets()
        if response.error is not Errors.NONE or any(
            f.error is Errors.UNSTABLE_OFFSET_COMMIT for f in fetched.values()
        ):
            # UnstableOffsetCommitException is retriable: the next poll tries again after the
            # backoff (the whole request, as the Java client retries it).
            return
        for o in wanted:
            got = fetched.get((o.tp.topic, o.tp.partition))
            if got is not None and got.committed_offset >= 0:
                o.position = got.committed_offset
            else:
                earliest = self.spec.auto_offset_reset == "earliest"
                o.position = o.log.log_start_offset if earliest else o.log.high_watermark
        self._needs_position = False

    def seek_to_committed(self) -> None:
        """Drop positions so the next poll fetches the committed offsets again."""
        for o in self._owned:
            o.position = None
        self._needs_position = bool(self._owned)

    # ------------------------------------------------------------------ commits

    def consumed_offsets(self) -> dict[TopicPartition, int]:
        """``subscriptions.allConsumed()``: the position of every assigned partition."""
        return self.positions

    def commit(
        self, kind: str, offsets: Mapping[TopicPartition, int] | None = None
    ) -> Errors | None:
        """Commit the consumed positions, or ``offsets`` (``kind``: auto, sync, async, close,
        rebalance).

        Returns:
            The first error of the response, ``Errors.NONE``, or None when no request was sent
            (nothing to commit, or not in a stable group: the Java client fails locally).
        """
        if self.state is not MemberState.STABLE:
            return None
        if offsets is None:
            offsets = {o.tp: o.position for o in self._owned if o.position is not None}
        by_topic: dict[str, list[msg.OffsetCommitPartition]] = {}
        for tp, offset in offsets.items():
            by_topic.setdefault(tp.topic, []).append(
                msg.OffsetCommitPartition(tp.partition, offset, 0, "")
            )
        if not offsets:
            return None
        generation = self.generation
        response = self.cluster.groups.commit_offsets(
            msg.OffsetCommitRequest(
                group_id=self.group_id,
                topics=tuple(msg.OffsetCommitTopic(t, tuple(ps)) for t, ps in by_topic.items()),
                generation_id=generation.generation_id,
                member_id=generation.member_id,
                group_instance_id=self.instance_id,
                api_version=OFFSET_COMMIT_VERSION,
            )
        )
        errors = response.errors()
        if self.cluster.truth_commits or any(e is not Errors.NONE for e in errors.values()):
            self.cluster.truth.add(
                "OffsetCommit",
                group_id=self.group_id,
                client_id=self.client_id,
                member_id=generation.member_id,
                generation_id=generation.generation_id,
                kind=kind,
                offsets=[
                    {
                        "topic": tp.topic,
                        "partition": tp.partition,
                        "offset": offset,
                        "error": errors[(tp.topic, tp.partition)].name,
                    }
                    for tp, offset in offsets.items()
                ],
            )
        error = next((e for e in errors.values() if e is not Errors.NONE), Errors.NONE)
        if error is Errors.REBALANCE_IN_PROGRESS:
            self._request_rejoin("offset commit failed since group is already rebalancing")
        elif error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
            if not (self.generation != generation and self._rebalancing()):
                self._reset_state_and_rejoin(
                    f"encountered {error.name} from OFFSET_COMMIT response",
                    error is not Errors.ILLEGAL_GENERATION,
                )
        elif error is Errors.FENCED_INSTANCE_ID:
            self.fail("FENCED_INSTANCE_ID from OffsetCommit")
        return error

    # ------------------------------------------------------------------ rebalance

    def _on_join_prepare(self) -> None:
        """``ConsumerCoordinator.onJoinPrepare``."""
        if self.spec.commit == "auto":
            self.commit("rebalance")
        if self.generation.generation_id == NO_GENERATION or not self.generation.member_id:
            lost = list(self.assigned)
            if lost:
                self._revoke(lost, lost=True)
        elif self.protocol is RebalanceProtocol.EAGER and self.assigned:
            self._revoke(list(self.assigned), lost=False)
        self.is_leader = False

    def _on_leave_prepare(self) -> None:
        if not self.assigned:
            return
        lost = (
            self.generation.generation_id == NO_GENERATION
            or not self.generation.member_id
            or self.state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE)
        )
        self._revoke(list(self.assigned), lost=lost)

    def _revoke(self, partitions: list[TopicPartition], *, lost: bool) -> None:
        if self.app is not None:
            if lost:
                self.app.on_partitions_lost(self, partitions)
            else:
                self.app.on_partitions_revoked(self, partitions)
        gone = set(partitions)
        self._set_assigned([tp for tp in self.assigned if tp not in gone])
        self.cluster.truth.add(
            "ClientRevoked",
            group_id=self.group_id,
            client_id=self.client_id,
            member_id=self.member_id,
            generation_id=self.generation.generation_id,
            lost=lost,
            partitions=_tp_json(sorted(partitions)),
        )

    def _subscription(self, assignor_name: str) -> bytes:
        assignor = self.assignors[assignor_name]
        last, last_generation = self._assignor_memory.get(assignor_name, ((), NO_GENERATION))
        owned = sorted(self.assigned)
        grouped: dict[str, list[int]] = {}
        for tp in owned:
            grouped.setdefault(tp.topic, []).append(tp.partition)
        return encode_subscription(
            CONSUMER_PROTOCOL_VERSION,
            {
                "topics": list(self.topics),
                "userData": assignor.subscription_user_data(self.topics, last, last_generation),
                "ownedPartitions": [{"topic": t, "partitions": ps} for t, ps in grouped.items()],
                "generationId": self.generation.generation_id,
                "rackId": self.spec.rack,
            },
        )

    def _send_join(self) -> None:
        self._transition(MemberState.PREPARING_REBALANCE)
        self._hb_enabled = False
        self.join_in_flight = True
        request = msg.JoinGroupRequest(
            group_id=self.group_id,
            protocol_type=PROTOCOL_TYPE,
            protocols=tuple(msg.Protocol(n, self._subscription(n)) for n in self.spec.assignors),
            session_timeout_ms=self.spec.session_timeout_ms,
            rebalance_timeout_ms=self.spec.max_poll_interval_ms,
            member_id=self.generation.member_id,
            group_instance_id=self.instance_id,
            reason=self.rejoin_reason,
            client_id=self.client_id,
            client_host=CLIENT_HOST,
            api_version=JOIN_GROUP_VERSION,
        )
        incarnation = self._incarnation
        pending = self.cluster.groups.join_group(request)
        pending.add_done_callback(
            lambda response: self._deliver(incarnation, lambda: self._on_join_response(response))
        )

    def _join_failed(self, reason: str) -> None:
        self.join_in_flight = False
        self._request_rejoin(reason)
        self._wake()

    def _on_join_response(self, response: msg.JoinGroupResponse) -> None:
        error = response.error
        if error is Errors.NONE:
            if self.state is not MemberState.PREPARING_REBALANCE:
                self._join_failed("rebalance failed due to UnjoinedGroupException")
                return
            self._transition(MemberState.COMPLETING_REBALANCE)
            self.generation = Generation(
                response.generation_id, response.member_id, response.protocol_name
            )
            self._enable_heartbeat()
            if response.leader == response.member_id:
                assignments = self._assign(response)
            else:
                assignments = {}
            self._send_sync(assignments)
        elif error is Errors.MEMBER_ID_REQUIRED:
            self.generation = Generation(NO_GENERATION, response.member_id, None)
            self._join_failed(f"need to re-join with the given member-id: {response.member_id}")
        elif error is Errors.UNKNOWN_MEMBER_ID:
            self._reset_state_and_generation(reset_member_id=True)
            self._join_failed("rebalance failed due to UnknownMemberIdException")
        elif error in (Errors.REBALANCE_IN_PROGRESS, Errors.ILLEGAL_GENERATION):
            self._join_failed(f"rebalance failed due to {error.name}")
        elif error in (Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.COORDINATOR_NOT_AVAILABLE):
            self.join_in_flight = False
            self._request_rejoin(f"rebalance failed due to {error.name}")
        else:
            # FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED, INCONSISTENT_GROUP_PROTOCOL, ...
            self.join_in_flight = False
            self.fail(f"JoinGroup failed: {error.name}")

    def _assign(self, response: msg.JoinGroupResponse) -> dict[str, bytes]:
        """The leader's assignment over the members in JoinGroup-response order."""
        self.is_leader = True
        if response.skip_assignment:
            return {}
        assignor = self.assignors[response.protocol_name or ""]
        subscriptions: dict[str, Subscription] = {}
        topics: set[str] = set()
        for member in response.members:
            data = decode_subscription(member.metadata).data
            owned = tuple(
                TopicPartition(t["topic"], p)
                for t in data.get("ownedPartitions") or ()
                for p in t["partitions"]
            )
            subscriptions[member.member_id] = Subscription(
                topics=tuple(data["topics"]),
                user_data=data.get("userData"),
                owned_partitions=owned,
                generation_id=data.get("generationId", NO_GENERATION),
                rack_id=data.get("rackId") or None,
                group_instance_id=member.group_instance_id,
            )
            topics.update(data["topics"])
        counts = {t: self.cluster.partitions(t) for t in sorted(topics) if t in self.cluster.topics}
        result = assignor.assign(ClusterMetadata(counts), subscriptions)
        out: dict[str, bytes] = {}
        for member_id, assignment in result.items():
            grouped: dict[str, list[int]] = {}
            for tp in assignment.partitions:
                grouped.setdefault(tp.topic, []).append(tp.partition)
            out[member_id] = encode_assignment(
                CONSUMER_PROTOCOL_VERSION,
                {
                    "assignedPartitions": [
                        {"topic": t, "partitions": ps} for t, ps in grouped.items()
                    ],
                    "userData": assignment.user_data,
                },
            )
        return out

    def _send_sync(self, assignments: Mapping[str, bytes]) -> None:
        generation = self.generation
        request = msg.SyncGroupRequest(
            group_id=self.group_id,
            generation_id=generation.generation_id,
            member_id=generation.member_id,
            group_instance_id=self.instance_id,
            protocol_type=PROTOCOL_TYPE,
            protocol_name=generation.protocol_name,
            assignments=tuple(msg.SyncGroupAssignment(m, a) for m, a in assignments.items()),
        )
        incarnation = self._incarnation
        pending = self.cluster.groups.sync_group(request)
        pending.add_done_callback(
            lambda response: self._deliver(
                incarnation, lambda: self._on_sync_response(generation, response)
            )
        )

    def _on_sync_response(self, sent: Generation, response: msg.SyncGroupResponse) -> None:
        error = response.error
        if error is Errors.NONE:
            if self.generation.generation_id == NO_GENERATION or (
                self.state is not MemberState.COMPLETING_REBALANCE
            ):
                # The heartbeat thread reset the generation meanwhile: retry at once.
                self._join_failed("rebalance failed due to IllegalGenerationException")
                return
            self._transition(MemberState.STABLE)
            self.rejoin_needed = False
            self.rejoin_reason = ""
            self._completed = (self.generation, response.assignment)
            self.join_in_flight = False
            self._wake()
        elif error is Errors.REBALANCE_IN_PROGRESS:
            self._join_failed("rebalance failed due to RebalanceInProgressException")
        elif error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
            if self.generation == sent:
                self._reset_state_and_rejoin(
                    f"encountered {error.name} from SYNC_GROUP response",
                    error is not Errors.ILLEGAL_GENERATION,
                )
            self._join_failed(f"rebalance failed due to {error.name}")
        elif error is Errors.FENCED_INSTANCE_ID:
            self.join_in_flight = False
            self.fail("SyncGroup failed: FENCED_INSTANCE_ID")
        else:
            self._join_failed(f"rebalance failed due to {error.name}")

    def _on_join_complete(self) -> None:
        """``ConsumerCoordinator.onJoinComplete``, run by the next ``poll()``."""
        assert self._completed is not None
        generation, blob = self._completed
        self._completed = None
        self.needs_join_prepare = True
        if self.generation != generation or self.state is not MemberState.STABLE:
            self._reset_state_and_rejoin(
                "rebalance failed since the generation/state was modified by heartbeat thread",
                True,
            )
            return
        decoded = decode_assignment(blob)
        if decoded is None:
            raise RuntimeError(
                f"{self.client_id}: empty assignment from SyncGroup in generation "
                f"{generation.generation_id}"
            )
        assigned = [
            TopicPartition(t["topic"], p)
            for t in decoded.data["assignedPartitions"]
            for p in t["partitions"]
        ]
        owned = set(self.assigned)
        new = set(assigned)
        revoked = sorted(owned - new)
        added = sorted(new - owned)
        if self.protocol is RebalanceProtocol.COOPERATIVE and revoked:
            self._revoke(revoked, lost=False)
            self._request_rejoin("need to revoke partitions and re-join")
        name = generation.protocol_name or ""
        self._assignor_memory[name] = (tuple(assigned), generation.generation_id)
        if self.spec.commit == "auto":
            self._next_auto_commit = self.cluster.now + self.spec.auto_commit_interval_ms
        self._set_assigned(sorted(new))
        self.cluster.truth.add(
            "ClientAssignment",
            group_id=self.group_id,
            client_id=self.client_id,
            member_id=generation.member_id,
            group_instance_id=self.instance_id,
            generation_id=generation.generation_id,
            protocol=generation.protocol_name,
            leader=self.is_leader,
            assigned=_tp_json(self.assigned),
            added=_tp_json(added),
            revoked=_tp_json(revoked),
        )
        if self.app is not None and added:
            self.app.on_partitions_assigned(self, added)

    # ------------------------------------------------------------------ heartbeat thread

    def _enable_heartbeat(self) -> None:
        """``HeartbeatThread.enable`` + ``Heartbeat.resetTimeouts``."""
        now = self.cluster.now
        self._hb_enabled = True
        self._poll_timer_start = now
        self._hb_token += 1
        token = self._hb_token
        self.cluster.at(now + self.spec.heartbeat_interval_ms, lambda: self._heartbeat_tick(token))
        self._schedule_poll_check()

    def _schedule_poll_check(self) -> None:
        self._poll_check_token += 1
        token = self._poll_check_token
        deadline = self._poll_timer_start + self.spec.max_poll_interval_ms + 1
        self.cluster.at(deadline, lambda: self._poll_check(token))

    def _poll_timeout_expired(self) -> bool:
        return self.cluster.now - self._poll_timer_start > self.spec.max_poll_interval_ms

    def _poll_check(self, token: int) -> None:
        if token != self._poll_check_token or not self._running():
            return
        if not self._hb_enabled or self.state not in (
            MemberState.COMPLETING_REBALANCE,
            MemberState.STABLE,
        ):
            return
        if self._poll_timeout_expired():
            self._handle_poll_timeout()
        else:
            self._schedule_poll_check()

    def _handle_poll_timeout(self) -> None:
        self._lifecycle("poll_timeout", max_poll_interval_ms=self.spec.max_poll_interval_ms)
        self._maybe_leave_group("consumer poll timeout has expired.")

    def _heartbeat_tick(self, token: int) -> None:
        if token != self._hb_token or not self._running() or not self._hb_enabled:
            return
        if self.state not in (MemberState.COMPLETING_REBALANCE, MemberState.STABLE):
            self._hb_enabled = False
            return
        if self._poll_timeout_expired():
            self._handle_poll_timeout()
            return
        sent = self.generation
        response = self.cluster.groups.heartbeat(
            msg.HeartbeatRequest(
                self.group_id, sent.generation_id, sent.member_id, self.instance_id
            )
        )
        error = response.error
        if error is Errors.REBALANCE_IN_PROGRESS:
            if self.state is MemberState.STABLE:
                self._request_rejoin("group is already rebalancing")
        elif _RESETTING_HEARTBEAT_ERRORS.get(error) is not None and self.generation == sent:
            # An error about a generation we no longer have is ignored (Java does the same).
            self._reset_state_and_rejoin(
                f"encountered {error.name} from HEARTBEAT response",
                _RESETTING_HEARTBEAT_ERRORS[error],
            )
            if error is Errors.FENCED_INSTANCE_ID:
                self.fail("heartbeat failed: FENCED_INSTANCE_ID")
                return
            self._wake()
        if self._heartbeat_on() and token == self._hb_token and self._running():
            self.cluster.at(
                self.cluster.now + self.spec.heartbeat_interval_ms,
                lambda: self._heartbeat_tick(token),
            )

    def _maybe_leave_group(self, reason: str) -> None:
        """``AbstractCoordinator.maybeLeaveGroup``: only dynamic members send LeaveGroup."""
        if (
            self.instance_id is None
            and self.state is not MemberState.UNJOINED
            and self.generation.member_id
        ):
            self.cluster.groups.leave_group(
                msg.LeaveGroupRequest(
                    self.group_id, (msg.MemberIdentity(self.generation.member_id, None, reason),)
                )
            )
        if self.state is not MemberState.UNJOINED or self.generation != NO_GENERATION_INFO:
            self._reset_state_and_rejoin("consumer pro-actively leaving the group", True)
        self.join_in_flight = False
        self._incarnation += 1  # responses to requests sent before leaving are dropped


# Heartbeat errors that reset the generation -> whether the member id is reset too (it is kept
# for ILLEGAL_GENERATION: the member may still be known).
_RESETTING_HEARTBEAT_ERRORS: Mapping[Errors, bool] = {
    Errors.ILLEGAL_GENERATION: False,
    Errors.UNKNOWN_MEMBER_ID: True,
    Errors.FENCED_INSTANCE_ID: True,
}


def _rebalance_protocol(assignors: Iterable[Assignor]) -> RebalanceProtocol:
    """The highest protocol every assignor supports (``ConsumerCoordinator``'s constructor)."""
    common: set[RebalanceProtocol] | None = None
    for assignor in assignors:
        supported = set(assignor.supported_protocols)
        common = supported if common is None else common & supported
    if not common:
        raise ValueError("the assignors have no commonly supported rebalance protocol")
    return max(common, key=lambda p: p.value)


def _read(
    batches: Sequence[Batch],
    aborted: Sequence[AbortedTxn],
    tp: TopicPartition,
    start: int,
    end: int,
    committed_only: bool,
) -> list[FetchedRecord]:
    """The data records in ``[start, end)`` (no control records; no aborted ones when
    reading committed)."""
    i = max(0, bisect_right(batches, start, key=lambda b: b.base_offset) - 1)
    aborted_ranges = (
        [(a.producer_id, a.first_offset, a.last_offset) for a in aborted] if committed_only else []
    )
    out: list[FetchedRecord] = []
    while i < len(batches):
        batch = batches[i]
        i += 1
        if batch.base_offset >= end:
            break
        if batch.is_control:
            continue
        if (
            committed_only
            and batch.is_transactional
            and any(
                pid == batch.producer_id and first <= batch.base_offset <= last
                for pid, first, last in aborted_ranges
            )
        ):
            continue
        for j, record in enumerate(batch.records):
            offset = batch.base_offset + j
            if start <= offset < end:
                out.append(FetchedRecord(tp.topic, tp.partition, offset, record.key, record.value))
    return out


def _tp_json(partitions: Iterable[TopicPartition]) -> list[dict[str, object]]:
    grouped: dict[str, list[int]] = {}
    for tp in partitions:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return [{"topic": t, "partitions": ps} for t, ps in grouped.items()]


# ----------------------------------------------------------------------------- producers


class SimProducer:
    """An idempotent (``enable.idempotence=true``, the default) or plain producer."""

    def __init__(self, cluster: Cluster, client_id: str, *, idempotent: bool = True) -> None:
        self.cluster = cluster
        self.client_id = client_id
        self.idempotent = idempotent
        self.producer_id = -1
        self.producer_epoch = -1
        self._sequences: dict[tuple[str, int], int] = {}
        self.records_sent = 0
        if idempotent:
            response = cluster.txns.init_producer_id(None)
            if response.error is not Errors.NONE:
                raise RuntimeError(f"InitProducerId failed: {response.error.name}")
            self.producer_id, self.producer_epoch = response.producer_id, response.producer_epoch

    def send(self, topic: str, partition: int, records: Sequence[LogRecord]) -> Errors:
        """One batch to one partition; sequences advance on success."""
        key = (topic, partition)
        sequence = self._sequences.get(key, 0) if self.idempotent else -1
        result = self.cluster.txns.produce(
            topic,
            partition,
            records,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=sequence,
        )
        if result.error is Errors.NONE and self.idempotent:
            self._sequences[key] = increment_sequence(sequence, len(records))
        if result.error is Errors.NONE:
            self.records_sent += len(records)
        return result.error


class TxnProducerState(Enum):
    """``TransactionManager.State`` (the part a simulation reaches)."""

    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


FATAL_ERRORS = frozenset(
    {
        Errors.PRODUCER_FENCED,
        Errors.INVALID_PRODUCER_EPOCH,
        Errors.INVALID_PRODUCER_ID_MAPPING,
        Errors.TRANSACTIONAL_ID_NOT_FOUND,
        Errors.UNKNOWN_PRODUCER_ID,
    }
)


class TransactionalProducer:
    """A transactional producer (``transactional.id``), synchronous on the virtual clock."""

    def __init__(
        self,
        cluster: Cluster,
        transactional_id: str,
        *,
        transaction_timeout_ms: int,
        client_transaction_version: int = 0,
        retry_backoff_ms: int = 100,
    ) -> None:
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.timeout_ms = transaction_timeout_ms
        self.tv = client_transaction_version
        self.retry_backoff_ms = retry_backoff_ms
        self.state = TxnProducerState.UNINITIALIZED
        self.producer_id = -1
        self.producer_epoch = -1
        self.last_error = Errors.NONE
        self._sequences: dict[tuple[str, int], int] = {}
        self._partitions: set[tuple[str, int]] = set()
        self._groups: set[str] = set()
        self.transaction_started_ms = -1

    @property
    def in_transaction(self) -> bool:
        return self.state is TxnProducerState.IN_TRANSACTION

    @property
    def partitions(self) -> frozenset[tuple[str, int]]:
        """The data partitions the open transaction wrote to."""
        return frozenset(self._partitions)

    def _truth(self, call: str, error: Errors, **extra: object) -> None:
        self.cluster.truth.add(
            "TxnClientResult",
            transactional_id=self.transactional_id,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            call=call,
            error=error.name,
            **extra,
        )

    def _fail(self, call: str, error: Errors) -> Errors:
        self.last_error = error
        if error in FATAL_ERRORS:
            self.state = TxnProducerState.FATAL_ERROR
        else:
            self.state = TxnProducerState.ABORTABLE_ERROR
        self._truth(call, error)
        return error

    def init_transactions(self, then: Callable[[Errors], None]) -> None:
        """``initTransactions()``: InitProducerId, retried while CONCURRENT_TRANSACTIONS."""
        self.state = TxnProducerState.INITIALIZING

        def attempt() -> None:
            response = self.cluster.txns.init_producer_id(self.transactional_id, self.timeout_ms)
            if response.error in (
                Errors.CONCURRENT_TRANSACTIONS,
                Errors.COORDINATOR_LOAD_IN_PROGRESS,
            ):
                self._truth("init_transactions", response.error, retry=True)
                self.cluster.at(self.cluster.now + self.retry_backoff_ms, attempt)
                return
            if response.error is not Errors.NONE:
                then(self._fail("init_transactions", response.error))
                return
            self.producer_id, self.producer_epoch = response.producer_id, response.producer_epoch
            self._sequences.clear()
            self.state = TxnProducerState.READY
            self._truth("init_transactions", Errors.NONE)
            then(Errors.NONE)

        attempt()

    def begin(self) -> None:
        if self.state is not TxnProducerState.READY:
            raise RuntimeError(f"beginTransaction in state {self.state.value}")
        self.state = TxnProducerState.IN_TRANSACTION
        self._partitions.clear()
        self._groups.clear()
        self.transaction_started_ms = self.cluster.now

    def send(self, topic: str, partition: int, records: Sequence[LogRecord]) -> Errors:
        """Produce one batch inside the transaction (adding the partition first, V0)."""
        if self.state is not TxnProducerState.IN_TRANSACTION:
            return (
                self.last_error if self.last_error is not Errors.NONE else Errors.INVALID_TXN_STATE
            )
        key = (topic, partition)
        txns = self.cluster.txns
        if key not in self._partitions and self.tv < 2:
            added = txns.add_partitions_to_txn(
                self.transactional_id,
                self.producer_id,
                self.producer_epoch,
                (TxnTopicPartition(topic, partition),),
            )
            if added.error is not Errors.NONE:
                return self._fail("add_partitions_to_txn", added.error)
        sequence = self._sequences.get(key, 0)
        result = txns.produce(
            topic,
            partition,
            records,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=sequence,
            transactional_id=self.transactional_id,
            client_transaction_version=self.tv,
        )
        if result.error is not Errors.NONE:
            return self._fail("produce", result.error)
        self._partitions.add(key)
        self._sequences[key] = increment_sequence(sequence, len(records))
        return Errors.NONE

    def add_offsets(self, group_id: str) -> Errors:
        """The AddOffsetsToTxn half of ``sendOffsetsToTransaction``."""
        if self.state is not TxnProducerState.IN_TRANSACTION:
            return (
                self.last_error if self.last_error is not Errors.NONE else Errors.INVALID_TXN_STATE
            )
        added = self.cluster.txns.add_offsets_to_txn(
            self.transactional_id, self.producer_id, self.producer_epoch, group_id
        )
        if added.error is not Errors.NONE:
            return self._fail("add_offsets_to_txn", added.error)
        self._groups.add(group_id)
        return Errors.NONE

    def commit_offsets(
        self,
        offsets: Mapping[TopicPartition, int],
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
    ) -> Errors:
        """The TxnOffsetCommit half of ``sendOffsetsToTransaction`` (to the group coordinator)."""
        if self.state is not TxnProducerState.IN_TRANSACTION:
            return (
                self.last_error if self.last_error is not Errors.NONE else Errors.INVALID_TXN_STATE
            )
        by_topic: dict[str, list[msg.OffsetCommitPartition]] = {}
        for tp, offset in offsets.items():
            by_topic.setdefault(tp.topic, []).append(
                msg.OffsetCommitPartition(tp.partition, offset, 0, "")
            )
        response = self.cluster.groups.txn_commit_offsets(
            msg.TxnOffsetCommitRequest(
                transactional_id=self.transactional_id,
                group_id=group_id,
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                topics=tuple(msg.OffsetCommitTopic(t, tuple(ps)) for t, ps in by_topic.items()),
                generation_id=generation_id,
                member_id=member_id,
                group_instance_id=group_instance_id,
                api_version=TXN_OFFSET_COMMIT_VERSION,
            )
        )
        errors = response.errors()
        if self.cluster.truth_commits or any(e is not Errors.NONE for e in errors.values()):
            self.cluster.truth.add(
                "TxnOffsetCommit",
                group_id=group_id,
                transactional_id=self.transactional_id,
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                member_id=member_id,
                generation_id=generation_id,
                offsets=[
                    {
                        "topic": tp.topic,
                        "partition": tp.partition,
                        "offset": offset,
                        "error": errors[(tp.topic, tp.partition)].name,
                    }
                    for tp, offset in offsets.items()
                ],
            )
        error = next((e for e in errors.values() if e is not Errors.NONE), Errors.NONE)
        if error is not Errors.NONE:
            return self._fail("txn_offset_commit", error)
        return Errors.NONE

    def end(self, commit: bool) -> Errors:
        """``commitTransaction()`` / ``abortTransaction()`` (EndTxn)."""
        call = "commit_transaction" if commit else "abort_transaction"
        if self.state is TxnProducerState.FATAL_ERROR:
            return self.last_error
        if commit and self.state is not TxnProducerState.IN_TRANSACTION:
            return (
                self.last_error if self.last_error is not Errors.NONE else Errors.INVALID_TXN_STATE
            )
        if not self._partitions and not self._groups and self.tv < 2:
            # Nothing was added: the Java producer completes locally without EndTxn.
            self.state = TxnProducerState.READY
            self.last_error = Errors.NONE
            return Errors.NONE
        response = self.cluster.txns.end_txn(
            self.transactional_id, self.producer_id, self.producer_epoch, commit, self.tv
        )
        if response.error is not Errors.NONE:
            return self._fail(call, response.error)
        if self.tv >= 2 and response.producer_id >= 0:
            if (response.producer_id, response.producer_epoch) != (
                self.producer_id,
                self.producer_epoch,
            ):
                self._sequences.clear()
            self.producer_id, self.producer_epoch = response.producer_id, response.producer_epoch
        self.state = TxnProducerState.READY
        self.last_error = Errors.NONE
        self._truth(call, Errors.NONE)
        return Errors.NONE
