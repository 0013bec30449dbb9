"""Config loading: base + environment overlay into frozen dataclasses, errors name the key path."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

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
