"""Fidelity: the same scenarios on a real Kafka broker with real clients and on the simulator.

``make fidelity`` (``python -m offsetscope.verify.fidelity``) starts a fresh harness broker,
runs every scenario of :data:`SCENARIOS` twice -- once through :class:`RealDriver`
(confluent-kafka clients of :mod:`offsetscope.verify.harness.clients` against the broker, wall-clock
time) and once through :class:`SimDriver` (the simulated clients of
:mod:`offsetscope.sim.scenarios.clients` against the bundled coordinators, virtual time, the broker's
settings) -- stops the broker, decodes both logs with offsetscope and compares, per group and
per transactional id:

* the sequence of GroupMetadata records: generation, protocol type, protocol (assignor),
  number of members, which client leads, each client's assignment (members are named by client
  id, so member ids do not matter), empty-group records and deletions (tombstones);
* the sequence of transaction statuses in ``__transaction_state`` (consecutive repeats of one
  status folded: librdkafka may add partitions in more or fewer AddPartitionsToTxn requests).

Timestamps, member ids, producer ids and epochs are not compared. The real clients are
librdkafka's: for range and roundrobin the assignments are compared partition for partition;
librdkafka's sticky assignors follow Java's general sticky algorithm rather than the constrained
one Kafka 2.8+ uses (and the simulator reproduces), so for ``sticky``/``cooperative-sticky``
the comparison is by shape -- how many partitions each client holds in each generation, which
still shows the cooperative two-phase pattern (revoke first, assign in the next generation). Each scenario is a function
over a :class:`Driver`; every step waits for a condition (an assignment, a commit, a status),
never for a fixed time, so both sides go through the same states.

Output: one line per difference, then ``fidelity: N scenarios, M differ``; exit 1 unless M is 0.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from offsetscope.config import BrokerConfig
from offsetscope.sim.coordinator.assignors import TopicPartition
from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.group.config import GroupCoordinatorConfig
from offsetscope.sim.coordinator.log import LogRecord
from offsetscope.sim.coordinator.txn.config import TransactionCoordinatorConfig
from offsetscope.sim.scenarios.clients import (
    SimConsumer,
    SimProducer,
    TransactionalProducer,
    TxnProducerState,
)
from offsetscope.sim.scenarios.cluster import Cluster
from offsetscope.sim.scenarios.logdir import write_log_dir
from offsetscope.sim.scenarios.spec import ConsumerSpec, LogLayout
from offsetscope.verify.harness.clients import ConditionTimeoutError
from offsetscope.verify.simlog import DecodedLogDir, decode_log_dir

TopicPart = tuple[str, int]
WAIT_S = 60.0


class ScenarioFailedError(RuntimeError):
    """A fidelity scenario could not run as written (a request failed, a wait ran out)."""


@dataclass(frozen=True, slots=True)
class Member:
    """A consumer both drivers can start (librdkafka property names in the comments)."""

    group_id: str
    topic: str
    client_id: str
    strategy: str = "range"  # partition.assignment.strategy
    static: bool = False  # group.instance.id = client_id
    session_timeout_ms: int = 6_000
    heartbeat_interval_ms: int = 300
    max_poll_interval_ms: int = 300_000
    auto_commit: bool = False
    auto_commit_interval_ms: int = 1_000
    isolated: bool = False  # real side: a child process (needed for crash)


class Driver(Protocol):
    """What a fidelity scenario can do; both sides implement it."""

    def create_topic(self, topic: str, partitions: int) -> None: ...

    def produce(self, topic: str, count: int) -> None: ...

    def start(self, member: Member) -> None: ...

    def wait_assignment(self, client: str, count: int) -> None: ...

    def leave(self, client: str) -> None: ...

    def crash(self, client: str) -> None: ...

    def stall(self, client: str) -> None: ...

    def resume(self, client: str) -> None: ...

    def commit(self, client: str, offsets: Mapping[TopicPart, int]) -> None: ...

    def wait_consumed(self, client: str, count: int) -> None: ...

    def wait_committed(self, group: str, offsets: Mapping[TopicPart, int]) -> None: ...

    def wait_group_empty(self, group: str) -> None: ...

    def delete_group(self, group: str) -> None: ...

    def wait_group_deleted(self, group: str) -> None:
        """Until the group's tombstone is written (DeleteGroups, or the expiry job removing an
        Empty group without offsets at its next run)."""
        ...

    def txn_init(self, name: str, transactional_id: str, timeout_ms: int = 60_000) -> None: ...

    def txn_begin(self, name: str) -> None: ...

    def txn_send(self, name: str, topic: str, partition: int) -> None: ...

    def txn_send_offsets(self, name: str, offsets: Mapping[TopicPart, int], client: str) -> None:
        """sendOffsetsToTransaction with ``client``'s consumer group metadata."""
        ...

    def txn_end(self, name: str, commit: bool) -> bool:
        """commitTransaction/abortTransaction; False when the producer was fenced."""
        ...

    def txn_leave_open(self, name: str) -> None: ...

    def wait_txn_status(self, transactional_id: str, status: str) -> None: ...


