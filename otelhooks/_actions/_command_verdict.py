"""A command hook's outcome read into a decision, by Claude Code's rules for hook output.

What the output tells the dispatcher (Claude Code hooks reference, "Exit code output", "Other
exit codes", "JSON output"), as the handler return protocol:

- A stdout that starts with ``{`` and is a valid JSON object is read on **every** exit code and
  decides on its own (a deny printed before ``exit 1`` denies); stdout is trimmed as Claude Code
  trims it, a byte-order mark included (:func:`trimmed`). On ``before_tool_call``
  ``hookSpecificOutput.permissionDecision`` decides: ``deny`` blocks with
  ``permissionDecisionReason``; ``allow`` lets the call run and applies ``updatedInput`` as the
  new arguments; ``ask`` and ``defer`` also keep the call from running (otelhooks cannot ask a
  person from inside a hook chain, and has no paused run to resume later), with a reason that
  says which. On any intercept event ``{"decision": "block", "reason": ...}`` blocks (over a
  ``permissionDecision`` other than ``deny``, as in Claude Code), and
  ``{"continue": false, "stopReason": ...}`` blocks whatever else the answer says. Stdout that
  starts with ``{`` but is not valid JSON is plain text, which decides nothing, unless it names
  an answer field: a broken answer is read as one cut at the cap is (:func:`read_answer`).
- A deny no agent would read but whose intent is plain denies, its reason saying where it was
  read from (:func:`read_answer`): inside a JSON array, as a JSON string, spelled ``"Block"``,
  ``"DENY"`` or ``"continue": "false"``, or on stderr with nothing on stdout (where only Gemini
  CLI reads it); any other answer of that kind is a failure, never a silent allow.
- Gemini CLI's own answers are read too, as a guard written from its reference prints them:
  ``{"decision": "deny"}`` blocks as ``block`` does (``allow`` is ``approve``), and
  ``hookSpecificOutput.tool_input`` is merged into the tool's arguments, as Gemini CLI merges
  it. Read as schema errors, they let the call run.
- A JSON object that breaks Claude Code's output schema (a field of the wrong type, a
  ``decision`` other than ``approve``/``block``/``allow``/``deny``, an unknown
  ``permissionDecision``) is a non-blocking error: a :class:`~otelhooks.HookError`, never a
  silent allow, never a deny.
- exit 0 without a decision: success. exit 2: block (intercept events; on observed events it
  decides nothing here, and a coding-agent bridge passes it on to its CLI); the reason is the
  JSON's (``permissionDecisionReason``, ``reason``, ``stopReason``) when stdout is a JSON object
  that gives one, stderr otherwise.
- A deny (block, ask, defer) printed before the command timed out stands: it decided, then hung
  on something else. Its allow does not.
- any other exit whose output decides nothing, a signal, a timeout, a process that cannot start:
  a :class:`~otelhooks.HookError`, which the dispatcher records (span attribute
  ``otelhooks.hook.errors``, ``otelhooks.hook.invocations{outcome=error|timeout}``, a
  ``command hook failed`` log line) and then follows the hook's ``on_error`` policy
  (``continue`` by default).

When several command hooks of one ``before_tool_call`` disagree, Claude Code's precedence holds:
deny > defer > ask > allow (see :mod:`otelhooks._dispatch._chain`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

from otelhooks._actions._command_env import excerpt
from otelhooks._actions._command_output import (
    BLOCKING,
    BROKEN_NOTE,
    LINES_NOTE,
    OUTPUT_CAP_BYTES,
    REASON_CAP_CHARS,
    Answer,
    cut_reason,
    read_answer,
    schema_problem,
    stderr_answer,
    trimmed,
)
from otelhooks._actions._command_process import CommandOutcome
from otelhooks._events import EVENTS, HookEvent, ToolCallEvent
from otelhooks._hooks import Block

__all__ = ["CommandBlock", "CommandDecision", "Decision", "interpret"]

Decision = Literal["allow", "deny", "ask", "defer"]
_DECISIONS: Final = ("allow", "deny", "ask", "defer")


class CommandBlock(Block):
    """A block that came from a command's decision; ``decision`` ranks it (deny > defer > ask)."""

    __slots__ = ("decision",)

    def __init__(self, reason: str | None, *, decision: Decision = "deny") -> None:
        super().__init__(reason)
        self.decision = decision

    def __repr__(self) -> str:
        return f"CommandBlock({self.reason!r}, decision={self.decision!r})"


@dataclass(frozen=True, slots=True)
class CommandDecision:
    """How the dispatcher reads an outcome: ``result`` follows the handler return protocol.

    ``problem`` is set for a failure (non-blocking unless ``on_error: block``); ``decision`` is the
    Claude-style permission decision, when the command gave one (``deny`` for an exit 2 block).
    """

    result: Any = None
    decision: Decision | None = None
    reason: str | None = None
    problem: str | None = None
    updated_input: dict[str, Any] | None = None


