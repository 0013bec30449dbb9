"""Kafka client security settings: one ``[sources.kafka.security]`` for every client offsetscope
builds.

``[sources.kafka.security]`` is written once and mapped by
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
GSSAPI (Kerberos): service name,   ``sasl.kerberos.service.name``,           ``sasl.kerberos.service.name``,
principal, keytab                  ``sasl.jaas.config`` (JDK's Krb5Login     ``sasl.kerberos.principal``,
                                   Module ``useKeyTab``, ``storeKey``,       ``sasl.kerberos.keytab`` (librdkafka
                                   ``keyTab``, ``principal``; without a      runs ``kinit``; needs a build with
                                   keytab ``useTicketCache``)                Cyrus SASL, see below)
``kerberos_krb5_conf``             ``-Djava.security.krb5.conf`` of driver   ``KRB5_CONFIG`` of the process
                                   and executors (:mod:`offsetscope.spark.
                                   session`)
AWS_MSK_IAM: profile, role ARN     ``sasl.jaas.config`` (IAMLoginModule      none (see below)
                                   ``awsProfileName``, ``awsRoleArn``),
                                   ``sasl.client.callback.handler.class``
                                   (IAMClientCallbackHandler)
=================================  =========================================  ==========================================

**GSSAPI and AWS_MSK_IAM with librdkafka.** The confluent-kafka wheels are built without Cyrus
SASL: a client configured for GSSAPI fails at creation with ``No provider for SASL mechanism
GSSAPI``, and librdkafka has no AWS_MSK_IAM mechanism at all. offsetscope therefore samples end
offsets with Kafka's Java AdminClient in the Spark driver for these two mechanisms
(:class:`offsetscope.pipelines.lag.JavaKafkaSampler`), and :class:`KafkaAdmin` refuses them at
creation with an error naming ``sources.kafka.security.sasl_mechanism`` and the reason
(:func:`librdkafka_supports`), rather than letting a request time out. A librdkafka built with
Cyrus SASL (``make infra-krb5-client``: Debian's librdkafka and ``kinit``) does GSSAPI with the
same settings.

JAAS option values are quoted and escaped (``\\`` and ``"``) as Kafka's ``JaasConfig`` parser
reads them, so any password works. ``java_class_prefix`` prefixes the login module and handler
class names (``kafkashaded.`` for the Databricks runtime's shaded client). Kafka clients from
4.0 on only fetch OAuth tokens from URLs listed in the JVM system property
``org.apache.kafka.sasl.oauthbearer.allowed.urls``; that is set where the JVM starts (Spark's
``spark.driver.extraJavaOptions`` / ``spark.executor.extraJavaOptions``), not here.

:func:`spark_kafka_options` and :func:`admin_config` add the ``[sources.kafka]`` pass-through
maps (``options``: Java names; ``admin_options``: librdkafka names) with their references
resolved. A pass-through key that the security section already sets is refused (one place per
setting), and so is a secret-looking pass-through key holding a literal."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import confluent_kafka
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient

from offsetscope import redaction
from offsetscope.config import (
    InvalidConfigError,
    KafkaSecurityConfig,
    KafkaSourceConfig,
    require_reference,
)
from offsetscope.secrets.references import Resolver

SECURITY_PATH = "sources.kafka.security"


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
# Kerberos' login module is the JDK's own (never shaded); MSK IAM's comes with the
# aws-msk-iam-auth jar.
KRB5_LOGIN_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
MSK_IAM_LOGIN_MODULE = "software.amazon.msk.auth.iam.IAMLoginModule"
MSK_IAM_CALLBACK_HANDLER = "software.amazon.msk.auth.iam.IAMClientCallbackHandler"
# Mechanisms librdkafka cannot do as the confluent-kafka wheel is built (see the module docstring).
JAVA_ONLY_MECHANISMS = frozenset({"GSSAPI", "AWS_MSK_IAM"})


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
    if mechanism == "GSSAPI":
        java["sasl.mechanism"] = rdk["sasl.mechanisms"] = mechanism
        java["sasl.kerberos.service.name"] = sec.kerberos_service_name
        rdk["sasl.kerberos.service.name"] = sec.kerberos_service_name
        rdk["sasl.kerberos.principal"] = sec.kerberos_principal
        if sec.kerberos_keytab:
            login = {"useKeyTab": "true", "storeKey": "true", "keyTab": sec.kerberos_keytab}
            rdk["sasl.kerberos.keytab"] = sec.kerberos_keytab
        else:
            login = {"useTicketCache": "true"}
        java["sasl.jaas.config"] = jaas_config(
            KRB5_LOGIN_MODULE, {**login, "principal": sec.kerberos_principal}
        )
    elif mechanism == "AWS_MSK_IAM":
        java["sasl.mechanism"] = mechanism
        java["sasl.jaas.config"] = jaas_config(
            MSK_IAM_LOGIN_MODULE,
            {"awsProfileName": sec.msk_iam_profile, "awsRoleArn": sec.msk_iam_role_arn},
        )
        java["sasl.client.callback.handler.class"] = MSK_IAM_CALLBACK_HANDLER
        rdk["sasl.mechanisms"] = mechanism
    elif mechanism:
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
        reason = librdkafka_supports(k.security.sasl_mechanism)
        if reason:
            raise InvalidConfigError(f"{SECURITY_PATH}.sasl_mechanism", reason)
        conf: dict[str, Any] = {**admin_config(k, resolver), **extra, "error_cb": self._on_error}
        super().__init__(conf)

    def _on_error(self, err: KafkaError) -> None:
        if err.code() in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED):
            self._failures.append(redaction.redact(str(err.str())))

    def login_failures(self) -> list[str]:
        """Redacted messages of the rejected logins so far, oldest first."""
        self.poll(0)
        return list(self._failures)


def librdkafka_supports(mechanism: str) -> str:
    """Why this process's librdkafka cannot log in with ``mechanism`` ("" when it can).

    GSSAPI needs a librdkafka built with Cyrus SASL (``builtin.features`` lists
    ``sasl_gssapi``); no librdkafka has AWS_MSK_IAM (MSK's IAM for librdkafka is OAUTHBEARER
    with a signed token).
    """
    if mechanism == "AWS_MSK_IAM":
        return (
            "librdkafka (confluent-kafka) has no AWS_MSK_IAM mechanism; offsetscope's jobs use"
            " Kafka's Java client for it (Spark's Kafka source, the Java AdminClient for end"
            " offsets)"
        )
    if mechanism == "GSSAPI" and not librdkafka_has_gssapi():
        version = confluent_kafka.libversion()[0]
        return (
            f"this librdkafka {version} is built without Cyrus SASL, so it cannot do GSSAPI"
            " (the confluent-kafka wheels never can); offsetscope's jobs use Kafka's Java client"
            " for it (Spark's Kafka source, the Java AdminClient for end offsets). For a Python"
            " client, install confluent-kafka built against a librdkafka with Cyrus SASL"
            " (docs/security.md)"
        )
    return ""


@functools.cache
def librdkafka_has_gssapi() -> bool:
    """Whether the librdkafka confluent-kafka loaded was built with Cyrus SASL (GSSAPI)."""
    # Creating a client checks the mechanism against the build at once, before connecting;
    # automatic kinit is off (relogin interval 0) and the address refuses at once.
    try:
        probe = confluent_kafka.Producer(
            {
                "bootstrap.servers": "127.0.0.1:1",
                "security.protocol": "sasl_plaintext",
                "sasl.mechanisms": "GSSAPI",
                "sasl.kerberos.min.time.before.relogin": 0,
            }
        )
    except confluent_kafka.KafkaException as exc:
        if "GSSAPI" in str(exc):
            return False
        raise
    del probe
    return True


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