Scenario = Callable[[Driver, str], tuple[list[str], list[str]]]


# ----------------------------------------------------------------------------- scenarios


def _join_leave(strategy: str) -> Scenario:
    def scenario(d: Driver, tag: str) -> tuple[list[str], list[str]]:
        topic, group = f"fid-{strategy}-{tag}", f"fid-{strategy}-{tag}"
        d.create_topic(topic, 6)
        d.start(Member(group, topic, "a", strategy=strategy))
        d.wait_assignment("a", 6)
        d.start(Member(group, topic, "b", strategy=strategy))
        d.wait_assignment("b", 3)
        d.wait_assignment("a", 3)
        d.leave("b")
        d.wait_assignment("a", 6)
        d.leave("a")
        d.wait_group_empty(group)
        d.wait_group_deleted(group)  # no offsets: the expiry job removes the empty group
        return [group], []

    scenario.__name__ = f"join_leave_{strategy.replace('-', '_')}"
    return scenario


def crash(d: Driver, tag: str) -> tuple[list[str], list[str]]:
    """A member killed without leaving: the broker expires it after its session timeout."""
    topic, group = f"fid-crash-{tag}", f"fid-crash-{tag}"
    d.create_topic(topic, 4)
    d.start(Member(group, topic, "survivor", session_timeout_ms=3_000))
    d.wait_assignment("survivor", 4)
    d.start(Member(group, topic, "victim", session_timeout_ms=3_000, isolated=True))
    d.wait_assignment("victim", 2)
    d.wait_assignment("survivor", 2)
    d.crash("victim")
    d.wait_assignment("survivor", 4)
    d.leave("survivor")
    d.wait_group_empty(group)
    d.wait_group_deleted(group)
    return [group], []


def max_poll_interval(d: Driver, tag: str) -> tuple[list[str], list[str]]:
    """A member that stops polling leaves on max.poll.interval.ms and rejoins on resume."""
    topic, group = f"fid-maxpoll-{tag}", f"fid-maxpoll-{tag}"
    d.create_topic(topic, 4)
    d.start(Member(group, topic, "steady", session_timeout_ms=3_000))
    d.wait_assignment("steady", 4)
    d.start(Member(group, topic, "slow", session_timeout_ms=3_000, max_poll_interval_ms=4_000))
    d.wait_assignment("slow", 2)
    d.wait_assignment("steady", 2)
    d.stall("slow")
    d.wait_assignment("steady", 4)
    d.resume("slow")
    d.wait_assignment("slow", 2)
    d.wait_assignment("steady", 2)
    d.leave("slow")
    d.wait_assignment("steady", 4)
    d.leave("steady")
    d.wait_group_empty(group)
    d.wait_group_deleted(group)
    return [group], []


def static_restart(d: Driver, tag: str) -> tuple[list[str], list[str]]:
    """A static member restarts within its session timeout: same generation, new member id."""
    topic, group = f"fid-static-{tag}", f"fid-static-{tag}"
    d.create_topic(topic, 4)
    member = Member(group, topic, "s1", static=True, session_timeout_ms=20_000)
    d.start(member)
    d.wait_assignment("s1", 4)
    d.start(dataclasses.replace(member, client_id="s2"))
    d.wait_assignment("s2", 2)
    d.wait_assignment("s1", 2)
    d.leave("s2")
    d.start(dataclasses.replace(member, client_id="s2"))
    d.wait_assignment("s2", 2)
    return [group], []


