"""The ``offsetscope`` command line: decode record, decode segment, partition-for."""

from __future__ import annotations

import contextlib
import io
import json
from importlib import metadata
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


def _usage(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own usage errors
        code = int(exit_.code or 0)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err.strip().splitlines()[-1]


def test_user_errors_exit_2_with_one_line_naming_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = tmp_path / "typo.toml"
    typo.write_text('[sources]\nkindd = "kafka"\n')
    bad_value = tmp_path / "bad.toml"
    bad_value.write_text('[pipeline]\ntrigger = "sometimes"\n')
    cases = {
        ("partition-for", "g", "--partitions", "0"): "argument --partitions: 0 is not positive",
        ("sql", "SELECT 1", "--env", "nope"): "conf/nope.toml does not exist",
        ("group", "list", "--conf", str(tmp_path / "missing.toml")): "missing.toml does not exist",
        ("group", "list", "--conf", str(typo)): "sources.kindd: unknown key",
        ("txn", "hanging", "--conf", str(bad_value)): "pipeline.trigger",
        ("ingest", "--env", "nope"): "conf/nope.toml does not exist",
        ("alerts", "--env", "nope"): "conf/nope.toml does not exist",
        ("report", "--out", "x.html", "--env", "nope"): "conf/nope.toml does not exist",
        ("check-access", "--env", "nope"): "conf/nope.toml does not exist",
        ("group", "list", "--since", "yesterday"): "'yesterday' is not a time",
        ("group", "history", "g", "--since", "2h", "--as-of", "soon"): "'soon' is not a time",
        ("metrics", "serve", "--interval", "often"): "'often' is not a duration",
        ("group", "list", "--format", "xml"): "invalid choice: 'xml'",
        ("no-such-command",): "invalid choice: 'no-such-command'",
    }
    for argv, expected in cases.items():
        code, line = _usage(list(argv), capsys)
        assert code == 2, argv
        assert line.startswith(("error: ", "offsetscope")), line
        assert expected in line, (argv, line)


def test_a_since_after_as_of_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, line = _usage(
        ["group", "list", "--as-of", "2026-01-01T00:00:00", "--since", "2026-02-01T00:00:00"],
        capsys,
    )
    assert (code, line) == (2, "error: --since 2026-02-01T00:00:00 is not before --as-of")


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"offsetscope {metadata.version('offsetscope')}"


def test_rows_print_as_table_json_and_csv() -> None:
    import datetime as dt

    from offsetscope.cli.common import render_rows

    at = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    rows = [("billing", 3, at, ["a", "b"], None, 1.25)]
    columns = ["group_id", "generation", "at", "joined", "leader", "lag_seconds"]
    assert json.loads(render_rows(columns, rows, "json")) == [
        {
            "group_id": "billing",
            "generation": 3,
            "at": "2026-01-02T03:04:05Z",
            "joined": ["a", "b"],
            "leader": None,
            "lag_seconds": 1.25,
        }
    ]
    assert render_rows(columns, rows, "csv").splitlines() == [
        "group_id,generation,at,joined,leader,lag_seconds",
        'billing,3,2026-01-02 03:04:05,"a,b",,1.25',
    ]
    assert render_rows(columns, rows, "table").splitlines()[2] == (
        "billing  | 3          | 2026-01-02 03:04:05 | a,b    | NULL   | 1.2"
    )


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
