"""Configuration: ``conf/base.toml`` overlaid by ``conf/<env>.toml``, as frozen dataclasses.

Only entry points call :func:`load`; everything else receives the resulting :class:`Config`.
The loader is generic: each section is a frozen dataclass, and the TOML tree is mapped onto the
dataclass tree by field name and type hint. Unknown keys, missing keys without a default, and
values of the wrong type fail at load time with :class:`InvalidConfigError` naming the dotted key
path (for example ``sources.kafka.starting_offsets``), so a typo never becomes a silent default.

Secrets are never values in ``conf/``: a setting that holds a secret is written as a reference
(``"env:NAME"`` or ``"secret:scope/key"``) and resolved by :mod:`offsetscope.secrets` at the edge.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


class InvalidConfigError(ValueError):
    """A configuration file or value is invalid; ``key_path`` names the offending key."""

    def __init__(self, key_path: str, message: str) -> None:
        super().__init__(f"config key {key_path or '<root>'}: {message}")
        self.key_path = key_path


# A secret reference: ``env:NAME`` (an environment variable) or ``secret:scope/key`` (a
# Databricks secret scope; scope and key names as Databricks allows them). Parsed here so the
# loader can refuse literal secrets; resolved only by :mod:`offsetscope.secrets`, at the edge.
SECRET_REFERENCE = re.compile(
    r"^(?:env:(?P<env>[A-Za-z_][A-Za-z0-9_]*)"
    r"|secret:(?P<scope>[A-Za-z0-9_.@-]{1,128})/(?P<key>[A-Za-z0-9_.-]{1,128}))$"
)


def require_reference(key_path: str, value: str) -> None:
    """Refuse a secret written as a literal value (the message never repeats the value).

    Raises:
        InvalidConfigError: ``value`` is neither empty nor a secret reference.
    """
    if value and not SECRET_REFERENCE.match(value):
        raise InvalidConfigError(
            key_path,
            "holds a secret, so it must be a reference (env:NAME or secret:scope/key), not a"
            " literal value",
        )


# --------------------------------------------------------------------------- sections


_KAFKA_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


@dataclass(frozen=True, slots=True)
class KafkaSecurityConfig:
    """How offsetscope authenticates to a cluster, once for every client it builds.

    :mod:`offsetscope.secrets` maps these settings to the Java client's properties (Spark's
    Kafka source, ``kafka.`` prefix) and to librdkafka's (confluent-kafka AdminClient). Settings
    holding a secret are references (``env:NAME``, ``secret:scope/key``), never literals.
    """

    protocol: str = "PLAINTEXT"  # PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL
    sasl_mechanism: str = ""  # PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512 | OAUTHBEARER
    sasl_username: str = ""
    sasl_password: str = ""  # reference
    # OAUTHBEARER with OIDC client credentials (KIP-768).
    oauth_token_endpoint_url: str = ""
    oauth_client_id: str = ""
    oauth_client_secret: str = ""  # reference
    oauth_scope: str = ""
    # PEM files. The keystore (mTLS) holds the private key (PKCS#8) and the certificate chain
    # in one file, the one form both clients read.
    ssl_ca_location: str = ""
    ssl_keystore_location: str = ""
    ssl_key_password: str = ""  # reference
    ssl_endpoint_identification: bool = True
    # Prefix of the Java client's class names in sasl.jaas.config: "" for Apache Kafka's
    # client (Spark), "kafkashaded." for the Databricks runtime's shaded copy.
    java_class_prefix: str = ""

    def __post_init__(self) -> None:
        if self.protocol not in _KAFKA_PROTOCOLS:
            raise InvalidConfigError("protocol", f"must be one of {', '.join(_KAFKA_PROTOCOLS)}")
        sasl = self.protocol.startswith("SASL_")
        if sasl and self.sasl_mechanism not in _SASL_MECHANISMS:
            raise InvalidConfigError(
                "sasl_mechanism", f"{self.protocol} needs one of {', '.join(_SASL_MECHANISMS)}"
            )
        if not sasl and self.sasl_mechanism:
            raise InvalidConfigError("sasl_mechanism", f"{self.protocol} does not use SASL")
        for key in ("sasl_password", "oauth_client_secret", "ssl_key_password"):
            require_reference(key, getattr(self, key))
        needs: tuple[str, ...] = ()
        if self.sasl_mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            needs = ("sasl_username", "sasl_password")
        elif self.sasl_mechanism == "OAUTHBEARER":
            needs = ("oauth_token_endpoint_url", "oauth_client_id", "oauth_client_secret")
        for key in needs:
            if not getattr(self, key):
                raise InvalidConfigError(key, f"{self.sasl_mechanism} needs it")
        if not self.protocol.endswith("SSL"):
            for key in ("ssl_ca_location", "ssl_keystore_location", "ssl_key_password"):
                if getattr(self, key):
                    raise InvalidConfigError(key, f"{self.protocol} does not use TLS")


@dataclass(frozen=True, slots=True)
class KafkaSourceConfig:
    """Spark's Kafka source on a real cluster's internal topics."""

    bootstrap_servers: str = "127.0.0.1:9092"
    offsets_topic: str = "__consumer_offsets"
    transaction_topic: str = "__transaction_state"
    starting_offsets: str = "earliest"
    # Bounds the first catch-up batch on a big cluster.
    max_offsets_per_trigger: int = 500_000
    # Compaction removes records under a stale checkpoint; the pipeline audits what it skipped.
    fail_on_data_loss: bool = False
    isolation_level: str = "read_committed"
    # Spark's consumer-based offset reader joins consumer groups named <prefix>-<uuid>-...; the
    # principal needs READ on groups with this prefix (docs/security.md).
    group_id_prefix: str = "offsetscope-ingest"
    security: KafkaSecurityConfig = field(default_factory=KafkaSecurityConfig)
    # Extra consumer properties passed through verbatim (security settings, timeouts).
    # Values may be secret references ("env:NAME").
    options: Mapping[str, str] = field(default_factory=dict)
    # librdkafka properties of the end-offset sampler's AdminClient (its names differ from the
    # Java client's: sasl.mechanisms, ssl.ca.location ...); values may be "env:NAME" too.
    admin_options: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.isolation_level not in ("read_committed", "read_uncommitted"):
            raise InvalidConfigError("isolation_level", f"unknown level {self.isolation_level!r}")
        if self.max_offsets_per_trigger <= 0:
            raise InvalidConfigError("max_offsets_per_trigger", "must be positive")


@dataclass(frozen=True, slots=True)
class SegmentSourceConfig:
    """A Kafka log directory (bundled coordinator output, or segments copied off a broker)."""

    log_dir: str = ".work/logdir"
    # Records per micro-batch when catching up.
    max_records_per_trigger: int = 1_000_000
    # Partition directories named after these topics hold the internal topics' records (a copy
    # of a mirror's log directory keeps the mirror's names).
    offsets_topic: str = "__consumer_offsets"
    transaction_topic: str = "__transaction_state"
    # Where the data topics' partition directories are, for end offsets computed from segments
    # (log start, high watermark, last stable offset); empty = ``log_dir``.
    data_log_dir: str = ""

    def __post_init__(self) -> None:
        if self.max_records_per_trigger <= 0:
            raise InvalidConfigError("max_records_per_trigger", "must be positive")


@dataclass(frozen=True, slots=True)
class SourcesConfig:
    kind: str = "segments"
    kafka: KafkaSourceConfig = field(default_factory=KafkaSourceConfig)
    segments: SegmentSourceConfig = field(default_factory=SegmentSourceConfig)

    def __post_init__(self) -> None:
        if self.kind not in ("kafka", "segments"):
            raise InvalidConfigError("kind", f"must be 'kafka' or 'segments', not {self.kind!r}")


_UMASK = re.compile(r"^0?[0-7]{3}$")


@dataclass(frozen=True, slots=True)
class StorageConfig:
    """Where tables and checkpoints live, and the catalog schema they are registered in."""

    catalog: str = ""
    schema: str = "offsetscope"
    warehouse_dir: str = ".work/warehouse"
    checkpoint_dir: str = ".work/checkpoints"
    metastore_dir: str = ".work/metastore"
    # Octal umask for everything written locally (tables, checkpoints, metastore): applied to
    # the process and to Hadoop's fs.permissions.umask-mode. "027": no access for others.
    umask: str = "027"

    def __post_init__(self) -> None:
        if not _UMASK.match(self.umask):
            raise InvalidConfigError("umask", f"{self.umask!r} is not an octal umask like '027'")


@dataclass(frozen=True, slots=True)
class TableNames:
    """Physical name of every table the pipeline keeps, by its logical name.

    The logical names are the tables of ``docs/design.md`` ("Tables").

    Names are unqualified; ``storage.catalog`` and ``storage.schema`` qualify them.
    """

    raw_records: str = "raw_records"
    offset_commits: str = "offset_commits"
    group_metadata_events: str = "group_metadata_events"
    consumer_group_events: str = "consumer_group_events"
    transaction_log_events: str = "transaction_log_events"
    control_records: str = "control_records"
    quarantine: str = "quarantine"
    group_generations: str = "group_generations"
    group_state_transitions: str = "group_state_transitions"
    groups_current: str = "groups_current"
    member_sessions: str = "member_sessions"
    partition_assignments: str = "partition_assignments"
    end_offsets: str = "end_offsets"
    partition_lag: str = "partition_lag"
    transactions: str = "transactions"
    transaction_status_timeline: str = "transaction_status_timeline"
    fold_state: str = "fold_state"
    batch_audit: str = "batch_audit"
    alerts: str = "alerts"
    alert_notifications: str = "alert_notifications"
    quality_results: str = "quality_results"
    quality_quarantine: str = "quality_quarantine"

    def __post_init__(self) -> None:
        seen: dict[str, str] = {}
        for f in dataclasses.fields(self):
            name = getattr(self, f.name)
            if not _TABLE_NAME.match(name):
                raise InvalidConfigError(f.name, f"{name!r} is not a plain table name")
            if name in seen:
                raise InvalidConfigError(f.name, f"{name!r} is also the name of {seen[name]}")
            seen[name] = f.name


_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TRIGGERS = ("available_now", "processing_time")


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """The ingest query: its name (checkpoint folder, Delta idempotency app id) and trigger."""

    query_name: str = "offsetscope_ingest"
    # "available_now": read what is there in bounded micro-batches, then stop;
    # "processing_time": run continuously, one micro-batch every ``processing_time``.
    trigger: str = "available_now"
    processing_time: str = "30 seconds"
    # Sample the data topics' end offsets (AdminClient or data-topic segments) every micro-batch
    # and rebuild partition_lag for the partitions committed in it.
    sample_end_offsets: bool = True
    # Lag at its own cadence: at most one end-offset sample (end_offsets row, partition_lag
    # rows) per partition and interval of sample time, the intervals aligned to the epoch as
    # Spark aligns processing-time triggers; unset: every micro-batch. Commits, groups and
    # positions stay per batch; only how often lag is materialised changes.
    lag_interval: str | None = None
    # Consumer groups that read with isolation.level=read_committed: their lag is measured
    # against the last stable offset (Kafka's log does not say how a group reads).
    read_committed_groups: tuple[str, ...] = ()
    # Tables written at the same time by a micro-batch (each table's writes stay in order).
    write_threads: int = 4
    # Delta table properties of every table (change data feed is set per table).
    log_retention: str = "interval 30 days"
    deleted_file_retention: str = "interval 7 days"

    def __post_init__(self) -> None:
        if self.trigger not in _TRIGGERS:
            raise InvalidConfigError("trigger", f"must be one of {', '.join(_TRIGGERS)}")
        if not _TABLE_NAME.match(self.query_name):
            raise InvalidConfigError("query_name", f"{self.query_name!r} is not a plain name")
        if self.write_threads < 1:
            raise InvalidConfigError("write_threads", "must be at least 1")
        _check_durations(self, "lag_interval")

    @property
    def lag_interval_ms(self) -> int | None:
        return None if self.lag_interval is None else duration_ms(self.lag_interval)


@dataclass(frozen=True, slots=True)
class SparkConfig:
    master: str = "local[2]"
    app_name: str = "offsetscope"
    shuffle_partitions: int = 4
    jars_dir: str = "build/jvm/spark"
    conf: Mapping[str, str] = field(default_factory=dict)


# SCRAM user names: no "," or "=" (they would need escaping in the SCRAM exchange).
_USER_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_HEAP_SIZE = re.compile(r"^[1-9][0-9]*[kKmMgG]$")


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """The harness broker: one KRaft broker+controller JVM on loopback, for tests and the demo.

    Run from the jars ``make install`` resolves (``jars_dir``); data, logs, the generated
    ``server.properties`` and the chosen ports live under ``<work_dir>/<name>/``. The named
    settings map to Kafka broker properties (named in the comments); ``properties`` adds or
    overrides any other ``server.properties`` entry verbatim. Paths are relative to the project
    root (the folder holding ``conf/``). See :mod:`offsetscope.verify.harness.broker`.
    """

    jars_dir: str = "build/jvm/kafka"
    # DumpLogSegments runs from its own classpath (see deploy/jvm/kafka-tools/pom.xml).
    tools_jars_dir: str = "build/jvm/kafka-tools"
    work_dir: str = ".work/kafka"
    name: str = "default"
    host: str = "127.0.0.1"
    # 0 = choose a free port at the first start; chosen ports are kept in the work folder so a
    # restart on the same data finds the same controller endpoint.
    port: int = 0
    controller_port: int = 0
    # -Xmx of the broker JVM; the log cleaner's dedupe buffer must fit in it.
    heap: str = "768m"
    offsets_partitions: int = 3  # offsets.topic.num.partitions
    transaction_partitions: int = 3  # transaction.state.log.num.partitions
    group_initial_rebalance_delay_ms: int = 0  # group.initial.rebalance.delay.ms
    group_min_session_timeout_ms: int = 1_000  # group.min.session.timeout.ms
    group_max_session_timeout_ms: int = 300_000  # group.max.session.timeout.ms
    offsets_retention_minutes: int = 10_080  # offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 1_000  # offsets.retention.check.interval.ms
    # transaction.abort.timed.out.transaction.cleanup.interval.ms: how soon a timed-out
    # transaction is aborted by the coordinator.
    transaction_abort_timed_out_interval_ms: int = 1_000
    # transaction.remove.expired.transaction.cleanup.interval.ms
    transaction_remove_expired_interval_ms: int = 60_000
    transactional_id_expiration_ms: int = 604_800_000  # transactional.id.expiration.ms
    transaction_max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    log_cleaner_dedupe_buffer_bytes: int = 16_777_216  # log.cleaner.dedupe.buffer.size
    offsets_segment_bytes: int = 104_857_600  # offsets.topic.segment.bytes
    transaction_segment_bytes: int = 104_857_600  # transaction.state.log.segment.bytes
    # Off so a misspelt topic fails loudly instead of appearing with default settings.
    auto_create_topics: bool = False  # auto.create.topics.enable
    startup_timeout_s: float = 60.0
    stop_timeout_s: float = 30.0
    # The client listener: "PLAINTEXT", or "SASL_PLAINTEXT" (SCRAM-SHA-512 logins, Kafka's
    # StandardAuthorizer with ACLs, no access without one, ``super_user`` as the harness's own
    # principal with a password generated per data folder).
    listener_security: str = "PLAINTEXT"
    super_user: str = "admin"
    properties: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or self.name in (".", ".."):
            raise InvalidConfigError("name", f"must be a plain folder name, not {self.name!r}")
        for key in ("port", "controller_port"):
            value = getattr(self, key)
            if not 0 <= value <= 65_535:
                raise InvalidConfigError(key, f"{value} is not a port number (0 = choose one)")
        if self.port and self.port == self.controller_port:
            raise InvalidConfigError("controller_port", "must differ from port")
        if not _HEAP_SIZE.match(self.heap):
            raise InvalidConfigError("heap", f"{self.heap!r} is not a JVM size such as '768m'")
        for key in ("offsets_partitions", "transaction_partitions"):
            if getattr(self, key) < 1:
                raise InvalidConfigError(key, "must be at least 1")
        if self.startup_timeout_s <= 0 or self.stop_timeout_s <= 0:
            raise InvalidConfigError("startup_timeout_s", "timeouts must be positive")
        if self.listener_security not in ("PLAINTEXT", "SASL_PLAINTEXT"):
            raise InvalidConfigError("listener_security", "must be 'PLAINTEXT' or 'SASL_PLAINTEXT'")
        if not _USER_NAME.match(self.super_user):
            raise InvalidConfigError("super_user", f"{self.super_user!r} is not a plain user name")


# --------------------------------------------------------------------------- alerts and quality

_DURATION = re.compile(r"^(?P<n>[0-9]+(?:\.[0-9]+)?)\s*(?P<unit>ms|s|m|h|d)$")
_DURATION_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
SEVERITIES = ("info", "warning", "critical")


def duration_ms(text: str, key_path: str = "") -> int:
    """A duration written as ``<number><unit>`` (``ms``, ``s``, ``m``, ``h``, ``d``) in ms.

    Raises:
        InvalidConfigError: the text is not such a duration, or it is not positive.
    """
    match = _DURATION.match(text.strip())
    if match is None:
        raise InvalidConfigError(key_path, f"{text!r} is not a duration such as '90s' or '10m'")
    ms = round(float(match.group("n")) * _DURATION_MS[match.group("unit")])
    if ms <= 0:
        raise InvalidConfigError(key_path, f"{text!r} must be longer than 0 ms")
    return ms


def _check_severity(value: str | None, key: str = "severity") -> None:
    if value is not None and value not in SEVERITIES:
        raise InvalidConfigError(key, f"{value!r} is not one of {', '.join(SEVERITIES)}")


def _check_durations(obj: Any, *keys: str) -> None:
    for key in keys:
        value = getattr(obj, key)
        if value is not None:
            duration_ms(value, key)


def _check_at_least(obj: Any, minimum: int, *keys: str) -> None:
    for key in keys:
        value = getattr(obj, key)
        if value is not None and value < minimum:
            raise InvalidConfigError(key, f"must be at least {minimum}, not {value}")


@dataclass(frozen=True, slots=True)
class StormOverride:
    """Per-group settings of ``rebalance_storm``; unset keys keep the rule's value."""

    enabled: bool | None = None
    max_generations: int | None = None
    window: str | None = None
    severity: str | None = None

    def __post_init__(self) -> None:
        _check_at_least(self, 0, "max_generations")
        _check_durations(self, "window")
        _check_severity(self.severity)


@dataclass(frozen=True, slots=True)
class RebalanceStormRule:
    """More than ``max_generations`` generations (rebalances) of a group within ``window``.

    Burrow and the client metrics offer only a rate (``rebalance-rate-per-hour``); each completed
    classic rebalance stores a generation and each KIP-848 rebalance bumps the group epoch, so
    the generations in a window are the count itself.
    """

    enabled: bool = True
    max_generations: int = 5
    window: str = "10m"
    severity: str = "critical"
    groups: Mapping[str, StormOverride] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_at_least(self, 0, "max_generations")
        _check_durations(self, "window")
        _check_severity(self.severity)


@dataclass(frozen=True, slots=True)
class ChurnOverride:
    """Per-group settings of ``member_churn``; unset keys keep the rule's value."""

    enabled: bool | None = None
    max_member_changes: int | None = None
    max_cycling_instances: int | None = None
    window: str | None = None
    severity: str | None = None

    def __post_init__(self) -> None:
        _check_at_least(self, 0, "max_member_changes", "max_cycling_instances")
        _check_durations(self, "window")
        _check_severity(self.severity)


@dataclass(frozen=True, slots=True)
class MemberChurnRule:
    """Member ids joining and leaving (more than ``max_member_changes`` joins + leaves in
    ``window``), or static members cycling (more than ``max_cycling_instances`` instance ids
    seen with two or more member ids in ``window``)."""

    enabled: bool = True
    max_member_changes: int = 10
    max_cycling_instances: int = 2
    window: str = "10m"
    severity: str = "warning"
    groups: Mapping[str, ChurnOverride] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_at_least(self, 0, "max_member_changes", "max_cycling_instances")
        _check_durations(self, "window")
        _check_severity(self.severity)


