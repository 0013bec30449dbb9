"""The scenario catalogue: ``*.toml`` files shipped as package data next to this module.

``offsetscope simulate NAME`` finds ``NAME.toml`` here; :func:`names` lists them. The files are
read through ``importlib.resources`` so they work from an editable install and from a wheel
(which must list ``scenarios/catalogue/*.toml`` as package data).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def _folder() -> Path:
    return Path(str(resources.files(__name__)))


def names() -> list[str]:
    """Names of the catalogue scenarios, sorted."""
    return sorted(p.stem for p in _folder().glob("*.toml"))


def catalogue_path(name: str) -> Path | None:
    """The file of catalogue scenario ``name``, or None when there is none."""
    path = _folder() / f"{name}.toml"
    return path if path.is_file() else None
