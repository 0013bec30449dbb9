"""The alert rules: pure functions from history rows and fold states to :class:`Finding` s.

Every rule reads the counts it needs from :mod:`offsetscope.history.signals` (the windowed
rebalance count, member churn, stuck rebalances, Burrow's status, hanging transactions) and only
adds *when*: it evaluates the signal at each time the signal can change (:mod:`.episodes`) so
that each episode has a start read from the data, which the alert id hashes.

=====================  ===========================  =============================================
rule                   subject / episode            condition (settings in ``[alerts.<rule>]``)
=====================  ===========================  =============================================
rebalance_storm        group / the rebalance that   more than ``max_generations`` rebalances in
                       crossed the threshold        ``(T - window, T]`` (``rebalances_in_window``)
member_churn           group / first time over      joins + leaves in the window above
                                                    ``max_member_changes``, or more than
                                                    ``max_cycling_instances`` static instances
                                                    with 2+ member ids (``member_churn``)
rebalance_stuck        group / first skipped        ``stuck_rebalances``: a classic generation
                       generation, or the time a    whose assignment was never stored, or a
                       KIP-848 group got stuck      KIP-848 group Assigning/Reconciling beyond
                                                    its members' rebalance timeout
lag_stall              group partition / first      ``burrow_status`` over the last ``intervals``
                       observation in a status      lag observations is one of ``statuses``
lag_threshold          group partition or group     lag above ``<level>_records`` or
                       topic, per level / first     ``<level>_time`` at every observation for
                       observation above            ``duration`` (levels warning, critical)
stuck_lso              data partition / the first   a ``stuck_partitions`` row: the LSO still
                       sample at the stuck LSO      while the high watermark moved (pipeline)
data_loss              group partition / first      committed offset below the log start, at
                       observation with loss        least ``min_lost_records`` records lost
hanging_transaction    transactional id /           ``hanging_transactions``: open longer than
                       transaction start            its timeout plus ``margin``
quality                table / first failing batch  the table's quality suite failed
=====================  ===========================  =============================================

Per-group overrides (``[alerts.<rule>.groups."<id or glob>"]``): an exact group id wins over
glob patterns, which are tried in the order written. ``lag_threshold`` also has per-topic ones
(``[alerts.lag_threshold.topics."<name or glob>"]``), applied before the group's.

``lag_stall`` or ``lag_threshold``? Burrow's evaluation needs no threshold: it flags a group
whose committed offset stops moving while it lags (STALL), or that stopped committing (STOP),
whatever the size of the lag -- but a group that keeps committing, however far behind, is OK to
it. ``lag_threshold`` is the service-level rule: "this group must never be more than 10
minutes behind", including a group that commits steadily and slowly falls behind. Use both.
"""

from __future__ import annotations

import bisect
import dataclasses
import fnmatch
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from offsetscope.alerts.episodes import Episode, change_points, find_episodes
from offsetscope.alerts.model import (
    DATA_LOSS,
    DATA_PARTITION,
    GROUP,
    HANGING_TRANSACTION,
    LAG_STALL,
    LAG_THRESHOLD,
    MEMBER_CHURN,
    PARTITION,
    QUALITY,
    REBALANCE_STORM,
    REBALANCE_STUCK,
    STUCK_LSO,
    TABLE,
    TOPIC,
    TRANSACTIONAL_ID,
    Finding,
)
from offsetscope.config import AlertsConfig, duration_ms
from offsetscope.history import signals
from offsetscope.history.groups import GroupState, rebalances_in_window
from offsetscope.history.rows import (
    GenerationRow,
    PartitionLagRow,
    SessionRow,
    StuckPartitionRow,
    TransactionRow,
)
from offsetscope.history.transactions import TxnIdState
from offsetscope.quality.model import QualityResultRow

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CurrentGroup:
    """What ``groups_current`` says about a group now (for resolving stuck-rebalance alerts)."""

    group_id: str
    group_life: int
    kind: str
    state: str | None
    state_since: int | None


