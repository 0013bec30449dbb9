"""The Java semantics the assignors need: see :mod:`offsetscope.coordinator.java`.

The coordinators share one ``String.hashCode`` / ``HashMap`` emulation; this module keeps the
assignors' import path.
"""

from __future__ import annotations

from offsetscope.coordinator.java import (
    JavaHashMap,
    JavaHashSet,
    JavaNoSuchElementError,
    JavaOrderUnknownError,
    java_order,
    java_sort_key,
    java_string_hash,
    topic_partition_hash,
)

__all__ = [
    "JavaHashMap",
    "JavaHashSet",
    "JavaNoSuchElementError",
    "JavaOrderUnknownError",
    "java_order",
    "java_sort_key",
    "java_string_hash",
    "topic_partition_hash",
]
