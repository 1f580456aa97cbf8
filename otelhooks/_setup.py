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
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import structlog
from opentelemetry import metrics as otel_metrics
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
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
    DEFAULT_SHUTDOWN_TIMEOUT_S,
    SHUTDOWN_TIMEOUT_ENV,
    DeliveryReport,
    DeliveryTracker,
    shutdown_timeout,
)
from otelhooks._hooks import Hook
from otelhooks._instrument import AgentTracer, Operation
from otelhooks._instrument._decorator import set_default_tracer
from otelhooks._logging import configure_logging
from otelhooks._metrics import AgentMetrics, metric_views
from otelhooks._processor import HookSpanProcessor
from otelhooks._resource import recording_resource
from otelhooks._sdks import Instrumented
from otelhooks._sdks import instrument as instrument_sdks
from otelhooks._worker import at_fork, at_multiprocessing_child_exit

__all__ = [
    "SHUTDOWN_TIMEOUT_ENV",
    "OtelHooks",
    "configure",
    "otlp_metric_reader",
    "otlp_span_exporter",
    "shutdown_timeout",
]

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
    return otlp_configured()


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


class OtelHooks:
    """Everything :func:`configure` set up. Also usable as the entry point of a runtime.

    Attributes:
        tracer_provider, meter_provider: the providers (global too, unless ``set_global=False``).
        engine: the pipeline's :class:`HooksEngine`; ``register()`` adds global hooks.
        hooks: the :class:`HookSpanProcessor` that fires observers for other instrumentations'
            GenAI spans on the provider.
        tracer: the :class:`AgentTracer` for instrumenting a runtime.
        metrics: the agent instruments.
        shutdown_timeout_s: how long :meth:`shutdown` may take by default.

    ``metric_readers`` (what :func:`configure` passes) lets a flush push the push readers'
    metrics without collecting the pull readers; without it a flush collects every reader.

    Example:
        >>> import otelhooks
        >>> oh = otelhooks.configure(traces_out="traces.jsonl", set_global=False)
        >>> with oh.operation("helper"):
        ...     pass
        >>> print(oh.shutdown())  # doctest: +ELLIPSIS
        1 spans exported to .../traces.jsonl
    """

    def __init__(
        self,
        tracer_provider: TracerProvider,
        meter_provider: MeterProvider,
        hooks: HookSpanProcessor,
        tracer: AgentTracer,
        exporters: Sequence[CountingBatchSpanProcessor],
        deliverer: WebhookDeliverer | None = None,
        *,
        metric_readers: Sequence[MetricReader] | None = None,
        metric_trackers: Sequence[DeliveryTracker] = (),
        shutdown_timeout_s: float = DEFAULT_SHUTDOWN_TIMEOUT_S,
    ) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.hooks = hooks
        self.engine = tracer.engine
        self.tracer = tracer
        self.metrics = tracer.metrics
        self.exporters = tuple(exporters)
        self.webhooks = deliverer
        self._readers = None if metric_readers is None else tuple(metric_readers)
        self.shutdown_timeout_s = shutdown_timeout_s
        self._metric_trackers = tuple(metric_trackers)
        self._shut = False
        self._report: DeliveryReport | None = None
        self.instrumented = Instrumented({})

    def _finalize_in_multiprocessing_child(self) -> None:
        at_multiprocessing_child_exit(self, OtelHooks.shutdown)

    def register(self, hooks: Iterable[Hook | Mapping[str, Any]]) -> list[Hook]:
        """Register global hooks (they apply to every operation)."""
        return self.engine.register(hooks)

    def operation(
        self,
        agent: str,
        *,
        input: str = "",
        session_id: str | None = None,
        user_id: str | None = None,
        hooks: Iterable[Hook | Mapping[str, Any]] = (),
        metadata: Mapping[str, Any] | None = None,
        agent_id: str | None = None,
        provider: str | None = None,
        operation_id: str | None = None,
        full_prompt: str | None = None,
        thread_id: str | None = None,
    ) -> Operation:
        """Start an agent run: the root ``invoke_agent {agent}`` span; see :class:`Operation`.

        Args:
            agent: the agent's name (``invoke_agent {agent}``).
            input: the run's input (``before_agent_start`` interceptors may rewrite it).
            session_id, user_id: the conversation and the user it belongs to.
            hooks: hooks for this run and the sub-agents it calls, removed when it ends.
            metadata: free-form fields passed to the run's hook events.
            agent_id: a stable id, when it differs from ``agent``.
            provider: the model provider (``gen_ai.provider.name``), e.g. ``openai``.
            operation_id: the run's id (a new one by default).
            full_prompt: the prompt as sent to the model, when it is more than ``input``.
            thread_id: the thread of an isolated run.
        """
        return self.tracer.operation(
            agent,
            input=input,
            session_id=session_id,
            user_id=user_id,
            hooks=hooks,
            metadata=metadata,
            agent_id=agent_id,
            provider=provider,
            operation_id=operation_id,
            full_prompt=full_prompt,
            thread_id=thread_id,
        )

    def _flush_steps(self, deadline: float) -> list[_Step]:
        def observers_then_metrics(left: float) -> bool:
            # Observers count their invocations in metrics, which the metrics worker records:
            # collect those after both have run.
            ok = self.engine.flush(left)
            ok = self.metrics.flush(max(0.0, deadline - time.monotonic())) and ok
            left = max(0.0, deadline - time.monotonic())
            return self._flush_metrics(int(left * 1000)) and ok

        steps: list[_Step] = [
            observers_then_metrics,
            lambda left: self.tracer_provider.force_flush(int(left * 1000)),
        ]
        if self.webhooks is not None:
            steps.append(self.webhooks.flush)
        return steps

    def _flush_metrics(self, timeout_ms: int) -> bool:
        """Push what the push readers hold; leave the pull readers alone.

        A pull reader (Prometheus, in-memory) collects when it is read. Collecting it here too
        queued a batch that the SDK's Prometheus reader served next to the scrape's own: the
        first scrape after a flush listed every family twice (two ``target_info``), which
        Prometheus and ``promtool check metrics`` reject.
        """
        if self._readers is None:
            return self.meter_provider.force_flush(timeout_ms)
        ok = True
        for reader in self._readers:
            if isinstance(reader, PeriodicExportingMetricReader):
                ok = reader.force_flush(timeout_ms) and ok
        return ok

    def force_flush(self, timeout_s: float | None = None) -> bool:
        """Run queued observers and collect metrics, export every ended span and deliver queued
        webhooks, side by side, all within ``timeout_s`` (default: the shutdown timeout).

        Returns:
            True when everything was flushed in time.
        """
        if timeout_s is None:
            timeout_s = self.shutdown_timeout_s
        deadline = time.monotonic() + timeout_s
        return _side_by_side(deadline, self._flush_steps(deadline))

    def _trackers(self) -> list[DeliveryTracker]:
        span_trackers = [b.tracker for b in self.exporters if b.tracker is not None]
        return [*span_trackers, *self._metric_trackers]

    def delivery_report(self) -> DeliveryReport:
        """What reached each destination so far: spans per exporter, metric exports per OTLP
        endpoint, webhooks per URL. After :meth:`shutdown`, the final report.

        Example:
            >>> import otelhooks
            >>> oh = otelhooks.configure(traces_out="traces.jsonl", set_global=False)
            >>> oh.delivery_report().ok
            True
            >>> _ = oh.shutdown()
        """
        if self._report is not None:
            return self._report
        reports = [t.report() for t in self._trackers()]
        if self.webhooks is not None:
            reports.extend(self.webhooks.reports())
        return DeliveryReport(tuple(reports))

    def shutdown(self, timeout_s: float | None = None, *, log: bool = True) -> DeliveryReport:
        """Flush everything and stop the workers, returning within ``timeout_s`` (default:
        ``shutdown_timeout_s``, i.e. ``$OTELHOOKS_SHUTDOWN_TIMEOUT`` or 10 s), also when it runs
        at interpreter exit. Safe to call twice.

        From the first moment of shutdown every destination is *fail-fast*: a refused
        connection is not retried, and one that refused or timed out once is not tried again.
        What is not exported or delivered by the deadline is dropped (queued ``delivery: queue``
        webhooks stay in the outbox for the next start).

        Args:
            timeout_s: the deadline, in seconds from now.
            log: log one warning per destination that did not accept everything.

        Returns:
            The :class:`DeliveryReport`: one line per destination, ``report.ok`` when every
            destination accepted everything.
        """
        if self._shut:
            return self.delivery_report()
        self._shut = True
        # configure() registered this for interpreter exit; once done, the exit handler must not
        # keep the whole pipeline (providers, exporters, what they hold) alive until then.
        atexit.unregister(self.shutdown)
        self.instrumented.uninstrument()
        if timeout_s is None:
            timeout_s = self.shutdown_timeout_s
        deadline = time.monotonic() + timeout_s
        # Spans and webhooks give up a little before the deadline when metrics are pushed: the
        # metrics' last export carries otelhooks.dropped, the count of what they lost, and a
        # silent collector used to take the whole deadline from it (the loss went uncounted).
        pushed = self._readers is None or any(
            isinstance(reader, PeriodicExportingMetricReader) for reader in self._readers
        )
        senders_deadline = deadline - min(0.5, timeout_s / 4) if pushed else deadline
        for batcher in self.exporters:
            batcher.start_shutdown(senders_deadline)
        for tracker in self._metric_trackers:
            tracker.start_shutdown(deadline)
        if self.webhooks is not None:
            self.webhooks.start_shutdown(senders_deadline)
        _side_by_side(deadline, self._flush_steps(deadline))

        def metrics_then_provider(left: float) -> bool:
            ok = self.metrics.shutdown(left)
            left = max(0.0, deadline - time.monotonic())
            self.meter_provider.shutdown(timeout_millis=max(left, 0.05) * 1000)
            return ok

        steps: list[_Step] = [lambda left: self.tracer_provider.shutdown(), metrics_then_provider]
        if self.webhooks is not None:
            steps.append(self.webhooks.shutdown)
        # What missed the deadline shows in the report (and its warnings), once.
        _side_by_side(deadline, steps)
        report = self.delivery_report()
        self._report = report
        if log:
            for destination in report:
                if not destination.ok:
                    _log.warning("not everything was delivered", report=destination.line())
        return report


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
    use_otlp = _otlp_configured() if otlp is None else otlp
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
        resource=resource, metric_readers=readers, views=metric_views(), shutdown_on_exit=False
    )
    agent_metrics = AgentMetrics(meter_provider)
    tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
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
