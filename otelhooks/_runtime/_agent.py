"""``exec_agent``: a small, real agent loop instrumented with otelhooks.

It exists so the demo and the tests drive every lifecycle event through the public API the way a
production runtime would: model turns, tools (with approval where required), compaction when the
context passes a token budget, sub-agents (in-process or isolated), a step limit and a cost limit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from otelhooks._events import PendingTool, TokenUsage, ToolResult
from otelhooks._hooks import Hook
from otelhooks._instrument import AgentTracer, Operation, Step
from otelhooks._runtime._model import Model, ToolRequest, estimate_tokens
from otelhooks._runtime._tools import Tool

__all__ = ["AgentResult", "AgentSpec", "Approver", "exec_agent"]

SUBAGENT_TOOL = ("agents", "call")

Approver = Callable[[ToolRequest], "str | None"]
"""Decides a tool that needs approval: ``None`` approves; a string rejects with that reason."""


def approve_all(request: ToolRequest) -> str | None:
    return None


@dataclass(slots=True)
class AgentSpec:
    """Everything an agent needs to run: its model, tools and limits.

    Attributes:
        provider: ``gen_ai.provider.name`` of the service behind ``model`` (``openai``, ...);
            ``None`` leaves it to the tracer's default (the attribute is omitted if none).
        token_budget: compact the context when its estimated tokens pass this.
        cost_limit: stop with reason ``cost_limit`` when the cost passes this: the model calls'
            price (genai-prices), or tokens x ``price_per_1k_tokens`` when a call is unpriced.
        budget_threshold: fire ``on_budget_threshold`` when cost passes this fraction of the limit.
        subagents: agents this one may call through the ``agents/call`` tool.
    """

    name: str
    model: Model
    tools: Sequence[Tool] = ()
    model_name: str = "scripted-model"
    provider: str | None = None
    max_steps: int = 8
    token_budget: int | None = None
    cost_limit: float | None = None
    price_per_1k_tokens: float = 0.01
    budget_threshold: float = 0.8
    approver: Approver = approve_all
    subagents: Mapping[str, AgentSpec] = field(default_factory=dict)
    channel: str = "chat"


@dataclass(slots=True)
class AgentResult:
    """What a run produced."""

    operation_id: str
    reason: str
    output: str | None
    usage: TokenUsage
    steps: int
    tool_results: list[ToolResult]
    error: BaseException | None = None
    blocked_reason: str | None = None


def exec_agent(
    tracer: AgentTracer,
    spec: AgentSpec,
    prompt: str,
    *,
    hooks: Iterable[Hook | Mapping[str, Any]] = (),
    session_id: str | None = None,
    user_id: str | None = None,
    raise_errors: bool = False,
) -> AgentResult:
    """Run ``spec`` on ``prompt``. Hooks given here apply to this operation only.

    Errors inside the run end it with reason ``error`` (and ``on_error``); the result carries
    the exception. With ``raise_errors`` it is raised after the telemetry is recorded.

    Example:
        >>> from otelhooks import AgentTracer
        >>> from otelhooks._runtime import AgentSpec, ModelReply, ScriptedModel, exec_agent
        >>> tracer = AgentTracer()
        >>> spec = AgentSpec("helper", ScriptedModel([ModelReply("hi")]))
        >>> result = exec_agent(tracer, spec, "hello")
        >>> result.reason
        'done'
    """
    operation = tracer.operation(
        spec.name,
        provider=spec.provider,
        input=prompt,
        hooks=hooks,
        session_id=session_id,
        user_id=user_id,
    )
    return _run(operation, spec, raise_errors=raise_errors)


def _run(operation: Operation, spec: AgentSpec, *, raise_errors: bool) -> AgentResult:
    results: list[ToolResult] = []
    output: str | None = None
    try:
        with operation as op:
            if not op.blocked:
                output = _loop(op, spec, results)
    except Exception as exc:
        if raise_errors:
            raise
        return AgentResult(op.operation_id, "error", None, op.usage, op.step_count, results, exc)
    return AgentResult(
        op.operation_id, op.reason, output, op.usage, op.step_count, results,
        blocked_reason=op.block_reason,
    )  # fmt: skip


def _loop(op: Operation, spec: AgentSpec, results: list[ToolResult]) -> str | None:
    tools = {t.key: t for t in spec.tools}
    messages: list[dict[str, Any]] = [{"role": "user", "content": op.input}]
    warned = False
    for _ in range(spec.max_steps):
        with op.step() as step:
            if spec.token_budget is not None:
                messages = _maybe_compact(step, messages, spec.token_budget)
            with step.llm(spec.model_name, messages=messages, provider=spec.provider) as call:
                reply = spec.model(messages)
                call.record(
                    reply.text,
                    input_tokens=reply.input_tokens or 0,
                    output_tokens=reply.output_tokens or 0,
                    finish_reason="tool_calls" if reply.tool_calls else "stop",
                )
            if reply.text:
                messages.append({"role": "assistant", "content": reply.text})
            if spec.cost_limit is not None:
                cost = _run_cost(op, spec)
                if not warned and cost >= spec.cost_limit * spec.budget_threshold:
                    warned = True
                    op.emit(
                        "on_budget_threshold",
                        agentId=op.agent_id,
                        spent=cost,
                        limit=spec.cost_limit,
                        threshold=spec.budget_threshold,
                    )
                if cost >= spec.cost_limit:
                    op.complete("cost_limit")
                    return None
            if not reply.tool_calls:
                return op.send_message(spec.channel, op.user_id or "user", reply.text)
            for request in reply.tool_calls:
                result = _call_tool(step, spec, tools, request)
                if op.reason == "interrupted":
                    return None
                results.append(result)
                messages.append({"role": "tool", "content": result.content})
            op.emit("after_tool_batch", stepIndex=step.index, toolCalls=step.tool_calls)
    op.complete("max_steps")
    return None


def _run_cost(op: Operation, spec: AgentSpec) -> float:
    """The run's cost so far: the priced dollars (genai-prices) when every model call was
    priced, else the spec's estimate per 1,000 tokens."""
    spend = op.spend
    if spend.calls and not spend.unpriced_calls:
        return spend.cost_usd
    return (op.usage.input + op.usage.output) / 1000 * spec.price_per_1k_tokens


