"""Claude Code's own telemetry joined with the hook sessions of the same server.

**The join (decided here):** one trace per Claude Code session. The hook route already gives a
session the trace id :func:`session_trace_id` of its ``session_id``; every span and log record
Claude Code exports carries that id as ``session.id``, so:

- **spans** (``/v1/traces``, beta ``claude_code.interaction`` / ``llm_request`` / ``tool`` ...)
  are moved into the session's trace: same span ids and parents, the trace id replaced (the
  original kept as ``claude_code.trace_id``). A ``claude_code.tool*`` span carrying a
  ``tool_use_id`` the hooks saw gets a **span link** to the hook route's ``execute_tool`` span
  and the attribute ``otelhooks.hook.span_id``: in Jaeger both trees are in one trace and the
  tool span points at the decision.
- **log events** (``/v1/logs``): ``claude_code.api_request`` becomes an ``llm_output`` observer
  event (model, input/output tokens, ``costUsd``) in the session's trace; ``tool_result`` and
  ``tool_decision`` records are kept per ``(session, tool_use_id)`` (:meth:`ClaudeTelemetry.tool`)
  next to the hook's own ``after_tool_call``.
- **metrics** (``/v1/metrics``) are counted per metric (:attr:`ClaudeTelemetry.metrics`).

Bounds (a client chooses metric names, session ids and record sizes): at most ``max_metrics``
metric names are summed (points of a new name past it are dropped), and the kept log records
are bounded by count (``remember`` tool uses) and bytes (``max_log_bytes``, oldest tool use
forgotten first; one record larger than a tenth of that is not kept). Each drop is counted by
``otelhooks.dropped`` (source ``claude_code_telemetry``, reason ``too_many_metrics``,
``evicted_oldest`` or ``record_too_large``).

Observer hooks and event logs see each fact once: the facts the hook route already reported
(its tool uses through ``after_tool_call``, its turns through ``on_complete``) and the LLM
requests the logs report are not sent to them a second time from Claude Code's spans; those
spans are still joined and exported.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import structlog
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import Link, SpanContext, TraceFlags

from otelhooks._engine import HooksEngine
from otelhooks._errors import CriticalHookDeliveryError
from otelhooks._eventlog._otlp_signals import ReceivedLog, ReceivedPoint
from otelhooks._events import LlmOutputEvent, TokenUsage
from otelhooks.integrations.coding_agents._common import AGENT
from otelhooks.integrations.coding_agents._sessions import ServerSessions
from otelhooks.integrations.coding_agents._spans import session_trace_id

__all__ = ["HOOK_SPAN_ID", "ORIGINAL_TRACE_ID", "ClaudeTelemetry"]

ORIGINAL_TRACE_ID = "claude_code.trace_id"
HOOK_SPAN_ID = "otelhooks.hook.span_id"
SESSION_ID = "session.id"

_log = structlog.get_logger("otelhooks")
_REPORTED_BY_LOGS = frozenset({"llm_request"})  # span.type values the log events already report


def _is_claude(span: ReadableSpan) -> bool:
    scope = span.instrumentation_scope.name if span.instrumentation_scope else ""
    service = span.resource.attributes.get("service.name") if span.resource else None
    return scope.startswith("com.anthropic.claude_code") or service == AGENT


def _record_size(attrs: dict[str, Any]) -> int:
    """Bytes a record's attributes take, estimated as their text (what a client can inflate)."""
    return sum(len(str(key)) + len(str(value)) for key, value in attrs.items())


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


