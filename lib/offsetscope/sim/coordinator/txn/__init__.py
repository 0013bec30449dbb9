"""The bundled transaction coordinator (Kafka 4.4's, event-sourced and deterministic).

* its states are :class:`offsetscope.protocol.states.TransactionState`, shared with the history folds;
* :mod:`.metadata` -- one transactional id's metadata and the two-phase ``prepare_*`` transits;
* :mod:`.coordinator` -- the request handlers, the periodic jobs and ``replay``;
* :mod:`.records` -- the only builder of ``__transaction_state`` records;
* :mod:`.runtime` -- append + replay, markers, scheduled jobs, the partition leader's Produce;
* :mod:`.producer_ids` -- producer-id blocks;
* :mod:`.events` -- ground truth (state changes with causes, outcomes).

The partition-leader side (sequences, epochs, markers, LSO) is
:mod:`offsetscope.sim.coordinator.producer_state`; it imports this package's error codes, so the
runtime (which imports it back) is not re-exported here: use ``...txn.runtime.TxnRuntime``.
"""

from __future__ import annotations

from offsetscope.sim.coordinator.errors import Errors
from offsetscope.sim.coordinator.txn.config import (
    TV_0,
    TV_1,
    TV_2,
    TransactionCoordinatorConfig,
    client_transaction_version,
)
from offsetscope.sim.coordinator.txn.coordinator import (
    AddPartitionsToTxnResponse,
    DescribedTransaction,
    EndTxnResponse,
    InitProducerIdResponse,
    ListedTransaction,
    ListTransactionsResponse,
    PendingMarkers,
    ProducerIdAndEpoch,
    TransactionCoordinator,
)
from offsetscope.sim.coordinator.txn.events import (
    TxnCause,
    TxnEvent,
    TxnOutcome,
    TxnOutcomeKind,
    TxnStateChanged,
    event_to_dict,
)
from offsetscope.sim.coordinator.txn.metadata import TopicPartition, TransactionMetadata, TxnTransit
from offsetscope.sim.coordinator.txn.producer_ids import ProducerIdControl, ProducerIdManager
from offsetscope.sim.coordinator.txn.records import (
    TransactionLogRecord,
    new_transaction_log_record,
    new_transaction_log_tombstone,
)

__all__ = [
    "TV_0",
    "TV_1",
    "TV_2",
    "AddPartitionsToTxnResponse",
    "DescribedTransaction",
    "EndTxnResponse",
    "Errors",
    "InitProducerIdResponse",
    "ListTransactionsResponse",
    "ListedTransaction",
    "PendingMarkers",
    "ProducerIdAndEpoch",
    "ProducerIdControl",
    "ProducerIdManager",
    "TopicPartition",
    "TransactionCoordinator",
    "TransactionCoordinatorConfig",
    "TransactionLogRecord",
    "TransactionMetadata",
    "TxnCause",
    "TxnEvent",
    "TxnOutcome",
    "TxnOutcomeKind",
    "TxnStateChanged",
    "TxnTransit",
    "client_transaction_version",
    "event_to_dict",
    "new_transaction_log_record",
    "new_transaction_log_tombstone",
]
