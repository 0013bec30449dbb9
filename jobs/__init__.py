"""Thin entry points: ``main(argv) -> int``, ``--env`` / ``--conf`` only; the work is in lib."""

from __future__ import annotations
