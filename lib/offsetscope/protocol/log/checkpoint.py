"""Text files of a partition directory: ``leader-epoch-checkpoint`` and ``partition.metadata``.

``leader-epoch-checkpoint`` (``LeaderEpochCheckpointFile``, a ``CheckpointFile`` of version 0)::

    0                      version
    2                      number of entries
    0 0                    "<leader epoch> <start offset>" per line, ascending
    3 1200

``partition.metadata`` (``PartitionMetadataFile``), no trailing newline::

    version: 0
    topic_id: <topic id as Kafka prints a Uuid: URL-safe Base64 of its 16 bytes, no padding>
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from offsetscope.protocol.errors import InvalidValueError, UnsupportedVersionError

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"


@dataclass(frozen=True, slots=True)
class EpochEntry:
    """The first offset written under a partition leader epoch."""

    epoch: int
    start_offset: int


def encode_leader_epoch_checkpoint(entries: Sequence[EpochEntry]) -> str:
    """The text of a ``leader-epoch-checkpoint`` file."""
    lines = ["0", str(len(entries))]
    lines += [f"{e.epoch} {e.start_offset}" for e in entries]
    return "\n".join(lines) + "\n"


def parse_leader_epoch_checkpoint(text: str) -> list[EpochEntry]:
    """Parse a ``leader-epoch-checkpoint`` file.

    Raises:
        UnsupportedVersionError: version other than 0.
        InvalidValueError: malformed lines or a count that does not match.
    """
    lines = text.splitlines()
    if len(lines) < 2:
        raise InvalidValueError("checkpoint needs a version and a count line", "checkpoint", 0)
    try:
        version = int(lines[0])
        count = int(lines[1])
    except ValueError:
        raise InvalidValueError("non-numeric version or count", "checkpoint", 0) from None
    if version != 0:
        raise UnsupportedVersionError("LeaderEpochCheckpoint", version, "checkpoint.version", 0)
    body = lines[2:]
    if len(body) != count:
        raise InvalidValueError(
            f"count says {count} entries, found {len(body)}", "checkpoint.entries", 0
        )
    out = []
    for i, line in enumerate(body):
        parts = line.split()
        if len(parts) != 2:
            raise InvalidValueError(f"malformed line {line!r}", f"checkpoint.entries[{i}]", 0)
        try:
            out.append(EpochEntry(int(parts[0]), int(parts[1])))
        except ValueError:
            raise InvalidValueError(
                f"malformed line {line!r}", f"checkpoint.entries[{i}]", 0
            ) from None
    return out


def kafka_uuid_string(value: uuid.UUID) -> str:
    """A UUID as Kafka's ``Uuid.toString`` prints it (22 URL-safe Base64 characters)."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def parse_kafka_uuid(text: str) -> uuid.UUID:
    """Inverse of :func:`kafka_uuid_string`."""
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"{text!r} is not a Kafka Uuid")
    return uuid.UUID(bytes=raw)


def encode_partition_metadata(topic_id: uuid.UUID) -> str:
    """The text of a ``partition.metadata`` file."""
    return f"version: 0\ntopic_id: {kafka_uuid_string(topic_id)}"


def parse_partition_metadata(text: str) -> uuid.UUID:
    """The topic id in a ``partition.metadata`` file.

    Raises:
        UnsupportedVersionError: version other than 0.
        InvalidValueError: missing or malformed fields.
    """
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if ":" in line:
            name, _, value = line.partition(":")
            fields[name.strip()] = value.strip()
    if fields.get("version") != "0":
        raw = fields.get("version", "missing")
        version = int(raw) if raw.lstrip("-").isdigit() else -1
        raise UnsupportedVersionError("PartitionMetadata", version, "partition.metadata.version")
    try:
        return parse_kafka_uuid(fields["topic_id"])
    except (KeyError, ValueError):
        raise InvalidValueError(
            "missing or malformed topic_id", "partition.metadata.topic_id", 0
        ) from None
