"""Decode whole Arrow batches of raw internal-topic records, once per record.

This is the body of the Spark decode adapter (``mapInArrow``) and of the offline decoder; it
needs pyarrow and numpy but no pyspark. Input: a batch of raw records (:data:`RAW_SCHEMA`).
Output: batches of :func:`decoded_schema`, one row per input row, whose ``kind`` says what the
row holds:

======================  =================================================================
``offset_commit``       record types 0/1; the ``offset_commit`` struct (null value fields =
                        tombstone)
``group_metadata``      record type 2; ``group_metadata`` with members and their decoded
                        consumer-protocol subscription and assignment
``transaction_log``     ``__transaction_state``; ``transaction_log``
``consumer_group``      KIP-848, share and streams group records (types 3-24) and
                        ``__share_group_state``; ids plus the value as Kafka JSON text
``control``             a transaction marker or other control record (segment sources only)
``unknown``             a record type or value version this library does not know
``error``               undecodable bytes: error class, message, field path, byte offset
======================  =================================================================

Counts in equal counts out, so ``input = events + quarantined + unknown`` holds per batch.

Struct layouts are derived from the protocol field tables (:func:`arrow_struct`), never written a
second time. Offset commits dominate these topics, so they take a columnar fast path: numpy over
the Arrow binary buffers, one vectorised step per field, grouped by value version, strings built
as Arrow arrays without Python objects. Transaction-log and classic group-metadata records are
read column-wise as well, by walking their field tables over the batch
(:mod:`~offsetscope.protocol.arrow_walk`); members' consumer-protocol blobs are decoded once per
distinct pair. Anything a columnar path does not recognise exactly (other record types, unusual
lengths, tags other than ``topicId``, long arrays, invalid UTF-8) falls back to the per-record
reader, :func:`decode_row`, which produces the same row -- or an ``error`` row with path and
offset -- and is the reference the columnar paths are tested against.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from offsetscope.protocol import codec, errors
from offsetscope.protocol import consumer_protocol as cp
from offsetscope.protocol import group_coordinator as gc
from offsetscope.protocol import transaction_log as tl
from offsetscope.protocol.arrow_walk import safe_be, slices, walk
from offsetscope.protocol.json_format import dumps, message_json, uuid_to_kafka
from offsetscope.protocol.records import (
    OFFSETS_TOPIC,
    TRANSACTION_TOPIC,
    CoordinatorRecord,
    UnknownRecord,
)
from offsetscope.protocol.registry import record_type
from offsetscope.protocol.schema import Field, Message
from offsetscope.protocol.states import transaction_status_name

# ----------------------------------------------------------------------------- schemas

_SCALARS: dict[str, pa.DataType] = {
    "int8": pa.int8(),
    "int16": pa.int16(),
    "uint16": pa.int32(),  # no unsigned types in Spark
    "int32": pa.int32(),
    "int64": pa.int64(),
    "bool": pa.bool_(),
    "string": pa.string(),
    "bytes": pa.binary(),
    "uuid": pa.string(),  # Kafka's URL-safe Base64 text
}


def arrow_field_type(f: Field) -> pa.DataType:
    """The Arrow type of a protocol field (arrays -> lists, structs -> structs)."""
    if f.is_struct:
        inner = pa.struct([pa.field(c.snake_name, arrow_field_type(c)) for c in f.fields])
        return pa.list_(inner) if f.is_array else inner
    if f.is_array:
        return pa.list_(_SCALARS[f.element_type])
    return _SCALARS[f.type]


def arrow_struct(*messages: Message, extra: Sequence[pa.Field] = ()) -> pa.StructType:
    """One struct holding every field of ``messages`` across all their versions, in order.

    A field absent from a record's version is null in that row.
    """
    fields: list[pa.Field] = []
    seen: set[str] = set()
    for message in messages:
        for f in message.fields:
            if f.snake_name not in seen:
                seen.add(f.snake_name)
                fields.append(pa.field(f.snake_name, arrow_field_type(f)))
    return pa.struct([*fields, *extra])


_TP = pa.struct([pa.field("topic", pa.string()), pa.field("partition", pa.int32())])
MEMBER_EXTRAS = (
    # Decoded from the member's subscription/assignment when protocolType is "consumer".
    pa.field("subscribed_topics", pa.list_(pa.string())),
    pa.field("owned_partitions", pa.list_(_TP)),
    pa.field("subscription_version", pa.int16()),
    pa.field("generation_id", pa.int32()),
    pa.field("rack_id", pa.string()),
    pa.field("assigned_partitions", pa.list_(_TP)),
    pa.field("assignment_version", pa.int16()),
)


def _group_metadata_struct() -> pa.StructType:
    base = arrow_struct(gc.GROUP_METADATA_KEY, gc.GROUP_METADATA_VALUE)
    members = base.field("members").type.value_type
    member = pa.struct([*members, *MEMBER_EXTRAS])
    return pa.struct(
        [pa.field("members", pa.list_(member)) if f.name == "members" else f for f in base]
    )


OFFSET_COMMIT_STRUCT = arrow_struct(gc.OFFSET_COMMIT_KEY, gc.OFFSET_COMMIT_VALUE)
GROUP_METADATA_STRUCT = _group_metadata_struct()
TRANSACTION_LOG_STRUCT = arrow_struct(
    tl.TRANSACTION_LOG_KEY,
    tl.TRANSACTION_LOG_VALUE,
    extra=(pa.field("transaction_status_name", pa.string()),),
)
CONSUMER_GROUP_STRUCT = pa.struct(
    [
        pa.field("record_type_name", pa.string()),
        pa.field("group_id", pa.string()),
        pa.field("member_id", pa.string()),
        pa.field("key_json", pa.string()),
        pa.field("value_json", pa.string()),
    ]
)
CONTROL_STRUCT = pa.struct(
    [pa.field("control_type", pa.string()), pa.field("coordinator_epoch", pa.int32())]
)
ERROR_STRUCT = pa.struct(
    [
        pa.field("error_class", pa.string()),
        pa.field("message", pa.string()),
        pa.field("field_path", pa.string()),
        pa.field("byte_offset", pa.int32()),
    ]
)

RAW_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string()),  # the internal topic whose schemas apply
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.int64()),  # epoch ms
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("producer_id", pa.int64()),
        pa.field("producer_epoch", pa.int16()),
        pa.field("is_transactional", pa.bool_()),
        pa.field("is_control", pa.bool_()),
    ]
)
COORDINATE_COLUMNS = (
    "topic",
    "partition",
    "offset",
    "timestamp",
    "producer_id",
    "producer_epoch",
    "is_transactional",
)


def decoded_schema() -> pa.Schema:
    coords = [RAW_SCHEMA.field(name) for name in COORDINATE_COLUMNS]
    return pa.schema(
        [
            *coords,
            pa.field("kind", pa.string()),
            pa.field("record_type", pa.int16()),
            pa.field("value_version", pa.int16()),
            pa.field("is_tombstone", pa.bool_()),
            pa.field("offset_commit", OFFSET_COMMIT_STRUCT),
            pa.field("group_metadata", GROUP_METADATA_STRUCT),
            pa.field("transaction_log", TRANSACTION_LOG_STRUCT),
            pa.field("consumer_group", CONSUMER_GROUP_STRUCT),
            pa.field("control", CONTROL_STRUCT),
            pa.field("unknown_reason", pa.string()),
            pa.field("error", ERROR_STRUCT),
        ]
    )


DECODED_SCHEMA = decoded_schema()
_PAYLOAD_COLUMNS = (
    "offset_commit",
    "group_metadata",
    "transaction_log",
    "consumer_group",
    "control",
)

# ----------------------------------------------------------------------------- entry point


def decode_batch(raw: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    """Decode a batch of raw records into batches of :data:`DECODED_SCHEMA` (same row count)."""
    n = raw.num_rows
    if n == 0:
        return
    handled = np.zeros(n, dtype=bool)
    # Every columnar path reads the keys and values through the same buffers.
    keys, values = _buffers(raw.column("key")), _buffers(raw.column("value"))
    fast = _offset_commit_fast_path(raw, keys, values)
    if fast is not None:
        handled |= fast.handled
        yield fast.batch
    for spec in _WALKED_SPECS:
        walked = _walked_path(raw, spec, ~handled, keys, values)
        if walked is not None:
            handled |= walked.handled
            yield walked.batch
    rest = np.flatnonzero(~handled)
    if len(rest):
        yield _slow_path(raw.take(pa.array(rest)))


# ----------------------------------------------------------------------------- per-record path


def _slow_path(raw: pa.RecordBatch) -> pa.RecordBatch:
    cols = {name: raw.column(name).to_pylist() for name in raw.schema.names}
    rows = [decode_row({name: cols[name][i] for name in cols}) for i in range(raw.num_rows)]
    return pa.RecordBatch.from_pylist(rows, schema=DECODED_SCHEMA)


def decode_row(raw: dict[str, Any]) -> dict[str, Any]:
    """Decode one raw record (a dict of :data:`RAW_SCHEMA` columns) into a decoded row."""
    row: dict[str, Any] = {name: raw.get(name) for name in COORDINATE_COLUMNS}
    if raw.get("is_control"):
        return _control_row(row, raw.get("key"), raw.get("value"))
    topic = raw["topic"]
    try:
        record = codec.decode_record(topic, raw.get("key"), raw.get("value"))
    except errors.DecodeError as exc:
        return {
            **row,
            "kind": "error",
            "error": _error_struct(exc),
            "record_type": _type_of(raw.get("key")),
        }
    if isinstance(record, UnknownRecord):
        return {
            **row,
            "kind": "unknown",
            "record_type": record.record_type,
            "value_version": record.value_version,
            "is_tombstone": record.value_bytes is None,
            "unknown_reason": record.reason,
        }
    row.update(
        record_type=record.record_type,
        value_version=record.value_version,
        is_tombstone=record.value is None,
    )
    if topic == TRANSACTION_TOPIC:
        row.update(kind="transaction_log", transaction_log=_transaction_struct(record))
    elif topic == OFFSETS_TOPIC and record.record_type in (0, 1):
        row.update(kind="offset_commit", offset_commit=_offset_commit_struct(record))
    elif topic == OFFSETS_TOPIC and record.record_type == 2:
        row.update(kind="group_metadata", group_metadata=_group_metadata_struct_row(record))
    else:
        row.update(kind="consumer_group", consumer_group=_consumer_group_struct(record))
    return row


def _type_of(key: bytes | None) -> int | None:
    if key is None or len(key) < 2:
        return None
    return int(struct.unpack_from(">h", key, 0)[0])


def _error_struct(exc: errors.DecodeError) -> dict[str, Any]:
    return {
        "error_class": type(exc).__name__,
        "message": exc.reason,
        "field_path": exc.path,
        "byte_offset": exc.offset,
    }


def _snake(message: Message, version: int, data: dict[str, Any] | Any) -> dict[str, Any]:
    """Message dict (Kafka JSON names) -> Arrow row dict (snake_case, uuids as text)."""
    row: dict[str, Any] = _converter(message.fields, version)(data)
    return row


Converter = Callable[[Any], Any]
_CONVERTERS: dict[tuple[int, int], Converter] = {}


def _converter(fields: Sequence[Field], version: int) -> Converter:
    """A function converting one struct of ``fields`` at ``version``; built once per layout."""
    key = (id(fields), version)
    hit = _CONVERTERS.get(key)
    if hit is not None:
        return hit
    plan: list[tuple[str, str, Converter | None]] = [
        (f.json_name, f.snake_name, _value_converter(f, version))
        for f in fields
        if f.present_in(version)
    ]

    def convert(data: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for json_name, snake_name, conv in plan:
            value = data.get(json_name)
            out[snake_name] = value if conv is None or value is None else conv(value)
        return out

    _CONVERTERS[key] = convert
    return convert


def _value_converter(f: Field, version: int) -> Converter | None:
    """How to convert one field's non-null value; None when it is kept as is."""
    if f.is_struct:
        inner = _converter(f.fields, version)
        if f.is_array:
            return lambda items: [inner(item) for item in items]
        return inner
    if f.element_type != "uuid":
        return None
    if f.is_array:
        return lambda items: [uuid_to_kafka(u) for u in items]
    if f.is_tagged_in(version):
        # A tagged uuid at its zero default was simply not carried.
        return lambda u: None if u.int == 0 else uuid_to_kafka(u)
    return uuid_to_kafka


