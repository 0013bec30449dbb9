"""Redaction: secret values and secret-looking settings never reach logs, errors or tables.

Three rules, applied by :func:`redact` to text and to mappings alike:

1. **Known values.** Every secret :mod:`offsetscope.secrets` resolves is registered here
   (:func:`register_secret`) and masked wherever it appears, whatever surrounds it -- a Kafka
   error that echoes a JAAS line, a traceback, a repr.
2. **Secret-looking keys.** A setting whose name contains ``password``, ``passwd``, ``secret``,
   ``token``, ``jaas``, ``credential``, ``api key`` or ``private key`` (``sasl.password``,
   ``sasl.jaas.config``, ``ssl.key.password``, ``sasl.oauthbearer.client.secret``,
   ``webhook_token``) has its value masked: as a mapping key, as ``key=value``,
   ``key: value``, ``"key": "value"`` and JAAS ``key="value"`` in text. A value that is a secret
   *reference* (``env:NAME``, ``secret:scope/key``) is kept: it names where the secret is, which
   is what an operator needs to see, and is not the secret. A URL under such a key (an OAuth
   token endpoint) keeps its scheme, host and path and loses only credentials and query values.
3. **Credentials in URLs.** ``scheme://user:password@host`` keeps the user and loses the
   password; ``scheme://token@host`` loses the token; ``Bearer``/``Basic`` authorization values
   are masked; a webhook URL (host or path mentioning ``hook``, or a key naming a webhook) keeps
   only scheme and host, because services such as Slack put the credential in the path.

What is masked becomes :data:`MASK`. Values shorter than :data:`MIN_REGISTERED_LENGTH`
characters are not registered (masking every ``"ab"`` in every log line would destroy the
logs); rules 2 and 3 still mask them where their key or position shows what they are.

Logging: :class:`RedactingFilter` rewrites each record's message, arguments, exception and stack
text before a handler formats it; :func:`install` puts it on every handler of a logger (the root
logger by default). :class:`RedactingFormatter` redacts a handler's whole output instead, for
handlers whose filters are not ours to set. Exceptions: :func:`scrub` returns a redacted
stand-in for an exception whose text holds a secret, so the edge can re-raise that instead of
the original (whose message and traceback still hold it).
"""

from __future__ import annotations

import logging
import re
import threading
import traceback
from collections.abc import Iterable, Mapping
from typing import Any, overload
from urllib.parse import urlsplit, urlunsplit

from offsetscope.config import SECRET_REFERENCE

MASK = "***"
MIN_REGISTERED_LENGTH = 4

# Names of settings that hold secrets. ``token`` also matches ``token.endpoint.url`` (a URL,
# handled by the URL rule) and ``ssl.key.location`` does not match (a path is not a secret).
_SECRET_WORDS = (
    r"pass(?:word|wd|phrase)?|secret|token|jaas|credentials?|api[-_.]?key|private[-_.]?key"
    r"|webhook"
)
SECRET_KEY = re.compile(rf"(?i)(?:{_SECRET_WORDS})")
_URL_KEY = re.compile(r"(?i)(?:url|uri|endpoint|webhook)")
_WEBHOOK_KEY = re.compile(r"(?i)hook")

# A key token as it appears in text: dotted, dashed or underscored words.
_KEY = rf"[A-Za-z0-9_.\-]*(?:{_SECRET_WORDS})[A-Za-z0-9_.\-]*"
# "key": "value" / 'key': 'value' (JSON, Python reprs).
_QUOTED_PAIR = re.compile(
    rf"(?i)(?P<q1>[\"'])(?P<key>{_KEY})(?P=q1)(?P<sep>\s*[:=]\s*)(?P<q2>[\"'])"
    r"(?P<value>(?:\\.|(?!(?P=q2)).)*)(?P=q2)"
)
# key="value" (JAAS options, properties with quoted values).
_JAAS_PAIR = re.compile(
    rf"(?i)(?<![A-Za-z0-9_.\-\"'])(?P<key>{_KEY})(?P<sep>\s*=\s*)\"(?P<value>(?:\\.|[^\"\\])*)\""
)
# key=value / key: value, unquoted; the value ends at whitespace or a delimiter.
_PLAIN_PAIR = re.compile(
    rf"(?i)(?<![A-Za-z0-9_.\-\"'])(?P<key>{_KEY})(?P<sep>\s*(?:=|:\s)\s*)"
    r"(?P<value>[^\s,;&'\"}\])]+)"
)
_AUTH_HEADER = re.compile(r"(?i)\b(?P<scheme>bearer|basic)\s+(?P<value>[A-Za-z0-9._~+/=\-]{4,})")
_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s'\"<>]+")


