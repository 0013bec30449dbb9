"""The runtime: routing by partition, batches, timer order, parked requests, loading a log."""

from __future__ import annotations

import pytest

from offsetscope.config import InvalidConfigError
from offsetscope.protocol.records import OFFSETS_TOPIC
from offsetscope.protocol.states import ClassicGroupState as S
from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.group import events as ev
from offsetscope.sim.coordinator.group.config import GroupCoordinatorConfig
from offsetscope.sim.coordinator.group.messages import JoinGroupResponse, SyncGroupResponse
from offsetscope.sim.coordinator.group.testing import GroupTestContext
from offsetscope.sim.coordinator.runtime import GroupCoordinatorRuntime


def test_groups_are_routed_to_their_offsets_partition() -> None:
    ctx = GroupTestContext.builder().build()
    # docs/formats.md section 10: my-group -> 12, test-group -> 12, group-id -> 13 (of 50).
    assert [ctx.runtime.partition_for(g) for g in ["my-group", "test-group", "group-id"]] == [
        12,
        12,
        13,
    ]
    for g in ["my-group", "test-group", "group-id"]:
        ctx.commit(g, {("foo", 0): 1})
    sizes = {
        log.partition: log.next_offset
        for log in ctx.log
        if log.topic == OFFSETS_TOPIC and log.next_offset
    }
    assert sizes == {12: 2, 13: 1}
    assert ctx.runtime.shard_for("my-group") is ctx.runtime.shards[12]
    assert set(ctx.runtime.shards[12].groups) == {"my-group", "test-group"}


def test_one_request_appends_one_batch() -> None:
    ctx = GroupTestContext.builder().build()
    ctx.commit("g", {("foo", 0): 1, ("foo", 1): 2, ("bar", 0): 3})
    (appended,) = ctx.appends
    assert len(appended.batch.records) == 3
    assert [r.key for r in appended.batch.records] == [
        bytes.fromhex("0001 0001 67 0003 666f6f 00000000"),
        bytes.fromhex("0001 0001 67 0003 666f6f 00000001"),
        bytes.fromhex("0001 0001 67 0003 626172 00000000"),
    ]


def test_timers_due_at_the_same_time_fire_in_scheduling_order() -> None:
    def expiry_order(first: str, second: str) -> list[str]:
        ctx = GroupTestContext.builder().build()
        formed = {g: ctx.form_group(g, ["m"], static=True) for g in ["x", "y"]}
        ctx.heartbeat(first, 1, formed[first]["m"])
        ctx.heartbeat(second, 1, formed[second]["m"])
        ctx.take_events()
        ctx.advance(45_000)
        return [e.group_id for e in ctx.events if isinstance(e, ev.MemberLeft)]

    assert expiry_order("x", "y") == ["x", "y"]
    assert expiry_order("y", "x") == ["y", "x"]


def test_timers_fire_at_their_deadline_and_advance_returns_the_new_time() -> None:
    ctx = GroupTestContext.builder().build()
    start = ctx.now
    member, _ = ctx.join_dynamic("g")
    assert ctx.runtime.timer_deadline("g", "join-g") == start + 3_000
    assert ctx.advance(10_000) == start + 10_000
    changes = [e for e in ctx.events if isinstance(e, ev.GroupStateChanged)]
    assert [(c.state, c.at_ms) for c in changes] == [
        ("PreparingRebalance", start),
        ("CompletingRebalance", start + 3_000),
    ]
    assert member in ctx.group("g").members


def test_due_timers_fire_before_a_request_at_that_time() -> None:
    ctx = GroupTestContext.builder().build()
    formed = ctx.form_group("g", ["a"], session_timeout_ms=10_000)
    ctx.clock.advance(10_000)  # time passes without the runtime being told
    assert ctx.heartbeat("g", formed.generation, formed["a"]).error is Errors.UNKNOWN_MEMBER_ID


def test_parked_responses_run_callbacks_that_may_send_requests() -> None:
    ctx = GroupTestContext.builder().build()
    seen: list[object] = []
    member, pending = ctx.join_dynamic("g")

    def on_join(response: JoinGroupResponse) -> None:
        seen.append(response.generation_id)
        sync = ctx.sync("g", response.generation_id, member, {member: b"x"})
        sync.add_done_callback(lambda r: seen.append(r))

    pending.add_done_callback(on_join)
    assert seen == []
    ctx.advance(3_000)
    assert seen == [1, SyncGroupResponse(Errors.NONE, "consumer", "range", b"x")]
    assert ctx.group("g").state is S.STABLE


def test_every_offsets_partition_runs_the_expiry_job() -> None:
    ctx = GroupTestContext.builder().with_offsets_partitions(3).build()
    deadlines = [ctx.runtime.timer_deadline(g, "expire-group-metadata") for g in ["a", "b", "c"]]
    assert deadlines == [ctx.now + 600_000] * 3
    ctx.advance(600_000)
    assert ctx.runtime.next_deadline() == ctx.now + 600_000


def test_loading_the_log_rebuilds_stable_and_empty_groups() -> None:
    ctx = GroupTestContext.builder().build()
    stable = ctx.form_group("s", ["a", "b"], static=True)
    ctx.form_group("e", ["a"], session_timeout_ms=10_000)
    ctx.commit("s", {("foo", 0): 3}, generation_id=stable.generation, member_id=stable["a"])
    ctx.advance(10_000)  # "e" loses its member: Empty, generation 2
    live_s, live_e = ctx.group("s"), ctx.group("e")
    reloaded = GroupCoordinatorRuntime(ctx.log, ctx.clock, ctx.runtime.config)
    reloaded.load()
    s = reloaded.shard_for("s").groups["s"]
    e = reloaded.shard_for("e").groups["e"]
    assert (s.state, s.generation_id, s.protocol_type, s.protocol_name, s.leader_id) == (
        S.STABLE,
        live_s.generation_id,
        "consumer",
        "range",
        live_s.leader_id,
    )
    assert {m: (x.group_instance_id, x.assignment) for m, x in s.members.items()} == {
        m: (x.group_instance_id, x.assignment) for m, x in live_s.members.items()
    }
    assert s.current_state_timestamp == live_s.current_state_timestamp
    assert (e.state, e.generation_id, e.num_members) == (S.EMPTY, live_e.generation_id, 0)
    offsets = reloaded.shard_for("s").offsets.offset("s", "foo", 0)
    assert offsets is not None
    assert offsets.committed_offset == 3
    # Loaded members must heartbeat: after a session timeout without one they are gone.
    reloaded.advance(45_000)
    assert reloaded.shard_for("s").groups["s"].num_members == 0


def test_config_rejects_invalid_values_naming_the_key() -> None:
    with pytest.raises(InvalidConfigError, match="max_size"):
        GroupCoordinatorConfig(max_size=0)
    with pytest.raises(InvalidConfigError, match="min_session_timeout_ms"):
        GroupCoordinatorConfig(min_session_timeout_ms=10, max_session_timeout_ms=5)
    with pytest.raises(InvalidConfigError, match="offsets_retention_ms"):
        GroupCoordinatorConfig(offsets_retention_ms=0)
    assert GroupCoordinatorConfig().initial_rebalance_delay_ms == 3000
