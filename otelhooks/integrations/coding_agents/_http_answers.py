"""The HTTP answers of ``POST /v1/hooks/claude-code`` (:mod:`._http`): what Claude Code reads
for each bridge answer, and for each way no hook decided.

==========================  ======================================================================
bridge answer               HTTP answer
==========================  ======================================================================
exit 0, JSON on stdout      200 with that JSON (``{}`` when there is nothing to say)
exit 2, reason on stderr    200 with the JSON form of the block: ``permissionDecision: deny`` for
                            ``PreToolUse``, ``{"decision": "block"}`` otherwise (an HTTP hook
                            cannot answer with an exit code)
the bridge failed, or gave  500 (a non-blocking error for Claude Code: shown, the tool runs) or,
no answer by the deadline   with ``fail_closed``, 200 with a deny for ``PreToolUse``; late, when
                            a hook that was to decide blocks when it fails (``on_error: block``),
                            that hook's block: a deny, or the event's block (a ``PostToolUse``'s
                            output withheld, in its own shape); a guard that never ran
                            (the call waited for a thread) is cut short: a deny
the store cannot commit     the hooks still decide: the session change is made in a scratch
right now                   state (:class:`~otelhooks._store._pg_sessions.SharedSessions`; a
                            SQLite file that cannot be written, in memory, logged); 503
                            with ``Retry-After`` only for an event no hook decides that the
                            store holds past the deadline (below); with ``fail_closed`` a deny
                            for ``PreToolUse``
not JSON / not an object    400 (also non-blocking); with ``fail_closed`` a deny when the event
                            is (or may be) ``PreToolUse``
larger than the body limit  413 (non-blocking); a deny, naming them, when it is a ``PreToolUse``
(4 MiB)                     guards would judge (its start names the event and the tool): they
                            could not check it; with ``fail_closed`` a deny
a ``Post*`` event for a     as any ``Post*``: its hooks run and their answer (a redaction, a
tool use its session has    block) is Claude Code's, for its start may have reached a server that
not open                    forgot it (a restart without a store, a scratch state, another
                            instance). The tool use is not recorded: no session state changes and
                            no span is written or ended (a forged or misrouted end ends nothing);
                            its hooks see ``spanId`` null and ``operationId`` empty
a ``SessionEnd`` of a       as any ``SessionEnd``: it ends what the store holds of the session
session never seen          (its open turn and tool uses, on a fleet those another instance
                            started) and its hooks run, for it may be the end of a session this
                            server forgot (a restart without a store) or never served (another
                            instance); a forged one ends nothing the store does not hold
a missing or refused        401 or 403 (non-blocking: the tool runs) or, with ``fail_closed``,
token                       the failure answer above (a deny for ``PreToolUse``, naming the token
                            problem); nothing of it is handled or recorded
the client closes its       nobody reads the answer (Claude Code's hook timeout passed, or it
connection first            was interrupted): the approvals asked for the call are withdrawn
                            (:class:`~otelhooks._actions._asker.Asker`)
serve stops while it        past the stop's 5 s grace: answered as a failure that names the stop
holds the call              (a deny when a hook that blocks when it fails, an approval, or
                            fail-closed guards it), never the server's bare 500; its approvals
                            are withdrawn
==========================  ======================================================================

"""

from __future__ import annotations

import json
from typing import Any

from otelhooks.integrations.coding_agents._answers import could_not_check
from otelhooks.integrations.coding_agents._common import HookResponse
from otelhooks.integrations.coding_agents._input import SKILL_COMMAND, event_name_of

__all__ = ["deny", "event_of", "failure", "http_answer"]


def event_of(raw: bytes) -> str | None:
    """The bridge's name of an unreadable input's event (a skill's command is a PreToolUse)."""
    seen = event_name_of(raw)
    return "PreToolUse" if seen == SKILL_COMMAND else seen


def deny(event: str, reason: str) -> dict[str, Any]:
    """Claude Code's block of ``event`` in an HTTP body (an HTTP hook has no exit code)."""
    if event == "PreToolUse":
        decision = {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
        return {"hookSpecificOutput": decision}
    return {"decision": "block", "reason": reason}


def http_answer(event: str, response: HookResponse) -> tuple[int, bytes]:
    """The HTTP status and body for a bridge answer (see the module table).

    Example:
        >>> http_answer("PreToolUse", HookResponse(2, stderr="no rm"))[0]
        200
    """
    if response.exit_code == 0:
        body = (response.http_body or response.stdout).strip() or "{}"
        return 200, body.encode()
    if response.exit_code == 2:
        reason = response.stderr.strip() or "Blocked by an otelhooks hook."
        return 200, json.dumps(deny(event, reason)).encode()
    problem = response.stderr.strip() or "the otelhooks bridge failed"
    return 500, json.dumps({"error": "hook_failed", "message": problem}).encode()


def failure(
    event: str | None,
    problem: str,
    status: int = 500,
    *,
    fail_closed: bool,
    closed: bool = False,
) -> tuple[int, bytes]:
    """The answer when no hook decided: a deny when fail-closed guards it (the server's
    ``fail_closed``, or ``closed``: a hook that was to decide blocks when it fails) and the
    event is (or may be, ``None``) a ``PreToolUse``, else ``status``.

    Example:
        >>> failure("Stop", "the bridge failed", fail_closed=True)[0]
        500
    """
    if (fail_closed or closed) and event in ("PreToolUse", None):
        reason = could_not_check(problem, fail_closed=fail_closed)
        return 200, json.dumps(deny("PreToolUse", reason)).encode()
    error = "hook_failed" if status == 500 else "bad_request"
    return status, json.dumps({"error": error, "message": problem}).encode()
