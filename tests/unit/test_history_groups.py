"""Group fold: classic generations, sessions, transitions, assignments and KIP-848 epochs."""

from __future__ import annotations

import json
import uuid

import pytest
from history_log import T0, Log, M

from offsetscope.history import fold_batch, fold_group
from offsetscope.history.batch import HistoryOutputs
from offsetscope.history.codec import to_jsonable
from offsetscope.history.groups import GroupState
from offsetscope.history.rows import GenerationRow, Replacement, SessionRow, TransitionRow
from offsetscope.history.tables import materialize
from offsetscope.protocol.states import ClassicGroupState, ConsumerGroupState, is_valid_transition

G = "payments"
S = 1_000  # one second in ms


def run(log: Log) -> tuple[GroupState, HistoryOutputs]:
    states, out = fold_batch(None, log.events)
    return states.groups[G], out


def generations(out: HistoryOutputs) -> list[GenerationRow]:
    rows = materialize(out.group_generations).values()
    return sorted(rows, key=lambda r: (r.group_life, r.generation))


def sessions(out: HistoryOutputs) -> dict[str, SessionRow]:
    return {r.member_id: r for r in materialize(out.member_sessions).values()}


def transitions(out: HistoryOutputs) -> list[tuple[str | None, str, bool]]:
    rows = sorted(out.group_state_transitions, key=lambda r: (r.record_offset, r.seq))
    return [(r.from_state, r.to_state, r.inferred) for r in rows]


def owners(out: HistoryOutputs, generation: int) -> dict[tuple[str, int], str]:
    return {
        (r.topic, r.partition): r.member_id
        for r in materialize(out.partition_assignments).values()
        if r.generation == generation
    }


def steady_group() -> Log:
    log = Log()
    log.group(G, 0, [], T0, protocol_type="")
    log.group(G, 1, [M("a", [("orders", 0), ("orders", 1)]), M("b", [("orders", 2)])],
              T0 + 5 * S, cst=T0 + 3 * S)  # fmt: skip
    log.commit(G, "orders", 0, 100, T0 + 10 * S)
    log.commit(G, "orders", 0, 200, T0 + 20 * S)
    return log


def test_steady_group_one_generation_and_its_sessions() -> None:
    state, out = run(steady_group())
    gens = generations(out)
    assert [(g.generation, g.state, g.member_count) for g in gens] == [
        (0, "Empty", 0),
        (1, "Stable", 2),
    ]
    g1 = gens[1]
    assert g1.leader == "a"
    assert g1.protocol == "range"
    assert g1.protocol_type == "consumer"
    assert g1.join_completed_at == T0 + 3 * S
    assert g1.stored_at == T0 + 5 * S
    assert g1.members_joined == ("a", "b")
    assert g1.assignment == (("a", (("orders", 0), ("orders", 1))), ("b", (("orders", 2),)))
    assert (g1.generations_skipped, g1.rebalances, g1.partitions_assigned) == (0, 1, 3)
    assert owners(out, 1) == {("orders", 0): "a", ("orders", 1): "a", ("orders", 2): "b"}
    s = sessions(out)
    assert s["a"].joined_at == T0 + 3 * S
    assert s["a"].left_at is None
    assert s["a"].end_reason is None
    # An open session's last generation is the group's current one: not written until it ends.
    assert (s["a"].first_generation, s["a"].last_generation) == (1, None)
    current = out.groups_current[-1]
    assert (current.state, current.generation, current.member_count) == ("Stable", 1, 2)
    assert current.last_commit_at == T0 + 20 * S
    assert current.rebalance_times == (T0 + 3 * S,)
    assert state.state == "Stable"


