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
of a batch), which are not the truth's sample times, so they are not compared here.

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
CATEGORIES = ("generation", "rebalances", "transition", "transaction", "lag", "commit")


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
class Result:
    """The facts checked for one source and the ones that were wrong."""

    source: str
    checked: Mapping[str, int]
    mismatches: tuple[Mismatch, ...]
    seconds: float = 0.0
    phases: Mapping[str, float] = field(default_factory=dict)

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
        return Result(self.source, ordered, tuple(self.mismatches), seconds, dict(phases or {}))


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
    cfg = config_mod.with_segment_source(base, log_dir)
    cfg = config_mod.with_storage(cfg, schema=schema_for(name), checkpoint_dir=checkpoints)
    return config_mod.with_pipeline(
        cfg, trigger="available_now", read_committed_groups=tuple(read_committed_groups(lines))
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
    phases["compare"] = time.monotonic() - mark
    return checker.result(time.monotonic() - began, phases)


def summary(results: Iterable[Result]) -> tuple[int, int, str]:
    """(facts checked, wrong, the final line)."""
    rs = list(results)
    total = sum(r.total for r in rs)
    wrong = sum(r.wrong for r in rs)
    return total, wrong, f"accuracy: {total} facts checked, {wrong} wrong"


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
            results.append(_run_real(spark, cfg, work_dir))
    finally:
        spark.stop()
    _, wrong, line = summary(results)
    print(f"({time.monotonic() - began:.0f} s)")
    print(line)
    return 0 if wrong == 0 else 1


def _run_real(spark: SparkSession, cfg: config_mod.Config, work_dir: Path) -> Result:
    from offsetscope.verify.harness.broker import Broker

    print("[real broker] starting the harness broker", flush=True)
    broker = Broker(dataclasses.replace(cfg.broker, name="accuracy"))
    handle = broker.start(fresh=True, tie_to_parent=True)
    try:
        result = real_broker_accuracy(
            spark, cfg, handle, work_dir, progress=lambda s: print(s, flush=True)
        )
    finally:
        handle.stop()
    for m in result.mismatches:
        print(m.line(), flush=True)
    print("  " + result.line(), flush=True)
    return result


if __name__ == "__main__":
    sys.exit(main())