def _offset_commit_struct(record: CoordinatorRecord) -> dict[str, Any]:
    row = _snake(gc.OFFSET_COMMIT_KEY, 0, record.key)
    if record.value is not None and record.value_version is not None:
        row.update(_snake(gc.OFFSET_COMMIT_VALUE, record.value_version, record.value))
    return row


def _group_metadata_struct_row(record: CoordinatorRecord) -> dict[str, Any]:
    row = _snake(gc.GROUP_METADATA_KEY, 0, record.key)
    if record.value is None or record.value_version is None:
        return row
    row.update(_snake(gc.GROUP_METADATA_VALUE, record.value_version, record.value))
    consumer = record.value["protocolType"] == cp.PROTOCOL_TYPE
    for member_row, member in zip(row["members"], record.value["members"], strict=True):
        if consumer:
            member_row.update(_decoded_blobs(member["subscription"], member["assignment"]))
    return row


@functools.lru_cache(maxsize=4096)
def _decoded_blobs(subscription: bytes, assignment: bytes) -> dict[str, Any]:
    """A member's consumer-protocol fields, remembered by their bytes: a group's GroupMetadata
    record is rewritten at every rebalance with every member, mostly with the same blobs. The
    result is shared between rows, so it is only ever read (copied into each member's row)."""
    out: dict[str, Any] = {}
    try:
        sub = cp.decode_subscription(subscription, lenient=True)
    except errors.DecodeError:
        sub = None
    if sub is not None:
        out["subscribed_topics"] = sub.data["topics"]
        out["owned_partitions"] = _tps(sub.data.get("ownedPartitions") or [])
        out["subscription_version"] = sub.version
        out["generation_id"] = sub.data.get("generationId")
        out["rack_id"] = sub.data.get("rackId")
    try:
        asg = cp.decode_assignment(assignment)
    except errors.DecodeError:
        return out
    out["assigned_partitions"] = [] if asg is None else _tps(asg.data["assignedPartitions"])
    out["assignment_version"] = None if asg is None else asg.version
    return out


