"""Redaction masks registered secret values, secret-looking settings and URL credentials in
text, mappings, log records and exceptions, and keeps references and ordinary text intact."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from offsetscope import redaction
from offsetscope.redaction import MASK, RedactedError, SecretRegistry, redact


@pytest.fixture
def registry() -> SecretRegistry:
    return SecretRegistry()


def test_registered_values_are_masked_anywhere(registry: SecretRegistry) -> None:
    registry.add("s3cr3t-value")
    text = "login failed for s3cr3t-value; retry with xs3cr3t-valuex later"
    assert redact(text, registry) == f"login failed for {MASK}; retry with x{MASK}x later"


def test_longer_registered_value_wins_over_its_prefix(registry: SecretRegistry) -> None:
    registry.add("abcd")
    registry.add("abcdefgh")
    assert redact("[abcdefgh] [abcd]", registry) == f"[{MASK}] [{MASK}]"


def test_short_values_are_not_registered(registry: SecretRegistry) -> None:
    registry.add("ab")
    assert len(registry) == 0
    assert redact("about a cab", registry) == "about a cab"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sasl.password=hunter22 next", f"sasl.password={MASK} next"),
        ("ssl.key.password: swordfish, ok", f"ssl.key.password: {MASK}, ok"),
        (
            '{"sasl.password": "x1", "sasl.username": "bob"}',
            f'{{"sasl.password": "{MASK}", "sasl.username": "bob"}}',
        ),
        ("{'webhook_token': 'abc', 'n': 1}", f"{{'webhook_token': '{MASK}', 'n': 1}}"),
        (
            'ScramLoginModule required username="bob" password="p\\"q\\\\";',
            f'ScramLoginModule required username="bob" password="{MASK}";',
        ),
        (
            'OAuthBearerLoginModule required clientId="app" clientSecret="zz";',
            f'OAuthBearerLoginModule required clientId="app" clientSecret="{MASK}";',
        ),
        ("Authorization: Bearer eyJhbGciOi.abc.def", f"Authorization: Bearer {MASK}"),
        (
            "https://alice:pw@kafka.example.com:9093/x",
            f"https://alice:{MASK}@kafka.example.com:9093/x",
        ),
        ("https://tok123@api.example.com/v1", f"https://{MASK}@api.example.com/v1"),
        ("https://hooks.slack.com/services/T1/B2/XYZ", f"https://hooks.slack.com/{MASK}"),
        (
            "see https://ops.example.com/api/webhooks/77/abc now",
            f"see https://ops.example.com/{MASK} now",
        ),
        (
            "https://api.example.com/v1/alerts?token=t0k&x=1",
            f"https://api.example.com/v1/alerts?token={MASK}&x={MASK}",
        ),
    ],
)
def test_secret_looking_text_is_masked(text: str, expected: str, registry: SecretRegistry) -> None:
    assert redact(text, registry) == expected


@pytest.mark.parametrize(
    "text",
    [
        "sasl.password=env:OFFSETSCOPE_KAFKA_PASSWORD",
        "client secret is secret:ops-scope/kafka.client",
        "ssl.key.location=/etc/kafka/client.pem sasl.username=bob",
        "group offsetscope-ingest-1 read 12 records from __consumer_offsets-3",
        "https://kafka.example.com:9093/health",
    ],
)
def test_references_and_ordinary_text_are_kept(text: str, registry: SecretRegistry) -> None:
    assert redact(text, registry) == text


def test_mapping_masks_by_key_and_keeps_references(registry: SecretRegistry) -> None:
    registry.add("registered-value")
    settings = {
        "sasl.password": "plain-literal",
        "sasl.jaas.config": 'x required password="y";',
        "sasl.oauthbearer.client.secret": "env:CLIENT_SECRET",
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example.com/oauth2/token",
        "bootstrap.servers": "broker:9092",
        "nested": {
            "webhook_url": "https://hooks.example.com/services/abc?sig=1",
            "api_key": 12345,
            "enabled": True,
            "notes": ["uses registered-value inside"],
        },
    }
    out = redact(settings, registry)
    assert out == {
        "sasl.password": MASK,
        "sasl.jaas.config": MASK,
        "sasl.oauthbearer.client.secret": "env:CLIENT_SECRET",
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example.com/oauth2/token",
        "bootstrap.servers": "broker:9092",
        "nested": {
            "webhook_url": f"https://hooks.example.com/{MASK}?sig={MASK}",
            "api_key": MASK,
            "enabled": True,
            "notes": [f"uses {MASK} inside"],
        },
    }
    # The argument is left as it was.
    assert settings["sasl.password"] == "plain-literal"


def test_secret_keys() -> None:
    secret = ["sasl.password", "ssl.key.password", "sasl.jaas.config", "oauth_client_secret"]
    secret += ["webhook_url", "api-key", "access_token", "credentials"]
    plain = ["sasl.username", "ssl.key.location", "bootstrap.servers", "group_id_prefix"]
    assert all(redaction.is_secret_key(k) for k in secret)
    assert not any(redaction.is_secret_key(k) for k in plain)


# ----------------------------------------------------------------------------- exceptions


def test_scrub_keeps_clean_exceptions_and_replaces_dirty_ones(registry: SecretRegistry) -> None:
    registry.add("pa55-w0rd-xyz")
    assert redaction.scrub(ValueError("nothing to hide"), registry) is None
    try:
        try:
            raise KeyError("inner pa55-w0rd-xyz")
        except KeyError as inner:
            raise RuntimeError("outer failure") from inner
    except RuntimeError as exc:
        # The secret is only in the cause: the chain is checked too.
        scrubbed = redaction.scrub(exc, registry)
    assert isinstance(scrubbed, RedactedError)
    assert scrubbed.original_type == "builtins.RuntimeError"
    assert "pa55-w0rd-xyz" not in str(scrubbed)
    assert str(scrubbed) == "builtins.RuntimeError: outer failure"


# ----------------------------------------------------------------------------- logging


@pytest.fixture
def captured() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    logger = logging.getLogger(f"offsetscope.test.redaction.{id(object())}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger.addHandler(handler)
    try:
        yield logger, stream
    finally:
        logger.removeHandler(handler)


def test_filter_redacts_messages_arguments_and_tracebacks(
    captured: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, stream = captured
    secret = "l0g-secret-9f2"
    redaction.register_secret(secret)
    flt = redaction.install(logger)
    assert redaction.install(logger) is flt  # idempotent: one filter per handler
    assert sum(isinstance(f, redaction.RedactingFilter) for f in logger.handlers[0].filters) == 1
    logger.info("connecting with %s", {"sasl.password": "literal-pw", "user": "bob"})
    logger.warning("value %s leaked", secret)
    try:
        raise ConnectionError(f"broker said: bad password {secret}")
    except ConnectionError:
        logger.exception("login failed")
    text = stream.getvalue()
    assert secret not in text
    assert "literal-pw" not in text
    assert "'user': 'bob'" in text
    assert "ConnectionError: broker said: bad password ***" in text
    assert text.count(MASK) >= 3


def test_formatter_redacts_whole_output() -> None:
    record = logging.LogRecord(
        "x", logging.INFO, __file__, 1, "token=%s", ("abc123",), None, func=None
    )
    formatter = redaction.RedactingFormatter("%(message)s", registry=SecretRegistry())
    assert formatter.format(record) == f"token={MASK}"


def test_json_of_redacted_settings_round_trips() -> None:
    out = redact({"sasl.password": "x", "a": [1, "b"]}, SecretRegistry())
    assert json.loads(json.dumps(out)) == {"sasl.password": MASK, "a": [1, "b"]}
