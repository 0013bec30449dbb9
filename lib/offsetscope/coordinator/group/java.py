"""Java iteration order, where Kafka's observable output depends on it.

Kafka's classic group keeps its members in a ``java.util.HashMap`` and lets iteration order decide
a few visible things: the order of members in the GroupMetadata record and in the leader's
JoinGroup response, which member becomes leader when the leader leaves (``members.keySet()
.iterator().next()``), which awaiting member is elected when the leader did not rejoin, and which
protocol wins a tied vote (``HashMap`` of votes, ``Stream.max`` keeps the first maximum). Python
dicts iterate in insertion order, so those choices would silently differ from a broker's. This
module reproduces ``HashMap`` iteration order for string keys:

* ``String.hashCode``: ``h = 31 * h + c`` over UTF-16 code units, in signed 32-bit arithmetic;
* ``HashMap.hash``: ``h ^ (h >>> 16)``; bucket = ``hash & (capacity - 1)``;
* capacity starts at 16 and doubles when the size exceeds 0.75 x capacity; it never shrinks;
* within a bucket, entries keep insertion order (appends go to the tail; a resize splits a bucket
  preserving relative order). Buckets that Java turns into trees (8+ colliding keys in a table of
  64+) are not reproduced: that needs thousands of members with colliding hashes.
"""

from __future__ import annotations

from collections.abc import Iterable

DEFAULT_CAPACITY = 16
LOAD_FACTOR = 0.75


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (signed 32-bit) of ``s``.

    Args:
        s: the string; characters outside the BMP count as two UTF-16 code units, as in Java.

    Returns:
        The hash as a signed 32-bit integer.
    """
    h = 0
    if s.isascii():
        # One code unit per byte. Reducing modulo 2**32 only at the end gives the same result
        # (the ring homomorphism) and is faster than masking every step.
        for c in s.encode("ascii"):
            h = 31 * h + c
    else:
        data = s.encode("utf-16-be", "surrogatepass")
        for i in range(0, len(data), 2):
            h = 31 * h + ((data[i] << 8) | data[i + 1])
    h &= 0xFFFFFFFF
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


def spread(h: int) -> int:
    """``HashMap.hash``: fold the high 16 bits into the low ones (unsigned 32-bit result)."""
    u = h & 0xFFFFFFFF
    return u ^ (u >> 16)


def grown_capacity(capacity: int, size: int) -> int:
    """The table capacity after the map has held ``size`` entries (it only grows)."""
    while size > capacity * LOAD_FACTOR:
        capacity *= 2
    return capacity


def hashmap_order(keys: Iterable[str], capacity: int = DEFAULT_CAPACITY) -> list[str]:
    """Order ``keys`` (given in insertion order) as a ``HashMap`` of that capacity iterates them.

    Args:
        keys: the map's current keys, in the order they were inserted.
        capacity: the table capacity (a power of two); see :func:`grown_capacity`.

    Returns:
        The keys in Java iteration order.
    """
    mask = capacity - 1
    indexed = [(spread(java_string_hash(k)) & mask, i, k) for i, k in enumerate(keys)]
    indexed.sort()
    return [k for _, _, k in indexed]
