"""Logging of the processes offsetscope's entry points start, configured from ``[logging]``.

Python's root logger has no handler until someone adds one: records below WARNING then go
nowhere and WARNING and above reach only the interpreter's last-resort handler, unformatted and
unredacted. The ``offsetscope`` command -- and through it ``jobs/ingest.py`` and
``jobs/alerts.py``, which spark-submit, YARN and a Databricks ``python_wheel_task`` run -- calls
:func:`configure` once per process, before its command runs:

* one :class:`StderrHandler` on the root logger (the driver's stderr is what YARN's and
  Databricks' driver logs keep), formatted with ``[logging] format``;
* the root logger at ``[logging] level``, single loggers at ``[logging.loggers]`` levels;
* :class:`offsetscope.redaction.RedactingFilter` on that handler and on any other handler the
  root logger already has (a platform's), so a secret resolved through
  :mod:`offsetscope.secrets` never reaches a log line, whoever logs it.

Calling it again replaces the settings, never adds a second handler.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

from offsetscope import redaction
from offsetscope.config import LoggingConfig

HANDLER_NAME = "offsetscope"

# Loggers the last configuration set a level on: a later one without them puts them back.
_configured: set[str] = set()


class StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A stream handler that writes to whatever ``sys.stderr`` is when a record is emitted, so
    a tool or test that swaps ``sys.stderr`` never leaves it writing to a closed stream."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        # StreamHandler's constructor assigns the stream; the property always answers stderr.
        pass


def configure(settings: LoggingConfig) -> logging.Handler:
    """Install or update the root logger's handler, levels and redaction (module docstring).

    Returns:
        the handler offsetscope writes through.
    """
    root = logging.getLogger()
    handler = next((h for h in root.handlers if h.get_name() == HANDLER_NAME), None)
    if handler is None:
        handler = StderrHandler()
        handler.set_name(HANDLER_NAME)
        root.addHandler(handler)
    handler.setFormatter(logging.Formatter(settings.format))
    root.setLevel(settings.level)
    for name in _configured - set(settings.loggers):
        logging.getLogger(name).setLevel(logging.NOTSET)
    for name, level in settings.loggers.items():
        logging.getLogger(name).setLevel(level)
    _configured.clear()
    _configured.update(settings.loggers)
    redaction.install(root)
    return handler


def unreachable(logger: logging.Logger, level: int) -> tuple[bool, str] | None:
    """Why a record of ``level`` from ``logger`` would be written nowhere, or None if a handler
    writes it.

    Returns:
        ``(silenced, reason)``: ``silenced`` when the configured levels leave the record out on
        purpose, false when no handler would take it (logging is not configured).
    """
    name = logging.getLevelName(level)
    if logger.disabled or not logger.isEnabledFor(level):
        effective = logging.getLevelName(logger.getEffectiveLevel())
        return True, f"logger {logger.name} writes {effective} and above, not {name}"
    # As Logger.callHandlers walks: every handler up the chain until propagation stops; the
    # last-resort handler only when the chain has none at all.
    found = 0
    current: logging.Logger | None = logger
    while current is not None:
        found += len(current.handlers)
        if any(level >= h.level for h in current.handlers):
            return None
        if not current.propagate:
            break
        current = current.parent
    last = logging.lastResort
    if not found and last is not None and level >= last.level:
        return None
    return (
        False,
        f"no log handler takes {name} records of {logger.name} (logging is not configured)",
    )
