"""The generic webhook against a real HTTP server on loopback -- delivery, retries through
urllib3's Retry, timeouts, permanent failures, a full queue, templates, secrets that never leave
the notifier -- and the dispatcher that decides what each notifier is sent."""

from __future__ import annotations

import json
import socket
from typing import Any
from urllib.parse import urlsplit

import pytest
from service_doubles import Answer, T, alert, http_service

from offsetscope import config, logs
from offsetscope.alerts.model import Severity
from offsetscope.alerts.notifiers import WebhookNotifier, build_notifiers
from offsetscope.alerts.notify import (
    DELIVERED,
    DROPPED,
    FAILED,
    OPENED,
    RESOLVED,
    SKIPPED,
    AlertEvent,
    Dispatcher,
    NotificationOutcome,
)
from offsetscope.clock import VirtualClock
from offsetscope.config import InvalidConfigError

TOKEN = "s3cr3t-token-value"
SECRET_PATH = "/hooks/T0SECRET/B0SECRET/x9y8z7w6v5"


def webhook(url: str, **kw: Any) -> WebhookNotifier:
    settings: dict[str, Any] = {"url": "env:U", "timeout": "2s", "backoff": "10ms"}
    settings.update(kw)
    section = config.WebhookConfig(**settings)
    return WebhookNotifier("ops", section, url, TOKEN, clock=VirtualClock(T))


def finish(n: WebhookNotifier) -> list[NotificationOutcome]:
    return n.close(timeout_s=30)


def test_delivers_json_payload_with_idempotency_key_and_bearer_token() -> None:
    with http_service() as (base, script):
        url = base + SECRET_PATH
        n = webhook(url)
        n.submit(AlertEvent(OPENED, alert()))
        (outcome,) = finish(n)
    assert (outcome.status, outcome.attempts, outcome.http_status, outcome.notifier) == (
        DELIVERED,
        1,
        200,
        "webhook:ops",
    )
    (req,) = script.requests
    assert req.path == SECRET_PATH
    assert req.headers["content-type"] == "application/json"
    assert req.headers["authorization"] == f"Bearer {TOKEN}"
    assert req.headers["idempotency-key"] == "a" * 32 + ":opened"
    body = req.json()
    assert body["event"] == "opened"
    assert body["alert"]["rule"] == "rebalance_storm"
    assert body["alert"]["generations"] == [3, 4, 5]
    assert body["alert"]["opened_at"] == "2023-11-14T22:13:20.000+00:00"
    assert body["alert"]["evidence"] == {"window_ms": "600000"}
    assert TOKEN not in req.body.decode()
    assert url not in req.body.decode()


def test_retries_5xx_and_429_until_the_server_recovers() -> None:
    with http_service() as (base, script):
        script.answers = [Answer(503), Answer(500), Answer(429), Answer(200)]
        n = webhook(base + "/x", max_attempts=5)
        n.submit(AlertEvent(OPENED, alert()))
        (outcome,) = finish(n)
    assert (outcome.status, outcome.attempts, outcome.http_status) == (DELIVERED, 4, 200)
    assert len(script.requests) == 4
    keys = {r.headers["idempotency-key"] for r in script.requests}
    assert keys == {"a" * 32 + ":opened"}  # one event, retried under one key


def test_backoff_doubles_after_an_immediate_first_retry() -> None:
    with http_service() as (base, script):
        script.answers = [Answer(500), Answer(500), Answer(500), Answer(200)]
        n = webhook(base + "/x", max_attempts=4, backoff="400ms", max_backoff="10s")
        n.submit(AlertEvent(OPENED, alert()))
        (outcome,) = finish(n)
    assert outcome.status == DELIVERED
    gaps = [b.at - a.at for a, b in zip(script.requests, script.requests[1:], strict=False)]
    assert gaps[0] < 0.3
    assert 0.4 <= gaps[1] < 0.75
    assert 0.8 <= gaps[2] < 1.3


def test_gives_up_after_max_attempts_and_records_the_failure() -> None:
    with http_service() as (base, script):
        script.answers = [Answer(500)]
        n = webhook(base + "/x", max_attempts=3)
        n.submit(AlertEvent(OPENED, alert()))
        (outcome,) = finish(n)
    assert (outcome.status, outcome.attempts, outcome.http_status, outcome.error) == (
        FAILED,
        3,
        500,
        "HTTP 500",
    )
    assert len(script.requests) == 3


