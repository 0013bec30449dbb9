"""How far behind the ingest query is: its backlog after each micro-batch, and when it will have
caught up.

The backlog is read from the source, as Spark's query progress reports it once a micro-batch is
committed: ``sources[0].endOffset`` is where the batch ended, per partition; the latest offsets
come from the same progress for Spark's Kafka source (``latestOffset``: the partitions' ends
when the batch was planned) and, for the segment source -- whose ``latestOffset`` is capped by
its own admission control -- from the log directory itself (the segments' end,
:func:`offsetscope.spark.sources.segment_log_ends`). Records behind = the sum over partitions of
latest - end.

The time to catch up is an estimate: the backlog over the rate at which it shrank between the
last two batches (arrivals included), or, for the first batch, over the batch's own processing
rate. A backlog that does not shrink has no estimate ("not catching up").

:class:`ProgressPrinter` listens to the query's progress events and prints one line per
micro-batch (:meth:`~offsetscope.pipelines.batch.BatchReport.line` with its backlog);
:meth:`ProgressPrinter.flush` prints, from the query's recent progress, any line whose event has
not arrived when the query ends.
"""

from __future__ import annotations

import ast
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.streaming.listener import StreamingQueryListener

from offsetscope.pipelines.batch import BatchReport


@dataclass(frozen=True, slots=True)
class Backlog:
    """Records behind the latest offsets, in how many partitions, and the catch-up estimate."""

    records: int
    partitions: int
    catch_up_s: float | None

    def text(self) -> str:
        if self.records == 0:
            return "caught up"
        eta = (
            "not catching up"
            if self.catch_up_s is None
            else f"caught up in ~{_duration(self.catch_up_s)}"
        )
        return f"backlog {self.records:,} records in {self.partitions} partitions, {eta}"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def parse_offsets(offsets: str | Mapping[str, Any] | None) -> dict[str, int]:
    """A source offset as Spark reports it -> ``{"<topic>-<partition>": offset}``.

    Spark's Kafka source: ``{"topic": {"0": 12, ...}, ...}``; the segment source:
    ``{"topic-0": 12, ...}``. The listener's events carry it as JSON text; the progress that
    ``StreamingQuery.recentProgress`` rebuilds from JSON carries it parsed, or as the text of
    a Python dict.
    """
    if not offsets:
        return {}
    if isinstance(offsets, Mapping):
        parsed: Any = offsets
    else:
        try:
            parsed = json.loads(offsets)
        except ValueError:
            parsed = ast.literal_eval(offsets)
    out: dict[str, int] = {}
    for key, value in parsed.items():
        if isinstance(value, Mapping):
            for partition, offset in value.items():
                out[f"{key}-{partition}"] = int(offset)
        else:
            out[str(key)] = int(value)
    return out


def behind(latest: Mapping[str, int], end: Mapping[str, int]) -> tuple[int, int]:
    """(records, partitions) behind: the partitions of ``latest`` beyond ``end``'s offset."""
    gaps = [max(0, offset - end.get(key, offset)) for key, offset in latest.items()]
    return sum(gaps), sum(1 for g in gaps if g > 0)


class CatchUp:
    """The catch-up estimate from successive backlog readings (see the module docstring)."""

    def __init__(self) -> None:
        self._last: tuple[float, int] | None = None

    def update(self, at_s: float, backlog: int, rows: int, batch_s: float) -> float | None:
        """The estimate after a batch that read ``rows`` in ``batch_s`` seconds and left
        ``backlog`` records at wall-clock time ``at_s``."""
        last, self._last = self._last, (at_s, backlog)
        if backlog == 0:
            return 0.0
        if last is not None and at_s > last[0]:
            drained = last[1] - backlog
            return backlog / (drained / (at_s - last[0])) if drained > 0 else None
        return backlog / (rows / batch_s) if rows > 0 and batch_s > 0 else None


def _get(obj: Any, name: str) -> Any:
    # Progress objects from the listener have attributes; recentProgress may give dicts.
    return obj[name] if isinstance(obj, Mapping) else getattr(obj, name)


class ProgressPrinter(StreamingQueryListener):
    """Prints one line per micro-batch of one query, with its backlog.

    Args:
        query_name: the query whose progress is printed (other queries' events are ignored).
        reports: the pipeline's batch reports (appended by its ``foreachBatch``, before Spark
            reports the batch's progress).
        say: receives each line.
        latest: the source's latest offsets when its progress does not carry them (the segment
            source); ``None`` to read ``latestOffset`` from the progress (Spark's Kafka source).
    """

    def __init__(
        self,
        query_name: str,
        reports: list[BatchReport],
        say: Callable[[str], None],
        latest: Callable[[], Mapping[str, int]] | None = None,
    ) -> None:
        self.query_name = query_name
        self.reports = reports
        self.say = say
        self.latest = latest
        self.catch_up = CatchUp()
        self.backlogs: dict[int, Backlog] = {}
        self._printed: set[int] = set()
        self._lock = threading.Lock()

    def onQueryStarted(self, event: Any) -> None:
        return None

    def onQueryProgress(self, event: Any) -> None:
        self.progress(event.progress)

    def onQueryIdle(self, event: Any) -> None:
        return None

    def onQueryTerminated(self, event: Any) -> None:
        return None

    def progress(self, progress: Any) -> None:
        """Print the line of the batch ``progress`` reports (once; unknown batches: none)."""
        if _get(progress, "name") != self.query_name:
            return
        batch_id = int(_get(progress, "batchId"))
        with self._lock:
            if batch_id in self._printed:
                return
            report = next((r for r in self.reports if r.batch_id == batch_id), None)
            if report is None:  # a batch without records writes no report
                return
            self._printed.add(batch_id)
            try:
                end, latest = self._offsets(progress)
            except (ValueError, SyntaxError, KeyError, TypeError, OSError):
                # A progress line must never fail the ingest: this one goes without a backlog.
                line = report.line()
            else:
                records, partitions = behind(latest, end)
                eta = self.catch_up.update(
                    time.monotonic(), records, report.rows_in, report.seconds
                )
                self.backlogs[batch_id] = Backlog(records, partitions, eta)
                line = report.line(self.backlogs[batch_id].text())
        self.say(line)

    def _offsets(self, progress: Any) -> tuple[dict[str, int], Mapping[str, int]]:
        """(where the batch ended, the source's latest offsets)."""
        sources = _get(progress, "sources")
        source = sources[0] if sources else None
        end = parse_offsets(_get(source, "endOffset")) if source is not None else {}
        if self.latest is not None:
            return end, self.latest()
        latest = parse_offsets(_get(source, "latestOffset")) if source is not None else {}
        return end, latest

    def flush(self, recent: list[Any]) -> None:
        """Print the lines whose progress events had not arrived (``query.recentProgress``),
        then those of batches Spark no longer remembers, without a backlog."""
        for progress in recent:
            self.progress(progress)
        with self._lock:
            missing = [r for r in self.reports if r.batch_id not in self._printed]
            self._printed.update(r.batch_id for r in missing)
        for report in missing:
            self.say(report.line())
