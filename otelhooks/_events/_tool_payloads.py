"""Payloads of tool calls: before, after, failed, denied, persisted, batched, and their approval."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from otelhooks._events._base import HookEvent
from otelhooks._events._marks import MarksOnFirstRead
from otelhooks._events._spend import RunningSpend
from otelhooks._events._tool_result import ToolResult

__all__ = [
    "AfterHumanInterventionEvent",
    "AfterToolCallEvent",
    "BeforeHumanInterventionEvent",
    "PendingTool",
    "StopByHumanInterventionEvent",
    "ToolBatchEvent",
    "ToolCallDeniedEvent",
    "ToolCallErrorEvent",
    "ToolCallEvent",
    "ToolResultPersistEvent",
]


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
    # the namespace of a namespaced tool (OpenAI Agents' ``tool_namespace``), whose full name is
    # ``{toolNamespace}.{apiName}``; matchers see both names (``matcher_values``)
    toolNamespace: str | None = None
    agentId: str | None = None
    # the arguments' fingerprint when the args themselves are not at hand (a received span's
    # otelhooks.tool.args_fp; "" when it had none)
    argsFp: str | None = None
    # The kernel's names for the same facts, given or taken from LobeHub's (validated after
    # them, by field order): ``toolInput`` is the validated ``args`` object itself, so a change
    # made through either name is one change. Field validators, not an after-validator that
    # assigns: each assignment is a ``__setattr__`` on every tool payload built.
    toolName: str = Field(default="", validate_default=True)
    toolInput: Any = Field(default=None, validate_default=True)
    runId: str | None = Field(default=None, validate_default=True)

    @field_validator("toolName")
    @classmethod
    def _tool_name(cls, value: str, info: ValidationInfo) -> str:
        return value or info.data.get("apiName", "")

    @field_validator("toolInput")
    @classmethod
    def _tool_input(cls, value: Any, info: ValidationInfo) -> Any:
        return info.data.get("args") if value is None else value

    @field_validator("runId")
    @classmethod
    def _run_id(cls, value: str | None, info: ValidationInfo) -> str | None:
        return info.data.get("operationId") if value is None else value

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
    toolNamespace: str | None = None  # as the call's (a namespaced tool's namespace)
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
