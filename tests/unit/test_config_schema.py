"""conf/offsetscope.schema.json: generated from the configuration models, named by every TOML
file for editors, and in step with what the loader accepts."""

from __future__ import annotations

import functools
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from offsetscope import config

CONF = Path(__file__).resolve().parents[2] / "conf"
SCHEMA = CONF / config.SCHEMA_FILE
TOML_FILES = sorted(CONF.glob("*.toml"))


def test_committed_schema_is_up_to_date() -> None:
    assert SCHEMA.read_text() == config.schema_text(), (
        f"{SCHEMA} is stale: run `make conf-schema` and commit it"
    )


@pytest.mark.parametrize("path", TOML_FILES, ids=lambda p: p.name)
def test_every_toml_file_names_the_schema_on_its_first_line(path: Path) -> None:
    assert path.read_text().splitlines()[0] == f"#:schema ./{config.SCHEMA_FILE}"


def validator() -> Any:
    jsonschema = pytest.importorskip("jsonschema")
    return _validator(jsonschema)


@functools.cache
def _validator(jsonschema: Any) -> Any:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("path", TOML_FILES, ids=lambda p: p.name)
def test_shipped_files_satisfy_the_schema(path: Path) -> None:
    errors = [e.message for e in validator().iter_errors(tomllib.loads(path.read_text()))]
    assert errors == []


@pytest.mark.parametrize(
    "tree",
    [
        {"sources": {"kafka": {"starting_offsets": "latestt"}}},
        {"pipeline": {"processing_time": "30 seconds"}},
        {"pipeline": {"log_retention": "interval 30 days"}},
        {"storage": {"schemaa": "x"}},
        {"alerts": {"rebalance_storm": {"severity": "urgent"}}},
        {"sources": {"kafka": {"security": {"sasl_password": "literal"}}}},
        {"broker": {"port": 70000}},
    ],
)
def test_the_schema_refuses_what_the_loader_refuses(tree: dict[str, Any], tmp_path: Path) -> None:
    assert list(validator().iter_errors(tree))
    (tmp_path / "base.toml").write_text(_toml(tree))
    with pytest.raises(config.InvalidConfigError):
        config.load("base", tmp_path, environ={})


def _toml(tree: dict[str, Any], prefix: str = "") -> str:
    scalars = {k: v for k, v in tree.items() if not isinstance(v, dict)}
    out = f"[{prefix}]\n" if prefix and scalars else ""
    out += "".join(f"{k} = {json.dumps(v)}\n" for k, v in scalars.items())
    for key, value in tree.items():
        if isinstance(value, dict):
            out += _toml(value, f"{prefix}.{key}" if prefix else key)
    return out
