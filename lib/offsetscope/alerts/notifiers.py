"""Notifiers that deliver alert events to the services people read, and the factory that builds
them from ``[alerts.notify]``.

Every notifier here is a :class:`QueuedNotifier`: :meth:`~QueuedNotifier.submit` puts the event
on a bounded queue (a full queue records ``dropped``) that one daemon thread drains, so the
alerts query never waits for a service; :meth:`~QueuedNotifier.close` sends what is queued for
a while and records the rest as ``dropped``.

HTTP notifiers (:class:`HttpNotifier`: Slack, Teams, PagerDuty, Alertmanager, any webhook) POST
through a ``requests`` session whose adapter retries with urllib3's ``Retry``: connection
errors, timeouts, 429 and 5xx answers are tried again up to ``max_attempts`` in all, the first
retry at once, then after ``backoff_s``, doubling up to ``max_backoff_s``; a ``Retry-After``
answer (429, 503) is waited for, up to ``max_backoff_s``. Other answers are final. A 2xx answer
counts as delivered only if the service's body agrees where it says more than its status:
Slack answers ``ok``, PagerDuty ``{"status": "success"}``, a legacy Teams connector ``1`` (it
reports some failures with a 200). The outcome's attempts come from the ``Retry``'s history.
Each request carries ``Idempotency-Key: <alert id>:<event>``.

:class:`EmailNotifier` sends through SMTP (``smtplib``; STARTTLS, TLS from the start, or plain
for a relay on the same host), retrying connection failures and transient (4xx) replies the
same way.

Secrets -- webhook URLs (their path is the credential), tokens, routing keys, SMTP credentials --
are resolved from their references by :func:`build_notifiers` (the resolver registers them with
:mod:`offsetscope.redaction`) and appear nowhere else: not in log lines (a notifier is named
``<kind>:<name>``), not in outcomes (error texts are scrubbed of them), not in reprs.
"""

from __future__ import annotations

import base64
import json
import logging
import queue
import smtplib
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlsplit

import jinja2
import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import (
    ConnectTimeoutError,
    MaxRetryError,
    NewConnectionError,
    ReadTimeoutError,
)
from urllib3.util.retry import Retry

from offsetscope import redaction
from offsetscope.alerts import messages
from offsetscope.alerts.model import AlertRow, Severity
from offsetscope.alerts.notify import (
    DELIVERED,
    DROPPED,
    FAILED,
    OPENED,
    AlertEvent,
    LogNotifier,
    NotificationOutcome,
    Notifier,
)
from offsetscope.clock import Clock, SystemClock
from offsetscope.config import (
    AlertmanagerConfig,
    AlertsConfig,
    DeliveryConfig,
    EmailConfig,
    InvalidConfigError,
    PagerDutyConfig,
    SlackConfig,
    TeamsConfig,
    WebhookConfig,
)

log = logging.getLogger("offsetscope.alerts")

# Answers worth another attempt: rate limiting and the server's own failures.
RETRY_STATUSES = frozenset({429, *range(500, 600)})
USER_AGENT = "offsetscope-alerts"


@dataclass(frozen=True, slots=True)
class Sent:
    """A delivery the service accepted."""

    attempts: int
    code: int | None  # the HTTP status, or the SMTP reply code
    note: str | None = None


