"""Configuration: ``conf/base.toml`` overlaid by ``conf/<env>.toml``, as frozen dataclasses.

Only entry points call :func:`load`; everything else receives the resulting :class:`Config`.
Each section is a frozen pydantic dataclass: pydantic maps the TOML tree onto the dataclass tree
by field name and type hint, and ``dataclasses.replace`` re-validates. Unknown keys, values of
the wrong type, values outside an enumeration and malformed durations fail with
:class:`InvalidConfigError` naming the dotted key path (for example
``sources.kafka.starting_offsets``), so a typo never becomes a silent default.

Sources, in order: ``base.toml``, ``<env>.toml``, an optional extra file (a job's ``--conf``),
then per-key environment variables ``OFFSETSCOPE__<SECTION>__<KEY>`` (see
:func:`environment_overrides`).

Every duration is written ``<number><unit>`` with the unit ``ms``, ``s``, ``m``, ``h`` or ``d``
(``"500ms"``, ``"30s"``, ``"10m"``, ``"30d"``) and becomes a :class:`Duration`; Spark's and
Delta's interval texts are made from it where they are needed.

Secrets are never values in ``conf/``: a setting that holds a secret is written as a reference
(``"env:NAME"`` or ``"secret:scope/key"``) and resolved by :mod:`offsetscope.secrets` at the edge.

``conf/offsetscope.schema.json`` is the JSON Schema of these models (``make conf-schema``); the
TOML files name it for editors. The TOML files also ship inside the wheel (package
``offsetscope._conf``), and :func:`write_templates` (``offsetscope init``) copies them out.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import re
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import pydantic
import pydantic.dataclasses
from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
)
from pydantic_core import core_schema

import offsetscope

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
_REFERENCE_MESSAGE = (
    "holds a secret, so it must be a reference (env:NAME or secret:scope/key), not a literal value"
)


def require_reference(key_path: str, value: str) -> None:
    """Refuse a secret written as a literal value (the message never repeats the value).

    Raises:
        InvalidConfigError: ``value`` is neither empty nor a secret reference.
    """
    if value and not SECRET_REFERENCE.match(value):
        raise InvalidConfigError(key_path, _REFERENCE_MESSAGE)


# --------------------------------------------------------------------------- durations

_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)$")
_DURATION_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION_FORM = "a number and a unit (ms, s, m, h or d) without a space, such as '30s' or '10m'"
# Spark's and Delta's interval words, for the hint when an old-style value is found.
_SPARK_WORDS = {
    "millisecond": "ms",
    "second": "s",
    "minute": "m",
    "hour": "h",
    "day": "d",
}
_SPARK_FORM = re.compile(r"^(?:interval\s+)?(?P<n>[0-9]+(?:\.[0-9]+)?)\s*(?P<word>[a-z]+?)s?$")
_SPARK_UNITS = (
    (86_400_000, "day"),
    (3_600_000, "hour"),
    (60_000, "minute"),
    (1_000, "second"),
    (1, "millisecond"),
)


def _parse_duration(text: str) -> int:
    """``text`` in milliseconds; ValueError with the accepted form otherwise."""
    match = _DURATION.match(text)
    if match is None:
        old = _SPARK_FORM.match(text.strip().lower())
        new = "".join(text.split())
        if old is not None and old.group("word") in _SPARK_WORDS:
            new = f"{old.group('n')}{_SPARK_WORDS[old.group('word')]}"
        if _DURATION.match(new):
            raise ValueError(
                f"{text!r} is not a duration in conf/'s form: write {new!r} (a number and a"
                " unit: ms, s, m, h or d, without a space)"
            )
        raise ValueError(f"{text!r} is not a duration: write {_DURATION_FORM}")
    ms = round(float(match.group(1)) * _DURATION_MS[match.group(2)])
    if ms <= 0:
        raise ValueError(f"{text!r} must be longer than 0 ms")
    return ms


class Duration(str):
    """A duration as written in ``conf/`` (``"30s"``), parsed once; compares as its text.

    ``ms`` is the length; :attr:`spark_interval` and :attr:`delta_interval` are the texts
    Spark's ``processingTime`` trigger and Delta's ``*RetentionDuration`` properties take.
    """

    _ms: int

    def __new__(cls, text: str) -> typing.Self:
        ms = _parse_duration(text)
        self = super().__new__(cls, text)
        self._ms = ms
        return self

    @property
    def ms(self) -> int:
        return self._ms

    @property
    def seconds(self) -> float:
        return self._ms / 1_000

    @property
    def spark_interval(self) -> str:
        """Spark's interval text, in the largest unit that is exact: ``"30 seconds"``."""
        for size, unit in _SPARK_UNITS:
            if self._ms % size == 0:
                n = self._ms // size
                return f"{n} {unit}{'' if n == 1 else 's'}"
        raise AssertionError("unreachable: every duration is a whole number of ms")

    @property
    def delta_interval(self) -> str:
        """A Delta table property's interval: ``"interval 30 days"``."""
        return f"interval {self.spark_interval}"

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: pydantic.GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(
            cls,
            core_schema.str_schema(),
            serialization=core_schema.plain_serializer_function_ser_schema(str),
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: pydantic.GetJsonSchemaHandler
    ) -> dict[str, Any]:
        return {
            "type": "string",
            "pattern": _DURATION.pattern,
            "description": f"A duration: {_DURATION_FORM}.",
            "examples": ["500ms", "30s", "10m", "24h", "30d"],
        }


def duration_ms(text: str, key_path: str = "") -> int:
    """A duration written as ``<number><unit>`` (``ms``, ``s``, ``m``, ``h``, ``d``) in ms.

    Raises:
        InvalidConfigError: the text is not such a duration, or it is not positive.
    """
    if isinstance(text, Duration):
        return text.ms
    try:
        return _parse_duration(text)
    except ValueError as exc:
        raise InvalidConfigError(key_path, str(exc)) from None


# --------------------------------------------------------------------------- field types
# Scalars are strict (a string is not an int, a bool is not an int, an int is a float), as the
# TOML types are; arrays become tuples and tables become mappings or sections.


def _schema_pattern(pattern: str) -> str:
    """``pattern`` as JSON Schema (ECMA-262) writes it: no Python-style named groups."""
    return re.sub(r"\(\?P<\w+>", "(", pattern)


