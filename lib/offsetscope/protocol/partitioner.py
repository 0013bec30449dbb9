"""Which internal-topic partition holds a group or transactional id (FindCoordinator).

Kafka computes ``Utils.abs(id.hashCode()) % partitionCount`` where ``hashCode`` is Java's
``String.hashCode`` -- ``h = 31*h + c`` over the UTF-16 code units, in signed 32-bit arithmetic --
and ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0 (plain ``Math.abs`` would stay negative).
Characters outside the BMP count as two surrogate code units. ``partitionCount`` is the topic's
actual partition count (default 50 for ``__consumer_offsets`` and ``__transaction_state``).
"""

from __future__ import annotations

_MASK = 0xFFFFFFFF


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` of ``s`` as a signed 32-bit int."""
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & _MASK
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``Math.abs`` except that ``abs(Integer.MIN_VALUE) == 0``.

    (Not ``n & 0x7fffffff``, which is ``Utils.toPositive``, the producer partitioner's rule.)
    """
    return 0 if n == -(1 << 31) else abs(n)


def partition_for(key: str, partitions: int = 50) -> int:
    """The internal-topic partition of a group id or transactional id."""
    if partitions <= 0:
        raise ValueError(f"partition count must be positive, not {partitions}")
    return kafka_abs(java_string_hash(key)) % partitions
