"""Declarative, versioned message schemas and the one generic reader/writer that interprets them.

A :class:`Message` mirrors one of Kafka's JSON message specs (``validVersions``,
``flexibleVersions`` and a list of fields, each with ``versions``, ``nullableVersions``,
``taggedVersions``/``tag`` and ``default``). Like Kafka's own generator, this module turns each
``(message, version)`` pair into a specialised Python reader and writer *once*, by generating
source code from the table, so the hot path never walks the table per record. The tables stay the
single source of truth: the JSON formatter, the Spark schema and the tests read them too.

Encodings (``docs/formats.md`` section 1)::

    int8/16/32/64, uint16   big-endian two's complement (uint16 unsigned)
    bool                    1 byte, non-zero = true
    uuid                    16 bytes
    string                  int16 length (-1 = null)  | flexible: uvarint length+1 (0 = null)
    bytes                   int32 length (-1 = null)  | flexible: uvarint length+1 (0 = null)
    array                   int32 count  (-1 = null)  | flexible: uvarint count+1  (0 = null)
    struct                  fields in order, + (flexible) its own tagged-field section
    nullable struct         int8 marker: -1 null, >= 0 present, then the struct
    tagged-field section    uvarint n, then n x (uvarint tag, uvarint size, payload)

Tagged fields are written in ascending tag order and only when they differ from their default;
unknown tags are kept (under ``_unknownTaggedFields``) and written back, so decode then encode is
byte-identical. Decoded messages are dicts keyed by Kafka's JSON names (first letter lower-cased);
fields absent from the version are absent from the dict.

Errors are :class:`~offsetscope.protocol.errors.DecodeError` subclasses whose ``path`` is relative
to the message (``members[2].memberId``) and whose ``offset`` is absolute in the buffer.
"""

from __future__ import annotations

import re
import struct
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from offsetscope.protocol import errors

# ----------------------------------------------------------------------------- versions


@dataclass(frozen=True, slots=True)
class Versions:
    """A version range in Kafka's syntax: ``"0+"``, ``"1-3"``, ``"2"`` or ``"none"``."""

    lo: int
    hi: int | None  # None = open-ended

    @staticmethod
    def parse(text: str) -> Versions:
        text = text.strip()
        if text == "none":
            return NO_VERSIONS
        if text.endswith("+"):
            return Versions(int(text[:-1]), None)
        if "-" in text:
            lo, hi = text.split("-")
            return Versions(int(lo), int(hi))
        return Versions(int(text), int(text))

    def __contains__(self, version: object) -> bool:
        if not isinstance(version, int) or self.lo < 0:
            return False
        return version >= self.lo and (self.hi is None or version <= self.hi)

    def __str__(self) -> str:
        if self.lo < 0:
            return "none"
        if self.hi is None:
            return f"{self.lo}+"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


NO_VERSIONS = Versions(-1, -1)

# ----------------------------------------------------------------------------- fields

PRIMITIVES: dict[str, str] = {
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "int64": "q",
    "bool": "?",
}
FIXED_SIZE = {"b": 1, "h": 2, "H": 2, "i": 4, "q": 8, "?": 1}
VARIABLE = ("string", "bytes", "uuid")
_DEFAULT_BY_TYPE: dict[str, Any] = {
    "int8": 0,
    "int16": 0,
    "uint16": 0,
    "int32": 0,
    "int64": 0,
    "bool": False,
    "string": "",
    "bytes": b"",
    "uuid": uuid.UUID(int=0),
}
UNKNOWN_TAGS = "_unknownTaggedFields"


class _Null:
    """The spec's ``"default": "null"`` (a string in Kafka's JSON): the field defaults to null.

    Kafka's generator reads a JSON ``null`` default (``"default": null``) as *no* default, which
    for a nullable array or struct means an empty array or an empty struct -- and a null value
    is then written explicitly. Only the string ``"null"`` makes null the default. There is one
    instance, :data:`NULL`, compared by identity.
    """

    def __repr__(self) -> str:
        return "NULL"


NULL = _Null()


