"""The price of another instrumentation's model call, on its span as it is exported.

A span processor sees a span only once it has ended, when its attributes can no longer be set,
and an instrumented SDK's ``chat`` span ends inside the SDK call. So ``configure()`` wraps each
of its exporters in :class:`PricedSpanExporter`, which gives a model-call span that has token
usage and no price ``otelhooks.llm.cost_usd``, priced the way the span processor priced the call
for the hooks and totals (genai-prices, one function), before handing the batch on. A span it
cannot price (an unknown model) is passed on unchanged. An exporter of your own, on a provider
of your own, gets the spans as the instrumentation made them (the hooks and the totals have the
price either way).
"""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otelhooks import _semconv as sc
from otelhooks._cost import price_usd
from otelhooks._model_spans import is_model_call
from otelhooks._span_copy import altered

__all__ = ["PricedSpanExporter", "priced"]


def priced(span: ReadableSpan) -> ReadableSpan:
    """``span`` with its price, when it is an unpriced model call that can be priced."""
    attrs = span.attributes
    if not is_model_call(attrs) or attrs is None or sc.LLM_COST_USD in attrs:
        return span
    tokens_in, tokens_out = (
        attrs.get(sc.GEN_AI_USAGE_INPUT_TOKENS),
        attrs.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS),
    )
    if not isinstance(tokens_in, int) and not isinstance(tokens_out, int):
        return span
    model = attrs.get(sc.GEN_AI_RESPONSE_MODEL) or attrs.get(sc.GEN_AI_REQUEST_MODEL)
    provider = attrs.get(sc.GEN_AI_PROVIDER_NAME) or attrs.get(sc.GEN_AI_SYSTEM)
    cost = price_usd(
        model if isinstance(model, str) else None,
        tokens_in if isinstance(tokens_in, int) else 0,
        tokens_out if isinstance(tokens_out, int) else 0,
        provider=provider if isinstance(provider, str) else None,
    )
    if cost is None:
        return span
    return altered(span, attributes={**attrs, sc.LLM_COST_USD: cost})


class PricedSpanExporter(SpanExporter):
    """``exporter``, given model-call spans with their price (see the module docstring).

    Example:
        >>> from opentelemetry.sdk.trace import TracerProvider
        >>> from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        >>> from otelhooks import OtlpJsonLinesSpanExporter, read_otlp_json_lines
        >>> from otelhooks._export._priced import PricedSpanExporter
        >>> exporter = PricedSpanExporter(OtlpJsonLinesSpanExporter("traces.jsonl"))
        >>> provider = TracerProvider()
        >>> provider.add_span_processor(SimpleSpanProcessor(exporter))
        >>> usage = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
        ...          "gen_ai.usage.input_tokens": 1000, "gen_ai.usage.output_tokens": 100}
        >>> with provider.get_tracer("an.sdk").start_as_current_span("chat", attributes=usage):
        ...     pass
        >>> provider.shutdown()
        >>> read_otlp_json_lines("traces.jsonl")[0]["attributes"]["otelhooks.llm.cost_usd"]
        0.0035
    """

    def __init__(self, exporter: SpanExporter) -> None:
        self.exporter = exporter

    @property
    def last_error(self) -> str | None:
        """The wrapped exporter's last failure, for the delivery report (when it keeps one)."""
        said = getattr(self.exporter, "last_error", None)
        return str(said) if said else None

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.exporter.export([priced(span) for span in spans])

    def shutdown(self) -> None:
        self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.exporter.force_flush(timeout_millis)
