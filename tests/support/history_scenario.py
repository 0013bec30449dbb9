"""A log with every table in it, for the incremental-fold tests: two ``__consumer_offsets``
partitions and one ``__transaction_state`` partition, interleaved by time, folded whole or in
any number of batches (:func:`fold_in_chunks`) and hashed (:func:`digest`)."""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from itertools import pairwise
from typing import Any

from history_log import T0, Log, M, txn_log
from share_streams_log import share_log, streams_log

from offsetscope.history import fold_batch
from offsetscope.history.batch import HistoryOutputs, HistoryStates
from offsetscope.history.codec import dumps
from offsetscope.history.events import Event
from offsetscope.history.groups import GroupState
from offsetscope.history.offsets import OffsetsState
from offsetscope.history.share_state import SharePartitionState
from offsetscope.history.tables import materialize
from offsetscope.history.transactions import TxnIdState
from offsetscope.protocol.states import TransactionState as St

S = 1_000
TOPIC = uuid.UUID("0b6e9d8c-4a51-4f7e-9a7e-5b1c2d3e4f50")
TOPIC2 = uuid.UUID("7d1c3a90-5e2f-4b6a-8c9d-0e1f2a3b4c5d")


def scenario() -> list[Event]:
    """Two offsets partitions and one transaction-state partition, interleaved by time."""
    p0 = Log(partition=0)
    # classic group: steady, static restart, crash, gap, emptied, deleted, re-created
    p0.group("g", 0, [], T0, protocol_type="")
    p0.group("g", 1, [M("a", [("orders", 0)], instance_id="ia"), M("b", [("orders", 1)])],
             T0 + 5 * S, cst=T0 + 4 * S)  # fmt: skip
    p0.commit("g", "orders", 0, 10, T0 + 6 * S)
    p0.commit("g", "orders", 1, 20, T0 + 7 * S, pid=77)
    p0.group("g", 1, [M("a2", [("orders", 0)], instance_id="ia"), M("b", [("orders", 1)])],
             T0 + 9 * S, cst=T0 + 4 * S)  # fmt: skip
    p0.marker("COMMIT", 77, T0 + 10 * S)
    p0.commit("g", "orders", 0, 15, T0 + 11 * S, pid=78)
    p0.commit("g", "orders", 0, 16, T0 + 12 * S)
    p0.marker("COMMIT", 78, T0 + 13 * S)
    p0.group("g", 2, [M("a2", [("orders", 0), ("orders", 1)], instance_id="ia")],
             T0 + 20 * S, cst=T0 + 19 * S)  # fmt: skip
    p0.commit("g", "orders", 1, 30, T0 + 21 * S, pid=79)
    p0.marker("ABORT", 79, T0 + 22 * S)
    p0.group("g", 6, [M("c", [("orders", 0)]), M("a2", [("orders", 1)], instance_id="ia")],
             T0 + 40 * S, cst=T0 + 39 * S)  # fmt: skip
    p0.group("g", 7, [], T0 + 50 * S, cst=T0 + 49 * S)
    p0.offset_tombstone("g", "orders", 0, T0 + 60 * S)
    p0.offset_tombstone("g", "orders", 1, T0 + 60 * S)
    p0.group_tombstone("g", T0 + 60 * S)
    p0.group("g", 1, [M("z", [("orders", 0)])], T0 + 70 * S)
    p0.commit("simple", "orders", 2, 5, T0 + 71 * S)
    # KIP-848 group: join, second member, static replacement, leave
    p0.topics_metadata("k", {TOPIC: "events"}, T0 + 2 * S)
    for ts, member, epoch, targets in [
        (T0 + 3 * S, "m1", 1, {"m1": [0, 1]}),
        (T0 + 8 * S, "m2", 2, {"m1": [0], "m2": [1]}),
    ]:
        p0.member("k", member, ts, instance_id=f"pod-{member}")
        p0.epoch("k", epoch, ts)
        for mid, parts in targets.items():
            p0.target("k", mid, {TOPIC: parts}, ts)
        p0.target_epoch("k", epoch, ts)
        p0.current("k", member, epoch, {TOPIC: targets[member]}, ts)
    p0.current("k", "m1", 2, {TOPIC: [0]}, T0 + 9 * S)
    ts = T0 + 30 * S  # pod-m2 restarts as m3
    p0.current("k", "m2", 0, None, ts)
    p0.target("k", "m2", None, ts)
    p0.member("k", "m2", ts, tombstone=True)
    p0.member("k", "m3", ts, instance_id="pod-m2")
    p0.target("k", "m3", {TOPIC: [1]}, ts)
    p0.target_epoch("k", 2, ts)
    p0.current("k", "m3", 2, {TOPIC: [1]}, ts + S)
    p0.commit("k", "audit", 0, 3, T0 + 40 * S, topic_id=TOPIC2)  # teaches the name "audit"
    ts = T0 + 45 * S  # m1 leaves
    p0.current("k", "m1", 0, None, ts)
    p0.target("k", "m1", None, ts)
    p0.member("k", "m1", ts, tombstone=True)
    p0.epoch("k", 3, ts)
    p0.target("k", "m3", {TOPIC: [0, 1], TOPIC2: [0]}, ts)
    p0.target_epoch("k", 3, ts)

    p1 = Log(partition=1)
    for gen in range(1, 13):
        t = T0 + gen * 3 * S
        p1.group("storm", gen, [M("s", [("orders", 0)]), M(f"x{gen}", [("orders", 1)])], t,
                 cst=t - 500)  # fmt: skip
        p1.commit("storm", "orders", 0, gen * 100, t + 100)

    tl = txn_log()
    tl.txn("t", St.Empty, 500, 0, T0)
    tl.txn("t", St.Ongoing, 500, 0, T0 + S, partitions=[("orders", 0)], start=T0 + S)
    tl.txn("t", St.PrepareCommit, 500, 0, T0 + 2 * S, partitions=[("orders", 0)], start=T0 + S)
    tl.txn("t", St.CompleteCommit, 500, 0, T0 + 2 * S, start=T0 + S)
    tl.txn("t", St.Ongoing, 500, 0, T0 + 3 * S, partitions=[("orders", 1)], start=T0 + 3 * S,
           timeout=5_000)  # fmt: skip
    tl.txn("t", St.PrepareAbort, 500, 1, T0 + 10 * S, partitions=[("orders", 1)],
           start=T0 + 3 * S, timeout=5_000)  # fmt: skip
    tl.txn("t", St.CompleteAbort, 500, 1, T0 + 10 * S, start=T0 + 3 * S, timeout=5_000)
    tl.txn("t", St.Empty, 500, 2, T0 + 11 * S)
    tl.txn("t", St.Ongoing, 500, 2, T0 + 12 * S, partitions=[("orders", 2)], start=T0 + 12 * S)
    tl.txn("t", St.PrepareAbort, 500, 3, T0 + 13 * S, partitions=[("orders", 2)],
           start=T0 + 12 * S)  # fmt: skip
    tl.txn("t", St.CompleteAbort, 500, 3, T0 + 13 * S, start=T0 + 12 * S)
    tl.txn("t", St.Empty, 500, 4, T0 + 14 * S)
    tl.txn("v2", St.Ongoing, 600, 5, T0 + S, partitions=[("orders", 0)], start=T0 + S, ctv=2)
    tl.txn("v2", St.PrepareAbort, 600, 6, T0 + 2 * S, partitions=[("orders", 0)],
           start=T0 + S, ctv=2)  # fmt: skip
    tl.txn("v2", St.CompleteAbort, 600, 6, T0 + 2 * S, start=T0 + S, ctv=2)
    tl.txn("v2", St.Empty, 600, 7, T0 + 3 * S, ctv=2)
    tl.txn("gone", St.Empty, 700, 0, T0)
    tl.txn_tombstone("gone", T0 + 80 * S)

    # a Kafka Streams group and a share group (with its share-partition state) on partition 2
    others = [*streams_log(partition=2).events, *share_log(partition=2).events]
    merged = [*p0.events, *p1.events, *tl.events, *others]
    # Interleaved by time (a stable sort keeps the order of records written at the same time),
    # then numbered in that order within each partition, as a log would hold them: the builders
    # number records in the order they are written here, which is by key, not by time.
    merged.sort(key=lambda e: e.at.timestamp)
    next_offset: dict[tuple[str, int], int] = {}
    logged = []
    for e in merged:
        tp = (e.at.topic, e.at.partition)
        offset = next_offset.get(tp, 0)
        next_offset[tp] = offset + 1
        logged.append(dataclasses.replace(e, at=dataclasses.replace(e.at, offset=offset)))
    return logged