def _tps(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"topic": e["topic"], "partition": p} for e in entries for p in e["partitions"]]


def _transaction_struct(record: CoordinatorRecord) -> dict[str, Any]:
    row = _snake(tl.TRANSACTION_LOG_KEY, 0, record.key)
    if record.value is not None and record.value_version is not None:
        row.update(_snake(tl.TRANSACTION_LOG_VALUE, record.value_version, record.value))
        row["transaction_status_name"] = transaction_status_name(record.value["transactionStatus"])
    return row


def _consumer_group_struct(record: CoordinatorRecord) -> dict[str, Any]:
    rt = record_type(record.topic, record.record_type)
    assert rt is not None  # decode_record returned a record of this type
    value_json = None
    if record.value is not None and record.value_version is not None:
        value_json = dumps(message_json(rt.value, record.value_version, record.value))
    return {
        "record_type_name": rt.name,
        "group_id": record.key.get("groupId"),
        "member_id": record.key.get("memberId"),
        "key_json": dumps(message_json(rt.key, 0, record.key)),
        "value_json": value_json,
    }


def _control_row(row: dict[str, Any], key: bytes | None, value: bytes | None) -> dict[str, Any]:
    from offsetscope.protocol.log.control import EndTxnMarker, parse_control_key

    try:
        control = parse_control_key(key)
        epoch = None
        if control.is_transaction_marker:
            epoch = EndTxnMarker.decode(key, value).coordinator_epoch
    except errors.DecodeError as exc:
        return {**row, "kind": "error", "error": _error_struct(exc)}
    name = control.type.name if control.is_known else f"UNKNOWN({control.type_id})"
    return {
        **row,
        "kind": "control",
        "record_type": control.type_id,
        "control": {"control_type": name, "coordinator_epoch": epoch},
    }


