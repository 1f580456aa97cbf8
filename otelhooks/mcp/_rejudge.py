"""A ``tools/call`` whose server changed its tools while the hooks decided it.

The hooks judged the call by the schema its session listed; a server that sends
``notifications/tools/list_changed`` meanwhile (another call of the same client changed it) may
run the call by a new one, in which the arguments mean something else (``"true"`` a string the
guard let pass, a boolean ``True`` the server runs). This module's one job is judging such a
call again, before it is forwarded, by the list the server gives now: a tool it no longer lists
is refused as unknown (-32602), arguments whose types its new schema does not declare are
refused as :func:`._decide.refuse` refuses them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog

from otelhooks._engine import HooksEngine
from otelhooks._tool_schema import type_problem
from otelhooks.mcp._calls import Pending, request_key
from otelhooks.mcp._decide import refuse
from otelhooks.mcp._jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, Message, error_response, parse
from otelhooks.mcp._listing import SessionTools
from otelhooks.mcp._requests import OpenRequests

__all__ = ["judge_again"]

_log = structlog.get_logger("otelhooks.mcp")


async def judge_again(
    engine: HooksEngine,
    requests: OpenRequests,
    listings: SessionTools,
    send: Callable[[bytes], Awaitable[None]] | None,
    msg: Message,
    pending: Pending,
    forward: bytes,
) -> tuple[bytes | None, bytes | None]:
    """``(frame to forward, frame to answer)`` for a call the hooks let through as ``forward``
    after its session's tools changed: listed again (through ``send``, the session's way to
    its server), and refused when the new list does not take its arguments as the hooks read
    them."""
    tool = pending.values[1] if pending.values else ""
    try:
        listed = await listings.list_tools(send, tool)
        answer = None if listed is not None else f"Unknown tool: {tool}"
        code = INVALID_PARAMS
    except Exception as exc:  # never forwarded by a schema the gateway could not read
        _log.error("the gateway could not list the server's tools", error=str(exc))
        listed, answer = None, f"otelhooks: cannot list the server's tools: {exc}"
        code = INTERNAL_ERROR
    if requests.from_client.get(request_key(msg.id)) is not pending:
        return None, None  # answered meanwhile: cancelled, or the server is gone
    if listed is None:
        failure = error_response(msg.id, code, answer or "")
        requests.finish(msg.id, parse(failure))
        return None, failure
    problem = type_problem(parse(forward).params.get("arguments"), listed[1])
    if problem is None:
        return forward, None
    _log.warning("the server's tools changed while the hooks decided; call refused", tool=tool)
    return None, refuse(engine, requests, msg, pending, problem)