class DeliveryError(Exception):
    """A delivery that failed for good (retries included)."""

    def __init__(self, message: str, attempts: int, code: int | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.code = code


def backoff_s(settings: DeliveryConfig, attempt: int) -> float:
    """The wait before ``attempt`` (2, 3, ...), as urllib3's ``Retry`` computes it for the HTTP
    notifiers: none before the first retry, then ``backoff_s`` doubling up to ``max_backoff_s``."""
    if attempt <= 2:
        return 0.0
    return float(min(settings.max_backoff_s, settings.backoff_s * 2 ** (attempt - 3)))


class QueuedNotifier:
    """A notifier whose deliveries run on one background thread (see the module docstring).

    Args:
        name: the notifier's name in ``[alerts.notify.<kind>]``; outcomes say ``<kind>:<name>``.
        settings: its section (severity, timeouts, retries, queue size).
        secrets: resolved values to scrub from error texts, besides every registered secret.
        clock: for the outcomes' times.
    """

    kind: ClassVar[str] = ""

    def __init__(
        self,
        name: str,
        settings: DeliveryConfig,
        *,
        secrets: Sequence[str] = (),
        clock: Clock | None = None,
    ) -> None:
        self.name = f"{self.kind}:{name}"
        self.settings = settings
        self.min_severity = Severity(settings.min_severity)
        self.resend_ms: int | None = None
        self.clock: Clock = clock or SystemClock()
        # Longest first, so a URL is masked whole before its path is.
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        for secret in self._secrets:
            # The resolver registered the values it resolved; a URL's path, which urllib3's
            # debug lines quote on its own, is registered here.
            redaction.register_secret(secret)
        self._queue: queue.Queue[tuple[AlertEvent, int]] = queue.Queue(maxsize=settings.queue_size)
        self._outcomes: list[NotificationOutcome] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()  # abandon: stop waiting and sending at once
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"  # never a URL or a key

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
        try:
            sent = self._send(event)
        except DeliveryError as exc:
            self._record(event, FAILED, exc.attempts, exc.code, self.scrub(str(exc)), queued)
        # The worker outlives any one event: whatever a delivery raises becomes its outcome.
        except Exception as exc:  # noqa: BLE001
            error = self.scrub(f"{type(exc).__name__}: {exc}")
            self._record(event, FAILED, 0, None, error, queued)
        else:
            note = self.scrub(sent.note) if sent.note else None
            self._record(event, DELIVERED, sent.attempts, sent.code, note, queued)

    def _send(self, event: AlertEvent) -> Sent:
        """Deliver ``event`` (retries included) or raise :class:`DeliveryError`."""
        raise NotImplementedError

    def scrub(self, text: str) -> str:
        """``text`` without this notifier's secrets or any registered one."""
        for secret in self._secrets:
            text = text.replace(secret, redaction.MASK)
        return redaction.redact(text)

    def _record(
        self,
        event: AlertEvent,
        status: str,
        attempts: int,
        code: int | None,
        error: str | None,
        queued: int,
    ) -> None:
        outcome = NotificationOutcome(
            event.alert.alert_id,
            event.event,
            self.name,
            status,
            attempts,
            code,
            error,
            queued,
            self.clock.now_ms(),
            event.alert.cluster,
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


# ----------------------------------------------------------------------------- HTTP


class _Retry(Retry):
    """urllib3's ``Retry`` with ``Retry-After`` waits capped (a server asking for an hour must
    not hold the notifier's thread that long; the request then fails as rate-limited)."""

    def __init__(self, *args: Any, retry_after_cap_s: float = 30.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.retry_after_cap_s = retry_after_cap_s

    def new(self, **kwargs: Any) -> _Retry:
        retry = super().new(**kwargs)
        retry.retry_after_cap_s = self.retry_after_cap_s
        return retry

    def parse_retry_after(self, retry_after: str) -> float:
        return min(super().parse_retry_after(retry_after), self.retry_after_cap_s)


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """What an HTTP notifier POSTs for one event."""

    url: str
    body: bytes
    headers: Mapping[str, str]


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _path_of(url: str) -> str:
    """The path of a secret URL, which error texts may quote without the host."""
    path = urlsplit(url).path
    return path if len(path) > 1 else ""


class HttpNotifier(QueuedNotifier):
    """POSTs each event with retries through urllib3's ``Retry`` (see the module docstring);
    subclasses say what to send (:meth:`request`) and how the service says yes
    (:meth:`accepted`)."""

    def __init__(
        self,
        name: str,
        settings: DeliveryConfig,
        *,
        secrets: Sequence[str] = (),
        clock: Clock | None = None,
    ) -> None:
        super().__init__(name, settings, secrets=secrets, clock=clock)
        retry = _Retry(
            total=settings.max_attempts - 1,
            allowed_methods=None,  # POST too: every request carries its idempotency key
            status_forcelist=RETRY_STATUSES,
            # urllib3 waits factor * 2**(n-1) before the n-th retry (none before the first).
            backoff_factor=settings.backoff_s / 2,
            backoff_max=settings.max_backoff_s,
            respect_retry_after_header=True,
            raise_on_status=False,  # the last answer is returned, its status recorded
            retry_after_cap_s=settings.max_backoff_s,
        )
        self._session = requests.Session()
        adapter = HTTPAdapter(max_retries=retry)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        self._session.headers["User-Agent"] = USER_AGENT

    def request(self, event: AlertEvent) -> HttpRequest:
        """The request for ``event``."""
        raise NotImplementedError

    def accepted(self, response: requests.Response) -> str | None:
        """Why a 2xx answer is not a delivery, or None when it is."""
        return None

    def _send(self, event: AlertEvent) -> Sent:
        req = self.request(event)
        headers = {"Idempotency-Key": f"{event.alert.alert_id}:{event.event}", **req.headers}
        timeout = self.settings.timeout_s
        try:
            response = self._session.post(
                req.url, data=req.body, headers=headers, timeout=(timeout, timeout)
            )
        except requests.RequestException as exc:
            reason = exc.args[0] if exc.args else exc
            attempts = self.settings.max_attempts if isinstance(reason, MaxRetryError) else 1
            raise DeliveryError(self._describe(exc), attempts) from None
        with response:
            retries = getattr(response.raw, "retries", None)
            attempts = len(retries.history) + 1 if isinstance(retries, Retry) else 1
            status = response.status_code
            if 200 <= status < 300:
                problem = self.accepted(response)
                if problem is not None:
                    raise DeliveryError(problem, attempts, status)
                return Sent(attempts, status)
            excerpt = " ".join(response.text.split())[:200]
            raise DeliveryError(
                f"HTTP {status}: {excerpt}" if excerpt else f"HTTP {status}", attempts, status
            )

    def _describe(self, exc: requests.RequestException) -> str:
        """What went wrong, without the URL (urllib3's messages quote its path)."""
        reason: BaseException = exc
        if exc.args and isinstance(exc.args[0], MaxRetryError) and exc.args[0].reason is not None:
            reason = exc.args[0].reason
        timeout = f"{self.settings.timeout_s:g}"
        if isinstance(reason, ReadTimeoutError | requests.ReadTimeout | TimeoutError):
            return f"no answer within {timeout} s"
        if isinstance(reason, NewConnectionError):
            cause = reason.__cause__ or reason.__context__
            detail = f"{type(cause).__name__}: {cause}" if cause is not None else str(reason)
            return f"connection failed: {detail}"
        if isinstance(reason, ConnectTimeoutError | requests.ConnectTimeout):
            return f"no connection within {timeout} s"
        return f"{type(reason).__name__}: {reason}"


class WebhookNotifier(HttpNotifier):
    """Any webhook: offsetscope's JSON payload (:meth:`AlertEvent.payload`), or the body a
    template renders, with the configured content type and an optional bearer token."""

    kind = "webhook"

    def __init__(
        self,
        name: str,
        settings: WebhookConfig,
        url: str,
        token: str = "",
        *,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(name, settings, secrets=(url, _path_of(url), token), clock=clock)
        self._url = url
        self._token = token
        self._content_type = settings.content_type
        self._template = messages.BodyTemplate(settings.template) if settings.template else None

    def body(self, event: AlertEvent) -> bytes:
        """The request body for ``event``.

        Raises:
            jinja2.TemplateError: the template uses a name that is not in scope.
        """
        if self._template is None:
            return _json(event.payload())
        return self._template.render(event).encode("utf-8")

    def request(self, event: AlertEvent) -> HttpRequest:
        headers = {"Content-Type": self._content_type}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        try:
            body = self.body(event)
        except jinja2.TemplateError as exc:
            raise DeliveryError(f"the template failed: {exc}", 0) from None
        return HttpRequest(self._url, body, headers)


class SlackNotifier(HttpNotifier):
    """A Slack incoming webhook (:func:`~offsetscope.alerts.messages.slack_message`)."""

    kind = "slack"

    def __init__(
        self, name: str, settings: SlackConfig, url: str, *, clock: Clock | None = None
    ) -> None:
        super().__init__(name, settings, secrets=(url, _path_of(url)), clock=clock)
        self._url = url

    def request(self, event: AlertEvent) -> HttpRequest:
        body = _json(messages.slack_message(event))
        return HttpRequest(self._url, body, {"Content-Type": "application/json; charset=utf-8"})

    def accepted(self, response: requests.Response) -> str | None:
        text = response.text.strip()
        return None if text in ("", "ok") else f"Slack answered {text[:200]!r}"


class TeamsNotifier(HttpNotifier):
    """A Teams channel through a Workflows webhook or a legacy incoming webhook
    (:func:`~offsetscope.alerts.messages.teams_message`)."""

    kind = "teams"

    def __init__(
        self, name: str, settings: TeamsConfig, url: str, *, clock: Clock | None = None
    ) -> None:
        super().__init__(name, settings, secrets=(url, _path_of(url)), clock=clock)
        self._url = url

    def request(self, event: AlertEvent) -> HttpRequest:
        return HttpRequest(
            self._url, _json(messages.teams_message(event)), {"Content-Type": "application/json"}
        )

    def accepted(self, response: requests.Response) -> str | None:
        # Workflows answer 202 with no body; a legacy connector answers 200 with "1", and with
        # 200 and an error text when the card was refused.
        text = response.text.strip()
        if response.status_code == 202 or text in ("", "1"):
            return None
        return f"Teams answered {text[:200]!r}"


class PagerDutyNotifier(HttpNotifier):
    """PagerDuty's Events API v2: trigger on opening, resolve on resolution, deduplicated by the
    alert id (:func:`~offsetscope.alerts.messages.pagerduty_event`)."""

    kind = "pagerduty"

    def __init__(
        self,
        name: str,
        settings: PagerDutyConfig,
        routing_key: str,
        *,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(name, settings, secrets=(routing_key,), clock=clock)
        self._url = settings.url
        self._routing_key = routing_key
        self._source = settings.source

    def request(self, event: AlertEvent) -> HttpRequest:
        body = _json(messages.pagerduty_event(event, self._routing_key, self._source))
        return HttpRequest(self._url, body, {"Content-Type": "application/json"})

    def accepted(self, response: requests.Response) -> str | None:
        try:
            answer = response.json()
        except ValueError:
            return "PagerDuty answered without JSON"
        if not isinstance(answer, dict) or answer.get("status") != "success":
            return f"PagerDuty answered {answer!r:.200}"
        return None


class AlertmanagerNotifier(HttpNotifier):
    """Prometheus Alertmanager's API v2. Open alerts are re-sent every ``resend_every`` (the
    dispatcher asks), each send valid for four intervals, so Alertmanager keeps an alert firing
    while offsetscope runs and resolves it by itself if offsetscope stops telling it."""

    kind = "alertmanager"

    def __init__(
        self,
        name: str,
        settings: AlertmanagerConfig,
        token: str = "",
        password: str = "",
        *,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(name, settings, secrets=(token, password), clock=clock)
        self.resend_ms = settings.resend_every.ms
        self._url = settings.url.rstrip("/") + "/api/v2/alerts"
        self._labels = dict(settings.labels)
        self._headers = {"Content-Type": "application/json"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        elif settings.username:
            pair = f"{settings.username}:{password}".encode()
            self._headers["Authorization"] = f"Basic {base64.b64encode(pair).decode('ascii')}"

    def request(self, event: AlertEvent) -> HttpRequest:
        assert self.resend_ms is not None
        body = messages.alertmanager_alerts(
            event, labels=self._labels, now_ms=self.clock.now_ms(), valid_ms=4 * self.resend_ms
        )
        return HttpRequest(self._url, _json(body), self._headers)


# ----------------------------------------------------------------------------- email


class EmailNotifier(QueuedNotifier):
    """Plain-text email through SMTP (:func:`~offsetscope.alerts.messages.email_message`)."""

    kind = "email"

    def __init__(
        self,
        name: str,
        settings: EmailConfig,
        username: str = "",
        password: str = "",
        *,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(name, settings, secrets=(username, password), clock=clock)
        self.email = settings
        self._username = username
        self._password = password

    def _send(self, event: AlertEvent) -> Sent:
        s = self.email
        message = messages.email_message(
            event, sender=s.sender, recipients=s.recipients, subject_prefix=s.subject_prefix
        )
        error = ""
        code: int | None = None
        for attempt in range(1, s.max_attempts + 1):
            if attempt > 1 and self._stop.wait(backoff_s(s, attempt)):
                raise DeliveryError(f"{error}; closed", attempt - 1, code)
            try:
                refused = self._session(message)
            except smtplib.SMTPResponseException as exc:
                code, error = exc.smtp_code, f"SMTP {exc.smtp_code}: {_text(exc.smtp_error)}"
                if not 400 <= exc.smtp_code < 500:  # 5xx: the server refuses for good
                    raise DeliveryError(error, attempt, code) from None
            except smtplib.SMTPRecipientsRefused as exc:
                raise DeliveryError(
                    f"every recipient refused: {_refusals(exc.recipients)}", attempt
                ) from None
            except ssl.SSLError as exc:
                raise DeliveryError(f"TLS failed: {exc}", attempt) from None
            except smtplib.SMTPNotSupportedError as exc:
                raise DeliveryError(f"the server does not support it: {exc}", attempt) from None
            except (smtplib.SMTPServerDisconnected, OSError) as exc:
                # smtplib turns a read timeout into "Connection unexpectedly closed".
                timed_out = isinstance(exc, TimeoutError) or isinstance(
                    exc.__context__, TimeoutError
                )
                code = None
                error = (
                    f"no answer within {s.timeout_s:g} s"
                    if timed_out
                    else f"{type(exc).__name__}: {exc}"
                )
            else:
                note = f"refused by the server: {_refusals(refused)}" if refused else None
                return Sent(attempt, 250, note)
        raise DeliveryError(error, s.max_attempts, code)

    def _session(self, message: Any) -> dict[str, tuple[int, bytes]]:
        s = self.email
        context = ssl.create_default_context(cafile=s.ca_file or None)
        smtp: smtplib.SMTP
        if s.security == "tls":
            smtp = smtplib.SMTP_SSL(s.host, s.port, timeout=s.timeout_s, context=context)
        else:
            smtp = smtplib.SMTP(s.host, s.port, timeout=s.timeout_s)
        with smtp:
            if s.security == "starttls":
                smtp.starttls(context=context)
            if self._username:
                smtp.login(self._username, self._password)
            return smtp.send_message(message)


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _refusals(refused: Mapping[str, tuple[int, bytes]]) -> str:
    return ", ".join(
        f"{rcpt} ({code} {_text(msg)})" for rcpt, (code, msg) in sorted(refused.items())
    )


# ----------------------------------------------------------------------------- the factory

# Services that refuse offsetscope's generic payload, by host: a generic webhook pointing at one
# is the configuration of earlier versions, where only webhooks existed.
_SERVICE_HOSTS = (
    ("hooks.slack.com", "slack", "url"),
    ("webhook.office.com", "teams", "url"),
    ("logic.azure.com", "teams", "url"),
    ("api.powerplatform.com", "teams", "url"),
    ("events.pagerduty.com", "pagerduty", "routing_key"),
    ("events.eu.pagerduty.com", "pagerduty", "routing_key"),
)


def _refuse_service(url: str, path: str, name: str) -> None:
    host = (urlsplit(url).hostname or "").lower()
    for suffix, kind, key in _SERVICE_HOSTS:
        if host == suffix or host.endswith(f".{suffix}"):
            what = (
                "the same reference as url"
                if key == "url"
                else "the integration key as routing_key"
            )
            raise InvalidConfigError(
                f"{path}.url",
                f"points at {host}, which rejects offsetscope's generic payload: configure it as"
                f" [alerts.notify.{kind}.{name}] with {what}, or give the webhook a template",
            )


def _sample_event() -> AlertEvent:
    """An event with every field set, to try a webhook template on before the job runs."""
    row = AlertRow(
        alert_id="0" * 32,
        rule="rebalance_storm",
        subject_kind="group",
        subject="payments",
        detail="",
        group_life=0,
        episode_start=1_700_000_000_000,
        status="open",
        severity="critical",
        value=7.0,
        threshold=5.0,
        opened_at=1_700_000_000_000,
        resolved_at=None,
        updated_at=1_700_000_000_000,
        reason="group payments: 7 rebalances within 10m (more than 5)",
        generations=(1, 2),
        member_ids=("m-1",),
        instance_ids=(),
        transactional_id=None,
        producer_id=None,
        producer_epoch=None,
        evidence=(("window_ms", "600000"),),
        first_batch_id=0,
        last_batch_id=0,
    )
    return AlertEvent(OPENED, row)


def _webhook(
    name: str, w: WebhookConfig, path: str, url: str, token: str, clock: Clock | None
) -> WebhookNotifier:
    if not w.template:
        _refuse_service(url, path, name)
    try:
        notifier = WebhookNotifier(name, w, url, token, clock=clock)
        body = notifier.body(_sample_event())
    except jinja2.TemplateError as exc:
        raise InvalidConfigError(f"{path}.template", f"does not render: {exc}") from None
    if w.template and "json" in w.content_type.lower():
        try:
            json.loads(body)
        except ValueError as exc:
            raise InvalidConfigError(
                f"{path}.template", f"renders text that is not JSON ({exc}) for {w.content_type}"
            ) from None
    return notifier


def build_notifiers(
    cfg: AlertsConfig, resolve: Callable[[str, str], str], *, clock: Clock | None = None
) -> list[Notifier]:
    """The notifiers ``[alerts.notify]`` configures, their secrets resolved.

    Args:
        cfg: the alerts settings.
        resolve: ``(reference, key path) -> value``, e.g. ``offsetscope.secrets``'
            ``Resolver.resolve`` (it raises naming the key path when a secret is missing, and
            registers what it resolves for redaction).
        clock: for outcome times.

    Raises:
        InvalidConfigError: a secret is missing, a generic webhook points at a service that needs
            its own notifier, or a template does not render.
    """
    notify = cfg.notify

    def secret(reference: str, path: str) -> str:
        return resolve(reference, path) if reference else ""

    out: list[Notifier] = []
    if notify.log:
        out.append(LogNotifier(clock=clock))
    base = "alerts.notify"
    for name, w in sorted(notify.webhooks.items()):
        path = f"{base}.webhooks.{name}"
        url, token = secret(w.url, f"{path}.url"), secret(w.token, f"{path}.token")
        out.append(_webhook(name, w, path, url, token, clock))
    for name, s in sorted(notify.slack.items()):
        url = secret(s.url, f"{base}.slack.{name}.url")
        out.append(SlackNotifier(name, s, url, clock=clock))
    for name, t in sorted(notify.teams.items()):
        url = secret(t.url, f"{base}.teams.{name}.url")
        out.append(TeamsNotifier(name, t, url, clock=clock))
    for name, p in sorted(notify.pagerduty.items()):
        key = secret(p.routing_key, f"{base}.pagerduty.{name}.routing_key")
        out.append(PagerDutyNotifier(name, p, key, clock=clock))
    for name, a in sorted(notify.alertmanager.items()):
        path = f"{base}.alertmanager.{name}"
        token, password = secret(a.token, f"{path}.token"), secret(a.password, f"{path}.password")
        out.append(AlertmanagerNotifier(name, a, token, password, clock=clock))
    for name, e in sorted(notify.email.items()):
        path = f"{base}.email.{name}"
        username = secret(e.username, f"{path}.username")
        password = secret(e.password, f"{path}.password")
        out.append(EmailNotifier(name, e, username, password, clock=clock))
    return out
