"""What a Claude Code tool use records: its ``execute_tool`` span and its hooks' event context.

:class:`ToolSpans` is the base of :class:`~otelhooks.integrations.coding_agents._tools.ToolUses`:
the span a tool use's end writes (its start attributes, the fingerprint and size of its
arguments, its outcome and result), the fields of the events its hooks see, and Claude Code's
own fields of the input. Deciding a call (its guards, their answer) is ``ToolUses``'.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.util import types

from otelhooks import _semconv as sc
from otelhooks._fingerprint import canonical_json, fnv1a_64
from otelhooks._live import Verdict
from otelhooks._span_mapping import verdict_attributes
from otelhooks.integrations.coding_agents._mapping import own_fields
from otelhooks.integrations.coding_agents._part import Part
from otelhooks.integrations.coding_agents._spans import (
    APPROVALS_KEY,
    SpanRecord,
    attribute_map,
    event_ids,
    session_trace_id,
    stored_events,
)
from otelhooks.integrations.coding_agents._state_rows import OpenTool

__all__ = ["ToolSpans"]


class ToolSpans(Part):
    """The span and event side of a tool use (see the module docstring)."""

    def _tool_event(self, tool: OpenTool, args: dict[str, Any] | None = None) -> dict[str, Any]:
        return {
            **event_ids(tool.session_id, tool.operation_id, tool.span_id),
            "toolCallId": tool.tool_use_id,
            "identifier": "",
            "apiName": tool.tool_name,
            "args": tool.tool_input if args is None else args,
            # LobeHub numbers each tool's calls in the operation from 1 (toolPreparation.ts)
            "callIndex": tool.turn_index,
            # the turn's span stands for the assistant message that asked for the tool
            "assistantMessageId": f"msg_{tool.parent_span_id:016x}"
            if tool.parent_span_id
            else None,
            "agentId": self.agent,
            "executor": "client",
        }

    @staticmethod
    def _args_attributes(args: dict[str, Any]) -> dict[str, types.AttributeValue]:
        """Fingerprint and size of the arguments: kept in the state file instead of the
        arguments themselves when content capture is off."""
        encoded = canonical_json(args).encode("utf-8", "replace")
        return {
            sc.TOOL_ARGS_FINGERPRINT: format(fnv1a_64(encoded), "016x"),
            sc.TOOL_ARGS_SIZE: len(encoded),
        }

    def _start_attributes(self, tool: OpenTool) -> dict[str, types.AttributeValue]:
        attrs: dict[str, types.AttributeValue] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
            sc.GEN_AI_TOOL_NAME: tool.tool_name,
            sc.GEN_AI_TOOL_CALL_ID: tool.tool_use_id,
            sc.GEN_AI_TOOL_TYPE: "function",
            sc.GEN_AI_CONVERSATION_ID: tool.session_id,
            sc.GEN_AI_AGENT_NAME: self.agent,
            sc.TOOL_IDENTIFIER: "",
            sc.TOOL_MATCHER_VALUE: tool.tool_name,
            sc.TOOL_CALL_INDEX: tool.call_index,
            sc.OPERATION_ID: tool.operation_id,
        }
        if sc.TOOL_ARGS_FINGERPRINT not in tool.attributes:  # else kept from its start
            attrs.update(self._args_attributes(tool.tool_input))
        if self.capture:
            attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS] = canonical_json(tool.tool_input)
        return attrs

    def end_tool(
        self,
        tool: OpenTool,
        outcome: str,
        *,
        result: str = "",
        error: str | None = None,
        error_type: str | None = None,
        extra: Mapping[str, types.AttributeValue] | None = None,
        events: Sequence[tuple[str, Mapping[str, types.AttributeValue]]] = (),
        end_ns: int | None = None,
    ) -> None:
        if not tool.span_id:  # a tool use never opened here (see _take_tool): nothing to end
            return
        if not self.writer.read:
            return  # no span is written (nothing receives them): its attributes need no building
        kept = dict(tool.attributes)
        approvals = kept.pop(APPROVALS_KEY, None)
        attrs = {**self._start_attributes(tool), **attribute_map(kept), **(extra or {})}
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
                time.time_ns() if end_ns is None else end_ns,
                attrs,
                error=error,
                error_type=error_type,
                events=[*stored_events(approvals), *events],
            )
        )

    @staticmethod
    def _verdict_attributes(verdict: Verdict) -> dict[str, types.AttributeValue]:
        return verdict_attributes("before_tool_call", verdict) if verdict.matched else {}

    def _own(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Claude Code's own fields of the input (content ones with capture), for hooks
        written for Claude Code (they read ``permission_mode``, ``tool_response``...)."""
        return own_fields(
            payload.get("hook_event_name"), payload, capture=self.capture, project=self.project
        )
