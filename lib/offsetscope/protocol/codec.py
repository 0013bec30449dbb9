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
from dataclasses import dataclass
from typing import Any

from offsetscope.protocol import errors
from offsetscope.protocol.records import CoordinatorRecord, DecodedRecord, UnknownRecord
from offsetscope.protocol.registry import (
    BY_TOPIC,
    INTERNAL_TOPICS,
    RECORD_TYPES,
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
    types = _READERS.get(topic)
    if types is None:
        raise ValueError(f"{topic!r} is not an internal topic ({', '.join(INTERNAL_TOPICS)})")
    if key is None:
        raise errors.NullNotAllowedError("coordinator records always have a key", "key", 0)
    if len(key) < 2:
        raise errors.TruncatedError("key.recordType", 0, 2, len(key))
    (type_id,) = _INT16.unpack_from(key, 0)
    readers = types.get(type_id)
    if readers is None:
        return UnknownRecord(
            topic,
            type_id,
            _version_of(value),
            bytes(key),
            _opt_bytes(value),
            f"unknown record type {type_id}",
        )
    rt = readers.record_type
    key_data = _run(readers.key, key, "key", rt.key.name, 0)
    if value is None:
        return CoordinatorRecord(topic, type_id, rt.key.name, key_data, None, None, None)
    if len(value) < 2:
        raise errors.TruncatedError("value.version", 0, 2, len(value))
    (version,) = _INT16.unpack_from(value, 0)
    reader = readers.values.get(version)
    if reader is None:
        return UnknownRecord(
            topic,
            type_id,
            version,
            bytes(key),
            bytes(value),
            f"{rt.value.name} has no version {version} (known: {rt.value.valid})",
        )
    value_data = _run(reader, value, "value", rt.value.name, version)
    return CoordinatorRecord(
        topic, type_id, rt.key.name, key_data, rt.value.name, version, value_data
    )


Reader = Callable[[bytes, int], tuple[dict[str, Any], int]]


@dataclass(frozen=True, slots=True)
class _TypeReaders:
    record_type: RecordType
    key: Reader
    values: dict[int, Reader]


def _build_readers() -> dict[str, dict[int, _TypeReaders]]:
    out: dict[str, dict[int, _TypeReaders]] = {}
    for topic, types in BY_TOPIC.items():
        out[topic] = {
            type_id: _TypeReaders(
                rt, rt.key.reader(0), {v: rt.value.reader(v) for v in rt.value.versions}
            )
            for type_id, rt in types.items()
        }
    return out


_READERS = _build_readers()


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
    writers = _WRITERS.get((record.topic, record.record_type))
    if writers is None:
        _type_of(record.topic, record.record_type)  # raises the precise error
        raise AssertionError("unreachable")
    key = bytearray(writers.key_prefix)
    writers.key(record.key, key)
    if record.value is None:
        return bytes(key), None
    version = record.value_version
    write = writers.values.get(version) if version is not None else None
    if write is None:
        name = writers.record_type.value.name
        if version is None:
            raise ValueError(f"{name}: a non-tombstone record needs a value version")
        raise errors.UnsupportedVersionError(name, version)
    value = bytearray(_INT16.pack(version))
    write(record.value, value)
    return bytes(key), bytes(value)


Writer = Callable[[Mapping[str, Any], bytearray], None]


@dataclass(frozen=True, slots=True)
class _TypeWriters:
    record_type: RecordType
    key_prefix: bytes
    key: Writer
    values: dict[int, Writer]


_WRITERS: dict[tuple[str, int], _TypeWriters] = {
    (rt.topic, rt.id): _TypeWriters(
        rt, _INT16.pack(rt.id), rt.key.writer(0), {v: rt.value.writer(v) for v in rt.value.versions}
    )
    for rt in RECORD_TYPES
}


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
