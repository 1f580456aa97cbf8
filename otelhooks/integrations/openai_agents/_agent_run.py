"""The otelhooks side of one Agents SDK run (``AgentRun``): its operation's frames (the root
agent and each handed-off child), the steps and model calls the run hooks open and close, the
one entry point of every hooked tool call (``guard_tool``), and how the run ends. Shared by
:meth:`HookedRunner.run` and :meth:`HookedRunner.run_streamed`, so both record one shape. The
frames, their steps and model calls, and the handoffs that open them are :mod:`._run_frames`'
(the base of :class:`AgentRun`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog
from agents import (
    AgentsException,
    InputGuardrailTripwireTriggered,
    MaxTurnsExceeded,
    OutputGuardrailTripwireTriggered,
)
from agents.run_context import RunContextWrapper
from agents.tracing import get_current_span
from opentelemetry import trace

from otelhooks import _semconv as sc
from otelhooks._engine import tool_values
from otelhooks._errors import BudgetExceeded, RunBlockedError
from otelhooks._events import ToolCallDeniedEvent
from otelhooks._fingerprint import canonical_json
from otelhooks._instrument import AgentTracer, Operation, ToolCall
from otelhooks._live import LiveEvent
from otelhooks.integrations.openai_agents._approvals import (
    Decisions,
    pending_event,
    rejected_event,
)
from otelhooks.integrations.openai_agents._guard import RAISED, Execute, RewriteRefusedError
from otelhooks.integrations.openai_agents._judged_failure import judged_exception, judged_span_error
from otelhooks.integrations.openai_agents._run_frames import PROVIDER, Frame, RunFrames
from otelhooks.integrations.openai_agents._run_hooks import recording

__all__ = ["GUARDRAIL_NAME", "PROVIDER", "AgentRun"]

# a public name of this integration since it began; the one definition is in _semconv
GUARDRAIL_NAME = sc.GUARDRAIL_NAME

_log = structlog.get_logger("otelhooks")


class AgentRun(RunFrames):
    """The otelhooks side of one ``Runner.run``: the frames and the tool entry point."""

    def __init__(
        self, tracer: AgentTracer, root: Operation, agent: str, asked: Decisions | None = None
    ) -> None:
        self.tracer = tracer
        self.root = root
        self.frames = [Frame(root, agent)]
        # the agent a hooked handoff opened its call for, before the SDK ran the handoff's own
        # code (handoff_starts); the SDK's on_handoff that follows finds it open
        self.opened = None
        self.decisions = asked if asked is not None else Decisions([])
        # the SDK called on_agent_end: the run reached its final output (a streamed run stopped
        # with result.cancel(mode="after_turn") ends without one, and without raising)
        self.final = False

    # -- approvals ------------------------------------------------------------------------------

    def settle(
        self, context: RunContextWrapper[Any] | None, agent: str | None = None, own: bool = True
    ) -> None:
        """Record the calls of the resumed state a person rejected, once the run's ``context``
        is known: the SDK answered them before any callback of the run (with the model's next
        input), and the run may yet raise. With ``agent``, only the calls of the agent so named,
        whose callback handed ``context`` (not ``own``: the nested run's of an agent used as a
        tool, which alone holds the decisions on its calls)."""
        calls = self.decisions.take(context, agent, own)
        if not calls:
            return
        step = self.frame.open_step()
        for call in calls:
            step.span.add_event(sc.EVENT_TOOL_APPROVAL, rejected_event(call))
            reason, ident, space = call.reason, call.identifier, call.namespace
            self.denied(call.tool, call.call_id, call.args, "needs_approval", reason, ident, space)

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
        namespace: str | None = None,
    ) -> tuple[Any, bool]:
        """Run one hooked tool call as an ``execute_tool`` span in the current step.

        ``execute`` runs the tool (given the arguments a hook rewrote, ``None`` when unchanged)
        only when no hook denied or mocked the call; ``shown`` gives the part of its output the
        model is shown, which is the call's result (the output itself when omitted);
        ``attributes`` are added to the span; a call otelhooks ``refused`` (why) is denied with
        no hook run (``Step.tool_call``); ``namespace`` is the tool's ``tool_namespace``.
        Returns what the tool should return and whether the
        call was denied.
        """
        frame = self.frame
        step = frame.open_step()
        ident = identifier if identifier is not None else frame.agent
        with trace.use_span(step.span, end_on_exit=False):
            async with step.tool_call(
                ident, name, args, tool_call_id=call_id, refused=refused, namespace=namespace
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
                error = getattr(get_current_span(), "error", None)
                if raised or error:
                    # The SDK's failure handler (its default or the tool's own) turned it into a
                    # message for the model, which the tool_result_persist hooks filter as a
                    # result (a failed one); else a failure the SDK reports on its tracing span
                    # only (a function tool given the SDK's default handler as its own).
                    kept = await call.aset_result(output, success=False)
                    message = str((error or {}).get("message", "tool failed"))
                    failure = raised[-1] if raised else RuntimeError(message)
                    if call.filters_result():
                        # the hooks judged the message the model reads, never the exception's
                        # own text, which the SDK's span and ours would carry past them
                        failure = judged_exception(failure, kept.content)
                        judged_span_error(get_current_span(), kept.content)
                    call.fail(failure)
                    as_text = output if isinstance(output, str) else canonical_json(output)
                    return (output if kept.content == as_text else kept.content), False
                result = output if shown is None else shown(output)
                kept = await call.aset_result(result)
                as_text = result if isinstance(result, str) else canonical_json(result)
                # a tool_result_persist hook may have filtered the result; else keep the object
                return (output if kept.content == as_text else kept.content), False

    def refuse_call(
        self, name: str, identifier: str, args: dict[str, Any], call_id: str | None, exc: Exception
    ) -> None:
        """A call otelhooks refuses before any hook runs, by raising ``exc`` into the run (the
        caller raises it): its span is denied by ``otelhooks`` and failed with ``exc``."""
        step = self.frame.open_step()
        with (
            trace.use_span(step.span, end_on_exit=False),
            step.tool_call(identifier, name, args, tool_call_id=call_id, refused=str(exc)) as call,
        ):
            call.fail(exc)  # the run fails with it: so does the call's span

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
            call.namespace,
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
        namespace: str | None = None,
    ) -> None:
        """An SDK tool input guardrail rejected a call of ``identifier``'s ``tool`` (the
        agent's when omitted): the tool did not run."""
        frame = self.frame
        step = frame.step.scope if frame.step is not None else None
        if step is not None:
            step.span.add_event(
                sc.EVENT_TOOL_GUARDRAIL,
                {
                    sc.GEN_AI_TOOL_NAME: f"{namespace}.{tool}" if namespace else tool,
                    GUARDRAIL_NAME: guardrail,
                    sc.HOOK_DECISION: "deny",
                },
            )
        by = f"guardrail:{guardrail}"
        self.denied(tool, call_id, args, by, message, identifier, namespace)

    def output_withheld(
        self,
        tool: str,
        call_id: str,
        guardrail: str,
        message: str,
        identifier: str | None = None,
        namespace: str | None = None,
    ) -> None:
        """An SDK tool output guardrail replaced a call's result with ``message``: the tool ran
        (its span says what it returned) and the model reads the message instead."""
        step = self.frame.step.scope if self.frame.step is not None else None
        if step is None:
            return
        ident = identifier if identifier is not None else self.frame.agent
        name = f"{namespace}.{tool}" if namespace else tool
        step.span.add_event(
            sc.EVENT_TOOL_GUARDRAIL,
            {
                sc.GEN_AI_TOOL_NAME: name,
                sc.GEN_AI_TOOL_CALL_ID: call_id,
                sc.TOOL_MATCHER_VALUE: f"{ident}/{name}",
                GUARDRAIL_NAME: guardrail,
                sc.HOOK_DECISION: "deny",
                sc.HOOK_DECISION_REASON: message,
                sc.TOOL_OUTCOME: "blocked",
            },
        )

    def denied(
        self,
        tool: str,
        call_id: str,
        args: dict[str, Any],
        decided_by: str,
        reason: str,
        identifier: str | None = None,
        namespace: str | None = None,
    ) -> None:
        """Tell ``on_tool_call_denied`` observers of a deny no hook's verdict made (of the
        call's ``identifier``, the agent's when omitted; of the tool's ``namespace``, if any)."""
        frame = self.frame
        op = frame.operation
        ident = identifier if identifier is not None else frame.agent
        step = frame.step.scope if frame.step is not None else None
        payload = ToolCallDeniedEvent(
            **op.common(),
            toolCallId=call_id,
            identifier=ident,
            apiName=tool,
            toolNamespace=namespace,
            args=args,
            agentId=op.agent_id,
            stepIndex=step.index if step is not None else 0,
            reason=reason,
            decidedBy=decided_by,
        )
        live = LiveEvent(
            "on_tool_call_denied",
            lambda: payload,
            values=tool_values(ident, tool, namespace),
            operation_id=op.operation_id,
        )
        if step is not None:
            live.span_context = step.span.get_span_context()
        self.tracer.observe(live)
        self.tracer.metrics.tool_calls.add(
            1,
            {
                sc.GEN_AI_TOOL_NAME: f"{namespace}.{tool}" if namespace else tool,
                sc.ATTR_OUTCOME: "denied",
            },
        )

    def answered(self) -> None:
        """The SDK ran the final output's hooks: the run has its answer."""
        self.final = True

    # -- the end ----------------------------------------------------------------------------------

    def failure(self, exc: BaseException) -> BaseException | None:
        """What the operation fails with when the SDK's run raised ``exc`` (``None``: it does
        not): ``MaxTurnsExceeded`` ends it with ``max_steps``, a budget guard's refusal of a model
        call (``BudgetExceeded``) with ``cost_limit``, a refused handoff (``RunBlockedError``)
        with ``interrupted``; a guardrail tripwire fails it naming the guardrail; anything else
        fails it."""
        if isinstance(exc, MaxTurnsExceeded):
            self.root.complete("max_steps")
            return None
        if isinstance(exc, BudgetExceeded):
            self.root.complete("cost_limit")
            return None
        if isinstance(exc, RunBlockedError):  # the agent a handoff went to was refused
            self.root.complete("interrupted")
            return None
        if isinstance(exc, (InputGuardrailTripwireTriggered, OutputGuardrailTripwireTriggered)):
            self.root.span.set_attribute(GUARDRAIL_NAME, exc.guardrail_result.guardrail.get_name())
        return exc

    def end(
        self,
        error: BaseException | None,
        context: RunContextWrapper[Any] | None,
        interruptions: list[Any] | None = None,
    ) -> None:
        """The SDK's run returned (paused for the approval of ``interruptions``, if any) or
        raised ``error``, with ``context`` (``None``: unknown): record what a person decided and
        what the run waits for, then end every scope but the root operation's."""
        if error is not None and isinstance(error, AgentsException) and error.run_data:
            context = error.run_data.context_wrapper
        if interruptions and error is None:  # paused for a person, as LangGraph's interrupt
            self.root.complete("interrupted")
            recording("paused approvals", self.paused, interruptions)
        # at the latest as the run ends, whether it returned or raised
        recording("rejected approvals", self.settle, context)
        waiting = {getattr(item, "call_id", None) for item in interruptions or []}
        unknown = [item.call_id for item in self.decisions.asked if item.call_id not in waiting]
        if unknown:
            # no context seen holds their decision: the run raised before any callback, or an
            # agent used as a tool was resumed where no callback of its run reached otelhooks
            _log.error(
                "openai-agents adapter could not tell which calls a person rejected: no "
                "context of the resumed run it was handed holds their decision",
                calls=unknown,
            )
        self.close(error)
