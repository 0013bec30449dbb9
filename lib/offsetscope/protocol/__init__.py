"""Pure-Python codecs for Kafka's internal topics (no pyspark here).

Public entry points:

* :func:`decode_record` / :func:`encode_record` / :func:`make_record` -- one coordinator record;
* :mod:`offsetscope.protocol.consumer_protocol` -- embedded subscriptions and assignments;
* :func:`partition_for` -- which internal-topic partition holds an id;
* :mod:`offsetscope.protocol.log` -- record batches, segments and partition directories;
* :mod:`offsetscope.protocol.errors` -- the ``DecodeError`` hierarchy.
"""

from __future__ import annotations

from offsetscope.protocol.codec import decode_record, encode_record, make_record
from offsetscope.protocol.errors import DecodeError
from offsetscope.protocol.partitioner import partition_for
from offsetscope.protocol.records import (
    OFFSETS_TOPIC,
    TRANSACTION_TOPIC,
    CoordinatorRecord,
    DecodedRecord,
    UnknownRecord,
)

__all__ = [
    "OFFSETS_TOPIC",
    "TRANSACTION_TOPIC",
    "CoordinatorRecord",
    "DecodeError",
    "DecodedRecord",
    "UnknownRecord",
    "decode_record",
    "encode_record",
    "make_record",
    "partition_for",
]
