"""Report pages: one self-contained HTML file per group, and one for the whole cluster.

``offsetscope report --group G`` (:func:`group_report`, :func:`render_group`) draws, for the
window asked about:

* **rebalances** (``#timeline``): one marker per generation at the time its join completed,
  its height the member count, its hover text the cause (members that joined or left, a static
  member's replacement), the leader's client id and the partitions moved; the same rows as a
  table below;
* **member sessions** (``#sessions``): one bar per member id from join to leave, and a marker
  where it ended: left or evicted (x), replaced by a static member's new id (diamond), the
  group emptied or deleted (square);
* **lag** (``#lag``): records and seconds over time, one line per partition (per topic when a
  group consumes more than :data:`MAX_LAG_SERIES` partitions), a marker per measurement;
* **transactions** (``#transactions``): one bar per transaction that committed offsets for the
  group, coloured by outcome.

``offsetscope report`` without a group draws the cluster (:func:`cluster_report`,
:func:`render_cluster`): groups by rebalances in the last hour and day (``#rebalances``), the
groups with the most lag (``#lag-leaders``), hanging transactions and every group as a table.

The pages carry plotly.js inline (no network is needed to open one) and are drawn as SVG, one
``class="point"`` element per bar or marker; :meth:`GroupReport.marks` and
:meth:`ClusterReport.marks` say how many each chart must show, from the rows it was built from.
"""

from __future__ import annotations

import datetime as dt
import html
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import plotly.offline
from plotly.subplots import make_subplots

from offsetscope.ops.queries import Queries, Rows, Window

# Above this many partitions, lag is drawn per topic (records summed, seconds the maximum).
MAX_LAG_SERIES = 12
# Groups per bar chart of the cluster page.
TOP_GROUPS = 20
_OUTCOME_COLOURS = {"committed": "#2ca02c", "aborted": "#d62728", "ongoing": "#ff7f0e"}
_END_MARKERS = {
    "left": ("left or evicted", "x", "#d62728"),
    "replaced": ("replaced (static member)", "diamond", "#9467bd"),
    "group_emptied": ("group emptied", "square", "#7f7f7f"),
    "group_deleted": ("group deleted", "square", "#000000"),
}


def _utc(value: dt.datetime | None) -> str:
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def _ms(value: dt.datetime) -> float:
    return value.timestamp() * 1000.0


def _n(value: dt.datetime | None) -> dt.datetime | None:
    """A UTC time as plotly.js reads it: without a zone (it drops an offset, or misreads it)."""
    return None if value is None else value.astimezone(dt.UTC).replace(tzinfo=None)


@dataclass(frozen=True, slots=True)
class LagSeries:
    """One line of the lag chart: a partition (``topic-p``) or a topic."""

    name: str
    at: tuple[dt.datetime, ...]
    records: tuple[int | None, ...]
    seconds: tuple[float | None, ...]


@dataclass(frozen=True, slots=True)
class GroupReport:
    """What a group's page is drawn from."""

    group_id: str
    window: Window
    overview: Rows
    generations: Rows
    sessions: Rows
    lag: tuple[LagSeries, ...]
    transactions: Rows

    def ended_sessions(self) -> dict[str, int]:
        """End reason -> sessions that ended within the window."""
        out: dict[str, int] = defaultdict(int)
        for s in self.sessions.dicts():
            if s["left_at"] is not None and _ms(s["left_at"]) <= self.window.as_of_ms:
                out[s["end_reason"] or "left"] += 1
        return dict(out)

    def marks(self) -> dict[str, int]:
        """Chart id -> bars and markers it draws."""
        points = sum(
            sum(v is not None for v in s.records) + sum(v is not None for v in s.seconds)
            for s in self.lag
        )
        return {
            "timeline": len(self.generations),
            "sessions": len(self.sessions) + sum(self.ended_sessions().values()),
            "lag": points,
            "transactions": len(self.transactions),
        }


def group_report(queries: Queries, group_id: str, window: Window) -> GroupReport:
    """Read everything a group's page shows."""
    return GroupReport(
        group_id,
        window,
        queries.group(group_id, window),
        queries.generations(group_id, window),
        queries.sessions(group_id, window),
        lag_series(queries.lag_series(group_id, window)),
        queries.transactions(window, group_id=group_id),
    )


