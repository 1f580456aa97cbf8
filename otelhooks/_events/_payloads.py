"""Pydantic payload models of every lifecycle event, with the field names of the reference systems.

One JSON form of an event (``model_dump(mode="json", by_alias=True)``) serves webhook bodies,
command stdin and the event log. Where two reference systems describe the same moment with
different field names (LobeHub's ``args`` and the kernel's ``toolInput``), the model carries both,
kept equal, so a user of either system reads the names they know.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from otelhooks._events._marks import MarksOnFirstRead
from otelhooks._events._spend import CostTotals, RunningSpend
from otelhooks._events._tool_result import ToolResult
from otelhooks._sources import SOURCES

__all__ = [
    "AfterCallAgentEvent",
    "AfterCompactEvent",
    "AfterHumanInterventionEvent",
    "AfterStepEvent",
    "AfterToolCallEvent",
    "BeforeAgentStartEvent",
    "BeforeCallAgentEvent",
    "BeforeCompactEvent",
    "BeforeHumanInterventionEvent",
    "BeforeResetEvent",
    "BudgetThresholdEvent",
    "CallAgentErrorEvent",
    "CompactErrorEvent",
    "CompleteEvent",
    "CostTotals",
    "ErrorEvent",
    "GatewayStartEvent",
    "GatewayStopEvent",
    "GenericEvent",
    "HookEvent",
    "LlmInputEvent",
    "LlmOutputEvent",
    "MessageReceivedEvent",
    "MessageSendingEvent",
    "MessageSentEvent",
    "PendingTool",
    "RunningSpend",
    "SessionEndEvent",
    "SessionStartEvent",
    "StepEvent",
    "StopByHumanInterventionEvent",
    "TokenUsage",
    "ToolBatchEvent",
    "ToolCallDeniedEvent",
    "ToolCallErrorEvent",
    "ToolCallEvent",
    "ToolResult",
    "ToolResultPersistEvent",
]


def _now_ms() -> int:
    return SOURCES.now_ms()  # asked at every call: tests swap the clock


def _event_id() -> str:
    return SOURCES.event_id()


class HookEvent(BaseModel):
    """Fields every event carries. ``event`` is the canonical event name (the discriminator).

    ``eventId`` is stable for the event and serves receivers as an idempotency key.
    """

    # defer_build: the 36 schemas are built on first use, not at import (0.4 s of `import`).
    model_config = ConfigDict(
        extra="allow", populate_by_name=True, validate_assignment=False, defer_build=True
    )

    event: str
    eventId: str = Field(default_factory=_event_id)
    timestamp: int = Field(default_factory=_now_ms)
    operationId: str | None = None
    parentOperationId: str | None = None
    sessionKey: str | None = None
    userId: str | None = None
    traceId: str | None = None
    spanId: str | None = None


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


# -- tools --------------------------------------------------------------------------------------


class _ToolContext(HookEvent):
    """The shared tool context (LobeHub ``buildToolCallHookContext``) plus the kernel's names."""

    toolCallId: str
    identifier: str
    apiName: str
    args: dict[str, Any] = Field(default_factory=dict)
    callIndex: int = 0
    stepIndex: int = 0
    assistantMessageId: str | None = None
    executor: str = "server"
    toolSource: str | None = None
    agentId: str | None = None
    # the arguments' fingerprint when the args themselves are not at hand (a received span's
    # otelhooks.tool.args_fp; "" when it had none)
    argsFp: str | None = None
    # kernel names for the same facts
    toolName: str = ""
    toolInput: Any = None
    runId: str | None = None

    @model_validator(mode="after")
    def _mirror_kernel_names(self) -> _ToolContext:
        if not self.toolName:
            self.toolName = self.apiName
        if self.toolInput is None:
            self.toolInput = self.args
        if self.runId is None:
            self.runId = self.operationId
        return self

    @property
    def matcher_value(self) -> str:
        """``identifier/apiName``, the value LobeHub matchers run against."""
        return f"{self.identifier}/{self.apiName}"


