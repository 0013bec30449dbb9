"""The driver heap's freeze-after-each-batch policy (``offsetscope.pipelines.heap``): what a
batch leaves alive is out of the collector's walks, garbage cycles are still freed -- the
batch's own at once, frozen ones at the next full collection, or by the collector as usual
once the query has ended."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from offsetscope.pipelines.heap import DriverHeap


class Node:
    """A collectable object that can be part of a reference cycle."""

    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> weakref.ref[Node]:
    """A garbage cycle of two nodes, already unreachable: only the collector can free it."""
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()  # whatever a test froze goes back to the collector


def test_what_a_batch_leaves_alive_is_frozen() -> None:
    heap = DriverHeap(full_every=10)
    kept = [Node() for _ in range(100)]

    heap.batch_done()

    assert gc.get_freeze_count() >= len(kept)
    walked = {id(o) for o in gc.get_objects()}  # the generations a collection walks
    assert not any(id(n) in walked for n in kept)


def test_the_batches_own_garbage_cycles_are_freed_before_the_freeze() -> None:
    heap = DriverHeap(full_every=10)
    gone = cycle()

    heap.batch_done()

    assert gone() is None


def test_a_frozen_cycle_waits_for_the_next_full_collection() -> None:
    heap = DriverHeap(full_every=3)
    a, b = Node(), Node()
    a.other, b.other = b, a
    held = weakref.ref(a)
    heap.batch_done()  # the cycle is alive: frozen
    del a, b  # now garbage, but frozen

    gc.collect()
    assert held() is not None  # no ordinary collection walks the frozen objects
    heap.batch_done()
    assert held() is not None
    heap.batch_done()  # the third batch: everything unfrozen and collected

    assert held() is None
    assert heap.full_collections == 1


def test_the_end_of_the_query_hands_everything_back_to_the_collector() -> None:
    heap = DriverHeap()
    a, b = Node(), Node()
    a.other, b.other = b, a
    held = weakref.ref(a)
    heap.batch_done()
    del a, b

    heap.release()

    assert gc.get_freeze_count() == 0
    gc.collect()  # an ordinary collection now walks them again
    assert held() is None


def test_objects_frozen_are_still_freed_by_reference_counting() -> None:
    heap = DriverHeap()
    node = Node()
    held = weakref.ref(node)
    heap.batch_done()

    del node

    assert held() is None


def test_a_full_collection_interval_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="full_every must be at least 1"):
        DriverHeap(full_every=0)
