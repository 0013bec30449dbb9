"""Accuracy against the truth: the gold Delta tables compared with what really happened.

``make accuracy`` (``python -m offsetscope.verify.accuracy``) runs every catalogue scenario except
``scale`` through the bundled coordinator into a log directory with its ``ground_truth.jsonl``
(:mod:`offsetscope.sim.scenarios.truth`), ingests it with the streaming pipeline on local Spark
(segment source, ``available_now``) and reads the **gold tables** back from Delta. One
SparkSession serves every scenario; each scenario gets a schema of its own
(``accuracy_<scenario>``), because the pipeline keys its fold state and ``offset_commits`` by
internal-topic coordinates, which two simulated clusters share. Facts checked, per scenario:

``generation``
    every generation the coordinator stored (``AssignmentStored``, after the static-member
    replacements it applied in place, ``MemberJoined`` with cause ``static_replacement``): in
    ``group_generations`` (latest group life) with the same leader, the same member ids and
    the same assignment (member -> partitions, decoded), and in ``partition_assignments`` with
    the same (topic, partition) -> member rows.
``rebalances``
    per group: the ``rebalances`` of its ``group_generations`` rows add up to the
    ``GenerationStarted`` lines of the truth (superseded rebalances included).
``transition``
    every state change Kafka persists (``Stable``, ``Empty`` after ``PreparingRebalance``,
    deletion as ``Dead``) is a non-inferred row of ``group_state_transitions`` at the same time.
``transaction``
    every finished transaction (``TxnOutcome``), per transactional id in order, is a
    ``transactions`` row with the same outcome, cause (``end_reason``), timed-out and fenced
    flags, start / decision / completion times and partitions; no extra finished rows.
``lag``
    at every truth sample (``Lag``, per group and partition): the committed offset in force per
    the gold ``offset_commits`` (committed rows at their ``effective_at``: aborted, superseded and
    dropped transactional commits never count) and the lag in records against the truth's
    ``EndOffsets`` (the LSO for ``read_committed`` groups), via
    :class:`offsetscope.history.lag.LagIndex`. The simulator samples at a millisecond where
    commits may land too, so the sample is taken just before or just after that millisecond's
    commits and must match one of the two (as in ``tests/unit/test_history_truth.py``).

The pipeline's own ``partition_lag`` rows are measured at micro-batch times (the newest record
of a batch), which are not the truth's sample times, so they are not compared here fact by fact.

**Alert scenarios** (:data:`ALERT_SCENARIOS`, ``lag-and-lso``) are ingested in small micro-batches,
so that the pipeline samples end offsets through the scenario, and checked for episodes:

``lag-threshold``
    the ``lag_threshold`` rule (:data:`ALERT_RULES`: warning above 500 records, critical above
    5,000, for 60 s, per partition) over the pipeline's ``partition_lag`` rows, against the
    episodes of the truth's own ``Lag`` samples under the same thresholds (found independently
    here: runs of samples above a level that last the duration). An expected episode is found
    when a finding of the same group, partition and level overlaps it in time; a finding that
    overlaps none is false.
``stuck-lso``
    the ``stuck_partitions`` rows (bound :data:`STUCK_BOUND_MS`) against the truth's
    ``EndOffsets`` samples: a partition whose LSO stood still below a growing high watermark
    for the bound; matched the same way, then, per match, what holds the LSO (the open
    transaction's id from ``TxnOutcome``, or -- ``MarkerLost`` -- a hanging transaction's
    producer id and first offset) and the read_committed groups blocked at the LSO.

They print ``lag-threshold: N episodes expected, M found, K false`` and ``stuck-lso: N stuck
partitions expected, M found, K false``; each expected episode found and each finding not
false is also a fact of the total.

**Share and Streams groups** are not simulated by the bundled coordinator: ``--real-broker``
also runs a real Kafka Streams application (``group.protocol = streams``) and a share consumer
on the harness broker and checks the gold tables against what they observed
(:mod:`offsetscope.verify.share_streams`, categories ``streams`` and ``share``).

**Real broker** (:func:`real_broker_accuracy`, ``--real-broker``; a ``kafka`` test): real
confluent-kafka clients (:mod:`offsetscope.verify.harness.clients`) drive the harness broker through
rebalances (members joining and leaving under ``range`` and ``roundrobin``), manual commits and
transactions that commit or abort with offsets sent to them; Spark's Kafka source
(``read_committed``) ingests ``__consumer_offsets`` and ``__transaction_state``, and the gold
tables are compared with what the clients observed: for every generation a client saw, the
members and each client's assignment; every successful commit; the committed transactional
offsets (and none of the aborted ones); every transaction's outcome and data partitions.

Output: one line per mismatch, a line per scenario, then ``accuracy: N facts checked, M wrong``;
the exit code is 1 unless M is 0.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import shutil
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from offsetscope import config as config_mod
from offsetscope.history.lag import CommitPoint, LagIndex
from offsetscope.history.rows import EndOffsetSample
from offsetscope.protocol import consumer_protocol as cp

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from offsetscope.verify.harness.broker import BrokerHandle
    from offsetscope.verify.harness.clients import ClientPool

Line = Mapping[str, Any]
Row = Mapping[str, Any]
TopicPart = tuple[str, int]
Assignment = dict[str, frozenset[TopicPart]]

# Every catalogue scenario but the 10,000-group scale run (a benchmark input, minutes to ingest).
EXCLUDED = frozenset({"scale"})
CAUSES = {
    "client_commit": "client_commit",
    "client_abort": "client_abort",
    "timeout": "timeout",
    "fenced_by_new_instance": "fenced",
}
CATEGORIES = (
    "generation",
    "rebalances",
    "transition",
    "transaction",
    "lag",
    "commit",
    "lag-threshold",
    "stuck-lso",
    "streams",
    "share",
)

# Scenarios checked for alert episodes, ingested this many records per micro-batch so that the
# pipeline samples end offsets through the scenario.
ALERT_SCENARIOS = {"lag-and-lso": 100}
STUCK_BOUND_MS = 60_000
LAG_LEVELS = {"warning": 500, "critical": 5_000}  # records
LAG_DURATION_MS = 60_000


# ----------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One fact the gold tables got wrong."""

    source: str  # scenario name, or "real-broker"
    category: str
    key: str
    expected: str
    got: str

    def line(self) -> str:
        return (
            f"MISMATCH {self.source} {self.category} {self.key}: "
            f"expected {self.expected}, got {self.got}"
        )


