"""Builders for the alert tests: simulated logs folded into history rows, and a ground-truth oracle.

``simulated(name)`` runs a catalogue scenario on the bundled coordinator, writes its Kafka log
directory, reads every internal-topic segment back through the real decoder, and folds the
events with the history folds -- the rows the pipeline would write, without Spark. The oracle
functions read ``ground_truth.jsonl`` only (what the coordinator did), never the rows.

The ``test_alert*`` modules import it; so do the alert rule configurations they share.
"""

from __future__ import annotations

import bisect
import dataclasses
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from offsetscope import config
from offsetscope.config import AlertsConfig, StormOverride
from offsetscope.history import fold_batch
from offsetscope.history.batch import HistoryOutputs, HistoryStates
from offsetscope.history.events import ControlEvent, Coordinates, Event, event_from_record
from offsetscope.history.tables import materialize
from offsetscope.protocol import decode_record
from offsetscope.protocol.log import read_partition_dir
from offsetscope.protocol.records import OFFSETS_TOPIC, TRANSACTION_TOPIC
from offsetscope.sim.scenarios.engine import simulate
from offsetscope.sim.scenarios.logdir import write_log_dir
from offsetscope.sim.scenarios.spec import load_scenario


@dataclass(frozen=True)
class Simulated:
    """A simulated scenario: its decoded events (log order per partition) and ground truth."""

    events: tuple[Event, ...]
    truth: tuple[dict[str, Any], ...]
    start_ms: int
    end_ms: int


def read_events(root: Path) -> list[Event]:
    """Every internal-topic record of a log directory as a history event."""
    events: list[Event] = []
    for directory in sorted(root.iterdir()):
        topic, _, number = directory.name.rpartition("-")
        if topic not in (OFFSETS_TOPIC, TRANSACTION_TOPIC) or not number.isdigit():
            continue
        partition = int(number)
        for batch in read_partition_dir(directory, strict=True):
            if batch.is_control:
                marker = batch.end_txn_marker()
                assert marker is not None
                at = Coordinates(
                    topic,
                    partition,
                    batch.base_offset,
                    batch.max_timestamp,
                    batch.producer_id,
                    batch.producer_epoch,
                    True,
                )
                events.append(ControlEvent(at, "COMMIT" if marker.committed else "ABORT"))
                continue
            for record in batch.records:
                at = Coordinates(
                    topic,
                    partition,
                    record.offset,
                    record.timestamp,
                    batch.producer_id,
                    batch.producer_epoch,
                    batch.is_transactional,
                )
                events.append(event_from_record(at, decode_record(topic, record.key, record.value)))
    return events


@cache
def simulated(name: str) -> Simulated:
    """Run catalogue scenario ``name`` once per test process (it is deterministic)."""
    spec = load_scenario(name)
    result = simulate(spec)
    with tempfile.TemporaryDirectory(prefix="offsetscope-alert-test-") as folder:
        out = Path(folder)
        write_log_dir(result.cluster.logs, out, spec.log, seed=spec.seed)
        events = read_events(out)
    truth = tuple(dict(line) for line in result.cluster.truth.lines)
    started = next(t for t in truth if t["type"] == "ScenarioStarted")
    return Simulated(tuple(events), truth, started["start_ms"], started["end_ms"])


@dataclass
class Folded:
    """History rows as the gold tables hold them after some batches (upserts applied)."""

    states: HistoryStates | None = None
    generations: dict[Any, Any] | None = None
    sessions: dict[Any, Any] | None = None
    transactions: dict[Any, Any] | None = None

    def add(self, out: HistoryOutputs) -> None:
        self.generations = {**(self.generations or {}), **materialize(out.group_generations)}
        self.sessions = {**(self.sessions or {}), **materialize(out.member_sessions)}
        self.transactions = {**(self.transactions or {}), **materialize(out.transactions)}


def fold_in_batches(events: Sequence[Event], cuts: Iterable[int]) -> Iterable[tuple[int, Folded]]:
    """Fold ``events`` in batches ending at each time in ``cuts`` (records up to that time).

    Yields ``(batch end time, rows so far)`` after each batch, like micro-batches of a stream
    that reads the log as it is written.
    """
    folded = Folded()
    ordered = sorted(
        events, key=lambda e: (e.at.timestamp, e.at.topic, e.at.partition, e.at.offset)
    )
    done = 0
    for cut in sorted(cuts):
        batch = []
        while done < len(ordered) and ordered[done].at.timestamp <= cut:
            batch.append(ordered[done])
            done += 1
        batch.sort(key=lambda e: (e.at.topic, e.at.partition, e.at.offset))
        folded.states, out = fold_batch(folded.states, batch)
        folded.add(out)
        yield cut, folded


def truth_of(
    truth: Iterable[dict[str, Any]], kind: str, group: str | None = None
) -> list[dict[str, Any]]:
    return [t for t in truth if t["type"] == kind and (group is None or t.get("group_id") == group)]


def brute_episodes(
    start: int, end: int, holds: Callable[[int], bool]
) -> list[tuple[int, int | None]]:
    """Intervals ``[a, b)`` of ``[start, end]`` where ``holds(t)`` is true, checked every ms."""
    out: list[tuple[int, int | None]] = []
    opened: int | None = None
    for t in range(start, end + 1):
        if holds(t):
            if opened is None:
                opened = t
        elif opened is not None:
            out.append((opened, t))
            opened = None
    if opened is not None:
        out.append((opened, None))
    return out


def window_count(times: Sequence[int], at: int, window: int) -> int:
    """How many of the sorted ``times`` lie in ``(at - window, at]``."""
    return bisect.bisect_right(times, at) - bisect.bisect_right(times, at - window)


S = 1_000
MIN = 60 * S
GROUP = "alerting"  # the group of the rebalance-storm scenario


def alerts_cfg(**rules_: object) -> AlertsConfig:
    """The base configuration's [alerts] with some rules replaced."""
    base = config.load("base").alerts
    return dataclasses.replace(base, **rules_)  # type: ignore[arg-type]


def storm_cfg(
    window: str = "1m", max_generations: int = 5, **groups: StormOverride
) -> AlertsConfig:
    base = config.load("base").alerts
    return alerts_cfg(
        rebalance_storm=dataclasses.replace(
            base.rebalance_storm, window=window, max_generations=max_generations, groups=groups
        )
    )
