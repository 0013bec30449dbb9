"""Kerberos (GSSAPI) and AWS MSK IAM in [sources.kafka.security]: the clients' settings, what
librdkafka refuses and why, and the JVM options the session adds."""

from __future__ import annotations

import pytest

from offsetscope import config
from offsetscope.config import InvalidConfigError, KafkaSecurityConfig, KafkaSourceConfig
from offsetscope.secrets import kafka as secrets_kafka
from offsetscope.secrets.references import Resolver


def gssapi(**changes: str) -> KafkaSecurityConfig:
    values = {
        "protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "GSSAPI",
        "kerberos_principal": "offsetscope@EXAMPLE.COM",
        "kerberos_keytab": "offsetscope.keytab",
        "kerberos_krb5_conf": "krb5.conf",
        **changes,
    }
    return KafkaSecurityConfig(**values)  # type: ignore[arg-type]


def test_gssapi_maps_to_the_jdk_kerberos_login_and_to_librdkafka() -> None:
    settings = secrets_kafka.security_settings(gssapi(), Resolver(environ={}))
    assert settings.java == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        "sasl.jaas.config": (
            'com.sun.security.auth.module.Krb5LoginModule required useKeyTab="true"'
            ' storeKey="true" keyTab="offsetscope.keytab" principal="offsetscope@EXAMPLE.COM";'
        ),
    }
    assert settings.librdkafka == {
        "security.protocol": "sasl_plaintext",
        "sasl.mechanisms": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        "sasl.kerberos.principal": "offsetscope@EXAMPLE.COM",
        "sasl.kerberos.keytab": "offsetscope.keytab",
    }


def test_gssapi_without_a_keytab_uses_the_ticket_cache() -> None:
    java = secrets_kafka.security_settings(gssapi(kerberos_keytab=""), Resolver(environ={})).java
    assert java["sasl.jaas.config"] == (
        'com.sun.security.auth.module.Krb5LoginModule required useTicketCache="true"'
        ' principal="offsetscope@EXAMPLE.COM";'
    )


