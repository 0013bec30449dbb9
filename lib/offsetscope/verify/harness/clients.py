"""Real Kafka clients (confluent-kafka, i.e. librdkafka) that drive the harness broker.

Tests, the DumpLogSegments oracle and the fidelity runner use these to make a real Kafka 4.x
broker write its internal topics, then read what it wrote with offsetscope. What each client
does is what a production application does; what it *observed* (rebalance callbacks, the
generation and member id librdkafka reports, commits, errors) is recorded so it can be set
against what the coordinator persisted (``docs/formats.md`` section 8).

Consumers (:class:`ConsumerMember`): one member of one group, with its own poll loop

* in a thread of this process, or ``isolated=True``: in a child process
  (``python -m offsetscope.verify.harness.clients member <config json>``) that relays every
  observation as a JSON line on stdout and takes commands as JSON lines on stdin;
* ``leave()`` closes the consumer: a dynamic member sends LeaveGroup (a static member, KIP-345,
  does not: the broker keeps its slot until the session times out);
* ``crash()`` (isolated members only) SIGKILLs the child. librdkafka's ``close()`` and its
  destructor both leave the group, and its heartbeat thread keeps a stalled member alive, so
  a process that dies without a word is the only faithful way to make the broker see a
  *session timeout*;
* ``stall()`` stops calling ``poll()`` (heartbeats continue in librdkafka's background
  thread). Once ``max.poll.interval.ms`` passes, librdkafka itself leaves the group (it sends
  LeaveGroup, it does not wait for the broker's rebalance timeout) and reports
  ``_MAX_POLL_EXCEEDED`` at the next ``poll()`` after ``resume()``, then rejoins.

The generation a member is in comes from librdkafka's serialised consumer group metadata
(``consumer_group_metadata()``: ``b"CGMDv2:" | int32 generation, native byte order |
group NUL | member id NUL | 0x00 + instance id NUL, or 0x01 without one``), read at every
rebalance callback and every poll loop turn.

Producers: :class:`IdempotentProducer` and :class:`TransactionalProducer` (commit, abort,
``send_offsets_to_transaction``, a transaction left open until the coordinator's timeout
aborts it, a zombie fenced by a newer instance with the same ``transactional.id``).

Admin helpers: create topics, delete a group, list offsets, committed offsets.

Waiting is by condition with a deadline (:func:`wait_until`, :meth:`ConsumerMember.wait_for`),
never a fixed sleep. :class:`ClientPool` owns every client a test or workload starts and
stops them all (threads joined, children killed) however the caller ends.

:func:`read_internal_log` decodes a broker's ``__consumer_offsets`` or ``__transaction_state``
partition directories into :mod:`offsetscope.history.events` events, which is how callers
wait for and assert on what the coordinators wrote.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import logging
import queue
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Self, TypeVar

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    ShareConsumer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._listoffsets import OffsetSpec
from confluent_kafka.cimpl import NewTopic

from offsetscope.clock import Clock, SystemClock
from offsetscope.history.events import Coordinates, Event, event_from_record
from offsetscope.protocol import errors as decode_errors
from offsetscope.protocol.codec import decode_record
from offsetscope.protocol.log import ControlRecordType, read_partition_dir
from offsetscope.protocol.log.control import EndTxnMarker, parse_control_key
from offsetscope.protocol.records import CoordinatorRecord, UnknownRecord

__all__ = [
    "STRATEGIES",
    "ClientCommandError",
    "ClientPool",
    "CommitResult",
    "ConditionTimeoutError",
    "ConsumerMember",
    "ControlMarker",
    "IdempotentProducer",
    "InternalLog",
    "MemberConfig",
    "MemberView",
    "ObservedError",
    "RebalanceEvent",
    "TopicPart",
    "TransactionalProducer",
    "commit_without_membership",
    "committed_offsets",
    "consume_and_commit",
    "create_topic",
    "delete_group",
    "list_offsets",
    "parse_group_metadata",
    "read_internal_log",
    "share_consume",
    "standalone_group_metadata",
    "wait_until",
]

_LOG = logging.getLogger(__name__)
_RDKAFKA_LOG = logging.getLogger("offsetscope.verify.harness.clients.rdkafka")

TopicPart = tuple[str, int]
T = TypeVar("T")

# partition.assignment.strategy values librdkafka knows, by the names tests use.
STRATEGIES = ("range", "roundrobin", "cooperative-sticky")
# How long one poll() blocks: also how long a command (commit, stall ...) may wait for the loop.
_POLL_S = 0.02
_WAIT_INTERVAL_S = 0.05
_CGMD_MAGIC = b"CGMDv2:"
_INT32_NATIVE = struct.Struct("=i")
# Linux prctl(2): signal the child when the parent thread dies (no orphaned members).
_PR_SET_PDEATHSIG = 1


class ConditionTimeoutError(TimeoutError):
    """A waited-for condition did not hold before its deadline (the message says which)."""


class ClientCommandError(RuntimeError):
    """A command sent to a member's poll loop failed (the member's error text is attached)."""


def wait_until(
    condition: Callable[[], T | None],
    timeout_s: float,
    what: str,
    *,
    interval_s: float = _WAIT_INTERVAL_S,
    describe: Callable[[], str] | None = None,
) -> T:
    """Call ``condition`` until it returns something truthy, and return that.

    Args:
        condition: returns a truthy value once the awaited state is reached.
        timeout_s: deadline, from now.
        what: what is awaited, for the error message.
        interval_s: pause between calls.
        describe: called on timeout to add the current state to the message.

    Returns:
        The first truthy value ``condition`` returned.

    Raises:
        ConditionTimeoutError: the deadline passed first.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            detail = f"\n{describe()}" if describe is not None else ""
            raise ConditionTimeoutError(
                f"timed out after {timeout_s:.1f} s waiting for {what}{detail}"
            )
        time.sleep(interval_s)


