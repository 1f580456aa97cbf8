"""Payloads of an agent's run: its start and end, steps, model calls, compaction, sub-agents."""

from __future__ import annotations

import json
from typing import Any, Final, Literal

from pydantic import BaseModel, Field, model_validator

from otelhooks._events._base import HookEvent
from otelhooks._events._spend import RunningSpend

__all__ = [
    "AfterCallAgentEvent",
    "AfterCompactEvent",
    "AfterStepEvent",
    "BeforeAgentStartEvent",
    "BeforeCallAgentEvent",
    "BeforeCompactEvent",
    "BudgetThresholdEvent",
    "CallAgentErrorEvent",
    "CompactErrorEvent",
    "CompleteEvent",
    "ErrorEvent",
    "LlmInputEvent",
    "LlmOutputEvent",
    "StepEvent",
    "TokenUsage",
]


class TokenUsage(BaseModel):
    """The kernel's token usage shape."""

    input: int = 0
    output: int = 0


# -- agent lifecycle --------------------------------------------------------------------------


class BeforeAgentStartEvent(HookEvent):
    """Before an agent run begins (kernel ``before_agent_start``, Claude ``UserPromptSubmit``)."""

    event: Literal["before_agent_start"] = "before_agent_start"
    agentId: str
    input: str = ""
    userMessage: str = ""
    fullPrompt: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)


class CompleteEvent(HookEvent):
    """The operation reached a terminal state (LobeHub ``onComplete``, kernel ``agent_end``).

    LobeHub's fields: ``reason``, ``status`` (``done`` for the step and cost caps too, as
    LobeHub stores them), ``steps``, ``llmCalls``, ``toolCalls`` (a count), ``totalTokens`` and
    ``cost`` when known. ``success``, ``error``, ``runId`` and ``tokenUsage`` are otelhooks'
    additions; ``duration`` is in seconds (LobeHub's is milliseconds: docs/webhooks.md).
    """

    event: Literal["on_complete"] = "on_complete"
    agentId: str | None = None
    runId: str | None = None
    reason: Literal["done", "error", "interrupted", "max_steps", "cost_limit"] = "done"
    status: str | None = None
    steps: int | None = None
    llmCalls: int | None = None
    toolCalls: int | None = None
    totalTokens: int | None = None
    cost: float | None = None
    success: bool = True
    error: str | None = None
    duration: float = 0.0
    tokenUsage: TokenUsage | None = None
    spend: RunningSpend | None = None

    @model_validator(mode="after")
    def _lobehub_status(self) -> CompleteEvent:
        if self.status is None:
            self.status = _STATUS_OF_REASON[self.reason]
        if self.totalTokens is None and self.tokenUsage is not None:
            self.totalTokens = self.tokenUsage.input + self.tokenUsage.output
        return self


# LobeHub's terminal status of each reason: the step and cost caps end "done" (they produced a
# deliverable), per CompletionLifecycle.statusForReason.
_STATUS_OF_REASON: Final = {
    "done": "done",
    "error": "error",
    "interrupted": "interrupted",
    "max_steps": "done",
    "cost_limit": "done",
}


class ErrorEvent(HookEvent):
    """The operation failed (LobeHub ``onError``).

    ``errorDetail`` is a string, as in LobeHub's ``hooks.ts`` (the error as text, secrets
    scrubbed); ``errorType`` is the stable error code or exception type.
    """

    event: Literal["on_error"] = "on_error"
    agentId: str | None = None
    errorMessage: str
    errorType: str | None = None
    errorDetail: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _detail_as_text(cls, data: Any) -> Any:
        # Callers of older otelhooks passed an object; LobeHub's type is a string.
        if isinstance(data, dict) and isinstance(data.get("errorDetail"), dict):
            detail = data["errorDetail"]
            data = {**data, "errorDetail": json.dumps(detail, default=str) if detail else None}
        return data


class BudgetThresholdEvent(HookEvent):
    """Spend passed a configured fraction of the cost limit (agent OS ``on_budget_threshold``)."""

    event: Literal["on_budget_threshold"] = "on_budget_threshold"
    agentId: str | None = None
    spent: float
    limit: float
    threshold: float
    # what the limit is on: "operation" or "session" (cost in USD), or their "_tokens" twins
    scope: str | None = None
    spend: RunningSpend | None = None


# -- steps and LLM calls ----------------------------------------------------------------------


class StepEvent(HookEvent):
    """Before a step (LobeHub ``beforeStep``)."""

    event: Literal["before_step"] = "before_step"
    stepIndex: int
    agentId: str | None = None


