"""What a ``PermissionRequest``'s answer does to the tool call it asks about.

Claude Code runs an allowed call without a second ``PreToolUse`` and sends no ``Post*`` event
after a denied one: an allow with changed arguments is judged by the ``PreToolUse`` guards here,
and a deny ends the call here, as :meth:`~._tools.ToolUses.pre` ends one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from opentelemetry.util import types

from otelhooks._config._claude_answer import HookAnswer
from otelhooks._live import Verdict
from otelhooks.integrations.coding_agents._answers import tell_failures
from otelhooks.integrations.coding_agents._state_rows import OpenTool
from otelhooks.integrations.coding_agents._tools import ToolUses, tool_args

__all__ = ["request_answered"]


def request_answered(
    tools: ToolUses,
    session: str,
    payload: Mapping[str, Any],
    output: dict[str, Any],
    ids: Mapping[str, Any],
    verdict: Verdict,
    answers: list[HookAnswer],
) -> dict[str, types.AttributeValue]:
    """The request's answer (``output``, combined from its hooks' ``answers``, whose
    ``verdict`` it is) on the call it asks about; ``ids`` are the request's own (turn, span).
    Returns what the request's span says of it: a deny's attributes, else nothing.

    A deny (a person's Deny on an approval's card, a hook's deny) ends the call denied
    (:meth:`~._tools.ToolUses.end_asked`): no ``Post*`` event will. An allow with changed
    arguments (a person's edit on the card, a hook's ``updatedInput``) is judged by the
    ``PreToolUse`` guards first: they judged only the arguments asked about. A guard's deny (or
    ``ask``, ``defer``, mock, a rewrite nobody approved: none is an allow, and this answer
    cannot ask a person) makes the answer a deny with its reason, and ends the call denied; a
    command's allow with its own ``updatedInput`` runs that.
    """
    specific = output.get("hookSpecificOutput")
    if not isinstance(specific, dict):
        return {}
    decision = specific.get("decision")
    if not isinstance(decision, dict):
        return {}
    tool_name, asked, use_id = tool_args(payload)
    if decision.get("behavior") == "deny":
        reason = str(decision.get("message") or "")
        tool = _asked(session, tool_name, asked, use_id, ids)
        return tools.end_asked(tool, payload, asked, verdict, answers, reason)
    edited = decision.get("updatedInput")
    if decision.get("behavior") != "allow" or not isinstance(edited, dict) or edited == asked:
        return {}
    # the call as its PreToolUse would have named it (a guard may read the event's name;
    # the request's own suggestions are not the call's)
    changed = {
        **{k: v for k, v in payload.items() if k != "permission_suggestions"},
        "hook_event_name": "PreToolUse",
        "tool_input": edited,
    }
    _, args, use_id = tool_args(changed)
    tool = _asked(session, tool_name, args, use_id, ids)
    edit_verdict, edit_answers, judged, _ = tools.judge(session, tool, args, changed)
    pre = judged.get("hookSpecificOutput") or {}
    said = pre.get("permissionDecision")
    if said in ("deny", "ask", "defer") or judged.get("continue") is False:
        reason = str(pre.get("permissionDecisionReason") or judged.get("stopReason") or "")
        if said in ("ask", "defer"):  # a PermissionRequest answer cannot ask again
            would = pre.get("updatedInput", args)
            reason = f"{reason}; the arguments it would run: {json.dumps(would)}"
        specific["decision"] = {"behavior": "deny", "message": reason}
        return tools.end_asked(tool, payload, asked, edit_verdict, edit_answers, reason)
    if isinstance(pre.get("updatedInput"), dict):
        decision["updatedInput"] = pre["updatedInput"]
    tell_failures(output, edit_verdict.errors)
    return {}


def _asked(
    session: str, tool_name: str, args: dict[str, Any], use_id: str, ids: Mapping[str, Any]
) -> OpenTool:
    """The call a ``PermissionRequest`` asks about, as far as its own ids (turn, span) say."""
    span_id = int(ids.get("spanId") or "0", 16)
    operation = str(ids.get("operationId") or "")
    return OpenTool(session, use_id, span_id, 0, operation, 0, tool_name, args, 0, {})