# ----------------------------------------------------------------------------- columnar fast path


class _FastResult:
    __slots__ = ("batch", "handled")

    def __init__(self, handled: np.ndarray, batch: pa.RecordBatch) -> None:
        self.handled = handled
        self.batch = batch


# (starts, lengths, data) of a binary column's values; nulls have length -1.
_Bytes = tuple[np.ndarray, np.ndarray, np.ndarray]


def _buffers(arr: pa.Array) -> _Bytes:
    """(starts, lengths, data) of a binary array; nulls have length -1."""
    if pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.binary())
    _, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int32)[arr.offset : arr.offset + len(arr) + 1]
    data = (
        np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    )
    starts = offsets[:-1].astype(np.int64)
    lengths = np.diff(offsets).astype(np.int64)
    if arr.null_count:
        lengths = np.where(arr.is_null().to_numpy(zero_copy_only=False), -1, lengths)
    return starts, lengths, data


_B64 = np.frombuffer(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", dtype=np.uint8
)


def _uuid_text(data: np.ndarray, starts: np.ndarray, present: np.ndarray) -> pa.Array:
    """Kafka's 22-character URL-safe Base64 of 16-byte uuids, vectorised; null where absent.

    A tagged uuid that is all zeros was not carried either, so it is null too.
    """
    n = len(starts)
    rows = np.flatnonzero(present)
    if len(rows) == 0:
        return pa.nulls(n, pa.string())
    raw = np.zeros((len(rows), 18), dtype=np.uint8)  # 16 bytes + 2 zero bytes = 6 groups of 3
    raw[:, :16] = data[starts[rows][:, None] + np.arange(16)]
    nonzero = raw[:, :16].any(axis=1)
    groups = raw.reshape(len(rows), 6, 3).astype(np.uint32)
    word = (groups[:, :, 0] << 16) | (groups[:, :, 1] << 8) | groups[:, :, 2]
    sextets = np.empty((len(rows), 6, 4), dtype=np.uint32)
    for i, shift in enumerate((18, 12, 6, 0)):
        sextets[:, :, i] = (word >> shift) & 63
    chars = _B64[sextets.reshape(len(rows), 24)[:, :22]][nonzero].reshape(-1)
    valid = np.zeros(n, dtype=bool)
    valid[rows[nonzero]] = True
    lengths = np.where(valid, 22, 0).astype(np.int32)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.StringArray.from_buffers(
        n, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(chars)), bitmap
    )


