"""Which process runs the ingest query, and whether it is running now: the ``lease`` fold state.

Every micro-batch of the ingest query saves, with its fold states, a ``lease`` row keyed by the
query's name: the host and process id that ran it, the batch id, when it ended and the trigger's
interval. When the query stops, :func:`release` marks the row stopped. A batch job that rewrites
the tables the query writes (``offsetscope redecode``) reads it first (:func:`holder`): a query
that is not marked stopped and whose last batch ended within :func:`liveness_ms` is running,
wherever it runs; one whose last batch is older ended without saying so (its process died) and
holds nothing.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass

from pyspark.sql import SparkSession

from offsetscope.config import Config
from offsetscope.pipelines import state as st

# A query that ran no batch for this long after its interval is not running any more.
MIN_LIVENESS_MS = 5 * 60_000


@dataclass(frozen=True, slots=True)
class Lease:
    """The last word of an ingest query about itself."""

    query_name: str
    host: str
    pid: int
    batch_id: int
    at: int  # when its last batch ended (or it stopped), epoch ms
    interval_ms: int
    stopped: bool

    def to_json(self) -> str:
        return json.dumps(
            {
                "host": self.host,
                "pid": self.pid,
                "batch_id": self.batch_id,
                "at": self.at,
                "interval_ms": self.interval_ms,
                "stopped": self.stopped,
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, query_name: str, text: str) -> Lease:
        d = json.loads(text)
        return cls(
            query_name,
            d["host"],
            int(d["pid"]),
            int(d["batch_id"]),
            int(d["at"]),
            int(d["interval_ms"]),
            bool(d["stopped"]),
        )

    def describe(self) -> str:
        return (
            f"ingest query {self.query_name} on {self.host} (pid {self.pid}), last batch "
            f"{self.batch_id} ended at {self.at} ms"
        )


def liveness_ms(interval_ms: int) -> int:
    """How long after its last batch a query still counts as running: three intervals, and at
    least :data:`MIN_LIVENESS_MS` (a batch can take minutes on a busy cluster)."""
    return max(3 * interval_ms, MIN_LIVENESS_MS)


def lease_row(cfg: Config, query_name: str, batch_id: int, at: int) -> st.StateRow:
    """The ``lease`` state a batch saves."""
    lease = Lease(
        query_name,
        socket.gethostname(),
        os.getpid(),
        batch_id,
        at,
        cfg.pipeline.processing_time.ms,
        False,
    )
    return st.StateRow(st.LEASE, query_name, lease.to_json(), None)


def release(spark: SparkSession, cfg: Config, query_name: str, now_ms: int) -> None:
    """Mark the query stopped (after it ended). Written under an idempotency id of its own, so
    it never takes the version a batch of the query would write."""
    current = holder(spark, cfg, query_name)
    if current is None:
        return
    row = Lease(
        query_name,
        socket.gethostname(),
        os.getpid(),
        current.batch_id,
        now_ms,
        cfg.pipeline.processing_time.ms,
        True,
    )
    st.save(
        spark,
        cfg,
        [st.StateRow(st.LEASE, query_name, row.to_json(), None)],
        query_name=f"{query_name}:release",
        batch_id=now_ms,
        now_ms=now_ms,
    )


def holder(spark: SparkSession, cfg: Config, query_name: str) -> Lease | None:
    """The query's lease as stored (None: it never ran a batch)."""
    rows = st.load(spark, cfg, {st.LEASE: [query_name]})
    row = rows.get((st.LEASE, query_name))
    return None if row is None else Lease.from_json(query_name, row.state)


def running(lease: Lease | None, now_ms: int) -> bool:
    """Whether a lease says its query is running at ``now_ms``."""
    if lease is None or lease.stopped:
        return False
    return now_ms - lease.at < liveness_ms(lease.interval_ms)