def test_msk_iam_maps_to_the_iam_login_module() -> None:
    sec = KafkaSecurityConfig(
        protocol="SASL_SSL",
        sasl_mechanism="AWS_MSK_IAM",
        msk_iam_role_arn="arn:aws:iam::123456789012:role/offsetscope",
    )
    java = secrets_kafka.security_settings(sec, Resolver(environ={})).java
    assert java["sasl.mechanism"] == "AWS_MSK_IAM"
    assert java["sasl.jaas.config"] == (
        "software.amazon.msk.auth.iam.IAMLoginModule required"
        ' awsRoleArn="arn:aws:iam::123456789012:role/offsetscope";'
    )
    assert java["sasl.client.callback.handler.class"] == (
        "software.amazon.msk.auth.iam.IAMClientCallbackHandler"
    )


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"protocol": "SASL_SSL", "sasl_mechanism": "GSSAPI"}, "kerberos_principal"),
        ({"protocol": "SASL_PLAINTEXT", "sasl_mechanism": "AWS_MSK_IAM"}, "protocol"),
        ({"protocol": "SASL_SSL", "kerberos_keytab": "k.keytab", "sasl_mechanism": "PLAIN",
          "sasl_username": "u", "sasl_password": "env:P"}, "kerberos_keytab"),
        ({"protocol": "SASL_SSL", "sasl_mechanism": "GSSAPI", "kerberos_principal": "p",
          "msk_iam_profile": "x"}, "msk_iam_profile"),
    ],
)  # fmt: skip
def test_kerberos_and_iam_settings_are_validated(kwargs: dict[str, str], key: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        KafkaSecurityConfig(**kwargs)  # type: ignore[arg-type]
    assert info.value.key_path == key


def test_librdkafka_without_cyrus_sasl_refuses_gssapi_at_creation_naming_the_key() -> None:
    if secrets_kafka.librdkafka_has_gssapi():
        pytest.fail("this test expects the confluent-kafka wheel (no GSSAPI); see the docstring")
    k = KafkaSourceConfig(bootstrap_servers="127.0.0.1:1", security=gssapi())
    with pytest.raises(InvalidConfigError) as info:
        secrets_kafka.KafkaAdmin(k, Resolver(environ={}))
    assert info.value.key_path == "sources.kafka.security.sasl_mechanism"
    assert "built without Cyrus SASL" in str(info.value)
    assert "Java AdminClient" in str(info.value)


def test_msk_iam_is_refused_by_librdkafka_naming_the_key() -> None:
    sec = KafkaSecurityConfig(protocol="SASL_SSL", sasl_mechanism="AWS_MSK_IAM")
    k = KafkaSourceConfig(bootstrap_servers="127.0.0.1:1", security=sec)
    with pytest.raises(InvalidConfigError, match=r"sasl_mechanism: librdkafka .* no AWS_MSK_IAM"):
        secrets_kafka.KafkaAdmin(k, Resolver(environ={}))


def test_end_offsets_use_the_java_admin_client_for_java_only_mechanisms() -> None:
    from offsetscope.clock import SystemClock
    from offsetscope.pipelines import lag

    cfg = config.with_kafka_source(config.Config(), "localhost:9092", security=gssapi())
    sampler = lag.default_sampler(cfg, "kafka", SystemClock())
    assert isinstance(sampler, lag.JavaKafkaSampler)
    assert sampler.properties["sasl.mechanism"] == "GSSAPI"
    assert sampler.properties["bootstrap.servers"] == "localhost:9092"


def test_session_passes_krb5_conf_to_driver_and_executors() -> None:
    from offsetscope.spark.session import session_conf

    cfg = config.with_kafka_source(config.Config(), "localhost:9092", security=gssapi())
    conf = session_conf(cfg, extra_conf={"spark.executor.extraJavaOptions": "-Dx=1"})
    assert "-Djava.security.krb5.conf=krb5.conf" in conf["spark.driver.extraJavaOptions"]
    assert conf["spark.executor.extraJavaOptions"] == "-Djava.security.krb5.conf=krb5.conf -Dx=1"


@pytest.mark.parametrize(
    ("storage", "expected", "absent"),
    [
        ({}, {"spark.sql.catalogImplementation": "hive"}, ["spark.hadoop.hive.metastore.uris"]),
        (
            {"metastore": "hive", "metastore_uri": "thrift://hms:9083"},
            {"spark.hadoop.hive.metastore.uris": "thrift://hms:9083",
             "spark.sql.catalogImplementation": "hive"},
            ["spark.hadoop.javax.jdo.option.ConnectionURL"],
        ),
        (
            {"metastore": "unity", "warehouse_dir": "s3a://b/w"},
            {},
            ["spark.sql.catalogImplementation", "spark.hadoop.javax.jdo.option.ConnectionURL",
             "spark.hadoop.hive.metastore.uris"],
        ),
    ],
)  # fmt: skip
def test_the_metastore_is_the_configured_one(
    storage: dict[str, str], expected: dict[str, str], absent: list[str]
) -> None:
    from offsetscope.spark.session import session_conf

    cfg = config.from_mapping(config.Config, {"storage": storage, "spark": {"jars_dir": ""}})
    conf = session_conf(cfg)
    for key, value in expected.items():
        assert conf[key] == value
    for key in absent:
        assert key not in conf
    if not storage:
        assert "jdbc:derby:" in conf["spark.hadoop.javax.jdo.option.ConnectionURL"]
    if storage.get("metastore") == "hive":
        assert "derby" not in conf.get("spark.driver.extraJavaOptions", "")


def test_remote_warehouse_is_given_to_spark_as_written() -> None:
    from offsetscope.spark.session import session_conf

    cfg = config.from_mapping(
        config.Config,
        {"storage": {"warehouse_dir": "hdfs:///warehouse/offsetscope"}, "spark": {"jars_dir": ""}},
    )
    assert session_conf(cfg)["spark.sql.warehouse.dir"] == "hdfs:///warehouse/offsetscope"