@dataclass(frozen=True, slots=True)
class EpisodeCount:
    """Episodes a rule should have found, how many of them it found, and its false ones."""

    expected: int = 0
    found: int = 0
    false: int = 0

    def __add__(self, other: EpisodeCount) -> EpisodeCount:
        return EpisodeCount(
            self.expected + other.expected, self.found + other.found, self.false + other.false
        )


@dataclass(frozen=True, slots=True)
class Result:
    """The facts checked for one source and the ones that were wrong."""

    source: str
    checked: Mapping[str, int]
    mismatches: tuple[Mismatch, ...]
    seconds: float = 0.0
    phases: Mapping[str, float] = field(default_factory=dict)
    # "lag-threshold" / "stuck-lso" -> the episode counts of an alert scenario
    episodes: Mapping[str, EpisodeCount] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.checked.values())

    @property
    def wrong(self) -> int:
        return len(self.mismatches)

    def line(self) -> str:
        per = ", ".join(f"{c} {n}" for c, n in self.checked.items() if n)
        took = ", ".join(f"{k} {v:.1f}s" for k, v in self.phases.items())
        return (
            f"{self.source}: {self.total} facts ({per}), {self.wrong} wrong"
            f" [{self.seconds:.1f} s{': ' + took if took else ''}]"
        )


class Checker:
    """Counts facts per category and keeps the ones that do not hold."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.checked: Counter[str] = Counter()
        self.mismatches: list[Mismatch] = []
        self.episodes: dict[str, EpisodeCount] = {}

    def check(self, category: str, key: str, expected: Any, got: Any) -> bool:
        """One fact: ``expected == got``; returns whether it held."""
        self.checked[category] += 1
        if expected == got:
            return True
        self.mismatches.append(Mismatch(self.source, category, key, _show(expected), _show(got)))
        return False

    def result(self, seconds: float = 0.0, phases: Mapping[str, float] | None = None) -> Result:
        ordered = {c: self.checked[c] for c in CATEGORIES if self.checked[c]}
        ordered.update({c: n for c, n in self.checked.items() if c not in ordered})
        return Result(
            self.source,
            ordered,
            tuple(self.mismatches),
            seconds,
            dict(phases or {}),
            dict(self.episodes),
        )


def _show(value: Any) -> str:
    if isinstance(value, frozenset | set):
        return "{" + ", ".join(sorted(map(repr, value))) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_show(v)}" for k, v in sorted(value.items())) + "}"
    return repr(value)


# ----------------------------------------------------------------------------- gold rows


@dataclass(frozen=True, slots=True)
class Gold:
    """The gold rows a comparison reads (plain dicts; timestamps as epoch milliseconds)."""

    generations: Sequence[Row]
    assignments: Sequence[Row]
    transitions: Sequence[Row]
    transactions: Sequence[Row]
    commits: Sequence[Row]


_GOLD_COLUMNS = {
    "generations": (
        "group_generations",
        (
            "group_id, group_life, generation, leader, member_count, rebalances, "
            "transform(members, m -> m.member_id) AS member_ids, "
            "transform(map_entries(assignment), e -> named_struct('member_id', e.key, "
            "'partitions', transform(e.value, tp -> concat(tp.topic, ':', tp.`partition`)))) "
            "AS assignment"
        ),
    ),
    "assignments": (
        "partition_assignments",
        "group_id, group_life, generation, topic, `partition`, member_id",
    ),
    "transitions": (
        "group_state_transitions",
        "group_id, to_state, unix_millis(`at`) AS at_ms, inferred",
    ),
    "transactions": (
        "transactions",
        (
            "transactional_id, first_record_offset, outcome, end_reason, timed_out, fenced, "
            "unix_millis(started_at) AS started_at, unix_millis(ended_at) AS ended_at, "
            "unix_millis(completed_at) AS completed_at, "
            "transform(partitions, tp -> concat(tp.topic, ':', tp.`partition`)) AS partitions"
        ),
    ),
    "commits": (
        "offset_commits",
        (
            "group_id, topic, `partition`, `offset`, status, transactional, record_offset, "
            "unix_millis(effective_at) AS effective_at"
        ),
    ),
}


def read_gold(spark: SparkSession, cfg: config_mod.Config) -> Gold:
    """The gold rows of the configured schema."""
    from offsetscope.spark import tables as catalogue

    out: dict[str, list[dict[str, Any]]] = {}
    for name, (logical, columns) in _GOLD_COLUMNS.items():
        df = spark.sql(f"SELECT {columns} FROM {catalogue.table_name(cfg, logical)}")
        out[name] = [r.asDict(recursive=True) for r in df.collect()]
    return Gold(**out)


def _tp(text: str) -> TopicPart:
    topic, _, partition = text.rpartition(":")
    return topic, int(partition)


def latest_generations(gold: Gold) -> dict[tuple[str, int], Row]:
    """(group, generation) -> its ``group_generations`` row; the latest group life wins."""
    rows = sorted(gold.generations, key=lambda r: r["group_life"])
    return {(r["group_id"], r["generation"]): r for r in rows}


def gold_assignment(row: Row) -> Assignment:
    """A ``group_generations`` row's assignment as member -> partitions."""
    return {e["member_id"]: frozenset(map(_tp, e["partitions"])) for e in row["assignment"]}


# ----------------------------------------------------------------------------- the truth


def expected_generations(
    lines: Sequence[Line],
) -> dict[tuple[str, int], tuple[str | None, Assignment]]:
    """(group, generation) -> (leader, member -> partitions) as the coordinator finally stored it.

    The last ``AssignmentStored`` of a generation, then every static replacement that rewrote
    it in place (``MemberJoined`` with cause ``static_replacement``) until the next one.
    """
    out: dict[tuple[str, int], tuple[str | None, Assignment]] = {}
    latest: dict[str, tuple[str, int]] = {}
    for line in lines:
        kind = line["type"]
        if kind == "AssignmentStored":
            group = line["group_id"]
            parts = {mid: _decoded(blob) for mid, blob in line["assignments"]}
            key = (group, line["generation_id"])
            out[key] = (line["leader"], parts)
            latest[group] = key
        elif kind == "MemberJoined" and line["cause"] == "static_replacement":
            group = line["group_id"]
            if group not in latest:
                continue
            leader, parts = out[latest[group]]
            old, new = line["replaced_member_id"], line["member_id"]
            if old in parts:
                parts = {new if m == old else m: p for m, p in parts.items()}
                out[latest[group]] = (new if leader == old else leader, parts)
    return out


