"""A real Apache Kafka broker for tests, the live demo and benchmarks: one KRaft JVM on loopback.

The node is broker and controller at once (``process.roles=broker,controller``), as in Kafka's
single-node quickstart, and runs from the jars in ``build/jvm/kafka`` (``make install``), not
from a Kafka distribution or a container::

    java -cp 'build/jvm/kafka/*' kafka.tools.StorageTool format --standalone \\
        -t <cluster id> -c <work>/server.properties          (first start only)
    java -Xmx768m -cp 'build/jvm/kafka/*' kafka.Kafka <work>/server.properties

Everything lives under ``<broker.work_dir>/<broker.name>/`` (``.work/kafka/default`` by
default)::

    server.properties   generated from the [broker] config at every start
    data/               log.dirs and metadata.log.dir: <topic>-<partition>/<base offset>.log ...
    logs/server.log     the broker's whole Log4j2 output (deploy/kafka/log4j2.properties)
    logs/stdout.log     the JVM's stdout/stderr (crashes before Log4j2 starts end up here)
    ports.json          cluster id and ports; kept with the data, so a restart keeps its
                        controller endpoint (``format --standalone`` records it in the quorum)
    broker.json         pid and endpoints while the broker runs; removed when it stops
    credentials.json    secured brokers only: the super user's generated password (mode 0600)
    logs/authorizer.log secured brokers only: every authorization decision (allowed: DEBUG,
                        denied: INFO), from kafka.authorizer.logger

Ports: unless configured, two free loopback ports are chosen at the first start, so two
checkouts (or two test runs) on one machine never collide. A port taken between choosing it
and the JVM binding it is retried with new ports on fresh data.

Readiness: the broker counts as up when its log says ``Kafka Server started`` *and* a
confluent-kafka AdminClient gets cluster metadata listing the node. If the process exits or
the timeout passes first, the JVM is stopped and :class:`BrokerStartError` carries the tail of
the broker's log, so the cause is in the test report.

Stopping sends SIGTERM (Kafka's controlled shutdown), then SIGKILL after ``stop_timeout``.
Only a process whose command line is this work folder's ``kafka.Kafka`` is ever signalled.
A broker started by a test process can be tied to it (``tie_to_parent``): Linux then sends it
SIGTERM when that process dies, however it dies.

Security (``listener_security = "SASL_PLAINTEXT"``): the client and inter-broker listener
takes SCRAM-SHA-512 logins only, and Kafka's ``StandardAuthorizer`` allows nothing without an
ACL (``allow.everyone.if.no.acl.found=false``) except to ``super_user``::

    listeners=SASL_PLAINTEXT://host:port,CONTROLLER://host:controller_port
    listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT
    sasl.enabled.mechanisms=SCRAM-SHA-512
    sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
    listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=...ScramLoginModule <super user>
    sasl.mechanism.controller.protocol=PLAIN
    listener.name.controller.sasl.enabled.mechanisms=PLAIN
    listener.name.controller.plain.sasl.jaas.config=...PlainLoginModule <super user>
    authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
    super.users=User:<super_user>

SCRAM credentials live in the cluster metadata, which a controller has not read when it starts,
so the controller listener uses PLAIN with the password in its JAAS line (Kafka's KRaft
security docs do the same) and the super user's SCRAM credential is written at format time
(``StorageTool format --add-scram SCRAM-SHA-512=[name=...,password=...]``, KIP-900). The
password is generated once per data folder. Other users and their ACLs are created at run time
with the AdminClient (:mod:`offsetscope.verify.harness.acls`). SCRAM over plaintext is only for
loopback: the password never crosses the wire, but everything else does.

Kerberos (``listener_security = "SASL_PLAINTEXT_GSSAPI"``, with ``kerberos_principal``,
``kerberos_keytab``, ``kerberos_krb5_conf`` from a KDC such as :mod:`offsetscope.verify.harness.kdc`):
the client and inter-broker listener takes GSSAPI logins, the controller listener stays
PLAINTEXT on loopback, no authorizer (authentication only)::

    listeners=SASL_PLAINTEXT://host:port,CONTROLLER://host:controller_port
    listener.security.protocol.map=CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT
    sasl.enabled.mechanisms=GSSAPI
    sasl.mechanism.inter.broker.protocol=GSSAPI
    sasl.kerberos.service.name=<the principal's service, "kafka">
    listener.name.sasl_plaintext.gssapi.sasl.jaas.config=...Krb5LoginModule <keytab, principal>

and ``-Djava.security.krb5.conf`` for the broker and ``StorageTool``. ``host`` must be the
principal's instance (``localhost`` for ``kafka/localhost``): clients ask for a ticket to
``<service>/<advertised host>``. The readiness check is then the log line alone (the
confluent-kafka wheel cannot log in with GSSAPI: :mod:`offsetscope.secrets.kafka`).

Command line (``make kafka-up`` / ``kafka-down`` / ``kafka-status``)::

    python -m offsetscope.verify.harness.broker up [--env local] [--fresh]
    python -m offsetscope.verify.harness.broker status
    python -m offsetscope.verify.harness.broker down [--wipe]
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import ctypes
import dataclasses
import json
import os
import secrets as random_secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Self

from offsetscope import config as config_mod
from offsetscope.config import BrokerConfig
from offsetscope.secrets.kafka import KRB5_LOGIN_MODULE, jaas_config
from offsetscope.verify.harness.jvm import (
    artifact_version,
    broker_log4j_config,
    classpath,
    java_executable,
    resolve_path,
    tools_log4j_config,
)

NODE_ID = 1
_READY_LINE = "Kafka Server started"
_PORT_IN_USE = "Address already in use"
_START_ATTEMPTS = 3
_TAIL_LINES = 60
_POLL_S = 0.1
# Linux prctl(2) option: signal to deliver to this process when its parent thread dies.
_PR_SET_PDEATHSIG = 1

PLAINTEXT = "PLAINTEXT"
SASL_PLAINTEXT = "SASL_PLAINTEXT"
SASL_PLAINTEXT_GSSAPI = "SASL_PLAINTEXT_GSSAPI"
SCRAM_MECHANISM = "SCRAM-SHA-512"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
_SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"
_PLAIN_LOGIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
# Added to the broker's Log4j2 configuration (a composite configuration) when the authorizer is
# on: the decisions go to their own file, allowed ones included, so tests can read what a
# principal did.
_AUTHORIZER_LOG4J = """\
appender.authorizer.type = File
appender.authorizer.name = AUTHORIZER
appender.authorizer.fileName = ${sys:kafka.logs.dir}/authorizer.log
appender.authorizer.append = true
appender.authorizer.layout.type = PatternLayout
appender.authorizer.layout.pattern = [%d{ISO8601}{UTC}] %p %m%n
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = DEBUG
logger.authorizer.additivity = false
logger.authorizer.appenderRef.authorizer.ref = AUTHORIZER
"""


class BrokerError(RuntimeError):
    """The harness broker could not be started, reached or stopped."""


class BrokerStartError(BrokerError):
    """The broker did not become ready; the message ends with the tail of its log."""

    def __init__(self, message: str, log_tail: str) -> None:
        super().__init__(f"{message}\n--- broker log tail ---\n{log_tail}")
        self.log_tail = log_tail


class BrokerAlreadyRunningError(BrokerError):
    """A broker already runs on this work folder (stop it, or use another ``name``)."""


@dataclass(frozen=True, slots=True)
class BrokerPaths:
    """The files of one harness broker, all under ``root`` (``<work_dir>/<name>``)."""

    root: Path

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    @property
    def server_log(self) -> Path:
        return self.logs_dir / "server.log"

    @property
    def stdout_log(self) -> Path:
        return self.logs_dir / "stdout.log"

    @property
    def properties(self) -> Path:
        return self.root / "server.properties"

    @property
    def ports_file(self) -> Path:
        return self.root / "ports.json"

    @property
    def state_file(self) -> Path:
        return self.root / "broker.json"

    @property
    def credentials_file(self) -> Path:
        return self.root / "credentials.json"

    @property
    def authorizer_log(self) -> Path:
        return self.logs_dir / "authorizer.log"

    @property
    def authorizer_log4j(self) -> Path:
        return self.root / "log4j2-authorizer.properties"

    @property
    def formatted(self) -> bool:
        return (self.data_dir / "meta.properties").is_file()


@dataclass(frozen=True, slots=True)
class Credentials:
    """A SCRAM user and its password (the password is left out of ``repr``)."""

    user: str
    password: str = field(repr=False)

    @property
    def principal(self) -> str:
        return f"User:{self.user}"


@dataclass(frozen=True, slots=True)
class Endpoints:
    """Where the node listens, and the cluster it belongs to (persisted in ``ports.json``)."""

    host: str
    port: int
    controller_port: int
    cluster_id: str

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"


# --------------------------------------------------------------------------- helpers


def new_cluster_id() -> str:
    """A random Kafka cluster id: 16 random bytes, URL-safe Base64 without padding.

    Mirrors ``org.apache.kafka.common.Uuid.randomUuid()``, which also rejects ids that start
    with ``-`` (they read as an option on a command line).
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")
        if not text.startswith("-"):
            return text


