"""``offsetscope metrics serve``: Prometheus / OpenMetrics gauges from the gold tables.

A scrape must not wait for Spark, so the tables are read every ``interval`` (one set of queries,
:mod:`offsetscope.ops.queries`) and each scrape returns the last snapshot
(:class:`TablesCollector`); ``offsetscope_exporter_last_refresh_timestamp_seconds`` says how old
it is. Names follow kminion's (``kminion_kafka_consumer_group_*``, with its ``group_id``,
``topic_name`` and ``partition_id`` labels) under the ``offsetscope_`` prefix, and add what
kminion lacks with kafka-lag-exporter's ``_lag_seconds`` suffix; ``docs/operations.md`` maps
every one to kminion's, Burrow's and kafka-lag-exporter's. offsetscope's own consumer groups are
left out unless ``include_own``.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from offsetscope import config
from offsetscope.ops.queries import Queries, Window

PREFIX = "offsetscope_kafka_consumer_group"
DAY_MS = 24 * 3600 * 1000


@dataclass(frozen=True, slots=True)
class MetricName:
    """One exported metric: its name, what it means, and its labels."""

    name: str
    help: str
    labels: tuple[str, ...]


# Group ids and transactional ids are unique within a cluster only: every group's and
# transaction's metric names its cluster first (Burrow's label is also "cluster").
GROUP = ("cluster", "group_id")
PARTITION = ("cluster", "group_id", "topic_name", "partition_id")
METRICS = {
    m.name: m
    for m in (
        MetricName(f"{PREFIX}_info", "1 if the group is Stable, else 0; labels carry its state",
                   ("cluster", "group_id", "state", "protocol", "protocol_type", "kind")),
        MetricName(f"{PREFIX}_members", "members of the group now", GROUP),
        MetricName(f"{PREFIX}_generation", "current generation (classic) or group epoch", GROUP),
        MetricName(f"{PREFIX}_rebalances", "rebalances in the window before the refresh",
                   ("cluster", "group_id", "window")),
        MetricName(f"{PREFIX}_topic_partition_lag", "lag in records (end offset - committed)",
                   PARTITION),
        MetricName(f"{PREFIX}_topic_partition_lag_seconds",
                   "how long ago the committed offset was the end of the log", PARTITION),
        MetricName(f"{PREFIX}_topic_partition_offset", "committed offset", PARTITION),
        MetricName(f"{PREFIX}_topic_lag", "lag in records summed over the topic's partitions",
                   ("cluster", "group_id", "topic_name")),
        MetricName(f"{PREFIX}_lag_seconds_max", "largest lag in seconds of any partition", GROUP),
        MetricName("offsetscope_kafka_transactions_hanging",
                   "transactions open longer than their timeout", ("cluster",)),
        MetricName("offsetscope_kafka_transaction_open_seconds",
                   "how long each hanging transaction has been open",
                   ("cluster", "transactional_id")),
        MetricName("offsetscope_ingest_last_batch_age_seconds",
                   "seconds since the ingest query's last micro-batch finished", ("query",)),
        MetricName("offsetscope_ingest_event_delay_seconds",
                   "seconds between now and the newest record the ingest query has read",
                   ("query",)),
        MetricName("offsetscope_exporter_last_refresh_timestamp_seconds",
                   "when the tables were last read", ()),
        MetricName("offsetscope_exporter_refresh_duration_seconds",
                   "how long the last read of the tables took", ()),
    )
}  # fmt: skip


def _gauge(name: str) -> GaugeMetricFamily:
    m = METRICS[name]
    return GaugeMetricFamily(m.name, m.help, labels=list(m.labels))


def snapshot(queries: Queries, now_ms: int, refresh_seconds: float = 0.0) -> list[Metric]:
    """Every metric family, read from the tables as of ``now_ms``."""
    window = Window(now_ms - DAY_MS, now_ms)
    families = {name: _gauge(name) for name in METRICS}
    for g in queries.groups(window).dicts():
        gid = [str(g["cluster"]), str(g["group_id"])]
        state = str(g["state"])
        families[f"{PREFIX}_info"].add_metric(
            [*gid, state, str(g["protocol"] or ""), str(g["protocol_type"] or ""), str(g["kind"])],
            1.0 if state == "Stable" else 0.0,
        )
        families[f"{PREFIX}_members"].add_metric(gid, float(g["members"] or 0))
        if g["generation"] is not None:
            families[f"{PREFIX}_generation"].add_metric(gid, float(g["generation"]))
        families[f"{PREFIX}_rebalances"].add_metric([*gid, "1h"], float(g["rebalances_1h"]))
        families[f"{PREFIX}_rebalances"].add_metric([*gid, "24h"], float(g["rebalances_24h"]))
        if g["max_lag_seconds"] is not None:
            families[f"{PREFIX}_lag_seconds_max"].add_metric(gid, float(g["max_lag_seconds"]))
    topics: dict[tuple[str, str, str], float] = {}
    for r in queries.lag(None, window).dicts():
        labels = [str(r["cluster"]), str(r["group_id"]), str(r["topic"]), str(r["partition"])]
        if r["lag_records"] is not None:
            families[f"{PREFIX}_topic_partition_lag"].add_metric(labels, float(r["lag_records"]))
            key = (labels[0], labels[1], labels[2])
            topics[key] = topics.get(key, 0.0) + float(r["lag_records"])
        if r["lag_seconds"] is not None:
            families[f"{PREFIX}_topic_partition_lag_seconds"].add_metric(
                labels, float(r["lag_seconds"])
            )
        families[f"{PREFIX}_topic_partition_offset"].add_metric(
            labels, float(r["committed_offset"])
        )
    for (cluster_name, group_id, topic), lag in sorted(topics.items()):
        families[f"{PREFIX}_topic_lag"].add_metric([cluster_name, group_id, topic], lag)
    hanging = queries.hanging(window).dicts()
    # Every cluster of the deployment has a count, 0 included (a series that disappears at 0
    # is not an alert that resolves).
    chosen = config.clusters(queries.cfg) if queries.cluster is None else [queries.cluster]
    per_cluster = dict.fromkeys(chosen, 0)
    for t in hanging:
        per_cluster[str(t["cluster"])] = per_cluster.get(str(t["cluster"]), 0) + 1
        families["offsetscope_kafka_transaction_open_seconds"].add_metric(
            [str(t["cluster"]), str(t["transactional_id"])], float(t["open_ms"]) / 1000.0
        )
    for cluster_name, n in sorted(per_cluster.items()):
        families["offsetscope_kafka_transactions_hanging"].add_metric([cluster_name], float(n))
    for q in queries.ingest().dicts():
        if q["finished_at"] is not None:
            families["offsetscope_ingest_last_batch_age_seconds"].add_metric(
                [str(q["query_name"])], max(0.0, now_ms / 1000.0 - _s(q["finished_at"]))
            )
        if q["event_time"] is not None:
            families["offsetscope_ingest_event_delay_seconds"].add_metric(
                [str(q["query_name"])], max(0.0, now_ms / 1000.0 - _s(q["event_time"]))
            )
    families["offsetscope_exporter_last_refresh_timestamp_seconds"].add_metric([], now_ms / 1000)
    families["offsetscope_exporter_refresh_duration_seconds"].add_metric([], refresh_seconds)
    return list(families.values())


def _s(value: dt.datetime) -> float:
    return value.timestamp()


class TablesCollector(Collector):
    """Serves the last snapshot; :meth:`refresh` reads the tables again."""

    def __init__(self, queries: Queries, clock: Callable[[], float] = time.time) -> None:
        self.queries = queries
        self.clock = clock
        self._families: list[Metric] = []
        self._lock = threading.Lock()

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            return list(self._families)

    def refresh(self) -> float:
        """Read the tables; returns the seconds it took."""
        began = time.monotonic()
        now_ms = int(self.clock() * 1000)
        families = snapshot(self.queries, now_ms)
        took = time.monotonic() - began
        # The duration is known only once the read is done.
        for family in families:
            if family.name == "offsetscope_exporter_refresh_duration_seconds":
                family.samples[0] = family.samples[0]._replace(value=took)
        with self._lock:
            self._families = families
        return took


def serve(
    queries: Queries,
    *,
    host: str,
    port: int,
    interval_s: float,
    stop: threading.Event,
    say: Callable[[str], None] = print,
) -> None:
    """Serve ``/metrics`` on ``host:port`` until ``stop`` is set, reading the tables every
    ``interval_s`` seconds (the first read happens before the port opens, so no scrape ever
    sees an empty exporter)."""
    collector = TablesCollector(queries)
    took = collector.refresh()
    registry = CollectorRegistry(auto_describe=True)
    registry.register(collector)
    server, thread = start_http_server(port, addr=host, registry=registry)
    say(
        f"metrics: serving http://{host}:{server.server_port}/metrics (tables read in {took:.1f} s)"
    )
    try:
        while not stop.wait(interval_s):
            collector.refresh()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10.0)
