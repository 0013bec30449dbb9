"""The hostile corpus generator: reproducible by seed, every entry labelled by the reference
decoder, the outcomes fixed by construction, and a log directory that holds exactly the
manifest's bytes."""

from __future__ import annotations

import dataclasses
import struct
from collections import Counter
from pathlib import Path

import pytest

from offsetscope.protocol import errors
from offsetscope.protocol.codec import UnknownRecord, decode_record
from offsetscope.protocol.log import read_partition_dir
from offsetscope.protocol.registry import BY_TOPIC
from offsetscope.verify import corpus

RECORDS = 1_200


@pytest.fixture(scope="module")
def entries() -> list[corpus.Entry]:
    return corpus.generate(RECORDS, seed=11)


def test_the_same_seed_gives_the_same_corpus_and_another_seed_another(
    entries: list[corpus.Entry],
) -> None:
    assert corpus.generate(RECORDS, seed=11) == entries
    other = corpus.generate(RECORDS, seed=12)
    assert len(other) == RECORDS
    assert other != entries


def test_every_mutation_is_present_in_its_share(entries: list[corpus.Entry]) -> None:
    counts = Counter(e.mutation for e in entries)
    assert len(entries) == RECORDS
    assert set(counts) == set(corpus.MUTATIONS)
    assert counts["deep"] == 2
    for mutation, share in corpus._QUOTAS.items():
        assert counts[mutation] >= int((RECORDS - 2) * share), mutation


def _outcome(e: corpus.Entry) -> tuple[str, str | None, str | None, int | None]:
    """(kind, error class, field path, byte offset) of decode_record on the entry's bytes."""
    try:
        record = decode_record(e.topic, e.key, e.value)
    except errors.DecodeError as exc:
        return "error", type(exc).__name__, exc.path, exc.offset
    if isinstance(record, UnknownRecord):
        return "unknown", None, None, None
    return "event", None, None, None


def test_labels_are_what_the_decoder_does_with_the_bytes(entries: list[corpus.Entry]) -> None:
    for e in entries:
        kind = "event" if e.expected_kind in corpus.EVENT_KINDS else e.expected_kind
        assert _outcome(e) == (kind, e.error_class, e.field_path, e.byte_offset), e


def test_outcomes_fixed_by_construction_hold(entries: list[corpus.Entry]) -> None:
    assert corpus.check_invariants(entries) == []
    kinds = Counter(e.expected_kind for e in entries)
    assert {"error", "unknown", "offset_commit", "group_metadata", "transaction_log"} <= set(kinds)


def test_a_mislabelled_entry_breaks_an_invariant(entries: list[corpus.Entry]) -> None:
    truncated = next(e for e in entries if e.mutation == "truncate_value")
    valid = next(e for e in entries if e.mutation == "valid")
    wrong = [
        dataclasses.replace(truncated, expected_kind="offset_commit"),
        dataclasses.replace(valid, expected_kind="error"),
    ]
    assert len(corpus.check_invariants(wrong)) == 2


def test_truncations_take_every_length_of_a_seed(entries: list[corpus.Entry]) -> None:
    by_origin: dict[str, set[int]] = {}
    lengths: dict[str, int] = {}
    for e in entries:
        if e.mutation == "truncate_key":
            assert e.key is not None
            by_origin.setdefault(e.origin, set()).add(len(e.key))
            lengths[e.origin] = max(lengths.get(e.origin, 0), len(e.key) + 1)
    complete = [o for o, cuts in by_origin.items() if cuts == set(range(lengths[o]))]
    # The first seeds are cut at every length; only the last one may stop part-way.
    assert len(complete) >= len(by_origin) - 1 >= 1


def test_hostile_lengths_and_counts_are_planted(entries: list[corpus.Entry]) -> None:
    huge = [e for e in entries if e.mutation == "huge_length"]
    assert any("0x7fffffff" in e.detail for e in huge)
    negative = [e for e in entries if e.mutation == "negative_count"]
    assert any("-2147483648" in e.detail for e in negative)
    deep = [e for e in entries if e.mutation == "deep"]
    assert max(len(e.value or b"") for e in deep) > 10_000
    unknown = [e for e in entries if e.mutation == "unknown_type"]
    assert unknown
    assert all(struct.unpack_from(">h", e.key or b"")[0] not in BY_TOPIC[e.topic] for e in unknown)


def test_the_log_directory_holds_the_manifest_bytes(
    entries: list[corpus.Entry], tmp_path: Path
) -> None:
    layout = corpus.write_corpus(entries, tmp_path, seed=11, segment_bytes=1024 * 1024)
    assert layout.records == RECORDS
    assert sum(layout.counts.values()) == RECORDS
    assert layout.segments >= sum(layout.partitions.values())
    manifest = corpus.load_manifest(tmp_path).to_pylist()
    assert len(manifest) == RECORDS
    expected = {(r["topic"], r["partition"], r["offset"]): (r["key"], r["value"]) for r in manifest}
    read: dict[tuple[str, int, int], tuple[bytes | None, bytes | None]] = {}
    for topic, partitions in layout.partitions.items():
        for p in range(partitions):
            for batch in read_partition_dir(tmp_path / f"{topic}-{p}", strict=True):
                for i, rec in enumerate(batch.records):
                    read[(topic, p, batch.base_offset + i)] = (rec.key, rec.value)
    assert read == expected
    assert Counter(r["mutation"] for r in manifest) == Counter(e.mutation for e in entries)


def test_each_partition_is_numbered_densely_in_manifest_order(
    entries: list[corpus.Entry], tmp_path: Path
) -> None:
    """What ``produce`` relies on: sent in manifest order to a fresh topic, every record gets
    its manifest offset."""
    corpus.write_corpus(entries, tmp_path, seed=11)
    offsets: dict[tuple[str, int], list[int]] = {}
    for row in corpus.load_manifest(tmp_path).select(["topic", "partition", "offset"]).to_pylist():
        offsets.setdefault((row["topic"], row["partition"]), []).append(row["offset"])
    assert len(offsets) > 1
    for numbered in offsets.values():
        assert numbered == list(range(len(numbered)))
