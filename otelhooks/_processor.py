"""``HookSpanProcessor``: hooks as an OpenTelemetry span processor.

``on_start`` finds the lifecycle event the instrumentation put in the span's Context, runs the
intercept hooks (unless the runtime is async and awaits them itself) and writes the verdict onto
the span before ``start_span`` returns; the ``before_*`` observers are queued. ``on_end`` queues
the events that happen when a span ends (``after_tool_call``, ``on_complete``, ...). Spans from
other GenAI instrumentations on the same provider fire the observer hooks too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otelhooks import _semconv as sc
from otelhooks._dispatch import Dispatcher, HookRegistry
from otelhooks._errors import CriticalHookDeliveryError
from otelhooks._events import EVENTS
from otelhooks._hooks import Hook
from otelhooks._live import LiveEvent, live_event_from
from otelhooks._metrics import AgentMetrics
from otelhooks._span_mapping import apply_verdict, events_from_foreign_span

__all__ = ["HookSpanProcessor"]


class HookSpanProcessor(SpanProcessor):
    """Runs otelhooks hooks for the spans of a ``TracerProvider``.

    Args:
        registry: the hooks; a new empty registry when omitted.
        metrics: the instruments hook invocations are counted in.
        observe_foreign_spans: fire observers for GenAI spans otelhooks did not create.
        max_queue_size: observer events waiting for their hooks at most; beyond it new ones
            are dropped and counted in ``otelhooks.dropped{source="observer_queue"}``. Each
            waiting event holds its built payload (about 4 KB), so the default (4,096) bounds
            the memory slow observers can take to about 16 MB (see ``benchmarks/README.md``).

    Example:
        >>> from opentelemetry.sdk.trace import TracerProvider
        >>> provider = TracerProvider()
        >>> hooks = HookSpanProcessor()
        >>> provider.add_span_processor(hooks)
        >>> _ = hooks.register([{"id": "audit", "type": "afterToolCall", "handler": print}])
    """

    def __init__(
        self,
        registry: HookRegistry | None = None,
        *,
        metrics: AgentMetrics | None = None,
        observe_foreign_spans: bool = True,
        max_queue_size: int = 4_096,
    ) -> None:
        self.dispatcher = Dispatcher(registry, metrics=metrics, max_queue_size=max_queue_size)
        self._observe_foreign = observe_foreign_spans
        self._live: dict[int, LiveEvent] = {}

    @property
    def registry(self) -> HookRegistry:
        return self.dispatcher.registry

    def register(
        self, hooks: Iterable[Hook | Mapping[str, Any]], *, operation_id: str | None = None
    ) -> list[Hook]:
        """Register hooks globally or for one operation (see :class:`HookRegistry`)."""
        return self.registry.register(hooks, operation_id=operation_id)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        live = live_event_from(parent_context)
        if live is None or live.handled:
            return
        live.handled = True
        live.processed = True
        live.span_context = span.context
        self._live[span.context.span_id] = live
        self.start_event(live, span)

    def start_event(self, live: LiveEvent, span: Span | None) -> None:
        """Dispatch the event that starts a span. Also called by the instrumentation when the span
        is not recording (sampled out), so intercept hooks hold whatever the sampler decides."""
        live.handled = True
        if live.deferred:
            return
        if not self.dispatcher.registry.any_match(
            live.name, live.values, operation_id=live.operation_id
        ):
            return  # no hook to run or to list on the span: the common case, kept cheap
        if _is_intercept(live):
            verdict = self.dispatcher.intercept(live)
            if span is not None and verdict.matched:
                span.set_attribute(sc.HOOK_MATCHED, verdict.matched)
                apply_verdict(span, live.name, verdict)
        else:
            try:
                matched = self.dispatcher.observe(live)
            except CriticalHookDeliveryError as exc:
                live.critical = exc  # raised by the instrumentation, never inside the SDK
                return
            if span is not None and matched and span.is_recording():
                span.set_attribute(sc.HOOK_MATCHED, [h.id for h in matched])

    def end_event(self, live: LiveEvent) -> None:
        for follow in live.followups:
            if _is_intercept(follow):
                continue  # interceptors of end events ran inline, in the instrumentation
            try:
                self.dispatcher.observe(follow)
            except CriticalHookDeliveryError as exc:
                live.critical = exc

    def on_end(self, span: ReadableSpan) -> None:
        ctx = span.context
        live = self._live.pop(ctx.span_id, None) if ctx is not None else None
        if live is not None:
            self.end_event(live)
        elif self._observe_foreign:
            for event in events_from_foreign_span(span):
                # Nobody to raise a critical failure to (someone else's span); it was logged.
                with contextlib.suppress(CriticalHookDeliveryError):
                    self.dispatcher.observe(event)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.dispatcher.flush(timeout_millis / 1000)

    def shutdown(self) -> None:
        self.dispatcher.shutdown()


def _is_intercept(live: LiveEvent) -> bool:
    return EVENTS[live.name].intercept
