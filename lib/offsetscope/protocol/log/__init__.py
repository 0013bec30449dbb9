"""Kafka's log format: record batches, legacy message sets, segment files and their indexes.

Everything a Kafka broker writes under ``<log.dir>/<topic>-<partition>/`` (``docs/formats.md``
sections 6 and 7), read and written byte for byte:

* :mod:`.batch` RecordBatch magic 2 (61-byte header, CRC-32C, zigzag-varint records);
* :mod:`.legacy` message sets magic 0 and 1 (CRC-32, compressed wrappers);
* :mod:`.compression` gzip, snappy (xerial framing and raw), lz4 (Kafka's frame, KIP-57),
  zstd, with bounded decompression;
* :mod:`.control` control record keys and transaction markers;
* :mod:`.reader` streaming iteration of buffers, ``.log`` files and partition directories,
  with torn-tail and CRC diagnostics;
* :mod:`.columnar` the fast path: batches and records as numpy columns;
* :mod:`.writer` batch encoding and a partition writer that rolls segments and writes indexes
  and checkpoints as a broker does;
* :mod:`.index` and :mod:`.checkpoint` the small files next to the segments.

Pure Python plus ``cramjam``, ``crc32c`` and ``numpy``; no Spark.
"""

from __future__ import annotations

from offsetscope.protocol.log.batch import decode_records, decode_v2_batch, encode_empty_batch
from offsetscope.protocol.log.checkpoint import (
    EpochEntry,
    encode_leader_epoch_checkpoint,
    encode_partition_metadata,
    kafka_uuid_string,
    parse_kafka_uuid,
    parse_leader_epoch_checkpoint,
    parse_partition_metadata,
)
from offsetscope.protocol.log.columnar import (
    BatchColumns,
    BatchHeaders,
    ColumnChunk,
    RecordColumns,
    gather_slices,
    iter_batch_columns,
    iter_segment_columns,
    scan_columns,
)
from offsetscope.protocol.log.compression import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    Compression,
    compress,
    decompress,
)
from offsetscope.protocol.log.control import (
    ControlKey,
    ControlRecordType,
    EndTxnMarker,
    encode_control_key,
    parse_control_key,
)
from offsetscope.protocol.log.index import (
    AbortedTxn,
    OffsetPosition,
    ProducerSnapshotEntry,
    TimestampOffset,
    encode_offset_index,
    encode_producer_snapshot,
    encode_time_index,
    encode_txn_index,
    read_offset_index,
    read_producer_snapshot,
    read_time_index,
    read_txn_index,
)
from offsetscope.protocol.log.legacy import decode_legacy_entry
from offsetscope.protocol.log.model import (
    Record,
    RecordBatch,
    RecordSpec,
    TimestampType,
    increment_sequence,
)
from offsetscope.protocol.log.reader import (
    CorruptBatch,
    CrcMismatch,
    Diagnostic,
    InvalidTail,
    ScanReport,
    SegmentFiles,
    list_segments,
    read_batches,
    read_partition_dir,
    read_segment,
    segment_file_name,
)
from offsetscope.protocol.log.writer import (
    AppendInfo,
    LogConfig,
    PartitionWriter,
    encode_batch,
    encode_end_txn_marker_batch,
)

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "AbortedTxn",
    "AppendInfo",
    "BatchColumns",
    "BatchHeaders",
    "ColumnChunk",
    "Compression",
    "ControlKey",
    "ControlRecordType",
    "CorruptBatch",
    "CrcMismatch",
    "Diagnostic",
    "EndTxnMarker",
    "EpochEntry",
    "InvalidTail",
    "LogConfig",
    "OffsetPosition",
    "PartitionWriter",
    "ProducerSnapshotEntry",
    "Record",
    "RecordBatch",
    "RecordColumns",
    "RecordSpec",
    "ScanReport",
    "SegmentFiles",
    "TimestampOffset",
    "TimestampType",
    "compress",
    "decode_legacy_entry",
    "decode_records",
    "decode_v2_batch",
    "decompress",
    "encode_batch",
    "encode_control_key",
    "encode_empty_batch",
    "encode_end_txn_marker_batch",
    "encode_leader_epoch_checkpoint",
    "encode_offset_index",
    "encode_partition_metadata",
    "encode_producer_snapshot",
    "encode_time_index",
    "encode_txn_index",
    "gather_slices",
    "increment_sequence",
    "iter_batch_columns",
    "iter_segment_columns",
    "kafka_uuid_string",
    "list_segments",
    "parse_control_key",
    "parse_kafka_uuid",
    "parse_leader_epoch_checkpoint",
    "parse_partition_metadata",
    "read_batches",
    "read_offset_index",
    "read_partition_dir",
    "read_producer_snapshot",
    "read_segment",
    "read_time_index",
    "read_txn_index",
    "scan_columns",
    "segment_file_name",
]
