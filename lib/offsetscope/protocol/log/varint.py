"""Zigzag varints of the v2 record format (Kafka ``ByteUtils.readVarint`` / ``readVarlong``).

Wire layout (``docs/formats.md`` section 7.4)::

    zigzag(n) = (n << 1) ^ (n >> 63)      then LEB128: 7 data bits per byte, low group first,
                                           high bit set = "more bytes follow"

    0 -> 00    -1 -> 01    1 -> 02    63 -> 7e    -64 -> 7f    64 -> 80 01    300 -> d8 04

A varint (int32) takes at most 5 bytes, a varlong (int64) at most 10; Kafka rejects a longer
encoding ("Varint is too long") and so do we. Like Kafka, the decoded value wraps to the signed
width (a 5-byte varint whose top bits overflow 32 bits is truncated, not rejected), because the
decoder must agree with Kafka on every byte string Kafka accepts.

These are *not* the unsigned varints of flexible coordinator messages (no zigzag there); mixing
the two corrupts every length.
"""

from __future__ import annotations

from offsetscope.protocol.errors import InvalidVarintError, TruncatedError

VARINT_MAX_BYTES = 5
VARLONG_MAX_BYTES = 10

_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF


def zigzag_encode(value: int) -> int:
    """Map a signed 64-bit value to its unsigned zigzag form (0, -1, 1, -2 ... -> 0, 1, 2, 3 ...)."""
    return ((value << 1) ^ (value >> 63)) & _MASK64


def encode_varint(value: int) -> bytes:
    """Encode a signed int32 as a zigzag varint.

    Args:
        value: a value in the int32 range.

    Returns:
        The 1 to 5 encoded bytes.

    Raises:
        ValueError: the value does not fit in an int32.
    """
    if not -(2**31) <= value < 2**31:
        raise ValueError(f"varint value {value} is outside the int32 range")
    return _leb128(((value << 1) ^ (value >> 31)) & _MASK32)


def encode_varlong(value: int) -> bytes:
    """Encode a signed int64 as a zigzag varlong (1 to 10 bytes).

    Raises:
        ValueError: the value does not fit in an int64.
    """
    if not -(2**63) <= value < 2**63:
        raise ValueError(f"varlong value {value} is outside the int64 range")
    return _leb128(zigzag_encode(value))


def varint_size(value: int) -> int:
    """Number of bytes :func:`encode_varlong` (or :func:`encode_varint`) needs for ``value``."""
    raw = zigzag_encode(value)
    size = 1
    while raw >= 0x80:
        raw >>= 7
        size += 1
    return size


def _leb128(raw: int) -> bytes:
    if raw < 0x80:
        return bytes((raw,))
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def decode_varint(
    data: bytes | bytearray | memoryview, pos: int, end: int, path: str
) -> tuple[int, int]:
    """Decode a zigzag int32 varint at ``data[pos]``, not reading at or past ``end``.

    Args:
        data: the buffer.
        pos: where the varint starts.
        end: first byte that does not belong to the enclosing structure.
        path: field path for errors; the error offset is ``pos`` (buffer coordinates).

    Returns:
        ``(value, next_pos)``.

    Raises:
        TruncatedError: the structure ends inside the varint.
        InvalidVarintError: more than 5 bytes carry the continuation bit.
    """
    raw = 0
    shift = 0
    i = pos
    while True:
        if i >= end:
            raise TruncatedError(path, pos, i - pos + 1, end - pos if end > pos else 0)
        b = data[i]
        i += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift >= 7 * VARINT_MAX_BYTES:
            raise InvalidVarintError(
                f"varint longer than {VARINT_MAX_BYTES} bytes", path=path, offset=pos
            )
    raw &= _MASK32
    value = (raw >> 1) ^ -(raw & 1)
    return value, i


def decode_varlong(
    data: bytes | bytearray | memoryview, pos: int, end: int, path: str
) -> tuple[int, int]:
    """Decode a zigzag int64 varlong; same contract as :func:`decode_varint` (max 10 bytes)."""
    raw = 0
    shift = 0
    i = pos
    while True:
        if i >= end:
            raise TruncatedError(path, pos, i - pos + 1, end - pos if end > pos else 0)
        b = data[i]
        i += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift >= 7 * VARLONG_MAX_BYTES:
            raise InvalidVarintError(
                f"varlong longer than {VARLONG_MAX_BYTES} bytes", path=path, offset=pos
            )
    raw &= _MASK64
    value = (raw >> 1) ^ -(raw & 1)
    return value, i
