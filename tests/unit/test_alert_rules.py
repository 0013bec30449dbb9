"""Alert rules on history rows: checked against the bundled coordinator's ground truth and
against hand-built rows for the cases a scenario does not reach."""

from __future__ import annotations

import dataclasses

import pytest
from alert_support import (
    GROUP,
    MIN,
    S,
    alerts_cfg,
    brute_episodes,
    fold_in_batches,
    simulated,
    storm_cfg,
    truth_of,
    window_count,
)
from history_log import T0, Log, M

from offsetscope import config
from offsetscope.alerts import rules
from offsetscope.alerts.model import (
    DATA_LOSS,
    HANGING_TRANSACTION,
    LAG_STALL,
    MEMBER_CHURN,
    REBALANCE_STORM,
    REBALANCE_STUCK,
)
from offsetscope.config import (
    ChurnOverride,
    LagOverride,
    StormOverride,
    duration_ms,
)
from offsetscope.history import fold_batch
from offsetscope.history.rows import PartitionLagRow, TransactionRow
from offsetscope.history.tables import materialize
from offsetscope.quality.model import QualityResultRow


def storm_inputs(as_of: int | None = None) -> rules.RuleInputs:
    sim = simulated("rebalance-storm")
    (_, folded), *_ = list(fold_in_batches(sim.events, [sim.end_ms]))
    assert folded.generations is not None
    assert folded.sessions is not None
    return rules.RuleInputs(
        as_of=as_of or sim.end_ms,
        since=None,
        groups=frozenset({GROUP}),
        generations=tuple(folded.generations.values()),
        sessions=tuple(folded.sessions.values()),
    )


# ----------------------------------------------------------------------------- storm


def test_storm_episodes_equal_a_millisecond_scan_of_the_ground_truth() -> None:
    sim = simulated("rebalance-storm")
    window, limit = MIN, 5
    started = sorted(t["at_ms"] for t in truth_of(sim.truth, "GenerationStarted", GROUP))
    expected = brute_episodes(
        sim.start_ms, sim.end_ms, lambda t: window_count(started, t, window) > limit
    )
    assert expected, "the scenario is a storm under these settings"

    findings = rules.rebalance_storm(storm_inputs(), storm_cfg("1m", limit))

    assert [(f.episode_start, f.resolved_at) for f in findings] == expected
    for f, (a, b) in zip(findings, expected, strict=True):
        assert f.rule == REBALANCE_STORM
        assert f.subject == GROUP
        assert f.value == max(window_count(started, t, window) for t in range(a, b))
        assert f.threshold == limit
        # Why: the generations whose rebalances the episode's windows counted.
        counted = {
            t["generation_id"]
            for t in truth_of(sim.truth, "GenerationStarted", GROUP)
            if a - window < t["at_ms"] < b
        }
        stored = {t["generation_id"] for t in truth_of(sim.truth, "AssignmentStored", GROUP)}
        assert set(f.generations) == counted & stored
        assert f"{f.value:g} rebalances within 1m" in f.reason


def test_storm_resolves_when_the_storm_ends_and_stays_open_while_it_lasts() -> None:
    sim = simulated("rebalance-storm")
    last = max(t["at_ms"] for t in truth_of(sim.truth, "GenerationStarted", GROUP))
    (finding,) = rules.rebalance_storm(storm_inputs(), storm_cfg("1m", 5))
    assert finding.resolved_at is not None
    assert last < finding.resolved_at <= last + MIN
    # Evaluated in the middle of the storm, the same episode is open, with the same id.
    (middle,) = rules.rebalance_storm(storm_inputs(as_of=last), storm_cfg("1m", 5))
    assert middle.resolved_at is None
    assert middle.alert_id == finding.alert_id


def test_storm_below_threshold_raises_nothing() -> None:
    sim = simulated("rebalance-storm")
    started = sorted(t["at_ms"] for t in truth_of(sim.truth, "GenerationStarted", GROUP))
    peak = max(window_count(started, t, MIN) for t in range(sim.start_ms, sim.end_ms))
    assert rules.rebalance_storm(storm_inputs(), storm_cfg("1m", peak)) == []
    assert len(rules.rebalance_storm(storm_inputs(), storm_cfg("1m", peak - 1))) >= 1


