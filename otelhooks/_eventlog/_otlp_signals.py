"""``POST /v1/logs`` and ``POST /v1/metrics``: OTLP/HTTP logs and metrics, protobuf or JSON.

An agent that exports all three signals to one endpoint (Claude Code does, with
``OTEL_EXPORTER_OTLP_ENDPOINT``) needs the server to accept logs and metrics as well as traces.
Bodies are handled like ``/v1/traces`` (bounded before and after gunzip, chunked or not, decoded
on a worker thread); each request becomes plain records handed to the sinks:

- a log record: :class:`ReceivedLog` (event name, attributes, trace and span ids, resource);
- a metric data point: :class:`ReceivedPoint` (metric name, attributes, value, resource).

Answers follow OTLP/HTTP: 200 with an empty ``Export*ServiceResponse`` once every sink kept the
records (with ``partialSuccess`` counting those a sink would not keep, e.g. past a bound); 503
with ``Retry-After`` when a sink could not (the store is down: the client sends the request
again, so a sink must take a record it kept already without counting it twice); 400 for a
body that does not decode, 413 past the bound, 415 for another media type or encoding.

At most ``max_busy`` requests of a route are in progress, on the route's own threads (never
asyncio's default pool, which ``/v1/events`` and the approval inbox use: a stalled store holds
them). A request past them waits for a thread, the **smallest body first**, at most
``max_wait_s`` and with at most ``max_waiting`` others (one more refuses the largest of them
all); then 503 with ``Retry-After``. Anything holding the ingest token can keep the threads busy
with large or slow requests: refused at once, as they were, a Claude Code run's few cost records
were refused on every retry by its exporter, and its spend never reached the budget guard; now
they pass every large request waiting, and wait for one thread at most. Bodies past
:data:`SERIAL_DECODE_BYTES` are decoded one at a time in the process, with those of
``/v1/traces`` (:func:`~otelhooks._eventlog._ingest.decoding`): four 15 MiB OTLP/JSON bodies
decoded at once held the event loop, every hook answer with it, for 10-14 s.
"""

from __future__ import annotations

import asyncio
import base64
import heapq
import itertools
import json
import re
import zlib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

import structlog

from otelhooks._eventlog._asgi import (
    Receive,
    Scope,
    Send,
    otlp_request_format,
    read_body,
    respond,
    send_otlp_error,
)
from otelhooks._eventlog._ingest import (
    DEFAULT_MAX_BODY_BYTES,
    RETRY_AFTER_S,
    SERIAL_DECODE_BYTES,
    _gunzip,
    decoding,
)
from otelhooks._eventlog._otlp import JSON, PROTOBUF, OtlpDecodeError

__all__ = [
    "SERIAL_DECODE_BYTES",
    "LogSink",
    "MetricSink",
    "NotKept",
    "OtlpSignalIngest",
    "ReceivedLog",
    "ReceivedPoint",
    "decode_logs",
    "decode_metrics",
]

_log = structlog.get_logger("otelhooks")
_HEX = re.compile(r"[0-9a-fA-F]*")


@dataclass(frozen=True, slots=True)
class ReceivedLog:
    """One received OTLP log record.

    ``event_name`` is the record's ``event_name`` field, else its ``event.name`` attribute.
    """

    event_name: str
    attributes: dict[str, Any]
    body: Any
    time_unix_nano: int
    trace_id: int
    span_id: int
    severity_text: str = ""
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str = ""


@dataclass(frozen=True, slots=True)
class ReceivedPoint:
    """One received OTLP metric data point (sum, gauge: the value; histograms: the sum)."""

    metric: str
    attributes: dict[str, Any]
    value: float
    time_unix_nano: int
    resource: dict[str, Any] = field(default_factory=dict)


class NotKept(Exception):
    """A sink could not keep the request's records (answer 503: the client sends them again)."""


# a sink returns how many of the records it would not keep (None: it kept them all)
LogSink = Callable[[Sequence[ReceivedLog]], int | None]
MetricSink = Callable[[Sequence[ReceivedPoint]], int | None]


def _ids_to_base64(message: dict[str, Any], fields: Iterable[str]) -> None:
    for name in fields:
        value = message.get(name)
        if isinstance(value, str) and len(value) in (16, 32) and _HEX.fullmatch(value):
            message[name] = base64.b64encode(bytes.fromhex(value)).decode()


