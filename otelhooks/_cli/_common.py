"""What every command shares: exit codes, the short shutdown deadline, early checks."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

from otelhooks._paths import writable_file_problem

__all__ = [
    "CLI_SHUTDOWN_TIMEOUT_S",
    "EXIT_UNDELIVERED",
    "Subcommands",
    "exit_on_sigterm",
    "log_to_stderr",
    "no_such_path",
    "writable_file_problem",
]

# Commands are short-lived: a dead endpoint is reported at the end, not waited for. The
# OTELHOOKS_SHUTDOWN_TIMEOUT variable overrides this default.
CLI_SHUTDOWN_TIMEOUT_S = 2.0

# The run itself went as planned, but a destination accepted none of what it was sent.
EXIT_UNDELIVERED = 3


class Subcommands(Protocol):
    """What a command needs of ``ArgumentParser.add_subparsers()``'s result: a parser of its
    own (the standard library's class for that object, ``argparse._SubParsersAction``, is
    private)."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


def no_such_path(paths: list[str]) -> str | None:
    """The first of ``paths`` that does not exist, as "no such file or directory: PATH"."""
    for path in paths:
        if not Path(path).exists():
            return f"no such file or directory: {path}"
    return None


def log_to_stderr() -> None:
    """Send otelhooks' logs to stderr: a command whose stdout is an answer (a hook bridge, the
    MCP gateway's stdio) must never write a log line there."""
    import structlog

    from otelhooks._logging import configure_logging

    configure_logging()
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=sys.stderr))


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


@contextlib.contextmanager
def exit_on_sigterm() -> Iterator[None]:
    """While inside, SIGTERM ends the process with ``SystemExit`` (its ``finally`` blocks run)
    instead of the default handler's kill. uvicorn handles SIGTERM while it serves and raises
    it again once it has stopped: killed there, a server would end before it closes what it
    owns, and lose the spans its batch processors still hold, the logs' last records and its
    socket file."""
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
