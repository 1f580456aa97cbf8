"""The OTLP exporters the standard environment asks for, each reporting to a tracker.

The SDK's HTTP exporters retry a refused connection with backoff until their timeout (10 s),
logging one line per attempt. Ours take the SDK exporter as it is and give it a
``requests.Session`` (a documented argument) that records every answer on a
:class:`DeliveryTracker` and, while the tracker is fail-fast, turns a refused connection or a
timeout into an error the SDK does not retry. gRPC spans go through our own
``GrpcSpanExporter`` and gRPC metrics through the SDK's exporter with our options
(:mod:`otelhooks._export._otlp_grpc`).
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
import threading
import time
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
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
from otelhooks._export._report import DeliveryTracker, one_line, record_rejected
from otelhooks._loopback import trust_env_for
from otelhooks._worker import at_fork

__all__ = [
    "GiveUp",
    "describe_request_error",
    "otlp_configured",
    "otlp_metric_reader",
    "otlp_span_exporter",
    "public_url",
    "summarise_sdk_logs",
    "tracked_session",
]


class GiveUp(Exception):
    """Raised inside the SDK's retry loop: a type it does not retry."""


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


def public_url(url: str) -> str:
    """``url`` without credentials or query string (safe to print)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}" if parts.scheme else url


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


def describe_request_error(exc: BaseException, timeout: float | None = None) -> str:
    """A short reason for a failed request: "connection refused", "no answer within 2 s"."""
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return "connect timed out"
    if isinstance(exc, requests.exceptions.Timeout):
        return f"no answer within {timeout:g} s" if timeout else "no answer (timed out)"
    seen: BaseException | None = exc
    text = str(exc)
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return "connection refused"
        seen = seen.__cause__ or seen.__context__
    if "Connection refused" in text or "[Errno 111]" in text:
        return "connection refused"
    if "Name or service not known" in text or "nodename nor servname" in text:
        return "unknown host"
    return f"connection failed ({type(exc).__name__})"


_DIRECT: dict[str, str | None] = {"http": None, "https": None, "all": None}


class _TrackedSession(requests.Session):
    """Records each answer on the tracker; gives up at once while fail-fast."""

    def __init__(self, tracker: DeliveryTracker) -> None:
        super().__init__()
        self.tracker = tracker
        # A forked child's pool held the parent's open connections: both sent requests on one
        # socket, so a request was cut into by the other's (400, a batch lost) or each read the
        # other's answer. A closed session opens new connections when next used.
        at_fork(after_in_child=self.close)

    def request(  # type: ignore[override]
        self, method: str, url: str, *args: Any, **kwargs: Any
    ) -> requests.Response:
        tracker = self.tracker
        if tracker.dead:
            raise GiveUp(tracker.reason or "the destination did not answer")
        timeout = tracker.timeout(kwargs.get("timeout"))
        kwargs["timeout"] = timeout
        kwargs["stream"] = True  # the answer is read below, bounded (_answer)
        if not trust_env_for(url):
            # a collector on this machine is reached directly: a proxy's empty 200 would pass
            # for an accepted export (each ``None`` unsets what the environment names)
            kwargs["proxies"] = _DIRECT
        try:
            response: requests.Response = super().request(method, url, *args, **kwargs)
        except requests.RequestException as exc:
            reason = describe_request_error(exc, timeout)
            tracker.error(reason, dead=True)
            if tracker.fail_fast:
                raise GiveUp(reason) from exc
            raise
        with response:  # once read (bounded), its connection is free again: nothing else reads it
            self._judge(url, response)
        return response

    def _judge(self, url: str, response: requests.Response) -> None:
        tracker = self.tracker
        if 300 <= response.status_code < 400:
            # The SDK's client never follows a redirect and takes it for an accepted export:
            # every span sent to an http:// endpoint that redirects to https:// (or to a login
            # page) was reported exported and lost. A redirect is not retried either.
            reason = f"{response.status_code} {response.reason}".strip()
            if location := response.headers.get("Location"):
                reason += f" to {public_url(urljoin(url, location))}"
            tracker.error(reason, status=response.status_code)
            raise GiveUp(reason)
        if not 200 <= response.status_code < 300:
            tracker.error(
                f"{response.status_code} {response.reason}".strip(), status=response.status_code
            )
        elif response.headers.get("Content-Type", "").startswith("text/html"):
            # A proxy's or captive portal's login page, answered 200 for every address (an
            # HTTP_PROXY that does not let the collector's address through): the SDK took it
            # for an accepted export, and every span was lost while the report said exported.
            reason = f"{response.status_code} {response.reason} with an HTML page, not OTLP"
            tracker.error(" ".join(reason.split()))
            raise GiveUp(reason)
        elif body := _answer(response):
            _count_rejected(tracker, response.headers.get("Content-Type", ""), body)


def _answer(response: requests.Response) -> bytes:
    """The answer's body, decompressed as it is read, empty past 1 MiB (an OTLP answer takes a
    few bytes). requests reads and decompresses a whole body: a collector's gzip bomb (1 MB on
    the wire, 1 GB of zeros) held a hook process 20 s and 2 GB of memory."""
    body = bytearray()
    try:
        for chunk in response.iter_content(_MAX_ANSWER // 16):
            body += chunk
            if len(body) > _MAX_ANSWER:
                return b""
    except (requests.RequestException, OSError):
        return b""  # cut off, or not what its encoding says: nothing it says can be counted
    return bytes(body)


_MAX_ANSWER = 1 << 20


def _count_rejected(tracker: DeliveryTracker, content_type: str, body: bytes) -> None:
    """Record the OTLP ``partialSuccess`` of an accepted answer: the SDK's exporters take any
    2xx for a whole success, so spans a collector (``otelhooks serve`` with a full queue among
    them) said it did not keep were reported exported and counted nowhere."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceResponse,
    )
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceResponse,
    )

    spans = tracker.kind == "spans"
    noun = "spans" if spans else "data points"
    message: object = ""
    try:
        if content_type.startswith("application/json"):
            partial = json.loads(body).get("partialSuccess") or {}
            message = partial.get("errorMessage") or ""
            count = int(partial.get("rejectedSpans" if spans else "rejectedDataPoints") or 0)
        elif spans:
            traces = ExportTraceServiceResponse.FromString(body).partial_success
            count, message = traces.rejected_spans, traces.error_message
        else:
            points = ExportMetricsServiceResponse.FromString(body).partial_success
            count, message = points.rejected_data_points, points.error_message
    except OverflowError:
        # ``1e400`` or ``Infinity``: more than were sent, so all of them. Before, the raise
        # failed an export the collector had accepted, sent again for five minutes.
        tracker.rejected(sys.maxsize, f"all {noun} rejected: {one_line(str(message))}")
        return
    except (DecodeError, ValueError, TypeError, AttributeError, RecursionError):
        # not an OTLP answer (a JSON body nested past the decoder's depth among them): nothing
        # it says can be counted
        return
    record_rejected(tracker, count, noun, str(message))


def tracked_session(tracker: DeliveryTracker) -> requests.Session:
    """A session for the SDK's OTLP/HTTP exporters that records each answer on ``tracker`` and,
    while it is fail-fast, gives up at once instead of letting the SDK back off and retry."""
    return _TrackedSession(tracker)


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

    timeout = otlp_timeout(os.environ, "TRACES")
    if tracker is None:
        return H(timeout=timeout)
    return H(session=_TrackedSession(tracker), timeout=timeout)


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

    timeout = otlp_timeout(os.environ, "METRICS")
    if tracker is None:
        return PeriodicExportingMetricReader(H(timeout=timeout))

    class CountedHttp(_CountsExports, H):
        pass

    exporter = CountedHttp(tracker, session=_TrackedSession(tracker), timeout=timeout)
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
