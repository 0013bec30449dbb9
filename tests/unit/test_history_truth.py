"""Accuracy against the ground truth of the scenario catalogue (bundled coordinators).

Each scenario runs on the simulator (virtual clock, in memory, well under two seconds); its
``__consumer_offsets`` and ``__transaction_state`` logs are decoded record by record, exactly as a
segment reader would, folded by :func:`fold_batch`, and every fact the truth records is compared:
each stored generation's leader, members and assignment (after the static replacements the
coordinator applied in place), rebalance counts, every state transition the folds report (time
and target state; bounded ones must contain the real one), member joins and leaves, every
transaction's outcome, cause and times, and the lag at every sample.
"""

from __future__ import annotations

import base64
import dataclasses
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

import pytest

from offsetscope.history import commit_points, fold_batch
from offsetscope.history.batch import HistoryOutputs
from offsetscope.history.events import ControlEvent, Coordinates, Event, event_from_record
from offsetscope.history.rows import GenerationRow
from offsetscope.history.signals import stuck_rebalances
from offsetscope.history.tables import materialize
from offsetscope.protocol import consumer_protocol as cp
from offsetscope.protocol import decode_record
from offsetscope.protocol.log.control import parse_control_key
from offsetscope.protocol.records import OFFSETS_TOPIC, TRANSACTION_TOPIC, CoordinatorRecord
from offsetscope.sim.coordinator.log import LogStore
from offsetscope.sim.scenarios import load_scenario
from offsetscope.sim.scenarios.engine import simulate
from offsetscope.verify.accuracy import lag_at_samples

Line = Mapping[str, Any]
SCENARIOS = [
    "steady",
    "consumer-crash",
    "scale-out-in",
    "rebalance-storm",
    "rolling-restart-static",
    "rolling-restart-dynamic",
    "cooperative",
    "slow-consumer",
    "protocol-vote",
    "offset-expiry",
    "transactions",
]
CAUSES = {
    "client_commit": "client_commit",
    "client_abort": "client_abort",
    "timeout": "timeout",
    "fenced_by_new_instance": "fenced",
}


def events_of(logs: LogStore) -> list[Event]:
    """The internal topics' records as a segment reader decodes them, in log order."""
    out: list[Event] = []
    for log in logs:
        if log.topic not in (OFFSETS_TOPIC, TRANSACTION_TOPIC):
            continue
        for batch in log.batches:
            for i, rec in enumerate(batch.records):
                at = Coordinates(
                    log.topic,
                    log.partition,
                    batch.base_offset + i,
                    rec.timestamp,
                    batch.producer_id,
                    batch.producer_epoch,
                    batch.is_transactional,
                )
                if batch.is_control:
                    out.append(ControlEvent(at, parse_control_key(rec.key).type.name))
                    continue
                decoded = decode_record(log.topic, rec.key, rec.value)
                if isinstance(decoded, CoordinatorRecord):
                    out.append(event_from_record(at, decoded))
    return out


@dataclasses.dataclass(frozen=True)
class Run:
    lines: Sequence[Line]
    out: HistoryOutputs

    def of(self, *types: str) -> list[Line]:
        return [line for line in self.lines if line["type"] in types]


_RUNS: dict[str, Run] = {}


def run(name: str) -> Run:
    if name not in _RUNS:
        result = simulate(load_scenario(name))
        _, out = fold_batch(None, events_of(result.cluster.logs))
        _RUNS[name] = Run(result.truth.lines, out)
    return _RUNS[name]


def expected_generations(r: Run) -> dict[tuple[str, int], tuple[str | None, dict[str, Any]]]:
    """(group, generation) -> (leader, member -> partitions) as finally stored.

    The last AssignmentStored of a generation, then every static replacement that rewrote it
    in place (MemberJoined with cause static_replacement) until the next one.
    """
    out: dict[tuple[str, int], tuple[str | None, dict[str, Any]]] = {}
    latest: dict[str, tuple[str, int]] = {}
    for line in r.of("AssignmentStored", "MemberJoined"):
        group = line["group_id"]
        if line["type"] == "AssignmentStored":
            parts = {mid: _decoded(blob) for mid, blob in line["assignments"]}
            key = (group, line["generation_id"])
            out[key] = (line["leader"], parts)
            latest[group] = key
        elif line["cause"] == "static_replacement" and group in latest:
            leader, parts = out[latest[group]]
            old, new = line["replaced_member_id"], line["member_id"]
            if old in parts:
                parts = {new if m == old else m: p for m, p in parts.items()}
                out[latest[group]] = (new if leader == old else leader, parts)
    return out


def _decoded(blob: str) -> tuple[tuple[str, int], ...]:
    asg = cp.decode_assignment(base64.b64decode(blob))
    if asg is None:
        return ()
    return tuple((t["topic"], p) for t in asg.data["assignedPartitions"] for p in t["partitions"])


def generation_rows(r: Run) -> dict[tuple[str, int], GenerationRow]:
    rows = sorted(materialize(r.out.group_generations).values(), key=lambda g: g.group_life)
    return {(g.group_id, g.generation): g for g in rows}  # the latest life wins


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_stored_generation_has_its_leader_members_and_assignment(name: str) -> None:
    r = run(name)
    rows = generation_rows(r)
    expected = expected_generations(r)
    assert expected
    for key, (leader, parts) in expected.items():
        row = rows[key]
        assert row.leader == leader, key
        assert dict(row.assignment) == parts, key
        assert {m.member_id for m in row.members} == set(parts), key


@pytest.mark.parametrize("name", SCENARIOS)
def test_rebalance_counts_per_group(name: str) -> None:
    r = run(name)
    truth = Counter(line["group_id"] for line in r.of("GenerationStarted"))
    mine: Counter[str] = Counter()
    for row in materialize(r.out.group_generations).values():
        mine[row.group_id] += row.rebalances
    assert mine == truth


