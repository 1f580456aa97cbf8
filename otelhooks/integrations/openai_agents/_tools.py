"""Function tools that run through otelhooks' ``before_tool_call`` chain.

:func:`hook_tool` returns a copy of a ``FunctionTool`` whose ``on_invoke_tool`` opens the
``execute_tool`` span (the interceptors run, awaited, as it starts) and calls the real function
only when no hook denied or mocked the call. It runs after the tool's own SDK guardrails, so an
SDK guardrail rejection never reaches otelhooks' hooks; such a rejection is recorded as an
``on_tool_call_denied`` event instead (see :func:`_watch_guardrail`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

from agents import Agent, FunctionTool, ToolInputGuardrail, ToolInputGuardrailData
from agents.tool_context import ToolContext
from agents.tool_guardrails import ToolGuardrailFunctionOutput

if TYPE_CHECKING:
    from otelhooks.integrations.openai_agents._runner import AgentRun

__all__ = ["CURRENT_RUN", "hook_agent", "hook_tool", "parse_args"]

CURRENT_RUN: ContextVar[AgentRun | None] = ContextVar("otelhooks_openai_agents_run", default=None)
"""The run :class:`~otelhooks.integrations.openai_agents.HookedRunner` is executing (inherited by
the SDK's tool tasks)."""

_HOOKED: Final = "__otelhooks_hooked__"

Invoker = Callable[[ToolContext[Any], str], Awaitable[Any]]


def parse_args(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_value": value}


def _watch_guardrail(tool_name: str, guardrail: ToolInputGuardrail[Any]) -> ToolInputGuardrail[Any]:
    """The SDK guardrail, unchanged in effect, reporting a ``reject_content`` to the run."""

    async def watched(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        output = await guardrail.run(data)
        behavior = output.behavior
        run = CURRENT_RUN.get()
        if run is not None and behavior["type"] == "reject_content":
            run.guardrail_rejected(
                tool_name,
                data.context.tool_call_id,
                parse_args(data.context.tool_arguments),
                guardrail.get_name(),
                behavior["message"],
            )
        return output

    return ToolInputGuardrail(guardrail_function=watched, name=guardrail.get_name())


def hook_tool(tool: FunctionTool, *, identifier: str | None = None) -> FunctionTool:
    """A copy of ``tool`` whose calls go through otelhooks' tool hooks.

    Inside :meth:`HookedRunner.run` each call is an ``execute_tool {name}`` span: a
    ``before_tool_call`` deny or mock means the function is never called (the model gets the
    ``hook_denied`` reason or the mock as the tool output), rewritten arguments reach the
    function, and its result goes through ``tool_result_persist``. Outside a hooked run the
    copy behaves exactly as ``tool``. Hooking a hooked tool returns it unchanged.

    Args:
        tool: the SDK function tool.
        identifier: the ``identifier`` half of the matcher value ``identifier/apiName``; the
            calling agent's name when omitted.
    """
    if getattr(tool.on_invoke_tool, _HOOKED, False):
        return tool
    original: Invoker = tool.on_invoke_tool

    async def invoke(ctx: ToolContext[Any], input: str) -> Any:
        run = CURRENT_RUN.get()
        if run is None:
            return await original(ctx, input)
        return await run.invoke_tool(tool.name, identifier, original, ctx, input)

    setattr(invoke, _HOOKED, True)
    hooked = copy.copy(tool)
    hooked.on_invoke_tool = invoke
    if tool.tool_input_guardrails:
        hooked.tool_input_guardrails = [
            _watch_guardrail(tool.name, g) for g in tool.tool_input_guardrails
        ]
    return hooked


def hook_agent(agent: Agent[Any], *, _seen: dict[int, Agent[Any]] | None = None) -> Agent[Any]:
    """A clone of ``agent`` (and of every agent it hands off to) with its function tools hooked.

    The original agents are not changed, so they stay safe to share. ``Handoff`` objects (as
    opposed to plain agents in ``handoffs``) are kept as they are: the agent they return is
    created by your code, so hook it there.
    """
    seen = {} if _seen is None else _seen
    if id(agent) in seen:
        return seen[id(agent)]
    tools = [hook_tool(t) if isinstance(t, FunctionTool) else t for t in agent.tools]
    clone = agent.clone(tools=tools)
    seen[id(agent)] = clone
    clone.handoffs = [
        hook_agent(h, _seen=seen) if isinstance(h, Agent) else h for h in agent.handoffs
    ]
    return clone
