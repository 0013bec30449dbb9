"""Secret references resolve only at the edge with clear errors, one security section maps to
both Kafka clients, the documented ACLs are read-only, access failures name what is missing,
and local storage gets no wider modes than ``storage.umask``."""

from __future__ import annotations

import dataclasses
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from offsetscope import config, redaction
from offsetscope.config import InvalidConfigError, KafkaSecurityConfig, KafkaSourceConfig
from offsetscope.secrets import access as secrets_access
from offsetscope.secrets import files as secrets_files
from offsetscope.secrets import kafka as secrets_kafka
from offsetscope.secrets import references as secrets_references
from offsetscope.secrets.access import AclRule, KafkaAccessError
from offsetscope.secrets.references import Reference, Resolver, SecretNotFoundError

ROOT = Path(__file__).resolve().parents[2]


class DictStore:
    """A secret store backed by a dict (stands in for Databricks' dbutils.secrets)."""

    def __init__(self, secrets_by_scope: dict[tuple[str, str], str]) -> None:
        self.data = secrets_by_scope

    def get(self, scope: str, key: str) -> str:
        return self.data[(scope, key)]


def scram(password: str = "env:KAFKA_PW", protocol: str = "SASL_SSL") -> KafkaSecurityConfig:
    return KafkaSecurityConfig(
        protocol=protocol,
        sasl_mechanism="SCRAM-SHA-512",
        sasl_username="offsetscope",
        sasl_password=password,
    )


# ----------------------------------------------------------------------------- references


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("env:KAFKA_PW", Reference("env", "KAFKA_PW")),
        ("secret:ops-scope/kafka.password", Reference("secret", "ops-scope", "kafka.password")),
        ("hunter2", None),
        ("env:1BAD", None),
        ("secret:scope-without-key", None),
        ("secret:a/b/c", None),
    ],
)
def test_parse_reference(text: str, expected: Reference | None) -> None:
    assert secrets_references.parse_reference(text) == expected
    if expected is not None:
        assert str(expected) == text


def test_env_reference_resolves_and_registers_the_value() -> None:
    reg = redaction.SecretRegistry()
    resolver = Resolver(environ={"KAFKA_PW": "from-the-env-123"}, registry=reg)
    assert resolver.resolve("env:KAFKA_PW", "sources.kafka.security.sasl_password") == (
        "from-the-env-123"
    )
    assert resolver.resolve("plain value", "x") == "plain value"
    assert redaction.redact("pw from-the-env-123", reg) == "pw ***"


@pytest.mark.parametrize(
    ("environ", "needle"),
    [({}, "environment variable KAFKA_PW is not set"), ({"KAFKA_PW": ""}, "is empty")],
)
def test_missing_env_variable_names_key_and_variable(environ: dict[str, str], needle: str) -> None:
    with pytest.raises(SecretNotFoundError) as info:
        Resolver(environ=environ).resolve("env:KAFKA_PW", "sources.kafka.security.sasl_password")
    message = str(info.value)
    assert message.startswith("config key sources.kafka.security.sasl_password: env:KAFKA_PW: ")
    assert needle in message
    assert info.value.key_path == "sources.kafka.security.sasl_password"
    assert info.value.reference == "env:KAFKA_PW"
    assert isinstance(info.value, InvalidConfigError)


def test_secret_scope_reference_outside_databricks_is_a_clear_error() -> None:
    with pytest.raises(SecretNotFoundError) as info:
        Resolver(environ={}).resolve("secret:ops/kafka-pw", "sources.kafka.security.sasl_password")
    message = str(info.value)
    assert "secret:ops/kafka-pw" in message
    assert "dbutils.secrets" in message
    assert "env:NAME" in message