@dataclass(frozen=True)  # not slotted: cached_property needs an instance __dict__
class Field:
    """One field of a message or struct, as declared in Kafka's JSON spec.

    Args:
        name: Kafka's field name (``GroupId``, ``protocolType``); the JSON/dict key is the same
            with the first letter lower-cased.
        type: ``int8`` .. ``int64``, ``uint16``, ``bool``, ``uuid``, ``string``, ``bytes``,
            ``[]<element>`` for arrays, or a struct name (then ``fields`` is given).
        versions: versions the field exists in (Kafka's ``versions``); for tagged fields that
            only declare ``taggedVersions`` pass the same range twice.
        nullable: Kafka's ``nullableVersions``.
        tag / tagged: tag number and ``taggedVersions`` of a tagged field.
        default: the spec default (written tagged fields are those that differ from it).
        fields: the struct's fields when ``type`` is a struct or an array of structs.
    """

    name: str
    type: str
    versions: str = "0+"
    nullable: str = "none"
    tag: int | None = None
    tagged: str = "none"
    default: Any = None
    fields: tuple[Field, ...] = ()
    about: str = ""

    @cached_property
    def json_name(self) -> str:
        return self.name[:1].lower() + self.name[1:]

    @cached_property
    def snake_name(self) -> str:
        """``underscore_name`` as Kafka's generator spells it: ``GroupInstanceId`` -> ``group_instance_id``."""
        return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", self.json_name).lower()

    @cached_property
    def version_range(self) -> Versions:
        return Versions.parse(self.versions)

    @cached_property
    def nullable_range(self) -> Versions:
        return Versions.parse(self.nullable)

    @cached_property
    def tagged_range(self) -> Versions:
        return Versions.parse(self.tagged)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return bool(self.fields)

    def present_in(self, version: int) -> bool:
        return version in self.version_range or version in self.tagged_range

    def is_tagged_in(self, version: int) -> bool:
        return self.tag is not None and version in self.tagged_range

    def is_nullable_in(self, version: int) -> bool:
        return version in self.nullable_range

    def default_value(self, version: int | None = None) -> Any:
        """The value a field takes when it is absent, as Kafka's generated classes define it.

        The spec default when there is one (``NULL`` for ``"default": "null"``), else the type's
        zero: 0, ``""``, ``b""``, the zero uuid, an empty array, or a struct of its fields'
        defaults (at ``version``, when given). Arrays and structs are fresh objects every call.
        """
        if self.default is NULL:
            return None
        if self.default is not None:
            return self.default
        if self.is_array:
            return []
        if self.is_struct:
            return {
                f.json_name: f.default_value(version)
                for f in self.fields
                if version is None or f.present_in(version)
            }
        return _DEFAULT_BY_TYPE.get(self.type)


@dataclass(frozen=True)
class Message:
    """A versioned message (a coordinator key or value, a consumer-protocol blob, a marker)."""

    name: str
    valid: str
    flexible: str
    fields: tuple[Field, ...]
    about: str = ""

    @cached_property
    def valid_range(self) -> Versions:
        return Versions.parse(self.valid)

    @cached_property
    def flexible_range(self) -> Versions:
        return Versions.parse(self.flexible)

    @property
    def versions(self) -> range:
        r = self.valid_range
        return range(r.lo, (r.hi if r.hi is not None else r.lo) + 1)

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible_range

    def reader(self, version: int) -> Callable[[bytes, int], tuple[dict[str, Any], int]]:
        """``read(buf, pos) -> (data, new_pos)`` for one version; generated once, then cached."""
        if version not in self.valid_range:
            raise errors.UnsupportedVersionError(self.name, version)
        return _compiled(self, version).read

    def writer(self, version: int) -> Callable[[Mapping[str, Any], bytearray], None]:
        """``write(data, out)`` appends the encoding of ``data`` at ``version`` to ``out``."""
        if version not in self.valid_range:
            raise errors.UnsupportedVersionError(self.name, version)
        return _compiled(self, version).write

    def decode(self, buf: bytes, version: int, *, exact: bool = True) -> dict[str, Any]:
        """Decode a whole buffer; with ``exact`` trailing bytes are an error."""
        data, pos = self.reader(version)(buf, 0)
        if exact and pos != len(buf):
            raise errors.TrailingBytesError(
                f"{len(buf) - pos} bytes left after {self.name} v{version}", "", pos
            )
        return data

    def encode(self, data: Mapping[str, Any], version: int) -> bytes:
        out = bytearray()
        self.writer(version)(data, out)
        return bytes(out)

    def fields_in(self, version: int) -> Iterator[Field]:
        return (f for f in self.fields if f.present_in(version))


# ----------------------------------------------------------------------------- runtime helpers
# The generated code calls these; they are module level so the generated functions can bind them
# as globals.

