"""The decode adapter's Arrow function and the decoded-row -> event mapping, without a JVM.

``decode_arrow`` is what ``mapInArrow`` runs on executors; ``event_from_decoded`` is how the
driver turns collected rows into the events the history folds consume. Both are checked against
the protocol's own per-record decoder on a synthetic log with every kind of record.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from offsetscope.history.events import Coordinates, event_from_record
from offsetscope.pipelines.events import event_from_decoded
from offsetscope.protocol import decode_record
from offsetscope.protocol.records import CoordinatorRecord
from offsetscope.sim.synthetic import SyntheticLog, Workload
from offsetscope.spark import logdir
from offsetscope.spark.decode import (
    DECODE_OUTPUT_SCHEMA,
    KINDS,
    CountMismatchError,
    decode_arrow,
    kind_counts,
)
from offsetscope.spark.tables import SOURCE_SCHEMA


@pytest.fixture(scope="module")
def source_rows(tmp_path_factory: pytest.TempPathFactory) -> pa.Table:
    root = tmp_path_factory.mktemp("logs")
    with SyntheticLog(root, Workload(rebalance_every=4, transaction_every=2)) as log:
        log.run(12)
    cache = logdir.LogEndCache()
    batches = [
        batch
        for d in logdir.partition_dirs(root, ["__consumer_offsets", "__transaction_state"])
        for batch in logdir.read_range(
            logdir.RangeRequest(d, d.topic, 0, cache.log_end_offset(d)), SOURCE_SCHEMA
        )
    ]
    return pa.Table.from_batches(batches, schema=SOURCE_SCHEMA)


def _decoded(table: pa.Table) -> pa.Table:
    return pa.Table.from_batches(
        list(decode_arrow(table.to_batches(max_chunksize=64))), schema=DECODE_OUTPUT_SCHEMA
    )


def test_every_row_decodes_to_the_event_of_the_per_record_decoder(source_rows: pa.Table) -> None:
    decoded = _decoded(source_rows)
    assert decoded.num_rows == source_rows.num_rows
    by_coordinates = {(r["topic"], r["partition"], r["offset"]): r for r in decoded.to_pylist()}
    kinds = set()
    for raw in source_rows.to_pylist():
        row = by_coordinates[(raw["topic"], raw["partition"], raw["offset"])]
        kinds.add(row["kind"])
        event = event_from_decoded(row)
        at = Coordinates(
            raw["topic"],
            raw["partition"],
            raw["offset"],
            raw["timestamp"],
            raw["producer_id"],
            raw["producer_epoch"],
            raw["is_transactional"],
        )
        if raw["is_control"]:
            assert row["kind"] == "control"
            assert event is not None
            assert event.at == at
            assert event.control_type in ("COMMIT", "ABORT")  # type: ignore[union-attr]
            continue
        record = decode_record(raw["topic"], raw["key"], raw["value"])
        assert isinstance(record, CoordinatorRecord)
        assert event == event_from_record(at, record)
    assert kinds == {"offset_commit", "group_metadata", "transaction_log", "control"}


def test_undecodable_and_unknown_rows_keep_their_bytes(source_rows: pa.Table) -> None:
    good = source_rows.slice(0, 3).to_pylist()
    broken = dict(good[0], offset=10_001, value=good[0]["value"][:-3])  # truncated value
    unknown = dict(good[1], offset=10_002, key=b"\x00\x63" + good[1]["key"][2:])  # type 99
    framing = dict(
        good[2],
        offset=10_003,
        key=None,
        value=b"\x01\x02",
        source_error={
            "error_class": "CrcMismatchError",
            "message": "stored CRC 0x00000001, computed 0x00000002",
            "field_path": "batch[7].crc",
            "byte_offset": 5_000_000_000,
        },
    )
    table = pa.Table.from_pylist([*good, broken, unknown, framing], schema=SOURCE_SCHEMA)

    rows = {r["offset"]: r for r in _decoded(table).to_pylist()}
    assert len(rows) == 6
    for r in good:
        assert rows[r["offset"]]["raw_key"] is None  # events carry no raw bytes
    err = rows[10_001]
    assert err["kind"] == "error"
    assert err["error"]["error_class"] == "TruncatedError"
    assert err["error"]["field_path"].startswith("value")
    assert (err["raw_key"], err["raw_value"]) == (broken["key"], broken["value"])
    unk = rows[10_002]
    assert unk["kind"] == "unknown"
    assert unk["record_type"] == 99
    assert (unk["raw_key"], unk["raw_value"]) == (unknown["key"], unknown["value"])
    frm = rows[10_003]
    assert frm["kind"] == "error"
    assert frm["error"] == {
        "error_class": "CrcMismatchError",
        "message": "stored CRC 0x00000001, computed 0x00000002",
        "field_path": "batch[7].crc",
        "byte_offset": 2**31 - 1,  # clamped to the decoder's int32; the message is exact
    }
    assert frm["raw_value"] == b"\x01\x02"
    assert event_from_decoded(err) is None


def test_kind_counts_fills_zeros_and_checks_the_sum() -> None:
    counts = kind_counts(5, {"offset_commit": 3, "error": 1, "unknown": 1})
    assert set(counts) == set(KINDS)
    assert counts["group_metadata"] == 0
    with pytest.raises(CountMismatchError, match="6 records in, 5 decoded rows out"):
        kind_counts(6, {"offset_commit": 5})
    with pytest.raises(CountMismatchError, match="unknown kinds"):
        kind_counts(1, {"mystery": 1})
