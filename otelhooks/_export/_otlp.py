"""The OTLP exporters the standard environment asks for, each reporting to a tracker.

The SDK's HTTP exporters retry a refused connection with backoff until their timeout (10 s),
logging one line per attempt. Ours take the SDK exporter as it is and give it a
``requests.Session`` (a documented argument) that records every answer on a
:class:`DeliveryTracker` and, while the tracker is fail-fast, turns a refused connection or a
timeout into an error the SDK does not retry. A tracked gRPC span destination gets our own
:class:`GrpcSpanExporter` (the SDK's keeps each answer to itself); the SDK's gRPC metric exporter
retries nothing itself (see :func:`grpc_no_retries`), gets a capped timeout while fail-fast, and
the span exporter's credentials and compression (:func:`_grpc_link`).
"""

from __future__ import annotations

import errno
import logging
import math
import os
import stat
import threading
import time
from collections.abc import Mapping, Sequence
from importlib.metadata import entry_points
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
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otelhooks._export._report import DeliveryTracker
from otelhooks._loopback import trust_env_for
from otelhooks._worker import at_fork

__all__ = [
    "GiveUp",
    "GrpcSpanExporter",
    "describe_request_error",
    "grpc_channel_options",
    "grpc_no_retries",
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


_grpc_log = logging.getLogger(__name__)

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
        elif response.content:
            _count_rejected(tracker, response)
        return response


def _count_rejected(tracker: DeliveryTracker, response: requests.Response) -> None:
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
    try:
        if response.headers.get("Content-Type", "").startswith("application/json"):
            partial = response.json().get("partialSuccess") or {}
            count = int(partial.get("rejectedSpans" if spans else "rejectedDataPoints") or 0)
            message = str(partial.get("errorMessage") or "")
        elif spans:
            traces = ExportTraceServiceResponse.FromString(response.content).partial_success
            count, message = traces.rejected_spans, traces.error_message
        else:
            points = ExportMetricsServiceResponse.FromString(response.content).partial_success
            count, message = points.rejected_data_points, points.error_message
    except (DecodeError, ValueError, TypeError, AttributeError):
        return  # not an OTLP answer: nothing it says can be counted
    _rejected(tracker, count, noun, message)


def _rejected(tracker: DeliveryTracker, count: int, noun: str, message: str) -> None:
    if count > 0:
        tracker.rejected(count, f"{count} {noun} rejected: {_one_line(message)}")


def _one_line(text: str) -> str:
    """A collector's message as one report line."""
    return " ".join(text.split())[:200] or "no reason given"


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

    return H(session=_TrackedSession(tracker)) if tracker is not None else H()


class GrpcSpanExporter(SpanExporter):
    """An OTLP/gRPC span exporter that tells ``tracker`` what each answer said.

    The SDK's gRPC exporter keeps the answer to itself: a collector's ``partial_success`` went
    uncounted, and a batch over the collector's message limit (``RESOURCE_EXHAUSTED``) was
    retried whole, then lost whole, as "the exporter reported a failure". This one is made of the
    public pieces the SDK's is made of (the generated stub, the OTLP encoder, grpc's channels)
    and reads the same variables from ``settings``, each ``OTEL_EXPORTER_OTLP_TRACES_*`` before
    its ``OTEL_EXPORTER_OTLP_*``: ``ENDPOINT``, ``INSECURE``, ``HEADERS``, ``TIMEOUT`` (seconds,
    as the SDK reads it), ``COMPRESSION`` (``gzip``), ``CERTIFICATE``, ``CLIENT_KEY`` and
    ``CLIENT_CERTIFICATE``, and the credential provider (see :func:`_credentials`). It retries
    nothing: the span batch processor does.

    Args:
        tracker: records each failure and partial success (the exporter's timeout is capped by
            it while fail-fast).
        settings: the variables (the process's environment by default).
        endpoint: instead of the endpoint variables.
        headers: instead of the headers variables (names in lower case).
        timeout: seconds, instead of the timeout variables.
    """

    def __init__(
        self,
        tracker: DeliveryTracker,
        settings: Mapping[str, str] = os.environ,
        *,
        endpoint: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> None:
        import grpc
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub
        from opentelemetry.util.re import parse_env_headers

        def setting(name: str) -> str | None:
            return _setting(settings, "TRACES", name)

        self.tracker = tracker
        url = endpoint or setting("ENDPOINT") or "http://localhost:4317"
        if headers is None:
            headers = parse_env_headers(setting("HEADERS") or "", liberal=True)
        self._metadata = tuple(headers.items())
        self._timeout = timeout or float(setting("TIMEOUT") or 10)
        credentials, compression = _grpc_link(tracker, settings, "TRACES", url)
        options = grpc_channel_options(url).get("channel_options", ())
        target = urlsplit(url).netloc or url
        if credentials is None:
            self._channel = grpc.insecure_channel(target, options, compression)
        else:
            self._channel = grpc.secure_channel(target, credentials, options, compression)
        self._stub = TraceServiceStub(self._channel)  # type: ignore[no-untyped-call]
        self._closed = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Send ``spans`` in one request; the tracker hears why it failed or what was rejected."""
        import grpc
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        if self._closed:
            return SpanExportResult.FAILURE
        tracker = self.tracker
        request = encode_spans(spans)
        try:
            answer = self._stub.Export(
                request,
                metadata=self._metadata,
                timeout=tracker.timeout(self._timeout),
            )
        except grpc.RpcError as error:  # also a grpc.Call: its status and trailers
            reason = _record_status(
                tracker, error.code(), error.details(), error.trailing_metadata()
            )
        except (TypeError, ValueError) as error:  # metadata grpc will not send (text "-bin")
            reason = f"the request could not be made: {_one_line(str(error))}"
            tracker.error(reason, status=400)
        else:
            partial = answer.partial_success
            _rejected(tracker, partial.rejected_spans, "spans", partial.error_message)
            return SpanExportResult.SUCCESS
        # as the SDK's exporter logs it (summarised: see summarise_sdk_logs)
        _grpc_log.warning("Failed to export spans to %s: %s", tracker.destination, reason)
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        """Close the channel: later exports fail at once."""
        self._closed = True
        self._channel.close()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Nothing is buffered here."""
        return True


def _setting(settings: Mapping[str, str], signal: str, name: str) -> str | None:
    """``OTEL_EXPORTER_OTLP_{signal}_{name}``, else ``OTEL_EXPORTER_OTLP_{name}``."""
    return settings.get(f"OTEL_EXPORTER_OTLP_{signal}_{name}") or settings.get(
        f"OTEL_EXPORTER_OTLP_{name}"
    )


def _grpc_link(
    tracker: DeliveryTracker, settings: Mapping[str, str], signal: str, url: str
) -> tuple[Any, Any]:
    """The TLS credentials of a gRPC channel to ``url`` (``None``: plain) and its compression,
    read from ``settings`` for ``signal`` (``TRACES``, ``METRICS``) by the SDK's rules, except
    that nothing odd raises or waits (see :func:`_credentials`): a hook process or a script's
    ``configure()`` failed or hung on a setting the exporter could do without. The specification's
    ``none`` compression is taken (the SDK's exporter raised)."""
    import grpc

    scheme = urlsplit(url).scheme
    # the SDK's rule: https:// is TLS; else the variable says; else plain only for http://
    said = _setting(settings, signal, "INSECURE")
    if scheme == "https":
        insecure = False
    elif said is not None:
        insecure = said.strip().lower() == "true"
    else:
        insecure = scheme == "http"
    gzip = (_setting(settings, signal, "COMPRESSION") or "").strip().lower() == "gzip"
    compression = grpc.Compression.Gzip if gzip else grpc.Compression.NoCompression
    return (None if insecure else _credentials(tracker, settings, signal)), compression


def _credentials(tracker: DeliveryTracker, settings: Mapping[str, str], signal: str) -> Any:
    """The channel's TLS credentials: a credential provider's, as the SDK's exporter takes it
    (``OTEL_PYTHON_EXPORTER_OTLP_GRPC_[{signal}_]CREDENTIAL_PROVIDER`` names an entry point of
    ``opentelemetry_otlp_credential_provider``), else made of the TLS files. A provider that
    cannot be had is logged and recorded as the destination's last error (the SDK's exporter
    raised: in a hook process, an exit 1 after which the CLI runs the call a guard denies)."""
    import grpc

    name = settings.get(f"OTEL_PYTHON_EXPORTER_OTLP_GRPC_{signal}_CREDENTIAL_PROVIDER") or (
        settings.get("OTEL_PYTHON_EXPORTER_OTLP_GRPC_CREDENTIAL_PROVIDER")
    )
    if name:
        found = entry_points(group="opentelemetry_otlp_credential_provider", name=name)
        try:
            provided = next(iter(found)).load()()
            why = f"it gave a {type(provided).__name__}"
        except StopIteration:
            provided, why = None, "no such entry point"
        except Exception as exc:  # the plugin's own failure
            provided, why = None, _one_line(f"{type(exc).__name__}: {exc}")
        if isinstance(provided, grpc.ChannelCredentials):
            return provided
        reason = f"no credentials from the provider {name!r}: {why}"
        _grpc_log.warning(reason)
        tracker.error(reason)
    files = (_read_file(tracker, _setting(settings, signal, n)) for n in _TLS_FILES)
    return grpc.ssl_channel_credentials(*files)


# the client's trust roots, key and certificate chain, in grpc.ssl_channel_credentials' order
_TLS_FILES = ("CERTIFICATE", "CLIENT_KEY", "CLIENT_CERTIFICATE")


def _read_file(tracker: DeliveryTracker, path: str | None) -> bytes | None:
    """A TLS file's bytes. One that cannot be read is logged and recorded as the destination's
    last error, and the channel trusts the system's roots, as the SDK's exporter does. A FIFO
    (or a device, or a file past 4 MiB) is refused unread: a hook process reading it waited for
    a writer past its answer time, and the agent ran the call its guard denied."""
    if not path:
        return None
    try:
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise OSError(errno.EINVAL, "not a regular file")
            data = handle.read(_MAX_TLS_FILE + 1)
        if len(data) > _MAX_TLS_FILE:
            raise OSError(errno.EFBIG, "larger than 4 MiB")
    except OSError as exc:
        reason = f"cannot read {path}: {exc.strerror or exc}"
        _grpc_log.warning("%s (the system's trust roots are used)", reason)
        tracker.error(reason)
        return None
    return data


_MAX_TLS_FILE = 4 << 20


def _record_status(tracker: DeliveryTracker, code: Any, details: str | None, trailers: Any) -> str:
    """Tell ``tracker`` of a failed gRPC export, in the terms of the HTTP answer each status
    stands for in the OTLP specification, so that one rule (:func:`permanent_status`, the 413
    split) decides both: ``RESOURCE_EXHAUSTED`` without ``RetryInfo`` is a request too large
    (never retried: sent again in halves), the codes the specification does not retry are
    permanent, and a collector that cannot be reached or did not answer in time is dead while
    fail-fast. Returns the reason recorded."""
    name = str(code.name)
    retry_later = any(key == "google.rpc.retryinfo-bin" for key, _ in trailers or ())
    status = _AS_HTTP.get(name, None if name in _RETRYABLE else 400)
    if name == "RESOURCE_EXHAUSTED" and retry_later:
        status = 429
    reason = f"{name}: {_one_line(details)}" if details else name
    tracker.error(reason, status=status, dead=name in ("UNAVAILABLE", "DEADLINE_EXCEEDED"))
    return reason


# The gRPC statuses the OTLP specification retries (RESOURCE_EXHAUSTED only with RetryInfo).
_RETRYABLE = frozenset(
    ("CANCELLED", "DEADLINE_EXCEEDED", "ABORTED", "OUT_OF_RANGE", "UNAVAILABLE", "DATA_LOSS")
)
_AS_HTTP = {"RESOURCE_EXHAUSTED": 413, "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403}


def otlp_metric_reader(tracker: DeliveryTracker | None = None) -> MetricReader:
    """A periodic reader with the OTLP metric exporter the environment asks for (each export
    with data points counted on ``tracker``)."""
    grpc = _protocol("METRICS") == "grpc"
    if tracker is not None:
        tracker.destination = _endpoint("METRICS", "v1/metrics", grpc)
    if grpc:
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as G

        if tracker is None:
            return PeriodicExportingMetricReader(G())

        class CountedGrpc(_CountsExports, G):
            pass

        return PeriodicExportingMetricReader(CountedGrpc(tracker, **_grpc_options(tracker)))
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as H

    if tracker is None:
        return PeriodicExportingMetricReader(H())

    class CountedHttp(_CountsExports, H):
        pass

    return PeriodicExportingMetricReader(CountedHttp(tracker, session=_TrackedSession(tracker)))


def grpc_channel_options(url: str) -> dict[str, Any]:
    """The ``channel_options`` argument of a gRPC exporter of ``url``: gRPC takes ``http_proxy``
    too, and a collector on this machine is reached directly (``trust_env_for``)."""
    return {} if trust_env_for(url) else {"channel_options": (("grpc.enable_http_proxy", 0),)}


def grpc_no_retries() -> dict[str, Any]:
    """The ``retryable_error_codes`` argument of a tracked gRPC exporter: none.

    The SDK's exporter retries a failed request with backoff until its timeout (10 s) and
    hears of a shutdown only once the export is over: a script's exit with the collector down
    waited its whole shutdown deadline (0.01 s over OTLP/HTTP). The span batch processor
    retries a failed batch itself and stops at the shutdown; a metric export that fails is
    counted, and the next one carries the cumulative sums. An empty list is the SDK's default
    set, so the codes retried are the one no failure has.
    """
    from grpc import StatusCode

    return {"retryable_error_codes": (StatusCode.OK,)}


def _grpc_options(tracker: DeliveryTracker | None) -> dict[str, Any]:
    """The gRPC metric exporter's options for a tracked destination: no retries of its own
    (:func:`grpc_no_retries`), no proxy for a loopback one, and the credentials and compression
    the span exporter's rule gives (:func:`_grpc_link`)."""
    if tracker is None:
        return {}
    credentials, compression = _grpc_link(tracker, os.environ, "METRICS", tracker.destination)
    options: dict[str, Any] = {
        **grpc_no_retries(),
        **grpc_channel_options(tracker.destination),
        # ours, so that the SDK's exporter reads no TLS file or provider itself
        "insecure": credentials is None,
        "credentials": credentials,
        "compression": compression,
    }
    if tracker.fail_fast:
        options["timeout"] = tracker.timeout(None)
    return options


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
    _grpc_log.name,
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
