"""Share groups (KIP-932) and Kafka Streams groups (KIP-1071) in the history: epochs, members,
sessions, assignments (tasks for Streams, with each member's process and host), the group state,
and share-partition state replayed from ``__share_group_state``.

Every record is built as the broker writes it, through the protocol's own encoder (the record
types, field names and versions of ``offsetscope.protocol.group_coordinator`` and
``share_state``), then decoded back into events, as ingestion does.
"""

from __future__ import annotations

import pytest
from share_streams_log import T0, TOPIC_ID, share_log, streams_log

from offsetscope.alerts import rules
from offsetscope.config import load
from offsetscope.history import fold_batch
from offsetscope.history.rows import ShareStateBatch
from offsetscope.history.share_state import overlay
from offsetscope.history.tables import materialize
from offsetscope.protocol.json_format import uuid_to_kafka


def test_streams_group_epochs_members_and_tasks() -> None:
    _, out = fold_batch(None, streams_log().events)
    gens = materialize(out.group_generations)
    assert [(r.generation, r.kind, r.protocol_type, r.member_count, r.rebalances) for r in
            sorted(gens.values(), key=lambda r: r.generation)] == [
        (1, "streams", "streams", 1, 1),
        (2, "streams", "streams", 2, 1),
        (3, "streams", "streams", 1, 1),
    ]  # fmt: skip
    by_epoch = {r.generation: r for r in gens.values()}
    assert by_epoch[2].members_joined == ("member-b",)
    assert by_epoch[3].members_left == ("member-b",)
    assert by_epoch[3].assignment_epoch == 3
    tasks_rows = materialize(out.streams_assignments)
    row = tasks_rows[("wordcount", 0, 2, "member-a")]
    assert (row.process_id, row.host, row.port, row.client_id) == ("proc-a", "app-a", 7070, "wc-a")
    assert (row.active_tasks, row.standby_tasks, row.warmup_tasks) == (
        (("0", (0,)),),
        (("0", (1,)),),
        (),
    )
    assert (row.topology_epoch, row.member_topology_epoch) == (0, 0)
    b = tasks_rows[("wordcount", 0, 2, "member-b")]
    assert (b.process_id, b.host, b.active_tasks, b.warmup_tasks) == (
        "proc-b",
        "app-b",
        (("0", (1,)),),
        (("0", (0,)),),
    )
    assert {k[2] for k in tasks_rows} == {1, 2, 3}
    sessions = materialize(out.member_sessions)
    gone = sessions[("wordcount", 0, "member-b")]
    assert (gone.kind, gone.end_reason, gone.left_at) == ("streams", "left", T0 + 60_000)
    (cur,) = out.groups_current[-1:]
    assert (cur.kind, cur.state, cur.member_count, cur.generation) == ("streams", "Stable", 1, 3)
    states = [t.to_state for t in out.group_state_transitions]
    assert "Assigning" in states
    assert "Reconciling" in states
    assert states[-1] == "Stable"


def test_streams_groups_feed_the_storm_rule_like_consumer_groups() -> None:
    _, out = fold_batch(None, streams_log().events)
    base = load("base").alerts
    cfg = base.__class__(
        **{
            **{f: getattr(base, f) for f in base.__dataclass_fields__},
            "rebalance_storm": base.rebalance_storm.__class__(max_generations=2, window="5m"),
        }
    )
    inputs = rules.RuleInputs(
        as_of=T0 + 120_000,
        since=None,
        groups=frozenset({"wordcount"}),
        generations=tuple(materialize(out.group_generations).values()),
    )
    (storm,) = rules.rebalance_storm(inputs, cfg)
    assert (storm.subject, storm.value, storm.generations) == ("wordcount", 3.0, (1, 2, 3))


def test_the_fold_state_survives_json_between_batches() -> None:
    events = streams_log().events
    _, once = fold_batch(None, events)
    states, first = fold_batch(None, events[:9])
    for group_state in states.groups.values():
        assert type(group_state).from_json(group_state.to_json()) == group_state
    _, second = fold_batch(states, events[9:])
    assert materialize([*first.streams_assignments, *second.streams_assignments]) == materialize(
        once.streams_assignments
    )
    assert materialize([*first.group_generations, *second.group_generations]) == materialize(
        once.group_generations
    )


def test_share_group_epochs_assignment_and_partition_state() -> None:
    _, out = fold_batch(None, share_log().events)
    (gen,) = materialize(out.group_generations).values()
    assert (gen.kind, gen.protocol_type, gen.generation, gen.member_count) == (
        "share",
        "share",
        1,
        1,
    )
    assert gen.assignment == (("s1", (("payments", 0), ("payments", 1))),)
    owners = {(a.topic, a.partition): a.member_id for a in out.partition_assignments}
    assert owners == {("payments", 0): "s1", ("payments", 1): "s1"}
    (cur,) = out.groups_current[-1:]
    assert (cur.kind, cur.state, cur.member_count) == ("share", "Stable", 1)
    snapshot, update = sorted(out.share_partition_state, key=lambda r: r.record_offset)
    assert (snapshot.record_kind, snapshot.start_offset, snapshot.in_flight_records) == (
        "snapshot",
        0,
        10,
    )
    assert (snapshot.topic_id, snapshot.topic) == (uuid_to_kafka(TOPIC_ID), "payments")
    assert (update.record_kind, update.start_offset) == ("update", 5)
    # 0-4 acknowledged fall below the start; 5 archived after 3 deliveries; 6-9 in flight.
    assert update.batches == (ShareStateBatch(5, 5, 4, 3), ShareStateBatch(6, 9, 0, 1))
    assert (update.in_flight_records, update.archived_records, update.max_delivery_count) == (
        4,
        1,
        3,
    )


@pytest.mark.parametrize(
    ("updates", "start", "expected"),
    [
        ([], 0, [(0, 9, 0, 1)]),
        ([(3, 4, 2, 1)], 0, [(0, 2, 0, 1), (3, 4, 2, 1), (5, 9, 0, 1)]),
        ([(0, 9, 2, 1)], 10, []),
        ([(8, 12, 0, 2)], 4, [(4, 7, 0, 1), (8, 12, 0, 2)]),
    ],
)
def test_overlay_lays_updates_over_the_ranges_they_cover(
    updates: list[tuple[int, int, int, int]], start: int, expected: list[tuple[int, int, int, int]]
) -> None:
    base = [ShareStateBatch(0, 9, 0, 1)]
    got = overlay(base, [ShareStateBatch(*u) for u in updates], start)
    assert got == tuple(ShareStateBatch(*e) for e in expected)


@pytest.mark.parametrize(
    ("start", "batches", "expected"),
    [
        (37, [], 37),
        # the last acknowledgement persisted before the start offset moved past it
        (36, [(36, 36, 2, 1)], 37),
        (30, [(30, 33, 2, 1), (34, 35, 4, 5), (36, 36, 2, 1)], 37),
        (30, [(30, 33, 2, 1), (34, 35, 0, 1), (36, 36, 2, 1)], 34),  # 34-35 still in flight
        (30, [(31, 36, 2, 1)], 30),  # 30 unknown: not done
    ],
)
def test_a_share_partition_is_done_through_its_start_and_the_acknowledged_batches_after_it(
    start: int, batches: list[tuple[int, int, int, int]], expected: int
) -> None:
    from offsetscope.verify.share_streams import done_through

    rows = [
        dict(
            zip(("first_offset", "last_offset", "delivery_state", "delivery_count"), b, strict=True)
        )
        for b in batches
    ]
    assert done_through({"start_offset": start, "batches": rows}) == expected
