"""Kafka's ``DumpLogSegments`` text for a segment file, produced column-wise.

What ``kafka-dump-log.sh --files F --offsets-decoder`` (or ``--transaction-log-decoder``)
prints, byte for byte (``tests/kafka/test_dump_log_parity.py`` holds us to Kafka's own tool)::

    Dumping <path>
    Log starting offset: <segment base offset>
    baseOffset: B lastOffset: L count: N baseSequence: S lastSequence: LS producerId: P
      producerEpoch: E partitionLeaderEpoch: PLE isTransactional: false isControl: false
      deleteHorizonMs: OptionalLong.empty position: POS CreateTime: MAXTS size: SIZE magic: 2
      compresscodec: none crc: CRC isvalid: true                     (one line per batch)
    | offset: O CreateTime: TS keySize: K valueSize: V sequence: SEQ headerKeys: []
      key: {"type":"1","data":{...}} payload: {"version":"3","data":{...}}  (one line per record)
    Found N invalid bytes at the end of <file name>                 (a torn tail)

Why column-wise: a busy ``__consumer_offsets`` partition holds millions of offset commits, and
Python string formatting per record would be slower than Kafka's JVM tool. Batches are framed
and decoded into Arrow columns (``iter_segment_columns`` + ``decode_batch``); batch lines and
offset-commit record lines are assembled with Arrow's vectorised string kernels, field order
taken from the schema tables; the lines are interleaved with one ``take`` and written as one
buffer per chunk. Every other record (group metadata, transaction log, control records, unknown
types, errors) and every batch the column scan does not cover (legacy messages, record headers,
CRC mismatches) is rendered per record by the functions at the end of this module, which
produce the same text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsetscope.protocol import codec, errors
from offsetscope.protocol.arrow_decode import DECODED_SCHEMA, decode_batch, raw_batch_from_columns
from offsetscope.protocol.json_format import dump_log_key, dump_log_payload, dumps
from offsetscope.protocol.log import (
    ColumnChunk,
    RecordColumns,
    ScanReport,
    iter_segment_columns,
    read_batches,
)
from offsetscope.protocol.log.control import ControlRecordType, EndTxnMarker, parse_control_key
from offsetscope.protocol.log.model import Record, RecordBatch
from offsetscope.protocol.records import (
    OFFSETS_TOPIC,
    TRANSACTION_TOPIC,
    CoordinatorRecord,
    UnknownRecord,
)
from offsetscope.protocol.registry import INTERNAL_TOPICS, record_type

COMPRESSION_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")
_STATUS = re.compile(r'"transactionStatus":"(\w+)"')
# Characters JSON must escape; strings holding none are quoted without calling json.dumps.
_NEEDS_ESCAPE = r'["\\\x00-\x1f]'


def dump_log_bytes(
    path: Path,
    topic: str | None,
    *,
    status_format: str = "name",
    report: ScanReport | None = None,
) -> Iterator[bytes]:
    """DumpLogSegments' output for one segment file, as UTF-8 blocks of whole lines.

    Bytes, because the text is assembled in Arrow buffers, which are UTF-8 already: a busy segment
    prints hundreds of megabytes, and decoding them into ``str`` only for the output stream to
    encode them again would add a large share to the rendering (``docs/benchmarks.md``,
    "Measurements behind design choices").

    Args:
        path: the ``.log`` file.
        topic: the internal topic whose schemas apply (None or a data topic: no key/payload).
        status_format: ``"name"`` (Kafka 4.4) or ``"number"`` (4.1-4.3) for ``transactionStatus``.
        report: receives the reader's diagnostics.
    """
    rep = report if report is not None else ScanReport()
    yield f"Dumping {path}\nLog starting offset: {int(path.stem)}\n".encode()
    for chunk in iter_segment_columns(path, report=rep):
        yield _chunk_text(path, chunk, topic, status_format)
    if rep.invalid_tail_bytes:
        yield f"Found {rep.invalid_tail_bytes} invalid bytes at the end of {path.name}\n".encode()


def dump_log_blocks(
    path: Path,
    topic: str | None,
    *,
    status_format: str = "name",
    report: ScanReport | None = None,
) -> Iterator[str]:
    """The same output as blocks of whole lines (each ending in \\n)."""
    for block in dump_log_bytes(path, topic, status_format=status_format, report=report):
        yield block.decode("utf-8")


def dump_log_lines(
    path: Path, topic: str | None, *, status_format: str = "name", report: ScanReport | None = None
) -> Iterator[str]:
    """The same output, one line at a time (without line ends)."""
    for block in dump_log_blocks(path, topic, status_format=status_format, report=report):
        yield from block.splitlines()


# ----------------------------------------------------------------------------- column-wise


def _text(values: pa.Array) -> pa.Array:
    return pc.cast(values, pa.string())


def _flag(values: np.ndarray) -> pa.Array:
    return pc.if_else(pa.array(values, pa.bool_()), "true", "false")


def _join(*parts: pa.Array | str) -> pa.Array:
    scalars = [pa.scalar(p, pa.string()) if isinstance(p, str) else p for p in parts]
    return pc.binary_join_element_wise(*scalars, "")


def _batch_lines(chunk: ColumnChunk) -> pa.Array:
    hb = chunk.batches
    n = len(hb)
    magic2 = hb.magic >= 2
    last_sequence = np.where(
        hb.base_sequence < 0,
        -1,
        _wrap_sequence(hb.base_sequence.astype(np.int64), hb.last_offset - hb.base_offset),
    )
    horizon = (hb.attributes & 0x40) != 0
    horizon_text = pc.if_else(
        pa.array(horizon & magic2),
        _join("OptionalLong[", _text(pa.array(hb.base_timestamp)), "]"),
        "OptionalLong.empty",
    )
    v2_head = _join(
        "baseOffset: ", _text(pa.array(hb.base_offset)),
        " lastOffset: ", _text(pa.array(hb.last_offset)),
        " count: ", _text(pa.array(hb.records_count)),
        " baseSequence: ", _text(pa.array(hb.base_sequence)),
        " lastSequence: ", _text(pa.array(last_sequence)),
        " producerId: ", _text(pa.array(hb.producer_id)),
        " producerEpoch: ", _text(pa.array(hb.producer_epoch)),
        " partitionLeaderEpoch: ", _text(pa.array(hb.partition_leader_epoch)),
        " isTransactional: ", _flag(hb.is_transactional),
        " isControl: ", _flag(hb.is_control),
        " deleteHorizonMs: ", horizon_text,
    )  # fmt: skip
    legacy_head = _join("offset: ", _text(pa.array(hb.last_offset)))
    head = pc.if_else(pa.array(magic2), v2_head, legacy_head)
    codecs = pa.array(COMPRESSION_NAMES).take(pa.array(np.minimum(hb.attributes & 0x07, 4)))
    return _join(
        head,
        " position: ", _text(pa.array(hb.position)),
        " ", _timestamp_labels(hb.magic, hb.attributes),
        ": ", _text(pa.array(hb.max_timestamp)),
        " size: ", _text(pa.array(hb.size)),
        " magic: ", _text(pa.array(hb.magic)),
        " compresscodec: ", codecs,
        " crc: ", _text(pa.array(hb.crc)),
        " isvalid: ", _flag(hb.crc_valid),
        "\n",
    ) if n else pa.array([], pa.string())  # fmt: skip


def _wrap_sequence(base: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """``DefaultRecordBatch.incrementSequence``: sequences wrap from 2**31-1 to 0."""
    top = 0x7FFFFFFF
    return np.where(base > top - delta, delta - (top - base) - 1, base + delta)


def _timestamp_labels(magic: np.ndarray, attributes: np.ndarray) -> pa.Array:
    kind = np.where(magic == 0, 0, np.where((attributes & 0x08) != 0, 2, 1))
    return pa.array(["NoTimestampType", "CreateTime", "LogAppendTime"]).take(pa.array(kind))


def _json_strings(values: pa.Array) -> pa.Array:
    """JSON string literals (quoted, escaped as Jackson does) of a string array; nulls stay null."""
    quoted = _join('"', values, '"')
    if not _any_escapable_byte(values):  # the common case, decided on the whole buffer at once
        return quoted
    needs = pc.fill_null(pc.match_substring_regex(values, _NEEDS_ESCAPE), False)
    if not pc.any(needs).as_py():
        return quoted
    escaped = pa.array([None if v is None else dumps(v) for v in values.to_pylist()], pa.string())
    return pc.if_else(needs, escaped, quoted)


def _any_escapable_byte(values: pa.Array) -> bool:
    """Whether any string of ``values`` holds a byte JSON escapes (``"``, ``\\``, < 0x20).

    Multi-byte UTF-8 sequences have every byte >= 0x80, so a byte test is exact.
    """
    text = np.frombuffer(_string_bytes(values), dtype=np.uint8)
    return bool(np.any((text < 0x20) | (text == 0x22) | (text == 0x5C)))


def _offset_commit_contents(table: pa.Table) -> pa.Array:
    """`` key: ... payload: ...`` for offset-commit rows, assembled from the decoded columns."""
    oc = table.column("offset_commit").combine_chunks()
    types = table.column("record_type").combine_chunks()
    versions = table.column("value_version").combine_chunks()
    key = _join(
        ' key: {"type":"', _text(types),
        '","data":{"group":', _json_strings(oc.field("group")),
        ',"topic":', _json_strings(oc.field("topic")),
        ',"partition":', _text(oc.field("partition")),
        "}}",
    )  # fmt: skip
    type_values = types.to_numpy(zero_copy_only=False)
    version_values = versions.fill_null(-1).to_numpy(zero_copy_only=False)
    codes = type_values.astype(np.int64) * 64 + version_values + 1  # version -1: tombstone
    pieces: list[tuple[np.ndarray, pa.Array]] = []
    for code in np.flatnonzero(np.bincount(codes)).tolist():
        type_id, version = divmod(code, 64)
        version -= 1
        rows = np.flatnonzero(codes == code)
        if version < 0:
            pieces.append((rows, pa.repeat(pa.scalar("<DELETE>"), len(rows))))
        else:
            pieces.append((rows, _payload(oc.take(pa.array(rows)), type_id, version)))
    return _join(key, " payload: ", _assemble(len(codes), pieces))


def _assemble(n: int, pieces: Sequence[tuple[np.ndarray, pa.Array]]) -> pa.Array:
    """``n`` strings from pieces ``(rows, strings)``: row ``rows[i]`` is ``strings[i]``.

    Every row is in exactly one piece. One concatenation and one ``take``, however many pieces:
    scattering piece by piece (a ``take`` and an ``if_else`` each) copied every row per piece.
    """
    if len(pieces) == 1 and len(pieces[0][0]) == n:
        return pieces[0][1]  # one piece of every row, in order
    index = np.empty(n, dtype=np.int64)
    start = 0
    for rows, _ in pieces:
        index[rows] = np.arange(start, start + len(rows))
        start += len(rows)
    return pa.concat_arrays([strings for _, strings in pieces]).take(pa.array(index))


def _payload(oc: pa.StructArray, type_id: int, version: int) -> pa.Array:
    """``{"version":"V","data":{...}}`` for every row, in the field order of the value schema."""
    rt = record_type(OFFSETS_TOPIC, type_id)
    assert rt is not None  # the decoder produced offset_commit rows of this type
    parts: list[pa.Array | str] = ['{"version":"', str(version), '","data":{']
    first = True
    for f in rt.value.fields_in(version):
        column = oc.field(f.snake_name)
        if f.type in ("string", "uuid"):
            rendered = _json_strings(column)
        else:
            rendered = _text(column)
        piece = _join("," if not first else "", f'"{f.json_name}":', rendered)
        if f.is_tagged_in(version):
            # A tagged field at its default is not printed (null here means "not carried").
            piece = pc.fill_null(piece, "")
        parts.append(piece)
        first = False
    parts.append("}}")
    return _join(*parts)


def _chunk_text(path: Path, chunk: ColumnChunk, topic: str | None, status_format: str) -> bytes:
    hb, rc = chunk.batches, chunk.records
    nb, nr = len(hb), len(rc)
    contents = _record_contents(chunk, topic, status_format)
    labels = _timestamp_labels(hb.magic, hb.attributes).take(pa.array(rc.batch))
    records = _join(
        "| offset: ", _text(pa.array(rc.offset)),
        " ", labels,
        ": ", _text(pa.array(rc.timestamp)),
        " keySize: ", _text(pa.array(rc.key_length)),
        " valueSize: ", _text(pa.array(rc.value_length)),
        " sequence: ", _text(pa.array(rc.sequence)),
        " headerKeys: []", contents,
        "\n",
    ) if nr else pa.array([], pa.string())  # fmt: skip
    batches = _batch_lines(chunk)
    # Batches the column path does not render exactly: legacy messages (per-message CRCs),
    # record headers, and batches whose records are not in the columns (CRC mismatch, corrupt).
    has_headers = np.zeros(nb, dtype=bool)
    if nr and rc.headers_count.any():
        np.logical_or.at(has_headers, rc.batch, rc.headers_count > 0)
    slow = (~hb.decoded) | (hb.magic < 2) | has_headers
    if slow.any():
        replacement = batches.to_pylist()
        for i in np.flatnonzero(slow).tolist():
            replacement[i] = _slow_batch_text(
                path, int(hb.position[i]), int(hb.size[i]), topic, status_format
            )
        batches = pa.array(replacement, pa.string())
    # Output order: each batch line, then its record lines (none for a slow batch, whose text
    # already holds them).
    counts = np.where(slow, 0, hb.record_end - hb.record_start)
    lines = np.empty(nb + int(counts.sum()), dtype=np.int64)
    starts = np.zeros(nb, dtype=np.int64)
    if nb > 1:
        np.cumsum(counts[:-1] + 1, out=starts[1:])
    lines[starts] = np.arange(nb)
    keep = ~slow[rc.batch] if nr else np.zeros(0, dtype=bool)
    kept = np.flatnonzero(keep)
    if len(kept):
        within = kept - hb.record_start[rc.batch[kept]]
        lines[starts[rc.batch[kept]] + 1 + within] = nb + kept
    combined = pa.concat_arrays([batches, records]).take(pa.array(lines))
    return _concat(combined)


def _concat(strings: pa.Array) -> bytes:
    """All strings of an array back to back (UTF-8), straight from its data buffer."""
    return bytes(_string_bytes(strings))


def _string_bytes(strings: pa.Array) -> memoryview:
    """The UTF-8 bytes of a string array's values, back to back, without a copy."""
    if len(strings) == 0:
        return memoryview(b"")
    _, offsets, data = strings.buffers()
    if data is None:  # only empty strings or nulls
        return memoryview(b"")
    bounds = np.frombuffer(offsets, dtype=np.int32)[
        strings.offset : strings.offset + len(strings) + 1
    ]
    return memoryview(data)[int(bounds[0]) : int(bounds[-1])]


def _record_contents(chunk: ColumnChunk, topic: str | None, status_format: str) -> pa.Array:
    """The text after ``headerKeys: []`` for every record of the chunk."""
    rc, hb = chunk.records, chunk.batches
    n = len(rc)
    control = hb.is_control[rc.batch] if n else np.zeros(0, dtype=bool)
    if n == 0:
        return pa.array([], pa.string())
    if topic not in INTERNAL_TOPICS:
        return pa.array(
            [_control_text_of(rc, j) if control[j] else "" for j in range(n)], pa.string()
        )
    # Only offset commits take the column path; everything else is rendered per record below.
    first = rc.buffer[np.minimum(rc.key_start, max(len(rc.buffer) - 2, 0))] if n else np.zeros(0)
    second = (
        rc.buffer[np.minimum(rc.key_start + 1, max(len(rc.buffer) - 1, 0))] if n else np.zeros(0)
    )
    candidate = (
        (topic == OFFSETS_TOPIC)
        & ~control
        & (rc.key_length >= 2)
        & (first == 0)
        & ((second == 0) | (second == 1))
    )
    rendered = None
    commit = np.zeros(n, dtype=bool)
    if candidate.any():
        rows = np.flatnonzero(candidate)
        raw = raw_batch_from_columns(chunk, topic).take(pa.array(rows))
        # The decoder passes coordinates through: number the rows to restore their order after.
        raw = raw.set_column(
            raw.schema.get_field_index("offset"), "offset", pa.array(rows.astype(np.int64))
        )
        table = pa.Table.from_batches(list(decode_batch(raw)), schema=DECODED_SCHEMA)
        table = table.filter(pc.equal(table.column("kind"), "offset_commit"))
        table = table.take(pc.sort_indices(table, [("offset", "ascending")]))
        if table.num_rows:
            commit[table.column("offset").to_numpy()] = True
            rendered = _offset_commit_contents(table)
    if rendered is not None and commit.all():
        return rendered
    others = np.flatnonzero(~commit)
    texts = []
    for j in others.tolist():
        if control[j]:
            texts.append(_control_text_of(rc, j))
        else:
            record = Record(offset=int(rc.offset[j]), timestamp=0, key=rc.key(j), value=rc.value(j))
            texts.append(_contents(topic, record, status_format))
    pieces = [(others, pa.array(texts, pa.string()))]
    if rendered is not None:
        pieces.append((np.flatnonzero(commit), rendered))
    return _assemble(n, pieces)


# ----------------------------------------------------------------------------- per record


def _slow_batch_text(
    path: Path, position: int, size: int, topic: str | None, status_format: str
) -> str:
    with path.open("rb") as fh:
        fh.seek(position)
        data = fh.read(size)
    lines = []
    for batch in read_batches(data, base_position=position):
        lines.append(batch_line(batch))
        lines.extend(record_line(topic, batch, record, status_format) for record in batch.records)
    return "".join(f"{line}\n" for line in lines)


def batch_line(batch: RecordBatch) -> str:
    """One DumpLogSegments batch line."""
    codec_name = COMPRESSION_NAMES[int(batch.compression)]
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
        f"{head} position: {batch.position} {batch.timestamp_type.display_name}: "
        f"{batch.max_timestamp} size: {batch.size} magic: {batch.magic} "
        f"compresscodec: {codec_name} crc: {batch.crc} isvalid: {_bool(batch.crc_valid)}"
    )


def _bool(flag: bool) -> str:
    return "true" if flag else "false"


def record_line(topic: str | None, batch: RecordBatch, record: Record, status_format: str) -> str:
    """One DumpLogSegments record line."""
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


def _control_text_of(rc: RecordColumns, j: int) -> str:
    return _control_text(
        Record(offset=int(rc.offset[j]), timestamp=0, key=rc.key(j), value=rc.value(j))
    )


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
    if status_format == "number" and topic == TRANSACTION_TOPIC and decoded.value is not None:
        payload = _STATUS.sub(
            f'"transactionStatus":{decoded.value["transactionStatus"]}', payload, count=1
        )
    return f" key: {dump_log_key(decoded)} payload: {payload}"


def _kafka_knows(record: CoordinatorRecord) -> bool:
    rt = record_type(record.topic, record.record_type)
    return rt is not None and rt.in_kafka


__all__: Sequence[str] = (
    "batch_line",
    "dump_log_blocks",
    "dump_log_bytes",
    "dump_log_lines",
    "record_line",
)
