"""``ToolRun``: what the LangChain handler keeps of one tool run it opened. A record of its own,
read by the handler, by the tool wrappers and by the resume check after LangGraph's
``interrupt()``, none of which the others need to import."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from otelhooks._instrument import ToolCall
from otelhooks.integrations._scopes import DetachedScope

__all__ = ["CALLER_INJECTED", "GUARDED_BY", "INNER_RUN_KEY", "ToolNotHookedError", "ToolRun"]

# The metadata (of its own run only) marking a wrapper's inner tool run that its handlers hear
# (LangChain's debug or LangSmith tracing is on, see ``_quiet_run``): one span, the wrapper's.
INNER_RUN_KEY = "otelhooks_inner_run"

# The ``InjectedToolArg`` arguments the caller gave a hooked tool, which LangChain leaves out of
# what callbacks see: set by the wrapper as its run starts, read by the handler's tool start,
# which runs in that context (a synchronous handler in an async run gets a copy of it).
CALLER_INJECTED: ContextVar[dict[str, Any] | None] = ContextVar(
    "otelhooks_langchain_caller_injected", default=None
)

# The handler whose ``OtelHooksMiddleware`` is running a tool call of a LangChain agent: set by
# the middleware around the rest of the call (the middleware after it, the ``ToolNode``), read
# by that handler's tool start, which refuses a tool no wrapper enforces its hooks on (a
# middleware after it ran one of its own); cleared inside a hooked tool, whose own work (a
# subagent, say) is not the call the middleware guards.
GUARDED_BY: ContextVar[object | None] = ContextVar("otelhooks_langchain_guarded_by", default=None)


class ToolNotHookedError(Exception):
    """A tool started inside an ``OtelHooksMiddleware``'s tool call that no ``hook_tool`` wrapper
    enforces the hooks on (a middleware listed after it ran a tool of its own, or put one in the
    request after otelhooks wrapped its tool): raised by the handler as the tool starts, so it
    never runs; a deny or a rewrite its guards gave would go unheard."""


@dataclass
class ToolRun:
    """One tool run the handler opened: its span scope and whether a wrapper enforces hooks.

    Attributes:
        scope: the ``execute_tool`` scope.
        hooked: the tool is an otelhooks wrapper (it obeys denials and mocks).
        tool_call_id: the model's tool call id, when the tool was called with one.
        result_set: the wrapper already recorded the result.
        args: the arguments the call started with (before any hook rewrote them).
        contested: another call started under the same run id while this one was open: the
            decision found by that id may be either call's, so the wrappers refuse both.
        answers: the answers a person gave this call's tool at its pauses (LangGraph's
            ``interrupt()``), which a rerun of its task hands each ``interrupt()`` of the task
            in turn: refused, the call takes them itself, else the task's next question
            would get the answer given to this one.
    """

    scope: DetachedScope[ToolCall]
    hooked: bool
    tool_call_id: str | None
    result_set: bool = False
    args: dict[str, Any] = field(default_factory=dict)
    contested: bool = False
    answers: int = 0

    @property
    def call(self) -> ToolCall:
        return self.scope.scope
