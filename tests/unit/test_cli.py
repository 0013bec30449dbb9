"""The ``offsetscope`` command line: decode record, decode segment, partition-for."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from golden import GOLDEN, OC_KEY

from offsetscope.cli import main
from offsetscope.cli.sql import format_table
from offsetscope.protocol.dump_log import dump_log_lines
from offsetscope.protocol.log import PartitionWriter
from offsetscope.protocol.log.model import RecordSpec


def test_decode_record_prints_the_console_formatter_shape(
    capsys: pytest.CaptureFixture[str],
) -> None:
    g = next(g for g in GOLDEN if g.name == "offset commit v4 with topicId")
    assert _decode_offsets_record("--key", g.key.hex(), "--value", g.value.hex()) == 0
    assert capsys.readouterr().out.strip() == (
        '{"key":{"type":1,"data":{"group":"g1","topic":"t","partition":0}},"value":{"version":4,'
        '"data":{"offset":42,"leaderEpoch":5,"metadata":"","commitTimestamp":1700000000000,'
        '"topicId":"AAECAwQFBgcICQoLDA0ODw"}}}'
    )


def _decode_offsets_record(*args: str) -> int:
    return main(["decode", "record", "--topic", "__consumer_offsets", *args])


def test_decode_record_tombstone(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["decode", "record", "--topic", "__consumer_offsets", "--key", OC_KEY.hex()]) == 0
    assert json.loads(capsys.readouterr().out)["value"] is None


def test_decode_record_malformed_names_path_and_offset(capsys: pytest.CaptureFixture[str]) -> None:
    assert _decode_offsets_record("--key", OC_KEY.hex(), "--value", "0003 0000") == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert "value.offset" in lines[0]
    assert "byte offset 2" in lines[0]


def test_decode_record_unknown_type(capsys: pytest.CaptureFixture[str]) -> None:
    assert _decode_offsets_record("--key", "7fff0001", "--value", "0000") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["key"]["type"] == 32767
    assert out["unknown"] == "unknown record type 32767"


def test_bad_hex_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["decode", "record", "--topic", "__consumer_offsets", "--key", "zz"])
    assert info.value.code == 2


def test_partition_for(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["partition-for", "my-group"]) == 0
    assert capsys.readouterr().out.strip() == "12"
    assert main(["partition-for", "txn-1", "--partitions", "50"]) == 0
    assert capsys.readouterr().out.strip() == "10"


@pytest.fixture
def segment(tmp_path: Path) -> Path:
    directory = tmp_path / "__consumer_offsets-0"
    with PartitionWriter(directory) as log:
        for g in GOLDEN:
            if g.topic == "__consumer_offsets":
                log.append([RecordSpec(g.key, g.value, 1_700_000_000_000)])
        log.append(
            [RecordSpec(OC_KEY, None, 1_700_000_000_001)],
            producer_id=5,
            producer_epoch=0,
            base_sequence=0,
            is_transactional=True,
        )
        log.append_end_txn_marker(
            producer_id=5,
            producer_epoch=0,
            committed=False,
            coordinator_epoch=3,
            timestamp=1_700_000_000_002,
        )
    return directory / "00000000000000000000.log"


def test_decode_segment_json(segment: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["decode", "segment", str(segment)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == sum(1 for g in GOLDEN if g.topic == "__consumer_offsets") + 2
    assert rows[0]["key"] == {"type": 0, "data": {"group": "g1", "topic": "t", "partition": 7}}
    assert rows[0]["batch"]["crcValid"] is True
    txn, marker = rows[-2], rows[-1]
    assert txn["batch"]["isTransactional"] is True
    assert txn["batch"]["producerId"] == 5
    assert txn["value"] is None
    assert marker["control"] == {"type": "ABORT", "coordinatorEpoch": 3}
    unknown = [r for r in rows if "unknown" in r]
    assert [r["key"]["type"] for r in unknown] == []  # 9, 18 and 24 decode here


def test_decode_segment_dump_log(segment: Path) -> None:
    lines = list(dump_log_lines(segment, "__consumer_offsets"))
    assert lines[0] == f"Dumping {segment}"
    assert lines[1] == "Log starting offset: 0"
    assert lines[2].startswith(
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 "
        "producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 "
        "isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "
        "position: 0 CreateTime: 1700000000000 size: "
    )
    assert lines[3].startswith(
        "| offset: 0 CreateTime: 1700000000000 keySize: 13 valueSize: 24 sequence: -1 headerKeys: [] key: "
    )
    # Kafka 4.4 no longer knows types 9, 18, 24: DumpLogSegments reports them as unknown.
    assert sum("Unknown record type" in line for line in lines) == 3
    assert lines[-1].endswith("endTxnMarker: ABORT coordinatorEpoch: 3")
    assert lines[-3].endswith("payload: <DELETE>")


def test_decode_segment_dump_log_command_prints_the_same_text(
    segment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = "".join(f"{line}\n" for line in dump_log_lines(segment, "__consumer_offsets"))
    # The command writes the UTF-8 blocks to the binary stream under sys.stdout...
    assert main(["decode", "segment", "--format", "dump-log", str(segment)]) == 0
    assert capsys.readouterr().out == expected
    # ... and decodes them itself when sys.stdout is a text-only stream.
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        assert main(["decode", "segment", "--format", "dump-log", str(segment)]) == 0
    assert text.getvalue() == expected


def test_format_table_aligns_columns_and_marks_nulls() -> None:
    text = format_table(["group_id", "generation"], [("billing", 12), ("a-much-longer-id", None)])
    assert text.splitlines() == [
        "group_id         | generation",
        "-----------------+-----------",
        "billing          | 12",
        "a-much-longer-id | NULL",
    ]
    assert format_table(["v"], [("x" * 20,)], truncate=8).splitlines()[2] == "xxxxx..."


def test_redecode_since_takes_a_time_epoch_ms_or_a_duration_ago() -> None:
    from offsetscope.cli.redecode import parse_since

    now = 1_700_000_000_000
    assert parse_since("1690000000000", now) == 1_690_000_000_000
    assert parse_since("6h", now) == now - 6 * 3_600_000
    assert parse_since("2023-11-14", now) == 1_699_920_000_000
    assert parse_since("2023-11-14T22:13:20Z", now) == now
    assert parse_since("2023-11-14T23:13:20+01:00", now) == now
    with pytest.raises(ValueError, match="Invalid isoformat"):
        parse_since("last tuesday", now)


def test_redecode_is_a_command_with_its_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["redecode", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for option in ("--since", "--tables", "--stop-ingest", "--env", "--conf"):
        assert option in text
    assert main(["redecode", "--since", "whenever"]) == 2
    assert "--since 'whenever'" in capsys.readouterr().err
