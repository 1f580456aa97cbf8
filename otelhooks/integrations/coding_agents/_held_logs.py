"""A hook process's log lines, held until its answer is printed.

A CLI hands an exit-2 deny's stderr to the model as the reason (Codex CLI's deny from
``otelhooks codex``, Claude Code's under ``--deny-mode exit2``). Log lines written before the
answer (a warning about an ``OTELHOOKS_*`` variable, read as the process starts) came first,
and the model read a warning where the reason should be. The one-process bridge writes its log
lines to :data:`LOGS`: they wait until :meth:`HeldLines.release`, called once the answer is
printed (or the process ends without one), and follow it; after that, lines pass straight to
stderr. A process killed loses the lines it held, SIGTERM included (its CLI reads nothing of a
hook it ended).
"""

from __future__ import annotations

import contextlib
import sys
import threading

__all__ = ["LOGS", "HeldLines"]


class HeldLines:
    """A text file for structlog's ``PrintLoggerFactory``: what is written waits for
    :meth:`release`, then goes to the stderr of that moment (``sys.stderr``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: list[str] | None = []

    def write(self, text: str) -> int:
        with self._lock:
            if self._held is not None:
                self._held.append(text)
                return len(text)
        return sys.stderr.write(text)

    def flush(self) -> None:
        with self._lock:
            if self._held is not None:
                return
        sys.stderr.flush()

    def release(self) -> None:
        """Write what waits, once; from now on lines pass straight through."""
        with self._lock:
            held, self._held = self._held, None
            if held:
                # a stderr nobody reads any more must not turn the answer into a failure
                with contextlib.suppress(OSError, ValueError):
                    sys.stderr.write("".join(held))
                    sys.stderr.flush()


LOGS = HeldLines()