EVENTS = scenario()


def round_trip(states: HistoryStates) -> HistoryStates:
    """What the pipeline does between batches: store each state as JSON and read it back."""
    return HistoryStates(
        offsets={k: OffsetsState.from_json(v.to_json()) for k, v in states.offsets.items()},
        groups={k: GroupState.from_json(v.to_json()) for k, v in states.groups.items()},
        transactions={k: TxnIdState.from_json(v.to_json()) for k, v in states.transactions.items()},
        shares={k: SharePartitionState.from_json(v.to_json()) for k, v in states.shares.items()},
    )


def fold_in_chunks(cuts: list[int]) -> tuple[HistoryStates, dict[str, dict[Any, Any]]]:
    bounds = [0, *sorted(set(cuts)), len(EVENTS)]
    states: HistoryStates | None = None
    emitted: dict[str, list[Any]] = {name: [] for name in HistoryOutputs.__dataclass_fields__}
    for lo, hi in pairwise(bounds):
        new, out = fold_batch(states, EVENTS[lo:hi])
        states = round_trip(new)
        for name, rows in emitted.items():
            rows.extend(getattr(out, name))
    assert states is not None
    return states, {name: materialize(rows) for name, rows in emitted.items()}


WHOLE_STATES, WHOLE = fold_in_chunks([])


def digest() -> str:
    """A hash of every output row and state, in emission order."""
    states, out = fold_batch(None, scenario())
    h = hashlib.sha256()
    for name in HistoryOutputs.__dataclass_fields__:
        h.update(dumps(getattr(out, name)).encode())
    for offsets_key in sorted(states.offsets):
        h.update(states.offsets[offsets_key].to_json().encode())
    for group_id in sorted(states.groups):
        h.update(states.groups[group_id].to_json().encode())
    for txn_id in sorted(states.transactions):
        h.update(states.transactions[txn_id].to_json().encode())
    return h.hexdigest()