def _decoded(blob: str) -> frozenset[TopicPart]:
    asg = cp.decode_assignment(base64.b64decode(blob))
    if asg is None:
        return frozenset()
    return frozenset(
        (t["topic"], p) for t in asg.data["assignedPartitions"] for p in t["partitions"]
    )


def read_committed_groups(lines: Sequence[Line]) -> list[str]:
    """Groups of the scenario whose consumers read committed data only (lag against the LSO)."""
    started = next((line for line in lines if line["type"] == "ScenarioStarted"), None)
    if started is None:
        return []
    groups = {
        g["group_id"] for g in started.get("groups", ()) if g["isolation_level"] == "read_committed"
    }
    groups |= {
        p["group_id"]
        for p in started.get("pipelines", ())
        if p["isolation_level"] == "read_committed"
    }
    return sorted(groups)


# ----------------------------------------------------------------------------- comparisons


def compare(source: str, lines: Sequence[Line], gold: Gold) -> Checker:
    """Every fact of one scenario's truth against its gold rows (see the module docstring)."""
    checker = Checker(source)
    check_generations(checker, lines, gold)
    check_rebalances(checker, lines, gold)
    check_transitions(checker, lines, gold)
    check_transactions(checker, lines, gold)
    check_lag(checker, lines, gold)
    return checker


def check_generations(checker: Checker, lines: Sequence[Line], gold: Gold) -> None:
    """Leader, members and assignment of every stored generation, in both gold tables."""
    rows = latest_generations(gold)
    lives = {key: row["group_life"] for key, row in rows.items()}
    owners: dict[tuple[str, int, int], dict[TopicPart, str]] = defaultdict(dict)
    for r in gold.assignments:
        owners[(r["group_id"], r["group_life"], r["generation"])][(r["topic"], r["partition"])] = r[
            "member_id"
        ]
    for (group, gen), (leader, parts) in sorted(expected_generations(lines).items()):
        key = f"{group} generation {gen}"
        row = rows.get((group, gen))
        if row is None:
            checker.check("generation", key, "a group_generations row", None)
            continue
        checker.check("generation", f"{key} leader", leader, row["leader"])
        checker.check("generation", f"{key} members", set(parts), set(row["member_ids"]))
        checker.check("generation", f"{key} assignment", parts, gold_assignment(row))
        want = {tp: member for member, tps in parts.items() for tp in tps}
        got = owners.get((group, lives[(group, gen)], gen), {})
        checker.check("generation", f"{key} partition_assignments", want, got)


def check_rebalances(checker: Checker, lines: Sequence[Line], gold: Gold) -> None:
    """Rebalances per group: the sum of ``rebalances`` against ``GenerationStarted`` lines."""
    truth = Counter(line["group_id"] for line in lines if line["type"] == "GenerationStarted")
    mine: Counter[str] = Counter()
    for row in gold.generations:
        mine[row["group_id"]] += row["rebalances"]
    for group in sorted(set(truth) | {g for g, n in mine.items() if n}):
        checker.check("rebalances", group, truth[group], mine[group])


def check_transitions(checker: Checker, lines: Sequence[Line], gold: Gold) -> None:
    """Every state change Kafka persists is an observed (not inferred) transition row."""
    observed = {
        (r["group_id"], r["at_ms"], r["to_state"]) for r in gold.transitions if not r["inferred"]
    }
    for line in lines:
        if line["type"] == "GroupStateChanged" and (
            line["state"] == "Stable"
            or (line["state"] == "Empty" and line["previous"] == "PreparingRebalance")
        ):
            fact = (line["group_id"], line["at_ms"], line["state"])
        elif line["type"] == "GroupDeleted":
            fact = (line["group_id"], line["at_ms"], "Dead")
        else:
            continue
        checker.check("transition", f"{fact[0]} {fact[2]} at {fact[1]}", True, fact in observed)


def check_transactions(checker: Checker, lines: Sequence[Line], gold: Gold) -> None:
    """Every finished transaction, per transactional id in order, field by field."""
    truth: dict[str, list[Line]] = defaultdict(list)
    for line in lines:
        if line["type"] == "TxnOutcome":
            truth[line["transactional_id"]].append(line)
    rows: dict[str, list[Row]] = defaultdict(list)
    for r in gold.transactions:
        if r["outcome"] != "ongoing":
            rows[r["transactional_id"]].append(r)
    for txn_id in sorted(set(truth) | set(rows)):
        want = sorted(truth[txn_id], key=lambda t: (t["started_ms"], t["decided_ms"]))
        got = sorted(rows[txn_id], key=lambda r: r["first_record_offset"])
        for i in range(max(len(want), len(got))):
            key = f"{txn_id} #{i}"
            if i >= len(got) or i >= len(want):
                checker.check(
                    "transaction",
                    key,
                    _txn_fields_truth(want[i]) if i < len(want) else None,
                    _txn_fields_gold(got[i]) if i < len(got) else None,
                )
                continue
            checker.check("transaction", key, _txn_fields_truth(want[i]), _txn_fields_gold(got[i]))


def _txn_fields_truth(t: Line) -> tuple[Any, ...]:
    parts = tuple(sorted(f"{p['topic']}:{p['partition']}" for p in t["partitions"]))
    return (
        t["outcome"],
        CAUSES.get(t["cause"], t["cause"]),
        t["timed_out"],
        t["fenced"],
        t["started_ms"],
        t["decided_ms"],
        t["completed_ms"],
        parts,
    )


def _txn_fields_gold(r: Row) -> tuple[Any, ...]:
    return (
        r["outcome"],
        r["end_reason"],
        r["timed_out"],
        r["fenced"],
        r["started_at"],
        r["ended_at"],
        r["completed_at"],
        tuple(sorted(r["partitions"])),
    )


