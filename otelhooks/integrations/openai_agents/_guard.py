"""The one way a hooked tool of the Agents SDK runs: through the tool hooks of the run
:class:`~otelhooks.integrations.openai_agents.HookedRunner` is executing (:func:`guarded`), or,
outside one, with an :class:`UnguardedToolWarning` saying no hook saw it."""

from __future__ import annotations

import inspect
import json
import warnings
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, Protocol

from otelhooks._live import refusal

__all__ = [
    "CURRENT_RUN",
    "RAISED",
    "Execute",
    "GuardingRun",
    "RewriteRefusedError",
    "UnguardedToolWarning",
    "awaited",
    "call_namespace",
    "guarded",
    "parse_args",
    "tool_raised",
]


# runs a tool given the arguments a hook rewrote (None: unchanged)
Execute = Callable[[dict[str, Any] | None], Awaitable[Any]]


class GuardingRun(Protocol):
    """What a hooked tool asks of the run executing it
    (:class:`~otelhooks.integrations.openai_agents._runner.AgentRun`)."""

    async def guard_tool(
        self,
        name: str,
        identifier: str | None,
        args: dict[str, Any],
        call_id: str | None,
        execute: Execute,
        shown: Callable[[Any], Any] | None = None,
        attributes: dict[str, Any] | None = None,
        refused: str | None = None,
        namespace: str | None = None,
    ) -> tuple[Any, bool]: ...

    def settle(self, context: Any, agent: str | None = None, own: bool = True) -> None: ...

    async def handoff_starts(self, name: str, context: Any) -> None: ...

    def refuse_call(
        self, name: str, identifier: str, args: dict[str, Any], call_id: str | None, exc: Exception
    ) -> None: ...

    def output_withheld(
        self,
        tool: str,
        call_id: str,
        guardrail: str,
        message: str,
        identifier: str | None = None,
        namespace: str | None = None,
    ) -> None: ...

    def guardrail_rejected(
        self,
        tool: str,
        call_id: str,
        args: dict[str, Any],
        guardrail: str,
        message: str,
        identifier: str | None = None,
        namespace: str | None = None,
    ) -> None: ...


CURRENT_RUN: ContextVar[GuardingRun | None] = ContextVar(
    "otelhooks_openai_agents_run", default=None
)
"""The run :class:`~otelhooks.integrations.openai_agents.HookedRunner` is executing (inherited by
the SDK's tool tasks)."""


# The hooked call running in this task (its call id) and the exceptions of its tool that the SDK
# turned into a message for the model: set by AgentRun.guard_tool around the call. The id tells
# them from those of a call nested in it (the tools of an unhooked agent run as a tool), which
# are not this call's failure.
RAISED: ContextVar[tuple[str | None, list[Exception]] | None] = ContextVar(
    "otelhooks_tool_raised", default=None
)


def tool_raised(call_id: str | None, error: Exception) -> None:
    """Tell the hooked call ``call_id`` its tool raised ``error``, which the SDK turned into a
    message for the model (a failure handler saw it: the run's ``tool_error_formatter`` or the
    tool's own ``failure_error_function``)."""
    current = RAISED.get()
    if current is not None and current[0] == call_id:
        current[1].append(error)


class RewriteRefusedError(Exception):
    """A check the SDK made before the hooks refused, made again, the arguments a hook rewrote
    (a tool input guardrail, the tool's ``needs_approval``): raised by a hooked tool's ``run``
    instead of running the tool, it makes the call a deny ``decided_by`` gave ``reason`` for."""

    def __init__(self, reason: str, decided_by: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.decided_by = decided_by


class UnguardedToolWarning(UserWarning):
    """An agent's tool runs without any otelhooks tool hook seeing it (a hosted tool the model's
    API runs, a tool kind otelhooks cannot wrap, a hooked tool or MCP server run outside
    :meth:`HookedRunner.run` and :meth:`HookedRunner.run_streamed`), or a tool kind's guard
    cannot match it (a renamed ``ShellTool``).

    Turn it into an error to refuse such agents: ``warnings.simplefilter("error",
    UnguardedToolWarning)``.
    """


def call_namespace(namespace: Any, name: str) -> str | None:
    """The namespace a call of tool ``name`` was made in (a ``ToolContext``'s
    ``tool_namespace``), ``None`` for none and for the one the model calls a deferred tool in
    (``defer_loading``: the tool's own name, which ``tool_namespace()`` refuses to give)."""
    return namespace if isinstance(namespace, str) and namespace and namespace != name else None


async def awaited(value: Any) -> Any:
    """``value``, awaited if it is awaitable (an executor or editor may be sync or async)."""
    return await value if inspect.isawaitable(value) else value


def parse_args(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_value": value}


async def guarded(
    name: str,
    identifier: str | None,
    args: dict[str, Any],
    call_id: str | None,
    run: Execute,
    shown: Callable[[Any], Any] | None = None,
    attributes: dict[str, Any] | None = None,
    refused: str | None = None,
    namespace: str | None = None,
) -> tuple[Any, bool]:
    """``run`` through the current hooked run's tool hooks (as it is outside one); a call
    otelhooks ``refused`` (why) never runs, and is denied with no hook run. ``namespace``: the
    tool's ``tool_namespace`` (matched as ``{namespace}.{name}`` and as ``name``)."""
    hooked_run = CURRENT_RUN.get()
    if hooked_run is None:
        if refused is not None:  # nothing runs unguarded: the refusal is the answer
            return refusal(refused).reason, True
        # a hooked agent run by the SDK's own Runner (streamed or not): no hook can see the call,
        # so say so rather than let the guards look in force
        warnings.warn(
            f"tool {name!r} of a hooked agent ran outside HookedRunner.run: no otelhooks tool "
            "hook saw it (run the agent with HookedRunner.run or HookedRunner.run_streamed)",
            UnguardedToolWarning,
            stacklevel=2,
        )
        return await run(None), False
    return await hooked_run.guard_tool(
        name, identifier, args, call_id, run, shown, attributes, refused, namespace
    )
