"""Kafka's own DumpLogSegments as the oracle for offsetscope's decoder, on a real broker's log.

``make oracle`` (``python -m offsetscope.verify.oracle``) starts a fresh harness broker, drives it with
real clients through every scenario of :mod:`offsetscope.verify.harness.clients` plus enough commit
traffic (:func:`run_workload`), stops it, and then, for every segment of every
``__consumer_offsets-*``, ``__transaction_state-*`` (and, when share groups ran,
``__share_group_state-*``) directory, compares::

    kafka-dump-log --files <segments> --offsets-decoder              (__consumer_offsets)
    kafka-dump-log --files <segments> --transaction-log-decoder      (__transaction_state)
    kafka-dump-log --files <segments> --share-group-state-decoder    (__share_group_state)

with offsetscope's decode of the same files (``--log-dir DIR`` compares an existing log
directory instead, copied first when a broker may still be writing it).

What is compared, record by record (matched by file and offset) and field by field:

* per file: ``Log starting offset`` and any trailing lines (``Found N invalid bytes ...``);
* per batch, every field of the batch line: ``baseOffset lastOffset count baseSequence
  lastSequence producerId producerEpoch partitionLeaderEpoch isTransactional isControl
  deleteHorizonMs position`` timestamp type and ``maxTimestamp``, ``size magic compresscodec crc
  isvalid`` (magic 0/1: ``offset position ... isvalid``); batches without records too;
* per record: ``offset``, timestamp type and value, ``keySize valueSize`` and ``sequence
  headerKeys`` (magic 0/1: ``isValid crc``);
* its content: the key and the payload parsed as JSON and compared structurally (field paths
  such as ``payload.data.members[1].assignment.assignedPartitions[0].partitions``), so decoded
  consumer-protocol subscriptions and assignments, ``<DELETE>`` tombstones and every value
  count; control records by marker type and ``coordinatorEpoch``; unknown record types by type.
  A record both sides fail to decode matches on that alone: the error texts are each tool's own.

Offsetscope's side is built from :func:`offsetscope.protocol.log.read_segment` and
:func:`offsetscope.protocol.decode_record` rendered by :mod:`offsetscope.protocol.json_format`,
not by parsing offsetscope's own DumpLogSegments text, so the comparison checks the decoder, not
a formatter against itself.

Normalised, because it is documented to differ by tool version (``docs/formats.md`` section
9.1): ``transactionStatus`` is a number before Kafka 4.4 and a state name from 4.4
(KAFKA-20712); when the tools jar is older than 4.4 the number is mapped to its name. Nothing
else is normalised.

Output: one line per difference (``file:offset field: theirs=... ours=...``), then
``oracle: N records compared, M differ``. N counts records present on either side; M counts
records with any difference (their batch's included) plus each file-level or record-less batch
difference. The command exits 0 only if M is 0 and N is at least ``--min-records`` (1,000).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import re
import shutil
import struct
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException

from offsetscope import config as config_mod
from offsetscope.config import BrokerConfig
from offsetscope.history.events import GroupMetadataEvent, OffsetCommitEvent, TransactionLogEvent
from offsetscope.protocol import errors
from offsetscope.protocol.codec import decode_record
from offsetscope.protocol.dump_log import COMPRESSION_NAMES
from offsetscope.protocol.json_format import console_json
from offsetscope.protocol.log import ScanReport, read_segment
from offsetscope.protocol.log.control import ControlRecordType, EndTxnMarker, parse_control_key
from offsetscope.protocol.log.model import Record, RecordBatch
from offsetscope.protocol.records import OFFSETS_TOPIC, TRANSACTION_TOPIC, UnknownRecord
from offsetscope.protocol.registry import SHARE_STATE_TOPIC, record_type
from offsetscope.protocol.states import transaction_status_name
from offsetscope.verify.harness import clients as hc
from offsetscope.verify.harness.broker import Broker, BrokerError, run_dump_log, tools_version

__all__ = [
    "DECODERS",
    "Difference",
    "DumpBatch",
    "DumpRecord",
    "DumpSegment",
    "OracleReport",
    "WorkloadSummary",
    "compare_log_dir",
    "compare_segments",
    "internal_segments",
    "main",
    "normalise_transaction_status",
    "offsetscope_segment",
    "parse_dump_log",
    "run_workload",
    "snapshot_log_dir",
]

# The internal topics and the DumpLogSegments decoder option for each. ``__share_group_state``
# (KIP-932 share groups) is compared too when the broker has it: its records are coordinator
# records like the others, and Kafka 4.4 writes them as soon as a share consumer appears.
DECODERS = {
    OFFSETS_TOPIC: "--offsets-decoder",
    TRANSACTION_TOPIC: "--transaction-log-decoder",
    SHARE_STATE_TOPIC: "--share-group-state-decoder",
}
MIN_RECORDS = 1_000
_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime", "NoTimestampType")
# Words that start a record line's content (everything before is record metadata).
_CONTENT_MARKERS = (
    "key",
    "endTxnMarker",
    "controlType",
    "LeaderChange",
    "SnapshotHeader",
    "SnapshotFooter",
    "KRaftVersion",
    "KRaftVoters",
)
_TOKEN = re.compile(r"(\w+): (\[[^\]]*\]|\S+)(?: |$)")
_MARKER = re.compile(r"endTxnMarker: (\w+) coordinatorEpoch: (-?\d+)$")
_UNKNOWN = re.compile(r"Unknown record type (-?\d+) at offset (-?\d+), skipping\.$")
_INT = re.compile(r"-?\d+$")
_OPTIONAL_LONG = re.compile(r"OptionalLong\[(-?\d+)\]$")
_DECODER = json.JSONDecoder()
_FRAME = struct.Struct(">qi")  # every batch of every magic: int64 offset, int32 size
_ABSENT = "<absent>"
_VALUE_CHARS = 300


# ============================================================================ model


@dataclass(frozen=True, slots=True)
class DumpRecord:
    """One record line: its compared ``fields`` and uncompared ``notes`` (error texts)."""

    offset: int
    fields: Mapping[str, Any]
    notes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DumpBatch:
    """One batch line and the record lines under it."""

    fields: Mapping[str, Any]
    records: tuple[DumpRecord, ...]

    @property
    def position(self) -> int:
        return int(self.fields["position"])


@dataclass(frozen=True, slots=True)
class DumpSegment:
    """One dumped ``.log`` file: file-level fields (log start offset, trailing lines) and batches."""

    path: str
    fields: Mapping[str, Any]
    batches: tuple[DumpBatch, ...]

    def records(self) -> Iterator[tuple[DumpBatch, DumpRecord]]:
        for batch in self.batches:
            for record in batch.records:
                yield batch, record


@dataclass(frozen=True, slots=True)
class Difference:
    """One field that differs: where, which field, Kafka's value and offsetscope's."""

    file: str
    where: str  # "offset 12", "batch at position 340" or "file"
    field: str
    theirs: Any
    ours: Any

    def __str__(self) -> str:
        return (
            f"{self.file} {self.where} {self.field}: "
            f"theirs={_show(self.theirs)} ours={_show(self.ours)}"
        )


def _show(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _VALUE_CHARS else text[:_VALUE_CHARS] + "..."


@dataclass(frozen=True, slots=True)
class Comparison:
    """The comparison of one segment (or several): counts and every difference."""

    records: int = 0
    differing: int = 0
    differences: tuple[Difference, ...] = ()

    def __add__(self, other: Comparison) -> Comparison:
        return Comparison(
            self.records + other.records,
            self.differing + other.differing,
            self.differences + other.differences,
        )


@dataclass(frozen=True, slots=True)
class OracleReport:
    """The whole run: files and records compared, what differs, and how long each side took."""

    comparison: Comparison
    files: int
    records_by_topic: Mapping[str, int]
    tools_version: str
    dump_seconds: float
    decode_seconds: float

    @property
    def records(self) -> int:
        return self.comparison.records

    @property
    def differing(self) -> int:
        return self.comparison.differing

    @property
    def differences(self) -> tuple[Difference, ...]:
        return self.comparison.differences

    def summary_line(self) -> str:
        return f"oracle: {self.records} records compared, {self.differing} differ"

    def ok(self, min_records: int = MIN_RECORDS) -> bool:
        return self.differing == 0 and self.records >= min_records


# ============================================================================ Kafka's side


def _scalar(text: str) -> Any:
    if _INT.match(text):
        return int(text)
    if text in ("true", "false"):
        return text == "true"
    if text == "OptionalLong.empty":
        return None
    match = _OPTIONAL_LONG.match(text)
    if match:
        return int(match.group(1))
    return text


def _tokens(text: str, *, stop: Sequence[str] = ()) -> tuple[dict[str, Any], int]:
    """``name: value`` pairs from the start of ``text`` until a ``stop`` name; (fields, end)."""
    fields: dict[str, Any] = {}
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.group(1) in stop:
            break
        name, raw = match.group(1), match.group(2)
        if name in _TIMESTAMP_TYPES:
            fields["timestampType"] = name
            fields["timestamp"] = _scalar(raw)
        elif name == "headerKeys":
            inner = raw[1:-1]
            fields[name] = inner.split(",") if inner else []
        else:
            fields[name] = _scalar(raw)
        pos = match.end()
    return fields, pos


def _parse_batch_line(line: str) -> dict[str, Any]:
    fields, end = _tokens(line)
    if end < len(line):
        fields["unparsed"] = line[end:]
    # A batch line's timestamp is the batch's max timestamp.
    if "timestamp" in fields:
        fields["maxTimestamp"] = fields.pop("timestamp")
    return fields


def _parse_record_line(line: str) -> DumpRecord:
    body = line[2:]
    fields, end = _tokens(body, stop=_CONTENT_MARKERS)
    notes: dict[str, str] = {}
    content = body[end:]
    fields.update(_parse_content(content, notes))
    return DumpRecord(int(fields["offset"]), fields, notes)


def _parse_content(content: str, notes: dict[str, str]) -> dict[str, Any]:
    if not content:
        return {}
    if content.startswith("key: "):
        rest = content[len("key: ") :]
        unknown = _UNKNOWN.match(rest)
        if unknown:
            return {"unknownRecordType": int(unknown.group(1))}
        if rest.startswith("Error at offset "):
            notes["error"] = rest
            return {"error": True}
        try:
            key, end = _DECODER.raw_decode(rest)
        except json.JSONDecodeError:
            return {"unparsed": content}
        out: dict[str, Any] = {"key": key}
        tail = rest[end:]
        if not tail.startswith(" payload: "):
            out["unparsed"] = tail
            return out
        payload_text = tail[len(" payload: ") :]
        if payload_text == "<DELETE>":
            out["payload"] = "<DELETE>"
            return out
        try:
            payload, end = _DECODER.raw_decode(payload_text)
        except json.JSONDecodeError:
            out["unparsed"] = payload_text
            return out
        out["payload"] = payload
        if payload_text[end:]:
            out["unparsed"] = payload_text[end:]
        return out
    marker = _MARKER.match(content)
    if marker:
        return {"endTxnMarker": marker.group(1), "coordinatorEpoch": int(marker.group(2))}
    if content.startswith("controlType: "):
        return {"controlType": content[len("controlType: ") :]}
    return {"control": content}


def parse_dump_log(text: str) -> dict[str, DumpSegment]:
    """Parse DumpLogSegments' stdout into segments, keyed by the path it printed.

    Args:
        text: what ``kafka-dump-log --files ... --offsets-decoder`` (or
            ``--transaction-log-decoder``) printed, for one or more files.

    Returns:
        One :class:`DumpSegment` per ``Dumping <path>`` section.
    """
    segments: dict[str, DumpSegment] = {}
    path: str | None = None
    file_fields: dict[str, Any] = {}
    trailer: list[str] = []
    batches: list[DumpBatch] = []
    batch_fields: dict[str, Any] | None = None
    records: list[DumpRecord] = []

    def close_batch() -> None:
        nonlocal batch_fields, records
        if batch_fields is not None:
            batches.append(DumpBatch(batch_fields, tuple(records)))
        batch_fields, records = None, []

    def close_file() -> None:
        nonlocal file_fields, trailer, batches
        close_batch()
        if path is not None:
            segments[path] = DumpSegment(path, {**file_fields, "trailer": trailer}, tuple(batches))
        file_fields, trailer, batches = {}, [], []

    for line in text.splitlines():
        if line.startswith("Dumping "):
            close_file()
            path = line[len("Dumping ") :]
        elif line.startswith("Log starting offset: "):
            file_fields["logStartOffset"] = _scalar(line[len("Log starting offset: ") :])
        elif line.startswith("| "):
            if batch_fields is None:
                trailer.append(line)
            else:
                records.append(_parse_record_line(line))
        elif line.startswith(("baseOffset: ", "offset: ")):
            close_batch()
            batch_fields = _parse_batch_line(line)
        elif line.strip():
            close_batch()
            trailer.append(line)
    close_file()
    return segments


def normalise_transaction_status(segment: DumpSegment) -> DumpSegment:
    """Map a numeric ``transactionStatus`` (Kafka 4.1-4.3 tools) to the 4.4 state name."""
    batches = []
    for batch in segment.batches:
        records = []
        for record in batch.records:
            payload = record.fields.get("payload")
            if isinstance(payload, dict) and isinstance(payload.get("data"), dict):
                data: dict[str, Any] = payload["data"]
                status = data.get("transactionStatus")
                if isinstance(status, int) and not isinstance(status, bool):
                    data = {**data, "transactionStatus": transaction_status_name(status)}
                    fields = {**record.fields, "payload": {**payload, "data": data}}
                    record = DumpRecord(record.offset, fields, record.notes)
            records.append(record)
        batches.append(DumpBatch(batch.fields, tuple(records)))
    return DumpSegment(segment.path, segment.fields, tuple(batches))


# ============================================================================ offsetscope's side


def _batch_fields(batch: RecordBatch) -> dict[str, Any]:
    head: dict[str, Any]
    if batch.magic >= 2:
        head = {
            "baseOffset": batch.base_offset,
            "lastOffset": batch.last_offset,
            "count": batch.records_count,
            "baseSequence": batch.base_sequence,
            "lastSequence": batch.last_sequence,
            "producerId": batch.producer_id,
            "producerEpoch": batch.producer_epoch,
            "partitionLeaderEpoch": batch.partition_leader_epoch,
            "isTransactional": batch.is_transactional,
            "isControl": batch.is_control,
            "deleteHorizonMs": batch.delete_horizon_ms,
        }
    else:
        head = {"offset": batch.last_offset}
    return {
        **head,
        "position": batch.position,
        "timestampType": batch.timestamp_type.display_name,
        "maxTimestamp": batch.max_timestamp,
        "size": batch.size,
        "magic": batch.magic,
        "compresscodec": COMPRESSION_NAMES[int(batch.compression)],
        "crc": batch.crc,
        "isvalid": batch.crc_valid,
    }


def _record_fields(topic: str | None, batch: RecordBatch, record: Record) -> DumpRecord:
    fields: dict[str, Any] = {
        "offset": record.offset,
        "timestampType": batch.timestamp_type.display_name,
        "timestamp": record.timestamp,
        "keySize": record.key_size,
        "valueSize": record.value_size,
    }
    if batch.magic >= 2:
        fields["sequence"] = record.sequence
        fields["headerKeys"] = [k for k, _ in record.headers]
    else:
        fields["isValid"] = record.crc_valid
        fields["crc"] = record.crc
    notes: dict[str, str] = {}
    if batch.is_control:
        fields.update(_control_fields(record))
    elif topic in DECODERS:
        fields.update(_content_fields(topic, record, notes))
    return DumpRecord(record.offset, fields, notes)


def _control_fields(record: Record) -> dict[str, Any]:
    try:
        key = parse_control_key(record.key)
        if key.is_transaction_marker:
            marker = EndTxnMarker.decode(record.key, record.value)
            name = "COMMIT" if marker.control_type is ControlRecordType.COMMIT else "ABORT"
            return {"endTxnMarker": name, "coordinatorEpoch": marker.coordinator_epoch}
    except errors.DecodeError as exc:
        return {"controlType": f"error ({exc})"}
    if key.is_known:
        return {"controlType": f"{key.type.name}({key.type_id})"}
    return {"controlType": f"UNKNOWN({key.type_id})"}


def _content_fields(topic: str, record: Record, notes: dict[str, str]) -> dict[str, Any]:
    try:
        decoded = decode_record(topic, record.key, record.value)
    except errors.DecodeError as exc:
        notes["error"] = str(exc)
        return {"error": True}
    if isinstance(decoded, UnknownRecord):
        known = decoded.record_type is not None and record_type(topic, decoded.record_type)
        if decoded.value_version is not None and known:
            # A known type at a version this library does not know: Kafka fails to read it too
            # (it prints an error line), unless it knows that version.
            notes["error"] = decoded.reason
            return {"error": True}
        return {"unknownRecordType": decoded.record_type}
    rt = record_type(topic, decoded.record_type)
    if rt is None or not rt.in_kafka:
        # Types offsetscope knows but Kafka does not (early-access layouts): Kafka skips them.
        return {"unknownRecordType": decoded.record_type}
    rendered = console_json(decoded)
    # DumpLogSegments prints the record type and the value version as JSON strings.
    key = {"type": str(rendered["key"]["type"]), "data": rendered["key"]["data"]}
    value = rendered["value"]
    payload: Any = (
        "<DELETE>" if value is None else {"version": str(value["version"]), "data": value["data"]}
    )
    # Through JSON, so both sides hold the same Python types (lists, not tuples).
    return {"key": json.loads(json.dumps(key)), "payload": json.loads(json.dumps(payload))}


def offsetscope_segment(path: Path, topic: str | None) -> DumpSegment:
    """Offsetscope's decode of one segment file, in the shape :func:`parse_dump_log` gives."""
    report = ScanReport()
    batches = [
        DumpBatch(_batch_fields(b), tuple(_record_fields(topic, b, r) for r in b.records))
        for b in read_segment(path, report=report)
    ]
    trailer = []
    if report.invalid_tail_bytes:
        trailer.append(f"Found {report.invalid_tail_bytes} invalid bytes at the end of {path.name}")
    fields = {"logStartOffset": int(path.stem), "trailer": trailer}
    return DumpSegment(str(path), fields, tuple(batches))


