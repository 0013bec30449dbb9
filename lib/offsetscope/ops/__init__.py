"""The operator's view: report pages, the Prometheus exporter, and the reads behind them and
behind the task-shaped commands (``offsetscope group``, ``txn``, ``report``, ``metrics``).

* :mod:`~offsetscope.ops.queries` -- one Spark SQL read per question, over the gold tables and
  the views declared with them (``offsetscope.spark.tables.VIEWS``);
* :mod:`~offsetscope.ops.report` -- a group's page and the cluster's page, self-contained HTML
  with plotly charts;
* :mod:`~offsetscope.ops.metrics` -- gauges named after kminion's, served for Prometheus.

Above ``alerts`` and below ``cli`` (``docs/design.md``): it reads the tables through Spark and
imports neither the simulator nor the checks.
"""
