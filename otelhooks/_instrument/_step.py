"""``Step`` (a ``step {n}`` span) and ``LlmCall`` (a ``chat {model}`` span)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry.trace import SpanKind

from otelhooks import _semconv as sc
from otelhooks._errors import BudgetExceeded
from otelhooks._events import (
    AfterStepEvent,
    HookEvent,
    LlmInputEvent,
    LlmOutputEvent,
    PendingTool,
    StepEvent,
    TokenUsage,
    ToolResult,
)
from otelhooks._instrument._base import SpanScope
from otelhooks._instrument._budget import (
    account,
    budget_denial_attributes,
    check_model_call,
    spend_of,
)
from otelhooks._instrument._current import STEP_KEY
from otelhooks._instrument._spend import Spend, cost_attributes
from otelhooks._instrument._tool import ToolCall
from otelhooks._live import LiveEvent

if TYPE_CHECKING:
    from otelhooks._instrument._operation import Operation
    from otelhooks._instrument._scopes import AgentCall, Approval, Compaction

__all__ = ["LlmCall", "Step"]


class Step(SpanScope):
    """One step of a run (LLM inference, then tool calls, approvals, compaction, sub-agents).

    Example:
        >>> from otelhooks import AgentTracer
        >>> with AgentTracer().operation("helper") as op, op.step() as step:
        ...     with step.llm("gpt-4o") as call:
        ...         call.record("Hello", input_tokens=12, output_tokens=3)
    """

    def __init__(self, operation: Operation, index: int) -> None:
        super().__init__(operation.tracer, operation)
        self.operation = operation
        self.index = index
        self.content = ""
        self.usage = TokenUsage()
        self.spend = Spend()
        # (toolCallId, identifier, apiName, success, outcome) per finished call: the payload
        # dicts of tool_calls / tool_results are built only when someone reads them.
        self._finished: list[tuple[str, str, str, bool, str]] = []

    def _open(self, *, deferred: bool) -> None:
        def build() -> HookEvent:  # only when a hook matches, at once, as the span starts
            op = self.operation
            return StepEvent(**op.common(), stepIndex=self.index, agentId=op.agent_id)

        live = LiveEvent(
            "before_step",
            build,
            values=self.operation.values,
            operation_id=self.operation.operation_id,
            deferred=deferred,  # async: __aenter__ awaits the dispatch (once, not twice)
        )
        self._begin(
            f"{sc.OP_STEP} {self.index}",
            live,
            attributes={
                sc.GEN_AI_OPERATION_NAME: sc.OP_STEP,
                sc.STEP_INDEX: self.index,
                sc.OPERATION_ID: self.operation.operation_id,
            },
        )

    def _in_context(self, ctx: otel_context.Context) -> otel_context.Context:
        return otel_context.set_value(STEP_KEY, self, ctx)

    def _close(self, exc: BaseException | None) -> None:
        self.span.set_attribute(sc.STEP_TOOL_CALLS, len(self._finished))
        self.span.set_attributes(cost_attributes(self.spend, sc.STEP_COST_USD))
        live = self.live
        if self.tracer.matches("after_step", live.values, live.operation_id):
            live.follow("after_step", self._after_event())
        self.tracer.metrics.step_duration.record(
            self.elapsed_s, {sc.GEN_AI_AGENT_NAME: self.operation.agent}
        )

    def _after_event(self) -> Callable[[], HookEvent]:
        """The ``after_step`` builder, over a snapshot of the step as it ends."""
        op = self.operation
        common = op.common()
        content, usage = self.content, self.usage.model_copy()
        calls, results = self.tool_calls, self.tool_results
        # The run's totals as this step ends (LobeHub's totalInputTokens, totalSteps, ...).
        elapsed_ms, steps, tool_calls = self.elapsed_s * 1000, op.step_count, op.tool_call_count
        run_usage = op.usage.model_copy()
        spend = spend_of(op)
        return lambda: AfterStepEvent(
            **common,
            executionTimeMs=elapsed_ms,
            totalInputTokens=run_usage.input,
            totalOutputTokens=run_usage.output,
            totalSteps=steps,
            totalToolCalls=tool_calls,
            stepIndex=self.index,
            agentId=op.agent_id,
            content=content,
            toolCalls=len(calls),
            toolsCalling=calls,
            toolsResult=results,
            usage=usage,
            spend=spend,
        )

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """The step's finished tool calls (LobeHub's ``toolsCalling``), in finishing order."""
        return [
            {"toolCallId": call_id, "identifier": identifier, "apiName": api_name}
            for call_id, identifier, api_name, _, _ in self._finished
        ]

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        """Their results (LobeHub's ``toolsResult``): the call, ``success`` and ``outcome``."""
        return [
            {
                "toolCallId": call_id,
                "identifier": identifier,
                "apiName": api_name,
                "success": success,
                "outcome": outcome,
            }
            for call_id, identifier, api_name, success, outcome in self._finished
        ]

    def finished_call(self, call: tuple[str, str, str, bool, str]) -> None:
        """A tool call of this step ended: (toolCallId, identifier, apiName, success, outcome)."""
        self._finished.append(call)
        self.operation.tool_call_count += 1

    @property
    def message_id(self) -> str:
        """The id of the step's assistant turn (LobeHub's ``assistantMessageId`` of its tool
        calls): ``msg_`` and the step span's id, which a recording keeps."""
        return f"msg_{self.span.get_span_context().span_id:016x}"

    # -- children --------------------------------------------------------------------------------

    def llm(
        self, model: str, *, messages: Sequence[Mapping[str, Any]] = (), provider: str | None = None
    ) -> LlmCall:
        """An LLM call: a ``chat {model}`` span firing ``llm_input`` and ``llm_output``.

        ``provider`` is the ``gen_ai.provider.name`` of the service that runs the model
        (``openai``, ``anthropic``, ``aws.bedrock``, ...); the operation's when omitted.
        """
        return LlmCall(self, model, messages=messages, provider=provider)

    def tool_call(
        self,
        identifier: str,
        api_name: str,
        args: Mapping[str, Any] | None = None,
        *,
        tool_call_id: str | None = None,
        tool_type: str = "function",
        refused: str | None = None,
        namespace: str | None = None,
    ) -> ToolCall:
        """A tool call: an ``execute_tool {api_name}`` span whose start runs the interceptors.

        ``refused`` is why otelhooks itself refuses the call before any hook runs (its
        arguments' types are not its schema's): no hook runs, the call is denied as by a hook
        (``decidedBy: "otelhooks"``, the reason on the span, ``on_tool_call_denied`` told) and
        :attr:`ToolCall.should_run` is False. A tool in a ``namespace`` (OpenAI Agents'
        ``tool_namespace``) is named ``{namespace}.{api_name}`` on the span; matchers see that
        name and the bare ``api_name`` (:func:`~otelhooks.matcher_values`).
        """
        return ToolCall(
            self,
            identifier,
            api_name,
            dict(args or {}),
            tool_call_id=tool_call_id,
            tool_type=tool_type,
            refused=refused,
            namespace=namespace,
        )

    def run_tool(
        self,
        identifier: str,
        api_name: str,
        args: Mapping[str, Any],
        fn: Callable[..., Any],
        **options: Any,
    ) -> ToolResult:
        """Run ``fn(**args)`` as a tool call, honouring mocks and denials; never raises.

        Returns the result the agent should see: the tool's, a mock, a ``hook_denied`` result, a
        failed result carrying the reason of a ``tool_result_persist`` block, or a failed result
        carrying the exception message.
        """
        with self.tool_call(identifier, api_name, args, **options) as call:
            if call.should_run:
                try:
                    call.set_result(fn(**call.args))
                except Exception as exc:
                    call.fail(exc)
        return call.result

    async def arun_tool(
        self,
        identifier: str,
        api_name: str,
        args: Mapping[str, Any],
        fn: Callable[..., Any],
        **options: Any,
    ) -> ToolResult:
        """As :meth:`run_tool`, awaiting ``fn`` when it returns an awaitable."""
        import inspect

        async with self.tool_call(identifier, api_name, args, **options) as call:
            if call.should_run:
                try:
                    value = fn(**call.args)
                    if inspect.isawaitable(value):
                        value = await value
                    await call.aset_result(value)
                except Exception as exc:
                    call.fail(exc)
        return call.result

    def approval(self, pending_tools: Sequence[PendingTool | Mapping[str, Any]]) -> Approval:
        """A human approval: a ``request_human_approve`` span with ``approve``/``reject`` events."""
        from otelhooks._instrument._scopes import Approval

        return Approval(self, [PendingTool.model_validate(p) for p in pending_tools])

    def compact(self, *, message_count: int, token_count: int) -> Compaction:
        """A context compaction: a ``compress_context`` span linked to the operation."""
        from otelhooks._instrument._scopes import Compaction

        return Compaction(self, message_count=message_count, token_count=token_count)

    def call_agent(
        self, agent_id: str, instruction: str = "", *, isolated: bool = False
    ) -> AgentCall:
        """A sub-agent call; its ``operation()`` is linked to this run (own trace if isolated)."""
        from otelhooks._instrument._scopes import AgentCall

        return AgentCall(self, agent_id, instruction, isolated=isolated)


class LlmCall(SpanScope):
    """An LLM call. Call :meth:`record` with the response and token usage."""

    def __init__(
        self, step: Step, model: str, *, messages: Sequence[Mapping[str, Any]], provider: str | None
    ) -> None:
        super().__init__(step.tracer, step)
        self.step = step
        self.model = model
        self.messages = [dict(m) for m in messages]
        self.provider = provider or step.operation.provider
        self.provider_named = provider is not None
        self.response = ""
        self.response_model: str | None = None
        self.finish_reason: str | None = None
        self.usage = TokenUsage()
        self.usage_reported = False

    def record(
        self,
        response: str,
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        response_model: str | None = None,
        finish_reason: str | None = None,
    ) -> None:
        """Record what the model answered and what it cost."""
        self.response = response
        self.usage = TokenUsage(input=input_tokens, output=output_tokens)
        self.usage_reported = True
        self.response_model = response_model
        self.finish_reason = finish_reason

    def _open(self, *, deferred: bool) -> None:
        op = self.step.operation
        attrs: dict[str, Any] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
            sc.GEN_AI_REQUEST_MODEL: self.model,
        }
        if self.provider:
            attrs[sc.GEN_AI_PROVIDER_NAME] = self.provider
            if self.provider_named and not op.provider_named:
                # A run that did not name its provider learns it from its first model call
                # that does (over the tracer's default).
                op.provider, op.provider_named = self.provider, True
                op.span.set_attribute(sc.GEN_AI_PROVIDER_NAME, self.provider)
        if op.session_id:
            attrs[sc.GEN_AI_CONVERSATION_ID] = op.session_id
        if op.compacted:
            # The conventions' flag, on the first inference after a compaction of the run.
            attrs[sc.GEN_AI_CONVERSATION_COMPACTED] = True
            op.compacted = False
        if self.tracer.capture_content:
            attrs[sc.GEN_AI_INPUT_MESSAGES] = json.dumps(self.messages, default=str)

        provider = self.provider

        def build() -> HookEvent:  # only when a hook matches, at once, as the span starts
            return LlmInputEvent(
                **op.common(),
                agentId=op.agent_id,
                stepIndex=self.step.index,
                model=self.model,
                messages=self.messages,
                provider=provider,
                spend=spend_of(op),
            )

        live = LiveEvent(
            "llm_input",
            build,
            values=(self.model,),
            operation_id=op.operation_id,
            deferred=deferred,
        )
        try:
            check_model_call(op)
        except BudgetExceeded as exc:
            # The call is refused before it starts: its span records the refusal, ends, and
            # the caller gets the exception (``with`` never entered its body).
            self._begin(f"{sc.OP_CHAT} {self.model}", None, attributes=attrs, kind=SpanKind.CLIENT)
            self.span.set_attributes(budget_denial_attributes(exc))
            self.fail(exc)
            self._finish()
            raise
        self._begin(f"{sc.OP_CHAT} {self.model}", live, attributes=attrs, kind=SpanKind.CLIENT)

    def _close(self, exc: BaseException | None) -> None:
        op = self.step.operation
        usage = self.usage
        end: dict[str, Any] = {sc.GEN_AI_RESPONSE_MODEL: self.response_model or self.model}
        if self.usage_reported:
            end[sc.GEN_AI_USAGE_INPUT_TOKENS] = usage.input
            end[sc.GEN_AI_USAGE_OUTPUT_TOKENS] = usage.output
        if self.finish_reason:
            end[sc.GEN_AI_RESPONSE_FINISH_REASONS] = [self.finish_reason]
        if self.tracer.capture_content:
            end[sc.GEN_AI_OUTPUT_MESSAGES] = json.dumps(
                [{"role": "assistant", "content": self.response}]
            )
        self.span.set_attributes(end)
        for total in (self.step.usage, op.usage):
            total.input += usage.input
            total.output += usage.output
        op.llm_calls += 1
        self.step.content = self.response
        response = self.response
        cost: float | None = None
        if self.usage_reported:
            cost = account(
                op,
                self.step,
                model=self.response_model or self.model,
                provider=self.provider,
                input_tokens=usage.input,
                output_tokens=usage.output,
            )
            if cost is not None:
                self.span.set_attribute(sc.LLM_COST_USD, cost)
        live = self.live
        # the totals as this call ends, copied only when a hook will read them
        hooked = self.tracer.matches("llm_output", live.values, live.operation_id)
        spend = spend_of(op) if hooked else None
        provider = self.provider
        self._follow(
            "llm_output",
            lambda: LlmOutputEvent(
                **op.common(),
                agentId=op.agent_id,
                stepIndex=self.step.index,
                model=self.response_model or self.model,
                response=response,
                tokenUsage=usage,
                provider=provider,
                costUsd=cost,
                spend=spend,
            ),
        )
        m = self.tracer.metrics
        attrs: dict[str, Any] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
            sc.GEN_AI_REQUEST_MODEL: self.model,
            sc.GEN_AI_AGENT_NAME: op.agent,
        }
        if self.provider:
            attrs[sc.GEN_AI_PROVIDER_NAME] = self.provider
        if exc is not None:
            attrs[sc.ERROR_TYPE] = sc.error_type(exc)
        # the model that answered, as on the span (the requested one when none was recorded)
        attrs[sc.GEN_AI_RESPONSE_MODEL] = self.response_model or self.model
        m.operation_duration.record(self.elapsed_s, attrs)
        if self.usage_reported:  # the spec: no usage metric when the counts are not known
            m.token_usage.record(usage.input, {**attrs, sc.GEN_AI_TOKEN_TYPE: "input"})
            m.token_usage.record(usage.output, {**attrs, sc.GEN_AI_TOKEN_TYPE: "output"})
