"""Read one message layout from a whole column of buffers at once: numpy over Arrow's buffers.

The per-record readers (:mod:`~offsetscope.protocol.schema`) read one buffer field by field.
:func:`walk` reads the same field tables for many buffers in lock step: every buffer has a cursor,
each field is one vectorised step over all of them, and an array of structs advances one element
at a time over the buffers that still have an element at that index. Nothing is laid out a second
time: the order, types, nullability, flexible encodings and tags all come from the tables.

Every buffer also has an ``ok`` flag. The walk keeps it only where the per-record reader would
decode the buffer without error and read the same values: a truncated field, a negative length
where null is not allowed, a varint over 5 bytes, a tagged field whose size does not match its
type, trailing bytes -- any of these clears it, and so does anything the walk does not cover
(more than :data:`MAX_ELEMENTS` structs in one array, which would take a step each). The caller
gives those buffers to the per-record reader, which reports errors with field path and offset.
UTF-8 is not checked here: the caller validates the Arrow arrays it builds.

Layouts covered (:func:`supported`): fixed-size scalars, strings and bytes, arrays of fixed-size
scalars, arrays of structs at the top level (whose fields are any of the others), and tagged
fixed-size scalars. Unknown tags are skipped, as the per-record reader's output drops them too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import pyarrow as pa

from offsetscope.protocol.log.columnar import gather_slices
from offsetscope.protocol.schema import Field, Message

# A record with a longer array of structs is read per record: the walk takes one step per
# element index, so one huge group would otherwise cost a step per member for the whole batch.
MAX_ELEMENTS: Final = 64

_WIDTH: Final = {"int8": 1, "int16": 2, "uint16": 2, "int32": 4, "int64": 8, "bool": 1}

# ----------------------------------------------------------------------------- numpy helpers


def be(data: np.ndarray, pos: np.ndarray, width: int, signed: bool = True) -> np.ndarray:
    """Big-endian integers of ``width`` bytes at positions ``pos`` (all in bounds)."""
    if len(pos) == 0:
        return np.zeros(0, dtype=np.int64)
    idx = pos[:, None] + np.arange(width)
    raw = np.ascontiguousarray(data[idx])
    kind = "i" if signed else "u"
    return raw.view(f">{kind}{width}").ravel().astype(np.int64)


def safe_be(
    data: np.ndarray, pos: np.ndarray, width: int, ok: np.ndarray, signed: bool = True
) -> np.ndarray:
    """Like :func:`be` but reads 0 where ``ok`` is false (positions may be out of bounds)."""
    safe = np.where(ok, pos, 0)
    if len(data) < width:
        return np.zeros(len(pos), dtype=np.int64)
    safe = np.minimum(safe, len(data) - width)
    return np.where(ok, be(data, safe, width, signed), 0)


_STRING: Final = pa.string()
_INLINE: Final = 12  # Arrow's binary view keeps values of up to 12 bytes inside the view
# Below this many bytes per value on average, copying byte by byte is cheaper than describing each
# value as a view; above it the views win by far (docs/benchmarks.md, "Measurements behind design
# choices").
_VIEW_MIN_MEAN: Final = 16


def slices(
    data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, typ: pa.DataType = _STRING
) -> pa.Array:
    """A string (or binary) array of ``data[starts[i]:starts[i]+lengths[i]]``, null where the
    length is negative, without Python objects. Strings are not checked for valid UTF-8.

    Short values are copied byte by byte with numpy. Longer ones, scattered through ``data`` (a
    log buffer, or a column's bytes), are first described as Arrow binary *views* -- 16 bytes
    per value: ``int32 length`` then either the value itself (up to 12 bytes, zero-padded) or
    ``4-byte prefix | int32 buffer index | int32 offset`` -- which numpy fills with a few
    gathers per value, and Arrow's cast then copies the bytes out in C++.
    """
    n = len(starts)
    valid = lengths >= 0
    length = np.where(valid, lengths, 0)
    total = int(length.sum())
    bitmap = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    if total < _VIEW_MIN_MEAN * n or len(data) >= 2**31 or total >= 2**31:
        return _gathered(data, starts, length, bitmap, typ)
    views = np.zeros((n, 4), dtype="<u4")
    views[:, 0] = length
    long = np.flatnonzero(length > _INLINE)
    # Unaligned little-endian words at every byte position: ``words[p]`` is bytes p..p+3 (a
    # long value has more than 4 bytes, so its prefix is in bounds).
    words = np.ndarray((max(len(data) - 3, 0),), dtype="<u4", buffer=data, strides=(1,))
    views[long, 1] = words[starts[long]]
    views[long, 3] = starts[long]  # buffer 0 at this offset
    short = np.flatnonzero((length > 0) & (length <= _INLINE))
    if len(short):
        # The value itself, zero past its length as the format requires (and never read past
        # the end of ``data``).
        span = starts[short, None] + np.arange(_INLINE)
        inside = np.arange(_INLINE) < length[short, None]
        views.view(np.uint8)[short, 4:] = np.where(inside, data[np.minimum(span, len(data) - 1)], 0)
    view_array = pa.Array.from_buffers(
        pa.binary_view(), n, [bitmap, pa.py_buffer(views), pa.py_buffer(data)]
    )
    # Binary and string share a layout: the view to ``typ`` copies nothing and checks nothing.
    return view_array.cast(pa.binary()).view(typ)


def _gathered(
    data: np.ndarray,
    starts: np.ndarray,
    length: np.ndarray,
    bitmap: pa.Buffer | None,
    typ: pa.DataType,
) -> pa.Array:
    """:func:`slices` by copying every byte (:func:`~offsetscope.protocol.log.columnar.gather_slices`),
    with 64-bit offsets past 2 GiB."""
    n = len(starts)
    offsets, chunk, _ = gather_slices(data, starts, length)  # nulls are in ``bitmap``
    if int(offsets[-1]) >= 2**31:
        large = pa.large_binary() if typ == pa.binary() else pa.large_string()
        return pa.Array.from_buffers(
            large, n, [bitmap, pa.py_buffer(offsets), pa.py_buffer(chunk)]
        ).cast(typ)
    return pa.Array.from_buffers(
        typ, n, [bitmap, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(chunk)]
    )


def _within(counts: np.ndarray) -> np.ndarray:
    """0, 1, .. counts[i]-1 for every i, concatenated (the index of each element in its array)."""
    firsts = np.repeat(np.cumsum(counts) - counts, counts)
    within: np.ndarray = np.arange(len(firsts), dtype=np.int64) - firsts
    return within


def _list_offsets(counts: np.ndarray) -> pa.Array:
    offsets = np.zeros(len(counts) + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    return pa.array(offsets)


# ----------------------------------------------------------------------------- the walk


def supported(fields: Sequence[Field], version: int, top: bool = True) -> bool:
    """Whether :func:`walk` covers every field of ``fields`` present in ``version``."""
    for f in fields:
        if not f.present_in(version):
            continue
        if f.is_tagged_in(version):
            covered = not f.is_array and f.type in _WIDTH
        elif f.is_struct:
            covered = f.is_array and top and supported(f.fields, version, top=False)
        else:
            covered = f.element_type in _WIDTH or (not f.is_array and f.type in ("string", "bytes"))
        if not covered:
            return False
    return True


@dataclass
class _Cursor:
    """Where each buffer's walk is, where its buffer ends, and whether it is still exact."""

    pos: np.ndarray
    end: np.ndarray
    ok: np.ndarray


@dataclass
class _Column:
    """What the walk read for one field, per item (buffer, or element of an array).

    ``start`` holds a fixed-size value itself, or where a string's bytes or an array's elements
    begin (for arrays of structs: the index of the first element in ``elements``); ``count``
    holds the byte length or element count, -1 for null.
    """

    field: Field
    start: np.ndarray
    count: np.ndarray
    elements: Walk | None = None


class Walk:
    """The fields of one struct layout read for ``size`` items; :meth:`array` turns a field into
    an Arrow array. ``ok`` (set by :func:`walk`) says which items were read exactly."""

    def __init__(
        self, data: np.ndarray, fields: Sequence[Field], version: int, flexible: bool, size: int
    ) -> None:
        self.data = data
        self.version = version
        self.flexible = flexible
        present = [f for f in fields if f.present_in(version)]
        self.regular = [f for f in present if not f.is_tagged_in(version)]
        self.tagged = [f for f in present if f.is_tagged_in(version)]
        self.columns: dict[str, _Column] = {}
        for f in present:
            start = np.zeros(size, dtype=np.int64)
            if f.is_tagged_in(version):
                start[:] = f.default_value(version)  # what the record holds when not carried
            self.columns[f.snake_name] = _Column(f, start, np.zeros(size, dtype=np.int64))
        self.ok = np.ones(size, dtype=bool)

    # -------------------------------------------------------------------- reading

    def read(self, items: np.ndarray, cur: _Cursor) -> None:
        """Read one struct for each of ``items`` at the cursor, advancing it."""
        for f in self.regular:
            col = self.columns[f.snake_name]
            if f.is_struct:
                self._structs(col, cur)
            elif f.is_array:
                self._scalars(col, items, cur)
            elif f.type in _WIDTH:
                col.start[items] = self._fixed(cur, f.type)
            else:
                self._bytes(col, items, cur)
        if self.flexible:
            self._tags(items, cur)

    def _fixed(self, cur: _Cursor, typ: str) -> np.ndarray:
        width = _WIDTH[typ]
        cur.ok &= cur.pos + width <= cur.end
        value = safe_be(self.data, cur.pos, width, cur.ok, signed=typ != "uint16")
        cur.pos += width
        return value

    def _uvarint(self, cur: _Cursor, active: np.ndarray) -> np.ndarray:
        """Unsigned LEB128 varints (at most 5 bytes) where ``active``; 0 elsewhere."""
        value = np.zeros(len(cur.pos), dtype=np.int64)
        size = np.zeros(len(cur.pos), dtype=np.int64)
        more = active & cur.ok
        for k in range(5):
            inside = cur.pos + k < cur.end
            cur.ok &= inside | ~more
            more &= inside
            byte = safe_be(self.data, cur.pos + k, 1, more, signed=False)
            value |= np.where(more, byte & 0x7F, 0) << (7 * k)
            size += more
            more &= byte >= 0x80
            if not more.any():
                break
        cur.ok &= ~more  # the fifth byte continues: the reader refuses a sixth
        cur.pos += size
        return value

    def _count(self, col: _Column, cur: _Cursor, width: int) -> np.ndarray:
        """A length or element count (-1 = null), checked against the field's nullability."""
        if self.flexible:
            n = self._uvarint(cur, cur.ok) - 1
        else:
            n = self._fixed(cur, "int16" if width == 2 else "int32")
        null_ok = col.field.is_nullable_in(self.version)
        cur.ok &= (n >= 0) | (n == -1) & null_ok
        return n

    def _bytes(self, col: _Column, items: np.ndarray, cur: _Cursor) -> None:
        n = self._count(col, cur, 2 if col.field.type == "string" else 4)
        size = np.maximum(n, 0)
        cur.ok &= cur.pos + size <= cur.end
        col.start[items] = cur.pos
        col.count[items] = n
        cur.pos += size

    def _scalars(self, col: _Column, items: np.ndarray, cur: _Cursor) -> None:
        n = self._count(col, cur, 4)
        size = np.maximum(n, 0) * _WIDTH[col.field.element_type]
        cur.ok &= cur.pos + size <= cur.end
        col.start[items] = cur.pos
        col.count[items] = n
        cur.pos += size

    def _structs(self, col: _Column, cur: _Cursor) -> None:
        """An array of structs (top level only: every item is here, once)."""
        n = self._count(col, cur, 4)
        cur.ok &= (n <= cur.end - cur.pos) & (n <= MAX_ELEMENTS)
        counts = np.where(cur.ok, np.maximum(n, 0), 0)
        first = np.cumsum(counts) - counts
        col.start[:] = first
        col.count[:] = n
        f = col.field
        elements = col.elements = Walk(
            self.data, f.fields, self.version, self.flexible, int(counts.sum())
        )
        for j in range(int(counts.max(initial=0))):
            at = np.flatnonzero(cur.ok & (counts > j))
            sub = _Cursor(cur.pos[at], cur.end[at], np.ones(len(at), dtype=bool))
            elements.read(first[at] + j, sub)
            cur.pos[at] = sub.pos
            cur.ok[at] = sub.ok

    def _tags(self, items: np.ndarray, cur: _Cursor) -> None:
        """The tagged-field section: known tags set their field, unknown ones are skipped."""
        ntags = self._uvarint(cur, cur.ok)
        cur.ok &= ntags <= MAX_ELEMENTS
        for k in range(int(ntags[cur.ok].max(initial=0))):
            active = cur.ok & (ntags > k)
            tag = self._uvarint(cur, active)
            size = self._uvarint(cur, active)
            active &= cur.ok
            cur.ok &= (cur.pos + size <= cur.end) | ~active
            for f in self.tagged:
                hit = active & (tag == f.tag)
                # The value must fill its declared size exactly (else a tag size error).
                cur.ok &= (size == _WIDTH[f.type]) | ~hit
                hit &= cur.ok
                value = safe_be(self.data, cur.pos, _WIDTH[f.type], hit, f.type != "uint16")
                self.columns[f.snake_name].start[items[hit]] = value[hit]
            cur.pos += size  # 0 where not active

    # -------------------------------------------------------------------- building

    def array(self, name: str, items: np.ndarray, typ: pa.DataType) -> pa.Array:
        """Field ``name`` (snake_case) of ``items`` as an Arrow array of ``typ``; all nulls when
        the layout has no such field."""
        col = self.columns.get(name)
        if col is None:
            return pa.nulls(len(items), typ)
        f = col.field
        if not f.is_array:
            if f.type in _WIDTH:
                values = col.start[items]
                return pa.array(values != 0 if f.type == "bool" else values, type=typ)
            return slices(self.data, col.start[items], col.count[items], typ)
        n = col.count[items]
        counts = np.maximum(n, 0)
        firsts = np.repeat(col.start[items], counts)
        if f.is_struct:
            assert col.elements is not None  # read() made it
            at = firsts + _within(counts)
            inner = typ.value_type
            children = [col.elements.array(c.name, at, c.type) for c in inner]
            values = pa.StructArray.from_arrays(children, fields=list(inner))
        else:
            el = f.element_type
            width = _WIDTH[el]
            scalars = be(self.data, firsts + width * _within(counts), width, el != "uint16")
            if el == "bool":
                scalars = scalars != 0
            values = pa.array(scalars, type=typ.value_type)
        mask = None if (n >= 0).all() else pa.array(n < 0)
        return pa.ListArray.from_arrays(_list_offsets(counts), values, type=typ, mask=mask)


def walk(
    data: np.ndarray, starts: np.ndarray, ends: np.ndarray, message: Message, version: int
) -> Walk | None:
    """Read ``message`` at ``version`` from ``data[starts[i]:ends[i]]`` for every i.

    The message must fill each buffer exactly. None when its layout is not :func:`supported`.
    """
    if not supported(message.fields, version):
        return None
    w = Walk(data, message.fields, version, message.is_flexible(version), len(starts))
    cur = _Cursor(starts.astype(np.int64), ends.astype(np.int64), np.ones(len(starts), bool))
    w.read(np.arange(len(starts)), cur)
    w.ok = cur.ok & (cur.pos == cur.end)
    return w
