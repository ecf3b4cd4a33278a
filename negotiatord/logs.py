"""structlog set-up: readable lines on a terminal, JSON lines everywhere else (systemd, files)."""

from __future__ import annotations

import logging
import os
import sys

import structlog


def configure_logging(level: str = "info", json: bool | None = None) -> None:
    """Log to stderr; ``json`` defaults to True unless stderr is a terminal outside systemd."""
    if json is None:
        json = "JOURNAL_STREAM" in os.environ or not sys.stderr.isatty()
    renderer = structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