def commit_points_of(gold: Gold) -> list[CommitPoint]:
    """The gold commits that became a group's offset (committed rows at ``effective_at``)."""
    return [
        CommitPoint(
            r["group_id"],
            r["topic"],
            r["partition"],
            r["offset"],
            r["effective_at"],
            r["record_offset"],
        )
        for r in gold.commits
        if r["status"] == "committed" and r["effective_at"] is not None
    ]


@dataclass(frozen=True, slots=True)
class LagAtSample:
    """One truth ``Lag`` sample of one group partition, and what the history says then."""

    key: str
    want: tuple[int | None, int | None]  # (committed offset, lag in records) the truth saw
    # the same, as of just before and just after the sample's millisecond
    got: tuple[tuple[int | None, int | None], tuple[int | None, int | None]]

    @property
    def agrees(self) -> bool:
        return self.want in self.got


def lag_at_samples(points: Sequence[CommitPoint], lines: Sequence[Line]) -> list[LagAtSample]:
    """Committed offset and lag in records at every truth ``Lag`` sample, from the commits.

    The simulator samples at a millisecond where commits (or expiry tombstones) may land too,
    before or after them. On a doubled time scale a sample sits between the commits of the
    millisecond before it and those of its own, in one index each; the truth must match one of
    the two orders.
    """
    samples = [
        EndOffsetSample(
            p["topic"],
            p["partition"],
            p["log_start_offset"],
            p["high_watermark"],
            p["last_stable_offset"],
            line["at_ms"],
        )
        for line in lines
        if line["type"] == "EndOffsets"
        for p in line["partitions"]
    ]
    doubled = [dataclasses.replace(c, at=2 * c.at) for c in points]
    before = LagIndex(
        doubled, [dataclasses.replace(s, sampled_at=2 * s.sampled_at - 1) for s in samples]
    )
    after = LagIndex(
        doubled, [dataclasses.replace(s, sampled_at=2 * s.sampled_at + 1) for s in samples]
    )
    out = []
    for line in lines:
        if line["type"] != "Lag":
            continue
        read_committed = line["isolation_level"] == "read_committed"
        for p in line["partitions"]:
            got = []
            for index, as_of in ((before, 2 * line["at_ms"] - 1), (after, 2 * line["at_ms"] + 1)):
                row = index.lag(
                    line["group_id"],
                    p["topic"],
                    p["partition"],
                    as_of,
                    read_committed=read_committed,
                )
                got.append((None, None) if row is None else (row.committed_offset, row.lag_records))
            key = f"{line['group_id']} {p['topic']}:{p['partition']} at {line['at_ms']}"
            out.append(LagAtSample(key, (p["committed_offset"], p["lag"]), (got[0], got[1])))
    return out


def check_lag(checker: Checker, lines: Sequence[Line], gold: Gold) -> None:
    """Committed offset and lag in records at every truth sample (see :func:`lag_at_samples`)."""
    for s in lag_at_samples(commit_points_of(gold), lines):
        checker.check("lag", s.key, s.want, s.want if s.agrees else s.got[1])


# ----------------------------------------------------------------------------- catalogue runs


def scenario_names(selected: Sequence[str] = ()) -> list[str]:
    """The scenarios to run: ``selected``, or the whole catalogue but :data:`EXCLUDED`."""
    from offsetscope.sim.scenarios.catalogue import names

    return list(selected) or [n for n in names() if n not in EXCLUDED]


def schema_for(name: str) -> str:
    """The schema a scenario's tables go to (identifier characters only)."""
    return "accuracy_" + "".join(c if c.isalnum() else "_" for c in name.lower())


def scenario_config(
    base: config_mod.Config, name: str, log_dir: Path, checkpoints: Path, lines: Sequence[Line]
) -> config_mod.Config:
    """``base`` pointed at one scenario's log directory, schema and checkpoints."""
    cfg = config_mod.with_segment_source(
        base, log_dir, max_records_per_trigger=ALERT_SCENARIOS.get(name)
    )
    cfg = config_mod.with_storage(cfg, schema=schema_for(name), checkpoint_dir=checkpoints)
    return config_mod.with_pipeline(
        cfg,
        trigger="available_now",
        read_committed_groups=tuple(read_committed_groups(lines)),
        stuck_lso_bound=config_mod.Duration(f"{STUCK_BOUND_MS}ms"),
    )


def run_scenario(
    spark: SparkSession,
    base: config_mod.Config,
    name: str,
    work_dir: Path,
    *,
    progress: Callable[[str], None] = print,
) -> Result:
    """Simulate one scenario, ingest it into a fresh schema, compare the gold tables."""
    from offsetscope.pipelines import ingest
    from offsetscope.sim.scenarios.run import simulate_to
    from offsetscope.sim.scenarios.truth import read_ground_truth
    from offsetscope.spark import tables as catalogue

    phases: dict[str, float] = {}
    began = time.monotonic()
    root = work_dir / name
    log_dir = root / "logs"
    shutil.rmtree(root, ignore_errors=True)
    simulate_to(name, out=log_dir, replace=True)
    lines = read_ground_truth(log_dir / "ground_truth.jsonl")
    phases["simulate"] = time.monotonic() - began

    mark = time.monotonic()
    cfg = scenario_config(base, name, log_dir, root / "checkpoints", lines)
    spark.sql(f"DROP SCHEMA IF EXISTS {catalogue.schema_name(cfg)} CASCADE")
    catalogue.ensure_tables(spark, cfg)
    phases["tables"] = time.monotonic() - mark

    mark = time.monotonic()
    reports = ingest.run(spark, cfg, query_name=f"accuracy_{uuid.uuid4().hex[:8]}")
    records = sum(r.rows_in for r in reports)
    phases["ingest"] = time.monotonic() - mark
    progress(f"  {name}: {records} records ingested in {len(reports)} micro-batches")

    mark = time.monotonic()
    checker = compare(name, lines, read_gold(spark, cfg))
    if name in ALERT_SCENARIOS:
        check_alert_episodes(checker, lines, read_alert_inputs(spark, cfg))
    phases["compare"] = time.monotonic() - mark
    return checker.result(time.monotonic() - began, phases)


