"""Claude Code's hook events, one row each: the canonical event, the matcher field, the payload.

The table is the documented event list of Claude Code's hooks reference (31 events, read
2026-11-30; see ``docs/adapters.md``) and the model switch events of the pinned CLI (2.1.332).
The bridge handles the tool, turn and session events with their own spans (:mod:`._tools`,
:mod:`._bridge`); every other event, and any name the table does not know, is a *point event*:
a short ``agent_lifecycle`` span in the session trace carrying a span event named after the
Claude Code event, and its canonical event for the observers.

Building a payload never fails on Claude Code's input: fields are read by name with defaults,
unknown fields are kept in ``claudeCode`` (content-like fields only with content capture on),
and a canonical field Claude Code does not report (a compaction's message count) is ``0``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Final

from opentelemetry.util import types

from otelhooks import _semconv as sc
from otelhooks._events import (
    AfterCallAgentEvent,
    AfterCompactEvent,
    BeforeCallAgentEvent,
    BeforeCompactEvent,
    BeforeHumanInterventionEvent,
    GenericEvent,
    HookEvent,
    MessageSentEvent,
    PendingTool,
    ToolBatchEvent,
)
from otelhooks.integrations.coding_agents._environment import PROJECT_DIR_ENV

__all__ = [
    "ALSO_NOW",
    "COMMON_KEYS",
    "CONTENT_KEYS",
    "EVENTS",
    "ClaudeEvent",
    "claude_fields",
    "event_cwd",
    "lifecycle_attributes",
    "matcher_value",
    "own_fields",
    "point_payload",
    "project_dir",
    "turn_attributes",
]

COMMON_KEYS: Final = frozenset(
    {
        "session_id",
        "transcript_path",
        "cwd",
        "permission_mode",
        "hook_event_name",
        "agent_id",
        "agent_type",
    }
)

# Fields that hold what the person or the model wrote: kept out of spans and out of the payload's
# ``claudeCode`` copy unless content capture is on.
CONTENT_KEYS: Final = frozenset(
    {
        "prompt",
        "custom_instructions",
        "compact_summary",
        "last_assistant_message",
        "delta",
        "message",
        "title",
        "tool_input",
        "tool_response",
        "tool_calls",
        "command_args",
        "content",
        "requested_schema",
        "task_subject",
        "task_description",
        "error_details",
        "permission_suggestions",
        "background_tasks",
        "session_crons",
    }
)

Build = Callable[[Mapping[str, Any], dict[str, Any]], HookEvent]


@dataclass(frozen=True, slots=True)
class ClaudeEvent:
    """One documented Claude Code hook event.

    Attributes:
        name: Claude Code's event name.
        canonical: the otelhooks event it maps to.
        handled_by: ``tools``, ``turn`` or ``session`` (own spans), or ``point``.
        matcher: the input field Claude Code's matcher filters on (``None``: no matcher).
        answer: what the bridge may answer (documentation; the rules are in :mod:`._combine`).
    """

    name: str
    canonical: str
    handled_by: str
    matcher: str | None
    answer: str = ""


def _str(payload: Mapping[str, Any], key: str) -> str:
    value = payload.get(key)
    return value if isinstance(value, str) else ""


def _generic(payload: Mapping[str, Any], fields: dict[str, Any]) -> HookEvent:
    return GenericEvent(**fields)


def _permission_request(payload: Mapping[str, Any], fields: dict[str, Any]) -> HookEvent:
    tool = PendingTool(identifier="", apiName=_str(payload, "tool_name") or "tool")
    return BeforeHumanInterventionEvent(**fields, pendingTools=[tool])


def _tool_batch(payload: Mapping[str, Any], fields: dict[str, Any]) -> HookEvent:
    calls = payload.get("tool_calls")
    listed = [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
    return ToolBatchEvent(**fields, stepIndex=0, toolCalls=listed)


def _pre_compact(payload: Mapping[str, Any], fields: dict[str, Any]) -> HookEvent:
    # Claude Code does not report the message or token count of the context it compacts.
    return BeforeCompactEvent(**fields, messageCount=0, tokenCount=0)


def _post_compact(payload: Mapping[str, Any], fields: dict[str, Any]) -> HookEvent:
    return AfterCompactEvent(
        **fields,
        groupId=_str(payload, "trigger") or "compact",
        messagesBefore=0,
        messagesAfter=0,
        summary=_str(payload, "compact_summary"),
    )


def _subagent_start(payload: Mapping[str, Any], fields: dict[str, Any]) -> HookEvent:
    return BeforeCallAgentEvent(**fields, agentId=_str(payload, "agent_type") or "subagent")


def _subagent_stop(payload: Mapping[str, Any], fields: dict[str, Any]) -> HookEvent:
    return AfterCallAgentEvent(
        **fields,
        agentId=_str(payload, "agent_type") or "subagent",
        subOperationId=_str(payload, "agent_id") or None,
    )


def _message_display(payload: Mapping[str, Any], fields: dict[str, Any]) -> HookEvent:
    return MessageSentEvent(
        **fields, channelId="claude-code", target="display", content=_str(payload, "delta")
    )


_WINDOW_TAG: Final = re.compile(r"\[[12]m\]\s*$", re.IGNORECASE)

_POINT_BUILDERS: Final[dict[str, Build]] = {
    "before_human_intervention": _permission_request,
    "after_tool_batch": _tool_batch,
    "before_compact": _pre_compact,
    "after_compact": _post_compact,
    "before_call_agent": _subagent_start,
    "after_call_agent": _subagent_stop,
    "message_sent": _message_display,
}

_DENY = "PreToolUse deny: hookSpecificOutput.permissionDecision (or exit 2)"
_REWRITE = "PreToolUse ask + updatedInput when a hook rewrote the arguments"

EVENTS: Final[dict[str, ClaudeEvent]] = {
    e.name: e
    for e in (
        ClaudeEvent("SessionStart", "session_start", "session", "source"),
        ClaudeEvent("Setup", "setup", "point", "trigger"),
        ClaudeEvent("InstructionsLoaded", "instructions_loaded", "point", "load_reason"),
        ClaudeEvent(
            "UserPromptSubmit",
            "before_agent_start",
            "turn",
            None,
            'decision "block" + reason (or exit 2)',
        ),
        ClaudeEvent("UserPromptExpansion", "user_prompt_expansion", "point", "command_name"),
        ClaudeEvent("MessageDisplay", "message_sent", "point", None),
        ClaudeEvent("PreToolUse", "before_tool_call", "tools", "tool_name", f"{_DENY}; {_REWRITE}"),
        ClaudeEvent("PermissionRequest", "before_human_intervention", "point", "tool_name"),
        ClaudeEvent("PermissionDenied", "on_tool_call_denied", "tools", "tool_name"),
        ClaudeEvent("PostToolUse", "after_tool_call", "tools", "tool_name"),
        ClaudeEvent("PostToolUseFailure", "on_tool_call_error", "tools", "tool_name"),
        ClaudeEvent("PostToolBatch", "after_tool_batch", "point", None),
        ClaudeEvent("Notification", "notification", "point", "notification_type"),
        ClaudeEvent("SubagentStart", "before_call_agent", "point", "agent_type"),
        ClaudeEvent("SubagentStop", "after_call_agent", "point", "agent_type"),
        ClaudeEvent("TaskCreated", "task_created", "point", None),
        ClaudeEvent("TaskCompleted", "task_completed", "point", None),
        ClaudeEvent("Stop", "on_complete", "turn", None),
        ClaudeEvent("StopFailure", "on_error", "turn", "error"),
        # a person (or a permission they denied) stopped the turn (Claude Code 2.1.335)
        ClaudeEvent("Interrupt", "on_stop_by_human_intervention", "turn", "source"),
        ClaudeEvent("TeammateIdle", "teammate_idle", "point", None),
        ClaudeEvent("ConfigChange", "config_change", "point", "source"),
        ClaudeEvent("CwdChanged", "cwd_changed", "point", None),
        ClaudeEvent("DirectoryAdded", "directory_added", "point", "source"),
        ClaudeEvent("FileChanged", "file_changed", "point", "file_path"),
        ClaudeEvent("WorktreeCreate", "worktree_create", "point", None),
        ClaudeEvent("WorktreeRemove", "worktree_remove", "point", None),
        ClaudeEvent("PreCompact", "before_compact", "point", "trigger"),
        ClaudeEvent("PostCompact", "after_compact", "point", "trigger"),
        # a switch of the session's model (Claude Code 2.1.332; its matcher is the resolved
        # model switched to, as Claude Code matches it)
        ClaudeEvent(
            "PreModelSwitch",
            "before_model_switch",
            "point",
            "to_model",
            "PreModelSwitch deny: hookSpecificOutput.permissionDecision (or exit 2)",
        ),
        ClaudeEvent("PostModelSwitch", "after_model_switch", "point", "to_model"),
        ClaudeEvent("Elicitation", "elicitation", "point", "mcp_server_name"),
        ClaudeEvent("ElicitationResult", "elicitation_result", "point", "mcp_server_name"),
        ClaudeEvent("SessionEnd", "session_end", "session", "reason"),
    )
}


# The hook events an input event runs before its answer besides its row's canonical event
# (:meth:`CodingAgentBridge.hooks_now`); ``tests/integrations/test_coding_agents_hooks_now.py``
# holds this to what the handlers run.
ALSO_NOW: Final[dict[str, tuple[str, ...]]] = {
    "PostToolUse": ("tool_result_persist",),
    "PermissionRequest": ("before_tool_call",),  # on changed arguments (request_answered)
    "MessageDisplay": ("message_sending",),
}


def matcher_value(event: ClaudeEvent | None, payload: Mapping[str, Any]) -> str:
    """What an otelhooks matcher runs against for this input (``*`` when nothing)."""
    if event is None or event.matcher is None:
        return "*"
    value = _str(payload, event.matcher)
    if event.matcher == "file_path" and value:
        return PurePath(value).name  # FileChanged matchers name files, not paths
    if event.matcher == "to_model":
        # Claude Code matches a model switch without its context-window tag (``[1m]``)
        value = _WINDOW_TAG.sub("", value).strip() or value
    return value or "*"


def claude_fields(payload: Mapping[str, Any], *, capture: bool) -> dict[str, Any]:
    """The event's own fields (not the common ones); content-like fields only with capture."""
    return {
        k: v
        for k, v in payload.items()
        if k not in COMMON_KEYS and (capture or k not in CONTENT_KEYS)
    }


