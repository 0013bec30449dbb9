"""The configuration templates inside the wheel: an installed offsetscope with no conf/ beside it
loads the packaged copy, and ``write_templates`` copies it out.

Builds the wheel and a plain virtual environment (the wheel without its dependencies, plus
pydantic), so it is marked ``slow``; tests/unit/test_config.py checks the lookup order fast.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, os, pathlib
from offsetscope import config
packaged = config.default_conf_dir()
cfg = config.load("prod")
written = config.write_templates(pathlib.Path("mine"))
mine = config.load("dev", pathlib.Path("mine"))
print(json.dumps({
    "conf_dir": str(packaged),
    "package": str(pathlib.Path(config.__file__).parent),
    "root": str(config.project_root()),
    "catalog": cfg.storage.catalog,
    "trigger": cfg.pipeline.processing_time.spark_interval,
    "override": cfg.sources.kafka.bootstrap_servers,
    "written": sorted(p.name for p in written),
    "mine": mine.storage.catalog,
}))
"""


def run(*argv: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_installed_wheel_loads_its_packaged_configuration(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    run(sys.executable, "-m", "build", "--wheel", "--outdir", dist, ROOT, cwd=tmp_path)
    (wheel,) = dist.glob("offsetscope-*.whl")
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    pip = [venv / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    run(*pip, "--no-deps", wheel, cwd=tmp_path)
    run(*pip, "-c", ROOT / "requirements.lock", "pydantic", cwd=tmp_path)

    work = tmp_path / "work"  # no conf/ here, none beside the installed package
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFSETSCOPE")}
    env["OFFSETSCOPE__SOURCES__KAFKA__BOOTSTRAP_SERVERS"] = "kafka.example:9093"
    env.pop("PYTHONPATH", None)
    out = json.loads(run(venv / "bin" / "python", "-c", PROBE, cwd=work, env=env))
    assert Path(out["package"]).is_relative_to(venv)
    assert out["conf_dir"] == str(Path(out["package"]) / "_conf")
    assert Path(out["root"]).resolve() == work.resolve()
    assert (out["catalog"], out["trigger"]) == ("ops", "30 seconds")
    assert out["override"] == "kafka.example:9093"
    assert out["written"] == sorted(
        ["base.toml", "dev.toml", "local.toml", "prod.toml", "yarn.toml", "offsetscope.schema.json"]
    )
    assert out["mine"] == "dev"
    for name in out["written"]:
        assert (work / "mine" / name).read_bytes() == (ROOT / "conf" / name).read_bytes()