def test_a_client_error_is_final_without_retry_and_keeps_the_answer() -> None:
    with http_service() as (base, script):
        script.answers = [Answer(400, "invalid_payload")]
        n = webhook(base + "/x")
        n.submit(AlertEvent(OPENED, alert()))
        (outcome,) = finish(n)
    assert (outcome.status, outcome.attempts, outcome.http_status) == (FAILED, 1, 400)
    assert outcome.error == "HTTP 400: invalid_payload"
    assert len(script.requests) == 1


def test_a_server_that_hangs_times_out_without_blocking_the_caller() -> None:
    with http_service() as (base, script):
        script.hang = True
        n = webhook(base + "/x", timeout="300ms", max_attempts=2)
        n.submit(AlertEvent(OPENED, alert()))
        n.submit(AlertEvent(RESOLVED, alert(status="resolved")))
        # submit returned while the server still holds the first request: the caller never waits
        assert script.arrived.wait(timeout=10)
        assert not script.release.is_set()
        assert n.drain() == []
        outcomes = finish(n)
    assert [(o.event, o.status, o.attempts) for o in outcomes] == [
        (OPENED, FAILED, 2),
        (RESOLVED, FAILED, 2),
    ]
    assert all(o.error == "no answer within 0.3 s" for o in outcomes)
    assert len(script.requests) == 4  # each event tried twice


def test_nothing_listening_is_a_recorded_failure() -> None:
    with socket.socket() as s:  # a port that was free a moment ago: connection refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    n = webhook(f"http://127.0.0.1:{port}{SECRET_PATH}", max_attempts=2)
    n.submit(AlertEvent(OPENED, alert()))
    (outcome,) = finish(n)
    assert (outcome.status, outcome.attempts) == (FAILED, 2)
    assert "connection failed" in (outcome.error or "")
    assert "Connection refused" in (outcome.error or "")
    assert "T0SECRET" not in (outcome.error or "")


def test_a_full_queue_drops_instead_of_waiting() -> None:
    with http_service() as (base, script):
        script.hang = True
        n = webhook(base + "/x", timeout="5s", max_attempts=1, queue_size=1)
        n.submit(AlertEvent(OPENED, alert("1" * 32)))
        assert script.arrived.wait(timeout=10)  # the worker holds event 1; the queue is empty
        n.submit(AlertEvent(OPENED, alert("2" * 32)))  # queued
        n.submit(AlertEvent(OPENED, alert("3" * 32)))  # no room
        (dropped,) = n.drain()
        assert (dropped.alert_id, dropped.status, dropped.error) == (
            "3" * 32,
            DROPPED,
            "queue full",
        )
        # closing at once while event 1 is still being sent: the queued event 2 is dropped
        outcomes = {o.alert_id: (o.status, o.error) for o in n.close(timeout_s=0)}
    assert outcomes["2" * 32] == (DROPPED, "not sent before the notifier closed")


def test_secrets_never_reach_outcomes_or_logs(capsys: pytest.CaptureFixture[str]) -> None:
    # Logging as a job configures it, at DEBUG: urllib3 then logs every request line.
    logs.configure(config.LoggingConfig(level="DEBUG"))
    with http_service() as (base, script):
        script.answers = [Answer(500, f"no such hook {SECRET_PATH}")]
        url = base + SECRET_PATH
        n = webhook(url, max_attempts=2)
        n.submit(AlertEvent(OPENED, alert()))
        outcomes = finish(n)
    logged = capsys.readouterr().err
    assert '"POST *** HTTP/1.1" 500' in logged  # urllib3 logged the request, path masked
    text = logged + repr(outcomes) + repr(n)
    assert outcomes[0].status == FAILED
    assert "no such hook" in (outcomes[0].error or "")
    assert url not in text
    assert TOKEN not in text
    assert "T0SECRET" not in text


def test_a_template_renders_the_body_with_its_content_type() -> None:
    template = (
        '{"message": {{ summary | tojson }}, "alias": "{{ alert.alert_id }}",'
        ' "priority": "{{ "P1" if alert.severity == "critical" else "P3" }}",'
        ' "close": {{ (event == "resolved") | tojson }}}'
    )
    with http_service() as (base, script):
        n = webhook(base + "/x", template=template, content_type="application/json")
        n.submit(AlertEvent(OPENED, alert(reason='quote " and <tag>')))
        n.submit(AlertEvent(RESOLVED, alert(status="resolved", severity="warning")))
        outcomes = finish(n)
    assert [o.status for o in outcomes] == [DELIVERED, DELIVERED]
    first, second = (r.json() for r in script.requests)
    assert first == {
        "message": "CRITICAL rebalance_storm opened: group payments",
        "alias": "a" * 32,
        "priority": "P1",
        "close": False,
    }
    assert (second["priority"], second["close"]) == ("P3", True)