def summary(results: Iterable[Result]) -> tuple[int, int, str]:
    """(facts checked, wrong, the final line)."""
    rs = list(results)
    total = sum(r.total for r in rs)
    wrong = sum(r.wrong for r in rs)
    return total, wrong, f"accuracy: {total} facts checked, {wrong} wrong"


def episode_lines(results: Iterable[Result]) -> list[str]:
    """The alert scenarios' episode lines (none when no alert scenario ran)."""
    totals: dict[str, EpisodeCount] = {}
    for r in results:
        for rule, count in r.episodes.items():
            totals[rule] = totals.get(rule, EpisodeCount()) + count
    what = {"lag-threshold": "episodes", "stuck-lso": "stuck partitions"}
    return [
        f"{rule}: {c.expected} {what[rule]} expected, {c.found} found, {c.false} false"
        for rule, c in sorted(totals.items())
    ]


# ----------------------------------------------------------------------------- alert episodes


@dataclass(frozen=True, slots=True)
class Span:
    """An episode on one subject: ``[start, end)``, ``end`` None while it lasts."""

    key: tuple[Any, ...]
    start: int
    end: int | None

    def overlaps(self, other: Span) -> bool:
        far = 2**62
        return (
            self.key == other.key
            and self.start < (other.end if other.end is not None else far)
            and other.start < (self.end if self.end is not None else far)
        )


@dataclass(frozen=True, slots=True)
class AlertInputs:
    """What the pipeline wrote that the alert checks read."""

    lag: Sequence[Any]  # PartitionLagRow
    stuck: Sequence[Any]  # StuckPartitionRow


def read_alert_inputs(spark: SparkSession, cfg: config_mod.Config) -> AlertInputs:
    from offsetscope.history.rows import PartitionLagRow, StuckPartitionRow
    from offsetscope.quality.tables import rows_of
    from offsetscope.spark import tables as catalogue

    lag = rows_of(spark.table(catalogue.table_name(cfg, "partition_lag")), PartitionLagRow)
    stuck = rows_of(spark.table(catalogue.table_name(cfg, "stuck_partitions")), StuckPartitionRow)
    return AlertInputs(lag, stuck)


def expected_lag_episodes(lines: Sequence[Line]) -> list[Span]:
    """Runs of truth ``Lag`` samples above a level that lasted :data:`LAG_DURATION_MS`: from
    the first sample above to the first below (key: group, topic, partition, level)."""
    series: dict[tuple[str, str, int], list[tuple[int, int]]] = defaultdict(list)
    for line in lines:
        if line["type"] != "Lag":
            continue
        for p in line["partitions"]:
            if p["lag"] is not None:
                series[(line["group_id"], p["topic"], p["partition"])].append(
                    (line["at_ms"], p["lag"])
                )
    out: list[Span] = []
    for (group, topic, partition), points in sorted(series.items()):
        for level, limit in LAG_LEVELS.items():
            start: int | None = None
            held = False
            for at, lag in points:
                if lag > limit:
                    start = at if start is None else start
                    held = held or at - start >= LAG_DURATION_MS
                    continue
                if start is not None and held:
                    out.append(Span((group, topic, partition, level), start, at))
                start, held = None, False
            if start is not None and held:
                out.append(Span((group, topic, partition, level), start, None))
    return out


def alert_rules_config(base: config_mod.AlertsConfig) -> config_mod.AlertsConfig:
    """``lag_threshold`` as the alert scenarios are checked (see the module docstring)."""
    return dataclasses.replace(
        base,
        lag_threshold=dataclasses.replace(
            base.lag_threshold,
            enabled=True,
            warning_records=LAG_LEVELS["warning"],
            critical_records=LAG_LEVELS["critical"],
            warning_time=None,
            critical_time=None,
            duration=config_mod.Duration(f"{LAG_DURATION_MS}ms"),
            scopes=("partition",),
            groups={},
            topics={},
        ),
    )


def found_lag_episodes(lag: Sequence[Any], as_of: int) -> list[Span]:
    """The ``lag_threshold`` rule's episodes over the pipeline's lag rows."""
    from offsetscope.alerts import rules

    cfg = alert_rules_config(config_mod.load("base").alerts)
    inputs = rules.RuleInputs(
        as_of=as_of, since=None, groups=frozenset(r.group_id for r in lag), lag=tuple(lag)
    )
    out = []
    for f in rules.lag_threshold(inputs, cfg):
        where, _, level = f.detail.rpartition("/")
        topic, _, partition = where.rpartition(":")
        out.append(Span((f.subject, topic, int(partition), level), f.episode_start, f.resolved_at))
    return out


def expected_stuck(lines: Sequence[Line]) -> list[Span]:
    """Runs of truth ``EndOffsets`` samples at one LSO, below a high watermark that grew since
    the run's first sample, lasting :data:`STUCK_BOUND_MS` (key: topic, partition)."""
    series: dict[tuple[str, int], list[tuple[int, int, int]]] = defaultdict(list)
    for line in lines:
        if line["type"] == "EndOffsets":
            for p in line["partitions"]:
                series[(p["topic"], p["partition"])].append(
                    (line["at_ms"], p["high_watermark"], p["last_stable_offset"])
                )
    out: list[Span] = []
    for key, points in sorted(series.items()):
        run: tuple[int, int, int] | None = None  # (since, lso, high watermark then)
        stuck = False
        for at, hwm, lso in points:
            if run is None or lso != run[1]:
                if run is not None and stuck:
                    out.append(Span(key, run[0], at))
                run, stuck = (at, lso, hwm), False
                continue
            stuck = stuck or (at - run[0] >= STUCK_BOUND_MS and run[2] < hwm and lso < hwm)
        if run is not None and stuck:
            out.append(Span(key, run[0], None))
    return out


def _count(
    checker: Checker, rule: str, expected: Sequence[Span], found: Sequence[Span]
) -> list[tuple[Span, Span]]:
    """Count ``rule``'s episodes; returns the (expected, found) pairs that overlap."""
    pairs = []
    for e in expected:
        match = next((f for f in found if f.overlaps(e)), None)
        checker.check(rule, f"{_span_text(e)} found", True, match is not None)
        if match is not None:
            pairs.append((e, match))
    false = [f for f in found if not any(f.overlaps(e) for e in expected)]
    for f in found:
        checker.check(rule, f"{_span_text(f)} expected", True, f not in false)
    checker.episodes[rule] = EpisodeCount(len(expected), len(pairs), len(false))
    return pairs