@dataclass(frozen=True, slots=True)
class RuleInputs:
    """Everything the rules read for one evaluation, already restricted to the subjects in scope.

    Attributes:
        as_of: the evaluation time (epoch ms): nothing later is considered.
        since: the horizon: episodes over by then are left out (None: none is). Rows must
            reach back far enough before it for an episode in progress to keep its start
            (see :func:`offsetscope.alerts.episodes.find_episodes`).
        groups: groups in scope (group and partition rules).
        transactional_ids: transactional ids in scope.
        tables: tables in scope (quality rule).
        data_partitions: data partitions in scope, as ``topic:partition`` (stuck_lso rule).
    """

    as_of: int
    since: int | None
    groups: frozenset[str] = frozenset()
    transactional_ids: frozenset[str] = frozenset()
    tables: frozenset[str] = frozenset()
    data_partitions: frozenset[str] = frozenset()
    generations: tuple[GenerationRow, ...] = ()
    sessions: tuple[SessionRow, ...] = ()
    group_states: tuple[GroupState, ...] = ()  # fold states of KIP-848 groups not Stable/Empty
    current: tuple[CurrentGroup, ...] = ()
    lag: tuple[PartitionLagRow, ...] = ()
    transactions: tuple[TransactionRow, ...] = ()
    quality: tuple[QualityResultRow, ...] = ()
    stuck: tuple[StuckPartitionRow, ...] = ()


def _override(groups: Mapping[str, T], group: str) -> T | None:
    if group in groups:
        return groups[group]
    for pattern, value in groups.items():
        if fnmatch.fnmatchcase(group, pattern):
            return value
    return None


def settings_for(rule: Any, group: str) -> Any:
    """A group-keyed rule's settings with the group's override applied (unset keys inherited)."""
    override = _override(rule.groups, group)
    if override is None:
        return rule
    changes = {
        f.name: getattr(override, f.name)
        for f in dataclasses.fields(override)
        if getattr(override, f.name) is not None
    }
    return dataclasses.replace(rule, **changes)


def _by(rows: Iterable[T], key: Any) -> dict[Any, list[T]]:
    out: dict[Any, list[T]] = defaultdict(list)
    for r in rows:
        out[key(r)].append(r)
    return out


def _rebalance_at(row: GenerationRow) -> int:
    # The same time signals.rebalance_times counts a row at.
    return row.join_completed_at if row.join_completed_at is not None else row.stored_at


def _fmt_window(ms: int) -> str:
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1_000)):
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def _range_text(numbers: Sequence[int]) -> str:
    if not numbers:
        return "none"
    if list(numbers) == list(range(numbers[0], numbers[0] + len(numbers))) and len(numbers) > 2:
        return f"{numbers[0]}..{numbers[-1]}"
    return ", ".join(map(str, numbers))


def _episode_finding(ep: Episode[Any], **fields: Any) -> Finding:
    """The finding of an episode :func:`find_episodes` reported: it is identified, starts and
    opens at the episode's start, and resolves at its end (None while it holds)."""
    return Finding(
        episode=ep.start, episode_start=ep.start, opened_at=ep.start, resolved_at=ep.end, **fields
    )


# ----------------------------------------------------------------------------- storm


def rebalance_storm(inputs: RuleInputs, cfg: AlertsConfig) -> list[Finding]:
    """More than N rebalances of a group within a window (see the module table)."""
    rule = cfg.rebalance_storm
    out: list[Finding] = []
    by_group = _by(inputs.generations, lambda r: r.group_id)
    for group in sorted(inputs.groups):
        s = settings_for(rule, group)
        rows = by_group.get(group, [])
        if not s.enabled or not rows:
            continue
        window = duration_ms(s.window)
        times = [t for t in signals.rebalance_times(rows, group) if t <= inputs.as_of]
        limit: int = s.max_generations

        def count(at: int, times: list[int] = times, window: int = window) -> int:
            return rebalances_in_window(times, at, window)

        def over(n: int, limit: int = limit) -> bool:
            return n > limit

        for ep in find_episodes(
            change_points(times, window),
            count,
            over,
            float,
            since=inputs.since,
            as_of=inputs.as_of,
        ):
            upto = inputs.as_of if ep.end is None else ep.end - 1
            involved = sorted(
                (
                    r
                    for r in rows
                    if r.rebalances > 0 and ep.start - window < _rebalance_at(r) <= upto
                ),
                key=lambda r: (r.group_life, r.generation),
            )
            generations = tuple(r.generation for r in involved)
            members = sorted({m for r in involved for m in (*r.members_joined, *r.members_left)})
            out.append(
                _episode_finding(
                    ep,
                    rule=REBALANCE_STORM,
                    subject_kind=GROUP,
                    subject=group,
                    detail="",
                    severity=s.severity,
                    value=ep.peak,
                    threshold=limit,
                    reason=(
                        f"group {group}: {ep.peak} rebalances within {_fmt_window(window)} "
                        f"(more than {limit}); generations {_range_text(generations)}"
                    ),
                    group_life=involved[-1].group_life if involved else None,
                    generations=generations,
                    member_ids=tuple(members),
                    evidence=(("window_ms", str(window)), ("peak_at", str(ep.peak_at))),
                )
            )
    return out