@pytest.mark.parametrize("name", SCENARIOS)
def test_state_transitions_happened_when_the_folds_say(name: str) -> None:
    r = run(name)
    truth: defaultdict[str, list[tuple[int, str]]] = defaultdict(list)
    for line in r.of("GroupStateChanged"):
        truth[line["group_id"]].append((line["at_ms"], line["state"]))
    created = {(line["group_id"], line["at_ms"]) for line in r.of("GroupCreated")}
    for line in r.of("GroupDeleted"):
        truth[line["group_id"]].append((line["at_ms"], "Dead"))
    rows = r.out.group_state_transitions
    assert rows
    for t in rows:
        if t.from_state is None and t.to_state == "Empty":
            assert (t.group_id, t.at) in created, t
        elif t.at is not None:
            assert (t.at, t.to_state) in truth[t.group_id], t
        else:
            assert t.at_min is not None
            assert t.at_max is not None
            assert any(
                t.at_min <= at <= t.at_max and state == t.to_state
                for at, state in truth[t.group_id]
            ), t


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_persisted_state_change_is_reported_as_observed(name: str) -> None:
    r = run(name)
    mine = {(t.group_id, t.at, t.to_state) for t in r.out.group_state_transitions if not t.inferred}
    persisted = [
        (line["group_id"], line["at_ms"], line["state"])
        for line in r.of("GroupStateChanged")
        if line["state"] == "Stable"
        or (line["state"] == "Empty" and line["previous"] == "PreparingRebalance")
    ]
    persisted += [(line["group_id"], line["at_ms"], "Dead") for line in r.of("GroupDeleted")]
    assert persisted
    for fact in persisted:
        assert fact in mine


@pytest.mark.parametrize("name", SCENARIOS)
def test_member_sessions_bracket_the_real_joins_and_leaves(name: str) -> None:
    r = run(name)
    sessions = {(s.group_id, s.member_id): s for s in materialize(r.out.member_sessions).values()}
    stored = {
        (line["group_id"], mid)
        for line in r.of("AssignmentStored")
        for mid, _ in line["assignments"]
    }
    stored |= {(line["group_id"], line["member_id"]) for line in r.of("MemberJoined")
               if line["cause"] == "static_replacement"}  # fmt: skip
    checked = 0
    for line in r.of("MemberJoined", "MemberLeft"):
        key = (line["group_id"], line["member_id"])
        if key not in stored:
            continue  # joined and left between two stored generations: never in the log
        s = sessions[key]
        checked += 1
        assert s.instance_id == line["group_instance_id"]
        if line["type"] == "MemberJoined":
            assert s.joined_at >= line["at_ms"], s
            if line["cause"] == "static_replacement":
                assert s.replaces == line["replaced_member_id"]
        else:
            assert s.left_at is not None, s
            assert s.left_at >= line["at_ms"], s
            assert s.end_reason in ("left", "replaced", "group_emptied", "group_deleted")
    assert checked


@pytest.mark.parametrize("name", SCENARIOS)
def test_stuck_rebalances_are_generations_that_never_stored(name: str) -> None:
    r = run(name)
    started = [line for line in r.of("GenerationStarted") if line["member_ids"]]
    stored = {(line["group_id"], line["generation_id"]) for line in r.of("AssignmentStored")}
    never = {(line["group_id"], line["generation_id"]) for line in started} - stored
    timeout = max(line["rebalance_timeout_ms"] for line in r.of("MemberJoined"))
    # Truly stuck: the next generation's join completed more than a rebalance timeout later.
    starts = sorted((line["group_id"], line["at_ms"], line["generation_id"]) for line in started)
    stuck_truth = {
        (group, gen)
        for (group, at, gen), (group2, later, _) in pairwise(starts)
        if group == group2 and (group, gen) in never and later - at > timeout
    }
    rows = list(materialize(r.out.group_generations).values())
    end = max(line["at_ms"] for line in r.lines)
    reported = {(s.group_id, g) for s in stuck_rebalances(rows, [], end) for g in s.generations}
    assert stuck_truth <= reported <= never
    if name in ("consumer-crash", "rebalance-storm", "transactions"):
        # Generation 1 was superseded within seconds by a member joining mid-rebalance.
        assert never
        assert not reported


@pytest.mark.parametrize("name", ["transactions"])
def test_every_transaction_outcome_cause_and_time(name: str) -> None:
    r = run(name)
    rows = sorted(
        (t for t in materialize(r.out.transactions).values() if t.outcome != "ongoing"),
        key=lambda t: (t.transactional_id, t.first_record_offset),
    )
    truth = sorted(
        r.of("TxnOutcome"), key=lambda t: (t["transactional_id"], t["started_ms"], t["decided_ms"])
    )
    assert len(rows) == len(truth) > 100
    for row, t in zip(rows, truth, strict=True):
        assert (row.outcome, row.end_reason, row.timed_out, row.fenced) == (
            t["outcome"],
            CAUSES[t["cause"]],
            t["timed_out"],
            t["fenced"],
        )
        assert (row.started_at, row.ended_at, row.completed_at) == (
            t["started_ms"],
            t["decided_ms"],
            t["completed_ms"],
        )
        assert row.partitions == tuple(
            sorted((p["topic"], p["partition"]) for p in t["partitions"])
        )


@pytest.mark.parametrize("name", SCENARIOS)
def test_lag_at_every_sample(name: str) -> None:
    r = run(name)
    checked = lag_at_samples(commit_points(r.out.offset_commits), r.lines)
    assert checked
    assert [s for s in checked if not s.agrees] == []