def _span_text(span: Span) -> str:
    key = " ".join(map(str, span.key))
    return f"{key} [{span.start}, {span.end})"


def check_alert_episodes(checker: Checker, lines: Sequence[Line], got: AlertInputs) -> None:
    """``lag-threshold`` and ``stuck-lso`` episodes (see the module docstring)."""
    end = max(line["at_ms"] for line in lines)
    _count(checker, "lag-threshold", expected_lag_episodes(lines), found_lag_episodes(got.lag, end))
    rows = {
        Span((r.topic, r.partition), r.stuck_since, r.resolved_at): r
        for r in got.stuck
        if r.detected_at <= end
    }
    for expected, found in _count(checker, "stuck-lso", expected_stuck(lines), list(rows)):
        row = rows[found]
        want = stuck_holder(lines, expected)
        have = (
            (row.cause, row.transactional_id)
            if want[0] == "open_transaction"
            else (
                row.cause,
                row.producer_id,
                row.first_offset,
            )
        )
        checker.check("stuck-lso", f"{_span_text(expected)} held by", want, have)
        checker.check(
            "stuck-lso",
            f"{_span_text(expected)} blocked groups",
            blocked_groups(lines, expected),
            set(row.blocked_groups),
        )


def stuck_holder(lines: Sequence[Line], span: Span) -> tuple[Any, ...]:
    """What held a stuck LSO, from the truth: a transaction that wrote to the partition and was
    open at every sample of the episode (``open_transaction``, its transactional id), else a
    lost marker at the LSO (``hanging_transaction``, producer id, first offset)."""
    topic, partition = span.key
    end = max(
        line["at_ms"]
        for line in lines
        if line["type"] == "EndOffsets" and (span.end is None or line["at_ms"] < span.end)
    )
    for line in lines:
        if (
            line["type"] == "TxnOutcome"
            and {"topic": topic, "partition": partition} in line["partitions"]
            and line["started_ms"] <= span.start
            and line["completed_ms"] >= end
        ):
            return ("open_transaction", line["transactional_id"])
    lso = _lso_at(lines, topic, partition, span.start)
    for line in lines:
        if (
            line["type"] == "MarkerLost"
            and (line["topic"], line["partition"]) == (topic, partition)
            and line["first_offset"] == lso
        ):
            return ("hanging_transaction", line["producer_id"], line["first_offset"])
    return ("unknown",)


def _lso_at(lines: Sequence[Line], topic: str, partition: int, at: int) -> int | None:
    for line in lines:
        if line["type"] == "EndOffsets" and line["at_ms"] == at:
            for p in line["partitions"]:
                if (p["topic"], p["partition"]) == (topic, partition):
                    return int(p["last_stable_offset"])
    return None


def blocked_groups(lines: Sequence[Line], span: Span) -> set[str]:
    """The read_committed groups whose committed offset is the stuck LSO at the episode's last
    truth sample."""
    topic, partition = span.key
    rc = set(read_committed_groups(lines))
    last: dict[str, int | None] = {}
    lso: int | None = None
    end = span.end if span.end is not None else 2**62
    for line in lines:
        if not span.start <= line["at_ms"] < end:
            continue
        if line["type"] == "EndOffsets":
            lso = _lso_at(lines, topic, partition, line["at_ms"])
        if line["type"] == "Lag" and line["group_id"] in rc:
            for p in line["partitions"]:
                if (p["topic"], p["partition"]) == (topic, partition):
                    last[line["group_id"]] = p["committed_offset"]
    return {g for g, offset in last.items() if offset is not None and offset == lso}


# ----------------------------------------------------------------------------- real broker


@dataclass(frozen=True, slots=True)
class Observed:
    """What the real clients of :func:`real_workload` observed."""

    # (group, generation) -> member id -> assignment, from each client's rebalance callbacks
    generations: Mapping[tuple[str, int], Mapping[str, frozenset[TopicPart]]]
    # (group, topic, partition, offset) of every successful commit (manual or transactional)
    commits: frozenset[tuple[str, str, int, int]]
    # transactional offsets sent inside aborted transactions: never committed
    aborted_commits: frozenset[tuple[str, str, int, int]]
    # transactional id -> [(outcome, data partitions)] in order
    transactions: Mapping[str, Sequence[tuple[str, frozenset[TopicPart]]]]
    groups: tuple[str, ...]


