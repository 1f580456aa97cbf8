"""``tool_result_persist`` on the answer of a forwarded ``tools/call``: the hooks filter the
tool's result before the client (and its model) reads it.

The hooks see the MCP result object as the server sent it (``content`` blocks,
``structuredContent``, ``isError``). A rewrite to an object is the new result; to a text, one
text block (the ``isError`` the server gave kept). A block answers with a tool result
``isError: true`` carrying the reason, as a deny does: the model reads a failure, never an empty
success, and the call's span has ``otelhooks.tool.outcome=blocked`` (no error status: a hook's
policy). When the hooks themselves fail the client gets a JSON-RPC error that says so: the
result is never passed on unfiltered.

A call the server answers with a JSON-RPC error is a failed call, and its text is judged as a
failed result is (the rule the in-process adapters follow for a tool's exception): the hooks see
``{"content": [<message>, <the error's other members (data...) as JSON text>], "isError":
true}``; left alone, the error passes as the server sent it; rewritten, the client gets the
error with the same code made from the hooks' text alone (:func:`_error_again`); blocked, the
tool result carrying the reason. An answer that is neither one result object nor one error
object never passes while a hook filters the call: a client could read what no hook judged.
"""

from __future__ import annotations

import json
from typing import Any

import structlog

from otelhooks import _semconv as sc
from otelhooks._engine import HooksEngine
from otelhooks._events import ToolResultPersistEvent
from otelhooks._live import persist_event
from otelhooks.mcp._calls import Pending, deny_answer
from otelhooks.mcp._jsonrpc import (
    INTERNAL_ERROR,
    UPSTREAM_ERROR,
    Message,
    encode,
    error_response,
)

__all__ = ["filters", "persist"]

_log = structlog.get_logger("otelhooks.mcp")


def filters(engine: HooksEngine, pending: Pending | None, msg: Message) -> bool:
    """Whether a ``tool_result_persist`` hook must see ``msg``, the answer of ``pending`` (its
    result, its error, or whatever else the server sent in their place)."""
    if pending is None or pending.method != "tools/call" or pending.values is None:
        return False
    return engine.matches("tool_result_persist", pending.values)


def result_event(pending: Pending, request_id: Any, result: Any) -> ToolResultPersistEvent:
    """The ``tool_result_persist`` event of ``pending``'s call for ``result``: its answer, or
    a message the server sent while the call ran."""
    assert pending.values is not None
    return ToolResultPersistEvent(
        sessionKey=pending.session_id,
        toolName=pending.values[1],
        toolCallId=f"{pending.session_id}:{request_id}",
        identifier=pending.server,
        apiName=pending.values[1],
        result=result,
    )


def judged(data: Any) -> dict[str, Any] | None:
    """What the hooks see of a ``tools/call`` answer ``data``: its result, or its error as a
    failed result; ``None`` for an answer that is neither."""
    if not isinstance(data, dict):
        return None
    result, error = data.get("result"), data.get("error")
    if isinstance(result, dict) and "error" not in data:
        return result
    if not isinstance(error, dict) or "result" in data:
        return None
    message = error.get("message", "")
    content = [{"type": "text", "text": message if isinstance(message, str) else _json(message)}]
    others = {k: v for k, v in error.items() if k not in ("code", "message")}
    if others:
        content.append({"type": "text", "text": _json(others)})
    return {"content": content, "isError": True}


async def persist(engine: HooksEngine, msg: Message, pending: Pending) -> tuple[bytes, bool]:
    """The frame to send the client for ``msg`` once the hooks filtered its result, and
    whether they blocked it."""
    data = msg.data
    assert pending.values is not None
    result = judged(data)
    if result is None:
        _log.error(
            "the MCP server answered a filtered tools/call with neither a result nor an error "
            "object; not passed on",
            tool=pending.values[1],
        )
        reason = "otelhooks: the MCP server's answer is neither a tool result nor an error"
        return error_response(msg.id, UPSTREAM_ERROR, reason), False
    assert isinstance(data, dict)
    event = result_event(pending, msg.id, result)
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
    if "error" in data:
        return encode({**data, "error": _error_again(data["error"], new)}), False
    if not isinstance(new, dict):
        text = new if isinstance(new, str) else str(new)
        new = {"content": [{"type": "text", "text": text}], "isError": result.get("isError")}
        new = {k: v for k, v in new.items() if v is not None}
    return encode({**data, "result": new}), False


def _error_again(error: dict[str, Any], new: Any) -> dict[str, Any]:
    """The JSON-RPC error made from the hooks' rewrite ``new`` of the failed result an
    ``error`` was judged as: its code kept, its message the first text block, its other members
    the second (back from its JSON text when it still is an object of them, else ``data`` the
    text); nothing of the server's error the hooks did not hand back."""
    texts = [new] if isinstance(new, str) else _texts(new)
    out: dict[str, Any] = {"code": error.get("code", INTERNAL_ERROR)}
    rest = "\n".join(texts[1:])
    if rest:
        try:
            members = json.loads(rest)
        except ValueError:
            members = None
        if isinstance(members, dict):
            out.update({k: v for k, v in members.items() if k not in ("code", "message")})
        else:
            out["data"] = rest
    out["message"] = texts[0] if texts else ""
    return out


def _texts(result: Any) -> list[str]:
    content = result.get("content") if isinstance(result, dict) else None
    if not isinstance(content, list):
        return [] if result is None else [str(result)]
    return [
        str(part.get("text", ""))
        for part in content
        if isinstance(part, dict) and part.get("type") == "text"
    ]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
