"""What an evaluation looks at besides open alerts: the keys whose history moved, per cluster.

The alerts job reads them from the change data feed of ``fold_state``, whose key is ``(fold,
key, cluster)``: a group id or transactional id is unique within its cluster only, so every
changed key is kept with its cluster and each cluster is evaluated on its own keys
(:mod:`offsetscope.alerts.runner`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from offsetscope.history import batch as folds


@dataclass(frozen=True, slots=True)
class ChangedKeys:
    """The subjects whose history moved: what an evaluation must look at (besides open alerts).

    ``groups`` and ``transactional_ids`` are ``(cluster, id)`` pairs: an id is unique within its
    cluster only. ``ingest_batches`` are the ingest batch ids that moved them
    (``fold_state.updated_batch_id``): the last one bounds ``as_of``, the first one the horizon.
    """

    groups: frozenset[tuple[str, str]] = frozenset()
    transactional_ids: frozenset[tuple[str, str]] = frozenset()
    ingest_batches: frozenset[int] = frozenset()

    @classmethod
    def from_fold_rows(cls, rows: Iterable[tuple[str, str, str, int | None]]) -> ChangedKeys:
        """From ``(cluster, fold, key, updated_batch_id)`` rows of the ``fold_state`` table."""
        groups: set[tuple[str, str]] = set()
        txns: set[tuple[str, str]] = set()
        batches: set[int] = set()
        for cluster, fold, key, batch in rows:
            if fold == folds.GROUP:
                groups.add((cluster, key))
            elif fold == folds.TXN:
                txns.add((cluster, key))
            if batch is not None:
                batches.add(int(batch))
        return cls(frozenset(groups), frozenset(txns), frozenset(batches))

    @property
    def clusters(self) -> frozenset[str]:
        """The clusters with a changed group or transactional id."""
        return frozenset(c for c, _ in self.groups | self.transactional_ids)

    def groups_of(self, cluster: str) -> set[str]:
        """The changed group ids of ``cluster``."""
        return {g for c, g in self.groups if c == cluster}

    def transactional_ids_of(self, cluster: str) -> set[str]:
        """The changed transactional ids of ``cluster``."""
        return {t for c, t in self.transactional_ids if c == cluster}