def lag_series(rows: Rows, max_series: int = MAX_LAG_SERIES) -> tuple[LagSeries, ...]:
    """Lag rows as lines: per partition, or per topic when there are more than ``max_series``."""
    by_partition: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows.dicts():
        by_partition[f"{r['topic']}-{r['partition']}"].append(r)
    if len(by_partition) <= max_series:
        return tuple(
            LagSeries(
                name,
                tuple(r["as_of"] for r in points),
                tuple(r["lag_records"] for r in points),
                tuple(r["lag_seconds"] for r in points),
            )
            for name, points in sorted(by_partition.items())
        )
    by_topic: dict[str, dict[dt.datetime, list[dict[str, Any]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for r in rows.dicts():
        by_topic[r["topic"]][r["as_of"]].append(r)
    out = []
    for topic, samples in sorted(by_topic.items()):
        times = sorted(samples)
        records = [
            [r["lag_records"] for r in samples[t] if r["lag_records"] is not None] for t in times
        ]
        seconds = [
            [r["lag_seconds"] for r in samples[t] if r["lag_seconds"] is not None] for t in times
        ]
        out.append(
            LagSeries(
                topic,
                tuple(times),
                tuple(sum(v) if v else None for v in records),
                tuple(max(v) if v else None for v in seconds),
            )
        )
    return tuple(out)


# ----------------------------------------------------------------------------- figures


def _layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0.0, "font": {"size": 15}},
        height=height,
        margin={"l": 60, "r": 20, "t": 50, "b": 40},
        template="plotly_white",
        legend={"orientation": "h", "y": -0.15},
        hoverlabel={"align": "left"},
    )
    return fig


def timeline_figure(report: GroupReport) -> go.Figure:
    gens = report.generations.dicts()
    text = [
        "<br>".join(
            [
                f"generation {g['generation']} at {_utc(g['at'])}",
                f"cause: {html.escape(str(g['cause']))}",
                f"leader: {html.escape(str(g['leader'] or '-'))}",
                f"members: {g['members']} (joined {len(g['joined'] or [])}, left {g['left']})",
                f"partitions moved: {g['partitions_moved']}",
            ]
        )
        for g in gens
    ]
    fig = go.Figure(
        go.Scatter(
            x=[_n(g["at"]) for g in gens],
            y=[g["members"] for g in gens],
            mode="markers",
            name="generation",
            marker={
                "size": [8 + min(int(g["partitions_moved"] or 0), 12) for g in gens],
                "color": ["#d62728" if g["left"] else "#1f77b4" for g in gens],
            },
            hovertext=text,
            hoverinfo="text",
        )
    )
    fig.update_yaxes(title="members", rangemode="tozero")
    return _layout(fig, f"Rebalances: {len(gens)} generations (marker size: partitions moved)", 320)


def sessions_figure(report: GroupReport) -> go.Figure:
    sessions = report.sessions.dicts()
    as_of = dt.datetime.fromtimestamp(report.window.as_of_ms / 1000, tz=dt.UTC)
    since = dt.datetime.fromtimestamp(report.window.since_ms / 1000, tz=dt.UTC)
    labels = [f"{s['client_id']} ·{str(s['member_id'])[-6:]}" for s in sessions]
    starts = [max(s["joined_at"], since) for s in sessions]
    ends = [
        s["left_at"] if s["left_at"] is not None and s["left_at"] <= as_of else as_of
        for s in sessions
    ]
    fig = go.Figure(
        go.Bar(
            y=labels,
            base=[_n(b) for b in starts],
            x=[_ms(e) - _ms(b) for b, e in zip(starts, ends, strict=True)],
            orientation="h",
            name="session",
            marker={
                "color": ["#aec7e8" if s["instance_id"] is None else "#98df8a" for s in sessions]
            },
            hovertext=[
                f"{html.escape(str(s['member_id']))}<br>client {html.escape(str(s['client_id']))}"
                f" on {html.escape(str(s['client_host']))}<br>instance "
                f"{html.escape(str(s['instance_id'] or '-'))}<br>{_utc(s['joined_at'])} - "
                f"{_utc(s['left_at'])} ({s['end_reason'] or 'open'})"
                for s in sessions
            ],
            hoverinfo="text",
        )
    )
    for reason, (name, symbol, colour) in _END_MARKERS.items():
        ended = [
            (label, s["left_at"])
            for label, s in zip(labels, sessions, strict=True)
            if s["left_at"] is not None
            and s["left_at"] <= as_of
            and (s["end_reason"] or "left") == reason
        ]
        if ended:
            fig.add_trace(
                go.Scatter(
                    x=[_n(at) for _, at in ended],
                    y=[label for label, _ in ended],
                    mode="markers",
                    name=name,
                    marker={"symbol": symbol, "size": 11, "color": colour},
                )
            )
    fig.update_xaxes(type="date")
    fig.update_yaxes(autorange="reversed", automargin=True)
    return _layout(
        fig,
        f"Member sessions: {len(sessions)} (green: static members)",
        max(300, 90 + 18 * len(sessions)),
    )


def lag_figure(report: GroupReport) -> go.Figure:
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
        subplot_titles=("lag in records", "lag in seconds"),
    )  # fmt: skip
    for series in report.lag:
        common = {"mode": "lines+markers", "name": series.name, "legendgroup": series.name}
        fig.add_trace(
            go.Scatter(
                x=[_n(t) for t in series.at], y=list(series.records), marker={"size": 4}, **common
            ),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=[_n(t) for t in series.at],
                y=list(series.seconds),
                marker={"size": 4},
                showlegend=False,
                **common,
            ),
            row=2,
            col=1,
        )
    fig.update_yaxes(rangemode="tozero")
    per = "partition" if len(report.lag) <= MAX_LAG_SERIES else "topic"
    return _layout(fig, f"Lag per {per} ({len(report.lag)} lines)", 460)


