"""Check a simulated log directory against its own ground truth, from the bytes.

:func:`verify_log_dir` decodes every segment the simulation wrote (``offsetscope.protocol``: the
log reader, ``decode_record``, the consumer-protocol codecs) and compares what a reader of those
bytes can know with what ``ground_truth.jsonl`` says happened:

* **generations**: per group, the GroupMetadata records with members, in log order, are exactly
  the ``AssignmentStored`` events (generation, protocol, leader, members in the coordinator's
  order, each member's assignment), plus one rewrite of the same generation per static-member
  replacement in a Stable group; every generation stored was started (``GenerationStarted``, same member list);
  GroupMetadata without members is written when a rebalance ends with nobody left
  (``PreparingRebalance -> Empty``); tombstones are the ``GroupDeleted`` events;
* **assignments** (properties): within one record no partition has two owners, and every
  partition of the subscribed topics is assigned -- except, under the cooperative protocol,
  partitions still owned by a member in its subscription (they move in the next rebalance);
  what each client applied (``ClientAssignment``) is what the record says it got;
* **offsets**: replaying the offset records (tombstones delete; transactional ones wait for
  their producer's marker; a later plain commit wins) gives the committed offsets of the final
  ``Lag`` sample; the number of records equals the commits the clients saw succeed;
* **transactions**: per transactional id, the ``__transaction_state`` status sequence (with
  producer id and epoch) equals the persisted ``TxnStateChanged`` events; every ``TxnOutcome``
  has its COMMIT/ABORT marker in each of its partitions;
* **end offsets**: the final ``EndOffsets`` sample equals each data partition's log end offset
  and last stable offset (the first offset of a transaction without a marker yet).

Each mismatch is one human-readable line; an empty list means the log and the truth agree.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offsetscope.protocol import decode_record
from offsetscope.protocol.consumer_protocol import decode_assignment, decode_subscription
from offsetscope.protocol.log import read_partition_dir
from offsetscope.protocol.records import OFFSETS_TOPIC, TRANSACTION_TOPIC, CoordinatorRecord
from offsetscope.protocol.states import TransactionState

Partition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class LoggedGroupMetadata:
    """One GroupMetadata record as decoded from a segment."""

    group_id: str
    offset: int
    timestamp: int
    generation: int
    protocol_type: str
    protocol: str | None
    leader: str | None
    members: tuple[str, ...]
    # member id -> (subscribed topics, owned partitions, assigned partitions)
    subscriptions: Mapping[str, tuple[tuple[str, ...], frozenset[Partition]]]
    assignments: Mapping[str, tuple[Partition, ...]]
    raw_assignments: Mapping[str, bytes]
    client_ids: Mapping[str, str]
    instance_ids: Mapping[str, str | None]


@dataclass(slots=True)
class DecodedLogDir:
    """What a reader of the segment files learns (see :func:`decode_log_dir`)."""

    group_metadata: dict[str, list[LoggedGroupMetadata]] = field(default_factory=dict)
    group_tombstones: dict[str, list[int]] = field(default_factory=dict)
    committed: dict[tuple[str, str, int], int] = field(default_factory=dict)
    plain_offset_records: int = 0
    txn_offset_records: int = 0
    txn_states: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)
    markers: dict[tuple[str, int, int, bool], int] = field(default_factory=dict)
    data_end: dict[Partition, tuple[int, int]] = field(default_factory=dict)


def _partition_dirs(root: Path) -> list[tuple[str, int, Path]]:
    out = []
    for entry in sorted(root.iterdir()):
        if not entry.is_dir():
            continue
        topic, sep, number = entry.name.rpartition("-")
        if sep and number.isdigit():
            out.append((topic, int(number), entry))
    return out


def decode_log_dir(root: Path, *, internal_only: bool = False) -> DecodedLogDir:
    """Decode every partition directory under ``root`` (only the internal topics' ones with
    ``internal_only``, e.g. for a real broker's log directory)."""
    decoded = DecodedLogDir()
    for topic, partition, directory in _partition_dirs(root):
        if internal_only and topic not in (OFFSETS_TOPIC, TRANSACTION_TOPIC):
            continue
        batches = list(read_partition_dir(directory, strict=True))
        if topic == OFFSETS_TOPIC:
            _decode_offsets(decoded, batches)
        elif topic == TRANSACTION_TOPIC:
            _decode_transactions(decoded, batches)
        else:
            _decode_data(decoded, topic, partition, batches)
    return decoded


def _decode_offsets(decoded: DecodedLogDir, batches: Sequence[Any]) -> None:
    # producer id -> pending (group, topic, partition) -> (offset, record offset)
    pending: dict[int, dict[tuple[str, str, int], tuple[int, int]]] = {}
    record_offset_of: dict[tuple[str, str, int], int] = {}
    for batch in batches:
        if batch.is_control:
            marker = batch.end_txn_marker()
            held = pending.pop(batch.producer_id, {})
            if marker is not None and marker.committed:
                for key, (offset, at) in held.items():
                    if record_offset_of.get(key, -1) < at:
                        decoded.committed[key] = offset
                        record_offset_of[key] = at
            continue
        for record in batch.records:
            rec = decode_record(OFFSETS_TOPIC, record.key, record.value)
            if not isinstance(rec, CoordinatorRecord):
                raise TypeError(f"undecodable offsets record at {record.offset}: {rec}")
            if rec.record_type in (0, 1):
                key = (rec.key["group"], rec.key["topic"], rec.key["partition"])
                if rec.value is None:
                    decoded.committed.pop(key, None)
                    record_offset_of.pop(key, None)
                    for held in pending.values():
                        held.pop(key, None)
                elif batch.is_transactional:
                    decoded.txn_offset_records += 1
                    pending.setdefault(batch.producer_id, {})[key] = (
                        rec.value["offset"],
                        record.offset,
                    )
                else:
                    decoded.plain_offset_records += 1
                    decoded.committed[key] = rec.value["offset"]
                    record_offset_of[key] = record.offset
            elif rec.record_type == 2:
                group = rec.key["group"]
                if rec.value is None:
                    decoded.group_tombstones.setdefault(group, []).append(record.offset)
                    continue
                decoded.group_metadata.setdefault(group, []).append(
                    _group_metadata(group, record.offset, record.timestamp, rec.value)
                )


def _group_metadata(
    group: str, offset: int, timestamp: int, value: Mapping[str, Any]
) -> LoggedGroupMetadata:
    members = tuple(m["memberId"] for m in value["members"])
    subscriptions: dict[str, tuple[tuple[str, ...], frozenset[Partition]]] = {}
    assignments: dict[str, tuple[Partition, ...]] = {}
    raw: dict[str, bytes] = {}
    consumer = value["protocolType"] == "consumer"
    for m in value["members"]:
        raw[m["memberId"]] = m["assignment"]
        if not consumer:
            continue
        sub = decode_subscription(m["subscription"]).data
        owned = frozenset(
            (t["topic"], p) for t in sub.get("ownedPartitions") or () for p in t["partitions"]
        )
        subscriptions[m["memberId"]] = (tuple(sub["topics"]), owned)
        blob = decode_assignment(m["assignment"])
        assignments[m["memberId"]] = (
            ()
            if blob is None
            else tuple(
                (t["topic"], p) for t in blob.data["assignedPartitions"] for p in t["partitions"]
            )
        )
    return LoggedGroupMetadata(
        group_id=group,
        offset=offset,
        timestamp=timestamp,
        generation=value["generation"],
        protocol_type=value["protocolType"],
        protocol=value["protocol"],
        leader=value["leader"],
        members=members,
        subscriptions=subscriptions,
        assignments=assignments,
        raw_assignments=raw,
        client_ids={m["memberId"]: m["clientId"] for m in value["members"]},
        instance_ids={m["memberId"]: m.get("groupInstanceId") for m in value["members"]},
    )


def _decode_transactions(decoded: DecodedLogDir, batches: Sequence[Any]) -> None:
    for batch in batches:
        for record in batch.records:
            rec = decode_record(TRANSACTION_TOPIC, record.key, record.value)
            if not isinstance(rec, CoordinatorRecord):
                raise TypeError(f"undecodable transaction record at {record.offset}: {rec}")
            tid = rec.key["transactionalId"]
            if rec.value is None:
                decoded.txn_states.setdefault(tid, []).append(("Dead", -1, -1))
                continue
            status = TransactionState(rec.value["transactionStatus"]).name
            decoded.txn_states.setdefault(tid, []).append(
                (status, rec.value["producerId"], rec.value["producerEpoch"])
            )


def _decode_data(
    decoded: DecodedLogDir, topic: str, partition: int, batches: Sequence[Any]
) -> None:
    open_first: dict[int, int] = {}
    end = 0
    for batch in batches:
        end = batch.last_offset + 1
        if batch.is_control:
            marker = batch.end_txn_marker()
            if marker is not None:
                key = (topic, partition, batch.producer_id, marker.committed)
                decoded.markers[key] = decoded.markers.get(key, 0) + 1
            open_first.pop(batch.producer_id, None)
        elif batch.is_transactional:
            open_first.setdefault(batch.producer_id, batch.base_offset)
    decoded.data_end[(topic, partition)] = (end, min(open_first.values(), default=end))


# ----------------------------------------------------------------------------- checks


def verify_log_dir(root: Path, truth: Sequence[Mapping[str, Any]]) -> list[str]:
    """Compare the log directory ``root`` with its ground truth; returns the mismatches."""
    decoded = decode_log_dir(root)
    problems: list[str] = []
    problems += _check_generations(decoded, truth)
    problems += _check_assignment_properties(decoded, truth)
    problems += _check_client_assignments(decoded, truth)
    problems += _check_offsets(decoded, truth)
    problems += _check_transactions(decoded, truth)
    problems += _check_end_offsets(decoded, truth)
    return problems


def _of(truth: Iterable[Mapping[str, Any]], *types: str) -> list[Mapping[str, Any]]:
    wanted = set(types)
    return [line for line in truth if line["type"] in wanted]


def _check_generations(decoded: DecodedLogDir, truth: Sequence[Mapping[str, Any]]) -> list[str]:
    problems = []
    stored: dict[str, list[Mapping[str, Any]]] = {}
    for line in _of(truth, "AssignmentStored"):
        stored.setdefault(line["group_id"], []).append(line)
    started = {
        (line["group_id"], line["generation_id"]): line for line in _of(truth, "GenerationStarted")
    }
    # A static replacement rewrites the GroupMetadata (same generation) only when the group is
    # Stable and stays so (no new rebalance at that instant); during a rebalance the new member
    # id simply joins it.
    replacements: dict[str, int] = {}
    state: dict[str, str] = {}
    pending: list[tuple[str, int]] = []
    for line in _of(truth, "GroupStateChanged", "MemberJoined"):
        group = line["group_id"]
        if line["type"] == "GroupStateChanged":
            state[group] = line["state"]
            pending = [
                (g, at)
                for g, at in pending
                if not (g == group and at == line["at_ms"] and line["previous"] == "Stable")
            ]
        elif line["cause"] == "static_replacement" and state.get(group) == "Stable":
            pending.append((group, line["at_ms"]))
    for group, _ in pending:
        replacements[group] = replacements.get(group, 0) + 1
    empties: dict[str, list[int]] = {}
    for line in _of(truth, "GroupStateChanged"):
        if line["state"] == "Empty" and line["previous"] == "PreparingRebalance":
            empties.setdefault(line["group_id"], []).append(line["generation_id"])
    groups = sorted(set(decoded.group_metadata) | set(stored))
    for group in groups:
        records = decoded.group_metadata.get(group, [])
        with_members = [r for r in records if r.members]
        firsts: list[LoggedGroupMetadata] = []
        rewrites = 0
        for r in with_members:
            if firsts and firsts[-1].generation == r.generation:
                rewrites += 1
            else:
                firsts.append(r)
        expected = stored.get(group, [])
        if [r.generation for r in firsts] != [e["generation_id"] for e in expected]:
            problems.append(
                f"{group}: generations in the log {[r.generation for r in firsts]} != stored "
                f"{[e['generation_id'] for e in expected]}"
            )
            continue
        for r, e in zip(firsts, expected, strict=True):
            assignments = {m: base64.b64decode(a) for m, a in e["assignments"]}
            if (r.protocol, r.leader) != (e["protocol"], e["leader"]):
                problems.append(
                    f"{group} g{r.generation}: protocol/leader {r.protocol}/{r.leader} != "
                    f"{e['protocol']}/{e['leader']}"
                )
            if dict(r.raw_assignments) != {m: assignments.get(m, b"") for m in r.members}:
                problems.append(f"{group} g{r.generation}: assignments differ from the truth")
            start = started.get((group, r.generation))
            if start is None:
                problems.append(f"{group} g{r.generation}: stored but never started")
            elif list(start["member_ids"]) != list(r.members):
                problems.append(
                    f"{group} g{r.generation}: members {list(r.members)} != started "
                    f"{start['member_ids']}"
                )
        if rewrites != replacements.get(group, 0):
            problems.append(
                f"{group}: {rewrites} same-generation rewrites, {replacements.get(group, 0)} "
                "static replacements"
            )
        logged_empty = [r.generation for r in records if not r.members and r.generation > 0]
        if logged_empty != empties.get(group, []):
            problems.append(
                f"{group}: empty-group records {logged_empty} != transitions to Empty "
                f"{empties.get(group, [])}"
            )
    deleted: dict[str, int] = {}
    for line in _of(truth, "GroupDeleted"):
        deleted[line["group_id"]] = deleted.get(line["group_id"], 0) + 1
    tombstoned = {g: len(v) for g, v in decoded.group_tombstones.items()}
    if tombstoned != deleted:
        problems.append(f"group tombstones {tombstoned} != deletions {deleted}")
    return problems


def _topic_partitions(truth: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    head = _of(truth, "ScenarioStarted")[0]
    return {t["topic"]: t["partitions"] for t in head["topics"]}


def _check_assignment_properties(
    decoded: DecodedLogDir, truth: Sequence[Mapping[str, Any]]
) -> list[str]:
    problems = []
    counts = _topic_partitions(truth)
    for group, records in decoded.group_metadata.items():
        for r in records:
            if not r.members or r.protocol_type != "consumer":
                continue
            owners: dict[Partition, str] = {}
            for member, parts in r.assignments.items():
                for tp in parts:
                    if tp in owners:
                        problems.append(
                            f"{group} g{r.generation}: {tp} owned by {owners[tp]} and {member}"
                        )
                    owners[tp] = member
            topics = {t for topics, _ in r.subscriptions.values() for t in topics}
            wanted = {(t, p) for t in topics if t in counts for p in range(counts[t])}
            in_transfer = set().union(*(owned for _, owned in r.subscriptions.values()))
            cooperative = r.protocol == "cooperative-sticky"
            missing = wanted - set(owners)
            if cooperative:
                missing -= in_transfer
            if missing:
                problems.append(f"{group} g{r.generation}: unassigned {sorted(missing)}")
            extra = set(owners) - wanted
            if extra:
                problems.append(
                    f"{group} g{r.generation}: assigned outside the subscription {sorted(extra)}"
                )
    return problems


def _check_client_assignments(
    decoded: DecodedLogDir, truth: Sequence[Mapping[str, Any]]
) -> list[str]:
    problems = []
    for line in _of(truth, "ClientAssignment"):
        group, member, generation = line["group_id"], line["member_id"], line["generation_id"]
        applied = tuple((t["topic"], p) for t in line["assigned"] for p in t["partitions"])
        records = [
            r
            for r in decoded.group_metadata.get(group, [])
            if r.generation == generation and member in r.assignments
        ]
        if not records:
            problems.append(f"{group} g{generation}: {member} applied an assignment never stored")
            continue
        stored = tuple(sorted(records[-1].assignments[member]))
        if tuple(sorted(applied)) != stored:
            problems.append(f"{group} g{generation}: {member} applied {applied}, stored {stored}")
    return problems


def _check_offsets(decoded: DecodedLogDir, truth: Sequence[Mapping[str, Any]]) -> list[str]:
    problems = []
    lags = _of(truth, "Lag")
    final_at = max((line["at_ms"] for line in lags), default=None)
    for line in lags:
        if line["at_ms"] != final_at:
            continue
        for row in line["partitions"]:
            key = (line["group_id"], row["topic"], row["partition"])
            if decoded.committed.get(key) != row["committed_offset"]:
                problems.append(
                    f"committed offset {key}: log {decoded.committed.get(key)} != truth "
                    f"{row['committed_offset']}"
                )
    head = _of(truth, "ScenarioStarted")[0]
    plain = sum(
        1 for line in _of(truth, "OffsetCommit") for o in line["offsets"] if o["error"] == "NONE"
    )
    txn = sum(
        1 for line in _of(truth, "TxnOffsetCommit") for o in line["offsets"] if o["error"] == "NONE"
    )
    recorded_all = head.get("record_commits", True)
    if recorded_all and plain != decoded.plain_offset_records:
        problems.append(f"{decoded.plain_offset_records} offset records, {plain} commits seen")
    if recorded_all and txn != decoded.txn_offset_records:
        problems.append(
            f"{decoded.txn_offset_records} transactional offset records, {txn} commits seen"
        )
    return problems


def _check_transactions(decoded: DecodedLogDir, truth: Sequence[Mapping[str, Any]]) -> list[str]:
    problems = []
    expected: dict[str, list[tuple[str, int, int]]] = {}
    for line in _of(truth, "TxnStateChanged"):
        if line["persisted"]:
            expected.setdefault(line["transactional_id"], []).append(
                (line["to_state"], line["producer_id"], line["producer_epoch"])
            )
    for tid in sorted(set(expected) | set(decoded.txn_states)):
        got = [s for s, _, _ in decoded.txn_states.get(tid, [])]
        want = [s for s, _, _ in expected.get(tid, [])]
        if got != want:
            at = next(
                (i for i, (g, w) in enumerate(zip(got, want, strict=False)) if g != w),
                min(len(got), len(want)),
            )
            problems.append(
                f"transaction {tid}: status #{at} differs (log {got[at : at + 3]}, truth "
                f"{want[at : at + 3]}; {len(got)} vs {len(want)} records)"
            )
            continue
        got_ids = [(p, e) for s, p, e in decoded.txn_states.get(tid, []) if s != "Dead"]
        want_ids = [(p, e) for s, p, e in expected.get(tid, []) if s != "Dead"]
        if got_ids != want_ids:
            problems.append(f"transaction {tid}: producer ids/epochs differ from the truth")
    needed: dict[tuple[str, int, int, bool], int] = {}
    for line in _of(truth, "TxnOutcome"):
        committed = line["outcome"] == "committed"
        for tp in line["partitions"]:
            if tp["topic"] == OFFSETS_TOPIC:
                continue
            key = (tp["topic"], tp["partition"], line["producer_id"], committed)
            needed[key] = needed.get(key, 0) + 1
    # A COMMIT marker the scenario lost on purpose (txn_lose_marker) is absent from the log.
    for line in _of(truth, "MarkerLost"):
        key = (line["topic"], line["partition"], line["producer_id"], True)
        needed[key] = needed.get(key, 0) - 1
    for key, count in sorted(needed.items()):
        if decoded.markers.get(key, 0) != count:
            problems.append(f"markers {key}: log {decoded.markers.get(key, 0)} != outcomes {count}")
    return problems


def _check_end_offsets(decoded: DecodedLogDir, truth: Sequence[Mapping[str, Any]]) -> list[str]:
    samples = _of(truth, "EndOffsets")
    if not samples:
        return []
    problems = []
    for row in samples[-1]["partitions"]:
        key = (row["topic"], row["partition"])
        end, lso = decoded.data_end.get(key, (0, 0))
        if (end, lso) != (row["high_watermark"], row["last_stable_offset"]):
            problems.append(
                f"end offsets {key}: log HW/LSO {end}/{lso} != truth "
                f"{row['high_watermark']}/{row['last_stable_offset']}"
            )
    return problems