def parse_group_metadata(blob: bytes) -> tuple[int, str, str, str | None] | None:
    """Read librdkafka's serialised consumer group metadata.

    Returns:
        ``(generation, group id, member id, group instance id)``, or None if ``blob`` is not
        in the ``CGMDv2`` layout (see the module docstring).
    """
    if not blob.startswith(_CGMD_MAGIC) or len(blob) < len(_CGMD_MAGIC) + 4:
        return None
    pos = len(_CGMD_MAGIC)
    (generation,) = _INT32_NATIVE.unpack_from(blob, pos)
    pos += 4
    parts: list[str] = []
    for _ in range(2):
        end = blob.find(b"\0", pos)
        if end < 0:
            return None
        parts.append(blob[pos:end].decode("utf-8", errors="replace"))
        pos = end + 1
    instance: str | None = None
    if pos < len(blob) and blob[pos] == 0:
        end = blob.find(b"\0", pos + 1)
        if end < 0:
            return None
        instance = blob[pos + 1 : end].decode("utf-8", errors="replace")
    return generation, parts[0], parts[1], instance


# ============================================================================ consumer members


@dataclass(frozen=True, slots=True)
class MemberConfig:
    """One consumer group member (librdkafka properties named in the comments).

    ``commit_every`` > 0 commits the consumed positions synchronously after every that many
    messages (manual commits); ``auto_commit`` uses librdkafka's periodic auto-commit instead.
    ``group_protocol="consumer"`` makes a KIP-848 member (the broker assigns; ``strategy`` and
    ``session_timeout_ms`` then belong to the broker and are not sent).
    """

    group_id: str
    topics: tuple[str, ...]
    strategy: str = "range"  # partition.assignment.strategy
    instance_id: str | None = None  # group.instance.id (static membership, KIP-345)
    client_id: str = "offsetscope-member"  # client.id
    session_timeout_ms: int = 6_000  # session.timeout.ms
    heartbeat_interval_ms: int = 300  # heartbeat.interval.ms
    max_poll_interval_ms: int = 300_000  # max.poll.interval.ms (also the rebalance timeout)
    auto_commit: bool = False  # enable.auto.commit
    auto_commit_interval_ms: int = 1_000  # auto.commit.interval.ms
    commit_every: int = 0
    group_protocol: str = "classic"  # group.protocol
    isolation_level: str = "read_committed"  # isolation.level
    auto_offset_reset: str = "earliest"  # auto.offset.reset
    properties: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, not {self.strategy!r}")
        if self.group_protocol not in ("classic", "consumer"):
            raise ValueError(f"group_protocol must be classic or consumer: {self.group_protocol!r}")
        if not self.topics:
            raise ValueError("a member subscribes to at least one topic")
        if self.commit_every < 0:
            raise ValueError("commit_every must be >= 0")

    def librdkafka_config(self, bootstrap: str) -> dict[str, Any]:
        """The consumer configuration for ``confluent_kafka.Consumer``."""
        conf: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": self.group_id,
            "client.id": self.client_id,
            "enable.auto.commit": self.auto_commit,
            "auto.commit.interval.ms": self.auto_commit_interval_ms,
            "auto.offset.reset": self.auto_offset_reset,
            "isolation.level": self.isolation_level,
            "max.poll.interval.ms": self.max_poll_interval_ms,
            "group.protocol": self.group_protocol,
        }
        if self.group_protocol == "classic":
            conf["partition.assignment.strategy"] = self.strategy
            conf["session.timeout.ms"] = self.session_timeout_ms
            conf["heartbeat.interval.ms"] = self.heartbeat_interval_ms
        if self.instance_id is not None:
            conf["group.instance.id"] = self.instance_id
        conf.update(self.properties)
        return conf

    def to_json(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["topics"] = list(self.topics)
        data["properties"] = dict(self.properties)
        return data

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> MemberConfig:
        values = dict(data)
        values["topics"] = tuple(values["topics"])
        return MemberConfig(**values)


@dataclass(frozen=True, slots=True)
class RebalanceEvent:
    """One rebalance callback as the client saw it.

    ``kind`` is ``assigned``, ``revoked`` or ``lost``; ``partitions`` what the callback got (the
    incremental change under cooperative-sticky, the whole set otherwise); ``assignment`` the
    member's assignment after it; ``generation`` and ``member_id`` what librdkafka reported.
    """

    kind: str
    partitions: tuple[TopicPart, ...]
    assignment: tuple[TopicPart, ...]
    member_id: str
    generation: int | None
    at_ms: int


@dataclass(frozen=True, slots=True)
class CommitResult:
    """One synchronous commit: the offsets sent and, per partition, an error name or None."""

    offsets: tuple[tuple[str, int, int], ...]
    errors: tuple[str | None, ...]
    at_ms: int
    error: str | None = None  # the whole request failed

    @property
    def ok(self) -> bool:
        return self.error is None and all(e is None for e in self.errors)

    @staticmethod
    def from_observation(obs: Mapping[str, Any]) -> CommitResult:
        return CommitResult(
            offsets=tuple((str(t), int(p), int(o)) for t, p, o in obs["offsets"]),
            errors=tuple(obs["errors"]),
            at_ms=int(obs["at_ms"]),
            error=obs.get("error"),
        )


@dataclass(frozen=True, slots=True)
class ObservedError:
    """An error the client reported (``poll()`` error message or ``error_cb``)."""

    name: str  # KafkaError name, e.g. _MAX_POLL_EXCEEDED
    text: str
    fatal: bool
    at_ms: int


@dataclass(frozen=True, slots=True)
class MemberView:
    """An immutable snapshot of everything a member observed so far."""

    events: tuple[RebalanceEvent, ...]
    assignment: frozenset[TopicPart]
    generation: int | None
    member_id: str | None
    consumed: int
    positions: Mapping[TopicPart, int]  # next offset to consume, per partition
    commits: tuple[CommitResult, ...]
    errors: tuple[ObservedError, ...]
    closed: bool

    def error_names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.errors)


