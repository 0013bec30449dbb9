"""The Java semantics the assignors reproduce: hashes, string order, HashMap iteration order.

Expected values are Java facts derived by hand from the JDK's definitions (``String.hashCode``,
``HashMap``'s bucket index ``(h ^ h >>> 16) & (n - 1)``); ``tests/jvm`` checks the same code
against a real ``java.util.HashMap`` on random operation sequences.
"""

from __future__ import annotations

import pytest

from offsetscope.sim.coordinator.assignors import TopicPartition
from offsetscope.sim.coordinator.java import (
    JavaHashMap,
    JavaHashSet,
    JavaNoSuchElementError,
    JavaOrderUnknownError,
    java_order,
    java_sort_key,
    java_string_hash,
    topic_partition_hash,
)


def test_string_hash_matches_java() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("hello") == 99162322
    # overflow wraps to a negative int32: "polygenelubricants".hashCode() == Integer.MIN_VALUE
    assert java_string_hash("polygenelubricants") == -(2**31)
    # a supplementary character counts as its two UTF-16 units (0xD83D, 0xDE00)
    assert java_string_hash("😀") == 0xD83D * 31 + 0xDE00


def test_topic_partition_hash_matches_java() -> None:
    # 31 * (31 + partition) + topic.hashCode(); "t0".hashCode() = 116 * 31 + 48 = 3644
    assert topic_partition_hash(TopicPartition("t0", 0)) == 961 + 3644
    assert topic_partition_hash(TopicPartition("t0", 5)) == 31 * 36 + 3644


def test_sort_key_orders_like_string_compare_to() -> None:
    # Java compares UTF-16 units: the surrogate 0xD83D of "😀" sorts before U+FFFF,
    # while Python compares code points (U+1F600 > U+FFFF)
    assert sorted(["😀", "\uffff"]) == ["\uffff", "😀"]
    assert sorted(["\uffff", "😀"], key=java_sort_key) == ["😀", "\uffff"]
    assert sorted(["b", "a", "B", "é"], key=java_sort_key) == ["B", "a", "b", "é"]


def test_put_iterates_by_bucket_then_insertion() -> None:
    # buckets (16 slots): "b" -> 2, "BB" and "Aa" -> 0 (same hash, insertion order kept)
    assert java_order(["b", "BB", "Aa"]) == ["BB", "Aa", "b"]
    assert java_order(["b", "Aa", "BB"]) == ["Aa", "BB", "b"]


def test_compute_if_absent_inserts_at_the_head_of_its_bin() -> None:
    m: JavaHashMap[str, int] = JavaHashMap(java_string_hash)
    m.compute_if_absent("Aa", lambda _k: 1)
    m.compute_if_absent("BB", lambda _k: 2)
    assert list(m) == ["BB", "Aa"]
    assert m.compute_if_absent("Aa", lambda _k: 3) == 1


def test_put_resizes_after_inserting_compute_if_absent_before_the_next_insert() -> None:
    # one-character keys hash to their code point: "A".."L" (65..76) sit in buckets 1..12 of
    # both a 16- and a 32-bucket table, "P" (80) in bucket 0 of 16 buckets but 16 of 32
    keys = [chr(c) for c in range(65, 77)] + ["P"]
    put: JavaHashMap[str, int] = JavaHashMap(java_string_hash)
    cia: JavaHashMap[str, int] = JavaHashMap(java_string_hash)
    for k in keys:
        put.put(k, 0)
        cia.compute_if_absent(k, lambda _k: 0)
    # the 13th key passes the threshold of 12: put resizes at once, computeIfAbsent does not
    assert list(put) == [*keys[:12], "P"]
    assert list(cia) == ["P", *keys[:12]]
    put.put("Q", 0)
    cia.compute_if_absent("Q", lambda _k: 0)  # resizes first (13 > 12), then inserts
    assert list(put) == list(cia) == [*keys[:12], "P", "Q"]


def test_remove_keeps_the_order_of_the_rest() -> None:
    m: JavaHashMap[str, int] = JavaHashMap(java_string_hash)
    for k in ["BB", "Aa", "b", "c"]:
        m.put(k, 1)
    assert m.remove("Aa") == 1
    assert m.remove("missing") is None
    assert list(m) == ["BB", "b", "c"]
    m.put("Aa", 2)
    assert list(m) == ["BB", "Aa", "b", "c"]
    m.clear()
    assert list(m) == []
    assert len(m) == 0


def test_long_bins_in_small_tables_resize_and_large_ones_are_refused() -> None:
    blocks = ["Aa", "BB"]
    colliding = [a + b + c + d for a in blocks for b in blocks for c in blocks for d in blocks]
    assert len({java_string_hash(k) for k in colliding}) == 1
    m: JavaHashMap[str, int] = JavaHashMap(java_string_hash)
    for k in colliding[:10]:
        m.put(k, 0)
    # the 9th and 10th colliding keys doubled the table instead of treeifying it (16 -> 64);
    # they still share a bin, so the order is plain insertion order
    assert list(m) == colliding[:10]
    with pytest.raises(JavaOrderUnknownError):
        m.put(colliding[10], 0)


def test_initial_capacity_is_rounded_to_a_power_of_two() -> None:
    # new HashMap<>(33) has 64 buckets: "A" (65) -> 1, "a" (97) and "!" (33) -> 33 in
    # insertion order, "b" (98) -> 34
    m: JavaHashMap[str, int] = JavaHashMap(java_string_hash, 33)
    for k in ["b", "a", "!", "A"]:
        m.put(k, 0)
    assert list(m) == ["A", "a", "!", "b"]


def test_hash_set_first_is_iterator_next() -> None:
    s: JavaHashSet[TopicPartition] = JavaHashSet(topic_partition_hash)
    with pytest.raises(JavaNoSuchElementError):
        s.first()
    s.add(TopicPartition("t0", 3))
    s.add(TopicPartition("t0", 1))
    # hashes 31 * 34 + 3644 = 4698 (bucket 10) and 31 * 32 + 3644 = 4636 (bucket 12)
    assert s.first() == TopicPartition("t0", 3)
    assert s.remove(TopicPartition("t0", 3))
    assert s.first() == TopicPartition("t0", 1)
    assert TopicPartition("t0", 1) in s
    assert len(s) == 1