# ----------------------------------------------------------------------------- churn


def member_churn(inputs: RuleInputs, cfg: AlertsConfig) -> list[Finding]:
    """Members joining and leaving, or static instances cycling, within a window."""
    rule = cfg.member_churn
    out: list[Finding] = []
    by_group = _by(inputs.sessions, lambda r: r.group_id)
    for group in sorted(inputs.groups):
        s = settings_for(rule, group)
        sessions = [x for x in by_group.get(group, []) if x.joined_at <= inputs.as_of]
        if not s.enabled or not sessions:
            continue
        window = duration_ms(s.window)
        times = [x.joined_at for x in sessions]
        times += [
            x.left_at for x in sessions if x.left_at is not None and x.left_at <= inputs.as_of
        ]

        def measure(
            at: int, sessions: list[SessionRow] = sessions, window: int = window, group: str = group
        ) -> signals.MemberChurn:
            return signals.member_churn(sessions, group, at - window, at)

        def holds(c: signals.MemberChurn, s: Any = s) -> bool:
            return bool(
                len(c.joined) + len(c.left) > s.max_member_changes
                or len(c.cycling_instances) > s.max_cycling_instances
            )

        for ep in find_episodes(
            change_points(times, window),
            measure,
            holds,
            lambda c: float(len(c.joined) + len(c.left)) + len(c.cycling_instances) / 1e6,
            since=inputs.since,
            as_of=inputs.as_of,
        ):
            upto = inputs.as_of if ep.end is None else ep.end - 1
            span = signals.member_churn(sessions, group, ep.start - window, upto)
            peak = ep.peak
            changes = len(peak.joined) + len(peak.left)
            out.append(
                _episode_finding(
                    ep,
                    rule=MEMBER_CHURN,
                    subject_kind=GROUP,
                    subject=group,
                    detail="",
                    severity=s.severity,
                    value=changes,
                    threshold=s.max_member_changes,
                    reason=(
                        f"group {group}: {len(peak.joined)} member ids joined and "
                        f"{len(peak.left)} left within {_fmt_window(window)} (more than "
                        f"{s.max_member_changes} changes allowed); "
                        f"{len(peak.cycling_instances)} static instances cycled member ids "
                        f"(more than {s.max_cycling_instances} allowed)"
                    ),
                    member_ids=tuple(sorted({*span.joined, *span.left})),
                    instance_ids=span.cycling_instances,
                    evidence=(
                        ("window_ms", str(window)),
                        ("peak_joined", str(len(peak.joined))),
                        ("peak_left", str(len(peak.left))),
                        ("peak_cycling_instances", str(len(peak.cycling_instances))),
                        ("peak_at", str(ep.peak_at)),
                    ),
                )
            )
    return out


# ----------------------------------------------------------------------------- stuck


def rebalance_stuck(inputs: RuleInputs, cfg: AlertsConfig) -> list[Finding]:
    """Rebalances whose assignment was never stored, or KIP-848 groups not converging."""
    s = cfg.rebalance_stuck
    if not s.enabled:
        return []
    rows = [r for r in inputs.generations if r.group_id in inputs.groups]
    states = [st for st in inputs.group_states if st.group_id in inputs.groups]
    out: list[Finding] = []
    end: int | None
    for stuck in signals.stuck_rebalances(
        rows,
        states,
        inputs.as_of,
        default_rebalance_timeout_ms=duration_ms(s.default_rebalance_timeout),
    ):
        if stuck.until is not None:
            # Over: the next generation completed. Classic rows are only judged then.
            if inputs.since is not None and stuck.until <= inputs.since:
                continue
            start = stuck.since if stuck.since is not None else stuck.until
            end, episode = stuck.until, stuck.generations[0]
            value = float(len(stuck.generations))
        else:
            assert stuck.since is not None
            start, end, episode = stuck.since, None, stuck.since
            value = float(inputs.as_of - stuck.since)
        out.append(
            Finding(
                rule=REBALANCE_STUCK,
                subject_kind=GROUP,
                subject=stuck.group_id,
                detail=f"group_life:{stuck.group_life}",
                episode=episode,
                episode_start=start,
                opened_at=start,
                resolved_at=end,
                severity=s.severity,
                value=value,
                threshold=None,
                reason=f"group {stuck.group_id} ({stuck.kind}): {stuck.reason}",
                group_life=stuck.group_life,
                generations=stuck.generations,
                evidence=(("kind", stuck.kind),),
            )
        )
    return out


