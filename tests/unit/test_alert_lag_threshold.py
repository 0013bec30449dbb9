"""The lag_threshold and stuck_lso rules, and their episodes through the engine: a group far
behind but committing alerts (lag_stall does not), a brief lag does not, levels and overrides,
topic sums, resolution when the lag falls or the LSO moves."""

from __future__ import annotations

import dataclasses

import pytest
from alert_support import MIN, S, alerts_cfg
from history_log import T0

from offsetscope.alerts import engine, rules
from offsetscope.alerts.model import (
    DATA_PARTITION,
    LAG_STALL,
    LAG_THRESHOLD,
    PARTITION,
    STUCK_LSO,
    TOPIC,
    AlertStatus,
)
from offsetscope.config import AlertsConfig, Duration, LagThresholdOverride
from offsetscope.history.rows import PartitionLagRow, StuckPartitionRow


def row(at: int, records: int, seconds: float | None, *, group: str = "etl", partition: int = 0,
        topic: str = "orders", committed: int | None = None) -> PartitionLagRow:  # fmt: skip
    offset = committed if committed is not None else at // S  # moving: the group commits
    return PartitionLagRow(
        group_id=group,
        topic=topic,
        partition=partition,
        as_of=at,
        read_committed=True,
        committed_offset=offset,
        committed_at=at - S,
        end_offset=offset + records,
        high_watermark=offset + records,
        last_stable_offset=offset + records,
        log_start_offset=0,
        sampled_at=at,
        lag_records=records,
        lag_seconds=seconds,
        lag_method="exact",
        data_loss=False,
        lost_records=0,
        lag_basis="lso",
        basis_reason="default",
        lag_records_hwm=records,
        lag_records_lso=records,
        lag_seconds_hwm=seconds,
        lag_seconds_lso=seconds,
    )


def threshold_cfg(**changes: object) -> AlertsConfig:
    base = alerts_cfg()
    settings = {
        "warning_records": 1_000,
        "critical_records": 10_000,
        "warning_time": Duration("10m"),
        "critical_time": None,
        "duration": Duration("5m"),
        **changes,
    }
    return alerts_cfg(lag_threshold=dataclasses.replace(base.lag_threshold, **settings))


def inputs(rows: list[PartitionLagRow], as_of: int, since: int | None = None) -> rules.RuleInputs:
    return rules.RuleInputs(
        as_of=as_of, since=since, groups=frozenset(r.group_id for r in rows), lag=tuple(rows)
    )


def partition_findings(found: list) -> list:
    return [f for f in found if f.subject_kind == PARTITION]


def test_a_group_far_behind_but_committing_alerts_and_lag_stall_does_not() -> None:
    # The committed offset moves every minute, but the lag grows 500 records a minute.
    rows = [row(T0 + m * MIN, 500 * m, 20.0 * m) for m in range(40)]
    cfg = threshold_cfg(warning_time=None)
    found = partition_findings(rules.lag_threshold(inputs(rows, T0 + 40 * MIN), cfg))
    by_level = {f.severity: f for f in found}
    assert set(by_level) == {"warning", "critical"}
    warning = by_level["warning"]
    assert warning.rule == LAG_THRESHOLD
    assert (warning.subject, warning.detail) == ("etl", "orders:0/warning")
    # Above 1,000 from minute 3 (1,500); held 5 minutes at minute 8: opened then, still open.
    assert (warning.episode_start, warning.opened_at, warning.resolved_at) == (
        T0 + 3 * MIN,
        T0 + 8 * MIN,
        None,
    )
    critical = by_level["critical"]
    assert (critical.episode_start, critical.opened_at) == (T0 + 21 * MIN, T0 + 26 * MIN)
    assert critical.value == 500 * 39
    assert critical.threshold == 10_000
    # Burrow's evaluation sees a group whose offset moves: not a stall.
    stall = rules.lag_stall(inputs(rows, T0 + 40 * MIN), alerts_cfg())
    assert [f for f in stall if f.rule == LAG_STALL] == []


def test_a_group_briefly_behind_does_not_alert() -> None:
    # Above both thresholds for 4 minutes (less than the 5-minute duration), then caught up.
    rows = [row(T0 + m * MIN, 50_000 if 2 <= m < 6 else 10, None) for m in range(20)]
    assert rules.lag_threshold(inputs(rows, T0 + 20 * MIN), threshold_cfg()) == []


