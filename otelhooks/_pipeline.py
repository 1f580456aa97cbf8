"""The pipeline :func:`otelhooks.configure` builds, and its flush and shutdown within a deadline.

Flush and shutdown run each destination's step side by side on daemon threads: a dead collector
cannot use up the time a local file exporter or a webhook needs, and a step still waiting on the
network at the deadline cannot hold the caller, or interpreter exit, past it.
"""

from __future__ import annotations

import atexit
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import structlog
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider

from otelhooks._actions._webhook_delivery import WebhookDeliverer
from otelhooks._export import CountingBatchSpanProcessor
from otelhooks._export._report import DEFAULT_SHUTDOWN_TIMEOUT_S, DeliveryReport, DeliveryTracker
from otelhooks._hooks import Hook
from otelhooks._instrument import AgentTracer, Operation
from otelhooks._processor import HookSpanProcessor
from otelhooks._sdks import Instrumented
from otelhooks._worker import at_multiprocessing_child_exit

__all__ = ["OtelHooks"]

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
