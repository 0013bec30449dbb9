"""Java semantics that leak into Kafka's observable output, reproduced in one place.

Kafka's classic group keeps its members in a ``java.util.HashMap`` (the order of members in the
GroupMetadata record and in the leader's JoinGroup response, which member becomes leader when
the leader leaves, which protocol wins a tied vote); its assignors iterate ``HashMap``/``HashSet``
instances, sort member ids with ``String.compareTo`` and hash keys with ``String.hashCode`` /
``TopicPartition.hashCode`` (which members of a sticky group keep ``maxQuota`` partitions, the
order of topics in the sticky userData, the order of partitions in a range assignment). Python
dicts iterate in insertion order, so those choices would silently differ from a broker's and a
Java client's. This module reproduces the pieces exactly:

* ``java_string_hash``: ``String.hashCode`` over UTF-16 code units, as a signed int32.
* ``topic_partition_hash``: ``TopicPartition.hashCode`` = ``31 * (31 + partition) + topic.hashCode()``.
* ``java_sort_key``: a ``str`` whose code-point order is ``String.compareTo``'s UTF-16 order
  (they differ only between U+E000..U+FFFF and supplementary characters).
* ``spread``/``grown_capacity``/``hashmap_order``: the iteration order of a string-keyed map
  filled with ``put`` (the classic group's members), without building the table.
* ``JavaHashMap``/``JavaHashSet``: the bucket layout of OpenJDK's ``HashMap`` (JDK 8 through 25
  share it): a power-of-two table, ``spread(h) = h ^ (h >>> 16)``, index ``spread & (n - 1)``,
  load factor 0.75, ``put`` appends to the bin's tail and resizes *after* inserting when the size
  passes the threshold, ``computeIfAbsent`` resizes *before* inserting and puts the new node at
  the bin's *head*, a resize splits each bin into a low and a high bin keeping relative order,
  and a bin that would be treeified in a table smaller than 64 triggers a resize instead.
  Iteration walks the table in index order, each bin head to tail. The capacity never shrinks.

Treeified bins (8+ keys in one bin of a table of 64 or more) reorder their linked list by a
red-black tree; they need that many full-hash collisions that they do not occur for the keys
stored here, so instead of guessing we raise ``JavaOrderUnknownError`` if one ever would form.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from typing import Generic, Protocol, TypeVar

K = TypeVar("K")
V = TypeVar("V")

_MASK32 = 0xFFFFFFFF
DEFAULT_CAPACITY = 16
LOAD_FACTOR = 0.75
_DEFAULT_CAPACITY = DEFAULT_CAPACITY
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64
_MAXIMUM_CAPACITY = 1 << 30


def _int32(value: int) -> int:
    value &= _MASK32
    return value - (1 << 32) if value & 0x80000000 else value


@lru_cache(maxsize=65536)
def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (signed 32-bit): ``h = 31 * h + c`` over UTF-16 code units.

    Characters outside the BMP count as two code units (a surrogate pair), as in Java.
    """
    h = 0
    if s.isascii():
        # One code unit per byte. Reducing modulo 2**32 only at the end gives the same result
        # (the ring homomorphism) and is faster than masking every step.
        for c in s.encode("ascii"):
            h = 31 * h + c
    else:
        data = s.encode("utf-16-be", "surrogatepass")
        for i in range(0, len(data), 2):
            h = 31 * h + ((data[i] << 8) | data[i + 1])
    return _int32(h)


def spread(h: int) -> int:
    """``HashMap.hash``: fold the high 16 bits into the low ones (unsigned 32-bit result)."""
    u = h & _MASK32
    return u ^ (u >> 16)


def grown_capacity(capacity: int, size: int) -> int:
    """The table capacity after a map has held ``size`` entries (it only grows)."""
    while size > capacity * LOAD_FACTOR:
        capacity *= 2
    return capacity


