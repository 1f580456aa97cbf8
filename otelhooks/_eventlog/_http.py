"""The ASGI app: ``GET /v1/events`` (the admin event log API) and ``POST /v1/traces`` (OTLP/HTTP).

Both routes need ``Authorization: Bearer <token>``: none (or another scheme) is 401, a wrong
token 403, and neither reveals anything. Tokens are compared with :func:`hmac.compare_digest`.

``/v1/events`` answers ``mode=drain|events|version`` at once and ``mode=wait`` as a long-poll
that returns as soon as a record after ``since`` exists (woken through the log's
:class:`~otelhooks._eventlog._signal.AppendSignal`) or empty at ``timeout``. The long-polls of
one cursor woken together share one read and one encoded answer
(:mod:`~otelhooks._eventlog._shared_read`). At most ``max_waiters`` long-polls wait at a time;
one more gets 503 with ``Retry-After: 1``.
``/v1/traces`` is :class:`~otelhooks._eventlog._ingest.OtlpIngest`.

A route that meets a store which cannot answer right now (PostgreSQL restarting:
:class:`~otelhooks._store._errors.StoreUnavailable`) answers ``503`` with ``Retry-After``, its
``error`` ``store_busy`` when the store answers but this change waited too long (a lock, serve's
own pool all in use) and ``store_unavailable`` otherwise; another store error is a ``500``
naming the store.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from typing import Any

import structlog
from opentelemetry.sdk.trace import SpanProcessor

from otelhooks._eventlog._asgi import (
    Receive,
    Scope,
    Send,
    check_auth,
    header,
    respond,
    send_json,
    send_otlp_error,
)
from otelhooks._eventlog._ingest import DEFAULT_MAX_BODY_BYTES, OtlpIngest
from otelhooks._eventlog._model import EventBatch, EventLog, LogStats
from otelhooks._eventlog._otlp_status import answer_type
from otelhooks._eventlog._params import BadParameter, EventsQuery, parse_query
from otelhooks._eventlog._shared_read import SharedBatch, SharedReads
from otelhooks._serve_limits import DEFAULT_MAX_WAITERS
from otelhooks._store._errors import StoreError, StoreUnavailable, error_reason

__all__ = ["DEFAULT_MAX_WAITERS", "EventLogApp", "Route"]

# OTLP/HTTP routes: their failures are google.rpc.Status bodies (opentelemetry-proto's
# specification); the other routes answer otelhooks' own JSON errors
_OTLP_PATHS = frozenset({"/v1/traces", "/v1/logs", "/v1/metrics"})

_log = structlog.get_logger("otelhooks")

Route = Callable[[Scope, Receive, Send], Awaitable[None]]


class EventLogApp:
    """The ASGI application (``uvicorn`` or any ASGI server runs it).

    Args:
        logs: the served logs by name (``log=`` selects one; optional when there is one).
        token: the admin bearer token for ``/v1/events``.
        ingest_token: the bearer token for ``/v1/traces``; the admin token when omitted.
        span_processors: what received spans are fed to (``on_end``), in order.
        max_waiters: long-polls allowed to wait at the same time.
        max_body_bytes: largest OTLP body accepted, before and after gunzip (else 413).
        routes: more ``POST`` routes by path (``/v1/logs``, ``/v1/hooks/claude-code``...),
            each an ASGI handler called once the ingest token was checked; one with an async
            ``refused(receive, send, status, body)`` method answers a missing or refused token
            itself (``status`` and ``body`` are the app's answer).
        fallback: the handler of every other path (the web view), which checks its own auth.
    """

    def __init__(
        self,
        logs: Mapping[str, EventLog],
        *,
        token: str,
        ingest_token: str | None = None,
        span_processors: Sequence[SpanProcessor] = (),
        max_waiters: int = DEFAULT_MAX_WAITERS,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        routes: Mapping[str, Route] | None = None,
        fallback: Route | None = None,
    ) -> None:
        if not token:
            raise ValueError("the event log API needs an admin token")
        self.logs = dict(logs)
        self.ingest = OtlpIngest(
            span_processors, max_body_bytes=max_body_bytes, logs=list(self.logs.values())
        )
        self.max_waiters = max_waiters
        self.routes = dict(routes or {})
        self.fallback = fallback
        self._token = token.encode()
        self._ingest_token = (ingest_token or token).encode()
        self._waiting = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing: asyncio.Event | None = None
        self._reads = SharedReads()

    @property
    def waiting(self) -> int:
        """Long-polls waiting right now."""
        return self._waiting

    def close_threadsafe(self) -> None:
        """End every waiting long-poll now (they answer empty); used before the server stops."""
        loop, closing = self._loop, self._closing
        if loop is not None and closing is not None and not loop.is_closed():
            loop.call_soon_threadsafe(closing.set)

    def _bind(self) -> asyncio.Event:
        if self._closing is None or self._loop is not asyncio.get_running_loop():
            self._loop = asyncio.get_running_loop()
            self._closing = asyncio.Event()
            self._reads = SharedReads()
        return self._closing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._dispatch(scope, receive, send)
            return
        started = False

        async def tracked(message: MutableMapping[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._dispatch(scope, receive, tracked)
        except StoreError as exc:
            _log.warning("store error answering a request", path=scope["path"], error=str(exc))
            if started:  # the answer is on its way: the client sees a cut response
                raise
            status, reason = (503, error_reason(exc))
            retry: list[tuple[bytes, bytes]] = []
            if isinstance(exc, StoreUnavailable):
                retry = [(b"retry-after", str(exc.retry_after_s).encode())]
            else:
                status = 500
            otlp = scope["path"] in _OTLP_PATHS
            body = {"error": reason, "message": str(exc)}
            await self._refuse(scope, send, otlp, status, body, retry)

    async def _dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path, method = scope["path"], scope["method"]
        if path == "/v1/events":
            allowed, token = "GET", self._token
        elif path == "/v1/traces" or path in self.routes:
            allowed, token = "POST", self._ingest_token
        elif self.fallback is not None:
            await self.fallback(scope, receive, send)
            return
        else:
            await send_json(send, 404, {"error": "not_found", "message": f"no route {path[:80]}"})
            return
        otlp = path in _OTLP_PATHS
        if method != allowed:
            body = {"error": "method_not_allowed", "message": f"use {allowed}"}
            await self._refuse(scope, send, otlp, 405, body, [(b"allow", allowed.encode())])
            return
        denied = check_auth(header(scope, b"authorization"), token)
        if denied is not None:
            # a route whose client takes this refusal for "no objection" answers it its own way
            refused = getattr(self.routes.get(path), "refused", None)
            if refused is not None:
                await refused(receive, send, *denied)
            else:
                await self._refuse(scope, send, otlp, *denied)
            return
        if path == "/v1/events":
            await self._events(scope, receive, send)
        elif path in self.routes:
            await self.routes[path](scope, receive, send)
        else:
            await self.ingest.handle(scope, receive, send)

    @staticmethod
    async def _refuse(
        scope: Scope,
        send: Send,
        otlp: bool,
        status: int,
        body: dict[str, Any],
        headers: Sequence[tuple[bytes, bytes]] = (),
    ) -> None:
        if not otlp:
            await send_json(send, status, body, headers)
            return
        ctype = answer_type(header(scope, b"content-type"))
        await send_otlp_error(send, status, ctype, body["error"], body["message"], headers)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._bind()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._closing is not None:
                    self._closing.set()
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- GET /v1/events ----------------------------------------------------------------------

    async def _events(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            query = parse_query(scope.get("query_string", b"").decode("latin-1"), self.logs)
        except BadParameter as exc:
            body = {"error": "bad_parameter", "parameter": exc.parameter, "message": exc.message}
            await send_json(send, 400, body)
            return
        log = self.logs[query.log]
        if query.mode == "version":
            # a shared store's head is a round trip: off the loop, as its reads are
            stats = await asyncio.to_thread(log.stats) if log.blocking_stats else log.stats()
            await send_json(send, 200, _version_body(log, stats, query.since))
            return
        if query.mode != "wait":
            batch = await _read(log, query, newest=query.mode == "events")
            await send_json(send, 200, _batch_body(query, log, batch))
            return
        waited = await self._long_poll(log, query, receive, send)
        if waited is not None:
            encoded = waited.encoded(lambda batch: _batch_body(query, log, batch))
            await respond(send, 200, encoded, b"application/json")

    async def _long_poll(
        self, log: EventLog, query: EventsQuery, receive: Receive, send: Send
    ) -> SharedBatch | None:
        """The batch to answer with; ``None`` when the answer was already sent (503) or the
        client went away."""
        loop = asyncio.get_running_loop()
        closing = self._bind()
        reads, key = self._reads, (query.log, query.since, query.limit)

        def read() -> Awaitable[EventBatch]:
            return _read(log, query, newest=False)

        deadline = loop.time() + query.timeout
        tasks: list[asyncio.Future[Any]] = []
        holding = False
        try:
            while True:
                woken = log.signal.arm()  # before reading: see the module doc of _signal
                shared = await reads.read(key, read)
                batch = shared.batch
                remaining = deadline - loop.time()
                if batch.records or query.since > batch.head or closing.is_set():
                    return shared
                if remaining <= 0:
                    return SharedBatch(dataclasses.replace(batch, timed_out=True))
                if not holding:
                    if self._waiting >= self.max_waiters:
                        body = {
                            "error": "too_many_waiters",
                            "message": f"at most {self.max_waiters} long-polls may wait at once",
                        }
                        await send_json(send, 503, body, [(b"retry-after", b"1")])
                        return None
                    self._waiting += 1
                    holding = True
                    tasks += [
                        asyncio.ensure_future(_disconnected(receive)),
                        asyncio.ensure_future(closing.wait()),
                    ]
                wake = asyncio.ensure_future(woken.wait())
                try:
                    done, _ = await asyncio.wait(
                        [wake, *tasks], timeout=remaining, return_when=asyncio.FIRST_COMPLETED
                    )
                finally:
                    wake.cancel()
                if tasks[0] in done:
                    return None
        finally:
            if holding:
                self._waiting -= 1
            for task in tasks:
                task.cancel()


async def _read(log: EventLog, query: EventsQuery, *, newest: bool) -> EventBatch:
    if log.durable:  # SQLite reads go to a thread: the event loop never waits for the disk
        return await asyncio.to_thread(log.read, query.since, query.limit, newest=newest)
    return log.read(query.since, query.limit, newest=newest)


def _batch_body(query: EventsQuery, log: EventLog, batch: EventBatch) -> dict[str, Any]:
    return {
        "mode": query.mode,
        "log": log.name,
        "epoch": batch.epoch,
        "since": batch.since,
        "next_since": batch.next_since,
        "head": batch.head,
        "oldest": batch.oldest,
        "has_more": batch.has_more,
        "dropped_window": batch.dropped_window,
        "timed_out": batch.timed_out,
        "events": [record.to_json() for record in batch.records],
    }


def _version_body(log: EventLog, stats: LogStats, since: int) -> dict[str, Any]:
    dropped = max(0, stats.oldest - since - 1) if stats.oldest and since < stats.head else 0
    return {
        "mode": "version",
        "log": log.name,
        "epoch": log.epoch,
        "version": stats.head,
        "since": since,
        "next_since": since,
        "head": stats.head,
        "oldest": stats.oldest,
        "has_more": stats.head > since,
        "dropped_window": dropped,
        "timed_out": False,
        "durable": log.durable,
        "appended": stats.appended,
        "append_dropped": stats.dropped,
        "events": [],
    }


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
