"""The oracle's parser and comparator, without a JVM: agreement is found, and so is every
planted difference, with its file, offset and field.

Kafka's side is stood in for by offsetscope's ``--format dump-log`` text of the same segment,
which ``test_dump_log_parity.py`` shows equal to Kafka's DumpLogSegments byte for byte; the
comparator itself works on the parsed fields, so editing that text plants a difference exactly
where Kafka and offsetscope would disagree.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from golden import GOLDEN, OC_KEY, TX_KEY

from offsetscope.protocol import encode_record, make_record
from offsetscope.protocol.dump_log import dump_log_lines
from offsetscope.protocol.log import PartitionWriter
from offsetscope.protocol.log.model import RecordSpec
from offsetscope.verify.oracle import (
    DumpSegment,
    compare_segments,
    normalise_transaction_status,
    offsetscope_segment,
    parse_dump_log,
    snapshot_log_dir,
)

T = 1_700_000_000_000
OFFSETS = "__consumer_offsets"
TXN = "__transaction_state"
# A group id that contains the separator the record line uses between key and payload.
TRICKY_GROUP = 'g payload: {"x":1} <DELETE>'


def _offsets_segment(tmp_path: Path) -> Path:
    directory = tmp_path / "log" / f"{OFFSETS}-0"
    with PartitionWriter(directory) as log:
        for g in GOLDEN:
            if g.topic == OFFSETS:
                log.append([RecordSpec(g.key, g.value, T)])
        tricky = make_record(
            OFFSETS,
            1,
            {"group": TRICKY_GROUP, "topic": "t", "partition": 3},
            {"offset": 9, "leaderEpoch": 0, "metadata": "m\x00", "commitTimestamp": T},
            3,
        )
        key, value = encode_record(tricky)
        log.append([RecordSpec(key, value, T + 1), RecordSpec(key, None, T + 1)])
        log.append(
            [RecordSpec(OC_KEY, GOLDEN[4].value, T + 2)],
            producer_id=7,
            producer_epoch=1,
            base_sequence=0,
            is_transactional=True,
        )
        log.append_end_txn_marker(
            producer_id=7, producer_epoch=1, committed=True, coordinator_epoch=4, timestamp=T + 3
        )
    return directory / "00000000000000000000.log"


def _txn_segment(tmp_path: Path) -> Path:
    directory = tmp_path / "log" / f"{TXN}-0"
    with PartitionWriter(directory) as log:
        for g in GOLDEN:
            if g.topic == TXN:
                log.append([RecordSpec(g.key, g.value, T)])
        log.append([RecordSpec(TX_KEY, None, T + 1)])
    return directory / "00000000000000000000.log"


def _dump_text(segment: Path, topic: str, status_format: str = "name") -> str:
    return "\n".join(dump_log_lines(segment, topic, status_format=status_format)) + "\n"


def _theirs(text: str) -> DumpSegment:
    [segment] = parse_dump_log(text).values()
    return segment


def _edit(text: str, offset: int, old: str, new: str) -> str:
    """Replace ``old`` once, in the record line of ``offset`` only."""
    lines = text.splitlines()
    [index] = [i for i, line in enumerate(lines) if line.startswith(f"| offset: {offset} ")]
    assert old in lines[index], lines[index]
    lines[index] = lines[index].replace(old, new, 1)
    return "\n".join(lines) + "\n"


def test_agreement_on_every_record_kind(tmp_path: Path) -> None:
    segment = _offsets_segment(tmp_path)
    theirs = _theirs(_dump_text(segment, OFFSETS))
    ours = offsetscope_segment(segment, OFFSETS)

    result = compare_segments(theirs, ours)

    assert result.differences == ()
    assert result.differing == 0
    records = [r for _, r in ours.records()]
    assert result.records == len(records) > 20
    # The parser read what matters out of Kafka's text, not just nothing on both sides.
    parsed = {r.offset: r.fields for _, r in theirs.records()}
    kinds = {
        "json": sum(isinstance(f.get("payload"), dict) for f in parsed.values()),
        "tombstone": sum(f.get("payload") == "<DELETE>" for f in parsed.values()),
        "marker": sum("endTxnMarker" in f for f in parsed.values()),
        "unknown": sum("unknownRecordType" in f for f in parsed.values()),
    }
    assert all(kinds.values()), kinds
    tricky = [
        f for f in parsed.values() if f.get("key", {}).get("data", {}).get("group") == TRICKY_GROUP
    ]
    assert [
        f["payload"] if f["payload"] == "<DELETE>" else f["payload"]["data"]["metadata"]
        for f in tricky
    ] == ["m\x00", "<DELETE>"]
    consumer_groups = [
        f["payload"]["data"]
        for f in parsed.values()
        if isinstance(f.get("payload"), dict)
        and f["key"]["type"] == "2"
        and f["payload"]["data"].get("protocolType") == "consumer"
        and f["payload"]["data"]["members"]
    ]
    # Embedded subscriptions were decoded into JSON objects, not left as Base64 text.
    assert any(isinstance(g["members"][0]["subscription"], dict) for g in consumer_groups)
    first_batch = theirs.batches[0].fields
    assert {
        "baseOffset",
        "lastSequence",
        "deleteHorizonMs",
        "crc",
        "isvalid",
        "maxTimestamp",
    } <= set(first_batch)
    assert first_batch["timestampType"] == "CreateTime"


def test_a_planted_payload_difference_is_found_with_its_field_path(tmp_path: Path) -> None:
    segment = _offsets_segment(tmp_path)
    ours = offsetscope_segment(segment, OFFSETS)
    tricky_offset = next(
        r.offset
        for _, r in ours.records()
        if r.fields.get("key", {}).get("data", {}).get("group") == TRICKY_GROUP
    )
    text = _edit(_dump_text(segment, OFFSETS), tricky_offset, '"offset":9', '"offset":10')

    result = compare_segments(_theirs(text), ours, file="seg.log")

    assert result.differing == 1
    [diff] = result.differences
    assert (diff.file, diff.where, diff.field, diff.theirs, diff.ours) == (
        "seg.log",
        f"offset {tricky_offset}",
        "payload.data.offset",
        10,
        9,
    )
    assert str(diff) == f"seg.log offset {tricky_offset} payload.data.offset: theirs=10 ours=9"


def test_a_difference_inside_a_decoded_subscription_is_found(tmp_path: Path) -> None:
    segment = _offsets_segment(tmp_path)
    text = _dump_text(segment, OFFSETS)
    match = re.search(
        r'^\| offset: (\d+) .*"subscription":\{"topics":\["([^"]+)"', text, re.MULTILINE
    )
    assert match is not None
    offset, topic = int(match.group(1)), match.group(2)
    planted = _edit(
        text, offset, f'"subscription":{{"topics":["{topic}"', '"subscription":{"topics":["other"'
    )

    result = compare_segments(_theirs(planted), offsetscope_segment(segment, OFFSETS))

    assert result.differing == 1
    assert [(d.where, d.field, d.theirs, d.ours) for d in result.differences] == [
        (f"offset {offset}", "payload.data.members[0].subscription.topics[0]", "other", topic)
    ]


def test_batch_record_and_file_level_differences_are_found(tmp_path: Path) -> None:
    segment = _offsets_segment(tmp_path)
    ours = offsetscope_segment(segment, OFFSETS)
    text = _dump_text(segment, OFFSETS)
    lines = text.splitlines()
    # A batch field: the CRC of the first batch with two records.
    two = next(b for b in ours.batches if len(b.records) == 2)
    crc = two.fields["crc"]
    [index] = [
        i
        for i, line in enumerate(lines)
        if line.startswith("baseOffset") and f" position: {two.position} " in line
    ]
    lines[index] = lines[index].replace(f"crc: {crc} ", f"crc: {crc + 1} ")
    # A record Kafka printed that offsetscope did not: drop our last record line's twin.
    last = max(r.offset for _, r in ours.records())
    lines = [line for line in lines if not line.startswith(f"| offset: {last} ")]
    # A file-level field.
    lines[1] = "Log starting offset: 5"

    result = compare_segments(_theirs("\n".join(lines)), ours, file="seg.log")

    fields = {(d.where, d.field) for d in result.differences}
    assert (f"batch at position {two.position}", "crc") in fields
    assert (f"offset {last}", "record") in fields
    assert ("file", "logStartOffset") in fields
    # Both records of the batch with the wrong CRC differ, plus the missing one, plus the file.
    assert result.differing == 4
    missing = next(d for d in result.differences if d.field == "record")
    assert (missing.theirs, missing.ours) == ("<absent>", "present")


def test_tombstone_against_a_value_and_a_changed_marker_are_found(tmp_path: Path) -> None:
    segment = _offsets_segment(tmp_path)
    ours = offsetscope_segment(segment, OFFSETS)
    text = _dump_text(segment, OFFSETS)
    tombstone = next(r.offset for _, r in ours.records() if r.fields.get("payload") == "<DELETE>")
    marker = next(r.offset for _, r in ours.records() if "endTxnMarker" in r.fields)
    text = _edit(text, tombstone, "payload: <DELETE>", 'payload: {"version":"3","data":{}}')
    text = _edit(text, marker, "endTxnMarker: COMMIT", "endTxnMarker: ABORT")

    result = compare_segments(_theirs(text), ours)

    assert result.differing == 2
    assert {(d.where, d.field) for d in result.differences} == {
        (f"offset {tombstone}", "payload"),
        (f"offset {marker}", "endTxnMarker"),
    }


def test_transaction_status_numbers_are_normalised_and_nothing_else(tmp_path: Path) -> None:
    segment = _txn_segment(tmp_path)
    ours = offsetscope_segment(segment, TXN)
    numeric = _theirs(_dump_text(segment, TXN, status_format="number"))

    raw = compare_segments(numeric, ours)
    normalised = compare_segments(normalise_transaction_status(numeric), ours)

    # Kafka 4.1-4.3 print the number: it differs until mapped to the 4.4 name.
    statuses = [d for d in raw.differences if d.field == "payload.data.transactionStatus"]
    assert statuses
    assert all(isinstance(d.theirs, int) and isinstance(d.ours, str) for d in statuses)
    assert normalised.differences == ()
    assert normalised.records == raw.records > 3
    # A wrong status is still caught after normalisation.
    [first] = [r.offset for _, r in ours.records() if isinstance(r.fields.get("payload"), dict)][:1]
    planted = re.sub(
        rf'(^\| offset: {first} .*"transactionStatus":)(\d+)',
        lambda m: m.group(1) + str((int(m.group(2)) + 1) % 6),
        _dump_text(segment, TXN, status_format="number"),
        count=1,
        flags=re.MULTILINE,
    )
    caught = compare_segments(normalise_transaction_status(_theirs(planted)), ours)
    assert [(d.where, d.field) for d in caught.differences] == [
        (f"offset {first}", "payload.data.transactionStatus")
    ]


def test_a_record_neither_side_can_decode_matches(tmp_path: Path) -> None:
    directory = tmp_path / "log" / f"{OFFSETS}-0"
    with PartitionWriter(directory) as log:
        # An OffsetCommitValue v3 cut short inside its offset field.
        log.append([RecordSpec(OC_KEY, b"\x00\x03\x00\x00\x00", T)])
        log.append([RecordSpec(OC_KEY, GOLDEN[4].value, T)])
    segment = directory / "00000000000000000000.log"
    text = _dump_text(segment, OFFSETS)
    assert "key: Error at offset 0, skipping." in text

    result = compare_segments(_theirs(text), offsetscope_segment(segment, OFFSETS))

    assert result.records == 2
    assert result.differences == ()


def test_one_side_failing_to_decode_differs(tmp_path: Path) -> None:
    segment = _offsets_segment(tmp_path)
    ours = offsetscope_segment(segment, OFFSETS)
    text = _dump_text(segment, OFFSETS)
    offset = next(r.offset for _, r in ours.records() if isinstance(r.fields.get("payload"), dict))
    line = next(x for x in text.splitlines() if x.startswith(f"| offset: {offset} "))
    content = line[line.index(" key: ") :]
    failed = _edit(
        text, offset, content, f" key: Error at offset {offset}, skipping. Could not read record"
    )

    result = compare_segments(_theirs(failed), ours)

    assert result.differing == 1
    assert {d.field for d in result.differences} >= {"key", "payload", "error", "error text"}


def test_snapshot_cuts_a_torn_last_batch(tmp_path: Path) -> None:
    segment = _offsets_segment(tmp_path)
    size = segment.stat().st_size
    with segment.open("ab") as fh:
        fh.write(
            b"\x00\x00\x00\x00\x00\x00\x00\x63\x00\x00\x01\x00partial"
        )  # a batch being appended

    copy = snapshot_log_dir(tmp_path / "log", tmp_path / "snap", topics=[OFFSETS])

    copied = copy / f"{OFFSETS}-0" / segment.name
    assert copied.stat().st_size == size
    assert copied.read_bytes() == segment.read_bytes()[:size]


@pytest.mark.parametrize("line", ["", "garbage line", "| offset: 1 CreateTime: 5 keySize: 2"])
def test_parser_keeps_stray_lines_as_file_level_text(line: str) -> None:
    text = f"Dumping /x/00000000000000000000.log\nLog starting offset: 0\n{line}\n"

    [segment] = parse_dump_log(text).values()

    assert segment.fields["logStartOffset"] == 0
    assert segment.batches == ()
    assert segment.fields["trailer"] == ([line] if line else [])