@dataclasses.dataclass(frozen=True)
class _Pattern:
    """``Annotated`` metadata: a string key that must match ``pattern``. ``message`` is the
    error (``{value!r}`` shows the value: only in keys that cannot hold a secret)."""

    pattern: str
    message: str

    def __get_pydantic_core_schema__(
        self, source: Any, handler: pydantic.GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        compiled = re.compile(self.pattern)

        def check(value: str) -> str:
            if not compiled.match(value):
                raise ValueError(self.message.format(value=value))
            return value

        return core_schema.no_info_after_validator_function(check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: pydantic.GetJsonSchemaHandler
    ) -> dict[str, Any]:
        out: dict[str, Any] = handler(schema)
        out["pattern"] = _schema_pattern(self.pattern)
        return out


# A setting holding a secret: empty, or a reference (never the secret itself).
SecretRef = Annotated[str, _Pattern(f"^$|{SECRET_REFERENCE.pattern}", _REFERENCE_MESSAGE)]


def _starting_offsets(value: str) -> str:
    if value in ("earliest", "latest"):
        return value
    if value.lstrip().startswith("{"):
        try:
            spec = json.loads(value)
        except json.JSONDecodeError:
            spec = None
        if isinstance(spec, dict) and all(
            isinstance(parts, dict)
            and all(
                p.isdigit() and type(o) is int and o >= -2  # -2 earliest, -1 latest
                for p, o in parts.items()
            )
            for parts in spec.values()
        ):
            return value
        raise ValueError(
            "a JSON value must be an object of offsets per topic and partition, such as"
            ' {"__consumer_offsets": {"0": 42, "1": -2}} (-2: earliest, -1: latest)'
        )
    raise ValueError(
        f"{value!r} is not one of 'earliest', 'latest' or a JSON object of offsets per topic"
        " and partition"
    )


StartingOffsets = Annotated[
    str,
    AfterValidator(_starting_offsets),
    WithJsonSchema(
        {
            "anyOf": [
                {"enum": ["earliest", "latest"]},
                {"type": "string", "pattern": r"^\s*\{"},
            ],
            "description": "Spark's startingOffsets: earliest, latest, or a JSON object of"
            " offsets per topic and partition",
        }
    ),
]

Protocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal[
    "", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI", "AWS_MSK_IAM"
]
Metastore = Literal["derby", "hive", "unity"]
SourceKind = Literal["kafka", "segments"]
IsolationLevel = Literal["read_committed", "read_uncommitted"]
Trigger = Literal["available_now", "processing_time"]
TimeSource = Literal["event_time", "clock"]
ListenerSecurity = Literal["PLAINTEXT", "SASL_PLAINTEXT", "SASL_PLAINTEXT_GSSAPI"]
Severity = Literal["info", "warning", "critical"]
BurrowStatus = Literal["STALL", "STOP", "REWIND", "WARN"]
WebhookEvent = Literal["opened", "resolved"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]

SEVERITIES: tuple[Severity, ...] = typing.get_args(Severity)
_WEBHOOK_EVENTS: tuple[WebhookEvent, ...] = typing.get_args(WebhookEvent)

# A cluster name is a value of every table's ``cluster`` column and the prefix of per-group
# override keys (``"<cluster>/<group>"``), so it holds no "/" and no glob character.
_CLUSTER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
ClusterName = Annotated[
    str, _Pattern(_CLUSTER_NAME.pattern, "{value!r} is not a plain cluster name")
]
TableName = Annotated[
    str, _Pattern(r"^[A-Za-z_][A-Za-z0-9_]*$", "{value!r} is not a plain table name")
]
Umask = Annotated[str, _Pattern(r"^0?[0-7]{3}$", "{value!r} is not an octal umask like '027'")]
HeapSize = Annotated[
    str, _Pattern(r"^[1-9][0-9]*[kKmMgG]$", "{value!r} is not a JVM size such as '768m'")
]
# SCRAM user names: no "," or "=" (they would need escaping in the SCRAM exchange).
UserName = Annotated[str, _Pattern(r"^[A-Za-z0-9_.-]+$", "{value!r} is not a plain user name")]
IsoDate = Annotated[
    str, _Pattern(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$", "must be a date such as '2010-01-01'")
]
Port = Annotated[StrictInt, Field(ge=0, le=65_535)]
AtLeast0 = Annotated[StrictInt, Field(ge=0)]
AtLeast1 = Annotated[StrictInt, Field(ge=1)]
AtLeast2 = Annotated[StrictInt, Field(ge=2)]

_MODEL_CONFIG = ConfigDict(extra="forbid")


@typing.dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, Field))
def _section(cls: type[T]) -> type[T]:
    """A configuration section: a frozen pydantic dataclass whose constructor (and so
    ``dataclasses.replace``) raises :class:`InvalidConfigError` naming the key."""
    section: Any = pydantic.dataclasses.dataclass(frozen=True, slots=True, config=_MODEL_CONFIG)(
        cls
    )
    assert section.__pydantic_complete__, f"{cls.__name__} refers to a type defined after it"
    validate = section.__init__

    @functools.wraps(validate)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            validate(self, *args, **kwargs)
        except ValidationError as exc:
            # ``from None``: pydantic's own message repeats the input, which may be a secret.
            raise _invalid(exc, type(self)) from None

    section.__init__ = __init__
    return typing.cast("type[T]", section)


# --------------------------------------------------------------------------- sections


@_section
class KafkaSecurityConfig:
    """How offsetscope authenticates to a cluster, once for every client it builds.

    :mod:`offsetscope.secrets` maps these settings to the Java client's properties (Spark's
    Kafka source, ``kafka.`` prefix) and to librdkafka's (confluent-kafka AdminClient). Settings
    holding a secret are references (``env:NAME``, ``secret:scope/key``), never literals.
    """

    protocol: Protocol = "PLAINTEXT"
    sasl_mechanism: SaslMechanism = ""  # "" unless protocol is SASL_*
    sasl_username: str = ""
    sasl_password: SecretRef = ""
    # OAUTHBEARER with OIDC client credentials (KIP-768).
    oauth_token_endpoint_url: str = ""
    oauth_client_id: str = ""
    oauth_client_secret: SecretRef = ""
    oauth_scope: str = ""
    # PEM files. The keystore (mTLS) holds the private key (PKCS#8) and the certificate chain
    # in one file, the one form both clients read.
    ssl_ca_location: str = ""
    ssl_keystore_location: str = ""
    ssl_key_password: SecretRef = ""
    ssl_endpoint_identification: StrictBool = True
    # Prefix of the Java client's class names in sasl.jaas.config: "" for Apache Kafka's
    # client (Spark), "kafkashaded." for the Databricks runtime's shaded copy.
    java_class_prefix: str = ""
    # GSSAPI (Kerberos). The keytab and krb5.conf are files every JVM opens itself: a relative
    # path is relative to each process's working folder, where spark-submit's --files (and
    # --keytab) put them on YARN; an absolute one must exist on every node. No keytab: the
    # principal's ticket cache (kinit) is used. krb5.conf empty: the JVM's default
    # (/etc/krb5.conf); set, it becomes -Djava.security.krb5.conf of the driver and executors.
    kerberos_service_name: str = "kafka"
    kerberos_principal: str = ""
    kerberos_keytab: str = ""
    kerberos_krb5_conf: str = ""
    # AWS_MSK_IAM: credentials from the AWS default chain of each JVM (instance role, env,
    # profile), optionally a named profile or a role to assume (IAMLoginModule's awsProfileName,
    # awsRoleArn); needs the aws-msk-iam-auth jar (docs/security.md).
    msk_iam_profile: str = ""
    msk_iam_role_arn: str = ""

    def __post_init__(self) -> None:
        sasl = self.protocol.startswith("SASL_")
        if sasl and not self.sasl_mechanism:
            mechanisms = ", ".join(typing.get_args(SaslMechanism)[1:])
            raise InvalidConfigError("sasl_mechanism", f"{self.protocol} needs one of {mechanisms}")
        if not sasl and self.sasl_mechanism:
            raise InvalidConfigError("sasl_mechanism", f"{self.protocol} does not use SASL")
        needs: tuple[str, ...] = ()
        if self.sasl_mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            needs = ("sasl_username", "sasl_password")
        elif self.sasl_mechanism == "OAUTHBEARER":
            needs = ("oauth_token_endpoint_url", "oauth_client_id", "oauth_client_secret")
        elif self.sasl_mechanism == "GSSAPI":
            needs = ("kerberos_principal", "kerberos_service_name")
        for key in needs:
            if not getattr(self, key):
                raise InvalidConfigError(key, f"{self.sasl_mechanism} needs it")
        if self.sasl_mechanism == "AWS_MSK_IAM" and self.protocol != "SASL_SSL":
            raise InvalidConfigError(
                "protocol", "AWS_MSK_IAM needs SASL_SSL (MSK's IAM listener is TLS only)"
            )
        if self.sasl_mechanism != "GSSAPI":
            for key in ("kerberos_principal", "kerberos_keytab", "kerberos_krb5_conf"):
                if getattr(self, key):
                    raise InvalidConfigError(key, "only GSSAPI uses it")
        if self.sasl_mechanism != "AWS_MSK_IAM":
            for key in ("msk_iam_profile", "msk_iam_role_arn"):
                if getattr(self, key):
                    raise InvalidConfigError(key, "only AWS_MSK_IAM uses it")
        if not self.protocol.endswith("SSL"):
            for key in ("ssl_ca_location", "ssl_keystore_location", "ssl_key_password"):
                if getattr(self, key):
                    raise InvalidConfigError(key, f"{self.protocol} does not use TLS")


@_section
class KafkaSourceConfig:
    """Spark's Kafka source on a real cluster's internal topics."""

    bootstrap_servers: str = "127.0.0.1:9092"
    offsets_topic: str = "__consumer_offsets"
    transaction_topic: str = "__transaction_state"
    # Share-partition state of share groups (KIP-932); "" to leave it out.
    share_state_topic: str = "__share_group_state"
    # Spark's startingOffsets: "earliest", "latest", or a JSON object of offsets per topic and
    # partition. Only "earliest" counts offsets below the first record read as not seen.
    starting_offsets: StartingOffsets = "earliest"
    # Bounds the first catch-up batch on a big cluster.
    max_offsets_per_trigger: AtLeast1 = 500_000
    # Compaction removes records under a stale checkpoint; the pipeline audits what it skipped.
    fail_on_data_loss: StrictBool = False
    isolation_level: IsolationLevel = "read_committed"
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