class ClaudeTelemetry(SpanProcessor):
    """Joins what Claude Code exports to ``serve`` with the hook sessions (module doc).

    As a span processor it sits in front of ``downstream`` (the server's hook processor and
    event logs) and ``export`` (where joined spans go, e.g. OTLP to Jaeger); the log and metric
    routes call :meth:`on_logs` / :meth:`on_metrics`.

    Args:
        sessions: the hook route's session store (``tool_use_id`` to span id).
        engine: where ``llm_output`` events from log records are observed.
        downstream: processors of received spans (observer hooks, event logs).
        export: processors that export the joined Claude Code spans.
        remember: tool uses whose log records are kept (oldest forgotten).
        max_log_bytes: bytes of kept log records at most (oldest tool use forgotten).
        max_metrics: metric names summed at most (new names past it dropped).

    Example:
        >>> telemetry = ClaudeTelemetry(ServerSessions(), engine=HooksEngine())
        >>> telemetry.on_logs([])
    """

    def __init__(
        self,
        sessions: ServerSessions,
        *,
        engine: HooksEngine,
        downstream: Sequence[SpanProcessor] = (),
        export: Sequence[SpanProcessor] = (),
        remember: int = 65_536,
        max_log_bytes: int = 64 * 1024 * 1024,
        max_metrics: int = 1_024,
    ) -> None:
        self.sessions = sessions
        self.engine = engine
        self.downstream = tuple(downstream)
        self.export = tuple(export)
        self.metrics: dict[str, float] = {}
        self.max_metrics = max_metrics
        self.max_log_bytes = max_log_bytes
        self._tools: OrderedDict[tuple[str, str], dict[str, dict[str, Any]]] = OrderedDict()
        self._sizes: dict[tuple[str, str], int] = {}
        self._log_bytes = 0
        self._remember = remember
        self._lock = threading.Lock()
        self._count_drop = engine.metrics.drop_counter("claude_code_telemetry")

    @property
    def log_bytes(self) -> int:
        """Bytes of the log records kept (an estimate: keys and values as text)."""
        with self._lock:
            return self._log_bytes

    # -- spans -----------------------------------------------------------------------------------

    def join(self, span: ReadableSpan) -> ReadableSpan | None:
        """The span moved into its session's trace and linked to the hook's tool span; ``None``
        when it is not a Claude Code span with a ``session.id``."""
        attrs = dict(span.attributes or {})
        session = attrs.get(SESSION_ID)
        ctx = span.context
        if not isinstance(session, str) or ctx is None or not _is_claude(span):
            return None
        trace_id = session_trace_id(session)
        attrs[ORIGINAL_TRACE_ID] = format(ctx.trace_id, "032x")
        links = list(span.links)
        use_id = attrs.get("tool_use_id") or attrs.get("gen_ai.tool.call.id")
        hook_span = self.sessions.tool_span(session, use_id) if isinstance(use_id, str) else None
        if hook_span is not None:
            attrs[HOOK_SPAN_ID] = format(hook_span, "016x")
            linked = SpanContext(trace_id, hook_span, False, TraceFlags(TraceFlags.SAMPLED))
            links.append(Link(linked, {"otelhooks.link": "hook_decision"}))
        context = SpanContext(
            trace_id, ctx.span_id, ctx.is_remote, ctx.trace_flags, ctx.trace_state
        )
        parent = span.parent
        if parent is not None:
            parent = SpanContext(trace_id, parent.span_id, True, parent.trace_flags)
        return ReadableSpan(
            name=span.name,
            context=context,
            parent=parent,
            resource=span.resource,
            attributes=attrs,
            events=span.events,
            links=links,
            kind=span.kind,
            status=span.status,
            start_time=span.start_time,
            end_time=span.end_time,
            instrumentation_scope=span.instrumentation_scope,
        )

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        joined = self.join(span)
        observed = span if joined is None else joined
        reported = False
        if joined is not None:
            attrs = joined.attributes or {}
            kind = attrs.get("span.type")
            reported = (
                HOOK_SPAN_ID in attrs
                or kind in _REPORTED_BY_LOGS
                # the turn's on_complete came from the Stop hook already
                or (kind == "interaction" and self.sessions.saw(str(attrs.get(SESSION_ID))))
            )
            for processor in self.export:
                self._run(processor, joined)
        if not reported:
            for processor in self.downstream:
                self._run(processor, observed)

    @staticmethod
    def _run(processor: SpanProcessor, span: ReadableSpan) -> None:
        try:
            processor.on_end(span)
        except Exception:
            _log.exception("span processor failed on a received span", span=span.name)

    def shutdown(self) -> None:
        for processor in self.export:
            processor.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return all(p.force_flush(timeout_millis) for p in self.export)

    # -- logs and metrics ------------------------------------------------------------------------

    def tool(self, session_id: str, tool_use_id: str) -> dict[str, dict[str, Any]]:
        """Claude Code's log records about one tool use, by event name (``tool_result``...)."""
        with self._lock:
            return dict(self._tools.get((session_id, tool_use_id), {}))

    def on_logs(self, records: Sequence[ReceivedLog]) -> None:
        """Join received log records (the ``/v1/logs`` sink)."""
        for record in records:
            attrs = record.attributes
            session = attrs.get(SESSION_ID)
            if not isinstance(session, str):
                continue
            name = record.event_name.removeprefix("claude_code.")
            use_id = attrs.get("tool_use_id")
            if isinstance(use_id, str):
                self._keep((session, use_id), name, attrs)
            if name == "api_request":
                self._llm_output(session, record)

    def _keep(self, key: tuple[str, str], name: str, attrs: dict[str, Any]) -> None:
        size = len(key[0]) + len(key[1]) + len(name) + _record_size(attrs)
        if size > self.max_log_bytes // 10:
            self._count_drop(1, "record_too_large")
            return
        dropped = 0
        with self._lock:
            records = self._tools.setdefault(key, {})
            self._sizes[key] = self._sizes.get(key, 0) + size
            self._log_bytes += size  # a replaced record stays counted: an overestimate at most
            records[name] = attrs
            self._tools.move_to_end(key)
            while len(self._tools) > self._remember or self._log_bytes > self.max_log_bytes:
                old, _ = self._tools.popitem(last=False)
                self._log_bytes -= self._sizes.pop(old)
                dropped += 1
        if dropped:
            self._count_drop(dropped, "evicted_oldest")

    def _llm_output(self, session: str, record: ReceivedLog) -> None:
        attrs = record.attributes
        when: dict[str, Any] = {}
        if record.time_unix_nano:
            when["timestamp"] = record.time_unix_nano // 1_000_000
        extra: dict[str, Any] = {
            "costUsd": attrs.get("cost_usd"),
            "requestId": attrs.get("request_id"),
            "promptId": attrs.get("prompt.id"),
            "source": "claude_code.api_request",
        }
        event = LlmOutputEvent(
            **when,
            **extra,
            sessionKey=session,
            traceId=format(session_trace_id(session), "032x"),
            spanId=format(record.span_id, "016x") if record.span_id else None,
            agentId=AGENT,
            model=str(attrs.get("model") or "") or None,
            tokenUsage=TokenUsage(
                input=_int(attrs.get("input_tokens")), output=_int(attrs.get("output_tokens"))
            ),
        )
        try:
            self.engine.dispatch("llm_output", event, values=(event.model or "*",))
        except CriticalHookDeliveryError:
            _log.exception("critical hook delivery failed", event="llm_output")

    def on_metrics(self, points: Sequence[ReceivedPoint]) -> None:
        """Count received metric points per metric (the ``/v1/metrics`` sink)."""
        dropped = 0
        with self._lock:
            for point in points:
                if point.metric not in self.metrics and len(self.metrics) >= self.max_metrics:
                    dropped += 1
                    continue
                self.metrics[point.metric] = self.metrics.get(point.metric, 0.0) + point.value
        if dropped:
            self._count_drop(dropped, "too_many_metrics")
