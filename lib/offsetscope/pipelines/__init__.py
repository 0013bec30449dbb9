"""Read -> decode -> fold -> write, one module per job; DataFrame in, DataFrame out."""

from __future__ import annotations
