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
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from opentelemetry import metrics as otel_metrics
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader
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
from otelhooks._export._otlp import (
    otlp_configured,
    otlp_metric_reader,
    otlp_span_exporter,
    summarise_sdk_logs,
)
from otelhooks._export._priced import PricedSpanExporter
from otelhooks._export._report import (
    SHUTDOWN_TIMEOUT_ENV,
    DeliveryTracker,
    shutdown_timeout,
)
from otelhooks._hooks import Hook
from otelhooks._instrument import AgentTracer
from otelhooks._instrument._decorator import set_default_tracer
from otelhooks._logging import configure_logging
from otelhooks._metrics import AgentMetrics, metric_views
from otelhooks._pipeline import OtelHooks
from otelhooks._processor import HookSpanProcessor
from otelhooks._resource import exemplar_filter, recording_resource, span_limits
from otelhooks._sdks import instrument as instrument_sdks
from otelhooks._worker import at_fork

__all__ = [
    "SHUTDOWN_TIMEOUT_ENV",
    "OtelHooks",
    "configure",
    "otlp_metric_reader",
    "otlp_span_exporter",
    "shutdown_timeout",
]


def _otlp_metrics_wanted(*, explicit: bool) -> bool:
    """Metrics go over OTLP unless ``OTEL_METRICS_EXPORTER=none``, or only a traces endpoint
    is set (e.g. ``otelhooks serve``, which takes traces and nothing else)."""
    if os.environ.get("OTEL_METRICS_EXPORTER", "").strip().lower() == "none":
        return False
    if explicit:
        return True
    return any(
        os.environ.get(v)
        for v in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
    )


