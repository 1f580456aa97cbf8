"""The ``requests.Session`` our OTLP/HTTP exporters send through (see :mod:`._otlp`).

Its own module so that requests (and urllib3) load only with an OTLP/HTTP exporter: a hook
process that exports nowhere, or only to a file, never imports them.
"""

from __future__ import annotations

import json
import sys
from typing import Any
from urllib.parse import urljoin

import requests

from otelhooks._export._report import DeliveryTracker, one_line, public_url, record_rejected
from otelhooks._loopback import trust_env_for
from otelhooks._worker import at_fork

__all__ = ["GiveUp", "describe_request_error", "tracked_session"]


class GiveUp(Exception):
    """Raised inside the SDK's retry loop: a type it does not retry."""


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