def test_secret_scope_reference_reads_the_store_without_leaking_its_errors() -> None:
    store = DictStore({("ops", "kafka-pw"): "scope-secret-value"})
    reg = redaction.SecretRegistry()
    resolver = Resolver(environ={}, store=store, registry=reg)
    assert resolver.resolve("secret:ops/kafka-pw", "k") == "scope-secret-value"
    assert redaction.redact("x scope-secret-value", reg) == "x ***"
    with pytest.raises(SecretNotFoundError) as info:
        resolver.resolve("secret:ops/other", "sources.kafka.security.sasl_password")
    assert "secret scope 'ops' has no readable key 'other' (KeyError)" in str(info.value)


def test_databricks_resolver_uses_dbutils_secrets() -> None:
    class Secrets:
        def get(self, scope: str, key: str) -> str:
            return f"{scope}:{key}:value"

    class DBUtils:
        secrets = Secrets()

    resolver = secrets_references.resolver_for(dbutils=DBUtils())
    assert resolver.resolve("secret:s/k", "x") == "s:k:value"
    assert secrets_references.on_databricks({"DATABRICKS_RUNTIME_VERSION": "16.4"})
    assert not secrets_references.on_databricks({})


def test_literal_secret_in_conf_is_refused_at_load(tmp_path: Path) -> None:
    extra = tmp_path / "extra.toml"
    extra.write_text(
        '[sources.kafka.security]\nprotocol = "SASL_SSL"\nsasl_mechanism = "SCRAM-SHA-512"\n'
        'sasl_username = "u"\nsasl_password = "Literal-Pa55"\n'
    )
    with pytest.raises(InvalidConfigError) as info:
        config.load("local", extra=extra)
    assert info.value.key_path == "sources.kafka.security.sasl_password"
    assert "must be a reference" in str(info.value)
    assert "Literal-Pa55" not in str(info.value)


def test_config_holds_references_only(tmp_path: Path) -> None:
    extra = tmp_path / "extra.toml"
    extra.write_text(
        '[sources.kafka.security]\nprotocol = "SASL_SSL"\nsasl_mechanism = "SCRAM-SHA-512"\n'
        'sasl_username = "u"\nsasl_password = "env:H11_UNIT_PW"\n'
    )
    cfg = config.load("local", extra=extra)
    resolver = Resolver(environ={"H11_UNIT_PW": "resolved-at-the-edge"})
    conf = secrets_kafka.admin_config(cfg.sources.kafka, resolver)
    assert conf["sasl.password"] == "resolved-at-the-edge"
    # Resolution leaves the frozen configuration as it was: its repr is safe to log.
    assert "resolved-at-the-edge" not in repr(cfg)
    assert "env:H11_UNIT_PW" in repr(cfg)


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"protocol": "SASL_SSL"}, "sasl_mechanism"),
        ({"protocol": "SSL", "sasl_mechanism": "PLAIN"}, "sasl_mechanism"),
        (
            {"protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_password": "env:X"},
            "sasl_username",
        ),
        (
            {"protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER", "oauth_client_id": "a"},
            "oauth_token_endpoint_url",
        ),
        ({"protocol": "PLAINTEXT", "ssl_ca_location": "/ca.pem"}, "ssl_ca_location"),
        ({"protocol": "SSL", "ssl_key_password": "k3y"}, "ssl_key_password"),
        ({"protocol": "TLS"}, "protocol"),
    ],
)
def test_security_section_is_validated(kwargs: dict[str, str], key: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        KafkaSecurityConfig(**kwargs)  # type: ignore[arg-type]
    assert info.value.key_path == key


# ----------------------------------------------------------------------------- the mapping


ENV = {"KAFKA_PW": 'p"w\\x', "CLIENT_SECRET": "cs-123", "KEY_PW": "kp-456"}


def test_scram_over_sasl_ssl_maps_to_both_clients() -> None:
    sec = dataclasses.replace(scram(), ssl_ca_location="/etc/kafka/ca.pem")
    settings = secrets_kafka.security_settings(sec, Resolver(environ=ENV))
    assert settings.java == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required"
            ' username="offsetscope" password="p\\"w\\\\x";'
        ),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/etc/kafka/ca.pem",
        "ssl.endpoint.identification.algorithm": "https",
    }
    assert settings.librdkafka == {
        "security.protocol": "sasl_ssl",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "offsetscope",
        "sasl.password": 'p"w\\x',
        "ssl.ca.location": "/etc/kafka/ca.pem",
        "ssl.endpoint.identification.algorithm": "https",
    }
    # Its repr never shows a resolved value.
    assert 'p"w' not in repr(settings)