def _parse(body: bytes, content_type: str, request: Any, what: str) -> None:
    from google.protobuf import json_format
    from google.protobuf.message import DecodeError

    if content_type == PROTOBUF:
        try:
            request.ParseFromString(body)
        except (DecodeError, RecursionError) as exc:
            raise OtlpDecodeError(f"not an OTLP protobuf {what} request: {exc}") from None
        return
    try:
        data = json.loads(body)
        if not isinstance(data, dict):
            raise ValueError("the body is not a JSON object")
        for rl in data.get("resourceLogs") or ():
            for sl in rl.get("scopeLogs") or ():
                for record in sl.get("logRecords") or ():
                    _ids_to_base64(record, ("traceId", "spanId"))
        json_format.ParseDict(data, request, ignore_unknown_fields=True)
    except (ValueError, TypeError, AttributeError, json_format.ParseError) as exc:
        raise OtlpDecodeError(f"not an OTLP/JSON {what} request: {exc}") from None
    except RecursionError:
        # json.loads recurses once per nesting level: a deep body is the client's error
        raise OtlpDecodeError(f"not an OTLP/JSON {what} request: nested too deeply") from None


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, kind)


def _attributes(key_values: Iterable[Any]) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in key_values}


def decode_logs(body: bytes, content_type: str) -> list[ReceivedLog]:
    """Decode an ``ExportLogsServiceRequest`` into its log records.

    Raises:
        OtlpDecodeError: the body does not parse.
    """
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    request = ExportLogsServiceRequest()
    _parse(body, content_type, request, "logs")
    out: list[ReceivedLog] = []
    for rl in request.resource_logs:
        resource = _attributes(rl.resource.attributes)
        for sl in rl.scope_logs:
            for record in sl.log_records:
                attributes = _attributes(record.attributes)
                name = record.event_name or str(attributes.get("event.name") or "")
                out.append(
                    ReceivedLog(
                        event_name=name,
                        attributes=attributes,
                        body=_value(record.body),
                        time_unix_nano=record.time_unix_nano or record.observed_time_unix_nano,
                        trace_id=int.from_bytes(record.trace_id, "big") if record.trace_id else 0,
                        span_id=int.from_bytes(record.span_id, "big") if record.span_id else 0,
                        severity_text=record.severity_text,
                        resource=resource,
                        scope=sl.scope.name,
                    )
                )
    return out


def decode_metrics(body: bytes, content_type: str) -> list[ReceivedPoint]:
    """Decode an ``ExportMetricsServiceRequest`` into its data points.

    Raises:
        OtlpDecodeError: the body does not parse.
    """
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
    )

    request = ExportMetricsServiceRequest()
    _parse(body, content_type, request, "metrics")
    out: list[ReceivedPoint] = []
    for rm in request.resource_metrics:
        resource = _attributes(rm.resource.attributes)
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                kind = metric.WhichOneof("data")
                if kind is None:
                    continue
                for point in getattr(metric, kind).data_points:
                    if kind in ("sum", "gauge"):
                        number = point.WhichOneof("value")
                        value = float(getattr(point, number)) if number else 0.0
                    else:  # histogram, exponential_histogram, summary: the sum
                        value = float(point.sum)
                    out.append(
                        ReceivedPoint(
                            metric.name,
                            _attributes(point.attributes),
                            value,
                            point.time_unix_nano,
                            resource,
                        )
                    )
    return out


def _response(kind: Literal["logs", "metrics"], content_type: str, rejected: int) -> bytes:
    message = (
        f"{kind} not kept (past a bound, or refused); see otelhooks.dropped" if rejected else ""
    )
    if content_type != PROTOBUF:
        if not rejected:
            return b"{}"
        field = "rejectedLogRecords" if kind == "logs" else "rejectedDataPoints"
        return json.dumps(
            {"partialSuccess": {field: str(rejected), "errorMessage": message}}
        ).encode()
    if kind == "logs":
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
            ExportLogsServiceResponse,
        )

        logs = ExportLogsServiceResponse()
        if rejected:
            logs.partial_success.rejected_log_records = rejected
            logs.partial_success.error_message = message
        return logs.SerializeToString()
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceResponse,
    )

    metrics = ExportMetricsServiceResponse()
    if rejected:
        metrics.partial_success.rejected_data_points = rejected
        metrics.partial_success.error_message = message
    return metrics.SerializeToString()


