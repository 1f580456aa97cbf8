"""Spans with ids and start times chosen by the bridge, exported through the SDK.

A span of a coding agent's tool use starts in one process and ends in another, so it is made at the
end, through an ordinary SDK ``Tracer`` whose id generator hands out the ids decided earlier (the
trace id from the session id, the span id from the state file) and with the recorded start time.
The SDK then does what it always does: resource, limits, processors, exporters.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import structlog
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
)
from opentelemetry.util.types import AttributeValue

from otelhooks import _semconv as sc
from otelhooks._resource import span_limits
from otelhooks._version import __version__

__all__ = [
    "APPROVALS_KEY",
    "BRIDGE_SCOPE",
    "LockedFileExporter",
    "SpanRecord",
    "SpanWriter",
    "event_ids",
    "session_trace_id",
    "stored_events",
]

# the instrumentation scope of every span the bridge writes (hook processes, daemon, serve)
BRIDGE_SCOPE = "otelhooks.integrations.claude_code"

_log = structlog.get_logger("otelhooks")


def session_trace_id(session_id: str) -> int:
    """The trace id of a coding agent's session (Claude Code's, Codex CLI's, Gemini CLI's): the
    first 128 bits of SHA-256 of its id, under the prefix the bridge has always used.

    Example:
        >>> session_trace_id("s-1") == session_trace_id("s-1") != session_trace_id("s-2")
        True
    """
    digest = hashlib.sha256(f"otelhooks/claude-code/{session_id}".encode()).digest()
    return int.from_bytes(digest[:16], "big") or 1


def event_ids(session_id: str, operation_id: str | None, span_id: int | None) -> dict[str, Any]:
    """The ids every lifecycle event of a session carries (session, turn, trace, span)."""
    return {
        "sessionKey": session_id,
        "operationId": operation_id,
        "traceId": format(session_trace_id(session_id), "032x"),
        "spanId": format(span_id, "016x") if span_id else None,
    }


class _PresetIds(IdGenerator):
    """Returns the ids set for the next span, random ones otherwise."""

    def __init__(self) -> None:
        self.trace_id = 0
        self.span_id = 0
        self._random = RandomIdGenerator()

    def generate_span_id(self) -> int:
        return self.span_id or self._random.generate_span_id()

    def generate_trace_id(self) -> int:
        return self.trace_id or self._random.generate_trace_id()


@dataclass
class SpanRecord:
    """One span to write, with everything decided by the caller."""

    name: str
    trace_id: int
    span_id: int
    parent_span_id: int | None
    start_ns: int
    end_ns: int
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    kind: SpanKind = SpanKind.INTERNAL
    error: str | None = None
    error_type: str | None = None
    events: Sequence[tuple[str, Mapping[str, AttributeValue]]] = ()


class SpanWriter:
    """Writes :class:`SpanRecord` s through a private provider and the given exporters.

    Args:
        exporters: where spans go (each behind a ``SimpleSpanProcessor``: a hook process is
            short-lived and exports before it exits).
        resource: the provider's resource.
        read: whether anything receives the spans (processors added to :attr:`provider` later
            included). ``False`` (``serve`` with no exporter and no web view): :meth:`write`
            builds no span, which nobody would read.
    """

    def __init__(
        self, exporters: Sequence[SpanExporter], resource: Resource, *, read: bool = True
    ) -> None:
        self.read = read or bool(exporters)
        self._ids = _PresetIds()
        self._lock = threading.Lock()
        self.provider = TracerProvider(
            resource=resource,
            id_generator=self._ids,
            span_limits=span_limits(),
            shutdown_on_exit=False,
        )
        for exporter in exporters:
            self.provider.add_span_processor(SimpleSpanProcessor(exporter))
        self._tracer = self.provider.get_tracer(BRIDGE_SCOPE, __version__, schema_url=sc.SCHEMA_URL)

    def write(self, record: SpanRecord) -> None:
        """Export ``record`` as an ended SDK span (nothing when no one reads spans)."""
        if not self.read:
            return
        parent = otel_context.Context()
        if record.parent_span_id is not None:
            remote = SpanContext(
                record.trace_id,
                record.parent_span_id,
                is_remote=True,
                trace_flags=TraceFlags(TraceFlags.SAMPLED),
            )
            parent = trace.set_span_in_context(NonRecordingSpan(remote), parent)
        with self._lock:
            self._ids.trace_id, self._ids.span_id = record.trace_id, record.span_id
            try:
                span = self._tracer.start_span(
                    record.name,
                    context=parent,
                    kind=record.kind,
                    attributes=record.attributes,
                    start_time=record.start_ns,
                )
            finally:
                self._ids.trace_id = self._ids.span_id = 0
        for name, attrs in record.events:
            span.add_event(name, attrs, timestamp=record.end_ns)
        if record.error is not None:
            span.set_status(Status(StatusCode.ERROR, record.error))
            span.set_attribute("error.type", record.error_type or "error")
        span.end(end_time=max(record.end_ns, record.start_ns))

    def shutdown(self) -> None:
        self.provider.shutdown()


class LockedFileExporter(SpanExporter):
    """An exporter whose exports hold an exclusive ``flock`` on ``lock_path``, waited for
    ``wait_s`` at most.

    Several hook processes append to one traces file; the lock keeps their lines whole whatever
    the file system does with concurrent appends. A neighbour may hold it and never let go (a
    stopped hook process, a ``flock`` of the user's own): a guard's answer must not wait for it.
    So past ``wait_s`` the spans are lost, never written without the lock (lines would
    interleave), and the export is a ``FAILURE`` whose reason is :attr:`last_error` (logged
    once, unless ``log_failures`` is false); so is a lock file that cannot be opened (a folder
    that does not exist). After a wait that ran out the next export tries once without waiting,
    so that a lock held for good costs one wait, not one per span; an export that gets the lock
    waits in full again.

    Args:
        inner: the exporter that writes the file.
        lock_path: the file locked around each export.
        wait_s: the longest wait for the lock, in seconds.
        log_failures: log a failure's reason (false: the caller reports the result itself).
    """

    def __init__(
        self,
        inner: SpanExporter,
        lock_path: str | os.PathLike[str],
        *,
        wait_s: float,
        log_failures: bool = True,
    ) -> None:
        self.inner = inner
        self.lock_path = os.fspath(lock_path)
        self.wait_s = wait_s
        self.log_failures = log_failures
        self._held = False  # the last wait ran out
        #: Why the last export failed (None after a success).
        self.last_error: str | None = None

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            with open(self.lock_path, "a+b") as handle:
                if not self._lock(handle):
                    return self._failed(f"{self.lock_path} held by another process")
                try:
                    result = self.inner.export(spans)
                finally:
                    # at once, not when closed: a child forked meanwhile shares the handle
                    fcntl.flock(handle, fcntl.LOCK_UN)
        except OSError as exc:
            return self._failed(f"{self.lock_path}: {exc.strerror or exc}")
        failed = result is not SpanExportResult.SUCCESS
        self.last_error = getattr(self.inner, "last_error", None) if failed else None
        return result

    def _lock(self, handle: IO[bytes]) -> bool:
        deadline = time.monotonic() + (0.0 if self._held else self.wait_s)
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                left = deadline - time.monotonic()
                if left <= 0:
                    self._held = True
                    return False
                time.sleep(min(left, 0.01))
            else:
                self._held = False
                return True

    def _failed(self, reason: str) -> SpanExportResult:
        if self.log_failures and reason != self.last_error:
            _log.warning("writing spans failed", error=reason)
        self.last_error = reason
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


def attribute_map(values: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """Only the values OpenTelemetry attributes can hold (lists become tuples)."""
    out: dict[str, AttributeValue] = {}
    for key, value in values.items():
        if isinstance(value, list):
            value = tuple(value)
        if isinstance(value, str | bool | int | float | tuple):
            out[key] = value
    return out


# The key under which an open tool's state keeps the span events of its approvals (the state
# file holds JSON attributes; the events are written when the span ends).
APPROVALS_KEY = "~otelhooks.approvals"


def stored_events(value: Any) -> list[tuple[str, dict[str, AttributeValue]]]:
    """The ``(name, attributes)`` span events kept under :data:`APPROVALS_KEY` (what is not
    that shape is dropped: the state file is read back from disk)."""
    events: list[tuple[str, dict[str, AttributeValue]]] = []
    for item in value if isinstance(value, list) else ():
        if isinstance(item, list) and len(item) == 2 and isinstance(item[0], str):
            name, attrs = item
            events.append((name, attribute_map(attrs if isinstance(attrs, dict) else {})))
    return events
