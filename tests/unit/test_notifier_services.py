"""Slack, Microsoft Teams, PagerDuty and Alertmanager notifiers against local HTTP servers that
check each body as the service does (and refuse it with 400 as the service would), with the
services' retry behaviour: 5xx then success, 429 with Retry-After, a server that never answers.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
from typing import Any

import pytest
from service_doubles import Answer, Request, T, alert, http_service

from offsetscope import config
from offsetscope.alerts.notifiers import (
    AlertmanagerNotifier,
    HttpNotifier,
    PagerDutyNotifier,
    SlackNotifier,
    TeamsNotifier,
    build_notifiers,
)
from offsetscope.alerts.notify import (
    DELIVERED,
    FAILED,
    OPENED,
    RESOLVED,
    AlertEvent,
    NotificationOutcome,
)
from offsetscope.clock import VirtualClock

ROUTING_KEY = "R0UT1NGKEYR0UT1NGKEYR0UT1NGKEY12"  # 32 characters, as PagerDuty's are
FAST = {"timeout": "2s", "backoff": "10ms"}


def iso_time(value: Any) -> bool:
    try:
        parsed = dt.datetime.fromisoformat(str(value))
    except ValueError:
        return False
    return parsed.tzinfo is not None


def finish(n: HttpNotifier) -> list[NotificationOutcome]:
    return n.close(timeout_s=30)


def events() -> list[AlertEvent]:
    """An opening (with text Slack must escape) and a resolution."""
    opened = alert(subject="orders<&>", reason="group orders<&>: 7 rebalances within 10m")
    return [AlertEvent(OPENED, opened), AlertEvent(RESOLVED, alert(status="resolved"))]


# ----------------------------------------------------------------------------- Slack


def slack_refusal(req: Request) -> str | None:
    """What Slack's incoming webhooks answer 400 to (their error names)."""
    if not req.headers.get("content-type", "").startswith("application/json"):
        return "invalid_payload"
    try:
        body = req.json()
    except ValueError:
        return "invalid_payload"
    if not isinstance(body, dict) or not (body.get("text") or body.get("blocks")):
        return "no_text"
    for block in body.get("blocks", []):
        kind = block.get("type")
        if kind == "header":
            text = block["text"]
            if text["type"] != "plain_text" or not 0 < len(text["text"]) <= 150:
                return "invalid_blocks"
        elif kind == "section":
            texts = [block["text"]] if "text" in block else block.get("fields", [])
            if not texts or len(texts) > 10:
                return "invalid_blocks"
            if any(t["type"] != "mrkdwn" or len(t["text"]) > 3000 for t in texts):
                return "invalid_blocks"
        elif kind == "context":
            if not 0 < len(block["elements"]) <= 10:
                return "invalid_blocks"
        else:
            return "invalid_blocks"
    # mrkdwn: a bare < or > starts a link or a mention; & starts an entity.
    texts = [body["text"]] + [
        t["text"]
        for b in body["blocks"]
        for t in ([b["text"]] if "text" in b else b.get("fields", b.get("elements", [])))
        if t["type"] == "mrkdwn"
    ]
    if any(re.search(r"[<>]|&(?!amp;|lt;|gt;)", t) for t in texts):
        return "invalid_blocks"
    return None


def slack(url: str, **kw: Any) -> SlackNotifier:
    section = config.SlackConfig(url="env:SLACK", **{**FAST, **kw})
    return SlackNotifier("kafka-ops", section, url, clock=VirtualClock(T))


def test_slack_gets_text_and_blocks_it_accepts() -> None:
    with http_service(slack_refusal) as (base, script):
        script.answers = [Answer(200, "ok")]
        n = slack(base + "/services/T000/B000/XXXXXXXX")
        for event in events():
            n.submit(event)
        outcomes = finish(n)
    assert script.refusals == []
    assert [(o.status, o.http_status, o.notifier) for o in outcomes] == [
        (DELIVERED, 200, "slack:kafka-ops")
    ] * 2
    opened, resolved = (r.json() for r in script.requests)
    assert opened["blocks"][0]["text"]["text"] == "CRITICAL rebalance_storm opened: group orders<&>"
    assert "orders&lt;&amp;&gt;" in opened["text"]
    assert resolved["blocks"][0]["text"]["text"].startswith("CRITICAL rebalance_storm resolved")


def test_slack_retries_a_5xx_and_fails_on_an_error_answer() -> None:
    with http_service(slack_refusal) as (base, script):
        script.answers = [Answer(500, "internal_error"), Answer(200, "ok")]
        n = slack(base + "/s")
        n.submit(events()[0])
        (delivered,) = finish(n)
    assert (delivered.status, delivered.attempts) == (DELIVERED, 2)
    with http_service() as (base, script):
        script.answers = [Answer(404, "no_service")]
        n = slack(base + "/s")
        n.submit(events()[0])
        (failed,) = finish(n)
    assert (failed.status, failed.attempts, failed.error) == (FAILED, 1, "HTTP 404: no_service")