def free_port(host: str) -> int:
    """A port that is free on ``host`` right now (the OS picks it; it may be taken later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def tail(path: Path, lines: int = _TAIL_LINES, *, start: int = 0) -> str:
    """The last ``lines`` lines of a text file from byte ``start`` on ('' if it is missing)."""
    try:
        with path.open("rb") as fh:
            fh.seek(start)
            data = fh.read()
    except FileNotFoundError:
        return ""
    text = data.decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:])


def server_properties(
    cfg: BrokerConfig,
    paths: BrokerPaths,
    ends: Endpoints,
    credentials: Credentials | None = None,
) -> dict[str, str]:
    """The broker's ``server.properties`` for this configuration, as an ordered mapping.

    Raises:
        ValueError: a secured broker (``listener_security = "SASL_PLAINTEXT"``) without
            ``credentials`` for its super user.
    """
    host = ends.host
    props = {
        "process.roles": "broker,controller",
        "node.id": str(NODE_ID),
        "controller.quorum.bootstrap.servers": f"{host}:{ends.controller_port}",
        "listeners": f"PLAINTEXT://{host}:{ends.port},CONTROLLER://{host}:{ends.controller_port}",
        "advertised.listeners": f"PLAINTEXT://{host}:{ends.port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(paths.data_dir),
        "metadata.log.dir": str(paths.data_dir),
        "num.recovery.threads.per.data.dir": "1",
        "num.network.threads": "2",
        "num.io.threads": "2",
        # One node: every internal topic has replication factor 1 and min ISR 1.
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "default.replication.factor": "1",
        "min.insync.replicas": "1",
        "offsets.topic.num.partitions": str(cfg.offsets_partitions),
        "transaction.state.log.num.partitions": str(cfg.transaction_partitions),
        "offsets.topic.segment.bytes": str(cfg.offsets_segment_bytes),
        "transaction.state.log.segment.bytes": str(cfg.transaction_segment_bytes),
        "group.initial.rebalance.delay.ms": str(cfg.group_initial_rebalance_delay_ms),
        "group.min.session.timeout.ms": str(cfg.group_min_session_timeout_ms),
        "group.max.session.timeout.ms": str(cfg.group_max_session_timeout_ms),
        "offsets.retention.minutes": str(cfg.offsets_retention_minutes),
        "offsets.retention.check.interval.ms": str(cfg.offsets_retention_check_interval_ms),
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": str(
            cfg.transaction_abort_timed_out_interval_ms
        ),
        "transaction.remove.expired.transaction.cleanup.interval.ms": str(
            cfg.transaction_remove_expired_interval_ms
        ),
        "transactional.id.expiration.ms": str(cfg.transactional_id_expiration_ms),
        "transaction.max.timeout.ms": str(cfg.transaction_max_timeout_ms),
        # The cleaner allocates its dedupe buffer up front; the default 128 MiB does not fit a
        # small heap (an OutOfMemoryError at startup).
        "log.cleaner.dedupe.buffer.size": str(cfg.log_cleaner_dedupe_buffer_bytes),
        "auto.create.topics.enable": str(cfg.auto_create_topics).lower(),
    }
    if cfg.listener_security == SASL_PLAINTEXT:
        if credentials is None:
            raise ValueError("a SASL_PLAINTEXT broker needs its super user's credentials")
        props.update(_security_properties(cfg, ends, credentials))
    elif cfg.listener_security == SASL_PLAINTEXT_GSSAPI:
        props.update(_gssapi_properties(cfg, ends))
    props.update(cfg.properties)
    return props


def _gssapi_properties(cfg: BrokerConfig, ends: Endpoints) -> dict[str, str]:
    host = ends.host
    service = cfg.kerberos_principal.split("/", 1)[0].split("@", 1)[0]
    return {
        "listeners": (
            f"{SASL_PLAINTEXT}://{host}:{ends.port},CONTROLLER://{host}:{ends.controller_port}"
        ),
        "advertised.listeners": f"{SASL_PLAINTEXT}://{host}:{ends.port}",
        "inter.broker.listener.name": SASL_PLAINTEXT,
        "listener.security.protocol.map": f"CONTROLLER:PLAINTEXT,{SASL_PLAINTEXT}:{SASL_PLAINTEXT}",
        "sasl.enabled.mechanisms": "GSSAPI",
        "sasl.mechanism.inter.broker.protocol": "GSSAPI",
        "sasl.kerberos.service.name": service,
        f"listener.name.{SASL_PLAINTEXT.lower()}.gssapi.sasl.jaas.config": jaas_config(
            KRB5_LOGIN_MODULE,
            {
                "useKeyTab": "true",
                "storeKey": "true",
                "keyTab": str(resolve_path(cfg.kerberos_keytab)),
                "principal": cfg.kerberos_principal,
            },
        ),
    }


def _security_properties(
    cfg: BrokerConfig, ends: Endpoints, credentials: Credentials
) -> dict[str, str]:
    # See the module docstring: SCRAM for clients and the inter-broker listener, PLAIN for the
    # controller listener (SCRAM credentials are not readable before the metadata log is).
    host = ends.host
    user, password = credentials.user, credentials.password
    return {
        "listeners": (
            f"{SASL_PLAINTEXT}://{host}:{ends.port},CONTROLLER://{host}:{ends.controller_port}"
        ),
        "advertised.listeners": f"{SASL_PLAINTEXT}://{host}:{ends.port}",
        "inter.broker.listener.name": SASL_PLAINTEXT,
        "listener.security.protocol.map": (
            f"CONTROLLER:{SASL_PLAINTEXT},{SASL_PLAINTEXT}:{SASL_PLAINTEXT}"
        ),
        "sasl.enabled.mechanisms": SCRAM_MECHANISM,
        "sasl.mechanism.inter.broker.protocol": SCRAM_MECHANISM,
        f"listener.name.{SASL_PLAINTEXT.lower()}.{SCRAM_MECHANISM.lower()}.sasl.jaas.config": (
            jaas_config(_SCRAM_LOGIN, {"username": user, "password": password})
        ),
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": jaas_config(
            _PLAIN_LOGIN, {"username": user, "password": password, f"user_{user}": password}
        ),
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": credentials.principal,
        "allow.everyone.if.no.acl.found": "false",
    }


def client_config(bootstrap: str, credentials: Credentials | None, **extra: str) -> dict[str, str]:
    """librdkafka settings for a client of a harness broker, logged in as ``credentials``
    (None: a PLAINTEXT broker)."""
    conf = {"bootstrap.servers": bootstrap}
    if credentials is not None:
        conf |= {
            "security.protocol": SASL_PLAINTEXT.lower(),
            "sasl.mechanisms": SCRAM_MECHANISM,
            "sasl.username": credentials.user,
            "sasl.password": credentials.password,
        }
    return conf | extra


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to a file only its owner can read (it may hold passwords)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    tmp.chmod(0o600)  # an existing file keeps its old mode through O_CREAT
    tmp.replace(path)


def _write_properties(path: Path, props: Mapping[str, str]) -> None:
    lines = [
        "# Generated by offsetscope.verify.harness.broker from conf/ [broker]; edits are lost."
    ]
    lines += [f"{key}={value}" for key, value in props.items()]
    _write_private(path, "\n".join(lines) + "\n")


def _read_json(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    return data if isinstance(data, dict) else None


def _write_json(path: Path, data: Mapping[str, object]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)


def _load_credentials(paths: BrokerPaths) -> Credentials | None:
    data = _read_json(paths.credentials_file)
    if data is None:
        return None
    return Credentials(str(data["user"]), str(data["password"]))


def _load_endpoints(paths: BrokerPaths) -> Endpoints | None:
    data = _read_json(paths.ports_file)
    if data is None:
        return None
    return Endpoints(
        host=str(data["host"]),
        port=int(str(data["port"])),
        controller_port=int(str(data["controller_port"])),
        cluster_id=str(data["cluster_id"]),
    )


def _cmdline(pid: int) -> str | None:
    """The command line of a live process, or None if there is no such process."""
    proc = Path(f"/proc/{pid}/cmdline")
    if proc.parent.is_dir():
        try:
            raw = proc.read_bytes()
        except (FileNotFoundError, ProcessLookupError):
            return None
        # A zombie (exited, not yet reaped) has an empty command line: it is gone.
        return raw.replace(b"\0", b" ").decode(errors="replace") if raw else None
    if not Path("/proc").is_dir():
        result = subprocess.run(
            ["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True, check=False
        )
        return result.stdout.strip() or None
    return None


def _is_our_broker(pid: int, paths: BrokerPaths) -> bool:
    """True if ``pid`` is the ``kafka.Kafka`` JVM of this work folder (never signal others)."""
    cmd = _cmdline(pid)
    return cmd is not None and "kafka.Kafka" in cmd and str(paths.properties) in cmd


def _tie_to_parent() -> None:
    """In the child before exec: ask Linux for SIGTERM when the parent thread dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _log_contains(path: Path, needle: str, start: int) -> bool:
    try:
        with path.open("rb") as fh:
            fh.seek(start)
            return needle.encode() in fh.read()
    except FileNotFoundError:
        return False