def hashmap_order(keys: Iterable[str], capacity: int = DEFAULT_CAPACITY) -> list[str]:
    """Order string ``keys`` (given in insertion order) as a ``HashMap`` of that capacity
    iterates them, when no bin was ever treeified and entries were appended with ``put``.

    Args:
        keys: the map's current keys, in the order they were inserted.
        capacity: the table capacity (a power of two); see :func:`grown_capacity`.

    Returns:
        The keys in Java iteration order.
    """
    mask = capacity - 1
    indexed = [(spread(java_string_hash(k)) & mask, i, k) for i, k in enumerate(keys)]
    indexed.sort()
    return [k for _, _, k in indexed]


class TopicPartitionLike(Protocol):
    """Anything with a topic and a partition (``TopicPartition`` of the assignors)."""

    @property
    def topic(self) -> str: ...

    @property
    def partition(self) -> int: ...


def topic_partition_hash(tp: TopicPartitionLike) -> int:
    """``TopicPartition.hashCode()``."""
    return _int32(31 * (31 + tp.partition) + java_string_hash(tp.topic))


@lru_cache(maxsize=65536)
def java_sort_key(s: str) -> str:
    """A key whose ``str`` order equals ``String.compareTo`` order (UTF-16 code units)."""
    if all(ord(c) <= 0xFFFF for c in s):
        return s
    # spell supplementary characters as their surrogate pair, as Java stores them
    units = s.encode("utf-16-be", "surrogatepass")
    return "".join(chr(units[i] << 8 | units[i + 1]) for i in range(0, len(units), 2))


def _table_size_for(capacity: int) -> int:
    n = 1
    while n < capacity:
        n <<= 1
    return min(n, _MAXIMUM_CAPACITY)


class JavaOrderUnknownError(RuntimeError):
    """A HashMap bin would be treeified; its iteration order is not reproduced."""


class JavaNoSuchElementError(LookupError):
    """``iterator().next()`` on an empty Java collection (``NoSuchElementException``)."""


class _Node(Generic[K, V]):
    __slots__ = ("hash", "key", "value")

    def __init__(self, h: int, key: K, value: V) -> None:
        self.hash = h
        self.key = key
        self.value = value


