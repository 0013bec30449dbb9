"""Offset-commit fold: transactional commits resolved by markers, tombstones, read_committed."""

from __future__ import annotations

from history_log import T0, Log

from offsetscope.history import fold_offsets
from offsetscope.history.offsets import OffsetsState
from offsetscope.history.rows import OffsetCommitRow
from offsetscope.history.tables import materialize

G = "etl"
P1, P2 = 4001, 4002  # producer ids


def by_offset(rows: tuple[OffsetCommitRow, ...]) -> dict[int, OffsetCommitRow]:
    return {k[1]: v for k, v in materialize(rows).items()}


def statuses(rows: tuple[OffsetCommitRow, ...]) -> dict[int, str]:
    return {off: r.status for off, r in by_offset(rows).items()}


def test_plain_commits_are_committed_at_their_record_time() -> None:
    log = Log(partition=7)
    log.commit(G, "orders", 0, 10, T0)
    log.commit(G, "orders", 0, 20, T0 + 100)
    state, rows = fold_offsets(None, log.events)
    assert [(r.offset, r.status, r.effective_at, r.resolved_by) for r in rows] == [
        (10, "committed", T0, "non_transactional"),
        (20, "committed", T0 + 100, "non_transactional"),
    ]
    assert rows[0].record_partition == 7
    assert rows[0].producer_id is None
    assert state == OffsetsState(7, 1, ())


def test_transactional_commit_pending_until_commit_marker() -> None:
    log = Log()
    log.commit(G, "orders", 0, 50, T0, pid=P1, epoch=3)
    log.commit(G, "orders", 1, 60, T0, pid=P1, epoch=3)
    state, rows = fold_offsets(None, log.events)
    assert statuses(rows) == {0: "pending", 1: "pending"}
    assert state is not None
    assert len(state.pending) == 2
    assert rows[0].producer_id == P1
    assert rows[0].producer_epoch == 3
    log.marker("COMMIT", P1, T0 + 500, epoch=3)
    state, rows = fold_offsets(state, log.events)
    assert statuses(rows) == {0: "committed", 1: "committed"}
    assert {(r.resolved_at, r.effective_at, r.resolved_by) for r in rows} == {
        (T0 + 500, T0 + 500, "commit_marker")
    }
    assert state is not None
    assert state.pending == ()


def test_abort_marker_excludes_the_commits() -> None:
    log = Log()
    log.commit(G, "orders", 0, 50, T0, pid=P1)
    log.commit(G, "orders", 0, 70, T0 + 1, pid=P2)
    log.marker("ABORT", P1, T0 + 10)
    state, rows = fold_offsets(None, log.events)
    assert statuses(rows) == {0: "aborted", 1: "pending"}
    assert by_offset(rows)[0].effective_at is None
    assert state is not None
    assert [p.row.producer_id for p in state.pending] == [P2]


def test_later_non_transactional_commit_wins_over_the_committed_transaction() -> None:
    log = Log()
    log.commit(G, "orders", 0, 50, T0, pid=P1)  # offset 0, pending
    log.commit(G, "orders", 0, 55, T0 + 5)  # offset 1, materialised at once
    log.commit(G, "orders", 1, 80, T0 + 6, pid=P1)  # another key of the same transaction
    log.marker("COMMIT", P1, T0 + 10)
    _, rows = fold_offsets(None, log.events)
    result = by_offset(rows)
    assert result[0].status == "superseded"  # Kafka keeps offset 55: record offset 1 > 0
    assert result[0].effective_at is None
    assert result[1].status == "committed"
    assert result[2].status == "committed"


def test_non_transactional_commit_before_the_transactional_one_loses() -> None:
    log = Log()
    log.commit(G, "orders", 0, 40, T0)
    log.commit(G, "orders", 0, 50, T0 + 1, pid=P1)
    log.marker("COMMIT", P1, T0 + 10)
    _, rows = fold_offsets(None, log.events)
    assert statuses(rows) == {0: "committed", 1: "committed"}  # the marker is not a commit
    assert by_offset(rows)[1].effective_at == T0 + 10


def test_same_producer_same_key_twice_keeps_the_last() -> None:
    log = Log()
    log.commit(G, "orders", 0, 50, T0, pid=P1)
    log.commit(G, "orders", 0, 51, T0 + 1, pid=P1)
    log.marker("COMMIT", P1, T0 + 2)
    _, rows = fold_offsets(None, log.events)
    assert statuses(rows) == {0: "superseded", 1: "committed"}


def test_other_producers_commit_materialised_first_supersedes_an_older_pending_one() -> None:
    log = Log()
    log.commit(G, "orders", 0, 50, T0, pid=P1)  # offset 0
    log.commit(G, "orders", 0, 60, T0 + 1, pid=P2)  # offset 1
    log.marker("COMMIT", P2, T0 + 2)  # materialises record offset 1
    log.marker("COMMIT", P1, T0 + 3)  # offset 0 < 1: superseded
    _, rows = fold_offsets(None, log.events)
    assert statuses(rows) == {0: "superseded", 1: "committed"}


def test_tombstone_ends_the_offset_and_drops_pending_transactional_offsets() -> None:
    log = Log()
    log.commit(G, "orders", 0, 50, T0, pid=P1)
    log.commit(G, "orders", 1, 70, T0, pid=P1)
    log.offset_tombstone(G, "orders", 0, T0 + 5)
    log.marker("COMMIT", P1, T0 + 9)
    state, rows = fold_offsets(None, log.events)
    result = by_offset(rows)
    assert (result[0].status, result[0].resolved_by, result[0].resolved_at) == (
        "dropped",
        "tombstone",
        T0 + 5,
    )
    assert (result[2].is_tombstone, result[2].offset, result[2].status) == (True, None, "committed")
    assert result[1].status == "committed"  # the other key of the transaction
    assert state is not None
    assert state.pending == ()


def test_read_committed_source_takes_transactional_commits_as_committed() -> None:
    log = Log()
    log.commit(G, "orders", 0, 50, T0, pid=P1)
    state, rows = fold_offsets(None, log.events, markers_visible=False)
    assert [(r.status, r.resolved_by, r.effective_at) for r in rows] == [
        ("committed", "read_committed_source", T0)
    ]
    assert state is not None
    assert state.pending == ()


def test_markers_of_unrelated_producers_and_other_control_types_change_nothing() -> None:
    log = Log()
    log.commit(G, "orders", 0, 50, T0, pid=P1)
    log.marker("COMMIT", P2, T0 + 1)
    log.marker("UNKNOWN(9)", P1, T0 + 2)
    state, rows = fold_offsets(None, log.events)
    assert statuses(rows) == {0: "pending"}
    assert state is not None
    assert state.last_offset == 2


def test_replaying_a_batch_is_idempotent() -> None:
    log = Log()
    log.commit(G, "orders", 0, 50, T0, pid=P1)
    log.marker("ABORT", P1, T0 + 1)
    state, _ = fold_offsets(None, log.events)
    again, rows = fold_offsets(state, log.events)
    assert again == state
    assert rows == ()


def test_pending_state_round_trips_through_json() -> None:
    log = Log()
    log.commit(G, "orders", 0, 50, T0, pid=P1)
    log.commit(G, "orders", 0, 55, T0 + 5)
    state, _ = fold_offsets(None, log.events)
    assert state is not None
    assert state.pending[0].superseded
    assert OffsetsState.from_json(state.to_json()) == state
