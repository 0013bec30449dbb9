"""The access offsetscope needs on a cluster, checked up front and named when it is missing.

offsetscope only reads. :func:`required_acls` lists every ACL its jobs need --
READ and DESCRIBE on the two internal topics, READ on the consumer groups whose names start
with ``group_id_prefix`` (Spark's consumer-based offset reader joins such a group for each
query), DESCRIBE on the data topics (end offsets) -- and nothing that writes.
:func:`check_access` verifies them up front with the AdminClient's authorized-operations
answers; :func:`kafka_access` turns an authorization or authentication failure raised inside
it (by Spark's Java client or by confluent-kafka) into a :class:`KafkaAccessError` naming the
missing operation and resource, instead of a stack trace."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicCollection

from offsetscope import redaction
from offsetscope.config import (
    KafkaSecurityConfig,
    KafkaSourceConfig,
)
from offsetscope.secrets.kafka import SECURITY_PATH, KafkaAdmin

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
    for topic in (k.offsets_topic, k.transaction_topic, k.share_state_topic):
        if not topic:
            continue
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
    internal = [t for t in (k.offsets_topic, k.transaction_topic, k.share_state_topic) if t]
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
