"""The ``alerts`` and ``alert_notifications`` tables (columns = the row dataclasses' fields).

``alerts`` keeps one row per alert id (MERGE; change data feed on, so every open / update /
resolve is in the table's history); ``alert_notifications`` one row per (alert id, event,
notifier) with what happened to it. Neither ever holds a webhook URL or token.
"""

from __future__ import annotations

from offsetscope.alerts.model import AlertRow
from offsetscope.alerts.notify import NotificationOutcome
from offsetscope.spark.tables import ColumnSpec, TableSpec

ALERTS_LAYER = "alerts"

ALERTS = TableSpec(
    "alerts",
    ALERTS_LAYER,
    (
        ColumnSpec("alert_id", "string", False, comment="hash of rule, subject, detail, episode"),
        ColumnSpec(
            "rule",
            "string",
            False,
            comment="rebalance_storm, member_churn, lag_stall, ... ([alerts] in conf/)",
        ),
        ColumnSpec(
            "subject_kind",
            "string",
            False,
            comment="group | partition | topic | data_partition | transactional_id | table",
        ),
        ColumnSpec("subject", "string", False, comment="group id, transactional id or table"),
        ColumnSpec(
            "detail", "string", False, comment="topic:partition, group_life:N, ... or empty"
        ),
        ColumnSpec("group_life", "int", comment="the group's life, for group subjects"),
        ColumnSpec("episode_start", "timestamp", False, comment="read from the data"),
        ColumnSpec("status", "string", False, comment="open | resolved"),
        ColumnSpec("severity", "string", False, comment="info | warning | critical"),
        ColumnSpec("value", "double", False, comment="the rule's measurement (peak or current)"),
        ColumnSpec("threshold", "double", comment="the configured threshold it crossed"),
        ColumnSpec("opened_at", "timestamp", False, comment="evaluation time it opened"),
        ColumnSpec(
            "resolved_at", "timestamp", comment="evaluation time it resolved; null while open"
        ),
        ColumnSpec("updated_at", "timestamp", False, comment="evaluation time of the last change"),
        ColumnSpec("reason", "string", False, comment="what happened, in words"),
        ColumnSpec(
            "generations", "array<int>", False, comment="generations involved (rebalance rules)"
        ),
        ColumnSpec("member_ids", "array<string>", False, comment="member ids involved (churn)"),
        ColumnSpec(
            "instance_ids",
            "array<string>",
            False,
            comment="group.instance.ids involved (static members cycling)",
        ),
        ColumnSpec("transactional_id", "string", comment="transactional.id (hanging transaction)"),
        ColumnSpec("producer_id", "bigint", comment="its producer id"),
        ColumnSpec("producer_epoch", "int", comment="its producer epoch"),
        ColumnSpec(
            "evidence", "map<string,string>", False, comment="the measurements behind the alert"
        ),
        ColumnSpec("first_batch_id", "bigint", False, comment="evaluating batch that first saw it"),
        ColumnSpec(
            "last_batch_id", "bigint", False, comment="evaluating batch that last changed it"
        ),
    ),
    key=("alert_id",),
    change_data_feed=True,
    comment="One row per alert episode; deterministic ids make replays idempotent.",
)

ALERT_NOTIFICATIONS = TableSpec(
    "alert_notifications",
    ALERTS_LAYER,
    (
        ColumnSpec("alert_id", "string", False, comment="the alert (alerts.alert_id)"),
        ColumnSpec("event", "string", False, comment="opened | resolved"),
        ColumnSpec("notifier", "string", False, comment="log | <kind>:<name> (slack:ops, ...)"),
        ColumnSpec("status", "string", False, comment="delivered | failed | dropped | skipped"),
        ColumnSpec("attempts", "int", False, comment="delivery attempts"),
        ColumnSpec("http_status", "int", comment="the HTTP status, or SMTP reply code, last seen"),
        ColumnSpec("error", "string", comment="why it failed or was skipped (no secrets)"),
        ColumnSpec("queued_at", "timestamp", False, comment="when the event was queued"),
        ColumnSpec("finished_at", "timestamp", False, comment="when the last attempt ended"),
    ),
    key=("alert_id", "event", "notifier"),
    comment="What happened to each alert event at each notifier.",
)

ROW_TYPES: dict[str, type] = {"alerts": AlertRow, "alert_notifications": NotificationOutcome}
