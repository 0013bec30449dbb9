"""Our assignors against Kafka's own, on the same seeded random inputs.

``OffsetscopeAssignorOracle.java`` is compiled at test time against the kafka-clients 4.4.0 jar
that ``make install`` puts in ``build/jvm/kafka/`` and started once for the module; every case is
one JSON line to it and one back. Each case must match exactly: the same partitions in the same
order for every member (or an error on both sides), the same userData bytes, the same decoded
member data and the same ``java.util.HashMap`` iteration order.

Per run: 1,000 single-round groups (1-12 members, 1-6 topics, 1-40 partitions), 60 large groups
(20-60 members, up to 1,000 partitions), 160 sequences of 8 rebalances (1,280 rounds, members
joining, leaving, changing subscriptions, topics growing; the previous assignment flows back as
owned partitions / userData), 160 rounds where generations go back, 200 HashMap operation
sequences, 202 userData encodings and 600 member-data decodings.
"""

from __future__ import annotations

import base64
import json
import random
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from offsetscope.sim.coordinator.assignors import (
    AssignmentError,
    Assignor,
    ClusterMetadata,
    Subscription,
    TopicPartition,
    assignor_by_name,
)
from offsetscope.sim.coordinator.assignors.userdata import (
    cooperative_member_data,
    encode_sticky_user_data,
    sticky_member_data,
)
from offsetscope.sim.coordinator.java import (
    JavaHashMap,
    java_string_hash,
    topic_partition_hash,
)

pytestmark = pytest.mark.jvm

ROOT = Path(__file__).resolve().parents[2]
JARS = ROOT / "build" / "jvm" / "kafka"
CLIENTS_JAR = JARS / "kafka-clients-4.4.0.jar"
SOURCE = Path(__file__).with_name("OffsetscopeAssignorOracle.java")
MAIN_CLASS = "org.apache.kafka.clients.consumer.OffsetscopeAssignorOracle"

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
STICKY = ("sticky", "cooperative-sticky")
SINGLE_ROUND_CASES = 250  # per assignor
LARGE_CASES = 15  # per assignor: up to 60 members and 1,000 partitions
SEQUENCES = 40  # per assignor
ROUNDS = 8


