"""What Codex CLI and Gemini CLI cannot carry of an answer in Claude Code's schema, and its
stand-in for each: a deny for an ``ask`` or ``defer`` (:func:`deny_unaskable`), a block for a
rewritten tool output (:func:`rewrite_as_block`), and for Codex CLI no field it refuses a whole
answer for (:func:`codex_readable`). :mod:`._combine` applies them to the answer it built."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from otelhooks._config._claude_answer import HookAnswer
from otelhooks.integrations.coding_agents._common import cli_name
from otelhooks.integrations.coding_agents._decisions import block_reason, blocks
from otelhooks.integrations.coding_agents._shapes import main_text

__all__ = [
    "CANNOT",
    "NO_OUTPUT_REWRITE",
    "codex_readable",
    "deny_unaskable",
    "output_withheld_by",
    "rewrite_as_block",
]

# What Codex CLI 0.171 refuses in an answer to these events: it takes the whole answer for a
# failed hook, its deny included, and runs the tool (checked with the real CLI)
_CODEX_REFUSES: Final = {
    "PreToolUse": ("continue", "stopReason", "suppressOutput"),
    "PostToolUse": ("suppressOutput",),
}
# what an agent cannot do with a PreToolUse decision (gen_ai.agent.name), so that a hook's
# `ask` or `defer` would let the call run: Codex CLI 0.171 ignores an `ask` and refuses a
# `defer` (the whole answer), Gemini CLI has no `defer` (both checked with the real CLIs)
CANNOT: Final = {"codex": ("ask", "defer"), "gemini-cli": ("defer",)}
# agents that show the model a tool's own output whatever a PostToolUse hook's
# `updatedToolOutput` says (Codex CLI 0.171's shell tool; Gemini CLI has no such field), and
# the output's text in a block's reason instead (checked with the real CLIs)
NO_OUTPUT_REWRITE: Final = frozenset({"codex", "gemini-cli"})
_CANNOT_SAY: Final = {
    "ask": ("a hook asks a person to confirm this call", "ask a person"),
    "defer": ("a hook defers this call to a decision made elsewhere", "defer a call"),
}


def deny_unaskable(output: dict[str, Any], agent: str) -> None:
    """A ``PreToolUse`` ``ask`` or ``defer`` made a deny for an agent that cannot carry it
    (:data:`CANNOT`: the original call would run, and a rewrite in ``updatedInput`` be dropped),
    its reason saying so and naming the arguments a hook rewrote, to call again with.

    Example:
        >>> out = {"hookSpecificOutput": {"permissionDecision": "defer"}}
        >>> deny_unaskable(out, "gemini-cli")
        >>> out["hookSpecificOutput"]["permissionDecisionReason"].split("; ")[1]
        'Gemini CLI cannot defer a call, so otelhooks denies it'
    """
    specific = output.get("hookSpecificOutput")
    if not isinstance(specific, dict):
        return
    decision = specific.get("permissionDecision")
    if decision not in CANNOT.get(agent, ()):
        return
    said, cannot = _CANNOT_SAY[decision]
    asked = specific.get("permissionDecisionReason") or said
    reason = f"{asked}; {cli_name(agent)} cannot {cannot}, so otelhooks denies it"
    updated = specific.pop("updatedInput", None)
    if isinstance(updated, dict):
        reason += f"; the arguments the hook would run instead: {json.dumps(updated)}"
    specific["permissionDecision"] = "deny"
    specific["permissionDecisionReason"] = reason


def rewrite_as_block(output: dict[str, Any]) -> None:
    """A ``PostToolUse`` ``updatedToolOutput`` (a redaction, an output a hook withheld) made a
    block whose reason is the new output's text, for an agent that would otherwise show the
    model the original (:data:`NO_OUTPUT_REWRITE`); a block already there stands.

    Example:
        >>> out = {"hookSpecificOutput": {"updatedToolOutput": {"stdout": "[redacted]"}}}
        >>> rewrite_as_block(out)
        >>> out["decision"], out["reason"]
        ('block', '[redacted]')
    """
    specific = output.get("hookSpecificOutput")
    updated = None
    if isinstance(specific, dict):  # an MCP tool's output too (Claude Code's own field for it)
        for key in ("updatedToolOutput", "updatedMCPToolOutput"):
            value = specific.pop(key, None)
            updated = value if updated is None else updated
    if updated is not None and output.get("decision") != "block":
        output["decision"] = "block"
        output["reason"] = main_text(updated)


def output_withheld_by(answers: Sequence[HookAnswer], agent: str) -> tuple[str, str] | None:
    """The hook whose ``PostToolUse`` block keeps the tool's output from ``agent``'s model, and
    its reason: Codex CLI and Gemini CLI show the model the block's reason in the output's place
    (:data:`NO_OUTPUT_REWRITE`), Claude Code shows it both. ``None``: no hook blocked, or the
    model reads the output all the same.

    Example:
        >>> blocked = HookAnswer("leak", {"decision": "block", "reason": "key"})
        >>> output_withheld_by([blocked], "codex")
        ('leak', 'key')
    """
    if agent not in NO_OUTPUT_REWRITE:
        return None
    for answer in answers:
        if blocks(answer):
            return answer.hook_id, block_reason(answer) or f"blocked by hook {answer.hook_id}"
    return None


def codex_readable(output: dict[str, Any], event: str, lost: list[str]) -> None:
    """``output`` without what Codex CLI would refuse it for (:data:`_CODEX_REFUSES`): a
    ``continue: false`` on ``PreToolUse`` is already a deny (:func:`~._combine.combine`), the
    stop itself is said in ``lost`` (Codex cannot stop the run before a tool call).

    Example:
        >>> out = {"continue": False, "stopReason": "stop", "hookSpecificOutput": {
        ...     "permissionDecision": "deny", "permissionDecisionReason": "stop"}}
        >>> lost = []
        >>> codex_readable(out, "PreToolUse", lost)
        >>> list(out), lost[0].endswith("the call is denied")
        (['hookSpecificOutput'], True)
    """
    refused = _CODEX_REFUSES.get(event, ())
    if "continue" in refused and output.get("continue") is False:
        lost.append(
            "a hook stopped the run (continue: false), which Codex CLI cannot do before a "
            "tool call: the call is denied"
        )
    for key in refused:
        output.pop(key, None)
