"""Pure folds: decoded events -> generations, transitions, sessions, transactions, lag.

No pyspark, no I/O, no clock: the same code runs in batch, in streaming micro-batches and in
tests. Each fold is ``fold(state | None, events_in_log_order) -> (new_state, rows)`` with a small
frozen, JSON-serialisable state per key, so a batch costs O(events in the batch):

* :func:`fold_offsets` -- per ``__consumer_offsets`` partition -> ``offset_commits``;
* :func:`fold_group` -- per group id -> ``group_generations``, ``group_state_transitions``,
  ``member_sessions``, ``partition_assignments``, ``groups_current``;
* :func:`fold_transactions` -- per transactional id -> ``transactions``,
  ``transaction_status_timeline``;
* :func:`fold_batch` -- routes a mixed batch to all three;
* :class:`LagIndex` -- ``partition_lag`` as of any time;
* :mod:`offsetscope.history.signals` -- counts for the alert rules;
* :mod:`offsetscope.history.tables` -- every table's columns, types, keys and partitioning.
"""

from __future__ import annotations

from offsetscope.history.batch import HistoryOutputs, HistoryStates, fold_batch
from offsetscope.history.groups import GroupOutputs, GroupState, fold_group
from offsetscope.history.lag import CommitPoint, LagIndex, commit_points, record_time_lookup
from offsetscope.history.offsets import OffsetsState, fold_offsets
from offsetscope.history.tables import TABLES, Table, materialize
from offsetscope.history.transactions import TxnIdState, TxnOutputs, fold_transactions

__all__ = [
    "TABLES",
    "CommitPoint",
    "GroupOutputs",
    "GroupState",
    "HistoryOutputs",
    "HistoryStates",
    "LagIndex",
    "OffsetsState",
    "Table",
    "TxnIdState",
    "TxnOutputs",
    "commit_points",
    "fold_batch",
    "fold_group",
    "fold_offsets",
    "fold_transactions",
    "materialize",
    "record_time_lookup",
]