_UUID = uuid.UUID
_ZERO_UUID = uuid.UUID(int=0)


def read_uvarint(buf: bytes, pos: int, path: str) -> tuple[int, int]:
    """Unsigned LEB128 varint (flexible lengths, tags); at most 5 bytes for 32 bits."""
    result = 0
    shift = 0
    end = len(buf)
    start = pos
    while True:
        if pos >= end:
            raise errors.TruncatedError(path, start, pos - start + 1, end - start)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 35:
            raise errors.InvalidVarintError("unsigned varint longer than 5 bytes", path, start)


def write_uvarint(value: int, out: bytearray) -> None:
    if value < 0:
        raise ValueError(f"unsigned varint cannot hold {value}")
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def uvarint_size(value: int) -> int:
    size = 1
    while value > 0x7F:
        value >>= 7
        size += 1
    return size


def _trunc(path: str, pos: int, need: int, end: int) -> errors.TruncatedError:
    return errors.TruncatedError(path, pos, need, max(end - pos, 0))


def _fixed_fail(parts: Sequence[tuple[str, int]], pos: int, end: int) -> errors.TruncatedError:
    """Name the first field of a merged fixed-size group that crosses the buffer end."""
    for path, size in parts:
        if pos + size > end:
            return _trunc(path, pos, size, end)
        pos += size
    # Only called once the group is known not to fit; reaching here is a bug of the caller.
    raise RuntimeError("a fixed-size group that fits the buffer was reported as truncated")


def _bad_length(path: str, pos: int, n: int, what: str) -> errors.InvalidLengthError:
    return errors.InvalidLengthError(f"invalid {what} {n}", path, pos)


def _null(path: str, pos: int) -> errors.NullNotAllowedError:
    return errors.NullNotAllowedError("null in a non-nullable field", path, pos)


def _bad_utf8(path: str, pos: int, exc: UnicodeDecodeError) -> errors.InvalidStringError:
    return errors.InvalidStringError(f"invalid UTF-8 ({exc.reason})", path, pos + exc.start)


def _tag_size(path: str, pos: int, tag: int, want: int, got: int) -> errors.InvalidTaggedFieldError:
    return errors.InvalidTaggedFieldError(
        f"tagged field {tag} declares {want} bytes but its value uses {got}", path, pos
    )


def _relocate(exc: errors.DecodeError, prefix: str) -> errors.DecodeError:
    return exc.relocated(prefix, 0)


def _not_default(name: str, version: int, value: Any) -> ValueError:
    return ValueError(f"field {name} does not exist in version {version}; cannot write {value!r}")


_STRUCTS: dict[str, struct.Struct] = {}


def _struct(fmt: str) -> struct.Struct:
    s = _STRUCTS.get(fmt)
    if s is None:
        s = _STRUCTS[fmt] = struct.Struct(fmt)
    return s


def _unpack_array(code: str, n: int, buf: bytes, pos: int) -> list[Any]:
    return list(_struct(f">{n}{code}").unpack_from(buf, pos))


# ----------------------------------------------------------------------------- code generation