class _Observations:
    """What a member saw, fed by observation dicts (from the poll loop or a child's stdout)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._events: list[RebalanceEvent] = []
        self._assignment: set[TopicPart] = set()
        self._generation: int | None = None
        self._member_id: str | None = None
        self._consumed = 0
        self._positions: dict[TopicPart, int] = {}
        self._commits: list[CommitResult] = []
        self._errors: list[ObservedError] = []
        self._replies: dict[int, Mapping[str, Any]] = {}
        self._closed = False

    def apply(self, obs: Mapping[str, Any]) -> None:
        kind = obs["type"]
        with self._cond:
            if kind == "rebalance":
                parts = [(str(t), int(p)) for t, p in obs["partitions"]]
                self._assignment = {(str(t), int(p)) for t, p in obs["assignment"]}
                self._member_id = obs["member_id"] or self._member_id
                if obs["generation"] is not None:
                    self._generation = int(obs["generation"])
                self._events.append(
                    RebalanceEvent(
                        kind=obs["kind"],
                        partitions=tuple(parts),
                        assignment=tuple(sorted(self._assignment)),
                        member_id=obs["member_id"],
                        generation=obs["generation"],
                        at_ms=obs["at_ms"],
                    )
                )
            elif kind == "generation":
                self._generation = obs["generation"]
                self._member_id = obs["member_id"] or self._member_id
            elif kind == "consumed":
                for t, p, offset in obs["records"]:
                    self._positions[(t, p)] = int(offset) + 1
                self._consumed += len(obs["records"])
            elif kind == "commit":
                self._commits.append(CommitResult.from_observation(obs))
            elif kind == "error":
                self._errors.append(
                    ObservedError(obs["name"], obs["text"], bool(obs["fatal"]), obs["at_ms"])
                )
            elif kind == "reply":
                self._replies[int(obs["id"])] = obs
            elif kind == "closed":
                self._closed = True
            else:
                raise ValueError(f"unknown observation {kind!r}")
            self._cond.notify_all()

    def view(self) -> MemberView:
        with self._cond:
            return self._view()

    def _view(self) -> MemberView:
        return MemberView(
            events=tuple(self._events),
            assignment=frozenset(self._assignment),
            generation=self._generation,
            member_id=self._member_id,
            consumed=self._consumed,
            positions=dict(self._positions),
            commits=tuple(self._commits),
            errors=tuple(self._errors),
            closed=self._closed,
        )

    def wait_for(self, predicate: Callable[[MemberView], bool], timeout_s: float) -> MemberView:
        with self._cond:
            if not self._cond.wait_for(lambda: predicate(self._view()), timeout=timeout_s):
                raise TimeoutError
            return self._view()

    def wait_reply(self, request_id: int, timeout_s: float) -> Mapping[str, Any] | None:
        with self._cond:
            self._cond.wait_for(
                lambda: request_id in self._replies or self._closed, timeout=timeout_s
            )
            return self._replies.pop(request_id, None)


def _topic_partition(
    topic: str, partition: int, offset: int, metadata: str | None
) -> TopicPartition:
    # The binding rejects metadata=None; leaving it out sends a null metadata.
    if metadata is None:
        return TopicPartition(topic, partition, offset)
    return TopicPartition(topic, partition, offset, metadata=metadata)


def _tp_list(parts: Iterable[TopicPartition]) -> list[list[Any]]:
    return [[p.topic, p.partition] for p in parts]


class _PollLoop:
    """The member's consumer and its poll loop; runs in one thread, owns the Consumer.

    Commands arrive on a queue and run between polls, on this thread (a librdkafka consumer
    must not be driven from two threads at once). Every observation goes to ``emit``.
    """

    def __init__(
        self,
        config: MemberConfig,
        bootstrap: str,
        emit: Callable[[dict[str, Any]], None],
        clock: Clock,
    ) -> None:
        self.config = config
        self.bootstrap = bootstrap
        self.emit = emit
        self.clock = clock
        self.commands: queue.Queue[dict[str, Any]] = queue.Queue()
        self._assignment: set[TopicPart] = set()
        self._stalled = False
        self._generation: tuple[int | None, str] = (None, "")
        self._since_commit = 0

    # -- callbacks (run inside poll()/close() on this thread)

    def _identity(self, consumer: Consumer) -> tuple[int | None, str]:
        member_id = consumer.memberid() or ""
        parsed = parse_group_metadata(bytes(consumer.consumer_group_metadata()))
        generation = parsed[0] if parsed is not None else None
        return generation, member_id

    def _rebalance(self, kind: str, consumer: Consumer, parts: list[TopicPartition]) -> None:
        changed = {(p.topic, p.partition) for p in parts}
        # Incremental callbacks: cooperative-sticky, and every KIP-848 member.
        cooperative = (
            self.config.strategy == "cooperative-sticky" or self.config.group_protocol == "consumer"
        )
        if kind == "assigned":
            self._assignment = (self._assignment | changed) if cooperative else changed
        else:
            self._assignment -= changed
        generation, member_id = self._identity(consumer)
        self._generation = (generation, member_id)
        self.emit(
            {
                "type": "rebalance",
                "kind": kind,
                "partitions": _tp_list(parts),
                "assignment": sorted([t, p] for t, p in self._assignment),
                "member_id": member_id,
                "generation": generation,
                "at_ms": self.clock.now_ms(),
            }
        )

    def _on_error(self, err: KafkaError) -> None:
        self.emit(
            {
                "type": "error",
                "name": err.name(),
                "text": err.str(),
                "fatal": err.fatal(),
                "at_ms": self.clock.now_ms(),
            }
        )

    # -- the loop

    def run(self) -> None:
        consumer = Consumer(
            {
                **self.config.librdkafka_config(self.bootstrap),
                "error_cb": self._on_error,
                "logger": _RDKAFKA_LOG,
            }
        )
        try:
            consumer.subscribe(
                list(self.config.topics),
                on_assign=lambda c, p: self._rebalance("assigned", c, p),
                on_revoke=lambda c, p: self._rebalance("revoked", c, p),
                on_lost=lambda c, p: self._rebalance("lost", c, p),
            )
            self._loop(consumer)
        finally:
            # close() commits nothing here (no auto-commit unless configured) and sends
            # LeaveGroup for a dynamic member; a static member keeps its slot (KIP-345).
            consumer.close()
            self.emit({"type": "closed", "at_ms": self.clock.now_ms()})

    def _loop(self, consumer: Consumer) -> None:
        """Poll, and run commands between polls, until told to leave."""
        while True:
            try:
                cmd = (
                    self.commands.get(timeout=_POLL_S)
                    if self._stalled
                    else self.commands.get_nowait()
                )
            except queue.Empty:
                cmd = None
            if cmd is not None:
                action = cmd["cmd"]
                if action == "leave":
                    self._reply(cmd, None)
                    return
                try:
                    self._command(consumer, cmd)
                except (KafkaException, ValueError, TypeError) as exc:
                    # A bad command fails that command, not the member.
                    self._reply(cmd, f"{type(exc).__name__}: {exc}")
                continue
            if self._stalled:
                continue
            self._poll_once(consumer)

    def _poll_once(self, consumer: Consumer) -> None:
        records: list[list[Any]] = []
        msg: Message | None = consumer.poll(_POLL_S)
        while msg is not None:
            err = msg.error()
            if err is not None:
                self._on_error(err)
            else:
                records.append([msg.topic(), msg.partition(), msg.offset()])
            msg = consumer.poll(0)
            if len(records) >= 500:
                break
        if records:
            self.emit({"type": "consumed", "records": records})
            self._since_commit += len(records)
            every = self.config.commit_every
            if every and self._since_commit >= every:
                self._since_commit = 0
                self._commit(consumer, None)
        generation = self._identity(consumer)
        if generation != self._generation:
            self._generation = generation
            self.emit(
                {"type": "generation", "generation": generation[0], "member_id": generation[1]}
            )

    def _command(self, consumer: Consumer, cmd: Mapping[str, Any]) -> None:
        action = cmd["cmd"]
        if action == "stall":
            self._stalled = True
            self._reply(cmd, None)
        elif action == "resume":
            self._stalled = False
            self._reply(cmd, None)
        elif action == "commit":
            # A failed commit is a result (CommitResult.error), not a failed command.
            self._reply(cmd, None, value=self._commit(consumer, cmd.get("offsets")))
        elif action == "group_metadata":
            blob = bytes(consumer.consumer_group_metadata())
            self._reply(cmd, None, value=blob.hex())
        else:
            self._reply(cmd, f"unknown command {action!r}")

    def _commit(
        self, consumer: Consumer, offsets: Sequence[Sequence[Any]] | None
    ) -> dict[str, Any]:
        obs: dict[str, Any] = {"type": "commit", "at_ms": self.clock.now_ms()}
        try:
            if offsets is None:
                done = consumer.commit(asynchronous=False)
            else:
                done = consumer.commit(
                    offsets=[_topic_partition(t, p, o, m) for t, p, o, m in offsets],
                    asynchronous=False,
                )
        except KafkaException as exc:
            err = exc.args[0]
            obs.update(
                offsets=[], errors=[], error=err.name() if isinstance(err, KafkaError) else str(err)
            )
        else:
            parts = list(done or [])
            obs.update(
                offsets=[[p.topic, p.partition, p.offset] for p in parts],
                errors=[None if p.error is None else p.error.name() for p in parts],
                error=None,
            )
        self.emit(obs)
        return obs

    def _reply(self, cmd: Mapping[str, Any], error: str | None, *, value: Any = None) -> None:
        if "id" in cmd:
            self.emit({"type": "reply", "id": cmd["id"], "error": error, "value": value})


class ConsumerMember:
    """One member of a consumer group, polling in its own thread (or child process).

    Created stopped; :meth:`start` subscribes and starts polling. Use through a
    :class:`ClientPool` (or as a context manager) so it is always stopped.
    """

    def __init__(
        self,
        bootstrap: str,
        config: MemberConfig,
        *,
        isolated: bool = False,
        clock: Clock | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.config = config
        self.isolated = isolated
        self.clock = clock or SystemClock()
        self._obs = _Observations()
        self._next_id = 0
        self._id_lock = threading.Lock()
        self._loop: _PollLoop | None = None
        self._thread: threading.Thread | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._stdin_lock = threading.Lock()
        self._stopped = False

    def __repr__(self) -> str:
        return (
            f"ConsumerMember(group={self.config.group_id!r}, client={self.config.client_id!r}, "
            f"member_id={self.member_id!r}, isolated={self.isolated})"
        )

    # -- lifecycle

    def start(self) -> Self:
        """Subscribe and start polling (returns at once; see :meth:`wait_assigned`)."""
        if self._thread is not None or self._proc is not None:
            raise RuntimeError("member already started")
        if self.isolated:
            self._start_child()
        else:
            self._loop = _PollLoop(self.config, self.bootstrap, self._obs.apply, self.clock)
            self._thread = threading.Thread(
                target=self._run_loop,
                name=f"member-{self.config.client_id}",
                daemon=True,
            )
            self._thread.start()
        return self

    def _run_loop(self) -> None:
        assert self._loop is not None
        try:
            self._loop.run()
        except Exception as exc:  # noqa: BLE001 - recorded, and the member counts as closed
            _LOG.exception("member %s poll loop failed", self.config.client_id)
            self._obs.apply(
                {
                    "type": "error",
                    "name": type(exc).__name__,
                    "text": str(exc),
                    "fatal": True,
                    "at_ms": self.clock.now_ms(),
                }
            )
            self._obs.apply({"type": "closed", "at_ms": self.clock.now_ms()})

    def _start_child(self) -> None:
        cmd = [
            sys.executable,
            "-m",
            "offsetscope.verify.harness.clients",
            "member",
            "--bootstrap",
            self.bootstrap,
            "--config",
            json.dumps(self.config.to_json()),
        ]
        preexec = _die_with_parent if sys.platform.startswith("linux") else None
        self._proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,
            text=True,
            bufsize=1,
            preexec_fn=preexec,  # noqa: PLW1509
        )
        self._reader = threading.Thread(
            target=self._read_child, name=f"member-{self.config.client_id}-reader", daemon=True
        )
        self._reader.start()

    def _read_child(self) -> None:
        assert self._proc is not None
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            line = line.strip()
            if not line:
                continue
            try:
                obs = json.loads(line)
            except json.JSONDecodeError:
                _LOG.warning("member child printed a non-JSON line: %s", line[:200])
                continue
            self._obs.apply(obs)
        self._proc.wait()
        if not self._obs.view().closed:
            self._obs.apply({"type": "closed", "at_ms": self.clock.now_ms()})

    def _send(self, cmd: dict[str, Any], timeout_s: float) -> Any:
        with self._id_lock:
            self._next_id += 1
            request_id = self._next_id
        cmd = {**cmd, "id": request_id}
        if self.isolated:
            proc = self._proc
            if proc is None or proc.stdin is None or proc.poll() is not None:
                raise ClientCommandError(f"{self!r} is not running")
            with self._stdin_lock:
                proc.stdin.write(json.dumps(cmd) + "\n")
                proc.stdin.flush()
        else:
            if self._loop is None or self._obs.view().closed:
                raise ClientCommandError(f"{self!r} is not running")
            self._loop.commands.put(cmd)
        reply = self._obs.wait_reply(request_id, timeout_s)
        if reply is None:
            raise ClientCommandError(f"{self!r}: no reply to {cmd['cmd']} within {timeout_s} s")
        if reply.get("error"):
            raise ClientCommandError(f"{self!r}: {cmd['cmd']} failed: {reply['error']}")
        return reply.get("value")

    def leave(self, timeout_s: float = 30.0) -> None:
        """Close the consumer (a dynamic member sends LeaveGroup) and wait until it is closed."""
        if self._obs.view().closed:
            return
        if self.isolated:
            with contextlib.suppress(ClientCommandError, BrokenPipeError):
                self._send({"cmd": "leave"}, timeout_s)
            self._wait_child(timeout_s)
        else:
            assert self._loop is not None
            assert self._thread is not None
            self._loop.commands.put({"cmd": "leave"})
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                raise ConditionTimeoutError(f"{self!r} did not close within {timeout_s} s")
        self._stopped = True

    def crash(self) -> None:
        """SIGKILL the member's process: no LeaveGroup, no commit; the session must time out.

        Raises:
            RuntimeError: the member is not isolated (librdkafka always leaves on close).
        """
        if not self.isolated or self._proc is None:
            raise RuntimeError("crash() needs a member started with isolated=True")
        with contextlib.suppress(ProcessLookupError):
            self._proc.send_signal(signal.SIGKILL)
        self._wait_child(10.0)
        self._stopped = True

    def _wait_child(self, timeout_s: float) -> None:
        assert self._proc is not None
        try:
            self._proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=10.0)
        if self._reader is not None:
            self._reader.join(10.0)
        for pipe in (self._proc.stdin, self._proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()

    def stop(self) -> None:
        """Cleanup for teardown: leave if still running; kill a child that does not exit."""
        if self._stopped:
            return
        self._stopped = True
        if self.isolated and self._proc is not None:
            if self._proc.poll() is None:
                with contextlib.suppress(ClientCommandError, OSError):
                    self._send({"cmd": "leave"}, 15.0)
            self._wait_child(15.0)
            return
        if self._loop is not None and self._thread is not None:
            if self._thread.is_alive():
                self._loop.commands.put({"cmd": "leave"})
                self._thread.join(30.0)
            if self._thread.is_alive():
                _LOG.error("member %s did not stop", self.config.client_id)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- commands

    def stall(self) -> None:
        """Stop calling poll() (librdkafka keeps heartbeating until max.poll.interval.ms)."""
        self._send({"cmd": "stall"}, 10.0)

    def resume(self) -> None:
        """Poll again after :meth:`stall`."""
        self._send({"cmd": "resume"}, 10.0)

    def commit(
        self,
        offsets: Mapping[TopicPart, int] | None = None,
        *,
        metadata: str | None = None,
        timeout_s: float = 30.0,
    ) -> CommitResult:
        """Commit synchronously, on the poll thread.

        Args:
            offsets: next offsets to consume per partition; None = the consumed positions.
            metadata: commit metadata string for every partition of ``offsets``.
            timeout_s: how long to wait for the poll loop to answer.

        Returns:
            The commit's result (also in :attr:`commits`). A commit the broker or librdkafka
            refused (e.g. ``_NO_OFFSET``: nothing consumed since the last commit) is reported
            there (``ok`` is False), not raised.
        """
        cmd: dict[str, Any] = {"cmd": "commit"}
        if offsets is not None:
            cmd["offsets"] = [[t, p, o, metadata] for (t, p), o in sorted(offsets.items())]
        return CommitResult.from_observation(self._send(cmd, timeout_s))

    def group_metadata(self, timeout_s: float = 10.0) -> bytes:
        """librdkafka's consumer group metadata, for ``send_offsets_to_transaction``."""
        value = self._send({"cmd": "group_metadata"}, timeout_s)
        return bytes.fromhex(str(value))

    # -- observations

    def view(self) -> MemberView:
        return self._obs.view()

    @property
    def member_id(self) -> str | None:
        return self._obs.view().member_id

    @property
    def generation(self) -> int | None:
        return self._obs.view().generation

    @property
    def assignment(self) -> frozenset[TopicPart]:
        return self._obs.view().assignment

    @property
    def events(self) -> tuple[RebalanceEvent, ...]:
        return self._obs.view().events

    @property
    def commits(self) -> tuple[CommitResult, ...]:
        return self._obs.view().commits

    def wait_for(
        self, predicate: Callable[[MemberView], bool], timeout_s: float, what: str
    ) -> MemberView:
        """Block until ``predicate(view)`` holds (re-checked at every observation)."""
        try:
            return self._obs.wait_for(predicate, timeout_s)
        except TimeoutError:
            raise ConditionTimeoutError(
                f"{self!r}: timed out after {timeout_s:.1f} s waiting for {what}; "
                f"saw {self._obs.view()}"
            ) from None

    def wait_assigned(
        self, partitions: Iterable[TopicPart] | None = None, timeout_s: float = 60.0
    ) -> MemberView:
        """Until the member holds ``partitions`` (or, if None, has had an assignment callback)."""
        if partitions is None:
            return self.wait_for(
                lambda v: any(e.kind == "assigned" for e in v.events), timeout_s, "an assignment"
            )
        want = frozenset(partitions)
        return self.wait_for(
            lambda v: v.assignment == want, timeout_s, f"assignment {sorted(want)}"
        )

    def wait_consumed(self, count: int, timeout_s: float = 60.0) -> MemberView:
        return self.wait_for(lambda v: v.consumed >= count, timeout_s, f"{count} consumed records")


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _child_main(bootstrap: str, config_json: str, stdin: IO[str], stdout: IO[str]) -> int:
    """The isolated member: relay observations as JSON lines, take commands from stdin."""
    config = MemberConfig.from_json(json.loads(config_json))
    out_lock = threading.Lock()

    def emit(obs: dict[str, Any]) -> None:
        with out_lock:
            stdout.write(json.dumps(obs) + "\n")
            stdout.flush()

    loop = _PollLoop(config, bootstrap, emit, SystemClock())

    def read_commands() -> None:
        for line in stdin:
            if line.strip():
                loop.commands.put(json.loads(line))
        # The parent went away: leave like a well-behaved application would.
        loop.commands.put({"cmd": "leave"})

    threading.Thread(target=read_commands, daemon=True).start()
    loop.run()
    return 0