def transactions_figure(report: GroupReport) -> go.Figure:
    txns = report.transactions.dicts()
    as_of = dt.datetime.fromtimestamp(report.window.as_of_ms / 1000, tz=dt.UTC)
    fig = go.Figure()
    for outcome in sorted({str(t["outcome"]) for t in txns}):
        chosen = [t for t in txns if t["outcome"] == outcome]
        fig.add_trace(
            go.Bar(
                y=[f"{t['transactional_id']} e{t['producer_epoch']}" for t in chosen],
                base=[_n(t["started_at"]) for t in chosen],
                x=[
                    max(_ms(t["completed_at"] or as_of) - _ms(t["started_at"]), 1.0) for t in chosen
                ],
                orientation="h",
                name=outcome,
                marker={"color": _OUTCOME_COLOURS.get(outcome, "#7f7f7f")},
                hovertext=[
                    f"{html.escape(str(t['transactional_id']))} epoch {t['producer_epoch']}<br>"
                    f"{outcome} ({html.escape(str(t['end_reason']))}), {t['duration_ms']} ms,"
                    f" timeout {t['timeout_ms']} ms, {t['partition_count']} partitions"
                    for t in chosen
                ],
                hoverinfo="text",
            )
        )
    fig.update_xaxes(type="date")
    fig.update_yaxes(autorange="reversed", automargin=True)
    return _layout(
        fig,
        f"Transactions that committed offsets for the group: {len(txns)} (a row per producer)",
        max(260, 90 + 22 * len({(t["transactional_id"], t["producer_epoch"]) for t in txns})),
    )


# ----------------------------------------------------------------------------- pages

_STYLE = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 24px;
       color: #222; max-width: 1200px; }
