"""A request in flight through the gateway, and what a ``tools/call`` means to the hooks.

The tool-call payload (:class:`ToolCallEvent`) is built only when a hook matches; the answers the
gateway writes itself (a denial, a mock) and the rewritten request are made here, as are the
observer events of a call's outcome (``after_tool_call``, ``on_tool_call_error``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import structlog
from opentelemetry.trace import Span

from otelhooks._engine import HooksEngine
from otelhooks._events import AfterToolCallEvent, ToolCallErrorEvent, ToolCallEvent, ToolResult
from otelhooks._live import Verdict
from otelhooks._tool_schema import rewritten, with_defaults
from otelhooks.mcp._jsonrpc import Message, encode, result_response

__all__ = [
    "Pending",
    "deny_answer",
    "mock_answer",
    "observe",
    "observe_result",
    "request_key",
    "rewritten_frame",
    "tool_call_event",
    "tool_context",
]

_log = structlog.get_logger("otelhooks.mcp")


@dataclass(slots=True)
class Pending:
    """A request waiting for its answer: its span, and for ``tools/call`` what the hooks see."""

    method: str
    span: Span
    started: float
    request_id: Any = None
    # tools/call only: the matcher values, the request (its event is built when a hook needs it)
    values: tuple[str, ...] | None = None
    msg: Message | None = None
    session_id: str = ""
    server: str = ""
    call: ToolCallEvent | None = None
    schema: Any = None  # the tool's listed inputSchema, when a hook judges the call
    output_schema: Any = None  # its listed outputSchema: a mock must give what it requires
    cancelled: bool = False
    # set once the tool_result_persist hooks ran on its answer: the same answer arriving
    # meanwhile (another stream) waits for that result instead of running the hooks again
    persisted: asyncio.Event | None = None
    # the span's kind (a request from the server is a CLIENT span) and its start attributes,
    # which the MCP operation metric records with what its end adds
    from_server: bool = False
    attributes: dict[str, Any] = field(default_factory=dict)


def request_key(request_id: Any) -> Hashable:
    """A dict key for a JSON-RPC id: 1 and "1" are different ids, so they get different keys."""
    if isinstance(request_id, str | int | float) or request_id is None:
        return (request_id.__class__ is str, request_id)
    return ("other", repr(request_id))  # not a valid id; still never a crash


def tool_call_event(pending: Pending) -> ToolCallEvent:
    """The ``before_tool_call`` payload of a pending ``tools/call`` (built once, on first use:
    a call no hook matches never builds one)."""
    if pending.call is not None:
        return pending.call
    msg = pending.msg
    assert msg is not None
    assert pending.values is not None
    args = msg.params.get("arguments")
    ctx = pending.span.get_span_context()
    call = pending.call = ToolCallEvent(
        toolCallId=f"{pending.session_id}:{msg.id}",
        identifier=pending.server,
        apiName=pending.values[1],
        # what the server will run with: the defaults its schema declares filled in
        args=with_defaults(args, pending.schema) if isinstance(args, dict) else {},
        executor="mcp",
        toolSource="mcp",
        sessionKey=pending.session_id,
        traceId=format(ctx.trace_id, "032x") if ctx.is_valid else None,
        spanId=format(ctx.span_id, "016x") if ctx.is_valid else None,
    )
    return call


def deny_answer(request_id: Any, reason: str) -> bytes:
    """The tool result a denied call gets: ``isError`` with the reason as its text."""
    return result_response(
        request_id, {"content": [{"type": "text", "text": reason}], "isError": True}
    )


def mock_answer(request_id: Any, mock: ToolResult) -> bytes:
    """The tool result of a mock (its ``structuredContent``, if any, passed on: a tool with an
    output schema needs it)."""
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": mock.content}],
        "isError": not mock.success,
    }
    extra = mock.model_extra or {}
    if isinstance(extra.get("structuredContent"), dict):
        result["structuredContent"] = extra["structuredContent"]
    return result_response(request_id, result)


def rewritten_frame(msg: Message, call: ToolCallEvent, verdict: Verdict, schema: Any) -> bytes:
    """The request to forward: the original bytes unless a hook changed the arguments (the
    defaults filled in for the guards are not a change: the server fills them in itself)."""
    payload = verdict.payload
    args = payload.args if isinstance(payload, ToolCallEvent) else call.args
    sent = msg.params.get("arguments", {})
    if not isinstance(sent, dict):
        sent = {}
    changed = rewritten(args, sent, schema)
    if changed is None:
        return msg.raw
    data = dict(msg.data)
    data["params"] = {**msg.params, "arguments": changed}
    return encode(data)


def observe(
    engine: HooksEngine, event: str, pending: Pending, build: Callable[[ToolCallEvent], Any]
) -> None:
    """Queue ``event`` for its observers, building its payload only when one matches."""
    values = pending.values
    if values is None or not engine.matches(event, values):
        return
    try:
        engine.dispatch(event, build(tool_call_event(pending)), values=values)
    except Exception as exc:  # an observer's queue problem never changes the relay
        _log.error("observer hooks failed", hook_event=event, error=str(exc))


def observe_result(engine: HooksEngine, pending: Pending, answer: Message, *, mocked: bool) -> None:
    """The outcome of a call for observers: ``after_tool_call``, or ``on_tool_call_error`` for a
    JSON-RPC error (its code as ``errorType``) and an ``isError`` result (``tool_error``)."""
    elapsed_ms = (time.perf_counter() - pending.started) * 1000
    data = answer.data if isinstance(answer.data, dict) else {}
    error = data.get("error")
    if isinstance(error, dict):
        observe(
            engine,
            "on_tool_call_error",
            pending,
            lambda call: ToolCallErrorEvent(
                **tool_context(call),
                error=str(error.get("message", "")),
                errorType=str(error.get("code", "error")),
            ),
        )
        return
    result = data.get("result") if isinstance(data.get("result"), dict) else {}
    assert isinstance(result, dict)
    text = _text(result)
    if result.get("isError") is True:
        observe(
            engine,
            "on_tool_call_error",
            pending,
            lambda call: ToolCallErrorEvent(
                **tool_context(call), error=text, errorType="tool_error"
            ),
        )
        return
    observe(
        engine,
        "after_tool_call",
        pending,
        lambda call: AfterToolCallEvent(
            **tool_context(call),
            content=text,
            success=True,
            mocked=mocked,
            executionTimeMs=elapsed_ms,
            duration=elapsed_ms / 1000,
            result=ToolResult(content=text, success=True, executionTime=elapsed_ms),
            toolOutput=result,
        ),
    )


def tool_context(call: ToolCallEvent) -> dict[str, Any]:
    """The tool context an observer event shares with its ``before_tool_call``."""
    return call.model_dump(
        include={
            "toolCallId",
            "identifier",
            "apiName",
            "args",
            "executor",
            "toolSource",
            "sessionKey",
            "traceId",
            "spanId",
        }
    )


def _text(result: dict[str, Any]) -> str:
    """The text parts of a tool result's ``content``, joined by newlines."""
    content = result.get("content")
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(part.get("text", ""))
        for part in content
        if isinstance(part, dict) and part.get("type") == "text"
    )
