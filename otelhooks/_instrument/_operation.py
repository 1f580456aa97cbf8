"""``Operation``: one agent run, the root ``invoke_agent {agent}`` span."""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Literal

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, SpanKind

from otelhooks import _semconv as sc
from otelhooks._errors import ConfigError
from otelhooks._events import (
    BeforeAgentStartEvent,
    CompleteEvent,
    ErrorEvent,
    GenericEvent,
    HookEvent,
    MessageSendingEvent,
    MessageSentEvent,
    TokenUsage,
    resolve_event,
)
from otelhooks._hooks import Hook
from otelhooks._instrument._base import AgentTracer, SpanScope, record_failure, record_verdict
from otelhooks._instrument._budget import spend_of
from otelhooks._instrument._current import OPERATION_KEY, STEP_KEY, current_operation, current_step
from otelhooks._instrument._spend import Spend, complete_cost, cost_attributes
from otelhooks._instrument._step import Step
from otelhooks._live import LiveEvent, Verdict
from otelhooks._redact import error_text

__all__ = ["CompleteReason", "Operation"]

CompleteReason = Literal["done", "error", "interrupted", "max_steps", "cost_limit"]


class Operation(SpanScope):
    """One agent run. Use as a context manager (``with`` or ``async with``).

    Hooks passed here are registered for this operation only and removed when it ends, whether
    it completes, fails or is interrupted (LobeHub's ``execAgent({ hooks })``).

    Attributes:
        operation_id: unique id of the run.
        input: the input after every ``before_agent_start`` interceptor.
        blocked: an interceptor refused the run; ``block_reason`` says why.
        reason: the ``on_complete`` reason the run will end with.

    Example:
        >>> from otelhooks import AgentTracer
        >>> tracer = AgentTracer()
        >>> with tracer.operation("planner", input="hi") as op:
        ...     if not op.blocked:
        ...         with op.step() as step:
        ...             pass  # the step's model call and tool calls
        >>> op.reason
        'done'
    """

    def __init__(
        self,
        tracer: AgentTracer,
        agent: str,
        *,
        agent_id: str | None = None,
        provider: str | None = None,
        operation_id: str | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        input: str = "",
        full_prompt: str | None = None,
        hooks: Iterable[Hook | Mapping[str, Any]] = (),
        metadata: Mapping[str, Any] | None = None,
        parent: Operation | None = None,
        isolated: bool = False,
        thread_id: str | None = None,
    ) -> None:
        super().__init__(tracer)
        self.agent = agent
        self.agent_id = agent_id or agent
        # The model provider (gen_ai.provider.name): the caller's, else the tracer's default,
        # which the first model call that names its provider replaces.
        self.provider = provider or tracer.provider
        self.provider_named = provider is not None
        self.operation_id = operation_id or f"op_{uuid.uuid4().hex[:16]}"
        self.session_id = session_id
        self.user_id = user_id
        self.input = input
        self._full_prompt = full_prompt if full_prompt is not None else input
        self._hooks = list(hooks)
        self.metadata = dict(metadata or {})
        self.parent = parent
        self.isolated = isolated
        self.thread_id = thread_id or (f"thread_{uuid.uuid4().hex[:12]}" if isolated else None)
        self.blocked = False
        self.block_reason: str | None = None
        self.reason: CompleteReason = "done"
        self.usage = TokenUsage()
        self.spend = Spend()
        self.session_spend = tracer.sessions.of(session_id) if session_id else None
        # (registry version, its budget guards) for this run, asked by every model call
        self.budget_guards: tuple[int, list[Any]] | None = None
        self.step_count = 0
        self.llm_calls = 0
        self.tool_call_count = 0
        # calls so far per ``identifier/apiName``: LobeHub's callIndex counts them from 1
        self.tool_calls_by_name: dict[str, int] = {}
        # a compaction finished and no model call has run since (gen_ai.conversation.compacted)
        self.compacted = False
        self.error: BaseException | None = None

    # -- identity shared with every child scope --------------------------------------------------

    def common(self) -> dict[str, Any]:
        """Fields every event of this operation carries."""
        return {
            "operationId": self.operation_id,
            "parentOperationId": self.parent.operation_id if self.parent else None,
            "sessionKey": self.session_id,
            "userId": self.user_id,
        }

    def next_call_index(self, name: str) -> int:
        """LobeHub's ``callIndex`` of a new call of tool ``name`` (``identifier/apiName``): the
        calls of that tool earlier in the operation, plus one (``toolPreparation.ts``)."""
        index = self.tool_calls_by_name.get(name, 0) + 1
        self.tool_calls_by_name[name] = index
        return index

    @property
    def values(self) -> tuple[str, ...]:
        return (self.agent, self.agent_id)

    @property
    def hooks(self) -> tuple[Hook | Mapping[str, Any], ...]:
        """The hooks this operation was given (``hooks=[...]``), as given: they run on its
        events and its children's while it is open."""
        return tuple(self._hooks)

    # -- the span --------------------------------------------------------------------------------

    def _open(self, *, deferred: bool) -> None:
        if self._outer is None:  # not a sub-agent call's: the step or run it is opened in
            self._outer = current_step() or current_operation()
        if self._hooks or self.parent is not None:
            # a sub-agent's run starts with the hooks of the run that called it
            within = self.parent.operation_id if self.parent is not None else None
            self.tracer.engine.register(self._hooks, operation_id=self.operation_id, within=within)
        attrs: dict[str, Any] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
            sc.GEN_AI_AGENT_NAME: self.agent,
            sc.GEN_AI_AGENT_ID: self.agent_id,
            sc.OPERATION_ID: self.operation_id,
        }
        if self.provider:
            attrs[sc.GEN_AI_PROVIDER_NAME] = self.provider
        if self.session_id:
            attrs[sc.GEN_AI_CONVERSATION_ID] = self.session_id
            attrs[sc.SESSION_ID] = self.session_id
        if self.user_id:
            attrs[sc.USER_ID] = self.user_id
        links: list[Link] = []
        parent_ctx = None
        if self.parent is not None:
            attrs[sc.PARENT_OPERATION_ID] = self.parent.operation_id
            links.append(
                Link(
                    self.parent.span.get_span_context(),
                    {sc.LINK_RELATION: sc.LINK_PARENT_OPERATION},
                )
            )
            if self.isolated:
                parent_ctx = otel_context.Context()  # its own trace, joined only by the link
                attrs[sc.SUBAGENT_THREAD_ID] = self.thread_id

        def build() -> HookEvent:
            return BeforeAgentStartEvent(
                **self.common(),
                agentId=self.agent_id,
                input=self.input,
                userMessage=self.input,
                fullPrompt=self._full_prompt,
                metadata=self.metadata,
            )

        live = LiveEvent(
            "before_agent_start",
            build,
            values=self.values,
            operation_id=self.operation_id,
            deferred=deferred,
        )
        self._begin(
            f"{sc.OP_INVOKE_AGENT} {self.agent}",
            live,
            attributes=attrs,
            kind=SpanKind.INTERNAL,
            links=links,
            parent=parent_ctx,
        )

    def _in_context(self, ctx: otel_context.Context) -> otel_context.Context:
        # A model call or an @otelhooks.tool directly in the run (no step) is the run's, not
        # the step of an enclosing run that called this one.
        ctx = otel_context.set_value(OPERATION_KEY, self, ctx)
        return otel_context.set_value(STEP_KEY, None, ctx)

    def _after_verdict(self, verdict: Verdict | None) -> None:
        if verdict is None:
            return
        if verdict.blocked:
            self.blocked = True
            self.block_reason = verdict.reason
            self.reason = "interrupted"
        elif verdict.rewritten_by and isinstance(verdict.payload, BeforeAgentStartEvent):
            self.input = verdict.payload.input

    def complete(self, reason: CompleteReason) -> None:
        """Set the reason the run ends with (``done`` unless an error or a limit stopped it)."""
        self.reason = reason

    def _close(self, exc: BaseException | None) -> None:
        if exc is not None:
            self.error = exc
            self.reason = "error"
        reason = self.reason
        self.span.set_attribute(sc.COMPLETE_REASON, reason)
        self.span.set_attribute(sc.GEN_AI_USAGE_INPUT_TOKENS, self.usage.input)
        self.span.set_attribute(sc.GEN_AI_USAGE_OUTPUT_TOKENS, self.usage.output)
        self.span.set_attributes(cost_attributes(self.spend, sc.OPERATION_COST_USD))
        if self.session_spend is not None and self.session_spend.calls:
            self.span.set_attribute(sc.SESSION_COST_USD, self.session_spend.cost_usd)
        spend = spend_of(self)
        duration = self.elapsed_s
        common = self.common()
        if exc is not None:
            error_type = type(exc).__qualname__
            message = error_text(exc)
            self.live.follow(
                "on_error",
                lambda: ErrorEvent(
                    **common,
                    agentId=self.agent_id,
                    errorMessage=message,
                    errorType=error_type,
                    errorDetail=f"{error_type}: {message}",
                ),
            )
            self.tracer.metrics.errors.add(
                1, {sc.GEN_AI_AGENT_NAME: self.agent, sc.ERROR_TYPE: sc.error_type(exc)}
            )
        usage = self.usage.model_copy()
        steps, llm_calls, tool_calls = self.step_count, self.llm_calls, self.tool_call_count
        self.live.follow(
            "on_complete",
            lambda: CompleteEvent(
                **common,
                agentId=self.agent_id,
                runId=self.operation_id,
                reason=reason,
                success=reason == "done",
                error=error_text(exc) if exc is not None else self.block_reason,
                duration=duration,
                tokenUsage=usage,
                steps=steps,
                llmCalls=llm_calls,
                toolCalls=tool_calls,
                cost=complete_cost(self.spend),
                spend=spend,
            ),
        )
        attrs = {sc.GEN_AI_AGENT_NAME: self.agent, sc.ATTR_OUTCOME: reason}
        if exc is not None:
            attrs[sc.ERROR_TYPE] = sc.error_type(exc)  # the spec's failure dimension
        self.tracer.metrics.operation.record(duration, attrs)

    def _finish(self) -> None:
        try:
            super()._finish()
        finally:
            if self._hooks or self.parent is not None:
                self.tracer.engine.registry.unregister(self.operation_id)

    # -- children --------------------------------------------------------------------------------

    def step(self) -> Step:
        """The next step of the run: a ``step {n}`` child span."""
        index = self.step_count
        self.step_count += 1
        return Step(self, index)

    def send_message(
        self,
        channel: str,
        target: str,
        content: str,
        *,
        deliver: Callable[[str], None] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> str | None:
        """Send an outbound message through the ``message_sending`` interceptors.

        Returns the content actually sent (rewritten by interceptors), or ``None`` when an
        interceptor blocked it. ``deliver`` is called with the final content inside the span.

        Example:
            >>> from otelhooks import AgentTracer
            >>> with AgentTracer().operation("deployer") as op:
            ...     sent = op.send_message("slack", "#ops", "deploy done", deliver=print)
            deploy done
            >>> sent
            'deploy done'
        """
        message = _Message(self, channel, target, content, metadata, deferred=False)
        final = message.decide(message.live.verdict or Verdict())
        try:
            if final is not None and deliver is not None:
                with trace.use_span(message.span, end_on_exit=False):
                    deliver(final)
            message.sent(final)
        except Exception as exc:
            message.failed(exc)
            raise
        finally:
            message.end()
        return final

    async def asend_message(
        self,
        channel: str,
        target: str,
        content: str,
        *,
        deliver: Callable[[str], Awaitable[None] | None] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> str | None:
        """As :meth:`send_message`, for async runtimes: the interceptors are awaited (async
        handlers on the loop, sync ones in a thread), so a slow one never blocks the event loop;
        ``deliver`` may be a coroutine function.

        Example:
            >>> import asyncio
            >>> from otelhooks import AgentTracer
            >>> async def apost(content: str) -> None:
            ...     print(content)
            >>> async def main() -> str | None:
            ...     async with AgentTracer().operation("deployer") as op:
            ...         return await op.asend_message("slack", "#ops", "deploy done", deliver=apost)
            >>> asyncio.run(main())
            deploy done
            'deploy done'
        """
        message = _Message(self, channel, target, content, metadata, deferred=True)
        verdict = await self.tracer.engine.astart(message.live)
        record_verdict(message.span, message.live.name, verdict)
        final = message.decide(verdict)
        try:
            if final is not None and deliver is not None:
                with trace.use_span(message.span, end_on_exit=False):
                    delivered = deliver(final)
                    if inspect.isawaitable(delivered):
                        await delivered
            message.sent(final)
        except Exception as exc:
            message.failed(exc)
            raise
        finally:
            message.end()
        return final

    def emit(self, event: str, **fields: Any) -> HookEvent:
        """Record a point event (``message_received``, ``Notification``, ``TaskCreated``, ...).

        It becomes a span event on the current span and fires its observer hooks. Any dialect's
        name is accepted; fields follow the event's payload model (``data`` for generic events).
        """
        return emit_event(self.tracer, event, {**self.common(), **fields}, self.values)


def emit_event(
    tracer: AgentTracer, event: str, fields: dict[str, Any], values: tuple[str, ...] = ("*",)
) -> HookEvent:
    """Build, record and dispatch a point event (shared by operations and the tracer)."""
    spec, _ = resolve_event(event)
    if spec.intercept:
        raise ConfigError(f"{event} is an intercept point and cannot be emitted", field="event")
    model = spec.payload
    data = {k: v for k, v in fields.items() if v is not None}
    if model is GenericEvent:
        known = set(GenericEvent.model_fields)
        extra = {k: data.pop(k) for k in list(data) if k not in known}
        data.setdefault("data", {}).update(extra)
        data["event"] = spec.name
    payload = model.model_validate(data)
    matcher_value = getattr(payload, "matcherValue", None)
    event_values = (matcher_value,) if isinstance(matcher_value, str) else values
    span = trace.get_current_span()
    attrs = {sc.EVENT_NAME: spec.name, sc.EVENT_ID: payload.eventId}
    if span.is_recording():
        span.add_event(sc.EVENT_PREFIX + spec.name, attrs)
        point = LiveEvent(
            spec.name, lambda: payload, values=event_values, operation_id=payload.operationId
        )
        point.span_context = span.get_span_context()
        tracer.observe(point)
    else:
        # No enclosing span (sessions, the gateway): a short span of its own.
        live = LiveEvent(
            spec.name, lambda: payload, values=event_values, operation_id=payload.operationId
        )
        short = tracer.start_span(
            f"{sc.OP_LIFECYCLE} {spec.name}",
            live,
            attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_LIFECYCLE, **attrs},
        )
        short.end()
        tracer.engine.end(live)
    return payload


class _Message:
    """One outbound message: the ``send_message {channel}`` span whose start is the
    ``message_sending`` event; shared by the sync and async senders, which differ only in how
    the interceptors run and how ``deliver`` is called."""

    def __init__(
        self,
        op: Operation,
        channel: str,
        target: str,
        content: str,
        metadata: Mapping[str, Any] | None,
        *,
        deferred: bool,
    ) -> None:
        self.op = op
        self.outer: SpanScope = current_step() or op  # where a failed delivery's error goes
        self.channel = channel
        self.target = target
        self.content = content
        common = self.common = op.common()
        meta = dict(metadata or {})

        def build() -> HookEvent:
            return MessageSendingEvent(
                **common, channelId=channel, target=target, content=content, metadata=meta
            )

        self.live = LiveEvent(
            "message_sending",
            build,
            values=(channel, target),
            operation_id=op.operation_id,
            deferred=deferred,
        )
        self.span = op.tracer.start_span(
            f"{sc.OP_SEND_MESSAGE} {channel}",
            self.live,
            attributes={
                sc.GEN_AI_OPERATION_NAME: sc.OP_SEND_MESSAGE,
                sc.MESSAGE_CHANNEL: channel,
                sc.MESSAGE_TARGET: target,
                sc.OPERATION_ID: op.operation_id,
            },
            kind=SpanKind.PRODUCER,
        )

    def decide(self, verdict: Verdict) -> str | None:
        """The content to send after the interceptors, or ``None`` when one blocked it."""
        final: str | None = self.content
        if verdict.blocked:
            final = None
        elif verdict.rewritten_by and isinstance(verdict.payload, MessageSendingEvent):
            final = verdict.payload.content
        self.span.set_attribute(sc.MESSAGE_BLOCKED, final is None)
        if final is not None:
            self.span.set_attribute(sc.MESSAGE_SIZE, len(final))
        return final

    def sent(self, final: str | None) -> None:
        if final is None:
            return
        common, channel, target = self.common, self.channel, self.target
        self.live.follow(
            "message_sent",
            lambda: MessageSentEvent(**common, channelId=channel, target=target, content=final),
        )

    def failed(self, exc: BaseException) -> None:
        record_failure(self.span, exc)
        self.outer._recorded_inside = exc

    def end(self) -> None:
        self.span.end()
        self.op.tracer.engine.end(self.live)