def stuck_resolved_at(inputs: RuleInputs, group: str, episode_start: int) -> int:
    """When a stuck KIP-848 group converged: its current state's start, if after the episode."""
    for cur in inputs.current:
        if (
            cur.group_id == group
            and cur.state_since is not None
            and cur.state_since > episode_start
        ):
            return cur.state_since
    return inputs.as_of


# ----------------------------------------------------------------------------- lag


def _partitions(
    rows: Iterable[PartitionLagRow],
) -> dict[tuple[str, str, int], list[PartitionLagRow]]:
    out = _by(rows, lambda r: (r.group_id, r.topic, r.partition))
    for v in out.values():
        v.sort(key=lambda r: r.as_of)
    return out


def _partitions_to_check(
    inputs: RuleInputs, rule: Any
) -> Iterable[tuple[tuple[str, str, int], list[PartitionLagRow], Any]]:
    """Each (group, topic, partition) of the lag rows whose group is evaluated and has the rule
    enabled, in order, with its rows and the group's settings."""
    for key, rows in sorted(_partitions(inputs.lag).items()):
        if key[0] not in inputs.groups:
            continue
        s = settings_for(rule, key[0])
        if s.enabled:
            yield key, rows, s


def lag_stall(inputs: RuleInputs, cfg: AlertsConfig) -> list[Finding]:
    """Burrow's status over the last N lag observations of each partition of a group."""
    rule = cfg.lag_stall
    out: list[Finding] = []
    for (group, topic, partition), rows, s in _partitions_to_check(inputs, rule):
        observed = [r for r in rows if r.lag_records is not None and r.as_of <= inputs.as_of]
        entries = [
            signals.CommitWindowEntry(r.committed_offset, r.as_of, int(r.lag_records or 0))
            for r in observed
        ]
        times = [e.at for e in entries]

        def measure(
            at: int,
            entries: list[signals.CommitWindowEntry] = entries,
            times: list[int] = times,
            s: Any = s,
        ) -> tuple[str, tuple[signals.CommitWindowEntry, ...]]:
            end = bisect.bisect_right(times, at)
            window = tuple(entries[max(0, end - s.intervals) : end])
            if len(window) < s.intervals:
                return "UNKNOWN", window  # Burrow's minimum-complete: a full window only
            return signals.burrow_status(window, at, allowed_lag=s.allowed_lag), window

        Measured = tuple[str, tuple[signals.CommitWindowEntry, ...]]

        def flagged(m: Measured, statuses: frozenset[str] = frozenset(s.statuses)) -> bool:
            return m[0] in statuses

        def latest_lag(m: Measured) -> float:
            return float(m[1][-1].lag)

        for ep in find_episodes(
            times, measure, flagged, latest_lag, since=inputs.since, as_of=inputs.as_of
        ):
            status, window = ep.last
            first, last = window[0], window[-1]
            out.append(
                _episode_finding(
                    ep,
                    rule=LAG_STALL,
                    subject_kind=PARTITION,
                    subject=group,
                    detail=f"{topic}:{partition}",
                    severity=s.severity,
                    value=last.lag,
                    threshold=s.allowed_lag,
                    reason=(
                        f"group {group} on {topic}-{partition}: {status} -- committed offset "
                        f"{first.offset} -> {last.offset} over {len(window)} observations while "
                        f"lag went {first.lag} -> {last.lag} (peak {ep.peak[1][-1].lag})"
                    ),
                    evidence=(
                        ("burrow_status", status),
                        ("window_start", str(first.at)),
                        ("window_end", str(last.at)),
                        ("committed_offset", str(last.offset)),
                        ("peak_lag", str(ep.peak[1][-1].lag)),
                    ),
                )
            )
    return out


