"""Control records: the key of every record in a control batch, and transaction markers.

Mirrors Kafka's ``ControlRecordType`` and ``EndTransactionMarker`` (``docs/formats.md``
section 6). A control batch is a v2 batch with attribute bit 5 set; each of its records has::

    key   = int16 version (0; Kafka reads higher versions as 0, rejects negative ones)
            int16 type    (0 ABORT, 1 COMMIT, 2 LEADER_CHANGE, 3 SNAPSHOT_HEADER,
                           4 SNAPSHOT_FOOTER, 5 KRAFT_VERSION, 6 KRAFT_VOTERS; others UNKNOWN)
    value = for ABORT/COMMIT the EndTxnMarker:
            int16 version (0; higher read as 0), int32 coordinatorEpoch     (6 bytes)

The commit/abort meaning is the key type; the transaction is identified by the batch's producer
id (a marker closes every open transactional batch of that producer in the partition). Kafka's
clients ignore unknown control types, so an unknown type is a value here, not an error.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from offsetscope.protocol.errors import InvalidValueError, TruncatedError

_KEY = struct.Struct(">hh")
_MARKER = struct.Struct(">hi")

CONTROL_KEY_SIZE = _KEY.size
END_TXN_MARKER_SIZE = _MARKER.size


class ControlRecordType(IntEnum):
    """Control record types as ``ControlRecordType`` numbers them (UNKNOWN = -1 in Kafka)."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


_KNOWN_TYPES = frozenset(t.value for t in ControlRecordType if t is not ControlRecordType.UNKNOWN)


@dataclass(frozen=True, slots=True)
class ControlKey:
    """A decoded control record key.

    ``type_id`` keeps the number from the wire even when it is unknown (``type`` is then
    ``UNKNOWN``), so ``DumpLogSegments``' ``controlType: UNKNOWN(<id>)`` can be reproduced.
    """

    version: int
    type_id: int

    @property
    def type(self) -> ControlRecordType:
        return (
            ControlRecordType(self.type_id)
            if self.type_id in _KNOWN_TYPES
            else (ControlRecordType.UNKNOWN)
        )

    @property
    def is_known(self) -> bool:
        return self.type_id in _KNOWN_TYPES

    @property
    def is_transaction_marker(self) -> bool:
        return self.type_id in (ControlRecordType.ABORT, ControlRecordType.COMMIT)


def parse_control_key(key: bytes | None, *, path: str = "key", offset: int = 0) -> ControlKey:
    """Decode a control record key.

    Args:
        key: the record key (4 bytes; extra bytes of a future version are ignored, as Kafka does).
        path: field path for errors.
        offset: byte offset of the key in the enclosing buffer, for errors.

    Returns:
        The key; an unknown type is returned, not raised.

    Raises:
        TruncatedError: null key or fewer than 4 bytes.
        InvalidValueError: negative version.
    """
    if key is None or len(key) < CONTROL_KEY_SIZE:
        available = 0 if key is None else len(key)
        raise TruncatedError(f"{path}.version", offset, CONTROL_KEY_SIZE, available)
    version, type_id = _KEY.unpack_from(key, 0)
    if version < 0:
        raise InvalidValueError(
            f"invalid negative control record key version {version}",
            path=f"{path}.version",
            offset=offset,
        )
    return ControlKey(version=version, type_id=type_id)


def encode_control_key(type_id: int | ControlRecordType, *, version: int = 0) -> bytes:
    """Encode a control record key (``int16 version, int16 type``)."""
    return _KEY.pack(version, int(type_id))


@dataclass(frozen=True, slots=True)
class EndTxnMarker:
    """The value of an ABORT or COMMIT control record.

    ``coordinator_epoch`` is the epoch of the transaction coordinator that wrote the marker; the
    partition leader uses it to fence markers from a stale coordinator.
    """

    committed: bool
    coordinator_epoch: int
    version: int = 0

    @property
    def control_type(self) -> ControlRecordType:
        return ControlRecordType.COMMIT if self.committed else ControlRecordType.ABORT

    def encode_key(self) -> bytes:
        """The control record key of this marker."""
        return encode_control_key(self.control_type)

    def encode_value(self) -> bytes:
        """The 6-byte marker value (``int16 version, int32 coordinatorEpoch``)."""
        return _MARKER.pack(self.version, self.coordinator_epoch)

    @classmethod
    def decode(
        cls,
        key: bytes | None,
        value: bytes | None,
        *,
        path: str = "",
        offset: int = 0,
    ) -> EndTxnMarker:
        """Decode a marker from its control record key and value.

        Args:
            key: the control record key; its type must be ABORT or COMMIT.
            value: the marker value.
            path: field path prefix for errors (``batch[3].records[0]``).
            offset: byte offset of the value in the enclosing buffer, for errors.

        Raises:
            TruncatedError: key or value too short (or null).
            InvalidValueError: the key is not a transaction marker, or a negative version.
        """
        prefix = f"{path}." if path else ""
        control = parse_control_key(key, path=f"{prefix}key", offset=offset)
        if not control.is_transaction_marker:
            raise InvalidValueError(
                f"control type {control.type_id} is not a transaction marker",
                path=f"{prefix}key.type",
                offset=offset,
            )
        if value is None or len(value) < END_TXN_MARKER_SIZE:
            available = 0 if value is None else len(value)
            raise TruncatedError(f"{prefix}value", offset, END_TXN_MARKER_SIZE, available)
        version, epoch = _MARKER.unpack_from(value, 0)
        if version < 0:
            raise InvalidValueError(
                f"invalid negative end transaction marker version {version}",
                path=f"{prefix}value.version",
                offset=offset,
            )
        return cls(
            committed=control.type_id == ControlRecordType.COMMIT,
            coordinator_epoch=epoch,
            version=version,
        )
