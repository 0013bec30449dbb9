"""Notifiers: a generic JSON webhook and a log line, never blocking or failing the stream.

Events: ``opened`` (an alert's first write, whatever its status) and ``resolved`` (its move to
resolved). The :class:`Dispatcher` decides, per alert, event and notifier, what to send: it
skips what ``alert_notifications`` already records (so a replayed batch or a restarted job does
not send twice; a crash between the alerts commit and the record sends again, so delivery is
at least once and every request carries an ``Idempotency-Key`` of ``<alert id>:<event>``),
severities under the notifier's ``min_severity``, and backfilled alerts (resolved longer than
``backfill_age`` before they were first seen; recorded as ``skipped``).

:class:`WebhookNotifier` never blocks its caller: :meth:`~WebhookNotifier.submit` puts the event
on a bounded queue (a full queue records ``dropped``) that one daemon thread drains, POSTing::

    POST <url>                         Content-Type: application/json
    Authorization: Bearer <token>      (when a token is configured)
    Idempotency-Key: <alert id>:<event>
    {"source": "offsetscope", "event": "opened", "alert": {"alert_id": ..., "rule": ...,
     "subject": ..., "status": ..., "severity": ..., "value": ..., "threshold": ...,
     "opened_at": "2024-...Z", "resolved_at": null, "reason": ..., "generations": [...], ...}}

with a per-attempt timeout and up to ``max_attempts`` attempts, waiting ``backoff_s * 2**k``
(capped at ``max_backoff_s``) between them. Connection errors, timeouts, 429 and 5xx answers are
retried; other 4xx answers are final. Every outcome -- delivered, failed, dropped -- comes back
from :meth:`~WebhookNotifier.drain` as a :class:`NotificationOutcome` for the
``alert_notifications`` table. The URL and token are resolved from their secret references by
the job (:func:`build_notifiers`) and appear nowhere else: not in outcomes (error texts are
scrubbed of both), not in log lines (a notifier is named ``webhook:<name>``), not in the payload.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import queue
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from offsetscope import redaction
from offsetscope.alerts.model import AlertRow, AlertStatus, Severity
from offsetscope.clock import Clock, SystemClock
from offsetscope.config import AlertsConfig, NotifyConfig, duration_ms

log = logging.getLogger("offsetscope.alerts")

OPENED = "opened"
RESOLVED = "resolved"

DELIVERED = "delivered"
FAILED = "failed"
DROPPED = "dropped"
SKIPPED = "skipped"


def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True, slots=True)
class AlertEvent:
    """Something to tell about an alert: it opened, or it resolved."""

    event: str
    alert: AlertRow

    def payload(self) -> dict[str, Any]:
        """The webhook's JSON body (times as ISO 8601 UTC)."""
        a = self.alert
        return {
            "source": "offsetscope",
            "event": self.event,
            "alert": {
                "alert_id": a.alert_id,
                "rule": a.rule,
                "subject_kind": a.subject_kind,
                "subject": a.subject,
                "detail": a.detail,
                "status": a.status,
                "severity": a.severity,
                "value": a.value,
                "threshold": a.threshold,
                "episode_start": _iso(a.episode_start),
                "opened_at": _iso(a.opened_at),
                "resolved_at": _iso(a.resolved_at),
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
        return f"alert {self.event} [{a.severity}] {a.rule} {a.subject} ({a.alert_id}): {a.reason}"


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


class Notifier(Protocol):
    """Where events go. ``submit`` never blocks and never raises."""

    name: str
    min_severity: Severity

    def submit(self, event: AlertEvent) -> None: ...

    def drain(self) -> list[NotificationOutcome]:
        """Outcomes finished since the last call."""
        ...

    def close(self, timeout_s: float) -> list[NotificationOutcome]:
        """Finish what is queued within ``timeout_s`` (the rest is ``dropped``); last outcomes."""
        ...


class LogNotifier:
    """Writes each event as one log line (``offsetscope.alerts`` logger, WARNING for critical)."""

    def __init__(self, *, clock: Clock | None = None, logger: logging.Logger | None = None) -> None:
        self.name = "log"
        self.min_severity = Severity.INFO
        self.clock: Clock = clock or SystemClock()
        self.logger = logger or log
        self._outcomes: list[NotificationOutcome] = []

    def submit(self, event: AlertEvent) -> None:
        now = self.clock.now_ms()
        level = logging.WARNING if event.alert.severity == Severity.CRITICAL.value else logging.INFO
        self.logger.log(level, event.line())
        self._outcomes.append(
            NotificationOutcome(
                event.alert.alert_id, event.event, self.name, DELIVERED, 1, None, None, now, now
            )
        )

    def drain(self) -> list[NotificationOutcome]:
        out, self._outcomes = self._outcomes, []
        return out

    def close(self, timeout_s: float) -> list[NotificationOutcome]:
        return self.drain()


class _Retryable(Exception):
    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class _Final(Exception):
    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


Opener = Callable[..., Any]


class WebhookNotifier:
    """POSTs events as JSON from one background thread (see the module docstring).

    Args:
        name: the webhook's name in ``[alerts.notify.webhooks]`` (outcomes say ``webhook:<name>``).
        url: the resolved URL (secret; never logged or stored).
        token: the resolved bearer token, or empty.
        timeout_s: per attempt.
        max_attempts: attempts per event, the first included.
        backoff_s: delay before the second attempt; doubles per attempt.
        max_backoff_s: cap on the delay.
        queue_size: events waiting at most; more are dropped, not waited for.
        min_severity: events of less severe alerts are not sent.
        clock: for the outcomes' times.
        opener: ``urllib.request.urlopen`` or a stand-in with its signature.
    """

    def __init__(
        self,
        name: str,
        url: str,
        token: str = "",
        *,
        timeout_s: float = 5.0,
        max_attempts: int = 4,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        queue_size: int = 1_000,
        min_severity: Severity = Severity.WARNING,
        clock: Clock | None = None,
        opener: Opener | None = None,
    ) -> None:
        self.name = f"webhook:{name}"
        self.min_severity = min_severity
        self._url = url
        self._token = token
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.clock: Clock = clock or SystemClock()
        self._open = opener or urllib.request.urlopen
        self._queue: queue.Queue[tuple[AlertEvent, int]] = queue.Queue(maxsize=queue_size)
        self._outcomes: list[NotificationOutcome] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()  # abandon: stop waiting and sending at once
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"WebhookNotifier({self.name!r})"  # never the URL

    # ------------------------------------------------------------------ caller side

    def submit(self, event: AlertEvent) -> None:
        queued = self.clock.now_ms()
        if self._stop.is_set():
            self._record(event, DROPPED, 0, None, "the notifier is closed", queued)
            return
        try:
            self._queue.put_nowait((event, queued))
        except queue.Full:
            self._record(event, DROPPED, 0, None, "queue full", queued)
            return
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"offsetscope-{self.name}", daemon=True
            )
            self._thread.start()

    def drain(self) -> list[NotificationOutcome]:
        with self._lock:
            out, self._outcomes = self._outcomes, []
        return out

    def pending(self) -> int:
        """Events queued and not yet finished (approximate while the thread runs)."""
        return self._queue.unfinished_tasks

    def close(self, timeout_s: float) -> list[NotificationOutcome]:
        """Send what is queued for up to ``timeout_s``, then stop: events still queued are
        ``dropped``; one still being sent finishes in the background, unrecorded here."""
        if self._thread is not None:
            deadline = time.monotonic() + timeout_s
            finished = threading.Event()

            def wait_queue() -> None:
                self._queue.join()
                finished.set()

            threading.Thread(target=wait_queue, daemon=True).start()
            finished.wait(timeout_s)
            self._stop.set()
            self._thread.join(timeout=max(0.0, deadline - time.monotonic()) + 0.1)
        self._stop.set()
        while True:
            try:
                event, queued = self._queue.get_nowait()
            except queue.Empty:
                break
            self._record(event, DROPPED, 0, None, "not sent before the notifier closed", queued)
            self._queue.task_done()
        return self.drain()

    # ------------------------------------------------------------------ worker

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                event, queued = self._queue.get(timeout=0.1)
            except queue.Empty:
                continue
            try:
                self._deliver(event, queued)
            finally:
                self._queue.task_done()

    def _deliver(self, event: AlertEvent, queued: int) -> None:
        body = json.dumps(event.payload(), separators=(",", ":")).encode("utf-8")
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "offsetscope-alerts",
            "Idempotency-Key": f"{event.alert.alert_id}:{event.event}",
        }
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        error: str | None = None
        status: int | None = None
        for attempt in range(1, self.max_attempts + 1):
            try:
                status = self._post(body, headers)
            except _Final as exc:
                self._record(event, FAILED, attempt, exc.status, self._scrub(str(exc)), queued)
                return
            except _Retryable as exc:
                error, status = self._scrub(str(exc)), exc.status
            else:
                self._record(event, DELIVERED, attempt, status, None, queued)
                return
            if attempt < self.max_attempts:
                delay = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
                if self._stop.wait(delay):
                    self._record(event, FAILED, attempt, status, f"{error}; closed", queued)
                    return
        self._record(event, FAILED, self.max_attempts, status, error, queued)

    def _post(self, body: bytes, headers: Mapping[str, str]) -> int:
        request = urllib.request.Request(self._url, data=body, headers=dict(headers), method="POST")
        try:
            with self._open(request, timeout=self.timeout_s) as response:
                code = int(response.status)
                response.read()
        except urllib.error.HTTPError as exc:
            code = int(exc.code)
            exc.close()
            if code == 429 or code >= 500:
                raise _Retryable(f"HTTP {code}", code) from None
            raise _Final(f"HTTP {code}", code) from None
        except TimeoutError:
            raise _Retryable(f"no answer within {self.timeout_s} s") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise _Retryable(f"no answer within {self.timeout_s} s") from None
            raise _Retryable(f"{type(exc.reason).__name__}: {exc.reason}") from None
        except OSError as exc:  # connection reset, refused, broken pipe
            raise _Retryable(f"{type(exc).__name__}: {exc}") from None
        if not 200 <= code < 300:
            raise _Final(f"HTTP {code}", code)
        return code

    def _scrub(self, text: str) -> str:
        # This notifier's own URL and token by name, then every registered secret and
        # credential-looking pair (an error may quote a proxy's or a redirect's URL).
        for secret, mask in ((self._url, "<webhook url>"), (self._token, "<token>")):
            if secret:
                text = text.replace(secret, mask)
        return redaction.redact(text)

    def _record(
        self,
        event: AlertEvent,
        status: str,
        attempts: int,
        http_status: int | None,
        error: str | None,
        queued: int,
    ) -> None:
        outcome = NotificationOutcome(
            event.alert.alert_id,
            event.event,
            self.name,
            status,
            attempts,
            http_status,
            error,
            queued,
            self.clock.now_ms(),
        )
        if status != DELIVERED:
            log.warning(
                "%s: %s event of alert %s %s after %d attempt(s): %s",
                self.name,
                event.event,
                event.alert.alert_id,
                status,
                attempts,
                error,
            )
        with self._lock:
            self._outcomes.append(outcome)


