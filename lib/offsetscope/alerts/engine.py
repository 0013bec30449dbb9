"""One evaluation: rule findings reconciled with the alerts already stored.

Pure: :func:`evaluate` takes the rows the rules read (:class:`~.rules.RuleInputs`) and the
stored alerts that can be affected (every open alert of a subject in scope, and every stored
alert a finding names), and returns the rows to write. The Spark side
(:mod:`offsetscope.alerts.runner`) loads those inputs and MERGEs the result.

Reconciliation, per alert id:

* a finding with no stored row -> a new row (open, or already resolved);
* a finding whose row is stored with the same content -> nothing to write;
* a finding that changes a stored row -> the updated row (value, evidence, resolution, or a
  reopening; :data:`~.model.VALID_PREVIOUS` says which moves exist). A stored *resolved* row
  stays as it is when the finding is resolved too: a resolved episode is final;
* a finding whose id is not stored but whose episode overlaps a stored alert of the same rule,
  subject and detail -> that alert, updated (it keeps its id, episode start and opening time).
  An episode's start is read from the data, and records read later can move it earlier (a
  rebalance whose join completed before the batch cut but whose record was written after
  it); the episode keeps the identity it was first given, so it is never raised twice;
* a stored open alert that no finding names, for a subject the rule evaluated -> resolved (the
  condition no longer holds: at the group's new state for a stuck group, at the transaction's
  completion for a hanging one, at the sample where the LSO moved for a stuck partition, else
  as of the evaluation), or resolved because its rule is now disabled.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from offsetscope.alerts import rules
from offsetscope.alerts.model import (
    DATA_PARTITION,
    GROUP,
    HANGING_TRANSACTION,
    LAG_THRESHOLD,
    PARTITION,
    REBALANCE_STUCK,
    STUCK_LSO,
    TABLE,
    TOPIC,
    TRANSACTIONAL_ID,
    AlertRow,
    AlertStatus,
    Finding,
    resolve,
    to_row,
)
from offsetscope.config import AlertsConfig


@dataclass(frozen=True, slots=True)
class Evaluation:
    """The outcome of one evaluation."""

    as_of: int
    rows: tuple[AlertRow, ...]  # every alert the evaluation saw, as it now stands
    changed: tuple[AlertRow, ...]  # the subset to write (new, or content changed)
    previous: Mapping[str, AlertRow]  # the stored versions of the changed rows, by id

    @property
    def open(self) -> tuple[AlertRow, ...]:
        return tuple(r for r in self.rows if r.status == AlertStatus.OPEN.value)


def in_scope(row: AlertRow, inputs: rules.RuleInputs) -> bool:
    """Whether the evaluation looked at the subject of ``row`` (only then can it resolve it)."""
    if row.subject_kind in (GROUP, PARTITION, TOPIC):
        return row.subject in inputs.groups
    if row.subject_kind == DATA_PARTITION:
        return row.subject in inputs.data_partitions
    if row.subject_kind == TRANSACTIONAL_ID:
        return row.subject in inputs.transactional_ids
    if row.subject_kind == TABLE:
        return row.subject in inputs.tables
    return False


def rule_enabled(cfg: AlertsConfig, row: AlertRow) -> bool:
    """Whether the rule of ``row`` is enabled for its subject."""
    if not cfg.enabled:
        return False
    rule = getattr(cfg, row.rule)
    if row.rule == LAG_THRESHOLD:
        # detail: "<topic>:<partition>/<level>" or "<topic>/<level>"
        where = row.detail.rpartition("/")[0]
        topic = where.rpartition(":")[0] if row.subject_kind == PARTITION else where
        rule = rules.lag_threshold_settings(rule, row.subject, topic)
    elif hasattr(rule, "groups") and row.subject_kind in (GROUP, PARTITION):
        rule = rules.settings_for(rule, row.subject)
    return bool(rule.enabled)


def _resolution_time(row: AlertRow, inputs: rules.RuleInputs) -> int:
    if row.rule == REBALANCE_STUCK:
        return rules.stuck_resolved_at(inputs, row.subject, row.episode_start)
    if row.rule == STUCK_LSO:
        return rules.stuck_resolved_at_lso(inputs, row.subject, row.episode_start)
    if row.rule == HANGING_TRANSACTION:
        for t in inputs.transactions:
            if (
                t.transactional_id == row.subject
                and f"{t.record_partition}:{t.first_record_offset}" == row.detail
                and t.completed_at is not None
            ):
                return t.completed_at
    return inputs.as_of


def _key(x: Finding | AlertRow) -> tuple[str, str, str, str]:
    return (x.rule, x.subject_kind, x.subject, x.detail)


def _overlaps(a_start: int, a_end: int | None, b_start: int, b_end: int | None) -> bool:
    far = 2**62
    return a_start <= (b_end if b_end is not None else far) and b_start <= (
        a_end if a_end is not None else far
    )


def _adoptions(
    findings: Sequence[Finding], stored: Mapping[str, AlertRow], ids: set[str]
) -> dict[str, AlertRow]:
    """Finding id -> the stored alert of the same episode under another id (see above)."""
    candidates: dict[tuple[str, str, str, str], list[AlertRow]] = {}
    for row in stored.values():
        if row.alert_id not in ids:
            candidates.setdefault(_key(row), []).append(row)
    out: dict[str, AlertRow] = {}
    taken: set[str] = set()
    for f in findings:
        if f.alert_id in stored:
            continue
        for row in sorted(candidates.get(_key(f), ()), key=lambda r: r.episode_start):
            if row.alert_id in taken:
                continue
            if _overlaps(f.episode_start, f.resolved_at, row.episode_start, row.resolved_at):
                out[f.alert_id] = row
                taken.add(row.alert_id)
                break
    return out


def reconcile(
    findings: Iterable[Finding],
    stored: Mapping[str, AlertRow],
    inputs: rules.RuleInputs,
    cfg: AlertsConfig,
    *,
    batch_id: int,
) -> Evaluation:
    """Turn findings into rows against the stored alerts (see the module docstring).

    Args:
        findings: the rules' findings for ``inputs``.
        stored: stored alerts by id: at least every open alert in scope, every stored row with
            the id of a finding, and the recent alerts of the subjects in scope (for episodes
            whose start moved).
        inputs: what the rules read (its scope decides which open alerts may resolve).
        cfg: the ``[alerts]`` settings.
        batch_id: the evaluating batch (``first_batch_id`` / ``last_batch_id``).
    """
    as_of = inputs.as_of
    rows: dict[str, AlertRow] = {}
    changed: dict[str, AlertRow] = {}
    previous: dict[str, AlertRow] = {}
    ordered = sorted(findings, key=lambda f: (f.rule, f.subject, f.detail, f.episode))
    by_id = {f.alert_id for f in ordered}
    adopted = _adoptions(ordered, stored, by_id)
    for finding in ordered:
        old = stored.get(finding.alert_id) or adopted.get(finding.alert_id)
        aid = old.alert_id if old is not None else finding.alert_id
        if (
            old is not None
            and old.status == AlertStatus.RESOLVED.value
            and finding.resolved_at is not None
        ):
            rows[aid] = old
            continue
        new = to_row(finding, as_of=as_of, batch_id=batch_id, stored=old)
        if old is not None and old.alert_id != new.alert_id:
            new = dataclasses.replace(
                new,
                alert_id=old.alert_id,
                episode_start=old.episode_start,
                opened_at=min(old.opened_at, new.opened_at),
            )
        if old is not None and old.same_content(new):
            rows[aid] = old
            continue
        rows[aid] = changed[aid] = new
        if old is not None:
            previous[aid] = old
    for aid, old in sorted(stored.items()):
        if aid in rows or old.status != AlertStatus.OPEN.value or not in_scope(old, inputs):
            continue
        if rule_enabled(cfg, old):
            at, why = _resolution_time(old, inputs), "the condition no longer holds"
        else:
            at, why = as_of, f"rule {old.rule} is disabled"
        rows[aid] = changed[aid] = resolve(old, at=at, as_of=as_of, batch_id=batch_id, reason=why)
        previous[aid] = old
    return Evaluation(
        as_of=as_of,
        rows=tuple(rows[k] for k in sorted(rows)),
        changed=tuple(changed[k] for k in sorted(changed)),
        previous=previous,
    )


def evaluate(
    inputs: rules.RuleInputs,
    cfg: AlertsConfig,
    stored: Mapping[str, AlertRow],
    *,
    batch_id: int,
) -> Evaluation:
    """Run every rule on ``inputs`` and reconcile with ``stored`` (one call, pure)."""
    return reconcile(rules.find_all(inputs, cfg), stored, inputs, cfg, batch_id=batch_id)
