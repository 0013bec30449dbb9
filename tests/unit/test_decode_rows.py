"""The decode adapter's Arrow function and the decoded-row -> event mapping, without a JVM.

``decode_arrow`` is what ``mapInArrow`` runs on executors; ``event_from_decoded`` is how the
driver turns collected rows into the events the history folds consume. Both are checked against
the protocol's own per-record decoder on a synthetic log with every kind of record.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
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


def _flags(table: pa.Table, chunk: int) -> list[bool]:
    return _decoded_in(table, chunk).column("out_of_sequence").to_pylist()


def _decoded_in(table: pa.Table, chunk: int) -> pa.Table:
    # One chunk first, so that the source batches are exactly ``chunk`` rows.
    batches = table.combine_chunks().to_batches(max_chunksize=chunk)
    return pa.Table.from_batches(list(decode_arrow(batches)), schema=DECODE_OUTPUT_SCHEMA)


def test_a_task_reading_each_partition_in_order_is_in_sequence(source_rows: pa.Table) -> None:
    # The log directory's partitions one after another, each in offset order.
    assert not any(_flags(source_rows, 64))
    # Interleaved partitions keep each one's order too.
    order = sorted(range(source_rows.num_rows), key=lambda i: source_rows["offset"][i].as_py())
    assert not any(_flags(source_rows.take(order), 7))


@pytest.mark.parametrize("chunk", [5, 64, 100_000])
def test_a_repeated_record_breaks_the_sequence_from_its_batch_on(
    source_rows: pa.Table, chunk: int
) -> None:
    at = source_rows.num_rows // 2
    repeated = pa.concat_tables([source_rows.slice(0, at + 1), source_rows.slice(at, None)])
    flags = _flags(repeated, chunk)
    assert len(flags) == source_rows.num_rows + 1
    # Rows of source batches before the one holding the repeat are not flagged; every row
    # from that batch on is (decode_arrow yields a batch's rows in its own order).
    first_flagged = (at + 1) // chunk * chunk
    decoded = _decoded_in(repeated, chunk)
    offsets_flagged = {
        (r["topic"], r["partition"], r["offset"])
        for r in decoded.to_pylist()
        if r["out_of_sequence"]
    }
    tail = repeated.slice(first_flagged).to_pylist()
    assert offsets_flagged == {(r["topic"], r["partition"], r["offset"]) for r in tail}


def test_a_partition_read_backwards_breaks_the_sequence(source_rows: pa.Table) -> None:
    one = source_rows.filter(
        pc.and_(
            pc.equal(source_rows["topic"], "__consumer_offsets"),
            pc.equal(source_rows["partition"], 0),
        )
    )
    assert one.num_rows > 2
    backwards = one.take(list(range(one.num_rows - 1, -1, -1)))
    assert all(_flags(backwards, one.num_rows))
    # Across batches: each batch ascends, the second starts below where the first ended.
    halves = pa.concat_tables([one.slice(one.num_rows // 2), one.slice(0, one.num_rows // 2)])
    flags = _flags(halves, one.num_rows - one.num_rows // 2)
    assert not any(flags[: one.num_rows - one.num_rows // 2])
    assert all(flags[one.num_rows - one.num_rows // 2 :])