def interpret(
    outcome: CommandOutcome, payload: HookEvent, *, hook_id: str, timeout: float
) -> CommandDecision:
    """What ``outcome`` of the command of hook ``hook_id``, run with ``timeout``, tells the
    dispatcher for ``payload``: Claude Code's rules (the module docstring)."""
    if outcome.start_error is not None:
        return CommandDecision(problem=outcome.start_error)
    if outcome.timed_out:
        late = _said_in_time(outcome, payload, hook_id=hook_id, timeout=timeout)
        if late is not None:
            return late
        return CommandDecision(problem=f"timed out after {timeout:g}s; process killed")
    code = outcome.exit_code
    assert code is not None
    intercept = EVENTS[payload.event].intercept
    text = trimmed(outcome.stdout)
    answer = read_answer(text, outcome.stdout_bytes)
    if answer is None and not text and code != 2 and outcome.stdout_bytes <= OUTPUT_CAP_BYTES:
        answer = stderr_answer(outcome.stdout, outcome.stderr)
    if code == 2:
        return _exit_two(outcome, answer, payload, intercept=intercept)
    if not text and outcome.stdout_bytes > OUTPUT_CAP_BYTES:
        # Only white space was kept: an answer after it (Claude Code reads all of stdout)
        # is unknown here, so the command failed to answer rather than allowed.
        return CommandDecision(
            problem=f"wrote {outcome.stdout_bytes} bytes of stdout, the first "
            f"{OUTPUT_CAP_BYTES} white space: any answer after them was not read"
        )
    if answer is not None:
        verdict = _read(answer, payload, hook_id=hook_id, intercept=intercept)
        # A JSON object decides on its own, whatever the exit code (exit 1 included); one
        # that decides nothing leaves a failing exit code to be reported below.
        if code == 0 or verdict.problem is not None or verdict.decision is not None:
            return verdict
    if code != 0:
        how = f"was killed by signal {-code}" if code < 0 else f"exited with {code}"
        # stderr says why; without it, what it printed (Gemini CLI denies with that text
        # on an exit over 1, where Claude Code and Codex CLI take it for a failure)
        detail = outcome.stderr.strip() or (f"stdout: {text}" if text else "")
        return CommandDecision(problem=f"{how}: {excerpt(detail)}" if detail else how)
    return CommandDecision(result=payload)


def _said_in_time(
    outcome: CommandOutcome, payload: HookEvent, *, hook_id: str, timeout: float
) -> CommandDecision | None:
    """The deny (block, ask, defer) a command printed before it timed out: it decided, then
    hung on something else (an audit call that does not answer), and the deny stands.
    Its allow does not: the command did not finish, and what it still had to say is
    unknown. None when it printed no such answer."""
    if not EVENTS[payload.event].intercept:
        return None
    answer = read_answer(trimmed(outcome.stdout), outcome.stdout_bytes)
    if answer is None or not answer.blocks:
        return None
    verdict = _read(answer, payload, hook_id=hook_id, intercept=True)
    if not isinstance(verdict.result, CommandBlock):
        return None
    said = verdict.reason or f"Blocked by hook {hook_id}."
    reason = f"{said} [otelhooks: printed before the hook timed out after {timeout:g}s]"
    return _blocked(reason, verdict.result.decision)


def _exit_two(
    outcome: CommandOutcome,
    answer: Answer | None,
    payload: HookEvent,
    *,
    intercept: bool,
) -> CommandDecision:
    """Exit 2 blocks; the reason is the JSON's when it gives one, stderr otherwise."""
    if not intercept:
        return CommandDecision(result=payload)
    reason = answer.reason() if answer is not None else None
    if reason is not None:
        reason = cut_reason(reason, total_bytes=answer.cut_at if answer else None)
    else:
        reason = outcome.stderr.strip() or None
        if outcome.stderr_bytes > OUTPUT_CAP_BYTES or (reason and len(reason) > REASON_CAP_CHARS):
            cut = outcome.stderr_bytes if outcome.stderr_bytes > OUTPUT_CAP_BYTES else None
            reason = cut_reason(reason or "", total_bytes=cut)
    return _blocked(reason)


def _read(answer: Answer, payload: HookEvent, *, hook_id: str, intercept: bool) -> CommandDecision:
    """What a JSON object on stdout decides (a schema-invalid one is a failure)."""
    if not answer.whole:
        return _decide_cut(answer, payload, hook_id=hook_id, intercept=intercept)
    problem = schema_problem(answer.fields)
    if problem is not None:
        return CommandDecision(problem=f"JSON output is not Claude Code's hook output: {problem}")
    if not intercept:
        return CommandDecision(result=payload)
    return _decide(answer.fields, payload, hook_id=hook_id)