class Oracle:
    """One JVM running Kafka's assignors; ``ask`` sends a request and returns the answer."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self._proc = proc
        self.requests = 0

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self._proc.stdin is not None
        assert self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"oracle exited with {self._proc.wait()}")
        self.requests += 1
        answer: dict[str, Any] = json.loads(line)
        return answer


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Oracle]:
    if not CLIENTS_JAR.is_file():
        pytest.fail(
            f"{CLIENTS_JAR.relative_to(ROOT)} is missing: run `make install`, which resolves "
            "deploy/jvm/pom.xml into build/jvm/kafka/"
        )
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        pytest.fail("javac and java (JDK 17) must be on PATH")
    classes = tmp_path_factory.mktemp("oracle-classes")
    classpath = f"{JARS}/*"
    subprocess.run(
        [javac, "-nowarn", "-d", str(classes), "-cp", classpath, str(SOURCE)],
        check=True,
        capture_output=True,
    )
    proc = subprocess.Popen(
        [java, "-cp", f"{classes}:{classpath}", MAIN_CLASS],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        encoding="utf-8",
    )
    try:
        yield Oracle(proc)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


# ------------------------------------------------------------------ JSON <-> our types


def _tps(partitions: Sequence[TopicPartition]) -> list[list[Any]]:
    return [[tp.topic, tp.partition] for tp in partitions]


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _member_json(member_id: str, sub: Subscription) -> dict[str, Any]:
    return {
        "id": member_id,
        "topics": list(sub.topics),
        "userData": _b64(sub.user_data),
        "owned": _tps(sub.owned_partitions),
        "generation": sub.generation_id,
        "rack": sub.rack_id,
        "instanceId": sub.group_instance_id,
    }


def _cluster_json(cluster: ClusterMetadata) -> dict[str, Any]:
    return {
        "topics": dict(cluster.partitions_per_topic),
        "racks": {t: [list(r) for r in per] for t, per in cluster.replica_racks.items()},
    }


def _from_json(partitions: list[list[Any]]) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(t, p) for t, p in partitions)


def _ours(
    assignor: Assignor, cluster: ClusterMetadata, subs: dict[str, Subscription]
) -> dict[str, Any]:
    try:
        result = assignor.assign(cluster, subs)
    except AssignmentError as e:
        return {"error": e.java_exception}
    return {m: _tps(a.partitions) for m, a in result.items()}


def _theirs(answer: dict[str, Any]) -> dict[str, Any]:
    if "error" in answer:
        return {"error": str(answer["error"]).split(":", 1)[0]}
    return {a["member"]: a["partitions"] for a in answer["assignments"]}


def _compare(
    oracle: Oracle,
    name: str,
    cluster: ClusterMetadata,
    subs: dict[str, Subscription],
    ours: Assignor,
    instance: str | None = None,
) -> dict[str, Any]:
    request: dict[str, Any] = {
        "op": "assign",
        "assignor": name,
        "cluster": _cluster_json(cluster),
        "members": [_member_json(m, s) for m, s in subs.items()],
    }
    if instance is not None:
        request["instance"] = instance
    answer = oracle.ask(request)
    theirs, mine = _theirs(answer), _ours(ours, cluster, subs)
    assert mine == theirs, json.dumps(request)
    return theirs


# ------------------------------------------------------------------ random inputs

TOPIC_POOL = ["t0", "t1", "t2", "orders", "payments", "a.b-c_d", "Z", "t10", "x" * 40]
RACKS = ["r0", "r1", "r2", ""]


def _member_id(rng: random.Random) -> str:
    client = rng.choice(["consumer", "app", "é-client", "svc😀", "Consumer"])
    return f"{client}-{rng.randrange(1, 30)}-{rng.getrandbits(32):08x}"


def _random_cluster(
    rng: random.Random, topics: list[str], racks: bool, most: int = 40
) -> ClusterMetadata:
    counts = {t: rng.randint(1, most) for t in topics}
    replica_racks: dict[str, list[list[str | None]]] = {}
    if racks:
        for t, n in counts.items():
            if rng.random() < 0.8:
                replica_racks[t] = [
                    [rng.choice([*RACKS[:3], None]) for _ in range(rng.randint(1, 3))]
                    for _ in range(n)
                ]
    return ClusterMetadata(counts, replica_racks)


def _random_owned(
    rng: random.Random, cluster: ClusterMetadata, topics: Sequence[str]
) -> tuple[TopicPartition, ...]:
    pool = [
        TopicPartition(t, p)
        for t in topics
        for p in range(cluster.partitions_per_topic.get(t, 0) + rng.choice([0, 0, 0, 2]))
    ]
    return tuple(rng.sample(pool, rng.randint(0, min(len(pool), 12))))


def _random_case(
    rng: random.Random, name: str, large: bool = False
) -> tuple[ClusterMetadata, dict[str, Subscription]]:
    pool = [*TOPIC_POOL, *(f"big-{i}" for i in range(8))] if large else TOPIC_POOL
    all_topics = rng.sample(pool, rng.randint(4, 10) if large else rng.randint(1, 6))
    in_cluster = [t for t in all_topics if rng.random() < 0.92] or all_topics[:1]
    racks = rng.random() < 0.35
    cluster = _random_cluster(rng, in_cluster, racks, 100 if large else 40)
    same = rng.random() < 0.5
    n = rng.randint(20, 60) if large else rng.randint(1, 12)
    subs: dict[str, Subscription] = {}
    for _ in range(n):
        topics = (
            list(all_topics) if same else rng.sample(all_topics, rng.randint(1, len(all_topics)))
        )
        rng.shuffle(topics)
        owned = _random_owned(rng, cluster, topics) if rng.random() < 0.6 else ()
        generation = rng.choice([-1, 1, 2, 3, 3, 4])
        user_data: bytes | None = None
        if name == "sticky" and rng.random() < 0.7:
            user_data = encode_sticky_user_data(owned, generation)
            roll = rng.random()
            if roll < 0.15:
                user_data = user_data[:-4]  # V0: no generation
            elif roll < 0.2:
                user_data = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 9)))
        elif name == "cooperative-sticky" and generation < 0 and rng.random() < 0.5:
            user_data = rng.choice([b"", b"\x00\x00\x00\x02", b"\x00\x00\x00\x05xx"])
        subs[_member_id(rng)] = Subscription(
            topics=tuple(topics),
            user_data=user_data,
            owned_partitions=owned,
            generation_id=generation,
            rack_id=rng.choice([*RACKS, None]) if racks else None,
            group_instance_id=f"instance-{rng.randrange(100)}" if rng.random() < 0.3 else None,
        )
    return cluster, subs


# ------------------------------------------------------------------ tests


def test_hashmap_iteration_order_matches_java(oracle: Oracle) -> None:
    rng = random.Random(7)
    # strings built from "Aa"/"BB" blocks share one hash: they exercise long bins and the
    # resize-instead-of-treeify rule of small tables
    colliding = ["".join(rng.choice(["Aa", "BB"]) for _ in range(4)) for _ in range(10)]
    for case in range(200):
        tp_keys = case % 2 == 1
        pool: list[Any]
        if tp_keys:
            pool = [[rng.choice(TOPIC_POOL), rng.randrange(60)] for _ in range(rng.randint(1, 120))]
        else:
            pool = [_member_id(rng) for _ in range(rng.randint(1, 60))]
            if case % 4 == 0:
                pool = list(dict.fromkeys(colliding[: rng.randint(2, 10)])) + pool[:5]
        ops = [
            [rng.choice(["put", "put", "cia", "remove"]), rng.choice(pool)]
            for _ in range(rng.randint(1, 150))
        ]
        capacity = rng.choice([None, None, 1, 2, 5, 16, 33])
        answer = oracle.ask(
            {
                "op": "hashorder",
                "keytype": "tp" if tp_keys else "string",
                "capacity": capacity,
                "ops": ops,
            }
        )
        m: JavaHashMap[Any, bool] = JavaHashMap(
            topic_partition_hash if tp_keys else java_string_hash, capacity
        )
        for op, raw in ops:
            key = TopicPartition(raw[0], raw[1]) if tp_keys else raw
            if op == "put":
                m.put(key, True)
            elif op == "cia":
                m.compute_if_absent(key, lambda _k: True)
            else:
                m.remove(key)
        order = [[k.topic, k.partition] if tp_keys else k for k in m]
        assert order == answer["order"], json.dumps(ops)


def _claims_missing_partition(
    name: str, cluster: ClusterMetadata, subs: dict[str, Subscription]
) -> bool:
    """Whether some member claims a partition number its topic does not have."""
    decode = sticky_member_data if name == "sticky" else cooperative_member_data
    return any(
        0 < cluster.partitions_per_topic.get(tp.topic, 0) <= tp.partition
        for sub in subs.values()
        for tp in decode(sub).partitions
    )


@pytest.mark.parametrize("name", ASSIGNORS)
def test_single_round_matches_kafka(oracle: Oracle, name: str) -> None:
    rng = random.Random(f"single-{name}")
    for _ in range(SINGLE_ROUND_CASES):
        cluster, subs = _random_case(rng, name)
        theirs = _compare(oracle, name, cluster, subs, assignor_by_name(name))
        if "error" in theirs:
            # Kafka (and so we) fail only when a member claims a partition that does not exist
            assert name in STICKY
            assert _claims_missing_partition(name, cluster, subs)


@pytest.mark.parametrize("name", ASSIGNORS)
def test_large_groups_match_kafka(oracle: Oracle, name: str) -> None:
    rng = random.Random(f"large-{name}")
    for _ in range(LARGE_CASES):
        cluster, subs = _random_case(rng, name, large=True)
        theirs = _compare(oracle, name, cluster, subs, assignor_by_name(name))
        if "error" in theirs:
            assert _claims_missing_partition(name, cluster, subs)


def _next_subscription(
    name: str,
    topics: tuple[str, ...],
    previous: tuple[TopicPartition, ...] | None,
    generation: int,
    rack: str | None,
    instance: str | None,
    legacy: bool,
    assignor: Assignor,
) -> Subscription:
    owned = previous or ()
    gen = generation if previous is not None else -1
    if name == "cooperative-sticky":
        # a member on an old protocol version sends the generation only in userData
        return Subscription(
            topics,
            assignor.subscription_user_data(topics, owned, gen),
            owned,
            -1 if legacy else gen,
            rack,
            instance,
        )
    if name == "sticky":
        # eager members revoke everything before joining: the past is only in userData
        return Subscription(
            topics, assignor.subscription_user_data(topics, owned, gen), (), -1, rack, instance
        )
    return Subscription(topics, None, owned, gen, rack, instance)


@pytest.mark.parametrize("name", ASSIGNORS)
def test_rebalance_sequences_match_kafka(oracle: Oracle, name: str) -> None:
    rng = random.Random(f"sequence-{name}")
    for seq in range(SEQUENCES):
        topics = rng.sample(TOPIC_POOL, rng.randint(1, 6))
        racks = rng.random() < 0.3
        cluster = _random_cluster(rng, topics, racks)
        same = rng.random() < 0.5
        leader = assignor_by_name(name)
        instance = f"{name}-{seq}"
        members: dict[str, dict[str, Any]] = {}

        def join(
            members: dict[str, dict[str, Any]] = members,
            topics: list[str] = topics,
            same: bool = same,
            racks: bool = racks,
        ) -> None:
            chosen = list(topics) if same else rng.sample(topics, rng.randint(1, len(topics)))
            members[_member_id(rng)] = {
                "topics": tuple(chosen),
                "rack": rng.choice([*RACKS, None]) if racks else None,
                "instance": f"static-{rng.randrange(50)}" if rng.random() < 0.25 else None,
                "legacy": rng.random() < 0.2,
                "assignment": None,
            }

        for _ in range(rng.randint(1, 8)):
            join()
        for generation in range(1, ROUNDS + 1):
            event = rng.random()
            if event < 0.3:
                for _ in range(rng.randint(1, 3)):
                    join()
            elif event < 0.55 and len(members) > 1:
                for gone in rng.sample(sorted(members), rng.randint(1, len(members) - 1)):
                    del members[gone]
            elif event < 0.65 and not same:
                victim = rng.choice(sorted(members))
                members[victim]["topics"] = tuple(rng.sample(topics, rng.randint(1, len(topics))))
            elif event < 0.7:
                grown = rng.choice(topics)
                counts = dict(cluster.partitions_per_topic)
                counts[grown] += rng.randint(1, 5)
                # partitions were added to a topic; new partitions get a replica rack too
                cluster = ClusterMetadata(
                    counts,
                    {
                        t: [*r, *([[rng.choice(RACKS[:3])]] * (counts[t] - len(r)))]
                        for t, r in cluster.replica_racks.items()
                    },
                )
            order = list(members)
            rng.shuffle(order)  # the JoinGroup response order varies between rebalances
            subs = {
                m: _next_subscription(
                    name,
                    members[m]["topics"],
                    members[m]["assignment"],
                    generation - 1,
                    members[m]["rack"],
                    members[m]["instance"],
                    members[m]["legacy"],
                    leader,
                )
                for m in order
            }
            theirs = _compare(oracle, name, cluster, subs, leader, instance)
            assert "error" not in theirs, f"Kafka failed on sequence {seq}"
            for m, partitions in theirs.items():
                members[m]["assignment"] = _from_json(partitions)


@pytest.mark.parametrize("name", STICKY)
def test_assignor_remembers_generations_across_groups(oracle: Oracle, name: str) -> None:
    """Kafka's sticky assignors never reset ``maxGeneration``: after a group is recreated at
    low generations, older claims still count as "previous" owners. Same object both sides."""
    rng = random.Random(f"generations-{name}")
    for seq in range(40):
        leader = assignor_by_name(name)
        instance = f"regen-{name}-{seq}"
        cluster = _random_cluster(rng, rng.sample(TOPIC_POOL, rng.randint(2, 5)), False)
        topics = list(cluster.partitions_per_topic)
        for high, low in ((30, 40), (1, 4)):
            subs: dict[str, Subscription] = {}
            for _ in range(rng.randint(2, 8)):
                chosen = tuple(rng.sample(topics, rng.randint(1, len(topics))))
                owned = _random_owned(rng, cluster, chosen)
                generation = rng.randint(high, low)
                user_data = (
                    encode_sticky_user_data(owned, generation)
                    if name == "sticky"
                    else leader.subscription_user_data(chosen, owned, generation)
                )
                subs[_member_id(rng)] = Subscription(chosen, user_data, owned, generation)
            _compare(oracle, name, cluster, subs, leader, instance)


def test_sticky_user_data_bytes_match_kafka(oracle: Oracle) -> None:
    rng = random.Random(11)
    for _ in range(100):
        pool = [TopicPartition(rng.choice(TOPIC_POOL), p) for p in range(30)]
        assigned = rng.sample(pool, rng.randint(0, 20))
        generation = rng.randint(0, 2**31 - 1) if rng.random() < 0.2 else rng.randint(0, 50)
        answer = oracle.ask(
            {
                "op": "userdata",
                "assignor": "sticky",
                "assigned": _tps(assigned),
                "generation": generation,
            }
        )
        ours = assignor_by_name("sticky").subscription_user_data((), tuple(assigned), generation)
        assert _b64(ours) == answer["userData"]
        coop = oracle.ask(
            {
                "op": "userdata",
                "assignor": "cooperative-sticky",
                "assigned": _tps(assigned),
                "generation": generation,
            }
        )
        ours = assignor_by_name("cooperative-sticky").subscription_user_data(
            (), tuple(assigned), generation
        )
        assert _b64(ours) == coop["userData"]
    for name in STICKY:
        fresh = oracle.ask({"op": "userdata", "assignor": name})
        assert _b64(assignor_by_name(name).subscription_user_data((), (), -1)) == fresh["userData"]


def test_member_data_decoding_matches_kafka(oracle: Oracle) -> None:
    rng = random.Random(13)
    for case in range(300):
        pool = [TopicPartition(rng.choice(TOPIC_POOL), p) for p in range(10)]
        owned = tuple(rng.sample(pool, rng.randint(0, 6)))
        data = encode_sticky_user_data(owned, rng.randint(-3, 9))
        roll = case % 6
        user_data: bytes | None
        if roll == 0:
            user_data = data[:-4]
        elif roll == 1:
            user_data = data[: rng.randint(0, len(data))]
        elif roll == 2:
            user_data = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 24)))
        elif roll == 3:
            # a topic name with bytes that are not UTF-8
            user_data = b"\x00\x00\x00\x01\x00\x03t\xff\xfe\x00\x00\x00\x01\x00\x00\x00\x02"
            user_data += b"\x00\x00\x00\x07" if rng.random() < 0.5 else b""
        elif roll == 4:
            user_data = None
        else:
            user_data = data + bytes(rng.randint(0, 3))
        sub = Subscription(("t0",), user_data, owned, rng.choice([-1, -1, 0, 4]), None, None)
        member = _member_json("m", sub)
        for name, ours in (
            ("sticky", sticky_member_data),
            ("cooperative-sticky", cooperative_member_data),
        ):
            answer = oracle.ask({"op": "memberdata", "assignor": name, "member": member})
            data_ours = ours(sub)
            assert [_tps(data_ours.partitions), data_ours.generation] == [
                answer["partitions"],
                answer["generation"],
            ], (name, _b64(user_data))


def test_cooperative_sticky_never_hands_over_an_owned_partition_directly(oracle: Oracle) -> None:
    """The cooperative follow-up: revoked partitions come back only in the next round."""
    cluster = ClusterMetadata({"t0": 6})
    leader = assignor_by_name("cooperative-sticky")
    everything = tuple(TopicPartition("t0", p) for p in range(6))
    first = {
        "consumer-a": Subscription(
            ("t0",), leader.subscription_user_data(("t0",), everything, 4), everything, 4
        ),
        "consumer-b": Subscription(("t0",), leader.subscription_user_data(("t0",), (), -1)),
    }
    theirs = _compare(oracle, "cooperative-sticky", cluster, first, leader, "coop-check")
    assert theirs["consumer-b"] == []
    assert len(theirs["consumer-a"]) == 3
    kept = _from_json(theirs["consumer-a"])
    second = {
        "consumer-a": Subscription(
            ("t0",), leader.subscription_user_data(("t0",), kept, 5), kept, 5
        ),
        "consumer-b": Subscription(("t0",), leader.subscription_user_data(("t0",), (), 5), (), 5),
    }
    theirs = _compare(oracle, "cooperative-sticky", cluster, second, leader, "coop-check")
    assert sorted(_from_json(theirs["consumer-b"])) == sorted(set(everything) - set(kept))
    assert _from_json(theirs["consumer-a"]) == kept
