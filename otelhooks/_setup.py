"""``otelhooks.configure()``: tracing, hooks, export and metrics in one call.

Exporters, by what is configured:

* ``traces_out=PATH``: OTLP JSON lines (the Collector file exporter's encoding) to ``PATH``.
* ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` set (or ``otlp=True``):
  OTLP export, gRPC or HTTP/protobuf by ``OTEL_EXPORTER_OTLP_PROTOCOL`` (``http/protobuf`` when
  unset, the spec's default). Metrics follow the same variables.
* ``span_exporters=[...]``: any other exporters, each behind its own batch processor.

Every exporter sits behind a :class:`CountingBatchSpanProcessor` whose drops are counted in
``otelhooks.dropped{source="span_export"}``. Shutdown (also at interpreter exit) flushes with a
deadline: it returns within ``timeout_s`` however dead the collector or a webhook endpoint is.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import structlog
from opentelemetry import metrics as otel_metrics
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter

from otelhooks._actions._webhook_delivery import WebhookDeliverer
from otelhooks._actions._webhook_payload import (
    EmailResolver,
    PayloadBuilder,
    Redactor,
    truncate_results,
)
from otelhooks._engine import HooksEngine
from otelhooks._export import CountingBatchSpanProcessor, OtlpJsonLinesSpanExporter
from otelhooks._hooks import Hook
from otelhooks._instrument import AgentTracer, Operation
from otelhooks._logging import configure_logging
from otelhooks._metrics import AgentMetrics, LocalMetricProducer, metric_views
from otelhooks._processor import HookSpanProcessor

__all__ = ["OtelHooks", "configure"]

_log = structlog.get_logger("otelhooks")

_Step = Callable[[float], object]


def _side_by_side(deadline: float, steps: Sequence[_Step]) -> bool:
    """Run each step on its own thread, given the seconds left until ``deadline``; wait for
    them until ``deadline`` (monotonic clock).

    Side by side, so a dead OTLP collector cannot use up the time a local file exporter or a
    webhook needs; on daemon threads, so a step still waiting on the network at the deadline
    cannot hold the caller, or interpreter exit, past it.

    Returns:
        True when every step finished in time and none returned ``False`` or raised.
    """
    results: list[bool] = []

    def run(step: _Step) -> None:
        try:
            results.append(step(max(0.0, deadline - time.monotonic())) is not False)
        except Exception as exc:  # e.g. the SDK's "deadline already exceeded"
            _log.warning("flush or shutdown step failed", error=str(exc))
            results.append(False)

    threads = [
        threading.Thread(target=run, args=(step,), name="otelhooks-flush", daemon=True)
        for step in steps
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return len(results) == len(steps) and all(results)


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
        engine: the pipeline's :class:`HooksEngine`; ``register()`` adds global hooks.
        hooks: the :class:`HookSpanProcessor` that fires observers for other instrumentations'
            GenAI spans on the provider.
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
        self.engine = tracer.engine
        self.tracer = tracer
        self.metrics = tracer.metrics
        self.exporters = tuple(exporters)
        self.webhooks = deliverer
        self._shut = False

    def register(self, hooks: Iterable[Hook | Mapping[str, Any]]) -> list[Hook]:
        """Register global hooks (they apply to every operation)."""
        return self.engine.register(hooks)

    def operation(self, agent: str, **options: Any) -> Operation:
        """Start an agent run; see :class:`Operation`."""
        return self.tracer.operation(agent, **options)

    def _flush_steps(self, deadline: float) -> list[_Step]:
        def observers_then_metrics(left: float) -> bool:
            # Observers count their invocations in metrics: collect those after they ran.
            ok = self.engine.flush(left)
            left = max(0.0, deadline - time.monotonic())
            return self.meter_provider.force_flush(int(left * 1000)) and ok

        steps: list[_Step] = [
            observers_then_metrics,
            lambda left: self.tracer_provider.force_flush(int(left * 1000)),
        ]
        if self.webhooks is not None:
            steps.append(self.webhooks.flush)
        return steps

    def force_flush(self, timeout_s: float = 30.0) -> bool:
        """Run queued observers and collect metrics, export every ended span and deliver queued
        webhooks, side by side, all within ``timeout_s``.

        Returns:
            True when everything was flushed in time.
        """
        deadline = time.monotonic() + timeout_s
        return _side_by_side(deadline, self._flush_steps(deadline))

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Flush everything and stop the workers, returning within ``timeout_s`` (also when it
        runs at interpreter exit). Safe to call twice.

        What is not exported or delivered by the deadline is dropped (queued ``delivery: queue``
        webhooks stay in the outbox for the next start).
        """
        if self._shut:
            return
        self._shut = True
        deadline = time.monotonic() + timeout_s
        flushed = _side_by_side(deadline, self._flush_steps(deadline))
        steps: list[_Step] = [
            lambda left: self.tracer_provider.shutdown(),
            lambda left: self.meter_provider.shutdown(timeout_millis=left * 1000),
        ]
        if self.webhooks is not None:
            steps.append(self.webhooks.shutdown)
        if not (_side_by_side(deadline, steps) and flushed):
            _log.warning(
                "shutdown deadline passed before everything was flushed", timeout_s=timeout_s
            )


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
    sdk_metrics: bool = False,
) -> OtelHooks:
    """Set up tracing, hooks, export and metrics in one call.

    Args:
        service_name: ``service.name`` of the resource.
        hooks: global hooks to register.
        traces_out: write spans as OTLP JSON lines to this file.
        otlp: export over OTLP; ``None`` means "when the OTel endpoint variables are set".
        span_exporters: more exporters, each behind its own counting batch processor.
        metric_readers: metric readers (e.g. a Prometheus reader); OTLP adds its own.
        capture_content: record prompts, completions, tool arguments and results in spans, and
            send them in notification webhook bodies (``None``: the GenAI capture variable).
        max_queue_size, max_export_batch_size: batch export bounds (``OTEL_BSP_*`` otherwise).
        resource_attributes: more resource attributes.
        redactors: applied to every webhook body before it leaves the process (tool results are
            trimmed by default).
        email_resolver: user id → email, for webhooks that select ``userEmail``.
        outbox_path: SQLite file of the durable queue (``delivery: queue`` webhooks); default
            ``~/.otelhooks/outbox.sqlite3``.
        set_global: install the providers as the global ones.
        structured_logging: configure structlog to add ``trace_id``/``span_id`` to log lines.
        sdk_metrics: record otelhooks' metrics through the SDK's synchronous instruments (the
            provider's views and exemplars apply; each measurement costs about 30 times more)
            instead of aggregating them in process and handing them to the readers.

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
    # The providers' own atexit shutdowns are off: OtelHooks.shutdown (registered below) shuts
    # them down within its deadline; theirs would wait again on a dead collector.
    meter_provider = MeterProvider(
        resource=resource, metric_readers=readers, views=metric_views(), shutdown_on_exit=False
    )
    if sdk_metrics:
        agent_metrics = AgentMetrics(meter_provider)
    else:
        producer = LocalMetricProducer(resource)
        agent_metrics = AgentMetrics(producer=producer)
        for reader in readers:
            producer.attach(reader)
    tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    deliverer = WebhookDeliverer(
        metrics=agent_metrics,
        builder=PayloadBuilder(
            redactors=redactors, email_resolver=email_resolver, capture_content=capture_content
        ),
        outbox_path=outbox_path,
    )
    # One engine per pipeline, wired here: its hooks deliver through this pipeline's deliverer.
    engine = HooksEngine(metrics=agent_metrics, deliverer=deliverer)
    hook_processor = HookSpanProcessor(engine)
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
    engine.register(hooks)
    if set_global:
        trace.set_tracer_provider(tracer_provider)
        otel_metrics.set_meter_provider(meter_provider)
    if structured_logging:
        configure_logging()
    tracer = AgentTracer(
        tracer_provider=tracer_provider,
        engine=engine,
        metrics=agent_metrics,
        capture_content=capture_content,
    )
    configured = OtelHooks(
        tracer_provider, meter_provider, hook_processor, tracer, batchers, deliverer
    )
    atexit.register(configured.shutdown)
    return configured
