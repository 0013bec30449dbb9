"""Alert rules over the history tables, the ``alerts`` table, and notifiers.

* :mod:`.model` -- an alert row, its deterministic id and life cycle (open -> resolved);
* :mod:`.episodes` -- when a windowed condition holds, found exactly at its change points;
* :mod:`.rules` -- rebalance storm, member churn, stuck rebalance, lag stall, data loss,
  hanging transaction, quality failure: pure functions over history rows and fold states,
  built on :mod:`offsetscope.history.signals`;
* :mod:`.engine` -- one evaluation reconciled with the stored alerts;
* :mod:`.notify` -- webhook and log notifiers, and the dispatcher that sends each event once;
* :mod:`.tables` -- the ``alerts`` and ``alert_notifications`` tables;
* :mod:`.runner` -- the Spark side: load, evaluate, MERGE, notify; the alerts streaming query.

Importing this package imports no Spark; only :mod:`.runner` and :mod:`.tables` do.
"""

from __future__ import annotations
