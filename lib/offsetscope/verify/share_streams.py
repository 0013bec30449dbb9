"""Share and Kafka Streams groups on the real broker, against what their clients observed.

The bundled coordinator simulates classic and KIP-848 consumer groups and transactions, not
share groups (KIP-932) nor Kafka Streams groups (KIP-1071): their ground truth is what real
clients observed on the harness broker. :func:`workload`:

* a Kafka Streams word count (:mod:`offsetscope.verify.harness.streams`, ``group.protocol =
  streams``, one standby replica): instance A alone, then B joins, then B leaves; after each
  step, once both instances report a stable split, the active and standby tasks each instance
  owns, with its Streams process id and user endpoint;
* a share consumer (confluent-kafka's ``ShareConsumer``) that receives records as they are
  produced, acknowledges them and commits: the offsets it received.

:func:`compare` checks the gold tables against that: for every step, a ``streams_assignments``
epoch whose members (matched by process id) own exactly the tasks the instances reported, on
the hosts and ports of their endpoints; a ``group_generations`` row of kind ``streams`` per
group epoch, B's member session closed when it left; a ``share`` group epoch, and the
share-partition's state starting at or before the first record delivered and ending right after
the last one (all of them acknowledged), its topic named.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from offsetscope.history.share_state import ACKNOWLEDGED, ARCHIVED

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from offsetscope import config as config_mod
    from offsetscope.verify.accuracy import Checker

PARTITIONS = 2
# Subtopology 0 reads the input and repartitions by word; subtopology 1 counts (stateful: the
# only one with standby tasks).
ALL_TASKS = frozenset(f"{s}_{p}" for s in (0, 1) for p in range(PARTITIONS))
STATEFUL = frozenset(t for t in ALL_TASKS if t.startswith("1_"))


@dataclass(frozen=True, slots=True)
class Step:
    """One settled split of the Streams group: process id -> (endpoint, active, standby)."""

    name: str
    members: Mapping[str, tuple[str, frozenset[str], frozenset[str]]]


@dataclass(frozen=True, slots=True)
class Observed:
    application_id: str
    steps: tuple[Step, ...]
    left_process: str  # the instance that left
    share_group: str
    share_topic: str
    share_offsets: tuple[int, ...]  # offsets of partition 0 the share consumer received


def _settled(views: Sequence[Any]) -> bool:
    """Every instance running, the active tasks split with no overlap, each stateful task
    active somewhere kept as a standby on another instance (when there is one)."""
    if not all(v.state == "RUNNING" for v in views):
        return False
    actives = [v.active for v in views]
    if frozenset().union(*actives) != ALL_TASKS or sum(len(a) for a in actives) != len(ALL_TASKS):
        return False
    if len(views) == 1:
        return not views[0].standby
    return all(
        v.standby == frozenset(t for o in views if o is not v for t in o.active) & STATEFUL
        for v in views
    )


def workload(bootstrap: str, work_dir: Path, *, wait_s: float = 180.0) -> Observed:
    """Run the Streams and share-group clients (see the module docstring)."""
    from confluent_kafka import Producer

    from offsetscope.verify.harness.clients import create_topic, share_consume
    from offsetscope.verify.harness.streams import (
        StreamsInstance,
        compile_app,
        set_standby_replicas,
    )

    tag = uuid.uuid4().hex[:8]
    app_id = f"wordcount-{tag}"
    words_in, words_out = f"words-in-{tag}", f"words-out-{tag}"
    for topic in (words_in, words_out):
        create_topic(bootstrap, topic, PARTITIONS)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(40):
        producer.produce(words_in, key=str(i), value=("alpha", "beta", "gamma")[i % 3])
    assert producer.flush(30) == 0
    classes = compile_app(work_dir / "classes")
    set_standby_replicas(bootstrap, app_id, 1)

    def start(name: str, port: int) -> StreamsInstance:
        return StreamsInstance(
            classes,
            bootstrap,
            app_id,
            words_in,
            words_out,
            work_dir / f"state-{name}",
            f"offsetscope-{name}:{port}",
        )

    steps: list[Step] = []

    def settle(name: str, instances: Sequence[StreamsInstance]) -> None:
        instances[0].wait_for(
            lambda _: _settled([i.view() for i in instances]), wait_s, f"{name}: a stable split"
        )
        steps.append(
            Step(
                name,
                {
                    i.process_id(): (i.endpoint, i.view().active, i.view().standby)
                    for i in instances
                },
            )
        )

    a = start("a", 7070)
    b: StreamsInstance | None = None
    try:
        settle("a alone", [a])
        b = start("b", 7071)
        settle("a and b", [a, b])
        left = b.process_id()
        b.stop()
        settle("b left", [a])
    finally:
        if b is not None:
            b.stop()
        a.stop()

    share_group, share_topic = f"share-{tag}", f"share-in-{tag}"
    create_topic(bootstrap, share_topic, 1)
    feeder = Producer({"bootstrap.servers": bootstrap})

    def tick() -> None:
        feeder.produce(share_topic, b"task", partition=0)
        feeder.flush(10)

    seen: list[tuple[str, int, int]] = []
    share_consume(bootstrap, share_group, [share_topic], want=12, tick=tick, offsets=seen)
    offsets = tuple(sorted(o for _, _, o in seen))
    return Observed(app_id, tuple(steps), left, share_group, share_topic, offsets)


@dataclass(frozen=True, slots=True)
class Gold:
    """The gold rows :func:`compare` reads."""

    generations: Sequence[Mapping[str, Any]]
    sessions: Sequence[Mapping[str, Any]]
    streams: Sequence[Mapping[str, Any]]
    share_state: Sequence[Mapping[str, Any]]


def read_gold(spark: SparkSession, cfg: config_mod.Config, observed: Observed) -> Gold:
    from offsetscope.spark import tables as catalogue

    def rows(logical: str, where: str) -> list[dict[str, Any]]:
        df = spark.table(catalogue.table_name(cfg, logical)).where(where)
        return [r.asDict(recursive=True) for r in df.collect()]

    groups = f"group_id IN ('{observed.application_id}', '{observed.share_group}')"
    return Gold(
        rows("group_generations", groups),
        rows("member_sessions", groups),
        rows("streams_assignments", f"group_id = '{observed.application_id}'"),
        rows("share_partition_state", f"group_id = '{observed.share_group}'"),
    )


def _task_ids(tasks: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    return frozenset(f"{t['subtopology_id']}_{p}" for t in tasks for p in t["partitions"])


def done_through(state: Mapping[str, Any]) -> int:
    """The first offset of a share-partition state row not known to be done: its start offset,
    moved over the acknowledged or archived batches that follow it without a gap."""
    done = int(state["start_offset"])
    for batch in sorted(state["batches"], key=lambda b: b["first_offset"]):
        if batch["first_offset"] > done or batch["delivery_state"] not in (ACKNOWLEDGED, ARCHIVED):
            break
        done = max(done, int(batch["last_offset"]) + 1)
    return done


def compare(checker: Checker, observed: Observed, gold: Gold) -> None:
    """The facts of the module docstring, into ``checker``."""
    app = observed.application_id
    by_epoch: dict[int, list[Mapping[str, Any]]] = {}
    for r in gold.streams:
        by_epoch.setdefault(r["assignment_epoch"], []).append(r)
    for step in observed.steps:
        want = {pid: (active, standby) for pid, (_, active, standby) in step.members.items()}
        matching = [
            e
            for e, rows in sorted(by_epoch.items())
            if {r["process_id"]: (_task_ids(r["active_tasks"]), _task_ids(r["standby_tasks"]))
                for r in rows} == want
        ]  # fmt: skip
        checker.check("streams", f"{app} {step.name}: an epoch with the tasks observed", True,
                      bool(matching))  # fmt: skip
        if not matching:
            continue
        rows = by_epoch[matching[-1]]
        for pid, (endpoint, _, _) in sorted(step.members.items()):
            row = next(r for r in rows if r["process_id"] == pid)
            host, _, port = endpoint.rpartition(":")
            checker.check("streams", f"{app} {step.name}: {pid} endpoint", (host, int(port)),
                          (row["host"], row["port"]))  # fmt: skip
    epochs = sorted(r["generation"] for r in gold.generations if r["group_id"] == app)
    kinds = {r["kind"] for r in gold.generations if r["group_id"] == app}
    checker.check("streams", f"{app} generation kind", {"streams"}, kinds)
    checker.check("streams", f"{app} epochs: one row each", sorted(set(epochs)), epochs)
    checker.check(
        "streams", f"{app} epochs for the steps", True, len(epochs) >= len(observed.steps)
    )
    left = {r["member_id"] for r in gold.streams if r["process_id"] == observed.left_process}
    closed = {
        r["member_id"]
        for r in gold.sessions
        if r["group_id"] == app and r["left_at"] is not None and r["end_reason"] == "left"
    }
    checker.check("streams", f"{app} the member that left has a closed session", True,
                  bool(left) and left <= closed)  # fmt: skip

    share = observed.share_group
    share_kinds = {r["kind"] for r in gold.generations if r["group_id"] == share}
    checker.check("share", f"{share} generation kind", {"share"}, share_kinds)
    states = sorted(gold.share_state, key=lambda r: r["record_offset"])
    checker.check("share", f"{share} share-partition state rows", True, bool(states))
    if states and observed.share_offsets:
        first, last = states[0], states[-1]
        # The share-partition began at or before the first record delivered, and once every
        # record delivered was acknowledged and committed, every one is done: below the start
        # offset or in an acknowledged batch right above it (the coordinator may persist the
        # last acknowledgement before it moves the start offset past it).
        checker.check("share", f"{share} first start offset", True,
                      first["start_offset"] <= observed.share_offsets[0])  # fmt: skip
        checker.check("share", f"{share} done through at the end", observed.share_offsets[-1] + 1,
                      done_through(last))  # fmt: skip
        checker.check("share", f"{share} topic", observed.share_topic, last["topic"])


def accuracy(
    spark: SparkSession, base: config_mod.Config, bootstrap: str, work_dir: Path, source: str
) -> Checker:
    """Run the workload, ingest the broker's internal topics, compare (``make accuracy
    ACCURACY_ARGS=--real-broker`` and ``tests/kafka``)."""
    from offsetscope import config as config_mod
    from offsetscope.pipelines import ingest
    from offsetscope.spark import tables as catalogue
    from offsetscope.verify.accuracy import Checker

    observed = workload(bootstrap, work_dir / "clients")
    tag = uuid.uuid4().hex[:8]
    cfg = config_mod.with_kafka_source(base, bootstrap)
    cfg = config_mod.with_storage(
        cfg, schema=f"share_streams_{tag}", checkpoint_dir=work_dir / "checkpoints"
    )
    cfg = config_mod.with_pipeline(cfg, trigger="available_now")
    catalogue.ensure_tables(spark, cfg)
    try:
        ingest.run(spark, cfg, query_name=f"share_streams_{tag}")
        checker = Checker(source)
        compare(checker, observed, read_gold(spark, cfg, observed))
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {catalogue.schema_name(cfg)} CASCADE")
    return checker