def _metadata_ready(bootstrap: str, timeout_s: float, credentials: Credentials | None) -> bool:
    # Imported here: confluent-kafka is only needed once a broker is actually started.
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    conf: dict[str, str | int | float | bool] = {**client_config(bootstrap, credentials)}
    admin = AdminClient(conf | {"log_level": 0})
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException:
        return False
    return NODE_ID in metadata.brokers


# --------------------------------------------------------------------------- handle


class BrokerHandle:
    """A running harness broker: where it listens, where its files are, and how to stop it.

    Returned by :meth:`Broker.start` (which owns the process) and :meth:`Broker.attach` (a
    broker started by another process, e.g. ``make kafka-up``). Usable as a context manager
    that stops the broker on exit.
    """

    def __init__(
        self,
        config: BrokerConfig,
        paths: BrokerPaths,
        endpoints: Endpoints,
        pid: int,
        process: subprocess.Popen[bytes] | None = None,
        credentials: Credentials | None = None,
    ) -> None:
        self.config = config
        self.paths = paths
        self.endpoints = endpoints
        self.pid = pid
        self._process = process
        self.credentials = credentials

    def __repr__(self) -> str:
        return f"BrokerHandle(bootstrap={self.bootstrap!r}, pid={self.pid}, root={self.root})"

    @property
    def bootstrap(self) -> str:
        """``host:port`` of the client listener, for ``bootstrap.servers``."""
        return self.endpoints.bootstrap

    @property
    def secured(self) -> bool:
        """True if clients must log in (SCRAM-SHA-512) and ACLs apply."""
        return self.credentials is not None

    @property
    def super_user(self) -> Credentials | None:
        """The harness's own principal on a secured broker (a super user), else None."""
        return self.credentials

    def client_config(self, user: Credentials | None = None, **extra: str) -> dict[str, str]:
        """librdkafka settings to reach this broker as ``user`` (default: the super user).

        ``extra`` adds settings whose names are Python identifiers (``client_id="x"``); merge
        dotted names into the returned mapping.
        """
        return client_config(self.bootstrap, user or self.credentials, **extra)

    @property
    def authorizer_log(self) -> Path:
        """Every authorization decision of a secured broker (see the module docstring)."""
        return self.paths.authorizer_log

    @property
    def port(self) -> int:
        return self.endpoints.port

    @property
    def controller_port(self) -> int:
        return self.endpoints.controller_port

    @property
    def cluster_id(self) -> str:
        return self.endpoints.cluster_id

    @property
    def root(self) -> Path:
        """The broker's work folder."""
        return self.paths.root

    @property
    def log_dir(self) -> Path:
        """Kafka's ``log.dirs``: one ``<topic>-<partition>`` folder per partition."""
        return self.paths.data_dir

    @property
    def server_log(self) -> Path:
        return self.paths.server_log

    def partition_dir(self, topic: str, partition: int) -> Path:
        """The folder holding the segments of one partition (it may not exist yet)."""
        return self.paths.data_dir / f"{topic}-{partition}"

    def segment_files(self, topic: str, partition: int | None = None) -> list[Path]:
        """The ``.log`` segment files of one partition, or of every partition of ``topic``.

        Sorted by partition, then base offset (the file name is the zero-padded base offset).
        """
        if partition is not None:
            dirs = [self.partition_dir(topic, partition)]
        else:
            prefix = f"{topic}-"
            dirs = [
                d
                for d in self.paths.data_dir.glob(f"{topic}-*")
                if d.is_dir() and d.name[len(prefix) :].isdigit()
            ]
            dirs.sort(key=lambda d: int(d.name[len(prefix) :]))
        return [seg for d in dirs for seg in sorted(d.glob("*.log"))]

    def log_tail(self, lines: int = _TAIL_LINES) -> str:
        """The last lines of the broker's ``server.log``."""
        return tail(self.paths.server_log, lines)

    def is_running(self) -> bool:
        if self._process is not None:
            return self._process.poll() is None
        return _is_our_broker(self.pid, self.paths)

    def stop(self, timeout_s: float | None = None) -> None:
        """Stop the broker: SIGTERM (controlled shutdown), SIGKILL after ``timeout_s``.

        Idempotent; returns once the process is gone. Only this work folder's broker process
        is signalled.
        """
        wait_s = self.config.stop_timeout.seconds if timeout_s is None else timeout_s
        if self.is_running():
            self._signal(signal.SIGTERM)
            if not self._wait_gone(wait_s):
                self._signal(signal.SIGKILL)
                if not self._wait_gone(10.0):
                    raise BrokerError(f"broker pid {self.pid} survived SIGKILL")
        elif self._process is not None:
            self._process.wait()
        self.paths.state_file.unlink(missing_ok=True)

    def _signal(self, sig: signal.Signals) -> None:
        if self._process is not None:
            self._process.send_signal(sig)
            return
        if _is_our_broker(self.pid, self.paths):
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def _wait_gone(self, timeout_s: float) -> bool:
        if self._process is not None:
            try:
                self._process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                return False
            return True
        deadline = time.monotonic() + timeout_s
        while _is_our_broker(self.pid, self.paths):
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_S)
        return True

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


