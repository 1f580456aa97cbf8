"""``otelhooks.configure()``: tracing, hooks, export and metrics in one call.

Exporters, by what is configured:

* ``traces_out=PATH``: OTLP JSON lines (the Collector file exporter's encoding) to ``PATH``.
* ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` set (or ``otlp=True``):
  OTLP export, gRPC or HTTP/protobuf by ``OTEL_EXPORTER_OTLP_PROTOCOL`` (``http/protobuf`` when
  unset, the spec's default). Metrics follow the same variables.
* ``span_exporters=[...]``: any other exporters, each behind its own batch processor.

Every exporter sits behind a :class:`CountingBatchSpanProcessor` whose drops are counted in
``otelhooks.dropped{source="span_export"}``. Shutdown (also at interpreter exit) flushes with a
deadline.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from opentelemetry import metrics as otel_metrics
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter

from otelhooks._actions._webhook_delivery import WebhookDeliverer, set_default_deliverer
from otelhooks._actions._webhook_payload import (
    EmailResolver,
    PayloadBuilder,
    Redactor,
    truncate_results,
)
from otelhooks._export import CountingBatchSpanProcessor, OtlpJsonLinesSpanExporter
from otelhooks._hooks import Hook
from otelhooks._instrument import AgentTracer, Operation
from otelhooks._logging import configure_logging
from otelhooks._metrics import AgentMetrics, metric_views
from otelhooks._processor import HookSpanProcessor

__all__ = ["OtelHooks", "configure"]


def _otlp_configured() -> bool:
    return any(
        os.environ.get(v)
        for v in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def _protocol(signal: str) -> str:
    raw = os.environ.get(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL") or os.environ.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"
    )
    return raw.strip().lower()


def otlp_span_exporter() -> SpanExporter:
    """The OTLP span exporter the standard environment variables ask for."""
    if _protocol("TRACES") == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as Grpc

        return Grpc()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as Http

    return Http()


def otlp_metric_reader() -> MetricReader:
    if _protocol("METRICS") == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as G

        return PeriodicExportingMetricReader(G())
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as H

    return PeriodicExportingMetricReader(H())


class OtelHooks:
    """Everything :func:`configure` set up. Also usable as the entry point of a runtime.

    Attributes:
        tracer_provider, meter_provider: the providers (global too, unless ``set_global=False``).
        hooks: the :class:`HookSpanProcessor`; ``register()`` adds global hooks.
        tracer: the :class:`AgentTracer` for instrumenting a runtime.
        metrics: the agent instruments.
    """

    def __init__(
        self,
        tracer_provider: TracerProvider,
        meter_provider: MeterProvider,
        hooks: HookSpanProcessor,
        tracer: AgentTracer,
        exporters: Sequence[CountingBatchSpanProcessor],
        deliverer: WebhookDeliverer | None = None,
    ) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.hooks = hooks
        self.tracer = tracer
        self.metrics = tracer.metrics
        self.exporters = tuple(exporters)
        self.webhooks = deliverer
        self._shut = False

    def register(self, hooks: Iterable[Hook | Mapping[str, Any]]) -> list[Hook]:
        """Register global hooks (they apply to every operation)."""
        return self.hooks.registry.register(hooks)

    def operation(self, agent: str, **options: Any) -> Operation:
        """Start an agent run; see :class:`Operation`."""
        return self.tracer.operation(agent, **options)

    def force_flush(self, timeout_s: float = 30.0) -> bool:
        """Run queued observers, then export every ended span and collect metrics."""
        ok = self.hooks.force_flush(int(timeout_s * 1000))
        if self.webhooks is not None:
            ok = self.webhooks.flush(timeout_s) and ok
        ok = self.tracer_provider.force_flush(int(timeout_s * 1000)) and ok
        return self.meter_provider.force_flush(int(timeout_s * 1000)) and ok

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Flush everything with a deadline and stop the workers. Safe to call twice."""
        if self._shut:
            return
        self._shut = True
        self.force_flush(timeout_s)
        self.tracer_provider.shutdown()
        if self.webhooks is not None:
            self.webhooks.shutdown(timeout_s)
        self.meter_provider.shutdown(timeout_millis=timeout_s * 1000)