def commits_and_deletion(d: Driver, tag: str) -> tuple[list[str], list[str]]:
    """Explicit commits, then the emptied group is deleted (offset tombstones, group tombstone)."""
    topic, group = f"fid-delete-{tag}", f"fid-delete-{tag}"
    d.create_topic(topic, 3)
    d.produce(topic, 30)
    d.start(Member(group, topic, "committer"))
    d.wait_assignment("committer", 3)
    offsets = {(topic, p): 5 + p for p in range(3)}
    d.commit("committer", offsets)
    d.wait_committed(group, offsets)
    d.leave("committer")
    d.wait_group_empty(group)
    d.delete_group(group)
    d.wait_group_deleted(group)
    return [group], []


def transactions(d: Driver, tag: str) -> tuple[list[str], list[str]]:
    """Commits and aborts with offsets, a transaction timed out, a zombie fenced."""
    data, out, group = f"fid-txn-in-{tag}", f"fid-txn-out-{tag}", f"fid-txn-{tag}"
    d.create_topic(data, 2)
    d.create_topic(out, 2)
    d.produce(data, 20)
    d.start(Member(group, data, "reader"))
    d.wait_assignment("reader", 2)
    d.wait_consumed("reader", 20)
    main, timeout, zombie = f"fid-main-{tag}", f"fid-timeout-{tag}", f"fid-zombie-{tag}"
    d.txn_init("main", main)
    for i in range(4):
        d.txn_begin("main")
        d.txn_send("main", out, i % 2)
        d.txn_send_offsets("main", {(data, p): 3 + i for p in range(2)}, "reader")
        d.txn_end("main", commit=i % 2 == 0)
    d.wait_txn_status(main, "CompleteAbort")  # the fourth one aborted
    d.txn_init("hanging", timeout, timeout_ms=2_000)
    d.txn_begin("hanging")
    d.txn_send("hanging", out, 0)
    d.txn_leave_open("hanging")
    d.wait_txn_status(timeout, "CompleteAbort")
    d.txn_init("zombie", zombie)
    d.txn_begin("zombie")
    d.txn_send("zombie", out, 1)
    d.txn_leave_open("zombie")
    d.txn_init("successor", zombie)
    if d.txn_end("zombie", commit=True):
        raise ScenarioFailedError("the zombie producer was not fenced")
    d.txn_begin("successor")
    d.txn_send("successor", out, 1)
    d.txn_end("successor", commit=True)
    d.wait_txn_status(zombie, "CompleteCommit")
    d.leave("reader")
    d.wait_group_empty(group)
    return [group], [main, timeout, zombie]


SCENARIOS: dict[str, Scenario] = {
    "join-leave-range": _join_leave("range"),
    "join-leave-roundrobin": _join_leave("roundrobin"),
    "join-leave-cooperative-sticky": _join_leave("cooperative-sticky"),
    "crash": crash,
    "max-poll-interval": max_poll_interval,
    "static-restart": static_restart,
    "commits-and-deletion": commits_and_deletion,
    "transactions": transactions,
}


# ----------------------------------------------------------------------------- facts


# librdkafka's sticky assignors port Java's *general* sticky algorithm; Kafka 2.8+ (and so the
# simulator, equal to Kafka 4.4's assignors) takes the constrained path when every member
# subscribes to the same topics, which may keep a different subset of a member's partitions.
# For these protocols the comparison is by shape: how many partitions each client holds.
SHAPE_ONLY_PROTOCOLS = frozenset({"sticky", "cooperative-sticky"})


def group_facts(decoded: DecodedLogDir, group: str) -> list[tuple[Any, ...]]:
    """The comparable sequence of a group's GroupMetadata records (see the module docstring)."""
    facts: list[tuple[Any, ...]] = []
    for record in decoded.group_metadata.get(group, []):
        if not record.members:
            facts.append(("empty", record.generation, record.protocol_type))
            continue
        clients = record.client_ids
        held: list[tuple[str, Any]] = []
        for m in record.members:
            parts = tuple(sorted(record.assignments.get(m, ())))
            held.append(
                (clients[m], len(parts) if record.protocol in SHAPE_ONLY_PROTOCOLS else parts)
            )
        assignment = tuple(sorted(held))
        facts.append(
            (
                "generation",
                record.generation,
                record.protocol_type,
                record.protocol,
                len(record.members),
                clients.get(record.leader or ""),
                assignment,
            )
        )
    facts.extend(("deleted",) for _ in decoded.group_tombstones.get(group, []))
    return facts


def transaction_facts(decoded: DecodedLogDir, transactional_id: str) -> list[str]:
    """The transaction's status sequence, consecutive repeats folded."""
    out: list[str] = []
    for status, _, _ in decoded.txn_states.get(transactional_id, []):
        if not out or out[-1] != status:
            out.append(status)
    return out


