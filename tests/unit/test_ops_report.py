"""Report pages from rows (no Spark: the rows are what the queries return): what each chart
is drawn from, how many marks it must show, lag per partition or per topic, and a page that
carries plotly.js and needs no network."""

from __future__ import annotations

import datetime as dt

from offsetscope.ops import report
from offsetscope.ops.queries import Rows, Window

T0 = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)
MIN = dt.timedelta(minutes=1)


def _rows(columns: str, *rows: tuple[object, ...]) -> Rows:
    return Rows(tuple(columns.split()), tuple(rows))


def _report(transactions: Rows | None = None) -> report.GroupReport:
    window = Window(
        int((T0 - 60 * MIN).timestamp() * 1000), int((T0 + 60 * MIN).timestamp() * 1000)
    )
    generations = _rows(
        "group_life generation at kind protocol cause leader members joined left "
        "static_replacements partitions_moved rebalances",
        (0, 1, T0, "classic", "range", "joined: a, b", "a", 2, ["a", "b"], 0, 0, 0, 1),
        (0, 2, T0 + MIN, "classic", "range", "1 left or evicted", "a", 1, [], 1, 0, 3, 1),
    )
    sessions = _rows(
        "member_id instance_id client_id client_host joined_at left_at end_reason replaces "
        "replaced_by first_generation last_generation",
        ("a-1", None, "a", "/10.0.0.1", T0, None, None, None, None, 1, None),
        ("b-1", None, "b", "/10.0.0.2", T0, T0 + MIN, "left", None, None, 1, 1),
        ("c-1", "pod-c", "c", "/10.0.0.3", T0, T0 + 2 * MIN, "replaced", None, "c-2", 1, 2),
        ("d-1", None, "d", "/10.0.0.4", T0 - 120 * MIN, None, None, None, None, 1, None),
    )
    lag = _rows(
        "topic partition as_of lag_records lag_seconds",
        ("orders", 0, T0, 5, 1.5),
        ("orders", 0, T0 + MIN, 0, None),
        ("orders", 1, T0, 7, 2.0),
    )
    return report.GroupReport(
        "payments",
        window,
        _rows("group_id state"),
        generations,
        sessions,
        report.lag_series(lag),
        transactions or _rows("transactional_id"),
    )


def test_marks_count_every_bar_and_marker_the_rows_call_for() -> None:
    built = _report()
    assert built.ended_sessions() == {"left": 1, "replaced": 1}
    assert built.marks() == {
        "timeline": 2,  # a marker per generation
        "sessions": 4 + 2,  # a bar per session, a marker per ended one
        "lag": 3 + 2,  # records and seconds, the measured ones
        "transactions": 0,
    }


def test_lag_is_drawn_per_topic_above_the_partition_limit() -> None:
    rows = _rows(
        "topic partition as_of lag_records lag_seconds",
        *((f"t{p % 2}", p, T0, p, float(p)) for p in range(4)),
    )
    assert [s.name for s in report.lag_series(rows)] == ["t0-0", "t0-2", "t1-1", "t1-3"]
    per_topic = report.lag_series(rows, max_series=3)
    assert [(s.name, s.records, s.seconds) for s in per_topic] == [
        ("t0", (2,), (2.0,)),
        ("t1", (4,), (3.0,)),
    ]


def test_the_page_carries_plotly_and_draws_only_charts_with_rows() -> None:
    page = report.render_group(_report())
    assert page.startswith("<!DOCTYPE html>")
    assert "<script src" not in page
    assert "Plotly.newPlot" in page
    for chart in ("timeline", "sessions", "lag"):
        assert f'id="{chart}"' in page
    assert 'id="transactions"' not in page
    assert "no transaction committed offsets for this group in the window" in page
    assert "joined: a, b" in page  # the rebalances table, with causes


def test_the_cluster_page_ranks_groups_by_rebalances_and_lag() -> None:
    groups = _rows(
        "group_id rebalances_1h rebalances_24h lag_records max_lag_seconds",
        ("quiet", 0, 0, 0, None),
        ("storm", 5, 40, 10, 3.0),
        ("daily", 0, 7, 900, 60.0),
    )
    built = report.ClusterReport(Window(0, 1), groups, _rows("transactional_id"))
    assert [r["group_id"] for r in built.rebalancing()] == ["storm", "daily"]
    assert [r["group_id"] for r in built.lag_leaders()] == ["daily", "storm"]
    assert built.marks() == {"rebalances": 4, "lag-leaders": 2}
    page = report.render_cluster(built)
    assert 'id="rebalances"' in page
    assert 'id="lag-leaders"' in page