def event_cwd(payload: Mapping[str, Any]) -> str | None:
    """The folder of the event (the hook input's ``cwd``) when it names one."""
    cwd = payload.get("cwd")
    return cwd if isinstance(cwd, str) and os.path.isabs(cwd) else None


def project_dir(env: Mapping[str, str] = os.environ) -> str | None:
    """The folder Claude Code started in (``$CLAUDE_PROJECT_DIR``, which it gives every command
    hook: the bridge's process, and the daemon, one per project). Only a command-form bridge
    reads it (``serve``'s own environment names none of its sessions' projects)."""
    found = env.get(PROJECT_DIR_ENV)
    return found if found and os.path.isabs(found) else None


def own_fields(
    name: str | None, payload: Mapping[str, Any], *, capture: bool, project: str | None
) -> dict[str, Any]:
    """A hook payload's ``claudeCode``: the event's name, its own fields, its ``cwd`` and the
    project's folder (``projectDir``), the folders a hook judges the event's paths against (a
    Claude ``if`` rule: ``./src/**`` the current folder's, ``/src/**`` the project's; a
    command's ``cwd`` input): a daemon serves the sessions of many folders, and its own is the
    first event's."""
    own: dict[str, Any] = {"hookEventName": name, **claude_fields(payload, capture=capture)}
    cwd = event_cwd(payload)
    if cwd is not None:
        own["cwd"] = cwd
    if project is not None:
        own["projectDir"] = project
    return own