def _offset_commit_fast_path(
    raw: pa.RecordBatch, keys: _Bytes, values: _Bytes
) -> _FastResult | None:
    n = raw.num_rows
    topics = raw.column("topic")
    is_offsets = pa.compute.equal(topics, OFFSETS_TOPIC).to_numpy(zero_copy_only=False)
    control = raw.column("is_control").to_numpy(zero_copy_only=False)
    candidate = is_offsets & ~np.asarray(control, dtype=bool)
    if not candidate.any():
        return None
    kstart, klen, kdata = keys
    vstart, vlen, vdata = values

    # Key: int16 type (0 or 1) | int16 len + group | int16 len + topic | int32 partition.
    ok = candidate & (klen >= 10)
    ktype = safe_be(kdata, kstart, 2, ok)
    ok &= (ktype == 1) | (ktype == 0)
    glen = safe_be(kdata, kstart + 2, 2, ok)
    ok &= glen >= 0
    tpos = kstart + 4 + glen
    ok &= tpos + 2 <= kstart + klen
    tlen = safe_be(kdata, tpos, 2, ok)
    ok &= (tlen >= 0) & (klen == 10 + glen + tlen)
    partition = safe_be(kdata, tpos + 2 + tlen, 4, ok)

    tombstone = vlen < 0
    ok &= tombstone | (vlen >= 2)
    version = np.where(tombstone, -1, safe_be(vdata, vstart, 2, ok & ~tombstone))
    # Type 0 (0.8.2) pairs with a v0-only value.
    ok &= tombstone | (version >= 0) & (version <= 4) & ((ktype == 1) | (version == 0))

    offset = np.zeros(n, np.int64)
    leader_epoch = np.full(n, -1, np.int64)
    has_leader_epoch = np.zeros(n, bool)
    commit_ts = np.zeros(n, np.int64)
    expire_ts = np.full(n, -1, np.int64)
    has_expire = np.zeros(n, bool)
    mstart = np.zeros(n, np.int64)
    mlen = np.zeros(n, np.int64)
    uuid_pos = np.zeros(n, np.int64)
    has_uuid = np.zeros(n, bool)
    good = np.zeros(n, bool)

    for v in (0, 1, 2, 3, 4):
        rows = np.flatnonzero(ok & (version == v))
        if len(rows) == 0:
            continue
        s, ln = vstart[rows], vlen[rows]
        if v == 4:
            # offset | leaderEpoch | uvarint(len+1) (single byte) | metadata | commitTs | tags
            fits = ln >= 24
            lenbyte = safe_be(vdata, s + 14, 1, fits) & 0xFF
            fits &= (lenbyte >= 1) & (lenbyte < 0x80)
            m = lenbyte - 1
            tagpos = s + 23 + m
            fits &= tagpos < s + ln
            ntags = safe_be(vdata, tagpos, 1, fits) & 0xFF
            plain = fits & (ntags == 0) & (ln == 24 + m)
            tagged = fits & (ntags == 1) & (ln == 42 + m)
            tag_head = safe_be(vdata, tagpos + 1, 2, tagged)
            tagged &= tag_head == 16  # tag 0, size 16: the topicId uuid
            fine = plain | tagged
            meta_start = s + 15
            le_ok = fine
            commit_pos = s + 15 + m
            uuid_pos[rows] = tagpos + 3
            has_uuid[rows] = tagged
        else:
            header = 14 if v == 3 else 10  # version + offset (+ leaderEpoch)
            fits = ln >= header + 2
            m = safe_be(vdata, s + header, 2, fits)
            tail = 16 if v == 1 else 8
            fine = fits & (m >= 0) & (ln == header + 2 + m + tail)
            meta_start = s + header + 2
            le_ok = fine & (v == 3)
            commit_pos = meta_start + m
            if v == 1:
                expire_ts[rows] = safe_be(vdata, commit_pos + 8, 8, fine)
                has_expire[rows] = fine
        good[rows] = fine
        offset[rows] = safe_be(vdata, s + 2, 8, fine)
        if v >= 3:
            leader_epoch[rows] = safe_be(vdata, s + 10, 4, le_ok)
            has_leader_epoch[rows] = le_ok
        mstart[rows] = meta_start
        mlen[rows] = np.where(fine, m, 0)
        commit_ts[rows] = safe_be(vdata, commit_pos, 8, fine)

    handled = ok & (good | tombstone)
    if not handled.any():
        return None
    idx = np.flatnonzero(handled)
    live = ~tombstone[idx]
    group = slices(kdata, kstart[idx] + 4, glen[idx])
    topic = slices(kdata, tpos[idx] + 2, tlen[idx])
    metadata = slices(vdata, mstart[idx], np.where(live, mlen[idx], -1))
    for strings in (group, topic, metadata):
        try:
            strings.validate(full=True)
        except pa.ArrowInvalid:
            return None  # invalid UTF-8 somewhere: the per-record path reports it exactly

    def masked(values: np.ndarray, present: np.ndarray, typ: pa.DataType) -> pa.Array:
        return pa.array(values, type=typ, mask=~present)

    oc = pa.StructArray.from_arrays(
        [
            group,
            topic,
            pa.array(partition[idx], type=pa.int32()),
            masked(offset[idx], live, pa.int64()),
            masked(leader_epoch[idx], live & has_leader_epoch[idx], pa.int32()),
            metadata,
            masked(commit_ts[idx], live, pa.int64()),
            masked(expire_ts[idx], live & has_expire[idx], pa.int64()),
            _uuid_text(vdata, uuid_pos[idx], live & has_uuid[idx]),
        ],
        fields=list(OFFSET_COMMIT_STRUCT),
    )
    batch = _event_batch(raw, idx, "offset_commit", ktype[idx], version[idx], ~live, oc)
    return _FastResult(handled, batch)


