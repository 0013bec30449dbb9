"""One error hierarchy for everything that turns bytes into records.

Every :class:`DecodeError` carries the *field path* where decoding failed
(``value.members[2].memberId``, ``batch.records[5].valueLength``) and the *byte offset* into
the buffer being decoded, as attributes, so the pipeline can put them in the quarantine table
and the CLI can print them.

Two policies sit on top (``docs/design.md``, "Conventions"): an unknown record type is not an
error for the pipeline (Kafka logs and skips it; we keep it as an ``unknown`` row), every other
subclass here sends the record to quarantine. Infrastructure errors (I/O, Delta) never derive
from this class.
"""

from __future__ import annotations


class DecodeError(ValueError):
    """Bytes could not be decoded; ``path`` and ``offset`` say where."""

    def __init__(self, message: str, path: str = "", offset: int = 0) -> None:
        self.reason = message
        self.path = path
        self.offset = offset
        super().__init__(self._render())

    def _render(self) -> str:
        where = f" at {self.path}" if self.path else ""
        return f"{self.reason}{where} (byte offset {self.offset})"

    def relocated(self, prefix: str, base_offset: int) -> DecodeError:
        """The same error seen from an enclosing structure (path prefixed, offset shifted)."""
        path = f"{prefix}.{self.path}" if prefix and self.path else (prefix or self.path)
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.path = path
        clone.offset = self.offset + base_offset
        ValueError.__init__(clone, clone._render())
        return clone


class TruncatedError(DecodeError):
    """The buffer ended before a field was complete."""

    def __init__(self, path: str, offset: int, needed: int, available: int) -> None:
        self.needed = needed
        self.available = available
        super().__init__(f"truncated: need {needed} bytes, {available} left", path, offset)


class InvalidLengthError(DecodeError):
    """A length or count prefix is negative (and not the null marker) or larger than the buffer."""


class InvalidStringError(DecodeError):
    """A string is not valid UTF-8."""


class InvalidVarintError(DecodeError):
    """A varint runs past its maximum width."""


class InvalidTaggedFieldError(DecodeError):
    """A tagged-field section is malformed (tags out of order, size mismatch)."""


class NullNotAllowedError(DecodeError):
    """A null marker appeared in a field that is not nullable at this version."""


class UnsupportedVersionError(DecodeError):
    """A known schema was asked to decode a version outside its valid range."""

    def __init__(self, schema: str, version: int, path: str = "", offset: int = 0) -> None:
        self.schema = schema
        self.version = version
        super().__init__(f"{schema} has no version {version}", path, offset)


class UnknownRecordTypeError(DecodeError):
    """A coordinator key names a record type this library does not know."""

    def __init__(self, record_type: int, path: str = "key", offset: int = 0) -> None:
        self.record_type = record_type
        super().__init__(f"unknown record type {record_type}", path, offset)


class TrailingBytesError(DecodeError):
    """A fixed-size message was followed by bytes that belong to no field."""


class InvalidValueError(DecodeError):
    """A field holds a value the format forbids (an unknown enum code where one is required)."""


# ----------------------------------------------------------------- log segments and batches


class CorruptBatchError(DecodeError):
    """A record batch or legacy message is structurally invalid."""


class CrcMismatchError(CorruptBatchError):
    """A batch's stored CRC differs from the CRC computed over its bytes."""

    def __init__(self, path: str, offset: int, stored: int, computed: int) -> None:
        self.stored = stored
        self.computed = computed
        super().__init__(f"CRC mismatch: stored {stored}, computed {computed}", path, offset)


class UnsupportedMagicError(CorruptBatchError):
    """A batch declares a magic byte other than 0, 1 or 2."""


class CompressionError(CorruptBatchError):
    """A compressed records section could not be decompressed."""
