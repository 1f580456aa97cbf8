"""The SDK's tools that run through otelhooks' ``before_tool_call`` chain.

:func:`hook_tool` returns a copy of a tool whose callable opens the ``execute_tool`` span (the
interceptors run, awaited, as it starts) and calls the real one only when no hook denied or
mocked the call: a ``FunctionTool``'s ``on_invoke_tool``, a ``ShellTool``'s or
``LocalShellTool``'s ``executor`` (matcher value ``shell`` / ``local_shell``: ``@shell``) and an
``ApplyPatchTool``'s ``editor`` (``apply_patch``: ``@file_edit`` and ``@file_write``, one span per
file operation, :mod:`~otelhooks.integrations.openai_agents._apply_patch`) and a
``CustomTool``'s ``on_invoke_tool`` (its raw string as the argument ``input``) and a
``ComputerTool``'s ``computer``, one span per action
(:mod:`~otelhooks.integrations.openai_agents._computer`). All go through
:meth:`AgentRun.guard_tool`.

A function tool's hook runs after its own SDK guardrails, so an SDK guardrail rejection never
reaches otelhooks' hooks; such a rejection is recorded as an ``on_tool_call_denied`` event instead
(``watch_guardrail``; an MCP server's guardrails too). Arguments a hook rewrote are judged by
those guardrails again before the function runs, and a rewrite of a call a person approves
(``needs_approval``) is refused (:mod:`~otelhooks.integrations.openai_agents._rewrites`).

The tools of an agent's MCP servers (``agent.mcp_servers``) go through the same chain:
:func:`hook_agent` gives the clone a wrapper around each server
(:mod:`~otelhooks.integrations.openai_agents._mcp_servers`), which delegates everything to the
user's server and judges each ``call_tool``.

Every other tool (the hosted tools the model's API runs, a hosted
``ShellTool``) and those a ``SandboxAgent``'s capabilities add while it runs are not seen
by any otelhooks tool hook: :func:`hook_agent` says so with an :class:`UnguardedToolWarning`,
never silently, and each of their calls is recorded from the model's response
(:mod:`~otelhooks.integrations.openai_agents._hosted`).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import warnings
from collections.abc import Awaitable, Callable
from typing import Any, Final, overload

from agents import (
    Agent,
    ApplyPatchTool,
    ComputerTool,
    CustomTool,
    FunctionTool,
    Handoff,
    LocalShellCommandRequest,
    LocalShellTool,
    RunState,
    ShellActionRequest,
    ShellCommandRequest,
    ShellResult,
    ShellTool,
    Tool,
    handoff,
)
from agents.mcp import MCPServer
from agents.run_context import RunContextWrapper
from agents.sandbox import Capability, SandboxAgent
from agents.tool import (
    ToolErrorFunction,
    ToolOriginType,
    default_tool_error_function,
    get_function_tool_origin,
    resolve_function_tool_failure_error_function,
    set_function_tool_failure_error_function,
)
from agents.tool_context import ToolContext
from openai.types.responses.response_output_item import LocalShellCallAction

from otelhooks._tool_kinds import KIND_NAMES
from otelhooks.integrations.openai_agents._apply_patch import hook_apply_patch
from otelhooks.integrations.openai_agents._arguments import arguments_model, received
from otelhooks.integrations.openai_agents._computer import hook_computer
from otelhooks.integrations.openai_agents._guard import (
    CURRENT_RUN,
    UnguardedToolWarning,
    awaited,
    call_namespace,
    guarded,
    parse_args,
    tool_raised,
)
from otelhooks.integrations.openai_agents._mcp_servers import HookedMCPServer
from otelhooks.integrations.openai_agents._rewrites import (
    approval_refuses,
    judged_again,
    watch_guardrail,
    watch_output_guardrail,
)
from otelhooks.integrations.openai_agents._run_hooks import AgentHooksFeed

__all__ = ["hook_agent", "hook_tool", "warn_unhooked_state"]

_HOOKED: Final = "__otelhooks_hooked__"

Invoker = Callable[[ToolContext[Any], str], Awaitable[Any]]
# the tools otelhooks wraps (each kind's callable: see the module docstring)
Hookable = FunctionTool | ShellTool | LocalShellTool | ApplyPatchTool | CustomTool

# The kind a guard names for each SDK tool otelhooks wraps (its default name is one of the kind's).
_KINDS: Final[dict[type[Any], str]] = {
    ShellTool: "@shell",
    LocalShellTool: "@shell",
    ApplyPatchTool: "@file_edit",
}


def _shell_text(output: Any) -> Any:
    """What the model is shown of a shell executor's output: each command's stdout and stderr."""
    if not isinstance(output, ShellResult):
        return output
    return "\n".join(part for o in output.output for part in (o.stdout, o.stderr) if part)


@overload
def hook_tool(tool: FunctionTool, *, identifier: str | None = None) -> FunctionTool: ...
@overload
def hook_tool(tool: ShellTool, *, identifier: str | None = None) -> ShellTool: ...
@overload
def hook_tool(tool: LocalShellTool, *, identifier: str | None = None) -> LocalShellTool: ...
@overload
def hook_tool(tool: ApplyPatchTool, *, identifier: str | None = None) -> ApplyPatchTool: ...
@overload
def hook_tool(tool: CustomTool, *, identifier: str | None = None) -> CustomTool: ...
def hook_tool(tool: Hookable, *, identifier: str | None = None) -> Hookable:
    """A copy of ``tool`` whose calls go through otelhooks' tool hooks.

    Inside :meth:`HookedRunner.run` each call is an ``execute_tool {name}`` span: a
    ``before_tool_call`` deny or mock means the tool is never run (the model gets the
    ``hook_denied`` reason or the mock as the tool output), rewritten arguments reach the
    tool, and its result goes through ``tool_result_persist``. Outside a hooked run the
    copy behaves exactly as ``tool``. Hooking a hooked tool returns it unchanged.

    The arguments hooks see: a ``FunctionTool``'s JSON arguments, its schema's top-level
    defaults filled in and, for a ``@function_tool``, each value as the SDK's validation gives
    it to the function (``"true"`` given to a ``bool`` is ``True``); a ``ShellTool``'s
    ``commands``, ``timeout_ms``, ``max_output_length``; a ``LocalShellTool``'s ``command``,
    ``env``, ``timeout_ms``, ``user``, ``working_directory``; an ``ApplyPatchTool``'s ``type``
    (``create_file``, ``update_file``, ``delete_file``), ``path``, ``diff`` and ``move_to``, one
    call per file operation; a ``CustomTool``'s raw string as ``input``. A hosted ``ShellTool``
    (no executor) is returned unchanged.

    Args:
        tool: the SDK tool.
        identifier: the ``identifier`` half of the matcher value ``identifier/apiName``; the
            calling agent's name when omitted.
    """
    if isinstance(tool, FunctionTool):
        return _hook_function(tool, identifier)
    if isinstance(tool, ShellTool):
        return _hook_shell(tool, identifier)
    if isinstance(tool, LocalShellTool):
        return _hook_local_shell(tool, identifier)
    if isinstance(tool, CustomTool):
        return _hook_custom(tool, identifier)
    return hook_apply_patch(tool, identifier)


def _telling_failures(handler: ToolErrorFunction) -> ToolErrorFunction:
    """``handler`` (a tool's own ``failure_error_function``), first telling the hooked call the
    exception it is given: the SDK hands such a handler, not the run's ``tool_error_formatter``,
    the exception, and with its tracing off nothing else says the call failed."""

    def telling(ctx: RunContextWrapper[Any], error: Exception) -> Any:
        tool_raised(ctx.tool_call_id if isinstance(ctx, ToolContext) else None, error)
        return handler(ctx, error)

    return telling


def namespace_of(tool: FunctionTool) -> str | None:
    """The namespace ``tool_namespace`` put ``tool`` in (``None``: none), from the SDK's public
    ``qualified_name`` (``{namespace}.{name}``), under which the SDK keys its decisions."""
    qualified, suffix = tool.qualified_name, f".{tool.name}"
    if qualified != tool.name and qualified.endswith(suffix):
        return qualified.removesuffix(suffix) or None
    return None


def _hook_function(tool: FunctionTool, identifier: str | None) -> FunctionTool:
    if getattr(tool.on_invoke_tool, _HOOKED, False):
        return tool
    # matched as {namespace}.{name} and as its bare name: fs's delete_file is not db's
    namespace = namespace_of(tool)
    model = arguments_model(tool)
    hooked = copy.copy(tool)
    # the copy's own invoker: the SDK binds a @function_tool's to the copy, whose failure
    # handler is then the one it reads (yours, telling the call first), never your tool's
    inner: Invoker = hooked.on_invoke_tool
    handler = resolve_function_tool_failure_error_function(tool)
    origin = get_function_tool_origin(tool)
    if handler is not None and (
        handler is not default_tool_error_function
        # Agent.as_tool gives its tool the SDK's default as a handler of its own
        or (origin is not None and origin.type is ToolOriginType.AGENT_AS_TOOL)
    ):
        # (the default itself, left unset, tells the run's tool_error_formatter, which tells
        # the call; set here, it would not, and your formatter's message would be lost)
        set_function_tool_failure_error_function(hooked, _telling_failures(handler))

    async def invoke(ctx: ToolContext[Any], input: str) -> Any:
        async def run(changed: dict[str, Any] | None) -> Any:
            if changed is None:
                return await inner(ctx, input)
            rewritten = json.dumps(changed)
            # your tool's own guardrails, not the watched copies: the refusal is the call's deny
            await judged_again(tool.tool_input_guardrails, ctx, rewritten)
            await approval_refuses(tool.name, tool.needs_approval, ctx, changed, ctx.tool_call_id)
            return await inner(ctx, rewritten)

        args = received(model, tool.params_json_schema, parse_args(input))
        # a tool hooked before tool_namespace() copied it into a namespace: the call's says
        space = namespace or call_namespace(ctx.tool_namespace, tool.name)
        output, _ = await guarded(
            tool.name, identifier, args, ctx.tool_call_id, run, namespace=space
        )
        return output

    setattr(invoke, _HOOKED, True)
    hooked.on_invoke_tool = invoke
    if tool.tool_output_guardrails:
        hooked.tool_output_guardrails = [
            watch_output_guardrail(g, identifier) for g in tool.tool_output_guardrails
        ]
    if tool.tool_input_guardrails:
        # named as the tool's calls that run are (an agent used as a tool: its agent's name)
        hooked.tool_input_guardrails = [
            watch_guardrail(g, tool.name, identifier, namespace) for g in tool.tool_input_guardrails
        ]
    return hooked


def _hook_shell(tool: ShellTool, identifier: str | None) -> ShellTool:
    executor = tool.executor
    if executor is None or getattr(executor, _HOOKED, False):
        return tool

    async def execute(request: ShellCommandRequest) -> str | ShellResult:
        action = request.data.action
        args = {
            "commands": list(action.commands),
            "timeout_ms": action.timeout_ms,
            "max_output_length": action.max_output_length,
        }

        async def run(changed: dict[str, Any] | None) -> Any:
            if changed is not None:
                action = ShellActionRequest(
                    commands=[str(c) for c in changed["commands"]],
                    timeout_ms=changed.get("timeout_ms"),
                    max_output_length=changed.get("max_output_length"),
                )
                await approval_refuses(
                    tool.name,
                    tool.needs_approval,
                    request.ctx_wrapper,
                    action,
                    request.data.call_id,
                )
                data = dataclasses.replace(request.data, action=action)
                return await awaited(executor(dataclasses.replace(request, data=data)))
            return await awaited(executor(request))

        output, _ = await guarded(
            tool.name, identifier, args, request.data.call_id, run, _shell_text
        )
        return output if isinstance(output, ShellResult) else str(output)

    setattr(execute, _HOOKED, True)
    return dataclasses.replace(tool, executor=execute)


def _hook_local_shell(tool: LocalShellTool, identifier: str | None) -> LocalShellTool:
    executor = tool.executor
    if getattr(executor, _HOOKED, False):
        return tool

    async def execute(request: LocalShellCommandRequest) -> str:
        args = request.data.action.model_dump(exclude={"type"})

        async def run(changed: dict[str, Any] | None) -> Any:
            if changed is not None:
                action = LocalShellCallAction.model_validate({**changed, "type": "exec"})
                data = request.data.model_copy(update={"action": action})
                return await awaited(executor(dataclasses.replace(request, data=data)))
            return await awaited(executor(request))

        output, _ = await guarded(tool.name, identifier, args, request.data.call_id, run)
        return str(output)

    setattr(execute, _HOOKED, True)
    return dataclasses.replace(tool, executor=execute)


def _hook_custom(tool: CustomTool, identifier: str | None) -> CustomTool:
    invoke = tool.on_invoke_tool
    if getattr(invoke, _HOOKED, False):
        return tool

    async def hooked(ctx: ToolContext[Any], input: str) -> Any:
        async def run(changed: dict[str, Any] | None) -> Any:
            if changed is None:
                return await awaited(invoke(ctx, input))
            text = str(changed.get("input", ""))
            await approval_refuses(tool.name, tool.needs_approval, ctx, text, ctx.tool_call_id)
            return await awaited(invoke(ctx, text))

        output, _ = await guarded(tool.name, identifier, {"input": input}, ctx.tool_call_id, run)
        return output

    setattr(hooked, _HOOKED, True)
    return dataclasses.replace(tool, on_invoke_tool=hooked)


def _hooked(agent: Agent[Any], seen: set[int]) -> bool:
    """Whether ``agent`` and every agent it hands off to run hooked tools only (as the agents
    :func:`hook_agent` returns do)."""
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
        _hooked(h, seen) if isinstance(h, Agent) else getattr(h.on_invoke_handoff, _HOOKED, False)
        for h in agent.handoffs
    )


def _agent_tool_unguarded(tool: FunctionTool) -> str | None:
    """Why the agent an ``Agent.as_tool`` tool runs is not guarded (``None``: it is, or
    ``tool`` is no agent tool): that agent (or one it hands off to) has tools otelhooks' hooks do
    not see, the tool running that very agent, never a clone :func:`hook_agent` could make."""
    origin = get_function_tool_origin(tool)
    if origin is None or origin.type is not ToolOriginType.AGENT_AS_TOOL:
        return None
    # The SDK has no public way to the agent of an agent tool; this field, which the SDK reads
    # itself (a run state resuming a nested run), is the one place it keeps it. Without it (an
    # SDK that moved it), say that nothing is known rather than take the tools as hooked.
    agent = getattr(tool, "_agent_instance", None)
    if not isinstance(agent, Agent):
        return (
            f"it runs agent {origin.agent_name!r}, whose tools otelhooks cannot see "
            "(this SDK version does not say which agent object it runs)"
        )
    if _hooked(agent, set()):
        return None
    return (
        f"it runs agent {agent.name!r}, whose own tools are not hooked "
        "(make the tool with hook_agent(agent).as_tool(...))"
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
    unhooked = {i.agent.name for i in state.get_interruptions() if not _hooked(i.agent, set())}
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
