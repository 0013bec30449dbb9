"""The simulated cluster: one virtual clock, one log store, both coordinators, one scheduler.

Everything a scenario runs shares these:

* a :class:`~offsetscope.clock.VirtualClock` -- nothing reads wall time;
* a :class:`~offsetscope.sim.coordinator.log.LogStore` holding the data topics, ``__consumer_offsets``
  and ``__transaction_state``, with one set of
  :class:`~offsetscope.sim.coordinator.producer_state.PartitionLeaders` over it;
* the group coordinator runtime and the transaction runtime wired as one broker is: markers for
  ``__consumer_offsets`` partitions go through the group runtime, TxnOffsetCommit producers are
  verified with the transaction coordinator (KIP-890);
* a :class:`Scheduler` of client work (poll loops, heartbeat threads, producer linger ticks,
  timeline actions, samples), which :meth:`Cluster.run_until` interleaves with the two
  coordinators' own timers by time, then by a fixed order (group timers, transaction jobs,
  client work), then by scheduling order -- so a seed gives the same run every time.

Requests are answered at the virtual instant they are sent (zero network latency); parked
JoinGroup/SyncGroup responses are delivered through the scheduler at the instant the
coordinator answers them, never re-entrantly inside another request.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable

from offsetscope.clock import VirtualClock
from offsetscope.sim.coordinator.group.config import GroupCoordinatorConfig
from offsetscope.sim.coordinator.log import LogStore
from offsetscope.sim.coordinator.producer_state import PartitionLeaders
from offsetscope.sim.coordinator.runtime import GroupCoordinatorRuntime
from offsetscope.sim.coordinator.txn.config import TransactionCoordinatorConfig
from offsetscope.sim.coordinator.txn.runtime import GroupRuntimeMarkerSink, TxnRuntime
from offsetscope.sim.scenarios.truth import GroundTruth

Task = Callable[[], None]


class Scheduler:
    """Client work ordered by (time, scheduling order)."""

    __slots__ = ("_heap", "_seq")

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Task]] = []
        self._seq = 0

    def at(self, when_ms: int, task: Task) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (when_ms, self._seq, task))

    def next_time(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def pop(self) -> Task:
        return heapq.heappop(self._heap)[2]

    def __len__(self) -> int:
        return len(self._heap)


class Cluster:
    """A one-broker cluster on a virtual clock, with the scenario's topics."""

    def __init__(
        self,
        *,
        seed: int,
        start_ms: int,
        topics: dict[str, int],
        group_config: GroupCoordinatorConfig,
        txn_config: TransactionCoordinatorConfig,
        truth: GroundTruth | None = None,
        truth_commits: bool = True,
    ) -> None:
        """Create the cluster, its topics and both coordinators.

        Args:
            seed: seeds every random choice (member ids, record keys) through :meth:`rng`.
            start_ms: the virtual clock's start.
            topics: data topics and their partition counts.
            group_config: the group coordinator's settings.
            txn_config: the transaction coordinator's settings.
            truth: where ground-truth lines go (a fresh recorder when None).
            truth_commits: record every successful offset commit request in the truth (failed
                ones are always recorded).
        """
        self.seed = seed
        self.clock = VirtualClock(start_ms)
        self.logs = LogStore()
        for name, partitions in topics.items():
            self.logs.create_topic(name, partitions)
        self.topics = dict(topics)
        self.leaders = PartitionLeaders(self.logs)
        self.truth = truth or GroundTruth()
        self.truth_commits = truth_commits
        self.truth.bind(self.clock)
        self.groups = GroupCoordinatorRuntime(
            self.logs,
            self.clock,
            group_config,
            seed=seed,
            on_event=self.truth.group_event,
            leaders=self.leaders,
        )
        self.txns = TxnRuntime(
            clock=self.clock,
            logs=self.logs,
            config=txn_config,
            leaders=self.leaders,
            offset_markers=GroupRuntimeMarkerSink(self.groups),
        )
        self.groups.set_transaction_verifier(self.txns)
        self.truth.watch_transactions(self.txns.events)
        self.scheduler = Scheduler()
        self.steps = 0

    # ------------------------------------------------------------------ time and work

    @property
    def now(self) -> int:
        return self.clock.now_ms()

    def at(self, when_ms: int, task: Task) -> None:
        """Run ``task`` at ``when_ms`` (never in the past)."""
        self.scheduler.at(max(when_ms, self.clock.now_ms()), task)

    def soon(self, task: Task) -> None:
        """Run ``task`` at the current instant, after the work already due now."""
        self.scheduler.at(self.clock.now_ms(), task)

    def rng(self, *names: object) -> random.Random:
        """A random source of its own for one component (stable across runs and Pythons)."""
        return random.Random("/".join(str(n) for n in (self.seed, *names)))

    def run_until(self, until_ms: int) -> None:
        """Run coordinator timers, transaction jobs and client work due up to ``until_ms``."""
        groups, txns, scheduler, clock = self.groups, self.txns, self.scheduler, self.clock
        while True:
            when = None
            kind = 3
            group_due = groups.next_deadline()
            if group_due is not None:
                when, kind = group_due, 0
            txn_due = txns.next_deadline()
            if txn_due is not None and (when is None or txn_due < when):
                when, kind = txn_due, 1
            client_due = scheduler.next_time()
            if client_due is not None and (when is None or client_due < when):
                when, kind = client_due, 2
            if when is None or when > until_ms:
                break
            self.steps += 1
            if kind == 0:
                groups.run_until(when)
            elif kind == 1:
                txns.run_until(when)
            else:
                if when > clock.now_ms():
                    clock.advance_to(when)
                scheduler.pop()()
            self.truth.drain_transactions()
        if until_ms > clock.now_ms():
            clock.advance_to(until_ms)
        self.truth.drain_transactions()

    # ------------------------------------------------------------------ metadata

    def partitions(self, topic: str) -> int:
        return self.logs.partition_counts[topic]

    def end_offsets(self, topic: str, partition: int) -> tuple[int, int, int]:
        """(log start offset, high watermark, last stable offset) of a partition."""
        log = self.logs.partition(topic, partition)
        return log.log_start_offset, log.high_watermark, log.last_stable_offset