@dataclass(frozen=True, slots=True)
class RebalanceStuckRule:
    """A join phase that completed without a stored assignment (classic), or a KIP-848 group in
    Assigning/Reconciling for longer than its members' rebalance timeout."""

    enabled: bool = True
    # The timeout when no member reported one (Kafka's max.poll.interval.ms default).
    default_rebalance_timeout: str = "5m"
    severity: str = "warning"

    def __post_init__(self) -> None:
        _check_durations(self, "default_rebalance_timeout")
        _check_severity(self.severity)


_BURROW_STATUSES = ("STALL", "STOP", "REWIND", "WARN")


@dataclass(frozen=True, slots=True)
class LagOverride:
    """Per-group settings of ``lag_stall``; unset keys keep the rule's value."""

    enabled: bool | None = None
    allowed_lag: int | None = None
    intervals: int | None = None
    severity: str | None = None

    def __post_init__(self) -> None:
        _check_at_least(self, 0, "allowed_lag")
        _check_at_least(self, 2, "intervals")
        _check_severity(self.severity)


@dataclass(frozen=True, slots=True)
class LagStallRule:
    """Burrow's threshold-free evaluation over the last ``intervals`` lag observations of a
    partition: the committed offset not moving while the group lags (``STALL``) and, if listed,
    the other statuses Burrow reports as errors."""

    enabled: bool = True
    intervals: int = 10
    allowed_lag: int = 0
    statuses: tuple[str, ...] = ("STALL",)
    severity: str = "warning"
    groups: Mapping[str, LagOverride] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_at_least(self, 0, "allowed_lag")
        _check_at_least(self, 2, "intervals")
        _check_severity(self.severity)
        for i, status in enumerate(self.statuses):
            if status not in _BURROW_STATUSES:
                raise InvalidConfigError(
                    f"statuses[{i}]", f"{status!r} is not one of {', '.join(_BURROW_STATUSES)}"
                )


