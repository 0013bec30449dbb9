"""Alerts of a deployment of several clusters: ids, overrides, changed keys, tables, messages.

No Spark: the runner's per-cluster reads are the Spark tests' (``tests/spark``,
``tests/streaming``); here are the pure parts it is built from.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest
from alert_support import GROUP, storm_cfg
from service_doubles import alert

from offsetscope import config
from offsetscope.alerts import engine, messages, rules
from offsetscope.alerts import tables as alert_tables
from offsetscope.alerts.model import REBALANCE_STORM, AlertRow, Finding, alert_id, to_row
from offsetscope.alerts.notify import (
    OPENED,
    AlertEvent,
    Dispatcher,
    LogNotifier,
    NotificationOutcome,
)
from offsetscope.alerts.scope import ChangedKeys
from offsetscope.config import LagThresholdOverride, StormOverride
from offsetscope.history import batch as folds
from offsetscope.spark import tables as catalogue

T = 1_700_000_000_000
NAMES = frozenset({"east", "west"})
TWO_CLUSTERS = """
[clusters.east]
kind = "kafka"
[clusters.east.kafka]
bootstrap_servers = "east-1:9093"

[clusters.west]
kind = "kafka"
[clusters.west.kafka]
bootstrap_servers = "west-1:9092"
"""


def finding(**kw: object) -> Finding:
    fields: dict[str, object] = {
        "rule": REBALANCE_STORM,
        "subject_kind": "group",
        "subject": "payments",
        "detail": "",
        "episode": T,
        "episode_start": T,
        "opened_at": T,
        "resolved_at": None,
        "severity": "critical",
        "value": 6,
        "threshold": 5,
        "reason": "storm",
    }
    fields.update(kw)
    return Finding(**fields)  # type: ignore[arg-type]


def inputs(cluster: str, default: str = "east", **kw: object) -> rules.RuleInputs:
    fields: dict[str, object] = {
        "as_of": T + 60_000,
        "since": None,
        "groups": frozenset({"payments"}),
        "cluster": cluster,
        "clusters": NAMES,
        "default_cluster": default,
    }
    fields.update(kw)
    return rules.RuleInputs(**fields)  # type: ignore[arg-type]


CFG = config.load("base").alerts


# ----------------------------------------------------------------------------- ids


def test_the_default_cluster_keeps_the_id_an_alert_had_before_clusters() -> None:
    before = alert_id(REBALANCE_STORM, "group", "payments", "", T)
    assert finding().alert_id == before
    in_default = finding().in_cluster("east", default="east")
    assert in_default.alert_id == before
    assert in_default.cluster == "east"


def test_other_clusters_hash_their_name() -> None:
    east = finding().in_cluster("east", default="east").alert_id
    west = finding().in_cluster("west", default="east").alert_id
    north = finding().in_cluster("north", default="east").alert_id
    assert len({east, west, north}) == 3
    assert west == alert_id(REBALANCE_STORM, "group", "payments", "", T, "west")
    # the cluster is one more NUL-separated part, not glued to another
    assert west != alert_id(REBALANCE_STORM, "group", "payments", "", T, "")


def test_rows_carry_their_cluster() -> None:
    f = finding().in_cluster("west", default="east")
    row = to_row(f, as_of=T, batch_id=1, stored=None)
    assert (row.alert_id, row.cluster) == (f.alert_id, "west")
    assert to_row(finding(), as_of=T, batch_id=1, stored=None).cluster is None


def test_find_all_stamps_the_inputs_cluster() -> None:
    from alert_support import fold_in_batches, simulated

    sim = simulated("rebalance-storm")
    (_, folded), *_ = list(fold_in_batches(sim.events, [sim.end_ms]))
    assert folded.generations is not None
    assert folded.sessions is not None
    base = rules.RuleInputs(
        as_of=sim.end_ms,
        since=None,
        groups=frozenset({GROUP}),
        generations=tuple(folded.generations.values()),
        sessions=tuple(folded.sessions.values()),
    )
    plain = rules.find_all(base, storm_cfg())
    assert plain
    in_east = rules.find_all(
        dataclasses.replace(base, cluster="east", clusters=NAMES, default_cluster="east"),
        storm_cfg(),
    )
    in_west = rules.find_all(
        dataclasses.replace(base, cluster="west", clusters=NAMES, default_cluster="east"),
        storm_cfg(),
    )
    assert [f.alert_id for f in in_east] == [f.alert_id for f in plain]
    assert {f.cluster for f in in_west} == {"west"}
    assert not {f.alert_id for f in in_west} & {f.alert_id for f in in_east}
    # an override keyed by west's cluster turns the rule off there only
    off = storm_cfg(**{f"west/{GROUP}": StormOverride(enabled=False)})
    west = dataclasses.replace(base, cluster="west", clusters=NAMES, default_cluster="east")

    def storms(found: list[Finding]) -> list[Finding]:
        return [f for f in found if f.rule == REBALANCE_STORM]

    assert storms(rules.find_all(west, off)) == []
    assert storms(rules.find_all(dataclasses.replace(west, cluster="east"), off))


# ----------------------------------------------------------------------------- reconciling


def test_an_evaluation_resolves_only_its_own_clusters_alerts() -> None:
    east_row = to_row(
        finding().in_cluster("east", default="east"), as_of=T, batch_id=1, stored=None
    )
    west_row = to_row(
        finding().in_cluster("west", default="east"), as_of=T, batch_id=1, stored=None
    )
    stored = {r.alert_id: r for r in (east_row, west_row)}
    evaluation = engine.reconcile([], stored, inputs("east"), CFG, batch_id=2)
    assert [(r.alert_id, r.status) for r in evaluation.changed] == [(east_row.alert_id, "resolved")]
    assert evaluation.changed[0].cluster == "east"


def test_an_episode_is_never_adopted_across_clusters() -> None:
    # A west finding whose episode overlaps east's stored alert of the same group is west's own.
    east_row = to_row(
        finding().in_cluster("east", default="east"), as_of=T, batch_id=1, stored=None
    )
    moved = finding(episode=T - 1, episode_start=T - 1).in_cluster("west", default="east")
    evaluation = engine.reconcile(
        [moved], {east_row.alert_id: east_row}, inputs("west"), CFG, batch_id=2
    )
    assert [(r.alert_id, r.cluster) for r in evaluation.changed] == [(moved.alert_id, "west")]


def test_a_stored_row_without_a_cluster_is_the_default_clusters() -> None:
    old = to_row(finding(), as_of=T, batch_id=1, stored=None)
    assert old.cluster is None
    assert engine.in_scope(old, inputs("east", default="east"))
    assert not engine.in_scope(old, inputs("west", default="east"))


def test_the_clusters_evaluations_combine_into_one_write() -> None:
    east = engine.reconcile(
        [finding()], {}, inputs("east"), CFG, batch_id=1
    )  # default cluster: the plain id
    west = engine.reconcile(
        [finding().in_cluster("west", default="east")], {}, inputs("west"), CFG, batch_id=1
    )
    both = engine.combine([west, east], T + 60_000)
    assert len(both.changed) == 2
    assert [r.alert_id for r in both.changed] == sorted(r.alert_id for r in both.changed)
    assert both.as_of == T + 60_000


# ----------------------------------------------------------------------------- overrides


def load_two(tmp_path: Path, extra: str) -> config.Config:
    (tmp_path / "base.toml").write_text(TWO_CLUSTERS + extra)
    return config.load("base", tmp_path)


def test_a_cluster_prefixed_override_applies_in_that_cluster_only(tmp_path: Path) -> None:
    cfg = load_two(
        tmp_path,
        """
