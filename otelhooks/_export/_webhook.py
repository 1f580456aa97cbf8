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
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otelhooks._dispatch import HookRegistry
from otelhooks._engine import HooksEngine
from otelhooks._errors import ConfigError
from otelhooks._hooks import Hook, enqueues
from otelhooks._span_mapping import events_from_foreign_span

if TYPE_CHECKING:
    from otelhooks._actions._webhook_delivery import WebhookDeliverer

__all__ = ["WebhookSpanExporter"]


class WebhookSpanExporter(SpanExporter):
    """Delivers notification webhooks for finished GenAI spans.

    Args:
        hooks: webhook hooks (``{id, type, matcher, webhook}``); control hooks make no sense
            here (the tool already ran) and are refused.
        deliverer: where the webhooks deliver (the exporter's own engine creates one when
            omitted, and shuts it down with the exporter).

    Example:
        >>> from opentelemetry.sdk.trace import TracerProvider
        >>> from opentelemetry.sdk.trace.export import BatchSpanProcessor
        >>> from otelhooks import WebhookSpanExporter
        >>> exporter = WebhookSpanExporter(
        ...     [{"id": "n", "type": "afterToolCall", "webhook": {"url": "http://127.0.0.1:9/h"}}]
        ... )
        >>> provider = TracerProvider()
        >>> provider.add_span_processor(BatchSpanProcessor(exporter))
        >>> provider.shutdown()  # shuts the exporter and its deliveries down
    """

    def __init__(
        self,
        hooks: Iterable[Hook | Mapping[str, Any]],
        *,
        deliverer: WebhookDeliverer | None = None,
    ) -> None:
        self.engine = HooksEngine(deliverer=deliverer)
        for hook in self.engine.register(hooks):
            if not enqueues(hook.action):
                raise ConfigError(
                    "a WebhookSpanExporter takes notification webhooks only",
                    hook_id=hook.id,
                    field="webhook",
                )
        self._shutdown = False

    @property
    def registry(self) -> HookRegistry:
        return self.engine.registry

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._shutdown:
            return SpanExportResult.FAILURE
        for span in spans:
            for live in events_from_foreign_span(span):
                self.engine.start(live)  # a bounded-queue append per matching webhook
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.engine.flush(timeout_millis / 1000)

    def shutdown(self) -> None:
        self._shutdown = True
        self.engine.shutdown()