def test_transitions_mark_what_kafka_did_not_persist() -> None:
    _, out = run(steady_group())
    assert transitions(out) == [
        (None, "Empty", False),
        ("Empty", "PreparingRebalance", True),
        ("PreparingRebalance", "CompletingRebalance", True),
        ("CompletingRebalance", "Stable", False),
    ]
    rows = sorted(out.group_state_transitions, key=lambda r: (r.record_offset, r.seq))
    start = rows[1]
    # The rebalance start is never persisted: bounded by the previous record and the join end.
    assert (start.at, start.at_min, start.at_max, start.time_source) == (
        None,
        T0,
        T0 + 3 * S,
        "bounded",
    )
    assert (rows[2].at, rows[2].time_source) == (T0 + 3 * S, "current_state_timestamp")
    assert (rows[3].at, rows[3].time_source) == (T0 + 5 * S, "record_timestamp")


def test_scale_out_and_in_count_joins_leaves_and_moved_partitions() -> None:
    log = steady_group()
    three = [M("a", [("orders", 0)]), M("b", [("orders", 2)]), M("c", [("orders", 1)])]
    log.group(G, 2, three, T0 + 60 * S, cst=T0 + 59 * S)
    log.group(G, 3, [M("a", [("orders", 0), ("orders", 1)]), M("b", [("orders", 2)])],
              T0 + 120 * S, cst=T0 + 119 * S)  # fmt: skip
    _, out = run(log)
    g2, g3 = generations(out)[2:]
    assert (g2.members_joined, g2.members_left) == (("c",), ())
    assert g2.moved_partitions == (("orders", 1),)  # a -> c
    assert (g3.members_joined, g3.members_left) == ((), ("c",))
    assert g3.moved_partitions == (("orders", 1),)  # c -> a
    assert g3.partitions_moved == 1
    s = sessions(out)
    assert (s["c"].joined_at, s["c"].left_at, s["c"].end_reason) == (
        T0 + 59 * S,
        T0 + 119 * S,
        "left",
    )
    assert (s["a"].first_generation, s["a"].last_generation) == (1, None)
    assert (s["c"].first_generation, s["c"].last_generation) == (2, 2)


def test_crash_member_missing_from_the_next_generation_ends_its_session() -> None:
    log = steady_group()
    log.group(G, 2, [M("a", [("orders", 0), ("orders", 1), ("orders", 2)])],
              T0 + 90 * S, cst=T0 + 89 * S)  # fmt: skip
    _, out = run(log)
    g2 = generations(out)[-1]
    assert g2.members_left == ("b",)
    assert g2.moved_partitions == (("orders", 2),)
    s = sessions(out)["b"]
    assert (s.left_at, s.end_reason, s.last_generation) == (T0 + 89 * S, "left", 1)


def test_static_restart_rewrites_the_same_generation_as_a_replacement() -> None:
    log = Log()
    static = [
        M("a-1", [("orders", 0)], instance_id="pod-a"),
        M("b-1", [("orders", 1)], instance_id="pod-b"),
    ]
    log.group(G, 1, static, T0 + 5 * S, cst=T0 + 4 * S)
    # pod-b restarts with a new member id while Stable: same generation, same assignment.
    restarted = [static[0], M("b-2", [("orders", 1)], instance_id="pod-b")]
    log.group(G, 1, restarted, T0 + 50 * S, cst=T0 + 4 * S)
    state, out = run(log)
    gens = generations(out)
    assert len(gens) == 1
    g1 = gens[0]
    assert g1.static_replacements == 1
    assert g1.members_replaced == (Replacement("pod-b", "b-1", "b-2"),)
    assert (g1.members_joined, g1.members_left) == (("a-1", "b-1"), ())
    assert [m.member_id for m in g1.members] == ["a-1", "b-2"]
    assert (g1.stored_at, g1.updated_at, g1.last_record_offset) == (T0 + 5 * S, T0 + 50 * S, 1)
    assert g1.rebalances == 1  # the rewrite is not a rebalance
    assert owners(out, 1)[("orders", 1)] == "b-2"
    s = sessions(out)
    assert (s["b-1"].end_reason, s["b-1"].replaced_by, s["b-1"].left_at) == (
        "replaced",
        "b-2",
        T0 + 50 * S,
    )
    assert (s["b-2"].replaces, s["b-2"].joined_at, s["b-2"].first_generation) == (
        "b-1",
        T0 + 50 * S,
        1,
    )
    assert state.rebalance_times == (T0 + 4 * S,)
    # No state change: the group stayed Stable.
    assert [t for t in transitions(out) if t[1] != "Stable" and t[0] == "Stable"] == []


