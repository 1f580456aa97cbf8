"""``WebhookSpanExporter``: notification webhooks as a plain OTel ``SpanExporter``.

For users who already have a ``TracerProvider`` (and any GenAI instrumentation on it) and want
webhooks without the hook processor: put it in a ``BatchSpanProcessor`` (or otelhooks'
``CountingBatchSpanProcessor``) and every finished GenAI span becomes its lifecycle events
(``after_tool_call``, ``on_tool_call_error``, ``on_complete``, ``on_error``, ``llm_output``),
which are delivered to the webhook hooks whose event and matcher fit. Delivery happens on the
webhook deliverer, never in ``export``: an exporter must not block its processor on the network.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otelhooks._actions import enqueues
from otelhooks._dispatch import HookRegistry
from otelhooks._hooks import Hook
from otelhooks._span_mapping import events_from_foreign_span

__all__ = ["WebhookSpanExporter"]


class WebhookSpanExporter(SpanExporter):
    """Delivers notification webhooks for finished GenAI spans.

    Args:
        hooks: webhook hooks (``{id, type, matcher, webhook}``); control hooks make no sense
            here (the tool already ran) and are refused.

    Example:
        >>> from opentelemetry.sdk.trace.export import BatchSpanProcessor
        >>> exporter = WebhookSpanExporter(
        ...     [{"id": "n", "type": "afterToolCall", "webhook": {"url": "http://127.0.0.1:9/h"}}]
        ... )
        >>> provider.add_span_processor(BatchSpanProcessor(exporter))
    """

    def __init__(self, hooks: Iterable[Hook | Mapping[str, Any]]) -> None:
        self.registry = HookRegistry()
        registered = self.registry.register(hooks)
        for hook in registered:
            if not enqueues(hook.action):
                from otelhooks._errors import ConfigError

                raise ConfigError(
                    "a WebhookSpanExporter takes notification webhooks only",
                    hook_id=hook.id,
                    field="webhook",
                )
        self._shutdown = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._shutdown:
            return SpanExportResult.FAILURE
        for span in spans:
            for live in events_from_foreign_span(span):
                hooks = self.registry.match(live.name, live.values)
                if not hooks:
                    continue
                payload = live.payload()
                for hook in hooks:
                    action = hook.action
                    if enqueues(action):
                        action.enqueue(payload)
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        from otelhooks._actions._webhook_delivery import default_deliverer

        return default_deliverer().flush(timeout_millis / 1000)

    def shutdown(self) -> None:
        self._shutdown = True