def test_the_episode_resolves_at_the_first_observation_below() -> None:
    lag = [0, 2_000, 2_000, 2_000, 2_000, 2_000, 2_000, 2_000, 10, 10, 3_000]
    rows = [row(T0 + m * MIN, n, None) for m, n in enumerate(lag)]
    found = partition_findings(rules.lag_threshold(inputs(rows, T0 + 10 * MIN), threshold_cfg()))
    # The run starting at minute 10 has not held for 5 minutes: not an alert yet.
    assert [(f.episode_start, f.opened_at, f.resolved_at) for f in found] == [
        (T0 + MIN, T0 + 6 * MIN, T0 + 8 * MIN)
    ]


def test_time_thresholds_fire_on_lag_in_seconds() -> None:
    rows = [row(T0 + m * MIN, 5, 60.0 * m) for m in range(30)]  # few records, far behind
    found = partition_findings(rules.lag_threshold(inputs(rows, T0 + 30 * MIN), threshold_cfg()))
    (warning,) = found
    # Above 10 minutes from minute 11; held 5 minutes at minute 16.
    assert (warning.episode_start, warning.opened_at) == (T0 + 11 * MIN, T0 + 16 * MIN)
    assert (warning.threshold, dict(warning.evidence)["measured"]) == (600.0, "seconds")


def test_per_topic_then_per_group_overrides() -> None:
    rows = [row(T0 + m * MIN, 5_000, None, topic=t, group=g) for m in range(12)
            for t, g in (("orders", "etl"), ("clicks", "etl"), ("orders", "batch-nightly"))]  # fmt: skip
    cfg = threshold_cfg(
        topics={"click*": LagThresholdOverride(warning_records=100_000)},
        groups={"batch-*": LagThresholdOverride(enabled=False)},
    )
    found = partition_findings(rules.lag_threshold(inputs(rows, T0 + 12 * MIN), cfg))
    assert {(f.subject, f.detail) for f in found} == {("etl", "orders:0/warning")}
    # The group's override applies after the topic's: it can turn a topic's threshold back.
    cfg = threshold_cfg(
        topics={"clicks": LagThresholdOverride(warning_records=100_000)},
        groups={"etl": LagThresholdOverride(warning_records=4_000)},
    )
    found = partition_findings(rules.lag_threshold(inputs(rows, T0 + 12 * MIN), cfg))
    assert {(f.subject, f.detail) for f in found} == {
        ("etl", "orders:0/warning"),
        ("etl", "clicks:0/warning"),
        ("batch-nightly", "orders:0/warning"),
    }


def test_lag_summed_over_a_topics_partitions() -> None:
    # 600 records behind on each of three partitions: no partition above 1,000, the topic is.
    rows = [row(T0 + m * MIN, 600, 30.0 + p, partition=p) for m in range(10) for p in range(3)]
    found = rules.lag_threshold(inputs(rows, T0 + 10 * MIN), threshold_cfg())
    (topic,) = found
    assert (topic.subject_kind, topic.detail, topic.value) == (TOPIC, "orders/warning", 1_800.0)
    assert "over 3 partitions" in topic.reason
    only_partitions = threshold_cfg(scopes=("partition",))
    assert rules.lag_threshold(inputs(rows, T0 + 10 * MIN), only_partitions) == []
    (obs, *_) = rules.topic_observations(rows)
    assert (obs.records, obs.seconds, obs.partitions) == (1_800, 32.0, 3)


