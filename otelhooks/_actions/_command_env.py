"""What a command hook's process gets: the ``HOOK_*`` environment and the stdin document.

Both come from the one JSON form of the event (:func:`otelhooks._encoding.event_json`, which
never fails: lone surrogates, depth, NaN have a defined encoding). Payload values go only here,
never into a command line.

Stdin always carries the whole event, however large. A ``HOOK_*`` variable cannot (Linux refuses
one ``NAME=value`` over 128 KiB): a value over :data:`ENV_VALUE_CAP_BYTES` is replaced by
:func:`truncation_marker`, which says so and points to stdin, and its name is listed in
``HOOK_TRUNCATED``. A guard reads the input from stdin (``input=$(cat)``), never from
``HOOK_TOOL_INPUT`` alone.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from otelhooks._encoding import clean_text, dumps, event_json
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
from otelhooks._paths import working_folder

if TYPE_CHECKING:
    from otelhooks._hooks import Hook

__all__ = [
    "ENV_VALUE_CAP_BYTES",
    "LOG_EXCERPT_CHARS",
    "event_environment",
    "excerpt",
    "hook_environment",
    "inherited_environment",
    "stdin_document",
    "to_json",
    "truncation_marker",
]

ENV_VALUE_CAP_BYTES: Final = 64 * 1024  # Linux refuses a single "NAME=value" over 128 KiB
LOG_EXCERPT_CHARS: Final = 500
# serve's admin token answers approvals and reads every session's events. A command hook needs
# neither, and whatever it runs (a test suite, a linter over the agent's own files) would
# inherit the power to approve the agent's held calls.
WITHHELD_ENV: Final = frozenset({"OTELHOOKS_ADMIN_TOKEN"})
# The environment of the process the event came from, when that is not this one: the bridge
# daemon answers every session of a project, each started with its own (``STRICT=1 claude``).
_EVENT_ENV: ContextVar[Mapping[str, str] | None] = ContextVar("otelhooks_event_env", default=None)


@contextmanager
def event_environment(env: Mapping[str, str]) -> Iterator[None]:
    """Command hooks run within inherit ``env`` instead of this process's environment."""
    token = _EVENT_ENV.set(env)
    try:
        yield
    finally:
        _EVENT_ENV.reset(token)


def inherited_environment() -> dict[str, str]:
    """The environment a command hook inherits: this process's (or the event's, within
    :func:`event_environment`), without serve's admin token.

    Example:
        >>> import os
        >>> os.environ["OTELHOOKS_ADMIN_TOKEN"] = "s3cret"
        >>> "OTELHOOKS_ADMIN_TOKEN" in inherited_environment()
        False
        >>> del os.environ["OTELHOOKS_ADMIN_TOKEN"]
        >>> with event_environment({"STRICT": "1", "OTELHOOKS_ADMIN_TOKEN": "s3cret"}):
        ...     inherited_environment()
        {'STRICT': '1'}
    """
    env = _EVENT_ENV.get()
    return {k: v for k, v in (os.environ if env is None else env).items() if k not in WITHHELD_ENV}


def excerpt(text: str, limit: int = LOG_EXCERPT_CHARS) -> str:
    """``text`` shortened for a log line."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


def to_json(value: Any) -> str:
    """Compact JSON by the one encoding of :mod:`otelhooks._encoding` (never raises)."""
    return dumps(value)


def truncation_marker(name: str, size: int) -> str:
    """What a ``HOOK_*`` variable holds in place of a value too large for the environment.

    It holds none of the value (a prefix would look like the whole input to a guard):

    Example:
        >>> truncation_marker("HOOK_TOOL_INPUT", 70000)
        '[otelhooks:truncated HOOK_TOOL_INPUT 70000 bytes > 65536; read the whole event on stdin]'
    """
    cap = ENV_VALUE_CAP_BYTES
    return f"[otelhooks:truncated {name} {size} bytes > {cap}; read the whole event on stdin]"


def _payload_json(payload: HookEvent) -> dict[str, Any]:
    return event_json(payload)


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
        return name, tool_input, to_json(event_json(payload.result, exclude_none=True))
    if isinstance(payload, ToolCallErrorEvent):
        error = {"success": False, "error": payload.error, "errorType": payload.errorType}
        return name, tool_input, to_json(error)
    return name, tool_input, ""


def _capped(name: str, value: str, truncated: list[str]) -> str:
    value = clean_text(value)
    size = len(value.encode("utf-8"))
    if size <= ENV_VALUE_CAP_BYTES:
        return value
    truncated.append(name)
    return truncation_marker(name, size)


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
    ``HOOK_SPAN_ID``, and ``HOOK_TRUNCATED``: the names of variables whose value was over 64 KiB
    and holds :func:`truncation_marker` instead (the whole event is always on stdin). Variables
    that do not apply are empty strings, never missing. Lone surrogates become U+FFFD and NUL
    characters are dropped (an environment string can hold neither).
    """
    tool_name, tool_input, tool_result = _tool_facts(payload)
    truncated: list[str] = []
    document = to_json(_payload_json(payload))
    triggered = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    env = {
        "HOOK_EVENT_NAME": hook.type,
        "HOOK_CANONICAL_EVENT": payload.event,
        "HOOK_EVENT_PAYLOAD": document,
        "HOOK_MATCHER_VALUE": tool_name or "*",
        "HOOK_TOOL_NAME": tool_name,
        "HOOK_TOOL_INPUT": tool_input,
        "HOOK_TOOL_RESULT": tool_result,
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
    # An environment string cannot hold NUL; JSON values escape it, raw names might not.
    env = {k: _capped(k, v.replace("\x00", ""), truncated) for k, v in env.items()}
    env["HOOK_TRUNCATED"] = ",".join(truncated)
    return env


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
        cwd=working_folder(),
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
        # the tool's own output shape when the runtime gave it (Claude Code's tool_response)
        raw = document.get("toolOutput")
        document["tool_response"] = raw if raw is not None else document.get("result")
    if isinstance(payload, BeforeAgentStartEvent):
        document["prompt"] = payload.userMessage or payload.input
    original = document.get("claudeCode")
    if isinstance(original, dict):  # read by the Claude Code bridge: Claude's own input fields
        document.update({k: v for k, v in original.items() if k != "hookEventName"})
    return document