def test_static_member_back_in_a_new_generation_is_a_replacement_and_moves_nothing() -> None:
    log = Log()
    log.group(G, 1, [M("a-1", [("orders", 0)], instance_id="pod-a"), M("b", [("orders", 1)])],
              T0 + 5 * S)  # fmt: skip
    log.group(G, 2, [M("a-2", [("orders", 0)], instance_id="pod-a"), M("b", [("orders", 1)])],
              T0 + 60 * S)  # fmt: skip
    _, out = run(log)
    g2 = generations(out)[-1]
    assert g2.members_replaced == (Replacement("pod-a", "a-1", "a-2"),)
    assert (g2.members_joined, g2.members_left) == ((), ())
    assert g2.partitions_moved == 0


def test_storm_counts_every_generation_in_the_window() -> None:
    log = Log()
    for gen in range(1, 31):
        ts = T0 + gen * 20 * S
        members = [M("a", [("orders", 0)]), M(f"x{gen}", [("orders", 1)])]
        log.group(G, gen, members, ts, cst=ts - S)
    state, out = run(log)
    current = out.groups_current[-1]
    assert current.rebalances_1h == 30
    assert len(current.rebalance_times) == 30
    assert len(generations(out)) == 30
    # every generation had a new member id and one leaver after the first
    assert sum(len(g.members_left) for g in generations(out)) == 29
    assert state.current is not None
    assert state.current.generation == 30


def test_compaction_gap_generation_jump_counts_the_rebalances_in_between() -> None:
    log = steady_group()
    log.group(G, 7, [M("a", [("orders", 0), ("orders", 1)]), M("b", [("orders", 2)])],
              T0 + 300 * S, cst=T0 + 299 * S)  # fmt: skip
    state, out = run(log)
    g7 = generations(out)[-1]
    assert (g7.previous_generation, g7.generations_skipped, g7.rebalances) == (1, 5, 6)
    assert state.rebalance_times.count(T0 + 299 * S) == 6
    prep = next(
        r
        for r in out.group_state_transitions
        if r.generation == 7 and r.to_state == "PreparingRebalance"
    )
    assert "2..6" in prep.reason


def test_first_record_seen_mid_history_counts_one_rebalance() -> None:
    log = Log()
    log.group(G, 40, [M("a", [("orders", 0)])], T0, cst=T0 - S)
    state, out = run(log)
    g = generations(out)[0]
    assert (g.generations_skipped, g.rebalances, g.previous_generation) == (39, 1, None)
    assert state.rebalance_times == (T0 - S,)
    # Only what the record proves: no transition from an unknown state.
    assert transitions(out) == [
        ("PreparingRebalance", "CompletingRebalance", True),
        ("CompletingRebalance", "Stable", False),
    ]


def test_group_emptied_then_deleted() -> None:
    log = steady_group()
    log.group(G, 2, [], T0 + 100 * S, cst=T0 + 98 * S)
    log.offset_tombstone(G, "orders", 0, T0 + 200 * S)
    log.group_tombstone(G, T0 + 200 * S)
    state, out = run(log)
    g2 = generations(out)[-1]
    assert (g2.state, g2.members_left, g2.leader, g2.protocol) == ("Empty", ("a", "b"), None, None)
    assert transitions(out)[-3:] == [
        ("Stable", "PreparingRebalance", True),
        ("PreparingRebalance", "Empty", False),
        ("Empty", "Dead", False),
    ]
    empty = [r for r in out.group_state_transitions if r.to_state == "Empty"][-1]
    assert empty.at == T0 + 98 * S
    assert {s.end_reason for s in sessions(out).values()} == {"group_emptied"}
    current = out.groups_current[-1]
    assert (current.state, current.deleted, current.member_count) == ("Dead", True, 0)
    assert state.life_ended


