"""What each service receives for an alert event: the message formats the services document.

Pure functions from an :class:`~offsetscope.alerts.notify.AlertEvent` to a request body; the
notifiers (:mod:`offsetscope.alerts.notifiers`) send them. Every format carries the same
facts -- the rule, the subject, severity, value and threshold, when the episode started and
ended, the reason -- in the shape its service requires. When the deployment reads several
clusters the event names the alert's cluster (:attr:`~.notify.AlertEvent.cluster`): the subject
reads ``<cluster>/<id>`` and a ``Cluster`` fact (an Alertmanager label) is added; with one
cluster no message mentions it:

* **Slack** incoming webhooks: ``{"text": ..., "blocks": [...]}`` -- ``text`` is what
  notifications and clients without blocks show; blocks are a ``header`` (plain text, at most
  150 characters), a ``section`` with the reason (mrkdwn, at most 3,000), a ``section`` of up to
  10 ``fields`` and a ``context`` line. Slack's mrkdwn needs ``&``, ``<`` and ``>`` escaped.
* **Microsoft Teams** (Workflows' "When a Teams webhook request is received", or a legacy
  incoming webhook): a ``message`` whose one attachment is an Adaptive Card
  (``application/vnd.microsoft.card.adaptive``, card version 1.4): a heading ``TextBlock``
  coloured by severity, the reason, and a ``FactSet``.
* **PagerDuty** Events API v2: ``{"routing_key", "event_action": "trigger" | "resolve",
  "dedup_key": <alert id>, "payload": {"summary" (at most 1,024 characters), "source",
  "severity": "critical" | "error" | "warning" | "info", "timestamp", "component", "group",
  "class", "custom_details"}}``; a resolve needs only the key, the action and the dedup key.
* **Prometheus Alertmanager** API v2 (``POST /api/v2/alerts``): a list of ``{"labels",
  "annotations", "startsAt", "endsAt"}``; the labels (``alertname``, rule, severity, subject,
  alert id) identify the alert, ``endsAt`` in the past resolves it.
* **Email**: a plain-text message (RFC 5322) with the facts, one per line.
* **Any other webhook**: the body a Jinja2 template renders (sandboxed, undefined names are
  errors), given the generic JSON payload's fields.
"""

from __future__ import annotations

import email.utils
from collections.abc import Mapping, Sequence
from email.message import EmailMessage
from typing import Any

import jinja2
import jinja2.sandbox

from offsetscope.alerts.notify import RESOLVED, AlertEvent, iso

SLACK_HEADER_MAX = 150
SLACK_TEXT_MAX = 3_000
SLACK_FIELDS_MAX = 10
PAGERDUTY_SUMMARY_MAX = 1_024
TEAMS_CARD_VERSION = "1.4"
ADAPTIVE_CARD = "application/vnd.microsoft.card.adaptive"
ADAPTIVE_CARD_SCHEMA = "http://adaptivecards.io/schemas/adaptive-card.json"

# offsetscope's severities as PagerDuty's (which also has "error").
PAGERDUTY_SEVERITY = {"critical": "critical", "warning": "warning", "info": "info"}
# Adaptive Card text colours by severity; a resolution is "Good".
_TEAMS_COLOUR = {"critical": "Attention", "warning": "Warning", "info": "Default"}


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def subject_text(event: AlertEvent) -> str:
    """``group payments``, ``partition payments orders:3``, ``transactional_id tx-1``;
    ``group east/payments`` when the event names cluster ``east``."""
    alert = event.alert
    detail = f" {alert.detail}" if alert.subject_kind == "partition" and alert.detail else ""
    return f"{alert.subject_kind} {event.subject}{detail}"


def title(event: AlertEvent) -> str:
    """One line: ``CRITICAL rebalance_storm opened: group payments``."""
    a = event.alert
    return f"{a.severity.upper()} {a.rule} {event.event}: {subject_text(event)}"


def facts(event: AlertEvent) -> list[tuple[str, str]]:
    """The facts every format shows, as (label, value) pairs in reading order."""
    a = event.alert
    out = [
        ("Rule", a.rule),
        ("Subject", subject_text(event)),
        *([("Cluster", event.cluster)] if event.cluster is not None else []),
        ("Severity", a.severity),
        ("Status", a.status),
        ("Value", f"{a.value:g}"),
    ]
    if a.threshold is not None:
        out.append(("Threshold", f"{a.threshold:g}"))
    out.append(("Opened", iso(a.opened_at) or ""))
    if a.resolved_at is not None:
        out.append(("Resolved", iso(a.resolved_at) or ""))
    if a.transactional_id:
        out.append(("Transactional id", a.transactional_id))
    out.append(("Alert id", a.alert_id))
    return out


# ----------------------------------------------------------------------------- Slack


def _mrkdwn(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_message(event: AlertEvent) -> dict[str, Any]:
    """A Slack incoming-webhook message (``text`` and ``blocks``)."""
    a = event.alert
    fields = [
        {"type": "mrkdwn", "text": _clip(f"*{_mrkdwn(label)}*\n{_mrkdwn(value)}", 2_000)}
        for label, value in facts(event)
        if label != "Alert id"
    ][:SLACK_FIELDS_MAX]
    return {
        "text": _clip(_mrkdwn(f"{title(event)} -- {a.reason}"), SLACK_TEXT_MAX),
        "blocks": [
            {
                "type": "header",
                "text": {"type": "plain_text", "text": _clip(title(event), SLACK_HEADER_MAX)},
            },
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": _clip(_mrkdwn(a.reason), SLACK_TEXT_MAX)},
            },
            {"type": "section", "fields": fields},
            {
                "type": "context",
                "elements": [
                    {"type": "mrkdwn", "text": _mrkdwn(f"offsetscope alert {a.alert_id}")}
                ],
            },
        ],
    }


