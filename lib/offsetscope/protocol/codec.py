"""Decode and encode one internal-topic record (key and value bytes).

This is Kafka's ``CoordinatorRecordSerde`` in both directions::

    key   = int16 record_type | key message (version 0, non-flexible)
    value = int16 version     | value message at that version   -- or null: a tombstone

Policy (``DESIGN.md``, convention 3): an unknown record type, or a value version the type's
schema does not define, is not an error -- it yields an :class:`UnknownRecord` with the raw bytes
(Kafka logs and skips such records). Malformed bytes raise a
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
from offsetscope.protocol.schema import Message

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
    key_codec = _codec(rt.key, 0)
    assert key_codec is not None  # keys are version 0
    key_data = _run(key_codec[0], key, "key", rt.key.name, 0)
    if value is None:
        return CoordinatorRecord(topic, type_id, rt.key.name, key_data, None, None, None)
    if len(value) < 2:
        raise errors.TruncatedError("value.version", 0, 2, len(value))
    (version,) = _INT16.unpack_from(value, 0)
    value_codec = _codec(rt.value, version)
    if value_codec is None:
        return UnknownRecord(
            topic,
            type_id,
            version,
            bytes(key),
            bytes(value),
            f"{rt.value.name} has no version {version} (known: {rt.value.valid})",
        )
    value_data = _run(value_codec[0], value, "value", rt.value.name, version)
    return CoordinatorRecord(
        topic, type_id, rt.key.name, key_data, rt.value.name, version, value_data
    )


Reader = Callable[[bytes, int], tuple[dict[str, Any], int]]
Writer = Callable[[Mapping[str, Any], bytearray], None]

# Readers and writers are generated on first use, not at import: the schema tables hold about
# a hundred (message, version) pairs, and a command that decodes one topic needs a few of them.
_CODECS: dict[tuple[int, int], tuple[Reader, Writer]] = {}


def _codec(message: Message, version: int) -> tuple[Reader, Writer] | None:
    """``message``'s reader and writer at ``version``; None for a version it does not have."""
    key = (id(message), version)
    hit = _CODECS.get(key)
    if hit is None:
        if version not in message.valid_range:
            return None
        hit = _CODECS[key] = (message.reader(version), message.writer(version))
    return hit


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
    key_codec = _codec(rt.key, 0)
    assert key_codec is not None  # keys are version 0
    key = bytearray(_INT16.pack(rt.id))
    key_codec[1](record.key, key)
    if record.value is None:
        return bytes(key), None
    version = record.value_version
    value_codec = _codec(rt.value, version) if version is not None else None
    if value_codec is None:
        if version is None:
            raise ValueError(f"{rt.value.name}: a non-tombstone record needs a value version")
        raise errors.UnsupportedVersionError(rt.value.name, version)
    value = bytearray(_INT16.pack(version))
    value_codec[1](record.value, value)
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