class ToolCallEvent(_ToolContext):
    """Before a tool executes (LobeHub ``beforeToolCall``, kernel ``before_tool_call``).

    Handlers may call :meth:`mock` (first accepted mock wins) or :meth:`deny` (the call does
    not run; a deny wins over a mock).

    Example:
        >>> def no_network(event: ToolCallEvent) -> None:
        ...     if event.identifier == "web":
        ...         event.mock({"content": "offline", "success": True})
        >>> def no_rm(event: ToolCallEvent) -> None:
        ...     if event.apiName == "rm":
        ...         event.deny("rm is not allowed")
    """

    # ignored_types: the marks' descriptor (below) is not a field nor a private attribute
    model_config = ConfigDict(ignored_types=(MarksOnFirstRead,))

    event: Literal["before_tool_call"] = "before_tool_call"
    spend: RunningSpend | None = None

    # What the hooks of its chain did to it, made on first read. Not a pydantic private
    # attribute, which pydantic initialises on every payload built and reads through the
    # model's ``__getattr__``: the marks live in the instance's ``__dict__``, which pydantic
    # leaves out of fields, dumps and equality (a shallow ``model_copy`` shares them, as it
    # shared the private attribute: the chain gives its copies marks of their own).
    _marks = MarksOnFirstRead()

    def deny(self, reason: str | None = None) -> bool:
        """Refuse the tool call: it does not run, and the agent is told ``reason`` (LobeHub's
        ``Blocked by beforeToolCall hook.`` without one). The same as returning
        :class:`~otelhooks.Block`, from anywhere in the handler.

        Returns ``True`` when the deny counts, ``False`` when it comes too late (the hook ran
        past its deadline, or the chain has already decided).

        Example:
            >>> event = ToolCallEvent(toolCallId="c1", identifier="fs", apiName="rm")
            >>> event.deny("rm is not allowed")
            True
        """
        marks = self._marks
        if marks.closed:
            return False
        marks.denied = True
        marks.deny_reason = reason
        return True

    @property
    def denied(self) -> bool:
        """Whether a handler called :meth:`deny`."""
        return self._marks.denied

    def mock(self, result: ToolResult | dict[str, Any] | str) -> dict[str, Any] | None:
        """Supply the tool's result instead of running it. The first accepted mock wins.

        Returns LobeHub's ``{"isMocked": True, "result": ...}`` when accepted, ``None`` when an
        earlier hook already mocked the call (or the hook ran past its deadline).
        """
        marks = self._marks
        if marks.mock is not None or marks.closed or marks.denied:
            return None
        if isinstance(result, str):
            result = ToolResult(content=result)
        elif isinstance(result, dict):
            result = ToolResult.model_validate(result)
        marks.mock = result
        return {"isMocked": True, "result": result.model_dump(exclude_none=True)}

    @property
    def mocked_result(self) -> ToolResult | None:
        """The accepted mock, if any."""
        return self._marks.mock


class AfterToolCallEvent(_ToolContext):
    """After a tool completed (LobeHub ``afterToolCall``, kernel ``after_tool_call``)."""

    event: Literal["after_tool_call"] = "after_tool_call"
    content: str = ""
    success: bool = True
    mocked: bool = False
    # what hooks in ``mode: permissive`` would have done to this call, never done:
    # ``"<hook id>: <would>"`` (``no-rm: deny: no rm here``)
    permissive: list[str] = Field(default_factory=list)
    executionTimeMs: float = 0.0
    result: ToolResult = Field(default_factory=ToolResult)
    toolOutput: Any = None
    duration: float = 0.0


class ToolCallErrorEvent(_ToolContext):
    """A tool raised (LobeHub ``onToolCallError``, Claude ``PostToolUseFailure``)."""

    event: Literal["on_tool_call_error"] = "on_tool_call_error"
    error: str
    errorType: str | None = None


class ToolCallDeniedEvent(_ToolContext):
    """A tool call was denied by a hook or a person (Claude ``PermissionDenied``)."""

    event: Literal["on_tool_call_denied"] = "on_tool_call_denied"
    reason: str
    decidedBy: str | None = None