# ============================================================================ producers


class _DeliveryTracker:
    def __init__(self) -> None:
        self.delivered: list[tuple[str, int, int]] = []
        self.failed: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, err: KafkaError | None, msg: Message) -> None:
        with self._lock:
            if err is not None:
                self.failed.append(err.str())
            else:
                self.delivered.append(
                    (str(msg.topic()), int(msg.partition() or 0), int(msg.offset() or 0))
                )


class IdempotentProducer:
    """A producer with ``enable.idempotence=true`` (a producer id, per-partition sequences)."""

    def __init__(
        self, bootstrap: str, *, client_id: str = "offsetscope-producer", linger_ms: int = 5
    ) -> None:
        self.tracker = _DeliveryTracker()
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "client.id": client_id,
                "enable.idempotence": True,
                "linger.ms": linger_ms,
                "logger": _RDKAFKA_LOG,
            }
        )

    def send(
        self, topic: str, value: bytes, *, key: bytes | None = None, partition: int | None = None
    ) -> None:
        kwargs: dict[str, Any] = {"key": key, "on_delivery": self.tracker}
        if partition is not None:
            kwargs["partition"] = partition
        self._producer.produce(topic, value, **kwargs)
        self._producer.poll(0)

    def flush(self, timeout_s: float = 30.0) -> list[tuple[str, int, int]]:
        """Wait for every delivery; raise if any failed or is still pending."""
        left = self._producer.flush(timeout_s)
        if left or self.tracker.failed:
            raise ClientCommandError(f"{left} undelivered, failures: {self.tracker.failed[:5]}")
        return list(self.tracker.delivered)

    def close(self) -> None:
        self._producer.flush(10.0)