@dataclass(frozen=True, slots=True)
class HangingTransactionRule:
    """A transaction still open ``margin`` after its own timeout."""

    enabled: bool = True
    margin: str = "1m"
    severity: str = "critical"

    def __post_init__(self) -> None:
        _check_durations(self, "margin")
        _check_severity(self.severity)


@dataclass(frozen=True, slots=True)
class DataLossOverride:
    """Per-group settings of ``data_loss``; unset keys keep the rule's value."""

    enabled: bool | None = None
    min_lost_records: int | None = None
    severity: str | None = None

    def __post_init__(self) -> None:
        _check_at_least(self, 1, "min_lost_records")
        _check_severity(self.severity)


@dataclass(frozen=True, slots=True)
class DataLossRule:
    """A group's committed offset below the partition's log start offset: retention deleted at
    least ``min_lost_records`` records the group never read."""

    enabled: bool = True
    min_lost_records: int = 1
    severity: str = "critical"
    groups: Mapping[str, DataLossOverride] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_at_least(self, 1, "min_lost_records")
        _check_severity(self.severity)


@dataclass(frozen=True, slots=True)
class QualityFailureRule:
    """A table's data-quality suite failed on a micro-batch (open until a later batch passes)."""

    enabled: bool = True
    severity: str = "warning"

    def __post_init__(self) -> None:
        _check_severity(self.severity)


