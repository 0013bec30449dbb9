"""The [alerts] and [quality] configuration: defaults, overrides, and errors naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from offsetscope import config
from offsetscope.alerts.rules import settings_for
from offsetscope.config import InvalidConfigError, duration_ms


def test_base_configuration_has_every_rule_and_table() -> None:
    cfg = config.load("base")
    a = cfg.alerts
    assert (a.rebalance_storm.max_generations, duration_ms(a.rebalance_storm.window)) == (
        5,
        600_000,
    )
    assert a.lag_stall.statuses == ("STALL",)
    assert a.notify.webhooks == {}
    assert (cfg.tables.alerts, cfg.tables.alert_notifications) == ("alerts", "alert_notifications")
    assert (cfg.tables.quality_results, cfg.tables.quality_quarantine) == (
        "quality_results",
        "quality_quarantine",
    )
    assert cfg.quality.quarantine_failed_rows


@pytest.mark.parametrize(
    ("text", "ms"),
    [("250ms", 250), ("90s", 90_000), ("10m", 600_000), ("1.5h", 5_400_000), ("2d", 172_800_000)],
)
def test_durations(text: str, ms: int) -> None:
    assert duration_ms(text) == ms


def load_with(tmp_path: Path, text: str) -> config.Config:
    extra = tmp_path / "extra.toml"
    extra.write_text(text)
    return config.load("base", extra=extra)


def test_per_group_overrides_from_toml(tmp_path: Path) -> None:
    cfg = load_with(
        tmp_path,
        """
[alerts.rebalance_storm.groups."payments"]
max_generations = 20
[alerts.rebalance_storm.groups."batch-*"]
enabled = false
window = "1h"
""",
    )
    storm = cfg.alerts.rebalance_storm
    assert settings_for(storm, "payments").max_generations == 20
    assert settings_for(storm, "payments").window == "10m"  # inherited
    assert settings_for(storm, "batch-nightly").enabled is False
    assert settings_for(storm, "orders") == storm


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        (
            '[alerts.rebalance_storm]\nwindow = "ten minutes"',
            "alerts.rebalance_storm.window",
            "not a duration",
        ),
        (
            '[alerts.member_churn]\nseverity = "urgent"',
            "alerts.member_churn.severity",
            "not one of",
        ),
        (
            '[alerts.lag_stall]\nstatuses = ["STALLED"]',
            "alerts.lag_stall.statuses[0]",
            "not one of",
        ),
        ("[alerts.lag_stall]\nintervals = 1", "alerts.lag_stall.intervals", "at least 2"),
        (
            "[alerts.rebalance_storm.groups.x]\nmax_generation = 3",
            "alerts.rebalance_storm.groups.x.max_generation",
            "unknown key",
        ),
        ('[alerts]\ntime_source = "wall"', "alerts.time_source", "not one of 'event_time' or"),
        (
            '[alerts.notify.webhooks.ops]\nurl = "https://hooks.example.com/T000/B000/XXXX"',
            "alerts.notify.webhooks.ops.url",
            "must be a reference",
        ),
        (
            '[alerts.notify.webhooks.ops]\nurl = "env:URL"\ntoken = "abc123"',
            "alerts.notify.webhooks.ops.token",
            "must be a reference",
        ),
        ('[alerts.notify]\nevents = ["escalated"]', "alerts.notify.events[0]", "not one of"),
        ('[quality]\nearliest_timestamp = "2010"', "quality.earliest_timestamp", "a date"),
    ],
)
def test_invalid_settings_name_their_key(tmp_path: Path, text: str, key: str, message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message) as info:
        load_with(tmp_path, text)
    assert info.value.key_path == key
    assert "hooks.example.com" not in str(info.value)
    assert "abc123" not in str(info.value)
