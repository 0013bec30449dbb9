"""Users and ACLs on a secured harness broker, with confluent-kafka's AdminClient.

A secured broker (``[broker] listener_security = "SASL_PLAINTEXT"``, see
:mod:`offsetscope.verify.harness.broker`) lets nobody but its super user do anything until ACLs say
otherwise. This module, run as that super user, does what an operator does with
``kafka-configs.sh --alter --add-config SCRAM-SHA-512=[...] --entity-type users`` and
``kafka-acls.sh --add``:

* :func:`create_user` -- ``AlterUserScramCredentials`` (an upsertion: a random salt and the
  given iteration count; Kafka stores only the salted keys), then waits until the broker
  lists the user, so a login right after succeeds;
* :func:`grant` -- ``CreateAcls`` for :class:`~offsetscope.secrets.access.AclRule` lists (ALLOW,
  any host), then wait until the broker's ``DescribeAcls`` answer shows the change (the controller commits it; the broker's authorizer
  applies it from the metadata log a moment later);
* :func:`acls_of` -- a principal's ACLs as ``(resource type, name, pattern, operation)``;
* :func:`decisions` -- the authorizer's decisions for a principal, read from the broker's
  ``logs/authorizer.log`` (allowed and denied), to show what a client actually did.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

# The package re-exports these without declaring them; import from where they are typed.
from confluent_kafka.admin._acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
)
from confluent_kafka.admin._resource import ResourcePatternType, ResourceType
from confluent_kafka.admin._scram import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from offsetscope.secrets.access import AclRule
from offsetscope.verify.harness.broker import BrokerHandle, Credentials

# Kafka's default iteration count for SCRAM credentials (ScramCredentialUtils).
SCRAM_ITERATIONS = 4096
_POLL_S = 0.1

AclKey = tuple[str, str, str, str]  # resource type, name, pattern type, operation


class AclError(RuntimeError):
    """Creating a user or changing ACLs failed or did not take effect in time."""


def admin_client(broker: BrokerHandle) -> AdminClient:
    """An AdminClient logged in as the broker's super user (PLAINTEXT brokers: anonymous)."""
    conf: dict[str, str | int | float | bool] = {**broker.client_config()}
    return AdminClient(conf)


def create_user(
    admin: AdminClient,
    user: str,
    password: str,
    *,
    iterations: int = SCRAM_ITERATIONS,
    timeout_s: float = 30.0,
) -> Credentials:
    """Create (or reset) a SCRAM-SHA-512 user and wait until the broker knows it.

    Raises:
        AclError: the broker refused, or did not list the user within ``timeout_s``.
    """
    upsert = UserScramCredentialUpsertion(
        user,
        ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, iterations),
        password.encode("utf-8"),
    )
    try:
        admin.alter_user_scram_credentials([upsert], request_timeout=timeout_s)[user].result()
    except KafkaException as exc:
        raise AclError(f"creating SCRAM user {user!r} failed: {exc}") from None
    _wait(lambda: user in _scram_users(admin, user, timeout_s), f"user {user!r}", timeout_s)
    return Credentials(user, password)


def _scram_users(admin: AdminClient, user: str, timeout_s: float) -> set[str]:
    futures = admin.describe_user_scram_credentials([user], request_timeout=timeout_s)
    assert isinstance(futures, dict)  # a list of users gives one future per user
    found = set()
    for name, future in futures.items():
        try:
            future.result()
        except KafkaException as exc:
            # An unknown user is the answer (RESOURCE_NOT_FOUND), not a failure.
            if exc.args[0].code() != KafkaError.RESOURCE_NOT_FOUND:
                raise
            continue
        found.add(name)
    return found


def binding(rule: AclRule, principal: str) -> AclBinding:
    """The ALLOW binding (any host) of ``rule`` for ``principal`` (``User:name``)."""
    return AclBinding(
        ResourceType[rule.resource_type],
        rule.name,
        ResourcePatternType[rule.pattern],
        principal,
        "*",
        AclOperation[rule.operation],
        AclPermissionType.ALLOW,
    )