class JavaHashMap(Generic[K, V]):
    """A mapping that iterates in the order OpenJDK's ``HashMap`` would for the same operations.

    Lookups go through a Python dict (Python equality equals Java ``equals`` for ``str`` and
    ``TopicPartition``); the bucket table exists only to reproduce the iteration order.
    """

    __slots__ = ("_hash", "_index", "_table", "_threshold")

    def __init__(self, hash_fn: Callable[[K], int], initial_capacity: int | None = None) -> None:
        """Create an empty map, as ``new HashMap<>()`` or ``new HashMap<>(initialCapacity)``.

        Args:
            hash_fn: the key's Java ``hashCode()``.
            initial_capacity: the constructor argument, if any.
        """
        self._hash = hash_fn
        # like Java, the table is allocated lazily; until then the threshold holds the capacity
        self._table: list[list[_Node[K, V]]] = []
        self._threshold = 0 if initial_capacity is None else _table_size_for(initial_capacity)
        self._index: dict[K, _Node[K, V]] = {}

    def _spread(self, key: K) -> int:
        h = self._hash(key) & _MASK32
        return h ^ (h >> 16)

    def _resize(self) -> list[list[_Node[K, V]]]:
        old = self._table
        old_cap = len(old)
        if old_cap > 0:
            if old_cap >= _MAXIMUM_CAPACITY:
                self._threshold = 2**31 - 1
                return old
            new_cap = old_cap << 1
            new_thr = self._threshold << 1 if old_cap >= _DEFAULT_CAPACITY else 0
        elif self._threshold > 0:
            new_cap, new_thr = self._threshold, 0
        else:
            new_cap, new_thr = _DEFAULT_CAPACITY, 12
        if new_thr == 0:
            new_thr = int(new_cap * 0.75)
        self._threshold = new_thr
        table: list[list[_Node[K, V]]] = [[] for _ in range(new_cap)]
        # each old bin splits into bins j and j + old_cap, keeping the nodes' relative order
        for bucket in old:
            for node in bucket:
                table[node.hash & (new_cap - 1)].append(node)
        self._table = table
        return table

    def _treeify_bin(self) -> None:
        if len(self._table) < _MIN_TREEIFY_CAPACITY:
            self._resize()
        else:
            raise JavaOrderUnknownError(
                "a java.util.HashMap bin would become a tree here; its order is not reproduced"
            )

    def put(self, key: K, value: V) -> V | None:
        """``put``: tail insert, then resize if the size passed the threshold."""
        node = self._index.get(key)
        if node is not None:
            old = node.value
            node.value = value
            return old
        table = self._table or self._resize()
        h = self._spread(key)
        bucket = table[h & (len(table) - 1)]
        node = _Node(h, key, value)
        bucket.append(node)
        self._index[key] = node
        # putVal counts the nodes it walked past; 8 of them before the new one means treeify
        if len(bucket) - 1 >= _TREEIFY_THRESHOLD:
            self._treeify_bin()
        if len(self._index) > self._threshold:
            self._resize()
        return None

    def compute_if_absent(self, key: K, factory: Callable[[K], V]) -> V:
        """``computeIfAbsent``: resize first if already over the threshold, then head insert."""
        table = self._table
        if len(self._index) > self._threshold or not table:
            table = self._resize()
        node = self._index.get(key)
        if node is not None:
            return node.value
        value = factory(key)
        h = self._spread(key)
        bucket = table[h & (len(table) - 1)]
        bin_count = len(bucket)
        node = _Node(h, key, value)
        bucket.insert(0, node)
        self._index[key] = node
        if bin_count >= _TREEIFY_THRESHOLD - 1:
            self._treeify_bin()
        return value

    def get(self, key: K) -> V | None:
        node = self._index.get(key)
        return None if node is None else node.value

    def __getitem__(self, key: K) -> V:
        return self._index[key].value

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __len__(self) -> int:
        return len(self._index)

    def remove(self, key: K) -> V | None:
        """``remove``: unlink the node; the other nodes keep their order."""
        node = self._index.pop(key, None)
        if node is None:
            return None
        bucket = self._table[node.hash & (len(self._table) - 1)]
        for i, candidate in enumerate(bucket):
            if candidate is node:
                del bucket[i]
                break
        return node.value

    def clear(self) -> None:
        """``clear``: empties the bins and keeps the table size."""
        for bucket in self._table:
            bucket.clear()
        self._index.clear()

    def _nodes(self) -> list[_Node[K, V]]:
        return [node for bucket in self._table for node in bucket]

    def __iter__(self) -> Iterator[K]:
        return self.keys()

    def keys(self) -> Iterator[K]:
        """Keys in Java iteration order (a snapshot: safe to remove while iterating)."""
        return iter([n.key for n in self._nodes()])

    def values(self) -> Iterator[V]:
        """Values in Java iteration order."""
        return iter([n.value for n in self._nodes()])

    def items(self) -> Iterator[tuple[K, V]]:
        """Entries in Java iteration order."""
        return iter([(n.key, n.value) for n in self._nodes()])


class JavaHashSet(Generic[K]):
    """``java.util.HashSet``: a ``HashMap`` of the elements."""

    __slots__ = ("_map",)

    def __init__(self, hash_fn: Callable[[K], int], items: Iterable[K] = ()) -> None:
        """Create an empty set (``new HashSet<>()``) and ``add`` each item in order."""
        self._map: JavaHashMap[K, bool] = JavaHashMap(hash_fn)
        for item in items:
            self._map.put(item, True)

    def add(self, item: K) -> bool:
        return self._map.put(item, True) is None

    def remove(self, item: K) -> bool:
        return self._map.remove(item) is not None

    def __contains__(self, item: object) -> bool:
        return item in self._map

    def __len__(self) -> int:
        return len(self._map)

    def __iter__(self) -> Iterator[K]:
        return self._map.keys()

    def first(self) -> K:
        """``iterator().next()``."""
        for bucket in self._map._table:
            if bucket:
                return bucket[0].key
        raise JavaNoSuchElementError("iterator().next() on an empty HashSet")


def java_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of a ``new HashMap<String, ...>()`` filled by ``put`` in ``keys`` order."""
    m: JavaHashMap[str, bool] = JavaHashMap(java_string_hash)
    for key in keys:
        m.put(key, True)
    return list(m.keys())
