"""Each coding agent's hook dialect, translated to and from the one bridge.

The bridge (:class:`~otelhooks.integrations.coding_agents.CodingAgentBridge`: sessions, tool-use
pairing, spans, hooks, the daemon) speaks Claude Code's hook schema. A :class:`Dialect` is the
thin part each other CLI needs: its input translated into that schema (event names, fields), and
the bridge's answer translated into the CLI's own output format.

- **Codex CLI** copies Claude Code's schema (same event names, ``tool_name: "Bash"`` with
  ``tool_input.command``, ``permissionDecision: deny`` JSON and exit 2): its answer is the
  bridge's, and its input only gains the names Codex also matches ``apply_patch`` by (``Write``,
  ``Edit``) as ``matcher_aliases``, and a ``Bash`` command that runs its patcher (Codex applies
  ``apply_patch <<'EOF'`` itself) gains ``apply_patch``'s names.
- **Gemini CLI** has its own events (``BeforeTool`` ... ``AfterAgent``) and answers
  (``{"decision": "deny", "reason": ...}``, ``hookSpecificOutput.tool_input`` to rewrite the
  arguments); an MCP tool (``mcp_<server>_<tool>``, with ``mcp_context``) is named
  ``mcp__<server>__<tool>`` as the other CLIs name it (its own name stays a matcher value), and
  a tool asked for by a former name (``search_file_content``) by the current one it runs as;
  its tool events carry no call id, so the bridge pairs ``BeforeTool`` with ``AfterTool`` by
  tool name and arguments (two identical calls at once in one session would be paired in
  either order).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from otelhooks._actions._command_env import inherited_environment
from otelhooks._tool_kinds import GEMINI_LEGACY_NAMES, cli_aliases
from otelhooks.integrations.coding_agents._common import HookResponse, cli_name
from otelhooks.integrations.coding_agents._input import SKILL_COMMAND, as_tool_call, event_name_of
from otelhooks.integrations.coding_agents._startup_noise import startup_noise

__all__ = ["DIALECTS", "GEMINI_EVENTS", "Dialect", "dialect_named"]

_DENIED = "Denied by an otelhooks guard."

# Gemini CLI event -> the bridge's (Claude Code's) event; an event not listed keeps its name
# and becomes an ``agent_lifecycle`` span with its observers (BeforeModel, AfterModel, ...).
GEMINI_EVENTS: dict[str, str] = {
    "SessionStart": "SessionStart",
    "BeforeAgent": "UserPromptSubmit",
    "BeforeTool": "PreToolUse",
    "AfterTool": "PostToolUse",
    "AfterAgent": "Stop",
    "PreCompress": "PreCompact",
    "Notification": "Notification",
    "SessionEnd": "SessionEnd",
}


def _same(payload: dict[str, Any]) -> dict[str, Any]:
    return payload


def _codex_in(payload: dict[str, Any]) -> dict[str, Any]:
    # the names the tool is matched by besides its own (ToolUses' tool_values reads them); a
    # Bash command that runs Codex's patcher is an apply_patch too
    tool_input = payload.get("tool_input")
    args = tool_input if isinstance(tool_input, dict) else None
    aliases = cli_aliases("codex", str(payload.get("tool_name")), args)
    return {**payload, "matcher_aliases": list(aliases)} if aliases else payload


def _same_answer(response: HookResponse) -> HookResponse:
    return response


@dataclass(frozen=True, slots=True)
class Dialect:
    """One CLI's hook dialect.

    Attributes:
        name: the ``--dialect`` value and the CLI's command (``codex``, ``gemini``).
        agent: ``gen_ai.agent.name`` of its spans and the agent id of its events.
        provider: ``gen_ai.provider.name`` (whose models the CLI calls).
        to_bridge: its hook input, as the bridge reads it.
        answer: the bridge's answer, as the CLI reads it.
        events: its event names mapped to the bridge's (documentation, and the installer).
    """

    name: str
    agent: str
    provider: str
    to_bridge: Callable[[dict[str, Any]], dict[str, Any]] = _same
    answer: Callable[[HookResponse], HookResponse] = _same_answer
    events: Mapping[str, str] = field(default_factory=dict)

    @property
    def display_name(self) -> str:
        """The CLI's name as a person knows it, in every message about it (``Codex CLI``).

        Example:
            >>> dialect_named("codex").display_name
            'Codex CLI'
        """
        return cli_name(self.agent)

    def event_of(self, raw: str | bytes) -> str | None:
        """The bridge's name of the event of an input that could not be parsed, when it can be
        read (what a failure answers by: a ``PreToolUse`` is denied under ``--fail-closed``).

        Example:
            >>> dialect_named("gemini").event_of('{"hook_event_name": "BeforeTool", "x": [')
            'PreToolUse'
        """
        seen = event_name_of(raw)
        return self.events.get(seen, seen) if seen else None


def _gemini_in(payload: dict[str, Any]) -> dict[str, Any]:
    name = str(payload.get("hook_event_name") or "")
    out = dict(payload)
    out["gemini_hook_event_name"] = name
    out["hook_event_name"] = GEMINI_EVENTS.get(name, name)
    if name == "AfterAgent":
        out.setdefault("last_assistant_message", payload.get("prompt_response"))
    tool = payload.get("tool_name")
    if isinstance(tool, str):  # a former name runs the current tool: named so, each an alias
        current = GEMINI_LEGACY_NAMES.get(tool, tool)
        aliases = cli_aliases("gemini-cli", current)
        if aliases and not current.startswith("mcp__"):
            out["tool_name"] = current
            out["matcher_aliases"] = list(aliases)
    mcp = payload.get("mcp_context")
    if isinstance(mcp, dict):
        server, tool = mcp.get("server_name"), mcp.get("tool_name")
        if isinstance(server, str) and isinstance(tool, str) and server and tool:
            # Gemini's mcp_<server>_<tool> cannot be split where names hold "_": the context
            # says which server and tool, named as Claude Code and Codex name them (so @mcp
            # and mcp__server__tool guards match, and the gateway's server/tool alias); its own
            # name stays a matcher value, for a guard written from Gemini CLI's reference
            out["matcher_aliases"] = [payload.get("tool_name")]
            out["tool_name"] = f"mcp__{server}__{tool}"
    return out


def _codex_out(response: HookResponse) -> HookResponse:
    """A deny of a tool call, and a block (a tool's output withheld, a prompt refused), is also
    exit 2 with the reason first on stderr (the JSON kept).

    Codex CLI reads a hook's JSON only from a stdout that holds nothing else, and ran the call
    (showed the model the output a guard withheld) when a line came first: bash prints what a
    ``BASH_ENV`` script says (a Docker image's ``.bashrc`` with a conda or nvm banner) before
    the hook's command runs. At exit 2 Codex blocks with stderr as the reason, whatever stdout
    holds; a ``PostToolUse`` block's reason takes the output's place (0.171, checked with the
    real CLI). An allowed rewrite has no such form (:func:`_codex_rewrite`).
    """
    if response.exit_code != 0 or not response.stdout.strip():
        return response
    try:
        data = json.loads(response.stdout)
    except ValueError:
        return response
    if isinstance(data, dict) and data.get("decision") == "block":
        reason = str(data.get("reason") or "").strip() or _DENIED
        stderr = "\n".join(t for t in (reason, response.stderr.strip()) if t)
        return HookResponse(2, response.stdout, stderr, response.http_body)
    specific = data.get("hookSpecificOutput") if isinstance(data, dict) else None
    if not isinstance(specific, dict):
        return response
    if specific.get("permissionDecision") != "deny":
        return _codex_rewrite(response, data, specific)
    # Codex refuses a blank reason at exit 2 too, and runs the call
    reason = str(specific.get("permissionDecisionReason") or "").strip() or _DENIED
    stderr = "\n".join(t for t in (reason, response.stderr.strip()) if t)
    return HookResponse(2, response.stdout, stderr, response.http_body)


def _codex_rewrite(
    response: HookResponse, data: dict[str, Any], specific: dict[str, Any]
) -> HookResponse:
    """An allowed rewrite as it is, unless a line bash prints first (:mod:`._startup_noise`)
    would keep Codex from reading it: Codex then ran the original call. Such a rewrite is a
    deny (exit 2, read whatever stdout holds) whose reason names the cause and the rewritten
    arguments, to call again with."""
    updated = specific.get("updatedInput")
    if not isinstance(updated, dict):
        return response
    noise = startup_noise(inherited_environment())
    if noise is None:
        return response
    reason = (
        f"otelhooks: a hook rewrote this call, but Codex CLI cannot read the rewrite: {noise}, "
        "and Codex reads a hook's answer only from a stdout that holds nothing else; the call "
        f"is denied. The arguments the hook would run instead: {json.dumps(updated)}"
    )
    denied = {k: v for k, v in specific.items() if k != "updatedInput"}
    denied.update(permissionDecision="deny", permissionDecisionReason=reason)
    stdout = json.dumps({**data, "hookSpecificOutput": denied})
    stderr = "\n".join(t for t in (reason, response.stderr.strip()) if t)
    return HookResponse(2, stdout, stderr, response.http_body)


def _gemini_out(response: HookResponse) -> HookResponse:
    """Claude Code's answer in Gemini CLI's words: a deny or block is ``decision: deny``, a
    rewrite is ``hookSpecificOutput.tool_input``, additional context stays where it was."""
    if not response.stdout.strip():
        return response
    try:
        data = json.loads(response.stdout)
    except ValueError:
        return response
    if not isinstance(data, dict):
        return response
    out: dict[str, Any] = {}
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    decision = specific.get("permissionDecision") or data.get("decision")
    reason = specific.get("permissionDecisionReason") or data.get("reason")
    if decision in ("deny", "block"):
        out["decision"] = "deny"
    elif decision == "ask":
        out["decision"] = "ask"
    elif decision == "allow":
        out["decision"] = "allow"
    if reason:
        out["reason"] = str(reason)
    own: dict[str, Any] = {}
    if isinstance(specific.get("updatedInput"), dict):
        own["tool_input"] = specific["updatedInput"]
    if isinstance(specific.get("additionalContext"), str):
        own["additionalContext"] = specific["additionalContext"]
    if own:
        out["hookSpecificOutput"] = own
    for key in ("continue", "stopReason", "systemMessage", "suppressOutput"):
        if key in data:
            out[key] = data[key]
    text = json.dumps(out) if out else ""
    return HookResponse(response.exit_code, text, response.stderr, response.http_body)


DIALECTS: dict[str, Dialect] = {
    # a skill's inline shell command is judged as its shell tool's call (and failed as one)
    "claude-code": Dialect(
        "claude-code",
        "claude-code",
        "anthropic",
        to_bridge=as_tool_call,
        events={SKILL_COMMAND: "PreToolUse"},
    ),
    "codex": Dialect(
        "codex",
        "codex",
        "openai",
        to_bridge=_codex_in,
        answer=_codex_out,
        events={
            e: e
            for e in (
                "SessionStart",
                "UserPromptSubmit",
                "PreToolUse",
                "PermissionRequest",
                "PostToolUse",
                "PreCompact",
                "PostCompact",
                "SubagentStart",
                "SubagentStop",
                "Stop",
                "SessionEnd",
            )
        },
    ),
    "gemini": Dialect(
        "gemini",
        "gemini-cli",
        "gcp.gemini",
        to_bridge=_gemini_in,
        answer=_gemini_out,
        events={
            **GEMINI_EVENTS,
            "BeforeModel": "BeforeModel",
            "AfterModel": "AfterModel",
            "BeforeToolSelection": "BeforeToolSelection",
        },
    ),
}


def dialect_named(name: str) -> Dialect:
    """The dialect called ``name``.

    Raises:
        ValueError: no such dialect.

    Example:
        >>> dialect_named("gemini").agent
        'gemini-cli'
    """
    try:
        return DIALECTS[name]
    except KeyError:
        raise ValueError(f"unknown dialect {name!r} (known: {', '.join(DIALECTS)})") from None
