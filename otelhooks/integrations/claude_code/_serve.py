"""What ``otelhooks serve`` adds for Claude Code: the hook route, OTLP logs and metrics, the join.

:func:`claude_code_routes` builds, around the server's own :class:`HookSpanProcessor` (so the
``--hooks`` files' intercept hooks guard Claude Code's tool calls and their observers and event
logs see every event):

- ``POST /v1/hooks/claude-code``: :class:`ClaudeCodeHookRoute` over one long-lived
  :class:`CodingAgentBridge` whose sessions live in :class:`ServerSessions`;
- ``POST /v1/logs`` and ``POST /v1/metrics``: :class:`OtlpSignalIngest` into
  :class:`ClaudeTelemetry`;
- the span processor for ``POST /v1/traces``: :class:`ClaudeTelemetry` in front of the hook
  processor, joining Claude Code's spans with the sessions.

The hook route's spans, the joined CLI spans and the bridge's received spans are exported in
batches (never on the request's path), each span once, to ``exporters`` and, when
``OTEL_EXPORTER_OTLP_ENDPOINT`` (or the traces variant) is set, to OTLP.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from otelhooks._actions._webhook_delivery import WebhookDeliverer
from otelhooks._eventlog._http import Route
from otelhooks._eventlog._otlp_signals import OtlpSignalIngest
from otelhooks._export._batch import CountingBatchSpanProcessor
from otelhooks._export._otlp import otlp_configured, otlp_span_exporter
from otelhooks._export._report import DeliveryTracker
from otelhooks._hooks import Hook
from otelhooks._processor import HookSpanProcessor
from otelhooks._resource import recording_resource
from otelhooks.integrations.coding_agents._bridge import CodingAgentBridge
from otelhooks.integrations.coding_agents._common import AGENT
from otelhooks.integrations.coding_agents._http import (
    DEFAULT_DECISION_TIMEOUT_S,
    HOOK_ROUTE,
    ClaudeCodeHookRoute,
)
from otelhooks.integrations.coding_agents._sessions import ServerSessions
from otelhooks.integrations.coding_agents._spans import SpanWriter
from otelhooks.integrations.coding_agents._telemetry import ClaudeTelemetry

__all__ = ["ClaudeCodeServing", "claude_code_routes", "sessions_path_beside"]


@dataclass
class ClaudeCodeServing:
    """The Claude Code parts of a server (see :func:`claude_code_routes`)."""

    routes: dict[str, Route]
    span_processor: ClaudeTelemetry
    bridge: CodingAgentBridge
    sessions: ServerSessions
    route: ClaudeCodeHookRoute
    _export: list[SpanProcessor] = field(default_factory=list)
    _deliverer: WebhookDeliverer | None = None

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Export what the batch processors hold."""
        return all(p.force_flush(int(timeout_s * 1000)) for p in self._export)

    def close(self) -> None:
        """Export what is left and close the session store (the hook processor is not ours)."""
        self.route.close()
        for route in self.routes.values():
            if isinstance(route, OtlpSignalIngest):
                route.close()
        self.bridge.writer.shutdown()
        self.span_processor.shutdown()
        self.sessions.close()
        if self._deliverer is not None:  # after the hook processor queued its last webhooks
            self._deliverer.shutdown()


def sessions_path_beside(log_path: str | os.PathLike[str]) -> Path:
    """Where a durable server keeps its Claude Code sessions: next to its durable event log."""
    path = Path(log_path).expanduser()
    return path.with_name(f"{path.name}.claude-sessions.sqlite3")


def claude_code_routes(
    processor: HookSpanProcessor,
    *,
    downstream: Sequence[SpanProcessor] = (),
    sessions_path: str | os.PathLike[str] | None = None,
    exporters: Sequence[SpanExporter] = (),
    fail_closed: bool = False,
    service_name: str = AGENT,
    decision_timeout_s: float = DEFAULT_DECISION_TIMEOUT_S,
    sessions: ServerSessions | None = None,
    recorders: Sequence[Hook] = (),
) -> ClaudeCodeServing:
    """Build the Claude Code routes of a server around its hook processor.

    Args:
        processor: the server's hook processor: its hooks run for Claude Code's events.
        downstream: the processors received spans reach (the hook processor first).
        sessions_path: keep sessions in this SQLite file (survives a restart); memory if None.
            The file is this server's alone (its route changes it on the event loop, which
            must never wait for another process): it is held locked while the server runs.
        exporters: where the hook spans and joined Claude Code spans go (batched).
        fail_closed: deny a ``PreToolUse`` when the bridge fails (instead of a 500).
        service_name: ``service.name`` of the hook spans.
        decision_timeout_s: a deciding hook event not answered by then gets the failure answer
            (a deny with ``fail_closed``, else 500), before Claude Code's own timeout.
        sessions: the session store (its bounds chosen by the caller); else one built from
            ``sessions_path`` with the default bounds.
        recorders: registered hooks that only record (an event log's observers): a deciding
            event no other hook watches is answered without a thread hop.

    Example:
        >>> serving = claude_code_routes(HookSpanProcessor())
        >>> sorted(serving.routes)
        ['/v1/hooks/claude-code', '/v1/logs', '/v1/metrics']
    """
    # The server's engine delivers its own webhooks (created on first use, shut down with it).
    deliverer = None
    chosen = list(exporters)
    export: list[SpanProcessor] = [BatchSpanProcessor(e, schedule_delay_millis=500) for e in chosen]
    if otlp_configured():
        tracker = DeliveryTracker("spans", "")
        chosen.append(otlp_span_exporter(tracker))
        # configure()'s processor: its tracker hears why an export failed, so a batch too
        # large for the collector is sent again in halves (the SDK's lost it whole)
        export.append(CountingBatchSpanProcessor(chosen[-1], schedule_delay_s=0.5, tracker=tracker))
    received = list(downstream or (processor,))
    # the bridge's received spans reach downstream anyway: not the exporters among it again
    among = {id(p) for p in received}
    forward = [p for e, p in zip(chosen, export, strict=True) if id(e) not in among]
    # no exporter and no web view: the spans of the hook route would be built for nobody
    writer = SpanWriter((), recording_resource({"service.name": service_name}), read=bool(export))
    if sessions is None:
        drops = processor.engine.metrics.drop_counter("claude_code_sessions")
        sessions = ServerSessions(sessions_path, on_drop=drops, exclusive=True)
    bridge = CodingAgentBridge(
        state=sessions,
        engine=processor.engine,
        writer=writer,
        deny_mode="json",
        service_name=service_name,
        spend=sessions,  # Claude Code's own cost per session, read by budget guards
    )
    route = ClaudeCodeHookRoute(
        bridge,
        fail_closed=fail_closed,
        decision_timeout_s=decision_timeout_s,
        recorders=recorders,
    )
    telemetry = ClaudeTelemetry(
        sessions,
        engine=processor.engine,
        downstream=received,
        export=export,
        forward=forward,
    )
    # the hook route's spans take the one road to the exporters too (each span once)
    writer.provider.add_span_processor(telemetry.exporting)
    routes: dict[str, Route] = {
        HOOK_ROUTE: route,
        "/v1/logs": OtlpSignalIngest("logs", [telemetry.on_logs]),
        "/v1/metrics": OtlpSignalIngest("metrics", [telemetry.on_metrics]),
    }
    return ClaudeCodeServing(routes, telemetry, bridge, sessions, route, export, deliverer)