# ----------------------------------------------------------------------------- dispatch

Recorded = Mapping[tuple[str, str, str], str]  # (alert id, event, notifier) -> status


def events_of(row: AlertRow) -> list[str]:
    """The events an alert in its current state implies (``opened``, then maybe ``resolved``)."""
    return [OPENED] if row.status == AlertStatus.OPEN.value else [OPENED, RESOLVED]


class Dispatcher:
    """Sends each alert event once per notifier (see the module docstring).

    Args:
        notifiers: where events go.
        cfg: ``[alerts.notify]``.
        clock: for the times of outcomes the dispatcher decides itself (skips).
    """

    def __init__(
        self,
        notifiers: Sequence[Notifier],
        cfg: NotifyConfig,
        *,
        clock: Clock | None = None,
    ) -> None:
        self.notifiers = list(notifiers)
        self.events = frozenset(cfg.events)
        self.backfill_ms = duration_ms(cfg.backfill_age)
        self.clock: Clock = clock or SystemClock()
        self._sent: set[tuple[str, str, str]] = set()  # submitted by this process
        self._decided: list[NotificationOutcome] = []

    def unsent(self, row: AlertRow) -> bool:
        """Whether ``row`` implies an event this dispatcher has not handled for some notifier."""
        return any(
            (row.alert_id, event, n.name) not in self._sent
            for n in self.notifiers
            for event in events_of(row)
        )

    def dispatch(self, rows: Iterable[AlertRow], recorded: Recorded, as_of: int) -> int:
        """Submit the events of ``rows`` not yet recorded or submitted; returns how many."""
        submitted = 0
        for row in rows:
            for notifier in self.notifiers:
                skipped_open = False
                for event in events_of(row):
                    key = (row.alert_id, event, notifier.name)
                    status = recorded.get(key)
                    if event == OPENED and status == SKIPPED:
                        skipped_open = True
                    if status is not None:
                        self._sent.add(key)  # recorded by an earlier run: never again
                        continue
                    if key in self._sent:
                        continue
                    why = self._skip_reason(row, event, notifier, as_of, skipped_open)
                    self._sent.add(key)
                    if why is not None:
                        if event == OPENED:
                            skipped_open = True
                        now = self.clock.now_ms()
                        self._decided.append(
                            NotificationOutcome(
                                row.alert_id, event, notifier.name, SKIPPED, 0, None, why, now, now
                            )
                        )
                        continue
                    notifier.submit(AlertEvent(event, row))
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


def build_notifiers(
    cfg: AlertsConfig, resolve: Callable[[str, str], str], *, clock: Clock | None = None
) -> list[Notifier]:
    """The notifiers ``[alerts.notify]`` configures, with URLs and tokens resolved.

    Args:
        cfg: the alerts settings.
        resolve: ``(reference, key path) -> value``, e.g. ``offsetscope.secrets``'
            ``Resolver.resolve`` (it raises naming the key path when a variable is missing).
        clock: for outcome times.
    """
    out: list[Notifier] = []
    if cfg.notify.log:
        out.append(LogNotifier(clock=clock))
    for name, w in sorted(cfg.notify.webhooks.items()):
        path = f"alerts.notify.webhooks.{name}"
        out.append(
            WebhookNotifier(
                name,
                resolve(w.url, f"{path}.url"),
                resolve(w.token, f"{path}.token") if w.token else "",
                timeout_s=w.timeout_s,
                max_attempts=w.max_attempts,
                backoff_s=w.backoff_s,
                max_backoff_s=w.max_backoff_s,
                queue_size=w.queue_size,
                min_severity=Severity(w.min_severity),
                clock=clock,
            )
        )
    return out
