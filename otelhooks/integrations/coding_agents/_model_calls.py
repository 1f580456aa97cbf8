"""Model calls a CLI's hooks expose (Gemini CLI's ``BeforeModel`` / ``AfterModel``): ``chat``
spans in the turn, and the ``llm_input`` / ``llm_output`` observers.

Claude Code and Codex have no such hooks. Gemini CLI calls its model one request at a time in a
session, so the open call is kept in the state file under one reserved id per session (as a
tool use is, but uncounted: the session's tool uses keep their ``call_index`` 0, 1, 2 ...
whatever model calls run between them); an ``AfterModel`` without its ``BeforeModel`` writes
nothing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from opentelemetry.trace import SpanKind
from opentelemetry.util import types

from otelhooks import _semconv as sc
from otelhooks._events import LlmInputEvent, LlmOutputEvent
from otelhooks.integrations.coding_agents._common import HookResponse
from otelhooks.integrations.coding_agents._part import Part
from otelhooks.integrations.coding_agents._spans import (
    SpanRecord,
    event_ids,
    session_trace_id,
)

__all__ = ["MODEL_CALL_ID", "ModelCalls"]

MODEL_CALL_ID = "otelhooks:model-call"


def _model(payload: Mapping[str, Any]) -> str:
    request = payload.get("llm_request")
    model = request.get("model") if isinstance(request, Mapping) else None
    return str(model or "unknown")


def _usage(payload: Mapping[str, Any]) -> tuple[int, int, list[str]]:
    response = payload.get("llm_response")
    response = response if isinstance(response, Mapping) else {}
    usage = response.get("usageMetadata")
    usage = usage if isinstance(usage, Mapping) else {}
    reasons = [
        str(c.get("finishReason"))
        for c in response.get("candidates") or ()
        if isinstance(c, Mapping) and c.get("finishReason")
    ]
    tokens_in = usage.get("promptTokenCount")
    tokens_out = usage.get("candidatesTokenCount")
    return (
        tokens_in if isinstance(tokens_in, int) else 0,
        tokens_out if isinstance(tokens_out, int) else 0,
        reasons,
    )


class ModelCalls(Part):
    """The model-call half of the bridge (see the module docstring)."""

    def before(self, session: str, payload: Mapping[str, Any]) -> HookResponse:
        """A model request starts: its span is opened, ``llm_input`` observers run."""
        self.state.end_tool(session, MODEL_CALL_ID)  # a call whose AfterModel never came
        call = self.state.begin_tool(session, MODEL_CALL_ID, sc.OP_CHAT, {}, counted=False)
        model = _model(payload)
        request = payload.get("llm_request")
        messages = request.get("messages") if isinstance(request, Mapping) else None
        kept = [m for m in messages or () if isinstance(m, dict)] if self.capture else []
        event = LlmInputEvent(
            **event_ids(session, call.operation_id, call.span_id),
            agentId=self.agent,
            model=model,
            messages=kept,
        )
        self.observe("llm_input", event, (model,))
        return HookResponse()

    def after(self, session: str, payload: Mapping[str, Any]) -> HookResponse:
        """The model answered: the ``chat {model}`` span ends, ``llm_output`` observers run."""
        call = self.state.end_tool(session, MODEL_CALL_ID)
        if call is None:
            return HookResponse()
        model = _model(payload)
        tokens_in, tokens_out, reasons = _usage(payload)
        attributes: dict[str, types.AttributeValue] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
            sc.GEN_AI_PROVIDER_NAME: self.provider,
            sc.GEN_AI_REQUEST_MODEL: model,
            sc.GEN_AI_CONVERSATION_ID: session,
            sc.GEN_AI_USAGE_INPUT_TOKENS: tokens_in,
            sc.GEN_AI_USAGE_OUTPUT_TOKENS: tokens_out,
            sc.OPERATION_ID: call.operation_id,
        }
        if reasons:
            attributes[sc.GEN_AI_RESPONSE_FINISH_REASONS] = reasons
        self.writer.write(
            SpanRecord(
                f"{sc.OP_CHAT} {model}",
                session_trace_id(session),
                call.span_id,
                call.parent_span_id,
                call.start_ns,
                time.time_ns(),
                attributes,
                kind=SpanKind.CLIENT,
            )
        )
        response = payload.get("llm_response")
        text = response.get("text") if isinstance(response, Mapping) else None
        event = LlmOutputEvent.model_validate(
            {
                **event_ids(session, call.operation_id, call.span_id),
                "agentId": self.agent,
                "model": model,
                "response": str(text or "") if self.capture else "",
                "tokenUsage": {"input": tokens_in, "output": tokens_out},
            }
        )
        self.observe("llm_output", event, (model,))
        return HookResponse()