@_section
class SegmentSourceConfig:
    """A Kafka log directory (bundled coordinator output, or segments copied off a broker).

    ``log_dir`` and ``data_log_dir`` are locations (:mod:`offsetscope.paths`): a local path
    (relative: to the project root) or a URI (``s3a://``, ``gs://``, ``abfss://``, ``hdfs://``
    with libhdfs, ``dbfs:/``).
    """

    log_dir: str = ".work/logdir"
    # Records per micro-batch when catching up.
    max_records_per_trigger: AtLeast1 = 1_000_000
    # Partition directories named after these topics hold the internal topics' records (a copy
    # of a mirror's log directory keeps the mirror's names).
    offsets_topic: str = "__consumer_offsets"
    transaction_topic: str = "__transaction_state"
    share_state_topic: str = "__share_group_state"  # "" to leave it out
    # Where the data topics' partition directories are, for end offsets computed from segments
    # (log start, high watermark, last stable offset); empty = ``log_dir``.
    data_log_dir: str = ""


@_section
class ClusterConfig:
    """One Kafka cluster's internal topics: read live (``kafka``, with its security) or from a
    copy of its log directory (``segments``). ``[clusters.<name>]`` has this shape."""

    kind: SourceKind = "segments"
    kafka: KafkaSourceConfig = field(default_factory=KafkaSourceConfig)
    segments: SegmentSourceConfig = field(default_factory=SegmentSourceConfig)


@_section
class SourcesConfig(ClusterConfig):
    """The one cluster of a single-cluster deployment (no ``[clusters]``), named ``cluster``.

    ``cluster`` is also the name the rows of tables written before they had a ``cluster``
    column are given when the tables are migrated: keep it when a deployment moves its cluster
    to ``[clusters.<name>]``, so its history stays that cluster's.
    """

    cluster: ClusterName = "default"


@_section
class StorageConfig:
    """Where tables and checkpoints live, and the catalog schema they are registered in.

    ``warehouse_dir`` and ``checkpoint_dir`` are locations (:mod:`offsetscope.paths`): a URI
    (``hdfs://``, ``s3a://``, ``abfss://``, ``gs://``, ``dbfs:/``) or a local path, relative
    ones relative to the project root. Remote ones are checked for access when a job starts.
    """

    catalog: str = ""
    schema: str = "offsetscope"
    warehouse_dir: str = ".work/warehouse"
    checkpoint_dir: str = ".work/checkpoints"
    # Where tables are registered: "derby" -- an embedded Derby metastore in metastore_dir
    # (one JVM at a time; the local default); "hive" -- the cluster's Hive metastore, at
    # metastore_uri (thrift://host:9083) or, when that is empty, as the hive-site.xml on the
    # classpath says; "unity" -- the platform's catalog (Databricks Unity Catalog), nothing set.
    metastore: Metastore = "derby"
    metastore_uri: str = ""
    metastore_dir: str = ".work/metastore"  # local only: Derby's folder ("derby")
    # Octal umask for everything written locally (tables, checkpoints, metastore): applied to
    # the process and to Hadoop's fs.permissions.umask-mode. "027": no access for others.
    umask: Umask = "027"

    def __post_init__(self) -> None:
        if self.metastore_uri and self.metastore != "hive":
            raise InvalidConfigError("metastore_uri", 'only metastore = "hive" uses it')
        if self.metastore_uri and not self.metastore_uri.startswith("thrift://"):
            raise InvalidConfigError(
                "metastore_uri", "must be thrift://host:port (comma-separated for several)"
            )


@_section
class TableNames:
    """Physical name of every table the pipeline keeps, by its logical name.

    The logical names are the tables of ``docs/design.md`` ("Tables").

    Names are unqualified; ``storage.catalog`` and ``storage.schema`` qualify them.
    """

    raw_records: TableName = "raw_records"
    offset_commits: TableName = "offset_commits"
    group_metadata_events: TableName = "group_metadata_events"
    consumer_group_events: TableName = "consumer_group_events"
    transaction_log_events: TableName = "transaction_log_events"
    control_records: TableName = "control_records"
    quarantine: TableName = "quarantine"
    group_generations: TableName = "group_generations"
    group_state_transitions: TableName = "group_state_transitions"
    # A view of each group's latest row in groups_current_log (docs/design.md, "Tables").
    groups_current: TableName = "groups_current"
    groups_current_log: TableName = "groups_current_log"
    member_sessions: TableName = "member_sessions"
    partition_assignments: TableName = "partition_assignments"
    end_offsets: TableName = "end_offsets"
    partition_lag: TableName = "partition_lag"
    stuck_partitions: TableName = "stuck_partitions"
    streams_assignments: TableName = "streams_assignments"
    share_partition_state: TableName = "share_partition_state"
    transactions: TableName = "transactions"
    transaction_status_timeline: TableName = "transaction_status_timeline"
    fold_state: TableName = "fold_state"
    batch_audit: TableName = "batch_audit"
    alerts: TableName = "alerts"
    alert_notifications: TableName = "alert_notifications"
    quality_results: TableName = "quality_results"
    quality_quarantine: TableName = "quality_quarantine"
    # The views over the gold tables (offsetscope.spark.tables.VIEWS), in the same schema.
    current_lag: TableName = "current_lag"
    group_overview: TableName = "group_overview"
    member_churn: TableName = "member_churn"
    hanging_transactions: TableName = "hanging_transactions"
    group_timeline: TableName = "group_timeline"

    def __post_init__(self) -> None:
        seen: dict[str, str] = {}
        for f in dataclasses.fields(self):
            name = getattr(self, f.name)
            if name in seen:
                raise InvalidConfigError(f.name, f"{name!r} is also the name of {seen[name]}")
            seen[name] = f.name


@_section
class PipelineConfig:
    """The ingest query: its name (checkpoint folder, Delta idempotency app id) and trigger."""

    query_name: TableName = "offsetscope_ingest"
    # "available_now": read what is there in bounded micro-batches, then stop;
    # "processing_time": run continuously, one micro-batch every ``processing_time``.
    trigger: Trigger = "available_now"
    processing_time: Duration = Duration("30s")
    # Sample the data topics' end offsets (AdminClient or data-topic segments) every micro-batch
    # and rebuild partition_lag for the partitions committed in it.
    sample_end_offsets: StrictBool = True
    # Lag at its own cadence: at most one end-offset sample (end_offsets row, partition_lag
    # rows) per partition and interval of sample time, the intervals aligned to the epoch as
    # Spark aligns processing-time triggers; unset: every micro-batch. Commits, groups and
    # positions stay per batch; only how often lag is materialised changes.
    lag_interval: Duration | None = None
    # Every partition_lag row carries the lag against the high watermark and against the last
    # stable offset; these optional hints (group ids or fnmatch patterns) pick which one
    # lag_records, views and the lag rules use. Kafka's log does not say how a group reads, so
    # without a hint it is the LSO (equal to the high watermark where no transaction is open),
    # unless the group committed past the LSO, which only a read_uncommitted consumer can.
    read_committed_groups: tuple[str, ...] = ()
    read_uncommitted_groups: tuple[str, ...] = ()
    # A data partition whose last stable offset has not moved while its high watermark has,
    # for longer than this, is stuck (stuck_partitions): Kafka's transaction.max.timeout.ms
    # default, the longest a transaction its coordinator knows may stay open.
    stuck_lso_bound: Duration = Duration("15m")
    # Tables written at the same time by a micro-batch (each table's writes stay in order).
    write_threads: AtLeast1 = 4
    # Micro-batches append their changed fold states (a log: lib/offsetscope/pipelines/state.py);
    # every this many batches the superseded ones are deleted, as `offsetscope maintain` does.
    state_compaction_batches: AtLeast1 = 50
    # Delta table properties of every table (change data feed is set per table):
    # delta.logRetentionDuration and delta.deletedFileRetentionDuration.
    log_retention: Duration = Duration("30d")
    deleted_file_retention: Duration = Duration("7d")

    @property
    def lag_interval_ms(self) -> int | None:
        return None if self.lag_interval is None else self.lag_interval.ms


