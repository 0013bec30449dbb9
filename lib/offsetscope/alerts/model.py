"""Alerts as rows: the ``alerts`` table's row, its deterministic id, and its life cycle.

An alert is one *episode* of one rule's condition for one subject (a group, a group's partition,
a transactional id, a table). Its id is a hash of ``(rule, subject kind, subject, detail,
episode)``, where the episode is a time or number read from the data (the rebalance that pushed
a group over the storm threshold, the start of a stuck rebalance, the transaction's start), never
the time the rule happened to be evaluated. So evaluating the same data again -- a replayed
micro-batch, a restarted job, a second evaluation later -- yields the same id, and a MERGE on it
never raises an alert twice.

Life cycle (an Enum plus the table of valid previous states)::

    (new) ──condition holds──▶ open ──condition no longer holds──▶ resolved
                                ▲ │                                  │
                                └─┘ value or evidence updated        │
                                ▲                                    │
                                └──────── later-read records of ─────┘
                                          the same episode
    (new) ──episode already over when first seen──▶ resolved

A resolved episode reopens only when records of that same episode arrive late (its
``__consumer_offsets`` partition was read behind the event-time clock that resolved it); a new
episode of the same condition is a new alert with a new id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum


class AlertStatus(Enum):
    """Where an alert is in its life; the value is the ``status`` column's text."""

    OPEN = "open"
    """The condition holds as of the evaluation. Updated in place while it holds (value,
    evidence); goes to RESOLVED when an evaluation finds it no longer holds."""
    RESOLVED = "resolved"
    """The condition stopped holding at ``resolved_at``. Final, unless late records of the same
    episode reopen it."""


# None stands for "no row yet": an alert is first written open, or already resolved (an episode
# that ended before any evaluation saw it, e.g. in a backfill).
VALID_PREVIOUS: Mapping[AlertStatus, frozenset[AlertStatus | None]] = {
    AlertStatus.OPEN: frozenset({None, AlertStatus.OPEN, AlertStatus.RESOLVED}),
    AlertStatus.RESOLVED: frozenset({None, AlertStatus.OPEN}),
}


class IllegalAlertTransitionError(ValueError):
    """An alert was asked to move between two statuses its life cycle does not connect."""

    def __init__(self, alert_id: str, current: AlertStatus | None, target: AlertStatus) -> None:
        allowed = sorted(s.value if s else "(new)" for s in VALID_PREVIOUS[target])
        super().__init__(
            f"alert {alert_id}: {current.value if current else '(new)'} -> {target.value} is not"
            f" allowed (valid before {target.value}: {', '.join(allowed)})"
        )
        self.alert_id = alert_id
        self.current = current
        self.target = target


def check_transition(alert_id: str, current: AlertStatus | None, target: AlertStatus) -> None:
    """Raise unless ``current -> target`` is a move of the life cycle.

    A resolved alert evaluated as resolved again is not a move (nothing is written), so
    ``RESOLVED -> RESOLVED`` is refused here: callers drop unchanged rows first.

    Raises:
        IllegalAlertTransitionError: the move is not in :data:`VALID_PREVIOUS`.
    """
    if current not in VALID_PREVIOUS[target]:
        raise IllegalAlertTransitionError(alert_id, current, target)


class Severity(Enum):
    """How urgent an alert is; notifiers filter on it (``min_severity``)."""

    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return _SEVERITY_RANK[self]


_SEVERITY_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.CRITICAL: 2}

# Rule names: the ``rule`` column and the ``[alerts.<rule>]`` config sections.
REBALANCE_STORM = "rebalance_storm"
MEMBER_CHURN = "member_churn"
REBALANCE_STUCK = "rebalance_stuck"
LAG_STALL = "lag_stall"
LAG_THRESHOLD = "lag_threshold"
STUCK_LSO = "stuck_lso"
HANGING_TRANSACTION = "hanging_transaction"
DATA_LOSS = "data_loss"
QUALITY = "quality"

# Subject kinds: what an alert is about.
GROUP = "group"
PARTITION = "partition"  # a group's partition: subject = group id, detail = "topic:partition"
# A group's topic: subject = group id, detail = "topic" (lag_threshold adds "/<level>" to
# both this and a partition's detail: each level is an episode of its own).
TOPIC = "topic"
DATA_PARTITION = "data_partition"  # a data partition: subject = "topic:partition" (stuck_lso)
TRANSACTIONAL_ID = "transactional_id"
TABLE = "table"


