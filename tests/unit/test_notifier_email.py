"""The email notifier against a real SMTP server on loopback (aiosmtpd): STARTTLS and TLS from
the start with a certificate made for the test, login with credentials resolved from
references, transient replies retried, permanent ones final, a server that never answers."""

from __future__ import annotations

import datetime as dt
import email
import ipaddress
import re
import socket
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from service_doubles import T, alert

from offsetscope import config, logs
from offsetscope.alerts.notifiers import EmailNotifier, build_notifiers
from offsetscope.alerts.notify import DELIVERED, FAILED, OPENED, RESOLVED, AlertEvent
from offsetscope.clock import VirtualClock

USER = "alerts@example.com"
PASSWORD = "smtp-pa55-w0rd-value"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (cert, key), which the client is told to trust."""
    folder = tmp_path_factory.mktemp("tls")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@dataclass
class Mailbox:
    """What the server received, and what it answers to DATA (the last answer repeats)."""

    answers: list[str] = field(default_factory=lambda: ["250 Message accepted for delivery"])
    messages: list[Message] = field(default_factory=list)
    envelopes: list[Envelope] = field(default_factory=list)
    logins: list[tuple[bytes, bool]] = field(default_factory=list)  # (login, over TLS)
    attempts: int = 0

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        self.attempts += 1
        answer = self.answers[min(self.attempts, len(self.answers)) - 1]
        if answer.startswith("250"):
            self.envelopes.append(envelope)
            self.messages.append(email.message_from_bytes(envelope.content or b""))
        return answer


def authenticator(
    server: SMTP, session: Session, envelope: Envelope, mechanism: str, data: Any
) -> AuthResult:
    ok = isinstance(data, LoginPassword) and (data.login, data.password) == (
        USER.encode(),
        PASSWORD.encode(),
    )
    if isinstance(data, LoginPassword):
        mailbox: Mailbox = server.event_handler
        over_tls = server.transport.get_extra_info("ssl_object") is not None
        mailbox.logins.append((data.login, over_tls))
    return AuthResult(success=ok, handled=False)


@pytest.fixture(params=["starttls", "tls"])
def smtp_server(
    request: pytest.FixtureRequest, certificate: tuple[Path, Path]
) -> Iterator[tuple[str, int, Mailbox]]:
    """(security, port, mailbox): an SMTP server that requires TLS before login."""
    cert, key = certificate
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    mailbox = Mailbox()
    port = free_port()
    tls: dict[str, Any] = {"tls_context": context, "require_starttls": True}
    if request.param == "tls":
        # TLS from the first byte: aiosmtpd's auth_require_tls looks for a STARTTLS only.
        tls = {"ssl_context": context, "auth_require_tls": False}
    controller = Controller(
        mailbox,
        hostname="127.0.0.1",
        port=port,
        authenticator=authenticator,
        server_hostname="smtp.test",
        **tls,
    )
    controller.start()
    try:
        yield request.param, port, mailbox
    finally:
        controller.stop()


def notifier(security: str, port: int, ca_file: Path | None, **kw: Any) -> EmailNotifier:
    settings: dict[str, Any] = {
        "host": "127.0.0.1",
        "port": port,
        "security": security,
        "sender": "offsetscope@example.com",
        "recipients": ("oncall@example.com", "kafka@example.com"),
        "username": "env:SMTP_USER",
        "password": "env:SMTP_PASSWORD",
        "ca_file": str(ca_file) if ca_file else "",
        "timeout": "5s",
        "backoff": "10ms",
    }
    settings.update(kw)
    section = config.EmailConfig(**settings)
    return EmailNotifier("oncall", section, USER, PASSWORD, clock=VirtualClock(T))


def test_delivers_over_tls_after_login(
    smtp_server: tuple[str, int, Mailbox], certificate: tuple[Path, Path]
) -> None:
    security, port, mailbox = smtp_server
    n = notifier(security, port, certificate[0])
    n.submit(AlertEvent(OPENED, alert()))
    n.submit(AlertEvent(RESOLVED, alert(status="resolved")))
    outcomes = n.close(timeout_s=30)
    assert [(o.status, o.attempts, o.http_status, o.notifier) for o in outcomes] == [
        (DELIVERED, 1, 250, "email:oncall")
    ] * 2
    assert mailbox.logins == [(USER.encode(), True)] * 2  # logged in, and only over TLS
    opened = mailbox.messages[0]
    assert opened["Subject"] == "[offsetscope] CRITICAL rebalance_storm opened: group payments"
    assert opened["From"] == "offsetscope@example.com"
    assert opened["To"] == "oncall@example.com, kafka@example.com"
    assert mailbox.envelopes[0].rcpt_tos == ["oncall@example.com", "kafka@example.com"]
    body = opened.get_payload(decode=True).decode().replace("\r\n", "\n")
    assert "group payments: 7 rebalances within 10m (more than 5)" in body
    assert re.search(r"^Alert id: +a{32}$", body, re.MULTILINE)
    assert "Resolved:" in mailbox.messages[1].get_payload(decode=True).decode()


def test_a_transient_reply_is_retried_and_a_permanent_one_is_final(
    smtp_server: tuple[str, int, Mailbox], certificate: tuple[Path, Path]
) -> None:
    security, port, mailbox = smtp_server
    mailbox.answers = ["451 4.3.0 Mailbox temporarily unavailable", "250 OK"]
    n = notifier(security, port, certificate[0])
    n.submit(AlertEvent(OPENED, alert()))
    (delivered,) = n.close(timeout_s=30)
    assert (delivered.status, delivered.attempts) == (DELIVERED, 2)
    mailbox.answers, mailbox.attempts = ["554 5.7.1 Message rejected"], 0
    n = notifier(security, port, certificate[0])
    n.submit(AlertEvent(OPENED, alert()))
    (refused,) = n.close(timeout_s=30)
    assert (refused.status, refused.attempts, refused.http_status) == (FAILED, 1, 554)
    assert refused.error == "SMTP 554: 5.7.1 Message rejected"


def test_an_untrusted_certificate_fails_without_sending_the_password(
    smtp_server: tuple[str, int, Mailbox],
) -> None:
    security, port, mailbox = smtp_server
    n = notifier(security, port, None)  # the system's CAs do not know the test's certificate
    n.submit(AlertEvent(OPENED, alert()))
    (outcome,) = n.close(timeout_s=30)
    assert (outcome.status, outcome.attempts) == (FAILED, 1)
    assert (outcome.error or "").startswith("TLS failed")
    assert "CERTIFICATE_VERIFY_FAILED" in (outcome.error or "")
    assert mailbox.logins == []


def test_a_wrong_password_is_final_and_never_logged(
    smtp_server: tuple[str, int, Mailbox],
    certificate: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    logs.configure(config.LoggingConfig(level="DEBUG"))
    security, port, mailbox = smtp_server
    cfg = config.from_mapping(
        config.AlertsConfig,
        {
            "notify": {
                "log": False,
                "email": {
                    "oncall": {
                        "host": "127.0.0.1",
                        "port": port,
                        "security": security,
                        "sender": "offsetscope@example.com",
                        "recipients": ["oncall@example.com"],
                        "username": "env:SMTP_USER",
                        "password": "env:SMTP_PASSWORD",
                        "ca_file": str(certificate[0]),
                    }
                },
            }
        },
    )
    wrong = "not-the-pa55word"
    from offsetscope.secrets.references import Resolver

    resolver = Resolver(environ={"SMTP_USER": USER, "SMTP_PASSWORD": wrong})
    (n,) = build_notifiers(cfg, resolver.resolve)
    n.submit(AlertEvent(OPENED, alert()))
    (outcome,) = n.close(timeout_s=30)
    assert (outcome.status, outcome.attempts, outcome.http_status) == (FAILED, 1, 535)
    logged = capsys.readouterr().err
    assert "email:oncall: opened event of alert" in logged
    assert wrong not in logged + repr(outcome) + repr(n)
    assert mailbox.messages == []


def test_a_server_that_never_answers_times_out_and_is_retried() -> None:
    connections: list[socket.socket] = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            connections.append(conn)  # held open, no greeting ever sent

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        n = notifier("starttls", listener.getsockname()[1], None, timeout="300ms", max_attempts=2)
        n.submit(AlertEvent(OPENED, alert()))
        (outcome,) = n.close(timeout_s=30)
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in connections:
            conn.close()
        listener.close()
    assert (outcome.status, outcome.attempts, outcome.error) == (
        FAILED,
        2,
        "no answer within 0.3 s",
    )
    assert len(connections) == 2


def test_a_password_over_a_plain_connection_is_refused_at_load() -> None:
    with pytest.raises(config.InvalidConfigError, match="only over starttls or tls") as bad:
        config.from_mapping(
            config.EmailConfig,
            {
                "host": "relay",
                "sender": "a@example.com",
                "recipients": ["b@example.com"],
                "security": "none",
                "username": "env:U",
                "password": "env:P",
            },
        )
    assert bad.value.key_path == "security"
