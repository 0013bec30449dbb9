"""The reads behind the operator's view: one function per question, each one Spark SQL query.

Every function takes a :class:`Window` (the moment the question is asked, and how far back to
look) and returns :class:`Rows`: column names and plain Python rows, timestamps as UTC
``datetime`` objects. The commands print them, the report pages chart them and the exporter
turns them into gauges. Where a view answers the question (``offsetscope.spark.tables.VIEWS``)
its own SELECT runs with the window's moment in place of ``current_timestamp()``, so a report of
a log copied off a broker last week asks "the last hour" of that log, and the view and the
command never disagree. offsetscope's own consumer groups are left out unless ``include_own``.

Group ids and transactional ids are unique within a cluster only: with ``cluster`` the answers
are that cluster's, and every join between tables matches the cluster too, so two clusters'
groups of the same id never meet.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from offsetscope.config import Config
from offsetscope.spark import tables as catalogue


@dataclass(frozen=True, slots=True)
class Window:
    """``since_ms`` (exclusive) to ``as_of_ms`` (inclusive), epoch milliseconds."""

    since_ms: int
    as_of_ms: int

    @property
    def now(self) -> str:
        """The moment as a SQL timestamp expression."""
        return f"timestamp_millis({int(self.as_of_ms)})"

    @property
    def since(self) -> str:
        return f"timestamp_millis({int(self.since_ms)})"


@dataclass(frozen=True, slots=True)
class Rows:
    """A query's answer: column names and rows (tuples in column order)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.rows)

    def dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, r, strict=True)) for r in self.rows]

    def column(self, name: str) -> list[Any]:
        i = self.columns.index(name)
        return [r[i] for r in self.rows]


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def run(spark: SparkSession, sql: str) -> Rows:
    """Run ``sql`` and collect it (the answers are small: a group's rows, or one per group)."""
    df = spark.sql(sql)
    return Rows(tuple(df.columns), tuple(tuple(_plain(v) for v in r) for r in df.collect()))


def _plain(value: Any) -> Any:
    # Spark returns naive datetimes in the session time zone, which offsetscope fixes at UTC.
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value


