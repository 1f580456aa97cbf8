"""Whether an agent runs hooked tools only, and what an ``Agent.as_tool`` tool runs.

The rule is asked at two times: when :func:`~otelhooks.integrations.openai_agents.hook_agent`
clones an agent (a warning names an agent tool whose agent is not hooked) and when a hooked run
starts such a tool (:mod:`~otelhooks.integrations.openai_agents._unhooked` refuses it), so it
lives here, apart from both.
"""

from __future__ import annotations

from typing import Any

from agents import Agent, ComputerTool, FunctionTool
from agents.tool import ToolOriginType, get_function_tool_origin

from otelhooks.integrations.openai_agents._computer import hook_computer
from otelhooks.integrations.openai_agents._mcp_servers import HookedMCPServer
from otelhooks.integrations.openai_agents._tools import _HOOKED, Hookable, hook_tool

__all__ = ["NOT_KNOWN", "runs_hooked", "unhooked_agent_of"]

# an agent tool whose agent this SDK version does not say: nothing is known of its tools
NOT_KNOWN = None


def runs_hooked(agent: Agent[Any], seen: set[int] | None = None) -> bool:
    """Whether ``agent`` and every agent it hands off to run hooked tools only (as the agents
    :func:`hook_agent` returns do)."""
    seen = set() if seen is None else seen
    if id(agent) in seen:
        return True
    seen.add(id(agent))
    if any(isinstance(t, Hookable) and hook_tool(t) is not t for t in agent.tools):
        return False
    if any(isinstance(t, ComputerTool) and hook_computer(t, None) is not t for t in agent.tools):
        return False
    if any(not isinstance(s, HookedMCPServer) for s in agent.mcp_servers):
        return False
    return all(
        runs_hooked(h, seen)
        if isinstance(h, Agent)
        else getattr(h.on_invoke_handoff, _HOOKED, False)
        for h in agent.handoffs
    )


def unhooked_agent_of(tool: FunctionTool) -> tuple[str, Agent[Any] | None] | None:
    """The name and the agent an ``Agent.as_tool`` tool runs when that agent (or one it hands
    off to) has tools otelhooks' hooks do not see; the agent is :data:`NOT_KNOWN` when this SDK
    version does not say which object it runs. ``None``: ``tool`` is no agent tool, or its
    agent is hooked."""
    origin = get_function_tool_origin(tool)
    if origin is None or origin.type is not ToolOriginType.AGENT_AS_TOOL:
        return None
    # The SDK has no public way to the agent of an agent tool; this field, which the SDK reads
    # itself (a run state resuming a nested run), is the one place it keeps it. Without it (an
    # SDK that moved it), nothing is known, which is not taken for hooked.
    agent = getattr(tool, "_agent_instance", None)
    if not isinstance(agent, Agent):
        return str(origin.agent_name), NOT_KNOWN
    if runs_hooked(agent):
        return None
    return agent.name, agent