@_section
class RetentionRule:
    """How long one table keeps its rows (``[maintenance.retention.<table>]``), applied by
    ``offsetscope maintain``; an unset key keeps rows for ever.

    Age is measured on the column the table catalogue names for it (``record_timestamp``,
    ``as_of``, ...) against the moment the job runs.
    """

    # Rows older than this are deleted.
    keep: Duration | None = None
    # Rows older than ``downsample_after`` are thinned to the newest one per key (the table's
    # key without its time column: group, topic and partition for partition_lag) and interval
    # of ``downsample_every``, the intervals aligned to the epoch (hours, days).
    downsample_after: Duration | None = None
    downsample_every: Duration | None = None

    def __post_init__(self) -> None:
        if (self.downsample_after is None) != (self.downsample_every is None):
            key = "downsample_every" if self.downsample_every is None else "downsample_after"
            raise InvalidConfigError(key, "downsample_after and downsample_every go together")
        if self.downsample_after is not None and self.downsample_every is not None:
            if self.downsample_every.ms >= self.downsample_after.ms:
                raise InvalidConfigError(
                    "downsample_every", "must be shorter than downsample_after"
                )
            if self.keep is not None and self.keep.ms <= self.downsample_after.ms:
                raise InvalidConfigError(
                    "keep", "must be longer than downsample_after (or nothing is downsampled)"
                )

    @property
    def trims(self) -> bool:
        """Whether the rule deletes any row (so the table cannot be append-only)."""
        return self.keep is not None or self.downsample_after is not None


@_section
class RetentionConfig:
    """Per-table retention: the tables whose rows have an age (the catalogue's ``age_column``).

    The gold history tables (generations, sessions, transactions ...) are the product's point
    and stay; raw records and the measurements that arrive at every sample are what grows.
    """

    raw_records: RetentionRule = field(default_factory=lambda: RetentionRule(keep=Duration("30d")))
    group_metadata_events: RetentionRule = field(default_factory=RetentionRule)
    consumer_group_events: RetentionRule = field(default_factory=RetentionRule)
    transaction_log_events: RetentionRule = field(default_factory=RetentionRule)
    control_records: RetentionRule = field(default_factory=RetentionRule)
    quarantine: RetentionRule = field(default_factory=RetentionRule)
    offset_commits: RetentionRule = field(default_factory=RetentionRule)
    end_offsets: RetentionRule = field(
        default_factory=lambda: RetentionRule(
            downsample_after=Duration("7d"), downsample_every=Duration("1h")
        )
    )
    partition_lag: RetentionRule = field(
        default_factory=lambda: RetentionRule(
            downsample_after=Duration("7d"), downsample_every=Duration("1h")
        )
    )
    batch_audit: RetentionRule = field(default_factory=lambda: RetentionRule(keep=Duration("90d")))

    def rule(self, logical: str) -> RetentionRule | None:
        """The rule of a logical table; None for a table without retention settings."""
        found: RetentionRule | None = getattr(self, logical, None)
        return found


@_section
class MaintenanceConfig:
    """``offsetscope maintain``: retention deletes and downsampling, OPTIMIZE, VACUUM."""

    retention: RetentionConfig = field(default_factory=RetentionConfig)
    # OPTIMIZE every table (compaction; liquid clustering where declared, Z-order by group_id
    # for the partitioned tables read by group).
    optimize: StrictBool = True
    # The finished days of a date-partitioned table each run compacts (a Z-order rewrites every
    # file of the days it is given): a daily run skipped twice still reaches every day. Raise it
    # for a first run over a table that has never been maintained.
    optimize_days: AtLeast1 = 3
    # VACUUM every table, keeping the files [pipeline] deleted_file_retention still protects.
    vacuum: StrictBool = True
    # A step whose commit loses to a concurrent one (the ingest query's) is retried this many
    # times in all, waiting ``retry_backoff`` doubled each time.
    max_attempts: AtLeast1 = 5
    retry_backoff: Duration = Duration("2s")


@_section
class SparkConfig:
    master: str = "local[2]"
    app_name: str = "offsetscope"
    shuffle_partitions: StrictInt = 4
    jars_dir: str = "build/jvm/spark"
    # Further local folders whose jars join spark.jars: S3A's (build/jvm/s3a, `make
    # infra-jars`) where the platform has none, the MSK IAM login module (build/jvm/msk-iam).
    extra_jars_dirs: tuple[str, ...] = ()
    conf: Mapping[str, str] = field(default_factory=dict)


@_section
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
    port: Port = 0
    controller_port: Port = 0
    # -Xmx of the broker JVM; the log cleaner's dedupe buffer must fit in it.
    heap: HeapSize = "768m"
    offsets_partitions: AtLeast1 = 3  # offsets.topic.num.partitions
    transaction_partitions: AtLeast1 = 3  # transaction.state.log.num.partitions
    group_initial_rebalance_delay_ms: StrictInt = 0  # group.initial.rebalance.delay.ms
    group_min_session_timeout_ms: StrictInt = 1_000  # group.min.session.timeout.ms
    group_max_session_timeout_ms: StrictInt = 300_000  # group.max.session.timeout.ms
    offsets_retention_minutes: StrictInt = 10_080  # offsets.retention.minutes
    offsets_retention_check_interval_ms: StrictInt = 1_000  # offsets.retention.check.interval.ms
    # transaction.abort.timed.out.transaction.cleanup.interval.ms: how soon a timed-out
    # transaction is aborted by the coordinator.
    transaction_abort_timed_out_interval_ms: StrictInt = 1_000
    # transaction.remove.expired.transaction.cleanup.interval.ms
    transaction_remove_expired_interval_ms: StrictInt = 60_000
    transactional_id_expiration_ms: StrictInt = 604_800_000  # transactional.id.expiration.ms
    transaction_max_timeout_ms: StrictInt = 900_000  # transaction.max.timeout.ms
    log_cleaner_dedupe_buffer_bytes: StrictInt = 16_777_216  # log.cleaner.dedupe.buffer.size
    offsets_segment_bytes: StrictInt = 104_857_600  # offsets.topic.segment.bytes
    transaction_segment_bytes: StrictInt = 104_857_600  # transaction.state.log.segment.bytes
    # Off so a misspelt topic fails loudly instead of appearing with default settings.
    auto_create_topics: StrictBool = False  # auto.create.topics.enable
    startup_timeout: Duration = Duration("60s")
    stop_timeout: Duration = Duration("30s")
    # The client listener: "PLAINTEXT", or "SASL_PLAINTEXT" (SCRAM-SHA-512 logins, Kafka's
    # StandardAuthorizer with ACLs, no access without one, ``super_user`` as the harness's own
    # principal with a password generated per data folder).
    # "SASL_PLAINTEXT_GSSAPI": Kerberos logins on the client and inter-broker listener, with the
    # broker's service principal and keytab below (a KDC: verify/harness/kdc.py); no authorizer.
    listener_security: ListenerSecurity = "PLAINTEXT"
    super_user: UserName = "admin"
    kerberos_principal: str = ""  # e.g. "kafka/localhost@OFFSETSCOPE.LOCAL"
    kerberos_keytab: str = ""
    kerberos_krb5_conf: str = ""
    properties: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or self.name in (".", ".."):
            raise InvalidConfigError("name", f"must be a plain folder name, not {self.name!r}")
        if self.port and self.port == self.controller_port:
            raise InvalidConfigError("controller_port", "must differ from port")
        if self.listener_security == "SASL_PLAINTEXT_GSSAPI":
            for key in ("kerberos_principal", "kerberos_keytab", "kerberos_krb5_conf"):
                if not getattr(self, key):
                    raise InvalidConfigError(key, "SASL_PLAINTEXT_GSSAPI needs it")


# --------------------------------------------------------------------------- alerts and quality


@_section
class StormOverride:
    """Per-group settings of ``rebalance_storm``; unset keys keep the rule's value."""

    enabled: StrictBool | None = None
    max_generations: AtLeast0 | None = None
    window: Duration | None = None
    severity: Severity | None = None


@_section
class RebalanceStormRule:
    """More than ``max_generations`` generations (rebalances) of a group within ``window``.

    Burrow and the client metrics offer only a rate (``rebalance-rate-per-hour``); each completed
    classic rebalance stores a generation and each KIP-848 rebalance bumps the group epoch, so
    the generations in a window are the count itself.
    """

    enabled: StrictBool = True
    max_generations: AtLeast0 = 5
    window: Duration = Duration("10m")
    severity: Severity = "critical"
    groups: Mapping[str, StormOverride] = field(default_factory=dict)