class _Src:
    """A tiny indented source builder."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def indent(self) -> _Src:
        self.depth += 1
        return self

    def dedent(self) -> None:
        self.depth -= 1

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


@dataclass(slots=True)
class _Compiled:
    read: Callable[[bytes, int], tuple[dict[str, Any], int]]
    write: Callable[[Mapping[str, Any], bytearray], None]
    source: str = ""


_CACHE: dict[tuple[int, int], _Compiled] = {}


def _compiled(message: Message, version: int) -> _Compiled:
    key = (id(message), version)
    hit = _CACHE.get(key)
    if hit is None:
        hit = _CACHE[key] = _Generator(message, version).build()
    return hit


@dataclass
class _Generator:
    """Generates one reader and one writer function for ``(message, version)``."""

    message: Message
    version: int
    namespace: dict[str, Any] = field(default_factory=dict)
    counter: int = 0

    def build(self) -> _Compiled:
        self.namespace.update(
            errors=errors,
            _UUID=_UUID,
            _ZERO_UUID=_ZERO_UUID,
            _read_uvarint=read_uvarint,
            _write_uvarint=write_uvarint,
            _uvarint_size=uvarint_size,
            _trunc=_trunc,
            _fixed_fail=_fixed_fail,
            _bad_length=_bad_length,
            _null=_null,
            _bad_utf8=_bad_utf8,
            _tag_size=_tag_size,
            _relocate=_relocate,
            _not_default=_not_default,
            _unpack_array=_unpack_array,
            _struct=_struct,
            DecodeError=errors.DecodeError,
        )
        flexible = self.message.is_flexible(self.version)
        src = _Src()
        read_name = self._struct_reader(src, self.message.fields, flexible)
        write_name = self._struct_writer(src, self.message.fields, flexible)
        source = src.text()
        code = compile(source, f"<offsetscope {self.message.name} v{self.version}>", "exec")
        # Generated from our own field tables, like Kafka's message generator; no outside input.
        exec(code, self.namespace)  # noqa: S102
        return _Compiled(self.namespace[read_name], self.namespace[write_name], source)

    def _fresh(self, base: str) -> str:
        self.counter += 1
        return f"{base}_{self.counter}"

    def _const(self, value: Any) -> str:
        name = self._fresh("_k")
        self.namespace[name] = value
        return name

    # -------------------------------------------------------------------- reader

    def _struct_reader(self, src: _Src, fields: Sequence[Field], flexible: bool) -> str:
        """Emit ``def <name>(buf, pos)`` for a struct's fields; returns the function name."""
        v = self.version
        present = [f for f in fields if f.present_in(v)]
        regular = [f for f in present if not f.is_tagged_in(v)]
        tagged = [f for f in present if f.is_tagged_in(v)]
        # Nested struct readers first (they are module-level functions in the namespace).
        sub_readers: dict[str, str] = {}
        for f in present:
            if f.is_struct:
                sub_readers[f.name] = self._struct_reader(src, f.fields, flexible)
        name = self._fresh("_read")
        src(f"def {name}(buf, pos):")
        body = src.indent()
        body("end = len(buf)")
        group: list[Field] = []

        def flush() -> None:
            if not group:
                return
            fmt = ">" + "".join(PRIMITIVES[g.type] for g in group)
            size = struct.calcsize(fmt)
            s = self._const(struct.Struct(fmt))
            parts = self._const(tuple((g.json_name, FIXED_SIZE[PRIMITIVES[g.type]]) for g in group))
            body(f"if pos + {size} > end:")
            body(f"    raise _fixed_fail({parts}, pos, end)")
            names = ", ".join(f"v_{g.json_name}" for g in group) + ","
            body(f"{names} = {s}.unpack_from(buf, pos)")
            body(f"pos += {size}")
            group.clear()

        for f in regular:
            if not f.is_array and f.type in PRIMITIVES:
                group.append(f)
                continue
            flush()
            self._read_value(body, f, f"v_{f.json_name}", f.json_name, flexible, sub_readers)
        flush()
        for f in tagged:
            dflt = f.default_value(self.version)
            if isinstance(dflt, (list, dict)):
                # A fresh object per record: decoded messages must not share mutable defaults.
                factory = self._const(lambda f=f, v=self.version: f.default_value(v))
                body(f"v_{f.json_name} = {factory}()")
            else:
                body(f"v_{f.json_name} = {self._const(dflt)}")
        if flexible:
            self._read_tagged_section(body, tagged, flexible, sub_readers)
        items = ", ".join(f"{f.json_name!r}: v_{f.json_name}" for f in present)
        body(f"d = {{{items}}}")
        if flexible:
            body("if unknown is not None:")
            body(f"    d[{UNKNOWN_TAGS!r}] = unknown")
        body("return d, pos")
        src.dedent()
        return name

    def _read_tagged_section(
        self, body: _Src, tagged: Sequence[Field], flexible: bool, subs: dict[str, str]
    ) -> None:
        body("unknown = None")
        self._read_uvarint_inline(body, "ntags", "'_tagged'")
        body("for _t in range(ntags):")
        loop = body.indent()
        loop("tag, pos = _read_uvarint(buf, pos, '_tagged.tag')")
        loop("size, pos = _read_uvarint(buf, pos, '_tagged.size')")
        loop("tag_end = pos + size")
        loop("if tag_end > end:")
        loop("    raise _trunc('_tagged[' + str(tag) + ']', pos, size, end)")
        first = True
        for f in tagged:
            loop(f"{'if' if first else 'elif'} tag == {f.tag}:")
            first = False
            inner = loop.indent()
            inner("tag_start = pos")
            # A tagged value is decoded within its declared size.
            inner("outer_end = end")
            inner("end = tag_end")
            self._read_value(inner, f, f"v_{f.json_name}", f.json_name, flexible, subs)
            inner("end = outer_end")
            inner("if pos != tag_end:")
            inner(f"    raise _tag_size({f.json_name!r}, tag_start, tag, size, pos - tag_start)")
            loop.dedent()
        if tagged:
            loop("else:")
            loop.indent()
        loop("if unknown is None:")
        loop("    unknown = []")
        loop("unknown.append((tag, bytes(buf[pos:tag_end])))")
        loop("pos = tag_end")
        if tagged:
            loop.dedent()
        body.dedent()

    def _read_value(
        self,
        body: _Src,
        f: Field,
        target: str,
        path: str,
        flexible: bool,
        subs: dict[str, str],
    ) -> None:
        """Emit code reading field ``f`` into variable ``target``, advancing ``pos``."""
        nullable = f.is_nullable_in(self.version)
        p = repr(path)
        if f.is_array:
            self._read_count(body, "n", p, flexible, "array count")
            body("if n < 0:")
            body(f"    {target} = None" if nullable else f"    raise _null({p}, pos - 1)")
            body("else:")
            arr = body.indent()
            arr("if n > end - pos:")
            arr(f"    raise _bad_length({p}, pos, n, 'array count (exceeds remaining bytes)')")
            el = f.element_type
            if el in PRIMITIVES:
                code = PRIMITIVES[el]
                size = FIXED_SIZE[code]
                arr(f"if pos + {size} * n > end:")
                arr(f"    raise _trunc({p}, pos, {size} * n, end)")
                arr(f"{target} = _unpack_array({code!r}, n, buf, pos)")
                arr(f"pos += {size} * n")
            elif f.is_struct:
                sub = subs[f.name]
                arr(f"{target} = []")
                arr("for i in range(n):")
                arr("    try:")
                arr(f"        item, pos = {sub}(buf, pos)")
                arr("    except DecodeError as exc:")
                arr(f"        raise _relocate(exc, {path!r} + '[' + str(i) + ']') from None")
                arr(f"    {target}.append(item)")
            else:
                arr(f"{target} = []")
                arr("for i in range(n):")
                inner = arr.indent()
                self._read_scalar(inner, el, "item", f"{path}[' + str(i) + ']", False, flexible)
                inner(f"{target}.append(item)")
                arr.dedent()
            body.dedent()
            return
        if f.is_struct:
            sub = subs[f.name]
            if nullable:
                body("if pos >= end:")
                body(f"    raise _trunc({p}, pos, 1, end)")
                if f.is_tagged_in(self.version):
                    # Tagged: an unsigned varint marker, 0 = null (readUnsignedVarint() <= 0).
                    body("marker = buf[pos]")
                    body("if marker == 0:")
                else:
                    # Not tagged: an int8 marker, negative = null (readByte() < 0).
                    body("if buf[pos] >= 128:")
                body(f"    {target} = None")
                body("    pos += 1")
                body("else:")
                if f.is_tagged_in(self.version):
                    body("    marker, pos = _read_uvarint(buf, pos, " + p + ")")
                else:
                    body("    pos += 1")
                body("    try:")
                body(f"        {target}, pos = {sub}(buf, pos)")
                body("    except DecodeError as exc:")
                body(f"        raise _relocate(exc, {p}) from None")
            else:
                body("try:")
                body(f"    {target}, pos = {sub}(buf, pos)")
                body("except DecodeError as exc:")
                body(f"    raise _relocate(exc, {p}) from None")
            return
        self._read_scalar(body, f.type, target, path, nullable, flexible)

    def _read_uvarint_inline(self, body: _Src, var: str, p: str) -> None:
        """Read an unsigned varint; the one-byte case (lengths < 127) skips the call."""
        body("if pos < end and buf[pos] < 128:")
        body(f"    {var} = buf[pos]")
        body("    pos += 1")
        body("else:")
        body(f"    {var}, pos = _read_uvarint(buf, pos, {p})")

    def _read_count(self, body: _Src, var: str, p: str, flexible: bool, what: str) -> None:
        """Read an array count (or length) into ``var``; -1 means null."""
        if flexible:
            self._read_uvarint_inline(body, var, p)
            body(f"{var} -= 1")
        else:
            s = self._const(struct.Struct(">i"))
            body("if pos + 4 > end:")
            body(f"    raise _trunc({p}, pos, 4, end)")
            body(f"{var}, = {s}.unpack_from(buf, pos)")
            body("pos += 4")
            body(f"if {var} < -1:")
            body(f"    raise _bad_length({p}, pos - 4, {var}, {what!r})")

    def _read_scalar(
        self, body: _Src, typ: str, target: str, path: str, nullable: bool, flexible: bool
    ) -> None:
        p = f"'{path}'" if "' + " in path else repr(path)
        if typ in PRIMITIVES:
            code = PRIMITIVES[typ]
            size = FIXED_SIZE[code]
            s = self._const(struct.Struct(">" + code))
            body(f"if pos + {size} > end:")
            body(f"    raise _trunc({p}, pos, {size}, end)")
            body(f"{target}, = {s}.unpack_from(buf, pos)")
            body(f"pos += {size}")
            return
        if typ == "uuid":
            body("if pos + 16 > end:")
            body(f"    raise _trunc({p}, pos, 16, end)")
            body(f"{target} = _UUID(bytes=bytes(buf[pos:pos + 16]))")
            body("pos += 16")
            return
        if typ not in ("string", "bytes"):
            raise TypeError(f"unsupported field type {typ!r} in {self.message.name}")
        start = self._fresh("start")
        body(f"{start} = pos")
        if flexible:
            self._read_uvarint_inline(body, "n", p)
            body("n -= 1")
        elif typ == "string":
            s = self._const(struct.Struct(">h"))
            body("if pos + 2 > end:")
            body(f"    raise _trunc({p}, pos, 2, end)")
            body(f"n, = {s}.unpack_from(buf, pos)")
            body("pos += 2")
        else:
            s = self._const(struct.Struct(">i"))
            body("if pos + 4 > end:")
            body(f"    raise _trunc({p}, pos, 4, end)")
            body(f"n, = {s}.unpack_from(buf, pos)")
            body("pos += 4")
        body("if n < 0:")
        if nullable:
            body("    if n != -1:")
            body(f"        raise _bad_length({p}, {start}, n, 'length')")
            body(f"    {target} = None")
        else:
            body("    if n != -1:")
            body(f"        raise _bad_length({p}, {start}, n, 'length')")
            body(f"    raise _null({p}, {start})")
        body("else:")
        body("    if pos + n > end:")
        body(f"        raise _trunc({p}, pos, n, end)")
        if typ == "string":
            body("    try:")
            body(f"        {target} = str(buf[pos:pos + n], 'utf-8')")
            body("    except UnicodeDecodeError as exc:")
            body(f"        raise _bad_utf8({p}, pos, exc) from None")
        else:
            body(f"    {target} = bytes(buf[pos:pos + n])")
        body("    pos += n")

    # -------------------------------------------------------------------- writer

    def _struct_writer(self, src: _Src, fields: Sequence[Field], flexible: bool) -> str:
        v = self.version
        present = [f for f in fields if f.present_in(v)]
        absent = [f for f in fields if not f.present_in(v)]
        regular = [f for f in present if not f.is_tagged_in(v)]
        tagged = sorted((f for f in present if f.is_tagged_in(v)), key=lambda f: f.tag or 0)
        subs: dict[str, str] = {}
        for f in present:
            if f.is_struct:
                subs[f.name] = self._struct_writer(src, f.fields, flexible)
        name = self._fresh("_write")
        src(f"def {name}(d, out):")
        body = src.indent()
        for f in absent:
            # Kafka's writers refuse to drop a non-default value silently.
            dflt = self._const(f.default_value(v))
            body(f"x = d.get({f.json_name!r}, {dflt})")
            body(f"if x is not None and x != {dflt}:")
            body(f"    raise _not_default({f.name!r}, {v}, x)")
        group: list[Field] = []

        def flush() -> None:
            if not group:
                return
            fmt = ">" + "".join(PRIMITIVES[g.type] for g in group)
            s = self._const(struct.Struct(fmt))
            args = ", ".join(
                f"d.get({g.json_name!r}, {self._const(g.default_value(v))})" for g in group
            )
            body(f"out += {s}.pack({args})")
            group.clear()

        for f in regular:
            if not f.is_array and f.type in PRIMITIVES:
                group.append(f)
                continue
            flush()
            body(f"x = d.get({f.json_name!r}, {self._const(f.default_value(v))})")
            self._write_value(body, f, "x", flexible, subs)
        flush()
        if flexible:
            body("tags = []")
            for f in tagged:
                dflt = self._const(f.default_value(v))
                body(f"x = d.get({f.json_name!r}, {dflt})")
                if f.type == "uuid" and not f.is_array:
                    # UUID equality is slow Python code; the default is the zero uuid.
                    body("if x is not None and x.int:")
                else:
                    body(f"if x != {dflt}:")
                inner = body.indent()
                inner("t = bytearray()")
                self._write_value(inner, f, "x", flexible, subs, out="t")
                inner(f"tags.append(({f.tag}, t))")
                body.dedent()
            body(f"unknown = d.get({UNKNOWN_TAGS!r})")
            body("if unknown:")
            body("    tags.extend(unknown)")
            body("    tags.sort(key=lambda kv: kv[0])")
            body("if not tags:")
            body("    out.append(0)")
            body("else:")
            body("    _write_uvarint(len(tags), out)")
            body("    for tag, payload in tags:")
            body("        _write_uvarint(tag, out)")
            body("        _write_uvarint(len(payload), out)")
            body("        out += payload")
        body("return None")
        src.dedent()
        return name

    def _write_value(
        self,
        body: _Src,
        f: Field,
        var: str,
        flexible: bool,
        subs: dict[str, str],
        out: str = "out",
    ) -> None:
        nullable = f.is_nullable_in(self.version)
        if f.is_array:
            body(f"if {var} is None:")
            if nullable:
                body(
                    f"    _write_uvarint(0, {out})"
                    if flexible
                    else f"    {out} += b'\\xff\\xff\\xff\\xff'"
                )
            else:
                body(f"    raise ValueError('field {f.name} is not nullable')")
            body("else:")
            arr = body.indent()
            if flexible:
                arr(f"_write_uvarint(len({var}) + 1, {out})")
            else:
                arr(f"{out} += {self._const(struct.Struct('>i'))}.pack(len({var}))")
            el = f.element_type
            if el in PRIMITIVES:
                code = PRIMITIVES[el]
                arr(f"{out} += _struct('>' + str(len({var})) + {code!r}).pack(*{var})")
            elif f.is_struct:
                arr(f"for item in {var}:")
                arr(f"    {subs[f.name]}(item, {out})")
            else:
                arr(f"for item in {var}:")
                self._write_scalar(arr.indent(), el, "item", False, flexible, out)
                arr.dedent()
            body.dedent()
            return
        if f.is_struct:
            if nullable:
                tagged = f.is_tagged_in(self.version)
                body(f"if {var} is None:")
                body(f"    {out}.append({0 if tagged else 0xFF})")
                body("else:")
                body(f"    {out}.append(1)")
                body(f"    {subs[f.name]}({var}, {out})")
            else:
                body(f"{subs[f.name]}({var}, {out})")
            return
        self._write_scalar(body, f.type, var, nullable, flexible, out)

    def _write_scalar(
        self, body: _Src, typ: str, var: str, nullable: bool, flexible: bool, out: str
    ) -> None:
        if typ in PRIMITIVES:
            s = self._const(struct.Struct(">" + PRIMITIVES[typ]))
            body(f"{out} += {s}.pack({var})")
            return
        if typ == "uuid":
            body(f"{out} += {var}.int.to_bytes(16, 'big')")
            return
        null_bytes = "b'\\xff\\xff'" if typ == "string" else "b'\\xff\\xff\\xff\\xff'"
        body(f"if {var} is None:")
        if nullable:
            body(f"    _write_uvarint(0, {out})" if flexible else f"    {out} += {null_bytes}")
        else:
            body(f"    raise ValueError('null written to a non-nullable {typ}')")
        body("else:")
        inner = body.indent()
        if typ == "string":
            inner(f"b = {var}.encode('utf-8')")
        else:
            inner(f"b = {var}")
        if flexible:
            # Compact lengths are almost always one byte; skip the call for those.
            inner("n = len(b) + 1")
            inner(f"{out}.append(n) if n < 128 else _write_uvarint(n, {out})")
        elif typ == "string":
            inner(f"{out} += {self._const(struct.Struct('>h'))}.pack(len(b))")
        else:
            inner(f"{out} += {self._const(struct.Struct('>i'))}.pack(len(b))")
        inner(f"{out} += b")
        body.dedent()
