"""``POST /v1/hooks/claude-code``: Claude Code's ``http`` hooks answered by a long-lived bridge.

Claude Code posts the hook input (the JSON a command hook reads on stdin) and reads the same JSON
output from a 2xx response body. So the route hands the body to one
:class:`ClaudeCodeBridge` (shared by every session, its state in :class:`ServerSessions`) and
answers with what the bridge would print:

==========================  ======================================================================
bridge answer               HTTP answer
==========================  ======================================================================
exit 0, JSON on stdout      200 with that JSON (``{}`` when there is nothing to say)
exit 2, reason on stderr    200 with the JSON form of the block: ``permissionDecision: deny`` for
                            ``PreToolUse``, ``{"decision": "block"}`` otherwise (an HTTP hook
                            cannot answer with an exit code)
the bridge failed           500 (a non-blocking error for Claude Code: shown, the tool runs) or,
                            with ``fail_closed``, 200 with a deny for ``PreToolUse``
not JSON / not an object    400 (also non-blocking)
==========================  ======================================================================

Events whose hooks decide (``PreToolUse``, ``UserPromptSubmit``, ``PermissionRequest``) run on a
worker thread: a control webhook or a command hook they wait for never blocks the server's event
loop. The others only record (session state, a span, queued observers) and are answered inline.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import structlog

from otelhooks._eventlog._asgi import Receive, Scope, Send, read_body, respond, send_json
from otelhooks.integrations.claude_code._bridge import ClaudeCodeBridge
from otelhooks.integrations.claude_code._common import HookResponse

__all__ = ["DEFAULT_MAX_HOOK_BODY", "HOOK_ROUTE", "ClaudeCodeHookRoute", "http_answer"]

HOOK_ROUTE = "/v1/hooks/claude-code"
DEFAULT_MAX_HOOK_BODY = 4 * 1024 * 1024  # tool inputs and responses (file contents) included
DECIDING_THREADS = 64  # deciding hook calls answered at once (each may wait for an approval)

_log = structlog.get_logger("otelhooks")

# events whose hooks decide (intercept chains); every other event's hooks are observers
_DECIDING = frozenset({"PreToolUse", "UserPromptSubmit", "PermissionRequest"})


def _deny(event: str, reason: str) -> dict[str, Any]:
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
        body = response.stdout.strip() or "{}"
        return 200, body.encode()
    if response.exit_code == 2:
        reason = response.stderr.strip() or "Blocked by an otelhooks hook."
        return 200, json.dumps(_deny(event, reason)).encode()
    problem = response.stderr.strip() or "the otelhooks bridge failed"
    return 500, json.dumps({"error": "hook_failed", "message": problem}).encode()


class ClaudeCodeHookRoute:
    """The ASGI handler of ``POST /v1/hooks/claude-code`` (auth is checked by the app).

    Args:
        bridge: the long-lived bridge (``state`` a :class:`ServerSessions`).
        fail_closed: when the bridge itself fails on a ``PreToolUse``, deny the tool instead
            of answering 500 (which Claude Code treats as "no objection").
        max_body_bytes: largest hook input accepted (else 413, a non-blocking error).

    Example:
        >>> route = ClaudeCodeHookRoute(bridge)
        >>> route.answer({"hook_event_name": "Stop", "session_id": "s-1"})
        (200, b'{}')
    """

    def __init__(
        self,
        bridge: ClaudeCodeBridge,
        *,
        fail_closed: bool = False,
        max_body_bytes: int = DEFAULT_MAX_HOOK_BODY,
    ) -> None:
        self.bridge = bridge
        self.fail_closed = fail_closed
        self.max_body_bytes = max_body_bytes
        # Deciding hooks may wait long (an approval waits for a person): on threads of their
        # own, never the loop's small default executor that every other to_thread shares.
        self._deciding = ThreadPoolExecutor(
            DECIDING_THREADS, thread_name_prefix="otelhooks-claude-decide"
        )

    def close(self) -> None:
        """Stop the deciding threads (calls still waiting finish on their own)."""
        self._deciding.shutdown(wait=False)

    def answer(self, payload: Mapping[str, Any]) -> tuple[int, bytes]:
        """Handle one hook input; returns the HTTP status and body."""
        event = str(payload.get("hook_event_name") or "")
        try:
            response = self.bridge.handle(payload)
        except Exception as exc:
            _log.exception("claude-code hook failed", hook_event=event)
            if self.fail_closed and event == "PreToolUse":
                reason = f"otelhooks could not check this tool call ({type(exc).__name__})"
                return 200, json.dumps(_deny(event, reason)).encode()
            return 500, json.dumps({"error": "hook_failed", "message": str(exc)}).encode()
        return http_answer(event, response)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = await read_body(receive, self.max_body_bytes)
        if raw is None:
            body = {"error": "too_large", "message": f"at most {self.max_body_bytes} bytes"}
            await send_json(send, 413, body)
            return
        try:
            payload = json.loads(raw)
        except ValueError as exc:
            await send_json(send, 400, {"error": "bad_request", "message": f"not JSON: {exc}"})
            return
        if not isinstance(payload, dict):
            body = {"error": "bad_request", "message": "the hook input is not a JSON object"}
            await send_json(send, 400, body)
            return
        if str(payload.get("hook_event_name")) in _DECIDING:
            # intercept hooks may wait (commands, control webhooks): never on the event loop
            loop = asyncio.get_running_loop()
            call = contextvars.copy_context().run  # as to_thread: the caller's context
            status, answer = await loop.run_in_executor(self._deciding, call, self.answer, payload)
        else:
            # the rest only records (session state in memory, a span, queued observers):
            # answered inline, without a thread hop on Claude Code's path
            status, answer = self.answer(payload)
        await respond(send, status, answer, b"application/json")
