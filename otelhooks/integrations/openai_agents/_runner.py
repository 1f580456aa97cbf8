"""``HookedRunner``: an OpenAI Agents SDK run as an otelhooks operation.

The mapping (one place):

=====================================  ==========================================================
Agents SDK                             otelhooks
=====================================  ==========================================================
``Runner.run`` of the starting agent   operation ``invoke_agent {agent}`` (input interceptors
                                       may rewrite a string input or refuse the run)
a model call (``on_llm_start/end``)    a new ``step {n}`` with its ``chat {model}`` span, usage
                                       from ``ModelResponse.usage``
a hooked tool (function, local         ``execute_tool {tool}`` in the current step, matcher value
``ShellTool``, ``LocalShellTool``,     ``{agent}/{tool}``; deny or mock stops the function, the
``ApplyPatchTool`` file operation)     executor or the editor operation
an MCP server's tool call              ``execute_tool {tool}``, matcher value ``{server}/{tool}``
                                       (``mcp__{server}__{tool}`` matches it too), with
                                       ``mcp.method.name`` and ``otelhooks.mcp.server.name``;
                                       deny or mock stops the server's ``call_tool``
any other tool                         not seen: an ``UnguardedToolWarning`` names them
a handoff (``on_handoff``)             ``call_agent {to}`` in the current step and a child
                                       ``invoke_agent {to}`` linked to the parent operation; the
                                       following turns are steps of the child
input/output guardrail tripwire        the operation fails: ``on_error`` with ``error.type``
                                       ``InputGuardrailTripwireTriggered`` / ``Output...``, and
                                       ``otelhooks.guardrail.name`` on the span
tool input guardrail ``reject_content``  an ``on_tool_call_denied`` event (decided by
                                       ``guardrail:{name}``), a span event
                                       ``otelhooks.tool_guardrail``
``MaxTurnsExceeded``                   complete reason ``max_steps`` (the exception propagates)
a run paused for approvals             complete reason ``interrupted`` (``result.interruptions``),
                                       a span event ``otelhooks.tool_approval`` (``pending``) on
                                       the step that asked, one per call
a call a person rejected               an ``on_tool_call_denied`` event (decided by
(``RunState.reject``)                  ``needs_approval``) and ``otelhooks.tool_approval``
                                       (``deny``) on the resumed run's first step, as the SDK
                                       applies it (its first callback), else as the run ends
=====================================  ==========================================================
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog
from agents import (
    Agent,
    AgentsException,
    InputGuardrailTripwireTriggered,
    ItemHelpers,
    MaxTurnsExceeded,
    OutputGuardrailTripwireTriggered,
    RunConfig,
    RunHooks,
    Runner,
    RunState,
    ToolErrorFormatterArgs,
)
from agents.items import ModelResponse, TResponseInputItem
from agents.models.interface import Model
from agents.result import RunResult
from agents.run_context import RunContextWrapper
from agents.tracing import get_current_span
from opentelemetry import trace

from otelhooks import _semconv as sc
from otelhooks._encoding import dumps
from otelhooks._errors import RunBlockedError
from otelhooks._events import ToolCallDeniedEvent
from otelhooks._fingerprint import canonical_json
from otelhooks._instrument import AgentCall, AgentTracer, LlmCall, Operation, Step, ToolCall
from otelhooks._live import LiveEvent
from otelhooks.integrations._scopes import DetachedScope
from otelhooks.integrations.openai_agents._approvals import (
    Decisions,
    pending_event,
    rejected_event,
)
from otelhooks.integrations.openai_agents._guard import (
    CURRENT_RUN,
    RAISED,
    Execute,
    RewriteRefusedError,
    tool_raised,
)
from otelhooks.integrations.openai_agents._run_hooks import RunHooksFeed, recording
from otelhooks.integrations.openai_agents._tools import hook_agent, warn_unhooked_state

__all__ = ["PROVIDER", "AgentRun", "HookedRunner", "RunBlockedError"]

# gen_ai.provider.name: the Agents SDK calls OpenAI's models unless told otherwise.
PROVIDER = "openai"
# a public name of this integration since it began; the one definition is in _semconv
GUARDRAIL_NAME = sc.GUARDRAIL_NAME

_log = structlog.get_logger("otelhooks")


def _watching_errors(config: RunConfig | None) -> RunConfig:
    """A copy of the run's config whose ``tool_error_formatter`` tells the hooked call the
    exception its tool raised, then answers as yours did (``None``: the SDK's message). The SDK
    hands a function tool's exception to this public callback whether its tracing is on or off;
    its tracing span, the only other place it reports one, is a no-op when tracing is off."""
    config = config if config is not None else RunConfig()
    yours = config.tool_error_formatter

    async def formatter(args: ToolErrorFormatterArgs[Any]) -> str | None:
        if args.kind == "tool_exception" and args.error is not None:
            tool_raised(args.call_id, args.error)
        if yours is None:
            return None
        message = yours(args)
        return await message if inspect.isawaitable(message) else message

    return dataclasses.replace(config, tool_error_formatter=formatter)


def _model_name(agent: Agent[Any]) -> str:
    model = agent.model
    if isinstance(model, str):
        return model
    if isinstance(model, Model):
        name = getattr(model, "model", None)
        return name if isinstance(name, str) else type(model).__name__
    return "default"


def _messages(system_prompt: str | None, items: list[TResponseInputItem]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    for item in items:
        messages.append(dict(item) if isinstance(item, dict) else {"content": str(item)})
    return messages


@dataclass
class _Frame:
    """One agent of the run: the root operation, or a handed-off child and its ``call_agent``."""

    operation: Operation
    agent: str
    op_scope: DetachedScope[Operation] | None = None
    call: DetachedScope[AgentCall] | None = None
    step: DetachedScope[Step] | None = None
    llm: DetachedScope[LlmCall] | None = None

    def close_llm(self, exc: BaseException | None = None) -> None:
        if self.llm is not None:
            self.llm.exit(exc)
            self.llm = None

    def close_step(self, exc: BaseException | None = None) -> None:
        self.close_llm(exc)
        if self.step is not None:
            self.step.exit(exc)
            self.step = None

    def open_step(self) -> Step:
        if self.step is None:
            op = self.operation
            self.step = DetachedScope(op.step(), op.span)
            self.step.enter()
        return self.step.scope


class AgentRun:
    """The otelhooks side of one ``Runner.run``: the frames and the tool entry point."""

    def __init__(
        self, tracer: AgentTracer, root: Operation, agent: str, asked: Decisions | None = None
    ) -> None:
        self.tracer = tracer
        self.frames = [_Frame(root, agent)]
        self.decisions = asked if asked is not None else Decisions([])

    @property
    def frame(self) -> _Frame:
        return self.frames[-1]

    # -- model calls ---------------------------------------------------------------------------

    def llm_start(self, agent: Agent[Any], system_prompt: str | None, items: list[Any]) -> None:
        frame = self.frame
        frame.close_step()
        step = frame.open_step()
        call = step.llm(_model_name(agent), messages=_messages(system_prompt, items))
        frame.llm = DetachedScope(call, step.span)
        frame.llm.enter()

    def llm_end(self, response: ModelResponse) -> None:
        frame = self.frame
        if frame.llm is None:
            return
        calls = [i for i in response.output if getattr(i, "type", None) == "function_call"]
        frame.llm.scope.record(
            "".join(ItemHelpers.extract_last_text(i) or "" for i in response.output),
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            finish_reason="tool_calls" if calls else "stop",
        )
        frame.close_llm()

    # -- handoffs -------------------------------------------------------------------------------

    async def handoff(self, to_agent: Agent[Any]) -> None:
        frame = self.frame
        step = frame.open_step()
        call = DetachedScope(step.call_agent(to_agent.name), step.span)
        call.enter()
        child = call.scope.operation(to_agent.name, provider=PROVIDER)
        op_scope = DetachedScope(child, call.scope.span)
        await op_scope.aenter()
        frame.close_llm()
        self.frames.append(_Frame(child, to_agent.name, op_scope=op_scope, call=call))

    def close(self, exc: BaseException | None) -> None:
        """End every open scope, innermost first (the root operation is the runner's)."""
        while self.frames:
            frame = self.frames.pop()
            frame.close_step(exc)
            if frame.op_scope is not None:
                frame.op_scope.exit(exc)
            if frame.call is not None:
                frame.call.exit(exc)

    # -- approvals ------------------------------------------------------------------------------

    def settle(self, context: RunContextWrapper[Any] | None) -> None:
        """Record the calls of the resumed state a person rejected, once the run's ``context``
        is known: the SDK answered them before any callback of the run (with the model's next
        input), and the run may yet raise."""
        calls = self.decisions.take(context)
        if not calls:
            return
        step = self.frame.open_step()
        for call in calls:
            step.span.add_event(sc.EVENT_TOOL_APPROVAL, rejected_event(call))
            reason, ident = call.reason, call.identifier
            self.denied(call.tool, call.call_id, call.args, "needs_approval", reason, ident)

    def paused(self, items: list[Any]) -> None:
        """The run paused for a person's approval of ``items``: each on the step that asked."""
        step = self.frame.open_step()
        for item in items:
            step.span.add_event(sc.EVENT_TOOL_APPROVAL, pending_event(item))

    # -- tools ----------------------------------------------------------------------------------

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
    ) -> tuple[Any, bool]:
        """Run one hooked tool call as an ``execute_tool`` span in the current step.

        ``execute`` runs the tool (given the arguments a hook rewrote, ``None`` when unchanged)
        only when no hook denied or mocked the call; ``shown`` gives the part of its output the
        model is shown, which is the call's result (the output itself when omitted);
        ``attributes`` are added to the span; a call otelhooks ``refused`` (why) is denied with
        no hook run (``Step.tool_call``). Returns what the tool should return and whether the
        call was denied.
        """
        frame = self.frame
        step = frame.open_step()
        ident = identifier if identifier is not None else frame.agent
        with trace.use_span(step.span, end_on_exit=False):
            async with step.tool_call(
                ident, name, args, tool_call_id=call_id, refused=refused
            ) as call:
                if attributes:
                    call.span.set_attributes(attributes)
                if not call.should_run:
                    return call.result.content, call.denied
                raised: list[Exception] = []
                token = RAISED.set((call_id, raised))
                try:
                    output = await execute(call.args if call.args != args else None)
                except RewriteRefusedError as refused:
                    return await self._refused(call, refused), True
                finally:
                    RAISED.reset(token)
                if raised:
                    # The SDK's failure handler (its default or the tool's own) turned it into a
                    # message for the model.
                    call.fail(raised[-1])
                    return output, False
                error = getattr(get_current_span(), "error", None)
                if error:
                    # A failure the SDK reports on its tracing span only (a function tool
                    # given the SDK's default handler as its own, which no wrapper tells).
                    call.fail(RuntimeError(str(error.get("message", "tool failed"))))
                    return output, False
                result = output if shown is None else shown(output)
                kept = await call.aset_result(result)
                as_text = result if isinstance(result, str) else canonical_json(result)
                # a tool_result_persist hook may have filtered the result; else keep the object
                return (output if kept.content == as_text else kept.content), False

    async def _refused(self, call: ToolCall, refused: RewriteRefusedError) -> str:
        """A rewrite the SDK's own checks refuse, made again: a deny, which no hook's verdict
        made, so the call reports it here: ``on_tool_call_denied`` (not ``on_tool_call_error``:
        the tool never ran), the deny on the span and the span failed, its result the reason,
        which the model gets."""
        call.span.set_attributes(
            {
                sc.HOOK_DECISION: "deny",
                sc.HOOK_DECISION_REASON: refused.reason,
                sc.HOOK_DECIDED_BY: refused.decided_by,
                sc.HOOK_CLASSIFICATION: sc.CLASSIFICATION_HOOK_DENIED,
            }
        )
        self.denied(
            call.api_name,
            call.tool_call_id,
            call.args,
            refused.decided_by,
            refused.reason,
            call.identifier,
        )
        await call.aset_result(refused.reason, success=False)
        return refused.reason

    def guardrail_rejected(
        self,
        tool: str,
        call_id: str,
        args: dict[str, Any],
        guardrail: str,
        message: str,
        identifier: str | None = None,
    ) -> None:
        """An SDK tool input guardrail rejected a call of ``identifier``'s ``tool`` (the
        agent's when omitted): the tool did not run."""
        frame = self.frame
        step = frame.step.scope if frame.step is not None else None
        if step is not None:
            step.span.add_event(
                sc.EVENT_TOOL_GUARDRAIL,
                {sc.GEN_AI_TOOL_NAME: tool, GUARDRAIL_NAME: guardrail, sc.HOOK_DECISION: "deny"},
            )
        self.denied(tool, call_id, args, f"guardrail:{guardrail}", message, identifier)

    def denied(
        self,
        tool: str,
        call_id: str,
        args: dict[str, Any],
        decided_by: str,
        reason: str,
        identifier: str | None = None,
    ) -> None:
        """Tell ``on_tool_call_denied`` observers of a deny no hook's verdict made (of the
        call's ``identifier``; the agent's when omitted)."""
        frame = self.frame
        op = frame.operation
        ident = identifier if identifier is not None else frame.agent
        step = frame.step.scope if frame.step is not None else None
        payload = ToolCallDeniedEvent(
            **op.common(),
            toolCallId=call_id,
            identifier=ident,
            apiName=tool,
            args=args,
            agentId=op.agent_id,
            stepIndex=step.index if step is not None else 0,
            reason=reason,
            decidedBy=decided_by,
        )
        live = LiveEvent(
            "on_tool_call_denied",
            lambda: payload,
            values=(f"{ident}/{tool}", tool),
            operation_id=op.operation_id,
        )
        if step is not None:
            live.span_context = step.span.get_span_context()
        self.tracer.observe(live)
        self.tracer.metrics.tool_calls.add(
            1, {sc.GEN_AI_TOOL_NAME: tool, sc.ATTR_OUTCOME: "denied"}
        )


class HookedRunner:
    """Runs OpenAI Agents SDK agents as otelhooks operations.

    Args:
        tracer: the :class:`~otelhooks.AgentTracer` (``otelhooks.configure().tracer``).
        hook_tools: run the agents' tools through otelhooks' tool hooks (a hooked clone of the
            agent is run; the agent you pass is not changed; tools that cannot be hooked are
            named in an ``UnguardedToolWarning``).

    Example: (a run is in :mod:`otelhooks.integrations.openai_agents`'s example)
        >>> import otelhooks
        >>> oh = otelhooks.configure(otlp=False, set_global=False)
        >>> runner = HookedRunner(oh.tracer)  # await runner.run(agent, "hi", session_id="s-1")
        >>> oh.shutdown().ok
        True
    """

    def __init__(self, tracer: AgentTracer, *, hook_tools: bool = True) -> None:
        self.tracer = tracer
        self.hook_tools = hook_tools

    async def run(
        self,
        agent: Agent[Any],
        input: str | list[TResponseInputItem] | RunState[Any, Any],
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        hooks: RunHooks[Any] | None = None,
        **runner_options: Any,
    ) -> RunResult:
        """``Runner.run(agent, input, ...)`` inside an ``invoke_agent`` operation.

        Args:
            agent: the starting agent.
            input: the input; a string may be rewritten by ``before_agent_start`` hooks. A
                ``RunState`` (to resume an interrupted run) runs the state's own agents: read it
                back with ``RunState.from_string(hook_agent(agent), ...)``, or its agents' tools
                are not hooked (an ``UnguardedToolWarning`` names them).
            session_id, user_id: recorded on the operation (``gen_ai.conversation.id``).
            hooks: your own ``RunHooks``; they are called after otelhooks'.
            runner_options: passed to ``Runner.run`` (``max_turns``, ``run_config``, ...); the
                ``run_config`` is a copy of yours whose ``tool_error_formatter`` tells otelhooks
                a tool's exception before answering as yours does.

        Raises:
            RunBlockedError: a ``before_agent_start`` hook refused the run.
            Exception: whatever ``Runner.run`` raises (recorded on the operation first).
        """
        # what before_agent_start guards read: a list of items as its JSON text (before, "": an
        # input guard let every such run by); only a string is rewritten
        text = (
            input if isinstance(input, str) else "" if isinstance(input, RunState) else dumps(input)
        )
        runnable = hook_agent(agent) if self.hook_tools else agent
        if self.hook_tools and isinstance(input, RunState):
            warn_unhooked_state(input)
        operation = self.tracer.operation(
            agent.name, provider=PROVIDER, session_id=session_id, user_id=user_id, input=text
        )
        refused: str | None = None
        async with operation as op:
            if not op.blocked and not isinstance(input, str) and op.input != text:
                refused = (
                    "a before_agent_start hook rewrote the input, which a list of input items "
                    "cannot take: the run was refused rather than run with the items as they were"
                )
                op.complete("interrupted")
            elif not op.blocked:
                result, max_turns = await self._execute(op, runnable, input, hooks, runner_options)
        if op.blocked or refused is not None:
            raise RunBlockedError(refused or op.block_reason)
        if max_turns is not None:
            raise max_turns
        assert result is not None
        return result

    async def _execute(
        self,
        op: Operation,
        agent: Agent[Any],
        input: str | list[TResponseInputItem] | RunState[Any, Any],
        hooks: RunHooks[Any] | None,
        options: dict[str, Any],
    ) -> tuple[RunResult | None, MaxTurnsExceeded | None]:
        asked = Decisions(input.get_interruptions() if isinstance(input, RunState) else [])
        run = AgentRun(self.tracer, op, op.agent, asked)
        token = CURRENT_RUN.set(run)
        error: BaseException | None = None
        context: RunContextWrapper[Any] | None = None
        try:
            prompt = op.input if isinstance(input, str) else input
            options = {**options, "run_config": _watching_errors(options.get("run_config"))}
            result = await Runner.run(agent, prompt, hooks=RunHooksFeed(run, hooks), **options)
            context = result.context_wrapper
            if result.interruptions:  # paused for a person's approval, as LangGraph's interrupt
                op.complete("interrupted")
                recording("paused approvals", run.paused, result.interruptions)
            return result, None
        except MaxTurnsExceeded as exc:
            error = exc
            op.complete("max_steps")
            return None, exc
        except (InputGuardrailTripwireTriggered, OutputGuardrailTripwireTriggered) as exc:
            error = exc
            op.span.set_attribute(GUARDRAIL_NAME, exc.guardrail_result.guardrail.get_name())
            raise
        except BaseException as exc:
            error = exc
            raise
        finally:
            if error is not None and isinstance(error, AgentsException) and error.run_data:
                context = error.run_data.context_wrapper
            # at the latest as the run ends, whether it returned or raised
            recording("rejected approvals", run.settle, context)
            if asked.asked:
                # raised before any callback, with no context to read the decisions from
                _log.error(
                    "openai-agents adapter could not tell which calls a person rejected: the "
                    "resumed run failed before the SDK handed otelhooks its context",
                    calls=[item.call_id for item in asked.asked],
                )
            CURRENT_RUN.reset(token)
            run.close(error)

    def run_sync(
        self,
        agent: Agent[Any],
        input: str | list[TResponseInputItem] | RunState[Any, Any],
        **options: Any,
    ) -> RunResult:
        """:meth:`run` from synchronous code (starts an event loop)."""
        return asyncio.run(self.run(agent, input, **options))
