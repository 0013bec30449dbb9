"""Fuzzing the protocol layer with hypothesis at scale (``make fuzz``; marked ``slow``).

Four targets, each run in rounds of ``FUZZ_ROUND`` examples with a fresh seed per round until
its share of ``FUZZ_SECONDS`` is spent. Inputs are real and synthetic internal-topic records
(the hostile corpus's seeds, :mod:`offsetscope.verify.corpus`) mutated by flips, cuts, insertions and
overwrites with boundary integers, or raw bytes:

* ``decode_record``: returns a record or raises a :class:`~offsetscope.protocol.errors.DecodeError`
  -- any other exception is a crash;
* the consumer-protocol decoders (subscription, strict and lenient, and assignment): likewise;
* the batch reader: ``read_batches`` (lenient) never raises, strict raises only DecodeError, and
  the columnar fast path ``scan_columns`` yields the same records and diagnostics count;
* ``decode_batch``: the fast path and the per-record path give the same rows for every input,
  one row per input row.

``make fuzz`` runs the targets under an address-space limit, so an unbounded allocation fails
with MemoryError (a crash) instead of swapping. Each run prints its executions per target.
Crashes found become regression tests in ``tests/unit/`` (with the fix in the code).
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections.abc import Callable
from functools import cache
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from offsetscope.protocol import consumer_protocol as cp
from offsetscope.protocol import errors
from offsetscope.protocol.arrow_decode import DECODED_SCHEMA, _slow_path, decode_batch, raw_batch
from offsetscope.protocol.codec import decode_record
from offsetscope.protocol.log import (
    CorruptBatch,
    CrcMismatch,
    ScanReport,
    encode_batch,
    read_batches,
    scan_columns,
)
from offsetscope.protocol.log.compression import Compression
from offsetscope.protocol.log.writer import RecordSpec
from offsetscope.verify import corpus

pytestmark = pytest.mark.slow

SECONDS = float(os.environ.get("FUZZ_SECONDS", "60"))
ROUND = int(os.environ.get("FUZZ_ROUND", "500"))
TARGETS = 4
EXECUTIONS: dict[str, int] = {}

_BOUNDARY = (
    b"\x00",
    b"\xff",
    b"\x7f\xff",
    b"\x80\x00",
    b"\xff\xfe",
    b"\x7f\xff\xff\xff",
    b"\x80\x00\x00\x00",
    b"\xff\xff\xff\xfe",
    b"\xff\xff\xff\xff\x0f",
    b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",
)


@cache
def seeds() -> tuple[corpus.Seed, ...]:
    real = corpus.real_seeds(("transactions", "cooperative"))
    return tuple(real + corpus.schema_seeds(random.Random(0), per_version=1))


@cache
def blobs() -> tuple[bytes, ...]:
    """Consumer-protocol blobs: subscriptions and assignments from the real group records."""
    out: list[bytes] = []
    for s in seeds():
        if s.value is None or s.topic != corpus.OFFSETS_TOPIC:
            continue
        try:
            record = decode_record(s.topic, s.key, s.value)
        except errors.DecodeError:
            continue
        for m in (getattr(record, "value", None) or {}).get("members", []) or []:
            out.extend(
                bytes(m[name])
                for name in ("subscription", "assignment")
                if isinstance(m.get(name), bytes | bytearray)
            )
    return tuple(out)


@st.composite
def mutated(draw: st.DrawFn, base: bytes) -> bytes:
    buf = bytearray(base)
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.sampled_from(["flip", "cut", "insert", "overwrite", "delete"]))
        pos = draw(st.integers(0, len(buf))) if buf else 0
        if op == "flip" and buf:
            buf[min(pos, len(buf) - 1)] ^= 1 << draw(st.integers(0, 7))
        elif op == "cut":
            del buf[pos:]
        elif op == "insert":
            buf[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == "overwrite":
            new = draw(st.sampled_from(_BOUNDARY))
            buf[pos : pos + len(new)] = new
        elif op == "delete" and buf:
            del buf[pos : pos + draw(st.integers(1, 8))]
    return bytes(buf)


@st.composite
def records(draw: st.DrawFn) -> tuple[str, bytes | None, bytes | None]:
    if draw(st.integers(0, 9)) == 0:
        topic = draw(st.sampled_from(corpus.TOPICS))
        key = draw(st.none() | st.binary(max_size=64))
        return topic, key, draw(st.none() | st.binary(max_size=256))
    s = draw(st.sampled_from(seeds()))
    which = draw(st.sampled_from(["key", "value", "both"]))
    key = draw(mutated(s.key)) if which in ("key", "both") else s.key
    value = s.value
    if value is not None and which in ("value", "both"):
        value = draw(mutated(value))
    return s.topic, key, value


def _fuzz(name: str, test: Callable[..., None], strategy: st.SearchStrategy[Any]) -> None:
    """Run ``test`` over ``strategy`` in rounds until this target's time share is spent."""
    deadline = time.monotonic() + SECONDS / TARGETS
    count = 0
    rounds = 0

    def counted(example: Any) -> None:
        nonlocal count
        count += 1
        test(example)

    while time.monotonic() < deadline:
        run = settings(
            max_examples=ROUND,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )(seed(random.getrandbits(64) ^ rounds)(given(strategy)(counted)))
        run()
        rounds += 1
    EXECUTIONS[name] = count
    print(f"\nfuzz {name}: {count} executions in {rounds} rounds")