def test_slack_rate_limit_waits_for_retry_after() -> None:
    with http_service(slack_refusal) as (base, script):
        script.answers = [Answer(429, "rate_limited", (("Retry-After", "1"),)), Answer(200, "ok")]
        n = slack(base + "/s", max_backoff="5s")
        n.submit(events()[0])
        (outcome,) = finish(n)
    assert (outcome.status, outcome.attempts) == (DELIVERED, 2)
    first, second = script.requests
    assert second.at - first.at >= 1.0  # Retry-After honoured, not the 0.01 s backoff


def test_a_retry_after_beyond_max_backoff_is_capped() -> None:
    with http_service(slack_refusal) as (base, script):
        script.answers = [Answer(429, "rate_limited", (("Retry-After", "3600"),))]
        n = slack(base + "/s", max_attempts=2, max_backoff="500ms")
        n.submit(events()[0])
        (outcome,) = finish(n)
    assert (outcome.status, outcome.attempts, outcome.http_status) == (FAILED, 2, 429)
    first, second = script.requests
    assert 0.5 <= second.at - first.at < 5


# ----------------------------------------------------------------------------- Teams


def teams_refusal(req: Request) -> str | None:
    """What a Workflows webhook refuses: anything but a message with Adaptive Card attachments."""
    body = req.json()
    if body.get("type") != "message" or not body.get("attachments"):
        return "The request body is not a message with attachments"
    for attachment in body["attachments"]:
        if attachment.get("contentType") != "application/vnd.microsoft.card.adaptive":
            return "attachment contentType must be application/vnd.microsoft.card.adaptive"
        card = attachment.get("content") or {}
        if card.get("type") != "AdaptiveCard" or card.get("version") not in (
            "1.2",
            "1.3",
            "1.4",
            "1.5",
        ):
            return "content is not an Adaptive Card of a version Teams renders"
        for element in card.get("body", []):
            if element["type"] == "TextBlock" and not isinstance(element.get("text"), str):
                return "TextBlock without text"
            if element["type"] == "FactSet" and not all(
                isinstance(f.get("title"), str) and isinstance(f.get("value"), str)
                for f in element["facts"]
            ):
                return "FactSet facts need a title and a value"
            if element["type"] not in ("TextBlock", "FactSet", "ColumnSet", "Container"):
                return f"unknown element {element['type']}"
        if not card.get("body"):
            return "empty card"
    return None


def test_teams_gets_an_adaptive_card_message() -> None:
    with http_service(teams_refusal) as (base, script):
        script.answers = [Answer(202)]  # Workflows accept with 202 and no body
        section = config.TeamsConfig(url="env:TEAMS", **FAST)
        n = TeamsNotifier(
            "kafka-ops", section, base + "/workflows/abc/triggers/manual/paths/invoke"
        )
        for event in events():
            n.submit(event)
        outcomes = finish(n)
    assert script.refusals == []
    assert [(o.status, o.http_status) for o in outcomes] == [(DELIVERED, 202)] * 2
    card = script.requests[0].json()["attachments"][0]["content"]
    heading, _, factset = card["body"]
    assert (heading["text"], heading["color"]) == (
        "CRITICAL rebalance_storm opened: group orders<&>",
        "Attention",
    )
    assert {"title": "Alert id", "value": "a" * 32} in factset["facts"]
    resolved = script.requests[1].json()["attachments"][0]["content"]["body"][0]
    assert resolved["color"] == "Good"


def test_teams_legacy_connector_error_in_a_200_is_a_failure() -> None:
    with http_service(teams_refusal) as (base, script):
        script.answers = [
            Answer(
                200,
                "Webhook message delivery failed with error: Microsoft Teams endpoint returned HTTP error 413",
            )
        ]
        n = TeamsNotifier("legacy", config.TeamsConfig(url="env:T", **FAST), base + "/webhookb2/x")
        n.submit(events()[0])
        (outcome,) = finish(n)
    assert (outcome.status, outcome.http_status) == (FAILED, 200)
    assert "delivery failed" in (outcome.error or "")


# ----------------------------------------------------------------------------- PagerDuty


