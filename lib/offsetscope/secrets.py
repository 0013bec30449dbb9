"""Secrets by reference, Kafka client security settings, the access offsetscope needs, and the
file modes of what it writes.

**References.** A setting that holds a secret is written in ``conf/`` as a reference and
checked for that form at load (:func:`offsetscope.config.require_reference`)::

    env:NAME            the environment variable NAME
    secret:scope/key    key ``key`` of the Databricks secret scope ``scope``
                        (``dbutils.secrets.get``; only where a Databricks runtime runs)

A :class:`Resolver` turns references into values *at the edge*: when a job builds its Kafka
options or an AdminClient configuration. The frozen :class:`~offsetscope.config.Config` only
ever holds references, so ``repr(cfg)`` is safe to log. Every resolved value is registered with
:mod:`offsetscope.redaction`, which then masks it wherever our code logs or raises. A missing
variable or secret raises :class:`SecretNotFoundError` naming the key path and the reference,
never a value.

**Kafka connection settings.** ``[sources.kafka.security]`` is written once and mapped by
:func:`security_settings` to both clients offsetscope builds:

=================================  =========================================  ==========================================
``[sources.kafka.security]``       Java client (Spark's source, ``kafka.``)  librdkafka (confluent-kafka AdminClient)
=================================  =========================================  ==========================================
``protocol``                       ``security.protocol``                     ``security.protocol``
``sasl_mechanism``                 ``sasl.mechanism``                        ``sasl.mechanisms``
PLAIN / SCRAM user, password       ``sasl.jaas.config`` (Plain/ScramLogin    ``sasl.username``, ``sasl.password``
                                   Module ``username``, ``password``)
OAUTHBEARER (OIDC client           ``sasl.jaas.config`` (OAuthBearerLogin    ``sasl.oauthbearer.method=oidc``,
credentials): endpoint, client     Module ``clientId``, ``clientSecret``,     ``sasl.oauthbearer.client.id``,
id, client secret, scope           ``scope``),                               ``...client.secret``,
                                   ``sasl.login.callback.handler.class``,    ``...token.endpoint.url``,
                                   ``sasl.oauthbearer.token.endpoint.url``   ``...scope``
``ssl_ca_location`` (PEM)          ``ssl.truststore.type=PEM``,              ``ssl.ca.location``
                                   ``ssl.truststore.location``
``ssl_keystore_location`` (PEM:    ``ssl.keystore.type=PEM``,                ``ssl.certificate.location`` and
key + chain, mTLS)                 ``ssl.keystore.location``                 ``ssl.key.location`` (the same file)
``ssl_key_password``               ``ssl.key.password``                      ``ssl.key.password``
``ssl_endpoint_identification``    ``ssl.endpoint.identification.algorithm`` ``ssl.endpoint.identification.algorithm``
                                   (``https`` / empty)                       (``https`` / ``none``)
=================================  =========================================  ==========================================

JAAS option values are quoted and escaped (``\\`` and ``"``) as Kafka's ``JaasConfig`` parser
reads them, so any password works. ``java_class_prefix`` prefixes the login module and handler
class names (``kafkashaded.`` for the Databricks runtime's shaded client). Kafka clients from
4.0 on only fetch OAuth tokens from URLs listed in the JVM system property
``org.apache.kafka.sasl.oauthbearer.allowed.urls``; that is set where the JVM starts (Spark's
``spark.driver.extraJavaOptions`` / ``spark.executor.extraJavaOptions``), not here.

:func:`spark_kafka_options` and :func:`admin_config` add the ``[sources.kafka]`` pass-through
maps (``options``: Java names; ``admin_options``: librdkafka names) with their references
resolved. A pass-through key that the security section already sets is refused (one place per
setting), and so is a secret-looking pass-through key holding a literal.

**Access.** offsetscope only reads. :func:`required_acls` lists every ACL its jobs need --
READ and DESCRIBE on the two internal topics, READ on the consumer groups whose names start
with ``group_id_prefix`` (Spark's consumer-based offset reader joins such a group for each
query), DESCRIBE on the data topics (end offsets) -- and nothing that writes.
:func:`check_access` verifies them up front with the AdminClient's authorized-operations
answers; :func:`kafka_access` turns an authorization or authentication failure raised inside
it (by Spark's Java client or by confluent-kafka) into a :class:`KafkaAccessError` naming the
missing operation and resource, instead of a stack trace.

**Files.** ``storage.umask`` bounds the modes of everything written locally: :func:`apply_umask`
sets the process umask (inherited by a JVM started afterwards), :func:`storage_spark_conf`
gives Hadoop's ``fs.permissions.umask-mode`` (Hadoop's local file system chmods what it creates
to that, whatever the process umask), :func:`prepare_storage` creates or tightens the
warehouse, checkpoint and metastore folders, and :func:`permission_violations` lists anything
under a folder that grants more.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient

from offsetscope import redaction
from offsetscope.config import (
    SECRET_REFERENCE,
    InvalidConfigError,
    KafkaSecurityConfig,
    KafkaSourceConfig,
    StorageConfig,
    project_root,
    require_reference,
)

SECURITY_PATH = "sources.kafka.security"
DATABRICKS_RUNTIME_VARIABLE = "DATABRICKS_RUNTIME_VERSION"


# ----------------------------------------------------------------------------- references


class SecretNotFoundError(InvalidConfigError):
    """A secret reference could not be resolved; the message names the key and the reference.

    Attributes:
        reference: the reference text (``env:NAME`` / ``secret:scope/key``), never a value.
    """

    def __init__(self, key_path: str, reference: str, message: str) -> None:
        super().__init__(key_path, f"{reference}: {message}")
        self.reference = reference


@dataclass(frozen=True, slots=True)
class Reference:
    """A parsed secret reference: ``env:NAME`` or ``secret:scope/key``."""

    kind: str  # "env" | "secret"
    name: str  # variable name, or scope
    key: str = ""

    def __str__(self) -> str:
        return f"env:{self.name}" if self.kind == "env" else f"secret:{self.name}/{self.key}"


def parse_reference(value: str) -> Reference | None:
    """The reference ``value`` spells, or None for a literal value."""
    match = SECRET_REFERENCE.match(value)
    if match is None:
        return None
    if match.group("env") is not None:
        return Reference("env", match.group("env"))
    return Reference("secret", match.group("scope"), match.group("key"))


class SecretStore(Protocol):
    """Where ``secret:scope/key`` references are looked up."""

    def get(self, scope: str, key: str) -> str:
        """The secret's value; raises if the scope or key does not exist."""
        ...


