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
from functools import cache
from typing import Any, Self, TypeVar

T = TypeVar("T")


def to_jsonable(obj: Any) -> Any:
    """Turn a dataclass tree into JSON-ready values (dicts, lists, scalars)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, tuple | list):
        return [to_jsonable(v) for v in obj]
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    raise TypeError(f"cannot serialise {type(obj).__name__}")


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_jsonable(tp: Any, data: Any) -> Any:
    """Rebuild a value of type ``tp`` from :func:`to_jsonable` output."""
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        if data is None:
            return None
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(options) != 1:
            raise TypeError(f"only X | None unions are supported, got {tp}")
        return from_jsonable(options[0], data)
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_jsonable(args[0], v) for v in data)
        if len(args) != len(data):
            raise TypeError(f"{tp} needs {len(args)} items, got {len(data)}")
        return tuple(from_jsonable(a, v) for a, v in zip(args, data, strict=True))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = _hints(tp)
        return tp(**{name: from_jsonable(hints[name], data[name]) for name in data})
    if tp in (int, str, bool):
        if not isinstance(data, tp) or (tp is int and isinstance(data, bool)):
            raise TypeError(f"expected {tp.__name__}, got {data!r}")
        return data
    if tp is float:
        return float(data)
    if tp is typing.Any:
        return data
    raise TypeError(f"unsupported type {tp}")


def dumps(obj: Any) -> str:
    """Compact, key-ordered JSON text of a dataclass tree (identical values -> identical text)."""
    return json.dumps(to_jsonable(obj), separators=(",", ":"), sort_keys=True)


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
