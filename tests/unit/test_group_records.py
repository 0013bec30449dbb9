"""The exact records the group coordinator writes, as dicts and as bytes, and their determinism."""

from __future__ import annotations

import uuid

from offsetscope.protocol import decode_record, encode_record
from offsetscope.protocol.records import OFFSETS_TOPIC, CoordinatorRecord
from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.group import messages as msg
from offsetscope.sim.coordinator.group.messages import MemberIdentity
from offsetscope.sim.coordinator.group.testing import GroupTestContext, assignment, subscription

G = "group-id"
T0 = 1_700_000_000_000


def assert_round_trips(records: list[CoordinatorRecord]) -> None:
    """Each record encodes to bytes that decode back to the same record."""
    for r in records:
        key, value = encode_record(r)
        assert decode_record(OFFSETS_TOPIC, key, value) == r


def test_join_sync_round_writes_the_brand_new_group_record_then_the_assignment() -> None:
    ctx = GroupTestContext.builder().with_seed(42).build()
    sub = subscription("foo", "bar")
    a, pa = ctx.join_dynamic(G, client_id="client-a", protocols=[("range", sub)])
    b, _pb = ctx.join_dynamic(
        G, client_id="client-b", protocols=[("range", sub)], session_timeout_ms=10_000
    )
    ctx.advance(6_000)
    assert pa.result().leader == a
    ctx.advance(100)
    assign_a = assignment({"foo": [0], "bar": [0]})
    assign_b = assignment({"foo": [1]})
    ctx.sync(G, 1, b)
    ctx.sync(G, 1, a, {a: assign_a, b: assign_b})
    records = ctx.records()
    member_a = {
        "memberId": a,
        "groupInstanceId": None,
        "clientId": "client-a",
        "clientHost": "/127.0.0.1",
        "rebalanceTimeout": 300_000,
        "sessionTimeout": 45_000,
        "subscription": sub,
        "assignment": assign_a,
    }
    member_b = {**member_a, "memberId": b, "clientId": "client-b", "sessionTimeout": 10_000}
    member_b["assignment"] = assign_b
    order = [m.member_id for m in ctx.group(G).ordered_members()]
    members = sorted([member_a, member_b], key=lambda m: order.index(str(m["memberId"])))
    assert [(r.record_type, r.key, r.value_version, r.value) for r in records] == [
        (
            2,
            {"group": G},
            3,
            {
                "protocolType": "",
                "generation": 0,
                "protocol": None,
                "leader": None,
                "currentStateTimestamp": T0,
                "members": [],
            },
        ),
        (
            2,
            {"group": G},
            3,
            {
                "protocolType": "consumer",
                "generation": 1,
                "protocol": "range",
                "leader": a,
                # The time the group entered CompletingRebalance, not the time of the sync.
                "currentStateTimestamp": T0 + 6_000,
                "members": members,
            },
        ),
    ]
    assert_round_trips(records)
    # One batch per operation, stamped with the coordinator clock.
    assert [(x.batch.base_offset, x.batch.records[0].timestamp) for x in ctx.appends] == [
        (0, T0),
        (1, T0 + 6_100),
    ]
    assert all(x.batch.producer_id == -1 and x.batch.base_sequence == 0 for x in ctx.appends)


def test_brand_new_group_record_bytes_match_the_v3_layout() -> None:
    ctx = GroupTestContext.builder().build()
    ctx.join("g1")
    (record,) = ctx.records()
    key, value = encode_record(record)
    assert key == bytes.fromhex("0002 0002 6731")
    assert value == bytes.fromhex(
        "0003"  # version 3
        "0000"  # protocolType ""
        "00000000"  # generation 0
        "ffff"  # protocol null
        "ffff"  # leader null
        "0000018bcfe56800"  # currentStateTimestamp 1700000000000
        "00000000"  # no members
    )
    # It is written once, by the group's first JoinGroup; the partition holds it at offset 0.
    log = ctx.log.partition(OFFSETS_TOPIC, ctx.runtime.partition_for("g1"))
    assert [(b.base_offset, b.records[0].key, b.records[0].value) for b in log.batches] == [
        (0, key, value)
    ]


def test_group_emptied_by_session_timeouts_writes_generation_plus_one_without_members() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a"], session_timeout_ms=10_000)
    ctx.take_records()
    ctx.advance(10_000)
    (record,) = ctx.take_records()
    assert record.value == {
        "protocolType": "consumer",
        "generation": formed.generation + 1,
        "protocol": None,
        "leader": None,
        "currentStateTimestamp": ctx.now,
        "members": [],
    }
    assert_round_trips([record])