[alerts.rebalance_storm.groups."payments"]
max_generations = 20
[alerts.rebalance_storm.groups."east/payments"]
max_generations = 50
[alerts.rebalance_storm.groups."west/batch-*"]
enabled = false
""",
    )
    storm = cfg.alerts.rebalance_storm
    names = config.clusters(cfg)
    assert rules.settings_for(storm, "payments", "east", names).max_generations == 50
    assert rules.settings_for(storm, "payments", "west", names).max_generations == 20
    assert rules.settings_for(storm, "batch-1", "west", names).enabled is False
    assert rules.settings_for(storm, "batch-1", "east", names) == storm
    # without a cluster (a rule's own tests), only keys without one apply
    assert rules.settings_for(storm, "payments").max_generations == 20
    assert rules.settings_for(storm, "batch-1") == storm


def test_a_plain_override_applies_in_every_cluster(tmp_path: Path) -> None:
    cfg = load_two(tmp_path, '[alerts.member_churn.groups."orders-*"]\nenabled = false\n')
    churn = cfg.alerts.member_churn
    for cluster in ("east", "west"):
        assert rules.settings_for(churn, "orders-1", cluster, NAMES).enabled is False


def test_a_prefix_that_names_no_cluster_is_part_of_the_group_id() -> None:
    storm = storm_cfg(**{"team/payments": StormOverride(max_generations=9)}).rebalance_storm
    assert rules.settings_for(storm, "team/payments", "east", NAMES).max_generations == 9
    assert rules.settings_for(storm, "payments", "east", NAMES).max_generations == 5


def test_lag_threshold_group_overrides_are_per_cluster_and_topics_everywhere() -> None:
    base = CFG.lag_threshold
    rule = dataclasses.replace(
        base,
        topics={"orders": LagThresholdOverride(warning_records=100)},
        groups={"west/payments": LagThresholdOverride(warning_records=7)},
    )
    west = rules.lag_threshold_settings(rule, "payments", "orders", "west", NAMES)
    east = rules.lag_threshold_settings(rule, "payments", "orders", "east", NAMES)
    assert (west.warning_records, east.warning_records) == (7, 100)


def test_whether_a_rule_is_enabled_reads_the_alerts_cluster() -> None:
    cfg = storm_cfg(**{"west/payments": StormOverride(enabled=False)})
    east = alert(cluster="east")
    west = alert(cluster="west")
    assert engine.rule_enabled(cfg, east, NAMES)
    assert not engine.rule_enabled(cfg, west, NAMES)


# ----------------------------------------------------------------------------- changed keys


def test_changed_keys_keep_each_key_with_its_cluster() -> None:
    changed = ChangedKeys.from_fold_rows(
        [
            ("east", folds.GROUP, "payments", 3),
            ("west", folds.GROUP, "payments", 4),
            ("west", folds.TXN, "tx-1", None),
            ("east", folds.OFFSETS, "payments", 5),  # not a subject of the rules
        ]
    )
    assert changed.groups == {("east", "payments"), ("west", "payments")}
    assert changed.clusters == {"east", "west"}
    assert changed.groups_of("east") == {"payments"}
    assert changed.transactional_ids_of("east") == set()
    assert changed.transactional_ids_of("west") == {"tx-1"}
    assert changed.groups_of("north") == set()
    assert changed.ingest_batches == {3, 4, 5}
    assert ChangedKeys().clusters == frozenset()


# ----------------------------------------------------------------------------- tables


@pytest.mark.parametrize("spec", [alert_tables.ALERTS, alert_tables.ALERT_NOTIFICATIONS])
def test_the_alert_tables_gain_a_cluster_column_in_place(spec: catalogue.TableSpec) -> None:
    column = spec.columns[-1]
    assert (column.name, column.type, column.nullable) == ("cluster", "string", True)
    # the alert id tells clusters apart: the keys stay, so no rewrite is needed
    assert "cluster" not in spec.key
    fields = [f.name for f in dataclasses.fields(alert_tables.ROW_TYPES[spec.logical])]
    assert fields == list(spec.column_names)
    cfg = config.load("local")
    old = catalogue.ExistingTable(
        columns={c.name: c.type for c in spec.columns if c.name != "cluster"},
        properties=spec.properties(cfg),
    )
    plan = catalogue.plan_migration(spec, old, cfg)
    assert plan.additive
    assert [c.name for c in plan.add] == ["cluster"]
    fill = catalogue._backfill(spec, "cluster")
    assert fill is not None
    assert fill(cfg) == "'default'"


# ----------------------------------------------------------------------------- messages


def event(cluster: str | None) -> AlertEvent:
    return AlertEvent(OPENED, alert(cluster="east"), cluster)


def test_messages_name_the_cluster_when_there_are_several() -> None:
    named = event("east")
    assert messages.title(named) == "CRITICAL rebalance_storm opened: group east/payments"
    assert ("Cluster", "east") in messages.facts(named)
    labels = messages.alertmanager_alerts(named, labels={}, now_ms=T, valid_ms=1)[0]["labels"]
    assert (labels["cluster"], labels["subject"]) == ("east", "payments")
    pd = messages.pagerduty_event(named, "key", "offsetscope")
    assert pd["payload"]["component"] == "group east/payments"
    assert "east/payments" in messages.slack_message(named)["text"]
    assert "east/payments" in named.line()
    assert named.payload()["alert"]["cluster"] == "east"


def test_messages_of_one_cluster_do_not_mention_it() -> None:
    single = event(None)
    assert messages.title(single) == "CRITICAL rebalance_storm opened: group payments"
    assert "Cluster" not in dict(messages.facts(single))
    labels = messages.alertmanager_alerts(single, labels={}, now_ms=T, valid_ms=1)[0]["labels"]
    assert "cluster" not in labels
    assert "east" not in single.line()


class _Recorder:
    def __init__(self) -> None:
        self.name = "rec"
        self.min_severity = LogNotifier().min_severity
        self.resend_ms: int | None = None
        self.events: list[AlertEvent] = []

    def submit(self, event: AlertEvent) -> None:
        self.events.append(event)

    def drain(self) -> list[NotificationOutcome]:
        return []

    def close(self, timeout_s: float) -> list[NotificationOutcome]:
        return []


@pytest.mark.parametrize(("several", "named"), [(True, "west"), (False, None)])
def test_the_dispatcher_names_the_cluster_of_a_deployment_of_several(
    several: bool, named: str | None
) -> None:
    rec = _Recorder()
    d = Dispatcher([rec], CFG.notify, name_clusters=several)
    d.dispatch([alert(cluster="west")], {}, T)
    assert [e.cluster for e in rec.events] == [named]


def test_notification_outcomes_carry_the_alerts_cluster(caplog: pytest.LogCaptureFixture) -> None:
    notifier = LogNotifier(logger=logging.getLogger("test.alert.clusters"))
    with caplog.at_level(logging.INFO, logger="test.alert.clusters"):
        notifier.submit(AlertEvent(OPENED, alert(cluster="west"), "west"))
    (outcome,) = notifier.drain()
    assert outcome.cluster == "west"
    assert "west/payments" in caplog.text
    skipped = Dispatcher([_Recorder()], dataclasses.replace(CFG.notify, events=("resolved",)))
    skipped.dispatch([alert(cluster="west")], {}, T)
    assert [o.cluster for o in skipped.drain()] == ["west"]


def test_an_alert_row_without_a_cluster_is_still_a_row() -> None:
    # rows read from a table written before the column existed
    row = dataclasses.replace(alert(), cluster=None)
    assert isinstance(row, AlertRow)
    assert messages.title(AlertEvent(OPENED, row)).endswith("group payments")