class SecretRegistry:
    """The secret values to mask everywhere (thread-safe; values are never exposed)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None

    def __repr__(self) -> str:
        return f"SecretRegistry({len(self)} values)"

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)

    def add(self, value: str) -> None:
        """Mask ``value`` from now on (ignored if shorter than :data:`MIN_REGISTERED_LENGTH`)."""
        if len(value) < MIN_REGISTERED_LENGTH:
            return
        with self._lock:
            if value not in self._values:
                self._values.add(value)
                self._pattern = None

    def mask(self, text: str) -> str:
        """``text`` with every registered value replaced by :data:`MASK`."""
        with self._lock:
            if not self._values:
                return text
            if self._pattern is None:
                # Longest first, so a value containing another is masked whole.
                ordered = sorted(self._values, key=len, reverse=True)
                self._pattern = re.compile("|".join(re.escape(v) for v in ordered))
            pattern = self._pattern
        return pattern.sub(MASK, text)


REGISTRY = SecretRegistry()


def register_secret(value: str, registry: SecretRegistry | None = None) -> None:
    """Mask ``value`` in everything :func:`redact` sees from now on."""
    (registry or REGISTRY).add(value)


def is_secret_key(key: str) -> bool:
    """True if a setting named ``key`` holds a secret (see the module docstring)."""
    return SECRET_KEY.search(key) is not None


def is_reference(value: str) -> bool:
    """True if ``value`` is a secret reference (``env:NAME`` / ``secret:scope/key``)."""
    return SECRET_REFERENCE.match(value) is not None


def redact_url(url: str, *, webhook: bool = False) -> str:
    """``url`` without credentials: userinfo password (or token), query values, and -- for a
    webhook -- the path."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return MASK
    if not parts.scheme or host is None:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, has_password, _ = userinfo.partition(":")
        netloc = f"{user}:{MASK}@{hostport}" if has_password else f"{MASK}@{hostport}"
    path = parts.path
    if webhook or _WEBHOOK_KEY.search(parts.netloc) or _WEBHOOK_KEY.search(path):
        path = f"/{MASK}" if path not in ("", "/") else path
    query = parts.query
    if query:
        query = "&".join(
            f"{name}={MASK}" if sep else name
            for name, sep, _ in (item.partition("=") for item in query.split("&"))
        )
    fragment = MASK if parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, path, query, fragment))


def _value_for_key(key: str, value: str) -> str:
    """What a secret-looking key's value becomes."""
    if is_reference(value):
        return value
    if _URL.fullmatch(value) and _URL_KEY.search(key):
        return redact_url(value, webhook=_WEBHOOK_KEY.search(key) is not None)
    return MASK


def _pair(match: re.Match[str]) -> str:
    value = match.group("value")
    masked = _value_for_key(match.group("key"), value)
    start, end = match.span("value")
    offset = match.start()
    text = match.group(0)
    return text[: start - offset] + masked + text[end - offset :]


def _redact_text(text: str, registry: SecretRegistry) -> str:
    text = registry.mask(text)
    text = _QUOTED_PAIR.sub(_pair, text)
    text = _JAAS_PAIR.sub(_pair, text)
    text = _PLAIN_PAIR.sub(_pair, text)
    text = _AUTH_HEADER.sub(lambda m: f"{m.group('scheme')} {MASK}", text)
    return _URL.sub(lambda m: redact_url(m.group(0)), text)


