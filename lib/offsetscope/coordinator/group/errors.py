"""The group coordinator's error codes: the coordinators' shared enum (:mod:`offsetscope.coordinator.errors`).

Kept as an import path for the group package; ``Errors`` here *is* the shared enum.
"""

from __future__ import annotations

from offsetscope.coordinator.errors import ApiError, Errors

__all__ = ["ApiError", "Errors"]
