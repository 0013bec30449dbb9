"""JSON form of fold states and output rows: frozen dataclasses <-> plain JSON values.

The pipeline keeps each fold's state between micro-batches (a Delta state table or Spark's
``applyInPandasWithState``), so a state must survive a text round trip exactly. The mapping is
driven by the dataclasses' type hints, never by hand-written per-class code::

    dataclass        -> JSON object (field name -> value)
    tuple[X, ...]    -> JSON array          tuple[A, B] -> JSON array of fixed length
    X | None         -> value or null       int / str / bool / float -> as is

Only these shapes are used by ``offsetscope.history``; anything else is a programming error and
raises ``TypeError`` at the first use.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Callable
from functools import cache
from typing import Any, Self, TypeVar

T = TypeVar("T")


def to_jsonable(obj: Any) -> Any:
    """Turn a dataclass tree into JSON-ready values (dicts, lists, scalars)."""
    kind = type(obj)
    if kind in _SCALARS or obj is None:  # most values: no reflection
        return obj
    if kind in _FIELD_NAMES or (dataclasses.is_dataclass(obj) and not isinstance(obj, type)):
        return {n: to_jsonable(getattr(obj, n)) for n in _field_names(kind)}
    if isinstance(obj, tuple | list):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, bool | int | float | str):
        return obj
    raise TypeError(f"cannot serialise {type(obj).__name__}")


_SCALARS = frozenset({bool, int, float, str})


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_jsonable(tp: Any, data: Any) -> Any:
    """Rebuild a value of type ``tp`` from :func:`to_jsonable` output."""
    return _reader(tp)(data)


Reader = Callable[[Any], Any]


@cache
def _reader(tp: Any) -> Reader:
    """The function rebuilding values of ``tp``, worked out from its type hints once per type:
    a state of thousands of values would otherwise ask ``typing`` about every one of them. A
    type or union that cannot be read fails when a value reaches it, as it always did."""
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(options) != 1:
            return _fails(f"only X | None unions are supported, got {tp}", unless_none=True)
        inner = _reader(options[0])
        return lambda data: None if data is None else inner(data)
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            item = _reader(args[0])
            return lambda data: tuple(map(item, data))
        readers = [_reader(a) for a in args]

        def fixed(data: Any) -> tuple[Any, ...]:
            if len(readers) != len(data):
                raise TypeError(f"{tp} needs {len(readers)} items, got {len(data)}")
            return tuple(r(v) for r, v in zip(readers, data, strict=True))

        return fixed
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass_reader(tp)
    if tp in (int, str, bool):
        wanted: type = tp

        def scalar(data: Any) -> Any:
            if type(data) is not wanted and (
                not isinstance(data, wanted) or (wanted is int and isinstance(data, bool))
            ):
                raise TypeError(f"expected {wanted.__name__}, got {data!r}")
            return data

        return scalar
    if tp is float:
        return float
    if tp is typing.Any:
        return lambda data: data
    return _fails(f"unsupported type {tp}")


def _dataclass_reader(cls: type) -> Reader:
    # The fields' readers are looked up at the first value, not here: a dataclass may refer to
    # itself through its fields.
    fields: dict[str, Reader] = {}

    def read(data: Any) -> Any:
        if not fields:
            fields.update({n: _reader(t) for n, t in _hints(cls).items()})
        return cls(**{name: fields[name](value) for name, value in data.items()})

    return read


def _fails(message: str, *, unless_none: bool = False) -> Reader:
    def fail(data: Any) -> Any:
        if unless_none and data is None:
            return None
        raise TypeError(message)

    return fail


def dumps(obj: Any) -> str:
    """Compact, key-ordered JSON text of a dataclass tree (identical values -> identical text):
    that of :func:`to_jsonable`'s values. The C encoder walks the tuples and scalars itself and
    asks :func:`_shallow` only for each dataclass; a fold state holds thousands of values, and
    walking them in Python first costs several times the encoding."""
    return _ENCODER.encode(obj)


def _shallow(obj: Any) -> dict[str, Any]:
    """One dataclass as a mapping of its fields in name order, left as they are (the encoder's
    ``default``)."""
    kind = type(obj)
    names = _SORTED_NAMES.get(kind)
    if names is None:
        if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
            raise TypeError(f"cannot serialise {kind.__name__}")
        names = _SORTED_NAMES[kind] = tuple(sorted(_field_names(kind)))
    return {n: getattr(obj, n) for n in names}


# Keys are ordered by :func:`_shallow`, once per class, not sorted again for every object: the
# only mappings in the tree are the dataclasses' (a dict is no shape of the module docstring).
# check_circular off: frozen dataclasses of tuples cannot hold themselves.
_ENCODER = json.JSONEncoder(
    separators=(",", ":"), sort_keys=False, default=_shallow, check_circular=False
)


def loads(cls: type[T], text: str) -> T:
    """Inverse of :func:`dumps` for dataclass ``cls``."""
    value: T = from_jsonable(cls, json.loads(text))
    return value


class JsonState:
    """Mixin giving a frozen state dataclass ``to_json()`` / ``from_json()``."""

    __slots__ = ()

    def to_json(self) -> str:
        """The state as compact JSON text, for the pipeline's state store."""
        return dumps(self)

    @classmethod
    def from_json(cls, text: str) -> Self:
        """Rebuild a state written by :meth:`to_json`."""
        return loads(cls, text)


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}
_SORTED_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def evolve(obj: T, **changes: Any) -> T:
    """A copy of frozen dataclass ``obj`` with ``changes``: ``dataclasses.replace``, cheaper.

    ``replace`` re-validates the field list on every call; on the folds' hot paths (a row
    re-emitted per record) that is most of the cost. This builds the copy positionally through
    the normal ``__init__``.
    """
    cls: type[Any] = type(obj)
    copy: T = cls(*[changes[n] if n in changes else getattr(obj, n) for n in _field_names(cls)])
    return copy
