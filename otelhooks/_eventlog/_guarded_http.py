"""uvicorn's httptools protocol (requests parsed in C, not by the pure-Python h11) with a
:class:`~otelhooks._eventlog._guard.ConnectionGuard`'s header deadline and connection limit.

A module of its own, imported on first use: importing otelhooks does not import uvicorn. The
guard reaches each connection through the server's config (:class:`GuardedConfig`), which
uvicorn hands to every protocol it makes.
"""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from otelhooks._eventlog._guard import ConnectionGuard

__all__ = ["GuardedConfig", "GuardedHttpToolsProtocol"]


class GuardedConfig(uvicorn.Config):
    """A uvicorn config serving HTTP with :class:`GuardedHttpToolsProtocol` under ``guard``."""

    def __init__(self, app: Any, *, guard: ConnectionGuard, **kwargs: Any) -> None:
        super().__init__(app, http=GuardedHttpToolsProtocol, **kwargs)
        self.guard = guard


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """One connection, admitted, timed and evicted by its config's guard."""

    def __init__(
        self,
        config: uvicorn.Config,
        server_state: Any,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        if not isinstance(config, GuardedConfig):
            raise TypeError("GuardedHttpToolsProtocol serves a GuardedConfig only")
        self._guard = config.guard
        self._head_timer: asyncio.TimerHandle | None = None
        self.dropped = False

    def _waiting_for_head(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm(self) -> None:
        if self._head_timer is None:
            timeout = self._guard.header_timeout_s
            self._head_timer = self.loop.call_later(timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _too_slow(self) -> None:
        self._head_timer = None
        if self._waiting_for_head() and not self.transport.is_closing():
            self._guard.timed_out += 1
            self.drop()

    def drop(self) -> None:
        """Close now, without a response (evicted, refused or too slow)."""
        if not self.dropped:
            self.dropped = True
            self._guard.open -= 1
            self._guard.closed(self)
        self._disarm()
        self.transport.abort()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self._guard.admit(self):
            self.drop()
            return
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self.dropped:
            return
        super().data_received(data)
        if self._waiting_for_head():
            # part of a head (a keep-alive connection's next request: the deadline starts at its
            # first bytes); a head that comes whole, as a client's does, needs no timer at all
            self._arm()
        else:
            self._disarm()
            self._guard.busy(self)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.dropped and not self.transport.is_closing():
            self._guard.idle(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if not self.dropped:
            self.dropped = True
            self._guard.open -= 1
            self._guard.closed(self)
        super().connection_lost(exc)