@_section
class ChurnOverride:
    """Per-group settings of ``member_churn``; unset keys keep the rule's value."""

    enabled: StrictBool | None = None
    max_member_changes: AtLeast0 | None = None
    max_cycling_instances: AtLeast0 | None = None
    window: Duration | None = None
    severity: Severity | None = None


@_section
class MemberChurnRule:
    """Member ids joining and leaving (more than ``max_member_changes`` joins + leaves in
    ``window``), or static members cycling (more than ``max_cycling_instances`` instance ids
    seen with two or more member ids in ``window``)."""

    enabled: StrictBool = True
    max_member_changes: AtLeast0 = 10
    max_cycling_instances: AtLeast0 = 2
    window: Duration = Duration("10m")
    severity: Severity = "warning"
    groups: Mapping[str, ChurnOverride] = field(default_factory=dict)


@_section
class RebalanceStuckRule:
    """A join phase that completed without a stored assignment (classic), or a KIP-848 group in
    Assigning/Reconciling for longer than its members' rebalance timeout."""

    enabled: StrictBool = True
    # The timeout when no member reported one (Kafka's max.poll.interval.ms default).
    default_rebalance_timeout: Duration = Duration("5m")
    severity: Severity = "warning"


@_section
class LagOverride:
    """Per-group settings of ``lag_stall``; unset keys keep the rule's value."""

    enabled: StrictBool | None = None
    allowed_lag: AtLeast0 | None = None
    intervals: AtLeast2 | None = None
    severity: Severity | None = None


@_section
class LagStallRule:
    """Burrow's threshold-free evaluation over the last ``intervals`` lag observations of a
    partition: the committed offset not moving while the group lags (``STALL``) and, if listed,
    the other statuses Burrow reports as errors."""

    enabled: StrictBool = True
    intervals: AtLeast2 = 10
    allowed_lag: AtLeast0 = 0
    statuses: tuple[BurrowStatus, ...] = ("STALL",)
    severity: Severity = "warning"
    groups: Mapping[str, LagOverride] = field(default_factory=dict)


@_section
class LagThresholdOverride:
    """Per-group or per-topic settings of ``lag_threshold``; unset keys keep the rule's value
    (a topic's override applies first, then the group's)."""

    enabled: StrictBool | None = None
    warning_records: AtLeast1 | None = None
    critical_records: AtLeast1 | None = None
    warning_time: Duration | None = None
    critical_time: Duration | None = None
    duration: Duration | None = None


LagScope = Literal["partition", "topic"]


@_section
class LagThresholdRule:
    """Lag above a threshold for a duration, as kminion and kafka-lag-exporter users write it
    in Alertmanager ("lag above N records or T behind for 5 minutes"): per group and partition,
    and summed per group and topic (records added up, time the largest of the partitions').

    Each level (warning, critical) is its own episode; a level fires when its records or its
    time threshold (either; an unset one never) has been exceeded at every lag observation for
    ``duration``, and resolves at the first observation below both. Lag is ``partition_lag``'s
    ``lag_records`` / ``lag_seconds`` (its ``lag_basis``: the LSO unless the group reads
    uncommitted, see ``[pipeline] read_committed_groups``).
    """

    enabled: StrictBool = True
    warning_records: AtLeast1 | None = None
    critical_records: AtLeast1 | None = None
    warning_time: Duration | None = Duration("15m")
    critical_time: Duration | None = Duration("1h")
    duration: Duration = Duration("5m")
    scopes: tuple[LagScope, ...] = ("partition", "topic")
    groups: Mapping[str, LagThresholdOverride] = field(default_factory=dict)
    topics: Mapping[str, LagThresholdOverride] = field(default_factory=dict)


@_section
class StuckLsoRule:
    """A data partition whose last stable offset has not moved while its high watermark has,
    for longer than ``bound`` (the ``stuck_partitions`` table, written by the ingest query with
    ``[pipeline] stuck_lso_bound``): an open transaction holds every read_committed consumer of
    the partition back. Resolved when the LSO moves."""

    enabled: StrictBool = True
    severity: Severity = "critical"


@_section
class HangingTransactionRule:
    """A transaction still open ``margin`` after its own timeout."""

    enabled: StrictBool = True
    margin: Duration = Duration("1m")
    severity: Severity = "critical"


@_section
class DataLossOverride:
    """Per-group settings of ``data_loss``; unset keys keep the rule's value."""

    enabled: StrictBool | None = None
    min_lost_records: AtLeast1 | None = None
    severity: Severity | None = None


@_section
class DataLossRule:
    """A group's committed offset below the partition's log start offset: retention deleted at
    least ``min_lost_records`` records the group never read."""

    enabled: StrictBool = True
    min_lost_records: AtLeast1 = 1
    severity: Severity = "critical"
    groups: Mapping[str, DataLossOverride] = field(default_factory=dict)


@_section
class QualityFailureRule:
    """A table's data-quality suite failed on a micro-batch (open until a later batch passes)."""

    enabled: StrictBool = True
    severity: Severity = "warning"


@_section
class DeliveryConfig:
    """What every queued notifier shares: the least severe alert it sends, and how it retries.

    HTTP notifiers retry connection errors, timeouts, 429 and 5xx answers (a 429's or 503's
    ``Retry-After`` is waited for, up to ``max_backoff``); the email notifier retries
    connection errors and SMTP's transient (4xx) replies. Other answers are final.
    """

    min_severity: Severity = "warning"
    # Per attempt: the connect and the read timeout of a request, or of each SMTP command.
    timeout: Duration = Duration("5s")
    max_attempts: AtLeast1 = 4
    # The second retry waits backoff, each later one twice the one before, at most max_backoff
    # (the first retry follows at once).
    backoff: Duration = Duration("500ms")
    max_backoff: Duration = Duration("30s")
    # Events waiting at most; more are recorded as dropped rather than waited for.
    queue_size: AtLeast1 = 1_000

    def __post_init__(self) -> None:
        _check_delivery(self)

    # Seconds, as the HTTP and SMTP clients take them.
    @property
    def timeout_s(self) -> float:
        return self.timeout.seconds

    @property
    def backoff_s(self) -> float:
        return self.backoff.seconds

    @property
    def max_backoff_s(self) -> float:
        return self.max_backoff.seconds


def _check_delivery(section: DeliveryConfig) -> None:
    # Subclasses call this from their own __post_init__: zero-argument super() does not work in
    # slotted dataclasses.
    if section.max_backoff.ms < section.backoff.ms:
        raise InvalidConfigError("max_backoff", "must not be less than backoff")


def _require(key: str, value: str) -> None:
    if not value:
        raise InvalidConfigError(key, "is required")


@_section
class WebhookConfig(DeliveryConfig):
    """A generic webhook: ``url`` and ``token`` are secret references, never values.

    Without ``template`` it POSTs offsetscope's own JSON payload; with one, the body the Jinja2
    template renders (sandboxed; ``event``, ``source`` and ``alert`` -- the payload's fields --
    and ``summary``, the one-line text, are in scope) with ``content_type``.
    """

    url: SecretRef = field(kw_only=True)
    token: SecretRef = ""  # sent as "Authorization: Bearer <token>" when set
    template: str = ""
    content_type: str = "application/json"

    def __post_init__(self) -> None:
        _check_delivery(self)
        _require("url", self.url)
        if self.template:
            _check_template(self.template)


def _check_template(text: str) -> None:
    # Jinja2 is imported only when a template is configured.
    import jinja2.sandbox

    try:
        jinja2.sandbox.SandboxedEnvironment().parse(text)
    except jinja2.TemplateSyntaxError as exc:
        raise InvalidConfigError(
            "template", f"is not a valid Jinja2 template: {exc.message} (line {exc.lineno})"
        ) from None


@_section
class SlackConfig(DeliveryConfig):
    """A Slack incoming webhook; ``url`` (whose path is the credential) is a secret reference."""

    url: SecretRef = field(kw_only=True)

    def __post_init__(self) -> None:
        _check_delivery(self)
        _require("url", self.url)


@_section
class TeamsConfig(DeliveryConfig):
    """A Microsoft Teams channel: the URL of a Workflows "When a Teams webhook request is
    received" flow (or of a legacy incoming webhook), as a secret reference. Messages are an
    Adaptive Card."""

    url: SecretRef = field(kw_only=True)

    def __post_init__(self) -> None:
        _check_delivery(self)
        _require("url", self.url)


