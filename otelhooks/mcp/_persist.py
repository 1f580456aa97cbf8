"""``tool_result_persist`` on the answer of a forwarded ``tools/call``: the hooks filter the
tool's result before the client (and its model) reads it.

The hooks see the MCP result object as the server sent it (``content`` blocks,
``structuredContent``, ``isError``). A rewrite to an object is the new result; to a text, one
text block (the ``isError`` the server gave kept). A block answers with a tool result
``isError: true`` carrying the reason, as a deny does: the model reads a failure, never an empty
success, and the call's span has ``otelhooks.tool.outcome=blocked`` (no error status: a hook's
policy). When the hooks themselves fail the client gets a JSON-RPC error that says so: the
result is never passed on unfiltered.
"""

from __future__ import annotations

from typing import Any

import structlog

from otelhooks import _semconv as sc
from otelhooks._engine import HooksEngine
from otelhooks._events import ToolResultPersistEvent
from otelhooks._live import persist_event
from otelhooks.mcp._calls import Pending, deny_answer
from otelhooks.mcp._jsonrpc import INTERNAL_ERROR, Message, encode, error_response

__all__ = ["filters", "persist"]

_log = structlog.get_logger("otelhooks.mcp")


def filters(engine: HooksEngine, pending: Pending | None, msg: Message) -> bool:
    """Whether a ``tool_result_persist`` hook must see ``msg``, the answer of ``pending``."""
    if pending is None or pending.method != "tools/call" or pending.values is None:
        return False
    data = msg.data
    if not isinstance(data, dict) or not isinstance(data.get("result"), dict):
        return False  # a JSON-RPC error carries no result to filter
    return engine.matches("tool_result_persist", pending.values)


async def persist(engine: HooksEngine, msg: Message, pending: Pending) -> tuple[bytes, bool]:
    """The frame to send the client for ``msg`` once the hooks filtered its result, and
    whether they blocked it."""
    data = msg.data
    assert isinstance(data, dict)
    assert pending.values is not None
    result: dict[str, Any] = data["result"]
    event = ToolResultPersistEvent(
        sessionKey=pending.session_id,
        toolName=pending.values[1],
        toolCallId=f"{pending.session_id}:{msg.id}",
        identifier=pending.server,
        apiName=pending.values[1],
        result=result,
    )
    try:
        verdict = await engine.adispatch("tool_result_persist", event, values=pending.values)
    except Exception as exc:  # the hooks failed: say so, never pass the result unfiltered
        _log.error("tool_result_persist hooks failed", tool=event.apiName, error=str(exc))
        return error_response(msg.id, INTERNAL_ERROR, f"otelhooks: hooks failed: {exc}"), False
    span = pending.span
    if verdict.matched:
        span.add_event(sc.EVENT_TOOL_RESULT_PERSIST, persist_event(verdict))
    if verdict.blocked:
        span.set_attribute(sc.TOOL_OUTCOME, "blocked")
        reason = verdict.reason or "blocked by a hook"
        return deny_answer(msg.id, reason), True
    new = verdict.payload.result if isinstance(verdict.payload, ToolResultPersistEvent) else None
    if not verdict.rewritten_by or new == result:
        return msg.raw, False
    if not isinstance(new, dict):
        text = new if isinstance(new, str) else str(new)
        new = {"content": [{"type": "text", "text": text}], "isError": result.get("isError")}
        new = {k: v for k, v in new.items() if v is not None}
    return encode({**data, "result": new}), False