def test_oauthbearer_maps_to_oidc_client_credentials() -> None:
    sec = KafkaSecurityConfig(
        protocol="SASL_SSL",
        sasl_mechanism="OAUTHBEARER",
        oauth_token_endpoint_url="https://idp.example.com/oauth2/token",
        oauth_client_id="offsetscope",
        oauth_client_secret="env:CLIENT_SECRET",
        oauth_scope="kafka",
        java_class_prefix="kafkashaded.",
    )
    settings = secrets_kafka.security_settings(sec, Resolver(environ=ENV))
    assert settings.java == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.jaas.config": (
            "kafkashaded.org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
            ' required clientId="offsetscope" clientSecret="cs-123" scope="kafka";'
        ),
        "sasl.login.callback.handler.class": (
            "kafkashaded.org.apache.kafka.common.security.oauthbearer."
            "OAuthBearerLoginCallbackHandler"
        ),
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example.com/oauth2/token",
        "ssl.endpoint.identification.algorithm": "https",
    }
    assert settings.librdkafka == {
        "security.protocol": "sasl_ssl",
        "sasl.mechanisms": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": "offsetscope",
        "sasl.oauthbearer.client.secret": "cs-123",
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example.com/oauth2/token",
        "sasl.oauthbearer.scope": "kafka",
        "ssl.endpoint.identification.algorithm": "https",
    }


def test_mutual_tls_maps_one_pem_keystore_to_both_clients() -> None:
    sec = KafkaSecurityConfig(
        protocol="SSL",
        ssl_ca_location="/ca.pem",
        ssl_keystore_location="/client.pem",
        ssl_key_password="env:KEY_PW",
        ssl_endpoint_identification=False,
    )
    settings = secrets_kafka.security_settings(sec, Resolver(environ=ENV))
    assert settings.java == {
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/ca.pem",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": "/client.pem",
        "ssl.key.password": "kp-456",
        "ssl.endpoint.identification.algorithm": "",
    }
    assert settings.librdkafka == {
        "security.protocol": "ssl",
        "ssl.ca.location": "/ca.pem",
        "ssl.certificate.location": "/client.pem",
        "ssl.key.location": "/client.pem",
        "ssl.key.password": "kp-456",
        "ssl.endpoint.identification.algorithm": "none",
    }


def test_plaintext_default_sets_nothing() -> None:
    settings = secrets_kafka.security_settings(KafkaSecurityConfig(), Resolver(environ={}))
    assert settings.java == {}
    assert settings.librdkafka == {}


def test_every_mechanism_logs_in_with_its_own_module() -> None:
    modules = {}
    for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        sec = KafkaSecurityConfig(
            protocol="SASL_PLAINTEXT",
            sasl_mechanism=mechanism,
            sasl_username="u",
            sasl_password="env:KAFKA_PW",
        )
        java = secrets_kafka.security_settings(sec, Resolver(environ=ENV)).java
        modules[mechanism] = java["sasl.jaas.config"].split(" ", 1)[0]
        assert java["sasl.mechanism"] == mechanism
    assert modules == {
        "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
        "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
        "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    }


def _source(**kwargs: object) -> KafkaSourceConfig:
    return dataclasses.replace(
        KafkaSourceConfig(bootstrap_servers="b1:9093,b2:9093"),
        **kwargs,  # type: ignore[arg-type]
    )


def test_spark_options_are_prefixed_and_pass_through_is_resolved() -> None:
    k = _source(
        security=scram(protocol="SASL_PLAINTEXT"),
        options={"request.timeout.ms": "60000", "kafka.client.dns.lookup": "use_all_dns_ips"},
    )
    options = secrets_kafka.spark_kafka_options(k, Resolver(environ=ENV))
    assert options == {
        "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required"
            ' username="offsetscope" password="p\\"w\\\\x";'
        ),
        "kafka.request.timeout.ms": "60000",
        "kafka.client.dns.lookup": "use_all_dns_ips",
    }