class TransactionalProducer:
    """A transactional producer (``transactional.id``): init, begin, send, commit/abort.

    librdkafka registers a partition with the coordinator (AddPartitionsToTxn) only when a
    batch for it is sent: :meth:`abort` flushes first so the abort covers what was sent, and
    :meth:`leave_open` flushes and then stops driving the producer, so the transaction stays
    Ongoing until the coordinator's ``transaction.timeout.ms`` check aborts it.
    """

    def __init__(
        self,
        bootstrap: str,
        transactional_id: str,
        *,
        transaction_timeout_ms: int = 60_000,
        client_id: str = "offsetscope-txn",
    ) -> None:
        self.transactional_id = transactional_id
        self.tracker = _DeliveryTracker()
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "client.id": client_id,
                "transactional.id": transactional_id,
                "transaction.timeout.ms": transaction_timeout_ms,
                "linger.ms": 5,
                "logger": _RDKAFKA_LOG,
            }
        )
        self._closed = False

    def init(self, timeout_s: float = 60.0) -> Self:
        """InitProducerId: a producer id and a (bumped) epoch; fences older instances."""
        self._producer.init_transactions(timeout_s)
        return self

    def begin(self) -> None:
        self._producer.begin_transaction()

    def send(self, topic: str, value: bytes, *, partition: int, key: bytes | None = None) -> None:
        self._producer.produce(topic, value, key=key, partition=partition, on_delivery=self.tracker)
        self._producer.poll(0)

    def flush(self, timeout_s: float = 30.0) -> None:
        left = self._producer.flush(timeout_s)
        if left:
            raise ClientCommandError(f"{left} messages undelivered after {timeout_s} s")

    def send_offsets(
        self,
        offsets: Mapping[TopicPart, int],
        group_metadata: bytes,
        timeout_s: float = 30.0,
    ) -> None:
        """AddOffsetsToTxn + TxnOffsetCommit: commit consumer offsets inside the transaction."""
        parts = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
        self._producer.send_offsets_to_transaction(parts, group_metadata, timeout_s)

    def commit(self, timeout_s: float = 30.0) -> None:
        self._producer.commit_transaction(timeout_s)

    def abort(self, timeout_s: float = 30.0) -> None:
        self.flush(timeout_s)
        self._producer.abort_transaction(timeout_s)

    def leave_open(self, timeout_s: float = 30.0) -> None:
        """Flush what was sent and stop: the coordinator times the transaction out."""
        self.flush(timeout_s)

    def close(self) -> None:
        """Drop anything still queued and release the client (never blocks on the broker)."""
        if self._closed:
            return
        self._closed = True
        # A fenced (fatal) producer raises from both; it has nothing left to release.
        with contextlib.suppress(KafkaException):
            self._producer.purge()
            self._producer.flush(0)


