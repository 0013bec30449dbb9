"""Notifiers against a real HTTP server on loopback: delivery, retries with backoff, timeouts,
permanent failures, a full queue, and secrets that never leave the notifier."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from offsetscope import config
from offsetscope.alerts.model import AlertRow, Severity
from offsetscope.alerts.notify import (
    DELIVERED,
    DROPPED,
    FAILED,
    OPENED,
    RESOLVED,
    SKIPPED,
    AlertEvent,
    Dispatcher,
    LogNotifier,
    NotificationOutcome,
    WebhookNotifier,
    build_notifiers,
)
from offsetscope.clock import VirtualClock

T = 1_700_000_000_000
TOKEN = "s3cr3t-token-value"


def alert(
    aid: str = "a" * 32, status: str = "open", severity: str = "critical", **kw: Any
) -> AlertRow:
    fields: dict[str, Any] = {
        "alert_id": aid,
        "rule": "rebalance_storm",
        "subject_kind": "group",
        "subject": "payments",
        "detail": "",
        "group_life": 0,
        "episode_start": T,
        "status": status,
        "severity": severity,
        "value": 7.0,
        "threshold": 5.0,
        "opened_at": T,
        "resolved_at": None if status == "open" else T + 60_000,
        "updated_at": T + 1_000,
        "reason": "group payments: 7 rebalances within 10m (more than 5)",
        "generations": (3, 4, 5),
        "member_ids": ("m-1",),
        "instance_ids": (),
        "transactional_id": None,
        "producer_id": None,
        "producer_epoch": None,
        "evidence": (("window_ms", "600000"),),
        "first_batch_id": 1,
        "last_batch_id": 1,
    }
    fields.update(kw)
    return AlertRow(**fields)


@dataclass
class Script:
    """What the test server answers: a list of status codes (last one repeats), or hang."""

    codes: list[int] = field(default_factory=lambda: [200])
    hang: bool = False
    requests: list[dict[str, Any]] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    """A real HTTP server on 127.0.0.1 in a thread; stopped (and released) after the test."""
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            script.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            script.arrived.set()
            if script.hang:
                script.release.wait(timeout=30)  # until the test tears the server down
                return
            n = len(script.requests)
            code = script.codes[min(n, len(script.codes)) - 1]
            self.send_response(code)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/hooks/{TOKEN[:6]}-path"
    try:
        yield url, script
    finally:
        script.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def webhook(url: str, **kw: Any) -> WebhookNotifier:
    settings: dict[str, Any] = {"timeout_s": 2.0, "max_attempts": 4, "backoff_s": 0.01}
    settings.update(kw)
    return WebhookNotifier("ops", url, TOKEN, clock=VirtualClock(T), **settings)


def finish(n: WebhookNotifier) -> list[NotificationOutcome]:
    return n.close(timeout_s=30)


def test_delivers_json_payload_with_idempotency_key_and_bearer_token(
    server: tuple[str, Script],
) -> None:
    url, script = server
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
    headers = {k.lower(): v for k, v in req["headers"].items()}
    assert headers["content-type"] == "application/json"
    assert headers["authorization"] == f"Bearer {TOKEN}"
    assert headers["idempotency-key"] == "a" * 32 + ":opened"
    body = json.loads(req["body"])
    assert body["event"] == "opened"
    assert body["alert"]["rule"] == "rebalance_storm"
    assert body["alert"]["generations"] == [3, 4, 5]
    assert body["alert"]["opened_at"] == "2023-11-14T22:13:20.000+00:00"
    assert body["alert"]["evidence"] == {"window_ms": "600000"}
    assert TOKEN not in req["body"].decode()
    assert url not in req["body"].decode()


def test_retries_with_backoff_until_the_server_recovers(server: tuple[str, Script]) -> None:
    url, script = server
    script.codes = [503, 500, 429, 200]
    n = webhook(url, max_attempts=5)
    n.submit(AlertEvent(OPENED, alert()))
    (outcome,) = finish(n)
    assert (outcome.status, outcome.attempts, outcome.http_status) == (DELIVERED, 4, 200)
    assert len(script.requests) == 4
    keys = {r["headers"]["Idempotency-Key"] for r in script.requests}
    assert keys == {"a" * 32 + ":opened"}  # one event, retried under one key


def test_gives_up_after_max_attempts_and_records_the_failure(server: tuple[str, Script]) -> None:
    url, script = server
    script.codes = [500]
    n = webhook(url, max_attempts=3)
    n.submit(AlertEvent(OPENED, alert()))
    (outcome,) = finish(n)
    assert (outcome.status, outcome.attempts, outcome.http_status, outcome.error) == (
        FAILED,
        3,
        500,
        "HTTP 500",
    )
    assert len(script.requests) == 3


def test_a_client_error_is_final_without_retry(server: tuple[str, Script]) -> None:
    url, script = server
    script.codes = [400]
    n = webhook(url)
    n.submit(AlertEvent(OPENED, alert()))
    (outcome,) = finish(n)
    assert (outcome.status, outcome.attempts, outcome.http_status) == (FAILED, 1, 400)
    assert len(script.requests) == 1


def test_a_server_that_hangs_times_out_without_blocking_the_caller(
    server: tuple[str, Script],
) -> None:
    url, script = server
    script.hang = True
    n = webhook(url, timeout_s=0.3, max_attempts=2)
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
    assert all("no answer within 0.3 s" in (o.error or "") for o in outcomes)


def test_nothing_listening_is_a_recorded_failure() -> None:
    import socket

    with socket.socket() as s:  # a port that was free a moment ago: connection refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    n = webhook(f"http://127.0.0.1:{port}/x", max_attempts=2)
    n.submit(AlertEvent(OPENED, alert()))
    (outcome,) = finish(n)
    assert (outcome.status, outcome.attempts) == (FAILED, 2)
    assert "ConnectionRefusedError" in (outcome.error or "")


def test_a_full_queue_drops_instead_of_waiting(server: tuple[str, Script]) -> None:
    url, script = server
    script.hang = True
    n = webhook(url, timeout_s=5.0, max_attempts=1, queue_size=1)
    n.submit(AlertEvent(OPENED, alert("1" * 32)))
    assert script.arrived.wait(timeout=10)  # the worker holds event 1; the queue is empty
    n.submit(AlertEvent(OPENED, alert("2" * 32)))  # queued
    n.submit(AlertEvent(OPENED, alert("3" * 32)))  # no room
    (dropped,) = n.drain()
    assert (dropped.alert_id, dropped.status, dropped.error) == ("3" * 32, DROPPED, "queue full")
    # closing at once while event 1 is still being sent: the queued event 2 is dropped
    outcomes = {o.alert_id: (o.status, o.error) for o in n.close(timeout_s=0)}
    assert outcomes["2" * 32] == (DROPPED, "not sent before the notifier closed")


def test_secrets_never_reach_outcomes_or_logs(
    server: tuple[str, Script], caplog: pytest.LogCaptureFixture
) -> None:
    url, script = server
    script.codes = [500]
    caplog.set_level(logging.DEBUG, logger="offsetscope.alerts")
    n = webhook(url, max_attempts=2)
    n.submit(AlertEvent(OPENED, alert()))
    outcomes = finish(n)
    text = caplog.text + repr(outcomes) + repr(n)
    assert outcomes
    assert outcomes[0].status == FAILED
    assert url not in text
    assert TOKEN not in text
    assert TOKEN[:6] not in text


def test_log_notifier_writes_one_line_per_event(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="offsetscope.alerts")
    n = LogNotifier(clock=VirtualClock(T))
    n.submit(AlertEvent(OPENED, alert()))
    n.submit(AlertEvent(RESOLVED, alert(status="resolved", severity="warning")))
    assert [r.levelno for r in caplog.records] == [logging.WARNING, logging.INFO]
    assert "alert opened [critical] rebalance_storm payments" in caplog.records[0].getMessage()
    assert [o.status for o in n.drain()] == [DELIVERED, DELIVERED]


# ----------------------------------------------------------------------------- dispatcher


class Recorder:
    """A notifier that keeps what it was given (the dispatcher's decisions are under test)."""

    def __init__(self, name: str = "rec", min_severity: Severity = Severity.INFO) -> None:
        self.name = name
        self.min_severity = min_severity
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
    assert d.dispatch([opened], {}, T) == 0  # submitted already by this process
    resolved = alert("1" * 32, status="resolved")
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


def test_build_notifiers_resolves_references_at_the_edge(server: tuple[str, Script]) -> None:
    url, _ = server
    raw = {
        "notify": {
            "webhooks": {
                "ops": {"url": "env:HOOK_URL", "token": "env:HOOK_TOKEN", "max_attempts": 1}
            }
        }
    }
    cfg = config.from_mapping(config.AlertsConfig, raw)
    assert url not in repr(cfg)
    assert "env:HOOK_URL" in repr(cfg)
    env = {"HOOK_URL": url, "HOOK_TOKEN": TOKEN}
    seen: list[str] = []

    def resolve(ref: str, path: str) -> str:
        seen.append(path)
        return env[ref.removeprefix("env:")]

    log_n, hook = build_notifiers(cfg, resolve)
    assert seen == ["alerts.notify.webhooks.ops.url", "alerts.notify.webhooks.ops.token"]
    assert (log_n.name, hook.name) == ("log", "webhook:ops")
    hook.submit(AlertEvent(OPENED, alert()))
    (outcome,) = hook.close(timeout_s=30)
    assert outcome.status == DELIVERED
