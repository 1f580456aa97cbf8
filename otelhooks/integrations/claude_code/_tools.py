"""Tool uses of a Claude Code session: ``execute_tool`` spans from ``PreToolUse`` to ``Post*``.

``PreToolUse`` records the start (state file) and runs the ``before_tool_call`` interceptors; a
deny or a mock ends the span at once and is answered in Claude Code's format. ``PostToolUse`` /
``PostToolUseFailure`` / ``PermissionDenied``, in another process, end it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from opentelemetry.util import types

from otelhooks import _semconv as sc
from otelhooks._engine import HooksEngine
from otelhooks._events import (
    AfterToolCallEvent,
    ToolCallDeniedEvent,
    ToolCallErrorEvent,
    ToolCallEvent,
    ToolResult,
)
from otelhooks._fingerprint import canonical_json, fnv1a_64
from otelhooks._live import Verdict
from otelhooks._span_mapping import verdict_attributes
from otelhooks.integrations.claude_code._common import (
    AGENT,
    DenyMode,
    HookResponse,
    Observe,
    text,
)
from otelhooks.integrations.claude_code._spans import (
    SpanRecord,
    SpanWriter,
    attribute_map,
    session_trace_id,
)
from otelhooks.integrations.claude_code._state import BridgeState, OpenTool

__all__ = ["ToolUses"]


def _args(payload: Mapping[str, Any]) -> tuple[str, dict[str, Any], str]:
    """(tool name, tool input, tool use id) of a tool event."""
    name = str(payload.get("tool_name") or "tool")
    raw = payload.get("tool_input")
    args = dict(raw) if isinstance(raw, Mapping) else {"input": raw}
    use_id = str(payload.get("tool_use_id") or f"{name}:{canonical_json(args)}")
    return name, args, use_id


class ToolUses:
    """The tool-use half of the bridge (see the module docstring)."""

    def __init__(
        self,
        *,
        state: BridgeState,
        engine: HooksEngine,
        observe: Observe,
        writer: SpanWriter,
        deny_mode: DenyMode,
        capture: bool,
    ) -> None:
        self.state = state
        self.engine = engine
        self.observe = observe
        self.writer = writer
        self.deny_mode = deny_mode
        self.capture = capture

    def _tool_event(self, tool: OpenTool, args: dict[str, Any] | None = None) -> dict[str, Any]:
        return {
            "sessionKey": tool.session_id,
            "operationId": tool.operation_id,
            "traceId": format(session_trace_id(tool.session_id), "032x"),
            "spanId": format(tool.span_id, "016x"),
            "toolCallId": tool.tool_use_id,
            "identifier": "",
            "apiName": tool.tool_name,
            "args": tool.tool_input if args is None else args,
            "callIndex": tool.call_index,
            "agentId": AGENT,
            "executor": "client",
        }

    def _start_attributes(self, tool: OpenTool) -> dict[str, types.AttributeValue]:
        encoded = canonical_json(tool.tool_input).encode("utf-8")
        attrs: dict[str, types.AttributeValue] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
            sc.GEN_AI_TOOL_NAME: tool.tool_name,
            sc.GEN_AI_TOOL_CALL_ID: tool.tool_use_id,
            sc.GEN_AI_TOOL_TYPE: "function",
            sc.GEN_AI_CONVERSATION_ID: tool.session_id,
            sc.TOOL_IDENTIFIER: "",
            sc.TOOL_MATCHER_VALUE: tool.tool_name,
            sc.TOOL_CALL_INDEX: tool.call_index,
            sc.TOOL_ARGS_FINGERPRINT: format(fnv1a_64(encoded), "016x"),
            sc.TOOL_ARGS_SIZE: len(encoded),
            sc.OPERATION_ID: tool.operation_id,
        }
        if self.capture:
            attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS] = encoded.decode("utf-8")
        return attrs

    def end_tool(
        self,
        tool: OpenTool,
        outcome: str,
        *,
        result: str = "",
        error: str | None = None,
        error_type: str | None = None,
    ) -> None:
        attrs = {**self._start_attributes(tool), **attribute_map(tool.attributes)}
        attrs[sc.TOOL_OUTCOME] = outcome
        attrs[sc.TOOL_RESULT_SIZE] = len(result)
        if self.capture and result:
            attrs[sc.GEN_AI_TOOL_CALL_RESULT] = result
        self.writer.write(
            SpanRecord(
                f"{sc.OP_EXECUTE_TOOL} {tool.tool_name}",
                session_trace_id(tool.session_id),
                tool.span_id,
                tool.parent_span_id,
                tool.start_ns,
                time.time_ns(),
                attrs,
                error=error,
                error_type=error_type,
            )
        )

    @staticmethod
    def _verdict_attributes(verdict: Verdict) -> dict[str, types.AttributeValue]:
        return verdict_attributes("before_tool_call", verdict) if verdict.matched else {}

    def pre(self, session: str, payload: Mapping[str, Any]) -> HookResponse:
        op = self.state.current_operation(session)
        tool_name, args, use_id = _args(payload)
        tool = self.state.start_tool(op, use_id, tool_name, args)
        event = ToolCallEvent(**self._tool_event(tool))
        verdict = self.engine.dispatch(
            "before_tool_call", event, values=(tool_name,), operation_id=op.operation_id
        )
        attrs = self._verdict_attributes(verdict)
        if verdict.blocked or verdict.mock is not None:
            self.state.end_tool(session, use_id)
            return self._refuse(tool, attrs, verdict)
        response = HookResponse()
        rewritten = verdict.payload
        if verdict.rewritten_by and isinstance(rewritten, ToolCallEvent) and rewritten.args != args:
            by = ", ".join(verdict.rewritten_by)
            response = HookResponse(
                stdout=json.dumps(
                    {
                        "hookSpecificOutput": {
                            "hookEventName": "PreToolUse",
                            "permissionDecision": "ask",
                            "permissionDecisionReason": f"arguments rewritten by {by}",
                            "updatedInput": rewritten.args,
                        }
                    }
                )
            )
        if attrs:
            self.state.set_tool_attributes(tool, dict(attrs))
        return response

    def _refuse(
        self, tool: OpenTool, attrs: dict[str, types.AttributeValue], verdict: Verdict
    ) -> HookResponse:
        """A hook denied (or mocked) the call: Claude Code must not run the tool."""
        denied = verdict.blocked
        mock = verdict.mock
        if denied:
            reason = verdict.reason or "Blocked by beforeToolCall hook."
        else:
            assert mock is not None
            reason = f"mocked by {verdict.mocked_by or 'a hook'}: {mock.content}"
        self._end_tool_refused(tool, attrs, "denied" if denied else "mocked", reason)
        context = self._tool_event(tool)
        if denied:
            self.observe(
                "on_tool_call_denied",
                ToolCallDeniedEvent(**context, reason=reason, decidedBy=verdict.decided_by),
                (tool.tool_name,),
            )
        state = {
            "type": "blocked",
            "classification": sc.CLASSIFICATION_HOOK_DENIED,
            "reason": reason,
            "decidedBy": verdict.decided_by,
        }
        result = (
            ToolResult(content=reason, success=False, error=reason, state=state)
            if denied
            else (mock or ToolResult())
        )
        after = AfterToolCallEvent(
            **context,
            content=result.content,
            success=result.success,
            mocked=not denied,
            result=result,
            toolOutput=result.content,
        )
        self.observe("after_tool_call", after, (tool.tool_name,))
        if self.deny_mode == "exit2":
            return HookResponse(2, stderr=reason)
        decision = {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
        return HookResponse(stdout=json.dumps({"hookSpecificOutput": decision}))

    def _end_tool_refused(
        self, tool: OpenTool, attrs: dict[str, types.AttributeValue], outcome: str, reason: str
    ) -> None:
        kept = OpenTool(
            tool.session_id,
            tool.tool_use_id,
            tool.span_id,
            tool.parent_span_id,
            tool.operation_id,
            tool.start_ns,
            tool.tool_name,
            tool.tool_input,
            tool.call_index,
            dict(attrs),
        )
        self.end_tool(kept, outcome, result=reason)

    def _take_tool(self, session: str, payload: Mapping[str, Any]) -> OpenTool:
        """The tool use a ``Post*`` event ends (made up, zero-length, if its start was missed)."""
        tool_name, args, use_id = _args(payload)
        tool = self.state.end_tool(session, use_id)
        if tool is None:
            op = self.state.current_operation(session)
            self.state.start_tool(op, use_id, tool_name, args)
            tool = self.state.end_tool(session, use_id)
            assert tool is not None
        return tool

    def post(self, session: str, name: str, payload: Mapping[str, Any]) -> HookResponse:
        tool = self._take_tool(session, payload)
        elapsed_ms = (time.time_ns() - tool.start_ns) / 1e6
        context = self._tool_event(tool)
        if name == "PostToolUseFailure":
            error = str(payload.get("error") or "the tool failed")
            error_type = "interrupted" if payload.get("is_interrupt") else "ToolError"
            self.end_tool(tool, "error", result=error, error=error, error_type=error_type)
            self.observe(
                "on_tool_call_error",
                ToolCallErrorEvent(**context, error=error, errorType=error_type),
                (tool.tool_name,),
            )
            return HookResponse()
        response = payload.get("tool_response")
        content = text(response)
        self.end_tool(tool, "success", result=content)
        after = AfterToolCallEvent(
            **context,
            content=content,
            success=True,
            executionTimeMs=elapsed_ms,
            duration=elapsed_ms / 1000,
            result=ToolResult(content=content, success=True, executionTime=elapsed_ms),
            toolOutput=response,
        )
        self.observe("after_tool_call", after, (tool.tool_name,))
        return HookResponse()

    def permission_denied(self, session: str, payload: Mapping[str, Any]) -> HookResponse:
        tool = self._take_tool(session, payload)
        reason = str(payload.get("reason") or "denied by Claude Code")
        self.end_tool(tool, "denied", result=reason)
        self.observe(
            "on_tool_call_denied",
            ToolCallDeniedEvent(**self._tool_event(tool), reason=reason, decidedBy=AGENT),
            (tool.tool_name,),
        )
        return HookResponse()