class ToolResultPersistEvent(HookEvent):
    """A tool result is about to be saved (kernel ``tool_result_persist``, intercept)."""

    event: Literal["tool_result_persist"] = "tool_result_persist"
    toolName: str
    toolCallId: str | None = None
    identifier: str | None = None
    apiName: str | None = None
    result: Any = None

    @property
    def matcher_value(self) -> str:
        return f"{self.identifier}/{self.apiName}" if self.identifier else self.toolName


class ToolBatchEvent(HookEvent):
    """All tool calls of a step finished (Claude ``PostToolBatch``)."""

    event: Literal["after_tool_batch"] = "after_tool_batch"
    stepIndex: int
    toolCalls: list[dict[str, Any]] = Field(default_factory=list)


# -- human intervention -------------------------------------------------------------------------


class PendingTool(BaseModel):
    """A tool waiting for approval."""

    identifier: str
    apiName: str
    toolCallId: str | None = None


class BeforeHumanInterventionEvent(HookEvent):
    """Before the agent pauses for approval (LobeHub ``beforeHumanIntervention``)."""

    event: Literal["before_human_intervention"] = "before_human_intervention"
    stepIndex: int = 0
    pendingTools: list[PendingTool] = Field(default_factory=list)


class AfterHumanInterventionEvent(HookEvent):
    """The person decided and the agent resumes (LobeHub ``afterHumanIntervention``)."""

    event: Literal["after_human_intervention"] = "after_human_intervention"
    action: Literal["approve", "reject", "rejectAndContinue"]
    toolCallId: str | None = None
    rejectionReason: str | None = None


class StopByHumanInterventionEvent(HookEvent):
    """A rejection halted the run (LobeHub ``onStopByHumanIntervention``)."""

    event: Literal["on_stop_by_human_intervention"] = "on_stop_by_human_intervention"
    toolCallId: str | None = None
    rejectionReason: str | None = None


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


# -- messages, sessions, gateway ------------------------------------------------------------


class MessageReceivedEvent(HookEvent):
    """An inbound message (kernel ``message_received``)."""

    event: Literal["message_received"] = "message_received"
    content: str
    channelId: str | None = None
    from_: str | None = Field(default=None, alias="from")
    metadata: dict[str, Any] = Field(default_factory=dict)


class MessageSendingEvent(HookEvent):
    """An outbound message before it is sent (kernel ``message_sending``, intercept)."""

    event: Literal["message_sending"] = "message_sending"
    channelId: str
    target: str
    content: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class MessageSentEvent(HookEvent):
    """An outbound message was delivered (kernel ``message_sent``)."""

    event: Literal["message_sent"] = "message_sent"
    channelId: str
    target: str
    content: str
    deliveredAt: int = Field(default_factory=_now_ms)


class SessionStartEvent(HookEvent):
    """A session was created (kernel ``session_start``)."""

    event: Literal["session_start"] = "session_start"
    agentId: str | None = None
    channelId: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class SessionEndEvent(HookEvent):
    """A session ended (kernel ``session_end``)."""

    event: Literal["session_end"] = "session_end"
    reason: str = ""
    duration: float = 0.0
    messageCount: int = 0


class BeforeResetEvent(HookEvent):
    """Before a session reset (kernel ``before_reset``)."""

    event: Literal["before_reset"] = "before_reset"
    reason: str = ""


class GatewayStartEvent(HookEvent):
    """The gateway started (kernel ``gateway_start``)."""

    event: Literal["gateway_start"] = "gateway_start"
    port: int
    host: str


class GatewayStopEvent(HookEvent):
    """The gateway is stopping (kernel ``gateway_stop``)."""

    event: Literal["gateway_stop"] = "gateway_stop"
    reason: str = ""


class GenericEvent(HookEvent):
    """Events the references name without a field list (``Notification``, ``TaskCreated``, ...).

    Their facts go in ``data``; ``matcherValue`` is what a matcher runs against (``*`` if none).
    """

    agentId: str | None = None
    matcherValue: str = "*"
    data: dict[str, Any] = Field(default_factory=dict)
