"""The only place that builds ``__transaction_state`` records.

Layout (``docs/formats.md`` section 5)::

    key   = record_type 0 | TransactionLogKey { transactionalId }
    value = version | TransactionLogValue { producerId, [previousProducerId], [nextProducerId],
            producerEpoch, [nextProducerEpoch], transactionTimeoutMs, transactionStatus,
            transactionPartitions (null in Empty, [] in Complete*), transactionLastUpdateTimestampMs,
            transactionStartTimestampMs, [clientTransactionVersion] }      ([...] = v1 tagged)
    null value = tombstone: the transactional id expired

Value version 1 is written when the finalized ``transaction.version`` is >= 1, else 0 (then the
tagged fields do not exist and are left out). Partitions are grouped by topic; Kafka's order is
a HashMap's, ours is sorted by topic then partition so a seed always gives the same bytes.

Records built here are :class:`TransactionLogRecord`, a :class:`CoordinatorRecord` that also
carries the in-memory transit and the cause: Kafka appends a ``TxnTransitMetadata`` and completes
the transition from it after the append, and that transit holds fields the record does not
(the last producer epoch).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from offsetscope.protocol.records import TRANSACTION_TOPIC, CoordinatorRecord
from offsetscope.protocol.states import TransactionState
from offsetscope.sim.coordinator.txn.events import TxnCause
from offsetscope.sim.coordinator.txn.metadata import TxnTransit

TRANSACTION_LOG_RECORD_TYPE = 0
TRANSACTION_LOG_KEY = "TransactionLogKey"
TRANSACTION_LOG_VALUE = "TransactionLogValue"


@dataclass(frozen=True, slots=True)
class TransactionLogRecord(CoordinatorRecord):
    """A ``__transaction_state`` record written by this coordinator, with its transit."""

    transit: TxnTransit | None = field(default=None, compare=False, repr=False)
    cause: TxnCause | None = field(default=None, compare=False)


def transaction_log_value(transit: TxnTransit, value_version: int) -> dict[str, Any]:
    """The ``TransactionLogValue`` payload (Kafka JSON names) for ``transit``.

    Args:
        transit: the transition being logged.
        value_version: 0 or 1 (see :attr:`TransactionCoordinatorConfig.transaction_log_value_version`).
    """
    if transit.state is TransactionState.Empty and transit.partitions:
        raise ValueError(f"an Empty transaction cannot list partitions: {transit}")
    partitions: list[dict[str, Any]] | None = None
    if transit.state is not TransactionState.Empty:
        ordered = sorted(transit.partitions)
        partitions = [
            {"topic": topic, "partitionIds": [tp.partition for tp in group]}
            for topic, group in groupby(ordered, key=lambda tp: tp.topic)
        ]
    value: dict[str, Any] = {"producerId": transit.producer_id}
    if value_version >= 1:
        value["previousProducerId"] = transit.prev_producer_id
        value["nextProducerId"] = transit.next_producer_id
    value["producerEpoch"] = transit.producer_epoch
    if value_version >= 1:
        value["nextProducerEpoch"] = transit.next_producer_epoch
    value["transactionTimeoutMs"] = transit.txn_timeout_ms
    value["transactionStatus"] = int(transit.state)
    value["transactionPartitions"] = partitions
    value["transactionLastUpdateTimestampMs"] = transit.txn_last_update_timestamp
    value["transactionStartTimestampMs"] = transit.txn_start_timestamp
    if value_version >= 1:
        value["clientTransactionVersion"] = transit.client_transaction_version
    return value


def new_transaction_log_record(
    transactional_id: str, transit: TxnTransit, *, value_version: int, cause: TxnCause
) -> TransactionLogRecord:
    """The record logging ``transit`` for ``transactional_id``.

    Args:
        transactional_id: the key.
        transit: the prepared transition.
        value_version: TransactionLogValue version (0, or 1 when transaction.version >= 1).
        cause: why (ground truth; not part of the bytes).
    """
    if value_version not in (0, 1):
        raise ValueError(f"TransactionLogValue has no version {value_version}")
    return TransactionLogRecord(
        topic=TRANSACTION_TOPIC,
        record_type=TRANSACTION_LOG_RECORD_TYPE,
        key_schema=TRANSACTION_LOG_KEY,
        key={"transactionalId": transactional_id},
        value_schema=TRANSACTION_LOG_VALUE,
        value_version=value_version,
        value=transaction_log_value(transit, value_version),
        transit=transit,
        cause=cause,
    )


def new_transaction_log_tombstone(transactional_id: str) -> TransactionLogRecord:
    """The tombstone the expiry job writes for an idle ``transactional_id``."""
    return TransactionLogRecord(
        topic=TRANSACTION_TOPIC,
        record_type=TRANSACTION_LOG_RECORD_TYPE,
        key_schema=TRANSACTION_LOG_KEY,
        key={"transactionalId": transactional_id},
        value_schema=None,
        value_version=None,
        value=None,
        transit=None,
        cause=TxnCause.EXPIRED,
    )