_WEBHOOK_EVENTS = ("opened", "resolved")


@dataclass(frozen=True, slots=True)
class WebhookConfig:
    """A generic JSON webhook. ``url`` and ``token`` are secret references, never values."""

    url: str
    token: str = ""  # sent as "Authorization: Bearer <token>" when set
    timeout_s: float = 5.0
    max_attempts: int = 4
    backoff_s: float = 0.5  # first retry delay; doubles per attempt up to max_backoff_s
    max_backoff_s: float = 30.0
    queue_size: int = 1_000
    min_severity: str = "warning"

    def __post_init__(self) -> None:
        if not self.url:
            raise InvalidConfigError("url", "is required")
        require_reference("url", self.url)
        require_reference("token", self.token)
        if self.timeout_s <= 0 or self.backoff_s < 0 or self.max_backoff_s < self.backoff_s:
            raise InvalidConfigError("timeout_s", "timeouts and backoffs must be positive")
        _check_at_least(self, 1, "max_attempts", "queue_size")
        _check_severity(self.min_severity, "min_severity")


@dataclass(frozen=True, slots=True)
class NotifyConfig:
    """Where alert events (an alert opened or resolved) go."""

    log: bool = True
    events: tuple[str, ...] = _WEBHOOK_EVENTS
    # An alert already resolved this long before it was first seen (a backfill over old logs)
    # is recorded as "skipped", not sent.
    backfill_age: str = "1h"
    webhooks: Mapping[str, WebhookConfig] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_durations(self, "backfill_age")
        for i, event in enumerate(self.events):
            if event not in _WEBHOOK_EVENTS:
                raise InvalidConfigError(
                    f"events[{i}]", f"{event!r} is not one of {', '.join(_WEBHOOK_EVENTS)}"
                )


