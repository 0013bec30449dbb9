"""A deterministic synthetic Kafka log directory: consumer groups, commits, transactions.

For the pipeline's tests and its throughput benchmark, before (and besides) the scenario engine:
it writes what a broker would hold after a workload of classic consumer groups and transactional
producers, with records built by the protocol's encoders and laid out by its partition writer::

    <root>/__consumer_offsets-<p>/   GroupMetadata at every rebalance, OffsetCommit batches
                                     (one batch per group per commit round), transactional
                                     offset commits and their COMMIT/ABORT markers
    <root>/__transaction_state-<p>/  Empty -> Ongoing (+partitions) -> Prepare* -> Complete*
    <root>/<data topic>-<p>/         plain batches and transactional ones with their markers

What Kafka does and this mirrors (``docs/formats.md`` sections 3, 5, 8): a classic group stores
a GroupMetadata record when the leader's SyncGroup completes (generation already bumped,
``currentStateTimestamp`` = when the group entered CompletingRebalance); each OffsetCommit
request writes one batch with a record per partition; a transactional producer's offsets are
written in a transactional batch of its producer id and count only after the COMMIT marker the
coordinator writes to that ``__consumer_offsets`` partition after PrepareCommit and before
CompleteCommit (transactions V1: the client's epoch is not bumped).

The log stays open between :meth:`SyntheticLog.run` calls (segments are flushed after each),
so a test can grow it while a streaming query reads it. :attr:`SyntheticLog.truth` counts what
was written, for assertions.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from offsetscope.protocol import encode_record, make_record
from offsetscope.protocol.consumer_protocol import encode_assignment, encode_subscription
from offsetscope.protocol.log import LogConfig, PartitionWriter, RecordSpec
from offsetscope.protocol.partitioner import partition_for
from offsetscope.protocol.records import OFFSETS_TOPIC, TRANSACTION_TOPIC
from offsetscope.protocol.states import TransactionState

START_MS = 1_700_000_000_000


@dataclass(frozen=True, slots=True)
class Workload:
    """The shape of the synthetic workload (all counts per tick unless said otherwise)."""

    groups: int = 3
    members: int = 2
    data_topic: str = "orders"
    data_partitions: int = 4
    records_per_tick: int = 5  # data records per data partition
    tick_ms: int = 1_000
    rebalance_every: int = 10  # ticks between a group's rebalances
    lag_records: int = 2  # how far each group's commits trail the high watermark
    transactional_ids: int = 2
    transaction_every: int = 3  # ticks between transactions (round-robin over the ids)
    abort_every: int = 3  # every n-th transaction aborts
    offsets_partitions: int = 3
    transaction_partitions: int = 3
    segment_bytes: int = 1024 * 1024
    index_interval_bytes: int = 4096  # index.interval.bytes
    start_ms: int = START_MS


@dataclass(slots=True)
class Truth:
    """What the synthetic log holds, counted as it was written."""

    commits: int = 0  # non-transactional OffsetCommit records
    transactional_commits: int = 0
    group_records: int = 0  # GroupMetadata records
    generations: Counter[str] = field(default_factory=Counter)  # group -> last generation
    transaction_log_records: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)  # committed / aborted
    markers: int = 0  # control records in __consumer_offsets
    high_watermarks: dict[tuple[str, int], int] = field(default_factory=dict)
    last_offsets: dict[tuple[str, str, int], int] = field(default_factory=dict)  # committed
    records: int = 0  # every record in the internal topics, markers included

    @property
    def internal_records(self) -> int:
        return self.records


@dataclass(slots=True)
class _Txn:
    transactional_id: str
    producer_id: int
    epoch: int = 0
    initialised: bool = False
    count: int = 0


class SyntheticLog:
    """Writes the workload into ``root`` tick by tick; see the module docstring."""

    def __init__(self, root: str | Path, workload: Workload | None = None) -> None:
        self.root = Path(root)
        self.w = workload or Workload()
        self.truth = Truth()
        self.tick = 0
        cfg = LogConfig(
            segment_bytes=self.w.segment_bytes, index_interval_bytes=self.w.index_interval_bytes
        )
        self._offsets = [
            PartitionWriter(self.root / f"{OFFSETS_TOPIC}-{p}", config=cfg)
            for p in range(self.w.offsets_partitions)
        ]
        self._txn_log = [
            PartitionWriter(self.root / f"{TRANSACTION_TOPIC}-{p}", config=cfg)
            for p in range(self.w.transaction_partitions)
        ]
        self._data = [
            PartitionWriter(self.root / f"{self.w.data_topic}-{p}", config=cfg)
            for p in range(self.w.data_partitions)
        ]
        self._groups = [f"group-{g}" for g in range(self.w.groups)]
        self._generation = dict.fromkeys(self._groups, 0)
        self._members: dict[str, list[str]] = {g: [] for g in self._groups}
        self._member_seq = 0
        self._txns = [
            _Txn(f"txn-{i}", producer_id=1000 + i) for i in range(self.w.transactional_ids)
        ]
        self._txn_round = 0
        self._closed = False

    # ------------------------------------------------------------------ public API

    def run(self, ticks: int) -> Truth:
        """Write ``ticks`` more ticks, flush every segment, and return the running truth."""
        for _ in range(ticks):
            self._one_tick()
        for writer in (*self._offsets, *self._txn_log, *self._data):
            writer.flush()
        return self.truth

    def close(self) -> None:
        """Finish every segment (indexes, snapshots, checkpoints), as a clean shutdown does."""
        if self._closed:
            return
        for writer in (*self._offsets, *self._txn_log, *self._data):
            writer.close()
        self._closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ one tick

    def _now(self) -> int:
        return self.w.start_ms + self.tick * self.w.tick_ms

    def _one_tick(self) -> None:
        now = self._now()
        for group in self._groups:
            if self.tick % self.w.rebalance_every == 0:
                self._rebalance(group, now)
        for p, writer in enumerate(self._data):
            specs = [
                RecordSpec(f"k{i}".encode(), b"order", now) for i in range(self.w.records_per_tick)
            ]
            info = writer.append(specs)
            self.truth.high_watermarks[(self.w.data_topic, p)] = info.last_offset + 1
        for group in self._groups:
            self._commit(group, now + 10)
        if self._txns and self.tick % self.w.transaction_every == 0:
            txn = self._txns[self._txn_round % len(self._txns)]
            self._txn_round += 1
            self._transaction(txn, now + 20)
        self.tick += 1

    def _append_internal(
        self, writer: PartitionWriter, specs: list[RecordSpec], **kw: object
    ) -> None:
        writer.append(specs, **kw)  # type: ignore[arg-type]
        self.truth.records += len(specs)

    # ------------------------------------------------------------------ groups

    def _rebalance(self, group: str, now: int) -> None:
        members = self._members[group]
        if members:
            members.pop(0)  # the oldest member leaves; a new one joins
        while len(members) < self.w.members:
            self._member_seq += 1
            members.append(f"consumer-{self._member_seq}-{group}")
        self._generation[group] += 1
        generation = self._generation[group]
        topic = self.w.data_topic
        subscription = encode_subscription(0, {"topics": [topic], "userData": None})
        owned: dict[str, list[int]] = {m: [] for m in members}
        for p in range(self.w.data_partitions):
            owned[members[p % len(members)]].append(p)
        member_rows = [
            {
                "memberId": m,
                "groupInstanceId": None,
                "clientId": m.split("-" + group)[0],
                "clientHost": "/127.0.0.1",
                "rebalanceTimeout": 300_000,
                "sessionTimeout": 45_000,
                "subscription": subscription,
                "assignment": encode_assignment(
                    0,
                    {
                        "assignedPartitions": [{"topic": topic, "partitions": owned[m]}],
                        "userData": None,
                    },
                ),
            }
            for m in members
        ]
        value = {
            "protocolType": "consumer",
            "generation": generation,
            "protocol": "range",
            "leader": members[0],
            "currentStateTimestamp": now - 100,
            "members": member_rows,
        }
        key, val = encode_record(make_record(OFFSETS_TOPIC, 2, {"group": group}, value, 3))
        writer = self._offsets[partition_for(group, self.w.offsets_partitions)]
        self._append_internal(writer, [RecordSpec(key, val, now)])
        self.truth.group_records += 1
        self.truth.generations[group] = generation

    def _commit_specs(self, group: str, now: int, offsets: dict[int, int]) -> list[RecordSpec]:
        specs = []
        for p, offset in offsets.items():
            key, val = encode_record(
                make_record(
                    OFFSETS_TOPIC,
                    1,
                    {"group": group, "topic": self.w.data_topic, "partition": p},
                    {"offset": offset, "leaderEpoch": 0, "metadata": "", "commitTimestamp": now},
                    3,
                )
            )
            specs.append(RecordSpec(key, val, now))
        return specs

    def _commit(self, group: str, now: int) -> None:
        offsets = {
            p: max(0, self.truth.high_watermarks[(self.w.data_topic, p)] - self.w.lag_records)
            for p in range(self.w.data_partitions)
        }
        writer = self._offsets[partition_for(group, self.w.offsets_partitions)]
        self._append_internal(writer, self._commit_specs(group, now, offsets))
        self.truth.commits += len(offsets)
        for p, offset in offsets.items():
            self.truth.last_offsets[(group, self.w.data_topic, p)] = offset

    # ------------------------------------------------------------------ transactions

    def _txn_record(
        self,
        txn: _Txn,
        status: TransactionState,
        now: int,
        start: int,
        partitions: list[tuple[str, int]],
    ) -> None:
        by_topic: dict[str, list[int]] = {}
        for topic, p in partitions:
            by_topic.setdefault(topic, []).append(p)
        value = {
            "producerId": txn.producer_id,
            "producerEpoch": txn.epoch,
            "transactionTimeoutMs": 60_000,
            "transactionStatus": int(status),
            "transactionPartitions": [
                {"topic": t, "partitionIds": sorted(ps)} for t, ps in sorted(by_topic.items())
            ],
            "transactionLastUpdateTimestampMs": now,
            "transactionStartTimestampMs": start,
        }
        key, val = encode_record(
            make_record(TRANSACTION_TOPIC, 0, {"transactionalId": txn.transactional_id}, value, 0)
        )
        writer = self._txn_log[partition_for(txn.transactional_id, self.w.transaction_partitions)]
        self._append_internal(writer, [RecordSpec(key, val, now)])
        self.truth.transaction_log_records += 1

    def _transaction(self, txn: _Txn, now: int) -> None:
        if not txn.initialised:
            self._txn_record(txn, TransactionState.Empty, now, -1, [])
            txn.initialised = True
        txn.count += 1
        commit = txn.count % self.w.abort_every != 0
        data_p = txn.count % self.w.data_partitions
        group = self._groups[txn.count % len(self._groups)]
        offsets_p = partition_for(group, self.w.offsets_partitions)
        start = now + 1
        parts = [(self.w.data_topic, data_p)]
        self._txn_record(txn, TransactionState.Ongoing, start, start, parts)
        parts = [*parts, (OFFSETS_TOPIC, offsets_p)]
        self._txn_record(txn, TransactionState.Ongoing, start + 1, start, parts)
        # The transactional data record and the offsets sent to the transaction.
        data = self._data[data_p]
        info = data.append(
            [RecordSpec(b"txn", b"order", start + 2)],
            producer_id=txn.producer_id,
            producer_epoch=txn.epoch,
            base_sequence=0,
            is_transactional=True,
        )
        self.truth.high_watermarks[(self.w.data_topic, data_p)] = info.last_offset + 1
        committed_offset = info.last_offset + 1
        specs = self._commit_specs(group, start + 3, {data_p: committed_offset})
        self._append_internal(
            self._offsets[offsets_p],
            specs,
            producer_id=txn.producer_id,
            producer_epoch=txn.epoch,
            base_sequence=0,
            is_transactional=True,
        )
        self.truth.transactional_commits += 1
        status = TransactionState.PrepareCommit if commit else TransactionState.PrepareAbort
        self._txn_record(txn, status, start + 4, start, parts)
        for writer in (data, self._offsets[offsets_p]):
            info = writer.append_end_txn_marker(
                producer_id=txn.producer_id,
                producer_epoch=txn.epoch,
                committed=commit,
                coordinator_epoch=0,
                timestamp=start + 5,
            )
            if writer is data:
                self.truth.high_watermarks[(self.w.data_topic, data_p)] = info.last_offset + 1
        self.truth.markers += 1
        self.truth.records += 1
        final = TransactionState.CompleteCommit if commit else TransactionState.CompleteAbort
        self._txn_record(txn, final, start + 6, start, [])
        self.truth.outcomes["committed" if commit else "aborted"] += 1
        if commit:
            self.truth.last_offsets[(group, self.w.data_topic, data_p)] = committed_offset
