"""Kerberos (SASL/GSSAPI) end to end: a real KDC, a broker that takes only GSSAPI logins, and the
ingest job reading ``__consumer_offsets`` through Spark's Kafka source into Delta.

MiniKdc (``make infra-jars``) creates ``kafka/localhost`` (the broker's service principal) and
``client`` with their keytabs and a ``krb5.conf``. The harness broker listens with
``SASL_PLAINTEXT_GSSAPI``. Kafka's own console producer and consumer (Java clients, logging in
from the client keytab) write records and commit a consumer group's offsets. The ingest job
(``python -m jobs.ingest``) is configured with ``[sources.kafka.security]`` ``sasl_mechanism =
"GSSAPI"``, the principal, the keytab and the krb5.conf, and samples end offsets with the Java
AdminClient (the confluent-kafka wheel cannot do GSSAPI). Its tables must hold every commit the
group made, and end offsets that match what was produced.

``make test-kerberos`` (a few minutes).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from offsetscope import config
from offsetscope.secrets.kafka import KRB5_LOGIN_MODULE, jaas_config
from offsetscope.verify import remote
from offsetscope.verify.harness import broker as harness_broker
from offsetscope.verify.harness import kdc as harness_kdc
from offsetscope.verify.harness.broker import BrokerHandle
from offsetscope.verify.harness.jvm import classpath, java_executable, resolve_path
from offsetscope.verify.harness.kdc import MiniKdc

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.kafka]

TOPIC = "payments"
GROUP = "settlement"
RECORDS = 300
PARTITIONS = 3


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kerberos")


@pytest.fixture(scope="module")
def kdc(work: Path) -> Iterator[MiniKdc]:
    started = harness_kdc.start(work / "kdc", ("kafka/localhost", "client"))
    try:
        yield started
    finally:
        started.stop()
    assert not started.launcher.running()


@pytest.fixture(scope="module")
def broker(kdc: MiniKdc, work: Path) -> Iterator[BrokerHandle]:
    cfg = config.BrokerConfig(
        work_dir=str(work / "kafka"),
        name="gssapi",
        # The principal's instance: clients ask the KDC for kafka/<advertised host>.
        host="localhost",
        listener_security="SASL_PLAINTEXT_GSSAPI",
        kerberos_principal=kdc.principal("kafka/localhost"),
        kerberos_keytab=str(kdc.keytab("kafka/localhost")),
        kerberos_krb5_conf=str(kdc.krb5_conf),
        properties={"num.partitions": str(PARTITIONS)},
        auto_create_topics=True,
    )
    with harness_broker.throwaway(cfg) as (_, handle):
        yield handle


def client_properties(kdc: MiniKdc, work: Path) -> Path:
    path = work / "client.properties"
    login = {
        "useKeyTab": "true",
        "storeKey": "true",
        "keyTab": str(kdc.keytab("client")),
        "principal": kdc.principal("client"),
    }
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=GSSAPI\n"
        "sasl.kerberos.service.name=kafka\n"
        f"sasl.jaas.config={jaas_config(KRB5_LOGIN_MODULE, login)}\n"
    )
    return path


def kafka_tool(kdc: MiniKdc, main: str, *args: str, stdin: str = "") -> str:
    """One of Kafka's console tools (Java clients) logged in from the client keytab."""
    cp = classpath(resolve_path("build/jvm/kafka-tools"), required=("kafka-tools",))
    command = [
        java_executable(),
        f"-Djava.security.krb5.conf={kdc.krb5_conf}",
        f"-Dlog4j2.configurationFile={resolve_path('deploy/kafka/log4j2-tools.properties')}",
        "-cp",
        cp,
        main,
        *args,
    ]
    done = subprocess.run(
        command, input=stdin, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


@pytest.mark.timeout(1800)
def test_ingest_reads_consumer_offsets_through_gssapi_into_delta(
    kdc: MiniKdc, broker: BrokerHandle, work: Path, record_outcome: Callable[[str], None]
) -> None:
    props = client_properties(kdc, work)
    lines = "".join(f"{i}:record-{i}\n" for i in range(RECORDS))
    kafka_tool(
        kdc, "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", broker.bootstrap,
        "--topic", TOPIC, "--command-config", str(props),
        "--property", "parse.key=true", "--property", "key.separator=:", stdin=lines,
    )  # fmt: skip
    consumed = kafka_tool(
        kdc, "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server",
        broker.bootstrap, "--topic", TOPIC, "--group", GROUP, "--from-beginning",
        "--max-messages", str(RECORDS), "--command-config", str(props), "--timeout-ms", "120000",
    )  # fmt: skip
    assert len(consumed.splitlines()) == RECORDS

    site = remote.Site(
        name="gssapi_run",
        log_dir=str(work / "unused-log"),
        warehouse_dir=str(work / "warehouse"),
        checkpoint_dir=str(work / "checkpoints"),
        metastore_dir=str(work / "metastore"),
    )
    file = remote.site_config(
        site,
        work / "sites",
        sources={
            "kind": "kafka",
            "kafka": {
                "bootstrap_servers": broker.bootstrap,
                "security": {
                    "protocol": "SASL_PLAINTEXT",
                    "sasl_mechanism": "GSSAPI",
                    "kerberos_principal": kdc.principal("client"),
                    "kerberos_keytab": str(kdc.keytab("client")),
                    "kerberos_krb5_conf": str(kdc.krb5_conf),
                },
            },
        },
    )
    result = remote.run_job("ingest", file, log=work / "ingest.log")
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    assert "micro-batches" in result.stdout

    query = (
        "SELECT c.partition, max(c.`offset`) AS committed, max(e.high_watermark) AS end_offset"
        " FROM offset_commits c JOIN end_offsets e ON c.topic = e.topic AND c.partition ="
        f" e.partition WHERE c.group_id = '{GROUP}' AND c.topic = '{TOPIC}'"
        " GROUP BY c.partition ORDER BY c.partition"
    )
    read = remote.run_module(
        ["offsetscope.cli", "sql", query, "--env", "local", "--conf", str(file)],
        log=work / "sql.log",
    )
    assert read.returncode == 0, read.stderr[-4000:]
    rows = [line.split("|") for line in read.stdout.splitlines() if line[:1].isdigit()]
    committed = {int(p): (int(c), int(e)) for p, c, e in (map(str.strip, r) for r in rows)}
    # The group read everything and committed it: per partition, committed = end offset.
    differ = sum(1 for c, e in committed.values() if c != e)
    if sum(e for _, e in committed.values()) != RECORDS:
        differ += 1
    record_outcome(f"kerberos: {len(committed)} partitions checked, {differ} differ")
    assert len(committed) == PARTITIONS, read.stdout
    assert differ == 0, read.stdout