def pagerduty_refusal(req: Request) -> str | None:
    """The Events API v2's validation (its 400 'Event object is invalid' cases)."""
    if req.path != "/v2/enqueue":
        return "not found"
    body = req.json()
    errors: list[str] = []
    if not isinstance(body.get("routing_key"), str) or len(body["routing_key"]) != 32:
        errors.append("'routing_key' is invalid")
    if body.get("event_action") not in ("trigger", "acknowledge", "resolve"):
        errors.append("'event_action' is invalid")
    if not body.get("dedup_key") or len(body["dedup_key"]) > 255:
        errors.append("'dedup_key' is invalid")
    if body.get("event_action") == "trigger":
        payload = body.get("payload") or {}
        if not payload.get("summary") or len(payload["summary"]) > 1024:
            errors.append("'payload.summary' is missing or too long")
        if not payload.get("source"):
            errors.append("'payload.source' is missing")
        if payload.get("severity") not in ("critical", "error", "warning", "info"):
            errors.append("'payload.severity' is invalid")
        if "timestamp" in payload and not iso_time(payload["timestamp"]):
            errors.append("'payload.timestamp' is invalid")
    if errors:
        return json.dumps(
            {"status": "invalid event", "message": "Event object is invalid", "errors": errors}
        )
    return None


def accepted(dedup_key: str) -> Answer:
    body = {"status": "success", "message": "Event processed", "dedup_key": dedup_key}
    return Answer(202, json.dumps(body), (("Content-Type", "application/json"),))


def pagerduty(base: str, **kw: Any) -> PagerDutyNotifier:
    section = config.PagerDutyConfig(
        routing_key="env:PD", url=base + "/v2/enqueue", source="kafka-prod", **{**FAST, **kw}
    )
    return PagerDutyNotifier("oncall", section, ROUTING_KEY, clock=VirtualClock(T))


def test_pagerduty_triggers_and_resolves_by_alert_id() -> None:
    with http_service(pagerduty_refusal) as (base, script):
        script.answers = [accepted("a" * 32)]
        n = pagerduty(base)
        for event in events():
            n.submit(event)
        outcomes = finish(n)
    assert script.refusals == []
    assert [(o.status, o.http_status) for o in outcomes] == [(DELIVERED, 202)] * 2
    trigger, resolve = (r.json() for r in script.requests)
    assert (trigger["event_action"], trigger["dedup_key"], trigger["routing_key"]) == (
        "trigger",
        "a" * 32,
        ROUTING_KEY,
    )
    assert trigger["payload"]["severity"] == "critical"
    assert trigger["payload"]["source"] == "kafka-prod"
    assert trigger["payload"]["summary"].startswith("CRITICAL rebalance_storm opened")
    assert trigger["payload"]["custom_details"]["Generations"] == [3, 4, 5]
    assert resolve == {"routing_key": ROUTING_KEY, "event_action": "resolve", "dedup_key": "a" * 32}


@pytest.mark.parametrize(("severity", "expected"), [("warning", "warning"), ("info", "info")])
def test_pagerduty_severities_are_pagerdutys(severity: str, expected: str) -> None:
    with http_service(pagerduty_refusal) as (base, script):
        script.answers = [accepted("b" * 32)]
        n = pagerduty(base, min_severity="info")
        n.submit(AlertEvent(OPENED, alert("b" * 32, severity=severity)))
        (outcome,) = finish(n)
    assert outcome.status == DELIVERED
    assert script.requests[0].json()["payload"]["severity"] == expected


def test_pagerduty_rate_limit_then_success_and_an_invalid_event_is_final() -> None:
    with http_service(pagerduty_refusal) as (base, script):
        script.answers = [Answer(429, "", (("Retry-After", "1"),)), accepted("a" * 32)]
        n = pagerduty(base)
        n.submit(events()[0])
        (outcome,) = finish(n)
    assert (outcome.status, outcome.attempts) == (DELIVERED, 2)
    assert script.requests[1].at - script.requests[0].at >= 1.0
    # A refused event (the routing key PagerDuty does not know the form of) is not retried,
    # and the key never reaches the outcome.
    with http_service(pagerduty_refusal) as (base, script):
        section = config.PagerDutyConfig(routing_key="env:PD", url=base + "/v2/enqueue", **FAST)
        n = PagerDutyNotifier("oncall", section, "short-key-value")
        n.submit(events()[0])
        (refused,) = finish(n)
    assert (refused.status, refused.attempts, refused.http_status) == (FAILED, 1, 400)
    assert "routing_key" in (refused.error or "")
    assert "short-key-value" not in (refused.error or "")


def test_pagerduty_answer_other_than_success_is_not_delivered() -> None:
    with http_service() as (base, script):
        script.answers = [Answer(202, "<html>captive portal</html>")]
        n = pagerduty(base)
        n.submit(events()[0])
        (outcome,) = finish(n)
    assert (outcome.status, outcome.error) == (FAILED, "PagerDuty answered without JSON")


def test_pagerduty_that_never_answers_times_out() -> None:
    with http_service() as (base, script):
        script.hang = True
        n = pagerduty(base, timeout="300ms", max_attempts=3)
        n.submit(events()[0])
        (outcome,) = finish(n)
    assert (outcome.status, outcome.attempts, outcome.error) == (
        FAILED,
        3,
        "no answer within 0.3 s",
    )
    assert len(script.requests) == 3