_TIME_SOURCES = ("event_time", "clock")


@dataclass(frozen=True, slots=True)
class AlertsConfig:
    """The alert rules, their per-group overrides, and the notifiers (``offsetscope.alerts``)."""

    enabled: bool = True
    # The alerts query (checkpoint folder, Delta idempotency app id) and its trigger.
    query_name: str = "offsetscope_alerts"
    trigger: str = "available_now"
    processing_time: str = "1 minute"
    # "event_time": rules are evaluated as of the newest record the ingest query has read (a
    # replay of old logs raises the alerts of that time); "clock": as of the wall clock.
    time_source: str = "event_time"
    # How far back the rules read history for a group; open alerts are carried over beyond it.
    lookback: str = "24h"
    rebalance_storm: RebalanceStormRule = field(default_factory=RebalanceStormRule)
    member_churn: MemberChurnRule = field(default_factory=MemberChurnRule)
    rebalance_stuck: RebalanceStuckRule = field(default_factory=RebalanceStuckRule)
    lag_stall: LagStallRule = field(default_factory=LagStallRule)
    hanging_transaction: HangingTransactionRule = field(default_factory=HangingTransactionRule)
    data_loss: DataLossRule = field(default_factory=DataLossRule)
    quality: QualityFailureRule = field(default_factory=QualityFailureRule)
    notify: NotifyConfig = field(default_factory=NotifyConfig)

    def __post_init__(self) -> None:
        if self.trigger not in _TRIGGERS:
            raise InvalidConfigError("trigger", f"must be one of {', '.join(_TRIGGERS)}")
        if self.time_source not in _TIME_SOURCES:
            raise InvalidConfigError("time_source", f"must be one of {', '.join(_TIME_SOURCES)}")
        if not _TABLE_NAME.match(self.query_name):
            raise InvalidConfigError("query_name", f"{self.query_name!r} is not a plain name")
        _check_durations(self, "lookback")