def _event_batch(
    raw: pa.RecordBatch,
    rows: np.ndarray,
    kind: str,
    type_ids: np.ndarray,
    versions: np.ndarray,
    tombstone: np.ndarray,
    payload: pa.Array,
) -> pa.RecordBatch:
    """Decoded rows for ``raw``'s ``rows``: events of ``kind`` whose struct (the column named
    ``kind``) is ``payload``; every other payload column is null."""
    count = len(rows)
    columns = {name: raw.column(name).take(pa.array(rows)) for name in COORDINATE_COLUMNS}
    columns.update(
        {
            "kind": pa.array([kind] * count, type=pa.string()),
            "record_type": pa.array(type_ids, type=pa.int16()),
            "value_version": pa.array(versions, type=pa.int16(), mask=tombstone),
            "is_tombstone": pa.array(tombstone),
            kind: payload,
        }
    )
    arrays = [
        columns[f.name] if f.name in columns else pa.nulls(count, f.type) for f in DECODED_SCHEMA
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=DECODED_SCHEMA)


# ----------------------------------------------------------------------------- walked path
# Transaction-log and classic group-metadata records are read column-wise too, by walking their
# key and value field tables over the whole batch (:mod:`~offsetscope.protocol.arrow_walk`).


@dataclass(frozen=True)
class _Walked:
    """A record type the walk reads: its ``kind`` (also its payload column) and ``finish``,
    which fills in place the payload fields that are not in the tables."""

    kind: str
    topic: str
    type_id: int
    finish: Callable[[dict[str, pa.Array]], None]


