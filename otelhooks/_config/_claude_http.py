"""Claude Code ``http`` hook handlers, run by otelhooks: Claude Code's request and answer.

A ``settings.json`` handler ``{"type": "http", "url": ..., "headers": ..., "allowedEnvVars": ...,
"timeout": ...}`` runs as a control webhook that speaks Claude Code's protocol, as its hooks
reference describes it:

- the request is a POST of the event in Claude Code's *input* format (``session_id``,
  ``hook_event_name``, ``tool_name``, ``tool_input``, ``tool_use_id``, ``prompt``, ...), with
  ``Content-Type: application/json``;
- a 2xx with an empty body is no decision; a 2xx JSON object is read as Claude Code's JSON
  output, as a command hook's is: ``hookSpecificOutput.permissionDecision: "deny"`` (with
  ``permissionDecisionReason``), a top-level ``decision: "block"`` (with ``reason``) and
  ``continue: false`` (with ``stopReason``) block; ``ask`` and ``defer`` keep a tool call from
  running (nobody can be asked from inside a hook chain; the Claude Code bridge passes them on
  for Claude Code to ask); anything else in it decides nothing;
- any other answer (a non-2xx status, a body that is not a JSON object, a connection failure, a
  timeout) is a *non-blocking error*, as in Claude Code: recorded, and the action goes on.

Header values take ``$VAR`` or ``${VAR}``; only variables in ``allowedEnvVars`` are resolved (at
send time, an unset one as an empty string), the others become empty strings (Claude Code's
rule). Resolved values are registered as secrets, so no log or span quotes them. The body is
capped at 64 KiB and the whole exchange at the handler's timeout, through otelhooks' webhook
client.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from otelhooks._actions._command_verdict import CommandBlock
from otelhooks._actions._notes import note
from otelhooks._actions._webhook_config import WebhookConfig
from otelhooks._actions._webhook_http import (
    CONTROL_RESPONSE_LIMIT,
    Delivery,
    prepare,
    send,
)
from otelhooks._config._claude_answer import http_answer
from otelhooks._encoding import dumps
from otelhooks._events import HookEvent, ToolCallEvent, resolve_event
from otelhooks._events._registry import Dialect
from otelhooks._hooks import Block
from otelhooks._paths import working_folder
from otelhooks._redact import register_secret

__all__ = ["ClaudeHttpError", "ClaudeHttpHandler", "claude_headers", "claude_input"]

_VAR: Final = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_OK: Final = tuple(range(200, 300))


class ClaudeHttpError(Exception):
    """The endpoint's answer is not one Claude Code would act on (a non-blocking error)."""


def claude_headers(
    headers: Mapping[str, str], allowed: Sequence[str], environ: Mapping[str, str]
) -> dict[str, str]:
    """Header values resolved as Claude Code does: listed variables from ``environ`` (unset:
    empty), unlisted ones empty.

    Raises:
        ClaudeHttpError: a resolved value cannot be sent as a header (a line break in it).
    """
    permitted = set(allowed)

    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        value = environ.get(name, "") if name in permitted else ""
        if value:
            register_secret(value)
        return value

    # an empty variable leaves "Bearer ": HTTP forbids the trailing space
    resolved = {name: _VAR.sub(one, value).strip() for name, value in headers.items()}
    for name, value in resolved.items():
        if not value.isprintable():
            # never quote the value: it comes from the environment
            raise ClaudeHttpError(f"header {name!r} is not a valid header value once resolved")
    return resolved


def _claude_name(event: str) -> str:
    spec, _ = resolve_event(event)
    names = spec.aliases.get(Dialect.WORKSPACE)
    return names[0] if names else event


