"""Transaction fold: one transactional id's ``__transaction_state`` records -> transactions.

Input: the id's ``TransactionLogEvent`` records in log order (one record per state change,
``docs/formats.md`` sections 5 and 8.5)::

    InitProducerId                 Empty            epoch + 1 (new producer id when exhausted)
    AddPartitions / AddOffsets     Ongoing          cumulative partitions; start = first add
    EndTxn(commit | abort)         PrepareCommit / PrepareAbort   (TV2: epoch + 1 here)
    markers written                CompleteCommit / CompleteAbort (TV2 overflow: next producer id)
    coordinator abort              [PrepareEpochFence, never written] -> PrepareAbort (epoch + 1)
                                   -> CompleteAbort
    expiry                         tombstone

One ``transactions`` row per transaction, opened by its first Ongoing (or, for a TV2 abort with no
partitions, by its PrepareAbort), decided at Prepare* (``ended_at``, outcome) and completed at
Complete* (``completed_at``); one ``transaction_status_timeline`` row per record, plus the
inferred PrepareEpochFence of coordinator aborts.

How an abort's cause is inferred (Kafka's ``TransactionCoordinator``; the bundled coordinator in
:mod:`offsetscope.sim.coordinator.txn` follows it):

* Transactions V0/V1: clients never bump the epoch, so a PrepareAbort whose epoch is above the
  transaction's is a coordinator abort. It is a **timeout** when it came after
  ``start + transactionTimeoutMs`` (the periodic check aborts exactly those), otherwise the
  transactional id was re-initialised by a new producer instance while the transaction was open:
  **fenced**. The fencing instance's epoch is the one of the Empty record that follows.
* Transactions V2: every EndTxn bumps the epoch, and so does the fence (once, KAFKA-19367), so
  the epoch alone cannot tell. A bump of two or more is a coordinator abort (brokers before the
  fix). Otherwise an abort after the timeout is taken as a timeout, and an abort followed
  directly by a re-initialisation (Empty) as a fence; ``end_reason_inferred`` marks these
  timing/sequence-based answers (a client that aborts and then restarts looks the same).
* An InitProducerId record (Empty) while a transaction is still open means a fence whose abort
  records were not seen.

State per transactional id: the open transaction, the last aborted one while a fence is still
possible, the last status, producer id and epoch -- a few rows, whatever the history.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from offsetscope.history.codec import JsonState, evolve
from offsetscope.history.events import Event, TopicPartition, TransactionLogEvent
from offsetscope.history.rows import TransactionRow, TxnStatusRow
from offsetscope.protocol.states import TransactionState, transaction_status_name

_S = TransactionState
TV_2 = 2

ONGOING = "ongoing"
COMMITTED = "committed"
ABORTED = "aborted"


@dataclass(frozen=True, slots=True)
class TxnIdState(JsonState):
    """What the transaction fold carries between batches for one transactional id."""

    transactional_id: str
    record_partition: int
    last_offset: int
    status: str | None  # Kafka's name of the last status; "Dead" after expiry
    producer_id: int | None
    producer_epoch: int | None
    timeout_ms: int
    open: TransactionRow | None
    awaiting_fence: TransactionRow | None
    last_at: int | None


@dataclass(frozen=True, slots=True)
class TxnOutputs:
    """Rows one fold call produced (upserts; one version per natural key)."""

    transactions: tuple[TransactionRow, ...] = ()
    timeline: tuple[TxnStatusRow, ...] = ()


def fold_transactions(
    state: TxnIdState | None, events: Iterable[Event]
) -> tuple[TxnIdState | None, TxnOutputs]:
    """Fold one transactional id's records (log order) into transactions and its status timeline.

    Args:
        state: the previous call's state, or ``None`` for an id seen for the first time.
        events: ``TransactionLogEvent`` records of one transactional id (other events are
            ignored); records at or below the last folded offset are skipped (replays change
            nothing).

    Returns:
        The new state (``None`` only with no state and no event) and the rows.
    """
    records = [e for e in events if isinstance(e, TransactionLogEvent)]
    if state is None and not records:
        return None, TxnOutputs()
    folder = _TxnFolder(state, records[0] if records else None)
    for e in records:
        folder.apply(e)
    return folder.freeze(), folder.outputs()


class _TxnFolder:
    def __init__(self, state: TxnIdState | None, first: TransactionLogEvent | None) -> None:
        if state is None:
            assert first is not None
            state = TxnIdState(
                first.transactional_id,
                first.at.partition,
                -1,
                None,
                None,
                None,
                0,
                None,
                None,
                None,
            )
        self.s = state
        self.txns: dict[int, TransactionRow] = {}
        self.timeline: dict[tuple[int, int], TxnStatusRow] = {}

    def freeze(self) -> TxnIdState:
        return self.s

    def outputs(self) -> TxnOutputs:
        return TxnOutputs(tuple(self.txns.values()), tuple(self.timeline.values()))

    def _emit(self, row: TransactionRow) -> TransactionRow:
        self.txns.pop(row.first_record_offset, None)
        self.txns[row.first_record_offset] = row
        return row

    def _step(
        self,
        e: TransactionLogEvent,
        seq: int,
        at: int,
        from_status: str | None,
        to_status: str,
        inferred: bool,
        reason: str,
    ) -> None:
        row = TxnStatusRow(
            transactional_id=e.transactional_id,
            record_partition=e.at.partition,
            record_offset=e.at.offset,
            seq=seq,
            at=at,
            from_status=from_status,
            to_status=to_status,
            producer_id=None if e.tombstone else e.producer_id,
            producer_epoch=None if e.tombstone else e.producer_epoch,
            inferred=inferred,
            reason=reason,
        )
        self.timeline[(row.record_offset, row.seq)] = row

    def apply(self, e: TransactionLogEvent) -> None:
        s = self.s
        if e.at.offset <= s.last_offset:
            return
        ts = e.at.timestamp
        if e.tombstone:
            self._step(e, 0, ts, s.status, "Dead", False, "transactional id expired (tombstone)")
            # Kafka expires only ids in Empty/Complete*; nothing can still be open.
            self.s = evolve(
                s,
                last_offset=e.at.offset,
                record_partition=e.at.partition,
                status="Dead",
                open=None,
                awaiting_fence=None,
                last_at=ts,
            )
            return
        at = e.last_update_timestamp if e.last_update_timestamp >= 0 else ts
        code = e.status
        name = transaction_status_name(code)
        seq = 0
        open_row, awaiting = s.open, s.awaiting_fence
        if code == _S.Empty:
            reason = "InitProducerId"
            if s.producer_id is not None and e.producer_id != s.producer_id:
                reason += f" (new producer id {e.producer_id}, was {s.producer_id})"
            if open_row is not None:
                # Re-initialised while a transaction was open: a fence whose abort was not seen.
                self._emit(
                    _end(open_row, e, at, ABORTED, "fenced", True, fenced=True, complete=True)
                )
                open_row = None
            if awaiting is not None:
                fenced = awaiting.fenced or awaiting.end_reason == "client_abort"
                self._emit(
                    evolve(
                        awaiting,
                        fenced=fenced,
                        end_reason="fenced" if fenced else awaiting.end_reason,
                        end_reason_inferred=awaiting.end_reason_inferred or not awaiting.fenced,
                        fenced_by_producer_id=e.producer_id if fenced else None,
                        fenced_by_epoch=e.producer_epoch if fenced else None,
                        updated_at=ts,
                    )
                )
                awaiting = None
        elif code == _S.Ongoing:
            awaiting = None  # the same producer carries on: the last abort was its own
            if open_row is not None and open_row.outcome != ONGOING:
                open_row = None  # its Complete* record was never seen
            if open_row is None:
                open_row = self._emit(_new_row(e, e.producer_epoch, ts))
                reason = "transaction started (first partition added)"
            else:
                parts = _union(open_row.partitions, e.partitions or ())
                open_row = self._emit(
                    evolve(
                        open_row,
                        partitions=parts,
                        partition_count=len(parts),
                        timeout_ms=e.timeout_ms,
                        last_record_offset=e.at.offset,
                        updated_at=ts,
                    )
                )
                reason = "partitions added"
        elif code in (_S.PrepareCommit, _S.PrepareAbort):
            tv2 = e.client_transaction_version >= TV_2
            if open_row is None or open_row.outcome != ONGOING:
                # TV2 abort with no partition added (or a cold start mid-transaction): the
                # client's epoch was one below a TV2 Prepare*'s.
                start_epoch = (
                    e.producer_epoch - 1 if tv2 and e.producer_epoch > 0 else e.producer_epoch
                )
                open_row = _new_row(e, start_epoch, ts)
            commit = code == _S.PrepareCommit
            bump = e.producer_epoch - open_row.producer_epoch
            coordinator = bump >= (2 if tv2 else 1)
            started = open_row.started_at
            late = started is not None and at > started + e.timeout_ms
            timed_out = fenced = inferred = False
            if commit:
                cause = "client_commit"
            elif late and (coordinator or tv2):
                cause, timed_out, inferred = "timeout", True, not coordinator
            elif coordinator:
                cause, fenced = "fenced", True
            else:
                cause = "client_abort"
            if not commit and (coordinator or timed_out):
                self._step(
                    e,
                    0,
                    at,
                    s.status,
                    "PrepareEpochFence",
                    True,
                    "producer epoch fenced in memory before the abort (never persisted)",
                )
                seq = 1
                prev_status: str | None = "PrepareEpochFence"
            else:
                prev_status = s.status
            open_row = self._emit(
                _end(
                    open_row,
                    e,
                    at,
                    COMMITTED if commit else ABORTED,
                    cause,
                    inferred,
                    fenced=fenced,
                    timed_out=timed_out,
                    complete=False,
                )
            )
            reason = {
                "client_commit": "EndTxn(commit)",
                "client_abort": "EndTxn(abort)",
                "timeout": "coordinator abort: transaction timed out",
                "fenced": "coordinator abort: producer fenced by a new instance",
            }[cause]
            self._step(e, seq, at, prev_status, name, False, reason)
            self.s = _advance(s, e, name, open_row, awaiting, ts)
            return
        elif code in (_S.CompleteCommit, _S.CompleteAbort):
            commit = code == _S.CompleteCommit
            if open_row is None:
                open_row = _new_row(e, e.producer_epoch, ts)
                open_row = _end(
                    open_row, e, at, COMMITTED if commit else ABORTED, None, True, complete=False
                )
            row = self._emit(
                evolve(
                    open_row,
                    state=name,
                    completed_at=ts,
                    end_producer_id=e.producer_id,
                    end_producer_epoch=e.producer_epoch,
                    last_record_offset=e.at.offset,
                    updated_at=ts,
                )
            )
            open_row = None
            # A fence shows itself by the re-initialisation that follows (TV2: also the
            # ambiguous aborts); remember the row until the next record.
            candidate = row.fenced or (
                row.end_reason == "client_abort" and row.client_transaction_version >= TV_2
            )
            awaiting = row if candidate and not row.timed_out else None
            reason = "transaction markers written"
        else:
            reason = "transient state (not written by Kafka)"
        self._step(e, seq, at, s.status, name, False, reason)
        self.s = _advance(s, e, name, open_row, awaiting, ts)


def _advance(
    s: TxnIdState,
    e: TransactionLogEvent,
    name: str,
    open_row: TransactionRow | None,
    awaiting: TransactionRow | None,
    ts: int,
) -> TxnIdState:
    return evolve(
        s,
        record_partition=e.at.partition,
        last_offset=e.at.offset,
        status=name,
        producer_id=e.producer_id,
        producer_epoch=e.producer_epoch,
        timeout_ms=e.timeout_ms,
        open=open_row,
        awaiting_fence=awaiting,
        last_at=ts,
    )


def _union(a: Iterable[TopicPartition], b: Iterable[TopicPartition]) -> tuple[TopicPartition, ...]:
    return tuple(sorted(set(a) | set(b)))


def _new_row(e: TransactionLogEvent, epoch: int, ts: int) -> TransactionRow:
    parts = _union((), e.partitions or ())
    start = e.start_timestamp if e.start_timestamp >= 0 else None
    return TransactionRow(
        transactional_id=e.transactional_id,
        record_partition=e.at.partition,
        first_record_offset=e.at.offset,
        producer_id=e.producer_id,
        producer_epoch=epoch,
        end_producer_id=None,
        end_producer_epoch=None,
        previous_producer_id=e.previous_producer_id if e.previous_producer_id >= 0 else None,
        next_producer_id=None,
        client_transaction_version=e.client_transaction_version,
        timeout_ms=e.timeout_ms,
        state=transaction_status_name(e.status),
        outcome=ONGOING,
        started_at=start,
        ended_at=None,
        completed_at=None,
        duration_ms=None,
        partitions=parts,
        partition_count=len(parts),
        timed_out=False,
        fenced=False,
        fenced_by_producer_id=None,
        fenced_by_epoch=None,
        end_reason=None,
        end_reason_inferred=False,
        last_record_offset=e.at.offset,
        updated_at=ts,
    )


def _end(
    row: TransactionRow,
    e: TransactionLogEvent,
    at: int,
    outcome: str,
    cause: str | None,
    inferred: bool,
    *,
    fenced: bool = False,
    timed_out: bool = False,
    complete: bool,
) -> TransactionRow:
    parts = _union(row.partitions, e.partitions or ())
    return evolve(
        row,
        state=transaction_status_name(e.status),
        outcome=outcome,
        ended_at=at,
        completed_at=e.at.timestamp if complete else row.completed_at,
        duration_ms=None if row.started_at is None else at - row.started_at,
        partitions=parts,
        partition_count=len(parts),
        end_producer_id=e.producer_id,
        end_producer_epoch=e.producer_epoch,
        next_producer_id=e.next_producer_id if e.next_producer_id >= 0 else row.next_producer_id,
        client_transaction_version=e.client_transaction_version,
        timeout_ms=e.timeout_ms,
        timed_out=timed_out,
        fenced=fenced,
        fenced_by_producer_id=e.producer_id if fenced and complete else None,
        fenced_by_epoch=e.producer_epoch if fenced and complete else None,
        end_reason=cause,
        end_reason_inferred=inferred,
        last_record_offset=e.at.offset,
        updated_at=e.at.timestamp,
    )