def _redact_value(key: str | None, value: Any, registry: SecretRegistry) -> Any:
    if key is not None and is_secret_key(key):
        if isinstance(value, str):
            return _value_for_key(key, value)
        if isinstance(value, bytes | bytearray | int | float) and not isinstance(value, bool):
            return MASK
    if isinstance(value, str):
        return _redact_text(value, registry)
    if isinstance(value, Mapping):
        return {k: _redact_value(str(k), v, registry) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [_redact_value(None, v, registry) for v in value]
        return items if isinstance(value, list) else tuple(items)
    return value


@overload
def redact(value: str, registry: SecretRegistry | None = None) -> str: ...


@overload
def redact(value: Mapping[str, Any], registry: SecretRegistry | None = None) -> dict[str, Any]: ...


def redact(
    value: str | Mapping[str, Any], registry: SecretRegistry | None = None
) -> str | dict[str, Any]:
    """Text or a (nested) mapping with secrets masked (see the module docstring).

    Args:
        value: free text (a log line, an error message, a repr) or a settings mapping; nested
            mappings, lists and tuples inside a mapping are redacted too.
        registry: the registered values to mask (default: the process-wide registry).

    Returns:
        A redacted copy; the argument is not modified.
    """
    reg = registry or REGISTRY
    if isinstance(value, str):
        return _redact_text(value, reg)
    return {str(k): _redact_value(str(k), v, reg) for k, v in value.items()}


# ----------------------------------------------------------------------------- exceptions


class RedactedError(RuntimeError):
    """Stands in for an exception whose message held a secret; carries its redacted text.

    Attributes:
        original_type: qualified name of the exception it replaces.
    """

    def __init__(self, original_type: str, message: str) -> None:
        super().__init__(f"{original_type}: {message}")
        self.original_type = original_type


def scrub(exc: BaseException, registry: SecretRegistry | None = None) -> RedactedError | None:
    """A redacted stand-in for ``exc``, or None if its text and chain hold nothing to mask.

    The message, the chained causes and the traceback text are checked: a Py4J error carries
    the Java stack trace (and any echoed configuration) in its text.
    """
    full = "".join(traceback.format_exception(exc))
    if redact(full, registry) == full:
        return None
    kind = f"{type(exc).__module__}.{type(exc).__qualname__}"
    return RedactedError(kind, redact(str(exc), registry))


# ----------------------------------------------------------------------------- logging


class RedactingFilter(logging.Filter):
    """Redacts a record's message, exception and stack text in place; never drops a record."""

    def __init__(self, registry: SecretRegistry | None = None) -> None:
        super().__init__()
        self.registry = registry

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            message = f"{record.msg!r} {record.args!r}"
        record.msg = redact(message, self.registry)
        record.args = None
        if record.exc_info and record.exc_info[1] is not None:
            text = "".join(traceback.format_exception(record.exc_info[1]))
            record.exc_text = redact(text.rstrip("\n"), self.registry)
            # The formatter would print exc_info again from the live exception; exc_text wins
            # only when exc_info is cleared.
            record.exc_info = None
        elif record.exc_text:
            record.exc_text = redact(record.exc_text, self.registry)
        if record.stack_info:
            record.stack_info = redact(record.stack_info, self.registry)
        return True


class RedactingFormatter(logging.Formatter):
    """A formatter whose whole output is redacted (for handlers outside our control)."""

    def __init__(
        self,
        fmt: str | None = None,
        datefmt: str | None = None,
        registry: SecretRegistry | None = None,
    ) -> None:
        super().__init__(fmt, datefmt)
        self.registry = registry

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record), self.registry)


def install(
    logger: logging.Logger | None = None, handlers: Iterable[logging.Handler] = ()
) -> RedactingFilter:
    """Put one :class:`RedactingFilter` on every handler of ``logger`` and on ``handlers``.

    Filters on a handler see every record the handler emits, including records propagated
    from child loggers (a filter on a logger would not). Idempotent per handler.

    Returns:
        The filter (to install on handlers added later).
    """
    target = logger or logging.getLogger()
    chosen = [*target.handlers, *handlers]
    existing = next(
        (f for h in chosen for f in h.filters if isinstance(f, RedactingFilter)),
        None,
    )
    flt = existing or RedactingFilter()
    for handler in chosen:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(flt)
    return flt
