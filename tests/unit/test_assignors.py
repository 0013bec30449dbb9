"""Assignors without a JVM: hand-derived Kafka outputs and properties over random groups.

The hand-checked cases follow the examples of Kafka's assignor Javadoc; where the sticky
Javadoc describes its original algorithm, the expected value is derived step by step from the
constrained algorithm Kafka 4.4 runs (see the comments). ``tests/jvm`` compares the same code
with Kafka's own classes on many random inputs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetscope.sim.coordinator.assignors import (
    ASSIGNOR_NAMES,
    Assignment,
    AssignmentError,
    ClusterMetadata,
    CooperativeStickyAssignor,
    RangeAssignor,
    RebalanceProtocol,
    RoundRobinAssignor,
    StickyAssignor,
    Subscription,
    TopicPartition,
    assignor_by_name,
)

T = TopicPartition


def tps(*names: str) -> tuple[TopicPartition, ...]:
    """``"t0-1"`` -> ``TopicPartition("t0", 1)``."""
    out = []
    for name in names:
        topic, _, partition = name.rpartition("-")
        out.append(T(topic, int(partition)))
    return tuple(out)


def as_names(result: Mapping[str, Assignment]) -> dict[str, list[str]]:
    return {m: [str(tp) for tp in a.partitions] for m, a in result.items()}


# ------------------------------------------------------------------ hand-checked outputs


def test_range_javadoc_example() -> None:
    # RangeAssignor Javadoc: two consumers, two topics of three partitions
    cluster = ClusterMetadata({"t0": 3, "t1": 3})
    subs = {"C0": Subscription(("t0", "t1")), "C1": Subscription(("t0", "t1"))}
    assert as_names(RangeAssignor().assign(cluster, subs)) == {
        "C0": ["t0-0", "t0-1", "t1-0", "t1-1"],
        "C1": ["t0-2", "t1-2"],
    }


def test_range_orders_static_members_by_instance_id_first() -> None:
    cluster = ClusterMetadata({"t": 3})
    subs = {
        "a-member": Subscription(("t",)),
        "b-member": Subscription(("t",), group_instance_id="zz"),
        "c-member": Subscription(("t",), group_instance_id="aa"),
    }
    # MemberInfo order: instance ids "aa" < "zz", then members without one
    assert as_names(RangeAssignor().assign(cluster, subs)) == {
        "a-member": ["t-2"],
        "b-member": ["t-1"],
        "c-member": ["t-0"],
    }


def test_range_lists_topics_in_java_hashmap_order() -> None:
    # String.hashCode: "b" = 98 -> bucket 98 & 15 = 2; "BB" = "Aa" = 2112 -> bucket 0, where
    # they keep insertion order. The topic HashSet gets "b", "BB", "Aa" and iterates bucket 0
    # ("BB", "Aa") then bucket 2 ("b"); range lists each member's topics in that order.
    cluster = ClusterMetadata({"b": 1, "BB": 1, "Aa": 1})
    subs = {"m": Subscription(("b", "BB", "Aa"))}
    assert as_names(RangeAssignor().assign(cluster, subs)) == {"m": ["BB-0", "Aa-0", "b-0"]}


def test_range_rack_aware_prefers_local_replicas() -> None:
    # p0 only on r0, p1 only on r1: without racks c0 takes p0; with racks each takes its local one
    cluster = ClusterMetadata({"t": 2}, {"t": [("r0",), ("r1",)]})
    plain = {"c0": Subscription(("t",)), "c1": Subscription(("t",))}
    assert as_names(RangeAssignor().assign(cluster, plain)) == {"c0": ["t-0"], "c1": ["t-1"]}
    racked = {"c0": Subscription(("t",), rack_id="r1"), "c1": Subscription(("t",), rack_id="r0")}
    assert as_names(RangeAssignor().assign(cluster, racked)) == {"c0": ["t-1"], "c1": ["t-0"]}


def test_range_rack_aware_keeps_co_partitioning() -> None:
    # two topics with the same members and partition count: partition p of both goes together
    racks = [("r0",), ("r1",), ("r0",), ("r1",)]
    cluster = ClusterMetadata({"a": 4, "b": 4}, {"a": racks, "b": racks})
    subs = {
        "c0": Subscription(("a", "b"), rack_id="r1"),
        "c1": Subscription(("a", "b"), rack_id="r0"),
    }
    assert as_names(RangeAssignor().assign(cluster, subs)) == {
        "c0": ["a-1", "a-3", "b-1", "b-3"],
        "c1": ["a-0", "a-2", "b-0", "b-2"],
    }


def test_roundrobin_javadoc_examples() -> None:
    cluster = ClusterMetadata({"t0": 3, "t1": 3})
    subs = {"C0": Subscription(("t0", "t1")), "C1": Subscription(("t0", "t1"))}
    assert as_names(RoundRobinAssignor().assign(cluster, subs)) == {
        "C0": ["t0-0", "t0-2", "t1-1"],
        "C1": ["t0-1", "t1-0", "t1-2"],
    }
    cluster = ClusterMetadata({"t0": 1, "t1": 2, "t2": 3})
    subs = {
        "C0": Subscription(("t0",)),
        "C1": Subscription(("t0", "t1")),
        "C2": Subscription(("t0", "t1", "t2")),
    }
    assert as_names(RoundRobinAssignor().assign(cluster, subs)) == {
        "C0": ["t0-0"],
        "C1": ["t1-0"],
        "C2": ["t1-1", "t2-0", "t2-1", "t2-2"],
    }


def test_roundrobin_rejects_an_empty_group_like_kafka() -> None:
    with pytest.raises(AssignmentError) as err:
        RoundRobinAssignor().assign(ClusterMetadata({"t": 1}), {})
    assert err.value.java_exception == "IllegalArgumentException"


def test_sticky_javadoc_example_one() -> None:
    cluster = ClusterMetadata({"t0": 2, "t1": 2, "t2": 2, "t3": 2})
    topics = ("t0", "t1", "t2", "t3")
    sticky = StickyAssignor()
    first = sticky.assign(cluster, {m: Subscription(topics) for m in ("C0", "C1", "C2")})
    # fresh group, quotas 2..3 with two members at 3: round robin over sorted members
    assert as_names(first) == {
        "C0": ["t0-0", "t1-1", "t3-0"],
        "C1": ["t0-1", "t2-0", "t3-1"],
        "C2": ["t1-0", "t2-1"],
    }
    second = sticky.assign(
        cluster,
        {
            m: Subscription(topics, sticky.subscription_user_data(topics, first[m].partitions, 1))
            for m in ("C0", "C2")
        },
    )
    # C1 left: quota 4 each. Both keep everything (C0's sorted by partition, then topic), and
    # the freed t0-1, t2-0, t3-1 go round robin: t0-1 -> C0 (now 4, full), t2-0 and t3-1 -> C2
    assert as_names(second) == {
        "C0": ["t0-0", "t3-0", "t1-1", "t0-1"],
        "C2": ["t1-0", "t2-1", "t2-0", "t3-1"],
    }


def test_sticky_javadoc_example_two_general_path() -> None:
    cluster = ClusterMetadata({"t0": 1, "t1": 2, "t2": 3})
    subs = {
        "C0": Subscription(("t0",)),
        "C1": Subscription(("t0", "t1")),
        "C2": Subscription(("t0", "t1", "t2")),
    }
    sticky = StickyAssignor()
    first = sticky.assign(cluster, subs)
    assert as_names(first) == {
        "C0": ["t0-0"],
        "C1": ["t1-0", "t1-1"],
        "C2": ["t2-0", "t2-1", "t2-2"],
    }
    second = sticky.assign(
        cluster,
        {
            m: Subscription(
                subs[m].topics,
                sticky.subscription_user_data(subs[m].topics, first[m].partitions, 1),
            )
            for m in ("C1", "C2")
        },
    )
    # C0 left: only t0-0 is free; C1 (2) takes it over C2 (3); nothing else moves
    assert as_names(second) == {"C1": ["t1-0", "t1-1", "t0-0"], "C2": ["t2-0", "t2-1", "t2-2"]}


def test_cooperative_sticky_revokes_first_and_assigns_in_the_follow_up() -> None:
    cluster = ClusterMetadata({"t0": 3, "t1": 3})
    everything = tps("t0-0", "t0-1", "t0-2", "t1-0", "t1-1", "t1-2")
    coop = CooperativeStickyAssignor()
    first = coop.assign(
        cluster,
        {
            "c0": Subscription(("t0", "t1"), owned_partitions=everything, generation_id=3),
            "c1": Subscription(("t0", "t1")),
        },
    )
    # c0 keeps minQuota = 3 of its partitions (sorted by partition, then topic) and revokes
    # the rest; c1 gets nothing yet because those partitions are still owned
    assert as_names(first) == {"c0": ["t0-0", "t1-0", "t0-1"], "c1": []}
    second = coop.assign(
        cluster,
        {
            "c0": Subscription(
                ("t0", "t1"), owned_partitions=first["c0"].partitions, generation_id=4
            ),
            "c1": Subscription(("t0", "t1"), generation_id=4),
        },
    )
    assert as_names(second) == {"c0": ["t0-0", "t1-0", "t0-1"], "c1": ["t0-2", "t1-1", "t1-2"]}


def test_sticky_same_generation_double_claim_is_invalidated() -> None:
    # "a" and "b" both claim t-0 in generation 5: the claim is void for both. The constrained
    # path gives t-0 to "a" (under quota), but as a contested partition it is transferring
    # ownership, so the cooperative assignor withholds it until both have revoked it.
    cluster = ClusterMetadata({"t": 2})
    subs = {
        "a": Subscription(("t",), owned_partitions=tps("t-0"), generation_id=5),
        "b": Subscription(("t",), owned_partitions=tps("t-0", "t-1"), generation_id=5),
    }
    assert as_names(CooperativeStickyAssignor().assign(cluster, subs)) == {"a": [], "b": ["t-1"]}


def test_sticky_higher_generation_wins_a_conflicting_claim() -> None:
    cluster = ClusterMetadata({"t": 2})
    subs = {
        "a": Subscription(("t",), owned_partitions=tps("t-0"), generation_id=4),
        "b": Subscription(("t",), owned_partitions=tps("t-0"), generation_id=5),
    }
    result = CooperativeStickyAssignor().assign(cluster, subs)
    assert as_names(result) == {"a": ["t-1"], "b": ["t-0"]}


def test_assignor_metadata_and_names() -> None:
    assert ASSIGNOR_NAMES == ("range", "roundrobin", "sticky", "cooperative-sticky")
    for name in ASSIGNOR_NAMES:
        assignor = assignor_by_name(name)
        assert assignor.name == name
        assert assignor.version == 0
    assert assignor_by_name("cooperative-sticky").supported_protocols == (
        RebalanceProtocol.COOPERATIVE,
        RebalanceProtocol.EAGER,
    )
    assert assignor_by_name("sticky").supported_protocols == (RebalanceProtocol.EAGER,)
    assert assignor_by_name("sticky") is not assignor_by_name("sticky")
    with pytest.raises(ValueError, match="unknown assignor"):
        assignor_by_name("uniform")


def test_topics_without_metadata_are_skipped() -> None:
    cluster = ClusterMetadata({"known": 2})
    for name in ASSIGNOR_NAMES:
        result = assignor_by_name(name).assign(cluster, {"m": Subscription(("known", "gone"))})
        assert result == {"m": Assignment(tps("known-0", "known-1"))}


def test_cluster_metadata_checks_rack_lists() -> None:
    with pytest.raises(ValueError, match="2 entries for 3 partitions"):
        ClusterMetadata({"t": 3}, {"t": [("r0",), ("r1",)]})


# ------------------------------------------------------------------ properties

TOPICS = ["t0", "t1", "orders", "Aa", "BB"]


@st.composite
def groups(
    draw: st.DrawFn, same_topics: bool | None = None
) -> tuple[ClusterMetadata, dict[str, Subscription]]:
    topics = draw(st.lists(st.sampled_from(TOPICS), min_size=1, max_size=4, unique=True))
    counts = {t: draw(st.integers(1, 12)) for t in topics}
    racked = draw(st.booleans())
    replica_racks = (
        {
            t: [
                tuple(draw(st.lists(st.sampled_from(["r0", "r1", "r2"]), min_size=1, max_size=2)))
                for _ in range(n)
            ]
            for t, n in counts.items()
        }
        if racked
        else {}
    )
    cluster = ClusterMetadata(counts, replica_racks)
    same = draw(st.booleans()) if same_topics is None else same_topics
    ids = draw(
        st.lists(st.text("abcé😀-", min_size=1, max_size=6), min_size=1, max_size=8, unique=True)
    )
    subs: dict[str, Subscription] = {}
    for member in ids:
        chosen = (
            topics if same else draw(st.lists(st.sampled_from(topics), min_size=1, unique=True))
        )
        subs[member] = Subscription(
            tuple(chosen),
            rack_id=draw(st.sampled_from(["r0", "r1", "r2", None])) if racked else None,
            group_instance_id=draw(st.sampled_from([None, None, "i1", "i2", "i3"])),
        )
    # group.instance.id is unique within a group
    seen: set[str] = set()
    for member, sub in list(subs.items()):
        if sub.group_instance_id in seen:
            subs[member] = Subscription(sub.topics, rack_id=sub.rack_id)
        elif sub.group_instance_id is not None:
            seen.add(sub.group_instance_id)
    return cluster, subs


def assert_valid(
    cluster: ClusterMetadata,
    subs: Mapping[str, Subscription],
    result: Mapping[str, Assignment],
    complete: bool = True,
) -> None:
    assert list(result) == list(subs)
    counts = Counter(tp for a in result.values() for tp in a.partitions)
    assert all(n == 1 for n in counts.values()), "a partition assigned twice"
    for member, assignment in result.items():
        assert {tp.topic for tp in assignment.partitions} <= set(subs[member].topics)
    subscribed = {
        T(t, p)
        for sub in subs.values()
        for t in sub.topics
        for p in range(cluster.partitions_per_topic.get(t, 0))
    }
    assert set(counts) <= subscribed
    if complete:
        assert set(counts) == subscribed


def assert_balanced(
    cluster: ClusterMetadata, subs: Mapping[str, Subscription], result: Mapping[str, Assignment]
) -> None:
    """No partition could move to a member with at least two fewer partitions (Kafka's
    ``isBalanced`` / ``verifyValidityAndBalance``)."""
    size = {m: len(a.partitions) for m, a in result.items()}
    owner = {tp: m for m, a in result.items() for tp in a.partitions}
    for member, sub in subs.items():
        for t in sub.topics:
            for p in range(cluster.partitions_per_topic.get(t, 0)):
                other = owner[T(t, p)]
                assert size[member] + 1 >= size[other], (member, other, T(t, p))


@settings(max_examples=100, deadline=None)
@given(group=groups(), name=st.sampled_from(ASSIGNOR_NAMES))
def test_every_subscribed_partition_assigned_exactly_once(
    group: tuple[ClusterMetadata, dict[str, Subscription]], name: str
) -> None:
    cluster, subs = group
    result = assignor_by_name(name).assign(cluster, subs)
    assert_valid(cluster, subs, result)
    # deterministic: the same input gives the same lists, in the same order
    assert assignor_by_name(name).assign(cluster, subs) == result


@settings(max_examples=100, deadline=None)
@given(
    group=groups(same_topics=True),
    name=st.sampled_from(["roundrobin", "sticky", "cooperative-sticky"]),
)
def test_identical_subscriptions_are_balanced_within_one(
    group: tuple[ClusterMetadata, dict[str, Subscription]], name: str
) -> None:
    cluster, subs = group
    sizes = [len(a.partitions) for a in assignor_by_name(name).assign(cluster, subs).values()]
    assert max(sizes) - min(sizes) <= 1


@settings(max_examples=60, deadline=None)
@given(group=groups(same_topics=False), name=st.sampled_from(["sticky", "cooperative-sticky"]))
def test_sticky_is_balanced_for_any_subscriptions(
    group: tuple[ClusterMetadata, dict[str, Subscription]], name: str
) -> None:
    cluster, subs = group
    result = assignor_by_name(name).assign(cluster, subs)
    assert_valid(cluster, subs, result)
    assert_balanced(cluster, subs, result)


@settings(max_examples=60, deadline=None)
@given(group=groups(same_topics=True), leave=st.integers(0, 7), join=st.integers(0, 3))
def test_sticky_keeps_what_it_can_after_members_change(
    group: tuple[ClusterMetadata, dict[str, Subscription]], leave: int, join: int
) -> None:
    cluster, subs = group
    sticky = StickyAssignor()
    first = sticky.assign(cluster, subs)
    topics = next(iter(subs.values())).topics
    stay = list(subs)[: max(1, len(subs) - leave)]
    second_subs = {
        m: Subscription(topics, sticky.subscription_user_data(topics, first[m].partitions, 1))
        for m in stay
    }
    second_subs.update({f"new-{k}": Subscription(topics) for k in range(join)})
    second = sticky.assign(cluster, second_subs)
    assert_valid(cluster, second_subs, second)
    if any(s.rack_id for s in subs.values()):
        return  # rack alignment may legitimately move partitions
    total = sum(cluster.partitions_per_topic.values())
    min_quota = total // len(second_subs)
    for m in stay:
        kept = set(first[m].partitions) & set(second[m].partitions)
        assert len(kept) >= min(len(first[m].partitions), min_quota)


@settings(max_examples=60, deadline=None)
@given(group=groups(), leave=st.integers(0, 7), join=st.integers(0, 3))
def test_cooperative_never_moves_an_owned_partition_in_one_round(
    group: tuple[ClusterMetadata, dict[str, Subscription]], leave: int, join: int
) -> None:
    cluster, subs = group
    coop = CooperativeStickyAssignor()
    first = coop.assign(cluster, subs)
    assert_valid(cluster, subs, first)
    members = {m: subs[m] for m in list(subs)[: max(1, len(subs) - leave)]}
    topics = next(iter(subs.values())).topics
    members.update({f"new-{k}": Subscription(topics) for k in range(join)})
    owned = {m: first[m].partitions if m in first else () for m in members}
    # rebalance until nothing is withheld any more: every round may only assign partitions
    # nobody else still owns; a partition changing owner is revoked first
    for generation in range(1, 8):
        round_subs = {
            m: Subscription(s.topics, None, owned[m], generation, s.rack_id)
            for m, s in members.items()
        }
        result = coop.assign(cluster, round_subs)
        assert_valid(cluster, round_subs, result, complete=False)
        owner = {tp: m for m, tps in owned.items() for tp in tps}
        for member, assignment in result.items():
            for tp in assignment.partitions:
                assert owner.get(tp, member) == member
        owned = {m: a.partitions for m, a in result.items()}
        withheld = {
            T(t, p)
            for s in round_subs.values()
            for t in s.topics
            for p in range(cluster.partitions_per_topic.get(t, 0))
        } - {tp for tps in owned.values() for tp in tps}
        if not withheld:
            break
    if any(s.rack_id for s in subs.values()) and cluster.replica_racks:
        # Kafka's rack-aware sticky assignment puts balance before rack alignment and may move
        # an owned partition for locality again in the next round (AbstractStickyAssignor's
        # documentation), so with mixed subscriptions it need not settle: the rule of every
        # round above is what holds.
        return
    assert_valid(cluster, round_subs, result)
