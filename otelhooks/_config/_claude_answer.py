"""One hook's answer as Claude Code reads it: :class:`HookAnswer`, from any kind of hook.

Claude Code's hooks reference ("Exit code output", "JSON output", "HTTP response handling")
reads a hook's answer like this, and so does :func:`command_answer`:

- stdout that starts with ``{`` (white space and a byte-order mark around it ignored) and
  parses as a JSON object is the answer, **on every exit code**; stdout that does not parse is
  plain text, unless it names an answer field: then a deny, block, ask or defer read from it
  (:func:`~otelhooks._actions._command_output.read_answer`) is the answer, as the command
  hook's own reading takes it;
- exit 2 blocks whatever the JSON says; its message is the JSON's blocking reason when it gives
  one, stderr otherwise;
- plain-text stdout on exit 0 is context for ``UserPromptSubmit``, ``UserPromptExpansion`` and
  ``SessionStart`` (and the path for ``WorktreeCreate``); on any other exit code (not 2) it is a
  non-blocking error: no answer.

An ``http`` hook's 2xx JSON body is the same answer (:func:`http_answer`); a Python hook's
:class:`~otelhooks.Block` is a block with its reason (:func:`block_answer`). The Claude Code
bridge collects these answers (:mod:`otelhooks._actions._notes`) and combines them per event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from otelhooks._actions._command_output import Answer, read_answer, stderr_answer, trimmed

__all__ = ["HookAnswer", "block_answer", "command_answer", "http_answer"]


@dataclass(frozen=True, slots=True)
class HookAnswer:
    """What one hook told Claude Code.

    Attributes:
        hook_id: the hook.
        output: its JSON object (``{}`` when it printed none).
        blocked: it blocked by its exit code (exit 2) or by returning :class:`~otelhooks.Block`.
        reason: the message of that block (the JSON's reason, else stderr or the Block's).
        text: plain-text stdout of a successful run (context, or a worktree path).

    Example:
        >>> HookAnswer("h", {"decision": "block"}).output["decision"]
        'block'
    """

    hook_id: str
    output: dict[str, Any] = field(default_factory=dict)
    blocked: bool = False
    reason: str | None = None
    text: str | None = None


def _json_object(stdout: str, stderr: str = "") -> dict[str, Any] | None:
    answer = read_answer(trimmed(stdout))
    if answer is None:
        # a deny on stderr, stdout empty: read as the command hook's own reading reads it
        answer = stderr_answer(stdout, stderr)
    if answer is None:
        return None  # Claude Code reads it as plain text
    if not answer.whole and not answer.blocks:
        # a broken answer's allow is not taken (the command hook's failure says why)
        return None
    return answer.fields


def _json_reason(output: dict[str, Any]) -> str | None:
    """The blocking reason a JSON answer gives, if any."""
    specific = output.get("hookSpecificOutput")
    if isinstance(specific, dict):
        for key in ("permissionDecisionReason",):
            value = specific.get(key)
            if isinstance(value, str) and value and specific.get("permissionDecision") == "deny":
                return value
    reason = output.get("reason")
    if output.get("decision") == "block" and isinstance(reason, str) and reason:
        return reason
    return None


def command_answer(
    hook_id: str, exit_code: int | None, stdout: str, stderr: str
) -> HookAnswer | None:
    """A command's answer by Claude Code's rules (``None``: no answer, a non-blocking error or a
    command that timed out or did not start).

    Example:
        >>> command_answer("h", 1, '{"decision": "block", "reason": "no"}', "").output["reason"]
        'no'
        >>> command_answer("h", 2, "", "no rm\\n").reason
        'no rm'
    """
    # exit 2's stderr is its reason, read below; a deny on stderr is read at any other exit
    output = _json_object(stdout, stderr if exit_code != 2 else "")
    if exit_code is None:
        # timed out (or never started): a deny it printed before stands, as the command hook's
        # own reading takes it; nothing else it printed does
        return HookAnswer(hook_id, output) if output and Answer(output).blocks else None
    if exit_code == 2:
        reason = (_json_reason(output) if output else None) or stderr.strip() or None
        return HookAnswer(hook_id, output or {}, blocked=True, reason=reason)
    if output is not None:
        return HookAnswer(hook_id, output)
    if exit_code == 0:
        text = stdout.strip()
        return HookAnswer(hook_id, text=text or None)
    return None


def http_answer(hook_id: str, body: dict[str, Any]) -> HookAnswer:
    """An ``http`` hook's 2xx JSON body (HTTP hooks cannot block by status)."""
    return HookAnswer(hook_id, dict(body))


def block_answer(hook_id: str, reason: str | None) -> HookAnswer:
    """A Python (or kernel, or webhook) hook's block."""
    return HookAnswer(hook_id, blocked=True, reason=reason)
