"""Several hooks' answers to one event, combined into one, as Claude Code combines them.

This module's one job is the combination rule. Each hook that ran left a
:class:`~otelhooks._config._claude_answer.HookAnswer` (a command's JSON or plain text, an ``http``
hook's body, a Python, kernel or webhook block); :func:`combine` makes the one answer the agent
gets, by the rules of Claude Code's hooks reference (``JSON output``, ``Decision control`` and
each event's section), the schema Codex CLI copies and Gemini CLI's dialect is translated from:

- ``continue: false`` from any hook wins over every decision: the answer carries it and the
  first ``stopReason``; on ``PreToolUse`` it is also a deny (Claude Code 2.1 in ``-p`` mode ran
  the tool after a bare ``continue: false``: checked with the real CLI), on ``PostToolBatch`` a
  block;
- ``PreToolUse``: deny > defer > ask > allow, the winner's reason; a block (exit 2, ``Block``,
  a kernel ``None``, a control webhook, a top-level ``decision: "block"`` beside any
  ``permissionDecision`` but ``deny``, as Claude Code 2.1 reads it) is a deny;
- ``PermissionRequest``: deny > allow (``message`` and ``interrupt`` of the deny;
  ``updatedInput`` and ``updatedPermissions`` of the allow);
- ``Elicitation`` / ``ElicitationResult``: cancel > decline > accept; exit 2 declines;
- top-level ``decision: "block"`` events: one block, the reasons joined;
- ``additionalContext``, ``classifierContext`` (``PostToolUse``), ``systemMessage`` and
  ``stopReason`` of every hook are all delivered
  (joined by a blank line); ``suppressOutput``, ``retry`` and ``reloadSkills`` if any hook says
  so; ``watchPaths`` united; other values (``sessionTitle``, ``displayContent``,
  ``updatedToolOutput``...) from the first hook that gives one.

For Codex CLI the answer leaves out what Codex refuses a whole answer for
(:func:`codex_readable`); for Codex CLI and Gemini CLI an ``ask`` or ``defer`` they cannot carry
is a deny (:func:`deny_unaskable`).

A decision the event cannot carry (a block of ``SessionStart``, which no CLI can block) is not
dropped: the answer's ``systemMessage`` says which hook decided what and that the CLI (named as
a person knows it: Claude Code, Codex CLI, Gemini CLI) cannot act on it, and the bridge logs it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from otelhooks._config._claude_answer import HookAnswer
from otelhooks.integrations.coding_agents._common import AGENT, cli_name
from otelhooks.integrations.coding_agents._shapes import main_text

__all__ = [
    "ANSWERING_EVENTS",
    "BLOCKING_EVENTS",
    "CANNOT",
    "CONTEXT_EVENTS",
    "EXIT2_BLOCKING_EVENTS",
    "codex_readable",
    "combine",
    "decides",
    "denied_by",
    "deny_unaskable",
    "output_withheld_by",
    "rewrite_as_block",
]

# Events whose block is a top-level ``decision: "block"`` (Decision control table).
BLOCKING_EVENTS: Final = frozenset(
    {
        "UserPromptSubmit",
        "UserPromptExpansion",
        "PostToolUse",
        "PostToolUseFailure",
        "PostToolBatch",
        "Stop",
        "SubagentStop",
        "ConfigChange",
        "PreCompact",
        "TaskCreated",
    }
)
# Events that block only through exit 2 (or continue: false): TeammateIdle, TaskCompleted.
EXIT2_BLOCKING_EVENTS: Final = frozenset({"TeammateIdle", "TaskCompleted"})
CONTEXT_EVENTS: Final = frozenset(
    {
        "SessionStart",
        "Setup",
        "SubagentStart",
        "UserPromptSubmit",
        "UserPromptExpansion",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "PostToolBatch",
        "Stop",
        "SubagentStop",
    }
)
# Plain-text stdout of a successful hook is context for Claude on these events.
_TEXT_CONTEXT: Final = frozenset({"UserPromptSubmit", "UserPromptExpansion", "SessionStart"})
# Events that discard systemMessage and continue (their sections say so).
_NO_UNIVERSAL: Final = frozenset(
    {"MessageDisplay", "ConfigChange", "PreCompact", "Elicitation", "ElicitationResult"}
)
# Every event whose hooks can change what Claude Code does: the bridge runs their hooks before
# it answers (the others are only observed).
ANSWERING_EVENTS: Final = frozenset(
    {
        *BLOCKING_EVENTS,
        *EXIT2_BLOCKING_EVENTS,
        *CONTEXT_EVENTS,
        "PreToolUse",
        "PreModelSwitch",
        "PermissionRequest",
        "PermissionDenied",
        "Elicitation",
        "ElicitationResult",
        "MessageDisplay",
        "WorktreeCreate",
    }
)

_RANK: Final = {"allow": 1, "ask": 2, "defer": 3, "deny": 4}
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
_NO_OUTPUT_REWRITE: Final = frozenset({"codex", "gemini-cli"})
_CANNOT_SAY: Final = {
    "ask": ("a hook asks a person to confirm this call", "ask a person"),
    "defer": ("a hook defers this call to a decision made elsewhere", "defer a call"),
}
# PreToolUse's deprecated top level, and Gemini CLI's ask (its allow and deny read elsewhere)
_LEGACY: Final = {"approve": "allow", "block": "deny", "ask": "ask"}
_ELICIT_RANK: Final = {"accept": 1, "decline": 2, "cancel": 3}


def _specific(answer: HookAnswer) -> dict[str, Any]:
    value = answer.output.get("hookSpecificOutput")
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    # a blank reason says nothing: Codex CLI refuses a deny or block whose reason is blank (the
    # whole answer, and the tool runs), so such a deny gets the hook's name as its reason
    return value if isinstance(value, str) and value.strip() else None


def _join(values: Iterable[str | None]) -> str | None:
    kept = [v for v in values if v]
    return "\n\n".join(kept) if kept else None


def _blocks(answer: HookAnswer) -> bool:
    return answer.blocked or answer.output.get("decision") == "block"


def _block_reason(answer: HookAnswer) -> str | None:
    return _str(answer.output.get("reason")) or _str(answer.reason)


def _permission(answer: HookAnswer) -> tuple[str | None, str | None]:
    """A PreToolUse answer's decision and reason."""
    if answer.blocked:
        return "deny", _str(answer.reason)
    specific = _specific(answer)
    decision = specific.get("permissionDecision")
    # Claude Code: a top-level block stands over any permissionDecision but a deny
    if decision in _RANK and (decision == "deny" or answer.output.get("decision") != "block"):
        return decision, _str(specific.get("permissionDecisionReason"))
    legacy = _LEGACY.get(str(answer.output.get("decision")))
    if legacy is not None:
        return legacy, _str(answer.output.get("reason"))
    return None, None


