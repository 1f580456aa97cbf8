"""uvicorn's httptools protocol (requests parsed in C, not by the pure-Python h11) with a
:class:`~otelhooks._eventlog._guard.ConnectionGuard`'s header and body deadlines and connection
limit.

A module of its own, imported on first use: importing otelhooks does not import uvicorn. The
guard reaches each connection through the server's config (:class:`GuardedConfig`), which
uvicorn hands to every protocol it makes.
"""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from otelhooks._eventlog._guard import MAX_HEAD_BYTES, ConnectionGuard

__all__ = ["GuardedConfig", "GuardedHttpToolsProtocol"]

_DRAIN_S = 1.0
_TOO_LARGE_TEXT = (
    b"The request's headers are larger than this server reads (%d KiB). From a browser that is "
    b"its cookies for this host: pages on other ports of the same host can set them (cookies "
    b"ignore ports). Clear this host's cookies in the browser, then log in again.\n"
) % (MAX_HEAD_BYTES // 1024)
_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8"
    b"\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s"
    % (len(_TOO_LARGE_TEXT), _TOO_LARGE_TEXT)
)
_TOO_LARGE_LOG = (
    f"a request's head passed {MAX_HEAD_BYTES // 1024} KiB: answered 431 and closed (a browser "
    "sending that much holds cookies set by pages on other ports of this host)"
)


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
        self._timer: asyncio.TimerHandle | None = None
        self._timing_body = False  # which deadline the timer holds: the head's or the body's
        self._head_bytes = 0  # of the head arriving (MAX_HEAD_BYTES)
        self.dropped = False
        self.refusing = False  # a head too large was answered 431: the rest is dropped
        # answered before its body was all read (a 413): what comes next is the rest of that
        # body, which the parser reads and drops, not the next request's head
        self._unread_body = False

    def _waiting_for_head(self) -> bool:
        if self._unread_body:
            return False
        return self.cycle is None or self.cycle.response_complete

    def _body_arriving(self) -> bool:
        if self._unread_body:
            return True  # timed as a body: a sender trickling it is dropped at its deadline
        return self.cycle is not None and self.cycle.more_body and not self.cycle.response_complete

    def on_message_complete(self) -> None:
        self._unread_body = False
        super().on_message_complete()

    def _arm(self, body: bool) -> None:
        if self._timer is not None and self._timing_body != body:
            self._disarm()  # the head came whole: the body's deadline starts now
        if self._timer is None:
            timeout = self._guard.body_timeout_s if body else self._guard.header_timeout_s
            self._timer = self.loop.call_later(timeout, self._too_slow)
            self._timing_body = body

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _too_slow(self) -> None:
        self._timer = None
        arriving = self._waiting_for_head() or self._body_arriving()
        if arriving and not self.transport.is_closing():
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
        self._arm(body=False)

    def _refuse_head(self) -> None:
        """A head too large: answer 431, saying why, and close. A browser's own head grows
        past the limit when pages on other ports of its host fill the host's cookie jar
        (cookies ignore ports; Chromium then sent 620 KB of them): a reset alone left the person
        at "connection reset" without a cause, the approvals inbox out of reach."""
        self._guard.too_large += 1
        self.refusing = True
        self.logger.warning(_TOO_LARGE_LOG)
        self.transport.write(_TOO_LARGE)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        # the rest of the head is read and dropped for a moment: closing with it unread
        # resets the connection, and the browser shows the reset, not the answer
        self._disarm()
        self._timer = self.loop.call_later(_DRAIN_S, self.drop)

    def data_received(self, data: bytes) -> None:
        if self.dropped or self.refusing:
            return
        if self._waiting_for_head():
            self._head_bytes += len(data)
        super().data_received(data)
        if self._waiting_for_head():
            if self._head_bytes > MAX_HEAD_BYTES and not self.transport.is_closing():
                self._refuse_head()
                return
            # part of a head (a keep-alive connection's next request: the deadline starts at its
            # first bytes); a request that comes whole, as a client's does, needs no timer at all
            self._arm(body=False)
            return
        self._head_bytes = 0
        if self._body_arriving():
            # not serving yet: a body that trickles in is evicted and timed out as a head is, or
            # a few slow senders would hold every connection and lock the hook route out
            self._arm(body=True)
        else:
            self._disarm()
            self._guard.busy(self)

    def on_response_complete(self) -> None:
        if self.cycle is not None and self.cycle.more_body:
            self._unread_body = True
        super().on_response_complete()
        if self.pipeline:
            # uvicorn reads on as soon as one answer is out: a client pipelining thousands of
            # requests had each read's thousands parsed between two steps of everyone else's
            self.flow.pause_reading()
        if not self.dropped and not self.transport.is_closing():
            self._guard.idle(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if not self.dropped:
            self.dropped = True
            self._guard.open -= 1
            self._guard.closed(self)
        super().connection_lost(exc)