class DatabricksSecrets:
    """``dbutils.secrets`` of a Databricks runtime as a :class:`SecretStore`."""

    def __init__(self, dbutils: Any) -> None:
        self.dbutils = dbutils

    def get(self, scope: str, key: str) -> str:
        return str(self.dbutils.secrets.get(scope=scope, key=key))


class Resolver:
    """Resolves references from the environment and (on Databricks) a secret scope.

    Args:
        environ: the variables ``env:`` reads (default: ``os.environ``, read at each call).
        store: where ``secret:`` is read; None outside Databricks.
        registry: where resolved values are registered for redaction.
    """

    def __init__(
        self,
        environ: Mapping[str, str] | None = None,
        store: SecretStore | None = None,
        registry: redaction.SecretRegistry | None = None,
    ) -> None:
        self._environ = environ
        self.store = store
        self.registry = registry

    def __repr__(self) -> str:
        return f"Resolver(store={type(self.store).__name__ if self.store else None})"

    def resolve(self, value: str, key_path: str) -> str:
        """``value`` itself, or the secret it references.

        Raises:
            SecretNotFoundError: the variable is unset or empty, no secret store is available,
                or the store has no such secret.
        """
        ref = parse_reference(value)
        if ref is None:
            return value
        if ref.kind == "env":
            environ = os.environ if self._environ is None else self._environ
            resolved = environ.get(ref.name)
            if resolved is None:
                raise SecretNotFoundError(
                    key_path, str(ref), f"environment variable {ref.name} is not set"
                )
            if not resolved:
                raise SecretNotFoundError(
                    key_path, str(ref), f"environment variable {ref.name} is empty"
                )
        else:
            resolved = self._from_store(ref, key_path)
        redaction.register_secret(resolved, self.registry)
        return resolved

    def _from_store(self, ref: Reference, key_path: str) -> str:
        if self.store is None:
            raise SecretNotFoundError(
                key_path,
                str(ref),
                "secret scopes are read with dbutils.secrets on a Databricks runtime; none is"
                f" available here ({DATABRICKS_RUNTIME_VARIABLE} is not set). Use env:NAME"
                " outside Databricks",
            )
        try:
            resolved = self.store.get(ref.name, ref.key)
        # dbutils raises Py4J and Java errors of many kinds; all mean "not readable here".
        except Exception as exc:  # noqa: BLE001
            # The store's own message may quote what it found; keep only its kind.
            raise SecretNotFoundError(
                key_path,
                str(ref),
                f"secret scope {ref.name!r} has no readable key {ref.key!r} ({type(exc).__name__})",
            ) from None
        if not resolved:
            raise SecretNotFoundError(key_path, str(ref), "the secret is empty")
        return resolved