def combine(
    event: str,
    answers: Sequence[HookAnswer],
    *,
    updated_input: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
    agent: str = AGENT,
) -> tuple[dict[str, Any], list[str]]:
    """The JSON output (Claude Code's schema) for ``event`` from the hooks' ``answers``.

    Args:
        event: the event's name in Claude Code's schema (a dialect translated it).
        answers: one per hook, in the order they ran.
        updated_input: ``PreToolUse`` arguments after every rewrite (a command's ``allow`` with
            ``updatedInput`` included): sent when a hook changed them.
        extra: event-specific fields decided outside the hooks' own answers (a kernel rewrite's
            ``updatedToolOutput``, ``displayContent``), put first.
        agent: the agent answered (``codex``...): what a decision it cannot carry names, and
            whether an ``ask`` or ``defer`` must become a deny (:func:`deny_unaskable`).

    Returns:
        The output object (``{}``: nothing to say) and the decisions it could not carry.

    Example:
        >>> combine("Stop", [HookAnswer("a", {"decision": "block", "reason": "tests fail"})])[0]
        {'decision': 'block', 'reason': 'tests fail'}
    """
    if not answers and not extra and updated_input is None:
        return {}, []  # no hook answered (most events): nothing to say
    out: dict[str, Any] = {}
    specific: dict[str, Any] = dict(extra or {})
    lost: list[str] = []

    stops = [a for a in answers if a.output.get("continue") is False]
    if event not in _NO_UNIVERSAL and event != "TaskCreated":
        if stops:
            out["continue"] = False
            names = ", ".join(a.hook_id for a in stops)
            out["stopReason"] = _join(_str(a.output.get("stopReason")) for a in stops) or (
                f"stopped by hook {names}"
            )
        message = _join(_str(a.output.get("systemMessage")) for a in answers)
        if message:
            out["systemMessage"] = message
    if any(a.output.get("suppressOutput") is True for a in answers):
        out["suppressOutput"] = True

    if event == "PreToolUse":
        _pre_tool_use(answers, out, specific, updated_input, stops)
    elif event == "PermissionRequest":
        _permission_request(answers, specific)
    elif event == "PreModelSwitch":
        _model_switch(answers, specific)
    elif event in ("Elicitation", "ElicitationResult"):
        _elicitation(answers, specific)
    elif event in BLOCKING_EVENTS or event in EXIT2_BLOCKING_EVENTS:
        blockers = [a for a in answers if _blocks(a)]
        if event == "PostToolBatch" and stops and not blockers:
            blockers = stops
        if blockers:
            out["decision"] = "block"
            out["reason"] = _join(
                _block_reason(a) or _str(a.output.get("stopReason")) for a in blockers
            ) or (f"blocked by hook {', '.join(a.hook_id for a in blockers)}")
    else:
        for a in answers:
            if _blocks(a):
                lost.append(
                    f"hook {a.hook_id} blocked {event}, which {cli_name(agent)} cannot block"
                    + (f": {_block_reason(a)}" if _block_reason(a) else "")
                )

    if event in CONTEXT_EVENTS:
        texts = [a.text for a in answers if a.text and event in _TEXT_CONTEXT]
        context = _join([*(_str(_specific(a).get("additionalContext")) for a in answers), *texts])
        if context and not (
            event == "PreToolUse" and specific.get("permissionDecision") == "defer"
        ):
            specific["additionalContext"] = context
    if event == "PostToolUse":
        # every hook's note for the auto mode classifier, as additionalContext is for the model
        note = _join(_str(_specific(a).get("classifierContext")) for a in answers)
        if note:
            specific["classifierContext"] = note
    _first_values(event, answers, specific, lost)
    if specific:
        out["hookSpecificOutput"] = {"hookEventName": event, **specific}
    if event == "PreToolUse":
        deny_unaskable(out, agent)
    if event == "PostToolUse" and agent in _NO_OUTPUT_REWRITE:
        rewrite_as_block(out)
    if agent == "codex":
        codex_readable(out, event, lost)
    if lost:
        warning = "otelhooks: " + "; ".join(lost)
        out["systemMessage"] = _join([out.get("systemMessage"), warning])
    return out, lost