def test_the_source_does_not_wait_on_data_at_the_log_end_unless_told_to() -> None:
    from offsetscope.spark import sources

    cfg = config.with_kafka_source(config.load("local"), "b1:9093")
    assert sources.kafka_options(cfg)["kafka.fetch.max.wait.ms"] == sources.FETCH_MAX_WAIT_MS
    # The pass-through replaces it, under either spelling.
    for name in ("fetch.max.wait.ms", "kafka.fetch.max.wait.ms"):
        k = dataclasses.replace(cfg.sources.kafka, options={name: "250"})
        told = dataclasses.replace(cfg, sources=dataclasses.replace(cfg.sources, kafka=k))
        assert sources.kafka_options(told)["kafka.fetch.max.wait.ms"] == "250"


def test_admin_config_has_bootstrap_security_and_admin_options() -> None:
    k = _source(
        security=scram(protocol="SASL_PLAINTEXT"),
        admin_options={"socket.timeout.ms": "30000", "ssl.key.password": "env:KEY_PW"},
    )
    conf = secrets_kafka.admin_config(k, Resolver(environ=ENV))
    assert conf == {
        "bootstrap.servers": "b1:9093,b2:9093",
        "security.protocol": "sasl_plaintext",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "offsetscope",
        "sasl.password": 'p"w\\x',
        "socket.timeout.ms": "30000",
        "ssl.key.password": "kp-456",
    }


def test_pass_through_may_not_repeat_a_security_setting() -> None:
    k = _source(security=scram(), options={"sasl.mechanism": "PLAIN"})
    with pytest.raises(InvalidConfigError) as info:
        secrets_kafka.spark_kafka_options(k, Resolver(environ=ENV))
    assert info.value.key_path == "sources.kafka.options.sasl.mechanism"
    assert "sources.kafka.security" in str(info.value)


def test_pass_through_may_not_hold_a_literal_secret() -> None:
    k = _source(admin_options={"sasl.password": "Literal-Secret-9"})
    with pytest.raises(InvalidConfigError) as info:
        secrets_kafka.admin_config(k, Resolver(environ={}))
    assert info.value.key_path == "sources.kafka.admin_options.sasl.password"
    assert "Literal-Secret-9" not in str(info.value)


def test_spark_redaction_conf_covers_the_jaas_option() -> None:
    conf = secrets_kafka.spark_redaction_conf()
    assert re.search(conf["spark.redaction.regex"], "kafka.sasl.jaas.config")
    assert re.search(conf["spark.sql.redaction.options.regex"], "kafka.sasl.jaas.config")
    jaas = 'x required username="u" password="p\\"q";'
    masked = re.sub(conf["spark.sql.redaction.string.regex"], "***", jaas)
    assert masked == 'x required username="u" ***;'


# ----------------------------------------------------------------------------- access


def test_required_acls_are_read_only_and_complete() -> None:
    k = KafkaSourceConfig()
    rules = secrets_access.required_acls(k)
    assert [(r.resource_type, r.name, r.pattern, r.operation) for r in rules] == [
        ("TOPIC", "__consumer_offsets", "LITERAL", "READ"),
        ("TOPIC", "__consumer_offsets", "LITERAL", "DESCRIBE"),
        ("TOPIC", "__transaction_state", "LITERAL", "READ"),
        ("TOPIC", "__transaction_state", "LITERAL", "DESCRIBE"),
        ("TOPIC", "__share_group_state", "LITERAL", "READ"),
        ("TOPIC", "__share_group_state", "LITERAL", "DESCRIBE"),
        ("GROUP", "offsetscope-ingest", "PREFIXED", "READ"),
        ("TOPIC", "*", "LITERAL", "DESCRIBE"),
    ]
    assert not {r.operation for r in rules} & secrets_access.WRITE_OPERATIONS
    # Without share-partition state, no ACL for it.
    without = secrets_access.required_acls(_source(share_state_topic=""))
    assert "__share_group_state" not in {r.name for r in without}
    assert {r.operation for r in rules} == {"READ", "DESCRIBE"}


