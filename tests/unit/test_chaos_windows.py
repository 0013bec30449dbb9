"""Where a chaos kill landed, read from the files it left: the batch in flight in the
streaming checkpoint and the tables holding that batch's marked commit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from offsetscope.spark.writes import mark
from offsetscope.verify import chaos


def _checkpoint(root: Path, offsets: list[int], commits: list[int]) -> Path:
    for folder, ids in (("offsets", offsets), ("commits", commits)):
        (root / folder).mkdir(parents=True, exist_ok=True)
        for i in ids:
            (root / folder / str(i)).write_text("v1\n{}\n")
    (root / "offsets" / ".1.crc").write_text("")  # Spark's checksum files are not batches
    return root


def _commit(warehouse: Path, schema: str, table: str, version: int, app: str, batch: int) -> None:
    log = warehouse / f"{schema}.db" / table / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    actions = [
        {"commitInfo": {"operation": "WRITE", "userMetadata": mark(app, batch)}},
        {"add": {"path": f"part-{version}.parquet"}},
    ]
    (log / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    wh = tmp_path / "warehouse"
    # The uninterrupted run committed batches 0 and 1 to three tables.
    for table in ("fold_state", "groups_current", "raw_records"):
        for batch in (0, 1):
            op = "merge" if table != "raw_records" else "append"
            _commit(wh, "base", table, batch, f"chaos:{table}:{op}", batch)
    for table in ("fold_state", "groups_current", "raw_records"):
        op = "merge" if table != "raw_records" else "append"
        _commit(wh, "trial", table, 0, f"chaos:{table}:{op}", 0)
    return wh


def test_the_batch_in_flight_is_the_last_logged_one_without_a_commit(tmp_path: Path) -> None:
    assert chaos.batch_in_flight(_checkpoint(tmp_path / "a", [0, 1], [0])) == 1
    assert chaos.batch_in_flight(_checkpoint(tmp_path / "b", [0, 1], [0, 1])) is None
    assert chaos.batch_in_flight(tmp_path / "never-started") is None


def test_a_kill_after_the_fold_state_commit_and_before_the_others(
    tmp_path: Path, warehouse: Path
) -> None:
    _commit(warehouse, "trial", "fold_state", 1, "chaos:fold_state:merge", 1)
    # Another query's mark for the same batch id is not this batch's commit.
    _commit(warehouse, "trial", "groups_current", 1, "other:groups_current:merge", 1)
    left = chaos.interrupted(_checkpoint(tmp_path / "ck", [0, 1], [0]), warehouse, "trial", "base")
    assert left == chaos.Interrupted(1, ("fold_state",), ("groups_current", "raw_records"))
    assert left.window == chaos.STATE_FIRST


def test_each_window_of_a_batch(tmp_path: Path, warehouse: Path) -> None:
    checkpoint = _checkpoint(tmp_path / "ck", [0, 1], [0])

    def window() -> str:
        return chaos.interrupted(checkpoint, warehouse, "trial", "base").window

    assert window() == chaos.BEFORE_WRITES
    _commit(warehouse, "trial", "raw_records", 1, "chaos:raw_records:append", 1)
    assert window() == chaos.AMONG_WRITES
    _commit(warehouse, "trial", "groups_current", 1, "chaos:groups_current:merge", 1)
    _commit(warehouse, "trial", "fold_state", 1, "chaos:fold_state:merge", 1)
    assert window() == chaos.BEFORE_CHECKPOINT
    (checkpoint / "commits" / "1").write_text("v1\n{}\n")
    assert window() == chaos.BETWEEN_BATCHES
    # A restart killed before it wrote anything left the batch as the kill before it did.
    assert chaos.interrupted(checkpoint, warehouse, "trial", "base", wrote=False).window == (
        chaos.STARTUP
    )
    assert set(chaos.WINDOWS) == {
        chaos.STARTUP,
        chaos.BETWEEN_BATCHES,
        chaos.BEFORE_WRITES,
        chaos.STATE_FIRST,
        chaos.AMONG_WRITES,
        chaos.BEFORE_CHECKPOINT,
    }


def test_files_count_the_audit_commits_apart(tmp_path: Path, warehouse: Path) -> None:
    before = chaos._files(warehouse, "trial")
    # Its creation (version 0) is no batch's audit row; version 1 is.
    _commit(warehouse, "trial", "batch_audit", 0, "chaos:batch_audit:create", 0)
    created = chaos._files(warehouse, "trial")
    _commit(warehouse, "trial", "batch_audit", 1, "chaos:batch_audit:append", 0)
    (warehouse / "trial.db" / "batch_audit" / "part-0.parquet").write_bytes(b"")
    after = chaos._files(warehouse, "trial")
    assert before == chaos.Files(3, 0, 0)
    assert created == chaos.Files(4, 0, 0)
    assert after == chaos.Files(5, 1, 1)


def test_each_kill_mode_fires_on_its_own_count() -> None:
    start = chaos.Files(10, 20, 2)
    rules = {mode: chaos._kill_rule(mode, 2, start) for mode in chaos.MODES}
    assert set(chaos.MODES) == {"timed", "commit", "inside", "audit"}
    assert [m for m, rule in rules.items() if rule(2.0, start)] == ["timed"]
    assert [m for m, rule in rules.items() if rule(0.0, chaos.Files(12, 20, 2))] == ["commit"]
    assert [m for m, rule in rules.items() if rule(0.0, chaos.Files(11, 22, 2))] == ["inside"]
    # The second audit commit after the restart: the batch after next has written every table.
    assert [m for m, rule in rules.items() if rule(0.0, chaos.Files(11, 21, 4))] == ["audit"]
    assert not rules["audit"](0.0, chaos.Files(99, 99, 3))
    with pytest.raises(ValueError, match="unknown kill mode"):
        chaos._kill_rule("sometimes", 1, start)
