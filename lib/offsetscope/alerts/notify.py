"""Alert events and who is told: the events, the outcomes, the log notifier and the dispatcher.

Events: ``opened`` (an alert's first write, whatever its status) and ``resolved`` (its move to
resolved). The :class:`Dispatcher` decides, per alert, event and notifier, what to send: it
skips what ``alert_notifications`` already records (so a replayed batch or a restarted job does
not send twice; a crash between the alerts commit and the record sends again, so delivery is
at least once and every HTTP request carries an ``Idempotency-Key`` of ``<alert id>:<event>``),
severities under the notifier's ``min_severity``, and backfilled alerts (resolved longer than
``backfill_age`` before they were first seen; recorded as ``skipped``). A notifier with a
``resend_ms`` (Alertmanager, which forgets alerts nobody re-sends) gets the ``opened`` event of
an alert that is still open again once that long has passed, at the next evaluation.

Notifiers never block or fail the stream: :meth:`Notifier.submit` returns at once, and every
outcome -- delivered, failed, dropped, skipped -- comes back from :meth:`Notifier.drain` as a
:class:`NotificationOutcome` for the ``alert_notifications`` table. :class:`LogNotifier` writes
a line to the ``offsetscope.alerts`` logger and records ``delivered`` only when a handler takes
the record (``failed`` when logging is not configured, ``skipped`` when the configured levels
leave it out); the services' notifiers are in :mod:`offsetscope.alerts.notifiers`, their
message formats in :mod:`offsetscope.alerts.messages`.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from offsetscope import clusters, logs
from offsetscope.alerts.model import AlertRow, AlertStatus, Severity
from offsetscope.clock import Clock, SystemClock
from offsetscope.config import NotifyConfig, duration_ms

log = logging.getLogger("offsetscope.alerts")

OPENED = "opened"
RESOLVED = "resolved"

DELIVERED = "delivered"
FAILED = "failed"
DROPPED = "dropped"
SKIPPED = "skipped"


def iso(ms: int | None) -> str | None:
    """Epoch milliseconds as ISO 8601 UTC (``2023-11-14T22:13:20.000+00:00``)."""
    if ms is None:
        return None
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True, slots=True)
class AlertEvent:
    """Something to tell about an alert: it opened, or it resolved.

    ``cluster`` is the cluster the messages name: the alert's when the deployment reads several
    clusters, None when it reads one (a single cluster's messages read as they always did).
    """

    event: str
    alert: AlertRow
    cluster: str | None = None

    @property
    def subject(self) -> str:
        """The alert's subject as people read it: ``<cluster>/<id>`` when a cluster is named."""
        a = self.alert
        if self.cluster is None:
            return a.subject
        return clusters.subject(self.cluster, a.subject, several=True)

    def payload(self) -> dict[str, Any]:
        """The generic webhook's JSON body (times as ISO 8601 UTC)."""
        a = self.alert
        return {
            "source": "offsetscope",
            "event": self.event,
            "alert": {
                "alert_id": a.alert_id,
                "cluster": a.cluster,
                "rule": a.rule,
                "subject_kind": a.subject_kind,
                "subject": a.subject,
                "detail": a.detail,
                "status": a.status,
                "severity": a.severity,
                "value": a.value,
                "threshold": a.threshold,
                "episode_start": iso(a.episode_start),
                "opened_at": iso(a.opened_at),
                "resolved_at": iso(a.resolved_at),
                "reason": a.reason,
                "generations": list(a.generations),
                "member_ids": list(a.member_ids),
                "instance_ids": list(a.instance_ids),
                "transactional_id": a.transactional_id,
                "producer_id": a.producer_id,
                "producer_epoch": a.producer_epoch,
                "evidence": dict(a.evidence),
            },
        }

    def line(self) -> str:
        """A one-line log message."""
        a = self.alert
        return (
            f"alert {self.event} [{a.severity}] {a.rule} {self.subject} ({a.alert_id}): {a.reason}"
        )


@dataclass(frozen=True, slots=True)
class NotificationOutcome:
    """``alert_notifications``: what happened to one event at one notifier."""

    alert_id: str
    event: str
    notifier: str
    status: str  # delivered | failed | dropped | skipped
    attempts: int
    http_status: int | None
    error: str | None
    queued_at: int
    finished_at: int
    cluster: str | None = None  # the alert's (alerts.cluster); last, as in the table


class Notifier(Protocol):
    """Where events go. ``submit`` never blocks and never raises."""

    name: str
    min_severity: Severity
    # Send an open alert's "opened" event again at most this often (ms); None: once.
    resend_ms: int | None

    def submit(self, event: AlertEvent) -> None: ...

    def drain(self) -> list[NotificationOutcome]:
        """Outcomes finished since the last call."""
        ...

    def close(self, timeout_s: float) -> list[NotificationOutcome]:
        """Finish what is queued within ``timeout_s`` (the rest is ``dropped``); last outcomes."""
        ...


class LogNotifier:
    """Writes each event as one log line (``offsetscope.alerts`` logger, WARNING for critical).

    The outcome says whether the line was written: ``delivered`` when a handler takes the
    record, ``skipped`` when the configured levels leave it out, ``failed`` when no handler
    would take it (the process never configured logging, :mod:`offsetscope.logs`).
    """

    def __init__(self, *, clock: Clock | None = None, logger: logging.Logger | None = None) -> None:
        self.name = "log"
        self.min_severity = Severity.INFO
        self.resend_ms: int | None = None
        self.clock: Clock = clock or SystemClock()
        self.logger = logger or log
        self._outcomes: list[NotificationOutcome] = []

    def submit(self, event: AlertEvent) -> None:
        now = self.clock.now_ms()
        level = logging.WARNING if event.alert.severity == Severity.CRITICAL.value else logging.INFO
        nowhere = logs.unreachable(self.logger, level)
        if nowhere is None:
            self.logger.log(level, event.line())
            status, error = DELIVERED, None
        else:
            silenced, error = nowhere
            status = SKIPPED if silenced else FAILED
        self._outcomes.append(
            NotificationOutcome(
                event.alert.alert_id,
                event.event,
                self.name,
                status,
                1 if status == DELIVERED else 0,
                None,
                error,
                now,
                now,
                event.alert.cluster,
            )
        )

    def drain(self) -> list[NotificationOutcome]:
        out, self._outcomes = self._outcomes, []
        return out

    def close(self, timeout_s: float) -> list[NotificationOutcome]:
        return self.drain()


# ----------------------------------------------------------------------------- dispatch

Recorded = Mapping[tuple[str, str, str], str]  # (alert id, event, notifier) -> status


def events_of(row: AlertRow) -> list[str]:
    """The events an alert in its current state implies (``opened``, then maybe ``resolved``)."""
    return [OPENED] if row.status == AlertStatus.OPEN.value else [OPENED, RESOLVED]


class Dispatcher:
    """Sends each alert event once per notifier, and re-sends open alerts to notifiers that
    need it (see the module docstring).

    Args:
        notifiers: where events go.
        cfg: ``[alerts.notify]``.
        clock: for the times of outcomes the dispatcher decides itself (skips) and of re-sends.
        name_clusters: name each alert's cluster in its events (a deployment of several
            clusters, where the same group id can be in two).
    """

    def __init__(
        self,
        notifiers: Sequence[Notifier],
        cfg: NotifyConfig,
        *,
        clock: Clock | None = None,
        name_clusters: bool = False,
    ) -> None:
        self.notifiers = list(notifiers)
        self.name_clusters = name_clusters
        self.events = frozenset(cfg.events)
        self.backfill_ms = duration_ms(cfg.backfill_age)
        self.clock: Clock = clock or SystemClock()
        self._sent: set[tuple[str, str, str]] = set()  # handled: submitted, recorded or skipped
        self._skipped: set[tuple[str, str, str]] = set()
        self._last_opened: dict[tuple[str, str], int] = {}  # (alert id, notifier) -> clock ms
        self._decided: list[NotificationOutcome] = []

    def unsent(self, row: AlertRow) -> bool:
        """Whether ``row`` implies an event this dispatcher has not handled for some notifier,
        or is open and due to be sent again to one."""
        now = self.clock.now_ms()
        return any(
            (row.alert_id, event, n.name) not in self._sent
            for n in self.notifiers
            for event in events_of(row)
        ) or any(self._resend_due(row, n, now) for n in self.notifiers)

    def _resend_due(self, row: AlertRow, notifier: Notifier, now: int) -> bool:
        if notifier.resend_ms is None or row.status != AlertStatus.OPEN.value:
            return False
        if (row.alert_id, OPENED, notifier.name) in self._skipped:
            return False
        last = self._last_opened.get((row.alert_id, notifier.name))
        # None: sent by an earlier process, whose send time is unknown -- due now.
        return last is None or now - last >= notifier.resend_ms

    def _event(self, event: str, row: AlertRow) -> AlertEvent:
        return AlertEvent(event, row, row.cluster if self.name_clusters else None)

    def _submit(self, notifier: Notifier, event: AlertEvent, now: int) -> None:
        if event.event == OPENED and notifier.resend_ms is not None:
            self._last_opened[(event.alert.alert_id, notifier.name)] = now
        notifier.submit(event)

    def dispatch(self, rows: Iterable[AlertRow], recorded: Recorded, as_of: int) -> int:
        """Submit the events of ``rows`` not yet recorded or submitted, and the re-sends that are
        due; returns how many."""
        submitted = 0
        now = self.clock.now_ms()
        for row in rows:
            for notifier in self.notifiers:
                skipped_open = False
                for event in events_of(row):
                    key = (row.alert_id, event, notifier.name)
                    status = recorded.get(key)
                    if status == SKIPPED:
                        self._skipped.add(key)
                        skipped_open = skipped_open or event == OPENED
                    if status is not None or key in self._sent:
                        # Recorded by an earlier run or handled by this one: sent once only,
                        # unless the notifier wants open alerts again.
                        self._sent.add(key)
                        if event == OPENED and self._resend_due(row, notifier, now):
                            self._submit(notifier, self._event(event, row), now)
                            submitted += 1
                        continue
                    why = self._skip_reason(row, event, notifier, as_of, skipped_open)
                    self._sent.add(key)
                    if why is not None:
                        self._skipped.add(key)
                        if event == OPENED:
                            skipped_open = True
                        self._decided.append(
                            NotificationOutcome(
                                row.alert_id,
                                event,
                                notifier.name,
                                SKIPPED,
                                0,
                                None,
                                why,
                                now,
                                now,
                                row.cluster,
                            )
                        )
                        continue
                    self._submit(notifier, self._event(event, row), now)
                    submitted += 1
        return submitted

    def _skip_reason(
        self, row: AlertRow, event: str, notifier: Notifier, as_of: int, skipped_open: bool
    ) -> str | None:
        if event not in self.events:
            return f"event {event} is not configured"
        if Severity(row.severity).rank < notifier.min_severity.rank:
            return f"severity {row.severity} is below {notifier.min_severity.value}"
        if (
            event == OPENED
            and row.resolved_at is not None
            and row.resolved_at < as_of - self.backfill_ms
        ):
            return "resolved before it was first seen (backfill)"
        if event == RESOLVED and skipped_open:
            return "its opening was not sent"
        return None

    def drain(self) -> list[NotificationOutcome]:
        """Every outcome finished since the last call (skips included)."""
        out, self._decided = self._decided, []
        for notifier in self.notifiers:
            out.extend(notifier.drain())
        return out

    def close(self, timeout_s: float) -> list[NotificationOutcome]:
        """Close every notifier (``timeout_s`` each at most) and return the last outcomes."""
        out, self._decided = self._decided, []
        for notifier in self.notifiers:
            out.extend(notifier.close(timeout_s))
        return out
