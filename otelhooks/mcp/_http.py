"""The Streamable HTTP transport: the gateway listens where the client connects and forwards to
the upstream server's MCP endpoint.

``POST`` bodies are read by the session (hooks may answer a call themselves); what goes upstream
is the body as it came unless a hook rewrote it. Upstream answers stream back as they arrive:
a JSON body, or server-sent events passed through event by event (each event's bytes unchanged
unless a hook changed its message). ``GET`` (the server's own stream) and ``DELETE`` (end of
session) are relayed the same way. Sessions are told apart by ``Mcp-Session-Id``.

When the upstream cannot be reached or drops a stream, each request still waiting gets a
JSON-RPC error naming the problem; an HTTP error status of the upstream passes through, its
body judged as the error of the calls posted, since an SDK client surfaces it
(:mod:`._http_errors`: a tool's error goes through ``tool_result_persist``).

Bounds, as a reverse proxy keeps them: a request body past ``max_body_bytes`` is refused with 413
(by its ``Content-Length`` before it is read, or as it arrives), and an upstream answer or event
past the same size fails the requests it answers; a body that is not UTF-8 JSON gets 400 and a
JSON-RPC parse error, and is not forwarded. Sessions are kept only once the upstream named them
(its ``Mcp-Session-Id``), at most ``max_sessions``, each dropped after ``session_idle_s`` without
a request (a client-chosen id the upstream does not know is never kept: :mod:`._http_sessions`).
A ``GET`` resuming a stream (``Last-Event-ID``) after an event its session was never sent gets
400 and is not forwarded. With a ``token``, every request needs ``Authorization: Bearer
<token>`` (401 without one, 403 for another; the header is not forwarded upstream).
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Final

import httpx
import structlog

from otelhooks import _semconv as sc
from otelhooks._local_hosts import LocalHosts
from otelhooks._loopback import trust_env_for
from otelhooks._tls import tls_context
from otelhooks.mcp._asgi import (
    Receive,
    Scope,
    Send,
    raw_headers,
    read_body,
    read_upstream,
    request_headers,
    respond,
    too_large,
    unauthorized,
    until_disconnect,
)
from otelhooks.mcp._gateway import McpGateway, McpSession, Relay
from otelhooks.mcp._http_errors import error_answer, frames, merge
from otelhooks.mcp._http_sessions import KeptSessions
from otelhooks.mcp._jsonrpc import (
    INVALID_REQUEST,
    PARSE_ERROR,
    error_response,
    parse,
    recover_id,
)
from otelhooks.mcp._sse import EventTooLarge, events, frame_event, with_data

__all__ = ["McpHttpProxy", "run_http"]

_log = structlog.get_logger("otelhooks.mcp")

SESSION_HEADER: Final = "mcp-session-id"
_JSON: Final = "application/json"
_SSE: Final = "text/event-stream"
MAX_BODY_BYTES: Final = 64 * 1024 * 1024
MAX_SESSIONS: Final = 1024
SESSION_IDLE_S: Final = 3600.0
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


class McpHttpProxy:
    """An ASGI application: the gateway in front of the Streamable HTTP server at ``upstream``.

    Args:
        gateway: hooks and spans.
        upstream: the server's MCP endpoint URL.
        headers: sent upstream with every request (already resolved from their templates).
        client: the HTTP client to the upstream (one of its own when omitted).
        token: the bearer token clients must present (none asked when omitted).
        max_body_bytes: the largest request body, upstream answer or event (else 413 / an error).
        max_sessions: sessions kept at most (the least recently used one is dropped).
        session_idle_s: a session without a request for this long is dropped.

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
        token: str | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
        max_sessions: int = MAX_SESSIONS,
        session_idle_s: float = SESSION_IDLE_S,
    ) -> None:
        self.gateway = gateway
        self.upstream = upstream
        self.headers = dict(headers or {})
        self.client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(30.0, read=None),
            follow_redirects=False,
            trust_env=trust_env_for(upstream),
            verify=tls_context(trust_env=trust_env_for(upstream)),
        )
        self.token = token.encode() if token else None
        self.max_body_bytes = max_body_bytes
        self.sessions = KeptSessions(gateway, max_sessions, session_idle_s)

    @property
    def sessions_dropped(self) -> int:
        """Sessions dropped so far (idle, or past ``max_sessions``)."""
        return self.sessions.dropped

    async def aclose(self) -> None:
        self.sessions.close()
        await self.client.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        method = scope["method"]
        incoming = request_headers(scope)
        if self.token is not None:
            refused = unauthorized(incoming.pop("authorization", None), self.token)
            if refused is not None:
                await respond(send, *refused)
                return
        session_id = incoming.get(SESSION_HEADER)
        if method not in ("POST", "GET", "DELETE"):
            await respond(send, 405, b"", {"allow": "GET, POST, DELETE"})
            return
        body = b""
        if method == "POST":
            declared = incoming.get("content-length", "")
            if declared.isdigit() and int(declared) > self.max_body_bytes:
                await too_large(send, self.max_body_bytes)
                return
            read = await read_body(receive, self.max_body_bytes)
            if read is None:
                await too_large(send, self.max_body_bytes)
                return
            body = read
            msg = parse(body)
            if msg.kind == "unreadable":  # never forwarded: the hooks could not read it
                problem = f"Parse error: {msg.problem}"
                answer = error_response(recover_id(body), PARSE_ERROR, problem)
                await respond(send, 400, answer, {"content-type": "application/json"})
                return
            fresh = session_id is None and msg.method == "initialize"
            session = self.gateway.session() if fresh else self.sessions.session(session_id)
        else:
            session = self.sessions.session(session_id)
            resumed = incoming.get("last-event-id") if method == "GET" else None
            if resumed and not self.sessions.resumable(session, resumed):  # empty: not resuming
                if not self.sessions.kept(session):
                    session.close()
                await respond(send, 400, _not_resumable(resumed), {"content-type": _JSON})
                return
        session.peer = _peer(scope)
        status: list[int] = []  # what the upstream answered a DELETE (relayed as it was)

        async def sent(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        try:
            if method == "POST":
                await self._post(session, body, incoming, send)
            else:
                await self._forward(session, method, b"", incoming, sent, receive=receive)
        finally:
            # a DELETE ends the session only when the upstream ended it (it may refuse, 405):
            # one the server goes on with must still have its calls awaited and recorded
            ended = method == "DELETE" and bool(status) and status[0] < 300
            if ended:
                self.sessions.end(session_id)
            if ended or not self.sessions.kept(session):
                session.close()  # a session the upstream did not name ends with its request

    async def _post(
        self, session: McpSession, body: bytes, headers: dict[str, str], send: Send
    ) -> None:
        session.to_server = functools.partial(self._ask, session, headers)
        relay = session.from_client(body)
        while relay.later is not None:
            done = await relay.later
            relay = Relay(relay.to_server + done.to_server, relay.to_client + done.to_client)
        if not relay.to_server:  # hooks answered (denied or mocked), or the call was cancelled
            if relay.to_client:
                await respond(send, 200, relay.to_client[0], {"content-type": "application/json"})
            else:
                await respond(send, 202, b"", {})
            return
        await self._forward(
            session, "POST", relay.to_server[0], headers, send, extra=relay.to_client
        )

    def _upstream_headers(self, headers: dict[str, str]) -> dict[str, str]:
        """What goes upstream of the client's ``headers``: none hop-by-hop, and the configured
        ones over the client's."""
        out = {k: v for k, v in headers.items() if k not in _HOP}
        out.update((k.lower(), v) for k, v in self.headers.items())
        return out

    async def _ask(self, session: McpSession, headers: dict[str, str], frame: bytes) -> None:
        """Send the gateway's own request upstream, with the client's headers of the request
        it serves (its session, its credentials): the answer reaches ``session``, which keeps
        it from the client. Raises when the upstream cannot be reached or answers an error."""
        out = self._upstream_headers(headers)
        out.setdefault("content-type", "application/json")
        out.setdefault("accept", "application/json, text/event-stream")
        request = self.client.build_request("POST", self.upstream, content=frame, headers=out)
        response = await self.client.send(request, stream=True)
        try:
            if response.status_code >= 400:
                raise RuntimeError(f"the MCP server answered HTTP {response.status_code}")
            kind = read_as(response.headers.get("content-type", ""))
            if kind == _SSE:
                async for event in events(response.aiter_raw(), limit=self.max_body_bytes):
                    if event.data is not None and event.data.strip():
                        session.from_server(event.data)
            else:
                content = await read_upstream(response, self.max_body_bytes)
                if content:
                    session.from_server(content)
        finally:
            await response.aclose()

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
        out = self._upstream_headers(headers)
        request = self.client.build_request(method, self.upstream, content=body, headers=out)
        try:
            response = await self.client.send(request, stream=True)
        except httpx.HTTPError as exc:
            reason = f"cannot reach the MCP server: {exc}"
            await self._unreachable(session, body, send, reason, extra or [])
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
        if 300 <= response.status_code < 400:
            # never passed on: a client that follows it (fetch does) would talk to the server
            # itself, its calls' answers unjudged and unrecorded
            location = response.headers.get("location", "")
            _log.error("the MCP server redirected a request; not passed on", location=location)
            reason = (
                f"the MCP server redirected the request to {location} (the gateway follows no "
                "redirect: give --upstream the URL the server answers at)"
            )
            await self._failed(session, body, send, reason, extra, error_type="redirected")
            return
        new_id = response.headers.get(SESSION_HEADER)
        if response.status_code < 400 and not self.sessions.named(new_id, session):
            self.sessions.keep(new_id, session)  # the upstream named (or accepted) this session
            if new_id:
                session.rename(new_id)
        back = {k: v for k, v in response.headers.items() if k.lower() not in _HOP}
        kind = read_as(response.headers.get("content-type", ""))
        if response.status_code < 400 and kind in (_SSE, _JSON):
            # the client reads the body as the gateway did, whatever the server's spelling
            back = {k: v for k, v in back.items() if k.lower() != "content-type"}
            back["content-type"] = kind
        if kind != _SSE or response.status_code >= 400:
            await self._whole(session, body, response, send, back, kind, extra)
            return
        await send({"type": "http.response.start", "status": response.status_code,
                    "headers": raw_headers(back)})  # fmt: skip
        for frame in extra:
            await send(
                {"type": "http.response.body", "body": frame_event(frame), "more_body": True}
            )
        stream = self._stream(session, body, response, send)
        if receive is None:
            await stream
        else:  # a GET stream lasts until the client leaves: stop reading upstream then
            await until_disconnect(stream, receive)
        with contextlib.suppress(Exception):
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _whole(
        self,
        session: McpSession,
        body: bytes,
        response: httpx.Response,
        send: Send,
        back: dict[str, str],
        kind: str,
        extra: list[bytes],
    ) -> None:
        """An upstream answer that is not a stream: read whole (up to the limit), then sent."""
        content = await read_upstream(response, self.max_body_bytes)
        if content is None:
            reason = f"the MCP server's answer is longer than {self.max_body_bytes} bytes"
            await self._failed(session, body, send, reason, extra, error_type="invalid_response")
            return
        if response.status_code >= 400:
            answered, back = await error_answer(
                session,
                body,
                content,
                back,
                reason=f"the MCP server answered HTTP {response.status_code}",
                error_type=str(response.status_code),
            )
            await respond(send, response.status_code, answered, back)
        elif kind == _JSON and content.strip():  # 202 may name a type, no body
            out = await frames(session, content)
            await respond(send, response.status_code, merge(out + extra), back)
        elif extra:  # 202 to what went upstream; the hooks' answers still reach the client
            await respond(send, 200, merge(extra), {"content-type": "application/json"})
        else:  # 202 Accepted and friends
            await respond(send, response.status_code, content, back)

    async def _stream(
        self, session: McpSession, body: bytes, response: httpx.Response, send: Send
    ) -> None:
        try:
            async for event in events(response.aiter_raw(), limit=self.max_body_bytes):
                out = event.raw
                if event.id is not None:
                    self.sessions.sent_event(session, event.id)
                if event.data is not None and event.data.strip():
                    judged = await frames(session, event.data)
                    if judged != [event.data]:
                        out = b"".join(with_data(event, f) for f in judged)
                await send({"type": "http.response.body", "body": out, "more_body": True})
        except (httpx.HTTPError, EventTooLarge) as exc:
            reason = f"the MCP server dropped the stream: {exc}"
            _log.error("upstream stream failed", error=str(exc))
            for answer in session.fail(body, reason, error_type="server_disconnected"):
                await send(
                    {"type": "http.response.body", "body": frame_event(answer), "more_body": True}
                )

    async def _unreachable(
        self, session: McpSession, body: bytes, send: Send, reason: str, extra: list[bytes]
    ) -> None:
        _log.error("upstream unreachable", upstream=self.upstream, error=reason)
        await self._failed(session, body, send, reason, extra, error_type="server_unreachable")

    async def _failed(
        self,
        session: McpSession,
        body: bytes,
        send: Send,
        reason: str,
        extra: list[bytes],
        *,
        error_type: str,
    ) -> None:
        """The upstream failed ``body``: its requests get errors, sent with ``extra`` (the
        answers the hooks gave to the rest of the client's batch)."""
        answers = session.fail(body, reason, error_type=error_type) + extra
        if answers:
            await respond(send, 200, merge(answers), {"content-type": "application/json"})
        else:
            await respond(send, 502, reason.encode(), {"content-type": "text/plain"})


def read_as(content_type: str) -> str:
    """The type an SDK client reads a body of ``content_type`` as: an event stream, or JSON,
    when the value names it anywhere (the TypeScript SDK looks for either in the whole value,
    the Python SDK for JSON at its start, so ``application/json-rpc`` is JSON to both), else
    its media type."""
    value = content_type.lower()
    if _SSE in value:
        return _SSE
    if _JSON in value:
        return _JSON
    return value.split(";")[0].strip()


def _not_resumable(last_event_id: str) -> bytes:
    """The answer to a ``GET`` resuming after an event its session's streams never carried."""
    _log.warning(
        "a stream resumption after an event this session was never sent was refused",
        last_event_id=last_event_id[:64],
    )
    return error_response(
        None,
        INVALID_REQUEST,
        "otelhooks: Last-Event-ID names no event the gateway sent this session (another "
        "session's, or one the gateway no longer holds): open the stream without it",
    )


async def run_http(
    gateway: McpGateway,
    host: str,
    port: int,
    upstream: str,
    *,
    headers: Mapping[str, str] | None = None,
    token: str | None = None,
    allowed_hosts: Sequence[str] = (),
) -> int:
    """Serve the gateway on ``host:port`` until interrupted (uvicorn; logs on stderr).

    On a loopback ``host`` only ``localhost``, IP addresses and ``allowed_hosts`` are
    answered, and only from such an ``Origin``: the MCP transport asks servers to validate
    ``Origin`` against DNS rebinding (:mod:`otelhooks._local_hosts`).

    Example:
        >>> asyncio.run(run_http(gateway, "127.0.0.1", 9000, "https://host/mcp"))  # doctest: +SKIP
    """
    import uvicorn

    proxy = McpHttpProxy(gateway, upstream, headers=headers, token=token)
    # Open GET streams would hold a graceful shutdown forever: give them a few seconds.
    config = uvicorn.Config(
        LocalHosts(proxy, bound=host, allowed=allowed_hosts),
        host=host,
        port=port,
        log_level="warning",
        lifespan="off",
        access_log=False,
        timeout_graceful_shutdown=3,
    )
    server = uvicorn.Server(config)
    # Bound here, not by uvicorn, so the port of ``--listen HOST:0`` can be told (uvicorn says
    # it at info level, below the gateway's).
    sock = config.bind_socket()
    bound = sock.getsockname()
    where = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    print(f"otelhooks mcp: listening on http://{where}:{bound[1]}", file=sys.stderr, flush=True)
    try:
        await server.serve(sockets=[sock])
    finally:
        await proxy.aclose()
    return 0


def _peer(scope: Scope) -> dict[str, Any]:
    """``client.address``, ``client.port`` and ``network.protocol.*`` of the request in
    ``scope`` (the MCP client's side of the gateway), as far as the ASGI server knows them."""
    peer: dict[str, Any] = {sc.NETWORK_PROTOCOL_NAME: "http"}
    version = scope.get("http_version")
    if isinstance(version, str) and version:
        peer[sc.NETWORK_PROTOCOL_VERSION] = version
    client = scope.get("client")
    if isinstance(client, list | tuple) and len(client) == 2 and isinstance(client[0], str):
        peer[sc.CLIENT_ADDRESS] = client[0]
        if isinstance(client[1], int):
            peer[sc.CLIENT_PORT] = client[1]
    return peer
