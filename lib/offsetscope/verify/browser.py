"""A report page in a real browser: the distribution's Chromium, headless, no network.

:func:`dump_dom` returns the page's DOM after its scripts ran (plotly draws every chart as SVG,
one ``class="point"`` element per bar or marker); :func:`marks` counts those per chart;
:func:`screenshot` writes a PNG. Each call starts Chromium with a fresh profile folder and the
flags that keep it off the network (no background networking, component updates, sync or QUIC)
and waits for it to exit (at most ``timeout_s``); then its whole process group is killed, so no
browser process outlives the call.

``python -m offsetscope.verify.browser screenshot PAGE.html OUT.png`` (``make
report-screenshot``: the README's picture, from the demo's report).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    # Let the page's scripts (plotly drawing the charts) finish before the DOM is read.
    "--virtual-time-budget=15000",
)


def _run(page: Path, action: Sequence[str], timeout_s: float) -> str:
    profile = Path(tempfile.mkdtemp(prefix="offsetscope-chromium-"))
    argv = [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *action, page.resolve().as_uri()]
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        out, err = "", f"chromium did not finish within {timeout_s:g} s"
    finally:
        # Chromium's helper processes share its process group: none may outlive the call.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        shutil.rmtree(profile, ignore_errors=True)
    if proc.returncode != 0:
        raise RuntimeError(f"chromium failed on {page} ({proc.returncode}): {err[-2000:]}")
    return out


def dump_dom(page: Path, timeout_s: float = 120.0) -> str:
    """The DOM of ``page`` once its scripts ran."""
    return _run(page, ("--dump-dom",), timeout_s)


def screenshot(page: Path, out: Path, *, width: int = 1280, height: int = 2200) -> Path:
    """A PNG of the top ``height`` pixels of ``page``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    _run(page, (f"--screenshot={out.resolve()}", f"--window-size={width},{height}"), 120.0)
    if not out.is_file():
        raise RuntimeError(f"chromium wrote no screenshot of {page}")
    return out


def marks(dom: str, charts: set[str]) -> Counter[str]:
    """Bars and markers per chart: ``class="point"`` elements from a chart's div to the next
    chart's (the charts come one after another in the page, with nothing drawn between)."""
    starts = [
        (m.start(), m.group(1))
        for m in re.finditer(r'<div id="([\w-]+)"', dom)
        if m.group(1) in charts
    ]
    counts: Counter[str] = Counter()
    for (at, chart), (end, _) in zip(starts, [*starts[1:], (len(dom), "")], strict=True):
        counts[chart] = len(re.findall(r'class="point"', dom[at:end]))
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="offsetscope.verify.browser", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    shot = sub.add_parser("screenshot", help="a PNG of a page")
    shot.add_argument("page", type=Path)
    shot.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    print(screenshot(args.page, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