def test_tombstone_while_members_are_present_ends_sessions_as_deleted() -> None:
    log = steady_group()
    log.group_tombstone(G, T0 + 100 * S)
    _, out = run(log)
    assert {(s.end_reason, s.left_at) for s in sessions(out).values()} == {
        ("group_deleted", T0 + 100 * S)
    }


def test_recreated_group_starts_a_new_life_with_its_own_rows() -> None:
    log = steady_group()
    log.group(G, 2, [], T0 + 100 * S)
    log.group_tombstone(G, T0 + 200 * S)
    log.group(G, 0, [], T0 + 300 * S, protocol_type="")
    log.group(G, 1, [M("z", [("orders", 0)])], T0 + 305 * S)
    _, out = run(log)
    keys = [(g.group_life, g.generation) for g in generations(out)]
    assert keys == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]
    assert generations(out)[-1].members_joined == ("z",)
    assert out.groups_current[-1].group_life == 1
    assert not out.groups_current[-1].deleted


def test_generation_going_backwards_without_tombstone_is_a_new_life() -> None:
    log = steady_group()
    log.group(G, 5, [M("a", [("orders", 0)])], T0 + 100 * S)
    # The deletion's tombstone was compacted away before we read: generations restart.
    log.group(G, 1, [M("q", [("orders", 0)])], T0 + 900 * S)
    _, out = run(log)
    lives = [(g.group_life, g.generation) for g in generations(out)]
    assert lives == [(0, 0), (0, 1), (0, 5), (1, 1)]
    s = sessions(out)
    assert s["a"].end_reason == "group_deleted"


def test_simple_group_with_commits_only() -> None:
    log = Log()
    log.commit(G, "orders", 0, 5, T0)
    state, out = run(log)
    assert out.group_generations == ()
    current = out.groups_current[-1]
    assert (current.kind, current.state, current.last_commit_at) == ("simple", "Empty", T0)
    assert state.kind == "simple"


def test_non_consumer_protocol_keeps_members_without_assignment() -> None:
    log = Log()
    log.group(G, 1, [M("w1"), M("w2")], T0, protocol_type="connect", protocol="sessioned")
    _, out = run(log)
    g = generations(out)[0]
    assert (g.protocol_type, g.protocol, g.member_count, g.assignment) == (
        "connect",
        "sessioned",
        2,
        (),
    )
    assert g.members[0].subscribed_topics is None


def test_every_emitted_transition_is_legal_in_kafkas_state_table() -> None:
    log = steady_group()
    log.group(G, 4, [M("a", [("orders", 0)])], T0 + 50 * S)
    log.group(G, 5, [], T0 + 60 * S)
    log.group(G, 6, [M("b", [("orders", 0)])], T0 + 70 * S)
    log.group_tombstone(G, T0 + 80 * S)
    _, out = run(log)
    rows: list[TransitionRow] = list(out.group_state_transitions)
    assert rows
    for r in rows:
        states = ClassicGroupState if r.kind == "classic" else ConsumerGroupState
        if r.from_state is not None:  # a group's first record may enter any state
            assert is_valid_transition(states(r.from_state), states(r.to_state)), r


def test_replayed_events_change_nothing() -> None:
    log = steady_group()
    state, _ = fold_group(None, log.events[:2])
    state2, out = fold_group(state, log.events[:2])
    assert state2 == state
    assert out.generations == ()
    assert out.transitions == ()


# ---------------------------------------------------------------------- KIP-848

TOPIC = uuid.UUID("6f1e0a52-1b9d-4c2e-8d43-2d7c1f0a9b11")


def kip_join(log: Log, member: str, epoch: int, targets: dict[str, list[int]], ts: int) -> None:
    """What one heartbeat of a joining member writes: 5, 3, 7 per changed member, 6, 8."""
    log.member(G, member, ts)
    log.epoch(G, epoch, ts)
    for mid, parts in targets.items():
        log.target(G, mid, {TOPIC: parts}, ts)
    log.target_epoch(G, epoch, ts)