# --------------------------------------------------------------------------- broker


class Broker:
    """Formats, starts and finds the harness broker described by a :class:`BrokerConfig`."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.paths = BrokerPaths(resolve_path(config.work_dir) / config.name)
        self.jars_dir = resolve_path(config.jars_dir)

    def attach(self) -> BrokerHandle | None:
        """The running broker of this work folder, or None (a stale ``broker.json`` is removed)."""
        state = _read_json(self.paths.state_file)
        ends = _load_endpoints(self.paths)
        if state is None or ends is None:
            return None
        pid = int(str(state["pid"]))
        if not _is_our_broker(pid, self.paths):
            self.paths.state_file.unlink(missing_ok=True)
            return None
        return BrokerHandle(
            self.config, self.paths, ends, pid, credentials=_load_credentials(self.paths)
        )

    @property
    def secured(self) -> bool:
        return self.config.listener_security == SASL_PLAINTEXT

    def _credentials(self) -> Credentials | None:
        """The super user of a secured broker: kept with the data, generated with it."""
        if not self.secured:
            return None
        saved = _load_credentials(self.paths)
        if saved is not None and saved.user == self.config.super_user:
            return saved
        if self.paths.formatted:
            raise BrokerError(
                f"{self.paths.data_dir} was formatted without SCRAM credentials for"
                f" {self.config.super_user!r}; start fresh (--fresh) to secure it"
            )
        created = Credentials(self.config.super_user, random_secrets.token_urlsafe(24))
        _write_private(
            self.paths.credentials_file,
            json.dumps({"user": created.user, "password": created.password}) + "\n",
        )
        return created

    def start(self, *, fresh: bool = False, tie_to_parent: bool = False) -> BrokerHandle:
        """Format (first time) and start the broker, and wait until it serves metadata.

        Args:
            fresh: delete the work folder first (new cluster, empty topics, new ports).
            tie_to_parent: have Linux SIGTERM the broker when the calling thread's process
                dies (for test fixtures; not for ``kafka-up``, whose broker outlives it).

        Returns:
            The handle of the running broker.

        Raises:
            BrokerAlreadyRunningError: this work folder's broker is already running.
            BrokerError: the data folder is formatted but its ``ports.json`` is missing.
            BrokerStartError: formatting or startup failed or timed out; the message holds the
                log tail. The JVM is stopped before this is raised.
            MissingJarsError: ``build/jvm/kafka`` is not resolved yet.
        """
        cp = classpath(self.jars_dir, required=("kafka_2.13", "log4j-slf4j2-impl"))
        if self.attach() is not None:
            raise BrokerAlreadyRunningError(
                f"a broker already runs on {self.paths.root}; stop it first (make kafka-down)"
            )
        if fresh and self.paths.root.exists():
            shutil.rmtree(self.paths.root)
        self.paths.logs_dir.mkdir(parents=True, exist_ok=True)
        if self.paths.formatted and _load_endpoints(self.paths) is None:
            raise BrokerError(
                f"{self.paths.data_dir} is formatted but {self.paths.ports_file.name} is gone, so"
                " its cluster id and controller endpoint are unknown; start fresh (--fresh)"
            )
        for attempt in range(1, _START_ATTEMPTS + 1):
            fresh_data = not self.paths.formatted
            ends = self._endpoints(reuse=not fresh_data)
            try:
                return self._start_once(cp, ends, tie_to_parent=tie_to_parent)
            except BrokerStartError as exc:
                auto_ports = not (self.config.port or self.config.controller_port)
                if not (_PORT_IN_USE in exc.log_tail and auto_ports and fresh_data):
                    raise
                if attempt == _START_ATTEMPTS:
                    raise
                # Someone took a chosen port before the JVM bound it: new ports need a new
                # quorum (the controller endpoint is recorded at format time).
                shutil.rmtree(self.paths.data_dir, ignore_errors=True)
                self.paths.ports_file.unlink(missing_ok=True)
        # The loop returns or raises on its last attempt.
        raise RuntimeError(
            f"broker did not start in {_START_ATTEMPTS} attempts"
        )  # pragma: no cover

    def _endpoints(self, *, reuse: bool) -> Endpoints:
        cfg = self.config
        saved = _load_endpoints(self.paths) if reuse else None
        if saved is not None:
            return Endpoints(
                cfg.host,
                cfg.port or saved.port,
                cfg.controller_port or saved.controller_port,
                saved.cluster_id,
            )
        port = cfg.port or free_port(cfg.host)
        controller = cfg.controller_port or free_port(cfg.host)
        while controller == port:
            controller = free_port(cfg.host)
        return Endpoints(cfg.host, port, controller, new_cluster_id())

    def _java(
        self, cp: str, main_class: str, *args: str, log4j: Path | str, short_lived: bool = False
    ) -> list[str]:
        # A one-shot tool spends its life starting up, and C1-only compilation starts faster
        # (docs/benchmarks.md, "Measurements behind design choices").
        jit = ["-XX:TieredStopAtLevel=1"] if short_lived else []
        krb5 = self.config.kerberos_krb5_conf
        kerberos = [f"-Djava.security.krb5.conf={resolve_path(krb5)}"] if krb5 else []
        return [
            java_executable(),
            *jit,
            *kerberos,
            f"-Xmx{self.config.heap}",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j}",
            f"-Dkafka.logs.dir={self.paths.logs_dir}",
            "-cp",
            cp,
            main_class,
            *args,
        ]

    def _format(self, cp: str, ends: Endpoints, credentials: Credentials | None) -> None:
        scram: list[str] = []
        if credentials is not None:
            # KIP-900: the super user's SCRAM credential goes into the bootstrap metadata, so
            # the inter-broker listener can log in before any AdminClient could create it.
            scram = [
                "--add-scram",
                f"{SCRAM_MECHANISM}=[name={credentials.user},password={credentials.password}]",
            ]
        cmd = self._java(
            cp,
            "kafka.tools.StorageTool",
            "format",
            "--standalone",
            "--cluster-id",
            ends.cluster_id,
            "--config",
            str(self.paths.properties),
            *scram,
            log4j=tools_log4j_config(),
            short_lived=True,
        )
        result = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)
        if result.returncode != 0:
            output = (result.stdout + result.stderr).strip()
            raise BrokerStartError(
                f"formatting {self.paths.data_dir} failed (StorageTool exit {result.returncode})",
                "\n".join(output.splitlines()[-_TAIL_LINES:]),
            )

    def _start_once(self, cp: str, ends: Endpoints, *, tie_to_parent: bool) -> BrokerHandle:
        credentials = self._credentials()
        props = server_properties(self.config, self.paths, ends, credentials)
        _write_properties(self.paths.properties, props)
        if not self.paths.formatted:
            self.paths.data_dir.mkdir(parents=True, exist_ok=True)
            self._format(cp, ends, credentials)
        _write_json(
            self.paths.ports_file,
            {
                "host": ends.host,
                "port": ends.port,
                "controller_port": ends.controller_port,
                "cluster_id": ends.cluster_id,
            },
        )
        log_start = self.paths.server_log.stat().st_size if self.paths.server_log.exists() else 0
        log4j = str(broker_log4j_config())
        if credentials is not None:
            self.paths.authorizer_log4j.write_text(_AUTHORIZER_LOG4J, encoding="utf-8")
            # Log4j2 merges a comma-separated list of files into one composite configuration.
            log4j = f"{log4j},{self.paths.authorizer_log4j}"
        cmd = self._java(cp, "kafka.Kafka", str(self.paths.properties), log4j=log4j)
        preexec: Callable[[], None] | None = None
        if tie_to_parent and sys.platform.startswith("linux"):
            preexec = _tie_to_parent
        with self.paths.stdout_log.open("ab") as out:
            process = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.paths.root,
                # Its own session: a Ctrl-C meant for the caller does not reach the JVM; the
                # caller's cleanup stops it in order.
                start_new_session=True,
                preexec_fn=preexec,  # noqa: PLW1509
            )
        handle = BrokerHandle(
            self.config, self.paths, ends, process.pid, process, credentials=credentials
        )
        _write_json(
            self.paths.state_file,
            {"pid": process.pid, "bootstrap": ends.bootstrap, "started_by": os.getpid()},
        )
        try:
            self._wait_ready(handle, process, log_start)
        except BaseException:
            handle.stop(timeout_s=5.0)
            raise
        return handle

    def _wait_ready(
        self, handle: BrokerHandle, process: subprocess.Popen[bytes], log_start: int
    ) -> None:
        deadline = time.monotonic() + self.config.startup_timeout.seconds
        started = False
        while True:
            code = process.poll()
            if code is not None:
                raise BrokerStartError(
                    f"broker exited with code {code} during startup", self._start_tail(log_start)
                )
            if not started:
                started = _log_contains(self.paths.server_log, _READY_LINE, log_start)
            if started and self.config.listener_security == SASL_PLAINTEXT_GSSAPI:
                return  # no Python client can ask it for metadata (see the module docstring)
            if started and _metadata_ready(handle.bootstrap, 2.0, handle.credentials):
                return
            if time.monotonic() >= deadline:
                raise BrokerStartError(
                    f"broker not ready after {self.config.startup_timeout}",
                    self._start_tail(log_start),
                )
            time.sleep(_POLL_S)

    def _start_tail(self, log_start: int) -> str:
        parts = [tail(self.paths.server_log, _TAIL_LINES, start=log_start)]
        stdout = tail(self.paths.stdout_log, 20)
        if stdout:
            parts.append(f"--- {self.paths.stdout_log.name} ---\n{stdout}")
        return "\n".join(p for p in parts if p)


# --------------------------------------------------------------------------- DumpLogSegments


@contextlib.contextmanager
def throwaway(config: BrokerConfig) -> Iterator[tuple[Broker, BrokerHandle]]:
    """A fresh broker of its own for one test or check: started tied to this process, stopped
    (if still running) and its folder deleted on the way out."""
    broker = Broker(config)
    handle = broker.start(fresh=True, tie_to_parent=True)
    try:
        yield broker, handle
    finally:
        running = broker.attach()
        if running is not None:
            running.stop()
        shutil.rmtree(broker.paths.root, ignore_errors=True)


class DumpLogError(BrokerError):
    """Kafka's DumpLogSegments exited with an error; the message holds its stderr."""


