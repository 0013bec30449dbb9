"""A hostile corpus of internal-topic records: seeded, reproducible, every record labelled.

The pipeline promises (``docs/reliability.md``, "Hostile and corrupt records") that bad bytes
never crash it, never make it allocate without bound, and are never lost: per micro-batch
``records in = events + quarantined + unknown``, and every quarantined row names its error class,
field path and byte offset. This module makes the bytes that put that promise to the test.

**Seeds.** Real records from the scenario engine's logs (the bundled coordinators write exactly
what Kafka writes: offset commits, group metadata with consumer-protocol blobs, tombstones,
transaction-log records), plus one synthetic record per known record type and value version of
``__consumer_offsets`` and ``__transaction_state`` (KIP-848, share and streams records the
scenarios do not produce), built from the protocol's field tables with random values and
encoded by the protocol's own encoder.

**Mutations** (``Entry.mutation``), each applied to seeds chosen by a seeded RNG::

    valid            a seed unchanged (real or synthetic; tombstones included)
    truncate_key     the key cut at every length 0 .. len-1 of the representative seeds
    truncate_value   the value cut at every length 0 .. len-1 (likewise)
    bitflip          1-3 random bits flipped in the key or the value
    wrong_version    the value's int16 version replaced (negative, just above the known
                     range, far above it)
    swapped_version  a valid value relabelled with another known version of its schema
    unknown_type     the key's int16 record type replaced by one no schema knows
    huge_length      an int16/int32 length or count, or a uvarint, overwritten with a value
                     claiming gigabytes (0x7fff, 0x7fffffff, 0xfffffffe as uvarint)
    negative_count   an int16/int32 overwritten with a negative value other than -1
    invalid_utf8     a byte of a string replaced by bytes that are not UTF-8 (0xff, an
                     overlong 0xc0 0x80, a lone surrogate 0xed 0xa0 0x80)
    trailing_bytes   bytes appended after a complete value
    garbage          random bytes as key and value
    null_key         a null key, or an empty one
    deep             synthetic records with wide, nested arrays of structs (thousands of
                     elements, up to ~300 KB), and GroupMetadata with hundreds of members
                     whose subscription and assignment blobs list many topics

Every entry carries its *expected* outcome, computed by the per-record decoder
(:func:`offsetscope.protocol.arrow_decode.decode_row`, the reference path): its ``kind`` and, for
errors, the error class, field path and byte offset. The pipeline must put each entry in the
table of that kind (the columnar fast path and Spark included), and a few mutations have
outcomes fixed by construction that :func:`check_invariants` asserts (a truncation is always an
error; an unknown record type always unknown; a valid seed always an event).

**Output** (:func:`write_corpus`)::

    <out>/__consumer_offsets-<p>/      segment files (PartitionWriter: batches of 1-48
    <out>/__transaction_state-<p>/     records, rolled segments, indexes), entries shuffled
    <out>/corpus.parquet               one row per entry: topic, partition, offset, key,
                                       value, timestamp, mutation, origin, detail and the
                                       expected kind / error class / path / byte offset

The same parquet rows are the raw Kafka records for the Kafka-source path (:func:`produce`
sends them to mirror topics with the same partitions).

Crash damage (:func:`write_crash_log`) is a separate, small log directory: sealed segments with a
CRC mismatch, a batch whose records do not parse (CRC recomputed), a torn tail and lost framing
in the middle, a decompression bomb, and a torn tail in the active segment, as a broker crash
leaves them; :class:`CrashLog` says which offsets each damage hides.

Run ``python -m offsetscope.verify.corpus --records 100000 --seed 1 --out DIR`` (``make corpus``).
"""

from __future__ import annotations

import argparse
import random
import struct
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Self

import pyarrow as pa
import pyarrow.parquet as pq

from offsetscope.protocol import consumer_protocol as cp
from offsetscope.protocol.arrow_decode import decode_row
from offsetscope.protocol.codec import encode_record, make_record
from offsetscope.protocol.log import Compression, LogConfig, PartitionWriter, RecordSpec
from offsetscope.protocol.log.batch import assemble_batch
from offsetscope.protocol.records import OFFSETS_TOPIC, TRANSACTION_TOPIC
from offsetscope.protocol.registry import BY_TOPIC, RecordType
from offsetscope.protocol.schema import Field, Message

DEFAULT_SCENARIOS: Final = ("transactions", "rebalance-storm", "offset-expiry", "cooperative")
TOPICS: Final = (OFFSETS_TOPIC, TRANSACTION_TOPIC)
EVENT_KINDS: Final = frozenset(
    {"offset_commit", "group_metadata", "transaction_log", "consumer_group", "control"}
)
MANIFEST: Final = "corpus.parquet"
START_MS: Final = 1_700_000_000_000

# Share of each mutation in a corpus (``deep`` is a fixed small count, see _DEEP_EVERY).
_QUOTAS: Final = {
    "valid": 0.10,
    "truncate_key": 0.06,
    "truncate_value": 0.20,
    "bitflip": 0.15,
    "huge_length": 0.11,
    "negative_count": 0.08,
    "wrong_version": 0.05,
    "swapped_version": 0.03,
    "unknown_type": 0.05,
    "invalid_utf8": 0.06,
    "trailing_bytes": 0.03,
    "garbage": 0.05,
    "null_key": 0.01,
}
_DEEP_EVERY: Final = 2_500  # one deep record per this many entries (at least 2)
MUTATIONS: Final = (*_QUOTAS, "deep")


@dataclass(frozen=True, slots=True)
class Seed:
    """A well-formed record to mutate."""

    topic: str
    key: bytes
    value: bytes | None
    origin: str
    strings: tuple[bytes, ...] = ()  # UTF-8 strings known to be inside key or value


@dataclass(frozen=True, slots=True)
class Entry:
    """One corpus record and what decoding it must give."""

    topic: str
    key: bytes | None
    value: bytes | None
    mutation: str
    origin: str
    detail: str
    expected_kind: str
    error_class: str | None = None
    field_path: str | None = None
    byte_offset: int | None = None


# ----------------------------------------------------------------------------- expectations