class Queries:
    """The questions, over the tables ``cfg`` names.

    Args:
        spark: the session.
        cfg: table names and the own-group prefix.
        include_own: keep offsetscope's own consumer groups in the answers.
        cluster: only this cluster's rows (default: every cluster's).
    """

    def __init__(
        self,
        spark: SparkSession,
        cfg: Config,
        *,
        include_own: bool = False,
        cluster: str | None = None,
    ) -> None:
        self.spark = spark
        self.cfg = cfg
        self.include_own = include_own
        self.cluster = cluster

    def _in_cluster(self, alias: str = "") -> str:
        """A SQL condition: the row (of ``alias``) is of the chosen cluster."""
        if self.cluster is None:
            return "true"
        column = f"{alias}.cluster" if alias else "cluster"
        return f"{column} = {_quote(self.cluster)}"

    def _t(self, logical: str) -> str:
        return catalogue.current_sql(self.cfg, logical)

    def _view(self, logical: str, w: Window) -> str:
        return catalogue.VIEWS[logical].select(self.cfg, now=w.now, include_own=self.include_own)

    def _own_filter(self, column: str = "group_id") -> str:
        if self.include_own:
            return "true"
        gc = self._t("groups_current")
        return f"{column} NOT IN (SELECT group_id FROM {gc} WHERE offsetscope_own)"

    # ------------------------------------------------------------------ groups

    def groups(self, w: Window, state: str | None = None) -> Rows:
        """Every group: state, members, rebalances in the hour and day before ``w``, lag."""
        where = f"AND lower(state) = lower({_quote(state)})" if state else ""
        return run(
            self.spark,
            f"SELECT * FROM ({self._view('group_overview', w)}) "
            f"WHERE {self._in_cluster()} {where} "
            "ORDER BY rebalances_1h DESC, rebalances_24h DESC, group_id, cluster",
        )

    def group(self, group_id: str, w: Window) -> Rows:
        """One group's overview row (empty when the group is unknown or left out)."""
        return run(
            self.spark,
            f"SELECT * FROM ({self._view('group_overview', w)}) "
            f"WHERE group_id = {_quote(group_id)} AND {self._in_cluster()} ORDER BY cluster",
        )

    def describe(self, group_id: str, w: Window) -> Rows:
        """``kafka-consumer-groups --describe``: per partition, the offsets and lag, and the
        member that owns it in the group's current generation."""
        gc, pa = self._t("groups_current"), self._t("partition_assignments")
        return run(
            self.spark,
            f"""WITH owners AS (
  SELECT a.cluster, a.topic, a.`partition`, a.member_id, a.client_id, a.client_host
  FROM {pa} a JOIN {gc} c
    ON a.cluster <=> c.cluster AND a.group_id = c.group_id AND a.group_life = c.group_life
   AND a.generation = c.generation AND NOT c.deleted AND c.member_count > 0
  WHERE a.group_id = {_quote(group_id)} AND {self._in_cluster("a")})
SELECT l.cluster AS CLUSTER, l.group_id AS `GROUP`, l.topic AS TOPIC,
       l.`partition` AS `PARTITION`,
       l.committed_offset AS `CURRENT-OFFSET`, l.end_offset AS `LOG-END-OFFSET`,
       l.lag_records AS LAG, round(l.lag_seconds, 1) AS `LAG-SECONDS`,
       coalesce(o.member_id, '-') AS `CONSUMER-ID`, coalesce(o.client_host, '-') AS HOST,
       coalesce(o.client_id, '-') AS `CLIENT-ID`
FROM ({self._view("current_lag", w)}) l
LEFT JOIN owners o
  ON o.cluster <=> l.cluster AND o.topic = l.topic AND o.`partition` = l.`partition`
WHERE l.group_id = {_quote(group_id)} AND {self._in_cluster("l")}
ORDER BY CLUSTER, TOPIC, `PARTITION`""",
        )

    def members(self, group_id: str, w: Window) -> Rows:
        """``kafka-consumer-groups --describe --members``: the member sessions open at ``w``."""
        ms, pa, gc = (
            self._t("member_sessions"),
            self._t("partition_assignments"),
            self._t("groups_current"),
        )
        return run(
            self.spark,
            f"""WITH parts AS (
  SELECT a.cluster, a.member_id, count(*) AS n
  FROM {pa} a JOIN {gc} c
    ON a.cluster <=> c.cluster AND a.group_id = c.group_id AND a.group_life = c.group_life
   AND a.generation = c.generation
  WHERE a.group_id = {_quote(group_id)} AND {self._in_cluster("a")}
  GROUP BY a.cluster, a.member_id)
SELECT s.cluster AS CLUSTER, s.group_id AS `GROUP`, s.member_id AS `CONSUMER-ID`,
       coalesce(s.instance_id, '-') AS `GROUP-INSTANCE-ID`, s.client_host AS HOST,
       s.client_id AS `CLIENT-ID`, coalesce(p.n, 0) AS `#PARTITIONS`, s.joined_at AS JOINED
FROM {ms} s LEFT JOIN parts p ON p.cluster <=> s.cluster AND p.member_id = s.member_id
WHERE s.group_id = {_quote(group_id)} AND {self._in_cluster("s")} AND s.joined_at <= {w.now}
  AND (s.left_at IS NULL OR s.left_at > {w.now})
ORDER BY CLUSTER, `CLIENT-ID`, `CONSUMER-ID`""",
        )

    def lag(self, group_id: str | None, w: Window) -> Rows:
        """Current lag per partition (of one group, or of every group)."""
        where = f"AND group_id = {_quote(group_id)}" if group_id else ""
        return run(
            self.spark,
            f"SELECT * FROM ({self._view('current_lag', w)}) WHERE {self._in_cluster()} {where} "
            "ORDER BY group_id, cluster, topic, `partition`",
        )

    def generations(self, group_id: str, w: Window) -> Rows:
        """One row per rebalance in the window: when, its cause, leader, members joined and
        left (client ids), partitions moved."""
        gg = self._t("group_generations")
        return run(
            self.spark,
            f"""SELECT cluster, group_life, generation,
       coalesce(join_completed_at, stored_at) AS at, kind, protocol,
       {catalogue.REBALANCE_CAUSE} AS cause,
       {catalogue.LEADER_CLIENT} AS leader,
       member_count AS members,
       transform(filter(members, m -> array_contains(members_joined, m.member_id)),
                 m -> m.client_id) AS joined,
       size(members_left) AS left,
       static_replacements, partitions_moved, rebalances
FROM {gg}
WHERE group_id = {_quote(group_id)} AND {self._in_cluster()}
  AND coalesce(join_completed_at, stored_at) > {w.since}
  AND coalesce(join_completed_at, stored_at) <= {w.now}
ORDER BY cluster, group_life, generation""",
        )

    def sessions(self, group_id: str, w: Window) -> Rows:
        """The member sessions that overlap the window, oldest first."""
        ms = self._t("member_sessions")
        return run(
            self.spark,
            f"""SELECT member_id, instance_id, client_id, client_host, joined_at, left_at,
       end_reason, replaces, replaced_by, first_generation, last_generation
FROM {ms}
WHERE group_id = {_quote(group_id)} AND {self._in_cluster()} AND joined_at <= {w.now}
  AND (left_at IS NULL OR left_at > {w.since})
ORDER BY joined_at, client_id, member_id""",
        )

    def lag_series(self, group_id: str, w: Window) -> Rows:
        """Every lag measurement of the group in the window, per partition, oldest first."""
        pl = self._t("partition_lag")
        return run(
            self.spark,
            f"""SELECT topic, `partition`, as_of, lag_records, lag_seconds
FROM {pl}
WHERE group_id = {_quote(group_id)} AND {self._in_cluster()}
  AND as_of > {w.since} AND as_of <= {w.now} AND as_of_date >= to_date({w.since})
ORDER BY topic, `partition`, as_of""",
        )

    def timeline(self, group_id: str, w: Window) -> Rows:
        """The group's timeline (the ``group_timeline`` view) within the window."""
        return run(
            self.spark,
            f"SELECT at, event, generation, detail FROM ({self._view('group_timeline', w)}) "
            f"WHERE group_id = {_quote(group_id)} AND {self._in_cluster()} AND at > {w.since} "
            "ORDER BY at, event",
        )

    # ------------------------------------------------------------------ transactions

    def transactions(
        self, w: Window, group_id: str | None = None, outcome: str | None = None
    ) -> Rows:
        """Transactions that began in the window; with ``group_id``, those that committed
        offsets for the group (``sendOffsetsToTransaction``)."""
        tx, oc = self._t("transactions"), self._t("offset_commits")
        conditions = [
            f"t.started_at > {w.since}",
            f"t.started_at <= {w.now}",
            self._in_cluster("t"),
        ]
        if outcome:
            conditions.append(f"t.outcome = {_quote(outcome)}")
        if group_id:
            conditions.append(
                f"(t.cluster, t.producer_id) IN (SELECT DISTINCT cluster, producer_id FROM {oc} "
                f"WHERE transactional AND group_id = {_quote(group_id)} "
                f"AND record_date >= to_date({w.since}))"
            )
        return run(
            self.spark,
            f"""SELECT t.cluster, t.transactional_id, t.producer_id, t.producer_epoch, t.outcome,
       coalesce(t.end_reason, '-') AS end_reason, t.started_at, t.completed_at,
       t.duration_ms, t.timeout_ms, t.partition_count, t.timed_out, t.fenced
FROM {tx} t
WHERE {" AND ".join(conditions)}
ORDER BY t.started_at, t.transactional_id, t.cluster""",
        )

    def hanging(self, w: Window) -> Rows:
        """Transactions open past their timeout at ``w`` (the ``hanging_transactions`` view)."""
        return run(
            self.spark,
            f"SELECT * FROM ({self._view('hanging_transactions', w)}) WHERE {self._in_cluster()} "
            "ORDER BY open_ms DESC, transactional_id, cluster",
        )

    # ------------------------------------------------------------------ the whole cluster

    def stormiest_group(self, w: Window) -> str | None:
        """The group with the most rebalances in the day before ``w`` (ties: by id)."""
        groups = self.groups(w)
        best = sorted(
            (r for r in groups.dicts() if r["rebalances_24h"]),
            key=lambda r: (-int(r["rebalances_24h"]), str(r["group_id"])),
        )
        return str(best[0]["group_id"]) if best else None

    def ingest(self) -> Rows:
        """The ingest query's last micro-batch: when it finished and the newest record time."""
        audit = self._t("batch_audit")
        return run(
            self.spark,
            f"""SELECT query_name, max(batch_id) AS batch_id, max(finished_at) AS finished_at,
       max(event_time) AS event_time
FROM {audit}
GROUP BY query_name""",
        )


def columns_of(rows: Rows, names: Sequence[str]) -> list[tuple[Any, ...]]:
    """``rows`` reduced to ``names``, in that order."""
    index = [rows.columns.index(n) for n in names]
    return [tuple(r[i] for i in index) for r in rows.rows]