@dataclass(frozen=True, slots=True)
class QualityConfig:
    """Data-quality gates (``offsetscope.quality``): great-expectations suites per table."""

    enabled: bool = True
    # Timestamps before this date are implausible (Kafka's first release was in 2011).
    earliest_timestamp: str = "2010-01-01"
    # Timestamps later than the validation time plus this are implausible.
    future_tolerance: str = "1d"
    # Send the rows that fail an expectation to quality_quarantine instead of the table.
    quarantine_failed_rows: bool = True
    # Batches up to this many rows are collected (the checked columns, through Arrow) and
    # validated with great-expectations' pandas engine; larger ones on its Spark engine, one
    # Spark job per metric, which costs far more than pandas on rows that fit on the driver
    # (docs/benchmarks.md, "Measurements behind design choices").
    pandas_max_rows: int = 2_000_000

    def __post_init__(self) -> None:
        if not re.match(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$", self.earliest_timestamp):
            raise InvalidConfigError("earliest_timestamp", "must be a date such as '2010-01-01'")
        _check_durations(self, "future_tolerance")
        _check_at_least(self, 0, "pandas_max_rows")


@dataclass(frozen=True, slots=True)
class Config:
    env: str = "base"
    sources: SourcesConfig = field(default_factory=SourcesConfig)
    storage: StorageConfig = field(default_factory=StorageConfig)
    spark: SparkConfig = field(default_factory=SparkConfig)
    broker: BrokerConfig = field(default_factory=BrokerConfig)
    tables: TableNames = field(default_factory=TableNames)
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)
    alerts: AlertsConfig = field(default_factory=AlertsConfig)
    quality: QualityConfig = field(default_factory=QualityConfig)


# --------------------------------------------------------------------------- loading


def default_conf_dir() -> Path:
    """The repository's ``conf/`` folder (overridable with ``OFFSETSCOPE_CONF_DIR``)."""
    override = os.environ.get("OFFSETSCOPE_CONF_DIR")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / "conf"


def load(env: str = "local", conf_dir: Path | None = None, extra: Path | None = None) -> Config:
    """Load ``base.toml``, overlay ``<env>.toml`` and an optional extra file, and validate.

    Args:
        env: environment name; ``conf/<env>.toml`` must exist unless ``env`` is ``base``.
        conf_dir: folder holding the TOML files (default: the repository's ``conf/``).
        extra: a further TOML file overlaid last (a job's ``--conf``).

    Raises:
        InvalidConfigError: a file is missing or unparsable, or a key is unknown or mistyped.
    """
    folder = conf_dir or default_conf_dir()
    tree = _read_toml(folder / "base.toml")
    if env != "base":
        tree = merge(tree, _read_toml(folder / f"{env}.toml"))
    if extra is not None:
        tree = merge(tree, _read_toml(extra))
    tree = {**tree, "env": env}
    return from_mapping(Config, tree)


# --------------------------------------------------------------------------- overlays
# Programs that run the pipeline on inputs of their own (the demo, the accuracy check, chaos
# trials, benchmarks, tests) start from a loaded configuration and point it elsewhere.


def with_segment_source(
    cfg: Config,
    log_dir: str | os.PathLike[str],
    *,
    data_log_dir: str = "",
    max_records_per_trigger: int | None = None,
) -> Config:
    """``cfg`` reading the Kafka log directory ``log_dir`` (``[sources] kind = "segments"``)."""
    segments = dataclasses.replace(
        cfg.sources.segments, log_dir=os.fspath(log_dir), data_log_dir=data_log_dir
    )
    if max_records_per_trigger is not None:
        segments = dataclasses.replace(segments, max_records_per_trigger=max_records_per_trigger)
    sources = dataclasses.replace(cfg.sources, kind="segments", segments=segments)
    return dataclasses.replace(cfg, sources=sources)


