"""``POST /v1/hooks/claude-code``: Claude Code's ``http`` hooks answered by a long-lived bridge.

Claude Code posts the hook input (the JSON a command hook reads on stdin) and reads the same JSON
output from a 2xx response body. So the route hands the body to one
:class:`ClaudeCodeBridge` (shared by every session, its state in :class:`ServerSessions`) and
answers with what the bridge would print, in HTTP's terms: a block as JSON, a failure as 500
or, fail-closed, a deny; 413, 400, 401/403, 503 with ``Retry-After`` (the table of
:mod:`~otelhooks.integrations.coding_agents._http_answers`, which builds each).

The body is read by :func:`~otelhooks.integrations.coding_agents._input.parse_input`, as the
command form reads stdin: a value nested deeper than its limit reaches the hooks as its JSON text,
never as a ``RecursionError``.

Events whose hooks decide (``PreToolUse``, ``Stop``, ``PostToolUse``... every event of
:data:`ANSWERING_EVENTS`) run on a
:class:`~otelhooks.integrations.coding_agents._fair.FairRunner`: a control webhook or a command hook
they wait for never blocks the server's event loop, one session's slow calls never hold another
session's, and an answer that would come after ``decision_timeout_s`` (kept below the 10 s
timeout ``install --http`` writes) is given up on and answered as a failure, logged as an error.
That deadline is kept by the event loop, which waits for the deciding thread, so the thread runs
sync Python hooks itself (:func:`~otelhooks._dispatch._calls.waited_within`): one thread hop per
deciding event, not one more per hook. A hook stuck there costs its thread, which the runner
replaces; commands, webhooks and hooks with a deadline shorter than the route's keep their own.
The others only record (session state, a span, queued observers) and are answered inline, and
so is a deciding event that no hook but the given recorders (serve's event-log observers) may run
for, when the session store is local (:meth:`ClaudeCodeHookRoute.inline`): nothing can decide it
or make it wait, so it takes no hop.

On a shared store (PostgreSQL) every event's session change is a round trip that a slow or
locked database can hold for up to its statement timeout, so every event takes the hop: the
event loop, which keeps every session's deadline, never waits for the database. An event only
the store can hold (no hook but the recorders runs for it) that is still unanswered at the
deadline is answered as the store's failure, ``503`` with ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Collection, Mapping
from functools import partial
from typing import Any

import structlog

from otelhooks._actions._approval import longest_approval_of
from otelhooks._actions._asker import Asker
from otelhooks._dispatch._calls import waited_within
from otelhooks._eventlog._asgi import Receive, Scope, Send, disconnected, read_body, respond
from otelhooks._hooks import Hook
from otelhooks._store._errors import StoreUnavailable, error_reason
from otelhooks.integrations.coding_agents._answers import (
    ANSWERING_EVENTS,
    closed_answer,
    late_problem,
)
from otelhooks.integrations.coding_agents._bridge import ClaudeCodeBridge
from otelhooks.integrations.coding_agents._fair import FairRunner, Late
from otelhooks.integrations.coding_agents._guard_time import ASKS_ON_FAILURE
from otelhooks.integrations.coding_agents._http_answers import event_of, failure, http_answer
from otelhooks.integrations.coding_agents._input import (
    InputProblem,
    as_tool_call,
    parse_input,
    tool_name_of,
)
from otelhooks.integrations.coding_agents._sessions import ServerSessions

__all__ = [
    "DEFAULT_DECISION_TIMEOUT_S",
    "DEFAULT_MAX_HOOK_BODY",
    "HOOK_ROUTE",
    "ClaudeCodeHookRoute",
]

HOOK_ROUTE = "/v1/hooks/claude-code"
DEFAULT_MAX_HOOK_BODY = 4 * 1024 * 1024  # tool inputs and responses (file contents) included
# ``install --http`` writes a 10 s timeout: answer by 8 s, so a late answer is still ours to give
DEFAULT_DECISION_TIMEOUT_S = 8.0
# deciding calls answered at once, across sessions (each may wait for a person's approval)
DECIDING_THREADS = 64

# what a deciding call held when serve stops (a restart) is answered with
_STOPPED = "otelhooks serve stopped (a restart, or its end) before the hooks answered"
_log = structlog.get_logger("otelhooks")

# events whose hooks decide: they run before the answer (every other event's hooks are queued)
_DECIDING = ANSWERING_EVENTS


class ClaudeCodeHookRoute:
    """The ASGI handler of ``POST /v1/hooks/claude-code`` (auth is checked by the app).

    Args:
        bridge: the long-lived bridge (``state`` a :class:`ServerSessions`).
        fail_closed: when the bridge itself fails on a ``PreToolUse`` (or gives no answer in
            time), deny the tool instead of answering 500 (which Claude Code treats as "no
            objection").
        max_body_bytes: largest hook input accepted (else 413, a non-blocking error).
        decision_timeout_s: a deciding event not answered by then gets the failure answer.
        runner: where deciding events run (a :class:`FairRunner` of 32 threads by default).
        recorders: registered hooks that only record, never answering and never waiting (an
            event log's observers): a deciding event that no other hook may run for is
            answered on the event loop, as a non-deciding one is, when the session store
            never waits either (:attr:`ServerSessions.local`).

    Example:
        >>> from otelhooks.integrations.coding_agents import CodingAgentBridge
        >>> bridge = CodingAgentBridge(state=ServerSessions())
        >>> route = ClaudeCodeHookRoute(bridge)
        >>> route.answer({"hook_event_name": "Stop", "session_id": "s-1"})
        (200, b'{}')
        >>> route.close()
        >>> bridge.close().ok
        True
    """

    def __init__(
        self,
        bridge: ClaudeCodeBridge,
        *,
        fail_closed: bool = False,
        max_body_bytes: int = DEFAULT_MAX_HOOK_BODY,
        decision_timeout_s: float = DEFAULT_DECISION_TIMEOUT_S,
        runner: FairRunner | None = None,
        recorders: Collection[Hook] = (),
    ) -> None:
        self.bridge = bridge
        self.fail_closed = fail_closed
        self.max_body_bytes = max_body_bytes
        self.decision_timeout_s = decision_timeout_s
        drops = bridge.engine.metrics.drop_counter("claude_code_hooks")
        self.runner = runner or FairRunner(workers=DECIDING_THREADS, on_drop=drops)
        # (registry version, deadline, whether an approval hook may ask a person) last read
        self._deadline_at = (-1, decision_timeout_s, False)
        self._recorders = tuple(recorders)  # held, so that their ids stay theirs
        self._recorder_ids = frozenset(map(id, self._recorders))
        sessions = bridge.state
        self._local = isinstance(sessions, ServerSessions) and sessions.local
        self._store = sessions.store_name

    def _deadline_s(self) -> float:
        """When a deciding call counts as failed: an approval hook holds it for a person, so
        its timeout (and the margin its own deadline takes first) comes before ours."""
        registry = self.bridge.engine.registry
        version, deadline_s, asks = self._deadline_at
        if version != registry.version:  # read again only when the hooks changed
            version = registry.version
            wait_s = longest_approval_of(registry.hooks())
            deadline_s = self.decision_timeout_s
            if wait_s:
                deadline_s = max(self.decision_timeout_s, wait_s + 5.0)
            asks = wait_s > 0
            self._deadline_at = (version, deadline_s, asks)
        return deadline_s

    def _asks_people(self) -> bool:
        """Whether an approval hook is registered: a person may be asked, and the client may
        give up first (:class:`Asker`)."""
        self._deadline_s()  # read again when the hooks changed
        return self._deadline_at[2]

    def inline(self, payload: Mapping[str, Any]) -> bool:
        """Whether a deciding event may be answered on the event loop: its session store never
        waits and no hook but the recorders may run before its answer (the bridge's
        :meth:`~CodingAgentBridge.hooks_now`, from the engine's index), so nothing can decide
        it and nothing on its road can wait.

        Example:
            >>> from otelhooks.integrations.coding_agents import CodingAgentBridge
            >>> bridge = CodingAgentBridge(state=ServerSessions())
            >>> route = ClaudeCodeHookRoute(bridge)
            >>> route.inline({"hook_event_name": "PreToolUse", "tool_name": "Bash"})
            True
            >>> route.close()
            >>> bridge.close().ok
            True
        """
        return self._local and self._quiet(payload)

    def _quiet(self, payload: Mapping[str, Any]) -> bool:
        """Whether no hook but the recorders may run before ``payload`` is answered."""
        hooks = self.bridge.hooks_now(payload)
        return hooks is not None and all(id(h) in self._recorder_ids for h in hooks)

    def _decide(
        self,
        payload: Mapping[str, Any],
        deadline_s: float,
        only: frozenset[int] | None = None,
        asker: Asker | None = None,
    ) -> tuple[int, bytes]:
        """:meth:`answer` on the deciding thread, whose waiter answers within ``deadline_s``;
        the approvals asked there are withdrawn when ``asker`` (the client) goes away."""
        asking = asker.asking() if asker is not None else contextlib.nullcontext()
        with waited_within(deadline_s, only=only), asking:
            return self.answer(payload)

    def answer(self, payload: Mapping[str, Any]) -> tuple[int, bytes]:
        """Handle one hook input; returns the HTTP status and body."""
        event = str(payload.get("hook_event_name") or "")
        sessions = self.bridge.state
        if isinstance(sessions, ServerSessions):
            sessions.note(str(payload.get("session_id") or "unknown-session"))
        try:
            response = self.bridge.handle(payload, open_tools_only=True)
        except StoreUnavailable as exc:
            if self.fail_closed and event == "PreToolUse":
                _log.warning("claude-code hook: store unavailable", error=str(exc))
                return failure(event, str(exc), fail_closed=self.fail_closed)
            raise  # answered 503 with Retry-After by __call__: the client may retry
        except Exception as exc:
            _log.exception("claude-code hook failed", hook_event=event)
            return failure(
                event or None, f"{type(exc).__name__}: {exc}", fail_closed=self.fail_closed
            )
        return http_answer(event, response)

    async def refused(
        self, receive: Receive, send: Send, status: int, body: Mapping[str, Any]
    ) -> None:
        """Answer a request whose token is missing or refused (``status`` and ``body``: the
        app's 401 or 403). Claude Code takes those for a hook that failed and runs the tool, so
        with ``fail_closed`` the event gets the failure answer (a deny for ``PreToolUse``). Its
        body is read for the event's name only: no hook runs, nothing is recorded, no session
        is looked at, so the sender learns nothing the 401 or 403 did not say."""
        if self.fail_closed:
            raw = await read_body(receive, self.max_body_bytes)
            event = event_of(raw) if raw is not None else None
            problem = f"the hook request was refused: {body.get('message')}"
            closed, answer = failure(event, problem, status, fail_closed=self.fail_closed)
            if closed == 200:
                await respond(send, 200, answer, b"application/json")
                return
        await respond(send, status, json.dumps(body).encode(), b"application/json")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self._serve(receive, send)
        except StoreUnavailable as exc:
            _log.warning("claude-code hook: store unavailable", error=str(exc))
            body = json.dumps({"error": error_reason(exc), "message": str(exc)}).encode()
            retry = [(b"retry-after", str(exc.retry_after_s).encode())]
            await respond(send, 503, body, b"application/json", retry)

    async def _serve(self, receive: Receive, send: Send) -> None:
        head: list[bytes] = []
        raw = await read_body(receive, self.max_body_bytes, head)
        if raw is None:
            status, answer = self._too_large(head[0] if head else b"")
            await respond(send, status, answer, b"application/json")
            return
        try:
            payload = as_tool_call(parse_input(raw))
        except InputProblem as exc:
            status, answer = failure(event_of(raw), str(exc), 400, fail_closed=self.fail_closed)
            await respond(send, status, answer, b"application/json")
            return
        event = str(payload.get("hook_event_name") or "")
        quiet = event not in _DECIDING or self._quiet(payload)
        if quiet and self._local:
            # the rest only records (session state in memory, a span, queued observers, a
            # log's append): answered inline, without a thread hop on Claude Code's path; the
            # recorders (never waiting) run here too, any other hook keeps its own deadline
            with waited_within(self.decision_timeout_s, only=self._recorder_ids):
                status, answer = self.answer(payload)
        else:
            # intercept hooks may wait (commands, control webhooks), a shared store may be
            # slow: never on the event loop, never behind another session's calls, never past
            # the client's timeout
            session = str(payload.get("session_id") or "unknown-session")
            deadline_s = self._deadline_s() if not quiet else self.decision_timeout_s
            only = self._recorder_ids if quiet else None
            # a person may be asked: the client's giving up withdraws what it asked
            asker = Asker() if not quiet and self._asks_people() else None
            watch = asyncio.ensure_future(_client_gone(receive, asker, event)) if asker else None
            try:
                status, answer = await self.runner.run(
                    session,
                    partial(self._decide, payload, deadline_s, only, asker),
                    timeout_s=deadline_s,
                )
            except asyncio.CancelledError:
                # serve is stopping (a restart of a fleet's instance) past its grace: nobody
                # waits for the cards asked for the call any more, and its client gets a
                # failure that says so (a deny under fail-closed), not the server's bare 500,
                # which Claude Code takes as no decision and runs the tool
                if asker is not None:
                    threading.Thread(target=asker.gone, name="otelhooks-withdraw").start()
                _log.error(
                    "claude-code hook: serve stopped before the answer: answered as a failure",
                    hook_event=event,
                    fail_closed=self.fail_closed,
                )
                status, answer = self._late(event, payload, _STOPPED)
            except Late as late:
                if quiet and not (self.fail_closed and event == "PreToolUse"):
                    # nothing but the store could hold it (or too many wait for it): the
                    # store's failure, which the client retries
                    raise StoreUnavailable(self._store, str(late)) from None
                _log.error(
                    "claude-code hook gave no answer in time: answered as a failure",
                    hook_event=event,
                    reason=late.reason,
                    fail_closed=self.fail_closed,
                )
                problem = f"otelhooks: {late}"
                # its guards had the time it ran, not the time it waited for a thread
                status, answer = self._late(event, payload, problem, late.had_s(deadline_s))
            finally:
                if watch is not None:
                    watch.cancel()
        await respond(send, status, answer, b"application/json")

    def _too_large(self, head: bytes) -> tuple[int, bytes]:
        """The answer to an input past the body limit (``head``: its start): a deny when it is a
        ``PreToolUse`` a guard would have judged (none of them could: Claude Code takes the
        413 for a non-blocking error and runs the tool), else 413 (a deny with ``fail_closed``
        when it may be a ``PreToolUse``)."""
        problem = f"the hook input is larger than {self.max_body_bytes} bytes"
        event = event_of(head)
        guards: list[str] = []
        if event == "PreToolUse":
            tool = tool_name_of(head)
            registry = self.bridge.engine.registry
            hooks = (
                self.bridge.hooks_now({"hook_event_name": event, "tool_name": tool})
                if tool is not None
                else registry.may_match("before_tool_call")  # any guard may be its tool's
            )
            guards = [
                h.id
                for h in hooks or ()
                if h.mode == "enforce" and not h.notifies and id(h) not in self._recorder_ids
            ]
        if guards:
            which = "hook " + ", ".join(guards)
            problem = f"{problem}: {which} could not check it"
            _log.error("claude-code hook input too large: denied", hook_ids=guards)
            return failure(event, problem, 413, closed=True, fail_closed=self.fail_closed)
        # fail-closed: any event may be it
        status, answer = failure(None, problem, 413, fail_closed=self.fail_closed)
        if status == 413:
            answer = json.dumps({"error": "too_large", "message": problem}).encode()
        return status, answer

    def _late(
        self,
        event: str,
        payload: Mapping[str, Any],
        problem: str,
        waited_s: float | None = None,
    ) -> tuple[int, bytes]:
        """The answer of a deciding call its hooks did not answer in ``waited_s``: a block
        when a hook that was to decide it blocks when it fails, or had more time (its own
        timeouts) than the server's ``--hook-timeout``."""
        hooks = self.bridge.hooks_now(payload, late=True)
        waited = None if event in ASKS_ON_FAILURE else waited_s  # Claude Code asks the person
        problem, closed = late_problem(problem, hooks, waited)
        if closed and event != "PreToolUse":
            # the hook that blocks when it fails failed: its block, as in time
            return http_answer(event, closed_answer(event, problem, payload))
        return failure(event, problem, closed=closed, fail_closed=self.fail_closed)

    def close(self) -> None:
        """Stop the runner's threads (after the calls it holds)."""
        self.runner.close()


async def _client_gone(receive: Receive, asker: Asker, event: str) -> None:
    """Wait for the client to close its connection before its answer (Claude Code's hook
    timeout passed, or it was interrupted: it went on without us), then withdraw the approvals
    asked for it, so that no person approves a call nobody waits for."""
    await disconnected(receive)
    # a shared inbox's withdrawal waits for the database
    if await asyncio.to_thread(asker.gone):
        _log.warning(
            "claude-code hook: the client stopped waiting before the answer (its hook timeout, "
            "or an interrupt) and went on without it (a timed-out PreToolUse runs its tool): "
            "its approvals are withdrawn; give the hook a timeout longer than the approval's",
            hook_event=event,
        )
