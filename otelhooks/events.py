"""Every lifecycle event model and payload type, for typed hook handlers.

Each canonical event (see :data:`EVENTS`) has one pydantic model; a handler receives it and may
return a changed copy (a rewrite), :class:`~otelhooks.Block`, or ``None``.

Example:
    >>> from otelhooks import Block
    >>> from otelhooks.events import MessageSendingEvent
    >>> def no_secrets(event: MessageSendingEvent) -> Block | None:
    ...     return Block("looks like a key") if "sk-" in event.content else None
"""

# Every name by name: a type checker follows no computed list or nested star import, and a
# user's mypy must see `otelhooks.events.ToolCallEvent`.
from otelhooks._events import (
    EVENTS,
    AfterCallAgentEvent,
    AfterCompactEvent,
    AfterHumanInterventionEvent,
    AfterStepEvent,
    AfterToolCallEvent,
    BeforeAgentStartEvent,
    BeforeCallAgentEvent,
    BeforeCompactEvent,
    BeforeHumanInterventionEvent,
    BeforeResetEvent,
    BudgetThresholdEvent,
    CallAgentErrorEvent,
    CompactErrorEvent,
    CompleteEvent,
    CostTotals,
    Dialect,
    ErrorEvent,
    EventSpec,
    GatewayStartEvent,
    GatewayStopEvent,
    GenericEvent,
    HookEvent,
    LlmInputEvent,
    LlmOutputEvent,
    MessageReceivedEvent,
    MessageSendingEvent,
    MessageSentEvent,
    PendingTool,
    RunningSpend,
    SessionEndEvent,
    SessionStartEvent,
    StepEvent,
    StopByHumanInterventionEvent,
    TokenUsage,
    ToolBatchEvent,
    ToolCallDeniedEvent,
    ToolCallErrorEvent,
    ToolCallEvent,
    ToolResult,
    ToolResultPersistEvent,
    all_event_names,
    resolve_event,
)
from otelhooks._hook_step import HookStep
from otelhooks._live import Verdict

__all__ = [
    "EVENTS",
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
    "Dialect",
    "ErrorEvent",
    "EventSpec",
    "GatewayStartEvent",
    "GatewayStopEvent",
    "GenericEvent",
    "HookEvent",
    "HookStep",
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
    "Verdict",
    "all_event_names",
    "resolve_event",
]
