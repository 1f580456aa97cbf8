"""``POST /v1/traces``: an OTLP/HTTP trace receiver that feeds span processors.

The body (``application/x-protobuf`` or ``application/json``, optionally
``Content-Encoding: gzip``) is bounded before and after inflating, decoded on a worker thread,
and each span is handed to ``on_end`` of every processor in order, each processor's failure
logged and isolated. A processor that joins spans by trace (:class:`PreparesBatch`: a coding
agent naming its session on one span of a trace) is shown the request's spans first.

The receiver never acknowledges what it will not keep:

- Before each span it waits (up to ``admission_timeout_s`` without progress) for room in the
  observer queue of every :class:`~otelhooks.HookSpanProcessor`, instead of letting a full queue
  drop what it would then acknowledge. Requests are taken one at a time, so that room is theirs.
- When no span of a request could be admitted, the answer is ``503`` with ``Retry-After``
  (retryable: nothing of the request was taken). When the queue stayed full part-way, the
  answer is ``200`` with OTLP ``partialSuccess.rejectedSpans`` counting the spans not taken
  (plus ids of the wrong length, and any event the queues still lost).
- With a durable event log, ``200`` means committed: the observers have run and the log's
  transaction is on disk (survives ``kill -9`` of the server). A commit that does not finish
  within ``commit_timeout_s`` is a ``503``: the spans may still be stored, so a retry can
  duplicate records (at-least-once; a PostgreSQL store skips records it already holds). A
  commit that failed while the request was handled (the store is down or restarting) is a
  ``503`` too: its records were not stored, and the client's retry stores them.

Every span not taken is counted in ``otelhooks.dropped{otelhooks.drop.source="otlp_receiver"}``
with reason ``queue_full`` (also for a ``503``: the client may send them again) or ``invalid``.
A failure's body is a ``google.rpc.Status`` in the request's encoding (see
:mod:`otelhooks._eventlog._otlp_status`). Other answers: 400 for an undecodable body (nesting
too deep included), 413 past the size bound, 415 for another media type or encoding. A body
that does not arrive in time is the server's to cut (``serve --body-timeout``, every route).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import zlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Final, Protocol, runtime_checkable

import structlog
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from otelhooks._eventlog._asgi import (
    Receive,
    Scope,
    Send,
    otlp_request_format,
    read_body,
    respond,
    send_otlp_error,
)
from otelhooks._eventlog._model import EventLog
from otelhooks._eventlog._otlp import JSON, PROTOBUF, OtlpDecodeError, decode_traces
from otelhooks._eventlog._otlp import encode_response as otlp_response
from otelhooks._metrics import AgentMetrics
from otelhooks._processor import HookSpanProcessor

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "SERIAL_DECODE_BYTES",
    "NotCommitted",
    "OtlpIngest",
    "PreparesBatch",
    "QueueFull",
    "decoding",
]

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
RETRY_AFTER_S = 1
#: bodies larger than this are decoded one at a time in the process, whichever route took them
SERIAL_DECODE_BYTES: Final = 1024 * 1024
# one for every route (traces, logs, metrics) and every server of the process: what it bounds,
# the event loop's share of the interpreter, is the process's. Three 15 MiB bodies decoded at
# once, one per route, delayed a hook's answer by 5-8 s where one at a time took about 1 s
_DECODING_LARGE = threading.Lock()


def decoding(body: bytes) -> contextlib.AbstractContextManager[object]:
    """Where ``body`` is decoded: in turn with every other large body of the process (a large
    body becomes millions of Python objects, and the collector's passes over them and the
    threads' turns hold the event loop); a small one (a run's cost records) waits for none."""
    return _DECODING_LARGE if len(body) > SERIAL_DECODE_BYTES else contextlib.nullcontext()


# Room a span needs in an observer queue: one event per matching hook set (a span maps to at
# most a few events). The exact count of anything still lost is added to the rejected count.
_ROOM_PER_SPAN = 4

_log = structlog.get_logger("otelhooks")


@runtime_checkable
class PreparesBatch(Protocol):
    """A span processor shown each request's spans before their ``on_end`` calls."""

    def prepare(self, spans: Sequence[ReadableSpan]) -> None: ...