def compare(
    real: DecodedLogDir,
    sim: DecodedLogDir,
    real_names: tuple[list[str], list[str]],
    sim_names: tuple[list[str], list[str]],
) -> list[str]:
    """Differences between the two runs of one scenario, one line each."""
    problems = []
    for real_group, sim_group in zip(real_names[0], sim_names[0], strict=True):
        theirs, ours = group_facts(real, real_group), group_facts(sim, sim_group)
        if theirs != ours:
            problems.append(f"group {sim_group}: broker {theirs} != simulator {ours}")
    for real_txn, sim_txn in zip(real_names[1], sim_names[1], strict=True):
        theirs_t, ours_t = transaction_facts(real, real_txn), transaction_facts(sim, sim_txn)
        if theirs_t != ours_t:
            problems.append(f"transaction {sim_txn}: broker {theirs_t} != simulator {ours_t}")
    return problems


# ----------------------------------------------------------------------------- simulator


class SimTimeoutError(ScenarioFailedError, TimeoutError):
    """A simulated wait did not see its condition within the (virtual) deadline."""


class SimDriver:
    """The scenario on the bundled coordinators, with the broker's settings."""

    STEP_MS = 50

    def __init__(self, broker: BrokerConfig, *, seed: int = 0) -> None:
        self.cluster = Cluster(
            seed=seed,
            start_ms=1_700_000_000_000,
            topics={},
            group_config=sim_group_config(broker),
            txn_config=sim_txn_config(broker),
        )
        self.consumers: dict[str, SimConsumer] = {}
        self.producers: dict[str, TransactionalProducer] = {}
        self._writer: SimProducer | None = None

    def _until(self, predicate: Callable[[], bool], what: str) -> None:
        deadline = self.cluster.now + int(WAIT_S * 1000)
        while not predicate():
            if self.cluster.now >= deadline:
                raise SimTimeoutError(f"simulator: timed out waiting for {what}")
            self.cluster.run_until(self.cluster.now + self.STEP_MS)

    def create_topic(self, topic: str, partitions: int) -> None:
        self.cluster.logs.create_topic(topic, partitions)
        self.cluster.topics[topic] = partitions

    def produce(self, topic: str, count: int) -> None:
        if self._writer is None:
            self._writer = SimProducer(self.cluster, "fidelity-producer")
        n = self.cluster.partitions(topic)
        now = self.cluster.now
        for p in range(n):
            records = [LogRecord(None, b"record-%d" % i, now) for i in range(p, count, n)]
            if records and self._writer.send(topic, p, records) is not Errors.NONE:
                raise ScenarioFailedError(f"simulated produce to {topic}-{p} failed")

    def start(self, member: Member) -> None:
        spec = ConsumerSpec(
            assignors=(member.strategy,),
            session_timeout_ms=member.session_timeout_ms,
            heartbeat_interval_ms=member.heartbeat_interval_ms,
            max_poll_interval_ms=member.max_poll_interval_ms,
            commit="auto" if member.auto_commit else "none",
            auto_commit_interval_ms=member.auto_commit_interval_ms,
            isolation_level="read_committed",
            static=member.static,
        )
        consumer = SimConsumer(
            self.cluster,
            group_id=member.group_id,
            client_id=member.client_id,
            topics=(member.topic,),
            spec=spec,
        )
        self.consumers[member.client_id] = consumer
        consumer.start()

    def wait_assignment(self, client: str, count: int) -> None:
        consumer = self.consumers[client]
        self._until(
            lambda: (
                consumer._running()
                and consumer.state.value == "STABLE"
                and consumer._completed is None
                and not consumer.rejoin_needed
                and len(consumer.assigned) == count
            ),
            f"{client} to hold {count} partitions",
        )

    def leave(self, client: str) -> None:
        self.consumers[client].close()

    def crash(self, client: str) -> None:
        self.consumers[client].crash()

    def stall(self, client: str) -> None:
        self.consumers[client].pause(10**12)

    def resume(self, client: str) -> None:
        self.consumers[client].resume()

    def commit(self, client: str, offsets: Mapping[TopicPart, int]) -> None:
        error = self.consumers[client].commit(
            "sync", {TopicPartition(t, p): o for (t, p), o in offsets.items()}
        )
        if error is not Errors.NONE:
            raise ScenarioFailedError(f"simulated commit failed: {error}")

    def wait_consumed(self, client: str, count: int) -> None:
        consumer = self.consumers[client]
        self._until(lambda: consumer.records_consumed >= count, f"{client} to consume {count}")

    def wait_committed(self, group: str, offsets: Mapping[TopicPart, int]) -> None:
        store = self.cluster.groups.shard_for(group).offsets

        def done() -> bool:
            for (t, p), o in offsets.items():
                got = store.offset(group, t, p)
                if got is None or got.committed_offset != o:
                    return False
            return True

        self._until(done, f"{group}'s commits")

    def wait_group_empty(self, group: str) -> None:
        groups = self.cluster.groups
        self._until(
            lambda: groups.describe_groups([group])[0].group_state == "Empty", f"{group} empty"
        )

    def delete_group(self, group: str) -> None:
        response = self.cluster.groups.delete_groups([group])
        if response.errors()[group] is not Errors.NONE:
            raise ScenarioFailedError(f"simulated DeleteGroups failed: {response}")

    def wait_group_deleted(self, group: str) -> None:
        shard = self.cluster.groups.shard_for(group)
        self._until(lambda: group not in shard.groups, f"{group} deleted")

    def txn_init(self, name: str, transactional_id: str, timeout_ms: int = 60_000) -> None:
        producer = TransactionalProducer(
            self.cluster, transactional_id, transaction_timeout_ms=timeout_ms
        )
        self.producers[name] = producer
        outcome: list[Errors] = []
        producer.init_transactions(outcome.append)
        self._until(lambda: bool(outcome), f"{name} initTransactions")
        if outcome[0] is not Errors.NONE:
            raise ScenarioFailedError(f"simulated initTransactions failed: {outcome[0]}")

    def txn_begin(self, name: str) -> None:
        self.producers[name].begin()

    def txn_send(self, name: str, topic: str, partition: int) -> None:
        now = self.cluster.now
        error = self.producers[name].send(topic, partition, [LogRecord(None, b"txn", now)])
        if error is not Errors.NONE:
            raise ScenarioFailedError(f"simulated transactional send failed: {error}")

    def txn_send_offsets(self, name: str, offsets: Mapping[TopicPart, int], client: str) -> None:
        producer, consumer = self.producers[name], self.consumers[client]
        error = producer.add_offsets(consumer.group_id)
        if error is Errors.NONE:
            error = producer.commit_offsets(
                {TopicPartition(t, p): o for (t, p), o in offsets.items()},
                group_id=consumer.group_id,
                generation_id=consumer.generation.generation_id,
                member_id=consumer.generation.member_id,
                group_instance_id=consumer.instance_id,
            )
        if error is not Errors.NONE:
            raise ScenarioFailedError(f"simulated sendOffsetsToTransaction failed: {error}")

    def txn_end(self, name: str, commit: bool) -> bool:
        producer = self.producers[name]
        error = producer.end(commit)
        return error is Errors.NONE and producer.state is not TxnProducerState.FATAL_ERROR

    def txn_leave_open(self, name: str) -> None:
        return None

    def wait_txn_status(self, transactional_id: str, status: str) -> None:
        coordinator = self.cluster.txns.coordinator

        def reached() -> bool:
            meta = coordinator.metadata(transactional_id)
            return meta is not None and meta.state.name == status

        self._until(reached, f"{transactional_id} {status}")

    def finish(self, root: Path) -> DecodedLogDir:
        """Stop every client, write the log directory and decode it."""
        for consumer in self.consumers.values():
            consumer.crash()
        write_log_dir(self.cluster.logs, root, LogLayout(), seed=0)
        return decode_log_dir(root, internal_only=True)


