"""Scenario files: the TOML format, parsed into frozen dataclasses with key-path errors.

A scenario says what runs against the bundled coordinator, and when (the full format, with
every key and its default, is in ``scenarios/README.md``)::

    [scenario]      name, description, seed, duration, start_ms, sample_interval
    [parameters]    name = default       (a value written "$name" anywhere takes it; the CLI
                                          overrides with --param name=value)
    [broker]        group/transaction coordinator settings (GroupCoordinatorConfig and
                    TransactionCoordinatorConfig field names, e.g. offsets_topic_partitions)
    [log]           segment layout of the written log directory
    [[topics]]      name, partitions
    [[producers]]   name, topic, rate, linger, keys, value_bytes, idempotent, start, stop
    [[groups]]      id, count, topics, members, start, stagger, + consumer settings
    [[pipelines]]   read-process-write: name, group, input, output, instances,
                    transactional_id, transaction_timeout, commit_interval, + consumer settings
    [[timeline]]    at, action, + the action's target (group/member, producer, pipeline),
                    optional every/times to repeat it

Durations are integer milliseconds or strings with a unit (``"250ms"``, ``"30s"``, ``"5m"``,
``"1h"``). Every error is a :class:`ScenarioError` whose ``key_path`` names the offending key
(``groups[1].session_timeout``, ``timeline[4].action``), so a typo never becomes a default.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from offsetscope.config import InvalidConfigError
from offsetscope.sim.coordinator.assignors import ASSIGNOR_NAMES
from offsetscope.sim.coordinator.group.config import GroupCoordinatorConfig
from offsetscope.sim.coordinator.txn.config import TransactionCoordinatorConfig

T = TypeVar("T")

DEFAULT_START_MS = 1_700_000_000_000
COMMIT_MODES = ("auto", "sync", "async", "none")
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
OFFSET_RESETS = ("earliest", "latest")


class ScenarioError(ValueError):
    """A scenario file is invalid; ``key_path`` names the offending key."""

    def __init__(self, key_path: str, message: str) -> None:
        super().__init__(f"scenario key {key_path or '<root>'}: {message}")
        self.key_path = key_path
        self.message = message


# ----------------------------------------------------------------------------- specs


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    partitions: int


@dataclass(frozen=True, slots=True)
class ConsumerSpec:
    """One consumer's settings (the Java consumer's config names in the comments)."""

    assignors: tuple[str, ...] = ("range", "cooperative-sticky")  # partition.assignment.strategy
    session_timeout_ms: int = 45_000  # session.timeout.ms
    heartbeat_interval_ms: int = 3_000  # heartbeat.interval.ms
    max_poll_interval_ms: int = 300_000  # max.poll.interval.ms (also the rebalance timeout)
    max_poll_records: int = 500  # max.poll.records
    commit: str = "auto"  # enable.auto.commit=true ("auto"), or commitSync / commitAsync / none
    auto_commit_interval_ms: int = 5_000  # auto.commit.interval.ms
    isolation_level: str = "read_uncommitted"  # isolation.level
    auto_offset_reset: str = "earliest"  # auto.offset.reset
    static: bool = False  # group.instance.id = the client id
    processing_rate: float = 0.0  # records/s the application processes; 0 = instantly
    poll_idle_ms: int = 500  # how long an idle poll() waits for data (fetch.max.wait.ms)
    retry_backoff_ms: int = 100  # retry.backoff.ms
    rack: str | None = None  # client.rack


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """Members of one group with one configuration (several entries may share a group id:
    members with different settings, e.g. different assignor lists for a protocol vote)."""

    id: str
    topics: tuple[str, ...]
    members: int
    consumer: ConsumerSpec
    start_ms: int = 0
    stagger_ms: int = 0  # delay between the start of consecutive members
    name: str = ""  # client-id prefix of these members (default: the group id)

    @property
    def client_prefix(self) -> str:
        return self.name or self.id


@dataclass(frozen=True, slots=True)
class ProducerSpec:
    name: str
    topic: str
    rate: float  # records per second, over all partitions
    linger_ms: int = 100  # one batch per partition every linger
    keys: int = 1000  # distinct keys; 0 = null keys (sticky partitioning per linger)
    value_bytes: int = 64
    idempotent: bool = True  # enable.idempotence (Kafka's default since 3.0)
    start_ms: int = 0
    stop_ms: int | None = None


@dataclass(frozen=True, slots=True)
class PipelineSpec:
    """A read-process-write application: a consumer plus a transactional producer per instance."""

    name: str
    group: str
    input: str
    output: str
    instances: int
    consumer: ConsumerSpec
    transactional_id: str = "{pipeline}-{instance}"
    transaction_timeout_ms: int = 60_000  # transaction.timeout.ms
    commit_interval_ms: int = 1_000  # how long one transaction collects input
    client_transaction_version: int = 0  # 0: librdkafka / older Java; 2: Java 4.x (KIP-890)
    start_ms: int = 0


@dataclass(frozen=True, slots=True)
class Action:
    """One timeline entry (already expanded: ``every``/``times`` produce several)."""

    at_ms: int
    action: str
    group: str | None = None
    member: int | str | None = None
    count: int = 1
    producer: str | None = None
    pipeline: str | None = None
    instance: int = 0
    duration_ms: int = 0
    downtime_ms: int = 0
    interval_ms: int = 0
    graceful: bool = True
    rate: float | None = None
    mode: str = "sync"
    partition: int | None = None
    key_path: str = ""


@dataclass(frozen=True, slots=True)
class LogLayout:
    """Segment settings of the written directory (Kafka topic config names in comments)."""

    segment_bytes: int = 1024 * 1024 * 1024  # segment.bytes of data topics
    internal_segment_bytes: int = 104_857_600  # offsets.topic.segment.bytes & co.
    segment_ms: int = 7 * 24 * 3600 * 1000  # segment.ms
    index_interval_bytes: int = 4096  # index.interval.bytes


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    description: str
    seed: int
    duration_ms: int
    start_ms: int
    sample_interval_ms: int
    group_config: GroupCoordinatorConfig
    txn_config: TransactionCoordinatorConfig
    log: LogLayout
    topics: tuple[TopicSpec, ...]
    producers: tuple[ProducerSpec, ...]
    groups: tuple[GroupSpec, ...]
    pipelines: tuple[PipelineSpec, ...]
    timeline: tuple[Action, ...]
    parameters: Mapping[str, Any] = field(default_factory=dict)
    # Record per-commit ground truth lines (huge at scale; lag samples stay either way).
    record_commits: bool = True

    @property
    def end_ms(self) -> int:
        return self.start_ms + self.duration_ms

    def topic(self, name: str) -> TopicSpec:
        for t in self.topics:
            if t.name == name:
                return t
        raise KeyError(name)


# ----------------------------------------------------------------------------- actions

# action -> (required keys, optional keys) beyond "at", "action", "every", "times"
_ACTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "join": (("group",), ("count",)),
    "leave": (("group", "member"), ()),
    "crash": (("group", "member"), ()),
    "restart": (("group", "member"), ("downtime", "graceful")),
    "rolling_restart": (("group",), ("downtime", "interval", "graceful")),
    "pause": (("group", "member", "duration"), ()),
    "freeze": (("group", "member", "duration"), ()),
    "set_processing_rate": (("group", "rate"), ("member",)),
    "commit": (("group", "member"), ("mode",)),
    "delete_group": (("group",), ()),
    "set_produce_rate": (("producer", "rate"), ()),
    "txn_abort": (("pipeline",), ("instance",)),
    "txn_hang": (("pipeline", "duration"), ("instance",)),
    "txn_zombie": (("pipeline", "duration"), ("instance",)),
    "txn_lose_marker": (("pipeline", "partition"), ("instance",)),
}
ACTIONS = tuple(_ACTIONS)

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}


# ----------------------------------------------------------------------------- reading


def load_scenario(
    source: str | Path,
    *,
    params: Mapping[str, str] | None = None,
    seed: int | None = None,
) -> Scenario:
    """Read a scenario file, or a catalogue scenario by name.

    Args:
        source: a path to a ``.toml`` file, or the name of a catalogue scenario.
        params: overrides of ``[parameters]`` values (strings, converted to the default's type).
        seed: overrides ``scenario.seed``.

    Raises:
        ScenarioError: the file is missing, not TOML, or invalid (the key path is named).
    """
    from offsetscope.sim.scenarios.catalogue import catalogue_path

    path = Path(source)
    if not path.suffix:
        found = catalogue_path(str(source))
        if found is None:
            raise ScenarioError(
                "", f"no scenario file {source!r} and no catalogue entry of that name"
            )
        path = found
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError("", f"scenario file {path} does not exist") from None
    return parse_scenario(text, params=params, seed=seed, origin=str(path))


def parse_scenario(
    text: str,
    *,
    params: Mapping[str, str] | None = None,
    seed: int | None = None,
    origin: str = "<string>",
) -> Scenario:
    """Parse scenario TOML text (see :func:`load_scenario`)."""
    try:
        tree = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError("", f"{origin} is not valid TOML: {exc}") from None
    return scenario_from_tree(tree, params=params, seed=seed)


def scenario_from_tree(
    tree: Mapping[str, Any],
    *,
    params: Mapping[str, str] | None = None,
    seed: int | None = None,
) -> Scenario:
    """Build a :class:`Scenario` from a parsed TOML tree."""
    _keys(
        tree,
        "",
        (),
        (
            "scenario",
            "parameters",
            "broker",
            "log",
            "topics",
            "producers",
            "groups",
            "pipelines",
            "timeline",
        ),
    )
    parameters = _parameters(tree.get("parameters", {}), params or {})
    tree = _substitute(tree, parameters, "")
    head = _table(tree.get("scenario"), "scenario")
    _keys(
        head,
        "scenario",
        ("name",),
        (
            "description",
            "seed",
            "duration",
            "start_ms",
            "sample_interval",
            "record_commits",
        ),
    )
    name = _str(head["name"], "scenario.name")
    duration = _duration(head.get("duration", "5m"), "scenario.duration")
    if duration <= 0:
        raise ScenarioError("scenario.duration", "must be positive")
    group_config, txn_config = _broker(_table(tree.get("broker", {}), "broker"))
    topics = tuple(
        _topic(_table(t, f"topics[{i}]"), f"topics[{i}]")
        for i, t in enumerate(_array(tree.get("topics", []), "topics"))
    )
    if not topics:
        raise ScenarioError("topics", "a scenario needs at least one topic")
    names = [t.name for t in topics]
    for i, n in enumerate(names):
        if n in names[:i]:
            raise ScenarioError(f"topics[{i}].name", f"topic {n!r} is declared twice")
        if n.startswith("__"):
            raise ScenarioError(f"topics[{i}].name", "names starting with '__' are internal topics")
    known_topics = set(names)
    producers = tuple(
        _producer(_table(p, f"producers[{i}]"), f"producers[{i}]", known_topics)
        for i, p in enumerate(_array(tree.get("producers", []), "producers"))
    )
    groups: list[GroupSpec] = []
    for i, g in enumerate(_array(tree.get("groups", []), "groups")):
        groups.extend(_groups(_table(g, f"groups[{i}]"), f"groups[{i}]", known_topics))
    pipelines = tuple(
        _pipeline(_table(p, f"pipelines[{i}]"), f"pipelines[{i}]", known_topics)
        for i, p in enumerate(_array(tree.get("pipelines", []), "pipelines"))
    )
    _unique([p.name for p in producers], "producers", "name")
    _unique([g.client_prefix for g in groups], "groups", "name")
    _unique([p.name for p in pipelines], "pipelines", "name")
    group_ids = {g.id for g in groups}
    for i, p in enumerate(pipelines):
        if p.group in group_ids or p.group in [q.group for q in pipelines[:i]]:
            raise ScenarioError(f"pipelines[{i}].group", f"group {p.group!r} has other members")
    timeline = _timeline(
        _array(tree.get("timeline", []), "timeline"),
        duration,
        {g.id: g for g in reversed(groups)},
        {p.name for p in producers},
        {p.name: p for p in pipelines},
        {t.name: t.partitions for t in topics},
    )
    return Scenario(
        name=name,
        description=_str(head.get("description", ""), "scenario.description"),
        seed=seed if seed is not None else _int(head.get("seed", 0), "scenario.seed"),
        duration_ms=duration,
        start_ms=_int(head.get("start_ms", DEFAULT_START_MS), "scenario.start_ms"),
        sample_interval_ms=_duration(
            head.get("sample_interval", "10s"), "scenario.sample_interval"
        ),
        group_config=group_config,
        txn_config=txn_config,
        log=_log(_table(tree.get("log", {}), "log")),
        topics=topics,
        producers=producers,
        groups=tuple(groups),
        pipelines=pipelines,
        timeline=timeline,
        parameters=parameters,
        record_commits=_bool(head.get("record_commits", True), "scenario.record_commits"),
    )


# ----------------------------------------------------------------------------- sections


def _parameters(table: Any, overrides: Mapping[str, str]) -> dict[str, Any]:
    defaults = _table(table, "parameters")
    out: dict[str, Any] = {}
    for key, value in defaults.items():
        if not isinstance(value, str | int | float | bool):
            raise ScenarioError(f"parameters.{key}", "must be a string, number or boolean")
        out[key] = value
    for key, text in overrides.items():
        if key not in out:
            known = ", ".join(sorted(out)) or "none"
            raise ScenarioError(f"parameters.{key}", f"unknown parameter (known: {known})")
        out[key] = _convert_param(text, out[key], f"parameters.{key}")
    return out


def _convert_param(text: str, default: Any, path: str) -> Any:
    try:
        if isinstance(default, bool):
            if text.lower() not in ("true", "false"):
                raise ValueError(text)
            return text.lower() == "true"
        if isinstance(default, int):
            return int(text.replace("_", ""))
        if isinstance(default, float):
            return float(text)
    except ValueError:
        raise ScenarioError(path, f"{text!r} is not a {type(default).__name__}") from None
    return text


def _substitute(value: Any, parameters: Mapping[str, Any], path: str) -> Any:
    """Replace every string value ``"$name"`` by the parameter's value."""
    if isinstance(value, str) and value.startswith("$"):
        name = value[1:]
        if name not in parameters:
            raise ScenarioError(path, f"unknown parameter {value!r}")
        return parameters[name]
    if isinstance(value, Mapping):
        if path == "" and "parameters" in value:
            value = {k: v for k, v in value.items() if k != "parameters"}
        return {k: _substitute(v, parameters, _join(path, k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, parameters, f"{path}[{i}]") for i, v in enumerate(value)]
    return value


def _broker(
    table: Mapping[str, Any],
) -> tuple[GroupCoordinatorConfig, TransactionCoordinatorConfig]:
    group_fields = {f.name: f for f in dataclasses.fields(GroupCoordinatorConfig)}
    txn_fields = {f.name: f for f in dataclasses.fields(TransactionCoordinatorConfig)}
    group_kw: dict[str, Any] = {}
    txn_kw: dict[str, Any] = {}
    for key, raw in table.items():
        path = f"broker.{key}"
        if key not in group_fields and key not in txn_fields:
            known = ", ".join(sorted({*group_fields, *txn_fields}))
            raise ScenarioError(path, f"unknown key (known: {known})")
        example = (group_fields.get(key) or txn_fields[key]).default
        if isinstance(example, bool):
            value: Any = _bool(raw, path)
        elif key.endswith("_ms"):
            value = _duration(raw, path)
        else:
            value = _int(raw, path)
        if key in group_fields:
            group_kw[key] = value
        if key in txn_fields:
            txn_kw[key] = value
    # One broker: both coordinators see the same offsets topic partition count.
    if "offsets_topic_partitions" in group_kw:
        txn_kw["offsets_topic_partitions"] = group_kw["offsets_topic_partitions"]
    group_config = _build(GroupCoordinatorConfig, group_kw, "broker")
    txn_config = _build(TransactionCoordinatorConfig, txn_kw, "broker")
    return group_config, txn_config


def _build(cls: Callable[..., T], kwargs: dict[str, Any], path: str) -> T:
    try:
        return cls(**kwargs)
    except InvalidConfigError as exc:
        raise ScenarioError(_join(path, exc.key_path), str(exc).split(": ", 1)[-1]) from None


def _log(table: Mapping[str, Any]) -> LogLayout:
    _keys(
        table,
        "log",
        (),
        ("segment_bytes", "internal_segment_bytes", "segment_ms", "index_interval_bytes"),
    )
    default = LogLayout()
    layout = LogLayout(
        segment_bytes=_int(table.get("segment_bytes", default.segment_bytes), "log.segment_bytes"),
        internal_segment_bytes=_int(
            table.get("internal_segment_bytes", default.internal_segment_bytes),
            "log.internal_segment_bytes",
        ),
        segment_ms=_duration(table.get("segment_ms", default.segment_ms), "log.segment_ms"),
        index_interval_bytes=_int(
            table.get("index_interval_bytes", default.index_interval_bytes),
            "log.index_interval_bytes",
        ),
    )
    for key in ("segment_bytes", "internal_segment_bytes"):
        # Kafka's minimum segment.bytes is 14 bytes (one legacy record); a batch must fit.
        if getattr(layout, key) < 1024:
            raise ScenarioError(f"log.{key}", "must be at least 1024 bytes")
    return layout


def _topic(table: Mapping[str, Any], path: str) -> TopicSpec:
    _keys(table, path, ("name", "partitions"), ())
    name = _str(table["name"], f"{path}.name")
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,249}", name):
        raise ScenarioError(f"{path}.name", f"{name!r} is not a legal Kafka topic name")
    partitions = _int(table["partitions"], f"{path}.partitions")
    if partitions < 1:
        raise ScenarioError(f"{path}.partitions", "must be at least 1")
    return TopicSpec(name, partitions)


def _producer(table: Mapping[str, Any], path: str, topics: set[str]) -> ProducerSpec:
    _keys(
        table,
        path,
        ("name", "topic", "rate"),
        ("linger", "keys", "value_bytes", "idempotent", "start", "stop"),
    )
    spec = ProducerSpec(
        name=_str(table["name"], f"{path}.name"),
        topic=_known(_str(table["topic"], f"{path}.topic"), topics, f"{path}.topic", "topic"),
        rate=_float(table["rate"], f"{path}.rate"),
        linger_ms=_duration(table.get("linger", 100), f"{path}.linger"),
        keys=_int(table.get("keys", 1000), f"{path}.keys"),
        value_bytes=_int(table.get("value_bytes", 64), f"{path}.value_bytes"),
        idempotent=_bool(table.get("idempotent", True), f"{path}.idempotent"),
        start_ms=_duration(table.get("start", 0), f"{path}.start"),
        stop_ms=None if "stop" not in table else _duration(table["stop"], f"{path}.stop"),
    )
    if spec.rate < 0:
        raise ScenarioError(f"{path}.rate", "must not be negative")
    if spec.linger_ms < 1:
        raise ScenarioError(f"{path}.linger", "must be at least 1 ms")
    if spec.keys < 0 or spec.value_bytes < 0:
        raise ScenarioError(f"{path}.keys", "keys and value_bytes must not be negative")
    return spec


_CONSUMER_KEYS = {
    "assignors": "assignors",
    "session_timeout": "session_timeout_ms",
    "heartbeat_interval": "heartbeat_interval_ms",
    "max_poll_interval": "max_poll_interval_ms",
    "max_poll_records": "max_poll_records",
    "commit": "commit",
    "auto_commit_interval": "auto_commit_interval_ms",
    "isolation_level": "isolation_level",
    "auto_offset_reset": "auto_offset_reset",
    "static": "static",
    "processing_rate": "processing_rate",
    "poll_idle": "poll_idle_ms",
    "retry_backoff": "retry_backoff_ms",
    "rack": "rack",
}


def _consumer(table: Mapping[str, Any], path: str, default: ConsumerSpec) -> ConsumerSpec:
    kw: dict[str, Any] = {}
    for key, attr in _CONSUMER_KEYS.items():
        if key not in table:
            continue
        where = f"{path}.{key}"
        raw = table[key]
        if attr.endswith("_ms"):
            kw[attr] = _duration(raw, where)
        elif attr == "assignors":
            names = tuple(_str(a, f"{where}[{i}]") for i, a in enumerate(_array(raw, where)))
            if not names:
                raise ScenarioError(where, "needs at least one assignor")
            for i, a in enumerate(names):
                _known(a, set(ASSIGNOR_NAMES), f"{where}[{i}]", "assignor")
            kw[attr] = names
        elif attr in ("static",):
            kw[attr] = _bool(raw, where)
        elif attr == "processing_rate":
            kw[attr] = _float(raw, where)
        elif attr == "max_poll_records":
            kw[attr] = _int(raw, where)
        elif attr == "rack":
            kw[attr] = _str(raw, where)
        else:
            kw[attr] = _str(raw, where)
    spec = dataclasses.replace(default, **kw)
    checks: tuple[tuple[bool, str, str], ...] = (
        (spec.commit in COMMIT_MODES, "commit", f"must be one of {', '.join(COMMIT_MODES)}"),
        (
            spec.isolation_level in ISOLATION_LEVELS,
            "isolation_level",
            f"must be one of {', '.join(ISOLATION_LEVELS)}",
        ),
        (
            spec.auto_offset_reset in OFFSET_RESETS,
            "auto_offset_reset",
            f"must be one of {', '.join(OFFSET_RESETS)}",
        ),
        (spec.max_poll_records >= 1, "max_poll_records", "must be at least 1"),
        (spec.processing_rate >= 0, "processing_rate", "must not be negative"),
        (spec.heartbeat_interval_ms >= 1, "heartbeat_interval", "must be positive"),
        (
            spec.heartbeat_interval_ms < spec.session_timeout_ms,
            "heartbeat_interval",
            "must be lower than session_timeout (the Java consumer refuses otherwise)",
        ),
        (spec.max_poll_interval_ms >= 1, "max_poll_interval", "must be positive"),
        (spec.auto_commit_interval_ms >= 1, "auto_commit_interval", "must be positive"),
        (spec.poll_idle_ms >= 1, "poll_idle", "must be positive"),
        (spec.retry_backoff_ms >= 1, "retry_backoff", "must be positive"),
    )
    for ok, key, message in checks:
        if not ok:
            raise ScenarioError(f"{path}.{key}", message)
    return spec


def _groups(table: Mapping[str, Any], path: str, topics: set[str]) -> list[GroupSpec]:
    _keys(
        table,
        path,
        ("id", "topics"),
        ("name", "count", "members", "start", "stagger", *_CONSUMER_KEYS),
    )
    template = _str(table["id"], f"{path}.id")
    count = _int(table.get("count", 1), f"{path}.count")
    if count < 1:
        raise ScenarioError(f"{path}.count", "must be at least 1")
    if count > 1 and "{i" not in template:
        raise ScenarioError(f"{path}.id", "with count > 1 the id must contain '{i}'")
    subscribed = tuple(
        _known(_str(t, f"{path}.topics[{i}]"), topics, f"{path}.topics[{i}]", "topic")
        for i, t in enumerate(_array(table["topics"], f"{path}.topics"))
    )
    if not subscribed:
        raise ScenarioError(f"{path}.topics", "a group subscribes to at least one topic")
    members = _int(table.get("members", 1), f"{path}.members")
    if members < 0:
        raise ScenarioError(f"{path}.members", "must not be negative")
    consumer = _consumer(table, path, ConsumerSpec())
    start = _duration(table.get("start", 0), f"{path}.start")
    stagger = _duration(table.get("stagger", 0), f"{path}.stagger")
    name_template = _str(table.get("name", ""), f"{path}.name")
    out = []
    for i in range(count):
        try:
            group_id = template.format(i=i)
        except (KeyError, IndexError, ValueError) as exc:
            raise ScenarioError(f"{path}.id", f"bad template: {exc}") from None
        try:
            name = name_template.format(i=i)
        except (KeyError, IndexError, ValueError) as exc:
            raise ScenarioError(f"{path}.name", f"bad template: {exc}") from None
        if not group_id:
            raise ScenarioError(f"{path}.id", "must not be empty")
        out.append(GroupSpec(group_id, subscribed, members, consumer, start, stagger, name))
    return out


def _pipeline(table: Mapping[str, Any], path: str, topics: set[str]) -> PipelineSpec:
    _keys(
        table,
        path,
        ("name", "input", "output"),
        (
            "group",
            "instances",
            "transactional_id",
            "transaction_timeout",
            "commit_interval",
            "client_transaction_version",
            "start",
            *_CONSUMER_KEYS,
        ),
    )
    name = _str(table["name"], f"{path}.name")
    # A read-process-write consumer reads committed data and commits through the transaction.
    default = ConsumerSpec(isolation_level="read_committed", commit="none")
    consumer = _consumer(table, path, default)
    if consumer.commit != "none":
        raise ScenarioError(f"{path}.commit", "a pipeline commits offsets in its transactions")
    spec = PipelineSpec(
        name=name,
        group=_str(table.get("group", name), f"{path}.group"),
        input=_known(_str(table["input"], f"{path}.input"), topics, f"{path}.input", "topic"),
        output=_known(_str(table["output"], f"{path}.output"), topics, f"{path}.output", "topic"),
        instances=_int(table.get("instances", 1), f"{path}.instances"),
        consumer=consumer,
        transactional_id=_str(
            table.get("transactional_id", "{pipeline}-{instance}"), f"{path}.transactional_id"
        ),
        transaction_timeout_ms=_duration(
            table.get("transaction_timeout", 60_000), f"{path}.transaction_timeout"
        ),
        commit_interval_ms=_duration(
            table.get("commit_interval", 1_000), f"{path}.commit_interval"
        ),
        client_transaction_version=_int(
            table.get("client_transaction_version", 0), f"{path}.client_transaction_version"
        ),
        start_ms=_duration(table.get("start", 0), f"{path}.start"),
    )
    if spec.input == spec.output:
        raise ScenarioError(f"{path}.output", "must differ from input")
    if spec.instances < 1:
        raise ScenarioError(f"{path}.instances", "must be at least 1")
    if spec.client_transaction_version not in (0, 2):
        raise ScenarioError(f"{path}.client_transaction_version", "must be 0 or 2")
    if spec.commit_interval_ms < 1:
        raise ScenarioError(f"{path}.commit_interval", "must be positive")
    try:
        spec.transactional_id.format(pipeline=name, instance=0)
    except (KeyError, IndexError, ValueError) as exc:
        raise ScenarioError(f"{path}.transactional_id", f"bad template: {exc}") from None
    return spec


def _timeline(
    entries: Sequence[Any],
    duration: int,
    groups: Mapping[str, GroupSpec],
    producers: set[str],
    pipelines: Mapping[str, PipelineSpec],
    partition_counts: Mapping[str, int],
) -> tuple[Action, ...]:
    out: list[tuple[int, int, Action]] = []
    for i, raw in enumerate(entries):
        path = f"timeline[{i}]"
        table = _table(raw, path)
        action = _str(table.get("action", ""), f"{path}.action")
        if action not in _ACTIONS:
            raise ScenarioError(
                f"{path}.action", f"unknown action {action!r} (known: {', '.join(ACTIONS)})"
            )
        required, optional = _ACTIONS[action]
        _keys(table, path, ("at", "action", *required), (*optional, "every", "times"))
        at = _duration(table["at"], f"{path}.at")
        if not 0 <= at <= duration:
            raise ScenarioError(
                f"{path}.at", f"must lie within the scenario's duration ({duration} ms)"
            )
        kw: dict[str, Any] = {"action": action, "key_path": path}
        if "group" in table:
            group = _str(table["group"], f"{path}.group")
            if group not in groups:
                raise ScenarioError(f"{path}.group", f"unknown group {group!r}")
            kw["group"] = group
        if "member" in table:
            member = table["member"]
            if isinstance(member, bool) or not isinstance(member, int | str):
                raise ScenarioError(f"{path}.member", "must be a member index or client id")
            kw["member"] = member
        if "count" in table:
            kw["count"] = _int(table["count"], f"{path}.count")
        if "producer" in table:
            kw["producer"] = _known(
                _str(table["producer"], f"{path}.producer"),
                producers,
                f"{path}.producer",
                "producer",
            )
        if "pipeline" in table:
            pipeline = _str(table["pipeline"], f"{path}.pipeline")
            if pipeline not in pipelines:
                raise ScenarioError(f"{path}.pipeline", f"unknown pipeline {pipeline!r}")
            kw["pipeline"] = pipeline
            instance = _int(table.get("instance", 0), f"{path}.instance")
            if not 0 <= instance < pipelines[pipeline].instances:
                raise ScenarioError(f"{path}.instance", "no such pipeline instance")
            kw["instance"] = instance
        if "partition" in table:
            pipeline_spec = pipelines[kw["pipeline"]]
            partition = _int(table["partition"], f"{path}.partition")
            outputs = partition_counts.get(pipeline_spec.output, 0)
            if not 0 <= partition < outputs:
                raise ScenarioError(
                    f"{path}.partition", f"{pipeline_spec.output} has no partition {partition}"
                )
            kw["partition"] = partition
        for key, attr in (("duration", "duration_ms"), ("downtime", "downtime_ms")):
            if key in table:
                kw[attr] = _duration(table[key], f"{path}.{key}")
        if "interval" in table:
            kw["interval_ms"] = _duration(table["interval"], f"{path}.interval")
        if "graceful" in table:
            kw["graceful"] = _bool(table["graceful"], f"{path}.graceful")
        if "rate" in table:
            kw["rate"] = _float(table["rate"], f"{path}.rate")
            if kw["rate"] < 0:
                raise ScenarioError(f"{path}.rate", "must not be negative")
        if "mode" in table:
            mode = _str(table["mode"], f"{path}.mode")
            kw["mode"] = _known(mode, {"sync", "async"}, f"{path}.mode", "commit mode")
        every = _duration(table.get("every", 0), f"{path}.every")
        times = _int(table.get("times", 1), f"{path}.times")
        if times < 1:
            raise ScenarioError(f"{path}.times", "must be at least 1")
        if times > 1 and every <= 0:
            raise ScenarioError(f"{path}.every", "repeating an action needs a positive 'every'")
        for n in range(times):
            when = at + n * every
            if when > duration:
                break
            out.append((when, i, Action(at_ms=when, **kw)))
    out.sort(key=lambda e: (e[0], e[1]))
    return tuple(a for _, _, a in out)


# ----------------------------------------------------------------------------- values


def _keys(
    table: Mapping[str, Any], path: str, required: Sequence[str], optional: Sequence[str]
) -> None:
    allowed = set(required) | set(optional)
    for key in table:
        if key not in allowed:
            raise ScenarioError(
                _join(path, key), f"unknown key (known: {', '.join(sorted(allowed))})"
            )
    for key in required:
        if key not in table:
            raise ScenarioError(_join(path, key), "required key is missing")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _table(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        raise ScenarioError(path, "required table is missing")
    if not isinstance(value, Mapping):
        raise ScenarioError(path, f"expected a table, got {type(value).__name__}")
    return value


def _array(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise ScenarioError(path, f"expected an array, got {type(value).__name__}")
    return value


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise ScenarioError(path, f"expected a string, got {type(value).__name__} {value!r}")
    return value


def _int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScenarioError(path, f"expected an integer, got {type(value).__name__} {value!r}")
    return value


def _float(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScenarioError(path, f"expected a number, got {type(value).__name__} {value!r}")
    return float(value)


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise ScenarioError(path, f"expected true or false, got {type(value).__name__} {value!r}")
    return value


def _duration(value: Any, path: str) -> int:
    """Milliseconds from an integer or a string with a unit (``"30s"``)."""
    if isinstance(value, bool):
        raise ScenarioError(path, f"expected a duration, got bool {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ScenarioError(path, "a duration must not be negative")
        return value
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match:
            return round(float(match.group(1)) * _UNIT_MS[match.group(2)])
    raise ScenarioError(
        path, f"expected a duration (milliseconds, or '250ms', '30s', '5m', '1h'), got {value!r}"
    )


def _known(value: str, known: set[str], path: str, what: str) -> str:
    if value not in known:
        raise ScenarioError(path, f"unknown {what} {value!r} (known: {', '.join(sorted(known))})")
    return value


def _unique(names: Sequence[str], section: str, key: str) -> None:
    for i, name in enumerate(names):
        if name in names[:i]:
            raise ScenarioError(f"{section}[{i}].{key}", f"{name!r} is used twice")