# ----------------------------------------------------------------------------- Teams


def teams_message(event: AlertEvent) -> dict[str, Any]:
    """A Teams message carrying one Adaptive Card."""
    a = event.alert
    colour = "Good" if event.event == RESOLVED else _TEAMS_COLOUR.get(a.severity, "Default")
    card = {
        "$schema": ADAPTIVE_CARD_SCHEMA,
        "type": "AdaptiveCard",
        "version": TEAMS_CARD_VERSION,
        "body": [
            {
                "type": "TextBlock",
                "text": title(event),
                "size": "Medium",
                "weight": "Bolder",
                "style": "heading",
                "color": colour,
                "wrap": True,
            },
            {"type": "TextBlock", "text": a.reason, "wrap": True},
            {
                "type": "FactSet",
                "facts": [{"title": label, "value": value} for label, value in facts(event)],
            },
        ],
        "msteams": {"width": "Full"},
    }
    return {
        "type": "message",
        "attachments": [{"contentType": ADAPTIVE_CARD, "contentUrl": None, "content": card}],
    }


# ----------------------------------------------------------------------------- PagerDuty


def pagerduty_event(event: AlertEvent, routing_key: str, source: str) -> dict[str, Any]:
    """A PagerDuty Events API v2 event: ``trigger`` for an opening, ``resolve`` for a
    resolution, deduplicated by the alert id."""
    a = event.alert
    if event.event == RESOLVED:
        return {"routing_key": routing_key, "event_action": "resolve", "dedup_key": a.alert_id}
    details: dict[str, Any] = dict(facts(event))
    details["Reason"] = a.reason
    if a.generations:
        details["Generations"] = list(a.generations)
    if a.member_ids:
        details["Member ids"] = list(a.member_ids)
    details.update({f"evidence.{k}": v for k, v in a.evidence})
    return {
        "routing_key": routing_key,
        "event_action": "trigger",
        "dedup_key": a.alert_id,
        "client": "offsetscope",
        "payload": {
            "summary": _clip(f"{title(event)} -- {a.reason}", PAGERDUTY_SUMMARY_MAX),
            "source": source,
            "severity": PAGERDUTY_SEVERITY[a.severity],
            "timestamp": iso(a.opened_at),
            "component": subject_text(event),
            "group": a.subject_kind,
            "class": a.rule,
            "custom_details": details,
        },
    }


# ----------------------------------------------------------------------------- Alertmanager


def alertmanager_alerts(
    event: AlertEvent, *, labels: Mapping[str, str], now_ms: int, valid_ms: int
) -> list[dict[str, Any]]:
    """The Alertmanager API v2 body: one postable alert.

    Args:
        event: the event.
        labels: labels added to the alert's own (which win on a clash).
        now_ms: the time of sending (wall clock).
        valid_ms: how long an open alert stays firing without being sent again.
    """
    a = event.alert
    own = {
        "alertname": f"offsetscope_{a.rule}",
        "rule": a.rule,
        "severity": a.severity,
        "subject_kind": a.subject_kind,
        "subject": a.subject,
        "alert_id": a.alert_id,
    }
    if a.detail:
        own["detail"] = a.detail
    if event.cluster is not None:
        own["cluster"] = event.cluster
    ends = a.resolved_at if a.resolved_at is not None else now_ms + valid_ms
    annotations = {"summary": title(event), "description": a.reason}
    annotations.update({label.lower().replace(" ", "_"): value for label, value in facts(event)})
    return [
        {
            "labels": {**labels, **own},
            "annotations": annotations,
            "startsAt": iso(a.opened_at),
            "endsAt": iso(ends),
        }
    ]


# ----------------------------------------------------------------------------- email


def email_message(
    event: AlertEvent, *, sender: str, recipients: Sequence[str], subject_prefix: str
) -> EmailMessage:
    """A plain-text email of the event."""
    a = event.alert
    message = EmailMessage()
    message["Subject"] = f"{subject_prefix} {title(event)}".strip()
    message["From"] = sender
    message["To"] = ", ".join(recipients)
    message["Date"] = email.utils.formatdate(localtime=False)
    message["Message-ID"] = email.utils.make_msgid(idstring=f"{a.alert_id}.{event.event}")
    rows = facts(event)
    if a.generations:
        rows.append(("Generations", ", ".join(map(str, a.generations))))
    width = max(len(label) for label, _ in rows)
    lines = [title(event), "", a.reason, ""]
    lines += [f"{label + ':':<{width + 1}} {value}" for label, value in rows]
    message.set_content("\n".join(lines) + "\n")
    return message


# ----------------------------------------------------------------------------- templates


class BodyTemplate:
    """A Jinja2 template of a webhook body, rendered in Jinja2's sandbox.

    In scope: ``source``, ``event`` and ``alert`` (the generic JSON payload's fields, times as
    ISO 8601 UTC) and ``summary`` (the one-line title). Undefined names raise instead of
    rendering as empty text; ``tojson`` quotes a value for JSON.

    Raises:
        jinja2.TemplateError: the text is not a template (at construction) or uses an
            undefined name (at :meth:`render`).
    """

    def __init__(self, text: str) -> None:
        env = jinja2.sandbox.SandboxedEnvironment(
            autoescape=False, undefined=jinja2.StrictUndefined, keep_trailing_newline=True
        )
        self._template = env.from_string(text)

    def render(self, event: AlertEvent) -> str:
        return self._template.render(summary=title(event), **event.payload())