# ============================================================================ comparison


def _diff(path: str, theirs: Any, ours: Any, out: list[tuple[str, Any, Any]]) -> None:
    if isinstance(theirs, dict) and isinstance(ours, dict):
        keys = list(theirs) + [k for k in ours if k not in theirs]
        for k in keys:
            _diff(f"{path}.{k}" if path else k, theirs.get(k, _ABSENT), ours.get(k, _ABSENT), out)
    elif isinstance(theirs, list) and isinstance(ours, list):
        if len(theirs) != len(ours):
            out.append((f"{path}.length", len(theirs), len(ours)))
        for i, (t, o) in enumerate(zip(theirs, ours, strict=False)):
            _diff(f"{path}[{i}]", t, o, out)
    elif type(theirs) is not type(ours) or theirs != ours:
        out.append((path, theirs, ours))


def compare_segments(
    theirs: DumpSegment, ours: DumpSegment, *, file: str | None = None
) -> Comparison:
    """Compare one segment as Kafka dumped it with offsetscope's decode of it.

    Args:
        theirs: parsed DumpLogSegments output (already normalised where documented).
        ours: :func:`offsetscope_segment` of the same file.
        file: the name printed with each difference (default: ``theirs.path``).

    Returns:
        Records compared, records (and file or record-less batch units) that differ, and
        every differing field.
    """
    name = file or theirs.path
    found: list[Difference] = []
    differing = 0

    raw: list[tuple[str, Any, Any]] = []
    _diff("", dict(theirs.fields), dict(ours.fields), raw)
    found += [Difference(name, "file", f, t, o) for f, t, o in raw]
    differing += 1 if raw else 0

    their_batches = {b.position: b for b in theirs.batches}
    our_batches = {b.position: b for b in ours.batches}
    batch_diffs: dict[int, list[Difference]] = {}
    for pos in sorted(their_batches.keys() | our_batches.keys()):
        t, o = their_batches.get(pos), our_batches.get(pos)
        where = f"batch at position {pos}"
        if t is None or o is None:
            diffs = [Difference(name, where, "batch", _present(t), _present(o))]
        else:
            raw = []
            _diff("", dict(t.fields), dict(o.fields), raw)
            diffs = [Difference(name, where, f, tv, ov) for f, tv, ov in raw]
        batch_diffs[pos] = diffs
        found += diffs
        # A difference in a batch without records still counts once.
        empty = (t is None or not t.records) and (o is None or not o.records)
        if diffs and empty:
            differing += 1

    their_records = {r.offset: (b.position, r) for b, r in theirs.records()}
    our_records = {r.offset: (b.position, r) for b, r in ours.records()}
    offsets = sorted(their_records.keys() | our_records.keys())
    for offset in offsets:
        where = f"offset {offset}"
        t_entry, o_entry = their_records.get(offset), our_records.get(offset)
        if t_entry is None or o_entry is None:
            found.append(Difference(name, where, "record", _present(t_entry), _present(o_entry)))
            differing += 1
            continue
        (t_pos, t_rec), (o_pos, o_rec) = t_entry, o_entry
        raw = []
        _diff("", dict(t_rec.fields), dict(o_rec.fields), raw)
        diffs = [Difference(name, where, f, tv, ov) for f, tv, ov in raw]
        if diffs and "error" in (t_rec.notes.keys() | o_rec.notes.keys()):
            diffs.append(
                Difference(
                    name,
                    where,
                    "error text",
                    t_rec.notes.get("error", ""),
                    o_rec.notes.get("error", ""),
                )
            )
        found += diffs
        if diffs or batch_diffs.get(t_pos) or batch_diffs.get(o_pos):
            differing += 1
    return Comparison(len(offsets), differing, tuple(found))


