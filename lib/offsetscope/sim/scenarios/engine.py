"""Run a scenario: build the cluster and the clients, apply the timeline, sample, collect truth.

:func:`simulate` is the whole thing::

    result = simulate(load_scenario("consumer-crash"))
    result.cluster.logs          # every partition's batches (write them with write_log_dir)
    result.truth.lines           # the ground truth, in order

Members of a group live in *slots*: slot ``i`` of group ``g`` is the consumer process with client
id ``g-i`` (and, for static groups, ``group.instance.id`` ``g-i``); a restart puts a new process
in the same slot, ``join`` adds slots. Timeline actions name a member by slot index or client id.

Samples every ``sample_interval`` (and at the end) write the end offsets of every data partition
and, per group, the committed offset and the true lag of every partition of its subscribed
topics: ``high watermark - committed`` for ``read_uncommitted`` groups, ``last stable offset -
committed`` for ``read_committed`` ones (records above the LSO are invisible to them).
"""

from __future__ import annotations

import dataclasses
import gc
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from offsetscope.sim.scenarios.apps import PipelineInstance, ProducerApp
from offsetscope.sim.scenarios.clients import SimConsumer
from offsetscope.sim.scenarios.cluster import Cluster
from offsetscope.sim.scenarios.spec import Action, GroupSpec, Scenario, ScenarioError

# (virtual ms done, virtual ms in all) after each slice of a run that reports progress
Progress = Callable[[int, int], None]
PROGRESS_SLICES = 50


@dataclass(slots=True)
class Slot:
    """One member position of a group: the consumer process currently in it, if any."""

    group: GroupSpec
    index: int
    client_id: str
    consumer: SimConsumer | None = None


@dataclass(frozen=True, slots=True)
class SimulationStats:
    steps: int
    wall_seconds: float
    consumers_started: int
    records_produced: int
    offset_commit_records: int
    groups: int


@dataclass(slots=True)
class SimulationResult:
    scenario: Scenario
    cluster: Cluster
    stats: SimulationStats
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def truth(self) -> Any:
        return self.cluster.truth


