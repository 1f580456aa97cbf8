"""``Asker``: the client a held call's approvals are asked for, which may stop waiting first.

serve's Claude Code route, the bridge daemon and the one-process bridge hold a client's request
while an ``approval:`` hook asks a person. When that client goes away (its connection closed,
its process killed), the cards asked for it are withdrawn, so nobody approves a call its client
no longer waits for (the inbox, :mod:`otelhooks._actions._approval_inbox`, keeps the cards).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator

__all__ = ["Asker"]


class Asker:
    """The client a call's approvals are asked for, which may stop waiting before the hook does.

    A server that holds a client's request while its hooks ask a person (serve's Claude Code
    route) runs the hooks inside :meth:`asking`; each approval asked there is withdrawn when
    :meth:`gone` says the client went away (its connection closed: its own timeout passed, or
    it was interrupted). The hook still waits for its answer (the withdrawal, a deny), but no
    person approves a call its client no longer waits for.
    """

    _current: contextvars.ContextVar[Asker | None] = contextvars.ContextVar(
        "otelhooks_asker", default=None
    )

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._gone = False
        self._withdraws: list[Callable[[], object]] = []

    @contextlib.contextmanager
    def asking(self) -> Iterator[None]:
        """Approvals asked inside (on this thread, and in contexts copied from it) are held
        for this client."""
        token = Asker._current.set(self)
        try:
            yield
        finally:
            Asker._current.reset(token)

    def gone(self) -> int:
        """The client went away: withdraw what is asked for it now and from now on; returns
        how many were waiting."""
        with self._lock:
            self._gone = True
            withdraws, self._withdraws = self._withdraws, []
        for withdraw in withdraws:
            withdraw()
        return len(withdraws)

    @staticmethod
    @contextlib.contextmanager
    def holding(withdraw: Callable[[], object]) -> Iterator[None]:
        """Inside, ``withdraw`` is called if the current client (if any) goes away."""
        asker = Asker._current.get()
        if asker is None:
            yield
            return
        with asker._lock:
            gone = asker._gone
            if not gone:
                asker._withdraws.append(withdraw)
        if gone:
            withdraw()
        try:
            yield
        finally:
            with asker._lock, contextlib.suppress(ValueError):
                asker._withdraws.remove(withdraw)