def configure(
    *,
    service_name: str = "otelhooks-agent",
    hooks: Iterable[Hook | Mapping[str, Any]] = (),
    traces_out: str | os.PathLike[str] | None = None,
    otlp: bool | None = None,
    span_exporters: Sequence[SpanExporter] = (),
    metric_readers: Sequence[MetricReader] = (),
    capture_content: bool | None = None,
    max_queue_size: int | None = None,
    max_export_batch_size: int | None = None,
    resource_attributes: Mapping[str, Any] | None = None,
    redactors: Sequence[Redactor] = (truncate_results,),
    email_resolver: EmailResolver | None = None,
    outbox_path: str | os.PathLike[str] | None = None,
    set_global: bool = True,
    structured_logging: bool = True,
) -> OtelHooks:
    """Set up tracing, hooks, export and metrics in one call.

    Args:
        service_name: ``service.name`` of the resource.
        hooks: global hooks to register.
        traces_out: write spans as OTLP JSON lines to this file.
        otlp: export over OTLP; ``None`` means "when the OTel endpoint variables are set".
        span_exporters: more exporters, each behind its own counting batch processor.
        metric_readers: metric readers (e.g. a Prometheus reader); OTLP adds its own.
        capture_content: record prompts, completions, tool arguments and results.
        max_queue_size, max_export_batch_size: batch export bounds (``OTEL_BSP_*`` otherwise).
        resource_attributes: more resource attributes.
        redactors: applied to every webhook body before it leaves the process (tool results are
            trimmed by default).
        email_resolver: user id → email, for webhooks that select ``userEmail``.
        outbox_path: SQLite file of the durable queue (``delivery: queue`` webhooks); default
            ``~/.otelhooks/outbox.sqlite3``.
        set_global: install the providers as the global ones.
        structured_logging: configure structlog to add ``trace_id``/``span_id`` to log lines.

    Example:
        >>> oh = configure(traces_out="traces.jsonl")
        >>> with oh.operation("helper") as op:
        ...     pass
        >>> oh.shutdown()
    """
    resource = Resource.create({"service.name": service_name, **(resource_attributes or {})})
    readers = list(metric_readers)
    use_otlp = _otlp_configured() if otlp is None else otlp
    if use_otlp:
        readers.append(otlp_metric_reader())
    meter_provider = MeterProvider(resource=resource, metric_readers=readers, views=metric_views())
    agent_metrics = AgentMetrics(meter_provider)
    tracer_provider = TracerProvider(resource=resource)
    hook_processor = HookSpanProcessor(metrics=agent_metrics)
    tracer_provider.add_span_processor(hook_processor)
    exporters: list[SpanExporter] = list(span_exporters)
    if traces_out is not None:
        exporters.append(OtlpJsonLinesSpanExporter(traces_out))
    if use_otlp:
        exporters.append(otlp_span_exporter())
    batchers = []
    for exporter in exporters:
        batcher = CountingBatchSpanProcessor(
            exporter,
            max_queue_size=max_queue_size,
            max_export_batch_size=max_export_batch_size,
            on_drop=agent_metrics.drop_counter("span_export"),
        )
        tracer_provider.add_span_processor(batcher)
        batchers.append(batcher)
    deliverer = WebhookDeliverer(
        metrics=agent_metrics,
        builder=PayloadBuilder(redactors=redactors, email_resolver=email_resolver),
        outbox_path=outbox_path,
    )
    set_default_deliverer(deliverer)
    hook_processor.registry.register(hooks)
    if set_global:
        trace.set_tracer_provider(tracer_provider)
        otel_metrics.set_meter_provider(meter_provider)
    if structured_logging:
        configure_logging()
    tracer = AgentTracer(
        tracer_provider=tracer_provider,
        hooks=hook_processor,
        metrics=agent_metrics,
        capture_content=capture_content,
    )
    configured = OtelHooks(
        tracer_provider, meter_provider, hook_processor, tracer, batchers, deliverer
    )
    atexit.register(configured.shutdown)
    return configured
