"""OTLP over gRPC: our span exporter, and the SDK's metric exporter sending through our link.

The SDK's gRPC exporters keep each answer to themselves (a ``partial_success``, the status of a
batch over the collector's message limit), so spans go through :class:`GrpcSpanExporter`, made
of the same public pieces, and metrics through the SDK's exporter (the periodic reader takes its
temporality and aggregation preferences from it) whose exports go through the same
:class:`GrpcLink` (:func:`grpc_metric_exporter`).
"""

from __future__ import annotations

import errno
import logging
import math
import os
import stat
from collections.abc import Mapping, Sequence
from importlib.metadata import entry_points
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, MetricsData
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otelhooks._export._report import DeliveryTracker, one_line, record_rejected
from otelhooks._loopback import trust_env_for

__all__ = [
    "GRPC_LOGGER",
    "GrpcLink",
    "GrpcSpanExporter",
    "grpc_channel_options",
    "grpc_metric_exporter",
    "otlp_timeout",
]

GRPC_LOGGER = __name__  # its lines are summarised with the SDK exporters' (summarise_sdk_logs)
_grpc_log = logging.getLogger(GRPC_LOGGER)


class GrpcLink:
    """A gRPC channel to an OTLP collector, and the requests sent on it, told to ``tracker``.

    It reads the variables the SDK's exporters read from ``settings``, each
    ``OTEL_EXPORTER_OTLP_{signal}_*`` before its ``OTEL_EXPORTER_OTLP_*``: ``ENDPOINT``,
    ``INSECURE``, ``HEADERS``, ``TIMEOUT`` (:func:`otlp_timeout`), ``COMPRESSION`` (``gzip``),
    ``CERTIFICATE``, ``CLIENT_KEY`` and ``CLIENT_CERTIFICATE``, and the credential provider
    (see :func:`_credentials`). It retries nothing: the span batch processor does, and the
    next metric export carries the cumulative sums.

    Args:
        tracker: records each failure (the timeout is capped by it while fail-fast).
        settings: the variables.
        signal: ``TRACES`` or ``METRICS``.
        endpoint: instead of the endpoint variables.
        headers: instead of the headers variables (names in lower case).
        timeout: seconds, instead of the timeout variables.
    """

    def __init__(
        self,
        tracker: DeliveryTracker,
        settings: Mapping[str, str],
        signal: str,
        *,
        endpoint: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> None:
        import grpc
        from opentelemetry.util.re import parse_env_headers

        self.tracker = tracker
        url = endpoint or _setting(settings, signal, "ENDPOINT") or "http://localhost:4317"
        if headers is None:
            headers = parse_env_headers(_setting(settings, signal, "HEADERS") or "", liberal=True)
        self._metadata = tuple(headers.items())
        self.timeout = otlp_timeout(settings, signal) if timeout is None else timeout
        self.credentials, self.compression = _grpc_link(tracker, settings, signal, url)
        options = grpc_channel_options(url).get("channel_options", ())
        target = urlsplit(url).netloc or url
        credentials, compression = self.credentials, self.compression
        if credentials is None:
            self.channel = grpc.insecure_channel(target, options, compression)
        else:
            self.channel = grpc.secure_channel(target, credentials, options, compression)
        self._closed = False

    def send(self, call: Any, request: Any, what: str) -> Any:
        """``call``'s answer to ``request`` (``what``: "spans"), or ``None`` when there is none:
        the tracker heard why, and a line is logged as the SDK's exporter logs it (summarised:
        see summarise_sdk_logs)."""
        import grpc

        if self._closed:
            return None
        tracker = self.tracker
        try:
            timeout = tracker.timeout(self.timeout)
            return call(request, metadata=self._metadata, timeout=timeout)
        except grpc.RpcError as error:  # also a grpc.Call: its status and trailers
            reason = _record_status(
                tracker, error.code(), error.details(), error.trailing_metadata(), self.compression
            )
        except (TypeError, ValueError) as error:  # metadata grpc will not send (text "-bin")
            reason = f"the request could not be made: {one_line(str(error))}"
            tracker.error(reason, status=400)
        _grpc_log.warning("Failed to export %s to %s: %s", what, tracker.destination, reason)
        return None

    def close(self) -> None:
        """Close the channel: later requests fail at once."""
        self._closed = True
        self.channel.close()


class GrpcSpanExporter(SpanExporter):
    """An OTLP/gRPC span exporter that tells ``tracker`` what each answer said.

    The SDK's gRPC exporter keeps the answer to itself: a collector's ``partial_success`` went
    uncounted, and a batch over the collector's message limit (``RESOURCE_EXHAUSTED``) was
    retried whole, then lost whole, as "the exporter reported a failure". This one is made of the
    public pieces the SDK's is made of (the generated stub, the OTLP encoder, grpc's channels)
    and reads the same variables (:class:`GrpcLink`, ``TRACES``).

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
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

        self.tracker = tracker
        self._link = GrpcLink(
            tracker, settings, "TRACES", endpoint=endpoint, headers=headers, timeout=timeout
        )
        self._stub = TraceServiceStub(self._link.channel)  # type: ignore[no-untyped-call]

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Send ``spans`` in one request; the tracker hears why it failed or what was rejected."""
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        try:
            request = encode_spans(spans)
        except Exception as exc:  # what encodable() does not repair: said, never raised
            # A raise here lost the batch as an error of the exporter loop, with no reason.
            reason = f"the spans could not be encoded: {one_line(f'{type(exc).__name__}: {exc}')}"
            _grpc_log.warning("Failed to export spans to %s: %s", self.tracker.destination, reason)
            self.tracker.error(reason, status=400)
            return SpanExportResult.FAILURE
        answer = self._link.send(self._stub.Export, request, "spans")
        if answer is None:
            return SpanExportResult.FAILURE
        partial = answer.partial_success
        record_rejected(self.tracker, partial.rejected_spans, "spans", partial.error_message)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """Close the channel: later exports fail at once."""
        self._link.close()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Nothing is buffered here."""
        return True


def _setting(settings: Mapping[str, str], signal: str, name: str) -> str | None:
    """``OTEL_EXPORTER_OTLP_{signal}_{name}``, else ``OTEL_EXPORTER_OTLP_{name}``."""
    return settings.get(f"OTEL_EXPORTER_OTLP_{signal}_{name}") or settings.get(
        f"OTEL_EXPORTER_OTLP_{name}"
    )


def otlp_timeout(settings: Mapping[str, str], signal: str) -> float:
    """Seconds an OTLP exporter of ``signal`` (``TRACES``, ``METRICS``) waits for an answer, the
    one rule of all of otelhooks' OTLP exporters: ``OTEL_EXPORTER_OTLP_{signal}_TIMEOUT``, else
    ``OTEL_EXPORTER_OTLP_TIMEOUT`` (seconds, as the Python SDK reads them), else 10.

    ``0`` is the specification's "no limit", as long as it lets an implementation take for it
    (2^31-1 ms, also the longest wait); a value that is not a number, negative or not finite is
    logged and the default used, as it says. Before, ``0`` and negative values failed every
    export at once in one exporter and waited for ever in another, and a word raised in
    ``configure()``. A command's or hook process's cap (fail-fast) and the shutdown deadline
    still bound every request (:meth:`DeliveryTracker.timeout`): no setting makes a
    short-lived process wait on a stalled collector."""
    raw = (_setting(settings, signal, "TIMEOUT") or "").strip()
    if not raw:
        return _DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < math.inf:
        _grpc_log.warning("invalid OTLP timeout %r, using %g s", raw, _DEFAULT_TIMEOUT_S)
        return _DEFAULT_TIMEOUT_S
    # past it (1e12 s) gRPC's deadline overflowed: every export failed at once
    return min(value or _NO_LIMIT_S, _NO_LIMIT_S)


_DEFAULT_TIMEOUT_S = 10.0
_NO_LIMIT_S = (2**31 - 1) / 1000  # the specification's stand-in for no limit


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
            provided, why = None, one_line(f"{type(exc).__name__}: {exc}")
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


def _record_status(
    tracker: DeliveryTracker, code: Any, details: str | None, trailers: Any, compression: Any
) -> str:
    """Tell ``tracker`` of a failed gRPC export, in the terms of the HTTP answer each status
    stands for in the OTLP specification, so that one rule (:func:`permanent_status`, the 413
    split) decides both: ``RESOURCE_EXHAUSTED`` without ``RetryInfo`` is a request too large
    (never retried: sent again in halves), and so is tonic's ``OUT_OF_RANGE`` "decoded message
    length too large" (rotel's, any Rust collector's: retried whole as OUT_OF_RANGE is, the
    batch was lost whole); the codes the specification does not retry are permanent, and a
    collector that cannot be reached or did not answer in time is dead while fail-fast. An
    answer too large for our client to read (``compression``: the request's) is none of these.
    Returns the reason recorded."""
    import grpc

    name = str(code.name)
    text = details or ""
    retry_later = any(key == "google.rpc.retryinfo-bin" for key, _ in trailers or ())
    status = _AS_HTTP.get(name, None if name in _RETRYABLE else 400)
    if name == "RESOURCE_EXHAUSTED" and retry_later:
        status = 429
    elif name == "OUT_OF_RANGE" and _TONIC_TOO_LARGE in text:
        status = 413
    elif _ANSWER_TOO_LARGE in text or (
        # a request not compressed was not decompressed: the answer was (a gzip bomb)
        _DECOMPRESSED_TOO_LARGE in text and compression == grpc.Compression.NoCompression
    ):
        # The collector's answer, past what our client reads (4 MiB): the request was probably
        # kept, so it is neither sent again nor in halves (each half a copy of its spans).
        status = 400
    reason = f"{name}: {one_line(details)}" if details else name
    tracker.error(reason, status=status, dead=name in ("UNAVAILABLE", "DEADLINE_EXCEEDED"))
    return reason


# The gRPC statuses the OTLP specification retries (RESOURCE_EXHAUSTED only with RetryInfo).
_RETRYABLE = frozenset(
    ("CANCELLED", "DEADLINE_EXCEEDED", "ABORTED", "OUT_OF_RANGE", "UNAVAILABLE", "DATA_LOSS")
)
_AS_HTTP = {"RESOURCE_EXHAUSTED": 413, "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403}
# tonic's words for a request over its decoding limit (grpc-go and grpc's core answer
# RESOURCE_EXHAUSTED); any other OUT_OF_RANGE stays retried, as the specification says
_TONIC_TOO_LARGE = "decoded message length too large"
# gRPC's core's words for an answer too large for our client to read (the second is also a
# server's for a compressed request too large once decompressed)
_ANSWER_TOO_LARGE = "CLIENT: Received message larger than max"
_DECOMPRESSED_TOO_LARGE = "Decompressed message larger than max"


def grpc_channel_options(url: str) -> dict[str, Any]:
    """The ``channel_options`` argument of a gRPC exporter of ``url``: gRPC takes ``http_proxy``
    too, and a collector on this machine is reached directly (``trust_env_for``)."""
    return {} if trust_env_for(url) else {"channel_options": (("grpc.enable_http_proxy", 0),)}


def grpc_metric_exporter(tracker: DeliveryTracker, counted: type[Any]) -> MetricExporter:
    """The gRPC metric exporter of a tracked destination, ``counted`` first in its bases.

    The SDK's exporter is its base: the periodic reader takes its temporality and aggregation
    preferences from it, and they are the SDK's own, from its constructor (the
    ``OTEL_EXPORTER_OTLP_METRICS_*`` variables included). Each export goes through a
    :class:`GrpcLink` (``METRICS``), as spans do: the SDK's keeps the answer to itself, so a
    collector's ``partial_success`` went uncounted and each failure was "the exporter reported
    a failure"; it also retried with backoff until its timeout, deaf to a shutdown. The SDK's
    channel is given the link's credentials (so it reads no TLS file or provider itself) and
    is never used."""
    from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
    from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2_grpc import (
        MetricsServiceStub,
    )

    link = GrpcLink(tracker, os.environ, "METRICS")

    class Linked(OTLPMetricExporter):
        def export(
            self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
        ) -> MetricExportResult:
            answer = link.send(stub.Export, encode_metrics(metrics_data), "metrics")
            if answer is None:
                return MetricExportResult.FAILURE
            partial = answer.partial_success
            count, message = partial.rejected_data_points, partial.error_message
            record_rejected(tracker, count, "data points", message)
            return MetricExportResult.SUCCESS

        def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
            link.close()
            super().shutdown(timeout_millis, **kwargs)

    stub = MetricsServiceStub(link.channel)  # type: ignore[no-untyped-call]

    class Counted(counted, Linked):  # type: ignore[misc]
        pass

    credentials = link.credentials
    made: Any = Counted  # ``counted``'s constructor: the tracker, then the SDK's options
    exporter: MetricExporter = made(
        tracker,
        insecure=credentials is None,
        credentials=credentials,
        compression=link.compression,
        timeout=link.timeout,
    )
    return exporter
