"""The registry of canonical lifecycle events and the names the four reference dialects use.

Every dialect name is an alias resolved at load time (:func:`resolve_event`); an unknown name is a
:class:`~otelhooks.UnknownEventError` listing the valid names and the closest match.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from otelhooks._errors import UnknownEventError
from otelhooks._events import _agent_payloads as agent
from otelhooks._events import _base as base
from otelhooks._events import _session_payloads as sessions
from otelhooks._events import _tool_payloads as tools

__all__ = [
    "EVENTS",
    "Dialect",
    "EventSpec",
    "all_event_names",
    "resolve_event",
]


class Dialect(StrEnum):
    """The hook systems whose names otelhooks accepts."""

    OTELHOOKS = "otelhooks"
    LOBEHUB = "lobehub"
    KERNEL = "kernel"
    AGENT_OS = "agent_os"
    WORKSPACE = "workspace"  # the workspace engine; Claude Code's names are the same dialect


@dataclass(frozen=True, slots=True)
class EventSpec:
    """One canonical lifecycle event.

    Attributes:
        name: canonical snake_case name (the ``event`` field of its payload).
        category: agent, step, llm, tool, human, compact, subagent, message, session, gateway, ...
        intercept: whether hooks may change or block what happens (run inline, before the action).
        payload: the pydantic payload model.
        otel: how the event appears in OpenTelemetry (documentation, also printed in the README).
        aliases: the event's name in each dialect that has it.
        tool_event: matchers run against the tool (LobeHub allows matchers only on these).
        rewrites: for an intercept event, the payload field the runtime takes from a rewrite.
    """

    name: str
    category: str
    intercept: bool
    payload: type[base.HookEvent]
    otel: str
    aliases: dict[Dialect, tuple[str, ...]] = field(default_factory=dict)
    tool_event: bool = False
    rewrites: str | None = None


L, K, A, W = Dialect.LOBEHUB, Dialect.KERNEL, Dialect.AGENT_OS, Dialect.WORKSPACE

_SPECS: Final[tuple[EventSpec, ...]] = (
    # agent
    EventSpec(
        "before_agent_start",
        "agent",
        True,
        agent.BeforeAgentStartEvent,
        "start of the `invoke_agent {agent}` span (intercept: rewrite or block the input)",
        {K: ("before_agent_start",), W: ("UserPromptSubmit",)},
        rewrites="input",
    ),
    EventSpec(
        "on_complete",
        "agent",
        False,
        agent.CompleteEvent,
        "end of the `invoke_agent` span; `otelhooks.operation.complete_reason`",
        {L: ("onComplete",), K: ("agent_end",), A: ("after_loop",), W: ("Stop",)},
    ),
    EventSpec(
        "on_error",
        "agent",
        False,
        agent.ErrorEvent,
        "`invoke_agent` status ERROR + `exception` event + `otelhooks.agent.errors`",
        {L: ("onError",), A: ("on_error",), W: ("StopFailure",)},
    ),
    EventSpec(
        "on_budget_threshold",
        "agent",
        False,
        agent.BudgetThresholdEvent,
        "span event `otelhooks.on_budget_threshold` on `invoke_agent`",
        {A: ("on_budget_threshold",)},
    ),
    # steps and LLM
    EventSpec(
        "before_step",
        "step",
        False,
        agent.StepEvent,
        "start of a `step {n}` span",
        {L: ("beforeStep",)},
    ),
    EventSpec(
        "after_step",
        "step",
        False,
        agent.AfterStepEvent,
        "end of the `step {n}` span",
        {L: ("afterStep",), A: ("after_turn",)},
    ),
    EventSpec(
        "llm_input",
        "llm",
        False,
        agent.LlmInputEvent,
        "start of a `chat {model}` span",
        {L: ("call_llm",), K: ("llm_input",)},
    ),
    EventSpec(
        "llm_output",
        "llm",
        False,
        agent.LlmOutputEvent,
        "end of the `chat {model}` span, with token usage",
        {K: ("llm_output",)},
    ),
    # tools
    EventSpec(
        "before_tool_call",
        "tool",
        True,
        tools.ToolCallEvent,
        "start of an `execute_tool {tool}` span (intercept: mock, deny, rewrite args)",
        {L: ("beforeToolCall",), K: ("before_tool_call",), W: ("PreToolUse",)},
        tool_event=True,
        rewrites="args",
    ),
    EventSpec(
        "after_tool_call",
        "tool",
        False,
        tools.AfterToolCallEvent,
        "end of the `execute_tool` span",
        {
            L: ("afterToolCall",),
            K: ("after_tool_call",),
            A: ("after_tool_result",),
            W: ("PostToolUse",),
        },
        tool_event=True,
    ),
    EventSpec(
        "on_tool_call_error",
        "tool",
        False,
        tools.ToolCallErrorEvent,
        "`execute_tool` status ERROR + `exception` event",
        {L: ("onToolCallError",), W: ("PostToolUseFailure",)},
        tool_event=True,
    ),
    EventSpec(
        "on_tool_call_denied",
        "tool",
        False,
        tools.ToolCallDeniedEvent,
        "`execute_tool` with `otelhooks.hook.classification=hook_denied`",
        {W: ("PermissionDenied",)},
        tool_event=True,
    ),
    EventSpec(
        "tool_result_persist",
        "tool",
        True,
        tools.ToolResultPersistEvent,
        "span event `otelhooks.tool_result_persist` on `execute_tool` (intercept: filter the "
        "result)",
        {K: ("tool_result_persist",)},
        tool_event=True,
        rewrites="result",
    ),
    EventSpec(
        "after_tool_batch",
        "tool",
        False,
        tools.ToolBatchEvent,
        "span event `otelhooks.after_tool_batch` on the step",
        {W: ("PostToolBatch",)},
    ),
    # human intervention
    EventSpec(
        "before_human_intervention",
        "human",
        True,
        tools.BeforeHumanInterventionEvent,
        "start of a `request_human_approve` span (intercept: a hook may approve or reject)",
        {L: ("beforeHumanIntervention",), W: ("PermissionRequest",)},
    ),
    EventSpec(
        "after_human_intervention",
        "human",
        False,
        tools.AfterHumanInterventionEvent,
        "`otelhooks.approve` / `otelhooks.reject` event and end of `request_human_approve`",
        {L: ("afterHumanIntervention",)},
    ),
    EventSpec(
        "on_stop_by_human_intervention",
        "human",
        False,
        tools.StopByHumanInterventionEvent,
        "operation ends with reason `interrupted`",
        {L: ("onStopByHumanIntervention",), A: ("on_terminate",), W: ("Interrupt",)},
    ),
    # compaction
    EventSpec(
        "before_compact",
        "compact",
        False,
        agent.BeforeCompactEvent,
        "start of a `compress_context` span linked to the operation",
        {L: ("beforeCompact",), K: ("before_compaction",), W: ("PreCompact",)},
    ),
    EventSpec(
        "after_compact",
        "compact",
        False,
        agent.AfterCompactEvent,
        "end of the `compress_context` span, tokens saved",
        {L: ("afterCompact",), K: ("after_compaction",), W: ("PostCompact",)},
    ),
    EventSpec(
        "on_compact_error",
        "compact",
        False,
        agent.CompactErrorEvent,
        "`compress_context` status ERROR + `exception` event",
        {L: ("onCompactError",)},
    ),
    # sub-agents
    EventSpec(
        "before_call_agent",
        "subagent",
        False,
        agent.BeforeCallAgentEvent,
        "start of a `call_agent {agent}` span; the child `invoke_agent` links to the parent",
        {L: ("beforeCallAgent",), W: ("SubagentStart",)},
    ),
    EventSpec(
        "after_call_agent",
        "subagent",
        False,
        agent.AfterCallAgentEvent,
        "end of the `call_agent` span",
        {L: ("afterCallAgent",), W: ("SubagentStop",)},
    ),
    EventSpec(
        "on_call_agent_error",
        "subagent",
        False,
        agent.CallAgentErrorEvent,
        "`call_agent` status ERROR + `exception` event",
        {L: ("onCallAgentError",)},
    ),
    # messages
    EventSpec(
        "message_received",
        "message",
        False,
        sessions.MessageReceivedEvent,
        "span event `otelhooks.message_received`",
        {K: ("message_received",)},
    ),
    EventSpec(
        "message_sending",
        "message",
        True,
        sessions.MessageSendingEvent,
        "start of a `send_message {channel}` span (intercept: rewrite or block)",
        {K: ("message_sending",)},
        rewrites="content",
    ),
    EventSpec(
        "message_sent",
        "message",
        False,
        sessions.MessageSentEvent,
        "end of the `send_message` span",
        {K: ("message_sent",), W: ("MessageDisplay",)},
    ),
    # sessions and the gateway: no enclosing span, so short `agent_lifecycle` spans or events
    EventSpec(
        "session_start",
        "session",
        False,
        sessions.SessionStartEvent,
        "span event, or a short `agent_lifecycle session_start` span",
        {K: ("session_start",), W: ("SessionStart",)},
    ),
    EventSpec(
        "session_end",
        "session",
        False,
        sessions.SessionEndEvent,
        "span event, or a short `agent_lifecycle session_end` span",
        {K: ("session_end",), W: ("SessionEnd",)},
    ),
    EventSpec(
        "before_reset",
        "session",
        False,
        sessions.BeforeResetEvent,
        "span event `otelhooks.before_reset`",
        {K: ("before_reset",)},
    ),
    EventSpec(
        "gateway_start",
        "gateway",
        False,
        sessions.GatewayStartEvent,
        "short `agent_lifecycle gateway_start` span",
        {K: ("gateway_start",)},
    ),
    EventSpec(
        "gateway_stop",
        "gateway",
        False,
        sessions.GatewayStopEvent,
        "short `agent_lifecycle gateway_stop` span",
        {K: ("gateway_stop",)},
    ),
    # the workspace / Claude Code events without a LobeHub or kernel twin
    *(
        EventSpec(
            canonical,
            category,
            False,
            base.GenericEvent,
            f"span event `otelhooks.{canonical}`",
            {W: (claude,)},
            tool_event=tool,
        )
        for canonical, claude, category, tool in (
            ("setup", "Setup", "session", False),
            ("user_prompt_expansion", "UserPromptExpansion", "input", False),
            ("instructions_loaded", "InstructionsLoaded", "input", False),
            ("cwd_changed", "CwdChanged", "input", False),
            ("notification", "Notification", "notification", False),
            ("teammate_idle", "TeammateIdle", "subagent", False),
            ("task_created", "TaskCreated", "task", True),
            ("task_completed", "TaskCompleted", "task", True),
            ("worktree_create", "WorktreeCreate", "workspace", False),
            ("worktree_remove", "WorktreeRemove", "workspace", False),
            ("elicitation", "Elicitation", "input", False),
            ("elicitation_result", "ElicitationResult", "input", False),
            ("config_change", "ConfigChange", "workspace", False),
            ("directory_added", "DirectoryAdded", "workspace", False),
            ("file_changed", "FileChanged", "workspace", False),
            ("before_model_switch", "PreModelSwitch", "llm", False),
            ("after_model_switch", "PostModelSwitch", "llm", False),
        )
    ),
)

EVENTS: Final[dict[str, EventSpec]] = {spec.name: spec for spec in _SPECS}

_BY_NAME: Final[dict[str, tuple[EventSpec, Dialect]]] = {}
for _spec in _SPECS:
    _BY_NAME.setdefault(_spec.name, (_spec, Dialect.OTELHOOKS))
    for _dialect, _names in _spec.aliases.items():
        for _alias in _names:
            known = _BY_NAME.get(_alias)
            if known is not None and known[0] is not _spec:
                raise RuntimeError(f"alias {_alias!r} maps to {known[0].name} and {_spec.name}")
            _BY_NAME.setdefault(_alias, (_spec, _dialect))


def all_event_names() -> list[str]:
    """Every accepted name: canonical names and every dialect alias, sorted."""
    return sorted(_BY_NAME)


def resolve_event(name: str) -> tuple[EventSpec, Dialect]:
    """Resolve a canonical or dialect event name to its spec and the dialect the name belongs to.

    Raises:
        UnknownEventError: the name is unknown; the message lists the valid names and the closest.

    Example:
        >>> resolve_event("PreToolUse")[0].name
        'before_tool_call'
    """
    found = _BY_NAME.get(name)
    if found is not None:
        return found
    close = difflib.get_close_matches(name, _BY_NAME, n=1, cutoff=0.5)
    if not close:
        lowered = {k.lower().replace("_", ""): k for k in _BY_NAME}
        hit = lowered.get(name.lower().replace("_", ""))
        close = [hit] if hit else []
    raise UnknownEventError(name, suggestion=close[0] if close else None, valid=all_event_names())
