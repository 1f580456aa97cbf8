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

An agent's clone with its tools hooked (its MCP servers' tools too, and a warning for each tool
no hook sees) is :mod:`~otelhooks.integrations.openai_agents._hooked_agents`' ``hook_agent``.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Awaitable, Callable
from typing import Any, Final, overload

from agents import (
    ApplyPatchTool,
    CustomTool,
    FunctionTool,
    LocalShellCommandRequest,
    LocalShellTool,
    ShellActionRequest,
    ShellCommandRequest,
    ShellResult,
    ShellTool,
)
from agents.run_context import RunContextWrapper
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

from otelhooks.integrations.openai_agents._apply_patch import hook_apply_patch
from otelhooks.integrations.openai_agents._arguments import arguments_model, received
from otelhooks.integrations.openai_agents._guard import (
    awaited,
    call_namespace,
    guarded,
    parse_args,
    tool_raised,
)
from otelhooks.integrations.openai_agents._rewrites import (
    approval_refuses,
    judged_again,
    watch_guardrail,
    watch_output_guardrail,
)

__all__ = ["Hookable", "hook_tool"]

_HOOKED: Final = "__otelhooks_hooked__"

Invoker = Callable[[ToolContext[Any], str], Awaitable[Any]]
# the tools otelhooks wraps (each kind's callable: see the module docstring)
Hookable = FunctionTool | ShellTool | LocalShellTool | ApplyPatchTool | CustomTool


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