class QueueFull(Exception):
    """No span of the request could be queued within the admission timeout (answer 503)."""


class NotCommitted(Exception):
    """The durable log did not commit the request's records within the commit timeout."""


class OtlpIngest:
    """Receives OTLP trace requests and runs ``span_processors`` on their spans.

    Args:
        span_processors: what each span is handed to (``on_end``), in order.
        max_body_bytes: largest body, before and after gunzip (else 413).
        logs: the event logs the processors fill; with a durable one, an answer waits for the
            commit of what the request produced.
        admission_timeout_s: how long a span waits for room in a full observer queue (the
            wait restarts whenever room appears).
        commit_timeout_s: how long a durable commit may take before the answer is 503.
        metrics: where rejections are counted; the first HookSpanProcessor's when omitted.

    Example:
        >>> import json
        >>> from otelhooks import AgentEvents, AgentEventsConfig, HookSpanProcessor, SqliteEventLog
        >>> from otelhooks._eventlog._ingest import OtlpIngest
        >>> processor = HookSpanProcessor()
        >>> events = AgentEvents(AgentEventsConfig(name="shop"), log=SqliteEventLog("events.db"))
        >>> hooks = events.install(processor)
        >>> tool = [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
        ...         {"key": "gen_ai.tool.name", "value": {"stringValue": "order_create"}}]
        >>> span = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "t", "attributes": tool}
        >>> request_bytes = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})
        >>> ingest = OtlpIngest([processor], logs=[events.log])
        >>> ingest.ingest(request_bytes.encode(), "application/json")  # rejected spans
        0
        >>> [(r.kind, r.tool) for r in events.log.read(0, 10).records]  # committed
        [('after_tool_result', 'order_create')]
        >>> processor.shutdown(); events.close()
    """

    def __init__(
        self,
        span_processors: Sequence[SpanProcessor],
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        logs: Sequence[EventLog] = (),
        admission_timeout_s: float = 10.0,
        commit_timeout_s: float = 30.0,
        metrics: AgentMetrics | None = None,
    ) -> None:
        self.span_processors = tuple(span_processors)
        self.max_body_bytes = max_body_bytes
        self.admission_timeout_s = admission_timeout_s
        self.commit_timeout_s = commit_timeout_s
        self._hooks = _hook_processors(self.span_processors)
        self._prepare = [p for p in self.span_processors if isinstance(p, PreparesBatch)]
        self._durable = [log for log in logs if log.durable]
        if metrics is None:
            metrics = self._hooks[0].engine.metrics if self._hooks else AgentMetrics()
        self._count_drop = metrics.drop_counter("otlp_receiver")
        self._lock = threading.Lock()  # one request at a time: the room it waited for is its own
        self._pool: ThreadPoolExecutor | None = None

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        request_format = await otlp_request_format(scope, send, (PROTOBUF, JSON))
        if request_format is None:
            return
        ctype, encoding = request_format
        limit = self.max_body_bytes
        data = await read_body(receive, limit)
        retry = [(b"retry-after", str(RETRY_AFTER_S).encode())]
        try:
            if data and encoding == "gzip":
                data = _gunzip(data, limit)
            if data is None:
                await send_otlp_error(send, 413, ctype, "too_large", f"at most {limit} bytes")
                return
            loop = asyncio.get_running_loop()
            rejected = await loop.run_in_executor(self._executor(), self.ingest, data, ctype)
        except (OtlpDecodeError, zlib.error) as exc:
            await send_otlp_error(send, 400, ctype, "bad_request", str(exc))
            return
        except QueueFull as exc:
            await send_otlp_error(send, 503, ctype, "queue_full", str(exc), retry)
            return
        except NotCommitted as exc:
            await send_otlp_error(send, 503, ctype, "not_committed", str(exc), retry)
            return
        message = "spans not kept (queue full or invalid ids); see otelhooks.dropped" * bool(
            rejected
        )
        await respond(send, 200, otlp_response(ctype, rejected, message), ctype.encode())

    def _executor(self) -> ThreadPoolExecutor:
        # Its own thread, not asyncio's default pool: requests waiting for queue room or a
        # commit must not take the threads the durable log's /v1/events reads run on.
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="otelhooks-ingest")
        return self._pool

    def ingest(self, body: bytes, content_type: str) -> int:
        """Decode ``body`` and run the processors on its spans; returns the rejected count.

        Raises:
            OtlpDecodeError: the body does not decode.
            QueueFull: no span could be queued (nothing of the request was taken).
            NotCommitted: the durable log did not commit in time.
        """
        with decoding(body):
            spans, invalid = decode_traces(body, content_type)
        if invalid:
            self._count_drop(invalid, "invalid")
        with self._lock:
            lost_before = self._lost()
            failed_before = self._commit_failures()
            for preparing in self._prepare:
                try:
                    preparing.prepare(spans)
                except Exception:
                    _log.exception("span processor failed preparing received spans")
            admitted = 0
            for span in spans:
                if not self._wait_for_room():
                    break
                for processor in self.span_processors:
                    try:
                        processor.on_end(span)
                    except Exception:
                        _log.exception("span processor failed on a received span", span=span.name)
                admitted += 1
            refused = len(spans) - admitted
            if refused:
                self._count_drop(refused, "queue_full")
                _log.warning("observer queue full: spans refused", refused=refused, of=len(spans))
            if admitted == 0 and spans:
                raise QueueFull(
                    f"the observer queue stayed full for {self.admission_timeout_s:g}s; "
                    f"retry after {RETRY_AFTER_S}s"
                )
            if self._durable and admitted:
                self._commit()
                if self._commit_failures() > failed_before:
                    raise NotCommitted(
                        f"the event log store could not commit; retry after {RETRY_AFTER_S}s"
                    )
            lost = self._lost() - lost_before  # already counted where they were dropped
        return invalid + refused + lost

    def _lost(self) -> int:
        lost = sum(p.engine.observers_dropped for p in self._hooks)
        return lost + sum(log.lost for log in self._durable)

    def _commit_failures(self) -> int:
        return sum(log.commit_failures for log in self._durable)

    def _wait_for_room(self) -> bool:
        if not self._hooks:
            return True
        deadline = time.monotonic() + self.admission_timeout_s
        room = min(p.engine.observer_room for p in self._hooks)
        while room < _ROOM_PER_SPAN:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.002)
            now = min(p.engine.observer_room for p in self._hooks)
            if now > room:  # progress: the observers are draining, keep waiting
                deadline = time.monotonic() + self.admission_timeout_s
            room = now
        return True

    def _commit(self) -> None:
        deadline = time.monotonic() + self.commit_timeout_s
        for processor in self._hooks:
            left = max(0.0, deadline - time.monotonic())
            if not processor.engine.flush_observers(left):
                raise NotCommitted(f"observers did not finish in {self.commit_timeout_s:g}s")
        for log in self._durable:
            left = max(0.0, deadline - time.monotonic())
            if not log.flush(left):
                raise NotCommitted(f"event log {log.name!r} did not commit in time")


def _gunzip(data: bytes, limit: int) -> bytes | None:
    """The inflated body, ``None`` past ``limit`` bytes; raises ``zlib.error`` if not gzip."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = inflater.decompress(data, limit + 1)  # bounded: a small bomb cannot inflate freely
    if len(out) > limit:
        return None
    if not inflater.eof:
        raise zlib.error("truncated gzip body")
    return out


def _hook_processors(processors: Sequence[SpanProcessor]) -> list[HookSpanProcessor]:
    """The hook processors received spans reach, also behind a processor that forwards to
    ``downstream`` ones (Claude Code's telemetry join sits in front of the server's hooks)."""
    found: list[HookSpanProcessor] = []
    for processor in processors:
        if isinstance(processor, HookSpanProcessor):
            found.append(processor)
        else:
            found.extend(_hook_processors(getattr(processor, "downstream", ())))
    return found
