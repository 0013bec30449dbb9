"""The driver's Python heap between micro-batches: what a batch leaves alive is frozen out of
the cyclic garbage collector's walks.

The ingest query's driver keeps, from one batch to the next, every fold state's text and the
states the last batch folded (:mod:`offsetscope.pipelines.batch`): hundreds of thousands of
objects the collector tracks. CPython's collector walks every tracked object of the oldest
generation on each full collection, and a batch of many records allocates enough to start one
or more; so the driver walked the whole kept heap every batch, although none of it is garbage
(``docs/benchmarks.md``, "Measurements behind design choices").

After each batch (:meth:`DriverHeap.batch_done`):

1. the young generations are collected, so the batch's own garbage cycles go while they are
   still young and cheap to find;
2. every object still alive is frozen (``gc.freeze``): moved to the permanent generation, which
   no collection walks. Frozen objects are still freed by reference counting the moment nothing
   refers to them (a state replaced by its next version is); only garbage *cycles* among them
   wait;
3. every :data:`FULL_COLLECTION_EVERY` batches the frozen objects are unfrozen and one full
   collection runs, so such cycles are freed in the end; when the query ends
   (:meth:`release`) they are unfrozen, and the process's collector works as usual again (a
   process that runs many short queries, as the tests do, pays no full collection for each).
"""

from __future__ import annotations

import gc

# Batches between full collections of everything frozen: the cycles that wait are few (the
# fold states are trees of frozen dataclasses, with no cycles), and a full collection costs
# about what each batch's used to.
FULL_COLLECTION_EVERY = 50


class DriverHeap:
    """The freeze-after-each-batch policy of the module docstring, for one query."""

    def __init__(self, full_every: int = FULL_COLLECTION_EVERY) -> None:
        if full_every < 1:
            raise ValueError(f"full_every must be at least 1, got {full_every}")
        self.full_every = full_every
        self.batches = 0
        self.full_collections = 0

    def batch_done(self) -> None:
        """A batch has finished: collect the young generations and freeze what is alive; every
        ``full_every`` batches, collect everything first."""
        self.batches += 1
        if self.batches % self.full_every == 0:
            gc.unfreeze()
            gc.collect()
            self.full_collections += 1
        else:
            gc.collect(1)
        gc.freeze()

    def release(self) -> None:
        """The query has ended: hand what its batches froze back to the collector."""
        if self.batches:
            gc.unfreeze()