def test_a_template_that_does_not_render_fails_at_build_naming_its_key() -> None:
    cfg = config.from_mapping(
        config.AlertsConfig,
        {"notify": {"webhooks": {"ops": {"url": "env:U", "template": "{{ alert.no_such }}"}}}},
    )
    with pytest.raises(InvalidConfigError, match="does not render") as bad:
        build_notifiers(cfg, lambda ref, path: "http://127.0.0.1:9/x")
    assert bad.value.key_path == "alerts.notify.webhooks.ops.template"
    cfg = config.from_mapping(
        config.AlertsConfig,
        {"notify": {"webhooks": {"ops": {"url": "env:U", "template": "text {{ summary }}"}}}},
    )
    with pytest.raises(InvalidConfigError, match="not JSON"):
        build_notifiers(cfg, lambda ref, path: "http://127.0.0.1:9/x")
    with pytest.raises(InvalidConfigError, match="not a valid Jinja2 template") as syntax:
        config.from_mapping(config.WebhookConfig, {"url": "env:U", "template": "{% if %}"})
    assert syntax.value.key_path == "template"


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("https://hooks.slack.com/services/T0/B0/XXXX", "slack"),
        ("https://acme.webhook.office.com/webhookb2/abc", "teams"),
        ("https://prod-12.westeurope.logic.azure.com:443/workflows/abc", "teams"),
        ("https://events.pagerduty.com/v2/enqueue", "pagerduty"),
    ],
)
def test_a_generic_webhook_at_a_service_that_needs_its_own_notifier_is_refused(
    url: str, kind: str
) -> None:
    cfg = config.from_mapping(
        config.AlertsConfig, {"notify": {"webhooks": {"ops": {"url": "env:HOOK"}}}}
    )
    with pytest.raises(InvalidConfigError, match=rf"\[alerts\.notify\.{kind}\.ops\]") as bad:
        build_notifiers(cfg, lambda ref, path: url)
    assert bad.value.key_path == "alerts.notify.webhooks.ops.url"
    assert urlsplit(url).path not in str(bad.value)


def test_build_notifiers_resolves_references_at_the_edge() -> None:
    raw = {
        "notify": {
            "webhooks": {
                "ops": {"url": "env:HOOK_URL", "token": "env:HOOK_TOKEN", "max_attempts": 1}
            },
            "slack": {"team": {"url": "env:SLACK_URL"}},
            "pagerduty": {"oncall": {"routing_key": "env:PD_KEY"}},
        }
    }
    cfg = config.from_mapping(config.AlertsConfig, raw)
    with http_service() as (base, _):
        url = base + SECRET_PATH
        assert url not in repr(cfg)
        assert "env:HOOK_URL" in repr(cfg)
        env = {"HOOK_URL": url, "HOOK_TOKEN": TOKEN, "SLACK_URL": url, "PD_KEY": "k" * 32}
        seen: list[str] = []

        def resolve(ref: str, path: str) -> str:
            seen.append(path)
            return env[ref.removeprefix("env:")]

        notifiers = build_notifiers(cfg, resolve)
        assert seen == [
            "alerts.notify.webhooks.ops.url",
            "alerts.notify.webhooks.ops.token",
            "alerts.notify.slack.team.url",
            "alerts.notify.pagerduty.oncall.routing_key",
        ]
        assert [n.name for n in notifiers] == [
            "log",
            "webhook:ops",
            "slack:team",
            "pagerduty:oncall",
        ]
        assert notifiers[3].min_severity is Severity.CRITICAL  # PagerDuty's default
        hook = notifiers[1]
        hook.submit(AlertEvent(OPENED, alert()))
        (outcome,) = hook.close(timeout_s=30)
    assert outcome.status == DELIVERED
    assert all(url not in repr(n) and "k" * 32 not in repr(n) for n in notifiers)


# ----------------------------------------------------------------------------- dispatcher