def data_loss(inputs: RuleInputs, cfg: AlertsConfig) -> list[Finding]:
    """A group's committed offset below the log start offset (records deleted unread)."""
    rule = cfg.data_loss
    out: list[Finding] = []
    for (group, topic, partition), rows, s in _partitions_to_check(inputs, rule):
        by_time = {r.as_of: r for r in rows if r.as_of <= inputs.as_of}

        def measure(at: int, by_time: dict[int, PartitionLagRow] = by_time) -> PartitionLagRow:
            return by_time[at]

        def lost(r: PartitionLagRow, minimum: int = s.min_lost_records) -> bool:
            return r.data_loss and r.lost_records >= minimum

        def lost_records(r: PartitionLagRow) -> float:
            return float(r.lost_records)

        for ep in find_episodes(
            by_time, measure, lost, lost_records, since=inputs.since, as_of=inputs.as_of
        ):
            peak = ep.peak
            out.append(
                _episode_finding(
                    ep,
                    rule=DATA_LOSS,
                    subject_kind=PARTITION,
                    subject=group,
                    detail=f"{topic}:{partition}",
                    severity=s.severity,
                    value=peak.lost_records,
                    threshold=s.min_lost_records,
                    reason=(
                        f"group {group} on {topic}-{partition}: committed offset "
                        f"{peak.committed_offset} is below the log start offset "
                        f"{peak.log_start_offset}; {peak.lost_records} records were deleted "
                        "before the group read them"
                    ),
                    evidence=(
                        ("committed_offset", str(peak.committed_offset)),
                        ("log_start_offset", str(peak.log_start_offset)),
                        ("lost_records", str(peak.lost_records)),
                    ),
                )
            )
    return out


# ----------------------------------------------------------------------------- lag threshold

LEVELS = ("warning", "critical")


def lag_threshold_settings(rule: Any, group: str, topic: str) -> Any:
    """``lag_threshold``'s settings for a group on a topic: the topic's override, then the
    group's (unset keys inherited)."""
    s = rule
    for overrides, key in ((rule.topics, topic), (rule.groups, group)):
        override = _override(overrides, key)
        if override is not None:
            s = dataclasses.replace(
                s,
                **{
                    f.name: getattr(override, f.name)
                    for f in dataclasses.fields(override)
                    if getattr(override, f.name) is not None
                },
            )
    return s


@dataclass(frozen=True, slots=True)
class LagObservation:
    """The lag of a group on a partition, or summed over a topic's partitions, at one time."""

    at: int
    records: int | None
    seconds: float | None
    partitions: int = 1
    basis: str | None = None


@dataclass(frozen=True, slots=True)
class ThresholdEpisode:
    """A run of observations above a level's thresholds that lasted ``duration``."""

    start: int  # the first observation above
    fired: int  # the first observation at least ``duration`` after start
    end: int | None  # the first observation below again; None while above
    peak: LagObservation  # the largest lag in records (then seconds) of the run
    last: LagObservation


def above_threshold(obs: LagObservation, records: int | None, time_ms: int | None) -> bool:
    """Whether a lag exceeds either threshold (an unset one never is exceeded)."""
    by_records = records is not None and obs.records is not None and obs.records > records
    by_time = time_ms is not None and obs.seconds is not None and obs.seconds * 1000 > time_ms
    return by_records or by_time


def threshold_episodes(
    observations: Sequence[LagObservation],
    above: Any,
    duration_ms: int,
    *,
    since: int | None,
    as_of: int,
) -> list[ThresholdEpisode]:
    """Runs of ``above`` observations that held for ``duration_ms`` (Prometheus's ``for``).

    A run starts at its first observation above and fires at its first observation at least
    ``duration_ms`` later (a run that ends before never fires); it ends at the first
    observation below. Observations after ``as_of`` are not read; runs over by ``since`` are
    left out.
    """
    out: list[ThresholdEpisode] = []
    start: int | None = None
    fired: int | None = None
    peak = last = None

    def key(o: LagObservation) -> tuple[int, float]:
        return (o.records or 0, o.seconds or 0.0)

    for obs in sorted(observations, key=lambda o: o.at):
        if obs.at > as_of:
            break
        if above(obs):
            if start is None:
                start, fired, peak = obs.at, None, obs
            elif peak is None or key(obs) > key(peak):
                peak = obs
            if fired is None and obs.at - start >= duration_ms:
                fired = obs.at
            last = obs
            continue
        if start is not None and fired is not None and (since is None or obs.at > since):
            assert peak is not None
            assert last is not None
            out.append(ThresholdEpisode(start, fired, obs.at, peak, last))
        start = fired = peak = last = None
    if start is not None and fired is not None:
        assert peak is not None
        assert last is not None
        out.append(ThresholdEpisode(start, fired, None, peak, last))
    return out


def topic_observations(rows: Iterable[PartitionLagRow]) -> list[LagObservation]:
    """A group's lag on a topic at each time its partitions were sampled together: records
    added up over the partitions, time the largest (the partition furthest behind)."""
    at_time: dict[int, list[PartitionLagRow]] = defaultdict(list)
    for r in rows:
        at_time[r.as_of].append(r)
    out = []
    for at, group in sorted(at_time.items()):
        records = [r.lag_records for r in group if r.lag_records is not None]
        seconds = [r.lag_seconds for r in group if r.lag_seconds is not None]
        out.append(
            LagObservation(
                at,
                sum(records) if records else None,
                max(seconds) if seconds else None,
                len(group),
            )
        )
    return out