def point_payload(
    event: ClaudeEvent | None,
    payload: Mapping[str, Any],
    common: dict[str, Any],
    *,
    capture: bool,
    project: str | None,
) -> HookEvent:
    """The canonical payload of a point event (a :class:`GenericEvent` for unknown names)."""
    extra = claude_fields(payload, capture=capture)
    name = event.canonical if event is not None else "claude_code_event"
    fields: dict[str, Any] = {
        **common,
        "event": name,
        "claudeCode": own_fields(
            _str(payload, "hook_event_name"), payload, capture=capture, project=project
        ),
    }
    build = _POINT_BUILDERS.get(name)
    if build is None:
        return GenericEvent(
            **fields, agentId="claude-code", matcherValue=matcher_value(event, payload), data=extra
        )
    return build(payload, fields)


def lifecycle_attributes(
    payload: Mapping[str, Any], *, capture: bool
) -> dict[str, types.AttributeValue]:
    """The span-event attributes of a point event: its scalar fields as ``claude_code.<field>``."""
    attrs: dict[str, types.AttributeValue] = {}
    for key, value in claude_fields(payload, capture=capture).items():
        if isinstance(value, bool | int | float) or (isinstance(value, str) and len(value) <= 4096):
            attrs[f"claude_code.{key}"] = value
    for key in ("agent_id", "agent_type"):
        value = payload.get(key)
        if isinstance(value, str):
            attrs[f"claude_code.{key}"] = value
    attrs.update(turn_attributes(payload))
    return attrs


def turn_attributes(payload: Mapping[str, Any]) -> dict[str, types.AttributeValue]:
    """``claude_code.prompt_id`` (the prompt the event belongs to) and
    ``claude_code.effort.level`` (the reasoning effort), when Claude Code sends them.

    Example:
        >>> turn_attributes({"prompt_id": "p-1", "effort": {"level": "high"}})
        {'claude_code.prompt_id': 'p-1', 'claude_code.effort.level': 'high'}
    """
    attrs: dict[str, types.AttributeValue] = {}
    prompt = payload.get("prompt_id")
    if isinstance(prompt, str) and prompt:
        attrs[sc.CLAUDE_CODE_PROMPT_ID] = prompt[:256]
    effort = payload.get("effort")
    level = effort.get("level") if isinstance(effort, dict) else None
    if isinstance(level, str) and level:
        attrs[sc.CLAUDE_CODE_EFFORT_LEVEL] = level[:64]
    return attrs
