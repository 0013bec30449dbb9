"""``offsetscope simulate``: arguments, exit codes, outputs."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import pytest

from offsetscope.cli import main
from offsetscope.cli.simulate import register
from offsetscope.protocol.log import list_segments
from offsetscope.sim.scenarios.truth import read_ground_truth

SMALL = """
[scenario]
name = "tiny"
duration = "20s"
sample_interval = "5s"

[broker]
offsets_topic_partitions = 2
transaction_state_partitions = 1
initial_rebalance_delay_ms = 0

[[topics]]
name = "t"
partitions = 2

[[producers]]
name = "w"
topic = "t"
rate = 20

[[groups]]
id = "g"
topics = ["t"]
members = 2
"""


def _run(argv: Sequence[str]) -> int:
    return main(["simulate", *argv])


def test_registers_on_the_offsetscope_parser() -> None:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["simulate", "steady", "--out", "x", "--param", "a=1"])
    assert (args.scenario, args.out, args.param) == ("steady", Path("x"), ["a=1"])
    assert callable(args.handler)


def test_writes_a_log_directory_and_ground_truth(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(SMALL, encoding="utf-8")
    out = tmp_path / "out"
    assert _run([str(scenario), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("simulate: tiny (seed 0): 20 s of virtual time")
    assert f"-> {out}" in printed
    dirs = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert dirs == [
        "__consumer_offsets-0",
        "__consumer_offsets-1",
        "__transaction_state-0",
        "t-0",
        "t-1",
    ]
    assert all(list_segments(out / d) for d in dirs)
    truth = read_ground_truth(out / "ground_truth.jsonl")
    assert truth[0]["type"] == "ScenarioStarted"
    assert truth[-1]["type"] == "ScenarioFinished"
    # Writing again into the same folder needs --replace.
    assert _run([str(scenario), "--out", str(out)]) == 1
    assert "exists" in capsys.readouterr().err
    assert _run([str(scenario), "--out", str(out), "--replace", "--quiet", "--seed", "5"]) == 0
    assert capsys.readouterr().out == ""
    assert read_ground_truth(out / "ground_truth.jsonl")[0]["seed"] == 5


def test_invalid_scenarios_name_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "bad.toml"
    scenario.write_text(SMALL.replace("members = 2", 'members = 2\nsession_timeout = "x"'))
    assert _run([str(scenario), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "groups[0].session_timeout" in err
    assert _run(["steady", "--out", str(tmp_path / "o"), "--param", "nope=1"]) == 1
    assert "parameters.nope" in capsys.readouterr().err


def test_usage_errors_and_the_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run([]) == 2
    assert "required" in capsys.readouterr().err
    assert _run(["steady"]) == 2
    assert "--out" in capsys.readouterr().err
    assert _run(["--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert any(line.startswith("transactions ") for line in listed)
    assert any(line.startswith("demo ") for line in listed)


def test_no_ground_truth(tmp_path: Path) -> None:
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(SMALL, encoding="utf-8")
    assert _run([str(scenario), "--out", str(tmp_path / "o"), "--no-ground-truth"]) == 0
    assert not (tmp_path / "o" / "ground_truth.jsonl").exists()
    assert (tmp_path / "o" / "t-0").is_dir()


def _bytes(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_a_long_run_prints_progress_on_stderr_and_writes_the_same_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Progress is printed while the scenario runs (here after every slice: the threshold a
    long run must pass is lowered to nothing), on stderr; running in slices changes no byte."""
    from offsetscope.sim.scenarios import run

    scenario = tmp_path / "tiny.toml"
    scenario.write_text(SMALL)
    assert _run([str(scenario), "--out", str(tmp_path / "quiet"), "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(run, "PROGRESS_AFTER_S", 0.0)
    assert _run([str(scenario), "--out", str(tmp_path / "loud")]) == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len([x for x in lines if "% of 20 s of virtual time" in x]) >= 10
    assert lines[-2].startswith("simulate: 100% of 20 s")
    assert lines[-1].startswith("simulate: writing ")
    assert "% of" not in captured.out
    assert _bytes(tmp_path / "loud") == _bytes(tmp_path / "quiet")
