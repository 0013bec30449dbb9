"""Pieces of the simulated clients: partitioner, member states, rebalance protocol, the
offset-commit encoder fast path, the mirror's record selection."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetscope.protocol import encode_record
from offsetscope.sim.coordinator.assignors import RebalanceProtocol, assignor_by_name
from offsetscope.sim.coordinator.group.offsets import OffsetAndMetadata
from offsetscope.sim.coordinator.group.records import new_offset_commit_record
from offsetscope.sim.coordinator.log import LogStore
from offsetscope.sim.coordinator.runtime import OffsetCommitEncoder
from offsetscope.sim.scenarios.clients import (
    VALID_PREVIOUS_STATES,
    IllegalMemberTransition,
    MemberState,
    SimConsumer,
    _rebalance_protocol,
    murmur2,
    murmur2_partition,
)
from offsetscope.sim.scenarios.cluster import Cluster
from offsetscope.sim.scenarios.mirror import MirrorNames, MirrorReport, mirror_records
from offsetscope.sim.scenarios.spec import ConsumerSpec, load_scenario

# Kafka's UtilsTest.testMurmur2 vectors.
MURMUR2 = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]


@pytest.mark.parametrize(("data", "expected"), MURMUR2)
def test_murmur2_equals_kafkas(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


def test_partition_for_key_is_to_positive_modulo() -> None:
    assert murmur2_partition(b"21", 7) == (-973932308 & 0x7FFFFFFF) % 7
    assert {murmur2_partition(b"key-%06d" % k, 6) for k in range(200)} == set(range(6))


@pytest.mark.parametrize(("current", "target"), list(itertools.product(MemberState, MemberState)))
def test_member_state_transitions(current: MemberState, target: MemberState) -> None:
    cluster = _cluster()
    consumer = SimConsumer(cluster, group_id="g", client_id="c", topics=["t"], spec=ConsumerSpec())
    consumer.state = current
    if current in VALID_PREVIOUS_STATES[target]:
        consumer._transition(target)
        assert consumer.state is target
    else:
        with pytest.raises(IllegalMemberTransition, match=f"{current.value} -> {target.value}"):
            consumer._transition(target)
        assert consumer.state is current


@pytest.mark.parametrize(
    ("names", "protocol"),
    [
        (("range",), RebalanceProtocol.EAGER),
        (("range", "cooperative-sticky"), RebalanceProtocol.EAGER),
        (("cooperative-sticky",), RebalanceProtocol.COOPERATIVE),
        (("cooperative-sticky", "sticky"), RebalanceProtocol.EAGER),
    ],
)
def test_rebalance_protocol_is_the_highest_common_one(
    names: tuple[str, ...], protocol: RebalanceProtocol
) -> None:
    assert _rebalance_protocol(assignor_by_name(n) for n in names) is protocol


def _cluster() -> Cluster:
    scenario = load_scenario("steady")
    return Cluster(
        seed=1,
        start_ms=scenario.start_ms,
        topics={"t": 2},
        group_config=scenario.group_config,
        txn_config=scenario.txn_config,
    )


@settings(max_examples=300, deadline=None)
@given(
    group=st.text(min_size=1, max_size=40),
    topic=st.from_regex(r"[a-z0-9._-]{1,30}", fullmatch=True),
    partition=st.integers(0, 2**31 - 1),
    offset=st.integers(0, 2**63 - 1),
    leader_epoch=st.one_of(st.none(), st.integers(0, 2**31 - 1)),
    metadata=st.text(max_size=300),
    timestamp=st.integers(0, 2**62),
)
def test_offset_commit_fast_path_equals_the_generic_writer(
    group: str,
    topic: str,
    partition: int,
    offset: int,
    leader_epoch: int | None,
    metadata: str,
    timestamp: int,
) -> None:
    record = new_offset_commit_record(
        group, topic, partition, OffsetAndMetadata(offset, leader_epoch, metadata, timestamp)
    )
    encoder = OffsetCommitEncoder()
    assert encoder.encode(record) == encode_record(record)
    assert encoder.encode(record) == encode_record(record)  # cached key


def test_mirror_keeps_committed_transactions_only() -> None:
    from offsetscope.sim.coordinator.log import LogRecord
    from offsetscope.sim.coordinator.producer_state import control_record

    logs = LogStore()
    logs.create_topic("t", 1)
    log = logs.partition("t", 0)
    log.append([LogRecord(b"a", b"1", 1)])
    log.append([LogRecord(b"b", b"2", 2)], producer_id=5, producer_epoch=0, is_transactional=True)
    log.append([LogRecord(b"c", b"3", 3)], producer_id=6, producer_epoch=0, is_transactional=True)
    log.append(
        [control_record(False, 0, 4)],
        producer_id=6,
        producer_epoch=0,
        is_transactional=True,
        is_control=True,
    )
    log.append(
        [control_record(True, 0, 5)],
        producer_id=5,
        producer_epoch=0,
        is_transactional=True,
        is_control=True,
    )
    log.append([LogRecord(b"d", b"4", 6)], producer_id=7, producer_epoch=0, is_transactional=True)
    report = MirrorReport()
    chosen = mirror_records(logs, report=report)
    assert [r.key for r in chosen[("t", 0)]] == [b"a", b"b"]
    assert (report.skipped_aborted, report.skipped_control) == (2, 2)
    everything = mirror_records(logs, include_aborted=True)
    assert [r.key for r in everything[("t", 0)]] == [b"a", b"c", b"b"]
    names = MirrorNames()
    assert names.name("__consumer_offsets") == "sim.consumer_offsets"
    assert names.name("__transaction_state") == "sim.transaction_state"
    assert names.name("orders") == "sim.orders"