@_section
class PagerDutyConfig(DeliveryConfig):
    """PagerDuty's Events API v2: an alert that opens triggers an incident, one that resolves
    resolves it (``dedup_key`` = the alert id). ``routing_key`` (the integration key of a
    service) is a secret reference."""

    routing_key: SecretRef = field(kw_only=True)
    url: str = "https://events.pagerduty.com/v2/enqueue"
    # payload.source: where the problem is, as an on-call engineer reads it.
    source: str = "offsetscope"
    min_severity: Severity = "critical"

    def __post_init__(self) -> None:
        _check_delivery(self)
        _require("routing_key", self.routing_key)
        _require("url", self.url)


_LABEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@_section
class AlertmanagerConfig(DeliveryConfig):
    """Prometheus Alertmanager (``POST <url>/api/v2/alerts``). Alertmanager resolves an alert
    nobody re-sends, so open alerts are re-sent at most every ``resend_every`` while the alerts
    job evaluates, each valid for four intervals."""

    url: str = field(kw_only=True)  # e.g. "http://alertmanager:9093"
    token: SecretRef = ""  # "Authorization: Bearer <token>" when set
    username: str = ""  # basic authentication, with password
    password: SecretRef = ""
    # Labels added to every alert (team, environment); the alert's own labels win.
    labels: Mapping[str, str] = field(default_factory=dict)
    resend_every: Duration = Duration("5m")

    def __post_init__(self) -> None:
        _check_delivery(self)
        _require("url", self.url)
        if bool(self.username) != bool(self.password):
            raise InvalidConfigError("password", "username and password go together")
        if self.token and self.username:
            raise InvalidConfigError("token", "use a token or a username and password, not both")
        for name in self.labels:
            if not _LABEL_NAME.match(name):
                raise InvalidConfigError(f"labels.{name}", "is not a Prometheus label name")


SmtpSecurity = Literal["starttls", "tls", "none"]


@_section
class EmailConfig(DeliveryConfig):
    """Email through an SMTP server. ``security``: ``starttls`` upgrades a plain connection
    (port 587), ``tls`` speaks TLS from the start (port 465), ``none`` sends in the clear (a
    relay on the same host). ``username`` and ``password`` are secret references."""

    host: str = field(kw_only=True)
    sender: str = field(kw_only=True)
    recipients: tuple[str, ...] = field(kw_only=True)
    port: Port = 587
    security: SmtpSecurity = "starttls"
    username: SecretRef = ""
    password: SecretRef = ""
    # A PEM bundle of the CAs the server's certificate is checked against (default: the
    # system's).
    ca_file: str = ""
    subject_prefix: str = "[offsetscope]"

    def __post_init__(self) -> None:
        _check_delivery(self)
        _require("host", self.host)
        _require("sender", self.sender)
        if not self.recipients:
            raise InvalidConfigError("recipients", "needs at least one address")
        if bool(self.username) != bool(self.password):
            raise InvalidConfigError("password", "username and password go together")
        if self.password and self.security == "none":
            raise InvalidConfigError("security", "a password is sent only over starttls or tls")


@_section
class NotifyConfig:
    """Where alert events (an alert opened or resolved) go: the job's log, and any number of
    named notifiers of each kind (``[alerts.notify.slack.<name>]`` ...)."""

    log: StrictBool = True
    events: tuple[WebhookEvent, ...] = _WEBHOOK_EVENTS
    # An alert already resolved this long before it was first seen (a backfill over old logs)
    # is recorded as "skipped", not sent.
    backfill_age: Duration = Duration("1h")
    webhooks: Mapping[str, WebhookConfig] = field(default_factory=dict)
    slack: Mapping[str, SlackConfig] = field(default_factory=dict)
    teams: Mapping[str, TeamsConfig] = field(default_factory=dict)
    pagerduty: Mapping[str, PagerDutyConfig] = field(default_factory=dict)
    alertmanager: Mapping[str, AlertmanagerConfig] = field(default_factory=dict)
    email: Mapping[str, EmailConfig] = field(default_factory=dict)


@_section
class AlertsConfig:
    """The alert rules, their per-group overrides, and the notifiers (``offsetscope.alerts``)."""

    enabled: StrictBool = True
    # The alerts query (checkpoint folder, Delta idempotency app id) and its trigger.
    query_name: TableName = "offsetscope_alerts"
    trigger: Trigger = "available_now"
    processing_time: Duration = Duration("1m")
    # "event_time": rules are evaluated as of the newest record the ingest query has read (a
    # replay of old logs raises the alerts of that time); "clock": as of the wall clock.
    time_source: TimeSource = "event_time"
    # How far back the rules read history for a group; open alerts are carried over beyond it.
    lookback: Duration = Duration("24h")
    # offsetscope's own consumer groups ([sources.kafka] group_id_prefix: the groups Spark's
    # Kafka source joins) are left out unless this is true: each restart of the ingest query
    # makes a new one, which would read as churn.
    include_own_groups: StrictBool = False
    rebalance_storm: RebalanceStormRule = field(default_factory=RebalanceStormRule)
    member_churn: MemberChurnRule = field(default_factory=MemberChurnRule)
    rebalance_stuck: RebalanceStuckRule = field(default_factory=RebalanceStuckRule)
    lag_stall: LagStallRule = field(default_factory=LagStallRule)
    lag_threshold: LagThresholdRule = field(default_factory=LagThresholdRule)
    hanging_transaction: HangingTransactionRule = field(default_factory=HangingTransactionRule)
    stuck_lso: StuckLsoRule = field(default_factory=StuckLsoRule)
    data_loss: DataLossRule = field(default_factory=DataLossRule)
    quality: QualityFailureRule = field(default_factory=QualityFailureRule)
    notify: NotifyConfig = field(default_factory=NotifyConfig)


@_section
class QualityConfig:
    """Data-quality gates (``offsetscope.quality``): great-expectations suites per table."""

    enabled: StrictBool = True
    # Timestamps before this date are implausible (Kafka's first release was in 2011).
    earliest_timestamp: IsoDate = "2010-01-01"
    # Timestamps later than the validation time plus this are implausible.
    future_tolerance: Duration = Duration("1d")
    # Send the rows that fail an expectation to quality_quarantine instead of the table.
    quarantine_failed_rows: StrictBool = True
    # Batches up to this many rows are collected (the checked columns, through Arrow) and
    # validated with great-expectations' pandas engine; larger ones on its Spark engine, one
    # Spark job per metric, which costs far more than pandas on rows that fit on the driver
    # (docs/benchmarks.md, "Measurements behind design choices").
    pandas_max_rows: AtLeast0 = 2_000_000


