"""A hook process's own output, held until its answer is printed.

A CLI hands an exit-2 deny's stderr to the model as the reason (Codex CLI's deny from
``otelhooks codex``, Claude Code's under ``--deny-mode exit2``). What the process wrote before the
answer came first, and the model read it where the reason should be: a warning about an
``OTELHOOKS_*`` variable (read as the process starts), or a Python guard's own ``print`` (its
stdout is the process's stderr, to keep the answer alone on stdout). The one-process bridge's log
lines and ``sys.stdout`` are :data:`HELD`: what is written there waits until :func:`release`,
called once the answer is printed (or the process ends without one), and follows it in the order
written; after that, writes pass straight to stderr. A process killed loses what it held, SIGTERM
included (its CLI reads nothing of a hook it ended).

Only what goes through Python's ``sys.stdout`` (or the log) is held: a child process a guard
starts on the inherited descriptor 1 writes to the process's stderr at once.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading

__all__ = ["HELD", "release"]


class _Held(io.RawIOBase):
    """Bytes kept until :meth:`release`, then written to descriptor 2. A raw stream under a
    standard text wrapper, so that :data:`HELD` is every kind of stdout a guard may use
    (``print``, ``.buffer``, ``fileno()`` for a child, ``encoding``)."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._held: list[bytes] | None = []

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return 2

    def isatty(self) -> bool:
        return os.isatty(2)

    def write(self, data: object) -> int:
        chunk = bytes(memoryview(data))  # type: ignore[arg-type]  # bytes-like, as io passes
        with self._lock:
            if self._held is not None:
                self._held.append(chunk)
                return len(chunk)
        _to_stderr(chunk)
        return len(chunk)

    def release(self) -> None:
        with self._lock:
            held, self._held = self._held, None
        if held:
            # a stderr nobody reads any more must not turn the answer into a failure
            with contextlib.suppress(OSError, ValueError):
                _to_stderr(b"".join(held))


def _to_stderr(data: bytes) -> None:
    sys.stderr.flush()  # what the process wrote there itself comes first
    view = memoryview(data)
    while view:
        view = view[os.write(2, view) :]


_RAW = _Held()
HELD = io.TextIOWrapper(
    io.BufferedWriter(_RAW), encoding="utf-8", errors="backslashreplace", line_buffering=True
)


def release() -> None:
    """Write what waits, once; from now on what is written to :data:`HELD` passes through."""
    with contextlib.suppress(OSError, ValueError):
        HELD.flush()
    _RAW.release()