class OtlpSignalIngest:
    """The ASGI handler of ``POST /v1/logs`` or ``POST /v1/metrics`` (auth checked by the app).

    Args:
        kind: ``logs`` or ``metrics``.
        sinks: called with each request's records, in order; a failing sink is logged, the
            others still run, and the answer is 503 (the request is sent again to all of them);
            what a sink returns (records it would not keep) is the answer's ``partialSuccess``.
        max_body_bytes: largest body, before and after gunzip (else 413).
        max_busy: requests in progress at most (each on a thread of the route's).
        max_waiting: requests waiting for a thread at most (one more refuses the largest).
        max_wait_s: how long a request waits for a thread before its 503 with ``Retry-After``.

    Example:
        >>> seen = []
        >>> ingest = OtlpSignalIngest("logs", [seen.extend])
        >>> ingest.ingest(b'{"resourceLogs": []}', "application/json")
        0
    """

    def __init__(
        self,
        kind: Literal["logs", "metrics"],
        sinks: Sequence[Callable[[Any], int | None]] = (),
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_busy: int = 4,
        max_waiting: int = 16,
        max_wait_s: float = 5.0,
    ) -> None:
        self.kind = kind
        self.sinks = list(sinks)
        self.max_body_bytes = max_body_bytes
        self.max_busy = max_busy
        self.max_waiting = max_waiting
        self.max_wait_s = max_wait_s
        self.received = 0
        # changed on the event loop only: requests on a thread, and those waiting for one by
        # (body size, arrival), each woken with its thread handed over
        self._busy = 0
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._arrivals = itertools.count()
        self._pool: ThreadPoolExecutor | None = None

    def ingest(self, body: bytes, content_type: str) -> int:
        """Decode ``body`` and hand its records to the sinks; returns how many were not kept
        (the most any sink would not keep)."""
        # four large bodies decoded at once held the event loop, every hook answer with it,
        # for 10-14 s: one at a time in the process
        with decoding(body):
            records: Sequence[Any] = (
                decode_logs(body, content_type)
                if self.kind == "logs"
                else decode_metrics(body, content_type)
            )
        self.received += len(records)
        failed = rejected = 0
        for sink in self.sinks:
            try:
                rejected = max(rejected, sink(records) or 0)
            except Exception:
                _log.exception("OTLP sink failed", signal=self.kind)
                failed += 1
        if failed:
            raise NotKept(f"{self.kind} not kept ({failed} sink(s) failed): send them again")
        return rejected

    def close(self) -> None:
        """Let the route's threads end once their requests are answered."""
        if self._pool is not None:
            self._pool.shutdown(wait=False)

    async def _thread_for(self, size: int) -> None:
        """Take one of the route's threads, waiting (smallest body first) while all are busy.

        Raises:
            NotKept: none came within ``max_wait_s``, or larger waiters filled the queue.
        """
        if self._busy < self.max_busy and not self._waiting:
            self._busy += 1
            return
        busy = f"{self._busy} {self.kind} requests in progress: send it again"
        if len(self._waiting) >= self.max_waiting:
            largest = max(self._waiting)
            if largest[0] <= size:
                raise NotKept(busy)
            self._waiting.remove(largest)
            heapq.heapify(self._waiting)
            largest[2].set_exception(NotKept(busy))
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (size, next(self._arrivals), turn)
        heapq.heappush(self._waiting, entry)
        try:
            await asyncio.wait_for(asyncio.shield(turn), self.max_wait_s)
        except (TimeoutError, asyncio.CancelledError) as exc:
            handed = turn.done() and not turn.cancelled() and turn.exception() is None
            if not turn.done():
                turn.cancel()
                self._waiting.remove(entry)
                heapq.heapify(self._waiting)
            if isinstance(exc, TimeoutError):
                if handed:
                    return  # the thread came as the wait ended
                raise NotKept(busy) from None
            if handed:
                self._hand_over()  # the client went away as its thread came
            raise

    def _hand_over(self) -> None:
        """Give a finished request's thread to the smallest waiting one, else free it."""
        while self._waiting:
            _, _, turn = heapq.heappop(self._waiting)
            if not turn.done():
                turn.set_result(None)
                return
        self._busy -= 1

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request_format = await otlp_request_format(scope, send, (PROTOBUF, JSON))
        if request_format is None:
            return
        ctype, encoding = request_format
        limit = self.max_body_bytes
        data = await read_body(receive, limit)
        try:
            if data and encoding == "gzip":
                data = _gunzip(data, limit)
            if data is None:
                await send_otlp_error(send, 413, ctype, "too_large", f"at most {limit} bytes")
                return
            await self._thread_for(len(data))
            try:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.max_busy, f"otelhooks-{self.kind}")
                loop = asyncio.get_running_loop()
                rejected = await loop.run_in_executor(self._pool, self.ingest, data, ctype)
            finally:
                self._hand_over()
        except (OtlpDecodeError, zlib.error, RecursionError) as exc:
            await send_otlp_error(send, 400, ctype, "bad_request", str(exc))
            return
        except NotKept as exc:
            retry = [(b"retry-after", str(RETRY_AFTER_S).encode())]
            await send_otlp_error(send, 503, ctype, "not_kept", str(exc), retry)
            return
        await respond(send, 200, _response(self.kind, ctype, rejected), ctype.encode())
