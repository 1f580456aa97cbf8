"""An agent whose tools run through otelhooks' hooks: :func:`hook_agent`'s clone.

The clone's tools are hooked copies
(:func:`~otelhooks.integrations.openai_agents._tools.hook_tool`; a computer's per action), and
the tools of its MCP servers (``agent.mcp_servers``) go through the same chain: the clone has a
wrapper around each server
(:mod:`~otelhooks.integrations.openai_agents._mcp_servers`), which delegates everything to the
user's server and judges each ``call_tool``. Its handoffs hand off to hooked clones too.

Every other tool (the hosted tools the model's API runs, a hosted
``ShellTool``) and those a ``SandboxAgent``'s capabilities add while it runs are not seen
by any otelhooks tool hook: :func:`hook_agent` says so with an :class:`UnguardedToolWarning`,
never silently (and :func:`warn_unhooked_state` of a resumed run's agents), and each of their
calls is recorded from the model's response (:mod:`~otelhooks.integrations.openai_agents._hosted`).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Final

from agents import (
    Agent,
    ApplyPatchTool,
    ComputerTool,
    CustomTool,
    FunctionTool,
    Handoff,
    LocalShellTool,
    RunState,
    ShellTool,
    Tool,
    handoff,
)
from agents.mcp import MCPServer
from agents.run_context import RunContextWrapper
from agents.sandbox import Capability, SandboxAgent

from otelhooks._tool_kinds import KIND_NAMES
from otelhooks.integrations.openai_agents._agent_tools import (
    NOT_KNOWN,
    runs_hooked,
    unhooked_agent_of,
)
from otelhooks.integrations.openai_agents._computer import hook_computer
from otelhooks.integrations.openai_agents._guard import CURRENT_RUN, UnguardedToolWarning
from otelhooks.integrations.openai_agents._mcp_servers import HookedMCPServer
from otelhooks.integrations.openai_agents._run_hooks import AgentHooksFeed
from otelhooks.integrations.openai_agents._tools import _HOOKED, Hookable, hook_tool

__all__ = ["hook_agent", "warn_unhooked_state"]

# The kind a guard names for each SDK tool otelhooks wraps (its default name is one of the kind's).
_KINDS: Final[dict[type[Any], str]] = {
    ShellTool: "@shell",
    LocalShellTool: "@shell",
    ApplyPatchTool: "@file_edit",
}


def _agent_tool_unguarded(tool: FunctionTool) -> str | None:
    """Why the agent an ``Agent.as_tool`` tool runs is not guarded (``None``: it is, or
    ``tool`` is no agent tool): the tool runs that very agent, never a clone :func:`hook_agent`
    could make."""
    unhooked = unhooked_agent_of(tool)
    if unhooked is None:
        return None
    name, agent = unhooked
    if agent is NOT_KNOWN:
        return (
            f"it runs agent {name!r}, whose tools otelhooks cannot see "
            "(this SDK version does not say which agent object it runs)"
        )
    return (
        f"it runs agent {name!r}, whose own tools are not hooked "
        "(make the tool with hook_agent(agent).as_tool(...)); a call of it is refused: "
        "ToolNotHookedError"
    )


def _unguarded(tool: Tool) -> str | None:
    """Why no otelhooks tool hook sees ``tool`` once hooked (``None``: they all do)."""
    if isinstance(tool, FunctionTool):
        why = _agent_tool_unguarded(tool)
        if why is not None:
            return why
    elif isinstance(tool, LocalShellTool | ApplyPatchTool | CustomTool | ComputerTool):
        pass
    elif isinstance(tool, ShellTool):
        if tool.executor is None:
            return "a hosted shell the model's API runs"
    else:
        return "a tool otelhooks cannot wrap (the model's API or the SDK runs it)"
    kind = _KINDS.get(type(tool))
    if kind is not None and tool.name not in KIND_NAMES[kind]:
        return f"renamed, so a {kind} guard does not match it (match it by name)"
    return None


def _warn_unguarded(agent: Agent[Any]) -> None:
    found = []
    for tool in agent.tools:
        why = _unguarded(tool)
        if why is not None:
            found.append(f"{tool.name!r} ({type(tool).__name__}: {why})")
    if isinstance(agent, SandboxAgent):
        # the SDK makes these tools (exec_command, apply_patch, ...) at each run, bound to its
        # sandbox session, and adds them to its own clone of the agent: none of them is hooked
        kinds = [
            type(c).__name__ for c in agent.capabilities if type(c).tools is not Capability.tools
        ]
        if kinds:
            found.append(
                f"the tools of its sandbox capabilities {', '.join(kinds)} (exec_command, "
                "apply_patch, ...: the SDK makes them only while the run is on)"
            )
    overrides = [
        m
        for m in ("get_all_tools", "get_mcp_tools")
        if getattr(type(agent), m) is not getattr(Agent, m)
    ]
    if overrides and not isinstance(agent, SandboxAgent):
        # the SDK asks the agent for its tools at each turn: what the override returns is not
        # the clone's hooked list, and a call of such a tool is refused as it starts
        found.append(
            f"the tools {type(agent).__name__}.{' and .'.join(overrides)} returns beyond "
            "its tools list (a call of one is refused: ToolNotHookedError)"
        )
    if found:
        warnings.warn(
            f"otelhooks: agent {agent.name!r}: no otelhooks tool hook sees "
            + ", ".join(found)
            + "; before_tool_call guards do not stop their calls and no execute_tool span "
            "is written for them",
            UnguardedToolWarning,
            stacklevel=3,  # the caller of hook_agent
        )


def warn_unhooked_state(state: RunState[Any, Any]) -> None:
    """Name the agents of ``state`` whose tools no hook sees: a resumed run runs the state's own
    agents, whatever agent it is given, and a state read back with ``RunState.from_string(agent,
    ...)`` holds ``agent`` itself, not a hooked clone."""
    unhooked = {i.agent.name for i in state.get_interruptions() if not runs_hooked(i.agent)}
    if unhooked:
        warnings.warn(
            f"otelhooks: the run state resumes agent {', '.join(map(repr, sorted(unhooked)))}, "
            "whose tools are not hooked: no otelhooks tool hook sees their calls (read the state "
            "back with RunState.from_string(hook_agent(agent), ...))",
            UnguardedToolWarning,
            stacklevel=3,  # the caller of HookedRunner.run
        )


def _hook_handoff(handoff: Handoff[Any, Any]) -> Handoff[Any, Any]:
    """A copy of ``handoff`` handing off to a hooked clone of the agent it returns: that agent
    is your code's (``handoff(agent)`` returns yours), and its tools would run unhooked.

    The hooked run decides on the agent handed off to (``before_agent_start``) before the
    handoff's own code runs: the SDK runs its ``on_handoff`` callback, then its run hooks'
    ``on_handoff`` beside the agents' own, so a refusal made there came after the callback
    (and raced the agent's ``AgentHooks.on_handoff``)."""
    invoke = handoff.on_invoke_handoff
    if getattr(invoke, _HOOKED, False):
        return handoff
    name = handoff.agent_name

    async def hooked(ctx: RunContextWrapper[Any], args: str) -> Any:
        run = CURRENT_RUN.get()
        if run is not None:
            await run.handoff_starts(name, ctx)  # a refusal raises: nothing of it runs
        to = await invoke(ctx, args)
        # a clone hook_agent made (an agent of your handoffs list) is hooked already
        hooked_already = isinstance(to, Agent) and isinstance(to.hooks, AgentHooksFeed)
        return hook_agent(to) if isinstance(to, Agent) and not hooked_already else to

    setattr(hooked, _HOOKED, True)
    return dataclasses.replace(handoff, on_invoke_handoff=hooked)


def hook_agent(agent: Agent[Any], *, _seen: dict[int, Agent[Any]] | None = None) -> Agent[Any]:
    """A clone of ``agent`` (and of every agent it hands off to) with its tools hooked.

    Function tools, local ``ShellTool``, ``LocalShellTool``, ``ApplyPatchTool`` and
    ``ComputerTool`` are replaced by hooked copies (:func:`hook_tool`; a computer's, per
    action), each MCP server by a wrapper that delegates to it and judges its tool calls
    (matcher value ``{server}/{tool}``; connect and clean up your own server objects as usual,
    the wrapper uses them); every other tool is kept and named in an
    :class:`UnguardedToolWarning` (Python shows it once per agent and tool list). The clone's
    hooks (``Agent.hooks``) tell otelhooks' run what a person decided on its calls, then call the
    agent's own hooks. The original
    agents and tools are not changed, so they stay safe to share. A ``Handoff`` object is
    copied so that the agent it returns is hooked when the handoff happens, and a plain agent in
    ``handoffs`` becomes such a copy of ``handoff(clone)``: the run decides on the agent handed
    off to before any of the handoff's code runs.
    """
    seen = {} if _seen is None else _seen
    if id(agent) in seen:
        return seen[id(agent)]
    _warn_unguarded(agent)
    tools = [
        # named after their agent, also when another agent's run calls it (``as_tool``)
        hook_tool(t, identifier=agent.name)
        if isinstance(t, Hookable)
        else hook_computer(t, agent.name)
        if isinstance(t, ComputerTool)
        else t
        for t in agent.tools
    ]
    servers: list[MCPServer] = [
        s if isinstance(s, HookedMCPServer) else HookedMCPServer(s) for s in agent.mcp_servers
    ]
    # the agent's own hooks, after otelhooks' (a person's decision on a call of it, run as a
    # tool, is known only to its nested run, which the run's hooks never see)
    hooks = agent.hooks if isinstance(agent.hooks, AgentHooksFeed) else AgentHooksFeed(agent.hooks)
    clone = agent.clone(tools=tools, mcp_servers=servers, hooks=hooks)
    seen[id(agent)] = clone
    # an agent in the list is handed off to as the SDK would (handoff(agent)), through a hooked
    # Handoff, so that a refusal of it comes before any of the handoff's code runs
    clone.handoffs = [
        _hook_handoff(handoff(hook_agent(h, _seen=seen)) if isinstance(h, Agent) else h)
        for h in agent.handoffs
    ]
    return clone
