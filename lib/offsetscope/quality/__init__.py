"""Data-quality gates: great-expectations suites written in code, one per table.

* :mod:`.suites` -- each table's checks as data, and the great-expectations suite built from them;
* :mod:`.validate` -- ``validate(df, table, batch_id) -> (good_df, failed_df, results_row)``;
* :mod:`.model` -- the results row and quarantined rows (no Spark, no great-expectations);
* :mod:`.tables` -- ``quality_results`` and ``quality_quarantine`` (and the Delta helpers the
  alerts tables share).

Importing this package imports neither Spark nor great-expectations.
"""

from __future__ import annotations
