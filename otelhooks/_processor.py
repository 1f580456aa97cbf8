"""``HookSpanProcessor``: hooks for spans that other instrumentations make.

otelhooks' own instrumentation hands its events to the :class:`~otelhooks.HooksEngine` directly;
this processor is the adapter for everything else on a ``TracerProvider``: each GenAI span another
instrumentation ends (``gen_ai.operation.name`` = ``execute_tool``, ``invoke_agent``, ``chat``)
becomes the observer events otelhooks would have fired for it (``after_tool_call``,
``on_tool_call_error``, ``on_complete``, ``on_error``, ``llm_output``). It is also the way to put an
engine on an existing provider: add the processor, and build an ``AgentTracer`` on its engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otelhooks._dispatch import HookRegistry
from otelhooks._engine import HooksEngine
from otelhooks._hooks import Hook
from otelhooks._metrics import AgentMetrics
from otelhooks._model_spans import ForeignModelCalls
from otelhooks._span_mapping import events_from_foreign_span

__all__ = ["HookSpanProcessor"]


class HookSpanProcessor(SpanProcessor):
    """Runs observer hooks for the GenAI spans of a ``TracerProvider``.

    Args:
        engine: the hooks engine (a new one, with ``registry``/``metrics``/``max_queue_size``,
            when omitted).
        registry, metrics, max_queue_size: for a new engine (see :class:`HooksEngine`).
        observe_foreign_spans: fire observers for GenAI spans otelhooks did not create (a model
            call under an otelhooks step is priced, totalled and guarded either way).

    Example:
        >>> from opentelemetry.sdk.trace import TracerProvider
        >>> from otelhooks import AgentTracer, HookSpanProcessor
        >>> provider = TracerProvider()
        >>> hooks = HookSpanProcessor()
        >>> provider.add_span_processor(hooks)
        >>> def audit(event):
        ...     print(event.apiName, event.content)
        >>> _ = hooks.register([{"id": "audit", "type": "afterToolCall", "handler": audit}])
        >>> tracer = AgentTracer(tracer_provider=provider, engine=hooks.engine)
        >>> with tracer.operation("helper") as op, op.step() as step:
        ...     _ = step.run_tool("calc", "add", {"a": 1, "b": 2}, lambda a, b: a + b)
        >>> provider.force_flush()  # observers run off the agent's path; wait for them
        add 3
        True
    """

    def __init__(
        self,
        engine: HooksEngine | None = None,
        *,
        registry: HookRegistry | None = None,
        metrics: AgentMetrics | None = None,
        observe_foreign_spans: bool = True,
        max_queue_size: int = 4_096,
    ) -> None:
        if engine is None:
            engine = HooksEngine(registry=registry, metrics=metrics, max_queue_size=max_queue_size)
        self.engine = engine
        self._observe_foreign = observe_foreign_spans
        self._model_calls = ForeignModelCalls(engine)

    @property
    def registry(self) -> HookRegistry:
        return self.engine.registry

    def register(
        self, hooks: Iterable[Hook | Mapping[str, Any]], *, operation_id: str | None = None
    ) -> list[Hook]:
        """Register hooks globally or for one operation (see :class:`HookRegistry`)."""
        return self.engine.register(hooks, operation_id=operation_id)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """A model call another instrumentation starts under one of this engine's steps is
        remembered, and refused (``BudgetExceeded``) past a budget guard's limit
        (see ``_model_spans``)."""
        if self.engine.is_own_scope(span.instrumentation_scope):
            return
        self._model_calls.started(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        if self.engine.is_own_scope(span.instrumentation_scope):
            return  # an AgentTracer of this engine dispatched its events already
        events = self._model_calls.ended(span)  # accounted to its step, whatever follows
        if not self._observe_foreign:
            return
        if events is None:
            events = events_from_foreign_span(span)
        for event in events:
            # A critical failure stays parked on the event: nobody to raise it to (someone
            # else's span), and it was logged.
            self.engine.start(event)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.engine.flush(timeout_millis / 1000)

    def shutdown(self) -> None:
        self.engine.shutdown()