def _strongest(
    answers: Sequence[HookAnswer], defer: str | None = None
) -> tuple[int, str, str | None, str] | None:
    """The strongest permission decision of ``answers`` (deny > ask > allow), its reason and
    hook; a ``defer`` read as ``defer`` when given (an event that has none)."""
    best: tuple[int, str, str | None, str] | None = None
    for a in answers:
        decision, reason = _permission(a)
        if decision is None:
            continue
        if defer is not None and decision == "defer":
            decision = defer
        if best is None or _RANK[decision] > best[0]:
            best = (_RANK[decision], decision, reason, a.hook_id)
    return best


def _decide(specific: dict[str, Any], best: tuple[int, str, str | None, str]) -> str:
    """Write ``best``'s decision and reason (a deny's named by its hook when it gave none)."""
    _, decision, reason, hook_id = best
    specific["permissionDecision"] = decision
    if decision == "deny":
        reason = reason or f"Blocked by hook {hook_id}."
    if reason:
        specific["permissionDecisionReason"] = reason
    return decision


def _pre_tool_use(
    answers: Sequence[HookAnswer],
    out: dict[str, Any],
    specific: dict[str, Any],
    updated_input: Mapping[str, Any] | None,
    stops: Sequence[HookAnswer],
) -> None:
    best = _strongest(answers)
    if stops:
        # continue: false ends the operation; in -p mode only a deny keeps the tool from running
        best = (_RANK["deny"], "deny", out.get("stopReason"), stops[0].hook_id)
    if best is None:
        if updated_input is not None:
            # a rewrite nobody approved: the person confirms the changed arguments
            specific["permissionDecision"] = "ask"
            specific["permissionDecisionReason"] = "arguments rewritten by an otelhooks hook"
            specific["updatedInput"] = dict(updated_input)
        return
    decision = _decide(specific, best)
    if updated_input is not None and decision in ("allow", "ask"):
        specific["updatedInput"] = dict(updated_input)


def _model_switch(answers: Sequence[HookAnswer], specific: dict[str, Any]) -> None:
    """A ``PreModelSwitch``'s decision, by ``PreToolUse``'s contract (Claude Code 2.1.332):
    deny > ask > allow, a block a deny; a ``defer``, which it has not, is a deny."""
    best = _strongest(answers, defer="deny")
    if best is not None:
        _decide(specific, best)


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
    model the original (:data:`_NO_OUTPUT_REWRITE`); a block already there stands.

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
    (:data:`_NO_OUTPUT_REWRITE`), Claude Code shows it both. ``None``: no hook blocked, or the
    model reads the output all the same.

    Example:
        >>> blocked = HookAnswer("leak", {"decision": "block", "reason": "key"})
        >>> output_withheld_by([blocked], "codex")
        ('leak', 'key')
    """
    if agent not in _NO_OUTPUT_REWRITE:
        return None
    for answer in answers:
        if _blocks(answer):
            return answer.hook_id, _block_reason(answer) or f"blocked by hook {answer.hook_id}"
    return None


def codex_readable(output: dict[str, Any], event: str, lost: list[str]) -> None:
    """``output`` without what Codex CLI would refuse it for (:data:`_CODEX_REFUSES`): a
    ``continue: false`` on ``PreToolUse`` is already a deny (:func:`combine`), the stop itself is
    said in ``lost`` (Codex cannot stop the run before a tool call).

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


