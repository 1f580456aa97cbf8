"""MCP spans by the GenAI semantic conventions (``docs/gen-ai/mcp.md``): names and attributes.

One span per JSON-RPC request or notification that crosses the gateway, named
``{mcp.method.name} {target}`` (``tools/call read_file``) or ``{mcp.method.name}``, under one
``mcp.session`` span per MCP session, so a session is one trace. A request whose ``params._meta``
carries a W3C ``traceparent`` continues the client's trace instead and links the session span
(the conventions' rule for servers: the ``_meta`` context is the parent, the ambient one a link).

Status by ``model/mcp/common.yaml``: on a SERVER span (a client request the gateway answers for
the server) the JSON-RPC codes that say the caller sent what cannot be served (-32700, -32600,
-32601, -32602, -32002) are recorded in ``rpc.response.status_code`` but are not errors; every
other code is, and on a CLIENT span (a request from the server) every code is. A call a hook
denied is not an error either (``otelhooks.hook.decision=deny`` says what happened): the same
rule as otelhooks' own ``execute_tool`` spans (docs/semconv.md).

Every text the gateway records (attributes, status messages) goes through
:func:`otelhooks._redact.scrub` first: a peer may echo a known secret (the ``--header`` token an
upstream puts in an error message), and the spans are written to files and exporters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from opentelemetry import trace
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from otelhooks import _semconv as sc
from otelhooks._redact import scrub
from otelhooks.mcp._jsonrpc import Message

__all__ = [
    "NOT_ERRORS_ON_SERVER",
    "McpSpans",
    "clean_attributes",
    "set_attributes",
    "span_name",
]

# JSON-RPC codes a server answers to a request it cannot serve: not errors on SERVER spans.
NOT_ERRORS_ON_SERVER: Final = frozenset({-32700, -32600, -32601, -32602, -32002})

# Methods whose params name a low-cardinality target for the span name.
_TARGETS: Final = {"tools/call": sc.GEN_AI_TOOL_NAME, "prompts/get": sc.GEN_AI_PROMPT_NAME}
_RESOURCE_METHODS: Final = frozenset(
    {"resources/read", "resources/subscribe", "resources/unsubscribe"}
)
_PROPAGATOR: Final = TraceContextTextMapPropagator()


def clean_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """``attributes`` with known secrets scrubbed from every string (and list of strings)."""
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        if isinstance(value, str):
            value = scrub(value)
        elif isinstance(value, list | tuple):
            value = [scrub(v) if isinstance(v, str) else v for v in value]
        out[key] = value
    return out


def set_attributes(span: Span, attributes: Mapping[str, Any]) -> None:
    """Set ``attributes`` on ``span``, scrubbed."""
    span.set_attributes(clean_attributes(attributes))


def span_name(method: str, params: Mapping[str, Any]) -> str:
    """``{mcp.method.name} {target}`` with the tool or prompt name as target, when there is one.

    Example:
        >>> span_name("tools/call", {"name": "read_file"})
        'tools/call read_file'
    """
    name = params.get("name") if method in _TARGETS else None
    return f"{method} {name}" if isinstance(name, str) and name else method


class McpSpans:
    """Starts and ends the spans of one gateway (all sessions share the tracer).

    Args:
        tracer: where spans go (a tracer of a configured ``TracerProvider``).
        transport: ``network.transport``: ``pipe`` for stdio, ``tcp`` for HTTP.
        server: the HTTP upstream's host and port, recorded on the session span
            (``otelhooks.mcp.upstream.address`` and ``.port``).
    """

    def __init__(
        self, tracer: Tracer, *, transport: str, server: tuple[str, int] | None = None
    ) -> None:
        self._tracer = tracer
        self._transport = transport
        self._server: dict[str, Any] = (
            {sc.MCP_UPSTREAM_ADDRESS: server[0], sc.MCP_UPSTREAM_PORT: server[1]} if server else {}
        )

    def session(self, session_id: str) -> Span:
        """The root span of a session: every request of the session is its child."""
        attrs = {
            sc.MCP_SESSION_ID: session_id,
            sc.NETWORK_TRANSPORT: self._transport,
            **self._server,
        }
        return self._tracer.start_span(
            sc.MCP_SESSION_SPAN_NAME, kind=SpanKind.INTERNAL, attributes=clean_attributes(attrs)
        )

    def message(
        self,
        msg: Message,
        *,
        session: Span,
        session_id: str,
        protocol_version: str | None,
        server_name: str,
        from_server: bool = False,
        peer: Mapping[str, Any] | None = None,
    ) -> tuple[Span, dict[str, Any]]:
        """A span for a request or notification, and its attributes. Client→server messages
        are SERVER spans (the gateway answers for the server), with ``peer``'s
        ``client.address``, ``client.port`` and ``network.protocol.*`` (HTTP); server-initiated
        ones are CLIENT spans."""
        method = msg.method or ""
        params = msg.params
        attrs: dict[str, Any] = {
            sc.MCP_METHOD_NAME: method,
            sc.MCP_SESSION_ID: session_id,
            sc.NETWORK_TRANSPORT: self._transport,
            sc.MCP_SERVER_NAME: server_name,
        }
        if msg.kind == "request" and msg.id is not None:
            attrs[sc.JSONRPC_REQUEST_ID] = str(msg.id)
        if not from_server and peer:
            attrs.update(peer)
        if protocol_version:
            attrs[sc.MCP_PROTOCOL_VERSION] = protocol_version
        target_attr = _TARGETS.get(method)
        if target_attr is not None and isinstance(params.get("name"), str):
            attrs[target_attr] = params["name"]
        if method == "tools/call":
            attrs[sc.GEN_AI_OPERATION_NAME] = sc.OP_EXECUTE_TOOL
            attrs[sc.TOOL_MATCHER_VALUE] = f"{server_name}/{params.get('name', '')}"
        if method in _RESOURCE_METHODS and isinstance(params.get("uri"), str):
            attrs[sc.MCP_RESOURCE_URI] = params["uri"]
        session_ctx = trace.set_span_in_context(session)
        parent = _remote_parent(params)
        links = [Link(session.get_span_context())] if parent is not None else None
        attrs = clean_attributes(attrs)
        span = self._tracer.start_span(
            scrub(span_name(method, params)),
            context=parent if parent is not None else session_ctx,
            kind=SpanKind.CLIENT if from_server else SpanKind.SERVER,
            attributes=attrs,
            links=links,
        )
        return span, attrs

    @staticmethod
    def end(
        span: Span,
        response: Message | None,
        *,
        error_type: str | None = None,
        code: int | None = None,
        from_server: bool = False,
        denied: bool = False,
    ) -> dict[str, Any]:
        """End ``span`` with what answered it; returns the attributes the end added.

        A JSON-RPC error (in ``response``, or the gateway's own ``code``) sets
        ``rpc.response.status_code``, and when its code classifies as an error (see the module
        doc) ``error.type`` to the code and status ``ERROR``; a tool result with ``isError``
        sets ``error.type=tool_error``, unless a hook ``denied`` the call; ``error_type``
        (``cancelled``, ``server_exited``...) names a failure no answer carries, and wins."""
        added: dict[str, Any] = {}
        message: str | None = None
        data = response.data if response is not None else None
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, dict) and code is None:
            code_value = error.get("code")
            code = code_value if isinstance(code_value, int) else None
            message = str(error.get("message", "")) or None
            if code is None and error_type is None:
                error_type = "_OTHER"  # an error object without an integer code
        if code is not None:
            added[sc.RPC_RESPONSE_STATUS_CODE] = str(code)
            if error_type is None and (from_server or code not in NOT_ERRORS_ON_SERVER):
                error_type = str(code)
        elif error_type is None and not denied and isinstance(data, dict):
            result = data.get("result")
            if isinstance(result, dict) and result.get("isError") is True:
                error_type = "tool_error"
        if error_type is not None:
            added[sc.ERROR_TYPE] = error_type
            span.set_status(Status(StatusCode.ERROR, scrub(message or error_type)))
        added = clean_attributes(added)
        span.set_attributes(added)
        span.end()
        return added


def _remote_parent(params: Mapping[str, Any]) -> Any:
    """The context of a W3C ``traceparent`` in ``params._meta``, or ``None``."""
    meta = params.get("_meta")
    if not isinstance(meta, dict) or not isinstance(meta.get("traceparent"), str):
        return None
    carrier = {k: v for k, v in meta.items() if k in ("traceparent", "tracestate")}
    ctx = _PROPAGATOR.extract(carrier)
    if not trace.get_current_span(ctx).get_span_context().is_valid:
        return None
    return ctx
