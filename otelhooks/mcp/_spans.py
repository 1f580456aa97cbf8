"""MCP spans by the GenAI semantic conventions (``docs/gen-ai/mcp.md``): names and attributes.

One span per JSON-RPC request or notification that crosses the gateway, named
``{mcp.method.name} {target}`` (``tools/call read_file``) or ``{mcp.method.name}``, under one
``mcp.session`` span per MCP session, so a session is one trace. A request whose ``params._meta``
carries a W3C ``traceparent`` continues the client's trace instead and links the session span
(the conventions' rule for servers: the ``_meta`` context is the parent, the ambient one a link).

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
    "GEN_AI_PROMPT_NAME",
    "JSONRPC_REQUEST_ID",
    "MCP_METHOD_NAME",
    "MCP_PROTOCOL_VERSION",
    "MCP_RESOURCE_URI",
    "MCP_SERVER_NAME",
    "MCP_SESSION_ID",
    "NETWORK_TRANSPORT",
    "RPC_RESPONSE_STATUS_CODE",
    "SERVER_ADDRESS",
    "SERVER_PORT",
    "SESSION_SPAN_NAME",
    "McpSpans",
    "clean_attributes",
    "set_attributes",
    "span_name",
]

MCP_METHOD_NAME: Final = "mcp.method.name"
MCP_SESSION_ID: Final = "mcp.session.id"
MCP_PROTOCOL_VERSION: Final = "mcp.protocol.version"
MCP_RESOURCE_URI: Final = "mcp.resource.uri"
JSONRPC_REQUEST_ID: Final = "jsonrpc.request.id"
RPC_RESPONSE_STATUS_CODE: Final = "rpc.response.status_code"
GEN_AI_PROMPT_NAME: Final = "gen_ai.prompt.name"
NETWORK_TRANSPORT: Final = "network.transport"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"
# not in the conventions: which server the gateway fronts (also the matcher's first part)
MCP_SERVER_NAME: Final = "otelhooks.mcp.server.name"
SESSION_SPAN_NAME: Final = "mcp.session"

# Methods whose params name a low-cardinality target for the span name.
_TARGETS: Final = {"tools/call": sc.GEN_AI_TOOL_NAME, "prompts/get": GEN_AI_PROMPT_NAME}
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
        server: ``server.address`` and ``server.port`` of the upstream (HTTP), recorded on the
            spans of client requests, as the conventions ask for "the server behind any
            intermediaries".
    """

    def __init__(
        self, tracer: Tracer, *, transport: str, server: tuple[str, int] | None = None
    ) -> None:
        self._tracer = tracer
        self._transport = transport
        self._server: dict[str, Any] = (
            {SERVER_ADDRESS: server[0], SERVER_PORT: server[1]} if server else {}
        )

    def session(self, session_id: str) -> Span:
        """The root span of a session: every request of the session is its child."""
        return self._tracer.start_span(
            SESSION_SPAN_NAME,
            kind=SpanKind.INTERNAL,
            attributes=clean_attributes(
                {MCP_SESSION_ID: session_id, NETWORK_TRANSPORT: self._transport}
            ),
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
    ) -> Span:
        """A span for a request or notification. Client→server messages are SERVER spans (the
        gateway answers for the server); server-initiated ones are CLIENT spans."""
        method = msg.method or ""
        params = msg.params
        attrs: dict[str, Any] = {
            MCP_METHOD_NAME: method,
            MCP_SESSION_ID: session_id,
            NETWORK_TRANSPORT: self._transport,
            MCP_SERVER_NAME: server_name,
        }
        if msg.kind == "request" and msg.id is not None:
            attrs[JSONRPC_REQUEST_ID] = str(msg.id)
        if not from_server:
            attrs.update(self._server)
        if protocol_version:
            attrs[MCP_PROTOCOL_VERSION] = protocol_version
        target_attr = _TARGETS.get(method)
        if target_attr is not None and isinstance(params.get("name"), str):
            attrs[target_attr] = params["name"]
        if method == "tools/call":
            attrs[sc.GEN_AI_OPERATION_NAME] = sc.OP_EXECUTE_TOOL
            attrs[sc.TOOL_MATCHER_VALUE] = f"{server_name}/{params.get('name', '')}"
        if method in _RESOURCE_METHODS and isinstance(params.get("uri"), str):
            attrs[MCP_RESOURCE_URI] = params["uri"]
        session_ctx = trace.set_span_in_context(session)
        parent = _remote_parent(params)
        links = [Link(session.get_span_context())] if parent is not None else None
        return self._tracer.start_span(
            scrub(span_name(method, params)),
            context=parent if parent is not None else session_ctx,
            kind=SpanKind.CLIENT if from_server else SpanKind.SERVER,
            attributes=clean_attributes(attrs),
            links=links,
        )

    @staticmethod
    def end(span: Span, response: Message | None, *, error_type: str | None = None) -> None:
        """End ``span`` with what answered it: a JSON-RPC error sets ``error.type`` and
        ``rpc.response.status_code`` to its code; a tool result with ``isError`` sets
        ``error.type=tool_error``; ``error_type`` (``cancelled``, ``server_exited``...) wins."""
        message: str | None = None
        data = response.data if response is not None else None
        if error_type is None and isinstance(data, dict):
            error = data.get("error")
            if isinstance(error, dict):
                code = str(error.get("code", "error"))
                span.set_attribute(RPC_RESPONSE_STATUS_CODE, scrub(code))
                error_type = code
                message = str(error.get("message", "")) or None
            else:
                result = data.get("result")
                if isinstance(result, dict) and result.get("isError") is True:
                    error_type = "tool_error"
        if error_type is not None:
            span.set_attribute(sc.ERROR_TYPE, scrub(error_type))
            span.set_status(Status(StatusCode.ERROR, scrub(message or error_type)))
        span.end()


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
