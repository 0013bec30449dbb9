"""Real librdkafka clients on the real Kafka 4.4 broker, and what the coordinators then wrote.

Every scenario drives the session broker with :mod:`offsetscope.verify.harness.clients` and then reads
``__consumer_offsets`` / ``__transaction_state`` straight from the broker's segment files with
offsetscope's own reader and decoder (:func:`read_internal_log`), asserting on generations,
leaders, members, subscriptions and assignments (against what the clients' rebalance callbacks
saw), commit values, transaction markers and transaction state sequences
(``docs/formats.md`` section 8). Names are unique per test; waiting is by condition with a
deadline; the pool fixture stops every client a test started.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator, Sequence

import pytest
from confluent_kafka import KafkaError, KafkaException

from offsetscope.history.events import (
    GroupMetadataEvent,
    MemberSnapshot,
    OffsetCommitEvent,
    TransactionLogEvent,
)
from offsetscope.protocol import partition_for
from offsetscope.protocol.log import read_partition_dir
from offsetscope.protocol.states import TransactionState
from offsetscope.sim.coordinator.assignors import ClusterMetadata, Subscription, assignor_by_name
from offsetscope.verify.harness.broker import BrokerHandle
from offsetscope.verify.harness.clients import (
    ClientPool,
    ConsumerMember,
    InternalLog,
    MemberConfig,
    TopicPart,
    committed_offsets,
    create_topic,
    delete_group,
    list_offsets,
    read_internal_log,
    wait_until,
)

pytestmark = pytest.mark.kafka

OFFSETS = "__consumer_offsets"
TXN = "__transaction_state"
WAIT_S = 60.0
# Short enough to keep the file fast, long enough for a loaded 2-core machine.
SESSION_MS = 2_000
HEARTBEAT_MS = 300


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def pool(kafka_broker: BrokerHandle) -> Iterator[ClientPool]:
    with ClientPool(kafka_broker.bootstrap) as clients:
        yield clients


def _offsets_log(broker: BrokerHandle) -> InternalLog:
    return read_internal_log(broker.log_dir, OFFSETS)


def _txn_log(broker: BrokerHandle) -> InternalLog:
    return read_internal_log(broker.log_dir, TXN)


def _group_records(broker: BrokerHandle, group: str) -> list[GroupMetadataEvent]:
    return [e for e in _offsets_log(broker).of_group(group) if isinstance(e, GroupMetadataEvent)]


def _wait_group_record(
    broker: BrokerHandle, group: str, what: str, predicate: Callable[[GroupMetadataEvent], bool]
) -> list[GroupMetadataEvent]:
    """Until some GroupMetadata record of ``group`` satisfies ``predicate``; all of them."""

    def ready() -> list[GroupMetadataEvent] | None:
        records = _group_records(broker, group)
        return records if any(predicate(r) for r in records) else None

    return wait_until(
        ready,
        WAIT_S,
        f"{group}: {what}",
        describe=lambda: "\n".join(_describe(r) for r in _group_records(broker, group)),
    )


def _describe(record: GroupMetadataEvent) -> str:
    members = [(m.member_id, m.group_instance_id, m.assigned) for m in record.members]
    return f"offset {record.at.offset} gen {record.generation} leader {record.leader} {members}"


def _members(record: GroupMetadataEvent) -> dict[str, MemberSnapshot]:
    return {m.member_id: m for m in record.members}


def _of_generation(records: Sequence[GroupMetadataEvent], generation: int) -> GroupMetadataEvent:
    [record] = [r for r in records if not r.tombstone and r.generation == generation]
    return record


def _client_assignment(member: ConsumerMember, generation: int) -> frozenset[TopicPart]:
    """What the member held in ``generation``: its assignment after that generation's last
    assigned callback (an eager member's revocation comes at the start of the next rebalance,
    still under the old generation)."""
    events = [e for e in member.events if e.generation == generation and e.kind == "assigned"]
    assert events, f"{member!r} saw no rebalance callback in generation {generation}"
    return frozenset(events[-1].assignment)


def _wait_generation(members: Sequence[ConsumerMember], generation: int) -> None:
    for m in members:
        m.wait_for(
            lambda v: (
                v.generation == generation and any(e.generation == generation for e in v.events)
            ),
            WAIT_S,
            f"generation {generation}",
        )


def _produce(pool: ClientPool, topic: str, partitions: int, per_partition: int) -> None:
    producer = pool.idempotent_producer()
    for p in range(partitions):
        for i in range(per_partition):
            producer.send(topic, f"v{i}".encode(), partition=p)
    producer.flush()


# ============================================================================ group membership


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
def test_eager_members_join_and_leave(
    kafka_broker: BrokerHandle, pool: ClientPool, strategy: str
) -> None:
    topics = (_unique("join-a"), _unique("join-b"))
    for t in topics:
        create_topic(kafka_broker.bootstrap, t, 3)
    group = _unique(f"eager-{strategy}")

    def config(client: str) -> MemberConfig:
        return MemberConfig(
            group, topics, strategy=strategy, client_id=client, heartbeat_interval_ms=HEARTBEAT_MS
        )

    a = pool.member(config("a"))
    _wait_generation([a], 1)
    b = pool.member(config("b"))
    _wait_generation([a, b], 2)
    b.leave()
    _wait_generation([a], 3)
    a.leave()
    # The group ends Empty without a committed offset: the next offset-expiry run
    # (offsets.retention.check.interval.ms, 1 s here) deletes it with a tombstone.
    records = _wait_group_record(
        kafka_broker, group, "the group's tombstone", lambda r: r.tombstone
    )
    assert [r.tombstone for r in records] == [False] * (len(records) - 1) + [True]
    records = records[:-1]

    # A brand-new group is persisted first with generation 0 and no protocol type (4.x).
    first = records[0]
    assert (first.generation, first.protocol_type, first.protocol, first.members) == (
        0,
        "",
        None,
        (),
    )
    assert [r.generation for r in records] == [0, 1, 2, 3, 4]

    everything = frozenset((t, p) for t in topics for p in range(3))
    gen1, gen2, gen3 = (_of_generation(records, g) for g in (1, 2, 3))
    assert a.member_id is not None
    for record in (gen1, gen2, gen3):
        assert (record.protocol_type, record.protocol) == ("consumer", strategy)
        # The first member stays leader while it stays in the group.
        assert record.leader == a.events[0].member_id
    assert set(_members(gen1)) == {a.events[0].member_id}
    b_id = b.events[0].member_id
    assert set(_members(gen2)) == {a.events[0].member_id, b_id}
    assert set(_members(gen3)) == {a.events[0].member_id}

    # What the leader (librdkafka) assigned, as persisted, is what each client's callbacks saw,
    # and it covers every partition exactly once.
    for record, gen_members in ((gen1, [a]), (gen2, [a, b]), (gen3, [a])):
        persisted = _members(record)
        seen = {
            m.events[0].member_id: _client_assignment(m, record.generation) for m in gen_members
        }
        assert {mid: frozenset(persisted[mid].assigned or ()) for mid in seen} == seen
        assert frozenset().union(*seen.values()) == everything
        assert sum(len(s) for s in seen.values()) == len(everything)

    # Subscriptions and member fields carry the clients' configuration.
    for snap in gen2.members:
        assert snap.subscribed_topics is not None
        assert sorted(snap.subscribed_topics) == sorted(topics)
        assert snap.session_timeout == 6_000
        assert snap.rebalance_timeout == 300_000
        assert snap.group_instance_id is None
        assert snap.client_host == "/127.0.0.1"
    assert {m.client_id for m in gen2.members} == {"a", "b"}

    # librdkafka's assignment equals offsetscope's assignor (Kafka's algorithm) on the same input.
    assignor = assignor_by_name(strategy)
    subs = {m.member_id: Subscription(tuple(m.subscribed_topics or ()), None) for m in gen2.members}
    ours = assignor.assign(ClusterMetadata(dict.fromkeys(topics, 3)), subs)
    assert {
        mid: frozenset((tp.topic, tp.partition) for tp in asg.partitions)
        for mid, asg in ours.items()
    } == {m.member_id: frozenset(m.assigned or ()) for m in gen2.members}

    # Everyone left: the join phase ends with no member -> generation + 1, protocol cleared.
    last = records[-1]
    assert (last.generation, last.protocol_type, last.protocol, last.leader, last.members) == (
        4,
        "consumer",
        None,
        None,
        (),
    )
    assert last.current_state_timestamp <= last.at.timestamp


def test_cooperative_sticky_moves_partitions_in_two_generations(
    kafka_broker: BrokerHandle, pool: ClientPool
) -> None:
    topic = _unique("coop")
    create_topic(kafka_broker.bootstrap, topic, 4)
    group = _unique("coop")

    def config(client: str) -> MemberConfig:
        return MemberConfig(
            group,
            (topic,),
            strategy="cooperative-sticky",
            client_id=client,
            heartbeat_interval_ms=HEARTBEAT_MS,
        )

    a = pool.member(config("a"))
    _wait_generation([a], 1)
    b = pool.member(config("b"))
    b.wait_for(lambda v: len(v.assignment) == 2, WAIT_S, "two partitions")
    a.wait_for(lambda v: len(v.assignment) == 2, WAIT_S, "two partitions")
    b.leave()
    a.wait_for(lambda v: len(v.assignment) == 4, WAIT_S, "all partitions back")
    records = _wait_group_record(
        kafka_broker,
        group,
        "a alone with 4 partitions",
        lambda r: r.generation >= 4 and len(r.members) == 1,
    )
    a_id, b_id = a.events[0].member_id, b.events[0].member_id
    everything = frozenset((topic, p) for p in range(4))

    gen1, gen2, gen3, gen4 = (_of_generation(records, g) for g in (1, 2, 3, 4))
    assert gen1.protocol == "cooperative-sticky"
    assert frozenset(_members(gen1)[a_id].assigned or ()) == everything
    # Generation 2: a gives up half of its partitions; b joins with nothing (KIP-429 first round).
    kept = frozenset(_members(gen2)[a_id].assigned or ())
    assert len(kept) == 2
    assert _members(gen2)[b_id].assigned == ()
    # a announced what it owned in its subscription (ownedPartitions) and its generation.
    assert frozenset(_members(gen2)[a_id].owned_partitions or ()) == everything
    # Generation 3: the revoked partitions go to b; a keeps its own (sticky).
    moved = frozenset(_members(gen3)[b_id].assigned or ())
    assert moved == everything - kept
    assert frozenset(_members(gen3)[a_id].assigned or ()) == kept
    assert frozenset(_members(gen4)[a_id].assigned or ()) == everything

    # The clients saw exactly that: a's only revocation was of the moved partitions.
    revoked = [e for e in a.events if e.kind == "revoked"]
    assert [frozenset(e.partitions) for e in revoked] == [moved]
    assert revoked[0].generation == 2
    for member, gen in ((a, 2), (b, 2), (a, 3), (b, 3), (a, 4)):
        record = _of_generation(records, gen)
        assert _client_assignment(member, gen) == frozenset(
            _members(record)[member.events[0].member_id].assigned or ()
        )


def test_killed_member_is_removed_after_session_timeout(
    kafka_broker: BrokerHandle, pool: ClientPool
) -> None:
    topic = _unique("crash")
    create_topic(kafka_broker.bootstrap, topic, 2)
    group = _unique("crash")
    config = MemberConfig(
        group, (topic,), session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS
    )
    survivor = pool.member(config)
    _wait_generation([survivor], 1)
    victim = pool.member(config, isolated=True)
    _wait_generation([survivor, victim], 2)
    victim_id = victim.member_id
    killed_at = victim.clock.now_ms()
    victim.crash()
    _wait_generation([survivor], 3)

    records = _wait_group_record(kafka_broker, group, "generation 3", lambda r: r.generation == 3)
    gen2, gen3 = _of_generation(records, 2), _of_generation(records, 3)
    assert victim_id in _members(gen2)
    assert set(_members(gen3)) == {survivor.member_id}
    assert frozenset(_members(gen3)[str(survivor.member_id)].assigned or ()) == {
        (topic, 0),
        (topic, 1),
    }
    # No LeaveGroup: the broker waited for the session to expire (the last heartbeat was at
    # most one heartbeat interval before the kill) before it rebalanced.
    assert gen3.current_state_timestamp - killed_at >= SESSION_MS - HEARTBEAT_MS - 100
    # The victim wrote nothing after its death: no generation-2 record names a later member.
    assert victim.view().closed


def test_member_exceeding_max_poll_interval_leaves_and_rejoins(
    kafka_broker: BrokerHandle, pool: ClientPool
) -> None:
    topic = _unique("maxpoll")
    create_topic(kafka_broker.bootstrap, topic, 2)
    group = _unique("maxpoll")
    max_poll_ms = 3_000
    steady = pool.member(
        MemberConfig(
            group,
            (topic,),
            client_id="steady",
            session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=HEARTBEAT_MS,
        )
    )
    _wait_generation([steady], 1)
    slow = pool.member(
        MemberConfig(
            group,
            (topic,),
            client_id="slow",
            session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=HEARTBEAT_MS,
            max_poll_interval_ms=max_poll_ms,
        )
    )
    _wait_generation([steady, slow], 2)
    old_id = slow.member_id
    slow.stall()
    stalled_at = slow.clock.now_ms()
    _wait_generation([steady], 3)
    slow.resume()
    view = slow.wait_for(
        lambda v: v.generation == 4 and bool(v.assignment), WAIT_S, "rejoined in generation 4"
    )
    # librdkafka reported the overrun, dropped its partitions as lost and rejoined as a new member.
    assert "_MAX_POLL_EXCEEDED" in view.error_names()
    assert any(e.kind == "lost" for e in view.events)
    assert view.member_id != old_id

    records = _wait_group_record(kafka_broker, group, "generation 4", lambda r: r.generation == 4)
    gen3, gen4 = _of_generation(records, 3), _of_generation(records, 4)
    assert set(_members(gen3)) == {steady.member_id}
    assert set(_members(gen4)) == {steady.member_id, view.member_id}
    assert old_id not in _members(gen4)
    # The member left on its own once max.poll.interval.ms had passed (rebalance timeout 3 s).
    assert gen3.current_state_timestamp - stalled_at >= max_poll_ms - 300
    assert _members(gen4)[str(view.member_id)].rebalance_timeout == max_poll_ms


def test_static_member_restart_within_session_timeout_keeps_the_generation(
    kafka_broker: BrokerHandle, pool: ClientPool
) -> None:
    topic = _unique("static")
    create_topic(kafka_broker.bootstrap, topic, 4)
    group = _unique("static")

    def config(instance: str) -> MemberConfig:
        return MemberConfig(
            group,
            (topic,),
            instance_id=instance,
            client_id=instance,
            session_timeout_ms=10_000,
            heartbeat_interval_ms=HEARTBEAT_MS,
        )

    first = pool.member(config("static-1"))
    _wait_generation([first], 1)
    second = pool.member(config("static-2"))
    _wait_generation([first, second], 2)
    before_id = second.member_id
    before = second.assignment
    second.leave()  # a static member does not send LeaveGroup on close (KIP-345)
    again = pool.member(config("static-2"))
    view = again.wait_for(lambda v: bool(v.assignment), WAIT_S, "assignment after restart")

    records = _wait_group_record(
        kafka_broker,
        group,
        "member id replaced",
        lambda r: any(m.member_id == view.member_id for m in r.members),
    )
    replaced = records[-1]
    assert view.member_id != before_id
    # Same generation, the new member id in the old one's place, nothing else changed.
    gen2 = [r for r in records if r.generation == 2]
    assert len(gen2) == 2
    assert max(r.generation for r in records) == 2
    assert replaced.generation == 2
    assert {m.group_instance_id: m.member_id for m in replaced.members} == {
        "static-1": first.member_id,
        "static-2": view.member_id,
    }
    assert {m.group_instance_id: m.assigned for m in replaced.members} == {
        m.group_instance_id: m.assigned for m in gen2[0].members
    }
    # The restarted member got the same partitions back and the other member never rebalanced.
    assert view.assignment == before
    assert view.generation == 2
    assert first.generation == 2
    assert [e.generation for e in first.events if e.kind == "assigned"] == [1, 2]


# ============================================================================ offset commits


def test_explicit_commits_with_metadata(kafka_broker: BrokerHandle, pool: ClientPool) -> None:
    topic = _unique("explicit")
    create_topic(kafka_broker.bootstrap, topic, 2)
    _produce(pool, topic, 2, 5)
    group = _unique("explicit")
    member = pool.member(MemberConfig(group, (topic,), heartbeat_interval_ms=HEARTBEAT_MS))
    member.wait_consumed(10)

    result = member.commit({(topic, 0): 3, (topic, 1): 4}, metadata="checkpoint-1")
    assert result.ok
    positions = member.commit()
    assert positions.ok
    assert sorted(positions.offsets) == [(topic, 0, 5), (topic, 1, 5)]

    def commits() -> list[OffsetCommitEvent] | None:
        found = [
            e
            for e in _offsets_log(kafka_broker).of_group(group)
            if isinstance(e, OffsetCommitEvent)
        ]
        return found if len(found) >= 4 else None

    found = wait_until(commits, WAIT_S, "four commit records")
    # confluent-kafka hands librdkafka the metadata with its C string terminator (size =
    # strlen + 1), so the broker stores, and every reader sees, a trailing NUL.
    assert [(e.topic, e.partition, e.offset, e.metadata) for e in found] == [
        (topic, 0, 3, "checkpoint-1\x00"),
        (topic, 1, 4, "checkpoint-1\x00"),
        (topic, 0, 5, ""),
        (topic, 1, 5, ""),
    ]
    for e in found:
        # 4.x writes OffsetCommitValue v4 with the topic id; no expire timestamp.
        assert e.value_version == 4
        assert e.topic_id is not None
        assert e.expire_timestamp == -1
        assert e.commit_timestamp <= e.at.timestamp
        assert not e.is_transactional
        assert e.at.partition == partition_for(group, kafka_broker.config.offsets_partitions)
    # Explicit offsets carry no leader epoch (-1); the consumed positions carry the epoch of
    # the last record consumed (0 on this never-restarted broker).
    assert [e.leader_epoch for e in found] == [-1, -1, 0, 0]
    # One synchronous commit request = one batch (same timestamp within a request).
    assert found[0].at.timestamp == found[1].at.timestamp
    assert committed_offsets(kafka_broker.bootstrap, group) == {(topic, 0): 5, (topic, 1): 5}


def test_auto_commit_writes_the_consumed_positions(
    kafka_broker: BrokerHandle, pool: ClientPool
) -> None:
    topic = _unique("auto")
    create_topic(kafka_broker.bootstrap, topic, 2)
    _produce(pool, topic, 2, 7)
    group = _unique("auto")
    member = pool.member(
        MemberConfig(
            group,
            (topic,),
            auto_commit=True,
            auto_commit_interval_ms=200,
            heartbeat_interval_ms=HEARTBEAT_MS,
        )
    )
    member.wait_consumed(14)
    want = {(topic, 0): 7, (topic, 1): 7}

    def latest() -> dict[TopicPart, int] | None:
        last: dict[TopicPart, int] = {}
        for e in _offsets_log(kafka_broker).of_group(group):
            if isinstance(e, OffsetCommitEvent) and e.offset is not None:
                last[(e.topic, e.partition)] = e.offset
        return last if last == want else None

    wait_until(latest, WAIT_S, "auto-committed positions")
    # Nothing was committed by the application: these came from librdkafka's timer.
    assert member.commits == ()
    assert dict(member.view().positions) == want


def test_group_deletion_writes_offset_tombstones_then_the_group_tombstone(
    kafka_broker: BrokerHandle, pool: ClientPool
) -> None:
    topic = _unique("delete")
    create_topic(kafka_broker.bootstrap, topic, 2)
    _produce(pool, topic, 2, 3)
    group = _unique("delete")
    member = pool.member(MemberConfig(group, (topic,), heartbeat_interval_ms=HEARTBEAT_MS))
    member.wait_consumed(6)
    assert member.commit().ok
    member.leave()
    _wait_group_record(
        kafka_broker, group, "empty group", lambda r: not r.members and r.generation > 0
    )

    delete_group(kafka_broker.bootstrap, group)

    def tombstoned() -> list[GroupMetadataEvent | OffsetCommitEvent] | None:
        events = [
            e
            for e in _offsets_log(kafka_broker).of_group(group)
            if isinstance(e, GroupMetadataEvent | OffsetCommitEvent)
        ]
        return (
            events
            if any(isinstance(e, GroupMetadataEvent) and e.tombstone for e in events)
            else None
        )

    events = wait_until(tombstoned, WAIT_S, "group tombstone")
    tail = [
        e
        for e in events
        if (isinstance(e, OffsetCommitEvent) and e.is_tombstone)
        or (isinstance(e, GroupMetadataEvent) and e.tombstone)
    ]
    # Offsets first (one per committed partition), the group last, all in one append.
    assert [type(e).__name__ for e in tail] == [
        "OffsetCommitEvent",
        "OffsetCommitEvent",
        "GroupMetadataEvent",
    ]
    assert {(e.topic, e.partition) for e in tail[:2] if isinstance(e, OffsetCommitEvent)} == {
        (topic, 0),
        (topic, 1),
    }
    assert [e.at.offset for e in tail] == list(range(tail[0].at.offset, tail[0].at.offset + 3))
    assert len({e.at.timestamp for e in tail}) == 1
    assert events[-1] is tail[-1]
    assert committed_offsets(kafka_broker.bootstrap, group) == {}


# ============================================================================ producers


def test_idempotent_producer_needs_no_transaction_log(
    kafka_broker: BrokerHandle, pool: ClientPool
) -> None:
    topic = _unique("idempotent")
    create_topic(kafka_broker.bootstrap, topic, 2)
    producer = pool.idempotent_producer(client_id="idempotent")
    for i in range(30):
        producer.send(topic, f"v{i}".encode(), partition=i % 2)
        if i % 10 == 9:
            producer.flush()
    delivered = producer.flush()
    assert len(delivered) == 30

    batches = [
        b for p in range(2) for b in read_partition_dir(kafka_broker.partition_dir(topic, p))
    ]
    producer_ids = {b.producer_id for b in batches}
    assert len(producer_ids) == 1
    [pid] = producer_ids
    assert pid >= 0
    for p in range(2):
        part = list(read_partition_dir(kafka_broker.partition_dir(topic, p)))
        # Sequences start at 0 and continue across batches without gaps.
        assert part[0].base_sequence == 0
        for prev, nxt in itertools.pairwise(part):
            assert nxt.base_sequence == prev.last_sequence + 1
        assert part[-1].last_sequence == 14
        assert not any(b.is_transactional or b.is_control for b in part)
        assert {b.producer_epoch for b in part} == {0}
    assert list_offsets(kafka_broker.bootstrap, [(topic, 0), (topic, 1)]) == {
        (topic, 0): 15,
        (topic, 1): 15,
    }
    # Producer ids for idempotence come from the controller, not the transaction coordinator:
    # nothing about this producer is in __transaction_state.
    assert not [
        e
        for e in _txn_log(kafka_broker).events
        if isinstance(e, TransactionLogEvent) and e.producer_id == pid
    ]


def _statuses(events: Sequence[TransactionLogEvent]) -> list[str]:
    """Status names, consecutive Ongoing records (one per AddPartitions call) collapsed."""
    names: list[str] = []
    for e in events:
        name = TransactionState(e.status).name
        if not (names and name == "Ongoing" and names[-1] == "Ongoing"):
            names.append(name)
    return names


def _wait_txn(broker: BrokerHandle, txn_id: str, final: Sequence[str]) -> list[TransactionLogEvent]:
    def ready() -> list[TransactionLogEvent] | None:
        events = [
            e
            for e in _txn_log(broker).of_transactional_id(txn_id)
            if isinstance(e, TransactionLogEvent)
        ]
        return events if _statuses(events)[-len(final) :] == list(final) else None

    return wait_until(
        ready,
        WAIT_S,
        f"{txn_id} to reach {final}",
        describe=lambda: str(
            _statuses(
                [
                    e
                    for e in _txn_log(broker).of_transactional_id(txn_id)
                    if isinstance(e, TransactionLogEvent)
                ]
            )
        ),
    )


def test_transactions_commit_and_abort_offsets(
    kafka_broker: BrokerHandle, pool: ClientPool
) -> None:
    source, sink = _unique("txn-in"), _unique("txn-out")
    create_topic(kafka_broker.bootstrap, source, 1)
    create_topic(kafka_broker.bootstrap, sink, 2)
    _produce(pool, source, 1, 10)
    group, txn_id = _unique("txn-group"), _unique("txn")
    member = pool.member(MemberConfig(group, (source,), heartbeat_interval_ms=HEARTBEAT_MS))
    member.wait_consumed(10)
    metadata = member.group_metadata()
    producer = pool.transactional_producer(txn_id).init()

    producer.begin()
    producer.send(sink, b"committed", partition=0)
    producer.send_offsets({(source, 0): 5}, metadata)
    producer.commit()
    producer.begin()
    producer.send(sink, b"aborted", partition=1)
    producer.send_offsets({(source, 0): 8}, metadata)
    producer.abort()

    events = _wait_txn(kafka_broker, txn_id, ["CompleteAbort"])
    assert _statuses(events) == [
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "CompleteCommit",
        "Ongoing",
        "PrepareAbort",
        "CompleteAbort",
    ]
    pid = events[0].producer_id
    assert {e.producer_id for e in events} == {pid}
    assert events[0].partitions is None
    assert events[0].start_timestamp == -1
    offsets_partition = partition_for(group, kafka_broker.config.offsets_partitions)
    by_status = {TransactionState(e.status).name: e for e in events}
    assert set(by_status["PrepareCommit"].partitions or ()) == {
        (sink, 0),
        (OFFSETS, offsets_partition),
    }
    assert set(by_status["PrepareAbort"].partitions or ()) == {
        (sink, 1),
        (OFFSETS, offsets_partition),
    }
    assert by_status["CompleteCommit"].partitions == ()
    assert by_status["CompleteAbort"].partitions == ()
    ongoing = [e for e in events if e.status == TransactionState.Ongoing]
    # The start timestamp is that of the transaction's first partition, kept until it completes.
    assert by_status["CompleteCommit"].start_timestamp == ongoing[0].start_timestamp
    assert all(e.last_update_timestamp >= e.start_timestamp for e in events[1:])

    # __consumer_offsets: each TxnOffsetCommit is a transactional batch of the producer,
    # resolved by the COMMIT / ABORT marker the coordinator wrote after it.
    log = _offsets_log(kafka_broker)
    commits = [e for e in log.of_group(group) if isinstance(e, OffsetCommitEvent)]
    assert [(e.offset, e.is_transactional, e.at.producer_id) for e in commits] == [
        (5, True, pid),
        (8, True, pid),
    ]
    markers = log.markers_of(pid)
    assert [m.control_type for m in markers] == ["COMMIT", "ABORT"]
    assert commits[0].at.offset < markers[0].at.offset < commits[1].at.offset < markers[1].at.offset
    assert {m.at.partition for m in markers} == {offsets_partition}
    # Only the committed transaction's offset is visible.
    assert committed_offsets(kafka_broker.bootstrap, group) == {(source, 0): 5}


def test_transaction_left_open_is_aborted_by_the_coordinator(
    kafka_broker: BrokerHandle, pool: ClientPool
) -> None:
    topic = _unique("txn-timeout")
    create_topic(kafka_broker.bootstrap, topic, 1)
    txn_id = _unique("txn-timeout")
    timeout_ms = 2_000
    producer = pool.transactional_producer(txn_id, transaction_timeout_ms=timeout_ms).init()
    producer.begin()
    producer.send(topic, b"never committed", partition=0)
    producer.leave_open()

    events = _wait_txn(kafka_broker, txn_id, ["PrepareAbort", "CompleteAbort"])
    assert _statuses(events) == ["Empty", "Ongoing", "PrepareAbort", "CompleteAbort"]
    empty, ongoing, prepare, complete = events
    assert empty.timeout_ms == timeout_ms
    # The coordinator fenced the producer: epoch + 1 on the abort it wrote itself.
    assert ongoing.producer_epoch == empty.producer_epoch
    assert prepare.producer_epoch == complete.producer_epoch == ongoing.producer_epoch + 1
    assert prepare.last_update_timestamp - ongoing.start_timestamp >= timeout_ms
    assert prepare.partitions == ((topic, 0),)
    # Kafka 4.4.0 marks the aborts its timeout task writes with clientTransactionVersion 2,
    # while librdkafka's own transitions carry 0 (transaction version 1 client).
    assert (ongoing.client_transaction_version, prepare.client_transaction_version) == (0, 2)
    # The data partition holds the ABORT marker for the producer's fenced epoch.
    control = [b for b in read_partition_dir(kafka_broker.partition_dir(topic, 0)) if b.is_control]
    assert [(b.producer_id, b.end_txn_marker() is not None) for b in control] == [
        (empty.producer_id, True)
    ]
    marker = control[0].end_txn_marker()
    assert marker is not None
    assert marker.control_type.name == "ABORT"
    assert list_offsets(kafka_broker.bootstrap, [(topic, 0)]) == {(topic, 0): 2}


def test_zombie_producer_is_fenced_by_a_new_instance(
    kafka_broker: BrokerHandle, pool: ClientPool
) -> None:
    topic = _unique("zombie")
    create_topic(kafka_broker.bootstrap, topic, 2)
    txn_id = _unique("zombie")
    zombie = pool.transactional_producer(txn_id, client_id="zombie").init()
    zombie.begin()
    zombie.send(topic, b"from the zombie", partition=0)
    zombie.flush()
    successor = pool.transactional_producer(txn_id, client_id="successor").init()
    with pytest.raises(KafkaException) as raised:
        zombie.commit()
    error = raised.value.args[0]
    assert isinstance(error, KafkaError)
    assert error.code() == KafkaError._FENCED
    assert error.fatal()
    successor.begin()
    successor.send(topic, b"from the successor", partition=1)
    successor.commit()

    events = _wait_txn(kafka_broker, txn_id, ["CompleteCommit"])
    assert _statuses(events) == [
        "Empty",
        "Ongoing",
        "PrepareAbort",
        "CompleteAbort",
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "CompleteCommit",
    ]
    epochs = [e.producer_epoch for e in events]
    # InitProducerId while Ongoing: the open transaction is aborted with epoch + 1, then the
    # new instance's retry gets epoch + 2; the producer id stays.
    assert epochs == [0, 0, 1, 1, 2, 2, 2, 2]
    assert len({e.producer_id for e in events}) == 1
    zombie_batches = list(read_partition_dir(kafka_broker.partition_dir(topic, 0)))
    markers = [b.end_txn_marker() for b in zombie_batches if b.is_control]
    assert [m.control_type.name for m in markers if m is not None] == ["ABORT"]