@pytest.mark.parametrize(
    ("groups", "found"),
    [
        ({}, True),
        ({GROUP: StormOverride(enabled=False)}, False),
        ({"alert*": StormOverride(max_generations=100)}, False),
        # an exact id wins over a glob written before it
        ({"alert*": StormOverride(max_generations=100), GROUP: StormOverride(window="1m")}, True),
        ({"other-*": StormOverride(enabled=False)}, True),
    ],
)
def test_storm_per_group_overrides(groups: dict[str, StormOverride], found: bool) -> None:
    findings = rules.rebalance_storm(storm_inputs(), storm_cfg("1m", 5, **groups))
    assert bool(findings) is found


# ----------------------------------------------------------------------------- churn


def test_churn_episodes_equal_a_millisecond_scan_of_the_ground_truth() -> None:
    sim = simulated("rebalance-storm")
    stored = {t["generation_id"] for t in truth_of(sim.truth, "AssignmentStored", GROUP)}
    generations = sorted(
        (t["at_ms"], t["generation_id"], t["member_ids"])
        for t in truth_of(sim.truth, "GenerationStarted", GROUP)
        if t["generation_id"] in stored
    )
    # A member joins at the first stored generation that has it and leaves at the first
    # stored generation after that without it.
    joins, leaves, present = [], [], set()
    for at, _, members in generations:
        joins += [at for m in members if m not in present]
        leaves += [at for m in present if m not in members]
        present = set(members)
    joins.sort()
    leaves.sort()
    window, limit = MIN, 12
    expected = brute_episodes(
        sim.start_ms,
        sim.end_ms,
        lambda t: window_count(joins, t, window) + window_count(leaves, t, window) > limit,
    )
    assert expected
    base = config.load("base").alerts.member_churn
    cfg = alerts_cfg(member_churn=dataclasses.replace(base, window="1m", max_member_changes=limit))

    findings = rules.member_churn(storm_inputs(), cfg)

    assert [(f.episode_start, f.resolved_at) for f in findings] == expected
    assert all(f.rule == MEMBER_CHURN and f.instance_ids == () for f in findings)
    assert all(len(f.member_ids) > limit // 2 for f in findings)


def test_churn_static_instances_cycling_member_ids() -> None:
    log = Log()
    for gen in range(1, 5):  # pod-a and pod-b come back with a new member id every minute
        members = [M(f"a-{gen}", instance_id="pod-a"), M(f"b-{gen}", instance_id="pod-b"), M("c")]
        log.group("static", gen, members, T0 + gen * MIN)
    _, out = fold_batch(None, log.events)
    inputs = rules.RuleInputs(
        as_of=T0 + 20 * MIN,
        since=None,
        groups=frozenset({"static"}),
        sessions=tuple(materialize(out.member_sessions).values()),
    )
    base = config.load("base").alerts.member_churn
    cfg = alerts_cfg(
        member_churn=dataclasses.replace(
            base, window="10m", max_member_changes=100, max_cycling_instances=1
        )
    )
    (finding,) = rules.member_churn(inputs, cfg)
    assert finding.instance_ids == ("pod-a", "pod-b")
    assert finding.episode_start == T0 + 2 * MIN  # the first time both had cycled
    # 10 minutes after the last restart no instance is seen with two ids any more
    assert finding.resolved_at == T0 + 4 * MIN + 10 * MIN
    override = dataclasses.replace(
        cfg.member_churn, groups={"static": ChurnOverride(max_cycling_instances=2)}
    )
    assert rules.member_churn(inputs, alerts_cfg(member_churn=override)) == []


# ----------------------------------------------------------------------------- stuck


def test_stuck_classic_generation_is_reported_once_with_its_span() -> None:
    log = Log()
    log.group("g", 1, [M("a", [("orders", 0)])], T0)
    # generations 2..3 never stored; 4 completes 10 minutes later (timeout 5 minutes)
    log.group("g", 4, [M("a", [("orders", 0)])], T0 + 10 * MIN, cst=T0 + 10 * MIN - S)
    states, out = fold_batch(None, log.events)
    inputs = rules.RuleInputs(
        as_of=T0 + 11 * MIN,
        since=None,
        groups=frozenset({"g"}),
        generations=tuple(materialize(out.group_generations).values()),
        group_states=tuple(states.groups.values()),
    )
    (finding,) = rules.rebalance_stuck(inputs, alerts_cfg())
    assert finding.rule == REBALANCE_STUCK
    assert finding.generations == (2, 3)
    assert (finding.episode_start, finding.resolved_at) == (T0, T0 + 10 * MIN - S)
    assert finding.detail == "group_life:0"
    assert "no assignment stored for generation(s) 2, 3" in finding.reason
    # over before the horizon: not looked at again
    later = dataclasses.replace(inputs, since=T0 + 10 * MIN)
    assert rules.rebalance_stuck(later, alerts_cfg()) == []


def test_stuck_kip848_group_open_until_it_converges() -> None:
    import uuid

    topic = uuid.UUID(int=1)
    log = Log()
    log.member("k", "m1", T0)
    log.epoch("k", 1, T0)
    log.target("k", "m1", {topic: [0]}, T0)
    log.target_epoch("k", 1, T0)
    log.current("k", "m1", 0, {topic: []}, T0, state=1)
    states, out = fold_batch(None, log.events)
    inputs = rules.RuleInputs(
        as_of=T0 + MIN,
        since=None,
        groups=frozenset({"k"}),
        generations=tuple(materialize(out.group_generations).values()),
        group_states=tuple(states.groups.values()),
    )
    (finding,) = rules.rebalance_stuck(inputs, alerts_cfg())
    assert (finding.episode_start, finding.resolved_at, finding.value) == (T0, None, MIN)
    assert "Reconciling" in finding.reason
    disabled = dataclasses.replace(alerts_cfg().rebalance_stuck, enabled=False)
    assert rules.rebalance_stuck(inputs, alerts_cfg(rebalance_stuck=disabled)) == []


# ----------------------------------------------------------------------------- lag


def lag_row(
    at: int, committed: int, end: int, *, log_start: int = 0, partition: int = 0
) -> PartitionLagRow:
    lost = max(0, log_start - committed)
    return PartitionLagRow(
        group_id="slow",
        topic="orders",
        partition=partition,
        as_of=at,
        read_committed=False,
        committed_offset=committed,
        committed_at=at - S,
        end_offset=end,
        high_watermark=end,
        last_stable_offset=end,
        log_start_offset=log_start,
        sampled_at=at,
        lag_records=max(0, end - committed),
        lag_seconds=None,
        lag_method="exact",
        data_loss=lost > 0,
        lost_records=lost,
    )


def lag_inputs(rows: list[PartitionLagRow], as_of: int) -> rules.RuleInputs:
    return rules.RuleInputs(as_of=as_of, since=None, groups=frozenset({"slow"}), lag=tuple(rows))


def test_lag_stall_offset_frozen_while_lag_grows() -> None:
    # 0..9: consuming (offset follows the end); 10..24: stuck at 100 while the end grows;
    # 25..: consuming again
    rows = [lag_row(T0 + i * MIN, 10 * i, 10 * i + 2) for i in range(10)]
    rows += [lag_row(T0 + i * MIN, 100, 10 * i + 2) for i in range(10, 25)]
    rows += [lag_row(T0 + i * MIN, 10 * i, 10 * i + 1) for i in range(25, 40)]
    cfg = alerts_cfg(lag_stall=dataclasses.replace(alerts_cfg().lag_stall, intervals=5))
    (finding,) = rules.lag_stall(lag_inputs(rows, T0 + 40 * MIN), cfg)
    assert finding.rule == LAG_STALL
    assert finding.detail == "orders:0"
    # Burrow: the whole window (5 observations) at one offset; the first such window ends at
    # observation 14 (10..14 all at 100), the first window with a moving offset at 25.
    assert finding.episode_start == T0 + 14 * MIN
    assert finding.resolved_at == T0 + 25 * MIN
    assert dict(finding.evidence)["burrow_status"] == "STALL"
    assert finding.value == 10 * 24 + 2 - 100  # lag at the episode's last observation


def test_lag_stall_threshold_free_but_allowed_lag_and_full_window() -> None:
    rows = [lag_row(T0 + i * MIN, 100, 103) for i in range(4)]  # frozen, lag 3
    cfg = alerts_cfg(lag_stall=dataclasses.replace(alerts_cfg().lag_stall, intervals=5))
    assert rules.lag_stall(lag_inputs(rows, T0 + 10 * MIN), cfg) == []  # window not full
    rows.append(lag_row(T0 + 4 * MIN, 100, 103))
    assert len(rules.lag_stall(lag_inputs(rows, T0 + 10 * MIN), cfg)) == 1
    tolerant = dataclasses.replace(cfg.lag_stall, groups={"slow": LagOverride(allowed_lag=3)})
    assert rules.lag_stall(lag_inputs(rows, T0 + 10 * MIN), alerts_cfg(lag_stall=tolerant)) == []


def test_data_loss_committed_offset_below_log_start() -> None:
    rows = [
        lag_row(T0, 50, 60),
        lag_row(T0 + MIN, 50, 70, log_start=55),  # retention deleted 50..54 unread
        lag_row(T0 + 2 * MIN, 50, 80, log_start=58),
        lag_row(T0 + 3 * MIN, 60, 80, log_start=58),  # the group skipped past it
    ]
    (finding,) = rules.data_loss(lag_inputs(rows, T0 + 5 * MIN), alerts_cfg())
    assert finding.rule == DATA_LOSS
    assert (finding.episode_start, finding.resolved_at) == (T0 + MIN, T0 + 3 * MIN)
    assert finding.value == 8
    assert "below the log start offset 58" in finding.reason


# ----------------------------------------------------------------------------- transactions


def txn_row(tid: str, started: int, completed: int | None, timeout: int = MIN) -> TransactionRow:
    return TransactionRow(
        transactional_id=tid,
        record_partition=0,
        first_record_offset=started // S,
        producer_id=7,
        producer_epoch=1,
        end_producer_id=None,
        end_producer_epoch=None,
        previous_producer_id=None,
        next_producer_id=None,
        client_transaction_version=0,
        timeout_ms=timeout,
        state="Ongoing" if completed is None else "CompleteCommit",
        outcome="ongoing" if completed is None else "committed",
        started_at=started,
        ended_at=completed,
        completed_at=completed,
        duration_ms=None if completed is None else completed - started,
        partitions=(("orders", 0), ("orders", 1)),
        partition_count=2,
        timed_out=False,
        fenced=False,
        fenced_by_producer_id=None,
        fenced_by_epoch=None,
        end_reason=None if completed is None else "client_commit",
        end_reason_inferred=False,
        last_record_offset=started // S + 1,
        updated_at=completed or started,
    )


def test_hanging_transactions_open_past_timeout_plus_margin() -> None:
    margin = duration_ms(alerts_cfg().hanging_transaction.margin)
    rows = (
        txn_row("fast", T0, T0 + 10 * S),
        txn_row("slow-but-done", T0, T0 + MIN + margin + 5 * S),
        txn_row("hung", T0, None),
    )
    inputs = rules.RuleInputs(
        as_of=T0 + 10 * MIN,
        since=None,
        transactional_ids=frozenset({"fast", "slow-but-done", "hung"}),
        transactions=rows,
    )
    found = {f.subject: f for f in rules.hanging_transaction(inputs, alerts_cfg())}
    assert set(found) == {"slow-but-done", "hung"}
    hung = found["hung"]
    assert hung.rule == HANGING_TRANSACTION
    assert (hung.opened_at, hung.resolved_at, hung.value) == (T0 + MIN + margin + 1, None, 10 * MIN)
    assert (hung.producer_id, hung.producer_epoch) == (7, 1)
    assert "orders-0,orders-1" in dict(hung.evidence)["partitions"]
    done = found["slow-but-done"]
    assert done.resolved_at == T0 + MIN + margin + 5 * S
    # not yet hanging one millisecond before timeout + margin is exceeded
    early = dataclasses.replace(inputs, as_of=T0 + MIN + margin)
    assert rules.hanging_transaction(early, alerts_cfg()) == []


# ----------------------------------------------------------------------------- quality


def test_quality_failure_until_a_later_batch_passes() -> None:
    def result(batch: int, ok: bool) -> QualityResultRow:
        return QualityResultRow(
            "group_generations", batch, "group_generations", ok, 10, 0 if ok else 2, (),
            () if ok else ("no_duplicate_keys",), T0 + batch * MIN, 0.1,
        )  # fmt: skip

    inputs = rules.RuleInputs(
        as_of=0,  # event time is irrelevant: results run on the validation clock
        since=None,
        tables=frozenset({"group_generations"}),
        quality=tuple(result(b, ok) for b, ok in enumerate([True, False, False, True, True])),
    )
    (finding,) = rules.quality(inputs, alerts_cfg())
    assert (finding.episode_start, finding.resolved_at) == (T0 + MIN, T0 + 3 * MIN)
    assert finding.value == 4
    assert "no_duplicate_keys" in finding.reason
    assert "(1, 2)" in finding.reason


def test_all_rules_off_when_alerts_are_disabled() -> None:
    cfg = dataclasses.replace(storm_cfg(), enabled=False)
    assert rules.find_all(storm_inputs(), cfg) == []
    assert rules.find_all(storm_inputs(), storm_cfg())
