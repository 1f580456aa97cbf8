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
(:func:`~._agent_limits.codex_readable`); for Codex CLI and Gemini CLI an ``ask`` or ``defer``
they cannot carry is a deny (:func:`~._agent_limits.deny_unaskable`).

What one answer decides, and which decision of several stands, is :mod:`._decisions`; what an
agent other than Claude Code cannot carry, and its stand-in, :mod:`._agent_limits`. This module
builds the answer: the universal fields, the events' sets, the values taken from the first hook.

A decision the event cannot carry (a block of ``SessionStart``, which no CLI can block) is not
dropped: the answer's ``systemMessage`` says which hook decided what and that the CLI (named as
a person knows it: Claude Code, Codex CLI, Gemini CLI) cannot act on it, and the bridge logs it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from otelhooks._config._claude_answer import HookAnswer
from otelhooks.integrations.coding_agents._agent_limits import (
    NO_OUTPUT_REWRITE,
    codex_readable,
    deny_unaskable,
    rewrite_as_block,
)
from otelhooks.integrations.coding_agents._common import AGENT, cli_name
from otelhooks.integrations.coding_agents._decisions import (
    block_reason,
    blocks,
    elicitation,
    joined,
    model_switch,
    permission_request,
    pre_tool_use,
    said,
    specific_of,
)

__all__ = [
    "ANSWERING_EVENTS",
    "BLOCKING_EVENTS",
    "CONTEXT_EVENTS",
    "EXIT2_BLOCKING_EVENTS",
    "combine",
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
            out["stopReason"] = joined(said(a.output.get("stopReason")) for a in stops) or (
                f"stopped by hook {names}"
            )
        message = joined(said(a.output.get("systemMessage")) for a in answers)
        if message:
            out["systemMessage"] = message
    if any(a.output.get("suppressOutput") is True for a in answers):
        out["suppressOutput"] = True

    if event == "PreToolUse":
        pre_tool_use(answers, out, specific, updated_input, stops)
    elif event == "PermissionRequest":
        permission_request(answers, specific)
    elif event == "PreModelSwitch":
        model_switch(answers, specific)
    elif event in ("Elicitation", "ElicitationResult"):
        elicitation(answers, specific)
    elif event in BLOCKING_EVENTS or event in EXIT2_BLOCKING_EVENTS:
        blockers = [a for a in answers if blocks(a)]
        if event == "PostToolBatch" and stops and not blockers:
            blockers = stops
        if blockers:
            out["decision"] = "block"
            out["reason"] = joined(
                block_reason(a) or said(a.output.get("stopReason")) for a in blockers
            ) or (f"blocked by hook {', '.join(a.hook_id for a in blockers)}")
    else:
        for a in answers:
            if blocks(a):
                lost.append(
                    f"hook {a.hook_id} blocked {event}, which {cli_name(agent)} cannot block"
                    + (f": {block_reason(a)}" if block_reason(a) else "")
                )

    if event in CONTEXT_EVENTS:
        texts = [a.text for a in answers if a.text and event in _TEXT_CONTEXT]
        context = joined(
            [*(said(specific_of(a).get("additionalContext")) for a in answers), *texts]
        )
        if context and not (
            event == "PreToolUse" and specific.get("permissionDecision") == "defer"
        ):
            specific["additionalContext"] = context
    if event == "PostToolUse":
        # every hook's note for the auto mode classifier, as additionalContext is for the model
        note = joined(said(specific_of(a).get("classifierContext")) for a in answers)
        if note:
            specific["classifierContext"] = note
    _first_values(event, answers, specific, lost)
    if specific:
        out["hookSpecificOutput"] = {"hookEventName": event, **specific}
    if event == "PreToolUse":
        deny_unaskable(out, agent)
    if event == "PostToolUse" and agent in NO_OUTPUT_REWRITE:
        rewrite_as_block(out)
    if agent == "codex":
        codex_readable(out, event, lost)
    if lost:
        warning = "otelhooks: " + "; ".join(lost)
        out["systemMessage"] = joined([out.get("systemMessage"), warning])
    return out, lost


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
            value = specific_of(a).get(key)
            if value is not None and key not in specific:
                specific[key] = value
    if event == "WorktreeCreate" and "worktreePath" not in specific:
        for a in answers:  # a command prints the path as its last non-empty line
            lines = [line for line in (a.text or "").splitlines() if line.strip()]
            if lines:
                specific["worktreePath"] = lines[-1].strip()
                break
    if event == "UserPromptSubmit" and any(
        specific_of(a).get("suppressOriginalPrompt") is True for a in answers
    ):
        specific["suppressOriginalPrompt"] = True
    if event == "SessionStart":
        paths = [
            p
            for a in answers
            for p in (specific_of(a).get("watchPaths") or ())
            if isinstance(p, str)
        ]
        if paths:
            specific["watchPaths"] = list(dict.fromkeys(paths))
        if any(specific_of(a).get("reloadSkills") is True for a in answers):
            specific["reloadSkills"] = True
    if event == "PermissionDenied" and any(specific_of(a).get("retry") is True for a in answers):
        specific["retry"] = True