def _maybe_compact(step: Step, messages: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    tokens = sum(estimate_tokens(str(m.get("content", ""))) for m in messages)
    if tokens <= budget or len(messages) < 2:
        return messages
    try:
        return _compact(step, messages, tokens)
    except RuntimeError:
        return messages  # the span recorded the failure (on_compact_error); go on uncompacted


def _compact(step: Step, messages: list[dict[str, Any]], tokens: int) -> list[dict[str, Any]]:
    with step.compact(message_count=len(messages), token_count=tokens) as compaction:
        head, tail = messages[:-1], messages[-1:]
        summary = "Summary of earlier turns: " + " / ".join(
            str(m.get("content", ""))[:40] for m in head
        )
        kept = [{"role": "system", "content": summary}, *tail]
        after = sum(estimate_tokens(str(m.get("content", ""))) for m in kept)
        if after >= tokens:
            raise RuntimeError(
                f"compaction did not shrink the context ({tokens} -> {after} tokens)"
            )
        compaction.done(messages_after=len(kept), tokens_after=after, summary=summary)
    return kept


def _call_tool(
    step: Step, spec: AgentSpec, tools: Mapping[str, Tool], request: ToolRequest
) -> ToolResult:
    key = f"{request.identifier}/{request.api_name}"
    if (request.identifier, request.api_name) == SUBAGENT_TOOL:
        return _call_subagent(step, spec, request)
    tool = tools.get(key)
    if tool is None:

        def unknown(**_: Any) -> str:
            raise LookupError(f"no tool {key}")

        return step.run_tool(request.identifier, request.api_name, request.args, unknown)
    if tool.requires_approval:
        pending = PendingTool(identifier=tool.identifier, apiName=tool.api_name)
        with step.approval([pending]) as approval:
            rejection = spec.approver(request)
            if rejection is None:
                approval.approve()
            else:
                approval.reject(rejection, stop=True)
                return ToolResult(content=rejection, success=False, state={"type": "rejected"})
    return step.run_tool(tool.identifier, tool.api_name, request.args, tool.fn)


def _call_subagent(step: Step, spec: AgentSpec, request: ToolRequest) -> ToolResult:
    """A sub-agent call is a ``call_agent`` span under the step (not a tool span): the child's
    ``invoke_agent`` hangs under it (or starts its own trace when isolated)."""
    name = str(request.args.get("agent", ""))
    instruction = str(request.args.get("instruction", ""))
    isolated = bool(request.args.get("isolated", False))
    child_spec = spec.subagents.get(name)
    with step.call_agent(name, instruction, isolated=isolated) as agent_call:
        if child_spec is None:
            agent_call.fail(LookupError(f"no sub-agent {name!r}"))
            return ToolResult(content=f"no sub-agent {name!r}", success=False)
        child = agent_call.operation(provider=child_spec.provider)
        result = _run(child, child_spec, raise_errors=False)
    if result.error is not None:
        return ToolResult(content=f"sub-agent {name} failed: {result.error}", success=False)
    return ToolResult(content=result.output or "", success=result.reason == "done")
