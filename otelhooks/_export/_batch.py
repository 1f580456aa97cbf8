"""A batch span processor that counts its drops and logs them at a bounded rate.

The SDK's ``BatchSpanProcessor`` logs one warning per dropped span, which under the very load
that causes drops turns into a log flood. This processor reports every drop to ``on_drop``
(for metrics) and logs at most one warning per ``log_interval_s`` carrying the count since the
previous one.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import structlog
from opentelemetry.context import Context
from opentelemetry.sdk.environment_variables import (
    OTEL_BSP_EXPORT_TIMEOUT,
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
    OTEL_BSP_MAX_QUEUE_SIZE,
    OTEL_BSP_SCHEDULE_DELAY,
)
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otelhooks._export._encodable import encodable_batch
from otelhooks._export._report import DeliveryTracker
from otelhooks._worker import BoundedWorker

__all__ = ["CountingBatchSpanProcessor"]

_logger = structlog.get_logger("otelhooks")

_V = TypeVar("_V", int, float)

_DROP_REASONS = {
    "queue_full": "queue full",
    "shutdown": "still queued at the shutdown deadline",
    "handler_error": "lost to an error of otelhooks' exporter loop (see the log)",
}
_RETRY_BASE_S = 0.5
_RETRY_CAP_S = 10.0
_DEFAULT_MAX_QUEUE_SIZE = 65_536
_DEFAULT_MAX_EXPORT_BATCH_SIZE = 512
_DEFAULT_SCHEDULE_DELAY_S = 0.2
_DEFAULT_EXPORT_TIMEOUT_S = 30.0


class CountingBatchSpanProcessor(SpanProcessor):
    """Export sampled spans in batches from a background thread, counting what is dropped.

    Each option is resolved as: argument, else the standard environment variable, else our
    default. An invalid environment value is logged and ignored.

    Args:
        exporter: Receives batches on the worker thread, with instrumentation suppressed. A
            ``FAILURE`` result is logged; the spans are not retried.
        max_queue_size: Spans held at most (``OTEL_BSP_MAX_QUEUE_SIZE``, default 65,536);
            beyond it newly ended spans are dropped.
        max_export_batch_size: Spans per ``export`` call at most
            (``OTEL_BSP_MAX_EXPORT_BATCH_SIZE``, default 512).
        schedule_delay_s: Longest wait before a partial batch is exported
            (``OTEL_BSP_SCHEDULE_DELAY`` in milliseconds, default 0.2 s).
        export_timeout_s: How long ``shutdown`` waits for queued spans to be exported
            (``OTEL_BSP_EXPORT_TIMEOUT`` in milliseconds, default 30 s). Exporters bound each
            request with their own timeout.
        on_drop: Called with ``(count, reason)`` for every drop; reason is ``"queue_full"``,
            ``"shutdown"``, ``"export_failed"`` or ``"rejected"`` (the destination accepted the
            request but said it did not keep them; known through ``tracker`` only). Exceptions
            are logged and swallowed.
        log_interval_s: At most one drop warning per this many seconds.
        retry_failed_s: How long a batch whose export failed is retried before it is dropped
            (counted with reason ``"export_failed"``).
        tracker: Counts what reached the exporter's destination, for the delivery report. A
            failure it calls permanent (a 4xx other than 408/429) or that happens while it is
            fail-fast is not retried.

    Raises:
        ValueError: If the batch size exceeds the queue size, or a size is not positive.
    """

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        max_queue_size: int | None = None,
        max_export_batch_size: int | None = None,
        schedule_delay_s: float | None = None,
        export_timeout_s: float | None = None,
        on_drop: Callable[[int, str], None] | None = None,
        log_interval_s: float = 10.0,
        retry_failed_s: float = 300.0,
        tracker: DeliveryTracker | None = None,
    ) -> None:
        self._exporter = exporter
        self._tracker = tracker
        self._retry_failed_s = retry_failed_s
        self._retry_wake = threading.Event()
        self._on_drop = on_drop
        self._log_interval_s = log_interval_s
        self._export_timeout_s = _resolve(
            export_timeout_s, OTEL_BSP_EXPORT_TIMEOUT, _DEFAULT_EXPORT_TIMEOUT_S, _ms_to_s
        )
        self._log_lock = threading.Lock()
        self._unlogged: dict[str, int] = {}
        self._last_log = -float("inf")
        self._shutdown = False
        self._max_queue_size = _resolve(
            max_queue_size, OTEL_BSP_MAX_QUEUE_SIZE, _DEFAULT_MAX_QUEUE_SIZE, _positive_int
        )
        self._max_export_batch_size = _resolve(
            max_export_batch_size,
            OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
            _DEFAULT_MAX_EXPORT_BATCH_SIZE,
            _positive_int,
        )
        self._schedule_delay_s = _resolve(
            schedule_delay_s, OTEL_BSP_SCHEDULE_DELAY, _DEFAULT_SCHEDULE_DELAY_S, _ms_to_s
        )
        self._worker: BoundedWorker[ReadableSpan] = BoundedWorker(
            "otelhooks-span-export",
            self._export,
            max_queue_size=self._max_queue_size,
            max_batch_size=self._max_export_batch_size,
            schedule_delay_s=self._schedule_delay_s,
            on_drop=self._record_drop,
        )
        if tracker is not None:
            # Sent: every span offered to the queue, kept or dropped there (the queue counts
            # them anyway; a count of our own would take the tracker's lock per span).
            tracker.count_sent_by(lambda: self._worker.offered)

    @property
    def max_queue_size(self) -> int:
        """Spans held at most, as resolved from the argument, environment or default."""
        return self._max_queue_size

    @property
    def max_export_batch_size(self) -> int:
        """Spans per ``export`` call at most, as resolved."""
        return self._max_export_batch_size

    @property
    def schedule_delay_s(self) -> float:
        """Longest wait in seconds before a partial batch is exported, as resolved."""
        return self._schedule_delay_s

    @property
    def export_timeout_s(self) -> float:
        """How long ``shutdown`` waits for queued spans to be exported, as resolved."""
        return self._export_timeout_s

    @property
    def exporter(self) -> SpanExporter:
        """The exporter batches are handed to."""
        return self._exporter

    @property
    def tracker(self) -> DeliveryTracker | None:
        """Counts what reached the exporter's destination (given at construction)."""
        return self._tracker

    @property
    def dropped(self) -> int:
        """Spans dropped so far, for any reason."""
        return self._worker.dropped

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Do nothing: spans are queued when they end."""

    def on_end(self, span: ReadableSpan) -> None:
        """Queue ``span`` for export if it is sampled; never blocks."""
        context = span.context
        if context is not None and context.trace_flags.sampled:
            self._worker.submit(span)  # counted as sent by the tracker, through the queue

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Export every span ended before this call.

        Returns:
            True when they were all exported within ``timeout_millis``.
        """
        flushed = self._worker.flush(timeout_millis / 1000)
        self._log_drops(force=False)
        return flushed

    def start_shutdown(self, deadline: float) -> None:
        """Fail fast from now on (``deadline`` on the monotonic clock): a batch waiting for its
        next retry tries once more now, and a failure is not retried again."""
        if self.tracker is not None:
            self.tracker.start_shutdown(deadline)
        self._retry_wake.set()

    def shutdown(self) -> None:
        """Export what is queued within ``export_timeout_s``, then shut the exporter down."""
        if self._shutdown:
            return
        self._shutdown = True
        self._retry_wake.set()  # a batch waiting for its next retry gives up now
        if not self._worker.shutdown(self._export_timeout_s):
            _logger.warning("span export did not finish before shutdown deadline")
        self._log_drops(force=True)
        try:
            self._exporter.shutdown()
        except Exception:
            _logger.exception("span exporter shutdown failed")

    def _export(self, batch: list[ReadableSpan]) -> None:
        # A failed batch is retried (backoff with full jitter) until retry_failed_s: a collector
        # that is down for a while loses nothing that fits the queue. Meanwhile new spans wait
        # in the bounded queue, and what does not fit is dropped and counted, never blocking.
        deadline = time.monotonic() + self._retry_failed_s
        # A lone surrogate in one span's name (or its tracer's) failed the whole batch, again on
        # every retry.
        self._send(encodable_batch(batch), deadline)
        self._log_drops(force=False)

    def _send(self, batch: list[ReadableSpan], deadline: float) -> None:
        attempt = 0
        while True:
            tracker = self.tracker
            if tracker is not None and tracker.dead:
                # Known to be down (fail-fast): the batch is given up on without a try.
                self._record_drop(len(batch), "export_failed")
                break
            result = self._exporter.export(batch)
            if result is SpanExportResult.SUCCESS:
                if tracker is not None:
                    # Accepted, but the answer may say some spans were not kept: never retried
                    # (OTLP says so), counted and reported as the failures they are.
                    rejected = tracker.accepted(len(batch))
                    if rejected:
                        self._record_drop(rejected, "rejected")
                break
            if tracker is not None and tracker.reason is None:
                # An exporter that does not tell the tracker (a file, yours) says only this.
                said = getattr(self._exporter, "last_error", None)
                tracker.error(str(said) if said else "the exporter reported a failure")
            if tracker is not None and tracker.too_large and len(batch) > 1:
                # One span too large for the destination (a captured tool result of megabytes)
                # lost every span of its batch: each half is sent on its own, down to that span.
                half = len(batch) // 2
                self._send(batch[:half], deadline)
                self._send(batch[half:], deadline)
                break
            pause = random.uniform(0, min(_RETRY_CAP_S, _RETRY_BASE_S * 2**attempt))
            gave_up = tracker is not None and not tracker.retryable
            if gave_up or self._shutdown or time.monotonic() + pause >= deadline:
                # With a tracker the delivery report says it once, for the whole run.
                if tracker is None:
                    _logger.warning("span export failed", spans=len(batch), attempts=attempt + 1)
                self._record_drop(len(batch), "export_failed")
                break
            attempt += 1
            self._retry_wake.wait(pause)

    def _record_drop(self, count: int, reason: str) -> None:
        if self.tracker is not None and reason != "rejected":  # counted by tracker.accepted
            if reason == "export_failed":
                self.tracker.failed(count)
            else:
                self.tracker.dropped(count, _DROP_REASONS.get(reason, reason))
        if self._on_drop is not None:
            try:
                self._on_drop(count, reason)
            except Exception:
                _logger.exception("on_drop callback failed")
        with self._log_lock:
            self._unlogged[reason] = self._unlogged.get(reason, 0) + count
        self._log_drops(force=False)

    def _log_drops(self, *, force: bool) -> None:
        # Called on drops and after each export, so a burst that stops is still reported once
        # the interval has passed (and at shutdown regardless).
        with self._log_lock:
            if not self._unlogged:
                return
            now = time.monotonic()
            if not force and now - self._last_log < self._log_interval_s:
                return
            counts, self._unlogged = self._unlogged, {}
            self._last_log = now
        # Fail-fast (a command, or shutdown): the delivery report tells it, once.
        if self.tracker is None or not self.tracker.fail_fast:
            _logger.warning("spans dropped", dropped=sum(counts.values()), reasons=counts)


def _resolve(argument: _V | None, env_var: str, default: _V, parse: Callable[[str], _V]) -> _V:
    if argument is not None:
        return argument
    raw = os.environ.get(env_var)
    if raw is None or not raw.strip():
        return default
    try:
        return parse(raw)
    except ValueError:
        _logger.warning("invalid environment variable, using default", var=env_var, value=raw)
        return default


def _positive_int(raw: str) -> int:
    value = int(raw)
    if value <= 0:
        raise ValueError(raw)
    return value


def _ms_to_s(raw: str) -> float:
    value = float(raw)
    # A NaN or negative delay would make the worker spin or wait forever.
    if not value >= 0 or value == float("inf"):
        raise ValueError(raw)
    return value / 1000