def on_databricks(environ: Mapping[str, str] | None = None) -> bool:
    """True inside a Databricks runtime (its clusters set ``DATABRICKS_RUNTIME_VERSION``)."""
    return DATABRICKS_RUNTIME_VARIABLE in (os.environ if environ is None else environ)


def resolver_for(spark: Any | None = None, dbutils: Any | None = None) -> Resolver:
    """The resolver of a job: environment variables, plus secret scopes on Databricks.

    Args:
        spark: the job's SparkSession; on Databricks it yields ``dbutils`` when none is given.
        dbutils: the runtime's ``dbutils`` (notebooks have it as a global).
    """
    if dbutils is None and spark is not None and on_databricks():
        # Only a Databricks runtime ships pyspark.dbutils; nowhere else is it imported.
        from pyspark.dbutils import DBUtils

        dbutils = DBUtils(spark)
    return Resolver(store=DatabricksSecrets(dbutils) if dbutils is not None else None)


# ----------------------------------------------------------------------------- Kafka clients


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """One security configuration as both clients spell it (values resolved)."""

    java: dict[str, str]
    librdkafka: dict[str, str]

    def __repr__(self) -> str:
        return (
            f"ClientSettings(java={redaction.redact(self.java)!r},"
            f" librdkafka={redaction.redact(self.librdkafka)!r})"
        )


_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "OAUTHBEARER": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
}
_OAUTH_LOGIN_HANDLER = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
)