def test_kip848_epochs_assignments_and_reconciliation_states() -> None:
    log = Log()
    kip_join(log, "m1", 1, {"m1": [0, 1, 2]}, T0)
    log.current(G, "m1", 1, {TOPIC: [0, 1, 2]}, T0)
    kip_join(log, "m2", 2, {"m1": [0, 1], "m2": [2]}, T0 + 10 * S)
    log.current(G, "m2", 2, {TOPIC: []}, T0 + 10 * S, state=2)  # waiting for m1 to release
    log.current(G, "m1", 2, {TOPIC: [0, 1]}, T0 + 11 * S)
    log.current(G, "m2", 2, {TOPIC: [2]}, T0 + 12 * S)
    state, out = run(log)
    gens = generations(out)
    assert [(g.generation, g.kind, g.member_count, g.assignment_epoch) for g in gens] == [
        (1, "kip848", 1, 1),
        (2, "kip848", 2, 2),
    ]
    tid = gens[0].assignment[0][1][0][0]
    assert len(tid) == 22  # Kafka's Base64 topic id: no name known
    assert gens[1].assignment == (("m1", ((tid, 0), (tid, 1))), ("m2", ((tid, 2),)))
    assert gens[1].moved_partitions == ((tid, 2),)
    assert gens[1].members_joined == ("m2",)
    assert gens[1].protocol == "uniform"
    states = [(f, t) for f, t, _ in transitions(out)]
    assert ("Assigning", "Reconciling") in states
    assert states[-1] == ("Reconciling", "Stable")
    assert state.state == "Stable"
    stable_at = [r for r in out.group_state_transitions if r.to_state == "Stable"][-1].at
    assert stable_at == T0 + 12 * S
    s = sessions(out)
    assert (s["m2"].first_generation, s["m2"].last_generation, s["m2"].joined_at) == (
        2,
        None,
        T0 + 10 * S,
    )
    assert all(not r.inferred for r in out.group_state_transitions)


def test_kip848_topic_names_from_partition_metadata() -> None:
    log = Log()
    log.topics_metadata(G, {TOPIC: "orders"}, T0)
    kip_join(log, "m1", 1, {"m1": [0]}, T0)
    _, out = run(log)
    assert generations(out)[0].assignment == (("m1", (("orders", 0),)),)
    rows = list(materialize(out.partition_assignments).values())
    assert [(r.topic, r.topic_id) for r in rows] == [("orders", "bx4KUhudTC6NQy18HwqbEQ")]


def test_kip848_topic_names_from_the_caller_apply_but_are_not_kept() -> None:
    log = Log()
    kip_join(log, "m1", 1, {"m1": [0]}, T0)
    state, out = fold_group(None, log.events, topic_names={"bx4KUhudTC6NQy18HwqbEQ": "orders"})
    assert state is not None
    assert out.generations[-1].assignment == (("m1", (("orders", 0),)),)
    assert state.topic_names == ()


def test_kip848_topic_names_learned_from_v4_offset_commits_apply_to_later_records() -> None:
    log = Log()
    kip_join(log, "m1", 1, {"m1": [0]}, T0)  # before the commit: only the id is known
    log.commit(G, "orders", 0, 5, T0 + S, topic_id=TOPIC)
    kip_join(log, "m2", 2, {"m1": [0], "m2": [1]}, T0 + 2 * S)
    _, out = run(log)
    first, second = generations(out)
    assert first.assignment == (("m1", (("bx4KUhudTC6NQy18HwqbEQ", 0),)),)
    assert second.assignment == (("m1", (("orders", 0),)), ("m2", (("orders", 1),)))


