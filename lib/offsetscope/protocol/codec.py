"""Decode and encode one internal-topic record (key and value bytes).

This is Kafka's ``CoordinatorRecordSerde`` in both directions::

    key   = int16 record_type | key message (version 0, non-flexible)
    value = int16 version     | value message at that version   -- or null: a tombstone

Policy (``docs/design.md``, "Conventions"): an unknown record type, or a value version the
type's schema does not define, is not an error -- it yields an :class:`UnknownRecord` with the
raw bytes (Kafka logs and skips such records). Malformed bytes raise a
:class:`~offsetscope.protocol.errors.DecodeError` whose path starts with ``key`` or ``value``
and whose offset is relative to that buffer.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

from offsetscope.protocol import errors
from offsetscope.protocol.records import CoordinatorRecord, DecodedRecord, UnknownRecord
from offsetscope.protocol.registry import (
    BY_TOPIC,
    INTERNAL_TOPICS,
    RecordType,
    record_type,
)

_INT16 = struct.Struct(">h")


def decode_record(topic: str, key: bytes | None, value: bytes | None) -> DecodedRecord:
    """Decode one record of ``__consumer_offsets``, ``__transaction_state`` or ``__share_group_state``.

    Args:
        topic: which internal topic's schemas apply (mirror topics map to their source name).
        key: the record key (coordinator records always have one).
        value: the record value; ``None`` is a tombstone.

    Returns:
        A :class:`CoordinatorRecord`, or an :class:`UnknownRecord` for an unknown record type or
        value version.

    Raises:
        DecodeError: the bytes are malformed; ``path``/``offset`` say where.
    """
    types = BY_TOPIC.get(topic)
    if types is None:
        raise ValueError(f"{topic!r} is not an internal topic ({', '.join(INTERNAL_TOPICS)})")
    if key is None:
        raise errors.NullNotAllowedError("coordinator records always have a key", "key", 0)
    if len(key) < 2:
        raise errors.TruncatedError("key.recordType", 0, 2, len(key))
    (type_id,) = _INT16.unpack_from(key, 0)
    rt = types.get(type_id)
    if rt is None:
        return UnknownRecord(
            topic,
            type_id,
            _version_of(value),
            bytes(key),
            _opt_bytes(value),
            f"unknown record type {type_id}",
        )
    key_data = _run(rt.key.reader(0), key, "key", rt.key.name, 0)
    if value is None:
        return CoordinatorRecord(topic, type_id, rt.key.name, key_data, None, None, None)
    if len(value) < 2:
        raise errors.TruncatedError("value.version", 0, 2, len(value))
    (version,) = _INT16.unpack_from(value, 0)
    if version not in rt.value.valid_range:
        return UnknownRecord(
            topic,
            type_id,
            version,
            bytes(key),
            bytes(value),
            f"{rt.value.name} has no version {version} (known: {rt.value.valid})",
        )
    value_data = _run(rt.value.reader(version), value, "value", rt.value.name, version)
    return CoordinatorRecord(
        topic, type_id, rt.key.name, key_data, rt.value.name, version, value_data
    )


# Readers and writers come from the schema tables, generated on first use (``Message.reader``
# caches them): a command that decodes one topic needs a few of the hundred or so.
Reader = Callable[[bytes, int], tuple[dict[str, Any], int]]


def _run(reader: Reader, buf: bytes, side: str, name: str, version: int) -> dict[str, Any]:
    try:
        data, pos = reader(buf, 2)
    except errors.DecodeError as exc:
        raise exc.relocated(side, 0) from None
    if pos != len(buf):
        raise errors.TrailingBytesError(
            f"{len(buf) - pos} bytes left after {name} v{version}", side, pos
        )
    return data


def _version_of(value: bytes | None) -> int | None:
    if value is None or len(value) < 2:
        return None
    return int(_INT16.unpack_from(value, 0)[0])


def _opt_bytes(value: bytes | None) -> bytes | None:
    return None if value is None else bytes(value)


def encode_record(record: CoordinatorRecord) -> tuple[bytes, bytes | None]:
    """Serialise a record to ``(key, value)`` bytes exactly as Kafka's serde does."""
    rt = _type_of(record.topic, record.record_type)
    key = bytearray(_INT16.pack(rt.id))
    rt.key.writer(0)(record.key, key)
    if record.value is None:
        return bytes(key), None
    version = record.value_version
    if version is None:
        raise ValueError(f"{rt.value.name}: a non-tombstone record needs a value version")
    value = bytearray(_INT16.pack(version))
    rt.value.writer(version)(record.value, value)  # raises UnsupportedVersionError
    return bytes(key), bytes(value)


def make_record(
    topic: str,
    type_id: int,
    key: Mapping[str, Any],
    value: Mapping[str, Any] | None,
    value_version: int | None = None,
) -> CoordinatorRecord:
    """Build a :class:`CoordinatorRecord`, filling the schema names from the record type.

    ``value=None`` makes a tombstone. ``value_version`` defaults to the newest version.
    """
    rt = _type_of(topic, type_id)
    if value is None:
        return CoordinatorRecord(topic, type_id, rt.key.name, key, None, None, None)
    if value_version is None:
        value_version = rt.value.versions[-1]
    if value_version not in rt.value.valid_range:
        raise errors.UnsupportedVersionError(rt.value.name, value_version)
    return CoordinatorRecord(topic, type_id, rt.key.name, key, rt.value.name, value_version, value)


def _type_of(topic: str, type_id: int) -> RecordType:
    rt = record_type(topic, type_id)
    if rt is None:
        raise errors.UnknownRecordTypeError(type_id)
    return rt