def sim_group_config(broker: BrokerConfig) -> GroupCoordinatorConfig:
    """The bundled group coordinator configured as the harness broker is."""
    return GroupCoordinatorConfig(
        offsets_topic_partitions=broker.offsets_partitions,
        initial_rebalance_delay_ms=broker.group_initial_rebalance_delay_ms,
        min_session_timeout_ms=broker.group_min_session_timeout_ms,
        max_session_timeout_ms=broker.group_max_session_timeout_ms,
        offsets_retention_ms=broker.offsets_retention_minutes * 60_000,
        offsets_retention_check_interval_ms=broker.offsets_retention_check_interval_ms,
    )


def sim_txn_config(broker: BrokerConfig) -> TransactionCoordinatorConfig:
    """The bundled transaction coordinator configured as the harness broker is."""
    return TransactionCoordinatorConfig(
        transaction_state_partitions=broker.transaction_partitions,
        offsets_topic_partitions=broker.offsets_partitions,
        abort_timed_out_transaction_cleanup_interval_ms=broker.transaction_abort_timed_out_interval_ms,
        remove_expired_transactional_id_cleanup_interval_ms=broker.transaction_remove_expired_interval_ms,
        transactional_id_expiration_ms=broker.transactional_id_expiration_ms,
        transaction_max_timeout_ms=broker.transaction_max_timeout_ms,
    )