def lag_threshold(inputs: RuleInputs, cfg: AlertsConfig) -> list[Finding]:
    """Lag above a level's threshold for a duration (see the module table)."""
    rule = cfg.lag_threshold
    if not rule.enabled and not rule.groups and not rule.topics:
        return []
    out: list[Finding] = []
    by_partition = _partitions(r for r in inputs.lag if r.group_id in inputs.groups)
    by_topic: dict[tuple[str, str], list[PartitionLagRow]] = defaultdict(list)
    for (group, topic, _), rows in by_partition.items():
        by_topic[(group, topic)].extend(rows)
    subjects: list[tuple[str, str, str, str, list[LagObservation]]] = []
    for (group, topic, partition), rows in sorted(by_partition.items()):
        obs = [LagObservation(r.as_of, r.lag_records, r.lag_seconds, 1, r.lag_basis) for r in rows]
        subjects.append(("partition", group, topic, f"{topic}:{partition}", obs))
    for (group, topic), rows in sorted(by_topic.items()):
        subjects.append(("topic", group, topic, topic, topic_observations(rows)))
    for scope, group, topic, where, obs in subjects:
        s = lag_threshold_settings(rule, group, topic)
        if not s.enabled or scope not in s.scopes:
            continue
        hold = duration_ms(s.duration)
        for level in LEVELS:
            records = getattr(s, f"{level}_records")
            time_setting = getattr(s, f"{level}_time")
            time_ms = None if time_setting is None else duration_ms(time_setting)
            if records is None and time_ms is None:
                continue

            def above(o: LagObservation, records: int | None = records, t: Any = time_ms) -> bool:
                return above_threshold(o, records, t)

            out.extend(
                _threshold_finding(scope, group, where, level, ep, records, time_ms, hold)
                for ep in threshold_episodes(
                    obs, above, hold, since=inputs.since, as_of=inputs.as_of
                )
            )
    return out


def _threshold_finding(
    scope: str,
    group: str,
    where: str,
    level: str,
    ep: ThresholdEpisode,
    records: int | None,
    time_ms: int | None,
    hold: int,
) -> Finding:
    peak = ep.peak
    by_records = records is not None and peak.records is not None and peak.records > records
    value: float
    if by_records:
        value, threshold, what = float(peak.records or 0), float(records or 0), "records"
    else:
        value, threshold, what = float(peak.seconds or 0), (time_ms or 0) / 1000, "seconds"
    lag_text = f"{peak.records} records" + (
        "" if peak.seconds is None else f", {peak.seconds:.0f} s behind"
    )
    on = f"{where.replace(':', '-')}" if scope == "partition" else f"topic {where}"
    limits = " or ".join(
        x
        for x in (
            f"{records} records" if records is not None else "",
            f"{_fmt_window(time_ms)}" if time_ms is not None else "",
        )
        if x
    )
    return Finding(
        rule=LAG_THRESHOLD,
        subject_kind=PARTITION if scope == "partition" else TOPIC,
        subject=group,
        detail=f"{where}/{level}",
        episode=ep.start,
        episode_start=ep.start,
        opened_at=ep.fired,
        resolved_at=ep.end,
        severity=level,
        value=value,
        threshold=threshold,
        reason=(
            f"group {group} on {on}: lag above {limits} for {_fmt_window(hold)} or more "
            f"({level}); peak {lag_text}"
            + (f" over {peak.partitions} partitions" if scope == "topic" else "")
        ),
        evidence=(
            ("level", level),
            ("measured", what),
            ("peak_at", str(peak.at)),
            ("peak_lag_records", str(peak.records)),
            ("peak_lag_seconds", "" if peak.seconds is None else f"{peak.seconds:.3f}"),
            ("last_lag_records", str(ep.last.records)),
            ("duration_ms", str(hold)),
            ("lag_basis", peak.basis or ""),
        ),
    )


# ----------------------------------------------------------------------------- stuck LSO


