"""Decoded coordinator records: the typed result of reading one internal-topic record.

Framing (Kafka ``CoordinatorRecordSerde``, ``docs/formats.md`` section 2)::

    key   = int16 record_type | key body (always non-flexible, key layout version 0)
    value = int16 version     | value body at that version        (or null = tombstone)

The record type selects the key *and* the value schema; the value is never guessed from its own
bytes. Message payloads are plain dicts keyed by Kafka's JSON field names (``group``,
``protocolType``, ``members``, ``memberId`` ...), the shape Kafka's own formatters print, so the
same dict feeds the JSON output, the encoder (byte-identical round trip) and the Spark schema.
Scalar types: ints, ``str``, ``bytes`` (bytes fields), ``uuid.UUID`` (uuid fields), ``None``
(nulls); arrays are lists; structs are dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_TOPIC = "__transaction_state"

Data = dict[str, Any]


@dataclass(frozen=True, slots=True)
class CoordinatorRecord:
    """A decoded key/value pair of ``__consumer_offsets`` or ``__transaction_state``.

    ``value`` is ``None`` for a tombstone: the key's state was deleted (offset expired, group
    deleted, transactional id expired). Tombstones are first-class, never dropped.
    """

    topic: str
    record_type: int
    key_schema: str
    key: Mapping[str, Any]
    value_schema: str | None
    value_version: int | None
    value: Mapping[str, Any] | None

    @property
    def is_tombstone(self) -> bool:
        return self.value is None


@dataclass(frozen=True, slots=True)
class UnknownRecord:
    """A record whose type (or value version) this library does not know; its bytes are kept.

    Kafka's loader logs such records and skips them ("could be a left over from an aborted
    upgrade"); the pipeline keeps them as ``unknown`` rows so nothing is lost.
    """

    topic: str
    record_type: int | None
    value_version: int | None
    key_bytes: bytes
    value_bytes: bytes | None
    reason: str


DecodedRecord = CoordinatorRecord | UnknownRecord
