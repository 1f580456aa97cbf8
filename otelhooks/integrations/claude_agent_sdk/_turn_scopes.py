"""The SDK's turns as operations inside the application's: the hooks of an
``oh.operation(..., hooks=[guard])`` the SDK runs in guard every turn it runs.

The bridge opens an operation of its own for each turn (``UserPromptSubmit`` to ``Stop``, or
the first tool call of a turn it did not see start) and dispatches every event of the turn with
that operation's id. When the callbacks run inside an application's operation (``async with
oh.operation("app", hooks=[guard])`` around ``query``: the SDK's tasks, and the bridge's thread
with a copy of the callback's context, see it as current), the turn's operation is registered
*within* it, as a sub-agent's run is within the run that called it
(``HooksEngine.register(within=...)``). The engine's one route, its registry's scopes, then runs
the operation's hooks on every event of the turn, interceptors and observers alike, sync and
async, in their registration order; nothing is dispatched twice.

What cannot be delivered this way: an event outside any turn (the bridge dispatches it with no
operation) and an event the SDK never calls back for. :mod:`._undelivered` refuses the guards
among those.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from otelhooks._instrument._current import current_operation
from otelhooks.integrations.coding_agents._sessions import ServerSessions
from otelhooks.integrations.coding_agents._state_rows import OpenOperation, OpenTool

__all__ = ["TurnSessions", "enclosing_operation"]


def enclosing_operation() -> str | None:
    """The id of the application's operation the caller runs in (``None``: in none)."""
    operation = current_operation()
    return operation.operation_id if operation is not None else None


class TurnSessions(ServerSessions):
    """The bridge's sessions, whose turns' operations run within the application's operation
    current where a turn is met (``engine``'s registry holds each turn's scope while it is open,
    the application's hooks in it).

    A turn's scope is let go once the event that ended it is answered (:meth:`release_ended`: its
    ``on_complete`` and ``on_error`` observers are matched by then) and every tool call started
    in it has ended (a background sub-agent's call may end after the turn's ``Stop``), or at
    :meth:`close`.

    Example:
        >>> from otelhooks._engine import HooksEngine
        >>> engine = HooksEngine()
        >>> sessions = TurnSessions(None, engine)
        >>> op, _ = sessions.start_operation("s-1", "hi")  # in no operation: no scope
        >>> engine.registry.has_own(op.operation_id)
        False
        >>> sessions.close()
    """

    def __init__(self, path: str | os.PathLike[str] | None, engine: Any) -> None:
        super().__init__(path)
        self._scopes_engine = engine
        self._scopes_lock = threading.Lock()
        self._turn_scopes: set[str] = set()  # turns whose scope the registry holds
        # of those, the turns that ended: released once the event is answered and their calls
        # ended (a background sub-agent's call may end after its turn's Stop)
        self._turns_ended: set[str] = set()
        self._turn_calls: dict[str, set[tuple[str, str]]] = {}  # a turn's calls not ended yet

    def _enter(self, turn_id: str) -> None:
        outer = enclosing_operation()
        registry = self._scopes_engine.registry
        if outer is None or not registry.has_own(outer):
            return  # an operation with no hooks of its own adds none to the turn
        with self._scopes_lock:
            if turn_id in self._turn_scopes:
                return
            # within: the turn starts with the operation's hooks, as a sub-agent's run does
            self._scopes_engine.register([], operation_id=turn_id, within=outer)
            self._turn_scopes.add(turn_id)

    def _leave(self, op: OpenOperation | None) -> None:
        if op is not None:
            with self._scopes_lock:
                if op.operation_id in self._turn_scopes:
                    self._turns_ended.add(op.operation_id)

    def turn_ids(self) -> set[str]:
        """The operation ids of the turns open now and of those whose scope the registry still
        holds: the operations the bridge dispatches events with."""
        rows = self._run(lambda db: db.execute("SELECT operation_id FROM operations").fetchall())
        with self._scopes_lock:
            return {str(row[0]) for row in rows} | self._turn_scopes

    def release_ended(self) -> None:
        """Let go of the scopes of the turns that ended (called once an event is answered)."""
        with self._scopes_lock:
            ended = {t for t in self._turns_ended if not self._turn_calls.get(t)}
            self._turns_ended -= ended
            self._turn_scopes -= ended
            for turn_id in ended:
                self._turn_calls.pop(turn_id, None)
        for turn_id in ended:
            self._scopes_engine.registry.unregister(turn_id)

    def start_operation(
        self, session_id: str, prompt: str
    ) -> tuple[OpenOperation, OpenOperation | None]:
        new, previous = super().start_operation(session_id, prompt)
        self._leave(previous)
        self._enter(new.operation_id)
        return new, previous

    def current_operation(self, session_id: str) -> OpenOperation:
        op = super().current_operation(session_id)
        self._enter(op.operation_id)
        return op

    def peek_operation(self, session_id: str) -> OpenOperation | None:
        op = super().peek_operation(session_id)
        if op is not None:
            self._enter(op.operation_id)
        return op

    def begin_tool(
        self,
        session_id: str,
        tool_use_id: str,
        tool_name: str,
        tool_input: dict[str, Any],
        *,
        counted: bool = True,
        attributes: dict[str, Any] | None = None,
    ) -> OpenTool:
        tool = super().begin_tool(
            session_id, tool_use_id, tool_name, tool_input, counted=counted, attributes=attributes
        )
        self._enter(tool.operation_id)  # a turn opened by its first tool call
        with self._scopes_lock:
            if tool.operation_id in self._turn_scopes:
                calls = self._turn_calls.setdefault(tool.operation_id, set())
                calls.add((session_id, tool_use_id))
        return tool

    def end_tool(self, session_id: str, tool_use_id: str) -> OpenTool | None:
        tool = super().end_tool(session_id, tool_use_id)
        if tool is not None:
            self._ended_calls([tool])
        return tool

    def _ended_calls(self, tools: list[OpenTool]) -> None:
        with self._scopes_lock:
            for tool in tools:
                calls = self._turn_calls.get(tool.operation_id)
                if calls is not None:
                    calls.discard((tool.session_id, tool.tool_use_id))

    def end_operation(self, session_id: str) -> OpenOperation | None:
        ended = super().end_operation(session_id)
        self._leave(ended)
        return ended

    def end_turn(self, session_id: str) -> tuple[OpenOperation | None, list[OpenTool]]:
        return self._left(*super().end_turn(session_id))

    def end_session(self, session_id: str) -> tuple[OpenOperation | None, list[OpenTool]]:
        return self._left(*super().end_session(session_id))

    def _left(
        self, op: OpenOperation | None, tools: list[OpenTool]
    ) -> tuple[OpenOperation | None, list[OpenTool]]:
        """``op`` and ``tools`` ended together (an interrupt, the session's end)."""
        self._ended_calls(tools)
        self._leave(op)
        return op, tools

    def close(self) -> None:
        """Let go of every turn's scope, then close the session file."""
        with self._scopes_lock:
            self._turns_ended |= self._turn_scopes
            self._turn_calls.clear()
        self.release_ended()
        super().close()
