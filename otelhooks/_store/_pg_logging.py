"""psycopg's own log records (its pool's reconnection attempts, discarded connections) through
otelhooks' structured log, instead of Python's last-resort handler on stderr.

Without a handler on the ``psycopg`` logger, every failed reconnection while PostgreSQL is down
printed bare lines to stderr, outside the log format (``--log-json``) an operator collects.
"""

from __future__ import annotations

import logging
import threading

import structlog

__all__ = ["route_psycopg_logs"]

_log = structlog.get_logger("otelhooks")
_installed = threading.Lock()


class _ToStructlog(logging.Handler):
    """Re-logs a record as an otelhooks log line naming the store and the record's logger."""

    def __init__(self, store: str) -> None:
        super().__init__(logging.WARNING)
        self.store = store

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage().splitlines()[0]
        except Exception:  # a record whose arguments do not format: say so, do not raise
            message = str(record.msg)
        level = "error" if record.levelno >= logging.ERROR else "warning"
        _log.log(getattr(logging, level.upper()), message, store=self.store, source=record.name)


def route_psycopg_logs(store: str) -> None:
    """Send the ``psycopg`` loggers' warnings and errors to the otelhooks log (once a process;
    the first store opened is the one named)."""
    logger = logging.getLogger("psycopg")
    with _installed:
        if any(isinstance(h, _ToStructlog) for h in logger.handlers):
            return
        logger.addHandler(_ToStructlog(store))
        logger.propagate = False  # not also to the root logger's (or last-resort) handler