# ============================================================================ admin


def _admin(bootstrap: str) -> AdminClient:
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": _RDKAFKA_LOG}
    return AdminClient(conf)


def create_topic(
    bootstrap: str,
    topic: str,
    partitions: int,
    *,
    config: Mapping[str, str] | None = None,
    timeout_s: float = 30.0,
) -> None:
    """Create a topic (replication factor 1, topic-level ``config``) and wait until the broker
    has it."""
    admin = _admin(bootstrap)  # must outlive its futures (destroying it fails them)
    futures = admin.create_topics([NewTopic(topic, partitions, 1, config=dict(config or {}))])
    futures[topic].result(timeout=timeout_s)


def delete_group(bootstrap: str, group_id: str, *, timeout_s: float = 30.0) -> None:
    """DeleteGroups: the group must be empty; the coordinator writes tombstones."""
    admin = _admin(bootstrap)
    futures = admin.delete_consumer_groups([group_id], request_timeout=timeout_s)
    futures[group_id].result(timeout=timeout_s)


def list_offsets(
    bootstrap: str,
    partitions: Iterable[TopicPart],
    *,
    spec: str = "latest",
    read_committed: bool = True,
    timeout_s: float = 30.0,
) -> dict[TopicPart, int]:
    """ListOffsets: ``latest`` (the LSO under read_committed, else the high watermark) or
    ``earliest`` (log start), per partition."""
    if spec not in ("latest", "earliest"):
        raise ValueError(f"spec must be latest or earliest, not {spec!r}")
    # OffsetSpec's class methods carry no annotations.
    offset_spec: Any = getattr(OffsetSpec, spec)()
    request = {TopicPartition(t, p): offset_spec for t, p in partitions}
    level = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
    admin = _admin(bootstrap)
    futures = admin.list_offsets(request, isolation_level=level, request_timeout=timeout_s)
    return {
        (tp.topic, tp.partition): int(fut.result(timeout=timeout_s).offset)
        for tp, fut in futures.items()
    }


