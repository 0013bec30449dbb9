"""offsetscope on a secured broker: the documented least-privilege ACLs are enough for every job,
a missing ACL is named, a bad login is reported as one, nothing offsetscope does needs a write,
and its one secret ends up in no log, error, checkpoint or table file.

The module starts its own broker (``listener_security = "SASL_PLAINTEXT"``: SCRAM-SHA-512 logins,
Kafka's StandardAuthorizer, no access without an ACL; see :mod:`offsetscope.verify.harness.broker`) and
stops it at the end. As the broker's super user it creates a data topic, a consumer group that
commits, a transaction that commits offsets for another group, and these principals, all with the
same password (the secret this module hunts for):

* ``reader`` -- exactly :func:`offsetscope.secrets.access.required_acls` (docs/security.md);
* ``no-offsets``, ``no-txn``, ``no-group``, ``no-data`` -- the same minus one documented ACL.

The broker's authorizer log (every decision, allowed ones included) shows what the reader did:
during the jobs it was only ever allowed READ and DESCRIBE and never denied anything.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import secrets as random_secrets
import shutil
import traceback
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka._model import ConsumerGroupTopicPartitions
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
)
from confluent_kafka.admin._listoffsets import OffsetSpec
from confluent_kafka.cimpl import NewTopic
from pyspark.sql import Row, SparkSession

from offsetscope import cli, config, redaction
from offsetscope.config import KafkaSecurityConfig, KafkaSourceConfig
from offsetscope.pipelines import ingest
from offsetscope.protocol import decode_record
from offsetscope.protocol.records import CoordinatorRecord
from offsetscope.secrets import access as secrets_access
from offsetscope.secrets import kafka as secrets_kafka
from offsetscope.secrets import references as secrets_references
from offsetscope.secrets.access import AclRule, KafkaAccessError
from offsetscope.spark import sources, tables
from offsetscope.verify.harness import acls
from offsetscope.verify.harness.broker import Broker, BrokerHandle
from offsetscope.verify.harness.clients import consume_and_commit

pytestmark = pytest.mark.kafka

OFFSETS = "__consumer_offsets"
TXN = "__transaction_state"
PASSWORD_ENV = "OFFSETSCOPE_TEST_KAFKA_PASSWORD"
JAAS_ENV = "OFFSETSCOPE_TEST_KAFKA_JAAS"
MESSAGES = 10
COMPLETE_COMMIT = 4
READ_ONLY = {"READ", "DESCRIBE"}
LATEST: OffsetSpec = OffsetSpec.latest()  # type: ignore[no-untyped-call]


def _withheld(user: str, rule: AclRule) -> bool:
    """True if ``user`` lacks ``rule`` (the reader lacks nothing)."""
    if user == "no-offsets":
        return rule.name == OFFSETS
    if user == "no-txn":
        return rule.name == TXN
    if user == "no-group":
        return rule.resource_type == "GROUP"
    if user == "no-data":
        return rule.name == "*"
    return False


USERS = ("reader", "no-offsets", "no-txn", "no-group", "no-data")


@dataclass(frozen=True, slots=True)
class World:
    """The secured broker and what was done on it."""

    broker: BrokerHandle
    admin: AdminClient
    base: config.Config
    password: str
    token: str  # the random part of the password: what is searched for in files
    topic: str
    group: str  # joined, consumed everything, committed
    txn_group: str  # offsets committed inside a committed transaction
    txn_id: str

    def security(self, user: str) -> KafkaSecurityConfig:
        return KafkaSecurityConfig(
            protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_username=user,
            sasl_password=f"env:{PASSWORD_ENV}",
        )

    def source(self, user: str) -> KafkaSourceConfig:
        """``[sources.kafka]`` for ``user``, secured through ``[sources.kafka.security]``."""
        return dataclasses.replace(
            self.base.sources.kafka,
            bootstrap_servers=self.broker.bootstrap,
            security=self.security(user),
        )

    def config_for(self, user: str) -> config.Config:
        k = self.source(user)
        return dataclasses.replace(
            self.base, sources=dataclasses.replace(self.base.sources, kind="kafka", kafka=k)
        )

    def client(self, user: str, **extra: str) -> dict[str, str | int | float | bool]:
        """librdkafka settings of ``user``, as offsetscope builds them."""
        conf: dict[str, str | int | float | bool] = {
            **secrets_kafka.admin_config(self.source(user), secrets_references.Resolver())
        }
        conf.update(extra)
        return conf

    def rules(self, user: str) -> list[AclRule]:
        return [
            r for r in secrets_access.required_acls(self.source(user)) if not _withheld(user, r)
        ]


@pytest.fixture(scope="module")
def world(offsetscope_config: config.Config, request: pytest.FixtureRequest) -> Iterator[World]:
    cfg = dataclasses.replace(
        offsetscope_config.broker,
        name=f"security-{os.getpid()}",
        listener_security="SASL_PLAINTEXT",
    )
    broker = Broker(cfg)
    # Folders of earlier runs that failed (kept for inspection) whose process is gone.
    for folder in broker.paths.root.parent.glob("security-*"):
        pid = folder.name.removeprefix("security-")
        if pid.isdigit() and int(pid) != os.getpid() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)
    handle = broker.start(fresh=True, tie_to_parent=True)
    failed_before = request.session.testsfailed
    token = random_secrets.token_urlsafe(18)
    # Quote, backslash and space: JAAS quoting must carry them to the broker intact.
    password = f'Sc"ram\\ {token}'
    try:
        with pytest.MonkeyPatch.context() as env:
            env.setenv(PASSWORD_ENV, password)
            yield _build_world(handle, offsetscope_config, password, token)
    finally:
        handle.stop()
        if request.session.testsfailed == failed_before:
            shutil.rmtree(broker.paths.root, ignore_errors=True)


def _build_world(handle: BrokerHandle, base: config.Config, password: str, token: str) -> World:
    tag = uuid.uuid4().hex[:8]
    admin = acls.admin_client(handle)
    w = World(
        broker=handle,
        admin=admin,
        base=base,
        password=password,
        token=token,
        topic=f"orders-{tag}",
        group=f"shop-{tag}",
        txn_group=f"txn-group-{tag}",
        txn_id=f"pay-{tag}",
    )
    admin.create_topics([NewTopic(w.topic, 2, 1)])[w.topic].result(timeout=30)
    super_user = handle.client_config()
    producer = Producer({**super_user})
    for i in range(MESSAGES):
        producer.produce(w.topic, key=str(i).encode(), value=b"order")
    assert producer.flush(30) == 0
    assert consume_and_commit(super_user, w.group, w.topic, want=MESSAGES) == MESSAGES
    metadata = Consumer({**super_user, "group.id": w.txn_group}).consumer_group_metadata()
    txn = Producer({**super_user, "transactional.id": w.txn_id})
    txn.init_transactions(30)
    txn.begin_transaction()
    txn.produce(w.topic, value=b"transactional order")
    txn.send_offsets_to_transaction([TopicPartition(w.topic, 0, 7)], metadata, 30)
    txn.commit_transaction(30)
    for user in USERS:
        acls.create_user(admin, user, password)
        acls.grant(admin, f"User:{user}", w.rules(user))
    return w


def _keys(rules: Iterable[AclRule]) -> set[tuple[str, str, str, str]]:
    return {(r.resource_type, r.name, r.pattern, r.operation) for r in rules}


def _reader_decisions(w: World, start: int) -> list[acls.Decision]:
    return acls.decisions(w.broker.authorizer_log, "User:reader", start=start)


def _assert_read_only(w: World, start: int) -> None:
    """Since ``start`` the reader was refused nothing and allowed only READ and DESCRIBE."""
    found = _reader_decisions(w, start)
    assert found, "the authorizer logged nothing for the reader"
    assert acls.operations(found, allowed=False) == set()
    assert {d.operation for d in found} <= READ_ONLY


# ----------------------------------------------------------------------------- AdminClient


def test_the_reader_holds_exactly_the_documented_read_only_acls(world: World) -> None:
    held = acls.acls_of(world.admin, "User:reader")
    assert held == _keys(secrets_access.required_acls(world.source("reader")))
    assert {op for *_, op in held} == READ_ONLY
    assert not {op for *_, op in held} & secrets_access.WRITE_OPERATIONS

    start = acls.log_size(world.broker.authorizer_log)
    k = world.source("reader")
    secrets_access.check_access(
        secrets_kafka.KafkaAdmin(k, secrets_references.Resolver()), k, [world.topic]
    )
    _assert_read_only(world, start)


@pytest.mark.parametrize(
    ("user", "missing"),
    [
        # DESCRIBE on every topic (for the sampler) covers the internal topics too.
        ("no-offsets", ["READ on topic __consumer_offsets"]),
        ("no-txn", ["READ on topic __transaction_state"]),
        ("no-group", ["READ on groups prefixed 'offsetscope-ingest'"]),
        ("no-data", ["DESCRIBE on topic {topic}"]),
    ],
)
def test_access_check_names_the_missing_acl(world: World, user: str, missing: list[str]) -> None:
    k = world.source(user)
    expected = [m.format(topic=world.topic) for m in missing]
    with pytest.raises(KafkaAccessError) as info:
        secrets_access.check_access(
            secrets_kafka.KafkaAdmin(k, secrets_references.Resolver()), k, [world.topic]
        )
    assert [r.describe() for r in info.value.missing] == expected
    message = str(info.value)
    assert f"User:{user} is not authorized: it needs {'; '.join(expected)}" in message
    assert f"--allow-principal User:{user}" in message
    assert world.token not in message


def test_check_access_command_lists_what_the_principal_lacks(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``offsetscope check-access``: 0 and one line for the reader; for a principal without the
    group ACL, that ACL as a row (every format) and the kafka-acls line granting it, exit 1."""

    def conf(user: str) -> Path:
        path = tmp_path / f"{user}.toml"
        path.write_text(
            f'[sources.kafka]\nbootstrap_servers = "{world.broker.bootstrap}"\n\n'
            '[sources.kafka.security]\nprotocol = "SASL_PLAINTEXT"\n'
            f'sasl_mechanism = "SCRAM-SHA-512"\nsasl_username = "{user}"\n'
            f'sasl_password = "env:{PASSWORD_ENV}"\n'
        )
        return path

    argv = ["check-access", "--topic", world.topic, "--conf"]
    assert cli.main([*argv, str(conf("reader"))]) == 0
    assert capsys.readouterr().out.strip() == "User:reader has every ACL offsetscope needs"

    assert cli.main([*argv, str(conf("no-group"))]) == 1
    out = capsys.readouterr().out
    assert "GROUP         | offsetscope-ingest | PREFIXED | READ" in out
    assert "--allow-principal User:no-group --operation Read --group offsetscope-ingest" in out
    assert world.token not in out
    assert cli.main([*argv, str(conf("no-data")), "--format", "json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert [(r["resource_type"], r["name"], r["operation"]) for r in rows] == [
        ("TOPIC", world.topic, "DESCRIBE")
    ]


def test_the_end_offset_sampler_needs_only_describe(world: World) -> None:
    """What the sampler asks (ListOffsets: log start, high watermark, last stable offset)."""
    start = acls.log_size(world.broker.authorizer_log)
    k = world.source("reader")
    admin = secrets_kafka.KafkaAdmin(k, secrets_references.Resolver())
    tps = [TopicPartition(world.topic, p) for p in (0, 1)]
    with secrets_access.kafka_access(k, "sampling end offsets", topics=[world.topic], admin=admin):
        latest = admin.list_offsets(dict.fromkeys(tps, LATEST), request_timeout=30)
        ends = {tp.partition: f.result().offset for tp, f in latest.items()}
    # Ten orders and the transactional one plus its commit marker, over two partitions.
    assert sum(ends.values()) == MESSAGES + 2
    _assert_read_only(world, start)

    k = world.source("no-data")
    admin = secrets_kafka.KafkaAdmin(k, secrets_references.Resolver())

    def sample() -> None:
        with secrets_access.kafka_access(
            k, "sampling end offsets", topics=[world.topic], data_topics=[world.topic], admin=admin
        ):
            futures = admin.list_offsets(dict.fromkeys(tps, LATEST), request_timeout=30)
            for future in futures.values():
                future.result()

    with pytest.raises(KafkaAccessError) as info:
        sample()
    assert [r.describe() for r in info.value.missing] == [f"DESCRIBE on topic {world.topic}"]


def test_a_wrong_password_is_reported_as_a_failed_login(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = f"not-the-password-{uuid.uuid4().hex}"
    monkeypatch.setenv(PASSWORD_ENV, wrong)
    k = world.source("reader")
    with pytest.raises(KafkaAccessError) as info:
        secrets_access.check_access(
            secrets_kafka.KafkaAdmin(k, secrets_references.Resolver()), k, timeout_s=20
        )
    message = str(info.value)
    assert message.startswith(
        f"checking User:reader's access to {world.broker.bootstrap}: User:reader could not log"
        f" in to {world.broker.bootstrap} with SASL_PLAINTEXT/SCRAM-SHA-512"
    )
    assert "invalid credentials" in info.value.detail
    assert info.value.missing == ()
    assert wrong not in message


def _error_code(exc: BaseException) -> int:
    assert isinstance(exc, KafkaException), exc
    code: int = exc.args[0].code()
    return code


def test_the_reader_cannot_change_the_cluster(world: World) -> None:
    """Every kind of write the reader could attempt is refused by the broker."""
    conf = world.client("reader")
    start = acls.log_size(world.broker.authorizer_log)

    delivered: list[Any] = []
    producer = Producer({**conf, "message.timeout.ms": 10_000})
    producer.produce(world.topic, value=b"x", on_delivery=lambda err, msg: delivered.append(err))
    producer.produce(OFFSETS, value=b"x", on_delivery=lambda err, msg: delivered.append(err))
    producer.flush(30)
    producer.close()
    assert [e.code() for e in delivered] == [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 2

    admin = AdminClient({**conf})
    new = f"created-by-reader-{uuid.uuid4().hex[:6]}"
    with pytest.raises(KafkaException) as created:
        admin.create_topics([NewTopic(new, 1, 1)], request_timeout=15)[new].result()
    assert _error_code(created.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED

    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        world.topic,
        incremental_configs=[
            ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    with pytest.raises(KafkaException) as altered:
        admin.incremental_alter_configs([resource], request_timeout=15)[resource].result()
    assert _error_code(altered.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED

    with pytest.raises(KafkaException) as deleted:
        admin.delete_consumer_groups([world.group], request_timeout=15)[world.group].result()
    assert _error_code(deleted.value) == KafkaError.GROUP_AUTHORIZATION_FAILED

    # Another team's group: the reader may not commit for it (its own prefix aside).
    moved = ConsumerGroupTopicPartitions(world.group, [TopicPartition(world.topic, 0, 1)])
    with pytest.raises(KafkaException) as committed:
        admin.alter_consumer_group_offsets([moved], request_timeout=15)[world.group].result()
    assert _error_code(committed.value) == KafkaError.GROUP_AUTHORIZATION_FAILED

    txn = Producer({**conf, "transactional.id": f"reader-txn-{uuid.uuid4().hex[:6]}"})
    try:
        with pytest.raises(KafkaException) as transactional:
            txn.init_transactions(15)
    finally:
        # A failed producer keeps looking up its coordinator in the background; closed, it
        # cannot log a denial into the next test's window of the authorizer log. Closing
        # re-raises the fatal error asserted below.
        with contextlib.suppress(KafkaException):
            txn.close()
    assert _error_code(transactional.value) == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED

    denied = acls.operations(_reader_decisions(world, start), allowed=False)
    assert {"WRITE", "CREATE", "ALTER_CONFIGS"} <= {op for op, *_ in denied}
    # The group commands stop at the group coordinator lookup (DESCRIBE on the group).
    assert ("DESCRIBE", "Group", world.group) in denied


# ----------------------------------------------------------------------------- Spark


def _spark_options(cfg: config.Config) -> dict[str, str]:
    """The batch-read options of Spark's Kafka source for ``cfg``: the pipeline's source
    options plus the connection settings of ``[sources.kafka.security]``."""
    options = {
        **sources.kafka_options(cfg),
        **secrets_kafka.spark_kafka_options(cfg.sources.kafka, secrets_references.Resolver()),
    }
    options.pop("maxOffsetsPerTrigger")  # a streaming option
    options["endingOffsets"] = "latest"
    return options


def _spark_read(spark: SparkSession, cfg: config.Config) -> list[Row]:
    with secrets_access.kafka_access(cfg.sources.kafka, f"reading {OFFSETS} and {TXN}"):
        df = spark.read.format("kafka").options(**_spark_options(cfg)).load()
        return df.select("topic", "partition", "offset", "key", "value").collect()


def _decode(rows: Iterable[Row]) -> list[CoordinatorRecord]:
    out = []
    for row in rows:
        value = None if row["value"] is None else bytes(row["value"])
        record = decode_record(row["topic"], bytes(row["key"]), value)
        assert isinstance(record, CoordinatorRecord), record
        out.append(record)
    return out


def _commits(records: Iterable[CoordinatorRecord], group: str) -> dict[tuple[str, int], int]:
    return {
        (r.key["topic"], r.key["partition"]): r.value["offset"]
        for r in records
        if r.record_type == 1 and r.key["group"] == group and r.value is not None
    }


@pytest.mark.spark
def test_spark_reads_and_decodes_the_internal_topics_with_least_privilege(
    world: World, spark: SparkSession
) -> None:
    start = acls.log_size(world.broker.authorizer_log)
    records = _decode(_spark_read(spark, world.config_for("reader")))

    commits = _commits(records, world.group)
    assert set(commits) == {(world.topic, 0), (world.topic, 1)}
    assert sum(commits.values()) == MESSAGES
    assert _commits(records, world.txn_group) == {(world.topic, 0): 7}
    statuses = [
        r.value["transactionStatus"]
        for r in records
        if r.record_type == 0 and r.key["transactionalId"] == world.txn_id and r.value is not None
    ]
    assert statuses[-1] == COMPLETE_COMMIT
    _assert_read_only(world, start)


@pytest.mark.spark
@pytest.mark.parametrize(
    ("user", "missing"),
    [
        (
            "no-offsets",
            ["READ on topic __consumer_offsets", "DESCRIBE on topic __consumer_offsets"],
        ),
        ("no-txn", ["READ on topic __transaction_state", "DESCRIBE on topic __transaction_state"]),
        ("no-group", ["READ on groups prefixed 'offsetscope-ingest'"]),
    ],
)
def test_a_spark_read_without_an_acl_names_it(
    world: World, spark: SparkSession, user: str, missing: list[str]
) -> None:
    with pytest.raises(KafkaAccessError) as info:
        _spark_read(spark, world.config_for(user))
    assert [r.describe() for r in info.value.missing] == missing
    message = str(info.value)
    assert message.startswith(
        f"reading {OFFSETS} and {TXN}: User:{user} is not authorized: it needs {missing[0]}"
    )
    assert "AuthorizationException: Not authorized to access" in info.value.detail
    # A clear message, not the JVM's stack trace.
    assert "\tat org.apache" not in message
    assert info.value.__suppress_context__


# ----------------------------------------------------------------------------- the ingest job


def _files_holding(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


@pytest.mark.spark
@pytest.mark.streaming
def test_ingest_runs_with_least_privilege_and_leaks_no_secret(
    world: World, spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ingest job with ``availableNow`` as the reader: it reads both internal topics,
    samples end offsets, writes its tables, and the password is nowhere afterwards.

    The pipeline's Kafka source and end-offset sampler take their connection settings from the
    ``[sources.kafka]`` pass-through maps (``options``: Java client, ``admin_options``:
    librdkafka), so this configuration secures both there, by reference.
    """
    tag = uuid.uuid4().hex[:8]
    jaas = secrets_kafka.jaas_config(
        "org.apache.kafka.common.security.scram.ScramLoginModule",
        {"username": "reader", "password": world.password},
    )
    monkeypatch.setenv(JAAS_ENV, jaas)
    k = dataclasses.replace(
        world.base.sources.kafka,
        bootstrap_servers=world.broker.bootstrap,
        options={
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": f"env:{JAAS_ENV}",
        },
        admin_options={
            "security.protocol": "sasl_plaintext",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": "reader",
            "sasl.password": f"env:{PASSWORD_ENV}",
        },
    )
    cfg = dataclasses.replace(
        world.base,
        sources=dataclasses.replace(world.base.sources, kind="kafka", kafka=k),
        storage=dataclasses.replace(world.base.storage, schema=f"security_{tag}"),
        pipeline=dataclasses.replace(world.base.pipeline, query_name=f"security_{tag}"),
    )
    checkpoint = tmp_path / "checkpoint"

    # Everything offsetscope logs goes through the redacting filter into this file.
    log_file = tmp_path / "offsetscope.log"
    handler = logging.FileHandler(log_file, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
    logger = logging.getLogger("offsetscope")
    previous_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    redaction.install(logger)
    log = logging.getLogger("offsetscope.test_security")
    errors: list[str] = []
    try:
        log.info("configuration: %r", cfg)
        settings = secrets_kafka.security_settings(
            world.security("reader"), secrets_references.Resolver()
        )
        log.info("reader's Java client settings: %s", settings.java)
        log.info("reader's librdkafka settings: %s", settings.librdkafka)
        log.info("source options: %s", sources.kafka_options(cfg))

        start = acls.log_size(world.broker.authorizer_log)
        with secrets_access.kafka_access(k, "ingesting", admin=None):
            reports = ingest.run(spark, cfg, checkpoint=str(checkpoint))
        _assert_read_only(world, start)

        # An access failure with the same secret in play: logged and kept as text.
        try:
            _spark_read(spark, world.config_for("no-group"))
        except KafkaAccessError as exc:
            log.exception("expected access failure")
            errors.append("".join(traceback.format_exception(exc)))
        plan = (
            spark.read.format("kafka")
            .options(**_spark_options(world.config_for("reader")))
            .load()
            ._jdf.queryExecution()
            .toString()
        )
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous_level)
        handler.close()

    # The job did its work.
    assert reports
    assert sum(r.rows_in for r in reports) > 0
    committed = spark.sql(
        f"SELECT topic, partition, offset FROM {tables.table_name(cfg, 'offset_commits')}"
        f" WHERE group_id = '{world.group}'"
    ).collect()
    assert {(r["topic"], r["partition"]) for r in committed} == {(world.topic, 0), (world.topic, 1)}
    sampled = spark.sql(
        f"SELECT DISTINCT topic FROM {tables.table_name(cfg, 'end_offsets')}"
    ).collect()
    assert world.topic in {r["topic"] for r in sampled}

    # The secret is in none of what the run left behind.
    assert len(errors) == 1
    assert "User:no-group is not authorized" in errors[0]
    logged = log_file.read_text(encoding="utf-8")
    assert "reader's Java client settings" in logged
    assert "expected access failure" in logged
    for text in (logged, errors[0], plan, repr(cfg)):
        assert world.token not in text
    location = spark.sql(f"DESCRIBE SCHEMA EXTENDED {tables.schema_name(cfg)}").collect()
    schema_dir = Path(
        next(r["info_value"] for r in location if r["info_name"] == "Location").removeprefix(
            "file:"
        )
    )
    assert any(schema_dir.rglob("*.parquet"))
    assert any(checkpoint.rglob("offsets/*"))
    needle = world.token.encode()
    assert _files_holding(checkpoint, needle) == []
    assert _files_holding(schema_dir, needle) == []
