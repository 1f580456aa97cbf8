"""The hooks' decision on one ``tools/call``: forward it, rewritten or not, or answer it.

This module's one job is running the ``before_tool_call`` chain on a call a hook matches and
turning its verdict into frames: a deny answers the client with a tool result ``isError: true``
carrying the reason (and queues ``on_tool_call_denied``), as does a call otelhooks refuses itself
before the chain (:func:`refuse`); a mock answers with the mocked content (a tool error when the
tool's ``outputSchema`` needs ``structuredContent`` it lacks), a rewrite forwards the
request with the rewritten arguments. When the hooks themselves fail the client gets a JSON-RPC
error that says so: the call is neither forwarded nor changed silently. The verdict (and who
answered an approval) is recorded on the call's span.
"""

from __future__ import annotations

import structlog

from otelhooks._engine import HooksEngine
from otelhooks._events import ToolCallDeniedEvent, ToolResult
from otelhooks._live import Verdict, refusal
from otelhooks._span_mapping import (
    approval_events,
    security_findings,
    security_findings_enabled,
    verdict_attributes,
)
from otelhooks.mcp._calls import (
    Pending,
    deny_answer,
    mock_answer,
    observe,
    rewritten_frame,
    tool_call_event,
    tool_context,
)
from otelhooks.mcp._jsonrpc import INTERNAL_ERROR, Message, error_response, parse
from otelhooks.mcp._requests import OpenRequests
from otelhooks.mcp._spans import set_attributes

__all__ = ["decide", "refuse"]

_log = structlog.get_logger("otelhooks.mcp")


async def decide(
    engine: HooksEngine,
    requests: OpenRequests,
    msg: Message,
    pending: Pending,
    values: tuple[str, ...],
) -> tuple[bytes | None, bytes | None]:
    """Run the ``before_tool_call`` chain: ``(frame to forward, frame to answer)``; a call
    answered here (denied, mocked, failed) is finished in ``requests``."""
    call = tool_call_event(pending)
    try:
        verdict = await engine.adispatch("before_tool_call", call, values=values)
    except Exception as exc:  # the hooks failed: say so, never forward a changed call
        _log.error("before_tool_call hooks failed", tool=call.apiName, error=str(exc))
        answer = error_response(msg.id, INTERNAL_ERROR, f"otelhooks: hooks failed: {exc}")
        requests.finish(msg.id, parse(answer))
        return None, answer
    if pending.cancelled:  # the client gave up while the hooks ran: nothing to send
        return None, None
    span = pending.span
    if verdict.matched:
        set_attributes(span, verdict_attributes("before_tool_call", verdict))
        for name, attrs, at in approval_events(verdict):  # who answered, on the call's span
            span.add_event(name, attrs, timestamp=at)
        if security_findings_enabled():
            for name, attrs in security_findings(verdict):
                span.add_event(name, attrs)
    if verdict.blocked:
        return None, _deny(engine, requests, msg, pending, verdict)
    if verdict.mock is not None:
        return None, _mock(requests, msg, pending, verdict.mock)
    return rewritten_frame(msg, call, verdict, pending.schema), None


def refuse(
    engine: HooksEngine, requests: OpenRequests, msg: Message, pending: Pending, problem: str
) -> bytes:
    """Deny a call otelhooks itself refuses (``problem``) before any hook runs: recorded and
    told to the observers as a hook's deny, decided by ``otelhooks``."""
    verdict = refusal(problem)
    set_attributes(pending.span, verdict_attributes("before_tool_call", verdict))
    return _deny(engine, requests, msg, pending, verdict)


def _deny(
    engine: HooksEngine, requests: OpenRequests, msg: Message, pending: Pending, verdict: Verdict
) -> bytes:
    reason = verdict.reason or "denied by a hook"
    answer = deny_answer(msg.id, reason)
    observe(
        engine,
        "on_tool_call_denied",
        pending,
        lambda call: ToolCallDeniedEvent(
            **tool_context(call), reason=reason, decidedBy=verdict.decided_by
        ),
    )
    requests.finish(msg.id, parse(answer), observe=False, denied=True)
    return answer


def _mock(requests: OpenRequests, msg: Message, pending: Pending, mock: ToolResult) -> bytes:
    answer = mock_answer(msg.id, mock)
    structured = (mock.model_extra or {}).get("structuredContent")
    if mock.success and pending.output_schema is not None and not isinstance(structured, dict):
        # a client checks the result against the tool's outputSchema and refuses it (the MCP
        # Python SDK raises): the call failed there, so it must not be recorded as a success
        tool = pending.values[1] if pending.values else "the tool"
        problem = (
            f"otelhooks: a hook mocked {tool} without the structuredContent its "
            "outputSchema requires"
        )
        _log.warning("a mock lacks the structuredContent of an outputSchema", problem=problem)
        answer = deny_answer(msg.id, problem)
    requests.finish(msg.id, parse(answer), mocked=True)
    return answer
