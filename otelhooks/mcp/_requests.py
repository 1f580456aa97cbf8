"""The requests of one MCP session still waiting for their answer, in each direction.

Each request the gateway sees gets a span and, when it ends, a ``mcp.*.operation.duration``
measurement; this module's one job is that bookkeeping: every request is ended exactly once,
whether it was answered, cancelled, failed by the upstream or still open when the session
closed. A ``tools/call``'s outcome is observed as it ends (``after_tool_call``,
``on_tool_call_error``). A notification has a span of its own and nothing to wait for.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from otelhooks import _semconv as sc
from otelhooks.mcp._answered import MAX_ANSWERS, Answered
from otelhooks.mcp._calls import Pending, observe_result, request_key
from otelhooks.mcp._jsonrpc import INTERNAL_ERROR, UPSTREAM_ERROR, Message, error_response, parse
from otelhooks.mcp._spans import set_attributes

_log = structlog.get_logger("otelhooks.mcp")

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from otelhooks._engine import HooksEngine
    from otelhooks.mcp._metrics import McpMetrics
    from otelhooks.mcp._spans import McpSpans

__all__ = ["OpenRequests"]


class Session(Protocol):
    """What the requests read of their :class:`~otelhooks.mcp.McpSession` as each one crosses
    (its handshake and the transport change it as the session goes)."""

    session_id: str
    span: Span
    protocol_version: str | None
    agent_name: str | None
    peer: dict[str, Any]

    @property
    def server_name(self) -> str: ...


class OpenRequests:
    """The requests of ``session`` waiting for an answer: the client's (``from_client``, the
    ones the gateway may answer itself) and the server's (``from_server``), by JSON-RPC id."""

    def __init__(
        self, session: Session, spans: McpSpans, metrics: McpMetrics, engine: HooksEngine
    ) -> None:
        self.session = session
        self.spans = spans
        self.metrics = metrics
        self.engine = engine
        self.from_client: dict[Hashable, Pending] = {}
        self.from_server: dict[Hashable, Pending] = {}
        # what the client was answered: what a server's answer sent again becomes
        self.answered = Answered(engine.metrics.drop_counter("mcp_answers"))
        # the server's requests the client answered (the last MAX_ANSWERS): id -> digest
        self.server_answered: OrderedDict[Hashable, bytes] = OrderedDict()

    def server_asked(self, msg: Message) -> bool:
        """A request of the server crossed: its span starts, and it is passed on (``True``).
        One the client already answered, sent again (a resumed stream's replay: the same
        id, method and params) is not (``False``, logged): the client would answer it twice,
        a sampling run twice. One still waiting, sent again, passes (the client may never
        have got it) without a second span."""
        key = request_key(msg.id)
        answered = self.server_answered.get(key)
        if answered is not None and answered == _request_digest(msg):
            _log.info(
                "a request the server sent again, which the client answered, was not "
                "passed on again",
                method=msg.method,
                request_id=repr(msg.id),
            )
            return False
        if key not in self.from_server:
            self.start(msg, from_server=True)
        return True

    def _message_span(self, msg: Message, from_server: bool) -> tuple[Span, dict[str, Any]]:
        """The span of a message crossing this session, and its metric attributes."""
        session = self.session
        return self.spans.message(
            msg,
            session=session.span,
            session_id=session.session_id,
            protocol_version=session.protocol_version,
            server_name=session.server_name,
            from_server=from_server,
            peer=session.peer,
        )

    def start(self, msg: Message, *, from_server: bool) -> Pending:
        """A request crossed: its span starts, and it waits in its direction's table."""
        session = self.session
        span, attrs = self._message_span(msg, from_server)
        if msg.method == "tools/call" and session.agent_name and not from_server:
            set_attributes(span, {sc.GEN_AI_AGENT_NAME: session.agent_name})
        pending = Pending(msg.method or "", span, time.perf_counter(), msg.id)
        pending.from_server, pending.attributes = from_server, attrs
        if from_server:  # what a replay of it is told by (server_asked)
            pending.msg = msg
        table = self.from_server if from_server else self.from_client
        table[request_key(msg.id)] = pending
        return pending

    def end(
        self,
        pending: Pending,
        answer: Message | None,
        *,
        error_type: str | None = None,
        code: int | None = None,
        denied: bool = False,
    ) -> None:
        """End a request's span and record its ``mcp.*.operation.duration``."""
        added = self.spans.end(
            pending.span,
            answer,
            error_type=error_type,
            code=code,
            from_server=pending.from_server,
            denied=denied,
        )
        seconds = time.perf_counter() - pending.started
        attrs = {**pending.attributes, **added}
        if self.session.protocol_version:
            attrs.setdefault(sc.MCP_PROTOCOL_VERSION, self.session.protocol_version)
        self.metrics.operation(seconds, attrs, from_server=pending.from_server)

    def notification(self, msg: Message, *, from_server: bool) -> None:
        """A notification crossed: its own short span (a cancellation ends the request it
        names, ``cancelled``)."""
        if msg.method == "notifications/cancelled":
            request_id = msg.params.get("requestId")
            table = self.from_server if from_server else self.from_client
            pending = table.pop(request_key(request_id), None)
            if pending is not None:
                pending.cancelled = True
                if not from_server:
                    self.answered.record(request_id, None)
                self.end(pending, None, error_type="cancelled")
        started = time.perf_counter()
        span, attrs = self._message_span(msg, from_server)
        span.end()
        seconds = time.perf_counter() - started
        self.metrics.operation(seconds, attrs, from_server=from_server)

    def finish(
        self,
        request_id: Any,
        answer: Message,
        *,
        from_server: bool = False,
        mocked: bool = False,
        observe: bool = True,
        denied: bool = False,
    ) -> None:
        """The request ``request_id`` of the client (``from_server``: of the server) was
        answered with ``answer``: a ``tools/call``'s outcome is observed, its span ends."""
        table = self.from_server if from_server else self.from_client
        pending = table.pop(request_key(request_id), None)
        if pending is None:
            return  # an answer to a request we never saw (or already cancelled)
        if not from_server:
            self.answered.record(request_id, answer.raw)
        elif pending.msg is not None:
            self.server_answered[request_key(request_id)] = _request_digest(pending.msg)
            while len(self.server_answered) > MAX_ANSWERS:
                self.server_answered.popitem(last=False)
        if observe and pending.values is not None:
            observe_result(self.engine, pending, answer, mocked=mocked)
        self.end(pending, answer, denied=denied)

    def fail_one(self, key: Hashable, reason: str, *, error_type: str) -> bytes | None:
        """The client's request ``key`` gets a JSON-RPC error (returned, for the transport to
        send) and its span ends with ``error_type``; ``None`` when it is not waiting."""
        pending = self.from_client.pop(key, None)
        if pending is None:
            return None
        answer = error_response(pending.request_id, UPSTREAM_ERROR, reason)
        self.answered.record(pending.request_id, answer)
        if pending.values is not None:
            observe_result(self.engine, pending, parse(answer), mocked=False)
        self.end(pending, None, error_type=error_type, code=UPSTREAM_ERROR)
        return answer

    def gateway_failed(self, request_id: Any, answer: bytes) -> bool:
        """The gateway itself failed on the client's request ``request_id`` (still waiting, or
        answered just before it failed): ``answer`` is what the client gets (recorded, the
        span ended ``gateway_error``; ``True``). ``False`` when the client waits for nothing
        (cancelled, never asked, answered too long ago)."""
        pending = self.from_client.pop(request_key(request_id), None)
        if pending is None and not self.answered.given(request_id):
            return False
        self.answered.record(request_id, answer)  # a replay of the answer gets this one too
        if pending is not None:
            try:
                self.end(pending, None, error_type="gateway_error", code=INTERNAL_ERROR)
            except Exception as exc:  # the span's own failure: the answer still goes
                _log.error("the gateway could not end a failed request's span", error=str(exc))
        return True

    def fail_all(self, reason: str, *, error_type: str) -> list[bytes]:
        """Every client request still waiting gets a JSON-RPC error (returned)."""
        keys = list(self.from_client)
        answers = [self.fail_one(key, reason, error_type=error_type) for key in keys]
        return [a for a in answers if a is not None]

    def close(self, reason: str | None) -> list[bytes]:
        """End every request still open as the session ends. With ``reason`` (the server is
        gone) each client request gets a JSON-RPC error, returned for the transport to send."""
        answers: list[bytes] = []
        for key in list(self.from_client):
            if reason is None:
                pending = self.from_client.pop(key)
                self.end(pending, None, error_type="session_closed")
                continue
            answer = self.fail_one(key, reason, error_type="server_exited")
            if answer is not None:
                answers.append(answer)
        for pending in self.from_server.values():
            self.end(pending, None, error_type="session_closed")
        self.from_server.clear()
        return answers


def _request_digest(msg: Message) -> bytes:
    """What tells a request sent again from another one under the same id: its method and
    params (not its bytes: a server's event store may encode it again otherwise)."""
    text = json.dumps([msg.method, msg.params], sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode()).digest()