def stuck_lso(inputs: RuleInputs, cfg: AlertsConfig) -> list[Finding]:
    """A ``stuck_partitions`` episode: the LSO held by an open or hanging transaction."""
    s = cfg.stuck_lso
    if not s.enabled:
        return []
    out: list[Finding] = []
    for row in sorted(inputs.stuck, key=lambda r: (r.topic, r.partition, r.stuck_since)):
        subject = f"{row.topic}:{row.partition}"
        if subject not in inputs.data_partitions or row.detected_at > inputs.as_of:
            continue
        resolved = (
            row.resolved_at
            if row.resolved_at is not None and row.resolved_at <= inputs.as_of
            else None
        )
        if inputs.since is not None and resolved is not None and resolved <= inputs.since:
            continue
        if row.cause == "open_transaction":
            held = (
                f"open transaction of transactional id {row.transactional_id} (producer "
                f"{row.producer_id}, epoch {row.producer_epoch}), open for "
                f"{(row.open_for_ms or 0) // 1000} s"
            )
        else:
            producer = "unknown" if row.producer_id is None else str(row.producer_id)
            held = (
                f"hanging transaction unknown to every coordinator (producer {producer}, first "
                f"offset {row.first_offset}); end it with: {row.abort_command}"
            )
        blocked = ", ".join(row.blocked_groups) or "none yet"
        out.append(
            Finding(
                rule=STUCK_LSO,
                subject_kind=DATA_PARTITION,
                subject=subject,
                detail="",
                episode=row.stuck_since,
                episode_start=row.stuck_since,
                opened_at=row.detected_at,
                resolved_at=resolved,
                severity=s.severity,
                value=float(row.stuck_ms),
                threshold=None,
                reason=(
                    f"{row.topic}-{row.partition}: last stable offset {row.last_stable_offset} "
                    f"still for {row.stuck_ms // 1000} s while {row.records_held} records "
                    f"arrived after it; held by the {held}; read_committed groups blocked: "
                    f"{blocked}"
                ),
                transactional_id=row.transactional_id,
                producer_id=row.producer_id,
                producer_epoch=row.producer_epoch,
                evidence=(
                    ("cause", row.cause),
                    ("last_stable_offset", str(row.last_stable_offset)),
                    ("first_offset", str(row.first_offset)),
                    ("high_watermark", str(row.high_watermark)),
                    ("blocked_groups", ",".join(row.blocked_groups)),
                    ("abort_command", row.abort_command or ""),
                ),
            )
        )
    return out


def stuck_resolved_at_lso(inputs: RuleInputs, subject: str, episode_start: int) -> int:
    """When a stuck partition's LSO moved, from its ``stuck_partitions`` row."""
    for row in inputs.stuck:
        if (
            f"{row.topic}:{row.partition}" == subject
            and row.stuck_since == episode_start
            and row.resolved_at is not None
        ):
            return row.resolved_at
    return inputs.as_of


# ----------------------------------------------------------------------------- transactions


def _open_state(row: TransactionRow) -> TxnIdState:
    """The transaction fold's view of ``row`` while it was still open."""
    return TxnIdState(
        transactional_id=row.transactional_id,
        record_partition=row.record_partition,
        last_offset=row.last_record_offset,
        status=row.state,
        producer_id=row.producer_id,
        producer_epoch=row.producer_epoch,
        timeout_ms=row.timeout_ms,
        open=dataclasses.replace(row, completed_at=None),
        awaiting_fence=None,
        last_at=None,
    )


def hanging_transaction(inputs: RuleInputs, cfg: AlertsConfig) -> list[Finding]:
    """Transactions open beyond their timeout plus a margin (see ``hanging_transactions``)."""
    s = cfg.hanging_transaction
    if not s.enabled:
        return []
    margin = duration_ms(s.margin)
    out: list[Finding] = []
    for row in sorted(
        inputs.transactions,
        key=lambda r: (r.transactional_id, r.record_partition, r.first_record_offset),
    ):
        if row.transactional_id not in inputs.transactional_ids or row.started_at is None:
            continue
        became = row.started_at + row.timeout_ms + margin + 1  # first ms it counts as hanging
        if became > inputs.as_of:
            continue
        # Judge it as of its last open moment: now if still open, else just before it completed.
        judged_at = inputs.as_of if row.completed_at is None else row.completed_at - 1
        if (
            inputs.since is not None
            and row.completed_at is not None
            and row.completed_at <= inputs.since
        ):
            continue
        hanging = signals.hanging_transactions([_open_state(row)], judged_at, margin)
        if not hanging:
            continue
        h = hanging[0]
        out.append(
            Finding(
                rule=HANGING_TRANSACTION,
                subject_kind=TRANSACTIONAL_ID,
                subject=row.transactional_id,
                detail=f"{row.record_partition}:{row.first_record_offset}",
                episode=row.started_at,
                episode_start=row.started_at,
                opened_at=became,
                resolved_at=row.completed_at,
                severity=s.severity,
                value=h.open_for_ms,
                threshold=row.timeout_ms + margin,
                reason=(
                    f"transactional id {row.transactional_id} (producer {h.producer_id}, epoch "
                    f"{h.producer_epoch}): transaction in {h.state} open for {h.open_for_ms} ms, "
                    f"timeout {h.timeout_ms} ms + margin {margin} ms; "
                    f"{row.partition_count} partitions"
                    + ("" if row.completed_at is None else f"; ended {row.outcome}")
                ),
                transactional_id=row.transactional_id,
                producer_id=h.producer_id,
                producer_epoch=h.producer_epoch,
                evidence=(
                    ("state", h.state),
                    ("timeout_ms", str(h.timeout_ms)),
                    ("partitions", ",".join(f"{t}-{p}" for t, p in row.partitions)),
                ),
            )
        )
    return out