def test_kip848_member_leaves_then_group_deleted() -> None:
    log = Log()
    kip_join(log, "m1", 1, {"m1": [0, 1]}, T0)
    kip_join(log, "m2", 2, {"m1": [0], "m2": [1]}, T0 + S)
    log.current(G, "m2", 2, {TOPIC: [1]}, T0 + 2 * S)
    log.current(G, "m2", -2, {TOPIC: [1]}, T0 + 3 * S)  # static-style leave epoch: not counted
    # m2 leaves: tombstones 8, 7, 5 then an epoch bump with the new target.
    log.current(G, "m2", 0, None, T0 + 5 * S)
    log.target(G, "m2", None, T0 + 5 * S)
    log.member(G, "m2", T0 + 5 * S, tombstone=True)
    log.epoch(G, 3, T0 + 5 * S)
    log.target(G, "m1", {TOPIC: [0, 1]}, T0 + 5 * S)
    log.target_epoch(G, 3, T0 + 5 * S)
    # deletion: 8, 7, 6, 5, 3
    log.current(G, "m1", 0, None, T0 + 9 * S)
    log.target(G, "m1", None, T0 + 9 * S)
    log.target_epoch(G, 0, T0 + 9 * S, tombstone=True)
    log.member(G, "m1", T0 + 9 * S, tombstone=True)
    log.epoch_tombstone(G, T0 + 9 * S)
    state, out = run(log)
    g3 = generations(out)[-1]
    assert (g3.generation, g3.members_left, g3.member_count) == (3, ("m2",), 1)
    s = sessions(out)
    assert (s["m2"].end_reason, s["m2"].left_at) == ("left", T0 + 5 * S)
    assert (s["m2"].first_generation, s["m2"].last_generation) == (2, 2)
    assert (s["m1"].end_reason, s["m1"].left_at) == ("group_deleted", T0 + 9 * S)
    assert transitions(out)[-1][1] == "Dead"
    assert out.groups_current[-1].deleted
    assert state.life_ended


def test_kip848_static_member_replacement_without_epoch_bump() -> None:
    log = Log()
    log.member(G, "s1", T0, instance_id="pod-0")
    log.epoch(G, 1, T0)
    log.target(G, "s1", {TOPIC: [0]}, T0)
    log.target_epoch(G, 1, T0)
    # Restart: the old member's tombstones, then the new member id, same epoch.
    ts = T0 + 30 * S
    log.current(G, "s1", 0, None, ts)
    log.target(G, "s1", None, ts)
    log.member(G, "s1", ts, tombstone=True)
    log.member(G, "s2", ts, instance_id="pod-0")
    log.target(G, "s2", {TOPIC: [0]}, ts)
    log.target_epoch(G, 1, ts)
    _, out = run(log)
    g = generations(out)
    assert len(g) == 1
    assert g[0].members_replaced == (Replacement("pod-0", "s1", "s2"),)
    assert g[0].static_replacements == 1
    assert g[0].partitions_moved == 0
    s = sessions(out)
    assert (s["s1"].end_reason, s["s1"].replaced_by) == ("replaced", "s2")
    assert s["s2"].replaces == "s1"


def test_classic_to_consumer_conversion_is_a_new_life() -> None:
    log = steady_group()
    log.group_tombstone(G, T0 + 50 * S)
    kip_join(log, "a", 2, {"a": [0, 1, 2]}, T0 + 50 * S)
    _, out = run(log)
    kinds = [(g.group_life, g.kind, g.generation) for g in generations(out)]
    assert kinds == [(0, "classic", 0), (0, "classic", 1), (1, "kip848", 2)]


@pytest.mark.parametrize("offset", [0, 3, 7])
def test_group_state_round_trips_through_json(offset: int) -> None:
    log = steady_group()
    log.group(G, 2, [M("a", [("orders", 0)], instance_id="i")], T0 + 60 * S)
    kip_join(log, "k", 9, {"k": [0]}, T0 + 70 * S)
    state, _ = fold_group(None, log.events[: offset + 1])
    assert state is not None
    assert GroupState.from_json(state.to_json()) == state
    # The text of the C encoder's walk is that of the values' own (codec.to_jsonable).
    assert state.to_json() == json.dumps(to_jsonable(state), separators=(",", ":"), sort_keys=True)
