"""A person's allow of an ``approval:`` hook, as the Claude Code event's own answer.

An approval's deny is the chain's block, which ``run_hooks`` (:mod:`._answers`) turns into a
block answer like any other; its allow has no answer of its own in the chain (the action returns
the payload), so the bridge adds one here: Claude Code must hear that a person decided.
"""

from __future__ import annotations

from typing import Any

from otelhooks._config._claude_answer import HookAnswer
from otelhooks._live import Verdict

__all__ = ["approval_allows"]


def approval_allows(event: str, verdict: Verdict) -> list[HookAnswer]:
    """A person's allow of an ``approval:`` hook, in the event's own output: on
    ``PermissionRequest`` ``decision.behavior: allow`` with the edited arguments as
    ``updatedInput``; on ``PreToolUse`` ``permissionDecision: allow`` (the edited arguments are
    the chain's rewrite, which :func:`combine` sends as ``updatedInput``). A deny is the chain's
    block, which :func:`run_hooks` already made an answer."""
    if verdict.blocked:
        return []
    allows: list[HookAnswer] = []
    for note in verdict.approvals:
        if note.decision != "allow":
            continue
        specific: dict[str, Any]
        if event == "PermissionRequest":
            decision: dict[str, Any] = {"behavior": "allow"}
            if note.args is not None:
                decision["updatedInput"] = dict(note.args)
            specific = {"decision": decision}
        else:
            reason = f"approved by {note.answered_by or 'a person'}"
            specific = {"permissionDecision": "allow", "permissionDecisionReason": reason}
        allows.append(HookAnswer(note.hook_id, {"hookSpecificOutput": specific}))
    return allows