def _present(value: object) -> str:
    return _ABSENT if value is None else "present"


# ============================================================================ log directories


def internal_segments(log_dir: Path, topic: str) -> list[Path]:
    """Every ``.log`` segment of ``<topic>-<n>`` directories, by partition then base offset."""
    prefix = f"{topic}-"
    dirs = sorted(
        (d for d in log_dir.glob(f"{topic}-*") if d.is_dir() and d.name[len(prefix) :].isdigit()),
        key=lambda d: int(d.name[len(prefix) :]),
    )
    return [seg for d in dirs for seg in sorted(d.glob("*.log"))]


def snapshot_log_dir(source: Path, target: Path, topics: Iterable[str] = DECODERS) -> Path:
    """Copy the internal topics' segments of a (possibly live) log directory.

    Each copy is cut after its last complete batch (frames: int64 offset, int32 size), so a
    batch the broker was appending while it was copied is left out rather than torn; both
    decoders then read the same, consistent bytes.

    Returns:
        ``target``.
    """
    for topic in topics:
        for segment in internal_segments(source, topic):
            data = segment.read_bytes()
            end = 0
            while end + _FRAME.size <= len(data):
                _, size = _FRAME.unpack_from(data, end)
                if size <= 0 or end + _FRAME.size + size > len(data):
                    break
                end += _FRAME.size + size
            dest = target / segment.parent.name / segment.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data[:end])
    return target