class AfterStepEvent(HookEvent):
    """After a step: content, tool calls and results, usage totals (LobeHub ``afterStep``).

    As in LobeHub's ``hooks.ts``: ``toolCalls`` is the number of tool calls of the step,
    ``toolsCalling`` the calls and ``toolsResult`` their results (id, tool and outcome, never
    content); ``totalInputTokens``/``totalOutputTokens``/``totalSteps``/``totalToolCalls`` are
    the run's totals so far. ``usage`` (this step's tokens) is otelhooks' addition.
    """

    event: Literal["after_step"] = "after_step"
    stepIndex: int
    agentId: str | None = None
    content: str = ""
    toolCalls: int = 0
    toolsCalling: list[dict[str, Any]] = Field(default_factory=list)
    toolsResult: list[dict[str, Any]] = Field(default_factory=list)
    executionTimeMs: float | None = None
    totalInputTokens: int | None = None
    totalOutputTokens: int | None = None
    totalSteps: int | None = None
    totalToolCalls: int | None = None
    usage: TokenUsage = Field(default_factory=TokenUsage)
    spend: RunningSpend | None = None

    @model_validator(mode="before")
    @classmethod
    def _lobehub_names(cls, data: Any) -> Any:
        # Older otelhooks took the lists as toolCalls/toolResults: accept them under the new names.
        if isinstance(data, dict):
            data = dict(data)
            if isinstance(data.get("toolCalls"), list):
                data.setdefault("toolsCalling", data.pop("toolCalls"))
            if "toolResults" in data:
                data.setdefault("toolsResult", data.pop("toolResults"))
            if "toolCalls" not in data:
                data["toolCalls"] = len(data.get("toolsCalling") or ())
        return data


class LlmInputEvent(HookEvent):
    """A prompt goes to the model (kernel ``llm_input``)."""

    event: Literal["llm_input"] = "llm_input"
    agentId: str | None = None
    stepIndex: int | None = None
    model: str
    messages: list[dict[str, Any]] = Field(default_factory=list)
    provider: str | None = None
    spend: RunningSpend | None = None


class LlmOutputEvent(HookEvent):
    """The model answered (kernel ``llm_output``)."""

    event: Literal["llm_output"] = "llm_output"
    agentId: str | None = None
    stepIndex: int | None = None
    model: str | None = None
    response: str = ""
    tokenUsage: TokenUsage = Field(default_factory=TokenUsage)
    provider: str | None = None
    # this call's price in USD (genai-prices; Claude Code's own cost_usd); None: not priced
    costUsd: float | None = None
    spend: RunningSpend | None = None


# -- compaction -------------------------------------------------------------------------------


class BeforeCompactEvent(HookEvent):
    """Before context compression (LobeHub ``beforeCompact``, kernel ``before_compaction``)."""

    event: Literal["before_compact"] = "before_compact"
    agentId: str | None = None
    stepIndex: int = 0
    messageCount: int
    tokenCount: int


class AfterCompactEvent(HookEvent):
    """After context compression (LobeHub ``afterCompact``, kernel ``after_compaction``)."""

    event: Literal["after_compact"] = "after_compact"
    agentId: str | None = None
    stepIndex: int = 0
    groupId: str
    messagesBefore: int
    messagesAfter: int
    summary: str = ""
    originalCount: int = 0
    compactedCount: int = 0
    tokensSaved: int = 0

    @model_validator(mode="after")
    def _mirror_kernel_names(self) -> AfterCompactEvent:
        self.originalCount = self.originalCount or self.messagesBefore
        self.compactedCount = self.compactedCount or self.messagesAfter
        return self


class CompactErrorEvent(HookEvent):
    """Compression failed (LobeHub ``onCompactError``)."""

    event: Literal["on_compact_error"] = "on_compact_error"
    agentId: str | None = None
    stepIndex: int = 0
    tokenCount: int = 0
    error: str


# -- sub-agents ---------------------------------------------------------------------------------


class BeforeCallAgentEvent(HookEvent):
    """Before a sub-agent starts (LobeHub ``beforeCallAgent``). ``agentId`` is the callee."""

    event: Literal["before_call_agent"] = "before_call_agent"
    agentId: str
    instruction: str = ""


class AfterCallAgentEvent(HookEvent):
    """The sub-agent call returned (LobeHub ``afterCallAgent``)."""

    event: Literal["after_call_agent"] = "after_call_agent"
    agentId: str
    subOperationId: str | None = None
    threadId: str | None = None
    success: bool = True


class CallAgentErrorEvent(HookEvent):
    """The sub-agent call failed (LobeHub ``onCallAgentError``)."""

    event: Literal["on_call_agent_error"] = "on_call_agent_error"
    agentId: str
    error: str
