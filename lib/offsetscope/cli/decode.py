"""``offsetscope decode`` and ``offsetscope partition-for``: Kafka's internal-topic records by hand.

::

    offsetscope decode record --topic __consumer_offsets --key HEX [--value HEX]
    offsetscope decode segment FILE.log [--format json|dump-log] [--topic T]
    offsetscope partition-for ID [--partitions 50]

``decode record`` prints one key/value pair in the console-formatter shape
(``{"key":{"type":1,"data":{...}},"value":{"version":3,"data":{...}}}``); a record of a type or
version Kafka has not defined is printed with ``"data":"unknown"`` and its Base64 bytes.

``decode segment --format json`` prints one JSON object per record: its batch (offsets,
position, size, magic, codec, CRC and whether it is valid, producer id/epoch, base sequence,
transactional and control flags, delete horizon), its own coordinates (offset, timestamp,
sequence, key and value sizes), and the decoded key and value in the console-formatter shape, a
control record's type and coordinator epoch, an unknown record's reason and Base64 bytes, or an
undecodable record's error with field path and byte offset.

``decode segment --format dump-log`` prints what Kafka's ``kafka-dump-log.sh --files F
--offsets-decoder`` (or ``--transaction-log-decoder``) prints, line for line (``Dumping``, ``Log
starting offset``, one batch line, then ``| offset: ...`` per record with ``key:`` and
``payload:``), so the two can be diffed. ``--status-format number`` reproduces Kafka 4.1-4.3,
which printed ``transactionStatus`` as a number (4.4 prints the name).

Exit codes: 0 success, 1 the input could not be decoded (one line on stderr naming the field path
and byte offset), 2 bad usage.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import re
import sys
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from offsetscope.cli.common import positive_int
from offsetscope.protocol import codec, errors
from offsetscope.protocol.dump_log import COMPRESSION_NAMES, dump_log_bytes
from offsetscope.protocol.json_format import console_json, dumps
from offsetscope.protocol.log import (
    ScanReport,
    read_segment,
)
from offsetscope.protocol.log.control import EndTxnMarker, parse_control_key
from offsetscope.protocol.log.model import Record, RecordBatch
from offsetscope.protocol.partitioner import partition_for
from offsetscope.protocol.records import CoordinatorRecord, UnknownRecord
from offsetscope.protocol.registry import INTERNAL_TOPICS

_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-\d+$")
_STATUS = re.compile(r'"transactionStatus":"(\w+)"')


def topic_of(path: Path) -> str | None:
    """The topic a segment belongs to, from its partition directory's name."""
    match = _PARTITION_DIR.match(path.resolve().parent.name)
    return match.group("topic") if match else None


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _batch_json(batch: RecordBatch) -> dict[str, Any]:
    return {
        "baseOffset": batch.base_offset,
        "lastOffset": batch.last_offset,
        "count": batch.records_count,
        "position": batch.position,
        "size": batch.size,
        "magic": batch.magic,
        "compression": COMPRESSION_NAMES[int(batch.compression)],
        "timestampType": batch.timestamp_type.display_name,
        "maxTimestamp": batch.max_timestamp,
        "crc": batch.crc,
        "crcValid": batch.crc_valid,
        "producerId": batch.producer_id,
        "producerEpoch": batch.producer_epoch,
        "baseSequence": batch.base_sequence,
        "partitionLeaderEpoch": batch.partition_leader_epoch,
        "isTransactional": batch.is_transactional,
        "isControl": batch.is_control,
        "deleteHorizonMs": batch.delete_horizon_ms,
    }


def _control_json(record: Record) -> dict[str, Any]:
    try:
        key = parse_control_key(record.key)
        out: dict[str, Any] = {"type": key.type.name if key.is_known else f"UNKNOWN({key.type_id})"}
        if key.is_transaction_marker:
            out["coordinatorEpoch"] = EndTxnMarker.decode(
                record.key, record.value
            ).coordinator_epoch
    except errors.DecodeError as exc:
        return {"error": _error_json(exc)}
    return out


def _error_json(exc: errors.DecodeError) -> dict[str, Any]:
    return {
        "class": type(exc).__name__,
        "message": exc.reason,
        "path": exc.path,
        "offset": exc.offset,
    }


def segment_record_json(topic: str | None, batch: RecordBatch, record: Record) -> dict[str, Any]:
    """One record of a segment as the ``--format json`` object."""
    out: dict[str, Any] = {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "sequence": record.sequence,
        "keySize": record.key_size,
        "valueSize": record.value_size,
        "batch": _batch_json(batch),
    }
    if batch.is_control:
        out["control"] = _control_json(record)
        return out
    if topic not in INTERNAL_TOPICS:
        out["key"] = _b64(record.key)
        out["value"] = _b64(record.value)
        return out
    try:
        decoded = codec.decode_record(topic, record.key, record.value)
    except errors.DecodeError as exc:
        out["error"] = _error_json(exc)
        return out
    if isinstance(decoded, UnknownRecord):
        out["unknown"] = decoded.reason
        out["key"], out["value"] = _unknown_parts(decoded)
        return out
    out.update(console_json(decoded))
    return out


