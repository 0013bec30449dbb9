"""``offsetscope decode segment``: a segment file, record by record, as JSON or as DumpLogSegments text.

``--format json`` prints one JSON object per record: its batch (offsets, position, size, magic,
codec, CRC and whether it is valid, producer id/epoch, base sequence, transactional and control
flags, delete horizon), its own coordinates (offset, timestamp, sequence, key and value sizes),
and the decoded key and value in the console-formatter shape (``{"type":1,"data":{...}}``), a
control record's type and coordinator epoch, an unknown record's reason and Base64 bytes, or an
undecodable record's error with field path and byte offset.

``--format dump-log`` prints what Kafka's ``kafka-dump-log.sh --files F --offsets-decoder`` (or
``--transaction-log-decoder``) prints, line for line (``Dumping``, ``Log starting offset``, one
batch line, then ``| offset: ...`` per record with ``key:`` and ``payload:``), so the two can be
diffed. ``--status-format number`` reproduces Kafka 4.1-4.3, which printed
``transactionStatus`` as a number (4.4 prints the name, KAFKA-20712).
"""

from __future__ import annotations

import argparse
import base64
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from offsetscope.protocol import codec, errors
from offsetscope.protocol.json_format import console_json, dump_log_key, dump_log_payload, dumps
from offsetscope.protocol.log import ScanReport, read_segment
from offsetscope.protocol.log.control import ControlRecordType, EndTxnMarker, parse_control_key
from offsetscope.protocol.log.model import Record, RecordBatch
from offsetscope.protocol.records import CoordinatorRecord, UnknownRecord
from offsetscope.protocol.registry import INTERNAL_TOPICS, record_type

_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-\d+$")
_COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
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
        "compression": _COMPRESSION_NAMES.get(int(batch.compression), str(batch.compression)),
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


def record_json(topic: str | None, batch: RecordBatch, record: Record) -> dict[str, Any]:
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
        out["key"] = {"type": decoded.record_type, "data": "unknown", "bytes": _b64(record.key)}
        out["value"] = (
            None
            if record.value is None
            else {"version": decoded.value_version, "data": "unknown", "bytes": _b64(record.value)}
        )
        return out
    out.update(console_json(decoded))
    return out


# ----------------------------------------------------------------------------- DumpLogSegments text


def dump_log_lines(
    path: Path, topic: str | None, *, status_format: str = "name", report: ScanReport | None = None
) -> Iterator[str]:
    """The lines ``kafka-dump-log.sh --files PATH --offsets-decoder`` prints to stdout."""
    rep = report if report is not None else ScanReport()
    yield f"Dumping {path}"
    yield f"Log starting offset: {int(path.stem)}"
    for batch in read_segment(path, report=rep):
        yield _batch_line(batch)
        for record in batch.records:
            yield _record_line(topic, batch, record, status_format)
    if rep.invalid_tail_bytes:
        yield f"Found {rep.invalid_tail_bytes} invalid bytes at the end of {path.name}"


def _batch_line(batch: RecordBatch) -> str:
    codec_name = _COMPRESSION_NAMES.get(int(batch.compression), str(batch.compression))
    if batch.magic >= 2:
        horizon = batch.delete_horizon_ms
        horizon_text = "OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]"
        head = (
            f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} "
            f"count: {batch.records_count} baseSequence: {batch.base_sequence} "
            f"lastSequence: {batch.last_sequence} producerId: {batch.producer_id} "
            f"producerEpoch: {batch.producer_epoch} "
            f"partitionLeaderEpoch: {batch.partition_leader_epoch} "
            f"isTransactional: {_bool(batch.is_transactional)} "
            f"isControl: {_bool(batch.is_control)} deleteHorizonMs: {horizon_text}"
        )
    else:
        head = f"offset: {batch.last_offset}"
    return (
        f"{head} position: {batch.position} {batch.timestamp_type.display_name}: {batch.max_timestamp} "
        f"size: {batch.size} magic: {batch.magic} compresscodec: {codec_name} "
        f"crc: {batch.crc} isvalid: {_bool(batch.crc_valid)}"
    )


def _bool(flag: bool) -> str:
    return "true" if flag else "false"


def _record_line(topic: str | None, batch: RecordBatch, record: Record, status_format: str) -> str:
    line = (
        f"| offset: {record.offset} {batch.timestamp_type.display_name}: {record.timestamp} "
        f"keySize: {record.key_size} valueSize: {record.value_size}"
    )
    if batch.magic >= 2:
        keys = ",".join(k for k, _ in record.headers)
        line += f" sequence: {record.sequence} headerKeys: [{keys}]"
    else:
        line += f" isValid: {_bool(record.crc_valid)} crc: {record.crc}"
    if batch.is_control:
        return line + _control_text(record)
    return line + _contents(topic, record, status_format)


def _control_text(record: Record) -> str:
    try:
        key = parse_control_key(record.key)
    except errors.DecodeError as exc:
        return f" controlType: error ({exc})"
    if key.is_transaction_marker:
        marker = EndTxnMarker.decode(record.key, record.value)
        name = "COMMIT" if marker.control_type is ControlRecordType.COMMIT else "ABORT"
        return f" endTxnMarker: {name} coordinatorEpoch: {marker.coordinator_epoch}"
    if key.is_known:
        return f" controlType: {key.type.name}({key.type_id})"
    return f" controlType: UNKNOWN({key.type_id})"


def _contents(topic: str | None, record: Record, status_format: str) -> str:
    if topic not in INTERNAL_TOPICS:
        return ""
    try:
        decoded = codec.decode_record(topic, record.key, record.value)
    except errors.DecodeError as exc:
        return f" key: Error at offset {record.offset}, skipping. {exc}"
    if isinstance(decoded, UnknownRecord) or not _kafka_knows(decoded):
        type_id = decoded.record_type
        if (
            isinstance(decoded, UnknownRecord)
            and decoded.value_version is not None
            and (record_type(topic, type_id or 0) is not None)
        ):
            return (
                f" key: Error at offset {record.offset}, skipping. Unknown record version "
                f"{decoded.value_version} for record type {type_id}"
            )
        return f" key: Unknown record type {type_id} at offset {record.offset}, skipping."
    payload = dump_log_payload(decoded)
    if status_format == "number" and topic == "__transaction_state" and decoded.value is not None:
        payload = _STATUS.sub(
            f'"transactionStatus":{decoded.value["transactionStatus"]}', payload, count=1
        )
    return f" key: {dump_log_key(decoded)} payload: {payload}"


def _kafka_knows(record: CoordinatorRecord) -> bool:
    rt = record_type(record.topic, record.record_type)
    return rt is not None and rt.in_kafka


# ----------------------------------------------------------------------------- command


def _run(args: argparse.Namespace) -> int:
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
            lines = dump_log_lines(path, topic, status_format=args.status_format, report=report)
            out.writelines(f"{line}\n" for line in lines)
        else:
            for batch in read_segment(path, report=report):
                for record in batch.records:
                    out.write(dumps(record_json(topic, batch, record)))
                    out.write("\n")
        for diag in report.diagnostics:
            print(f"warning: {path}: {diag}", file=sys.stderr)
    return 0


def add_segment_parser(decode_sub: Any) -> None:
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
    seg.set_defaults(handler=_run)


__all__ = ["add_segment_parser", "dump_log_lines", "record_json", "topic_of"]
