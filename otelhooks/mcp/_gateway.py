"""The hook and telemetry layer of the MCP gateway, independent of the transport.

:class:`McpGateway` holds what every session shares (the hooks engine, the tracer, the server
name); :class:`McpSession` follows one MCP session: it reads each message as it crosses, and says
what to send on (:class:`Relay`). Transports (stdio, Streamable HTTP) only move bytes. This
module's one job is that routing of the client's frames; the server's are
:mod:`._server_frames`', a ``tools/call``'s decision is :mod:`._decide`'s, the tools it is judged
by :mod:`._listing`'s, the open requests' spans and durations :mod:`._requests`', what the
client was answered (and an answer the server sends again becomes) :mod:`._answered`'s, what
the client gets for a frame the gateway refuses or fails on :mod:`._client_failures`'.

The rules, in order of precedence:

1. A message no hook acts on is forwarded as the bytes it arrived as.
2. ``tools/call`` runs the ``before_tool_call`` chain with the matcher values
   ``("<server>/<tool>", "<tool>")``: a deny answers the client with a tool result
   ``isError: true`` carrying the reason (the server never sees the call); a mock answers with
   the mocked content; a rewrite forwards the request with the rewritten arguments.
3. The answer of a forwarded call (its result, or its JSON-RPC error judged as a failed
   result) goes through the ``tool_result_persist`` hooks when one matches (:mod:`._persist`:
   a block is an ``isError`` result carrying the reason), as does what the server tells the
   client of the call while it runs (a progress or log message, a sampling or elicitation
   request's text: :mod:`._notes`), then is
   observed: ``after_tool_call`` (or ``on_tool_call_error``
   for ``isError`` results and JSON-RPC errors) is queued for observers; a denial queues
   ``on_tool_call_denied``.
4. When the hooks themselves fail (an exception out of the engine), the client gets a JSON-RPC
   error that says so: the call is neither forwarded nor changed silently.
5. Nothing is forwarded unread. A client frame that cannot be parsed (invalid UTF-8, not JSON,
   an integer too long to convert) is answered with a JSON-RPC parse error (-32700, with its
   id when its first bytes show it) and never reaches the server; values nested deeper than
   64 levels reach the hooks as their JSON text. A server frame that cannot be parsed is not
   passed on: the request it answers (when its id can be told) gets a JSON-RPC error. A
   failure of the gateway itself on a client frame answers it with an internal error
   (:class:`ClientFailures`); on a server frame, the answers in it become internal errors to
   their requests (:meth:`ServerFrames.failed`), never passed on unread.
6. A client frame that spells a JSON-RPC member (``method``, ``id``, ``params``...), or a
   ``tools/call``'s ``name`` or ``arguments``, with other cases (``Method``, ``ID``, ``params``
   with a long s) is answered with an invalid-request error (-32600) and never forwarded: a
   server whose JSON reader ignores case (Go's ``encoding/json``) would run a call the hooks
   never saw; so is a call whose arguments name one argument twice (``cmd`` and ``CMD``), and
   a ``tools/call`` without an id (a notification, never judged), and a request reusing the id
   of one still waiting (its answer would end both records).
7. A ``tools/call`` is matched by the kinds and judged by the schema of the list its own
   session was given (a server may list differently per session); a session that never listed
   by the list the gateway keeps for such sessions. While a ``before_tool_call`` hook is
   configured, a call of a tool that list does not name (or named before the server's
   ``notifications/tools/list_changed`` to the session) waits for the gateway's own
   ``tools/list`` in that session, and is refused as an unknown tool (-32602) when the server
   does not list it. A call decided across a list change is judged again (:mod:`._rejudge`).
8. A server's answer to no request still waiting (sent again on a resumed stream, or for an id
   the client never used) never reaches the client as the server sent it: the client gets the
   answer the gateway recorded, or nothing (logged, counted) when it recorded none. A request
   of the server the client already answered, sent again, is not passed on again.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Tracer

from otelhooks import _semconv as sc
from otelhooks._engine import HooksEngine
from otelhooks._tool_schema import type_problem
from otelhooks.mcp._calls import Pending, request_key
from otelhooks.mcp._client_failures import ClientFailures, failed_itself, invalid, refuse
from otelhooks.mcp._decide import decide
from otelhooks.mcp._decide import refuse as refuse_call
from otelhooks.mcp._filter import UNLISTED, Listed
from otelhooks.mcp._jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    Message,
    encode,
    error_response,
    misspelled,
    parse,
)
from otelhooks.mcp._listing import SessionTools
from otelhooks.mcp._metrics import McpMetrics
from otelhooks.mcp._rejudge import judge_again
from otelhooks.mcp._relay import Relay
from otelhooks.mcp._requests import OpenRequests
from otelhooks.mcp._server_frames import DEFAULT_SERVER_NAME, HANDSHAKES, ServerFrames
from otelhooks.mcp._session_facts import client_facts
from otelhooks.mcp._spans import McpSpans, set_attributes

__all__ = ["McpGateway", "McpSession", "Relay"]

_log = structlog.get_logger("otelhooks.mcp")


class McpGateway:
    """Hooks and spans for MCP sessions between any client and any server.

    Args:
        engine: the hooks (``before_tool_call`` intercepts; observers see results).
        tracer: where the MCP spans go.
        name: the server's name in matcher values (``<name>/<tool>``); the ``serverInfo.name``
            of the server's ``initialize`` answer when omitted (the last one any session of
            this gateway saw).
        transport: ``pipe`` (stdio) or ``tcp`` (HTTP), recorded as ``network.transport``.
        upstream: the HTTP server's host and port (on the session span).
        filter_tools: drop from ``tools/list`` answers the tools whose ``before_tool_call``
            chain denies a call with no arguments (see ``docs/mcp.md``).
        meter_provider: where the MCP metrics go (``mcp.server.operation.duration``...); the
            global provider when omitted.

    Example:
        >>> from opentelemetry.trace import NoOpTracer
        >>> gateway = McpGateway(HooksEngine(), NoOpTracer(), name="files")
        >>> session = gateway.session()
        >>> relay = session.from_client(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
        >>> relay.to_server
        [b'{"jsonrpc":"2.0","id":1,"method":"ping"}']
    """

    def __init__(
        self,
        engine: HooksEngine,
        tracer: Tracer,
        *,
        name: str | None = None,
        transport: str = "pipe",
        upstream: tuple[str, int] | None = None,
        filter_tools: bool = False,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        self.engine = engine
        self.name = name
        # The server's own name, from the last handshake answer of any session: the server is
        # one for every session, and a session that starts without a handshake (HTTP: one the
        # gateway dropped when idle, the server still knows) must be guarded under it too.
        self.server_name: str | None = None
        # Each listed tool's annotation kinds and inputSchema for the sessions that never
        # listed (HTTP: a list the client cached, a session dropped when idle, the stateless
        # protocol's request per session), from the gateway's own tools/list in such a
        # session. Keyed by the names the server listed, at most MAX_LISTED; emptied by the
        # server's notifications/tools/list_changed.
        self.tools: dict[str, Listed] = {}
        # How many tools the sessions' own tables keep together, at most MAX_SESSIONS_LISTED:
        # a client opening sessions that each list many tools must not grow the gateway.
        self.session_listed = 0
        self.list_changes = 0  # tools/list_changed notifications seen: see ._rejudge
        self.filter_tools = filter_tools
        self.spans = McpSpans(tracer, transport=transport, server=upstream)
        self.metrics = McpMetrics(meter_provider)
        self.transport = transport

    def session(self, session_id: str | None = None) -> McpSession:
        """Start following a session (``session_id`` generated when the transport has none)."""
        return McpSession(self, session_id or uuid.uuid4().hex)


class McpSession:
    """One MCP session through the gateway: call :meth:`from_client` / :meth:`from_server` with
    each message, send what the returned :class:`Relay` says, and :meth:`close` at the end."""

    def __init__(self, gateway: McpGateway, session_id: str) -> None:
        self.gateway = gateway
        self.session_id = session_id
        self.protocol_version: str | None = None
        # The transport's facts about the client of the message now crossing (HTTP:
        # client.address, client.port, network.protocol.*), set before each from_client.
        self.peer: dict[str, Any] = {}
        self.agent_name: str | None = None  # the client's clientInfo.name
        self._started = time.perf_counter()
        self.span = gateway.spans.session(session_id)
        # The engine's span processor (when the tracer is its pipeline's) must not take the
        # gateway's execute_tool spans for another instrumentation's and observe them again.
        gateway.engine.claim_scope(getattr(self.span, "instrumentation_scope", None))
        self.requests = OpenRequests(self, gateway.spans, gateway.metrics, gateway.engine)
        # How the gateway sends a request of its own to the server (set by the transport; the
        # answer comes back through from_server).
        self.to_server: Callable[[bytes], Awaitable[None]] | None = None
        # the tools a call is judged by: this session's own lists, else the gateway's
        self.listings = SessionTools(gateway)
        self.server_frames = ServerFrames(self)  # what the server's frames do
        self.client_failures = ClientFailures(self.requests)  # client frames it failed on
        self.closed = False

    # -- client → server -------------------------------------------------------------------------

    def from_client(self, raw: bytes) -> Relay:
        """A frame from the client: what to forward, answer, or still decide (a failure of the
        gateway itself answers its requests with an internal error, logged; nothing is
        forwarded)."""
        since = time.perf_counter()
        try:
            relay = self._client_frame(raw)
        except Exception as exc:
            return self.client_failures.failed(raw, exc, since)
        if relay.later is not None:
            relay.later = self.client_failures.guarded(raw, relay.later)
        return relay

    def refuse(self, raw: bytes, problem: str) -> Relay:
        """Answer an unreadable client frame (``problem``: why) with a parse error, unforwarded."""
        return refuse(raw, problem)

    def invalid(self, msg: Message, problem: str) -> Relay:
        """Answer a client message a server could misread (``problem``) with -32600, unsent."""
        return invalid(msg, problem)

    def _client_frame(self, raw: bytes) -> Relay:
        msg = parse(raw)
        if msg.kind == "unreadable":
            return self.refuse(raw, msg.problem or "not JSON")
        odd = misspelled(msg.data)
        if odd is not None:
            return self.invalid(
                msg, f"the member name {odd!r} differs only by case from one the hooks read"
            )
        if msg.kind == "batch":
            return self._batch(msg)
        if msg.kind == "request":
            return self._client_request(msg)
        if msg.kind == "notification":
            if msg.method == "tools/call":  # a server that runs it anyway would run it unjudged
                return self.invalid(msg, "a tools/call without an id")
            self.requests.notification(msg, from_server=False)
        elif msg.kind == "response":
            self.requests.finish(msg.id, msg, from_server=True)
        return Relay(to_server=[raw])

    @property
    def server_name(self) -> str:
        """The server's name as guards match it (``server/tool``): ``--name``, else the one the
        server gave in a handshake answer through this gateway, else ``mcp``."""
        return self.gateway.name or self.gateway.server_name or DEFAULT_SERVER_NAME

    def _client_request(self, msg: Message) -> Relay:
        if request_key(msg.id) in self.requests.from_client:  # one answer would end both
            return self.invalid(msg, f"the id {msg.id!r} is that of a request still waiting")
        if (
            msg.method == "tools/call"
            and self.gateway.name is None
            and self.gateway.server_name is None
            and self.gateway.engine.registry.may_match("before_tool_call")
        ):
            # no handshake answer through this gateway yet (it restarted under a session the
            # server still knows, or the client did not wait for the answer): a guard naming
            # the server would not match, and the call would run unjudged
            return self.invalid(
                msg,
                "the server's name is not known yet (no initialize or server/discover answer "
                "has passed this gateway), so guards that name it cannot judge this call: "
                "start the session again, or start the gateway with --name",
            )
        pending = self.requests.start(msg, from_server=False)
        if msg.method in HANDSHAKES:
            self._on_initialize(msg)
        if msg.method != "tools/call":
            return Relay(to_server=[msg.raw])
        name = msg.params.get("name")
        tool = name if isinstance(name, str) else ""
        pending.msg = msg
        pending.session_id, pending.server = self.session_id, self.server_name
        listed = self.listing(tool)
        if listed is None and self.gateway.engine.registry.may_match("before_tool_call"):
            # a tool no list through the gateway named (the client did not list, the server
            # changed its list since, or it is not the server's): guards match by its kinds and
            # judge by its schema, and a name the server would read as a listed one must not
            # pass unmatched
            return Relay(later=self._listed_then_judged(msg, pending, tool))
        return self._judged(msg, pending, tool, listed)

    def _judged(self, msg: Message, pending: Pending, tool: str, listed: Listed | None) -> Relay:
        """A ``tools/call`` of a tool as the server listed it (``None``: not listed): relayed
        when no hook matches, refused when its arguments' types are not the listed ones, else
        decided by the hooks."""
        kinds, schema, pending.output_schema = listed or (UNLISTED, None, None)
        values = pending.values = (f"{self.server_name}/{tool}", tool, *kinds)
        # a guard matched by a kind is matched so in replay too, which reads it from the span
        pending.span.set_attribute(sc.TOOL_KINDS, kinds)
        if not self.gateway.engine.matches("before_tool_call", values):
            return Relay(to_server=[msg.raw])  # the common case: nothing to decide
        pending.schema = schema
        problem = type_problem(msg.params.get("arguments"), schema)
        if problem is not None:  # the server would run a value the guards would misread
            answer = refuse_call(self.gateway.engine, self.requests, msg, pending, problem)
            return Relay(to_client=[answer])
        return Relay(later=self._decided(msg, pending, values, self.gateway.list_changes))

    async def _listed_then_judged(self, msg: Message, pending: Pending, tool: str) -> Relay:
        """List the server's tools, then judge the call; a tool the server does not list is
        refused as the specification's unknown tool (-32602), and a list the gateway cannot
        get refuses the call (-32603): a guard must never judge it without its schema."""
        listed: Listed | None = None
        try:
            listed = await self.listings.list_tools(self.to_server, tool)
            failure = None
        except Exception as exc:
            _log.error("the gateway could not list the server's tools", error=str(exc))
            failure = error_response(
                msg.id, INTERNAL_ERROR, f"otelhooks: cannot list the server's tools: {exc}"
            )
        if self.requests.from_client.get(request_key(msg.id)) is not pending:
            return Relay()  # answered meanwhile: cancelled, or the server is gone
        if failure is None and listed is None:
            failure = error_response(msg.id, INVALID_PARAMS, f"Unknown tool: {tool}")
        if failure is not None:
            self.requests.finish(msg.id, parse(failure))
            return Relay(to_client=[failure])
        try:
            relay = self._judged(msg, pending, tool, listed)
        except Exception as exc:  # as in from_client: never an answer left unsent
            answer = failed_itself(msg.id, exc)
            self.requests.finish(msg.id, parse(answer))
            return Relay(to_client=[answer])
        return await relay.later if relay.later is not None else relay

    async def _decided(
        self, msg: Message, pending: Pending, values: tuple[str, ...], changes: int
    ) -> Relay:
        forward, answer = await decide(self.gateway.engine, self.requests, msg, pending, values)
        if forward is not None and self.gateway.list_changes != changes:  # see _rejudge
            forward, answer = await judge_again(
                self.gateway.engine,
                self.requests,
                self.listings,
                self.to_server,
                msg,
                pending,
                forward,
            )
        return Relay(
            to_server=[forward] if forward is not None else [],
            to_client=[answer] if answer is not None else [],
        )

    def _batch(self, msg: Message) -> Relay:
        """A JSON-RPC batch (protocol 2025-03-26): each element as if it came alone. Forwarded
        unchanged unless a hook acts on one of its calls; answers of denied or mocked calls go
        back to the client as a batch of their own."""
        relays = [self._client_frame(item.raw) for item in msg.items()]
        if all(r.later is None and r.to_client == [] for r in relays):
            return Relay(to_server=[msg.raw])

        async def decided() -> Relay:
            done = [await r.later if r.later is not None else r for r in relays]
            forward = [json.loads(f) for r in done for f in r.to_server]
            answers = [json.loads(a) for r in done for a in r.to_client]
            return Relay(
                to_server=[encode(forward)] if forward else [],
                to_client=[encode(answers)] if answers else [],
            )

        return Relay(later=decided())

    # -- server → client -------------------------------------------------------------------------

    def from_server(self, raw: bytes) -> Relay:
        """A server frame: what to pass on (when the gateway fails on it, answers in it are
        errors to their requests, logged: :meth:`ServerFrames.failed`)."""
        try:
            relay = self.server_frames.frame(raw)
        except Exception as exc:
            return self.server_frames.failed(raw, exc)
        if relay.later is not None:
            relay.later = self.server_frames.guarded(raw, relay.later)
        return relay

    def server_garbage(self, raw: bytes, problem: str) -> Relay:
        """An unreadable server frame (``problem``): dropped, the request it answers failed."""
        return self.server_frames.garbage(raw, problem)

    @property
    def tools(self) -> dict[str, Listed] | None:
        """What this session's own ``tools/list`` answers named (``None`` until it lists)."""
        return self.listings.own

    def listing(self, tool: str) -> Listed | None:
        """What ``tool`` is judged by (:meth:`SessionTools.listing`)."""
        return self.listings.listing(tool)

    # -- the session's facts --------------------------------------------------------------------

    def _on_initialize(self, msg: Message) -> None:
        version, agent = client_facts(msg)
        self.protocol_version = version or self.protocol_version
        self.agent_name = agent or self.agent_name

    def rename(self, session_id: str) -> None:
        """The transport learned the session's id (HTTP: the server's ``Mcp-Session-Id``)."""
        self.session_id = session_id
        set_attributes(self.span, {sc.MCP_SESSION_ID: session_id})
        for pending in self.requests.from_client.values():  # the initialize request, still open
            set_attributes(pending.span, {sc.MCP_SESSION_ID: session_id})

    def fail_all(self, reason: str, *, error_type: str) -> list[bytes]:
        """Every client request still waiting gets a JSON-RPC error (returned to send)."""
        return self.requests.fail_all(reason, error_type=error_type)

    def fail(self, frame: bytes, reason: str, *, error_type: str) -> list[bytes]:
        """The upstream failed ``frame``: its requests still waiting get errors (returned)."""
        answers: list[bytes] = []
        for item in parse(frame).items():
            if item.kind == "request":
                key = request_key(item.id)
                answer = self.requests.fail_one(key, reason, error_type=error_type)
                if answer is not None:
                    answers.append(answer)
        return answers

    def close(self, reason: str | None = None) -> list[bytes]:
        """End the session; with ``reason`` (the server is gone) answer what waits (returned)."""
        if self.closed:
            return []
        self.closed = True
        self.listings.forget()
        answers = self.requests.close(reason)
        self.span.end()
        attrs = {k: v for k, v in self.peer.items() if k == sc.NETWORK_PROTOCOL_NAME}
        if self.protocol_version:
            attrs[sc.MCP_PROTOCOL_VERSION] = self.protocol_version
        if reason is not None:
            attrs["error.type"] = "server_exited"
        self.gateway.metrics.session(time.perf_counter() - self._started, attrs)
        return answers
