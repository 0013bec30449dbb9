"""Every catalogue scenario runs, writes a log directory, and the bytes agree with the truth.

Each scenario is simulated once per test session; the log directory is decoded from its
segment files (``offsetscope.protocol``) and compared with ``ground_truth.jsonl`` by
:func:`offsetscope.verify.simlog.verify_log_dir`. The scenario-specific tests then check
that each one shows the behaviour it exists for.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from offsetscope.sim.scenarios.catalogue import names
from offsetscope.sim.scenarios.engine import simulate
from offsetscope.sim.scenarios.logdir import write_log_dir
from offsetscope.sim.scenarios.spec import load_scenario
from offsetscope.sim.scenarios.truth import read_ground_truth
from offsetscope.verify.simlog import decode_log_dir, verify_log_dir

# The demo and the full-size scale run are slow; scale runs here with a small parameter set.
FAST = [n for n in names() if n not in ("demo", "scale")]
SMALL_SCALE = {"groups": "25", "partitions": "4", "sample_interval": "10s"}


@dataclass(frozen=True)
class Run:
    root: Path
    truth: list[dict[str, Any]]

    def of(self, *types: str) -> list[dict[str, Any]]:
        return [line for line in self.truth if line["type"] in types]


_RUNS: dict[str, Run] = {}


def _run(name: str, tmp_path_factory: pytest.TempPathFactory, **params: str) -> Run:
    key = name + repr(sorted(params.items()))
    if key not in _RUNS:
        scenario = load_scenario(name, params=params or None)
        result = simulate(scenario)
        root = tmp_path_factory.mktemp(name)
        write_log_dir(result.cluster.logs, root, scenario.log, seed=scenario.seed)
        result.cluster.truth.write(root / "ground_truth.jsonl")
        _RUNS[key] = Run(root, read_ground_truth(root / "ground_truth.jsonl"))
    return _RUNS[key]


@pytest.mark.parametrize("name", FAST)
def test_log_agrees_with_ground_truth(name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    run = _run(name, tmp_path_factory)
    assert verify_log_dir(run.root, run.truth) == []
    assert run.of("ScenarioStarted")[0]["name"] == name
    assert run.of("ScenarioFinished")
    # Every line is stamped and typed; time never goes back.
    times = [line["at_ms"] for line in run.truth if line["type"] != "TxnOutcome"]
    assert times == sorted(times)


def test_small_scale_agrees_with_ground_truth(tmp_path_factory: pytest.TempPathFactory) -> None:
    run = _run("scale", tmp_path_factory, **SMALL_SCALE)
    assert verify_log_dir(run.root, run.truth) == []
    decoded = decode_log_dir(run.root)
    assert len(decoded.group_metadata) == 25
    assert decoded.plain_offset_records >= 25 * 4 * 4


@pytest.mark.slow
def test_demo_agrees_with_ground_truth(tmp_path_factory: pytest.TempPathFactory) -> None:
    run = _run("demo", tmp_path_factory)
    assert verify_log_dir(run.root, run.truth) == []
    outcomes = Counter(line["cause"] for line in run.of("TxnOutcome"))
    assert {"client_commit", "client_abort", "timeout", "fenced_by_new_instance"} <= set(outcomes)
    groups = {line["group_id"] for line in run.of("GenerationStarted")}
    assert {"billing", "shipping", "fraud-detection", "reporting", "recommendations"} <= groups


def test_the_verifier_catches_a_planted_difference(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    run = _run("consumer-crash", tmp_path_factory)
    lines = json.loads(json.dumps(run.truth))
    stored = next(line for line in lines if line["type"] == "AssignmentStored")
    stored["leader"] = "someone-else"
    lag = [line for line in lines if line["type"] == "Lag"][-1]
    lag["partitions"][0]["committed_offset"] += 1
    problems = verify_log_dir(run.root, lines)
    assert any("protocol/leader" in p for p in problems)
    assert any("committed offset" in p for p in problems)


# ----------------------------------------------------------------------------- behaviours


def _generations(run: Run, group: str) -> list[dict[str, Any]]:
    return [line for line in run.of("GenerationStarted") if line["group_id"] == group]


def test_steady_has_one_generation_and_regular_commits(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    run = _run("steady", tmp_path_factory)
    generations = _generations(run, "billing")
    assert [g["generation_id"] for g in generations] == [1]
    assert len(generations[0]["member_ids"]) == 3
    commits = run.of("OffsetCommit")
    assert {c["kind"] for c in commits} == {"auto"}
    assert all(o["error"] == "NONE" for c in commits for o in c["offsets"])
    # Lag stays small: the consumers keep up.
    final = run.of("Lag")[-1]
    assert all(row["lag"] is not None and row["lag"] < 400 for row in final["partitions"])


def test_scale_out_and_in_rebalances_for_each_change(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    run = _run("scale-out-in", tmp_path_factory)
    sizes = [len(g["member_ids"]) for g in _generations(run, "ledger")]
    assert sizes[-3:] == [4, 3, 2]
    assert 4 in sizes
    left = [line["cause"] for line in run.of("MemberLeft")]
    assert left == ["left", "left"]


def test_a_crash_is_noticed_by_session_timeout(tmp_path_factory: pytest.TempPathFactory) -> None:
    run = _run("consumer-crash", tmp_path_factory)
    crash = next(line for line in run.of("ClientLifecycle") if line["event"] == "crashed")
    left = run.of("MemberLeft")
    assert [line["cause"] for line in left] == ["session_timeout"]
    delay = left[0]["at_ms"] - crash["at_ms"]
    assert 10_000 - 3_000 <= delay <= 10_000  # within a heartbeat interval of the timeout
    last = _generations(run, "sessions")[-1]
    assert len(last["member_ids"]) == 2


def test_a_stalled_poll_loop_leaves_and_rejoins(tmp_path_factory: pytest.TempPathFactory) -> None:
    run = _run("slow-consumer", tmp_path_factory)
    timeouts = [line for line in run.of("ClientLifecycle") if line["event"] == "poll_timeout"]
    assert timeouts
    pause = next(line for line in run.of("ClientLifecycle") if line["event"] == "paused")
    # max.poll.interval counts from the last poll() before the stall (at most poll_idle earlier).
    assert 30_000 - 500 < timeouts[0]["at_ms"] - pause["at_ms"] <= 30_000 + 1
    left = run.of("MemberLeft")
    assert left[0]["cause"] == "left"
    assert left[0]["reason"] == "consumer poll timeout has expired."
    # The stalled member comes back with a new member id.
    joined = [line for line in run.of("MemberJoined") if line["client_id"] == "accounting-1"]
    assert len({line["member_id"] for line in joined}) == 2


def test_dynamic_rolling_restart_rebalances_every_time(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    run = _run("rolling-restart-dynamic", tmp_path_factory)
    assert len(_generations(run, "indexer")) >= 1 + 2 * 3 - 1
    assert all(line["cause"] == "joined" for line in run.of("MemberJoined"))


def test_static_rolling_restart_keeps_the_generation(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    run = _run("rolling-restart-static", tmp_path_factory)
    generations = _generations(run, "indexer-static")
    restart = next(line for line in run.of("Action") if line["action"] == "rolling_restart")
    assert all(g["at_ms"] < restart["at_ms"] for g in generations)
    causes = Counter(line["cause"] for line in run.of("MemberJoined"))
    assert causes["static_replacement"] == 3
    assert Counter(line["cause"] for line in run.of("MemberLeft")) == {"fenced": 3}
    # The log holds one GroupMetadata rewrite of the same generation per replacement.
    records = decode_log_dir(run.root).group_metadata["indexer-static"]
    last = records[-4:]
    assert len({r.generation for r in last}) == 1
    assert len({r.members for r in last}) == 4


def test_a_storm_makes_many_generations(tmp_path_factory: pytest.TempPathFactory) -> None:
    run = _run("rebalance-storm", tmp_path_factory)
    generations = _generations(run, "alerting")
    assert len(generations) >= 15
    spans = [b["at_ms"] - a["at_ms"] for a, b in itertools.pairwise(generations)]
    assert min(spans) < 10_000
    # Small internal segments: the offsets partition rolled.
    rolled = [
        d
        for d in run.root.iterdir()
        if d.name.startswith("__consumer_offsets") and len(list(d.glob("*.log"))) > 1
    ]
    assert rolled


def test_cooperative_rebalances_in_two_phases(tmp_path_factory: pytest.TempPathFactory) -> None:
    run = _run("cooperative", tmp_path_factory)
    assignments = run.of("ClientAssignment")
    revoking = [a for a in assignments if a["revoked"]]
    assert revoking
    for a in revoking:
        # The next generation assigns what was revoked, to someone else.
        moved = {(t["topic"], p) for t in a["revoked"] for p in t["partitions"]}
        later = [
            b
            for b in assignments
            if b["generation_id"] == a["generation_id"] + 1 and b["client_id"] != a["client_id"]
        ]
        gained = {(t["topic"], p) for b in later for t in b["added"] for p in t["partitions"]}
        assert moved <= gained
    # Partitions kept across a rebalance are never revoked (no eager "revoke everything").
    assert not [line for line in run.of("ClientRevoked") if line["lost"]]
    assert all(g["protocol"] == "cooperative-sticky" for g in _generations(run, "shipping"))


def test_the_protocol_vote_and_an_inconsistent_member(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    run = _run("protocol-vote", tmp_path_factory)
    assert {g["protocol"] for g in _generations(run, "analytics")} == {"roundrobin"}
    failed = [line for line in run.of("ClientLifecycle") if line["event"] == "failed"]
    assert [(f["client_id"], f["reason"]) for f in failed] == [
        ("analytics-d-0", "JoinGroup failed: INCONSISTENT_GROUP_PROTOCOL")
    ]


def test_offsets_expire_and_groups_are_deleted(tmp_path_factory: pytest.TempPathFactory) -> None:
    run = _run("offset-expiry", tmp_path_factory)
    results = [(r["group_id"], r["error"]) for r in run.of("DeleteGroupsResult")]
    assert results == [("exports", "NON_EMPTY_GROUP"), ("exports", "NONE")]
    deleted = {line["group_id"]: line["cause"] for line in run.of("GroupDeleted")}
    assert deleted == {"exports": "deleted", "archive": "expired"}
    expired = run.of("OffsetsExpired")
    assert [line["group_id"] for line in expired] == ["archive"]
    empty_at = next(
        line["at_ms"]
        for line in run.of("GroupStateChanged")
        if line["group_id"] == "archive" and line["state"] == "Empty"
    )
    assert expired[0]["at_ms"] - empty_at >= 90_000
    decoded = decode_log_dir(run.root)
    assert decoded.group_tombstones.keys() == {"exports", "archive"}
    assert not [k for k in decoded.committed if k[0] in ("exports", "archive")]


def test_transactions_commit_abort_time_out_and_fence(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    run = _run("transactions", tmp_path_factory)
    outcomes = run.of("TxnOutcome")
    causes = Counter(line["cause"] for line in outcomes)
    assert causes["client_commit"] > 50
    assert causes["client_abort"] == 1
    assert causes["timeout"] == 1
    assert causes["fenced_by_new_instance"] == 1
    timed_out = next(line for line in outcomes if line["cause"] == "timeout")
    assert timed_out["timed_out"]
    # The hung producer is fenced on its next call and re-initialises.
    fenced_calls = [
        line for line in run.of("TxnClientResult") if line["error"] == "PRODUCER_FENCED"
    ]
    assert fenced_calls
    # The zombie's TxnOffsetCommit is refused by the group coordinator.
    refused = [
        line
        for line in run.of("TxnOffsetCommit")
        if {o["error"] for o in line["offsets"]} == {"INVALID_PRODUCER_EPOCH"}
    ]
    assert len(refused) == 1
    stopped = [line for line in run.of("ClientLifecycle") if line["event"] == "stopped"]
    assert [s["reason"] for s in stopped] == ["zombie fenced: INVALID_PRODUCER_EPOCH"]
    # Output partitions: aborted records are invisible to read_committed, the LSO is caught up
    # at the end (no transaction left hanging) and markers outnumber nothing.
    final = run.of("EndOffsets")[-1]
    enriched = [p for p in final["partitions"] if p["topic"] == "enriched"]
    assert all(p["high_watermark"] > 0 for p in enriched)
    lag = [line for line in run.of("Lag") if line["group_id"] == "enricher"][-1]
    assert lag["isolation_level"] == "read_committed"
    assert all(row["committed_offset"] is not None for row in lag["partitions"])


def test_lag_and_lso_has_the_episodes_it_exists_for(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The known answers of the alert scenario, read from its truth alone (the oracle of
    ``make accuracy``): both lag levels for the group far behind but committing, none for the
    one briefly behind; the hung transaction's partition stuck until it commits, the partition
    whose marker was lost stuck to the end; the 30 s transaction under the bound."""
    from offsetscope.verify import accuracy

    run = _run("lag-and-lso", tmp_path_factory)
    start = run.of("ScenarioStarted")[0]["at_ms"]
    lag = {
        (s.key, (s.start - start) // 1000, s.end) for s in accuracy.expected_lag_episodes(run.truth)
    }
    assert {key for key, _, _ in lag} == {
        ("far-behind", "events", 0, "warning"),
        ("far-behind", "events", 0, "critical"),
        ("far-behind", "events", 1, "warning"),
        ("far-behind", "events", 1, "critical"),
        ("settler", "orders", 1, "warning"),  # behind while its instance hangs
    }
    # The far-behind group commits all along: its committed offsets keep moving.
    commits = [
        o["offset"]
        for line in run.of("OffsetCommit")
        if line["group_id"] == "far-behind"
        for o in line["offsets"]
        if o["partition"] == 0
    ]
    assert len(set(commits)) > 50
    stuck = {s.key: s for s in accuracy.expected_stuck(run.truth)}
    assert set(stuck) == {("settled", 0), ("settled", 1)}
    lost = run.of("MarkerLost")[0]
    assert accuracy.stuck_holder(run.truth, stuck[("settled", 0)]) == (
        "hanging_transaction",
        lost["producer_id"],
        lost["first_offset"],
    )
    assert stuck[("settled", 0)].end is None  # nothing ends a hanging transaction
    assert accuracy.stuck_holder(run.truth, stuck[("settled", 1)]) == (
        "open_transaction",
        "settler-1",
    )
    assert stuck[("settled", 1)].end is not None  # it committed when the instance woke
    for span in stuck.values():
        assert accuracy.blocked_groups(run.truth, span) == {"settled-reader"}
    # The transaction that lasted 30 s held settled-0's LSO, but for less than the bound.
    held = [
        line["at_ms"]
        for line in run.of("EndOffsets")
        for p in line["partitions"]
        if (p["topic"], p["partition"]) == ("settled", 0)
        and p["last_stable_offset"] < p["high_watermark"]
    ]
    assert held