def test_required_acls_follow_the_configuration() -> None:
    k = _source(
        offsets_topic="mirror.__consumer_offsets",
        transaction_topic="mirror.__transaction_state",
        group_id_prefix="ops-offsetscope",
    )
    rules = secrets_access.required_acls(k, data_topics=["orders", "payments-*"])
    names = [(r.resource_type, r.name, r.pattern, r.operation) for r in rules]
    assert ("TOPIC", "mirror.__consumer_offsets", "LITERAL", "READ") in names
    assert ("GROUP", "ops-offsetscope", "PREFIXED", "READ") in names
    assert names[-2:] == [
        ("TOPIC", "orders", "LITERAL", "DESCRIBE"),
        ("TOPIC", "payments-", "PREFIXED", "DESCRIBE"),
    ]


def test_docs_list_exactly_the_required_acls() -> None:
    """docs/security.md shows the kafka-acls.sh commands for the default configuration."""
    doc = (ROOT / "docs" / "security.md").read_text()
    commands = secrets_access.kafka_acls_commands(
        "User:offsetscope", secrets_access.required_acls(KafkaSourceConfig())
    )
    for command in commands:
        assert command in doc, command
    listed = [
        line.strip() for line in doc.splitlines() if line.strip().startswith("kafka-acls.sh ")
    ]
    grants = [line for line in listed if " --add " in line and "User:offsetscope " in line]
    assert set(grants) == set(commands)
    assert not re.search(
        r"--operation (Write|Create|Alter|Delete|All|IdempotentWrite)\b", "\n".join(grants)
    )


def test_acl_commands_group_operations_per_resource() -> None:
    rules = secrets_access.required_acls(KafkaSourceConfig(), data_topics=["orders-*"])
    lines = secrets_access.kafka_acls_commands("User:x", rules, bootstrap="b:9093")
    prefix = (
        "kafka-acls.sh --bootstrap-server b:9093 --command-config admin.properties --add"
        " --allow-principal User:x"
    )
    assert lines == [
        f"{prefix} --operation Read --operation Describe --topic __consumer_offsets",
        f"{prefix} --operation Read --operation Describe --topic __transaction_state",
        f"{prefix} --operation Read --operation Describe --topic __share_group_state",
        f"{prefix} --operation Read --group offsetscope-ingest --resource-pattern-type prefixed",
        f"{prefix} --operation Describe --topic orders- --resource-pattern-type prefixed",
    ]


def _described(rules: tuple[AclRule, ...]) -> list[str]:
    return [r.describe() for r in rules]


def test_java_topic_authorization_error_names_the_topic() -> None:
    k = _source(security=scram(protocol="SASL_PLAINTEXT"))
    java = (
        "An error occurred while calling o113.collectToPython.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: ...\n"
        "org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized to access"
        " topics: [__transaction_state]\n\tat org.apache.kafka...\n"
    )
    error = secrets_access.access_error(RuntimeError(java), k, "reading the internal topics")
    assert error is not None
    assert _described(error.missing) == [
        "READ on topic __transaction_state",
        "DESCRIBE on topic __transaction_state",
    ]
    message = str(error)
    assert message.startswith(
        "reading the internal topics: User:offsetscope is not authorized: it needs READ on"
        " topic __transaction_state; DESCRIBE on topic __transaction_state"
    )
    assert "--topic __transaction_state" in message
    assert error.detail == (
        "org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized to access"
        " topics: [__transaction_state]"
    )


def test_java_group_authorization_error_names_the_prefix() -> None:
    k = _source()
    java = (
        "org.apache.kafka.common.errors.GroupAuthorizationException: Not authorized to access"
        " group: offsetscope-ingest-8f1c2a-driver-0"
    )
    error = secrets_access.access_error(RuntimeError(java), k, "reading")
    assert error is not None
    assert _described(error.missing) == ["READ on groups prefixed 'offsetscope-ingest'"]


