"""Secret references and their resolution.

**References.** A setting that holds a secret is written in ``conf/`` as a reference and
checked for that form at load (:func:`offsetscope.config.require_reference`)::

    env:NAME            the environment variable NAME
    secret:scope/key    key ``key`` of the Databricks secret scope ``scope``
                        (``dbutils.secrets.get``; only where a Databricks runtime runs)

A :class:`Resolver` turns references into values *at the edge*: when a job builds its Kafka
options or an AdminClient configuration. The frozen :class:`~offsetscope.config.Config` only
ever holds references, so ``repr(cfg)`` is safe to log. Every resolved value is registered with
:mod:`offsetscope.redaction`, which then masks it wherever our code logs or raises. A missing
variable or secret raises :class:`SecretNotFoundError` naming the key path and the reference,
never a value."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from offsetscope import redaction
from offsetscope.config import (
    SECRET_REFERENCE,
    InvalidConfigError,
)

DATABRICKS_RUNTIME_VARIABLE = "DATABRICKS_RUNTIME_VERSION"


class SecretNotFoundError(InvalidConfigError):
    """A secret reference could not be resolved; the message names the key and the reference.

    Attributes:
        reference: the reference text (``env:NAME`` / ``secret:scope/key``), never a value.
    """

    def __init__(self, key_path: str, reference: str, message: str) -> None:
        super().__init__(key_path, f"{reference}: {message}")
        self.reference = reference


@dataclass(frozen=True, slots=True)
class Reference:
    """A parsed secret reference: ``env:NAME`` or ``secret:scope/key``."""

    kind: str  # "env" | "secret"
    name: str  # variable name, or scope
    key: str = ""

    def __str__(self) -> str:
        return f"env:{self.name}" if self.kind == "env" else f"secret:{self.name}/{self.key}"


def parse_reference(value: str) -> Reference | None:
    """The reference ``value`` spells, or None for a literal value."""
    match = SECRET_REFERENCE.match(value)
    if match is None:
        return None
    if match.group("env") is not None:
        return Reference("env", match.group("env"))
    return Reference("secret", match.group("scope"), match.group("key"))


class SecretStore(Protocol):
    """Where ``secret:scope/key`` references are looked up."""

    def get(self, scope: str, key: str) -> str:
        """The secret's value; raises if the scope or key does not exist."""
        ...


class DatabricksSecrets:
    """``dbutils.secrets`` of a Databricks runtime as a :class:`SecretStore`."""

    def __init__(self, dbutils: Any) -> None:
        self.dbutils = dbutils

    def get(self, scope: str, key: str) -> str:
        return str(self.dbutils.secrets.get(scope=scope, key=key))


class Resolver:
    """Resolves references from the environment and (on Databricks) a secret scope.

    Args:
        environ: the variables ``env:`` reads (default: ``os.environ``, read at each call).
        store: where ``secret:`` is read; None outside Databricks.
        registry: where resolved values are registered for redaction.
    """

    def __init__(
        self,
        environ: Mapping[str, str] | None = None,
        store: SecretStore | None = None,
        registry: redaction.SecretRegistry | None = None,
    ) -> None:
        self._environ = environ
        self.store = store
        self.registry = registry

    def __repr__(self) -> str:
        return f"Resolver(store={type(self.store).__name__ if self.store else None})"

    def resolve(self, value: str, key_path: str) -> str:
        """``value`` itself, or the secret it references.

        Raises:
            SecretNotFoundError: the variable is unset or empty, no secret store is available,
                or the store has no such secret.
        """
        ref = parse_reference(value)
        if ref is None:
            return value
        if ref.kind == "env":
            environ = os.environ if self._environ is None else self._environ
            resolved = environ.get(ref.name)
            if resolved is None:
                raise SecretNotFoundError(
                    key_path, str(ref), f"environment variable {ref.name} is not set"
                )
            if not resolved:
                raise SecretNotFoundError(
                    key_path, str(ref), f"environment variable {ref.name} is empty"
                )
        else:
            resolved = self._from_store(ref, key_path)
        redaction.register_secret(resolved, self.registry)
        return resolved

    def _from_store(self, ref: Reference, key_path: str) -> str:
        if self.store is None:
            raise SecretNotFoundError(
                key_path,
                str(ref),
                "secret scopes are read with dbutils.secrets on a Databricks runtime; none is"
                f" available here ({DATABRICKS_RUNTIME_VARIABLE} is not set). Use env:NAME"
                " outside Databricks",
            )
        try:
            resolved = self.store.get(ref.name, ref.key)
        # dbutils raises Py4J and Java errors of many kinds; all mean "not readable here".
        except Exception as exc:  # noqa: BLE001
            # The store's own message may quote what it found; keep only its kind.
            raise SecretNotFoundError(
                key_path,
                str(ref),
                f"secret scope {ref.name!r} has no readable key {ref.key!r} ({type(exc).__name__})",
            ) from None
        if not resolved:
            raise SecretNotFoundError(key_path, str(ref), "the secret is empty")
        return resolved


def on_databricks(environ: Mapping[str, str] | None = None) -> bool:
    """True inside a Databricks runtime (its clusters set ``DATABRICKS_RUNTIME_VERSION``)."""
    return DATABRICKS_RUNTIME_VARIABLE in (os.environ if environ is None else environ)


def resolver_for(spark: Any | None = None, dbutils: Any | None = None) -> Resolver:
    """The resolver of a job: environment variables, plus secret scopes on Databricks.

    Args:
        spark: the job's SparkSession; on Databricks it yields ``dbutils`` when none is given.
        dbutils: the runtime's ``dbutils`` (notebooks have it as a global).
    """
    if dbutils is None and spark is not None and on_databricks():
        # Only a Databricks runtime ships pyspark.dbutils; nowhere else is it imported.
        from pyspark.dbutils import DBUtils

        dbutils = DBUtils(spark)
    return Resolver(store=DatabricksSecrets(dbutils) if dbutils is not None else None)
