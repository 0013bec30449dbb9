"""Alert life cycle: ids, transitions, and reconciliation with stored alerts over many batches."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from alert_support import GROUP, MIN, fold_in_batches, simulated, storm_cfg

from offsetscope import config
from offsetscope.alerts import engine, rules
from offsetscope.alerts.model import (
    REBALANCE_STORM,
    VALID_PREVIOUS,
    AlertRow,
    AlertStatus,
    Finding,
    IllegalAlertTransitionError,
    alert_id,
    check_transition,
    to_row,
)

T = 1_700_000_000_000


def finding(start: int = T, end: int | None = None, value: float = 6, **kw: object) -> Finding:
    fields: dict[str, object] = {
        "rule": REBALANCE_STORM,
        "subject_kind": "group",
        "subject": "g",
        "detail": "",
        "episode": start,
        "episode_start": start,
        "opened_at": start,
        "resolved_at": end,
        "severity": "critical",
        "value": value,
        "threshold": 5,
        "reason": "storm",
    }
    fields.update(kw)
    return Finding(**fields)  # type: ignore[arg-type]


def inputs(as_of: int, groups: frozenset[str] = frozenset({"g"})) -> rules.RuleInputs:
    return rules.RuleInputs(as_of=as_of, since=None, groups=groups)


CFG = config.load("base").alerts


# ----------------------------------------------------------------------------- ids and statuses


def test_alert_id_is_a_pure_function_of_rule_subject_detail_and_episode() -> None:
    a = alert_id("rebalance_storm", "group", "g", "", T)
    assert a == alert_id("rebalance_storm", "group", "g", "", T)
    assert len(a) == 32
    assert int(a, 16) >= 0
    others = {
        alert_id("member_churn", "group", "g", "", T),
        alert_id("rebalance_storm", "group", "h", "", T),
        alert_id("rebalance_storm", "group", "g", "orders:0", T),
        alert_id("rebalance_storm", "group", "g", "", T + 1),
        # no ambiguity when parts are glued differently
        alert_id("rebalance_storm", "group", "g\x00", "", T),
    }
    assert a not in others
    assert len(others) == 5


@pytest.mark.parametrize(
    ("current", "target"), list(itertools.product([None, *AlertStatus], list(AlertStatus)))
)
def test_transitions_follow_the_valid_previous_table(
    current: AlertStatus | None, target: AlertStatus
) -> None:
    if current in VALID_PREVIOUS[target]:
        check_transition("x", current, target)
    else:
        with pytest.raises(IllegalAlertTransitionError, match="resolved -> resolved"):
            check_transition("x", current, target)


def test_to_row_keeps_the_first_batch_and_stamps_the_evaluation() -> None:
    first = to_row(finding(), as_of=T + 5, batch_id=3, stored=None)
    assert (first.status, first.first_batch_id, first.last_batch_id, first.updated_at) == (
        "open",
        3,
        3,
        T + 5,
    )
    later = to_row(finding(value=9), as_of=T + 9, batch_id=7, stored=first)
    assert (later.first_batch_id, later.last_batch_id, later.value) == (3, 7, 9.0)
    assert not later.same_content(first)
    assert to_row(finding(), as_of=T + 9, batch_id=7, stored=first).same_content(first)


# ----------------------------------------------------------------------------- reconcile


def reconcile(
    found: list[Finding],
    stored: dict[str, AlertRow],
    as_of: int,
    batch: int,
    cfg: config.AlertsConfig = CFG,
) -> engine.Evaluation:
    return engine.reconcile(found, stored, inputs(as_of), cfg, batch_id=batch)


def test_replayed_evaluation_writes_nothing() -> None:
    ev1 = reconcile([finding()], {}, T + MIN, 1)
    assert [r.status for r in ev1.changed] == ["open"]
    stored = {r.alert_id: r for r in ev1.rows}
    ev2 = reconcile([finding()], stored, T + 2 * MIN, 2)
    assert ev2.changed == ()
    assert ev2.rows == ev1.rows


def test_open_alert_updates_then_resolves_by_its_finding() -> None:
    ev1 = reconcile([finding()], {}, T + MIN, 1)
    stored = {r.alert_id: r for r in ev1.rows}
    ev2 = reconcile([finding(value=8)], stored, T + 2 * MIN, 2)
    (updated,) = ev2.changed
    assert (updated.status, updated.value, ev2.previous[updated.alert_id].value) == ("open", 8, 6)
    stored = {r.alert_id: r for r in ev2.rows}
    ev3 = reconcile([finding(end=T + 3 * MIN, value=8)], stored, T + 4 * MIN, 3)
    (resolved,) = ev3.changed
    assert (resolved.status, resolved.resolved_at, resolved.first_batch_id) == (
        "resolved",
        T + 3 * MIN,
        1,
    )
    stored = {r.alert_id: r for r in ev3.rows}
    # a resolved episode is final: re-evaluating it writes nothing
    assert reconcile([finding(end=T + 3 * MIN, value=8)], stored, T + 9 * MIN, 4).changed == ()


def test_open_alert_without_finding_resolves_only_when_its_subject_was_evaluated() -> None:
    (row,) = reconcile([finding()], {}, T + MIN, 1).rows
    stored = {row.alert_id: row}
    out_of_scope = engine.reconcile([], stored, inputs(T + 5 * MIN, frozenset()), CFG, batch_id=2)
    assert out_of_scope.changed == ()
    ev = reconcile([], stored, T + 5 * MIN, 2)
    (resolved,) = ev.changed
    assert (resolved.status, resolved.resolved_at) == ("resolved", T + 5 * MIN)
    assert "the condition no longer holds" in resolved.reason


def test_disabling_a_rule_resolves_its_open_alerts() -> None:
    (row,) = reconcile([finding()], {}, T + MIN, 1).rows
    off = dataclasses.replace(
        CFG, rebalance_storm=dataclasses.replace(CFG.rebalance_storm, enabled=False)
    )
    (resolved,) = reconcile([], {row.alert_id: row}, T + 2 * MIN, 2, off).changed
    assert "rule rebalance_storm is disabled" in resolved.reason


def test_an_episode_whose_start_moves_earlier_keeps_its_identity() -> None:
    (row,) = reconcile([finding(start=T + MIN)], {}, T + 2 * MIN, 1).rows
    # a record read later shows the threshold was crossed 20 s earlier
    ev = reconcile([finding(start=T + 40_000, value=7)], {row.alert_id: row}, T + 3 * MIN, 2)
    (updated,) = ev.changed
    assert updated.alert_id == row.alert_id
    assert (updated.episode_start, updated.opened_at, updated.value) == (T + MIN, T + 40_000, 7)
    # a second, separate episode later is a new alert
    ev2 = reconcile(
        [finding(start=T + 40_000, end=T + 4 * MIN, value=7), finding(start=T + 30 * MIN)],
        {r.alert_id: r for r in ev.rows},
        T + 31 * MIN,
        3,
    )
    assert sorted(r.status for r in ev2.rows) == ["open", "resolved"]
    assert len({r.alert_id for r in ev2.rows}) == 2


def test_late_records_reopen_a_resolved_episode() -> None:
    (row,) = reconcile([finding(end=T + 2 * MIN)], {}, T + 3 * MIN, 1).rows
    (reopened,) = reconcile([finding()], {row.alert_id: row}, T + 4 * MIN, 2).changed
    assert (reopened.alert_id, reopened.status, reopened.resolved_at) == (
        row.alert_id,
        "open",
        None,
    )


# ----------------------------------------------------------------------------- many batches


def test_batch_by_batch_evaluation_equals_one_evaluation_of_everything() -> None:
    """Micro-batches every 7 s of virtual time, each evaluated as of its end with the previous
    end as horizon, reconciled with what the earlier ones stored: the final alerts are those
    of one evaluation over the whole log, each written once, opened, updated and resolved."""
    sim = simulated("rebalance-storm")
    cfg = dataclasses.replace(
        storm_cfg("1m", 5),
        member_churn=dataclasses.replace(CFG.member_churn, window="1m", max_member_changes=12),
    )
    cuts = range(sim.start_ms + 7_000, sim.end_ms + 7_000, 7_000)
    stored: dict[str, AlertRow] = {}
    history: dict[str, list[AlertRow]] = {}
    previous = None
    for batch, (cut, folded) in enumerate(fold_in_batches(sim.events, cuts)):
        assert folded.generations is not None
        assert folded.sessions is not None
        step = rules.RuleInputs(
            as_of=cut,
            since=previous,
            groups=frozenset({GROUP}),
            generations=tuple(folded.generations.values()),
            sessions=tuple(folded.sessions.values()),
        )
        ev = engine.evaluate(step, cfg, stored, batch_id=batch)
        for row in ev.changed:
            history.setdefault(row.alert_id, []).append(row)
            stored[row.alert_id] = row
        previous = cut

    (_, everything), *_ = list(fold_in_batches(sim.events, [max(cuts)]))
    assert everything.generations is not None
    assert everything.sessions is not None
    once = engine.evaluate(
        rules.RuleInputs(
            as_of=max(cuts),
            since=None,
            groups=frozenset({GROUP}),
            generations=tuple(everything.generations.values()),
            sessions=tuple(everything.sessions.values()),
        ),
        cfg,
        {},
        batch_id=0,
    )

    def essence(r: AlertRow) -> tuple[object, ...]:
        return (
            r.alert_id,
            r.rule,
            r.status,
            r.episode_start,
            r.resolved_at,
            r.value,
            r.generations,
        )

    assert sorted(map(essence, stored.values())) == sorted(map(essence, once.rows))
    storms = [h for h in history.values() if h[0].rule == REBALANCE_STORM]
    assert len(storms) == 1
    (versions,) = storms
    statuses = [v.status for v in versions]
    assert statuses[0] == "open"
    assert statuses[-1] == "resolved"
    assert statuses.count("resolved") == 1
    values = [v.value for v in versions]
    assert values == sorted(values)  # the peak only grows while the storm lasts
