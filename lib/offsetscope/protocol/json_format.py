"""Kafka's JSON renderings of coordinator records, field for field.

Two shapes exist in Kafka 4.4 (``docs/formats.md`` section 9):

* the console formatters (``OffsetsMessageFormatter``, ``TransactionLogMessageFormatter`` ...)::

      {"key":{"type":1,"data":{...}},"value":{"version":3,"data":{...}}}     (null value: "value":null)

* ``DumpLogSegments --offsets-decoder`` / ``--transaction-log-decoder``, which print the record
  type and version as JSON *strings*, ``<DELETE>`` for a tombstone, and decode the embedded
  consumer-protocol subscription and assignment of ``GroupMetadataValue`` members when the
  group's ``protocolType`` is ``consumer`` (keeping the Base64 text when that parse fails).

Both use Kafka's generated JSON converters: fields in declaration order, only the fields of the
record's version, tagged fields only when they differ from their default, ``bytes`` as standard
Base64 with padding, ``uuid`` as URL-safe Base64 without padding, and (4.4+)
``transactionStatus`` as the state name. Serialisation is compact, like Jackson's
``ObjectNode.toString()``.
"""

from __future__ import annotations

import base64
import functools
import json
import struct
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from offsetscope.protocol import consumer_protocol as cp
from offsetscope.protocol import errors
from offsetscope.protocol.records import CoordinatorRecord
from offsetscope.protocol.registry import record_type
from offsetscope.protocol.schema import Field, Message
from offsetscope.protocol.states import transaction_status_name


def uuid_to_kafka(u: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe Base64 without padding (22 characters)."""
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode("ascii")


def uuid_from_kafka(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def message_json(message: Message, version: int, data: Mapping[str, Any]) -> dict[str, Any]:
    """Render ``data`` (a decoded message at ``version``) as Kafka's JSON converter does."""
    rendered: dict[str, Any] = _renderer(message.fields, version)(data)
    return rendered


Render = Callable[[Any], Any]
_RENDERERS: dict[tuple[int, int], Render] = {}


def _renderer(fields: Sequence[Field], version: int) -> Render:
    """A function rendering one struct of ``fields`` at ``version``; built once per layout.

    Fields in declaration order, only those of the version; a tagged field is left out when it
    equals its default.
    """
    key = (id(fields), version)
    hit = _RENDERERS.get(key)
    if hit is not None:
        return hit
    plan = [
        (
            f.json_name,
            f.default_value(version),
            f.is_tagged_in(version),
            _value_renderer(f, version),
        )
        for f in fields
        if f.present_in(version)
    ]

    def render(data: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for json_name, default, tagged, conv in plan:
            value = data.get(json_name, default)
            if tagged and value == default:
                continue
            out[json_name] = value if conv is None or value is None else conv(value)
        return out

    _RENDERERS[key] = render
    return render


def _value_renderer(f: Field, version: int) -> Render | None:
    if f.is_struct:
        inner = _renderer(f.fields, version)
        return (lambda items: [inner(i) for i in items]) if f.is_array else inner
    scalar = _SCALAR_RENDER.get(f.element_type)
    if scalar is None:
        return None
    return (lambda items: [scalar(i) for i in items]) if f.is_array else scalar


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


_SCALAR_RENDER: dict[str, Render] = {"bytes": _b64, "uuid": uuid_to_kafka}


def _value_payload(record: CoordinatorRecord, *, decode_blobs: bool) -> dict[str, Any]:
    rt = record_type(record.topic, record.record_type)
    if rt is None or record.value is None or record.value_version is None:
        raise ValueError("a decoded, non-tombstone record is required")
    data = message_json(rt.value, record.value_version, record.value)
    if rt.value.name == "TransactionLogValue":
        data["transactionStatus"] = transaction_status_name(record.value["transactionStatus"])
    if decode_blobs and rt.value.name == "GroupMetadataValue":
        _decode_member_blobs(data, record.value)
    return data


def _decode_member_blobs(data: dict[str, Any], raw: Mapping[str, Any]) -> None:
    """DumpLogSegments' ``prepareGroupMetadataValue``: decode blobs of ``consumer`` groups."""
    if data.get("protocolType") != cp.PROTOCOL_TYPE:
        return
    for member_json, member in zip(data.get("members", []), raw.get("members", []), strict=True):
        sub = _member_blob_json(_SUBSCRIPTION, member["subscription"])
        if sub is not None:
            member_json["subscription"] = sub
        asg = _member_blob_json(_ASSIGNMENT, member["assignment"])
        if asg is not None:
            member_json["assignment"] = asg


_SUBSCRIPTION, _ASSIGNMENT = "subscription", "assignment"
_BLOB_MESSAGES = {_SUBSCRIPTION: cp.SUBSCRIPTION, _ASSIGNMENT: cp.ASSIGNMENT}


@functools.lru_cache(maxsize=4096)
def _member_blob_json(kind: str, blob: bytes) -> dict[str, Any] | None:
    """:func:`kafka_blob_json`, remembered: a group's GroupMetadata record is rewritten at every
    rebalance with every member, and a member's subscription (often its assignment too) is the
    same bytes each time. The result is shared between records, so it is only ever read."""
    return kafka_blob_json(_BLOB_MESSAGES[kind], blob)


_INT16 = struct.Struct(">h")


def kafka_blob_json(message: Message, blob: bytes) -> dict[str, Any] | None:
    """Parse a version-prefixed consumer-protocol blob the way DumpLogSegments does.

    Kafka reads the int16 version and hands the rest to the generated reader *at that version*:
    fields are guarded by ``version >= n``, so a newer version reads with the newest layout, a
    negative one with the v0 layout, and trailing bytes are ignored. Any failure (a truncated or
    zero-length blob) returns ``None``: the caller keeps the Base64 text.
    """
    if len(blob) < 2:
        return None
    (version,) = _INT16.unpack_from(blob, 0)
    layout = min(max(version, 0), message.versions[-1])
    try:
        data, _ = message.reader(layout)(blob, 2)
    except errors.DecodeError:
        return None
    return message_json(message, layout, data)


def console_json(record: CoordinatorRecord, *, decode_blobs: bool = True) -> dict[str, Any]:
    """The console-formatter envelope ``{"key":{"type":..},"value":{"version":..}|null}``."""
    rt = record_type(record.topic, record.record_type)
    if rt is None:
        raise ValueError(f"unknown record type {record.record_type}")
    key = {"type": record.record_type, "data": message_json(rt.key, 0, record.key)}
    if record.value is None:
        return {"key": key, "value": None}
    value = {
        "version": record.value_version,
        "data": _value_payload(record, decode_blobs=decode_blobs),
    }
    return {"key": key, "value": value}


def dump_log_key(record: CoordinatorRecord) -> str:
    """The ``key: ...`` text of a DumpLogSegments record line."""
    rt = record_type(record.topic, record.record_type)
    if rt is None:
        raise ValueError(f"unknown record type {record.record_type}")
    return dumps({"type": str(record.record_type), "data": message_json(rt.key, 0, record.key)})


def dump_log_payload(record: CoordinatorRecord) -> str:
    """The ``payload: ...`` text of a DumpLogSegments record line (``<DELETE>`` for tombstones)."""
    if record.value is None:
        return "<DELETE>"
    data = _value_payload(record, decode_blobs=True)
    return dumps({"version": str(record.value_version), "data": data})


def dumps(obj: Any) -> str:
    """Compact JSON as Jackson writes it (no spaces, UTF-8 characters unescaped)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