def _walked_path(
    raw: pa.RecordBatch, spec: _Walked, todo: np.ndarray, keys: _Bytes, values: _Bytes
) -> _FastResult | None:
    """The records of one type among rows ``todo`` read by
    :func:`~offsetscope.protocol.arrow_walk.walk`, grouped by value version (tombstones apart).
    Records the walk does not read exactly stay unhandled, and so do all when a string is not
    valid UTF-8."""
    rt = record_type(spec.topic, spec.type_id)
    assert rt is not None  # the specs below name known record types
    rows = np.flatnonzero(todo)
    control = raw.column("is_control").take(rows).to_numpy(zero_copy_only=False)
    on_topic = pa.compute.equal(raw.column("topic").take(rows), spec.topic)
    rows = rows[on_topic.to_numpy(zero_copy_only=False) & ~np.asarray(control, dtype=bool)]
    kstart, klen, kdata = keys
    kstart, klen = kstart[rows], klen[rows]
    typed = (klen >= 2) & (safe_be(kdata, kstart, 2, klen >= 2) == spec.type_id)
    rows, kstart, klen = rows[typed], kstart[typed], klen[typed]
    if len(rows) == 0:
        return None
    key = walk(kdata, kstart + 2, kstart + klen, rt.key, 0)
    if key is None:
        return None
    vstart, vlen, vdata = values
    vstart, vlen = vstart[rows], vlen[rows]
    version = np.where(vlen >= 2, safe_be(vdata, vstart, 2, vlen >= 2), -1)
    struct_type = DECODED_SCHEMA.field(spec.kind).type
    parts: list[tuple[np.ndarray, int, pa.Array]] = []  # (rows of raw, value version, payload)
    for v in (None, *rt.value.versions):
        at = np.flatnonzero(key.ok & (vlen < 0 if v is None else version == v))
        if len(at) == 0:
            continue
        value = None
        taken = at  # rows of the key walk
        if v is not None:
            value = walk(vdata, vstart[at] + 2, vstart[at] + vlen[at], rt.value, v)
            if value is None:
                continue
            mine = np.flatnonzero(value.ok)  # rows of the value walk
            taken = at[mine]
        if len(taken) == 0:
            continue
        arrays = {}
        for f in struct_type:
            if f.name in key.columns:
                arrays[f.name] = key.array(f.name, taken, f.type)
            elif value is not None:
                arrays[f.name] = value.array(f.name, mine, f.type)
            else:
                arrays[f.name] = pa.nulls(len(taken), f.type)
        spec.finish(arrays)
        payload = pa.StructArray.from_arrays(list(arrays.values()), fields=list(struct_type))
        parts.append((rows[taken], -1 if v is None else v, payload))
    if not parts:
        return None
    payload = pa.concat_arrays([p for _, _, p in parts])
    try:
        payload.validate(full=True)
    except pa.ArrowInvalid:
        return None  # invalid UTF-8 somewhere: the per-record path reports it exactly
    idx = np.concatenate([r for r, _, _ in parts])
    versions = np.concatenate([np.full(len(r), v) for r, v, _ in parts])
    handled = np.zeros(raw.num_rows, dtype=bool)
    handled[idx] = True
    type_ids = np.full(len(idx), spec.type_id)
    batch = _event_batch(raw, idx, spec.kind, type_ids, versions, versions < 0, payload)
    return _FastResult(handled, batch)


_STATUS_NAMES = pa.array([transaction_status_name(code) for code in range(-128, 128)])