def jaas_quote(value: str) -> str:
    """``value`` as a double-quoted JAAS option value (``\\`` and ``"`` escaped)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def jaas_config(login_module: str, options: Mapping[str, str]) -> str:
    """A ``sasl.jaas.config`` value: ``<module> required k="v" ...;`` (empty values left out)."""
    parts = [login_module, "required"]
    parts += [f"{k}={jaas_quote(v)}" for k, v in options.items() if v]
    return " ".join(parts) + ";"


def security_settings(
    sec: KafkaSecurityConfig, resolver: Resolver, key_path: str = SECURITY_PATH
) -> ClientSettings:
    """Map ``[sources.kafka.security]`` to Java client and librdkafka properties.

    See the table in the module docstring.

    Raises:
        SecretNotFoundError: a referenced secret is not available.
    """

    def secret(name: str) -> str:
        value: str = getattr(sec, name)
        return resolver.resolve(value, f"{key_path}.{name}") if value else ""

    if sec.protocol == "PLAINTEXT":
        # Both clients' default; nothing else applies without TLS or SASL.
        return ClientSettings({}, {})
    java: dict[str, str] = {"security.protocol": sec.protocol}
    rdk: dict[str, str] = {"security.protocol": sec.protocol.lower()}
    mechanism = sec.sasl_mechanism
    if mechanism:
        java["sasl.mechanism"] = mechanism
        rdk["sasl.mechanisms"] = mechanism
        module = sec.java_class_prefix + _LOGIN_MODULES[mechanism]
        if mechanism == "OAUTHBEARER":
            client_secret = secret("oauth_client_secret")
            java["sasl.jaas.config"] = jaas_config(
                module,
                {
                    "clientId": sec.oauth_client_id,
                    "clientSecret": client_secret,
                    "scope": sec.oauth_scope,
                },
            )
            java["sasl.login.callback.handler.class"] = sec.java_class_prefix + _OAUTH_LOGIN_HANDLER
            java["sasl.oauthbearer.token.endpoint.url"] = sec.oauth_token_endpoint_url
            rdk["sasl.oauthbearer.method"] = "oidc"
            rdk["sasl.oauthbearer.client.id"] = sec.oauth_client_id
            rdk["sasl.oauthbearer.client.secret"] = client_secret
            rdk["sasl.oauthbearer.token.endpoint.url"] = sec.oauth_token_endpoint_url
            if sec.oauth_scope:
                rdk["sasl.oauthbearer.scope"] = sec.oauth_scope
        else:
            password = secret("sasl_password")
            java["sasl.jaas.config"] = jaas_config(
                module, {"username": sec.sasl_username, "password": password}
            )
            rdk["sasl.username"] = sec.sasl_username
            rdk["sasl.password"] = password
    if sec.protocol.endswith("SSL"):
        if sec.ssl_ca_location:
            java["ssl.truststore.type"] = "PEM"
            java["ssl.truststore.location"] = sec.ssl_ca_location
            rdk["ssl.ca.location"] = sec.ssl_ca_location
        if sec.ssl_keystore_location:
            java["ssl.keystore.type"] = "PEM"
            java["ssl.keystore.location"] = sec.ssl_keystore_location
            rdk["ssl.certificate.location"] = sec.ssl_keystore_location
            rdk["ssl.key.location"] = sec.ssl_keystore_location
        key_password = secret("ssl_key_password")
        if key_password:
            java["ssl.key.password"] = key_password
            rdk["ssl.key.password"] = key_password
        java["ssl.endpoint.identification.algorithm"] = (
            "https" if sec.ssl_endpoint_identification else ""
        )
        rdk["ssl.endpoint.identification.algorithm"] = (
            "https" if sec.ssl_endpoint_identification else "none"
        )
    return ClientSettings(java, rdk)


def _passthrough(
    options: Mapping[str, str],
    key_path: str,
    resolver: Resolver,
    taken: Mapping[str, str],
    rename: Callable[[str], str],
) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in options.items():
        path = f"{key_path}.{name}"
        target = rename(name)
        if target in taken:
            raise InvalidConfigError(
                path, f"{target} comes from [{SECURITY_PATH}]; set it there, not here"
            )
        if redaction.is_secret_key(name) and not redaction.is_reference(value):
            require_reference(path, value)
        out[target] = resolver.resolve(value, path)
    return out


def spark_kafka_options(
    k: KafkaSourceConfig, resolver: Resolver, key_path: str = "sources.kafka"
) -> dict[str, str]:
    """Every ``kafka.``-prefixed option of Spark's Kafka source for ``k``'s connection:
    security settings plus ``options`` (bootstrap and source options are the caller's).

    Raises:
        SecretNotFoundError: a referenced secret is not available.
        InvalidConfigError: a pass-through option repeats a security setting, or holds a
            literal secret.
    """
    java = {f"kafka.{n}": v for n, v in security_settings(k.security, resolver).java.items()}
    java |= _passthrough(
        k.options,
        f"{key_path}.options",
        resolver,
        java,
        lambda n: n if n.startswith("kafka.") else f"kafka.{n}",
    )
    return java


def admin_config(
    k: KafkaSourceConfig, resolver: Resolver, key_path: str = "sources.kafka"
) -> dict[str, str]:
    """The librdkafka configuration of an AdminClient (or consumer) for ``k``'s cluster:
    ``bootstrap.servers``, security settings, then ``admin_options``.

    Raises:
        SecretNotFoundError: a referenced secret is not available.
        InvalidConfigError: see :func:`spark_kafka_options`.
    """
    conf = {"bootstrap.servers": k.bootstrap_servers}
    conf |= security_settings(k.security, resolver).librdkafka
    conf |= _passthrough(k.admin_options, f"{key_path}.admin_options", resolver, conf, str)
    return conf


class KafkaAdmin(AdminClient):
    """confluent-kafka's ``AdminClient`` for ``[sources.kafka]`` (:func:`admin_config`) that
    remembers rejected logins.

    librdkafka reports a rejected login only to the error callback (served by ``poll``) and
    lets the request time out; :func:`kafka_access` given this client turns such a timeout into
    a login error.

    Args:
        k: the Kafka source configuration.
        resolver: resolves the secrets it references.
        extra: further librdkafka settings.
    """

    def __init__(self, k: KafkaSourceConfig, resolver: Resolver, **extra: Any) -> None:
        self._failures: list[str] = []
        conf: dict[str, Any] = {**admin_config(k, resolver), **extra, "error_cb": self._on_error}
        super().__init__(conf)

    def _on_error(self, err: KafkaError) -> None:
        if err.code() in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED):
            self._failures.append(redaction.redact(str(err.str())))

    def login_failures(self) -> list[str]:
        """Redacted messages of the rejected logins so far, oldest first."""
        self.poll(0)
        return list(self._failures)


def spark_redaction_conf() -> dict[str, str]:
    """Spark settings that keep Kafka credentials out of Spark's own plans, UI and logs.

    Spark's defaults redact keys matching ``secret|password|token|access.key``; the Java
    client's ``sasl.jaas.config`` matches none, and carries the password.
    """
    return {
        "spark.redaction.regex": r"(?i)secret|password|token|access[.]?key|jaas",
        "spark.sql.redaction.options.regex": r"(?i)url|jaas|password|secret|token",
        # Possessive quantifiers: Java's regex engine recurses once per iteration of a
        # group; `(?:[^"\\]|\\.)*` over a long plan string (Spark applies this to every
        # explain string) overflowed the stack of the stream execution thread.
        "spark.sql.redaction.string.regex": (
            r"(?i)(?:password|clientSecret|secret)\s*+=\s*+\"(?:[^\"\\]++|\\.)*+\""
        ),
    }


# ----------------------------------------------------------------------------- access


TOPIC, GROUP = "TOPIC", "GROUP"
LITERAL, PREFIXED = "LITERAL", "PREFIXED"
READ, DESCRIBE = "READ", "DESCRIBE"
# Operations that change the cluster; offsetscope needs none of them.
WRITE_OPERATIONS = frozenset(
    {"WRITE", "CREATE", "DELETE", "ALTER", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "ALL"}
)
# Kafka: READ, WRITE, DELETE and ALTER each imply DESCRIBE (kafka.security.authorizer.AclEntry).
_IMPLIES_DESCRIBE = frozenset({"READ", "WRITE", "DELETE", "ALTER"})


@dataclass(frozen=True, slots=True)
class AclRule:
    """One ACL offsetscope's principal needs (ALLOW, any host)."""

    resource_type: str  # TOPIC | GROUP
    name: str  # a name, a prefix, or "*" (every resource of the type)
    pattern: str  # LITERAL | PREFIXED
    operation: str  # READ | DESCRIBE
    reason: str

    def describe(self) -> str:
        """``READ on topic __consumer_offsets``, ``READ on groups prefixed 'offsetscope-'``."""
        kind = "topic" if self.resource_type == TOPIC else "group"
        if self.pattern == PREFIXED:
            where = f"{kind}s prefixed {self.name!r}"
        elif self.name == "*":
            where = f"every {kind}"
        else:
            where = f"{kind} {self.name}"
        return f"{self.operation} on {where}"

    def matches(self, resource_type: str, name: str) -> bool:
        """True if this rule's resource pattern covers the resource ``name``."""
        if resource_type != self.resource_type:
            return False
        if self.pattern == PREFIXED:
            return name.startswith(self.name)
        return self.name in ("*", name)


def _topic_pattern(spec: str) -> tuple[str, str]:
    # "orders" = that topic, "orders-*" = topics prefixed "orders-", "*" = every topic.
    if spec != "*" and spec.endswith("*"):
        return spec[:-1], PREFIXED
    return spec, LITERAL


def required_acls(k: KafkaSourceConfig, data_topics: Sequence[str] = ("*",)) -> tuple[AclRule, ...]:
    """Every ACL the configured principal needs for all of offsetscope's jobs, and no more.

    Args:
        k: the Kafka source configuration (topic names, group prefix).
        data_topics: the data topics whose end offsets are sampled: names, ``prefix*``, or
            ``*`` for every topic (the default: groups may commit on any topic).
    """
    rules: list[AclRule] = []
    for topic in (k.offsets_topic, k.transaction_topic):
        reason = f"Spark's Kafka source reads {topic}"
        rules.append(AclRule(TOPIC, topic, LITERAL, READ, reason))
        rules.append(AclRule(TOPIC, topic, LITERAL, DESCRIBE, reason + " (metadata, offsets)"))
    rules.append(
        AclRule(
            GROUP,
            k.group_id_prefix,
            PREFIXED,
            READ,
            "Spark's consumer-based offset reader joins a group <prefix>-<uuid>-driver-N per query",
        )
    )
    for spec in data_topics:
        name, pattern = _topic_pattern(spec)
        rules.append(
            AclRule(TOPIC, name, pattern, DESCRIBE, "end-offset sampler: metadata and ListOffsets")
        )
    return tuple(rules)


def kafka_acls_commands(
    principal: str,
    rules: Sequence[AclRule],
    bootstrap: str = "$BOOTSTRAP",
    command_config: str = "admin.properties",
) -> list[str]:
    """``kafka-acls.sh`` command lines that grant ``rules`` to ``principal`` (one per resource)."""
    grouped: dict[tuple[str, str, str], list[str]] = {}
    for rule in rules:
        grouped.setdefault((rule.resource_type, rule.name, rule.pattern), []).append(rule.operation)
    lines = []
    for (rtype, name, pattern), operations in grouped.items():
        ops = " ".join(f"--operation {op.title()}" for op in operations)
        flag = "--topic" if rtype == TOPIC else "--group"
        quoted = f"'{name}'" if name == "*" else name
        kind = " --resource-pattern-type prefixed" if pattern == PREFIXED else ""
        lines.append(
            f"kafka-acls.sh --bootstrap-server {bootstrap} --command-config {command_config}"
            f" --add --allow-principal {principal} {ops} {flag} {quoted}{kind}"
        )
    return lines


class KafkaAccessError(PermissionError):
    """The configured principal cannot log in, or lacks ACLs offsetscope needs.

    Attributes:
        missing: the ACLs whose absence caused the failure (empty for a failed login).
        detail: the redacted first line of the client's own error, for the record.
    """

    def __init__(self, message: str, missing: Sequence[AclRule] = (), detail: str = "") -> None:
        super().__init__(message)
        self.missing = tuple(missing)
        self.detail = detail


def principal_of(sec: KafkaSecurityConfig) -> str:
    """The principal the broker will see, as far as the configuration tells."""
    if sec.sasl_mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        return f"User:{sec.sasl_username}"
    if sec.sasl_mechanism == "OAUTHBEARER":
        return f"the OAuth principal of client {sec.oauth_client_id!r}"
    if sec.protocol == "SSL" and sec.ssl_keystore_location:
        return "the principal of the client certificate"
    return "User:ANONYMOUS"


def _missing_message(
    k: KafkaSourceConfig, during: str, missing: Sequence[AclRule], detail: str
) -> str:
    principal = principal_of(k.security)
    needed = "; ".join(r.describe() for r in missing)
    lines = [
        f"{during}: {principal} is not authorized: it needs {needed} (docs/security.md).",
        "Grant with:",
        *(f"  {line}" for line in kafka_acls_commands(principal, missing)),
    ]
    if detail:
        lines.append(f"Kafka said: {detail}")
    return "\n".join(lines)


def _rules_for(
    k: KafkaSourceConfig, resource_type: str, name: str, data_topics: Sequence[str] = ("*",)
) -> list[AclRule]:
    rules = [r for r in required_acls(k, data_topics) if r.matches(resource_type, name)]
    # The most specific rules name the resource; a wildcard also covering it is not the gap.
    exact = [r for r in rules if r.pattern == LITERAL and r.name == name]
    if exact:
        return exact
    if rules:
        return rules
    # A resource offsetscope does not normally touch: name exactly what was refused.
    if resource_type == GROUP:
        return [AclRule(GROUP, name, LITERAL, READ, "consumer group used by the reader")]
    return [AclRule(TOPIC, name, LITERAL, DESCRIBE, "topic the job asked about")]


_JAVA_TOPICS = re.compile(r"Not authorized to access topics: \[(?P<names>[^\]]*)\]")
_JAVA_GROUP = re.compile(r"Not authorized to access group: (?P<name>\S+)")
_AUTHN = re.compile(
    r"SaslAuthenticationException|SASL authentication error|Authentication failed"
    r"|_AUTHENTICATION|SASL_AUTHENTICATION_FAILED|authentication failure",
    re.IGNORECASE,
)
_AUTHZ_CODE = re.compile(
    r"(?P<code>TOPIC|GROUP|CLUSTER|TRANSACTIONAL_ID)_AUTHORIZATION_FAILED"
    r"|(?P<java>Topic|Group|Cluster|TransactionalId)AuthorizationException"
)


_KAFKA_LINE = re.compile(
    r"[\w.$]*(?:AuthorizationException|AuthenticationException)\b[^\n]*"
    r"|KafkaError\{[^}]*(?:AUTHORIZATION|AUTHENTICATION)[^}]*\}"
)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line[:500]
    return ""


def access_error(
    exc: BaseException,
    k: KafkaSourceConfig,
    during: str,
    *,
    topics: Sequence[str] = (),
    data_topics: Sequence[str] = ("*",),
) -> KafkaAccessError | None:
    """The :class:`KafkaAccessError` behind ``exc``, or None if it is not an access failure.

    Reads Spark's Java client errors (``TopicAuthorizationException: Not authorized to access
    topics: [...]``, ``GroupAuthorizationException: ... group: <id>``,
    ``SaslAuthenticationException``) and confluent-kafka's error codes
    (``TOPIC_AUTHORIZATION_FAILED`` ...). ``topics`` names the topics a librdkafka call was
    about, since its errors do not say which topic was refused.
    """
    text = redaction.redact("".join(_exception_texts(exc)))
    # Py4J errors start with "An error occurred while calling o90.collectToPython"; the Java
    # client's own line is the one that says what happened.
    said = _KAFKA_LINE.search(text)
    detail = said.group(0).strip()[:500] if said else _first_line(text) or type(exc).__name__
    missing: list[AclRule] = []
    for match in _JAVA_TOPICS.finditer(text):
        for name in (n.strip() for n in match.group("names").split(",")):
            if name:
                missing += _rules_for(k, TOPIC, name, data_topics)
    for match in _JAVA_GROUP.finditer(text):
        missing += _rules_for(k, GROUP, match.group("name").rstrip(".,;"), data_topics)
    code = _AUTHZ_CODE.search(text)
    if not missing and code is not None:
        kind = (code.group("code") or code.group("java") or "").upper()
        if kind == "TOPIC":
            for name in topics:
                missing += _rules_for(k, TOPIC, name, data_topics)
            if not topics:
                missing += [r for r in required_acls(k, data_topics) if r.resource_type == TOPIC]
        elif kind == "GROUP":
            missing += [r for r in required_acls(k, data_topics) if r.resource_type == GROUP]
        else:
            return KafkaAccessError(
                f"{during}: {principal_of(k.security)} was refused a {kind.lower()} operation"
                f" offsetscope does not need; this is a bug (docs/security.md). Kafka said:"
                f" {detail}",
                detail=detail,
            )
    if missing:
        unique = list(dict.fromkeys(missing))
        return KafkaAccessError(_missing_message(k, during, unique, detail), unique, detail)
    if _AUTHN.search(text):
        return _login_error(k, during, detail)
    return None


def _login_error(k: KafkaSourceConfig, during: str, detail: str) -> KafkaAccessError:
    sec = k.security
    return KafkaAccessError(
        f"{during}: {principal_of(sec)} could not log in to {k.bootstrap_servers} with"
        f" {sec.protocol}/{sec.sasl_mechanism or 'no SASL'}: check the user and the secret that"
        f" [{SECURITY_PATH}] references. Kafka said: {detail}",
        detail=detail,
    )


def _exception_texts(exc: BaseException) -> Iterator[str]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield f"{type(current).__name__}: {current}\n"
        current = current.__cause__ or current.__context__


@contextlib.contextmanager
def kafka_access(
    k: KafkaSourceConfig,
    during: str,
    *,
    topics: Sequence[str] = (),
    data_topics: Sequence[str] = ("*",),
    admin: Any = None,
) -> Iterator[None]:
    """Run Kafka client code whose access failures become :class:`KafkaAccessError`.

    Any other exception whose text holds a secret is replaced by a redacted
    :class:`~offsetscope.redaction.RedactedError`; the rest propagate unchanged.

    Args:
        k: the Kafka source configuration in use.
        during: what was being done, for the message (``"reading __consumer_offsets"``).
        topics: topics a librdkafka call was about (its errors do not name them).
        data_topics: see :func:`required_acls`.
        admin: the :class:`KafkaAdmin` the code uses; a login it saw rejected explains a
            failure (librdkafka reports it as a timeout).
    """
    try:
        yield
    except KafkaAccessError:
        raise
    except Exception as exc:
        failures = admin.login_failures() if isinstance(admin, KafkaAdmin) else []
        if failures:
            raise _login_error(k, during, failures[-1]) from None
        error = access_error(exc, k, during, topics=topics, data_topics=data_topics)
        if error is None and isinstance(admin, KafkaAdmin) and topics:
            error = _hidden_topics(admin, exc, k, during, topics, data_topics)
        if error is not None:
            raise error from None
        scrubbed = redaction.scrub(exc)
        if scrubbed is not None:
            raise scrubbed from None
        raise


# librdkafka's answers for a topic it cannot see: without DESCRIBE a topic is left out of
# metadata, so a call about it fails as if the topic did not exist.
_NOT_FOUND = re.compile(r"_NOENT|UNKNOWN_TOPIC|No leaders found|Unknown topic")


def _hidden_topics(
    admin: KafkaAdmin,
    exc: BaseException,
    k: KafkaSourceConfig,
    during: str,
    topics: Sequence[str],
    data_topics: Sequence[str],
) -> KafkaAccessError | None:
    """Tell "no such topic" from "not allowed to see it": DescribeTopics by name answers
    TOPIC_AUTHORIZATION_FAILED for a topic that exists but is hidden from the principal."""
    if not _NOT_FOUND.search(str(exc)):
        return None
    refused = []
    futures = admin.describe_topics(TopicCollection(list(topics)), request_timeout=10.0)
    for name, future in futures.items():
        try:
            future.result()
        except KafkaException as probe:
            if probe.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                refused.append(name)
    if not refused:
        return None
    missing = list(dict.fromkeys(r for n in refused for r in _rules_for(k, TOPIC, n, data_topics)))
    detail = _first_line(redaction.redact(str(exc)))
    return KafkaAccessError(_missing_message(k, during, missing, detail), missing, detail)


def _authorized(description: Any) -> set[str]:
    ops = getattr(description, "authorized_operations", None) or []
    names = {getattr(op, "name", str(op)) for op in ops}
    return names | ({DESCRIBE} if names & _IMPLIES_DESCRIBE else set())


def check_access(
    admin: Any,
    k: KafkaSourceConfig,
    data_topics: Sequence[str] = (),
    *,
    timeout_s: float = 30.0,
) -> None:
    """Verify up front that the principal has every ACL of :func:`required_acls`.

    Asks the broker, with the AdminClient, which operations the principal may perform on the
    internal topics, on a group named with ``group_id_prefix`` and on ``data_topics`` (named
    topics only; patterns cannot be described), and raises for everything missing at once. A
    topic that does not exist yet (``__transaction_state`` before the first transaction) has
    no operations to report; being told it is unknown proves DESCRIBE (without DESCRIBE Kafka
    answers "not authorized" instead), and there is nothing to READ yet.

    Args:
        admin: a :class:`KafkaAdmin` (any ``AdminClient`` works, but only that one tells a
            rejected login from a timeout).
        k: the Kafka source configuration.
        data_topics: data topics to check DESCRIBE on.
        timeout_s: per request.

    Raises:
        KafkaAccessError: an ACL is missing, or the principal cannot log in.
    """
    refused = {
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
    }

    def allowed_on(future: Any) -> set[str]:
        try:
            return _authorized(_await(future, admin, timeout_s))
        except KafkaException as exc:
            code = exc.args[0].code()
            if code in refused:
                return set()
            if code == KafkaError.UNKNOWN_TOPIC_OR_PART:
                return {READ, DESCRIBE}
            raise

    during = f"checking {principal_of(k.security)}'s access to {k.bootstrap_servers}"
    internal = [k.offsets_topic, k.transaction_topic]
    names = list(dict.fromkeys([*internal, *data_topics]))
    missing: list[AclRule] = []
    with kafka_access(k, during, topics=names, admin=admin):
        futures = admin.describe_topics(
            TopicCollection(names),
            include_authorized_operations=True,
            request_timeout=timeout_s,
        )
        for name, future in futures.items():
            allowed = allowed_on(future)
            wanted = {READ, DESCRIBE} if name in internal else {DESCRIBE}
            missing += [
                r
                for r in _rules_for(k, TOPIC, name, [*data_topics] or ["*"])
                if r.operation in wanted - allowed
            ]
        probe = f"{k.group_id_prefix}-access-check"
        groups = admin.describe_consumer_groups(
            [probe], include_authorized_operations=True, request_timeout=timeout_s
        )
        if READ not in allowed_on(groups[probe]):
            missing += _rules_for(k, GROUP, probe)
    if missing:
        unique = list(dict.fromkeys(missing))
        raise KafkaAccessError(_missing_message(k, during, unique, ""), unique)


def _await(future: Any, admin: Any, timeout_s: float) -> Any:
    """``future.result()``, given up early once ``admin`` saw its login rejected."""
    deadline = time.monotonic() + timeout_s
    while not future.done() and time.monotonic() < deadline:
        if isinstance(admin, KafkaAdmin) and admin.login_failures():
            raise KafkaException(KafkaError(KafkaError._AUTHENTICATION))
        time.sleep(0.05)
    return future.result(timeout=max(0.0, deadline - time.monotonic()))


# ----------------------------------------------------------------------------- local files


def umask_of(storage: StorageConfig) -> int:
    """``storage.umask`` as a number (``"027"`` -> ``0o027``)."""
    return int(storage.umask, 8)


def apply_umask(storage: StorageConfig) -> int:
    """Set the process umask to ``storage.umask``; returns the previous one.

    Call it before the SparkSession starts: the JVM inherits the umask at launch.
    """
    return os.umask(umask_of(storage))


def storage_spark_conf(storage: StorageConfig) -> dict[str, str]:
    """Spark settings that apply ``storage.umask`` to what Spark and Delta write."""
    return {"spark.hadoop.fs.permissions.umask-mode": f"{umask_of(storage):03o}"}


def _resolve(path: str) -> Path:
    candidate = Path(path).expanduser()
    return candidate if candidate.is_absolute() else project_root() / path


def prepare_storage(storage: StorageConfig) -> list[Path]:
    """Create the warehouse, checkpoint and metastore folders with the configured mode, and
    remove any wider permission an existing one has (only on those folders, not inside).

    Returns:
        The folders, resolved.
    """
    mode = 0o777 & ~umask_of(storage)
    out = []
    for path in (storage.warehouse_dir, storage.checkpoint_dir, storage.metastore_dir):
        folder = _resolve(path)
        folder.mkdir(parents=True, exist_ok=True)
        current = stat.S_IMODE(folder.stat().st_mode)
        if current & ~mode:
            folder.chmod(current & mode)
        out.append(folder)
    return out


def permission_violations(root: Path, storage: StorageConfig) -> list[tuple[Path, str]]:
    """Files and folders under ``root`` (and ``root``) granting a bit ``storage.umask`` masks.

    Returns:
        ``(path, mode)`` pairs, mode as ``ls -l`` shows it (``drwxr-xr-x``).
    """
    mask = umask_of(storage)
    out = []
    for path in [root, *sorted(root.rglob("*"))]:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            continue
        if stat.S_IMODE(info.st_mode) & mask:
            out.append((path, stat.filemode(info.st_mode)))
    return out