def real_workload(pool: ClientPool, tag: str, *, wait_s: float = 60.0) -> Observed:
    """Rebalances, commits and transactions on the harness broker by real clients.

    Two groups on one 4-partition topic: ``range`` (a joins, b joins, c joins, b leaves, c
    leaves) and ``roundrobin`` (x and y join, y leaves), every member committing what it
    consumed after each settled rebalance; a transactional producer that commits two
    transactions with offsets for a third group and aborts one in between. Every step waits
    for a condition the clients report (an assignment in a generation, a commit), never for a
    fixed time.
    """
    from offsetscope.verify.harness.clients import (
        ConsumerMember,
        MemberConfig,
        create_topic,
        standalone_group_metadata,
        wait_until,
    )

    bootstrap = pool.bootstrap
    topic = f"accuracy-orders-{tag}"
    create_topic(bootstrap, topic, 4)
    producer = pool.idempotent_producer()
    for p in range(4):
        for i in range(10):
            producer.send(topic, f"order-{i}".encode(), partition=p)
    producer.flush()

    range_group, rr_group, txn_group = (f"accuracy-{k}-{tag}" for k in ("range", "rr", "txn"))
    members: dict[str, ConsumerMember] = {}

    def start(group: str, strategy: str, client: str) -> ConsumerMember:
        m = pool.member(
            MemberConfig(
                group,
                (topic,),
                strategy=strategy,
                client_id=client,
                heartbeat_interval_ms=300,
                isolation_level="read_committed",
            )
        )
        members[client] = m
        return m

    def settle(group_members: Sequence[ConsumerMember]) -> int:
        # Everyone reports the same generation, in which it had an assignment callback, and
        # together they own every partition exactly once.
        everything = frozenset((topic, p) for p in range(4))

        def settled() -> bool:
            views = [m.view() for m in group_members]
            gens = {v.generation for v in views}
            if len(gens) != 1 or None in gens:
                return False
            gen = gens.pop()
            if not all(
                any(e.generation == gen and e.kind == "assigned" for e in v.events) for v in views
            ):
                return False
            owned = [tp for v in views for tp in v.assignment]
            return frozenset(owned) == everything and len(owned) == len(everything)

        wait_until(settled, wait_s, f"{[m.config.client_id for m in group_members]} settled")
        gen = group_members[0].generation
        assert gen is not None
        return gen

    commits: set[tuple[str, str, int, int]] = set()

    def commit_all(group: str, group_members: Sequence[ConsumerMember]) -> None:
        for m in group_members:
            owned = m.view().assignment
            offsets = dict.fromkeys(owned, 10)
            if not offsets:
                continue
            result = m.commit(offsets)
            if result.ok:
                commits.update((group, t, p, o) for t, p, o in result.offsets)

    a = start(range_group, "range", f"a-{tag}")
    settle([a])
    commit_all(range_group, [a])
    b = start(range_group, "range", f"b-{tag}")
    settle([a, b])
    commit_all(range_group, [a, b])
    c = start(range_group, "range", f"c-{tag}")
    settle([a, b, c])
    commit_all(range_group, [a, b, c])
    b.leave()
    settle([a, c])
    c.leave()
    settle([a])
    commit_all(range_group, [a])

    x = start(rr_group, "roundrobin", f"x-{tag}")
    settle([x])
    y = start(rr_group, "roundrobin", f"y-{tag}")
    settle([x, y])
    commit_all(rr_group, [x, y])
    y.leave()
    settle([x])
    commit_all(rr_group, [x])

    txn_id = f"accuracy-txn-{tag}"
    txn = pool.transactional_producer(txn_id, client_id=f"txn-{tag}").init()
    metadata = standalone_group_metadata(bootstrap, txn_group)
    outcomes: list[tuple[str, frozenset[TopicPart]]] = []
    aborted: set[tuple[str, str, int, int]] = set()
    for i, commit in enumerate((True, False, True)):
        txn.begin()
        sent = frozenset({(topic, i % 4), (topic, (i + 1) % 4)})
        for t, p in sorted(sent):
            txn.send(t, f"txn-{i}".encode(), partition=p)
        offsets = {(topic, 0): 2 * i + 1, (topic, 1): 2 * i + 2}
        txn.send_offsets(offsets, metadata)
        rows = {(txn_group, t, p, o) for (t, p), o in offsets.items()}
        if commit:
            txn.commit()
            commits.update(rows)
            outcomes.append(("committed", sent))
        else:
            txn.abort()
            aborted.update(rows - commits)
            outcomes.append(("aborted", sent))

    generations: dict[tuple[str, int], dict[str, frozenset[TopicPart]]] = defaultdict(dict)
    for m in members.values():
        last: dict[int, tuple[str, frozenset[TopicPart]]] = {}
        for e in m.events:
            if e.kind == "assigned" and e.generation is not None:
                last[e.generation] = (e.member_id, frozenset(e.assignment))
        for gen, (member_id, assignment) in last.items():
            generations[(m.config.group_id, gen)][member_id] = assignment
    return Observed(
        generations={k: dict(v) for k, v in generations.items()},
        commits=frozenset(commits),
        aborted_commits=frozenset(aborted),
        transactions={txn_id: tuple(outcomes)},
        groups=(range_group, rr_group, txn_group),
    )


def compare_real(observed: Observed, gold: Gold, source: str = "real-broker") -> Checker:
    """The gold tables against what the real clients observed (see the module docstring)."""
    checker = Checker(source)
    rows = latest_generations(gold)
    for (group, gen), seen in sorted(observed.generations.items()):
        key = f"{group} generation {gen}"
        row = rows.get((group, gen))
        if row is None:
            checker.check("generation", key, "a group_generations row", None)
            continue
        checker.check("generation", f"{key} members", set(seen), set(row["member_ids"]))
        stored = gold_assignment(row)
        for member_id, assignment in sorted(seen.items()):
            checker.check(
                "generation", f"{key} {member_id} assignment", assignment, stored.get(member_id)
            )
    ours = set(observed.groups)
    for (group, gen), row in sorted(rows.items()):
        if group in ours and row["member_count"] > 0:
            checker.check(
                "generation",
                f"{group} generation {gen} seen by a client",
                True,
                (group, gen) in observed.generations,
            )
    committed = {
        (r["group_id"], r["topic"], r["partition"], r["offset"])
        for r in gold.commits
        if r["status"] == "committed" and r["offset"] is not None
    }
    for fact in sorted(observed.commits):
        checker.check(
            "commit", f"{fact[0]} {fact[1]}:{fact[2]} offset {fact[3]}", True, fact in committed
        )
    for fact in sorted(observed.aborted_commits):
        checker.check(
            "commit",
            f"{fact[0]} {fact[1]}:{fact[2]} offset {fact[3]} (aborted)",
            False,
            fact in committed,
        )
    for txn_id, outcomes in sorted(observed.transactions.items()):
        got = sorted(
            (r for r in gold.transactions if r["transactional_id"] == txn_id),
            key=lambda r: r["first_record_offset"],
        )
        for i in range(max(len(outcomes), len(got))):
            want = _real_txn(outcomes[i]) if i < len(outcomes) else None
            have = _gold_real_txn(got[i]) if i < len(got) else None
            checker.check("transaction", f"{txn_id} #{i}", want, have)
    return checker


def _real_txn(outcome: tuple[str, frozenset[TopicPart]]) -> tuple[str, tuple[str, ...]]:
    return outcome[0], tuple(sorted(f"{t}:{p}" for t, p in outcome[1]))


def _gold_real_txn(row: Row) -> tuple[str, tuple[str, ...]]:
    data = tuple(sorted(p for p in row["partitions"] if not p.startswith("__consumer_offsets:")))
    return row["outcome"], data


