"""userData of the sticky assignors, byte-compatible with Kafka's.

``StickyAssignor`` (eager) carries the member's previous assignment and its generation, in the
old ``Schema``/``Struct`` encoding (big-endian, non-flexible; strings are int16 length + UTF-8,
arrays are int32 count + elements)::

    StickyAssignorUserData V1                      V0 (before KIP-341) is the same without
      previous_assignment: ARRAY of                    ``generation``
        topic: STRING
        partitions: ARRAY of INT32
      generation: INT32

Topics appear in the iteration order of the ``HashMap`` that
``CollectionUtils.groupPartitionsByTopic`` fills with ``computeIfAbsent``; partitions keep the
assignment's order. Decoding follows ``StickyAssignor.deserializeTopicPartitionAssignment``: try
V1, fall back to V0, and if neither parses, the member has no previous assignment and
generation -1. Trailing bytes are ignored (``Schema.read`` does not check for them).

``CooperativeStickyAssignor`` carries only the generation::

    CooperativeStickyAssignorUserData V0
      generation: INT32

Its member data comes from the subscription's ``ownedPartitions`` and ``generationId`` when the
subscription has a generation (ConsumerProtocolSubscription v2+), otherwise from this userData:
null means no generation, bytes that do not hold an int32 mean generation -1.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

from offsetscope.sim.coordinator.assignors.model import (
    DEFAULT_GENERATION,
    Subscription,
    TopicPartition,
)
from offsetscope.sim.coordinator.java import JavaHashMap, java_string_hash

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class MemberData:
    """What a sticky assignor knows of one member's past (``AbstractStickyAssignor.MemberData``).

    Attributes:
        partitions: the member's previous assignment (or owned partitions).
        generation: its generation, ``None`` when unknown (Java's ``Optional.empty()``).
    """

    partitions: tuple[TopicPartition, ...]
    generation: int | None


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int) -> bytes:
    """Serialize StickyAssignorUserData V1 exactly as Kafka does.

    Args:
        partitions: the member's assignment, in assignment order.
        generation: the generation of that assignment.

    Returns:
        The userData bytes.
    """
    by_topic: JavaHashMap[str, list[int]] = JavaHashMap(java_string_hash)
    for tp in partitions:
        by_topic.compute_if_absent(tp.topic, lambda _t: []).append(tp.partition)
    out = bytearray(_INT32.pack(len(by_topic)))
    for topic, numbers in by_topic.items():
        raw = topic.encode("utf-8", "surrogatepass")
        out += _INT16.pack(len(raw)) + raw
        out += _INT32.pack(len(numbers))
        for n in numbers:
            out += _INT32.pack(n)
    out += _INT32.pack(generation)
    return bytes(out)


class _Underflow(ValueError):
    """The Struct reader ran out of bytes or met a negative length."""


def _read_assignment(data: bytes, with_generation: bool) -> MemberData:
    pos = 0

    def int32() -> int:
        nonlocal pos
        if pos + 4 > len(data):
            raise _Underflow(pos)
        (v,) = _INT32.unpack_from(data, pos)
        pos += 4
        return int(v)

    def array_size() -> int:
        size = int32()
        # ArrayOf.read rejects negative sizes and sizes larger than the bytes left
        if size < 0 or size > len(data) - pos:
            raise _Underflow(pos)
        return size

    partitions: list[TopicPartition] = []
    for _ in range(array_size()):
        if pos + 2 > len(data):
            raise _Underflow(pos)
        (length,) = _INT16.unpack_from(data, pos)
        pos += 2
        if length < 0 or length > len(data) - pos:
            raise _Underflow(pos)
        # Java decodes with replacement characters; it never fails on bad UTF-8
        topic = data[pos : pos + length].decode("utf-8", "replace")
        pos += length
        partitions.extend(TopicPartition(topic, int32()) for _ in range(array_size()))
    generation = int32() if with_generation else None
    return MemberData(tuple(partitions), generation)


def decode_sticky_user_data(data: bytes) -> MemberData:
    """Parse StickyAssignorUserData as ``StickyAssignor`` does (V1, else V0, else nothing).

    Args:
        data: non-empty userData bytes.

    Returns:
        The previous assignment and generation (``None`` for V0 data, -1 if unparseable).
    """
    try:
        return _read_assignment(data, with_generation=True)
    except _Underflow:
        pass
    try:
        return _read_assignment(data, with_generation=False)
    except _Underflow:
        return MemberData((), DEFAULT_GENERATION)


def encode_cooperative_user_data(generation: int) -> bytes:
    """Serialize CooperativeStickyAssignorUserData V0 (the generation)."""
    return _INT32.pack(generation)


def sticky_member_data(subscription: Subscription) -> MemberData:
    """``StickyAssignor.memberData``: always from userData (eager members own nothing)."""
    if not subscription.user_data:
        return MemberData((), None)
    return decode_sticky_user_data(subscription.user_data)


def cooperative_member_data(subscription: Subscription) -> MemberData:
    """``CooperativeStickyAssignor.memberData``: subscription fields, else the userData."""
    if subscription.generation_id >= 0:
        return MemberData(subscription.owned_partitions, subscription.generation_id)
    data = subscription.user_data
    generation: int | None
    if data is None:
        generation = None
    elif len(data) < 4:
        generation = DEFAULT_GENERATION
    else:
        generation = int(_INT32.unpack_from(data, 0)[0])
    return MemberData(subscription.owned_partitions, generation)