def compare_log_dir(
    log_dir: Path,
    *,
    config: BrokerConfig | None = None,
    topics: Iterable[str] = DECODERS,
) -> OracleReport:
    """Run DumpLogSegments and offsetscope on every internal-topic segment and compare them.

    Args:
        log_dir: a Kafka ``log.dirs`` directory (not being written: see :func:`snapshot_log_dir`).
        config: the broker configuration naming the tools jars (default: ``[broker]`` defaults).
        topics: internal topics to compare (both by default).

    Returns:
        The report; see the module docstring for how N and M count.

    Raises:
        DumpLogError: Kafka's tool failed.
    """
    cfg = config or BrokerConfig()
    version = tools_version(cfg)
    major_minor = tuple(int(x) for x in version.split(".")[:2])
    numeric_status = major_minor < (4, 4)
    total = Comparison()
    files = 0
    by_topic: dict[str, int] = {}
    dump_s = decode_s = 0.0
    for topic in topics:
        segments = internal_segments(log_dir, topic)
        if not segments:
            by_topic[topic] = 0
            continue
        began = time.monotonic()
        theirs_all = parse_dump_log(
            run_dump_log(segments, None, config=cfg, extra_args=(DECODERS[topic],))
        )
        dump_s += time.monotonic() - began
        topic_total = Comparison()
        for segment in segments:
            key = str(segment.resolve())
            began = time.monotonic()
            ours = offsetscope_segment(segment.resolve(), topic)
            decode_s += time.monotonic() - began
            theirs = theirs_all.get(key)
            name = f"{segment.parent.name}/{segment.name}"
            if theirs is None:
                topic_total += Comparison(
                    0, 1, (Difference(name, "file", "dumped", _ABSENT, "present"),)
                )
                continue
            if numeric_status and topic == TRANSACTION_TOPIC:
                theirs = normalise_transaction_status(theirs)
            topic_total += compare_segments(theirs, ours, file=name)
            files += 1
        by_topic[topic] = topic_total.records
        total += topic_total
    return OracleReport(total, files, by_topic, version, dump_s, decode_s)