def with_kafka_source(
    cfg: Config,
    bootstrap_servers: str,
    *,
    starting_offsets: str = "earliest",
    isolation_level: str = "read_committed",
    **changes: Any,
) -> Config:
    """``cfg`` reading the internal topics of the cluster at ``bootstrap_servers``; ``changes``
    replace other ``[sources.kafka]`` settings (``offsets_topic``, ``max_offsets_per_trigger``,
    ...)."""
    kafka = dataclasses.replace(
        cfg.sources.kafka,
        bootstrap_servers=bootstrap_servers,
        starting_offsets=starting_offsets,
        isolation_level=isolation_level,
        **changes,
    )
    return dataclasses.replace(
        cfg, sources=dataclasses.replace(cfg.sources, kind="kafka", kafka=kafka)
    )


def with_storage(
    cfg: Config,
    *,
    work_dir: str | os.PathLike[str] | None = None,
    schema: str | None = None,
    checkpoint_dir: str | os.PathLike[str] | None = None,
) -> Config:
    """``cfg`` with its warehouse, metastore and checkpoints under ``work_dir``, and/or another
    schema or checkpoint folder."""
    changes: dict[str, str] = {}
    if work_dir is not None:
        root = Path(work_dir)
        changes.update(
            warehouse_dir=str(root / "warehouse"),
            metastore_dir=str(root / "metastore"),
            checkpoint_dir=str(root / "checkpoints"),
        )
    if checkpoint_dir is not None:
        changes["checkpoint_dir"] = os.fspath(checkpoint_dir)
    if schema is not None:
        changes["schema"] = schema
    return dataclasses.replace(cfg, storage=dataclasses.replace(cfg.storage, **changes))


def with_pipeline(cfg: Config, **changes: Any) -> Config:
    """``cfg`` with ``[pipeline]`` settings replaced (``trigger="available_now"``, ...)."""
    return dataclasses.replace(cfg, pipeline=dataclasses.replace(cfg.pipeline, **changes))


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise InvalidConfigError("", f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise InvalidConfigError("", f"{path} is not valid TOML: {exc}") from None


def merge(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge two TOML trees; tables merge key by key, everything else is replaced."""
    out = dict(base)
    for key, value in overlay.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def from_mapping(cls: type[T], data: Mapping[str, Any], path: str = "") -> T:
    """Build the frozen dataclass ``cls`` from a mapping, checking keys and types recursively."""
    if not isinstance(data, Mapping):
        raise InvalidConfigError(path, f"expected a table, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields))
    if unknown:
        where = _join(path, unknown[0])
        raise InvalidConfigError(where, f"unknown key (known: {', '.join(sorted(fields))})")
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        kwargs[name] = _coerce(hints[name], value, _join(path, name))
    missing = [
        n
        for n, f in fields.items()
        if n not in kwargs
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise InvalidConfigError(_join(path, missing[0]), "required key is missing")
    try:
        return cls(**kwargs)
    except InvalidConfigError as exc:
        # __post_init__ validators name the key relative to their section.
        raise InvalidConfigError(_join(path, exc.key_path), str(exc).split(": ", 1)[1]) from None


def _coerce(hint: Any, value: Any, path: str) -> Any:
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return from_mapping(hint, value, path)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _coerce(option, value, path)
            except InvalidConfigError as exc:
                errors.append(str(exc))
        raise InvalidConfigError(path, f"no alternative of {hint} accepts a {type(value).__name__}")
    if origin in (Mapping, dict) or hint in (Mapping, dict):
        if not isinstance(value, Mapping):
            raise InvalidConfigError(path, f"expected a table, got {type(value).__name__}")
        args = typing.get_args(hint) or (str, Any)
        return {
            _coerce(args[0], k, _join(path, str(k))): _coerce(args[1], v, _join(path, str(k)))
            for k, v in value.items()
        }
    if origin in (tuple, list) or hint in (tuple, list):
        if not isinstance(value, list):
            raise InvalidConfigError(path, f"expected an array, got {type(value).__name__}")
        item_types: tuple[Any, ...] = typing.get_args(hint) or (Any,)
        return tuple(_coerce(item_types[0], v, f"{path}[{i}]") for i, v in enumerate(value))
    if hint is Any:
        return value
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint is int and isinstance(value, bool):
        raise InvalidConfigError(path, "expected int, got bool")
    if isinstance(hint, type) and not isinstance(value, hint):
        # The value itself is not echoed: a secret typed into the wrong key must not be printed.
        raise InvalidConfigError(path, f"expected {hint.__name__}, got {type(value).__name__}")
    return value


def _join(path: str, name: str) -> str:
    if not name:
        return path
    return f"{path}.{name}" if path else name