DECODER_FLAGS = {
    "offsets": "--offsets-decoder",
    "transaction": "--transaction-log-decoder",
    "share": "--share-group-state-decoder",
}


def dump_log_command(
    files: Sequence[Path | str],
    decoder: str | None = "offsets",
    *,
    config: BrokerConfig | None = None,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The ``java ... DumpLogSegments`` command line :func:`run_dump_log` runs (benchmarks time it).

    Raises:
        ValueError: no files, an unknown decoder, or a path containing a comma (the tool
            takes a comma-separated list).
        MissingJarsError: ``build/jvm/kafka-tools`` is not resolved yet.
    """
    cfg = config or BrokerConfig()
    if not files:
        raise ValueError("DumpLogSegments needs at least one file")
    names = [str(Path(f).resolve()) for f in files]
    if any("," in name for name in names):
        raise ValueError("DumpLogSegments cannot take a path containing ','")
    args = ["--files", ",".join(names)]
    if decoder is not None:
        if decoder not in DECODER_FLAGS:
            raise ValueError(f"decoder must be one of {sorted(DECODER_FLAGS)} or None")
        args.append(DECODER_FLAGS[decoder])
    args.extend(extra_args)
    cp = classpath(resolve_path(cfg.tools_jars_dir), required=("kafka-tools",))
    return [
        java_executable(),
        "-Xmx512m",
        f"-Dlog4j2.configurationFile={tools_log4j_config()}",
        "-cp",
        cp,
        "org.apache.kafka.tools.DumpLogSegments",
        *args,
    ]


def run_dump_log(
    files: Sequence[Path | str],
    decoder: str | None = "offsets",
    *,
    config: BrokerConfig | None = None,
    extra_args: Sequence[str] = (),
    timeout_s: float = 300.0,
) -> str:
    """Run Kafka's ``DumpLogSegments`` on segment files and return what it prints.

    The tool reads the files directly (the broker may be running or not). It runs from
    ``broker.tools_jars_dir`` (see :func:`tools_version` for which Kafka release that is: the
    transaction-log decoder prints ``transactionStatus`` as a number before 4.4 and as the
    state name from 4.4 on, KAFKA-20712).

    Args:
        files: ``.log`` segment files (also ``.index``/``.timeindex``), dumped in this order.
        decoder: ``"offsets"`` (``--offsets-decoder``, for ``__consumer_offsets``),
            ``"transaction"`` (``--transaction-log-decoder``, for ``__transaction_state``), or
            None for the plain batch/record listing.
        config: the broker configuration naming the tools folder (default: ``[broker]``
            defaults).
        extra_args: further DumpLogSegments options, e.g. ``("--skip-record-metadata",)``.
        timeout_s: the JVM is killed after this long.

    Returns:
        The tool's stdout (``Dumping <file>`` / ``Log starting offset: N`` / batch and record
        lines).

    Raises:
        DumpLogError: the tool failed.
        ValueError: no files, an unknown decoder, or a path containing a comma (the tool
            takes a comma-separated list).
        MissingJarsError: ``build/jvm/kafka-tools`` is not resolved yet.
    """
    cmd = dump_log_command(files, decoder, config=config, extra_args=extra_args)
    result = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout_s)
    if result.returncode != 0:
        raise DumpLogError(
            f"DumpLogSegments exit {result.returncode}: {result.stderr.strip()[-4000:]}"
        )
    return result.stdout


def tools_version(config: BrokerConfig | None = None) -> str:
    """The Kafka release DumpLogSegments runs from (the ``kafka-tools`` jar's version)."""
    cfg = config or BrokerConfig()
    return artifact_version(resolve_path(cfg.tools_jars_dir), "kafka-tools")


def broker_version(config: BrokerConfig | None = None) -> str:
    """The Kafka release the harness broker runs (the ``kafka_2.13`` jar's version)."""
    cfg = config or BrokerConfig()
    return artifact_version(resolve_path(cfg.jars_dir), "kafka_2.13")


# --------------------------------------------------------------------------- CLI


def _describe(handle: BrokerHandle) -> Iterator[str]:
    yield f"bootstrap={handle.bootstrap}"
    yield f"controller={handle.endpoints.host}:{handle.controller_port}"
    yield f"pid={handle.pid}"
    yield f"cluster_id={handle.cluster_id}"
    if handle.credentials is not None:
        yield (
            f"security={SASL_PLAINTEXT} {SCRAM_MECHANISM}, super user {handle.credentials.user}"
            f" (password in {handle.paths.credentials_file})"
        )
    yield f"log_dir={handle.log_dir}"
    yield f"server_log={handle.server_log}"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m offsetscope.verify.harness.broker up|down|status``.

    Exit codes: 0 success (``status``: running), 1 failure, 3 ``status``: not running.
    """
    parser = argparse.ArgumentParser(
        prog="python -m offsetscope.verify.harness.broker",
        description="Start, stop or inspect the project's single-node Kafka broker.",
    )
    parser.add_argument("command", choices=["up", "down", "status"])
    parser.add_argument("--env", default="local", help="configuration environment (conf/<env>)")
    parser.add_argument("--conf", type=Path, help="extra TOML file overlaid last")
    parser.add_argument("--name", help="broker name (folder under broker.work_dir)")
    parser.add_argument("--fresh", action="store_true", help="up: wipe the data first")
    parser.add_argument("--wipe", action="store_true", help="down: delete the work folder")
    args = parser.parse_args(argv)

    cfg = config_mod.load(args.env, extra=args.conf).broker
    if args.name:
        cfg = dataclasses.replace(cfg, name=args.name)
    broker = Broker(cfg)
    running = broker.attach()

    if args.command == "status":
        if running is None:
            print(f"broker {cfg.name}: not running ({broker.paths.root})")
            return 3
        print(f"broker {cfg.name}: running")
        for line in _describe(running):
            print(f"  {line}")
        return 0

    if args.command == "down":
        if running is not None:
            running.stop()
            print(f"broker {cfg.name}: stopped (pid {running.pid})")
        else:
            print(f"broker {cfg.name}: not running")
        if args.wipe and broker.paths.root.exists():
            shutil.rmtree(broker.paths.root)
            print(f"broker {cfg.name}: removed {broker.paths.root}")
        return 0

    if running is not None:
        if args.fresh:
            print(f"broker {cfg.name}: running; `down` it before starting fresh", file=sys.stderr)
            return 1
        print(f"broker {cfg.name}: already running")
        for line in _describe(running):
            print(f"  {line}")
        return 0
    began = time.monotonic()
    try:
        handle = broker.start(fresh=args.fresh)
    except BrokerError as exc:
        print(f"broker {cfg.name}: {exc}", file=sys.stderr)
        return 1
    print(f"broker {cfg.name}: ready in {time.monotonic() - began:.1f} s")
    for line in _describe(handle):
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
