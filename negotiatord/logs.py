"""structlog set-up: readable lines on a terminal, JSON lines everywhere else (systemd, files)."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TextIO

import structlog


class RotatingLog:
    """A daemon's log file, as HTCondor keeps one: appended to, and once it would pass
    ``max_bytes`` renamed ``<name>.old`` (one old file, as ``MAX_NUM_<SUBSYS>_LOG`` defaults to)
    and begun anew. The process's standard error goes to it too, so that anything written there
    lands in the log."""

    def __init__(self, path: Path, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._file = self._open()

    def _open(self) -> TextIO:
        handle = open(self.path, "a", buffering=1, encoding="utf-8")
        os.dup2(handle.fileno(), sys.stderr.fileno())
        return handle

    def write(self, text: str) -> int:
        if self._file.tell() + len(text) > self.max_bytes > 0:
            self._file.close()
            os.replace(self.path, f"{self.path}.old")
            self._file = self._open()
        return self._file.write(text)

    def flush(self) -> None:
        self._file.flush()


def configure_logging(level: str = "info", json: bool | None = None, file: TextIO | RotatingLog | None = None) -> None:
    """Log to ``file`` (default stderr); ``json`` defaults to True unless the log is a terminal
    outside systemd."""
    target = file if file is not None else sys.stderr
    if json is None:
        json = "JOURNAL_STREAM" in os.environ or file is not None or not sys.stderr.isatty()
    renderer = structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=target),   # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )
