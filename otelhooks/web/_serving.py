"""What ``otelhooks serve`` builds for the web view: the index, the app, and what an answered
approval leaves behind (an event-log record, and in the index a stand-in
``request_human_approve`` span with an ``approve``/``reject`` event, which the call's own span
replaces when it reaches serve: see :mod:`otelhooks.web._store`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog
from opentelemetry import trace
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags

from otelhooks import _semconv as sc
from otelhooks._actions._approval_inbox import Approval, ApprovalInbox, process_inbox
from otelhooks._capture import capture_from_env
from otelhooks._eventlog._model import EventEntry, EventLog
from otelhooks._fingerprint import args_fingerprint
from otelhooks._resource import recording_resource, span_limits
from otelhooks._version import __version__
from otelhooks.web._app import WebApp
from otelhooks.web._auth import WebAuth
from otelhooks.web._store import TraceIndex

__all__ = ["GRAFANA_URL_ENV", "JAEGER_URL_ENV", "WebServing", "web_serving"]

_log = structlog.get_logger("otelhooks")

JAEGER_URL_ENV = "OTELHOOKS_JAEGER_URL"
GRAFANA_URL_ENV = "OTELHOOKS_GRAFANA_URL"


@dataclass
class WebServing:
    """The web parts of a server: :attr:`app` (the ASGI fallback), :attr:`index` (a span
    processor and exporter to feed), :attr:`inbox`."""

    app: WebApp
    index: TraceIndex
    inbox: ApprovalInbox
    provider: TracerProvider
    listeners: tuple[Callable[[Approval], None], ...] = ()

    def close(self) -> None:
        """Stop recording this server's approvals (the inbox may outlive it) and flush."""
        for listener in self.listeners:
            self.inbox.remove_listener(listener)
        self.provider.shutdown()


def _parent(item: Approval) -> trace.Span | None:
    try:
        trace_id, span_id = int(item.trace_id, 16), int(item.span_id, 16)
    except ValueError:
        return None
    if not trace_id or not span_id:
        return None
    ctx = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(1))
    return NonRecordingSpan(ctx)


def _record_span(tracer: trace.Tracer, item: Approval) -> None:
    parent = _parent(item)
    context = trace.set_span_in_context(parent) if parent is not None else None
    allowed = item.state == "allowed"
    span = tracer.start_span(
        f"{sc.OP_HUMAN_APPROVAL} {item.tool}",
        context=context,
        start_time=item.created_ms * 1_000_000,
        attributes={
            sc.GEN_AI_OPERATION_NAME: sc.OP_HUMAN_APPROVAL,
            sc.GEN_AI_TOOL_NAME: item.tool,
            sc.APPROVAL_ACTION: "approve" if allowed else "reject",
            sc.APPROVAL_PENDING_TOOLS: [item.tool],
            sc.APPROVAL_HOOK_ID: item.hook_id,
            sc.APPROVAL_STAND_IN: True,
        },
    )
    attrs: dict[str, str | bool] = {
        sc.APPROVAL_HOOK_ID: item.hook_id,
        sc.APPROVAL_ID: item.id,
        sc.APPROVAL_DECISION: "allow" if allowed else "deny",
        sc.APPROVAL_ANSWERED_BY: item.answered_by,
        sc.APPROVAL_REASON: item.answer_reason,
        sc.APPROVAL_TIMED_OUT: item.answered_by == "timeout",
        sc.APPROVAL_ARGS_EDITED: item.answer_args is not None,
    }
    span.add_event(
        sc.EVENT_APPROVE if allowed else sc.EVENT_REJECT,
        attributes=attrs,
        timestamp=item.answered_ms * 1_000_000,
    )
    if not allowed:
        span.set_attribute(sc.APPROVAL_REJECTION_REASON, item.answer_reason or item.reason)
        span.set_status(Status(StatusCode.OK))
    span.end(end_time=item.answered_ms * 1_000_000)


def _record_entry(logs: Sequence[EventLog], item: Approval) -> None:
    verb = "approved" if item.state == "allowed" else "rejected"
    detail = f"{verb} by {item.answered_by}"
    if item.answer_reason:
        detail += f": {item.answer_reason[:200]}"
    entry = EventEntry(
        item.answered_ms,
        item.agent or item.hook_id,
        item.session or None,
        item.user or None,
        item.tool or None,
        "approval",
        False,
        item.state == "allowed",
        args_fingerprint(item.args),
        detail,
        item.trace_id or None,
        item.span_id or None,
    )
    for log in logs:
        log.append(entry)


def web_serving(
    *,
    token: str,
    ingest_token: str | None = None,
    logs: Sequence[EventLog] = (),
    exporters: Sequence[SpanProcessor] = (),
    jaeger_url: str | None = None,
    grafana_url: str | None = None,
    capture_content: bool | None = None,
    max_traces: int = 10_000,
    max_spans: int = 200_000,
    inbox: ApprovalInbox | None = None,
    index: TraceIndex | None = None,
    public_origins: Sequence[str] = (),
) -> WebServing:
    """Build the web view of a server.

    Args:
        token, ingest_token: the server's tokens.
        logs: where approval records go (the served event logs).
        exporters: more processors for the approval spans (the server's exports).
        jaeger_url, grafana_url: link targets; ``OTELHOOKS_JAEGER_URL`` /
            ``OTELHOOKS_GRAFANA_URL`` when omitted.
        capture_content: show prompts and arguments; the GenAI capture switch when omitted.
        max_traces, max_spans: the bounds of the trace index.
        inbox: the approvals inbox; this process's one when omitted.
        index: the trace index (a shared store's); one in memory with ``max_traces``,
            ``max_spans`` and ``capture_content`` when omitted.
        public_origins: the addresses browsers open serve at through a reverse proxy that
            rewrites ``Host`` (``https://inbox.example.com``): their pages count as serve's own.

    Raises:
        ValueError: a public origin is not ``scheme://host[:port]``.

    Example:
        >>> serving = web_serving(token="s3cret")
        >>> serving.index.stats()["traces"]
        0
        >>> serving.close()  # the process's approval inbox is no longer listed by it
    """
    auth = WebAuth(token, ingest_token=ingest_token, public_origins=public_origins)
    capture = capture_from_env() if capture_content is None else capture_content
    if index is None:
        index = TraceIndex(max_traces=max_traces, max_spans=max_spans, capture_content=capture)
    inbox = inbox if inbox is not None else process_inbox()
    if inbox.served:
        # said where it happens: docs/web.md says it too, but two serves in one process (an
        # embedding app, a test suite) otherwise learn it from cards they never asked
        _log.warning(
            "another serve in this process already serves its approvals inbox: both list and "
            "answer the same cards, and the approval lease is this one's",
        )
    provider = TracerProvider(
        resource=recording_resource({"service.name": "otelhooks-serve"}), span_limits=span_limits()
    )
    provider.add_span_processor(index)
    for processor in exporters:
        provider.add_span_processor(processor)
    tracer = provider.get_tracer("otelhooks.approval", __version__, schema_url=sc.SCHEMA_URL)
    served = list(logs)
    listeners: tuple[Callable[[Approval], None], ...] = (
        lambda item: _record_span(tracer, item),
        lambda item: _record_entry(served, item),
    )
    for listener in listeners:
        inbox.add_listener(listener)
    app = WebApp(
        index,
        inbox,
        auth,
        jaeger_url=jaeger_url or os.environ.get(JAEGER_URL_ENV),
        grafana_url=grafana_url or os.environ.get(GRAFANA_URL_ENV),
        capture_content=capture,
    )
    return WebServing(app, index, inbox, provider, listeners)