def test_librdkafka_error_codes_use_the_topics_the_call_was_about() -> None:
    k = _source()
    text = 'KafkaError{code=TOPIC_AUTHORIZATION_FAILED,val=29,str="Broker: Topic authorization failed"}'
    error = secrets_access.access_error(RuntimeError(text), k, "sampling", topics=["orders"])
    assert error is not None
    assert _described(error.missing) == ["DESCRIBE on every topic"]
    narrow = secrets_access.access_error(
        RuntimeError(text), k, "sampling", topics=["orders"], data_topics=["orders"]
    )
    assert narrow is not None
    assert _described(narrow.missing) == ["DESCRIBE on topic orders"]


def test_authentication_failure_is_a_login_error() -> None:
    k = _source(security=scram(protocol="SASL_PLAINTEXT"))
    text = (
        "org.apache.kafka.common.errors.SaslAuthenticationException: Authentication failed"
        " during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
    )
    error = secrets_access.access_error(RuntimeError(text), k, "reading")
    assert error is not None
    assert error.missing == ()
    assert (
        "User:offsetscope could not log in to b1:9093,b2:9093 with SASL_PLAINTEXT/SCRAM-SHA-512"
        in str(error)
    )


def test_other_errors_are_not_access_errors() -> None:
    assert secrets_access.access_error(ValueError("disk full"), _source(), "x") is None


def test_kafka_access_translates_and_scrubs() -> None:
    k = _source()
    with pytest.raises(KafkaAccessError) as info, secrets_access.kafka_access(k, "reading"):
        raise RuntimeError("Not authorized to access topics: [__consumer_offsets]")
    assert _described(info.value.missing)[0] == "READ on topic __consumer_offsets"
    assert info.value.__suppress_context__  # no raw stack trace chained on

    redaction.register_secret("kafka-access-secret-1")
    with (
        pytest.raises(redaction.RedactedError) as scrubbed,
        secrets_access.kafka_access(k, "reading"),
    ):
        raise OSError("bad config kafka-access-secret-1")
    assert "kafka-access-secret-1" not in str(scrubbed.value)

    with pytest.raises(ZeroDivisionError), secrets_access.kafka_access(k, "reading"):
        raise ZeroDivisionError("plain")


# ----------------------------------------------------------------------------- local files


@pytest.fixture
def restore_umask() -> Iterator[None]:
    previous = os.umask(0o022)
    os.umask(previous)
    try:
        yield
    finally:
        os.umask(previous)


def test_umask_settings(restore_umask: None) -> None:
    storage = config.StorageConfig(umask="027")
    assert secrets_files.umask_of(storage) == 0o027
    assert secrets_files.storage_spark_conf(storage) == {
        "spark.hadoop.fs.permissions.umask-mode": "027"
    }
    secrets_files.apply_umask(storage)
    assert os.umask(0o022) == 0o027
    with pytest.raises(InvalidConfigError):
        config.StorageConfig(umask="999")


def test_prepare_storage_creates_and_tightens_folders(tmp_path: Path, restore_umask: None) -> None:
    os.umask(0)
    wide = tmp_path / "warehouse"
    wide.mkdir(mode=0o777)
    storage = config.StorageConfig(
        warehouse_dir=str(wide),
        checkpoint_dir=str(tmp_path / "checkpoints"),
        metastore_dir=str(tmp_path / "metastore"),
        umask="027",
    )
    folders = secrets_files.prepare_storage(storage)
    assert folders == [wide, tmp_path / "checkpoints", tmp_path / "metastore"]
    assert {stat.S_IMODE(f.stat().st_mode) for f in folders} == {0o750}
    (wide / "open.txt").write_text("x")
    (wide / "open.txt").chmod(0o666)
    assert secrets_files.permission_violations(wide, storage) == [(wide / "open.txt", "-rw-rw-rw-")]