def committed_offsets(
    bootstrap: str, group_id: str, *, timeout_s: float = 30.0
) -> dict[TopicPart, int]:
    """OffsetFetch for every partition the group has a committed offset for."""
    admin = _admin(bootstrap)
    futures = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group_id)], request_timeout=timeout_s
    )
    result = futures[group_id].result(timeout=timeout_s)
    return {
        (tp.topic, tp.partition): int(tp.offset) for tp in result.topic_partitions if tp.offset >= 0
    }


def standalone_group_metadata(bootstrap: str, group_id: str) -> bytes:
    """Group metadata of a consumer that never joins (generation -1, no member id).

    For ``send_offsets_to_transaction`` on behalf of a group without members (a "simple"
    consumer group); the coordinator then skips the generation check.
    """
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group_id, "logger": _RDKAFKA_LOG}
    )
    try:
        return bytes(consumer.consumer_group_metadata())
    finally:
        consumer.close()


def commit_without_membership(
    bootstrap: str,
    group_id: str,
    offsets: Mapping[TopicPart, int],
    *,
    metadata: str | None = None,
) -> list[tuple[str, int, int]]:
    """OffsetCommit for a group this client never joins (generation -1, empty member id).

    What a "simple" consumer (``assign()``, no ``subscribe()``) or an admin tool does: the
    coordinator stores the offsets in an implicit group that has no GroupMetadata record.

    Returns:
        The committed ``(topic, partition, offset)`` triples.

    Raises:
        ClientCommandError: the commit failed for some partition.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            "enable.auto.commit": False,
            "logger": _RDKAFKA_LOG,
        }
    )
    try:
        done = consumer.commit(
            offsets=[_topic_partition(t, p, o, metadata) for (t, p), o in sorted(offsets.items())],
            asynchronous=False,
        )
    finally:
        consumer.close()
    parts = list(done or [])
    failed = [(p.topic, p.partition, p.error) for p in parts if p.error is not None]
    if failed:
        raise ClientCommandError(f"commit failed: {failed}")
    return [(str(p.topic), int(p.partition), int(p.offset)) for p in parts]


def consume_and_commit(
    client: Mapping[str, Any],
    group_id: str,
    topic: str,
    *,
    want: int,
    timeout_s: float = 60.0,
) -> int:
    """Consume ``topic`` from its start as a member of ``group_id`` until ``want`` records
    arrived, then commit their offsets synchronously and leave.

    Args:
        client: the connection settings (``bootstrap.servers`` and any security settings).

    Returns:
        How many records arrived.

    Raises:
        ConditionTimeoutError: fewer than ``want`` arrived before the deadline.
    """
    consumer = Consumer(
        {
            **client,
            "group.id": group_id,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "logger": _RDKAFKA_LOG,
        }
    )
    received = 0
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout_s
        while received < want:
            if time.monotonic() >= deadline:
                raise ConditionTimeoutError(
                    f"group {group_id}: {received} of {want} records in {timeout_s} s"
                )
            msg = consumer.poll(0.5)
            if msg is not None:
                if msg.error() is not None:
                    raise ClientCommandError(f"group {group_id}: {msg.error()}")
                received += 1
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return received


def share_consume(
    bootstrap: str,
    group_id: str,
    topics: Sequence[str],
    *,
    want: int,
    tick: Callable[[], None] | None = None,
    timeout_s: float = 60.0,
    offsets: list[tuple[str, int, int]] | None = None,
) -> int:
    """Consume as a KIP-932 share group member until ``want`` records arrived, then commit.

    librdkafka's share consumer (a preview in confluent-kafka 2.16) acknowledges each record
    implicitly at the next poll; ``commit_sync`` then makes the share coordinator persist the
    delivery state (``__share_group_state``), and ``close`` leaves the group. A new share group
    starts at the latest offset, so ``tick`` (called every poll turn) is where the caller
    produces the records to be consumed.

    Args:
        offsets: when given, each record received is appended to it (topic, partition, offset).

    Returns:
        How many records arrived.

    Raises:
        ConditionTimeoutError: fewer than ``want`` arrived before the deadline.
    """
    consumer = ShareConsumer(
        {"bootstrap.servers": bootstrap, "group.id": group_id, "logger": _RDKAFKA_LOG}
    )
    received = 0
    try:
        consumer.subscribe(list(topics))
        deadline = time.monotonic() + timeout_s
        while received < want:
            if time.monotonic() >= deadline:
                raise ConditionTimeoutError(
                    f"share group {group_id}: {received} of {want} records in {timeout_s} s"
                )
            if tick is not None:
                tick()
            for msg in consumer.poll(0.2) or ():
                if msg.error() is None:
                    received += 1
                    if offsets is not None:
                        offsets.append(
                            (str(msg.topic()), int(msg.partition() or 0), int(msg.offset() or 0))
                        )
        for msg in consumer.poll(0.2) or ():  # acknowledges the last batch (implicit mode)
            if msg.error() is None:
                received += 1
                if offsets is not None:
                    offsets.append(
                        (str(msg.topic()), int(msg.partition() or 0), int(msg.offset() or 0))
                    )
        consumer.commit_sync(timeout_s)
    finally:
        consumer.close()
    return received


# ============================================================================ pool


class ClientPool:
    """Owns the clients a test or workload starts; :meth:`close` stops every one of them."""

    def __init__(self, bootstrap: str, *, clock: Clock | None = None) -> None:
        self.bootstrap = bootstrap
        self.clock = clock or SystemClock()
        self._members: list[ConsumerMember] = []
        self._producers: list[IdempotentProducer | TransactionalProducer] = []

    def member(
        self, config: MemberConfig, *, isolated: bool = False, start: bool = True
    ) -> ConsumerMember:
        member = ConsumerMember(self.bootstrap, config, isolated=isolated, clock=self.clock)
        self._members.append(member)
        return member.start() if start else member

    def idempotent_producer(self, **kwargs: Any) -> IdempotentProducer:
        producer = IdempotentProducer(self.bootstrap, **kwargs)
        self._producers.append(producer)
        return producer

    def transactional_producer(self, transactional_id: str, **kwargs: Any) -> TransactionalProducer:
        producer = TransactionalProducer(self.bootstrap, transactional_id, **kwargs)
        self._producers.append(producer)
        return producer

    def close(self) -> None:
        """Stop members (in parallel: each close may wait for a rebalance) and producers."""
        threads = [
            threading.Thread(target=m.stop, name=f"stop-{m.config.client_id}")
            for m in self._members
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60.0)
        for p in self._producers:
            p.close()
        self._members.clear()
        self._producers.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ============================================================================ reading the log


@dataclass(frozen=True, slots=True)
class ControlMarker:
    """A COMMIT/ABORT marker (or another control record) in an internal-topic partition."""

    at: Coordinates
    control_type: str
    coordinator_epoch: int


@dataclass(frozen=True, slots=True)
class InternalLog:
    """The decoded records of one internal topic, in partition then offset order."""

    topic: str
    events: tuple[Event, ...]
    markers: tuple[ControlMarker, ...]
    undecodable: tuple[tuple[Coordinates, str], ...]
    unknown: tuple[tuple[Coordinates, UnknownRecord], ...]

    def of_group(self, group_id: str) -> list[Event]:
        """Every event whose key names ``group_id`` (offset commits and group records)."""
        return [e for e in self.events if getattr(e, "group", None) == group_id]

    def of_transactional_id(self, transactional_id: str) -> list[Event]:
        return [e for e in self.events if getattr(e, "transactional_id", None) == transactional_id]

    def markers_of(self, producer_id: int) -> list[ControlMarker]:
        return [m for m in self.markers if m.at.producer_id == producer_id]


def read_internal_log(log_dir: Path | str, topic: str) -> InternalLog:
    """Decode every ``<topic>-<n>`` partition directory under a broker's ``log.dirs``.

    Safe while the broker writes: a batch torn by a concurrent append is left for the next
    read. Undecodable records are collected (with their coordinates and the error), never
    dropped silently.
    """
    root = Path(log_dir)
    prefix = f"{topic}-"
    dirs = sorted(
        (d for d in root.glob(f"{topic}-*") if d.is_dir() and d.name[len(prefix) :].isdigit()),
        key=lambda d: int(d.name[len(prefix) :]),
    )
    events: list[Event] = []
    markers: list[ControlMarker] = []
    bad: list[tuple[Coordinates, str]] = []
    unknown: list[tuple[Coordinates, UnknownRecord]] = []
    for directory in dirs:
        partition = int(directory.name[len(prefix) :])
        for batch in read_partition_dir(directory):
            for record in batch.records:
                at = Coordinates(
                    topic,
                    partition,
                    record.offset,
                    record.timestamp,
                    batch.producer_id,
                    batch.producer_epoch,
                    batch.is_transactional,
                )
                if batch.is_control:
                    markers.append(_marker(at, record.key, record.value))
                    continue
                try:
                    decoded = decode_record(topic, record.key, record.value)
                except decode_errors.DecodeError as exc:
                    bad.append((at, str(exc)))
                    continue
                if isinstance(decoded, CoordinatorRecord):
                    events.append(event_from_record(at, decoded))
                else:
                    unknown.append((at, decoded))
    return InternalLog(topic, tuple(events), tuple(markers), tuple(bad), tuple(unknown))


def _marker(at: Coordinates, key: bytes | None, value: bytes | None) -> ControlMarker:
    control = parse_control_key(key)
    if control.is_transaction_marker:
        marker = EndTxnMarker.decode(key, value)
        name = "COMMIT" if marker.control_type is ControlRecordType.COMMIT else "ABORT"
        return ControlMarker(at, name, marker.coordinator_epoch)
    name = control.type.name if control.is_known else f"UNKNOWN({control.type_id})"
    return ControlMarker(at, name, -1)


# ============================================================================ CLI (child member)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m offsetscope.verify.harness.clients member --bootstrap B --config JSON``."""
    parser = argparse.ArgumentParser(prog="python -m offsetscope.verify.harness.clients")
    sub = parser.add_subparsers(dest="command", required=True)
    member = sub.add_parser("member", help="run one isolated consumer member (JSON lines I/O)")
    member.add_argument("--bootstrap", required=True)
    member.add_argument("--config", required=True, help="MemberConfig as JSON")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    return _child_main(args.bootstrap, args.config, sys.stdin, sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
