"""Config loading: base + environment overlay into frozen dataclasses, errors name the key path."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from offsetscope import config
from offsetscope.config import Config, InvalidConfigError, load


def _write(folder: Path, name: str, text: str) -> None:
    (folder / name).write_text(text)


def test_repository_config_loads() -> None:
    cfg = load("local")
    assert isinstance(cfg, Config)
    assert cfg.env == "local"
    assert cfg.storage.schema == "offsetscope"
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.env = "x"  # type: ignore[misc]


def test_environment_overlays_base(tmp_path: Path) -> None:
    _write(tmp_path, "base.toml", '[storage]\nschema = "a"\nwarehouse_dir = "w"\n')
    _write(tmp_path, "prod.toml", '[storage]\nschema = "ops"\n')
    cfg = load("prod", tmp_path)
    assert cfg.storage.schema == "ops"
    assert cfg.storage.warehouse_dir == "w"


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('[storage]\nschemaa = "x"\n', "storage.schemaa"),
        (
            '[sources.kafka]\nmax_offsets_per_trigger = "many"\n',
            "sources.kafka.max_offsets_per_trigger",
        ),
        ("[sources.kafka]\nmax_offsets_per_trigger = 0\n", "sources.kafka.max_offsets_per_trigger"),
        ('[sources]\nkind = "ftp"\n', "sources.kind"),
        ('[sources.kafka]\nisolation_level = "dirty"\n', "sources.kafka.isolation_level"),
        ("[spark]\nshuffle_partitions = true\n", "spark.shuffle_partitions"),
        ('[pipeline]\nlag_interval = "often"\n', "pipeline.lag_interval"),
        ('[pipeline]\nlag_interval = "0s"\n', "pipeline.lag_interval"),
        ('storage = "flat"\n', "storage"),
    ],
)
def test_bad_config_names_the_key_path(tmp_path: Path, text: str, path: str) -> None:
    _write(tmp_path, "base.toml", text)
    with pytest.raises(InvalidConfigError) as info:
        load("base", tmp_path)
    assert info.value.key_path == path
    assert path in str(info.value)


def test_missing_environment_file(tmp_path: Path) -> None:
    _write(tmp_path, "base.toml", "")
    with pytest.raises(InvalidConfigError, match="does not exist"):
        load("nope", tmp_path)


def test_invalid_toml(tmp_path: Path) -> None:
    _write(tmp_path, "base.toml", "[storage\n")
    with pytest.raises(InvalidConfigError, match="not valid TOML"):
        load("base", tmp_path)


def test_overlays_point_a_loaded_configuration_elsewhere(tmp_path: Path) -> None:
    base = config.load("local")
    seg = config.with_segment_source(base, tmp_path / "logs", max_records_per_trigger=500)
    assert (seg.sources.kind, seg.sources.segments.log_dir) == ("segments", str(tmp_path / "logs"))
    assert seg.sources.segments.max_records_per_trigger == 500
    kafka = config.with_kafka_source(base, "127.0.0.1:1234", isolation_level="read_uncommitted")
    assert kafka.sources.kind == "kafka"
    assert kafka.sources.kafka.bootstrap_servers == "127.0.0.1:1234"
    assert kafka.sources.kafka.isolation_level == "read_uncommitted"
    stored = config.with_storage(base, work_dir=tmp_path, schema="s1")
    assert stored.storage.warehouse_dir == str(tmp_path / "warehouse")
    assert stored.storage.metastore_dir == str(tmp_path / "metastore")
    assert stored.storage.checkpoint_dir == str(tmp_path / "checkpoints")
    assert stored.storage.schema == "s1"
    moved = config.with_storage(stored, checkpoint_dir=tmp_path / "elsewhere")
    assert moved.storage.checkpoint_dir == str(tmp_path / "elsewhere")
    assert moved.storage.warehouse_dir == stored.storage.warehouse_dir
    later = config.with_pipeline(base, trigger="available_now")
    assert later.pipeline.trigger == "available_now"
    assert later.sources == base.sources  # everything else untouched
