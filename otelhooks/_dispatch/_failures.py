"""Whose is an exception raised while a hook's code ran: the hook's failure (which follows its
``on_error``) or the application's (which goes on up)."""

from __future__ import annotations

import signal
import threading

__all__ = ["HookRaised", "failure_text", "hooks_failure"]


class HookRaised(Exception):
    """What a hook raised that is not an ``Exception`` (``SystemExit`` from a script's
    ``sys.exit()``, ``KeyboardInterrupt``, ``BaseException``...), as the hook's failure."""

    def __init__(self, raised: BaseException) -> None:
        super().__init__(f"{type(raised).__name__}: {raised}")
        self.raised = raised


def hooks_failure(exc: BaseException) -> Exception | None:
    """``exc``, raised while a hook's code ran, as that hook's failure (which follows its
    ``on_error``); None when it is the application's and goes on up.

    A hook does not end the process it decides for: its ``sys.exit()`` raised ``SystemExit``
    through the command bridge, which then exited 0 with no answer (an allow, ``on_error:
    block`` and ``--fail-closed`` or not). Only on the main thread can ``KeyboardInterrupt`` and
    ``SystemExit`` be the application's: a signal handler raises them there (Ctrl-C, a SIGTERM
    handler), whatever frame runs; elsewhere only the hook can have raised them. Ctrl-C's
    handler is C code, so a ``KeyboardInterrupt`` there is the application's; a ``SystemExit``
    is only when a Python signal handler raised it (its frame is in the traceback): one a hook
    called inline on the main thread raised ended a dry run (``otelhooks replay``) at exit 0,
    with no report, ``--fail-on error`` or not.
    """
    if isinstance(exc, Exception):
        return exc
    if threading.current_thread() is threading.main_thread() and (
        isinstance(exc, KeyboardInterrupt)
        or (isinstance(exc, SystemExit) and _from_signal_handler(exc))
    ):
        return None
    return HookRaised(exc)


def _from_signal_handler(exc: BaseException) -> bool:
    """Whether a Python signal handler's frame is in ``exc``'s traceback (it raised it)."""
    codes = set()
    for signum in signal.valid_signals():
        try:
            handler = signal.getsignal(signum)
        except (OSError, ValueError):
            continue
        code = getattr(getattr(handler, "__func__", handler), "__code__", None)
        if code is not None:
            codes.add(code)
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code in codes:
            return True
        tb = tb.tb_next
    return False


def failure_text(exc: Exception) -> str:
    """What a failed hook's step says of ``exc``: its class and message."""
    if isinstance(exc, HookRaised):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
