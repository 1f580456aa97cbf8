"""Pure mapping between lifecycle events and spans, in one place.

* :func:`verdict_attributes` returns the attributes that record what the hooks of an event did.
* :func:`events_from_foreign_span` turns a span another GenAI instrumentation created
  (``gen_ai.operation.name`` = ``execute_tool`` / ``invoke_agent`` / ``chat``) into the observer
  events otelhooks would have fired for it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import Span, StatusCode
from opentelemetry.util.types import AttributeValue

from otelhooks import _semconv as sc
from otelhooks._engine._values import tool_values
from otelhooks._events import (
    EVENTS,
    AfterToolCallEvent,
    CompleteEvent,
    ErrorEvent,
    HookEvent,
    LlmOutputEvent,
    TokenUsage,
    ToolCallDeniedEvent,
    ToolCallErrorEvent,
    ToolResult,
)
from otelhooks._live import LiveEvent, Verdict

__all__ = [
    "approval_events",
    "events_from_foreign_span",
    "security_findings",
    "security_findings_enabled",
    "span_ids",
    "tool_identity",
    "verdict_attributes",
]

_COMPLETE_REASONS = ("done", "error", "interrupted", "max_steps", "cost_limit")


def span_ids(span: Span | ReadableSpan) -> tuple[str, str]:
    ctx = span.get_span_context()
    assert ctx is not None
    return format(ctx.trace_id, "032x"), format(ctx.span_id, "016x")


def verdict_attributes(event: str, verdict: Verdict) -> dict[str, AttributeValue]:
    """The span attributes that record what the hooks of ``event`` did (pure: the caller
    writes them on a live span, a span record or a replayed span alike)."""
    attrs: dict[str, AttributeValue] = {}
    if verdict.matched:
        attrs[sc.HOOK_MATCHED] = list(verdict.matched)
    if not EVENTS[event].intercept:
        return attrs
    if event == "before_tool_call":
        attrs[sc.HOOK_DECISION] = "deny" if verdict.blocked else "allow"
        attrs[sc.HOOK_MOCKED] = verdict.mock is not None
    if verdict.blocked:
        attrs[sc.HOOK_DECISION_REASON] = verdict.reason or ""
        attrs[sc.HOOK_DECIDED_BY] = verdict.decided_by or ""
        if event == "before_tool_call":
            attrs[sc.HOOK_CLASSIFICATION] = sc.CLASSIFICATION_HOOK_DENIED
    if verdict.mocked_by:
        attrs[sc.HOOK_MOCKED_BY] = verdict.mocked_by
    if verdict.rewritten_by:
        attrs[sc.HOOK_REWRITTEN_BY] = list(verdict.rewritten_by)
    if verdict.errors:
        attrs[sc.HOOK_ERRORS] = list(verdict.errors)
    permissive = [f"{s.hook_id}: {s.permissive}" for s in verdict.steps if s.permissive]
    if permissive:
        attrs[sc.HOOK_PERMISSIVE] = permissive
    return attrs


def approval_events(verdict: Verdict) -> list[tuple[str, dict[str, AttributeValue], int]]:
    """The span events that record how each ``approval:`` hook was answered: ``(name,
    attributes, timestamp in ns)``, for the caller to add to the span of the call that waited
    (pure, like :func:`verdict_attributes`)."""
    return [(n.event_name, n.attributes(), n.answered_ms * 1_000_000) for n in verdict.approvals]


def security_findings_enabled() -> bool:
    """Whether ``OTELHOOKS_EXPERIMENTAL_SECURITY_FINDINGS`` turns the experimental
    ``gen_ai.security.finding`` span events on (read per call: decisions are rare)."""
    flag = os.environ.get(sc.ENV_EXPERIMENTAL_SECURITY_FINDINGS, "")
    return flag.strip().lower() in ("1", "true")


def security_findings(verdict: Verdict) -> list[tuple[str, dict[str, AttributeValue]]]:
    """**Experimental** (the GenAI conventions' guardrail proposal, pull request 427, not
    merged): one ``gen_ai.security.finding`` span event per hook that blocked or rewrote, with
    the guardrail (``otelhooks``), the rule (the hook's id), the verdict and what was done
    (``block`` or ``modify``). Pure; the caller adds them when
    :func:`security_findings_enabled`.

    Example:
        >>> security_findings(Verdict())
        []
    """
    found: list[tuple[str, dict[str, AttributeValue]]] = []

    def finding(hook: str, kind: str) -> None:
        attrs: dict[str, AttributeValue] = {
            sc.GEN_AI_SECURITY_GUARDRAIL_NAME: "otelhooks",
            sc.GEN_AI_SECURITY_POLICY_RULE_ID: hook,
            sc.GEN_AI_SECURITY_VERDICT_TYPE: kind,
            sc.GEN_AI_SECURITY_ACTION_TYPE: kind,
        }
        found.append((sc.EVENT_SECURITY_FINDING, attrs))

    if verdict.blocked:
        finding(verdict.decided_by or "", "block")
    for hook in verdict.rewritten_by:
        finding(hook, "modify")
    return found


def _int(attrs: Mapping[str, Any], key: str) -> int:
    value = attrs.get(key)
    return value if isinstance(value, int) else 0


def tool_identity(attrs: Mapping[str, Any], span_name: str, span_id: str) -> dict[str, Any]:
    """The tool a span of ``execute_tool`` ran: ``toolCallId``, ``identifier``, ``apiName`` and
    ``argsFp``, from otelhooks' attributes or, for other instrumentations, from
    ``gen_ai.tool.name`` (an ``identifier/apiName`` name is split) and the span name. The MCP
    gateway's span names the server apart (``mcp.server.name``): it is the identifier, as the
    gateway's guards see the call (``server/tool``). A namespaced tool's span
    (``otelhooks.tool.namespace``) names it ``{namespace}.{apiName}``: the namespace is told
    apart as ``toolNamespace``.

    Example:
        >>> tool_identity({"gen_ai.tool.name": "fs/rm"}, "execute_tool fs/rm", "ab")["apiName"]
        'rm'
    """
    name = str(attrs.get(sc.GEN_AI_TOOL_NAME, span_name.removeprefix("execute_tool ")))
    identifier = str(attrs.get(sc.TOOL_IDENTIFIER) or attrs.get(sc.MCP_SERVER_NAME) or "")
    api = name
    if not identifier and "/" in name:
        identifier, _, api = name.partition("/")
    found: dict[str, Any] = {
        "toolCallId": str(attrs.get(sc.GEN_AI_TOOL_CALL_ID, span_id)),
        "identifier": identifier,
        "apiName": api,
        "argsFp": str(attrs.get(sc.TOOL_ARGS_FINGERPRINT, "")),
    }
    namespace = attrs.get(sc.TOOL_NAMESPACE)
    if isinstance(namespace, str) and namespace and api.startswith(f"{namespace}."):
        found["apiName"], found["toolNamespace"] = api[len(namespace) + 1 :], namespace
    return found


def events_from_foreign_span(span: ReadableSpan) -> list[LiveEvent]:
    """The observer events for a GenAI span that otelhooks did not create (maybe none)."""
    attrs = span.attributes or {}
    op = attrs.get(sc.GEN_AI_OPERATION_NAME)
    if op not in (sc.OP_EXECUTE_TOOL, sc.OP_INVOKE_AGENT, sc.OP_CHAT):
        return []
    trace_id, span_id = span_ids(span)
    failed = span.status.status_code is StatusCode.ERROR
    error = span.status.description or str(attrs.get(sc.ERROR_TYPE, "error"))
    duration_s = ((span.end_time or 0) - (span.start_time or 0)) / 1e9
    common: dict[str, Any] = {"traceId": trace_id, "spanId": span_id}
    if span.end_time:
        common["timestamp"] = span.end_time // 1_000_000
    conv = attrs.get(sc.GEN_AI_CONVERSATION_ID)
    if isinstance(conv, str):
        common["sessionKey"] = conv
    user = attrs.get(sc.USER_ID)
    if isinstance(user, str):
        common["userId"] = user

    if op == sc.OP_EXECUTE_TOOL:
        tool: dict[str, Any] = {**common, **tool_identity(attrs, span.name, span_id)}
        values = tool_values(tool["identifier"], tool["apiName"], tool.get("toolNamespace"))
        outcome = attrs.get(sc.TOOL_OUTCOME)
        if failed:

            def build_error() -> HookEvent:
                return ToolCallErrorEvent(
                    **tool, error=error, errorType=str(attrs.get(sc.ERROR_TYPE))
                )

            return [LiveEvent("on_tool_call_error", build_error, values=values)]

        if outcome == "interrupted":  # paused for a person: it ends when the run resumes
            return []
        # otelhooks.tool.outcome, when an otelhooks process made the span
        denied = outcome == "denied"
        ok = outcome not in ("error", "denied", "blocked")  # blocked: its result withheld

        def build_after() -> HookEvent:
            state = {"type": "blocked", "classification": sc.CLASSIFICATION_HOOK_DENIED}
            return AfterToolCallEvent(
                **tool,
                success=ok,
                mocked=outcome == "mocked",
                executionTimeMs=duration_s * 1000,
                duration=duration_s,
                result=ToolResult(
                    success=ok, executionTime=duration_s * 1000, state=state if denied else None
                ),
            )

        after = LiveEvent("after_tool_call", build_after, values=values)
        if not denied:
            return [after]

        def build_denied() -> HookEvent:
            return ToolCallDeniedEvent(
                **tool,
                reason=str(attrs.get(sc.HOOK_DECISION_REASON, "")),
                decidedBy=str(attrs.get(sc.HOOK_DECIDED_BY, "")) or None,
            )

        # As in process: the denial, then the after_tool_call that carries the blocked result.
        return [LiveEvent("on_tool_call_denied", build_denied, values=values), after]

    if op == sc.OP_CHAT:

        def build_llm() -> HookEvent:
            return LlmOutputEvent(
                **common,
                model=str(
                    attrs.get(sc.GEN_AI_RESPONSE_MODEL, attrs.get(sc.GEN_AI_REQUEST_MODEL, ""))
                ),
                tokenUsage=TokenUsage(
                    input=_int(attrs, sc.GEN_AI_USAGE_INPUT_TOKENS),
                    output=_int(attrs, sc.GEN_AI_USAGE_OUTPUT_TOKENS),
                ),
            )

        return [LiveEvent("llm_output", build_llm)]

    agent = attrs.get(sc.GEN_AI_AGENT_NAME)
    agent_id = str(attrs.get(sc.GEN_AI_AGENT_ID, agent or ""))

    reason = attrs.get(sc.COMPLETE_REASON)  # set by otelhooks (max_steps, interrupted, ...)
    if reason not in _COMPLETE_REASONS:
        reason = "error" if failed else "done"
    completion: dict[str, Any] = {"reason": reason, "success": reason == "done"}

    def build_complete() -> HookEvent:
        return CompleteEvent(
            **common,
            **completion,
            agentId=agent_id,
            error=error if failed else None,
            duration=duration_s,
        )

    events = [LiveEvent("on_complete", build_complete, values=(agent_id or "*",))]
    if failed:

        def build_err() -> HookEvent:
            error_type = attrs.get(sc.ERROR_TYPE)
            return ErrorEvent(
                **common,
                agentId=agent_id,
                errorMessage=error,
                errorType=error_type if isinstance(error_type, str) else None,
            )

        events.append(LiveEvent("on_error", build_err, values=(agent_id or "*",)))
    return events