# ----------------------------------------------------------------------------- real broker


class RealDriver:
    """The scenario with confluent-kafka clients on a running broker."""

    def __init__(self, bootstrap: str, log_dir: Path) -> None:
        from offsetscope.verify.harness import clients as hc

        self.hc = hc
        self.bootstrap = bootstrap
        self.log_dir = log_dir
        self.pool = hc.ClientPool(bootstrap)
        self.members: dict[str, Any] = {}
        self.producers: dict[str, Any] = {}
        self._writer: Any = None
        self._partitions: dict[str, int] = {}

    def close(self) -> None:
        self.pool.close()

    def create_topic(self, topic: str, partitions: int) -> None:
        self.hc.create_topic(self.bootstrap, topic, partitions)
        self._partitions[topic] = partitions

    def produce(self, topic: str, count: int) -> None:
        if self._writer is None:
            self._writer = self.pool.idempotent_producer(client_id="fidelity-producer")
        n = self._partitions[topic]
        for i in range(count):
            self._writer.send(topic, b"record-%d" % i, partition=i % n)
        self._writer.flush()

    def start(self, member: Member) -> None:
        config = self.hc.MemberConfig(
            member.group_id,
            (member.topic,),
            strategy=member.strategy,
            instance_id=member.client_id if member.static else None,
            client_id=member.client_id,
            session_timeout_ms=member.session_timeout_ms,
            heartbeat_interval_ms=member.heartbeat_interval_ms,
            max_poll_interval_ms=member.max_poll_interval_ms,
            auto_commit=member.auto_commit,
            auto_commit_interval_ms=member.auto_commit_interval_ms,
        )
        self.members[member.client_id] = self.pool.member(config, isolated=member.isolated)

    def wait_assignment(self, client: str, count: int) -> None:
        self.members[client].wait_for(
            lambda v: len(v.assignment) == count, WAIT_S, f"{count} partitions"
        )

    def leave(self, client: str) -> None:
        self.members[client].leave()

    def crash(self, client: str) -> None:
        self.members[client].crash()

    def stall(self, client: str) -> None:
        self.members[client].stall()

    def resume(self, client: str) -> None:
        self.members[client].resume()

    def commit(self, client: str, offsets: Mapping[TopicPart, int]) -> None:
        result = self.members[client].commit(dict(offsets))
        if not result.ok:
            raise ScenarioFailedError(f"commit failed: {result}")

    def wait_consumed(self, client: str, count: int) -> None:
        self.members[client].wait_consumed(count, WAIT_S)

    def wait_committed(self, group: str, offsets: Mapping[TopicPart, int]) -> None:
        want = dict(offsets)

        def committed() -> bool:
            got = self.hc.committed_offsets(self.bootstrap, group)
            return {k: v for k, v in got.items() if k in want} == want

        self.hc.wait_until(committed, WAIT_S, f"{group}'s commits")

    def wait_group_empty(self, group: str) -> None:
        def empty() -> bool:
            decoded = decode_log_dir(self.log_dir, internal_only=True)
            records = decoded.group_metadata.get(group, [])
            return bool(records) and not records[-1].members

        self.hc.wait_until(empty, WAIT_S, f"{group} empty")

    def delete_group(self, group: str) -> None:
        self.hc.delete_group(self.bootstrap, group)

    def wait_group_deleted(self, group: str) -> None:
        def deleted() -> bool:
            decoded = decode_log_dir(self.log_dir, internal_only=True)
            return bool(decoded.group_tombstones.get(group))

        self.hc.wait_until(deleted, WAIT_S, f"{group} deleted")

    def txn_init(self, name: str, transactional_id: str, timeout_ms: int = 60_000) -> None:
        producer = self.pool.transactional_producer(
            transactional_id, transaction_timeout_ms=timeout_ms, client_id=name
        )
        producer.init()
        self.producers[name] = producer

    def txn_begin(self, name: str) -> None:
        self.producers[name].begin()

    def txn_send(self, name: str, topic: str, partition: int) -> None:
        self.producers[name].send(topic, b"txn", partition=partition)
        self.producers[name].flush()

    def txn_send_offsets(self, name: str, offsets: Mapping[TopicPart, int], client: str) -> None:
        metadata = self.members[client].group_metadata()
        self.producers[name].send_offsets(dict(offsets), metadata)

    def txn_end(self, name: str, commit: bool) -> bool:
        from confluent_kafka import KafkaException

        producer = self.producers[name]
        try:
            if commit:
                producer.commit()
            else:
                producer.abort()
        except KafkaException:
            return False
        return True

    def txn_leave_open(self, name: str) -> None:
        self.producers[name].leave_open()

    def wait_txn_status(self, transactional_id: str, status: str) -> None:
        def reached() -> bool:
            decoded = decode_log_dir(self.log_dir, internal_only=True)
            states = decoded.txn_states.get(transactional_id, [])
            return bool(states) and states[-1][0] == status

        self.hc.wait_until(reached, WAIT_S, f"{transactional_id} {status}")


