"""Property tests over generated scenarios.

Hypothesis builds random groups (size, assignors, static or not, timeouts) and timelines
(crashes, leaves, joins, restarts, stalls, freezes); each run must satisfy, from the bytes it
wrote: no partition has two owners in one generation, every subscribed partition is assigned
(cooperative transfers excepted), clients applied what was stored, offsets and transactions
agree with the truth (:func:`~offsetscope.verify.simlog.verify_log_dir`); and no two clients
believe they own the same partition in the same generation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offsetscope.sim.scenarios.engine import simulate
from offsetscope.sim.scenarios.logdir import write_log_dir
from offsetscope.sim.scenarios.spec import parse_scenario
from offsetscope.verify.simlog import verify_log_dir

ASSIGNOR_LISTS = [
    ["range"],
    ["roundrobin"],
    ["sticky"],
    ["cooperative-sticky"],
    ["range", "cooperative-sticky"],
    ["cooperative-sticky", "roundrobin"],
]
ACTIONS = ["crash", "leave", "restart", "pause", "freeze", "join"]


@st.composite
def scenarios(draw: st.DrawFn) -> str:
    seed = draw(st.integers(0, 10_000))
    topics = draw(st.lists(st.integers(1, 8), min_size=1, max_size=2))
    lines = [
        "[scenario]",
        'name = "generated"',
        f"seed = {seed}",
        'duration = "60s"',
        'sample_interval = "20s"',
        "[broker]",
        "offsets_topic_partitions = 3",
        "transaction_state_partitions = 1",
        f"initial_rebalance_delay_ms = {draw(st.sampled_from([0, 1000, 3000]))}",
    ]
    for i, partitions in enumerate(topics):
        lines += ["[[topics]]", f'name = "t{i}"', f"partitions = {partitions}"]
    lines += ["[[producers]]", 'name = "w"', 'topic = "t0"', "rate = 30"]
    timeline: list[str] = []
    for g in range(draw(st.integers(1, 2))):
        members = draw(st.integers(1, 4))
        subscribed = draw(
            st.lists(
                st.sampled_from([f"t{i}" for i in range(len(topics))]), min_size=1, unique=True
            )
        )
        session = draw(st.sampled_from([6, 10, 20]))
        lines += [
            "[[groups]]",
            f'id = "g{g}"',
            "topics = [" + ", ".join(f'"{t}"' for t in subscribed) + "]",
            f"members = {members}",
            "assignors = ["
            + ", ".join(f'"{a}"' for a in draw(st.sampled_from(ASSIGNOR_LISTS)))
            + "]",
            f"static = {str(draw(st.booleans())).lower()}",
            f'session_timeout = "{session}s"',
            f'heartbeat_interval = "{draw(st.sampled_from([1, 2, 3]))}s"',
            f'max_poll_interval = "{draw(st.sampled_from([15, 40]))}s"',
            f"processing_rate = {draw(st.sampled_from([0, 50, 500]))}",
            f'stagger = "{draw(st.sampled_from([0, 300]))}ms"',
        ]
        # At most one action per member: a member acted on is never acted on again.
        for member in range(members):
            if not draw(st.booleans()):
                continue
            action = draw(st.sampled_from(ACTIONS))
            at = draw(st.integers(5, 55))
            entry = [
                "[[timeline]]",
                f'at = "{at}s"',
                f'action = "{action}"',
                f'group = "g{g}"',
            ]
            if action != "join":
                entry.append(f"member = {member}")
            if action in ("pause", "freeze"):
                entry.append(f'duration = "{draw(st.integers(1, 30))}s"')
            if action == "restart":
                entry.append(f'downtime = "{draw(st.integers(0, 15))}s"')
                entry.append(f"graceful = {str(draw(st.booleans())).lower()}")
            timeline += entry
    return "\n".join(lines + timeline) + "\n"


def _owners_per_generation(truth: list[dict[str, Any]]) -> list[str]:
    problems = []
    owned: dict[tuple[str, int], dict[tuple[str, int], str]] = {}
    for line in truth:
        if line["type"] != "ClientAssignment":
            continue
        key = (line["group_id"], line["generation_id"])
        mine = owned.setdefault(key, {})
        # A static member replaced within its generation hands its assignment to its successor
        # (the fenced one is gone): ownership belongs to the instance id.
        who = line["group_instance_id"] or line["member_id"]
        for t in line["assigned"]:
            for p in t["partitions"]:
                holder = mine.setdefault((t["topic"], p), who)
                if holder != who:
                    problems.append(f"{key}: {(t['topic'], p)} held by {holder} and {who}")
    return problems


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=scenarios())
def test_generated_scenarios_keep_the_invariants(text: str, tmp_path_factory: Any) -> None:
    scenario = parse_scenario(text)
    result = simulate(scenario)
    root: Path = tmp_path_factory.mktemp("generated")
    write_log_dir(result.cluster.logs, root, scenario.log, seed=scenario.seed)
    truth = result.cluster.truth.lines
    assert verify_log_dir(root, truth) == [], text
    assert _owners_per_generation(truth) == [], text
    # Every group that had members formed at least one generation.
    started = {line["group_id"] for line in truth if line["type"] == "GenerationStarted"}
    assert started == {g.id for g in scenario.groups}, text
