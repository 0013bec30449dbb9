"""Kafka's partitioning of group and transactional ids (``docs/formats.md`` section 10)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetscope.protocol.partitioner import java_string_hash, kafka_abs, partition_for


@pytest.mark.parametrize(
    ("key", "java_hash", "partition"),
    [
        ("my-group", -1906497762, 12),
        ("test-group", 627841412, 12),
        ("group-id", 506313513, 13),
        ("txn-1", 110810510, 10),
        ("", 0, 0),
        ("polygenelubricants", -(2**31), 0),  # Integer.MIN_VALUE: Utils.abs gives 0
        ("😀", 1772899, 49),  # a surrogate pair counts as two UTF-16 code units
    ],
)
def test_reference_values(key: str, java_hash: int, partition: int) -> None:
    assert java_string_hash(key) == java_hash
    assert partition_for(key, 50) == partition


def test_abs_of_min_value_is_zero() -> None:
    assert kafka_abs(-(2**31)) == 0
    assert kafka_abs(-5) == 5


@given(st.text(max_size=30), st.integers(1, 200))
def test_partition_in_range(key: str, partitions: int) -> None:
    assert 0 <= partition_for(key, partitions) < partitions


def test_partition_count_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        partition_for("g", 0)
