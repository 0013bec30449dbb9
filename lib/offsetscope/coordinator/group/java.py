"""Java ``HashMap`` iteration order for the classic group: see :mod:`offsetscope.coordinator.java`.

The coordinators share one ``String.hashCode`` / ``HashMap`` emulation; this module keeps the
group package's import path.
"""

from __future__ import annotations

from offsetscope.coordinator.java import (
    DEFAULT_CAPACITY,
    LOAD_FACTOR,
    grown_capacity,
    hashmap_order,
    java_string_hash,
    spread,
)

__all__ = [
    "DEFAULT_CAPACITY",
    "LOAD_FACTOR",
    "grown_capacity",
    "hashmap_order",
    "java_string_hash",
    "spread",
]