h1 { font-size: 22px; margin-bottom: 2px; } h2 { font-size: 17px; margin-top: 28px; }
.meta { color: #666; font-size: 13px; margin-bottom: 14px; }
table { border-collapse: collapse; font-size: 12px; margin: 6px 0 12px 0; }
th, td { border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
.empty { color: #888; font-style: italic; }
"""


def _table(rows: Rows, columns: Sequence[str] | None = None, limit: int = 200) -> str:
    names = list(columns or rows.columns)
    if not rows.rows:
        return '<p class="empty">none</p>'
    head = "".join(f"<th>{html.escape(n)}</th>" for n in names)
    body = []
    for r in rows.dicts()[:limit]:
        cells = []
        for n in names:
            v = r[n]
            if isinstance(v, dt.datetime):
                text = _utc(v)
            elif isinstance(v, list | tuple):
                text = ", ".join(str(x) for x in v)
            elif isinstance(v, float):
                text = f"{v:,.1f}"
            else:
                text = "-" if v is None else str(v)
            cells.append(f"<td>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    more = (
        f"<p class='meta'>{len(rows) - limit} more rows left out</p>" if len(rows) > limit else ""
    )
    return f"<table><tr>{head}</tr>{''.join(body)}</table>{more}"


def _figure(fig: go.Figure, div_id: str) -> str:
    return str(
        fig.to_html(
            full_html=False,
            include_plotlyjs=False,
            div_id=div_id,
            default_height=f"{fig.layout.height}px",
            default_width="100%",
            config={"displaylogo": False, "responsive": True},
        )
    )


def _page(title: str, meta: str, sections: Sequence[str]) -> str:
    # plotly.js once, inline: the file opens without a network.
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style>"
        f"<script type='text/javascript'>{plotly.offline.get_plotlyjs()}</script></head>"
        f"<body><h1>{html.escape(title)}</h1><div class='meta'>{meta}</div>"
        + "\n".join(sections)
        + "</body></html>\n"
    )


def _window_text(window: Window) -> str:
    since = dt.datetime.fromtimestamp(window.since_ms / 1000, tz=dt.UTC)
    as_of = dt.datetime.fromtimestamp(window.as_of_ms / 1000, tz=dt.UTC)
    return f"{_utc(since)} to {_utc(as_of)} UTC"


def render_group(report: GroupReport) -> str:
    """The group's page as HTML text."""
    overview = report.overview.dicts()
    state = (
        ", ".join(
            f"{k} {html.escape(str(overview[0][k]))}"
            for k in (
                "state",
                "generation",
                "members",
                "rebalances_1h",
                "rebalances_24h",
                "lag_records",
            )
        )
        if overview
        else "not in groups_current"
    )
    sections = [
        "<h2>Rebalances</h2>",
        _figure(timeline_figure(report), "timeline"),
        _table(
            report.generations,
            (
                "generation",
                "at",
                "cause",
                "leader",
                "members",
                "joined",
                "left",
                "partitions_moved",
            ),
        ),
        "<h2>Member sessions</h2>",
        _figure(sessions_figure(report), "sessions"),
        "<h2>Lag</h2>",
        _figure(lag_figure(report), "lag")
        if report.lag
        else '<p class="empty">no lag measured in the window</p>',
        "<h2>Transactions</h2>",
        _figure(transactions_figure(report), "transactions")
        if len(report.transactions)
        else '<p class="empty">no transaction committed offsets for this group in the window</p>',
    ]
    meta = f"{_window_text(report.window)} &middot; now: {state}"
    return _page(f"Consumer group {report.group_id}", meta, sections)


@dataclass(frozen=True, slots=True)
class ClusterReport:
    """What the cluster page is drawn from."""

    window: Window
    groups: Rows
    hanging: Rows

    def rebalancing(self) -> list[dict[str, Any]]:
        """The groups of the rebalance chart: most rebalances in the day first."""
        rows = [r for r in self.groups.dicts() if r["rebalances_24h"]]
        rows.sort(
            key=lambda r: (-int(r["rebalances_1h"]), -int(r["rebalances_24h"]), r["group_id"])
        )
        return rows[:TOP_GROUPS]

    def lag_leaders(self) -> list[dict[str, Any]]:
        rows = [r for r in self.groups.dicts() if r["lag_records"]]
        rows.sort(key=lambda r: (-int(r["lag_records"]), r["group_id"]))
        return rows[:TOP_GROUPS]

    def marks(self) -> dict[str, int]:
        return {"rebalances": 2 * len(self.rebalancing()), "lag-leaders": len(self.lag_leaders())}


def cluster_report(queries: Queries, window: Window) -> ClusterReport:
    """Read everything the cluster page shows."""
    return ClusterReport(window, queries.groups(window), queries.hanging(window))


def render_cluster(report: ClusterReport) -> str:
    """The cluster page as HTML text."""
    storms = report.rebalancing()
    rebalances = go.Figure(
        [
            go.Bar(
                x=[r["group_id"] for r in storms],
                y=[r["rebalances_1h"] for r in storms],
                name="last hour",
            ),
            go.Bar(
                x=[r["group_id"] for r in storms],
                y=[r["rebalances_24h"] for r in storms],
                name="last day",
            ),
        ]
    )
    rebalances.update_layout(barmode="group")
    leaders = report.lag_leaders()
    lag = go.Figure(
        go.Bar(
            x=[r["group_id"] for r in leaders],
            y=[r["lag_records"] for r in leaders],
            name="lag (records)",
            hovertext=[f"max {r['max_lag_seconds'] or 0:,.1f} s behind" for r in leaders],
        )
    )
    sections = [
        "<h2>Groups by rebalances</h2>",
        _figure(_layout(rebalances, "Rebalances in the last hour and day", 340), "rebalances")
        if storms
        else '<p class="empty">no group rebalanced in the last day</p>',
        "<h2>Lag leaders</h2>",
        _figure(_layout(lag, "Total lag in records", 320), "lag-leaders")
        if leaders
        else '<p class="empty">no group has lag</p>',
        "<h2>Hanging transactions</h2>",
        _table(report.hanging),
        "<h2>Every group</h2>",
        _table(report.groups),
    ]
    meta = f"{_window_text(report.window)} &middot; {len(report.groups)} groups"
    return _page("offsetscope: the cluster", meta, sections)


def write(text: str, out: Path) -> Path:
    """Write a page (creating its folder); returns the path."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out