def _only_decode_errors(fn: Callable[[], object]) -> None:
    with contextlib.suppress(errors.DecodeError):
        fn()


def test_fuzz_decode_record() -> None:
    def check(rec: tuple[str, bytes | None, bytes | None]) -> None:
        topic, key, value = rec
        _only_decode_errors(lambda: decode_record(topic, key, value))

    _fuzz("decode_record", check, records())


def test_fuzz_consumer_protocol() -> None:
    def check(blob: bytes) -> None:
        _only_decode_errors(lambda: cp.decode_subscription(blob))
        _only_decode_errors(lambda: cp.decode_subscription(blob, lenient=True))
        _only_decode_errors(lambda: cp.decode_assignment(blob))

    base = blobs()
    assert base
    _fuzz(
        "consumer_protocol",
        check,
        st.sampled_from(base).flatmap(mutated) | st.binary(max_size=128),
    )


@st.composite
def log_buffers(draw: st.DrawFn) -> bytes:
    out = bytearray()
    offset = 0
    for _ in range(draw(st.integers(1, 3))):
        specs = [
            RecordSpec(s.key, s.value, 1_700_000_000_000 + i)
            for i, s in enumerate(draw(st.lists(st.sampled_from(seeds()), min_size=1, max_size=4)))
        ]
        codec = draw(st.sampled_from([Compression.NONE, Compression.NONE, Compression.GZIP]))
        out += encode_batch(specs, base_offset=offset, compression=codec)
        offset += len(specs)
    return draw(mutated(bytes(out)))


def _diagnosed(report: ScanReport) -> list[tuple[str, int]]:
    """(kind, position) of each diagnostic; a corrupt records section of a batch that already
    failed its CRC is not looked at by the columnar path (its records are not trusted)."""
    crc = {d.position for d in report.diagnostics if isinstance(d, CrcMismatch)}
    return sorted(
        (type(d).__name__, d.position)
        for d in report.diagnostics
        if not (isinstance(d, CorruptBatch) and d.position in crc)
    )


def test_fuzz_batch_reader() -> None:
    def check(buf: bytes) -> None:
        report = ScanReport()
        # A batch failing its CRC is yielded flagged (crc_valid False) by the reader; the
        # columnar path, which the pipeline reads with, delivers no records for it (its bytes
        # become one quarantine row). Both must deliver the same good records.
        rows = [
            (r.offset, r.key, r.value)
            for b in read_batches(buf, report=report)
            if b.crc_valid
            for r in b.records
        ]
        _only_decode_errors(lambda: [b.records for b in read_batches(buf, strict=True)])
        columnar = ScanReport()
        chunk = scan_columns(buf, report=columnar)
        columns = [
            (int(chunk.records.offset[i]), chunk.records.key(i), chunk.records.value(i))
            for i in range(len(chunk.records))
        ]
        assert columns == rows
        assert _diagnosed(columnar) == _diagnosed(report)

    _fuzz("batch_reader", check, log_buffers())


def test_fuzz_decode_batch_parity() -> None:
    def check(recs: list[tuple[str, bytes | None, bytes | None]]) -> None:
        raw = raw_batch(
            [
                {
                    "topic": t,
                    "partition": 0,
                    "offset": i,
                    "timestamp": 1000 + i,
                    "key": k,
                    "value": v,
                }
                for i, (t, k, v) in enumerate(recs)
            ]
        )
        fast = pa.Table.from_batches(list(decode_batch(raw)), schema=DECODED_SCHEMA)
        slow = pa.Table.from_batches([_slow_path(raw)], schema=DECODED_SCHEMA)
        assert fast.num_rows == raw.num_rows
        assert fast.sort_by("offset").to_pylist() == slow.sort_by("offset").to_pylist()

    _fuzz("decode_batch_parity", check, st.lists(records(), min_size=1, max_size=12))


def test_the_budget_was_spent_on_every_target() -> None:
    # Runs last in file order: every target reported its executions.
    assert set(EXECUTIONS) == {
        "decode_record",
        "consumer_protocol",
        "batch_reader",
        "decode_batch_parity",
    }
    assert all(n >= ROUND for n in EXECUTIONS.values())
    print(f"\nfuzz total: {sum(EXECUTIONS.values())} executions in {SECONDS:.0f} s")