# ----------------------------------------------------------------------------- command


def _hex(text: str) -> bytes:
    cleaned = "".join(text.split())
    if cleaned.startswith(("0x", "0X")):
        cleaned = cleaned[2:]
    try:
        return binascii.unhexlify(cleaned)
    except (binascii.Error, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"not hexadecimal: {exc}") from None


def _unknown_parts(record: UnknownRecord) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Key and value of a record of unknown type or version (Kafka 3.9's ``"data":"unknown"``),
    with their bytes in Base64."""
    key = {"type": record.record_type, "data": "unknown", "bytes": _b64(record.key_bytes)}
    if record.value_bytes is None:
        return key, None
    return key, {
        "version": record.value_version,
        "data": "unknown",
        "bytes": _b64(record.value_bytes),
    }


def record_json(record: CoordinatorRecord | UnknownRecord) -> dict[str, Any]:
    """One decoded key/value pair as ``decode record`` prints it."""
    if isinstance(record, UnknownRecord):
        key, value = _unknown_parts(record)
        return {"key": key, "value": value, "unknown": record.reason}
    return console_json(record)


def _decode_record(args: argparse.Namespace) -> int:
    try:
        record = codec.decode_record(args.topic, args.key, args.value)
    except errors.DecodeError as exc:
        print(
            f"error: {type(exc).__name__}: {exc.reason} at {exc.path} (byte offset {exc.offset})",
            file=sys.stderr,
        )
        return 1
    print(dumps(record_json(record)))
    return 0


def _partition_for(args: argparse.Namespace) -> int:
    print(partition_for(args.id, args.partitions))
    return 0


def _decode_segment(args: argparse.Namespace) -> int:
    paths = [Path(f) for f in args.files]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        print(f"error: {missing[0]} is not a file", file=sys.stderr)
        return 2
    out: TextIO = sys.stdout
    for path in paths:
        topic = args.topic or topic_of(path)
        report = ScanReport()
        if args.format == "dump-log":
            blocks = dump_log_bytes(path, topic, status_format=args.status_format, report=report)
            binary: BinaryIO | None = getattr(out, "buffer", None)
            if binary is None:  # a text-only stream (redirected to a StringIO)
                out.writelines(block.decode("utf-8") for block in blocks)
            else:
                # The text is UTF-8 already: straight to the binary stream, after what the
                # text layer holds.
                out.flush()
                binary.writelines(blocks)
                binary.flush()
        else:
            for batch in read_segment(path, report=report):
                for record in batch.records:
                    out.write(dumps(segment_record_json(topic, batch, record)))
                    out.write("\n")
        for diag in report.diagnostics:
            print(f"warning: {path}: {diag}", file=sys.stderr)
    return 0


def register(subparsers: Any) -> None:
    """Add ``decode record``, ``decode segment`` and ``partition-for``."""
    decode = subparsers.add_parser("decode", help="decode records or segment files")
    decode_sub = decode.add_subparsers(dest="what", required=True)
    rec = decode_sub.add_parser("record", help="decode one key/value pair given as hex")
    rec.add_argument("--topic", required=True, choices=INTERNAL_TOPICS)
    rec.add_argument("--key", required=True, type=_hex, help="key bytes as hex")
    rec.add_argument(
        "--value", type=_hex, default=None, help="value bytes as hex (omit: tombstone)"
    )
    rec.set_defaults(handler=_decode_record)

    seg = decode_sub.add_parser("segment", help="decode .log segment files (in the order given)")
    seg.add_argument("files", nargs="+", metavar="FILE")
    seg.add_argument("--format", choices=("json", "dump-log"), default="json")
    seg.add_argument(
        "--topic",
        default=None,
        help="the topic whose schemas apply (default: from the partition directory name)",
    )
    seg.add_argument(
        "--status-format",
        choices=("name", "number"),
        default="name",
        help="transactionStatus as Kafka 4.4 (name) or 4.1-4.3 (number) prints it",
    )
    seg.set_defaults(handler=_decode_segment)

    pf = subparsers.add_parser(
        "partition-for", help="the internal-topic partition of a group or txn id"
    )
    pf.add_argument("id")
    pf.add_argument(
        "--partitions", type=positive_int, default=50, help="partitions of the topic (default 50)"
    )
    pf.set_defaults(handler=_partition_for)
