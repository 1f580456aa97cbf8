"""What keeps ``otelhooks serve`` answering under abuse: header and body deadlines, a connection
limit that evicts connections not being served first, and event-loop errors (accept failures)
logged at a bounded rate.

uvicorn's HTTP/1.1 protocol has a keep-alive timeout but no deadline for a request's headers: a
client that connects and sends nothing (or one byte a minute) holds a file descriptor for as
long as it likes, and 20,000 of them exhaust the process's descriptors, after which every
``accept`` fails and a real client is locked out. Here:

- **Header deadline.** A connection must deliver a whole request head within
  ``header_timeout_s`` of connecting (or of its previous response, on keep-alive), else it is
  closed. Bytes that trickle in do not extend it.
- **Body deadline.** A request's body must arrive whole within ``body_timeout_s`` of its head,
  else the connection is closed (no answer: the client stopped sending). One rule for every
  route, ``/v1/logs``, the hook route and the web pages alike.
- **Head size.** A request head (request line and headers) larger than
  :data:`MAX_HEAD_BYTES` is answered 431, saying why, and its connection closed (the rest of
  the head read and dropped for a second): the HTTP parser buffers a head whole, so one
  connection sending headers as fast as it can grew the process by about 95 MB within the head's
  deadline.
- **Connection limit.** At most ``max_connections`` connections are open. A new connection
  beyond the limit closes the *oldest idle* one (not being served: idle keep-alive, still
  waiting for its headers, or its body still arriving); only when every connection is serving a
  whole request is the new one closed instead. A real client, which sends its request as soon
  as it connects, is therefore served even while thousands of idle sockets, or sockets dripping
  a body a byte at a time, keep arriving.
- **Loop errors.** ``accept`` failures (``EMFILE``) and other event-loop errors are logged at
  most once per second, with the count of lines held back; so are the HTTP server's own
  warnings (``Invalid HTTP request received.``, one per garbage request otherwise).

Example (what :class:`~otelhooks.EventLogServer` does for its own server; the protocol is in
:mod:`otelhooks._eventlog._guarded_http`, which imports uvicorn):
    >>> from otelhooks._eventlog._guard import ConnectionGuard
    >>> from otelhooks._eventlog._guarded_http import GuardedConfig
    >>> async def app(scope, receive, send): ...
    >>> guard = ConnectionGuard(max_connections=1000, header_timeout_s=10)
    >>> config = GuardedConfig(app, guard=guard, host="127.0.0.1", port=0)
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections import OrderedDict
from typing import Any

import structlog

from otelhooks._serve_limits import DEFAULT_BODY_TIMEOUT_S, DEFAULT_HEADER_TIMEOUT_S

__all__ = [
    "DEFAULT_BODY_TIMEOUT_S",
    "DEFAULT_HEADER_TIMEOUT_S",
    "MAX_HEAD_BYTES",
    "ConnectionGuard",
    "RateLimitedLog",
    "RateLimitedLoopErrors",
    "limit_server_log",
]

# what no client of serve sends in a head: a browser's stays under 16 KiB unless pages on other
# ports of its host filled its cookie jar (then it is answered 431, saying so: _guarded_http)
MAX_HEAD_BYTES = 64 * 1024

_log = structlog.get_logger("otelhooks")


def default_max_connections() -> int:
    """Half the process's descriptor limit (the rest: logs, SQLite, hook processes), capped at
    4,096 and at least 64."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 4096
    return max(64, min(4096, soft // 2))


class ConnectionGuard:
    """The connection limit and deadlines shared by one server's connections.

    Args:
        max_connections: open connections allowed (see the module docstring for who gives way).
        header_timeout_s: time a connection has to deliver a request head.
        body_timeout_s: time a request's body has to arrive once its head did.
    """

    def __init__(
        self,
        *,
        max_connections: int | None = None,
        header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S,
        body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
    ) -> None:
        if max_connections is not None and max_connections <= 0:
            raise ValueError("max_connections must be positive")
        if header_timeout_s <= 0 or body_timeout_s <= 0:
            raise ValueError("header_timeout_s and body_timeout_s must be positive")
        self.max_connections = max_connections or default_max_connections()
        self.header_timeout_s = header_timeout_s
        self.body_timeout_s = body_timeout_s
        self.open = 0
        self.evicted = 0
        self.refused = 0
        self.timed_out = 0
        self.too_large = 0
        self._idle: OrderedDict[Any, None] = OrderedDict()

    # -- called by the protocol ------------------------------------------------------------------

    def admit(self, conn: Any) -> bool:
        self.open += 1
        if self.open > self.max_connections:
            if self._idle:
                oldest, _ = self._idle.popitem(last=False)
                self.evicted += 1
                oldest.drop()
            else:
                self.refused += 1
                return False
        self._idle[conn] = None
        return True

    def busy(self, conn: Any) -> None:
        self._idle.pop(conn, None)

    def idle(self, conn: Any) -> None:
        if not conn.dropped:
            self._idle[conn] = None
            self._idle.move_to_end(conn)

    def closed(self, conn: Any) -> None:
        self._idle.pop(conn, None)


class RateLimitedLoopErrors:
    """An event-loop exception handler that logs at most one line per ``interval_s``.

    A process out of descriptors fails ``accept`` for every waiting connection; asyncio's default
    handler writes a traceback for each (200 MB of log in 40 s). Here the first error of each
    interval is logged with the number held back since the last line.
    """

    def __init__(self, interval_s: float = 1.0) -> None:
        self.interval_s = interval_s
        self.suppressed = 0
        self.total = 0
        self._last = -float("inf")

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        self.total += 1
        now = time.monotonic()
        if now - self._last < self.interval_s:
            self.suppressed += 1
            return
        held, self.suppressed, self._last = self.suppressed, 0, now
        exc = context.get("exception")
        _log.error(
            "event loop error",
            message=context.get("message", ""),
            error=f"{type(exc).__name__}: {exc}" if exc is not None else None,
            suppressed_since_last=held,
        )


class RateLimitedLog(logging.Filter):
    """A logging filter that lets each message through at most once per ``interval_s``; the next
    one that passes says how many were held back."""

    def __init__(self, interval_s: float = 1.0) -> None:
        super().__init__()
        self.interval_s = interval_s
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = str(record.msg)
        now = time.monotonic()
        if now - self._last.get(key, -float("inf")) < self.interval_s:
            self._held[key] = self._held.get(key, 0) + 1
            return False
        self._last[key] = now
        held = self._held.pop(key, 0)
        if held:
            record.msg = f"{record.getMessage()} ({held} more held back)"
            record.args = ()
        return True


def limit_server_log() -> None:
    """Rate-limit the HTTP server's own log (``uvicorn.error``); idempotent."""
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, RateLimitedLog) for f in logger.filters):
        logger.addFilter(RateLimitedLog())