def _key(b: Any) -> AclKey:
    return (b.restype.name, b.name, b.resource_pattern_type.name, b.operation.name)


def _every_acl_of(principal: str) -> AclBindingFilter:
    # None matches any resource name and any host; the stubs type both as plain str.
    return AclBindingFilter(
        ResourceType.ANY,
        None,  # type: ignore[arg-type]
        ResourcePatternType.ANY,
        principal,
        None,  # type: ignore[arg-type]
        AclOperation.ANY,
        AclPermissionType.ANY,
    )


def acls_of(admin: AdminClient, principal: str, *, timeout_s: float = 30.0) -> set[AclKey]:
    """Every ACL of ``principal`` as ``(resource type, name, pattern type, operation)``."""
    result = admin.describe_acls(_every_acl_of(principal), request_timeout=timeout_s).result()
    return {_key(b) for b in result}


def grant(
    admin: AdminClient, principal: str, rules: Iterable[AclRule], *, timeout_s: float = 30.0
) -> set[AclKey]:
    """Create the ALLOW ACLs of ``rules`` for ``principal`` and wait until they apply.

    Returns:
        The principal's ACLs afterwards.

    Raises:
        AclError: the broker refused one, or it did not show up within ``timeout_s``.
    """
    bindings = [binding(r, principal) for r in rules]
    if not bindings:
        return acls_of(admin, principal, timeout_s=timeout_s)
    for b, future in admin.create_acls(bindings, request_timeout=timeout_s).items():
        try:
            future.result()
        except KafkaException as exc:
            raise AclError(f"creating {b} failed: {exc}") from None
    wanted = {_key(b) for b in bindings}
    _wait(lambda: wanted <= acls_of(admin, principal), f"ACLs of {principal}", timeout_s)
    return acls_of(admin, principal, timeout_s=timeout_s)


def _wait(condition: Any, what: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() >= deadline:
            raise AclError(f"{what}: not in effect after {timeout_s:.0f} s")
        time.sleep(_POLL_S)


# ----------------------------------------------------------------------------- decisions


@dataclass(frozen=True, slots=True)
class Decision:
    """One line of the authorizer log: who asked for what, and the answer."""

    principal: str
    allowed: bool
    operation: str  # READ, DESCRIBE, WRITE, CREATE, ...
    resource_type: str  # Topic, Group, Cluster, TransactionalId
    pattern: str  # LITERAL, PREFIXED
    name: str
    request: str  # Fetch, JoinGroup, ListOffsets, ...


# Kafka's AuthorizerLogger line: "Principal = User:x is Allowed operation = READ from host =
# 127.0.0.1 on resource = Topic:LITERAL:t for request = Fetch with resourceRefCount = 1 ...".
_DECISION = re.compile(
    r"Principal = (?P<principal>\S+) is (?P<answer>Allowed|Denied) operation = (?P<op>\S+)"
    r" from host = \S+ on resource = (?P<rtype>[A-Za-z]+):(?P<pattern>[A-Z]+):(?P<name>.*?)"
    r" for request = (?P<request>\w+)"
)


def log_size(path: Path) -> int:
    """The authorizer log's current size (a starting point for :func:`decisions`)."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def decisions(path: Path, principal: str | None = None, *, start: int = 0) -> list[Decision]:
    """The authorizer's decisions logged from byte ``start`` on, for ``principal`` (or all)."""
    try:
        with path.open("rb") as fh:
            fh.seek(start)
            text = fh.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return []
    out = []
    for m in _DECISION.finditer(text):
        if principal is not None and m.group("principal") != principal:
            continue
        out.append(
            Decision(
                m.group("principal"),
                m.group("answer") == "Allowed",
                m.group("op").upper(),
                m.group("rtype"),
                m.group("pattern"),
                m.group("name"),
                m.group("request"),
            )
        )
    return out


def operations(found: Sequence[Decision], *, allowed: bool = True) -> set[tuple[str, str, str]]:
    """``(operation, resource type, name)`` of the allowed (or denied) decisions."""
    return {(d.operation, d.resource_type, d.name) for d in found if d.allowed == allowed}