def expectation(topic: str, key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """What the reference per-record decoder makes of one record: kind, error class, path, offset."""
    row = decode_row(
        {
            "topic": topic,
            "partition": 0,
            "offset": 0,
            "timestamp": 0,
            "key": key,
            "value": value,
            "producer_id": -1,
            "producer_epoch": -1,
            "is_transactional": False,
            "is_control": False,
        }
    )
    error = row.get("error") or {}
    return {
        "expected_kind": row["kind"],
        "error_class": error.get("error_class"),
        "field_path": error.get("field_path"),
        "byte_offset": error.get("byte_offset"),
    }


def _entry(seed: Seed, key: bytes | None, value: bytes | None, mutation: str, detail: str) -> Entry:
    return Entry(
        seed.topic, key, value, mutation, seed.origin, detail, **expectation(seed.topic, key, value)
    )


# ----------------------------------------------------------------------------- seeds


def real_seeds(scenarios: Sequence[str] = DEFAULT_SCENARIOS) -> list[Seed]:
    """Every internal-topic record (markers excluded) of the scenarios' logs, in log order."""
    from offsetscope.sim.scenarios.engine import simulate
    from offsetscope.sim.scenarios.spec import load_scenario

    seeds: list[Seed] = []
    for name in scenarios:
        result = simulate(load_scenario(name))
        for log in result.cluster.logs:
            if log.topic not in TOPICS:
                continue
            for batch in log.batches:
                if batch.is_control:
                    continue
                for i, rec in enumerate(batch.records):
                    if rec.key is None:
                        continue
                    origin = f"scenario:{name}:{log.topic}-{log.partition}@{batch.base_offset + i}"
                    seeds.append(
                        Seed(log.topic, rec.key, rec.value, origin, _strings_of(log.topic, rec))
                    )
    return seeds


def _strings_of(topic: str, rec: Any) -> tuple[bytes, ...]:
    """UTF-8 strings of a decoded record (group ids, member ids, topics ...), longest first."""
    row = expectation(topic, rec.key, rec.value)
    if row["expected_kind"] not in EVENT_KINDS:
        return ()
    from offsetscope.protocol.codec import decode_record

    decoded = decode_record(topic, rec.key, rec.value)
    found: set[bytes] = set()

    def walk(value: Any) -> None:
        if isinstance(value, str) and value:
            found.add(value.encode("utf-8"))
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(getattr(decoded, "key", None))
    walk(getattr(decoded, "value", None))
    return tuple(sorted(found, key=lambda s: (-len(s), s)))


_TEXT: Final = (
    "g",
    "payments",
    "consumer-1-5f1c",
    "orders.v2",
    "été",
    "日本語トピック",
    "🚀-group",
    "x" * 300,
    "",
)


class _Budget:
    """Bounds the number of array elements a synthetic message may hold."""

    def __init__(self, elements: int, width: int) -> None:
        self.left = elements
        self.width = width

    def take(self, rng: random.Random) -> int:
        n = min(rng.randint(0, self.width), max(self.left, 0))
        self.left -= n
        return n


def _scalar(kind: str, rng: random.Random, *, wild: bool) -> Any:
    if kind in ("int8", "int16", "int32", "int64"):
        bits = int(kind[3:])
        lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        if wild and rng.random() < 0.3:
            return rng.choice([lo, hi, -1, 0])
        return rng.randint(0, min(hi, 10_000 if bits < 64 else 1_800_000_000_000))
    if kind == "uint16":
        return rng.randint(0, 65_535)
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "string":
        return rng.choice(_TEXT)
    if kind == "bytes":
        return rng.randbytes(rng.randint(0, 48))
    if kind == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    raise ValueError(f"no random value for type {kind}")


def _random_struct(
    fields: Sequence[Field], version: int, rng: random.Random, budget: _Budget, wild: bool
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields:
        if not f.present_in(version):
            continue
        if f.is_tagged_in(version) and rng.random() < 0.5:
            out[f.json_name] = f.default_value(version)
            continue
        if f.is_nullable_in(version) and rng.random() < 0.15:
            out[f.json_name] = None
            continue
        if f.is_array:
            n = budget.take(rng)
            if f.is_struct:
                out[f.json_name] = [
                    _random_struct(f.fields, version, rng, budget, wild) for _ in range(n)
                ]
            else:
                out[f.json_name] = [_scalar(f.element_type, rng, wild=wild) for _ in range(n)]
        elif f.is_struct:
            out[f.json_name] = _random_struct(f.fields, version, rng, budget, wild)
        else:
            out[f.json_name] = _scalar(f.type, rng, wild=wild)
    return out


def _defaults(message: Message, version: int) -> dict[str, Any]:
    return {f.json_name: f.default_value(version) for f in message.fields_in(version)}


def synthetic_record(
    rt: RecordType,
    version: int,
    rng: random.Random,
    *,
    elements: int = 12,
    width: int = 3,
    wild: bool = False,
) -> tuple[bytes, bytes]:
    """A well-formed record of type ``rt`` at value ``version`` with random field values.

    Values the decoder rejects (an enum code outside its range) are redrawn; after a few tries
    the value falls back to every field's default.
    """
    for attempt in range(6):
        budget = _Budget(elements, width)
        key_data = _random_struct(rt.key.fields, 0, rng, _Budget(4, 2), wild)
        if attempt == 5:
            value_data = _defaults(rt.value, version)
        else:
            value_data = _random_struct(rt.value.fields, version, rng, budget, wild)
        try:
            key, value = encode_record(make_record(rt.topic, rt.id, key_data, value_data, version))
        except (ValueError, TypeError, struct.error, OverflowError):
            continue
        assert value is not None
        if expectation(rt.topic, key, value)["expected_kind"] in EVENT_KINDS:
            return key, value
    raise RuntimeError(f"no well-formed {rt.name} v{version} could be built")


def plausible_commit(rng: random.Random, at_ms: int) -> tuple[bytes, bytes]:
    """An OffsetCommit v3 as a consumer would cause one: random group, topic and partition, a
    non-negative offset, committed at ``at_ms``. Unlike :func:`synthetic_record`'s random field
    values it passes the ``offset_commits`` quality suite, so a test of the intact rest of a
    damaged log finds it in the table rather than in ``quality_quarantine``."""
    key = {
        "group": f"group-{rng.randrange(8)}",
        "topic": f"topic-{rng.randrange(8)}",
        "partition": rng.randrange(64),
    }
    value = {
        "offset": rng.randrange(1 << 40),
        "leaderEpoch": rng.randrange(-1, 50),
        "metadata": "",
        "commitTimestamp": at_ms,
    }
    encoded_key, encoded_value = encode_record(make_record(OFFSETS_TOPIC, 1, key, value, 3))
    assert encoded_value is not None
    return encoded_key, encoded_value


def schema_seeds(rng: random.Random, per_version: int = 2) -> list[Seed]:
    """``per_version`` synthetic records for every record type and value version, plus a
    tombstone of each type."""
    seeds = []
    for topic in TOPICS:
        for _, rt in sorted(BY_TOPIC[topic].items()):
            for version in rt.value.versions:
                for i in range(per_version):
                    key, value = synthetic_record(rt, version, rng, wild=i % 2 == 1)
                    seeds.append(Seed(topic, key, value, f"schema:{rt.name}:v{version}"))
            key, _ = synthetic_record(rt, rt.value.versions[0], rng)
            seeds.append(Seed(topic, key, None, f"schema:{rt.name}:tombstone"))
    return seeds


def _consumer_group_metadata(rng: random.Random, members: int, topics: int) -> tuple[bytes, bytes]:
    """A classic GroupMetadata value with many members subscribed to many topics."""
    names = [f"topic-{i:04d}" for i in range(topics)]
    rows = []
    for m in range(members):
        assigned = [{"topic": t, "partitions": list(range(m % 7, 64, 7))} for t in names]
        rows.append(
            {
                "memberId": f"consumer-{m}-{rng.getrandbits(48):012x}",
                "groupInstanceId": None if m % 3 else f"instance-{m}",
                "clientId": f"consumer-{m}",
                "clientHost": f"/10.0.{m // 256}.{m % 256}",
                "rebalanceTimeout": 300_000,
                "sessionTimeout": 45_000,
                "subscription": cp.encode_subscription(
                    1,
                    {"topics": names, "userData": None, "ownedPartitions": assigned[:2]},
                ),
                "assignment": cp.encode_assignment(
                    0, {"assignedPartitions": assigned, "userData": None}
                ),
            }
        )
    value = {
        "protocolType": "consumer",
        "generation": rng.randint(1, 10_000),
        "protocol": "range",
        "leader": rows[0]["memberId"],
        "currentStateTimestamp": START_MS,
        "members": rows,
    }
    key, val = encode_record(make_record(OFFSETS_TOPIC, 2, {"group": "deep-group"}, value, 3))
    assert val is not None
    return key, val


def _deep_entries(rng: random.Random, count: int) -> list[Entry]:
    kinds = [rt for topic in TOPICS for rt in BY_TOPIC[topic].values() if rt.id != 0]
    out: list[Entry] = []
    for i in range(count):
        if i % 3 == 0:
            members, topics = rng.choice([(400, 8), (120, 40), (40, 120)])
            key, value = _consumer_group_metadata(rng, members, topics)
            detail = f"GroupMetadata with {members} members x {topics} topics"
            origin = "deep:GROUP_METADATA"
            topic = OFFSETS_TOPIC
        else:
            rt = rng.choice(kinds)
            version = rng.choice(list(rt.value.versions))
            key, value = synthetic_record(rt, version, rng, elements=6_000, width=40)
            detail = f"{rt.name} v{version}, up to 6000 array elements"
            origin = f"deep:{rt.name}"
            topic = rt.topic
        seed = Seed(topic, key, value, origin)
        out.append(_entry(seed, key, value, "deep", f"{detail}, {len(value)} value bytes"))
    return out


# ----------------------------------------------------------------------------- mutations


def _overwrite(buf: bytes, pos: int, new: bytes) -> bytes:
    return buf[:pos] + new + buf[pos + len(new) :]


_HUGE: Final = (
    ("int16 0x7fff", struct.pack(">h", 0x7FFF)),
    ("int32 0x7fffffff", struct.pack(">i", 0x7FFFFFFF)),
    ("int32 0x40000000", struct.pack(">i", 0x40000000)),
    ("uvarint 0xffffffff", b"\xff\xff\xff\xff\x0f"),
    ("uvarint 0x40000000", b"\x80\x80\x80\x80\x04"),
)
_NEGATIVE: Final = (
    ("int16 -2", struct.pack(">h", -2)),
    ("int16 -32768", struct.pack(">h", -32768)),
    ("int32 -2", struct.pack(">i", -2)),
    ("int32 -2147483648", struct.pack(">i", -(2**31))),
    ("uvarint 2^32-2", b"\xfe\xff\xff\xff\x0f"),
)
_BAD_UTF8: Final = (b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xe2\x82", b"\x80")


def _side(seed: Seed, rng: random.Random) -> str:
    return "value" if seed.value and (len(seed.value) > 2 and rng.random() < 0.75) else "key"


def _mutate_at(seed: Seed, side: str, buf: bytes) -> tuple[bytes | None, bytes | None]:
    return (buf, seed.value) if side == "key" else (seed.key, buf)


def _truncations(seed: Seed, side: str) -> Iterator[tuple[int, bytes | None, bytes | None]]:
    buf = seed.key if side == "key" else seed.value
    if buf is None:
        return
    for cut in range(len(buf)):
        key, value = _mutate_at(seed, side, buf[:cut])
        yield cut, key, value


def _overwrites(
    seed: Seed, rng: random.Random, table: Sequence[tuple[str, bytes]], mutation: str
) -> Entry:
    side = _side(seed, rng)
    buf = seed.key if side == "key" else seed.value
    assert buf is not None
    label, new = rng.choice(table)
    pos = rng.randint(2, max(2, len(buf) - 1))
    mutated = _overwrite(buf, pos, new)[: max(len(buf), pos + len(new))]
    key, value = _mutate_at(seed, side, mutated)
    return _entry(seed, key, value, mutation, f"{side}[{pos}] = {label}")


def _bitflip(seed: Seed, rng: random.Random) -> Entry:
    side = _side(seed, rng)
    buf = bytearray(seed.key if side == "key" else seed.value or b"")
    flips = []
    for _ in range(rng.randint(1, 3)):
        bit = rng.randrange(len(buf) * 8)
        buf[bit // 8] ^= 0x80 >> (bit % 8)
        flips.append(bit)
    key, value = _mutate_at(seed, side, bytes(buf))
    return _entry(seed, key, value, "bitflip", f"{side} bits {flips}")


def _known_versions(seed: Seed) -> Sequence[int]:
    rtype = struct.unpack_from(">h", seed.key, 0)[0]
    rt = BY_TOPIC[seed.topic].get(rtype)
    return list(rt.value.versions) if rt is not None else []


def _wrong_version(seed: Seed, rng: random.Random) -> Entry:
    assert seed.value is not None
    known = _known_versions(seed)
    top = max(known, default=0)
    version = rng.choice([-1, -2, -32768, top + 1, top + 2, 1000, 32767])
    value = struct.pack(">h", version) + seed.value[2:]
    return _entry(seed, seed.key, value, "wrong_version", f"value version {version}")


def _swapped_version(seed: Seed, rng: random.Random) -> Entry:
    assert seed.value is not None
    current = struct.unpack_from(">h", seed.value, 0)[0]
    others = [v for v in _known_versions(seed) if v != current] or [current]
    version = rng.choice(others)
    value = struct.pack(">h", version) + seed.value[2:]
    return _entry(seed, seed.key, value, "swapped_version", f"v{current} body read as v{version}")


def _unknown_type(seed: Seed, rng: random.Random) -> Entry:
    known = set(BY_TOPIC[seed.topic])
    while True:
        rtype = rng.choice([rng.randint(-32768, -1), rng.randint(max(known) + 1, 32767), 99])
        if rtype not in known:
            break
    key = struct.pack(">h", rtype) + seed.key[2:]
    return _entry(seed, key, seed.value, "unknown_type", f"record type {rtype}")


def _invalid_utf8(seed: Seed, rng: random.Random) -> Entry:
    candidates = [s for s in seed.strings if s]
    for side in rng.sample(["key", "value"], 2):
        buf = seed.key if side == "key" else seed.value
        if buf is None:
            continue
        for text in candidates:
            at = buf.find(text)
            if at < 0:
                continue
            bad = rng.choice(_BAD_UTF8)
            pos = at + rng.randrange(len(text))
            mutated = buf[:pos] + bad + buf[pos + 1 :]
            key, value = _mutate_at(seed, side, mutated)
            return _entry(seed, key, value, "invalid_utf8", f"{side}[{pos}] = {bad.hex()}")
    # No string found: corrupt the first string-like position after the type/version.
    buf = seed.key
    mutated = buf[:4] + b"\xff" + buf[5:] if len(buf) > 4 else buf
    return _entry(seed, mutated, seed.value, "invalid_utf8", "key[4] = ff")


def _trailing(seed: Seed, rng: random.Random) -> Entry:
    extra = rng.randbytes(rng.randint(1, 16))
    if seed.value is None:
        return _entry(seed, seed.key + extra, None, "trailing_bytes", f"key + {len(extra)} bytes")
    return _entry(
        seed, seed.key, seed.value + extra, "trailing_bytes", f"value + {len(extra)} bytes"
    )


def _garbage(rng: random.Random, topic: str) -> Entry:
    key = rng.randbytes(rng.randint(0, 40))
    value = None if rng.random() < 0.1 else rng.randbytes(rng.randint(0, 200))
    seed = Seed(topic, key, value, "random")
    return _entry(seed, key, value, "garbage", f"{len(key)}-byte key")


def _null_key(seed: Seed, rng: random.Random) -> Entry:
    key = None if rng.random() < 0.5 else b""
    return _entry(seed, key, seed.value, "null_key", "null key" if key is None else "empty key")


def _representatives(seeds: Sequence[Seed]) -> list[Seed]:
    """One seed per (topic, record type, value version, tombstone), first seen first."""
    seen: dict[tuple[str, int, int | None], Seed] = {}
    for s in seeds:
        rtype = struct.unpack_from(">h", s.key, 0)[0]
        version = None if s.value is None else struct.unpack_from(">h", s.value, 0)[0]
        seen.setdefault((s.topic, rtype, version), s)
    return list(seen.values())


# ----------------------------------------------------------------------------- the corpus


def generate(
    records: int, seed: int = 0, scenarios: Sequence[str] = DEFAULT_SCENARIOS
) -> list[Entry]:
    """``records`` corpus entries, the same for the same arguments (see the module docstring).

    Truncations take every length of the representative seeds (one real record per topic,
    record type and value version, then one synthetic record per type and version) before
    any further seed; the other mutations draw seeds at random.
    """
    if records < 100:
        raise ValueError("a corpus needs at least 100 records")
    rng = random.Random(seed)
    real = real_seeds(scenarios)
    synthetic = schema_seeds(random.Random(seed + 1))
    seeds = real + synthetic
    with_value = [s for s in seeds if s.value is not None and len(s.value) > 2]
    with_strings = [s for s in real if s.strings]
    deep = max(2, records // _DEEP_EVERY)
    quotas = _quota_counts(records - deep)
    out: list[Entry] = []

    # Valid: every kind of seed at least once when the quota allows, then at random.
    firsts = _representatives(real) + _representatives(synthetic)
    valid = firsts[: quotas["valid"]]
    valid += [rng.choice(seeds) for _ in range(quotas["valid"] - len(valid))]
    out += [_entry(s, s.key, s.value, "valid", s.origin) for s in valid]

    for side in ("key", "value"):
        mutation = f"truncate_{side}"
        wanted = quotas[mutation]
        made: list[Entry] = []
        order = firsts + [s for s in rng.sample(seeds, len(seeds)) if s not in firsts]
        for s in order:
            for cut, key, value in _truncations(s, side):
                made.append(_entry(s, key, value, mutation, f"{side}[:{cut}]"))
            if len(made) >= wanted:
                break
        out += made[:wanted]

    makers: dict[str, Callable[[], Entry]] = {
        "bitflip": lambda: _bitflip(rng.choice(seeds), rng),
        "huge_length": lambda: _overwrites(rng.choice(seeds), rng, _HUGE, "huge_length"),
        "negative_count": lambda: _overwrites(rng.choice(seeds), rng, _NEGATIVE, "negative_count"),
        "wrong_version": lambda: _wrong_version(rng.choice(with_value), rng),
        "swapped_version": lambda: _swapped_version(rng.choice(with_value), rng),
        "unknown_type": lambda: _unknown_type(rng.choice(seeds), rng),
        "invalid_utf8": lambda: _invalid_utf8(rng.choice(with_strings), rng),
        "trailing_bytes": lambda: _trailing(rng.choice(seeds), rng),
        "garbage": lambda: _garbage(rng, rng.choice(TOPICS)),
        "null_key": lambda: _null_key(rng.choice(seeds), rng),
    }
    for mutation, make in makers.items():
        out += [make() for _ in range(quotas[mutation])]
    out += _deep_entries(rng, deep)
    rng.shuffle(out)
    return out


def _quota_counts(total: int) -> dict[str, int]:
    counts = {m: int(total * share) for m, share in _QUOTAS.items()}
    counts["valid"] += total - sum(counts.values())
    return counts


def check_invariants(entries: Iterable[Entry]) -> list[str]:
    """Outcomes fixed by construction that the reference decoder must give; [] when all hold."""
    problems = []
    for e in entries:
        kind = e.expected_kind
        bad = (
            (e.mutation == "valid" and kind not in EVENT_KINDS)
            or (e.mutation.startswith("truncate") and kind != "error")
            or (e.mutation == "unknown_type" and kind != "unknown")
            or (e.mutation == "null_key" and kind != "error")
            or (e.mutation == "deep" and kind not in EVENT_KINDS)
            or (kind == "error" and not (e.error_class and e.field_path is not None))
        )
        if bad:
            problems.append(f"{e.mutation} {e.detail} of {e.origin}: {kind} {e.error_class}")
    return problems


# ----------------------------------------------------------------------------- output


@dataclass(frozen=True, slots=True)
class Layout:
    """Where :func:`write_corpus` put the entries."""

    root: Path
    partitions: dict[str, int]  # topic -> partition count
    records: int
    batches: int
    segments: int
    counts: dict[str, int] = field(default_factory=dict)  # expected kind -> entries


def manifest_schema() -> pa.Schema:
    return pa.schema(
        [
            pa.field("topic", pa.string()),
            pa.field("partition", pa.int32()),
            pa.field("offset", pa.int64()),
            pa.field("timestamp", pa.int64()),
            pa.field("key", pa.binary()),
            pa.field("value", pa.binary()),
            pa.field("mutation", pa.string()),
            pa.field("origin", pa.string()),
            pa.field("detail", pa.string()),
            pa.field("expected_kind", pa.string()),
            pa.field("error_class", pa.string()),
            pa.field("field_path", pa.string()),
            pa.field("byte_offset", pa.int32()),
        ]
    )


def write_corpus(
    entries: Sequence[Entry],
    out: str | Path,
    *,
    seed: int = 0,
    offsets_partitions: int = 3,
    transaction_partitions: int = 2,
    segment_bytes: int = 4 * 1024 * 1024,
    max_batch_records: int = 48,
) -> Layout:
    """Write ``entries`` as a Kafka log directory plus ``corpus.parquet`` (module docstring).

    Entries keep their order within a partition; each partition's entries are cut into batches
    of 1..``max_batch_records`` records (seeded).
    """
    root = Path(out)
    rng = random.Random(seed + 2)
    counts = {OFFSETS_TOPIC: offsets_partitions, TRANSACTION_TOPIC: transaction_partitions}
    per_partition: dict[tuple[str, int], list[int]] = {
        (t, p): [] for t, n in counts.items() for p in range(n)
    }
    for i, e in enumerate(entries):
        per_partition[(e.topic, rng.randrange(counts[e.topic]))].append(i)
    config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=4096)
    rows: list[dict[str, Any]] = []
    batches = segments = 0
    for (topic, p), indexes in sorted(per_partition.items()):
        with PartitionWriter(root / f"{topic}-{p}", config=config) as writer:
            at = 0
            while at < len(indexes):
                n = rng.randint(1, max_batch_records)
                chunk = indexes[at : at + n]
                size = 0
                # A batch stays well below the segment size (deep records ride alone).
                for j, i in enumerate(chunk):
                    size += len(entries[i].key or b"") + len(entries[i].value or b"")
                    if size > segment_bytes // 4 and j > 0:
                        chunk = chunk[:j]
                        break
                specs = [RecordSpec(entries[i].key, entries[i].value, START_MS + i) for i in chunk]
                info = writer.append(specs)
                batches += 1
                for offset, i in enumerate(chunk, start=info.base_offset):
                    e = entries[i]
                    rows.append(
                        {
                            "topic": topic,
                            "partition": p,
                            "offset": offset,
                            "timestamp": START_MS + i,
                            "key": e.key,
                            "value": e.value,
                            "mutation": e.mutation,
                            "origin": e.origin,
                            "detail": e.detail,
                            "expected_kind": e.expected_kind,
                            "error_class": e.error_class,
                            "field_path": e.field_path,
                            "byte_offset": e.byte_offset,
                        }
                    )
                at += len(chunk)
            segments += len(writer.segment_base_offsets)
    table = pa.Table.from_pylist(rows, schema=manifest_schema())
    pq.write_table(table, root / MANIFEST)
    return Layout(
        root, counts, len(rows), batches, segments, dict(Counter(e.expected_kind for e in entries))
    )


def load_manifest(root: str | Path) -> pa.Table:
    """The ``corpus.parquet`` of a corpus directory."""
    return pq.read_table(Path(root) / MANIFEST, schema=manifest_schema())


def produce(
    manifest: pa.Table,
    bootstrap: str,
    *,
    offsets_topic: str,
    transaction_topic: str,
    config: dict[str, str] | None = None,
) -> int:
    """Produce the corpus records to two mirror topics, each record to its manifest partition.

    :func:`write_corpus` numbers each partition densely from 0 in manifest order, and one
    idempotent producer keeps a partition's order, so fresh mirror topics hold every record at
    its manifest offset: the manifest's coordinates are the mirror's. The topics must exist with
    at least the corpus's partition counts. Returns the number of
    records the broker acknowledged (every one, or this raises).
    """
    from confluent_kafka import KafkaException, Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 20,
            "message.max.bytes": 4 * 1024 * 1024,
            **(config or {}),
        }
    )
    names = {OFFSETS_TOPIC: offsets_topic, TRANSACTION_TOPIC: transaction_topic}
    errors: list[str] = []
    acked = 0

    def delivered(err: Any, _msg: Any) -> None:
        nonlocal acked
        if err is not None:
            errors.append(str(err))
        else:
            acked += 1

    for row in manifest.select(["topic", "partition", "key", "value", "timestamp"]).to_pylist():
        while True:
            try:
                producer.produce(
                    names[row["topic"]],
                    key=row["key"],
                    value=row["value"],
                    partition=row["partition"],
                    timestamp=row["timestamp"],
                    on_delivery=delivered,
                )
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    left = producer.flush(120)
    if left or errors:
        raise KafkaException(f"{left} records unsent, {len(errors)} failed: {errors[:3]}")
    return acked


# ----------------------------------------------------------------------------- crash damage


@dataclass(frozen=True, slots=True)
class Damage:
    """One damaged spot of a crash log: where, and what the pipeline must report."""

    partition_dir: str
    kind: str  # crc | corrupt_records | torn_sealed | lost_framing | bomb | torn_active
    first_offset: int  # first offset the damage hides
    last_offset: int  # last offset it hides
    error_class: str | None  # the quarantine row's class (None: not a quarantine row)


@dataclass(frozen=True, slots=True)
class CrashLog:
    """A log directory as a crashed broker leaves it (see :func:`write_crash_log`)."""

    root: Path
    damage: tuple[Damage, ...]
    good: dict[tuple[str, int], tuple[bytes, bytes | None]]  # (partition dir, offset) -> record


def write_crash_log(out: str | Path, seed: int = 0, *, batches: int = 30) -> CrashLog:
    """A ``__consumer_offsets`` log directory with crash damage, and what it hides.

    ``__consumer_offsets-0``: three sealed segments and an active one; a CRC mismatch in a
    sealed segment (a flipped byte in the records), a batch whose records section does not
    parse but whose CRC matches, a torn tail at the end of a sealed segment, and a torn tail in
    the active segment (a batch cut short by the crash).
    ``__consumer_offsets-1``: a sealed segment that loses framing in its middle (a garbage
    length), then a good segment; a gzip decompression bomb (records claiming far more than the
    decompression limit) in the active segment.
    Records are plausible offset commits (:func:`plausible_commit`); ``good`` holds every record
    that must arrive intact.
    """
    import cramjam
    import crc32c

    root = Path(out)
    rng = random.Random(seed)
    good: dict[tuple[str, int], tuple[bytes, bytes | None]] = {}
    damage: list[Damage] = []

    def commit(i: int) -> RecordSpec:
        key, value = plausible_commit(rng, START_MS + i)
        return RecordSpec(key, value, START_MS + i)

    def write_segment(path: Path, base: int, count: int) -> list[tuple[int, int, int]]:
        """Good batches of 1-5 records; returns (position, size, base offset) per batch."""
        spans = []
        position = 0
        offset = base
        with path.open("wb") as handle:
            for _ in range(count):
                specs = [commit(offset + j) for j in range(rng.randint(1, 5))]
                info_bytes = _encode(specs, offset)
                handle.write(info_bytes)
                spans.append((position, len(info_bytes), offset))
                for j, spec in enumerate(specs):
                    good[(path.parent.name, offset + j)] = (spec.key or b"", spec.value)
                position += len(info_bytes)
                offset += len(specs)
        return spans

    def _encode(specs: list[RecordSpec], base: int) -> bytes:
        from offsetscope.protocol.log import encode_batch

        return encode_batch(specs, base_offset=base)

    def read(path: Path) -> bytearray:
        return bytearray(path.read_bytes())

    def forget(dirname: str, first: int, last: int) -> None:
        for o in range(first, last + 1):
            good.pop((dirname, o), None)

    def offsets_of(
        spans: list[tuple[int, int, int]], k: int, data: bytes | bytearray
    ) -> tuple[int, int]:
        position, _, base = spans[k]
        delta = struct.unpack_from(">i", data, position + 23)[0]
        return base, base + delta

    # -- partition 0
    d0 = root / f"{OFFSETS_TOPIC}-0"
    d0.mkdir(parents=True, exist_ok=True)
    base = 0
    layout: list[tuple[Path, list[tuple[int, int, int]]]] = []
    for _ in range(4):
        path = d0 / f"{base:020d}.log"
        spans = write_segment(path, base, batches)
        layout.append((path, spans))
        base = offsets_of(spans, len(spans) - 1, read(path))[1] + 1
    name0 = d0.name
    # CRC mismatch: flip one byte inside the records of batch 5 of segment 0.
    path, spans = layout[0]
    data = read(path)
    position, size, _ = spans[5]
    data[position + size - 3] ^= 0x41
    path.write_bytes(bytes(data))
    first, last = offsets_of(spans, 5, data)
    forget(name0, first, last)
    damage.append(Damage(name0, "crc", first, last, "CrcMismatchError"))
    # Records that do not parse, CRC recomputed: batch 9 of segment 0 claims 1000 records.
    position, size, _ = spans[9]
    data[position + 57 : position + 61] = struct.pack(">i", 1000)
    data[position + 17 : position + 21] = struct.pack(
        ">I", crc32c.crc32c(bytes(data[position + 21 : position + size]))
    )
    path.write_bytes(bytes(data))
    first, last = offsets_of(spans, 9, data)
    forget(name0, first, last)
    damage.append(Damage(name0, "corrupt_records", first, last, "InvalidLengthError"))
    # Torn tail of a sealed segment: segment 1 loses the second half of its last batch.
    path, spans = layout[1]
    data = read(path)
    position, size, _ = spans[-1]
    first, last = offsets_of(spans, len(spans) - 1, data)
    path.write_bytes(bytes(data[: position + size // 2]))
    forget(name0, first, last)
    damage.append(Damage(name0, "torn_sealed", first, last, "TruncatedSegmentError"))
    # Torn tail of the active segment: the crash cut the last batch short.
    path, spans = layout[3]
    data = read(path)
    position, size, _ = spans[-1]
    first, last = offsets_of(spans, len(spans) - 1, data)
    path.write_bytes(bytes(data[: position + size - 7]))
    forget(name0, first, last)
    damage.append(Damage(name0, "torn_active", first, last, None))

    # -- partition 1
    d1 = root / f"{OFFSETS_TOPIC}-1"
    d1.mkdir(parents=True, exist_ok=True)
    name1 = d1.name
    p1 = d1 / f"{0:020d}.log"
    spans = write_segment(p1, 0, batches)
    data = read(p1)
    k = batches // 2
    position, _, _ = spans[k]
    lost_first = offsets_of(spans, k, data)[0]
    lost_last = offsets_of(spans, len(spans) - 1, data)[1]
    data[position + 8 : position + 12] = struct.pack(">i", 3)  # a length no batch can have
    p1.write_bytes(bytes(data))
    forget(name1, lost_first, lost_last)
    damage.append(Damage(name1, "lost_framing", lost_first, lost_last, "InvalidTailError"))
    next_base = lost_last + 1
    p2 = d1 / f"{next_base:020d}.log"
    spans2 = write_segment(p2, next_base, batches)
    data2 = p2.read_bytes()
    bomb_base = offsets_of(spans2, len(spans2) - 1, data2)[1] + 1
    # A gzip bomb: 200 MB of zeros in one record, far above the 64 MB decompression limit.
    inner = _bomb_records(200 * 1024 * 1024)
    packed = bytes(cramjam.gzip.compress(inner, level=9))
    bomb = assemble_batch(
        base_offset=bomb_base,
        last_offset_delta=0,
        partition_leader_epoch=0,
        attributes=int(Compression.GZIP),
        base_timestamp=START_MS,
        max_timestamp=START_MS,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        count=1,
        records=packed,
    )
    tail = _encode([commit(bomb_base + 1)], bomb_base + 1)
    with p2.open("ab") as handle:
        handle.write(bomb)
        handle.write(tail)
    good[(name1, bomb_base + 1)] = _record_of(tail)
    damage.append(Damage(name1, "bomb", bomb_base, bomb_base, "CompressionError"))
    return CrashLog(root, tuple(damage), good)


def _bomb_records(size: int) -> bytes:
    """One record whose value is ``size`` zero bytes (the records section of a batch)."""
    from offsetscope.protocol.log.varint import encode_varint

    body = (
        b"\x00"  # attributes
        + encode_varint(0)  # timestamp delta
        + encode_varint(0)  # offset delta
        + encode_varint(-1)  # null key
        + encode_varint(size)
        + bytes(size)
        + encode_varint(0)  # no headers
    )
    return encode_varint(len(body)) + body


def _record_of(batch: bytes) -> tuple[bytes, bytes | None]:
    from offsetscope.protocol.log import read_batches

    (b,) = list(read_batches(batch, strict=True))
    (r,) = b.records
    return r.key or b"", r.value


# ----------------------------------------------------------------------------- memory


@dataclass(frozen=True, slots=True)
class Peaks:
    """Peak resident memory seen while a pipeline ran, in bytes (sampled from ``/proc``)."""

    driver_python: int  # this process
    driver_jvm: int  # the Spark driver JVM (local mode: it runs the executors too)
    python_workers: int  # largest single Python worker
    python_workers_total: int  # largest sum over the Python workers alive at one moment
    samples: int


class MemoryWatch:
    """Samples the RSS of this process, its JVM and its Python workers in a thread.

    The JVM is a child of this process (py4j launches ``java``); the Python workers are the
    ``pyspark.daemon`` process and its forks, children of the JVM. Linux only (``/proc``).
    """

    def __init__(self, interval: float = 0.2) -> None:
        import threading

        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="memory-watch", daemon=True)
        self._peak = {"driver_python": 0, "driver_jvm": 0, "worker": 0, "workers": 0}
        self._samples = 0

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def peaks(self) -> Peaks:
        """The peaks so far."""
        p = self._peak
        return Peaks(p["driver_python"], p["driver_jvm"], p["worker"], p["workers"], self._samples)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        """Take one sample now."""
        import os

        me = os.getpid()
        procs = _processes()
        children: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in procs.items():
            children.setdefault(ppid, []).append(pid)
        jvm = 0
        workers: list[int] = []
        stack = list(children.get(me, []))
        while stack:
            pid = stack.pop()
            _, rss, cmd = procs[pid]
            if "java" in cmd.split(" ", 1)[0]:
                jvm = max(jvm, rss)
            elif "python" in cmd and "pyspark" in cmd:
                workers.append(rss)
            stack.extend(children.get(pid, []))
        peak = self._peak
        peak["driver_python"] = max(peak["driver_python"], procs.get(me, (0, 0, ""))[1])
        peak["driver_jvm"] = max(peak["driver_jvm"], jvm)
        peak["worker"] = max([peak["worker"], *workers])
        peak["workers"] = max(peak["workers"], sum(workers))
        self._samples += 1


def _processes() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, RSS bytes, command line) of every process readable in ``/proc``."""
    import os

    page = os.sysconf("SC_PAGE_SIZE")
    out: dict[int, tuple[int, int, str]] = {}
    for entry in Path("/proc").iterdir():
        name = entry.name
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
            rss_pages = int(Path(f"/proc/{name}/statm").read_text().split()[1])
            cmd = (
                Path(f"/proc/{name}/cmdline")
                .read_bytes()
                .replace(b"\0", b" ")
                .decode("utf-8", "replace")
            )
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        out[int(name)] = (ppid, rss_pages * page, cmd)
    return out


# ----------------------------------------------------------------------------- the pipeline


@dataclass(frozen=True, slots=True)
class Accounting:
    """What the pipeline made of a corpus, from its tables, next to what the manifest expects."""

    records: int  # manifest rows
    batches: int
    rows_in: int  # audit: records the source delivered
    events: int
    quarantined: int
    unknown: int
    raw_records: int  # rows of raw_records
    misplaced: tuple[str, ...]  # records not in the table of their expected kind (first 20)
    unnamed: int  # quarantine error rows without class, path or offset
    seconds: float

    @property
    def balanced(self) -> bool:
        """Every record accounted for, in the right table, every error named."""
        return (
            self.rows_in == self.records == self.raw_records
            and self.events + self.quarantined + self.unknown == self.rows_in
            and not self.misplaced
            and self.unnamed == 0
        )


# kind -> (table, its partition and offset columns); offset_commits hold __consumer_offsets only
_HOMES: Final = {
    "offset_commit": "offset_commits",
    "group_metadata": "group_metadata_events",
    "consumer_group": "consumer_group_events",
    "transaction_log": "transaction_log_events",
    "error": "quarantine",
    "unknown": "quarantine",
}


def account(spark: Any, cfg: Any, root: str | Path, seconds: float = 0.0) -> Accounting:
    """Compare the tables of ``cfg`` with the manifest of the corpus at ``root``."""
    from pyspark.sql import functions as F

    from offsetscope.spark import tables as catalogue

    def table(logical: str) -> Any:
        return spark.table(catalogue.table_name(cfg, logical))

    manifest = spark.createDataFrame(
        load_manifest(root).select(["topic", "partition", "offset", "expected_kind"]).to_pandas()
    )
    audit = table("batch_audit").agg(
        F.count("*").alias("batches"),
        *[F.sum(c).alias(c) for c in ("rows_in", "events", "quarantined", "unknown")],
    )
    a = audit.collect()[0]
    found = []
    # Events whose field values broke their table's quality suite are in quality_quarantine
    # instead (as JSON rows), which is where they belong too.
    held_name = f"{cfg.storage.schema}.quality_quarantine"
    held = spark.table(held_name) if spark.catalog.tableExists(held_name) else None

    def coordinates(logical: str, kind: str, column: Callable[[str], Any]) -> list[Any]:
        """A row's record coordinates and ``kind``, its columns read through ``column``."""
        topic = F.lit(OFFSETS_TOPIC) if logical == "offset_commits" else column("internal_topic")
        return [
            topic.alias("topic"),
            column("record_partition").cast("int").alias("partition"),
            column("record_offset").cast("bigint").alias("offset"),
            F.lit(kind).alias("found_kind"),
        ]

    def in_json(name: str) -> Any:
        return F.get_json_object("row_json", f"$.{name}")

    for kind, logical in _HOMES.items():
        df = table(logical)
        if logical == "quarantine":
            df = df.where(F.col("kind") == kind)
        found.append(df.select(*coordinates(logical, kind, F.col)))
        if logical != "quarantine" and held is not None:
            rows = held.where(F.col("table_name") == logical)
            found.append(rows.select(*coordinates(logical, kind, in_json)))
    landed = found[0]
    for other in found[1:]:
        landed = landed.unionByName(other)
    joined = manifest.join(landed, ["topic", "partition", "offset"], "full_outer")
    wrong = joined.where(
        F.col("expected_kind").isNull()
        | F.col("found_kind").isNull()
        | (F.col("expected_kind") != F.col("found_kind"))
    )
    misplaced = tuple(
        f"{r['topic']}-{r['partition']}@{r['offset']}: expected {r['expected_kind']}, "
        f"found {r['found_kind']}"
        for r in wrong.limit(20).collect()
    )
    unnamed = (
        table("quarantine")
        .where(
            (F.col("kind") == "error")
            & (
                F.col("error_class").isNull()
                | F.col("field_path").isNull()
                | F.col("byte_offset").isNull()
            )
        )
        .count()
    )
    return Accounting(
        records=load_manifest(root).num_rows,
        batches=int(a["batches"]),
        rows_in=int(a["rows_in"] or 0),
        events=int(a["events"] or 0),
        quarantined=int(a["quarantined"] or 0),
        unknown=int(a["unknown"] or 0),
        raw_records=table("raw_records").count(),
        misplaced=misplaced,
        unnamed=unnamed,
        seconds=seconds,
    )


def ingest_corpus(
    root: Path, *, env: str = "local", max_records_per_trigger: int = 50_000
) -> tuple[Accounting, Peaks]:
    """Ingest the corpus at ``root`` into a fresh schema (available now), then account for it."""
    import shutil

    from offsetscope import config
    from offsetscope.pipelines import ingest
    from offsetscope.spark.session import build_job_session

    base = config.load(env)
    work = root.resolve().parent / f"{root.name}-pipeline"
    shutil.rmtree(work, ignore_errors=True)
    cfg = config.with_segment_source(
        base, root.resolve(), max_records_per_trigger=max_records_per_trigger
    )
    # A warehouse and metastore of its own: the embedded metastore admits one JVM.
    cfg = config.with_storage(cfg, work_dir=work, schema="offsetscope_corpus")
    cfg = config.with_pipeline(cfg, trigger="available_now")
    with MemoryWatch() as watch:
        spark = build_job_session(cfg, app_name="offsetscope-corpus")
        spark.sql(f"DROP SCHEMA IF EXISTS {cfg.storage.schema} CASCADE")

        def progress(report: ingest.BatchReport) -> None:
            phases = ", ".join(f"{k} {v:.1f}s" for k, v in sorted(report.phases.items()))
            print(report.line(), flush=True)
            print(f"    {phases}", flush=True)

        began = time.monotonic()
        ingest.run(spark, cfg, query_name="corpus", progress=progress)
        seconds = time.monotonic() - began
        accounting = account(spark, cfg, root, seconds)
    return accounting, watch.peaks()


# ----------------------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m offsetscope.verify.corpus --records N --seed S --out DIR [--ingest]``."""
    parser = argparse.ArgumentParser(
        prog="offsetscope.verify.corpus", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--offsets-partitions", type=int, default=3)
    parser.add_argument("--transaction-partitions", type=int, default=2)
    parser.add_argument("--ingest", action="store_true", help="run it through the pipeline")
    parser.add_argument("--env", default="local")
    parser.add_argument("--max-records-per-trigger", type=int, default=50_000)
    args = parser.parse_args(argv)
    if args.out.exists() and any(args.out.iterdir()):
        print(f"error: {args.out} is not empty", file=sys.stderr)
        return 1
    started = time.perf_counter()
    entries = generate(args.records, args.seed)
    problems = check_invariants(entries)
    for p in problems[:20]:
        print(f"invariant broken: {p}", file=sys.stderr)
    layout = write_corpus(
        entries,
        args.out,
        seed=args.seed,
        offsets_partitions=args.offsets_partitions,
        transaction_partitions=args.transaction_partitions,
    )
    mutations = Counter(e.mutation for e in entries)
    del entries
    print(
        f"corpus: {layout.records} records ({layout.batches} batches, {layout.segments} "
        f"segments) in {time.perf_counter() - started:.1f} s -> {args.out}"
    )
    print("  by mutation: " + ", ".join(f"{m}={mutations[m]}" for m in MUTATIONS))
    print("  expected:    " + ", ".join(f"{k}={v}" for k, v in sorted(layout.counts.items())))
    if problems:
        return 1
    if not args.ingest:
        return 0
    acc, peaks = ingest_corpus(
        args.out, env=args.env, max_records_per_trigger=args.max_records_per_trigger
    )
    mib = 1024 * 1024
    print(
        f"pipeline: {acc.rows_in} records in {acc.batches} micro-batches, {acc.seconds:.1f} s: "
        f"{acc.events} events + {acc.quarantined} quarantined + {acc.unknown} unknown = "
        f"{acc.events + acc.quarantined + acc.unknown} (input {acc.records}, raw_records "
        f"{acc.raw_records}); misplaced {len(acc.misplaced)}, unnamed errors {acc.unnamed}"
    )
    for line in acc.misplaced:
        print(f"  misplaced: {line}")
    print(
        f"peak RSS: driver python {peaks.driver_python / mib:.0f} MiB, driver JVM "
        f"{peaks.driver_jvm / mib:.0f} MiB, python worker {peaks.python_workers / mib:.0f} MiB "
        f"(all workers at once {peaks.python_workers_total / mib:.0f} MiB; "
        f"{peaks.samples} samples)"
    )
    print(f"corpus: {'balanced' if acc.balanced else 'NOT BALANCED'}")
    return 0 if acc.balanced else 1


if __name__ == "__main__":
    sys.exit(main())
