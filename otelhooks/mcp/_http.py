"""The Streamable HTTP transport: the gateway listens where the client connects and forwards to
the upstream server's MCP endpoint.

``POST`` bodies are read by the session (hooks may answer a call themselves); what goes upstream
is the body as it came unless a hook rewrote it. Upstream answers stream back as they arrive:
a JSON body, or server-sent events passed through event by event (each event's bytes unchanged
unless a hook changed its message). ``GET`` (the server's own stream) and ``DELETE`` (end of
session) are relayed the same way. Sessions are told apart by ``Mcp-Session-Id``.

When the upstream cannot be reached or drops a stream, each request still waiting gets a
JSON-RPC error naming the problem; an HTTP error status of the upstream passes through as is.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import httpx
import structlog

from otelhooks.mcp._gateway import McpGateway, McpSession, Relay
from otelhooks.mcp._jsonrpc import encode, parse
from otelhooks.mcp._sse import events, frame_event, with_data

__all__ = ["McpHttpProxy", "run_http"]

_log = structlog.get_logger("otelhooks.mcp")

SESSION_HEADER: Final = "mcp-session-id"
# Not forwarded in either direction: hop-by-hop, or recomputed for the new connection.
_HOP: Final = frozenset(
    {
        "host",
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "content-encoding",
        "accept-encoding",
    }
)

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class McpHttpProxy:
    """An ASGI application: the gateway in front of the Streamable HTTP server at ``upstream``.

    Args:
        gateway: hooks and spans.
        upstream: the server's MCP endpoint URL.
        headers: sent upstream with every request (already resolved from their templates).
        client: the HTTP client to the upstream (one of its own when omitted).

    Example:
        >>> import uvicorn
        >>> app = McpHttpProxy(gateway, "http://127.0.0.1:8000/mcp")  # doctest: +SKIP
        >>> uvicorn.run(app, host="127.0.0.1", port=9000)  # doctest: +SKIP
    """

    def __init__(
        self,
        gateway: McpGateway,
        upstream: str,
        *,
        headers: Mapping[str, str] | None = None,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.gateway = gateway
        self.upstream = upstream
        self.headers = dict(headers or {})
        self.client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(30.0, read=None), follow_redirects=False
        )
        self.sessions: dict[str | None, McpSession] = {}

    async def aclose(self) -> None:
        for session in self.sessions.values():
            session.close()
        self.sessions.clear()
        await self.client.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        method = scope["method"]
        request_headers = _headers(scope)
        session_id = request_headers.get(SESSION_HEADER)
        if method == "POST":
            body = await _body(receive)
            fresh = session_id is None and parse(body).method == "initialize"
            session = self.gateway.session() if fresh else self._session(session_id)
            await self._post(session, body, request_headers, send)
        elif method in ("GET", "DELETE"):
            session = self._session(session_id)
            await self._forward(session, method, b"", request_headers, send, receive=receive)
            if method == "DELETE":
                self.sessions.pop(session_id, None)
                session.close()
        else:
            await _respond(send, 405, b"", {"allow": "GET, POST, DELETE"})

    def _session(self, session_id: str | None) -> McpSession:
        session = self.sessions.get(session_id)
        if session is None or session.closed:
            session = self.sessions[session_id] = self.gateway.session(session_id)
        return session

    async def _post(
        self, session: McpSession, body: bytes, headers: dict[str, str], send: Send
    ) -> None:
        relay = session.from_client(body)
        while relay.later is not None:
            done = await relay.later
            relay = Relay(relay.to_server + done.to_server, relay.to_client + done.to_client)
        if not relay.to_server:  # hooks answered (denied or mocked), or the call was cancelled
            if relay.to_client:
                await _respond(send, 200, relay.to_client[0], {"content-type": "application/json"})
            else:
                await _respond(send, 202, b"", {})
            return
        await self._forward(
            session, "POST", relay.to_server[0], headers, send, extra=relay.to_client
        )

    async def _forward(
        self,
        session: McpSession,
        method: str,
        body: bytes,
        headers: dict[str, str],
        send: Send,
        *,
        extra: list[bytes] | None = None,
        receive: Receive | None = None,
    ) -> None:
        out = {k: v for k, v in headers.items() if k not in _HOP}
        out.update((k.lower(), v) for k, v in self.headers.items())  # configured ones win
        request = self.client.build_request(method, self.upstream, content=body, headers=out)
        try:
            response = await self.client.send(request, stream=True)
        except httpx.HTTPError as exc:
            await self._unreachable(session, body, send, f"cannot reach the MCP server: {exc}")
            return
        try:
            await self._relay(session, body, response, send, extra or [], receive)
        finally:
            await response.aclose()

    async def _relay(
        self,
        session: McpSession,
        body: bytes,
        response: httpx.Response,
        send: Send,
        extra: list[bytes],
        receive: Receive | None,
    ) -> None:
        new_id = response.headers.get(SESSION_HEADER)
        if self.sessions.get(new_id) is not session:  # a new session: keep it by its id
            self.sessions[new_id] = session
            if new_id:
                session.rename(new_id)
        back = {k: v for k, v in response.headers.items() if k.lower() not in _HOP}
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if response.status_code >= 400:
            reason = f"the MCP server answered HTTP {response.status_code}"
            session.fail(body, reason, error_type=str(response.status_code))
            await _respond(send, response.status_code, await response.aread(), back)
            return
        if kind == "application/json":
            frames = await _frames(session, await response.aread())
            merged = _merge(frames + extra)
            await _respond(send, response.status_code, merged, back)
            return
        if kind != "text/event-stream":  # 202 Accepted and friends
            await _respond(send, response.status_code, await response.aread(), back)
            return
        await send({"type": "http.response.start", "status": response.status_code,
                    "headers": _raw_headers(back)})  # fmt: skip
        for frame in extra:
            await send(
                {"type": "http.response.body", "body": frame_event(frame), "more_body": True}
            )
        stream = self._stream(session, body, response, send)
        if receive is None:
            await stream
        else:  # a GET stream lasts until the client leaves: stop reading upstream then
            await _until_disconnect(stream, receive)
        with contextlib.suppress(Exception):
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _stream(
        self, session: McpSession, body: bytes, response: httpx.Response, send: Send
    ) -> None:
        try:
            async for event in events(response.aiter_raw()):
                out = event.raw
                if event.data is not None and event.data.strip():
                    frames = await _frames(session, event.data)
                    if frames != [event.data]:
                        out = b"".join(with_data(event, f) for f in frames)
                await send({"type": "http.response.body", "body": out, "more_body": True})
        except httpx.HTTPError as exc:
            reason = f"the MCP server dropped the stream: {exc}"
            _log.error("upstream stream failed", error=str(exc))
            for answer in session.fail(body, reason, error_type="server_disconnected"):
                await send(
                    {"type": "http.response.body", "body": frame_event(answer), "more_body": True}
                )

    async def _unreachable(self, session: McpSession, body: bytes, send: Send, reason: str) -> None:
        _log.error("upstream unreachable", upstream=self.upstream, error=reason)
        answers = session.fail(body, reason, error_type="server_unreachable")
        if answers:
            await _respond(send, 200, _merge(answers), {"content-type": "application/json"})
        else:
            await _respond(send, 502, reason.encode(), {"content-type": "text/plain"})


async def _frames(session: McpSession, data: bytes) -> list[bytes]:
    relay = session.from_server(data)
    frames = list(relay.to_client)
    if relay.later is not None:
        frames = [*(f for f in frames if f != data), *(await relay.later).to_client]
    return frames


def _merge(frames: list[bytes]) -> bytes:
    if len(frames) == 1:
        return frames[0]
    import json

    items: list[Any] = []
    for frame in frames:
        value = json.loads(frame)
        items.extend(value if isinstance(value, list) else [value])
    return encode(items)


async def _until_disconnect(stream: Awaitable[None], receive: Receive) -> None:
    reader = asyncio.ensure_future(stream)

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(disconnected())
    await asyncio.wait({reader, watcher}, return_when=asyncio.FIRST_COMPLETED)
    for task in (reader, watcher):
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def _raw_headers(headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]


async def _body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _respond(send: Send, status: int, body: bytes, headers: Mapping[str, str]) -> None:
    out = dict(headers)
    out["content-length"] = str(len(body))
    await send({"type": "http.response.start", "status": status, "headers": _raw_headers(out)})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def run_http(
    gateway: McpGateway,
    host: str,
    port: int,
    upstream: str,
    *,
    headers: Mapping[str, str] | None = None,
) -> int:
    """Serve the gateway on ``host:port`` until interrupted (uvicorn; logs on stderr).

    Example:
        >>> asyncio.run(run_http(gateway, "127.0.0.1", 9000, "https://host/mcp"))  # doctest: +SKIP
    """
    import uvicorn

    proxy = McpHttpProxy(gateway, upstream, headers=headers)
    # Open GET streams would hold a graceful shutdown forever: give them a few seconds.
    config = uvicorn.Config(
        proxy,
        host=host,
        port=port,
        log_level="warning",
        lifespan="off",
        access_log=False,
        timeout_graceful_shutdown=3,
    )
    server = uvicorn.Server(config)
    try:
        await server.serve()
    finally:
        await proxy.aclose()
    return 0