def test_static_replacement_record_keeps_the_generation_and_swaps_the_member_id() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a", "b"], static=True)
    stable_record = ctx.records()[-1]
    ctx.take_records()
    ctx.advance(1_000)
    new_b = ctx.join(G, group_instance_id="b", client_id="b").result().member_id
    (record,) = ctx.take_records()
    assert stable_record.value is not None
    assert record.value is not None
    expected_members = [
        {**m, "memberId": new_b} if m["memberId"] == formed["b"] else m
        for m in stable_record.value["members"]
    ]
    order = [m.member_id for m in ctx.group(G).ordered_members()]
    expected_members.sort(key=lambda m: order.index(str(m["memberId"])))
    assert record.value == {
        **stable_record.value,
        # Still the time the group became Stable: no transition happened.
        "currentStateTimestamp": stable_record.value["currentStateTimestamp"],
        "members": expected_members,
    }
    assert [m["groupInstanceId"] for m in record.value["members"]] == [
        "b" if m["memberId"] == new_b else "a" for m in record.value["members"]
    ]
    assert_round_trips([record])


def test_delete_group_writes_offset_tombstones_then_the_group_tombstone() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group(G, ["a"])
    ctx.commit(G, {("foo", 0): 1, ("foo", 1): 2}, generation_id=1, member_id=formed["a"])
    ctx.commit(G, {("bar", 0): 3}, generation_id=1, member_id=formed["a"])
    ctx.txn_commit(G, {("baz", 0): 4}, producer_id=7)
    ctx.leave(G, MemberIdentity(formed["a"]))
    ctx.take_records()
    response = ctx.runtime.delete_groups([G])
    assert response.errors() == {G: Errors.NONE}
    records = ctx.take_records()
    assert [(r.record_type, dict(r.key), r.value) for r in records] == [
        (1, {"group": G, "topic": "foo", "partition": 0}, None),
        (1, {"group": G, "topic": "foo", "partition": 1}, None),
        (1, {"group": G, "topic": "bar", "partition": 0}, None),
        (1, {"group": G, "topic": "baz", "partition": 0}, None),  # the pending one too
        (2, {"group": G}, None),
    ]
    assert_round_trips(records)
    assert not ctx.has_group(G)


def test_offset_commit_values_v4_with_topic_id_and_v1_with_retention() -> None:
    ctx = GroupTestContext.builder().build()
    topic_id = uuid.UUID("00010203-0405-0607-0809-0a0b0c0d0e0f")
    ctx.runtime.commit_offsets(
        msg.OffsetCommitRequest(
            "g1",
            (msg.OffsetCommitTopic("t", (msg.OffsetCommitPartition(0, 42, 5, ""),), topic_id),),
        )
    )
    ctx.commit("g1", {("t", 1): 42}, leader_epoch=5)
    ctx.commit("g1", {("t", 2): 7}, retention_time_ms=60_000, metadata="m", api_version=4)
    with_id, without_id, with_expiry = ctx.records()
    assert with_id.value_version == 4
    assert with_id.value == {
        "offset": 42,
        "leaderEpoch": 5,
        "metadata": "",
        "commitTimestamp": T0,
        "topicId": topic_id,
    }
    assert encode_record(with_id)[1] == bytes.fromhex(
        "0004 000000000000002a 00000005 01 0000018bcfe56800"
        "01 00 10 000102030405060708090a0b0c0d0e0f"
    )
    # Without a topic id the tagged field is absent: the value ends with one 00 byte.
    assert encode_record(without_id)[1] == bytes.fromhex(
        "0004 000000000000002a 00000005 01 0000018bcfe56800 00"
    )
    assert with_expiry.value_version == 1
    assert with_expiry.value == {
        "offset": 7,
        "metadata": "m",
        "commitTimestamp": T0,
        "expireTimestamp": T0 + 60_000,
    }
    assert_round_trips([with_id, without_id, with_expiry])


def scenario(seed: int) -> list[tuple[int, int, bytes, bytes | None, int]]:
    """A mixed run; returns every appended record as (partition, offset, key, value, time)."""
    ctx = GroupTestContext.builder().with_seed(seed).with_offsets_partitions(3).build()
    for group in ["alpha", "beta", "gamma"]:
        formed = ctx.form_group(group, ["x", "y", "z"], session_timeout_ms=10_000)
        ctx.commit(group, {("t", 0): 5, ("t", 1): 6}, generation_id=1, member_id=formed["x"])
        ctx.advance(3_000)
        ctx.heartbeat(group, 1, formed["x"])
    ctx.join("beta", group_instance_id="s", client_id="s")
    ctx.advance(60_000)
    ctx.runtime.delete_groups(["alpha", "gamma"])
    out = []
    for log in ctx.log:
        for batch in log.batches:
            for i, r in enumerate(batch.records):
                out.append(
                    (log.partition, batch.base_offset + i, r.key or b"", r.value, r.timestamp)
                )
    return out


def test_the_same_calls_produce_the_same_records() -> None:
    first, second = scenario(7), scenario(7)
    assert first == second
    assert len(first) > 20
    # The seed only changes the random part of member ids.
    assert scenario(8) != first
