"""``__transaction_state`` record schemas (the status codes are :class:`offsetscope.protocol.states.TransactionState`).

Mirrors Kafka 4.4's ``transaction-coordinator/src/main/resources/common/message/TransactionLog{Key,Value}.json``.

::

    key   = int16 record_type (always 0) | TransactionalId string
    value = int16 version | ProducerId int64 | ProducerEpoch int16 | TransactionTimeoutMs int32 |
            TransactionStatus int8 | TransactionPartitions[]? {Topic string, PartitionIds []int32} |
            TransactionLastUpdateTimestampMs int64 | TransactionStartTimestampMs int64 |
            (v1, flexible) tagged: 0 PreviousProducerId int64, 1 NextProducerId int64,
                                   2 ClientTransactionVersion int16, 3 NextProducerEpoch int16

Each state change of a transactional id is one uncompressed, non-transactional batch of one
record. A tombstone means the transactional id expired.
"""

from __future__ import annotations

from offsetscope.protocol.schema import Field as F
from offsetscope.protocol.schema import Message

TRANSACTION_LOG_KEY = Message(
    "TransactionLogKey",
    valid="0",
    flexible="none",
    fields=(F("TransactionalId", "string", "0"),),
)
TRANSACTION_LOG_VALUE = Message(
    "TransactionLogValue",
    valid="0-1",
    # Version 1 is the first flexible version (written when transaction.version >= 1).
    flexible="1+",
    fields=(
        F("ProducerId", "int64", "0+"),
        # The producer id the transactional id had before this transition.
        F("PreviousProducerId", "int64", "1+", tag=0, tagged="1+", default=-1),
        # Set by an EndTxn that rotates the producer id on epoch exhaustion (TV2).
        F("NextProducerId", "int64", "1+", tag=1, tagged="1+", default=-1),
        F("ProducerEpoch", "int16", "0+"),
        F("NextProducerEpoch", "int16", "1+", tag=3, tagged="1+", default=-1),
        F("TransactionTimeoutMs", "int32", "0+"),
        F("TransactionStatus", "int8", "0+"),
        F(
            "TransactionPartitions",
            "[]PartitionsSchema",
            "0+",
            nullable="0+",
            fields=(F("Topic", "string", "0+"), F("PartitionIds", "[]int32", "0+")),
        ),
        F("TransactionLastUpdateTimestampMs", "int64", "0+"),
        F("TransactionStartTimestampMs", "int64", "0+"),
        F("ClientTransactionVersion", "int16", "1+", tag=2, tagged="1+", default=0),
    ),
)
