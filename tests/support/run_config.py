"""Configurations the streaming tests run the pipeline with."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from offsetscope import config


def segment_run_config(base: config.Config, schema: str, root: Path) -> config.Config:
    """``base`` reading a segment directory in available-now batches into ``schema``."""
    return dataclasses.replace(
        base,
        storage=dataclasses.replace(
            base.storage, schema=schema, checkpoint_dir=str(root / f"checkpoints-{schema}")
        ),
        sources=dataclasses.replace(
            base.sources,
            kind="segments",
            segments=dataclasses.replace(base.sources.segments, max_records_per_trigger=100_000),
        ),
        pipeline=dataclasses.replace(base.pipeline, trigger="available_now"),
    )