class Simulation:
    """The scenario's clients on one cluster (see the module docstring)."""

    def __init__(self, scenario: Scenario, progress: Progress | None = None) -> None:
        self.scenario = scenario
        self.progress = progress
        self.cluster = Cluster(
            seed=scenario.seed,
            start_ms=scenario.start_ms,
            topics={t.name: t.partitions for t in scenario.topics},
            group_config=scenario.group_config,
            txn_config=scenario.txn_config,
            truth_commits=scenario.record_commits,
        )
        self.slots: dict[str, list[Slot]] = {g.id: [] for g in scenario.groups}
        # group id -> the configuration new members (``join``) get: its last entry
        self.groups = {g.id: g for g in scenario.groups}
        self.producers: dict[str, ProducerApp] = {}
        self.pipelines: dict[str, list[PipelineInstance]] = {}
        self.retired_instances: list[PipelineInstance] = []
        self.consumers_started = 0

    # ------------------------------------------------------------------ running

    def run(self) -> SimulationResult:
        # Millions of long-lived objects (batches, records, offsets) make every full cyclic
        # GC pass walk all of them; the run creates no garbage cycles worth collecting, so
        # collection waits until it is over (the cost was superlinear in the run's size).
        enabled = gc.isenabled()
        gc.disable()
        try:
            return self._run()
        finally:
            if enabled:
                gc.enable()

    def _run(self) -> SimulationResult:
        started = time.perf_counter()
        scenario = self.scenario
        cluster = self.cluster
        start = scenario.start_ms
        cluster.truth.add("ScenarioStarted", **_describe(scenario))
        for group in scenario.groups:
            for i in range(group.members):
                slot = self._new_slot(group)
                when = start + group.start_ms + i * group.stagger_ms
                cluster.at(when, self._starter(slot))
        for producer in scenario.producers:
            app = ProducerApp(cluster, producer, scenario.end_ms)
            self.producers[producer.name] = app
            cluster.at(start + producer.start_ms, app.start)
        for pipeline in scenario.pipelines:
            instances = [
                PipelineInstance(cluster, pipeline, i, on_replaced=self._replaced)
                for i in range(pipeline.instances)
            ]
            self.pipelines[pipeline.name] = instances
            for instance in instances:
                cluster.at(start + pipeline.start_ms, instance.start)
        for action in scenario.timeline:
            cluster.at(start + action.at_ms, self._applier(action))
        interval = scenario.sample_interval_ms
        if interval > 0:
            at = start + interval
            while at < scenario.end_ms:
                cluster.at(at, self.sample)
                at += interval
        self._run_until_end()
        if interval > 0:
            self.sample()
        commits = sum(
            len(b.records)
            for log in cluster.logs
            if log.topic == "__consumer_offsets"
            for b in log.batches
            if not b.is_control
        )
        stats = SimulationStats(
            steps=cluster.steps,
            wall_seconds=time.perf_counter() - started,
            consumers_started=self.consumers_started,
            records_produced=sum(
                app.producer.records_sent for app in self.producers.values() if app.producer
            ),
            offset_commit_records=commits,
            groups=len(self.groups) + len(self.pipelines),
        )
        cluster.truth.add(
            "ScenarioFinished",
            end_ms=scenario.end_ms,
            consumers_started=stats.consumers_started,
            records_produced=stats.records_produced,
            pipelines={
                name: [dict(i.transactions) for i in instances]
                for name, instances in self.pipelines.items()
            },
        )
        return SimulationResult(scenario, cluster, stats)

    def _run_until_end(self) -> None:
        """The cluster up to the scenario's end; with a progress callback, in slices of virtual
        time, the callback told after each. Running up to a slice boundary and on from there
        fires the same events at the same times as one run (every component moves its clock
        to an event's time before it runs it), so the bytes written do not change."""
        scenario, cluster = self.scenario, self.cluster
        if self.progress is None:
            cluster.run_until(scenario.end_ms)
            return
        total = scenario.end_ms - scenario.start_ms
        step = max(total // PROGRESS_SLICES, 1)
        at = scenario.start_ms
        while at < scenario.end_ms:
            at = min(at + step, scenario.end_ms)
            cluster.run_until(at)
            self.progress(at - scenario.start_ms, total)

    def _new_slot(self, group: GroupSpec) -> Slot:
        slots = self.slots[group.id]
        ordinal = sum(1 for s in slots if s.group.client_prefix == group.client_prefix)
        slot = Slot(group, len(slots), f"{group.client_prefix}-{ordinal}")
        slots.append(slot)
        return slot

    def _starter(self, slot: Slot) -> Callable[[], None]:
        return lambda: self._start_slot(slot)

    def _start_slot(self, slot: Slot) -> None:
        group = slot.group
        consumer = SimConsumer(
            self.cluster,
            group_id=group.id,
            client_id=slot.client_id,
            topics=group.topics,
            spec=group.consumer,
        )
        slot.consumer = consumer
        self.consumers_started += 1
        consumer.start()

    def _replaced(self, old: PipelineInstance, new: PipelineInstance) -> None:
        instances = self.pipelines[old.spec.name]
        instances[old.index] = new
        self.retired_instances.append(old)

    # ------------------------------------------------------------------ sampling

    def sample(self) -> None:
        """One EndOffsets line and one Lag line per group (see the module docstring)."""
        cluster = self.cluster
        ends: dict[tuple[str, int], tuple[int, int, int]] = {}
        partitions_json = []
        for spec in self.scenario.topics:
            for p in range(spec.partitions):
                start, hw, lso = cluster.end_offsets(spec.name, p)
                ends[(spec.name, p)] = (start, hw, lso)
                partitions_json.append(
                    {
                        "topic": spec.name,
                        "partition": p,
                        "log_start_offset": start,
                        "high_watermark": hw,
                        "last_stable_offset": lso,
                    }
                )
        cluster.truth.add("EndOffsets", partitions=partitions_json)
        topics_of: dict[str, set[str]] = {}
        for g in self.scenario.groups:
            topics_of.setdefault(g.id, set()).update(g.topics)
        subscriptions: list[tuple[str, tuple[str, ...], str]] = [
            (g.id, tuple(sorted(topics_of[g.id])), g.consumer.isolation_level)
            for g in self.groups.values()
        ]
        subscriptions.extend(
            (p.group, (p.input,), p.consumer.isolation_level) for p in self.scenario.pipelines
        )
        for group_id, topics, isolation in subscriptions:
            store = cluster.groups.shard_for(group_id).offsets
            rows = []
            for topic in topics:
                for p in range(cluster.partitions(topic)):
                    committed = store.offset(group_id, topic, p)
                    offset = None if committed is None else committed.committed_offset
                    start, hw, lso = ends[(topic, p)]
                    end = lso if isolation == "read_committed" else hw
                    rows.append(
                        {
                            "topic": topic,
                            "partition": p,
                            "committed_offset": offset,
                            "high_watermark": hw,
                            "last_stable_offset": lso,
                            "lag": None if offset is None else max(0, end - offset),
                        }
                    )
            cluster.truth.add("Lag", group_id=group_id, isolation_level=isolation, partitions=rows)

    # ------------------------------------------------------------------ the timeline

    def _applier(self, action: Action) -> Callable[[], None]:
        return lambda: self.apply(action)

    def apply(self, action: Action) -> None:
        """Apply one timeline action now.

        Raises:
            ScenarioError: the action names a member or instance that is not there.
        """
        cluster = self.cluster
        cluster.truth.add("Action", **_action_json(action))
        handler = getattr(self, f"_do_{action.action}")
        handler(action)

    def _slot(self, action: Action, *, running: bool = True) -> Slot:
        assert action.group is not None
        slots = self.slots[action.group]
        member = action.member
        found: Slot | None = None
        if isinstance(member, int):
            if 0 <= member < len(slots):
                found = slots[member]
        else:
            found = next((s for s in slots if s.client_id == member), None)
        if found is None:
            raise ScenarioError(
                f"{action.key_path}.member", f"no member {member!r} in {action.group}"
            )
        if running and (found.consumer is None or not found.consumer.alive):
            raise ScenarioError(
                f"{action.key_path}.member",
                f"member {found.client_id} is not running at {action.at_ms} ms",
            )
        return found

    def _do_join(self, action: Action) -> None:
        assert action.group is not None
        for _ in range(action.count):
            self._start_slot(self._new_slot(self.groups[action.group]))

    def _do_leave(self, action: Action) -> None:
        slot = self._slot(action)
        assert slot.consumer is not None
        slot.consumer.close()

    def _do_crash(self, action: Action) -> None:
        slot = self._slot(action)
        assert slot.consumer is not None
        slot.consumer.crash()

    def _do_restart(self, action: Action) -> None:
        # A member that is down (crashed, left) is simply started again.
        self._restart(self._slot(action, running=False), action)

    def _restart(self, slot: Slot, action: Action) -> None:
        consumer = slot.consumer
        if consumer is not None and consumer.alive:
            if action.graceful:
                consumer.close()
            else:
                consumer.crash()
        self.cluster.at(self.cluster.now + action.downtime_ms, self._starter(slot))

    def _do_rolling_restart(self, action: Action) -> None:
        assert action.group is not None
        live = [s for s in self.slots[action.group] if s.consumer is not None and s.consumer.alive]
        for n, slot in enumerate(live):
            self.cluster.at(
                self.cluster.now + n * action.interval_ms,
                lambda slot=slot: self._restart(slot, action),  # type: ignore[misc]
            )

    def _do_pause(self, action: Action) -> None:
        slot = self._slot(action)
        assert slot.consumer is not None
        slot.consumer.pause(action.duration_ms)

    def _do_freeze(self, action: Action) -> None:
        slot = self._slot(action)
        assert slot.consumer is not None
        slot.consumer.freeze(action.duration_ms)

    def _do_set_processing_rate(self, action: Action) -> None:
        assert action.group is not None
        assert action.rate is not None
        targets = [self._slot(action)] if action.member is not None else self.slots[action.group]
        for slot in targets:
            if slot.consumer is not None:
                slot.consumer.set_processing_rate(action.rate)
        if action.member is None:
            # Members started later (restarts, joins) get the new rate too.
            for slot in self.slots[action.group]:
                slot.group = _with_rate(slot.group, action.rate)
            self.groups[action.group] = _with_rate(self.groups[action.group], action.rate)

    def _do_commit(self, action: Action) -> None:
        slot = self._slot(action)
        assert slot.consumer is not None
        slot.consumer.commit(action.mode)

    def _do_delete_group(self, action: Action) -> None:
        assert action.group is not None
        response = self.cluster.groups.delete_groups([action.group])
        self.cluster.truth.add(
            "DeleteGroupsResult",
            group_id=action.group,
            error=response.errors()[action.group].name,
        )

    def _do_set_produce_rate(self, action: Action) -> None:
        assert action.producer is not None
        assert action.rate is not None
        self.producers[action.producer].rate = action.rate

    def _instance(self, action: Action) -> PipelineInstance:
        assert action.pipeline is not None
        instance = self.pipelines[action.pipeline][action.instance]
        if instance.retired:
            raise ScenarioError(f"{action.key_path}.instance", "that instance has stopped")
        return instance

    def _do_txn_abort(self, action: Action) -> None:
        self._instance(action).abort_next()

    def _do_txn_hang(self, action: Action) -> None:
        self._instance(action).hang(action.duration_ms)

    def _do_txn_zombie(self, action: Action) -> None:
        self._instance(action).become_zombie(action.duration_ms)

    def _do_txn_lose_marker(self, action: Action) -> None:
        assert action.partition is not None
        self._instance(action).lose_marker(action.partition)


def _with_rate(group: GroupSpec, rate: float) -> GroupSpec:
    return dataclasses.replace(
        group, consumer=dataclasses.replace(group.consumer, processing_rate=rate)
    )


def simulate(scenario: Scenario, progress: Progress | None = None) -> SimulationResult:
    """Run ``scenario`` to its end on a fresh cluster; ``progress`` is told the virtual time
    done and the total (ms) after each of :data:`PROGRESS_SLICES` slices."""
    return Simulation(scenario, progress).run()


def _describe(scenario: Scenario) -> dict[str, Any]:
    return {
        "name": scenario.name,
        "seed": scenario.seed,
        "start_ms": scenario.start_ms,
        "end_ms": scenario.end_ms,
        "parameters": dict(scenario.parameters),
        "record_commits": scenario.record_commits,
        "topics": [{"topic": t.name, "partitions": t.partitions} for t in scenario.topics],
        "offsets_topic_partitions": scenario.group_config.offsets_topic_partitions,
        "transaction_state_partitions": scenario.txn_config.transaction_state_partitions,
        "groups": [
            {
                "group_id": g.id,
                "topics": list(g.topics),
                "assignors": list(g.consumer.assignors),
                "isolation_level": g.consumer.isolation_level,
                "static": g.consumer.static,
            }
            for g in scenario.groups
        ],
        "pipelines": [
            {
                "name": p.name,
                "group_id": p.group,
                "input": p.input,
                "output": p.output,
                "transactional_ids": [
                    p.transactional_id.format(pipeline=p.name, instance=i)
                    for i in range(p.instances)
                ],
                "isolation_level": p.consumer.isolation_level,
            }
            for p in scenario.pipelines
        ],
        "group_coordinator": dataclasses.asdict(scenario.group_config),
        "transaction_coordinator": dataclasses.asdict(scenario.txn_config),
    }


def _action_json(action: Action) -> dict[str, Any]:
    out: dict[str, Any] = {"action": action.action}
    defaults = Action(0, "")
    for f in dataclasses.fields(action):
        if f.name in ("at_ms", "action", "key_path"):
            continue
        value = getattr(action, f.name)
        if value != getattr(defaults, f.name):
            out[f.name] = value
    return out