@_section
class LoggingConfig:
    """How a process started by an entry point logs (:mod:`offsetscope.logs`): one handler on
    the root logger writing to stderr -- where YARN's and Databricks' driver logs collect it --
    with the redacting filter of :mod:`offsetscope.redaction`."""

    level: LogLevel = "INFO"
    # A logging.Formatter format ("%(name)s" style), checked against a record at load.
    format: str = "%(asctime)s %(levelname)s %(name)s: %(message)s"
    # Levels of single loggers and their children, over ``level``. At INFO py4j logs every
    # gateway connection, and great-expectations a line per API it registers at import.
    loggers: Mapping[str, LogLevel] = field(
        default_factory=lambda: {"py4j": "WARNING", "great_expectations": "WARNING"}
    )

    def __post_init__(self) -> None:
        try:
            logging.Formatter(self.format, validate=True).format(
                logging.makeLogRecord({"msg": "m", "levelno": logging.INFO})
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidConfigError("format", f"is not a logging format: {exc}") from None
        for name in self.loggers:
            if not name or name != name.strip():
                raise InvalidConfigError(f"loggers.{name}", "is not a logger name")


@_section
class Config:
    env: str = "base"
    sources: SourcesConfig = field(default_factory=SourcesConfig)
    # Several clusters read by one deployment; empty: the one cluster of [sources].
    clusters: Mapping[ClusterName, ClusterConfig] = field(default_factory=dict)
    storage: StorageConfig = field(default_factory=StorageConfig)
    spark: SparkConfig = field(default_factory=SparkConfig)
    broker: BrokerConfig = field(default_factory=BrokerConfig)
    tables: TableNames = field(default_factory=TableNames)
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)
    alerts: AlertsConfig = field(default_factory=AlertsConfig)
    quality: QualityConfig = field(default_factory=QualityConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    maintenance: MaintenanceConfig = field(default_factory=MaintenanceConfig)

    def __post_init__(self) -> None:
        kinds = {c.kind for c in self.clusters.values()}
        for name, cluster in self.clusters.items():
            # One streaming query reads every cluster (docs/design.md, "Several clusters"):
            # Spark's Kafka source and the segment source are driven differently to the end
            # of what is available, so one query reads one kind.
            if len(kinds) > 1:
                raise InvalidConfigError(
                    f"clusters.{name}.kind",
                    f"is {cluster.kind!r}, but every cluster of a deployment is read by one "
                    "query of one kind (kafka or segments)",
                )


def clusters(cfg: Config) -> dict[str, ClusterConfig]:
    """The clusters the deployment reads, by name: ``[clusters.<name>]``, or when there is
    none, ``[sources]`` under its ``cluster`` name."""
    if cfg.clusters:
        return dict(cfg.clusters)
    return {cfg.sources.cluster: cfg.sources}


def default_cluster(cfg: Config) -> str:
    """The cluster of rows written before tables had a ``cluster`` column (``[sources]
    cluster``)."""
    return cfg.sources.cluster


def cluster_key_path(cfg: Config, name: str) -> str:
    """The dotted key of cluster ``name``'s settings: ``clusters.<name>`` or ``sources``."""
    return f"clusters.{name}" if cfg.clusters else "sources"


def for_cluster(cfg: Config, name: str) -> Config:
    """``cfg`` with cluster ``name`` as its ``[sources]`` and no ``[clusters]``: the
    configuration of the parts that talk to one cluster (its source options, its end-offset
    sampler, its access checks)."""
    found = clusters(cfg)
    if name not in found:
        known = ", ".join(sorted(found))
        raise InvalidConfigError("cluster", f"{name!r} is not configured (known: {known})")
    c = found[name]
    sources = SourcesConfig(kind=c.kind, kafka=c.kafka, segments=c.segments, cluster=name)
    return dataclasses.replace(cfg, sources=sources, clusters={})


# --------------------------------------------------------------------------- errors


def _join(path: str, name: str | int) -> str:
    if isinstance(name, int):
        return f"{path}[{name}]"
    if not name:
        return path
    return f"{path}.{name}" if path else name


def _loc_path(loc: tuple[str | int, ...], prefix: str = "") -> str:
    path = prefix
    for part in loc:
        path = _join(path, part)
    return path


def _unwrap(hint: Any) -> Any:
    """``hint`` without ``Annotated`` metadata and without ``| None``."""
    while True:
        if typing.get_origin(hint) is Annotated:
            hint = typing.get_args(hint)[0]
            continue
        if typing.get_origin(hint) in (typing.Union, types.UnionType):
            options = [a for a in typing.get_args(hint) if a is not type(None)]
            if len(options) == 1:
                hint = options[0]
                continue
        return hint


def _child_type(hint: Any, part: str | int) -> Any:
    """The type of ``part`` inside a value of type ``hint`` (None when there is none)."""
    hint = _unwrap(hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return typing.get_type_hints(hint, include_extras=True).get(str(part))
    origin = typing.get_origin(hint)
    if origin in (Mapping, dict):
        return typing.get_args(hint)[1]
    if origin is tuple:
        return typing.get_args(hint)[0]
    return None


def _type_at(root: Any, loc: tuple[str | int, ...]) -> Any:
    hint = root
    for part in loc:
        hint = _child_type(hint, part)
        if hint is None:
            return None
    return hint


def _known_keys(hint: Any) -> str:
    hint = _unwrap(hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return ", ".join(sorted(f.name for f in dataclasses.fields(hint)))
    return ""


_TYPE_NAMES = {
    "int_type": "int",
    "int_parsing": "int",
    "int_from_float": "int",
    "float_type": "float",
    "float_parsing": "float",
    "bool_type": "bool",
    "bool_parsing": "bool",
    "string_type": "str",
    "tuple_type": "an array",
    "list_type": "an array",
    "dict_type": "a table",
    "mapping_type": "a table",
    "dataclass_type": "a table",
    "dataclass_exact_type": "a table",
    "model_type": "a table",
}


def _message(error: Any, root: Any) -> tuple[tuple[str | int, ...], str]:
    """(location, message) of one pydantic error; the input value is never repeated unless the
    key cannot hold a secret (enumerations, numbers)."""
    loc: tuple[str | int, ...] = tuple(error["loc"])
    kind: str = error["type"]
    ctx: dict[str, Any] = error.get("ctx") or {}
    value = error.get("input")
    if kind in ("value_error", "assertion_error"):
        cause = ctx.get("error")
        if isinstance(cause, InvalidConfigError):
            # A section's cross-key check names the key relative to its section.
            suffix = tuple(cause.key_path.split(".")) if cause.key_path else ()
            return loc + suffix, str(cause).split(": ", 1)[1]
        return loc, str(cause) if cause is not None else error["msg"]
    if kind in ("unexpected_keyword_argument", "extra_forbidden"):
        known = _known_keys(_type_at(root, loc[:-1]))
        return loc, f"unknown key (known: {known})" if known else "unknown key"
    if kind in ("missing", "missing_keyword_argument"):
        return loc, "required key is missing"
    if kind == "literal_error":
        got = repr(value) if isinstance(value, str) else f"a {type(value).__name__}"
        return loc, f"{got} is not one of {ctx.get('expected')}"
    if kind == "greater_than_equal":
        return loc, f"must be at least {ctx['ge']}, not {value}"
    if kind == "greater_than":
        return loc, f"must be greater than {ctx['gt']}, not {value}"
    if kind == "less_than_equal":
        return loc, f"must be at most {ctx['le']}, not {value}"
    if kind in _TYPE_NAMES:
        # The value itself is not echoed: a secret typed into the wrong key must not be printed.
        return loc, f"expected {_TYPE_NAMES[kind]}, got {type(value).__name__}"
    return loc, f"{error['msg']} (got a {type(value).__name__})"


def _invalid(exc: ValidationError, root: Any, prefix: str = "") -> InvalidConfigError:
    """One :class:`InvalidConfigError` for a pydantic error: the first problem, by key path, and
    the key paths of the others."""
    problems = [_message(e, root) for e in exc.errors()]
    loc, message = problems[0]
    others = [_loc_path(other, prefix) for other, _ in problems[1:]]
    if others:
        message += f" (also invalid: {', '.join(others)})"
    return InvalidConfigError(_loc_path(loc, prefix), message)


_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}


def _adapter(cls: Any) -> TypeAdapter[Any]:
    adapter = _ADAPTERS.get(cls)
    if adapter is None:
        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    return adapter


def from_mapping(cls: type[T], data: Mapping[str, Any], path: str = "") -> T:
    """Build the configuration section ``cls`` from a mapping, checking keys and types.

    Raises:
        InvalidConfigError: naming the dotted key path (under ``path``) of the first problem.
    """
    if not isinstance(data, Mapping):
        raise InvalidConfigError(path, f"expected a table, got {type(data).__name__}")
    try:
        return typing.cast("T", _adapter(cls).validate_python(dict(data)))
    except ValidationError as exc:
        raise _invalid(exc, cls, path) from None


# --------------------------------------------------------------------------- loading

# OFFSETSCOPE_CONF_DIR names the folder of the TOML files; OFFSETSCOPE__<KEY>__<KEY> variables
# override single keys.
CONF_DIR_VARIABLE = "OFFSETSCOPE_CONF_DIR"
OVERRIDE_PREFIX = "OFFSETSCOPE__"
SCHEMA_FILE = "offsetscope.schema.json"

# The installed package, the conf/ of a checkout beside lib/, and the copy inside the wheel
# (package offsetscope._conf; in a checkout a link to conf/).
_PACKAGE_DIR = Path(offsetscope.__file__).resolve().parent
_CHECKOUT_ROOT = _PACKAGE_DIR.parents[1]
_PACKAGED_CONF = _PACKAGE_DIR / "_conf"


def _checkout_conf_dir() -> Path | None:
    conf = _CHECKOUT_ROOT / "conf"
    if (conf / "base.toml").is_file() and (_CHECKOUT_ROOT / "pyproject.toml").is_file():
        return conf
    return None


def packaged_conf_dir() -> Path:
    """The TOML files shipped inside the wheel (``offsetscope init`` copies them out)."""
    return _PACKAGED_CONF


def default_conf_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """Where the TOML files are: ``OFFSETSCOPE_CONF_DIR`` if set, else the checkout's ``conf/``
    (when the package runs from a checkout), else the copy inside the installed wheel."""
    override = environ.get(CONF_DIR_VARIABLE)
    if override:
        return Path(override)
    return _checkout_conf_dir() or packaged_conf_dir()


def project_root(environ: Mapping[str, str] = os.environ) -> Path:
    """The folder relative paths in ``conf/`` are resolved against: the parent of the conf
    folder, or the working directory when the configuration is the wheel's own copy (relative
    paths never point into the installed package)."""
    conf = default_conf_dir(environ).resolve()
    if conf == packaged_conf_dir().resolve() and _checkout_conf_dir() is None:
        return Path.cwd()
    return conf.parent


def load(
    env: str = "local",
    conf_dir: Path | None = None,
    extra: Path | None = None,
    *,
    environ: Mapping[str, str] = os.environ,
) -> Config:
    """Load ``base.toml``, overlay ``<env>.toml``, an optional extra file and the environment's
    ``OFFSETSCOPE__...`` overrides, and validate.

    Args:
        env: environment name; ``conf/<env>.toml`` must exist unless ``env`` is ``base``.
        conf_dir: folder holding the TOML files (default: :func:`default_conf_dir`).
        extra: a further TOML file overlaid last (a job's ``--conf``).
        environ: the environment variables (``OFFSETSCOPE_CONF_DIR``, overrides).

    Raises:
        InvalidConfigError: a file is missing or unparsable, or a key is unknown or invalid.
    """
    folder = conf_dir or default_conf_dir(environ)
    tree = _read_toml(folder / "base.toml")
    if env != "base":
        tree = merge(tree, _read_toml(folder / f"{env}.toml"))
    if extra is not None:
        tree = merge(tree, _read_toml(extra))
    overrides = environment_overrides(environ, tree)
    for o in overrides:
        tree = _set(tree, o.path, o.value, o.variable)
    tree = {**tree, "env": env}
    try:
        return from_mapping(Config, tree)
    except InvalidConfigError as exc:
        for o in reversed(overrides):
            if exc.key_path == o.key_path or exc.key_path.startswith(
                (f"{o.key_path}.", f"{o.key_path}[")
            ):
                message = str(exc).split(": ", 1)[1]
                raise InvalidConfigError(
                    exc.key_path, f"{message} (set by environment variable {o.variable})"
                ) from None
        raise


@dataclasses.dataclass(frozen=True, slots=True)
class Override:
    """One key set by an environment variable."""

    variable: str
    path: tuple[str, ...]
    value: Any

    @property
    def key_path(self) -> str:
        return ".".join(self.path)


def environment_overrides(
    environ: Mapping[str, str], tree: Mapping[str, Any] | None = None
) -> list[Override]:
    """Per-key overrides from ``OFFSETSCOPE__<SECTION>__<KEY>=value`` variables.

    ``OFFSETSCOPE__SOURCES__KAFKA__BOOTSTRAP_SERVERS=host:9092`` sets ``[sources.kafka]
    bootstrap_servers``. Key names are matched without regard to case; a table key (a group id,
    a webhook name, an option) already in ``tree`` is matched the same way, a new one is taken
    as written. A value is a TOML literal (``42``, ``true``, ``["a", "b"]``) where the key holds
    a number, a boolean, an array or a table, and the text as it is where it holds a string.

    Returns:
        the overrides in the order they apply (outer keys first).

    Raises:
        InvalidConfigError: a variable names an unknown key (naming the variable and the path).
    """
    found: list[Override] = []
    names = [n for n in environ if n.startswith(OVERRIDE_PREFIX)]
    for variable in sorted(names, key=lambda n: (n.count("__"), n)):
        parts = variable[len(OVERRIDE_PREFIX) :].split("__")
        path = tuple(_override_path(variable, parts, tree or {}))
        value = _override_value(environ[variable], _type_at(Config, path))
        found.append(Override(variable, path, value))
    return found


def _override_path(variable: str, parts: list[str], tree: Mapping[str, Any]) -> list[str]:
    path: list[str] = []
    hint: Any = Config
    node: Any = tree
    for part in parts:
        where = ".".join(path)
        if not part:
            raise InvalidConfigError(where, f"environment variable {variable}: empty key name")
        base = _unwrap(hint)
        if dataclasses.is_dataclass(base) and isinstance(base, type):
            names = {f.name.lower(): f.name for f in dataclasses.fields(base)}
            name = names.get(part.lower())
            if name is None or (not path and name == "env"):
                known = ", ".join(sorted(n for n in names.values() if path or n != "env"))
                raise InvalidConfigError(
                    _join(where, part.lower()),
                    f"environment variable {variable} names an unknown key (known: {known})",
                )
        elif typing.get_origin(base) in (Mapping, dict):
            existing = node if isinstance(node, Mapping) else {}
            name = next((k for k in existing if str(k).lower() == part.lower()), part)
        else:
            raise InvalidConfigError(
                where, f"environment variable {variable}: {where} is not a table"
            )
        path.append(name)
        hint = _child_type(base, name)
        node = node.get(name) if isinstance(node, Mapping) else None
    return path


def _is_text(hint: Any) -> bool:
    """Whether a key of type ``hint`` holds a string (then an override's text is taken as is)."""
    base = _unwrap(hint)
    if typing.get_origin(base) is Literal:
        return all(isinstance(a, str) for a in typing.get_args(base))
    return isinstance(base, type) and issubclass(base, str)


def _override_value(text: str, hint: Any) -> Any:
    if _is_text(hint):
        return text
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        return text  # validation names the key and the type it expected


def _set(
    tree: Mapping[str, Any], path: tuple[str, ...], value: Any, variable: str, depth: int = 0
) -> dict[str, Any]:
    out = dict(tree)
    head = path[depth]
    if depth == len(path) - 1:
        out[head] = value
        return out
    child = out.get(head, {})
    if not isinstance(child, Mapping):
        raise InvalidConfigError(
            ".".join(path[: depth + 1]),
            f"environment variable {variable} sets a key inside it, but the files set it to a"
            f" {type(child).__name__}",
        )
    out[head] = _set(child, path, value, variable, depth + 1)
    return out


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


# --------------------------------------------------------------------------- schema, templates


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the TOML files (editors validate ``conf/*.toml`` with it)."""
    body = TypeAdapter(Config).json_schema()
    body.pop("title", None)
    body["properties"].pop("env", None)  # from --env, not from the files
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "offsetscope configuration",
        "description": "conf/base.toml overlaid by conf/<env>.toml. Written by `make conf-schema`"
        " from lib/offsetscope/config.py; do not edit.",
        **body,
    }


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2) + "\n"


def write_schema(path: Path) -> bool:
    """Write :func:`schema_text` to ``path``; whether the file changed."""
    text = schema_text()
    if path.is_file() and path.read_text() == text:
        return False
    path.write_text(text)
    return True


def template_files() -> list[Path]:
    """The configuration templates inside the package: the TOML files and their schema."""
    folder = packaged_conf_dir()
    files = sorted(folder.glob("*.toml"))
    if not files:
        raise FileNotFoundError(f"no configuration templates in {folder}")
    return [*files, folder / SCHEMA_FILE]


def write_templates(dest: Path, *, overwrite: bool = False) -> list[Path]:
    """Copy the packaged ``conf/`` files (TOML and schema) into ``dest``; the paths written.

    Raises:
        FileExistsError: a file is already there and ``overwrite`` is false (nothing written).
    """
    sources = template_files()
    targets = [dest / s.name for s in sources]
    existing = [t for t in targets if t.exists()]
    if existing and not overwrite:
        names = ", ".join(str(t) for t in existing)
        raise FileExistsError(f"not overwriting what is there: {names}")
    dest.mkdir(parents=True, exist_ok=True)
    for source, target in zip(sources, targets, strict=True):
        target.write_bytes(source.read_bytes())
    return targets


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
    isolation_level: IsolationLevel = "read_committed",
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
    changes: dict[str, Any] = {}
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


def is_own_group(cfg: Config, group_id: str) -> bool:
    """True for one of offsetscope's own consumer groups: Spark's Kafka source joins groups
    named ``[sources.kafka] group_id_prefix``-..., in the ``__consumer_offsets`` it reads."""
    prefix = cfg.sources.kafka.group_id_prefix
    return bool(prefix) and group_id.startswith(prefix)
