"""A hook process's own output: apart from its answer, and after it.

A hook process answers its CLI on stdout (the JSON answer) and, for an exit-2 deny, on stderr
(the reason the CLI hands the model). Everything else it writes goes to a memory file instead
(descriptors 1 and 2, ``sys.stdout`` and ``sys.stderr``): the bridge's log lines, a Python
guard's ``print`` to either stream, a warning, a traceback, a child process a guard starts.
:meth:`HookOutput.release` copies what is there to the CLI's stderr once the answer is printed,
and again as the process ends (or ends without an answer). Why:

* order: what the process wrote before the answer came first on stderr, and the model read a
  warning or a guard's debugging where an exit-2 deny's reason should be;
* pipes: a child a guard leaves running (a notifier started with ``subprocess.Popen``)
  inherits descriptors 1 and 2. Were they the CLI's pipes, Claude Code, which waits for a
  hook's pipes to close, waited until the hook's timeout and then ran the tool.

What is written after the last copy (a child still running when the process ended) is read by
nobody, as a CLI reads nothing of a hook after it ended; a process killed loses what it held,
SIGTERM included. Where no memory file can be made, the process's output goes to the CLI's
stderr at once, as before these rules.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import sys
import threading
from typing import TextIO

__all__ = ["HookOutput", "hold"]

_CHUNK = 1 << 20


class HookOutput:
    """The CLI's stdout (:attr:`answer`) and stderr (:attr:`said`), kept for the answer alone,
    and the process's own output, held (:func:`hold` makes it)."""

    def __init__(self, answer: TextIO, said: TextIO, spill: int | None) -> None:
        self.answer, self.said = answer, said
        self._spill, self._copied = spill, 0
        self._lock = threading.Lock()

    def release(self) -> None:
        """Copy what the process wrote since the last copy to the CLI's stderr."""
        for stream in (sys.stdout, sys.stderr):  # what Python still buffers, first
            with contextlib.suppress(OSError, ValueError, AttributeError):
                stream.flush()
        if self._spill is None:
            return
        # a stderr nobody reads any more must not turn the answer into a failure
        with self._lock, contextlib.suppress(OSError, ValueError):
            self.said.flush()
            while chunk := os.pread(self._spill, _CHUNK, self._copied):
                self._copied += len(chunk)
                self.said.buffer.write(chunk)
            self.said.buffer.flush()

    def redirect(self, fd: int) -> None:
        """From now on what is said goes to ``fd`` (a log file, the CLI's stderr gone)."""
        with self._lock:
            with contextlib.suppress(OSError, ValueError):
                self.said.flush()
            os.dup2(fd, self.said.fileno(), inheritable=False)


def hold() -> HookOutput:
    """Keep the CLI's stdout and stderr for the answer, and hold the process's own output
    (see the module's docstring). Called once, as a hook process starts."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    # private copies (``os.dup``'s are not inherited): no child of a guard gets the CLI's pipes
    answer = open(os.dup(1), "w", encoding="utf-8", closefd=True)  # noqa: SIM115 - to the end
    said = open(os.dup(2), "w", encoding="utf-8", closefd=True)  # noqa: SIM115 - to the end
    try:
        spill = os.memfd_create("otelhooks-hook-output")
    except (OSError, AttributeError):
        os.dup2(2, 1)  # no memory file: stdout is stderr, the answer's stream is apart
        sys.stdout = sys.stderr = said
        return HookOutput(answer, said, None)
    # appended to, by every process that shares it, never over each other's text
    fcntl.fcntl(spill, fcntl.F_SETFL, fcntl.fcntl(spill, fcntl.F_GETFL) | os.O_APPEND)
    os.dup2(spill, 1)
    os.dup2(spill, 2)
    own = open(  # noqa: SIM115 - to the end
        1, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False
    )
    sys.stdout = sys.stderr = own
    output = HookOutput(answer, said, spill)
    # registered before any guard's: it runs after theirs, and after the threads they left
    atexit.register(output.release)
    return output
