"""Round trips for every version of every schema, with values generated from the field tables."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offsetscope.protocol import codec, errors
from offsetscope.protocol import consumer_protocol as cp
from offsetscope.protocol.kraft_control import KRAFT_CONTROL_MESSAGES
from offsetscope.protocol.records import CoordinatorRecord, UnknownRecord
from offsetscope.protocol.registry import INTERNAL_TOPICS, RECORD_TYPES
from offsetscope.protocol.schema import Field, Message

_INT_BOUNDS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
_text = st.text(max_size=12)


def _scalar(typ: str) -> st.SearchStrategy[Any]:
    if typ in _INT_BOUNDS:
        lo, hi = _INT_BOUNDS[typ]
        return st.integers(lo, hi)
    if typ == "bool":
        return st.booleans()
    if typ == "uuid":
        return st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))
    if typ == "string":
        return _text
    if typ == "bytes":
        return st.binary(max_size=12)
    raise AssertionError(typ)


def _field(f: Field, version: int) -> st.SearchStrategy[Any]:
    if f.is_array:
        element = _struct(f.fields, version) if f.is_struct else _scalar(f.element_type)
        values: st.SearchStrategy[Any] = st.lists(element, max_size=3)
    elif f.is_struct:
        values = _struct(f.fields, version)
    else:
        values = _scalar(f.type)
    if f.is_nullable_in(version):
        values = st.none() | values
    return values


def _struct(fields: tuple[Field, ...], version: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {f.json_name: _field(f, version) for f in fields if f.present_in(version)}
    )


def data_for(message: Message, version: int) -> st.SearchStrategy[dict[str, Any]]:
    """Dicts holding every field of ``message`` at ``version``, values of the right types."""
    return _struct(message.fields, version)


CASES = [(rt.topic, rt.id, v) for rt in RECORD_TYPES for v in rt.value.versions]
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(("topic", "type_id", "version"), CASES)
@SETTINGS
@given(data=st.data())
def test_record_round_trip(topic: str, type_id: int, version: int, data: st.DataObject) -> None:
    rt = next(r for r in RECORD_TYPES if r.topic == topic and r.id == type_id)
    key = data.draw(data_for(rt.key, 0))
    value = data.draw(data_for(rt.value, version))
    record = codec.make_record(topic, type_id, key, value, version)
    key_bytes, value_bytes = codec.encode_record(record)
    decoded = codec.decode_record(topic, key_bytes, value_bytes)
    assert isinstance(decoded, CoordinatorRecord)
    assert decoded.key == key
    assert decoded.value == value
    # decode then encode is byte-identical
    assert codec.encode_record(decoded) == (key_bytes, value_bytes)


EMBEDDED = [(m, v) for m in (cp.SUBSCRIPTION, cp.ASSIGNMENT) for v in m.versions] + [
    (m, v) for _, m in KRAFT_CONTROL_MESSAGES.values() for v in m.versions
]


@pytest.mark.parametrize(("message", "version"), EMBEDDED, ids=lambda x: str(getattr(x, "name", x)))
@SETTINGS
@given(data=st.data())
def test_message_round_trip(message: Message, version: int, data: st.DataObject) -> None:
    value = data.draw(data_for(message, version))
    encoded = message.encode(value, version)
    assert message.decode(encoded, version) == value
    assert message.encode(message.decode(encoded, version), version) == encoded


@pytest.mark.parametrize("topic", INTERNAL_TOPICS)
@settings(max_examples=400, deadline=None)
@given(key=st.binary(max_size=40), value=st.none() | st.binary(max_size=80))
def test_random_bytes_raise_only_decode_errors(topic: str, key: bytes, value: bytes | None) -> None:
    outcome = _decode_or_error(topic, key, value)
    if isinstance(outcome, errors.DecodeError):
        assert outcome.path.startswith(("key", "value"))
        assert 0 <= outcome.offset <= max(len(key), len(value or b""))
    else:
        assert isinstance(outcome, CoordinatorRecord | UnknownRecord)


def _decode_or_error(
    topic: str, key: bytes, value: bytes | None
) -> CoordinatorRecord | UnknownRecord | errors.DecodeError:
    try:
        return codec.decode_record(topic, key, value)
    except errors.DecodeError as exc:
        return exc


@pytest.mark.parametrize(("topic", "type_id", "version"), CASES)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_mutated_valid_records_raise_only_decode_errors(
    topic: str, type_id: int, version: int, data: st.DataObject
) -> None:
    rt = next(r for r in RECORD_TYPES if r.topic == topic and r.id == type_id)
    record = codec.make_record(
        topic,
        type_id,
        data.draw(data_for(rt.key, 0)),
        data.draw(data_for(rt.value, version)),
        version,
    )
    key, value = codec.encode_record(record)
    assert value is not None
    pos = data.draw(st.integers(0, len(value) - 1))
    flipped = value[:pos] + bytes([value[pos] ^ data.draw(st.integers(1, 255))]) + value[pos + 1 :]
    outcome = _decode_or_error(topic, key, flipped)
    if isinstance(outcome, errors.DecodeError):
        assert outcome.path.startswith("value")
