"""``HookedRunner``: an OpenAI Agents SDK run as an otelhooks operation.

The mapping (one place):

=====================================  ==========================================================
Agents SDK                             otelhooks
=====================================  ==========================================================
``Runner.run`` of the starting agent   operation ``invoke_agent {agent}`` (input interceptors
(``Runner.run_streamed``: the same,    may rewrite a string input or refuse the run)
ended when the SDK's run task ends)
a model call (``on_llm_start/end``)    a new ``step {n}`` with its ``chat {model}`` span, usage
                                       from ``ModelResponse.usage``
a hooked tool (function, local         ``execute_tool {tool}`` in the current step, matcher value
``ShellTool``, ``LocalShellTool``,     ``{agent}/{tool}``; deny or mock stops the function, the
``ApplyPatchTool`` file operation,     executor or the editor operation
``CustomTool``)
an MCP server's tool call              ``execute_tool {tool}``, matcher value ``{server}/{tool}``
                                       (``mcp__{server}__{tool}`` matches it too), with
                                       ``mcp.method.name`` and ``otelhooks.mcp.server.name``;
                                       deny or mock stops the server's ``call_tool``
a ``ComputerTool`` action              ``execute_tool computer_use_preview`` around the action;
                                       a deny raises ``ToolDenied`` before it runs
any other tool (hosted tools)          an ``UnguardedToolWarning`` names them; each call in the
                                       model's response is ``execute_tool {tool}``, which no
                                       hook can stop: a deny or mock fails it
                                       (``UnguardedToolCall``) and logs ``not enforced``
a handoff (``on_handoff``)             ``call_agent {to}`` in the current step and a child
                                       ``invoke_agent {to}`` linked to the parent operation; the
                                       following turns are steps of the child; a child a
                                       ``before_agent_start`` hook refuses raises
                                       ``RunBlockedError`` (both end ``interrupted``)
input/output guardrail tripwire        the operation fails: ``on_error`` with ``error.type``
                                       ``InputGuardrailTripwireTriggered`` / ``Output...``, and
                                       ``otelhooks.guardrail.name`` on the span
tool input guardrail ``reject_content``  an ``on_tool_call_denied`` event (decided by
                                       ``guardrail:{name}``), a span event
                                       ``otelhooks.tool_guardrail``
``MaxTurnsExceeded``                   complete reason ``max_steps`` (the exception propagates)
a budget guard refusing a model call   ``BudgetExceeded`` raised from ``on_llm_start``: the SDK
                                       never sends the call; complete reason ``cost_limit`` (the
                                       exception propagates)
a streamed run cancelled               complete reason ``interrupted`` (``result.cancel()``, either
                                       mode, or its event loop ended under it)
a run paused for approvals             complete reason ``interrupted`` (``result.interruptions``),
                                       a span event ``otelhooks.tool_approval`` (``pending``) on
                                       the step that asked, one per call
a call a person rejected               an ``on_tool_call_denied`` event (decided by
(``RunState.reject``; a namespaced     ``needs_approval``) and ``otelhooks.tool_approval``
tool's, an ``Agent.as_tool`` agent's   (``deny``) on the resumed run's first step, as the SDK
tools')                                applies it (its first callback; the nested run's, for an
                                       agent used as a tool), else as the run ends
=====================================  ==========================================================
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from typing import Any

from agents import (
    Agent,
    RunConfig,
    RunHooks,
    Runner,
    RunState,
    ToolErrorFormatterArgs,
)
from agents.items import TResponseInputItem
from agents.result import RunResult, RunResultStreaming

from otelhooks._encoding import dumps
from otelhooks._errors import RunBlockedError
from otelhooks._instrument import AgentTracer, Operation
from otelhooks.integrations.openai_agents._agent_run import GUARDRAIL_NAME, PROVIDER, AgentRun
from otelhooks.integrations.openai_agents._approvals import Decisions
from otelhooks.integrations.openai_agents._computer import calls_resumed
from otelhooks.integrations.openai_agents._guard import CURRENT_RUN, tool_raised
from otelhooks.integrations.openai_agents._hooked_agents import hook_agent, warn_unhooked_state
from otelhooks.integrations.openai_agents._run_hooks import RunHooksFeed
from otelhooks.integrations.openai_agents._streamed import streamed

__all__ = ["GUARDRAIL_NAME", "PROVIDER", "AgentRun", "HookedRunner", "RunBlockedError"]

Input = str | list[TResponseInputItem] | RunState[Any, Any]

_REWRITE_REFUSED = (
    "a before_agent_start hook rewrote the input, which a list of input items cannot take: the "
    "run was refused rather than run with the items as they were"
)


def _watching_errors(config: RunConfig | dict[str, Any] | None) -> RunConfig:
    """A copy of the run's config whose ``tool_error_formatter`` tells the hooked call the
    exception its tool raised, then answers as yours did (``None``: the SDK's message). The SDK
    hands a function tool's exception to this public callback whether its tracing is on or off;
    its tracing span, the only other place it reports one, is a no-op when tracing is off. A
    dict is read as the SDK's runner reads one: the fields of a ``RunConfig``."""
    if isinstance(config, dict):
        config = RunConfig(**config)  # an unknown field raises TypeError, as the SDK's does
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
        input: Input,
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
            RunBlockedError: a ``before_agent_start`` hook refused the run, or the agent a
                handoff went to.
            BudgetExceeded: a budget guard refused a model call (the SDK never sent it).
            Exception: whatever ``Runner.run`` raises (recorded on the operation first).
        """
        runnable, operation = self._operation(agent, input, session_id, user_id)
        refused: str | None = None
        async with operation as op:
            refused = self._refusal(op, input)
            if not op.blocked and refused is None:
                result, ended = await self._execute(op, runnable, input, hooks, runner_options)
        if op.blocked or refused is not None:
            raise RunBlockedError(refused or op.block_reason)
        if ended is not None:  # what ended the run without failing its operation
            raise ended
        assert result is not None
        return result

    async def run_streamed(
        self,
        agent: Agent[Any],
        input: Input,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        hooks: RunHooks[Any] | None = None,
        **runner_options: Any,
    ) -> RunResultStreaming:
        """``Runner.run_streamed(agent, input, ...)`` inside an ``invoke_agent`` operation:
        ``result = await runner.run_streamed(...)``, then ``result.stream_events()`` as usual.

        The arguments are :meth:`run`'s. Awaiting it runs the ``before_agent_start`` hooks
        (which may refuse the run) and starts the SDK's run; every tool call of the run is
        guarded as in :meth:`run`. The operation ends when the SDK's run does: it finished
        (``done``), paused for approvals or was cancelled (``result.cancel()``, or its event
        loop ended; ``interrupted``), ran out of turns (``max_steps``) or failed (the error the
        stream raises), whether or not anyone read the stream to its end.

        Raises:
            RunBlockedError: a ``before_agent_start`` hook refused the run.
            Exception: whatever ``Runner.run_streamed`` raises before it starts the run; what
                the run raises later (as :meth:`run` would), ``result.stream_events()`` raises.
        """
        runnable, operation = self._operation(agent, input, session_id, user_id)
        return await streamed(
            runnable,
            operation,
            refusal=lambda op: self._refusal(op, input),
            start=lambda op: self._start(op, input, hooks, runner_options),
        )

    def _operation(
        self, agent: Agent[Any], input: Input, session_id: str | None, user_id: str | None
    ) -> tuple[Agent[Any], Operation]:
        """The agent to run (hooked unless ``hook_tools`` is off) and the run's operation."""
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
        return runnable, operation

    @staticmethod
    def _refusal(op: Operation, input: Input) -> str | None:
        """Why the entered operation ``op``, which no hook blocked, does not run (``None``: it
        runs): a hook rewrote an input that is not a string."""
        if op.blocked:
            return None
        text = "" if isinstance(input, RunState) else dumps(input)
        if not isinstance(input, str) and op.input != text:
            op.complete("interrupted")
            return _REWRITE_REFUSED
        return None

    def _start(
        self, op: Operation, input: Input, hooks: RunHooks[Any] | None, options: dict[str, Any]
    ) -> tuple[AgentRun, Input, dict[str, Any]]:
        """The otelhooks side of the run ``op`` begins, and what the SDK's runner is given: the
        input (as hooks rewrote it) and its options (otelhooks' run hooks, then yours)."""
        asked = Decisions(input.get_interruptions() if isinstance(input, RunState) else [])
        if isinstance(input, RunState) and self.hook_tools:
            calls_resumed(input)  # their safety checks: no model response of this run has them
        run = AgentRun(self.tracer, op, op.agent, asked)
        prompt = op.input if isinstance(input, str) else input
        options = {
            **options,
            "hooks": RunHooksFeed(run, hooks),
            "run_config": _watching_errors(options.get("run_config")),
        }
        return run, prompt, options

    async def _execute(
        self,
        op: Operation,
        agent: Agent[Any],
        input: Input,
        hooks: RunHooks[Any] | None,
        options: dict[str, Any],
    ) -> tuple[RunResult | None, BaseException | None]:
        run, prompt, options = self._start(op, input, hooks, options)
        token = CURRENT_RUN.set(run)
        error: BaseException | None = None
        result: RunResult | None = None
        try:
            result = await Runner.run(agent, prompt, **options)
            return result, None
        except BaseException as exc:
            error = exc
            if run.failure(exc) is None:
                return None, exc  # ends the operation (max_steps, cost_limit), raised after it
            raise
        finally:
            CURRENT_RUN.reset(token)
            context = result.context_wrapper if result is not None else None
            run.end(error, context, result.interruptions if result is not None else None)

    def run_sync(self, agent: Agent[Any], input: Input, **options: Any) -> RunResult:
        """:meth:`run` from synchronous code (starts an event loop)."""
        return asyncio.run(self.run(agent, input, **options))
