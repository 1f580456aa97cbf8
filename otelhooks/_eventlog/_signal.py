"""Waking asyncio long-polls from the thread that appends, at no cost when nobody waits.

A waiter *arms* the signal (on its event loop) before it reads the log, then waits on the
returned ``asyncio.Event`` if the read was empty. ``notify`` runs on the appending thread after
the record is readable: when nothing is armed it is one dict truth test; otherwise it hands
each armed loop one ``call_soon_threadsafe(event.set)`` and disarms. Arming before reading
closes the race: a record appended after the read finds the signal armed, and one appended
before it is seen by the read.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

__all__ = ["AppendSignal"]


class AppendSignal:
    """One-shot, multi-loop wake-up for "a record became readable"."""

    __slots__ = ("_armed", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed: dict[asyncio.AbstractEventLoop, asyncio.Event] = {}

    def arm(self) -> asyncio.Event:
        """The event the next :meth:`notify` sets. Call on a running event loop."""
        loop = asyncio.get_running_loop()
        with self._lock:
            event = self._armed.get(loop)
            if event is None:
                event = self._armed[loop] = asyncio.Event()
            return event

    def notify(self) -> None:
        """Wake every armed waiter. Thread-safe; cheap when nobody is armed."""
        if not self._armed:
            return
        with self._lock:
            armed, self._armed = self._armed, {}
        for loop, event in armed.items():
            # A closed loop raises RuntimeError: its waiters are gone.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(event.set)