# ----------------------------------------------------------------------------- Alertmanager

POSTABLE_ALERT_KEYS = {"labels", "annotations", "startsAt", "endsAt", "generatorURL"}


def alertmanager_refusal(req: Request) -> str | None:
    """Alertmanager's v2 API validation of a postableAlerts body."""
    if req.path != "/api/v2/alerts":
        return "not found"
    body = req.json()
    if not isinstance(body, list) or not body:
        return "body must be a non-empty array of alerts"
    for alert_ in body:
        if set(alert_) - POSTABLE_ALERT_KEYS:
            return f"unknown fields {sorted(set(alert_) - POSTABLE_ALERT_KEYS)}"
        labels = alert_.get("labels")
        if not isinstance(labels, dict) or not labels:
            return "labels in body is required"
        for name, value in labels.items():
            if not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", name) or not isinstance(value, str):
                return f"invalid label {name!r}"
        if not all(isinstance(v, str) for v in alert_.get("annotations", {}).values()):
            return "annotations must be strings"
        for key in ("startsAt", "endsAt"):
            if key in alert_ and not iso_time(alert_[key]):
                return f"{key} in body must be of type date-time"
    return None


def test_alertmanager_gets_v2_alerts_with_labels_and_times() -> None:
    clock = VirtualClock(T + 120_000)
    with http_service(alertmanager_refusal) as (base, script):
        section = config.AlertmanagerConfig(
            url=base + "/",
            username="offsetscope",
            password="env:AM_PASSWORD",
            labels={"team": "kafka", "severity": "ignored"},
            resend_every="5m",
            **FAST,
        )
        n = AlertmanagerNotifier("main", section, password="am-pa55word", clock=clock)
        assert n.resend_ms == 300_000
        for event in events():
            n.submit(event)
        outcomes = finish(n)
    assert script.refusals == []
    assert [o.status for o in outcomes] == [DELIVERED, DELIVERED]
    (firing,) = script.requests[0].json()
    (resolved,) = script.requests[1].json()
    assert firing["labels"] == {
        "alertname": "offsetscope_rebalance_storm",
        "rule": "rebalance_storm",
        "severity": "critical",  # the alert's own label wins over the configured one
        "subject_kind": "group",
        "subject": "orders<&>",
        "alert_id": "a" * 32,
        "team": "kafka",
    }
    assert firing["startsAt"] == "2023-11-14T22:13:20.000+00:00"
    # Firing for four re-send intervals from the time it was sent.
    assert firing["endsAt"] == "2023-11-14T22:35:20.000+00:00"
    assert resolved["endsAt"] == "2023-11-14T22:14:20.000+00:00"  # the resolution time
    assert firing["annotations"]["description"] == "group orders<&>: 7 rebalances within 10m"
    auth = script.requests[0].headers["authorization"]
    assert base64.b64decode(auth.removeprefix("Basic ")) == b"offsetscope:am-pa55word"


def test_alertmanager_5xx_is_retried() -> None:
    with http_service(alertmanager_refusal) as (base, script):
        script.answers = [Answer(503), Answer(502), Answer(200)]
        section = config.AlertmanagerConfig(url=base, **FAST)
        n = AlertmanagerNotifier("main", section)
        n.submit(events()[0])
        (outcome,) = finish(n)
    assert (outcome.status, outcome.attempts) == (DELIVERED, 3)


def test_build_notifiers_makes_every_kind() -> None:
    cfg = config.from_mapping(
        config.AlertsConfig,
        {
            "notify": {
                "log": False,
                "slack": {"a": {"url": "env:S"}},
                "teams": {"b": {"url": "env:T"}},
                "pagerduty": {"c": {"routing_key": "env:P"}},
                "alertmanager": {"d": {"url": "http://am:9093", "token": "env:AM"}},
                "email": {
                    "e": {
                        "host": "smtp.example.com",
                        "sender": "offsetscope@example.com",
                        "recipients": ["oncall@example.com"],
                        "username": "env:SMTP_USER",
                        "password": "env:SMTP_PASSWORD",
                    }
                },
            }
        },
    )
    resolved: list[str] = []

    def resolve(ref: str, path: str) -> str:
        resolved.append(path)
        return f"value-of-{ref.removeprefix('env:')}-0123456789"

    names = [n.name for n in build_notifiers(cfg, resolve)]
    assert names == ["slack:a", "teams:b", "pagerduty:c", "alertmanager:d", "email:e"]
    assert resolved == [
        "alerts.notify.slack.a.url",
        "alerts.notify.teams.b.url",
        "alerts.notify.pagerduty.c.routing_key",
        "alerts.notify.alertmanager.d.token",
        "alerts.notify.email.e.username",
        "alerts.notify.email.e.password",
    ]