def _destination(exporter: SpanExporter) -> str:
    if isinstance(exporter, OtlpJsonLinesSpanExporter):
        return str(Path(exporter.path).absolute())
    return type(exporter).__name__


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
    sdk_metrics: bool | None = None,
    provider: str | None = None,
    shutdown_timeout_s: float | None = None,
    fail_fast: bool = False,
    instrument: Sequence[str] = (),
) -> OtelHooks:
    """Set up tracing, hooks, export and metrics in one call.

    Args:
        service_name: ``service.name`` of the resource.
        hooks: global hooks to register.
        traces_out: write spans as OTLP JSON lines to this file. It holds this run's spans
            only: what an earlier run left there is replaced at the first export or fork (as by
            ``otelhooks demo``). To keep adding to one file across runs, pass
            ``span_exporters=[OtlpJsonLinesSpanExporter(path)]`` instead (it appends).
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
        set_global: install the providers as the global ones (OpenTelemetry keeps the first:
            when another was installed before, a ``UserWarning`` says this one is not global).
        structured_logging: configure structlog to add ``trace_id``/``span_id`` to log lines.
        sdk_metrics: deprecated, no effect: otelhooks' metrics are always the SDK's
            instruments, with the exemplars the provider's filter asks for
            (``OTEL_METRICS_EXEMPLAR_FILTER``, trace-based by default).
        provider: the default ``gen_ai.provider.name`` (``openai``, ``anthropic``, ...) of
            operations and model calls that do not name theirs; otherwise it is left out.
        shutdown_timeout_s: how long ``shutdown()`` (also at interpreter exit) may take;
            ``None``: ``$OTELHOOKS_SHUTDOWN_TIMEOUT``, else 10 s.
        fail_fast: for short-lived processes: never retry a refused connection or a timeout,
            and skip a destination that failed that way (long-running processes keep the
            default, retrying until shutdown, when every destination turns fail-fast).
        instrument: LLM SDKs to instrument on these providers (``"openai"``, ``"anthropic"``;
            see :func:`otelhooks.instrument`): their calls become ``chat`` spans under the
            current step, priced, counted and guarded. ``shutdown()`` uninstruments them.

    Example:
        >>> from otelhooks import configure
        >>> oh = configure(traces_out="traces.jsonl", set_global=False, structured_logging=False)
        >>> with oh.operation("helper") as op:
        ...     pass
        >>> oh.shutdown().ok
        True
    """
    if sdk_metrics is not None:
        warnings.warn(
            "configure(sdk_metrics=...) is deprecated and does nothing: otelhooks' metrics are "
            "always recorded through the SDK's instruments",
            DeprecationWarning,
            stacklevel=2,
        )
    resource = recording_resource({"service.name": service_name, **(resource_attributes or {})})
    timeout_s = shutdown_timeout() if shutdown_timeout_s is None else shutdown_timeout_s
    readers = list(metric_readers)
    use_otlp = otlp_configured() if otlp is None else otlp
    metric_trackers: list[DeliveryTracker] = []
    if use_otlp and _otlp_metrics_wanted(explicit=otlp is True):
        # One line per retry of a dead collector would drown the run's own output.
        summarise_sdk_logs()
        metric_trackers.append(
            DeliveryTracker("metric exports", "", fail_fast=fail_fast, request_timeout_s=timeout_s)
        )
        readers.append(otlp_metric_reader(metric_trackers[-1]))
    # The providers' own atexit shutdowns are off: OtelHooks.shutdown (registered below) shuts
    # them down within its deadline; theirs would wait again on a dead collector.
    meter_provider = MeterProvider(
        resource=resource,
        metric_readers=readers,
        views=metric_views(),
        exemplar_filter=exemplar_filter(),
        shutdown_on_exit=False,
    )
    agent_metrics = AgentMetrics(meter_provider)
    tracer_provider = TracerProvider(
        resource=resource, span_limits=span_limits(), shutdown_on_exit=False
    )
    deliverer = WebhookDeliverer(
        metrics=agent_metrics,
        builder=PayloadBuilder(
            redactors=redactors, email_resolver=email_resolver, capture_content=capture_content
        ),
        outbox_path=outbox_path,
        fail_fast=fail_fast,
    )
    # One engine per pipeline, wired here: its hooks deliver through this pipeline's deliverer.
    engine = HooksEngine(metrics=agent_metrics, deliverer=deliverer)
    hook_processor = HookSpanProcessor(engine)
    tracer_provider.add_span_processor(hook_processor)
    exporters: list[tuple[SpanExporter, DeliveryTracker]] = []

    def tracker() -> DeliveryTracker:
        return DeliveryTracker("spans", "", fail_fast=fail_fast, request_timeout_s=timeout_s)

    for given in span_exporters:
        exporters.append((given, tracker()))
    if traces_out is not None:
        exporters.append((OtlpJsonLinesSpanExporter(traces_out, append=False), tracker()))
    for exporter, span_tracker in exporters:
        span_tracker.destination = _destination(exporter)
    if use_otlp:
        otlp_tracker = tracker()
        exporters.append((otlp_span_exporter(otlp_tracker), otlp_tracker))
    batchers = []
    for exporter, span_tracker in exporters:
        batcher = CountingBatchSpanProcessor(
            PricedSpanExporter(exporter),
            max_queue_size=max_queue_size,
            max_export_batch_size=max_export_batch_size,
            on_drop=agent_metrics.drop_counter("span_export"),
            tracker=span_tracker,
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
        provider=provider,
    )
    if set_global and trace.get_tracer_provider() is tracer_provider:
        # Decorated tools outside any operation open theirs here: set once, like the globals.
        set_default_tracer(tracer)
    elif set_global:
        # OpenTelemetry keeps the first global provider: guards that look global but are not
        # must not pass for installed
        warnings.warn(
            "configure(): the global OpenTelemetry providers were set before (an earlier "
            "configure() or another library) and stay: this pipeline is not the global one, "
            "so @otelhooks.tool calls outside an operation and OpenTelemetry "
            "instrumentations do not run its hooks (use oh.tracer, or set_global=False)",
            stacklevel=2,
        )
    configured = OtelHooks(
        tracer_provider,
        meter_provider,
        hook_processor,
        tracer,
        batchers,
        deliverer,
        metric_readers=readers,
        metric_trackers=metric_trackers,
        shutdown_timeout_s=timeout_s,
    )
    if instrument:
        configured.instrumented = instrument_sdks(
            instrument, tracer_provider=tracer_provider, meter_provider=meter_provider
        )
    atexit.register(configured.shutdown)
    # A multiprocessing child (fork or forkserver) ends with os._exit, which runs no atexit
    # handler: every span it still had queued was lost, counted nowhere. Its exit finalizers
    # do run. Registered from a fork hook, since a script may import multiprocessing after
    # configure(), and at once for a forkserver or spawn child, which configures after its fork.
    at_fork(after_in_child=configured._finalize_in_multiprocessing_child)
    configured._finalize_in_multiprocessing_child()
    return configured