# ============================================================================ workload


@dataclass(frozen=True, slots=True)
class WorkloadSummary:
    """What :func:`run_workload` did, by name (for logs and assertions)."""

    topics: tuple[str, ...]
    groups: tuple[str, ...]
    transactional_ids: tuple[str, ...]
    commits: int
    seconds: float


def run_workload(
    bootstrap: str,
    log_dir: Path,
    *,
    scale: int = 200,
    kip848: bool = True,
    share: bool = True,
    tag: str | None = None,
    say: Any = None,
) -> WorkloadSummary:
    """Make a broker write every kind of record the coordinators write, with real clients.

    Groups with range, roundrobin and cooperative-sticky members joining and leaving, a member
    killed without leaving (session timeout), one exceeding max.poll.interval, static members
    restarting, explicit (with metadata), automatic and member-less commits, a deleted group
    (tombstones), transactions committing and aborting offsets, one timed out, a fenced
    zombie, optionally a KIP-848 group and a share group, and ``scale`` rounds of explicit commits over six
    partitions (6 x ``scale`` OffsetCommit records).

    Args:
        bootstrap: the broker.
        log_dir: its ``log.dirs``, to wait on what it wrote.
        scale: rounds of commit traffic.
        kip848: include a KIP-848 (``group.protocol=consumer``) group.
        share: include a KIP-932 share group (``__consumer_offsets`` types 10-15 and
            ``__share_group_state``).
        tag: suffix of every name (default: random), so runs never collide.
        say: progress callback taking one string (default: silent).

    Returns:
        The names used and the number of synchronous commits made.
    """
    tag = tag or uuid.uuid4().hex[:8]
    note = say if callable(say) else (lambda _msg: None)
    began = time.monotonic()
    data, out = f"oracle-data-{tag}", f"oracle-out-{tag}"
    hc.create_topic(bootstrap, data, 6)
    hc.create_topic(bootstrap, out, 2)
    groups: list[str] = []
    txn_ids: list[str] = []
    commits = 0

    def group(name: str) -> str:
        groups.append(f"oracle-{name}-{tag}")
        return groups[-1]

    def member(g: str, client: str, **kwargs: Any) -> hc.MemberConfig:
        return hc.MemberConfig(g, (data,), client_id=client, heartbeat_interval_ms=300, **kwargs)

    with hc.ClientPool(bootstrap) as pool:
        producer = pool.idempotent_producer(client_id="oracle-producer")
        for i in range(120):
            producer.send(data, f"record-{i}".encode(), key=f"k{i}".encode(), partition=i % 6)
        producer.flush()

        for strategy in hc.STRATEGIES:
            note(f"workload: {strategy} members join and leave")
            g = group(strategy)
            a = pool.member(member(g, "a", strategy=strategy))
            a.wait_assigned()
            b = pool.member(member(g, "b", strategy=strategy))
            b.wait_for(lambda v: len(v.assignment) == 3, 60, "half the partitions")
            a.wait_for(lambda v: len(v.assignment) == 3, 60, "half the partitions")
            _check(a.commit(dict.fromkeys(a.assignment, 1)))
            commits += 1
            b.leave()
            a.wait_for(lambda v: len(v.assignment) == 6, 60, "all partitions")
            a.leave()

        note("workload: a member killed without leaving (session timeout)")
        g = group("crash")
        survivor = pool.member(member(g, "survivor", session_timeout_ms=2_000))
        survivor.wait_assigned()
        victim = pool.member(member(g, "victim", session_timeout_ms=2_000), isolated=True)
        victim.wait_for(lambda v: len(v.assignment) == 3, 60, "half the partitions")
        victim.crash()
        survivor.wait_for(lambda v: len(v.assignment) == 6, 60, "all partitions after expiry")

        note("workload: a member exceeding max.poll.interval.ms")
        slow = pool.member(member(g, "slow", session_timeout_ms=2_000, max_poll_interval_ms=3_000))
        slow.wait_for(lambda v: len(v.assignment) == 3, 60, "half the partitions")
        slow.stall()
        survivor.wait_for(lambda v: len(v.assignment) == 6, 60, "all partitions after max poll")
        slow.resume()
        slow.wait_for(
            lambda v: "_MAX_POLL_EXCEEDED" in v.error_names() and len(v.assignment) == 3,
            60,
            "rejoined",
        )
        slow.leave()
        survivor.leave()

        note("workload: static members restarting within the session timeout")
        g = group("static")
        s1 = pool.member(member(g, "static-1", instance_id="static-1", session_timeout_ms=10_000))
        s1.wait_assigned()
        s2 = pool.member(member(g, "static-2", instance_id="static-2", session_timeout_ms=10_000))
        s2.wait_for(lambda v: len(v.assignment) == 3, 60, "half the partitions")
        s2.leave()
        s2 = pool.member(member(g, "static-2", instance_id="static-2", session_timeout_ms=10_000))
        s2.wait_for(lambda v: len(v.assignment) == 3, 60, "the same partitions back")

        note("workload: automatic commits, then deletion of the group")
        g = group("auto")
        auto = pool.member(member(g, "auto", auto_commit=True, auto_commit_interval_ms=200))
        auto.wait_consumed(120)
        hc.wait_until(
            lambda: _committed(log_dir, g) == {(data, p): 20 for p in range(6)},
            60,
            "auto-committed positions",
        )
        auto.leave()
        hc.wait_until(lambda: _group_empty(log_dir, g), 60, f"{g} empty")
        hc.delete_group(bootstrap, g)

        note(f"workload: {scale} rounds of explicit commits")
        g = group("commits")
        committer = pool.member(member(g, "committer"))
        committer.wait_for(lambda v: len(v.assignment) == 6, 60, "all partitions")
        for i in range(scale):
            offsets = {(data, p): (i % 20) + 1 for p in range(6)}
            _check(committer.commit(offsets, metadata=f"round-{i}" if i % 3 == 0 else None))
            commits += 1

        note("workload: transactions (commit, abort, timeout, fenced zombie)")
        txn_group = group("txn")
        consumer = pool.member(member(txn_group, "txn-consumer"))
        consumer.wait_consumed(120)
        metadata = consumer.group_metadata()
        txn_ids.append(f"oracle-txn-{tag}")
        producer_t = pool.transactional_producer(txn_ids[-1]).init()
        for i in range(4):
            producer_t.begin()
            producer_t.send(out, f"txn-{i}".encode(), partition=i % 2)
            producer_t.send_offsets({(data, p): 10 + i for p in range(6)}, metadata)
            if i % 2 == 0:
                producer_t.commit()
            else:
                producer_t.abort()
        txn_ids.append(f"oracle-timeout-{tag}")
        open_txn = pool.transactional_producer(txn_ids[-1], transaction_timeout_ms=2_000).init()
        open_txn.begin()
        open_txn.send(out, b"left open", partition=0)
        open_txn.leave_open()
        txn_ids.append(f"oracle-zombie-{tag}")
        zombie = pool.transactional_producer(txn_ids[-1], client_id="zombie").init()
        zombie.begin()
        zombie.send(out, b"zombie", partition=1)
        zombie.flush()
        successor = pool.transactional_producer(txn_ids[-1], client_id="successor").init()
        try:
            zombie.commit()
        except KafkaException:
            pass  # fenced, as intended
        else:
            raise hc.ClientCommandError("the zombie producer was not fenced")
        successor.begin()
        successor.send(out, b"successor", partition=1)
        successor.commit()
        hc.wait_until(lambda: _txn_status(log_dir, txn_ids[1]) == 5, 60, "timeout abort")

        if kip848:
            note("workload: a KIP-848 consumer group")
            g = group("kip848")
            k1 = pool.member(member(g, "kip848-1", group_protocol="consumer"))
            k1.wait_for(lambda v: len(v.assignment) == 6, 60, "all partitions")
            k2 = pool.member(member(g, "kip848-2", group_protocol="consumer"))
            k2.wait_for(lambda v: len(v.assignment) == 3, 60, "half the partitions")
            k1.wait_for(lambda v: len(v.assignment) == 3, 60, "half the partitions")
            _check(k2.commit(dict.fromkeys(k2.assignment, 2)))
            commits += 1
            k2.leave()
            k1.leave()

        if share:
            note("workload: a KIP-932 share group")
            g = group("share")
            sent = iter(range(10_000))

            def produce_one() -> None:
                i = next(sent)
                producer.send(data, f"share-{i}".encode(), partition=i % 6)

            hc.share_consume(bootstrap, g, (data,), want=30, tick=produce_one)
            producer.flush()

        note("workload: commits without group membership")
        simple = group("simple")
        hc.commit_without_membership(bootstrap, simple, {(data, p): 7 for p in range(6)})
        commits += 1
    return WorkloadSummary(
        (data, out), tuple(groups), tuple(txn_ids), commits, time.monotonic() - began
    )


