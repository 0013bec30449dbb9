"""Alerts on Spark: load what the rules read, evaluate, MERGE into ``alerts``, notify.

Two ways in, one evaluation:

* :meth:`AlertsRunner.after_ingest_batch` -- a hook the ingest job can call at the end of its
  ``foreachBatch`` with its batch id: the keys to look at are the fold-state keys that batch
  wrote (``fold_state.updated_batch_id``);
* the alerts job (:func:`start`, ``jobs/alerts.py``): a streaming query over the change data feed
  of ``fold_state``; each micro-batch names the groups and transactional ids whose history moved
  and the ingest batches that moved them.

Per evaluation (:meth:`AlertsRunner.evaluate`); steps 2 and 3 are taken for each cluster of the
deployment apart (``[clusters.<name>]``): every table is read filtered to the cluster's rows, so
the same group id in two clusters is two subjects, and each cluster's alerts are its own.

1. **When**: with ``time_source = "event_time"`` the rules are evaluated as of the newest record
   the ingest query had read by the last ingest batch covered (``batch_audit.event_time``), so a
   replay of old logs raises the alerts of that time, and re-running an evaluation gives the
   same answer. The horizon (episodes over before it are not looked at again) is the previous
   ingest batch's event time, or ``lookback`` before ``as_of`` if that is earlier.
2. **Who**: the cluster's changed groups and transactional ids, the subjects of its open alerts
   (so they can resolve as time passes), groups with new ``partition_lag`` rows (a stalled
   consumer commits nothing), KIP-848 groups in Assigning/Reconciling, transactions still open
   (a hanging one writes nothing), and tables with quality results. The clusters are the
   configured ones and any other with open alerts (a cluster ``[clusters]`` no longer names:
   its alerts still resolve). The quality tables are the deployment's, not a cluster's: their
   alerts are the default cluster's (``[sources] cluster``), or the first configured cluster's
   when ``[clusters]`` does not name the default one.
3. **What**: their ``group_generations``, ``member_sessions``, ``partition_lag`` (the last
   ``intervals`` observations before the horizon and all after it), ``transactions``,
   ``groups_current`` and KIP-848 fold states, reaching back to the start of their open alerts;
   the ``stuck_partitions`` episodes detected by then and not over by the horizon.
4. **Write**: :func:`offsetscope.alerts.engine.evaluate` per cluster, then the clusters' rows
   combined (their alert ids differ) in one MERGE into ``alerts`` under Delta's idempotency
   marker (app id ``<alerts query>:alerts:merge``, version = the evaluating batch id): a
   replayed batch writes nothing twice. A MERGE per cluster would not do: the marker lets one
   commit per app id and version through, so the second cluster's would be dropped.
5. **Tell**: after the commit, the :class:`~.notify.Dispatcher` submits the events not yet in
   ``alert_notifications`` (naming the cluster when there are several); outcomes (delivered,
   failed, dropped, skipped) are MERGEd into it at
   the next evaluation and when the runner closes. Nothing here waits for a webhook.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.window import Window

from offsetscope import paths
from offsetscope.alerts import engine, rules
from offsetscope.alerts import tables as alert_tables
from offsetscope.alerts.model import (
    DATA_PARTITION,
    GROUP,
    PARTITION,
    TABLE,
    TOPIC,
    TRANSACTIONAL_ID,
    AlertRow,
    AlertStatus,
)
from offsetscope.alerts.notifiers import build_notifiers
from offsetscope.alerts.notify import Dispatcher, NotificationOutcome, Notifier
from offsetscope.alerts.scope import ChangedKeys
from offsetscope.clock import Clock, SystemClock
from offsetscope.config import (
    Config,
    clusters,
    default_cluster,
    duration_ms,
    for_cluster,
    is_own_group,
)
from offsetscope.history.groups import GroupState
from offsetscope.history.rows import (
    GenerationRow,
    PartitionLagRow,
    SessionRow,
    StuckPartitionRow,
    TransactionRow,
)
from offsetscope.pipelines import state as fold_state
from offsetscope.protocol.states import ConsumerGroupState
from offsetscope.quality import model as qmodel
from offsetscope.quality import tables as qtables
from offsetscope.spark import storage, writes
from offsetscope.spark import tables as catalogue

log = logging.getLogger("offsetscope.alerts")

_STUCK_STATES = (ConsumerGroupState.ASSIGNING.value, ConsumerGroupState.RECONCILING.value)
_READS = (
    "group_generations",
    "member_sessions",
    "partition_lag",
    "stuck_partitions",
    "transactions",
    "groups_current",
    "fold_state",
    "batch_audit",
)


def _in(column: str, values: Iterable[str]) -> Column:
    return F.col(column).isin(sorted(set(values)))


def _in_col(column: Column, values: Iterable[str]) -> Column:
    return column.isin(sorted(set(values)) or [""])


def _ts(ms: int) -> Column:
    return F.timestamp_millis(F.lit(ms))


@contextmanager
def _timed(timings: dict[str, float], phase: str) -> Iterator[None]:
    began = time.monotonic()
    try:
        yield
    finally:
        timings[phase] = timings.get(phase, 0.0) + time.monotonic() - began


def moved_keys(changes: DataFrame, states: DataFrame) -> DataFrame:
    """The ``(cluster, fold, key, updated_batch_id)`` rows of ``fold_state``'s change feed
    ``changes`` whose key moved: every state written, and a deleted one only when its key has no
    state left in ``states`` (a redecode dropped it). A compaction deletes superseded versions of
    keys that live on (lib/offsetscope/pipelines/state.py): those moved nothing."""
    key = [catalogue.CLUSTER, "fold", "key"]
    written = changes.where(F.col("_change_type").isin("insert", "update_postimage"))
    dropped = changes.where(F.col("_change_type") == F.lit("delete")).join(
        states.select(*key), key, "left_anti"
    )
    columns = (*key, "updated_batch_id")
    return written.select(*columns).unionByName(dropped.select(*columns)).distinct()


class AlertsRunner:
    """Evaluates the alert rules on Spark and keeps the notifiers between evaluations.

    Args:
        cfg: the configuration (``[alerts]``, table names, the ingest query's name).
        query_name: the alerts query (idempotency app id); default ``[alerts] query_name``.
        clock: wall clock (``time_source = "clock"``, notification times).
        notifiers: default: the ones ``[alerts.notify]`` configures, secrets resolved with
            :func:`offsetscope.secrets.references.resolver_for`.
    """

    _spark: SparkSession  # the session of the batch being evaluated

    def __init__(
        self,
        cfg: Config,
        *,
        query_name: str | None = None,
        clock: Clock | None = None,
        notifiers: Sequence[Notifier] | None = None,
    ) -> None:
        self.cfg = cfg
        self.settings = cfg.alerts
        self.query_name = query_name or cfg.alerts.query_name
        self.clock: Clock = clock or SystemClock()
        self._notifiers = notifiers
        self._dispatcher: Dispatcher | None = None
        self._ready = False
        self._open_txns: dict[str, set[str]] = {}  # per cluster, once read
        self._default = default_cluster(cfg)
        self._clusters = frozenset(clusters(cfg))
        self._cluster_cfgs = {name: for_cluster(cfg, name) for name in self._clusters}
        # The quality tables are the deployment's, not a cluster's: their alerts go with the
        # default cluster, whose ids hash no cluster (see Finding.in_cluster).
        self._quality_cluster = (
            self._default if self._default in self._clusters else min(self._clusters)
        )
        self.evaluations: list[engine.Evaluation] = []
        self.timings: list[dict[str, float]] = []  # seconds per phase, per evaluation
        self._sequence = writes.BatchSequence()  # which alerts batches cannot be replays

    # ------------------------------------------------------------------ setup

    def _setup(self, spark: SparkSession) -> None:
        if self._ready:
            return
        catalogue.ensure_tables(spark, self.cfg, _READS)
        qtables.ensure(spark, self.cfg, (qtables.QUALITY_RESULTS,))
        qtables.ensure(spark, self.cfg, (alert_tables.ALERTS, alert_tables.ALERT_NOTIFICATIONS))
        if self._notifiers is None:
            from offsetscope.secrets.references import resolver_for

            resolver = resolver_for(spark)
            self._notifiers = build_notifiers(self.settings, resolver.resolve, clock=self.clock)
        self._dispatcher = Dispatcher(
            self._notifiers,
            self.settings.notify,
            clock=self.clock,
            name_clusters=len(self._clusters) > 1,
        )
        self._ready = True

    def _table(self, logical: str) -> DataFrame:
        return self._spark.table(catalogue.table_name(self.cfg, logical))

    def _rows_of(self, logical: str, cluster: str) -> DataFrame:
        """The rows of one cluster in a gold table of the catalogue (a log of versions: each
        key's latest, :func:`offsetscope.spark.tables.current_rows`)."""
        rows = catalogue.current_rows(self._spark, self.cfg, logical)
        return rows.where(F.col(catalogue.CLUSTER) == F.lit(cluster))

    def _alerts(self) -> DataFrame:
        return self._spark.table(qtables.qualified_name(self.cfg, alert_tables.ALERTS))

    def _cluster_col(self) -> Column:
        # A row without a cluster was written before the column was filled: the default's.
        return F.coalesce(F.col(catalogue.CLUSTER), F.lit(self._default))

    def _evaluated_clusters(self, changed: ChangedKeys) -> list[str]:
        """The clusters an evaluation looks at, in order: every configured one, any other whose
        keys changed, and any other with open alerts (so that they can resolve)."""
        open_in = (
            self._alerts()
            .where(F.col("status") == F.lit(AlertStatus.OPEN.value))
            .select(self._cluster_col())
            .distinct()
            .collect()
        )
        return sorted(self._clusters | changed.clusters | {r[0] for r in open_in})

    # ------------------------------------------------------------------ entry points

    def after_ingest_batch(
        self, spark: SparkSession, ingest_batch_id: int
    ) -> engine.Evaluation | None:
        """Evaluate for the keys one ingest batch moved (call after its fold state is saved)."""
        self._spark = spark
        self._setup(spark)
        rows = (
            self._table("fold_state")
            .where(F.col("updated_batch_id") == F.lit(ingest_batch_id))
            .select(catalogue.CLUSTER, "fold", "key", "updated_batch_id")
            .collect()
        )
        changed = ChangedKeys.from_fold_rows((r[0], r[1], r[2], r[3]) for r in rows)
        changed = dataclasses.replace(changed, ingest_batches=frozenset({ingest_batch_id}))
        return self.evaluate(spark, ingest_batch_id, changed)

    def process_changes(self, batch_df: DataFrame, batch_id: int) -> None:
        """``foreachBatch`` over the change data feed of ``fold_state``."""
        spark = batch_df.sparkSession
        self._spark = spark
        fresh = self._sequence.begin(batch_id)
        rows = moved_keys(batch_df, self._table("fold_state")).collect()
        if rows:
            changed = ChangedKeys.from_fold_rows((r[0], r[1], r[2], r[3]) for r in rows)
            self.evaluate(spark, batch_id, changed, fresh=fresh)
        self._sequence.done(batch_id)

    # ------------------------------------------------------------------ evaluation

    def _event_times(self, changed: ChangedKeys) -> tuple[int | None, int | None]:
        """(as_of, previous as_of) from the ingest query's audit rows."""
        if not changed.ingest_batches:
            return None, None
        last, first = max(changed.ingest_batches), min(changed.ingest_batches)
        audit = self._table("batch_audit").where(
            F.col("query_name") == F.lit(self.cfg.pipeline.query_name)
        )
        row = audit.agg(
            F.max(F.when(F.col("batch_id") <= last, F.unix_millis("event_time"))).alias("as_of"),
            F.max(F.when(F.col("batch_id") < first, F.unix_millis("event_time"))).alias("prev"),
        ).collect()[0]
        return row["as_of"], row["prev"]

    def evaluate(
        self,
        spark: SparkSession,
        batch_id: int,
        changed: ChangedKeys,
        *,
        as_of: int | None = None,
        fresh: bool = False,
    ) -> engine.Evaluation | None:
        """One evaluation (see the module docstring); returns it, or None when no time is known.

        Args:
            spark: the session.
            batch_id: the evaluating batch (the idempotency version of the MERGE).
            changed: the subjects whose history moved, and the ingest batches that moved them.
            as_of: evaluate as of this time instead (tests, backfills).
            fresh: ``batch_id`` cannot be a replay: its MERGE skips the replay check
                (:mod:`offsetscope.spark.writes`).
        """
        self._spark = spark
        self._setup(spark)
        lookback = duration_ms(self.settings.lookback)
        previous: int | None = None
        if as_of is None:
            if self.settings.time_source == "clock":
                as_of = self.clock.now_ms()
                previous = as_of - lookback
            else:
                as_of, previous = self._event_times(changed)
        if as_of is None:
            if changed.ingest_batches:
                # fold_state moved but no audit row of that ingest query: the alerts job names
                # another ingest query than the one that wrote the tables.
                log.warning(
                    "alerts batch %d: fold_state changed in ingest batches %d..%d, but "
                    "batch_audit has no row of the ingest query %r ([pipeline] query_name); "
                    "the alerts job must be configured with the ingest job's query name",
                    batch_id,
                    min(changed.ingest_batches),
                    max(changed.ingest_batches),
                    self.cfg.pipeline.query_name,
                )
            else:
                log.info(
                    "alerts batch %d: no ingested record time yet; nothing to evaluate", batch_id
                )
            return None
        since = min(as_of - lookback, previous) if previous is not None else None

        reach = None if since is None else since - rules.max_window_ms(self.settings)
        timings: dict[str, float] = {}
        parts: list[engine.Evaluation] = []
        for cluster in self._evaluated_clusters(changed):
            with _timed(timings, "scope"):
                groups, txns = self._scope(cluster, changed, as_of, since)
            with _timed(timings, "stored alerts"):
                stored = self._stored(cluster, groups | txns, reach)
            with _timed(timings, "inputs"):
                inputs = self._inputs(cluster, groups, txns, stored, as_of, since)
            with _timed(timings, "rules"):
                findings = rules.find_all(inputs, self.settings)
                parts.append(
                    engine.reconcile(findings, stored, inputs, self.settings, batch_id=batch_id)
                )
        # One MERGE for every cluster: the idempotency mark admits one commit per batch.
        evaluation = engine.combine(parts, as_of)
        with _timed(timings, "merge"):
            qtables.merge_rows(
                spark,
                self.cfg,
                alert_tables.ALERTS,
                evaluation.changed,
                app_id=f"{self.query_name}:alerts:merge",
                batch_id=batch_id,
                fresh=fresh,
            )
        with _timed(timings, "notify"):
            self._notify(evaluation)
        self.evaluations.append(evaluation)
        self.timings.append(timings)
        log.info(
            "alerts batch %d as of %d: %d alerts seen, %d written, %d open (%s)",
            batch_id,
            as_of,
            len(evaluation.rows),
            len(evaluation.changed),
            len(evaluation.open),
            ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()),
        )
        return evaluation

    def _stored(self, cluster: str, subjects: set[str], reach: int | None) -> dict[str, AlertRow]:
        """Every open alert of ``cluster``, and its alerts of ``subjects`` not resolved before
        ``reach``.

        That covers every stored row an evaluation can touch: findings are episodes not over
        by the horizon, and an episode whose start moved keeps a recent stored identity.
        """
        recent = _in("subject", subjects or {""})
        if reach is not None:
            recent = recent & (F.col("resolved_at").isNull() | (F.col("resolved_at") >= _ts(reach)))
        df = self._alerts().where(
            (self._cluster_col() == F.lit(cluster))
            & ((F.col("status") == F.lit(AlertStatus.OPEN.value)) | recent)
        )
        return {r.alert_id: r for r in qtables.rows_of(df, AlertRow)}

    # ------------------------------------------------------------------ inputs

    def _scope(
        self, cluster: str, changed: ChangedKeys, as_of: int, since: int | None
    ) -> tuple[set[str], set[str]]:
        """``cluster``'s groups and transactional ids to evaluate, besides the subjects of its
        open alerts."""
        groups = changed.groups_of(cluster)
        txns = changed.transactional_ids_of(cluster)
        s = self.settings
        lag_rules = (s.lag_stall, s.data_loss, s.lag_threshold)
        if any(r.enabled or r.groups for r in lag_rules) or s.lag_threshold.topics:
            # A stalled consumer commits nothing; its partitions still get lag observations.
            lag = self._rows_of("partition_lag", cluster).where(F.col("as_of") <= _ts(as_of))
            if since is not None:
                lag = lag.where(
                    (F.col("as_of_date") >= F.to_date(_ts(since))) & (F.col("as_of") > _ts(since))
                )
            groups.update(r[0] for r in lag.select("group_id").distinct().collect())
        if s.hanging_transaction.enabled:
            # A hanging transaction writes nothing; the open ones are checked as time passes.
            if cluster not in self._open_txns:
                ongoing = self._rows_of("transactions", cluster).where(
                    F.col("completed_at").isNull()
                )
                self._open_txns[cluster] = {
                    r[0] for r in ongoing.select("transactional_id").distinct().collect()
                }
            txns.update(self._open_txns[cluster])
        return self._users(cluster, groups), txns

    def _users(self, cluster: str, groups: Iterable[str]) -> set[str]:
        """``cluster``'s ``groups`` without offsetscope's own (``[alerts] include_own_groups``;
        each cluster's source names its own groups)."""
        if self.settings.include_own_groups:
            return set(groups)
        cfg = self._cluster_cfgs.get(cluster, self.cfg)
        return {g for g in groups if not is_own_group(cfg, g)}

    def _inputs(
        self,
        cluster: str,
        groups: set[str],
        txns: set[str],
        stored: Mapping[str, AlertRow],
        as_of: int,
        since: int | None,
    ) -> rules.RuleInputs:
        tables: set[str] = set()
        partitions: set[str] = set()
        for row in stored.values():
            if row.status != AlertStatus.OPEN.value:
                continue
            if row.subject_kind in (GROUP, PARTITION, TOPIC):
                groups.add(row.subject)
            elif row.subject_kind == DATA_PARTITION:
                partitions.add(row.subject)
            elif row.subject_kind == TRANSACTIONAL_ID:
                txns.add(row.subject)
            elif row.subject_kind == TABLE:
                tables.add(row.subject)
        # groups_current: the state of the groups in scope, and every KIP-848 group that is
        # Assigning/Reconciling (a group that does not converge writes nothing).
        stuck = F.lit(self.settings.rebalance_stuck.enabled) & (
            _in("kind", ("kip848", "streams")) & _in("state", _STUCK_STATES)
        )
        current: list[rules.CurrentGroup] = []
        if groups or self.settings.rebalance_stuck.enabled:
            cur = self._rows_of("groups_current", cluster).where(
                _in("group_id", groups or {""}) | stuck
            )
            current = [
                rules.CurrentGroup(r[0], r[1], r[2], r[3], r[4])
                for r in qtables.millis(
                    cur.select("group_id", "group_life", "kind", "state", "state_since")
                ).collect()
            ]
        users = self._users(cluster, [c.group_id for c in current])
        current = [c for c in current if c.group_id in users]
        groups.update(c.group_id for c in current)
        # Reach back to the start of every open alert in scope, and one window before that, so
        # an episode in progress is found with the start it was first found with.
        starts = [r.episode_start for r in stored.values() if r.status == AlertStatus.OPEN.value]
        reach = since if since is None else min([since, *starts])
        rows_since = None if reach is None else reach - rules.max_window_ms(self.settings)

        generations: list[GenerationRow] = []
        sessions: list[SessionRow] = []
        lag: list[PartitionLagRow] = []
        states: list[GroupState] = []
        if groups:
            gen = self._rows_of("group_generations", cluster).where(_in("group_id", groups))
            ses = self._rows_of("member_sessions", cluster).where(
                _in("group_id", groups) & (F.col("joined_at") <= _ts(as_of))
            )
            if rows_since is not None:
                at = F.coalesce(F.col("join_completed_at"), F.col("stored_at"))
                gen = gen.where(at > _ts(rows_since))
                ses = ses.where(F.col("left_at").isNull() | (F.col("left_at") > _ts(rows_since)))
            generations = qtables.rows_of(gen, GenerationRow)
            sessions = qtables.rows_of(ses, SessionRow)
            lag = qtables.rows_of(
                self._lag_rows(cluster, groups, as_of, rows_since), PartitionLagRow
            )
            candidates = [
                c.group_id
                for c in current
                if c.kind in ("kip848", "streams") and c.state in _STUCK_STATES
            ]
            if candidates and self.settings.rebalance_stuck.enabled:
                loaded = fold_state.load(
                    self._spark,
                    self.cfg,
                    {fold_state.GROUP: candidates},
                    cluster=cluster,
                )
                states = [GroupState.from_json(row.state) for row in loaded.values()]

        transactions: list[TransactionRow] = []
        if txns:
            tx = self._rows_of("transactions", cluster).where(_in("transactional_id", txns))
            if rows_since is not None:
                tx = tx.where(
                    (F.col("started_at") > _ts(rows_since))
                    | F.col("completed_at").isNull()
                    | (F.col("completed_at") > _ts(rows_since))
                )
            transactions = qtables.rows_of(tx, TransactionRow)
            open_now = {t.transactional_id for t in transactions if t.completed_at is None}
            self._open_txns[cluster] = (self._open_txns.get(cluster, set()) - txns) | open_now

        quality: list[qmodel.QualityResultRow] = []
        if self.settings.quality.enabled and cluster == self._quality_cluster:
            quality = self._quality_rows(tables, stored)
        tables.update(r.table_name for r in quality)
        stuck_rows = self._stuck_rows(cluster, partitions, as_of, since)
        partitions.update(f"{r.topic}:{r.partition}" for r in stuck_rows)
        return rules.RuleInputs(
            as_of=as_of,
            since=since,
            groups=frozenset(groups),
            transactional_ids=frozenset(txns),
            tables=frozenset(tables),
            generations=tuple(generations),
            sessions=tuple(sessions),
            group_states=tuple(states),
            current=tuple(current),
            lag=tuple(lag),
            transactions=tuple(transactions),
            quality=tuple(quality),
            data_partitions=frozenset(partitions),
            stuck=tuple(stuck_rows),
            cluster=cluster,
            clusters=self._clusters,
            default_cluster=self._default,
        )

    def _stuck_rows(
        self, cluster: str, partitions: set[str], as_of: int, since: int | None
    ) -> list[StuckPartitionRow]:
        """``stuck_partitions`` episodes detected by ``as_of`` and not over by ``since``, and
        every episode of the partitions with open alerts (a stuck partition writes a row at
        each sample, so its newest row is always there)."""
        if not (self.settings.stuck_lso.enabled or partitions):
            return []
        df = self._rows_of("stuck_partitions", cluster).where(F.col("detected_at") <= _ts(as_of))
        live = F.col("resolved_at").isNull() | (F.col("resolved_at") > _ts(as_of))
        if since is not None:
            live = live | (F.col("resolved_at") > _ts(since))
        named = F.concat_ws(":", F.col("topic"), F.col("partition").cast("string"))
        return qtables.rows_of(df.where(live | _in_col(named, partitions)), StuckPartitionRow)

    def _lag_rows(
        self, cluster: str, groups: set[str], as_of: int, rows_since: int | None
    ) -> DataFrame:
        """The lag observations of ``cluster``'s ``groups``: all after ``rows_since``, and the
        last ``intervals`` before it (Burrow's window must be full at the horizon)."""
        lag = self._rows_of("partition_lag", cluster).where(
            _in("group_id", groups) & (F.col("as_of") <= _ts(as_of))
        )
        if rows_since is None:
            return lag
        reach = rows_since - duration_ms(self.settings.lookback)
        lag = lag.where(F.col("as_of_date") >= F.to_date(_ts(reach)))
        intervals = max(
            [self.settings.lag_stall.intervals]
            + [o.intervals for o in self.settings.lag_stall.groups.values() if o.intervals]
        )
        newest_first = Window.partitionBy("group_id", "topic", "partition").orderBy(
            F.col("as_of").desc()
        )
        before = (
            lag.where(F.col("as_of") <= _ts(rows_since))
            .withColumn("_n", F.row_number().over(newest_first))
            .where(F.col("_n") <= intervals)
            .drop("_n")
        )
        return lag.where(F.col("as_of") > _ts(rows_since)).unionByName(before)

    def _quality_rows(
        self, tables: set[str], stored: Mapping[str, AlertRow]
    ) -> list[qmodel.QualityResultRow]:
        # Quality results are stamped with the wall clock of their validation, not event time.
        starts = [
            r.episode_start
            for r in stored.values()
            if r.subject_kind == TABLE and r.status == AlertStatus.OPEN.value
        ]
        since = min([self.clock.now_ms() - duration_ms(self.settings.lookback), *starts])
        df = self._spark.table(qtables.qualified_name(self.cfg, qtables.QUALITY_RESULTS))
        df = df.where((F.col("validated_at") > _ts(since)) | _in("table_name", tables or {""}))
        return qtables.rows_of(df, qmodel.QualityResultRow)

    # ------------------------------------------------------------------ notifications

    def _notify(self, evaluation: engine.Evaluation) -> None:
        assert self._dispatcher is not None
        rows = [r for r in evaluation.rows if self._dispatcher.unsent(r)]
        recorded: dict[tuple[str, str, str], str] = {}
        if rows:
            table = qtables.qualified_name(self.cfg, alert_tables.ALERT_NOTIFICATIONS)
            df = self._spark.table(table).where(_in("alert_id", [r.alert_id for r in rows]))
            for r in df.select("alert_id", "event", "notifier", "status").collect():
                recorded[(r[0], r[1], r[2])] = r[3]
        self._dispatcher.dispatch(rows, recorded, evaluation.as_of)
        self._record(self._dispatcher.drain())

    def _record(self, outcomes: Sequence[NotificationOutcome]) -> None:
        # Keyed MERGE without an idempotency marker: outcomes arrive whenever the notifier
        # thread finishes, not per batch, and the key makes a repeated outcome a no-op.
        latest = {(o.alert_id, o.event, o.notifier): o for o in outcomes}
        qtables.merge_rows(
            self._spark,
            self.cfg,
            alert_tables.ALERT_NOTIFICATIONS,
            list(latest.values()),
            app_id=None,
            batch_id=0,
        )

    def close(self, spark: SparkSession, timeout_s: float = 30.0) -> list[NotificationOutcome]:
        """Finish queued notifications (up to ``timeout_s`` per notifier) and record them."""
        if self._dispatcher is None:
            return []
        self._spark = spark
        outcomes = self._dispatcher.close(timeout_s)
        self._record(outcomes)
        return outcomes


def evaluate(
    spark: SparkSession,
    cfg: Config,
    batch_id: int,
    changed_keys: ChangedKeys,
    *,
    runner: AlertsRunner | None = None,
) -> list[AlertRow]:
    """Evaluate the rules for ``changed_keys``, MERGE into ``alerts``; the alerts as they stand.

    A one-call form of :meth:`AlertsRunner.evaluate` for callers that keep no runner (pass one
    to keep notifiers and their queues alive between batches).
    """
    own = runner is None
    runner = runner or AlertsRunner(cfg)
    try:
        result = runner.evaluate(spark, batch_id, changed_keys)
    finally:
        if own:
            runner.close(spark)
    return list(result.rows) if result is not None else []


# ----------------------------------------------------------------------------- the query


def checkpoint_path(cfg: Config, query_name: str) -> str:
    """``<storage.checkpoint_dir>/<query name>``."""
    return str(paths.resolve(cfg.storage.checkpoint_dir).join(query_name))


def start(
    spark: SparkSession,
    cfg: Config,
    *,
    runner: AlertsRunner | None = None,
    checkpoint: str | None = None,
) -> tuple[StreamingQuery, AlertsRunner]:
    """Start the alerts query: ``foreachBatch`` over the change data feed of ``fold_state``.

    Args:
        spark: the session.
        cfg: the configuration (``[alerts]`` names the query and its trigger).
        runner: the batch logic (default: a new :class:`AlertsRunner`).
        checkpoint: overrides ``<storage.checkpoint_dir>/<alerts query name>``.
    """
    runner = runner or AlertsRunner(cfg)
    catalogue.ensure_tables(spark, cfg, _READS)
    changes = (
        spark.readStream.format("delta")
        .option("readChangeFeed", "true")
        .table(catalogue.table_name(cfg, "fold_state"))
    )
    writer = (
        changes.writeStream.foreachBatch(runner.process_changes)
        .queryName(runner.query_name)
        .option(
            "checkpointLocation",
            checkpoint or storage.qualified(spark, checkpoint_path(cfg, runner.query_name)),
        )
    )
    if cfg.alerts.trigger == "processing_time":
        writer = writer.trigger(processingTime=cfg.alerts.processing_time.spark_interval)
    else:
        writer = writer.trigger(availableNow=True)
    return writer.start(), runner


def run(spark: SparkSession, cfg: Config, *, checkpoint: str | None = None) -> AlertsRunner:
    """Run the alerts query until it has read everything (``available_now``) or is stopped;
    then flush the notifications.

    Raises:
        pyspark.errors.StreamingQueryException: a batch failed.
    """
    query, runner = start(spark, cfg, checkpoint=checkpoint)
    try:
        query.awaitTermination()
    finally:
        query.stop()
        runner.close(spark)
    error = query.exception()
    if error is not None:
        raise error
    return runner
