"""The OTLP exporters the standard environment asks for, each reporting to a tracker.

The SDK's HTTP exporters retry a refused connection with backoff until their timeout (10 s),
logging one line per attempt. Ours take the SDK exporter as it is and give it a
``requests.Session`` (a documented argument, :mod:`otelhooks._export._otlp_http`) that records
every answer on a :class:`DeliveryTracker` and, while the tracker is fail-fast, turns a refused
connection or a timeout into an error the SDK does not retry. gRPC spans go through our own
``GrpcSpanExporter`` and gRPC metrics through the SDK's exporter with our options
(:mod:`otelhooks._export._otlp_grpc`).
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from typing import Any

from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    MetricExportResult,
    MetricReader,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.trace.export import SpanExporter

from otelhooks._export._encodable_metrics import encodable_metrics
from otelhooks._export._otlp_grpc import (
    GRPC_LOGGER,
    GrpcSpanExporter,
    grpc_metric_exporter,
    otlp_timeout,
)
from otelhooks._export._report import DeliveryTracker, public_url

__all__ = [
    "otlp_configured",
    "otlp_metric_reader",
    "otlp_span_exporter",
    "summarise_sdk_logs",
]


def otlp_configured() -> bool:
    """Whether the OTel endpoint variables ask for OTLP export."""
    return any(
        os.environ.get(v)
        for v in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def _protocol(signal: str) -> str:
    raw = os.environ.get(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL") or os.environ.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"
    )
    return raw.strip().lower()


def _endpoint(signal: str, path: str, grpc: bool) -> str:
    specific = os.environ.get(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")
    if specific:
        return public_url(specific)
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or (
        "http://localhost:4317" if grpc else "http://localhost:4318"
    )
    if grpc:
        return public_url(base)
    return public_url(base.rstrip("/") + "/" + path)


def otlp_span_exporter(tracker: DeliveryTracker | None = None) -> SpanExporter:
    """The OTLP span exporter the standard environment variables ask for.

    Args:
        tracker: counts and fail-fast state of this destination; its ``destination`` is set
            to the endpoint URL.
    """
    grpc = _protocol("TRACES") == "grpc"
    if grpc and tracker is None:
        # untracked (``serve``'s) too: the SDK's exporter raised on a setting ours takes
        tracker = DeliveryTracker("spans", "")
    if tracker is not None:
        tracker.destination = _endpoint("TRACES", "v1/traces", grpc)
    if grpc and tracker is not None:
        return GrpcSpanExporter(tracker)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as H

    from otelhooks._export._otlp_http import tracked_session

    timeout = otlp_timeout(os.environ, "TRACES")
    if tracker is None:
        return H(timeout=timeout)
    return H(session=tracked_session(tracker), timeout=timeout)


def otlp_metric_reader(tracker: DeliveryTracker | None = None) -> MetricReader:
    """A periodic reader with the OTLP metric exporter the environment asks for (each export
    with data points counted on ``tracker``)."""
    grpc = _protocol("METRICS") == "grpc"
    if tracker is not None:
        tracker.destination = _endpoint("METRICS", "v1/metrics", grpc)
    if grpc:
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as G

        if tracker is None:
            return PeriodicExportingMetricReader(G(timeout=otlp_timeout(os.environ, "METRICS")))

        return PeriodicExportingMetricReader(grpc_metric_exporter(tracker, _CountsExports))
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as H

    from otelhooks._export._otlp_http import tracked_session

    timeout = otlp_timeout(os.environ, "METRICS")
    if tracker is None:
        return PeriodicExportingMetricReader(H(timeout=timeout))

    class CountedHttp(_CountsExports, H):
        pass

    exporter = CountedHttp(tracker, session=tracked_session(tracker), timeout=timeout)
    return PeriodicExportingMetricReader(exporter)


class _CountsExports(MetricExporter):
    """Put before an OTLP metric exporter class: each export with data points is counted on
    ``tracker``. A subclass, not a wrapper, because the periodic reader takes its temporality
    and aggregation preferences from the exporter object it is given: this way they are the
    OTLP exporter's own, from its constructor (``OTEL_EXPORTER_OTLP_METRICS_*`` included)."""

    def __init__(self, tracker: DeliveryTracker, **options: Any) -> None:
        super().__init__(**options)
        self.tracker = tracker

    # ``timeout_millis`` as the two OTLP exporters' own signatures have it (float; float | None)
    def export(
        self, metrics_data: MetricsData, timeout_millis: Any = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        if not _has_points(metrics_data):
            return MetricExportResult.SUCCESS
        tracker = self.tracker
        tracker.sent()
        # A lone surrogate in a meter's name failed every export of the run, whole.
        metrics_data = encodable_metrics(metrics_data)
        # The OTLP exporter's export: this class comes before it in the subclass's bases.
        result = super().export(metrics_data, timeout_millis=timeout_millis, **kwargs)  # type: ignore[safe-super]
        if result is MetricExportResult.SUCCESS and tracker.take_rejected():
            tracker.failed(1)  # data points of it were not kept (the reason says how many)
        elif result is MetricExportResult.SUCCESS:
            tracker.delivered()
        else:
            if tracker.reason is None:
                tracker.error("the exporter reported a failure")
            tracker.failed(1)
        return result


def _has_points(metrics_data: MetricsData) -> bool:
    return any(
        metric.data.data_points
        for rm in metrics_data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
    )


# -- the SDK's own log lines ----------------------------------------------------------------------

# The loggers of the modules that log each failed export (our gRPC span exporter's too); one is
# an SDK ``_internal`` module's (the periodic reader's). tests/test_private_names.py fails when
# one is renamed.
_SDK_LOGGERS = (
    GRPC_LOGGER,
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http.metric_exporter",
    "opentelemetry.exporter.otlp.common.http",
    "opentelemetry.exporter.otlp.proto.grpc.exporter",
    "opentelemetry.sdk.metrics._internal.export",
)


class _Summary(logging.Filter):
    """Lets one record per message template through every ``interval_s``; counts the rest."""

    def __init__(self, interval_s: float) -> None:
        super().__init__()
        self.interval_s = interval_s
        self.suppressed = 0
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        if self.interval_s == math.inf:  # a command prints its delivery report instead
            self.suppressed += 1
            return False
        key = f"{record.name}:{record.msg}"
        now = time.monotonic()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.interval_s:
                self.suppressed += 1
                return False
            self._last[key] = now
        return True


_summary: _Summary | None = None


def summarise_sdk_logs(interval_s: float | None = None) -> None:
    """Show each of the OTLP exporters' retry and failure messages at most once per
    ``interval_s`` (a dead collector otherwise prints one line per attempt); ``math.inf`` hides
    them (a command prints its delivery report instead). ``None`` installs the filter with 60 s
    if it is not installed yet and otherwise changes nothing."""
    global _summary
    if _summary is None:
        _summary = _Summary(60.0 if interval_s is None else interval_s)
        for name in _SDK_LOGGERS:
            logging.getLogger(name).addFilter(_summary)
    elif interval_s is not None:
        _summary.interval_s = interval_s