def _finish_transaction(arrays: dict[str, pa.Array]) -> None:
    status = arrays["transaction_status"].cast(pa.int32())
    arrays["transaction_status_name"] = _STATUS_NAMES.take(pa.compute.add(status, 128))


def _finish_group_metadata(arrays: dict[str, pa.Array]) -> None:
    """Members' consumer-protocol fields (for groups of protocol type ``consumer``), decoded
    once per distinct (subscription, assignment) pair by :func:`_decoded_blobs`."""
    members = arrays["members"]
    if members.null_count == len(members):
        return  # tombstones
    structs = members.values
    consumer = pa.compute.equal(arrays["protocol_type"], cp.PROTOCOL_TYPE)
    counts = np.diff(members.offsets.to_numpy())
    of_consumer = np.repeat(consumer.to_numpy(zero_copy_only=False), counts)
    sub = structs.field("subscription").dictionary_encode()
    asg = structs.field("assignment").dictionary_encode()
    pair = sub.indices.to_numpy() * len(asg.dictionary) + asg.indices.to_numpy()
    distinct, which = np.unique(np.where(of_consumer, pair, -1), return_inverse=True)
    subs, asgs = sub.dictionary.to_pylist(), asg.dictionary.to_pylist()
    n_asg = len(asgs)
    # -1 (first if present): a member of a non-consumer group, whose extras are all null.
    decoded = [
        {} if p < 0 else _decoded_blobs(subs[p // n_asg], asgs[p % n_asg])
        for p in distinct.tolist()
    ]
    extras = pa.array(decoded, type=pa.struct(MEMBER_EXTRAS)).take(pa.array(which.ravel()))
    base = [structs.field(f.name) for f in structs.type if f not in MEMBER_EXTRAS]
    merged = pa.StructArray.from_arrays(
        [*base, *extras.flatten()], fields=list(members.type.value_type)
    )
    arrays["members"] = pa.ListArray.from_arrays(
        members.offsets, merged, type=members.type, mask=members.is_null()
    )


_WALKED_SPECS = (
    _Walked("transaction_log", TRANSACTION_TOPIC, 0, _finish_transaction),
    _Walked("group_metadata", OFFSETS_TOPIC, 2, _finish_group_metadata),
)


def raw_batch(rows: Sequence[dict[str, Any]]) -> pa.RecordBatch:
    """A raw-record batch from dicts (tests, offline tools); missing attributes take defaults."""
    defaults = {
        "producer_id": -1,
        "producer_epoch": -1,
        "is_transactional": False,
        "is_control": False,
    }
    full = [{**defaults, **r} for r in rows]
    return pa.RecordBatch.from_pylist(full, schema=RAW_SCHEMA)


__all__ = [
    "DECODED_SCHEMA",
    "RAW_SCHEMA",
    "arrow_struct",
    "decode_batch",
    "decode_row",
    "raw_batch",
]


def raw_batch_from_columns(chunk: Any, topic: str, partition: int = 0) -> pa.RecordBatch:
    """The records of a log :class:`~offsetscope.protocol.log.ColumnChunk` as a raw batch.

    ``topic`` is the internal topic whose schemas apply. Records of batches the scanner could not
    decode (``decoded`` false) are not in the chunk's record columns and so not here either.
    """
    records, headers = chunk.records, chunk.batches
    n = len(records)
    b = records.batch
    columns = {
        "topic": pa.array([topic] * n, pa.string()),
        "partition": pa.array(np.full(n, partition, dtype=np.int32)),
        "offset": pa.array(records.offset, pa.int64()),
        "timestamp": pa.array(records.timestamp, pa.int64()),
        "key": slices(records.buffer, records.key_start, records.key_length, pa.binary()),
        "value": slices(records.buffer, records.value_start, records.value_length, pa.binary()),
        "producer_id": pa.array(headers.producer_id[b], pa.int64()),
        "producer_epoch": pa.array(headers.producer_epoch[b], pa.int16()),
        "is_transactional": pa.array(headers.is_transactional[b], pa.bool_()),
        "is_control": pa.array(headers.is_control[b], pa.bool_()),
    }
    return pa.RecordBatch.from_arrays([columns[f.name] for f in RAW_SCHEMA], schema=RAW_SCHEMA)