@pytest.mark.parametrize("cut", [3, 7, 12, 25])
def test_evaluating_batch_by_batch_writes_the_same_alerts_as_one_evaluation(cut: int) -> None:
    rows = [row(T0 + m * MIN, 2_000 if 5 <= m < 20 else 0, None) for m in range(30)]
    cfg = threshold_cfg()
    final_at = T0 + 30 * MIN

    def evaluation(as_of: int, since: int | None, stored: dict) -> engine.Evaluation:
        seen = [r for r in rows if r.as_of <= as_of]
        return engine.evaluate(inputs(seen, as_of, since), cfg, stored, batch_id=as_of // MIN)

    once = evaluation(final_at, None, {})
    stored: dict = {}
    previous = None
    for as_of in (T0 + cut * MIN, final_at):
        ev = evaluation(as_of, previous, stored)
        stored.update({r.alert_id: r for r in ev.changed})
        previous = as_of
    strip = {(r.alert_id, r.status, r.episode_start, r.opened_at, r.resolved_at) for r in once.rows}
    assert {
        (r.alert_id, r.status, r.episode_start, r.opened_at, r.resolved_at) for r in stored.values()
    } == strip
    assert {r.status for r in stored.values()} == {AlertStatus.RESOLVED.value}


# ----------------------------------------------------------------------------- stuck LSO


def stuck_row(*, resolved: int | None, cause: str = "open_transaction") -> StuckPartitionRow:
    hanging = cause == "hanging_transaction"
    return StuckPartitionRow(
        topic="payments",
        partition=2,
        stuck_since=T0,
        last_stable_offset=100,
        detected_at=T0 + 15 * MIN,
        resolved_at=resolved,
        stuck_ms=(resolved or T0 + 20 * MIN) - T0,
        high_watermark=900,
        high_watermark_since=120,
        records_held=800,
        sampled_at=resolved or T0 + 20 * MIN,
        cause=cause,
        transactional_id=None if hanging else "billing-tx",
        producer_id=42,
        producer_epoch=None if hanging else 3,
        transaction_started_at=None if hanging else T0 - S,
        transaction_timeout_ms=None if hanging else 3_600_000,
        open_for_ms=None if hanging else 20 * MIN + S,
        first_offset=100,
        first_offset_source="segments",
        abort_command=(
            "kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic payments "
            "--partition 2 --start-offset 100"
            if hanging
            else None
        ),
        blocked_groups=("billing", "ledger"),
        behind_groups=(),
        updated_at=resolved or T0 + 20 * MIN,
    )


def stuck_inputs(rows: tuple[StuckPartitionRow, ...], as_of: int) -> rules.RuleInputs:
    return rules.RuleInputs(
        as_of=as_of, since=None, data_partitions=frozenset({"payments:2"}), stuck=rows
    )


def test_stuck_lso_names_the_open_transaction_and_the_blocked_groups() -> None:
    (finding,) = rules.stuck_lso(
        stuck_inputs((stuck_row(resolved=None),), T0 + 20 * MIN), alerts_cfg()
    )
    assert (finding.rule, finding.subject_kind, finding.subject) == (
        STUCK_LSO,
        DATA_PARTITION,
        "payments:2",
    )
    assert (finding.episode_start, finding.opened_at, finding.resolved_at) == (
        T0,
        T0 + 15 * MIN,
        None,
    )
    assert (finding.transactional_id, finding.producer_id, finding.producer_epoch) == (
        "billing-tx",
        42,
        3,
    )
    assert "transactional id billing-tx" in finding.reason
    assert "blocked: billing, ledger" in finding.reason
    # Not before it was detected.
    early = stuck_inputs((stuck_row(resolved=None),), T0 + 10 * MIN)
    assert rules.stuck_lso(early, alerts_cfg()) == []


def test_stuck_lso_hanging_transaction_prints_the_abort_command() -> None:
    row = stuck_row(resolved=None, cause="hanging_transaction")
    (finding,) = rules.stuck_lso(stuck_inputs((row,), T0 + 20 * MIN), alerts_cfg())
    assert "unknown to every coordinator" in finding.reason
    assert (
        "kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic payments "
        "--partition 2 --start-offset 100" in finding.reason
    )


def test_stuck_lso_episode_resolves_when_the_lso_moves() -> None:
    cfg = alerts_cfg()
    open_now = engine.evaluate(
        stuck_inputs((stuck_row(resolved=None),), T0 + 20 * MIN), cfg, {}, batch_id=1
    )
    (alert,) = open_now.changed
    assert alert.status == AlertStatus.OPEN.value
    stored = {alert.alert_id: alert}
    moved = stuck_row(resolved=T0 + 25 * MIN)
    later = engine.evaluate(stuck_inputs((moved,), T0 + 30 * MIN), cfg, stored, batch_id=2)
    (resolved,) = later.changed
    assert resolved.alert_id == alert.alert_id
    assert (resolved.status, resolved.resolved_at) == (AlertStatus.RESOLVED.value, T0 + 25 * MIN)
    # Without its row in the evaluation (only the alert), it resolves at the row's time too.
    gone = engine.evaluate(stuck_inputs((moved,), T0 + 40 * MIN), cfg, stored, batch_id=3)
    assert gone.changed[0].resolved_at == T0 + 25 * MIN