def _txn_completed(broker: BrokerHandle, transactional_id: str) -> bool:
    from offsetscope.history.events import TransactionLogEvent
    from offsetscope.protocol.records import TRANSACTION_TOPIC
    from offsetscope.protocol.states import TransactionState
    from offsetscope.verify.harness.clients import read_internal_log

    log = read_internal_log(broker.log_dir, TRANSACTION_TOPIC)
    events = [
        e for e in log.of_transactional_id(transactional_id) if isinstance(e, TransactionLogEvent)
    ]
    done = (TransactionState.CompleteCommit, TransactionState.CompleteAbort)
    return bool(events) and events[-1].status in done


def real_broker_config(
    base: config_mod.Config, bootstrap: str, schema: str, checkpoints: Path
) -> config_mod.Config:
    """``base`` reading the harness broker with Spark's Kafka source, ``read_committed``."""
    cfg = config_mod.with_kafka_source(base, bootstrap)
    cfg = config_mod.with_storage(cfg, schema=schema, checkpoint_dir=checkpoints)
    return config_mod.with_pipeline(cfg, trigger="available_now")


def real_broker_accuracy(
    spark: SparkSession,
    base: config_mod.Config,
    broker: BrokerHandle,
    work_dir: Path,
    *,
    progress: Callable[[str], None] = print,
) -> Result:
    """Real clients on the harness broker, ingested with the Kafka source, compared."""
    from offsetscope.pipelines import ingest
    from offsetscope.spark import tables as catalogue
    from offsetscope.verify.harness.clients import ClientPool, wait_until

    began = time.monotonic()
    phases: dict[str, float] = {}
    tag = uuid.uuid4().hex[:8]
    with ClientPool(broker.bootstrap) as pool:
        observed = real_workload(pool, tag)
    # EndTxn is answered once the decision (Prepare*) is logged; the markers and the Complete*
    # record follow asynchronously. Wait for them, so the transactions are finished when read.
    wait_until(
        lambda: all(_txn_completed(broker, t) for t in observed.transactions),
        60.0,
        "the transactions' Complete* records",
    )
    phases["clients"] = time.monotonic() - began
    progress(
        f"  real-broker: {len(observed.generations)} generations, {len(observed.commits)} "
        "commits and 3 transactions observed by the clients"
    )
    mark = time.monotonic()
    root = work_dir / "real-broker"
    shutil.rmtree(root, ignore_errors=True)
    cfg = real_broker_config(base, broker.bootstrap, f"accuracy_real_{tag}", root / "checkpoints")
    catalogue.ensure_tables(spark, cfg)
    phases["tables"] = time.monotonic() - mark
    mark = time.monotonic()
    try:
        ingest.run(spark, cfg, query_name=f"accuracy_real_{tag}")
        phases["ingest"] = time.monotonic() - mark
        checker = compare_real(observed, read_gold(spark, cfg))
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {catalogue.schema_name(cfg)} CASCADE")
    return checker.result(time.monotonic() - began, phases)


# ----------------------------------------------------------------------------- command line


def accuracy_config(base: config_mod.Config, work_dir: Path) -> config_mod.Config:
    """``base`` with a warehouse, metastore and checkpoints of its own under ``work_dir``."""
    return config_mod.with_storage(base, work_dir=work_dir)


QUIET_SPARK = {"spark.ui.showConsoleProgress": "false", "spark.ui.enabled": "false"}


def main(argv: Sequence[str] | None = None) -> int:
    """``make accuracy``: every scenario (and optionally the real broker); 1 if any fact is wrong."""
    parser = argparse.ArgumentParser(
        prog="offsetscope.verify.accuracy", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--env", default="local")
    parser.add_argument("--conf", type=Path, default=None)
    parser.add_argument("--scenario", action="append", default=[], help="only these (repeatable)")
    parser.add_argument("--work-dir", type=Path, default=Path(".work/accuracy"))
    parser.add_argument("--real-broker", action="store_true", help="also real clients on a broker")
    args = parser.parse_args(argv)
    from offsetscope.spark.session import build_job_session
    from offsetscope.spark.sources import resolve_path

    work_dir = Path(resolve_path(str(args.work_dir)))
    cfg = accuracy_config(config_mod.load(args.env, extra=args.conf), work_dir)
    names = scenario_names(args.scenario)
    print(f"accuracy: {len(names)} scenarios -> {work_dir}", flush=True)
    began = time.monotonic()
    spark = build_job_session(cfg, app_name="offsetscope-accuracy", extra_conf=QUIET_SPARK)
    spark.sparkContext.setLogLevel("ERROR")
    results: list[Result] = []
    try:
        for i, name in enumerate(names, 1):
            print(f"[{i}/{len(names)}] {name}", flush=True)
            result = run_scenario(
                spark, cfg, name, work_dir, progress=lambda s: print(s, flush=True)
            )
            for m in result.mismatches:
                print(m.line(), flush=True)
            print("  " + result.line(), flush=True)
            results.append(result)
        if args.real_broker:
            results.extend(_run_real(spark, cfg, work_dir))
    finally:
        spark.stop()
    _, wrong, line = summary(results)
    print(f"({time.monotonic() - began:.0f} s)")
    for episodes in episode_lines(results):
        print(episodes)
    print(line)
    return 0 if wrong == 0 else 1


def _run_real(spark: SparkSession, cfg: config_mod.Config, work_dir: Path) -> list[Result]:
    from offsetscope.verify import share_streams
    from offsetscope.verify.harness.broker import Broker

    print("[real broker] starting the harness broker", flush=True)
    broker = Broker(dataclasses.replace(cfg.broker, name="accuracy"))
    handle = broker.start(fresh=True, tie_to_parent=True)
    try:
        results = [
            real_broker_accuracy(
                spark, cfg, handle, work_dir, progress=lambda s: print(s, flush=True)
            )
        ]
        # Share and Streams groups: the bundled coordinator simulates neither, so the ground
        # truth is what their real clients observed (offsetscope.verify.share_streams).
        began = time.monotonic()
        checker = share_streams.accuracy(
            spark, cfg, handle.bootstrap, work_dir / "share-streams", "real-broker-share-streams"
        )
        results.append(checker.result(time.monotonic() - began))
    finally:
        handle.stop()
    for result in results:
        for m in result.mismatches:
            print(m.line(), flush=True)
        print("  " + result.line(), flush=True)
    return results


if __name__ == "__main__":
    sys.exit(main())