def claude_input(payload: HookEvent) -> dict[str, Any]:
    """The event in Claude Code's hook input format (what its own ``http`` hooks receive)."""
    data = payload.model_dump(mode="json", by_alias=True, exclude_none=True)
    body: dict[str, Any] = {
        "session_id": data.get("sessionKey") or "",
        "cwd": working_folder(),
        "hook_event_name": _claude_name(payload.event),
    }
    if "apiName" in data:  # a tool event
        body["tool_name"] = data["apiName"]
        body["tool_input"] = data.get("args", {})
        if data.get("toolCallId"):
            body["tool_use_id"] = data["toolCallId"]
        if "toolOutput" in data:
            body["tool_response"] = data["toolOutput"]
        if "error" in data and payload.event == "on_tool_call_error":
            body["error"] = data["error"]
    if payload.event == "before_agent_start":
        body["prompt"] = data.get("userMessage") or data.get("input") or ""
    original = data.get("claudeCode")
    if isinstance(original, dict):  # an event the Claude Code bridge read: its own fields
        body.update({k: v for k, v in original.items() if k != "hookEventName"})
    return body


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _decision(data: Mapping[str, Any], payload: HookEvent, hook_id: str) -> Block | None:
    """What the answer decides, as a command hook's JSON answer decides it (``continue: false``,
    a deny or a top-level block block; ``ask`` and ``defer`` keep a tool call from running)."""
    if data.get("continue") is False:
        return Block(_text(data.get("stopReason")))
    specific = data.get("hookSpecificOutput")
    if not isinstance(specific, Mapping):
        specific = {}
    permission = specific.get("permissionDecision")
    reason = _text(specific.get("permissionDecisionReason"))
    if permission == "deny":
        return Block(reason)
    if data.get("decision") == "block":
        return Block(_text(data.get("reason")))
    if permission in ("ask", "defer") and isinstance(payload, ToolCallEvent):
        # otelhooks cannot ask a person from inside a hook chain: as a command's ask, it blocks
        said = "asks for confirmation before" if permission == "ask" else "deferred the decision on"
        return CommandBlock(reason or f"Hook {hook_id} {said} this tool call.", decision=permission)
    return None


class ClaudeHttpHandler:
    """Runs one Claude Code ``http`` handler (see the module docstring).

    Args:
        url: where to POST.
        headers: header values with ``$VAR`` / ``${VAR}`` templates.
        allowed_env_vars: the variables the templates may read.
        timeout: seconds for the whole exchange (at most 600).
        hook_id: the hook it runs for: its whole answer (``additionalContext``,
            ``updatedToolOutput``...) is left as a note for the Claude Code bridge.

    Example:
        >>> handler = ClaudeHttpHandler("http://127.0.0.1:8080/hooks", timeout=5)
        >>> handler.config.timeout
        5.0
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        allowed_env_vars: Sequence[str] = (),
        timeout: float = 30.0,
        hook_id: str = "",
    ) -> None:
        self.hook_id = hook_id
        # the headers are resolved per request (Claude Code's rules, not the webhook config's)
        self.headers = dict(headers or {})
        self.allowed_env_vars = tuple(allowed_env_vars)
        self.config = WebhookConfig(url=url, timeout=timeout)
        WebhookConfig(url=url, headers=self.headers)  # header names checked at load

    def __repr__(self) -> str:
        return f"ClaudeHttpHandler({self.config.url!r}, timeout={self.config.timeout:g})"

    def __call__(self, payload: HookEvent) -> Block | None:
        content = dumps(claude_input(payload)).encode()  # never fails (hostile input)
        prepared = prepare(self.config, content, payload.eventId)
        if isinstance(prepared, Delivery):
            raise ClaudeHttpError(prepared.message or "cannot prepare the request")
        prepared.headers.update(claude_headers(self.headers, self.allowed_env_vars, os.environ))
        # one deadline for connect, headers and body, on the webhook I/O loop (hostile answers)
        delivery = send(self.config, prepared, accept=_OK, limit=CONTROL_RESPONSE_LIMIT)
        if not delivery.ok:
            raise ClaudeHttpError(delivery.message or f"status {delivery.status}")
        if not delivery.body.strip():
            return None
        try:
            data: Any = json.loads(delivery.body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ClaudeHttpError(f"the answer is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ClaudeHttpError("the answer is not a JSON object")
        note(self.hook_id, http_answer(self.hook_id, data))
        return _decision(data, payload, self.hook_id)