def alert_id(rule: str, subject_kind: str, subject: str, detail: str, episode: int) -> str:
    """The deterministic id of one episode of one rule for one subject.

    Args:
        rule: the rule name.
        subject_kind: ``group``, ``partition``, ``topic``, ``data_partition``,
            ``transactional_id`` or ``table``.
        subject: the group id, transactional id or table name.
        detail: ``topic:partition`` for partition alerts, ``group_life:N`` where a group life
            matters, else empty.
        episode: the episode's start (epoch ms) or, where the data has no time for it, a
            number from the data (a generation).

    Returns:
        32 hex digits (the first 128 bits of a SHA-256 over the parts, NUL-separated, so no
        two different part lists share an input).
    """
    text = "\x00".join((rule, subject_kind, subject, detail, str(episode)))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Finding:
    """One episode of a rule's condition, as a rule function reports it (no id, no batch)."""

    rule: str
    subject_kind: str
    subject: str
    detail: str
    episode: int  # what the id hashes (usually == episode_start)
    episode_start: int
    opened_at: int
    resolved_at: int | None
    severity: str
    value: float
    threshold: float | None
    reason: str
    group_life: int | None = None
    generations: tuple[int, ...] = ()
    member_ids: tuple[str, ...] = ()
    instance_ids: tuple[str, ...] = ()
    transactional_id: str | None = None
    producer_id: int | None = None
    producer_epoch: int | None = None
    evidence: tuple[tuple[str, str], ...] = ()

    @property
    def alert_id(self) -> str:
        return alert_id(self.rule, self.subject_kind, self.subject, self.detail, self.episode)

    @property
    def status(self) -> AlertStatus:
        return AlertStatus.OPEN if self.resolved_at is None else AlertStatus.RESOLVED


@dataclass(frozen=True, slots=True)
class AlertRow:
    """``alerts``: one alert (see the module docstring). Timestamps are epoch milliseconds."""

    alert_id: str
    rule: str
    subject_kind: str
    subject: str
    detail: str
    group_life: int | None
    episode_start: int
    status: str
    severity: str
    value: float
    threshold: float | None
    opened_at: int
    resolved_at: int | None
    updated_at: int  # the evaluation time (as of) that last changed the row
    reason: str
    generations: tuple[int, ...]
    member_ids: tuple[str, ...]
    instance_ids: tuple[str, ...]
    transactional_id: str | None
    producer_id: int | None
    producer_epoch: int | None
    evidence: tuple[tuple[str, str], ...]  # map<string,string>, sorted by key
    first_batch_id: int
    last_batch_id: int

    @property
    def alert_status(self) -> AlertStatus:
        return AlertStatus(self.status)

    def same_content(self, other: AlertRow) -> bool:
        """Equal but for the bookkeeping columns (when and by which batch it was written)."""
        return _content(self) == _content(other)


def _content(row: AlertRow) -> tuple[object, ...]:
    return (
        row.alert_id,
        row.rule,
        row.subject_kind,
        row.subject,
        row.detail,
        row.group_life,
        row.episode_start,
        row.status,
        row.severity,
        row.value,
        row.threshold,
        row.opened_at,
        row.resolved_at,
        row.reason,
        row.generations,
        row.member_ids,
        row.instance_ids,
        row.transactional_id,
        row.producer_id,
        row.producer_epoch,
        row.evidence,
    )


def to_row(finding: Finding, *, as_of: int, batch_id: int, stored: AlertRow | None) -> AlertRow:
    """The row a finding writes, keeping what the stored row already knew.

    ``first_batch_id`` comes from the stored row; ``updated_at`` and ``last_batch_id`` are
    this evaluation's (callers write the row only when its content changed).

    Raises:
        IllegalAlertTransitionError: the stored status cannot move to the finding's.
    """
    aid = finding.alert_id
    current = stored.alert_status if stored is not None else None
    target = finding.status
    if not (current is AlertStatus.RESOLVED and target is AlertStatus.RESOLVED):
        check_transition(aid, current, target)
    return AlertRow(
        alert_id=aid,
        rule=finding.rule,
        subject_kind=finding.subject_kind,
        subject=finding.subject,
        detail=finding.detail,
        group_life=finding.group_life,
        episode_start=finding.episode_start,
        status=target.value,
        severity=finding.severity,
        value=float(finding.value),
        threshold=None if finding.threshold is None else float(finding.threshold),
        opened_at=finding.opened_at,
        resolved_at=finding.resolved_at,
        updated_at=as_of,
        reason=finding.reason,
        generations=finding.generations,
        member_ids=finding.member_ids,
        instance_ids=finding.instance_ids,
        transactional_id=finding.transactional_id,
        producer_id=finding.producer_id,
        producer_epoch=finding.producer_epoch,
        evidence=tuple(sorted(finding.evidence)),
        first_batch_id=stored.first_batch_id if stored is not None else batch_id,
        last_batch_id=batch_id,
    )


def resolve(row: AlertRow, *, at: int, as_of: int, batch_id: int, reason: str) -> AlertRow:
    """An open alert whose condition no longer holds, resolved at ``at``.

    Raises:
        IllegalAlertTransitionError: ``row`` is not open.
    """
    check_transition(row.alert_id, row.alert_status, AlertStatus.RESOLVED)
    return AlertRow(
        **{
            **{f: getattr(row, f) for f in AlertRow.__dataclass_fields__},
            "status": AlertStatus.RESOLVED.value,
            "resolved_at": max(at, row.opened_at),
            "reason": f"{row.reason}; resolved: {reason}",
            "updated_at": as_of,
            "last_batch_id": batch_id,
        }
    )
