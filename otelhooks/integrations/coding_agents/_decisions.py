"""What each hook's answer decides, and which decision of several stands, as Claude Code reads them.

One answer (:class:`~otelhooks._config._claude_answer.HookAnswer`) is read field by field
(:func:`permission`, :func:`blocks`, :func:`block_reason`); the events that take a decision pick
the strongest one among the hooks' answers (``PreToolUse`` and ``PreModelSwitch``: deny > defer >
ask > allow; ``PermissionRequest``: deny > allow; ``Elicitation``: cancel > decline > accept).
:mod:`._combine` builds the answer around that decision.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from otelhooks._config._claude_answer import HookAnswer

__all__ = [
    "RANK",
    "block_reason",
    "blocks",
    "decides",
    "denied_by",
    "elicitation",
    "joined",
    "model_switch",
    "permission",
    "permission_request",
    "pre_tool_use",
    "said",
    "specific_of",
]

RANK: Final = {"allow": 1, "ask": 2, "defer": 3, "deny": 4}
# PreToolUse's deprecated top level, and Gemini CLI's ask (its allow and deny read elsewhere)
_LEGACY: Final = {"approve": "allow", "block": "deny", "ask": "ask"}
_ELICIT_RANK: Final = {"accept": 1, "decline": 2, "cancel": 3}


def specific_of(answer: HookAnswer) -> dict[str, Any]:
    """The answer's ``hookSpecificOutput`` (``{}`` when it gave none, or not an object)."""
    value = answer.output.get("hookSpecificOutput")
    return value if isinstance(value, dict) else {}


def said(value: Any) -> str | None:
    """``value`` when it is a text that says something."""
    # a blank reason says nothing: Codex CLI refuses a deny or block whose reason is blank (the
    # whole answer, and the tool runs), so such a deny gets the hook's name as its reason
    return value if isinstance(value, str) and value.strip() else None


def joined(values: Iterable[str | None]) -> str | None:
    """The texts given, a blank line between them (``None``: none)."""
    kept = [v for v in values if v]
    return "\n\n".join(kept) if kept else None


def blocks(answer: HookAnswer) -> bool:
    """The hook blocked: exit 2 (or a guard's block), or a top-level ``decision: "block"``."""
    return answer.blocked or answer.output.get("decision") == "block"


def block_reason(answer: HookAnswer) -> str | None:
    """The reason of a block: the JSON's ``reason``, else the block's own."""
    return said(answer.output.get("reason")) or said(answer.reason)


def permission(answer: HookAnswer) -> tuple[str | None, str | None]:
    """A PreToolUse answer's decision and reason."""
    if answer.blocked:
        return "deny", said(answer.reason)
    specific = specific_of(answer)
    decision = specific.get("permissionDecision")
    # Claude Code: a top-level block stands over any permissionDecision but a deny
    if decision in RANK and (decision == "deny" or answer.output.get("decision") != "block"):
        return decision, said(specific.get("permissionDecisionReason"))
    legacy = _LEGACY.get(str(answer.output.get("decision")))
    if legacy is not None:
        return legacy, said(answer.output.get("reason"))
    return None, None


def _strongest(
    answers: Sequence[HookAnswer], defer: str | None = None
) -> tuple[int, str, str | None, str] | None:
    """The strongest permission decision of ``answers`` (deny > ask > allow), its reason and
    hook; a ``defer`` read as ``defer`` when given (an event that has none)."""
    best: tuple[int, str, str | None, str] | None = None
    for a in answers:
        decision, reason = permission(a)
        if decision is None:
            continue
        if defer is not None and decision == "defer":
            decision = defer
        if best is None or RANK[decision] > best[0]:
            best = (RANK[decision], decision, reason, a.hook_id)
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


def pre_tool_use(
    answers: Sequence[HookAnswer],
    out: dict[str, Any],
    specific: dict[str, Any],
    updated_input: Mapping[str, Any] | None,
    stops: Sequence[HookAnswer],
) -> None:
    """A ``PreToolUse``'s decision into ``specific``: the strongest, or a deny when a hook
    stopped the run; ``updatedInput`` with an allow or an ask (an ask when nobody decided)."""
    best = _strongest(answers)
    if stops:
        # continue: false ends the operation; in -p mode only a deny keeps the tool from running
        best = (RANK["deny"], "deny", out.get("stopReason"), stops[0].hook_id)
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


def model_switch(answers: Sequence[HookAnswer], specific: dict[str, Any]) -> None:
    """A ``PreModelSwitch``'s decision, by ``PreToolUse``'s contract (Claude Code 2.1.332):
    deny > ask > allow, a block a deny; a ``defer``, which it has not, is a deny."""
    best = _strongest(answers, defer="deny")
    if best is not None:
        _decide(specific, best)


def permission_request(answers: Sequence[HookAnswer], specific: dict[str, Any]) -> None:
    """A ``PermissionRequest``'s decision: every deny's ``message`` and ``interrupt``, else the
    first allow's ``updatedInput`` and ``updatedPermissions``."""
    allow: dict[str, Any] | None = None
    denies: list[dict[str, Any]] = []
    for a in answers:
        decision = specific_of(a).get("decision")
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
        message = joined(said(d.get("message")) for d in denies)
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


def elicitation(answers: Sequence[HookAnswer], specific: dict[str, Any]) -> None:
    """An ``Elicitation``'s (or ``ElicitationResult``'s) action: cancel > decline > accept,
    the accept's ``content``; exit 2 declines."""
    best: tuple[int, str, Any] | None = None
    for a in answers:
        action: Any = "decline"  # exit 2 denies; its hookSpecificOutput is ignored
        content: Any = None
        if not a.blocked:
            action, content = specific_of(a).get("action"), specific_of(a).get("content")
        if action in _ELICIT_RANK and (best is None or _ELICIT_RANK[action] > best[0]):
            best = (_ELICIT_RANK[action], action, content)
    if best is not None:
        specific["action"] = best[1]
        if best[1] == "accept" and isinstance(best[2], dict):
            specific["content"] = best[2]


def decides(answer: HookAnswer) -> bool:
    """Whether the answer itself makes the decision a chain's block stands for."""
    specific = specific_of(answer)
    return (
        blocks(answer)
        or specific.get("permissionDecision") in ("deny", "ask", "defer")
        or str(answer.output.get("decision")) in _LEGACY
    )


def denied_by(answers: Sequence[HookAnswer]) -> str | None:
    """The hook whose answer stops a tool call: the first ``continue: false``, else the first
    deny (the one :func:`~._combine.combine` reports)."""
    for answer in answers:
        if answer.output.get("continue") is False:
            return answer.hook_id
    for answer in answers:
        if permission(answer)[0] == "deny":
            return answer.hook_id
        # a PermissionRequest's deny (a command hook's `decision.behavior`) names its hook too
        decision = specific_of(answer).get("decision")
        if isinstance(decision, dict) and decision.get("behavior") == "deny":
            return answer.hook_id
    return None