# ----------------------------------------------------------------------------- quality


def quality(inputs: RuleInputs, cfg: AlertsConfig) -> list[Finding]:
    """A table whose quality suite failed, until a later batch passes."""
    s = cfg.quality
    if not s.enabled:
        return []
    out: list[Finding] = []
    by_table = _by(inputs.quality, lambda r: r.table_name)
    for table in sorted(inputs.tables):
        results = sorted(by_table.get(table, []), key=lambda r: (r.validated_at, r.batch_id))
        at_time: dict[int, QualityResultRow] = {}
        for r in results:
            at_time[r.validated_at] = r  # the last run at a time decides

        def measure(at: int, at_time: dict[int, QualityResultRow] = at_time) -> QualityResultRow:
            return at_time[at]

        # Results carry the wall-clock time of their validation, not event time: the episodes
        # run on that clock, up to the newest result.
        for ep in find_episodes(
            at_time,
            measure,
            lambda r: not r.success,
            lambda r: float(r.failed_rows),
            since=None,
            as_of=max(at_time, default=0),
        ):
            failing = [
                r
                for r in results
                if ep.start <= r.validated_at and (ep.end is None or r.validated_at < ep.end)
            ]
            names = sorted({n for r in failing for n in r.failed_expectations})
            out.append(
                _episode_finding(
                    ep,
                    rule=QUALITY,
                    subject_kind=TABLE,
                    subject=table,
                    detail="",
                    severity=s.severity,
                    value=sum(r.failed_rows for r in failing),
                    threshold=0,
                    reason=(
                        f"table {table}: quality suite failed on {len(failing)} batch(es) "
                        f"({', '.join(str(r.batch_id) for r in failing)}); failed expectations: "
                        f"{', '.join(names)}"
                    ),
                    evidence=(
                        ("failed_expectations", ",".join(names)),
                        ("batches", ",".join(str(r.batch_id) for r in failing)),
                    ),
                )
            )
    return out


RULE_FUNCTIONS = (
    (REBALANCE_STORM, rebalance_storm),
    (MEMBER_CHURN, member_churn),
    (REBALANCE_STUCK, rebalance_stuck),
    (LAG_STALL, lag_stall),
    (LAG_THRESHOLD, lag_threshold),
    (DATA_LOSS, data_loss),
    (HANGING_TRANSACTION, hanging_transaction),
    (STUCK_LSO, stuck_lso),
    (QUALITY, quality),
)


def find_all(inputs: RuleInputs, cfg: AlertsConfig) -> list[Finding]:
    """Every rule's findings for ``inputs`` (an ``[alerts] enabled = false`` finds nothing)."""
    if not cfg.enabled:
        return []
    out: list[Finding] = []
    for _, rule in RULE_FUNCTIONS:
        out.extend(rule(inputs, cfg))
    return out


def max_window_ms(cfg: AlertsConfig) -> int:
    """The longest window any group rule reads behind a change point (for the input horizon)."""
    windows = [duration_ms(cfg.rebalance_storm.window), duration_ms(cfg.member_churn.window)]
    for rule in (cfg.rebalance_storm, cfg.member_churn):
        windows += [duration_ms(o.window) for o in rule.groups.values() if o.window is not None]
    # lag_threshold reads the observations since a run began, ``duration`` before it fired.
    lt = cfg.lag_threshold
    windows.append(duration_ms(lt.duration))
    windows += [
        duration_ms(o.duration)
        for o in (*lt.groups.values(), *lt.topics.values())
        if o.duration is not None
    ]
    return max(windows)
