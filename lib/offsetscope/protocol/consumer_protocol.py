"""The consumer group protocol's embedded bytes: subscriptions and assignments.

Mirrors ``clients/src/main/resources/common/message/ConsumerProtocol{Subscription,Assignment}.json``.
``GroupMetadataValue`` stores them as opaque ``subscription``/``assignment`` bytes; they mean this
only when the group's ``protocolType`` is ``"consumer"`` (``ClassicMemberMetadata`` of a KIP-848
member carries subscriptions too). Both are version-prefixed and never flexible::

    Subscription v0-3 = int16 version | Topics []string | UserData bytes? |
                        OwnedPartitions [] {Topic string, Partitions []int32}  (v1+) |
                        GenerationId int32 (v2+, default -1) | RackId string? (v3+)
    Assignment   v0-3 = int16 version | AssignedPartitions [] {Topic, Partitions []int32} |
                        UserData bytes?

Quirks (``docs/formats.md`` section 4.1): a version newer than 3 is read with the v3 layout and its
trailing bytes ignored (new versions may only append); a zero-length assignment (a member the
leader did not assign) has no version prefix at all; librdkafka writes an empty, not null,
UserData; the old sarama-cluster wrote "v1" subscriptions without OwnedPartitions, which Kafka
rejects -- :func:`decode_subscription` accepts it only when ``lenient`` is set.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from offsetscope.protocol import errors
from offsetscope.protocol.schema import NULL, Message
from offsetscope.protocol.schema import Field as F

PROTOCOL_TYPE = "consumer"
HIGHEST_VERSION = 3

_TOPIC_PARTITION = (F("Topic", "string", "0+"), F("Partitions", "[]int32", "0+"))

SUBSCRIPTION = Message(
    "ConsumerProtocolSubscription",
    valid="0-3",
    flexible="none",
    fields=(
        F("Topics", "[]string", "0+"),
        F("UserData", "bytes", "0+", nullable="0+", default=NULL),
        F("OwnedPartitions", "[]TopicPartition", "1+", fields=_TOPIC_PARTITION),
        F("GenerationId", "int32", "2+", default=-1),
        F("RackId", "string", "3+", nullable="3+", default=NULL),
    ),
)
ASSIGNMENT = Message(
    "ConsumerProtocolAssignment",
    valid="0-3",
    flexible="none",
    fields=(
        F("AssignedPartitions", "[]TopicPartition", "0+", fields=_TOPIC_PARTITION),
        F("UserData", "bytes", "0+", nullable="0+", default=NULL),
    ),
)

_VERSION = struct.Struct(">h")


@dataclass(frozen=True, slots=True)
class Blob:
    """A decoded embedded blob: its own version and its fields (JSON names)."""

    version: int
    data: dict[str, Any]


def _split(blob: bytes, what: str) -> tuple[int, int]:
    if len(blob) < 2:
        raise errors.TruncatedError(f"{what}.version", 0, 2, len(blob))
    (version,) = _VERSION.unpack_from(blob, 0)
    if version < 0:
        raise errors.UnsupportedVersionError(what, version, f"{what}.version", 0)
    return version, min(version, HIGHEST_VERSION)


def decode_subscription(blob: bytes, *, lenient: bool = False) -> Blob:
    """Decode a ConsumerProtocolSubscription.

    Args:
        blob: the version-prefixed bytes.
        lenient: accept a subscription that ends before fields its version declares (the
            sarama-cluster "v1 without OwnedPartitions" quirk); missing fields take defaults.

    Raises:
        DecodeError: with a path under ``subscription``.
    """
    version, layout = _split(blob, "subscription")
    try:
        data, _ = SUBSCRIPTION.reader(layout)(blob, 2)
    except errors.TruncatedError:
        if not lenient:
            raise
        data = _read_prefix(blob, layout)
    return Blob(version, data)


def _read_prefix(blob: bytes, layout: int) -> dict[str, Any]:
    """Read the longest version whose layout fits, filling the rest with defaults."""
    for candidate in range(layout - 1, -1, -1):
        try:
            data, pos = SUBSCRIPTION.reader(candidate)(blob, 2)
        except errors.DecodeError:
            continue
        if pos == len(blob):
            for f in SUBSCRIPTION.fields_in(layout):
                data.setdefault(f.json_name, f.default_value(layout))
            return data
    raise errors.TruncatedError("subscription", 2, 1, max(len(blob) - 2, 0))


def decode_assignment(blob: bytes) -> Blob | None:
    """Decode a ConsumerProtocolAssignment; ``None`` for the zero-length "no assignment" blob."""
    if not blob:
        return None
    version, layout = _split(blob, "assignment")
    data, _ = ASSIGNMENT.reader(layout)(blob, 2)
    return Blob(version, data)


def encode_subscription(version: int, data: dict[str, Any]) -> bytes:
    return _VERSION.pack(version) + SUBSCRIPTION.encode(data, min(version, HIGHEST_VERSION))


def encode_assignment(version: int, data: dict[str, Any]) -> bytes:
    return _VERSION.pack(version) + ASSIGNMENT.encode(data, min(version, HIGHEST_VERSION))