def _permission_request(answers: Sequence[HookAnswer], specific: dict[str, Any]) -> None:
    allow: dict[str, Any] | None = None
    denies: list[dict[str, Any]] = []
    for a in answers:
        decision = _specific(a).get("decision")
        if a.blocked:
            # Claude Code ignores exit 2 here; a guard's block is a deny all the same
            denies.append(
                {"behavior": "deny", "message": a.reason or f"denied by hook {a.hook_id}"}
            )
        elif isinstance(decision, dict) and decision.get("behavior") == "deny":
            denies.append(decision)
        elif isinstance(decision, dict) and decision.get("behavior") == "allow" and allow is None:
            allow = decision
    if denies:
        combined: dict[str, Any] = {"behavior": "deny"}
        message = _join(_str(d.get("message")) for d in denies)
        if message:
            combined["message"] = message
        if any(d.get("interrupt") is True for d in denies):
            combined["interrupt"] = True
        specific["decision"] = combined
    elif allow is not None:
        specific["decision"] = {
            k: v
            for k, v in allow.items()
            if k in ("behavior", "updatedInput", "updatedPermissions")
        }


def _elicitation(answers: Sequence[HookAnswer], specific: dict[str, Any]) -> None:
    best: tuple[int, str, Any] | None = None
    for a in answers:
        action: Any = "decline"  # exit 2 denies; its hookSpecificOutput is ignored
        content: Any = None
        if not a.blocked:
            action, content = _specific(a).get("action"), _specific(a).get("content")
        if action in _ELICIT_RANK and (best is None or _ELICIT_RANK[action] > best[0]):
            best = (_ELICIT_RANK[action], action, content)
    if best is not None:
        specific["action"] = best[1]
        if best[1] == "accept" and isinstance(best[2], dict):
            specific["content"] = best[2]


_FIRST: Final = {
    "PostToolUse": ("updatedToolOutput", "updatedMCPToolOutput"),
    "SessionStart": ("initialUserMessage", "sessionTitle"),
    "UserPromptSubmit": ("sessionTitle",),
    "MessageDisplay": ("displayContent",),
    "WorktreeCreate": ("worktreePath",),
}


def _first_values(
    event: str, answers: Sequence[HookAnswer], specific: dict[str, Any], lost: list[str]
) -> None:
    for key in _FIRST.get(event, ()):
        for a in answers:
            value = _specific(a).get(key)
            if value is not None and key not in specific:
                specific[key] = value
    if event == "WorktreeCreate" and "worktreePath" not in specific:
        for a in answers:  # a command prints the path as its last non-empty line
            lines = [line for line in (a.text or "").splitlines() if line.strip()]
            if lines:
                specific["worktreePath"] = lines[-1].strip()
                break
    if event == "UserPromptSubmit" and any(
        _specific(a).get("suppressOriginalPrompt") is True for a in answers
    ):
        specific["suppressOriginalPrompt"] = True
    if event == "SessionStart":
        paths = [
            p for a in answers for p in (_specific(a).get("watchPaths") or ()) if isinstance(p, str)
        ]
        if paths:
            specific["watchPaths"] = list(dict.fromkeys(paths))
        if any(_specific(a).get("reloadSkills") is True for a in answers):
            specific["reloadSkills"] = True
    if event == "PermissionDenied" and any(_specific(a).get("retry") is True for a in answers):
        specific["retry"] = True


def decides(answer: HookAnswer) -> bool:
    """Whether the answer itself makes the decision a chain's block stands for."""
    specific = _specific(answer)
    return (
        _blocks(answer)
        or specific.get("permissionDecision") in ("deny", "ask", "defer")
        or str(answer.output.get("decision")) in _LEGACY
    )


def denied_by(answers: Sequence[HookAnswer]) -> str | None:
    """The hook whose answer stops a tool call: the first ``continue: false``, else the first
    deny (the one :func:`combine` reports)."""
    for answer in answers:
        if answer.output.get("continue") is False:
            return answer.hook_id
    for answer in answers:
        if _permission(answer)[0] == "deny":
            return answer.hook_id
        # a PermissionRequest's deny (a command hook's `decision.behavior`) names its hook too
        decision = _specific(answer).get("decision")
        if isinstance(decision, dict) and decision.get("behavior") == "deny":
            return answer.hook_id
    return None
