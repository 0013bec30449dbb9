"""Ground truth: what really happened during a simulation, as JSON lines.

``ground_truth.jsonl`` holds one JSON object per line, in the order things happened; every line
has ``type`` and ``at_ms`` (virtual time). The coordinators' own events keep their fields
(:func:`offsetscope.sim.coordinator.group.events.event_to_dict`,
:func:`offsetscope.sim.coordinator.txn.events.event_to_dict`); the simulated clients and the engine
add theirs. Types:

=========================  =================================================================
``ScenarioStarted``        name, seed, start/end, topics with partition counts, groups and
                           their isolation level, pipelines, coordinator settings
``GroupCreated``           a group appeared in the coordinator
``GroupStateChanged``      previous, state, generation_id, reason (every in-memory transition)
``GenerationStarted``      the join phase completed: generation, protocol, leader, member ids
``MemberJoined``           member id, instance id, client id/host, timeouts, cause
``MemberLeft``             member id, instance id, cause (left, session_timeout, ...), reason
``AssignmentStored``       the leader's assignment written (GroupMetadata): Base64 blobs, and
                           ``partitions``: member id -> decoded [{topic, partitions}]
``OffsetsExpired``         offsets tombstoned by the expiry job
``GroupDeleted``           cause deleted / expired
``TransactionalOffsetsCompleted``  a marker resolved pending transactional offsets
``TxnStateChanged``        transactional id, producer id/epoch, from/to state, cause, persisted
``TxnOutcome``             a finished transaction (committed/aborted, cause, timed_out, fenced)
``ClientAssignment``       what a consumer applied after a rebalance: generation, assigned,
                           added, revoked (decoded partitions, as the client's callbacks see them)
``ClientRevoked``          partitions a consumer revoked (or lost) before rejoining
``ClientLifecycle``        a simulated client started, closed, crashed, froze, thawed, paused,
                           resumed, left after max.poll.interval, failed (fatal error)
``OffsetCommit``           one OffsetCommit request: group, member, generation, kind (auto,
                           sync, async, close, rebalance), per-partition offset and error
``TxnOffsetCommit``        one TxnOffsetCommit: transactional id, producer id/epoch, offsets
``TxnClientResult``        a transactional producer's call and its error (init, commit, ...)
``MarkerLost``             a COMMIT marker that never reached a data partition (timeline
                           ``txn_lose_marker``): transactional id, producer id/epoch, topic,
                           partition, first offset of the transaction left open there
``Action``                 a timeline action applied
``EndOffsets``             one sample: per data partition log start, high watermark, LSO
``Lag``                    one sample: per group x partition committed offset, end offsets,
                           lag in records (vs the LSO for read_committed groups)
``ScenarioFinished``       end time and counts
=========================  =================================================================

Transaction events are collected from the transaction runtime after every engine step (and
before each group event), so the file interleaves both coordinators in time order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Protocol

from offsetscope.protocol.consumer_protocol import decode_assignment
from offsetscope.protocol.errors import DecodeError
from offsetscope.sim.coordinator.group.events import AssignmentStored, GroupEvent
from offsetscope.sim.coordinator.group.events import event_to_dict as group_event_to_dict
from offsetscope.sim.coordinator.txn.events import TxnEvent, TxnOutcome
from offsetscope.sim.coordinator.txn.events import event_to_dict as txn_event_to_dict


class _Clock(Protocol):
    def now_ms(self) -> int: ...


class GroundTruth:
    """Collects ground-truth lines in order; :meth:`write` saves them as JSON lines."""

    __slots__ = ("_clock", "_txn_events", "_txn_seen", "lines")

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self._clock: _Clock | None = None
        self._txn_events: Sequence[TxnEvent] = ()
        self._txn_seen = 0

    def bind(self, clock: _Clock) -> None:
        """Use ``clock`` for the ``at_ms`` of lines added with :meth:`add`."""
        self._clock = clock

    def watch_transactions(self, events: Sequence[TxnEvent]) -> None:
        """Read transaction events from ``events`` (the runtime's growing list)."""
        self._txn_events = events
        self._txn_seen = len(events)

    def add(self, type_: str, **fields: Any) -> None:
        """Append a line of ``type_`` stamped with the current virtual time."""
        self.drain_transactions()
        at = self._clock.now_ms() if self._clock is not None else -1
        self.lines.append({"type": type_, "at_ms": at, **fields})

    def group_event(self, event: GroupEvent) -> None:
        """The group runtime's event hook."""
        self.drain_transactions()
        line = group_event_to_dict(event)
        if isinstance(event, AssignmentStored):
            line["partitions"] = _decoded_assignments(event.assignments)
        self.lines.append(line)

    def drain_transactions(self) -> None:
        """Move transaction events not seen yet into the lines."""
        events = self._txn_events
        while self._txn_seen < len(events):
            event = events[self._txn_seen]
            self._txn_seen += 1
            body = dict(txn_event_to_dict(event))
            del body["event"]
            if isinstance(event, TxnOutcome):
                line = {"type": "TxnOutcome", "at_ms": event.completed_ms, **body}
            else:
                line = {"type": "TxnStateChanged", **body}
            self.lines.append(line)

    def write(self, path: Path) -> int:
        """Write every line as JSON (keys in insertion order, compact); returns the count."""
        with path.open("w", encoding="utf-8") as out:
            return write_lines(self.lines, out)


def _decoded_assignments(
    assignments: Sequence[tuple[str, bytes]],
) -> dict[str, list[dict[str, Any]]] | None:
    """member id -> [{topic, partitions}] when every blob is a consumer-protocol assignment."""
    out: dict[str, list[dict[str, Any]]] = {}
    try:
        for member, blob in assignments:
            decoded = decode_assignment(blob)
            out[member] = (
                []
                if decoded is None
                else [
                    {"topic": t["topic"], "partitions": list(t["partitions"])}
                    for t in decoded.data["assignedPartitions"]
                ]
            )
    except DecodeError:
        return None
    return out


def write_lines(lines: Sequence[dict[str, Any]], out: IO[str]) -> int:
    encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    for line in lines:
        out.write(encoder.encode(line))
        out.write("\n")
    return len(lines)


def read_ground_truth(path: Path) -> list[dict[str, Any]]:
    """Read a ``ground_truth.jsonl`` back."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