class Recorder:
    """A notifier that keeps what it was given (the dispatcher's decisions are under test)."""

    def __init__(
        self,
        name: str = "rec",
        min_severity: Severity = Severity.INFO,
        resend_ms: int | None = None,
    ) -> None:
        self.name = name
        self.min_severity = min_severity
        self.resend_ms = resend_ms
        self.events: list[tuple[str, str]] = []

    def submit(self, event: AlertEvent) -> None:
        self.events.append((event.alert.alert_id, event.event))

    def drain(self) -> list[NotificationOutcome]:
        return []

    def close(self, timeout_s: float) -> list[NotificationOutcome]:
        return []


NOTIFY = config.load("base").alerts.notify


def test_dispatcher_sends_each_event_once_per_notifier() -> None:
    rec = Recorder()
    d = Dispatcher([rec], NOTIFY, clock=VirtualClock(T))
    opened = alert("1" * 32)
    assert d.dispatch([opened], {}, T) == 1
    assert not d.unsent(opened)
    assert d.dispatch([opened], {}, T) == 0  # submitted already by this process
    resolved = alert("1" * 32, status="resolved")
    assert d.unsent(resolved)
    d.dispatch([resolved], {}, T + 60_000)
    assert rec.events == [("1" * 32, OPENED), ("1" * 32, RESOLVED)]
    # another process (a restarted job) reads what the table recorded
    again = Recorder()
    d2 = Dispatcher([again], NOTIFY, clock=VirtualClock(T))
    recorded = {("1" * 32, OPENED, "rec"): DELIVERED, ("1" * 32, RESOLVED, "rec"): FAILED}
    assert d2.dispatch([resolved], recorded, T + 60_000) == 0
    assert again.events == []


def test_dispatcher_skips_backfill_and_low_severity_and_records_why() -> None:
    rec = Recorder(min_severity=Severity.CRITICAL)
    d = Dispatcher([rec], NOTIFY, clock=VirtualClock(T))
    old = alert("1" * 32, status="resolved", resolved_at=T)  # resolved 2 h before first seen
    warn = alert("2" * 32, severity="warning")
    fresh = alert("3" * 32, status="resolved", resolved_at=T + 2 * 3_600_000 - 1)
    d.dispatch([old, warn, fresh], {}, T + 2 * 3_600_000)
    assert rec.events == [("3" * 32, OPENED), ("3" * 32, RESOLVED)]
    skipped = {(o.alert_id, o.event): o.error for o in d.drain()}
    assert skipped == {
        ("1" * 32, OPENED): "resolved before it was first seen (backfill)",
        ("1" * 32, RESOLVED): "its opening was not sent",
        ("2" * 32, OPENED): "severity warning is below critical",
    }
    assert all(o.status == SKIPPED for o in Dispatcher([rec], NOTIFY).drain())


def test_dispatcher_resends_open_alerts_to_a_notifier_that_forgets_them() -> None:
    clock = VirtualClock(T)
    forgetful, once = Recorder("am", resend_ms=300_000), Recorder("slack")
    d = Dispatcher([forgetful, once], NOTIFY, clock=clock)
    opened = alert("1" * 32)
    d.dispatch([opened], {}, T)
    clock.advance(299_999)
    assert not d.unsent(opened)
    assert d.dispatch([opened], {}, T) == 0
    clock.advance(1)
    assert d.unsent(opened)
    assert d.dispatch([opened], {}, T) == 1  # to the forgetful one only
    resolved = alert("1" * 32, status="resolved")
    clock.advance(600_000)
    d.dispatch([resolved], {}, T)  # resolved: told once, never re-sent
    assert forgetful.events == [("1" * 32, OPENED)] * 2 + [("1" * 32, RESOLVED)]
    assert once.events == [("1" * 32, OPENED), ("1" * 32, RESOLVED)]
    # A restarted job does not know when an earlier process sent: due at once; a skipped
    # opening is never sent again.
    d2 = Dispatcher([Recorder("am", resend_ms=300_000)], NOTIFY, clock=clock)
    recorded = {("2" * 32, OPENED, "am"): DELIVERED, ("3" * 32, OPENED, "am"): SKIPPED}
    assert d2.dispatch([alert("2" * 32), alert("3" * 32)], recorded, T) == 1


def test_the_payload_is_json_serialisable_for_every_status() -> None:
    for row in (alert(), alert(status="resolved", transactional_id="tx-1", producer_id=7)):
        for event in (OPENED, RESOLVED):
            assert json.loads(json.dumps(AlertEvent(event, row).payload()))["event"] == event
