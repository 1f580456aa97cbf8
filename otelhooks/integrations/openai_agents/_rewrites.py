"""What arguments a hook rewrote must pass before an SDK tool runs them: the checks the SDK made
on the arguments the model sent, before the hooks ran, made again on the rewrite.

A rewrite either check refuses is a deny (:class:`RewriteRefusedError`): the tool does not run,
the model gets the reason and ``on_tool_call_denied`` observers hear of it.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Sequence
from typing import Any, cast

from agents import (
    Agent,
    RunContextWrapper,
    ToolInputGuardrail,
    ToolInputGuardrailData,
    ToolInputGuardrailTripwireTriggered,
    ToolOutputGuardrail,
    ToolOutputGuardrailData,
)
from agents.tool_context import ToolContext
from agents.tool_guardrails import ToolGuardrailFunctionOutput

from otelhooks.integrations.openai_agents._guard import (
    CURRENT_RUN,
    RewriteRefusedError,
    call_namespace,
    parse_args,
)

__all__ = ["approval_refuses", "judged_again", "watch_guardrail", "watch_output_guardrail"]


def watch_guardrail(
    guardrail: ToolInputGuardrail[Any],
    tool_name: str | None = None,
    identifier: str | None = None,
    namespace: str | None = None,
    named: Callable[[str], str] | None = None,
) -> ToolInputGuardrail[Any]:
    """The SDK guardrail, unchanged in effect, reporting a ``reject_content`` to the run (the
    call never reaches the hooks, which is the only record it gets): of ``tool_name`` (the
    call's own tool when omitted, as for the guardrails of an MCP server, which judge all its
    tools, ``named`` giving the server's name for the tool the model called), ``identifier``
    (the agent's when omitted) and the tool's ``namespace``."""

    async def watched(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        output = await guardrail.run(data)
        behavior = output.behavior
        run = CURRENT_RUN.get()
        if run is not None and behavior["type"] == "reject_content":
            space = namespace
            if space is None and tool_name is not None:  # hooked before tool_namespace()
                space = call_namespace(data.context.tool_namespace, tool_name)
            called = data.context.tool_name
            run.guardrail_rejected(
                tool_name if tool_name is not None else named(called) if named else called,
                data.context.tool_call_id,
                parse_args(data.context.tool_arguments),
                guardrail.get_name(),
                behavior["message"],
                identifier,
                space,
            )
        return output

    return ToolInputGuardrail(guardrail_function=watched, name=guardrail.get_name())


def watch_output_guardrail(
    guardrail: ToolOutputGuardrail[Any],
    identifier: str | None = None,
    named: Callable[[str], str] | None = None,
) -> ToolOutputGuardrail[Any]:
    """The SDK output guardrail, unchanged in effect, reporting a ``reject_content`` to the run:
    the tool ran, and its span says what it returned, but the model reads the guardrail's
    message instead, which nothing else records. Named as :func:`watch_guardrail` names."""

    async def watched(data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        output = await guardrail.run(data)
        behavior = output.behavior
        run = CURRENT_RUN.get()
        if run is not None and behavior["type"] == "reject_content":
            called = data.context.tool_name
            run.output_withheld(
                named(called) if named else called,
                data.context.tool_call_id,
                guardrail.get_name(),
                behavior["message"],
                identifier,
                call_namespace(data.context.tool_namespace, called),
            )
        return output

    return ToolOutputGuardrail(guardrail_function=watched, name=guardrail.get_name())


async def judged_again(
    guardrails: Sequence[ToolInputGuardrail[Any]] | None, ctx: ToolContext[Any], arguments: str
) -> None:
    """Run a tool's SDK input ``guardrails`` (a function tool's, or an MCP server's), as the SDK
    does, on the ``arguments`` a hook rewrote: the SDK ran them before the hooks, on the
    arguments the model sent, and the tool must get only what every guard judged. The first
    that rejects refuses the rewrite; a tripwire raises, as in the SDK."""
    if not guardrails:
        return
    again = copy.copy(ctx)
    again.tool_arguments = arguments
    if ctx.tool_call is not None:
        again.tool_call = ctx.tool_call.model_copy(update={"arguments": arguments})
    data = ToolInputGuardrailData(context=again, agent=cast(Agent[Any], ctx.agent))
    for guardrail in guardrails:
        output = await guardrail.run(data)
        behavior = output.behavior
        if behavior["type"] == "raise_exception":
            raise ToolInputGuardrailTripwireTriggered(guardrail=guardrail, output=output)
        if behavior["type"] == "reject_content":
            raise RewriteRefusedError(behavior["message"], f"guardrail:{guardrail.get_name()}")


async def approval_refuses(
    tool_name: str, setting: Any, ctx: RunContextWrapper[Any] | None, rewritten: Any, call_id: str
) -> None:
    """Refuse a rewrite of a call a person approves: the SDK asked the person (or would have)
    about the arguments the model sent, and a hook may not silently change what they approved.
    ``setting`` is the tool's ``needs_approval``: ``True``, or a policy that answers ``True``
    (or raises) for the ``rewritten`` arguments, refuses; a policy answering ``False`` lets the
    rewrite run, as it would have run unasked."""
    if setting is False:
        return
    needs = setting
    if callable(setting):
        try:
            needs = setting(ctx, rewritten, call_id)
            if inspect.isawaitable(needs):
                needs = await needs
        except Exception:  # a policy that cannot judge the rewrite: nobody approved it
            needs = True
    if needs:
        raise RewriteRefusedError(
            f"tool {tool_name!r} needs a person's approval, and a hook's rewrite changed the "
            "arguments approved: the call was denied",
            "needs_approval",
        )
