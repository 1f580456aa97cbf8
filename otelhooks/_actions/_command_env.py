"""What a command hook's process gets: the ``HOOK_*`` environment and the stdin document.

Both come from the one JSON form of the event (``model_dump(mode="json", by_alias=True)``).
Payload values go only here, never into a command line.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from otelhooks._events import (
    EVENTS,
    AfterToolCallEvent,
    BeforeAgentStartEvent,
    Dialect,
    GenericEvent,
    HookEvent,
    ToolCallErrorEvent,
    ToolResultPersistEvent,
)

if TYPE_CHECKING:
    from otelhooks._hooks import Hook

__all__ = [
    "ENV_VALUE_CAP_BYTES",
    "LOG_EXCERPT_CHARS",
    "excerpt",
    "hook_environment",
    "stdin_document",
    "to_json",
]

ENV_VALUE_CAP_BYTES: Final = 64 * 1024  # Linux refuses a single "NAME=value" over 128 KiB
LOG_EXCERPT_CHARS: Final = 500


def excerpt(text: str, limit: int = LOG_EXCERPT_CHARS) -> str:
    """``text`` shortened for a log line."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


def to_json(value: Any) -> str:
    """Compact JSON; what JSON cannot hold becomes its ``str``."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _payload_json(payload: HookEvent) -> dict[str, Any]:
    return payload.model_dump(mode="json", by_alias=True, fallback=str)


def _claude_name(event: str) -> str | None:
    spec = EVENTS.get(event)
    names = spec.aliases.get(Dialect.WORKSPACE, ()) if spec is not None else ()
    return names[0] if names else None


def _tool_facts(payload: HookEvent) -> tuple[str, str, str]:
    """(tool name, tool input JSON, tool result JSON) of a tool event; empty strings otherwise."""
    if isinstance(payload, ToolResultPersistEvent):
        return payload.toolName, "", to_json(payload.result)
    if isinstance(payload, GenericEvent):
        value = payload.matcherValue
        return ("" if value == "*" else value), "", ""
    name = getattr(payload, "toolName", None)
    if not isinstance(name, str):
        return "", "", ""
    tool_input = to_json(getattr(payload, "args", {}))
    if isinstance(payload, AfterToolCallEvent):
        return name, tool_input, to_json(payload.result.model_dump(mode="json", exclude_none=True))
    if isinstance(payload, ToolCallErrorEvent):
        error = {"success": False, "error": payload.error, "errorType": payload.errorType}
        return name, tool_input, to_json(error)
    return name, tool_input, ""


def _capped(name: str, value: str, truncated: list[str]) -> str:
    if len(value.encode("utf-8", "surrogatepass")) <= ENV_VALUE_CAP_BYTES:
        return value
    truncated.append(name)
    return ""


def hook_environment(
    hook: Hook, payload: HookEvent, *, workspace_id: str | None = None
) -> dict[str, str]:
    """The ``HOOK_*`` variables a command gets (added to the inherited environment).

    The workspace engine's: ``HOOK_EVENT_NAME`` (the event name as the hook's config wrote it),
    ``HOOK_EVENT_PAYLOAD`` (the event JSON), ``HOOK_MATCHER_VALUE`` (the tool name on tool events,
    ``*`` otherwise), ``HOOK_TOOL_NAME``, ``HOOK_TOOL_INPUT`` (JSON), ``HOOK_TOOL_RESULT`` (JSON),
    ``HOOK_WORKSPACE_ID``, ``HOOK_TRIGGERED_AT`` (ISO 8601, UTC). Ours besides:
    ``HOOK_CANONICAL_EVENT``, ``HOOK_ID``, ``HOOK_EVENT_ID``, ``HOOK_SESSION_ID``,
    ``HOOK_OPERATION_ID``, ``HOOK_TOOL_USE_ID``, ``HOOK_TOOL_IDENTIFIER``, ``HOOK_TRACE_ID``,
    ``HOOK_SPAN_ID``, and ``HOOK_TRUNCATED``: the names of variables left empty because their
    value was over 64 KiB (the whole event is always on stdin). Variables that do not apply are
    empty strings, never missing.
    """
    tool_name, tool_input, tool_result = _tool_facts(payload)
    truncated: list[str] = []
    document = to_json(_payload_json(payload))
    triggered = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    env = {
        "HOOK_EVENT_NAME": hook.type,
        "HOOK_CANONICAL_EVENT": payload.event,
        "HOOK_EVENT_PAYLOAD": _capped("HOOK_EVENT_PAYLOAD", document, truncated),
        "HOOK_MATCHER_VALUE": tool_name or "*",
        "HOOK_TOOL_NAME": tool_name,
        "HOOK_TOOL_INPUT": _capped("HOOK_TOOL_INPUT", tool_input, truncated),
        "HOOK_TOOL_RESULT": _capped("HOOK_TOOL_RESULT", tool_result, truncated),
        "HOOK_WORKSPACE_ID": workspace_id or os.environ.get("OTELHOOKS_WORKSPACE_ID", ""),
        "HOOK_TRIGGERED_AT": triggered,
        "HOOK_ID": hook.id,
        "HOOK_EVENT_ID": payload.eventId,
        "HOOK_SESSION_ID": payload.sessionKey or "",
        "HOOK_OPERATION_ID": payload.operationId or "",
        "HOOK_TOOL_USE_ID": str(getattr(payload, "toolCallId", None) or ""),
        "HOOK_TOOL_IDENTIFIER": str(getattr(payload, "identifier", None) or ""),
        "HOOK_TRACE_ID": payload.traceId or "",
        "HOOK_SPAN_ID": payload.spanId or "",
    }
    env["HOOK_TRUNCATED"] = ",".join(truncated)
    # An environment string cannot hold NUL; JSON values escape it, raw names might not.
    return {k: v.replace("\x00", "") for k, v in env.items()}


def stdin_document(hook: Hook, payload: HookEvent) -> dict[str, Any]:
    """The JSON a command reads on stdin: the event payload plus Claude Code's input fields.

    Claude's ``session_id``, ``transcript_path`` (``null``: there is no transcript file),
    ``cwd``, ``permission_mode`` (``default``), ``hook_event_name`` (the Claude name when the event
    has one, else the configured name); tool events add ``tool_name``, ``tool_input`` and
    ``tool_use_id``, ``PostToolUse`` adds ``tool_response``, ``UserPromptSubmit`` adds ``prompt``.
    The payload's own camelCase fields (``userMessage``, ``fullPrompt``, ``args``, ...) are
    alongside.
    """
    document = _payload_json(payload)
    document.update(
        session_id=payload.sessionKey or "",
        transcript_path=None,
        cwd=os.getcwd(),
        permission_mode="default",
        hook_event_name=_claude_name(payload.event) or hook.type,
    )
    tool_name = getattr(payload, "toolName", None)
    if isinstance(tool_name, str) and hasattr(payload, "toolCallId"):
        document.update(
            tool_name=tool_name,
            tool_input=document.get("args", document.get("toolInput")),
            tool_use_id=getattr(payload, "toolCallId", None),
        )
    if isinstance(payload, AfterToolCallEvent):
        document["tool_response"] = document.get("result")
    if isinstance(payload, BeforeAgentStartEvent):
        document["prompt"] = payload.userMessage or payload.input
    return document
