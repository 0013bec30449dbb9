"""userData of the sticky assignors: Kafka's byte layout, round trips and fallbacks.

Golden bytes are built field by field; ``tests/jvm`` compares the encoder and the decoders
with Kafka's ``StickyAssignor``/``CooperativeStickyAssignor`` on random inputs.
"""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from offsetscope.sim.coordinator.assignors import StickyAssignor, Subscription, TopicPartition
from offsetscope.sim.coordinator.assignors.userdata import (
    MemberData,
    cooperative_member_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    sticky_member_data,
)

T = TopicPartition


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def test_sticky_v1_layout() -> None:
    data = encode_sticky_user_data([T("t0", 1), T("t1", 0), T("t0", 0)], 7)
    assert data == b"".join(
        [
            i32(2),  # previous_assignment: 2 topics
            i16(2) + b"t0",  # topic ("t0" hashes to bucket 12, "t1" to 13)
            i32(2) + i32(1) + i32(0),  # its partitions, in assignment order
            i16(2) + b"t1",
            i32(1) + i32(0),
            i32(7),  # generation
        ]
    )


def test_sticky_topics_follow_compute_if_absent_order() -> None:
    # "Aa" and "BB" share a HashMap bin; computeIfAbsent puts the later one first
    data = encode_sticky_user_data([T("Aa", 0), T("BB", 3)], 1)
    assert data == b"".join(
        [i32(2), i16(2), b"BB", i32(1), i32(3), i16(2), b"Aa", i32(1), i32(0), i32(1)]
    )


def test_sticky_decodes_v0_and_ignores_trailing_bytes() -> None:
    v0 = i32(1) + i16(1) + b"t" + i32(2) + i32(4) + i32(5)
    assert decode_sticky_user_data(v0) == MemberData((T("t", 4), T("t", 5)), None)
    assert decode_sticky_user_data(v0 + i32(9)) == MemberData((T("t", 4), T("t", 5)), 9)
    assert decode_sticky_user_data(v0 + i32(9) + b"\x01\x02") == MemberData(
        (T("t", 4), T("t", 5)), 9
    )


def test_sticky_unparseable_data_means_no_previous_assignment() -> None:
    assert decode_sticky_user_data(b"\x00\x00") == MemberData((), -1)
    assert decode_sticky_user_data(i32(-1)) == MemberData((), -1)
    assert decode_sticky_user_data(i32(1) + i16(50) + b"short") == MemberData((), -1)
    # Java decodes bad UTF-8 with replacement characters rather than failing
    bad = i32(1) + i16(2) + b"\xff\xfe" + i32(1) + i32(0) + i32(3)
    assert decode_sticky_user_data(bad) == MemberData((T("\ufffd\ufffd", 0),), 3)


def test_sticky_member_data_ignores_owned_partitions() -> None:
    owned = (T("t", 0),)
    assert sticky_member_data(Subscription(("t",), None, owned, 4)) == MemberData((), None)
    assert sticky_member_data(Subscription(("t",), b"", owned, 4)) == MemberData((), None)
    data = encode_sticky_user_data([T("t", 2)], 3)
    assert sticky_member_data(Subscription(("t",), data, owned, 4)) == MemberData((T("t", 2),), 3)


def test_cooperative_user_data_and_member_data() -> None:
    assert encode_cooperative_user_data(5) == i32(5)
    assert encode_cooperative_user_data(-1) == b"\xff\xff\xff\xff"
    owned = (T("t", 1),)
    # v2+ subscriptions carry the generation; userData is not read
    assert cooperative_member_data(Subscription(("t",), i32(9), owned, 4)) == MemberData(owned, 4)
    # older ones: the generation from userData, -1 if it is not an int32, none if null
    assert cooperative_member_data(Subscription(("t",), i32(9) + b"x", owned)) == MemberData(
        owned, 9
    )
    assert cooperative_member_data(Subscription(("t",), b"\x00", owned)) == MemberData(owned, -1)
    assert cooperative_member_data(Subscription(("t",), None, owned)) == MemberData(owned, None)


def test_sticky_user_data_is_null_before_the_first_assignment() -> None:
    sticky = StickyAssignor()
    assert sticky.subscription_user_data(("t",), (), -1) is None
    assert sticky.subscription_user_data(("t",), (), 3) == i32(0) + i32(3)


partitions = st.lists(
    st.builds(T, st.sampled_from(["t0", "t1", "orders", "Aa", "BB", "é"]), st.integers(0, 500)),
    max_size=30,
    unique=True,
)


@given(parts=partitions, generation=st.integers(-(2**31), 2**31 - 1))
def test_sticky_round_trip(parts: list[TopicPartition], generation: int) -> None:
    decoded = decode_sticky_user_data(encode_sticky_user_data(parts, generation))
    assert decoded.generation == generation
    # topics are regrouped, partitions keep their order within a topic
    assert sorted(decoded.partitions) == sorted(parts)
    for topic in {tp.topic for tp in parts}:
        assert [tp for tp in decoded.partitions if tp.topic == topic] == [
            tp for tp in parts if tp.topic == topic
        ]


@given(data=st.binary(max_size=64))
def test_sticky_decoder_never_raises(data: bytes) -> None:
    decoded = decode_sticky_user_data(data)
    assert decoded.generation is None or isinstance(decoded.generation, int)