# ----------------------------------------------------------------------------- runner


@dataclass(slots=True)
class FidelityReport:
    scenarios: int = 0
    differing: list[str] = dataclasses.field(default_factory=list)
    lines: list[str] = dataclasses.field(default_factory=list)


def run(
    names: Sequence[str], broker: BrokerConfig, *, say: Callable[[str], None] = print
) -> FidelityReport:
    """Run ``names`` on a fresh broker and on the simulator; compare."""
    from offsetscope.verify.harness.broker import Broker

    report = FidelityReport()
    tag = uuid.uuid4().hex[:6]
    cfg = dataclasses.replace(broker, name="fidelity")
    handle = Broker(cfg).start(fresh=True, tie_to_parent=True)
    say(f"fidelity: broker {handle.bootstrap}")
    real_names: dict[str, tuple[list[str], list[str]]] = {}
    failed: dict[str, str] = {}
    try:
        real = RealDriver(handle.bootstrap, handle.log_dir)
        try:
            for name in names:
                began = time.monotonic()
                try:
                    real_names[name] = SCENARIOS[name](real, tag)
                except (ScenarioFailedError, ConditionTimeoutError) as exc:
                    failed[name] = f"broker run failed: {exc}"
                say(f"fidelity: {name} on the broker in {time.monotonic() - began:.1f} s")
        finally:
            real.close()
    finally:
        handle.stop()
    real_decoded = decode_log_dir(handle.log_dir, internal_only=True)
    with tempfile.TemporaryDirectory(prefix="fidelity-") as tmp:
        for i, name in enumerate(names):
            report.scenarios += 1
            sim = SimDriver(broker, seed=i)
            try:
                sim_names = SCENARIOS[name](sim, tag)
            except (ScenarioFailedError, ConditionTimeoutError) as exc:
                failed.setdefault(name, f"simulator run failed: {exc}")
                sim_names = ([], [])
            decoded = sim.finish(Path(tmp) / name)
            if name in failed:
                problems = [failed[name]]
            else:
                problems = compare(real_decoded, decoded, real_names[name], sim_names)
            if problems:
                report.differing.append(name)
                report.lines.extend(f"{name}: {p}" for p in problems)
    shutil.rmtree(handle.root, ignore_errors=True)
    return report


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m offsetscope.verify.fidelity``; exit 0 only if no scenario differs."""
    from offsetscope import config as config_mod

    parser = argparse.ArgumentParser(prog="python -m offsetscope.verify.fidelity")
    parser.add_argument("--env", default="local")
    parser.add_argument("scenarios", nargs="*", help=f"default: all of {', '.join(SCENARIOS)}")
    args = parser.parse_args(argv)
    names = args.scenarios or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        print(f"error: unknown fidelity scenario {unknown[0]!r}", file=sys.stderr)
        return 2
    cfg = config_mod.load(args.env)
    report = run(names, cfg.broker, say=lambda m: print(m, flush=True))
    for line in report.lines:
        print(line)
    print(f"fidelity: {report.scenarios} scenarios, {len(report.differing)} differ")
    return 0 if not report.differing else 1


if __name__ == "__main__":
    sys.exit(main())