def _check(result: hc.CommitResult) -> None:
    if not result.ok:
        raise hc.ClientCommandError(f"commit failed: {result}")


def _committed(log_dir: Path, group_id: str) -> dict[hc.TopicPart, int]:
    last: dict[hc.TopicPart, int] = {}
    for e in hc.read_internal_log(log_dir, OFFSETS_TOPIC).of_group(group_id):
        if isinstance(e, OffsetCommitEvent) and e.offset is not None:
            last[(e.topic, e.partition)] = e.offset
    return last


def _group_empty(log_dir: Path, group_id: str) -> bool:
    records = [
        e
        for e in hc.read_internal_log(log_dir, OFFSETS_TOPIC).of_group(group_id)
        if isinstance(e, GroupMetadataEvent)
    ]
    return bool(records) and not records[-1].tombstone and not records[-1].members


def _txn_status(log_dir: Path, transactional_id: str) -> int | None:
    events = [
        e
        for e in hc.read_internal_log(log_dir, TRANSACTION_TOPIC).of_transactional_id(
            transactional_id
        )
        if isinstance(e, TransactionLogEvent)
    ]
    return events[-1].status if events else None


# ============================================================================ CLI


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m offsetscope.verify.oracle``: see the module docstring. Exit 0 = agreement."""
    parser = argparse.ArgumentParser(
        prog="python -m offsetscope.verify.oracle",
        description="Compare Kafka's DumpLogSegments with offsetscope on a real broker's log.",
    )
    parser.add_argument("--env", default="local", help="configuration environment (conf/<env>)")
    parser.add_argument("--conf", type=Path, help="extra TOML file overlaid last")
    parser.add_argument("--log-dir", type=Path, help="compare this log directory (no broker)")
    parser.add_argument("--scale", type=int, default=200, help="rounds of commit traffic")
    parser.add_argument("--min-records", type=int, default=MIN_RECORDS)
    parser.add_argument("--no-kip848", action="store_true", help="leave out the KIP-848 group")
    parser.add_argument("--no-share", action="store_true", help="leave out the share group")
    parser.add_argument(
        "--offsets-compression",
        choices=sorted(COMPRESSION_NAMES),
        default="none",
        help="offsets.topic.compression.codec of the broker the oracle starts",
    )
    parser.add_argument("--keep", action="store_true", help="keep the broker's folder")
    args = parser.parse_args(argv)
    # librdkafka's own log lines (through offsetscope.verify.harness.clients.rdkafka) stay visible,
    # named: a fenced zombie's FATAL and a stalled member's MAXPOLL are part of the workload.
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s", stream=sys.stderr)

    cfg = config_mod.load(args.env, extra=args.conf).broker
    began = time.monotonic()
    if args.log_dir is not None:
        with tempfile.TemporaryDirectory(prefix="offsetscope-oracle-") as tmp:
            report = compare_log_dir(snapshot_log_dir(args.log_dir, Path(tmp)), config=cfg)
    else:
        try:
            report = _run_on_new_broker(cfg, args)
        except BrokerError as exc:
            print(f"oracle: broker failed: {exc}", file=sys.stderr)
            return 1
    for diff in report.differences:
        print(diff)
    by_topic = ", ".join(f"{t} {n}" for t, n in report.records_by_topic.items())
    print(
        f"oracle: {report.files} segment files ({by_topic}); DumpLogSegments {report.tools_version} "
        f"{report.dump_seconds:.1f} s, offsetscope {report.decode_seconds:.1f} s, "
        f"total {time.monotonic() - began:.1f} s"
    )
    print(report.summary_line())
    if report.records < args.min_records:
        print(f"oracle: fewer than {args.min_records} records compared", file=sys.stderr)
    return 0 if report.ok(args.min_records) else 1


def _run_on_new_broker(cfg: BrokerConfig, args: argparse.Namespace) -> OracleReport:
    codec = COMPRESSION_NAMES.index(args.offsets_compression)
    cfg = dataclasses.replace(
        cfg,
        name="oracle",
        properties={**cfg.properties, "offsets.topic.compression.codec": str(codec)},
    )
    broker = Broker(cfg)
    handle = broker.start(fresh=True, tie_to_parent=True)
    print(f"oracle: broker {handle.bootstrap} ({handle.log_dir})", flush=True)
    try:
        summary = run_workload(
            handle.bootstrap,
            handle.log_dir,
            scale=args.scale,
            kip848=not args.no_kip848,
            share=not args.no_share,
            say=lambda msg: print(f"oracle: {msg}", flush=True),
        )
        print(
            f"oracle: workload done in {summary.seconds:.1f} s ({len(summary.groups)} groups, "
            f"{len(summary.transactional_ids)} transactional ids, {summary.commits} commits)",
            flush=True,
        )
    finally:
        # Stopped before comparing: nothing appends while the two decoders read.
        handle.stop()
    report = compare_log_dir(handle.log_dir, config=cfg)
    if report.ok(args.min_records) and not args.keep:
        shutil.rmtree(handle.root, ignore_errors=True)
    else:
        print(f"oracle: broker folder kept at {handle.root}")
    return report


if __name__ == "__main__":
    sys.exit(main())
