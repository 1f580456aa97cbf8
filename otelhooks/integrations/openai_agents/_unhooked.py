"""A tool otelhooks could hook that starts in a hooked run without being hooked: refused.

:func:`~otelhooks.integrations.openai_agents.hook_agent` hooks the tools an agent lists
(``agent.tools``, its MCP servers). The SDK asks the agent for its tools at each turn
(``Agent.get_all_tools``), so a tool that is not among them reaches the model unhooked: one an
``Agent`` subclass's ``get_all_tools`` (or ``get_mcp_tools``) returns, one appended to the
agent's ``tools`` while it runs; and ``agent.as_tool(...)`` of an agent whose own tools are not
hooked, whose nested run the SDK gives that very agent. Their calls would run past every guard;
so, when the SDK starts one (the agent's ``on_tool_start``, before the tool's own code), the
call is refused: an ``execute_tool`` span denied by ``otelhooks`` (``on_tool_call_denied``
told) and failed, and :class:`ToolNotHookedError` raised, which the SDK raises from the run
(``UserError``), so the tool never runs. A ``SandboxAgent``'s capability tools, which the SDK
adds at each run, stay as :func:`hook_agent`'s warning says (run, unguarded).
"""

from __future__ import annotations

from typing import Any

import structlog
from agents import Agent, ApplyPatchTool, CustomTool, FunctionTool, LocalShellTool, ShellTool
from agents.run_context import RunContextWrapper
from agents.sandbox import SandboxAgent
from agents.tool import Tool, ToolOriginType, get_function_tool_origin
from agents.tool_context import ToolContext

from otelhooks.integrations.openai_agents._agent_tools import NOT_KNOWN, unhooked_agent_of
from otelhooks.integrations.openai_agents._guard import CURRENT_RUN, parse_args
from otelhooks.integrations.openai_agents._mcp_servers import HookedMCPServer
from otelhooks.integrations.openai_agents._tools import Hookable, hook_tool

__all__ = ["ToolNotHookedError", "refuse_unhooked"]

_log = structlog.get_logger("otelhooks")
_NOT_LISTED = (
    "is not one hook_agent hooked (an Agent subclass's get_all_tools returned it, or it was "
    "added while the agent ran)"
)


class ToolNotHookedError(RuntimeError):
    """A tool started in a :class:`HookedRunner` run without otelhooks' hooks (an ``Agent``
    subclass's ``get_all_tools`` returned it, or it was added to the agent while it ran; or
    ``agent.as_tool(...)`` of an agent whose own tools are not hooked): it was refused before
    it ran. List the agent's tools in ``Agent(tools=...)``, which :func:`hook_agent` hooks, and
    make an agent tool from ``hook_agent(agent).as_tool(...)``.
    """


# the name users import it by
ToolNotHookedError.__module__ = "otelhooks.integrations.openai_agents"


def _unhooked(agent: Agent[Any], tool: Tool) -> str | None:
    """Why ``tool`` is one otelhooks hooks, started without its hooks (``None``: it is not)."""
    if isinstance(agent, SandboxAgent):
        return None  # its capabilities' tools: named by hook_agent's warning
    if isinstance(tool, FunctionTool):
        origin = get_function_tool_origin(tool)
        if origin is not None and origin.type is ToolOriginType.MCP:
            # judged at the server's wrapper, when the agent's servers are wrapped
            if all(isinstance(s, HookedMCPServer) for s in agent.mcp_servers):
                return None
            return _NOT_LISTED
        # an agent used as a tool whose own tools are not hooked: its nested run would call
        # them past every guard, and the SDK runs that very agent, never a hooked clone
        nested = unhooked_agent_of(tool)
        if nested is not None and nested[1] is not NOT_KNOWN:
            return (
                f"runs agent {nested[0]!r}, whose own tools are not hooked (make the tool "
                "with hook_agent(agent).as_tool(...))"
            )
    if not isinstance(
        tool, FunctionTool | ShellTool | LocalShellTool | ApplyPatchTool | CustomTool
    ):
        return None
    hookable: Hookable = tool
    return _NOT_LISTED if hook_tool(hookable) is not hookable else None


async def refuse_unhooked(context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool) -> None:
    """Refuse ``tool``'s call when it starts unhooked in a hooked run (see the module)."""
    run = CURRENT_RUN.get()
    unhooked = None if run is None else _unhooked(agent, tool)
    if run is None or unhooked is None:
        return
    call_id = context.tool_call_id if isinstance(context, ToolContext) else None
    raw = context.tool_arguments if isinstance(context, ToolContext) else ""
    why = f"tool {tool.name!r} of agent {agent.name!r} {unhooked}: refused"
    _log.error("a tool otelhooks did not hook started in a hooked run: refused", tool=tool.name)
    refused = ToolNotHookedError(why)
    run.refuse_call(tool.name, agent.name, parse_args(raw), call_id, refused)
    raise refused