def _decide_cut(
    answer: Answer, payload: HookEvent, *, hook_id: str, intercept: bool
) -> CommandDecision:
    """Decide on a JSON answer cut at the cap or broken: a deny (or block, ask, defer) still
    holds; anything else it says is a failure (an observer's broken answer too: said)."""
    total = answer.cut_at
    if answer.broken is not None and (not intercept or not answer.blocks):
        if answer.note in (BROKEN_NOTE, LINES_NOTE):
            return CommandDecision(
                problem=f"stdout starts with '{{' and names an answer field, but does not "
                f"parse ({answer.broken}): no decision but a deny, ask or defer is taken "
                "from it"
            )
        return CommandDecision(
            problem=f"the answer is not one the agent reads ({answer.broken}): no decision "
            "but a deny, ask or defer is taken from it"
        )
    if not intercept:
        return CommandDecision(result=payload)
    specific = answer.fields.get("hookSpecificOutput")
    allows = isinstance(specific, dict) and specific.get("permissionDecision") == "allow"
    if not answer.readable or allows:
        return CommandDecision(
            problem=f"JSON output of {total} bytes is over the {OUTPUT_CAP_BYTES}-byte cap "
            "and gives no decision that can be taken from its first part"
        )
    verdict = _decide(answer.fields, payload, hook_id=hook_id)
    if answer.broken is not None or verdict.reason is not None or verdict.decision is not None:
        if answer.broken is not None:
            reason = verdict.reason or f"Blocked by hook {hook_id}.{answer.note}"
        else:
            reason = cut_reason(verdict.reason or "", total_bytes=total) or ""
        return _blocked(reason, verdict.decision or "deny")
    return verdict


def _decide(answer: dict[str, Any], payload: HookEvent, *, hook_id: str) -> CommandDecision:
    specific = answer.get("hookSpecificOutput")
    is_tool_call = isinstance(payload, ToolCallEvent)
    if answer.get("continue") is False:
        # Claude Code: `continue: false` stops everything and wins over any decision.
        return _blocked(_stated(answer.get("stopReason")))
    blocks = answer.get("decision") in BLOCKING
    if is_tool_call and isinstance(specific, dict) and "permissionDecision" in specific:
        verdict = _permission(specific, payload, hook_id=hook_id)
        # Claude Code: a top-level block stands over any permissionDecision but a deny
        # (whose reason it shows), an allow with updatedInput included.
        if not blocks or verdict.decision == "deny":
            return verdict
    if is_tool_call and answer.get("decision") == "ask" and not blocks:
        # Gemini CLI's ask (its reference's `decision: "ask"`), as permissionDecision's
        reason = answer.get("reason")
        return _permission(
            {"permissionDecision": "ask", "permissionDecisionReason": reason},
            payload,
            hook_id=hook_id,
        )
    if blocks:
        return _blocked(_stated(answer.get("reason")))
    rewrite = specific.get("tool_input") if isinstance(specific, dict) else None
    if isinstance(payload, ToolCallEvent) and isinstance(rewrite, dict):
        # Gemini CLI's rewrite of a tool's arguments, merged into them as Gemini CLI does
        updated = {**payload.args, **rewrite}
        return CommandDecision(result={"args": updated}, decision="allow", updated_input=updated)
    return CommandDecision(result=payload)


def _permission(specific: dict[str, Any], payload: HookEvent, *, hook_id: str) -> CommandDecision:
    decision = specific.get("permissionDecision")
    if decision not in _DECISIONS:
        return CommandDecision(
            problem=f"permissionDecision must be one of {', '.join(_DECISIONS)}, not {decision!r}"
        )
    reason = _stated(specific.get("permissionDecisionReason"))
    updated = specific.get("updatedInput")
    if updated is not None and not isinstance(updated, dict):
        return CommandDecision(problem="updatedInput must be a JSON object")
    if decision == "allow":
        result: Any = {"args": updated} if updated is not None else payload
        return CommandDecision(
            result=result, decision="allow", reason=reason, updated_input=updated
        )
    if decision == "ask":
        reason = reason or f"Hook {hook_id} asks for confirmation before this tool call."
    elif decision == "defer":
        reason = reason or f"Hook {hook_id} deferred the decision on this tool call."
    return _blocked(reason, decision)


def _blocked(reason: str | None, decision: Decision = "deny") -> CommandDecision:
    """A block ranked ``decision`` (deny, defer, ask) with ``reason``, for the dispatcher."""
    block = CommandBlock(reason, decision=decision)
    return CommandDecision(result=block, decision=decision, reason=reason)


def _stated(reason: Any) -> str | None:
    """A reason the answer gives (a text that is not empty), cut to the cap."""
    return cut_reason(reason) if isinstance(reason, str) and reason else None
