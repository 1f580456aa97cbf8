"""Faulty webhook endpoints during a whole agent run: the run completes, every span is exported
over OTLP/HTTP to a real receiver, a control hook follows its ``onError`` policy with the
documented error class, and a notification follows the written retry rule.

One agent run per fault (module-scoped), against real servers on 127.0.0.1: a control hook on
``beforeToolCall`` and a notification on ``afterToolCall``, both pointing at the faulty
endpoint, with a short retry deadline (1 s) to keep it fast. Only the two faults that are about
time get a short timeout (0.3 s); the others get one no loaded machine reaches, so a slow CI
runner cannot turn "invalid response" into "timeout".
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import structlog
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelhooks import (
    AgentMetrics,
    AgentTracer,
    CountingBatchSpanProcessor,
    HookSpanProcessor,
    WebhookConfig,
    WebhookDeliverer,
)
from otelhooks._actions._outbox import Outbox
from otelhooks._actions._webhook_http import CONTROL_RESPONSE_LIMIT
from tests._webhook_server import Reply, WebhookServer, webhook_server
from tests.reliability._parts import RawOtlpSink, raw_otlp_sink

ALLOW = {"decision": "allow"}
TIMEOUT_S = 0.3  # for the faults that are about time
PATIENT_S = 10.0  # for the faults that answer at once
RETRY_DEADLINE_S = 1.0
TOOL_CALLS = 3


@dataclass(frozen=True)
class Fault:
    """A way an endpoint misbehaves and what each kind of hook must make of it."""

    reply: Reply | None  # None: nothing listens on the port (connection refused)
    control_error: str  # the error class a control hook records
    notify_outcome: str  # "ok", or the drop reason of the notification
    timeout_s: float = PATIENT_S  # both hooks' webhook timeout


FAULTS = {
    "connection-refused": Fault(None, "network_error", "retry_deadline"),
    "no-answer-in-time": Fault(
        Reply.json(ALLOW, delay_s=2.0), "timeout", "retry_deadline", TIMEOUT_S
    ),
    "status-500": Fault(Reply.json(ALLOW, status=500), "http_error", "retry_deadline"),
    "status-204": Fault(Reply(204), "http_error", "ok"),
    "invalid-json": Fault(Reply(200, b"{not json"), "invalid_response", "ok"),
    "missing-decision": Fault(Reply.json({"reason": "x"}), "invalid_response", "ok"),
    "old-nested-format": Fault(
        Reply.json({"hookSpecificOutput": {"permissionDecision": "allow"}}),
        "invalid_response",
        "ok",
    ),
    "oversized": Fault(
        Reply.json({**ALLOW, "pad": "x" * CONTROL_RESPONSE_LIMIT}), "response_too_large", "ok"
    ),
    "dripping": Fault(
        Reply(200, json.dumps(ALLOW).encode(), drip_s=0.1), "timeout", "ok", TIMEOUT_S
    ),
}


@dataclass
class FaultyRun:
    fault: Fault
    reason: str  # the run's on_complete reason
    ran: list[str]
    spans: list[ReadableSpan]  # what the agent ended (an in-memory exporter on the provider)
    sink: RawOtlpSink
    server: WebhookServer
    reader: InMemoryMetricReader
    logs: list[MutableMapping[str, Any]]

    def counter(self, name: str, **attributes: Any) -> float:
        data = self.reader.get_metrics_data()
        total = 0.0
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    if metric.name != name:
                        continue
                    for point in metric.data.data_points:
                        attrs = dict(point.attributes or {})
                        if all(attrs.get(k) == v for k, v in attributes.items()):
                            total += point.value  # type: ignore[union-attr]
        return total


def dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def run_agent(tracer: AgentTracer, ran: list[str]) -> str:
    """An agent run as an instrumented runtime writes it with the public API: a model call per
    step, the tool calls it asked for (two, then one), a last answer. Returns its reason."""

    def evaluate(expression: str) -> str:
        ran.append(expression)
        left, _, right = expression.partition(" + ")
        return str(int(left) + int(right))

    calls = [f"{i} + 1" for i in range(TOOL_CALLS)]
    with tracer.operation("faulty-endpoints", input="compute") as op:
        for text, batch in (("computing", calls[:2]), ("more", calls[2:]), ("done", [])):
            with op.step() as step:
                with step.llm("scripted") as model:
                    model.record(text, finish_reason="tool_calls" if batch else "stop")
                for expression in batch:
                    step.run_tool("calc", "evaluate", {"expression": expression}, evaluate)
    return op.reason


@pytest.fixture(scope="module", params=sorted(FAULTS))
def faulty_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FaultyRun]:
    fault = FAULTS[request.param]
    with webhook_server() as server, raw_otlp_sink() as sink:
        base = dead_url() if fault.reply is None else server.url
        if fault.reply is not None:
            server.routes["/control"] = fault.reply
            server.routes["/notify"] = fault.reply
        reader = InMemoryMetricReader()
        meters = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
        metrics = AgentMetrics(meters)
        provider = TracerProvider(shutdown_on_exit=False)
        hooks = HookSpanProcessor(metrics=metrics)
        ended = InMemorySpanExporter()
        provider.add_span_processor(hooks)
        provider.add_span_processor(SimpleSpanProcessor(ended))
        exporter = OTLPSpanExporter(endpoint=f"{sink.endpoint}/v1/traces")
        provider.add_span_processor(CountingBatchSpanProcessor(exporter))
        deliverer = WebhookDeliverer(
            metrics=metrics,
            retry_deadline_s=RETRY_DEADLINE_S,
            outbox_path=tmp_path_factory.mktemp("outbox") / "outbox.sqlite3",
        )
        hooks.engine.deliverer = deliverer
        webhook = {"timeout": fault.timeout_s}
        hooks.register(
            [
                {"id": "control", "type": "beforeToolCall",
                 "webhook": {"url": f"{base}/control", "responseHandling": "toolCall", **webhook}},
                {"id": "notify", "type": "afterToolCall",
                 "webhook": {"url": f"{base}/notify", **webhook}},
            ]
        )  # fmt: skip
        tracer = AgentTracer(tracer_provider=provider, hooks=hooks, metrics=metrics)
        ran: list[str] = []
        with structlog.testing.capture_logs() as logs:
            reason = run_agent(tracer, ran)
            assert deliverer.flush(RETRY_DEADLINE_S + 10)
        assert provider.force_flush(10_000)
        assert metrics.flush(10.0)
        spans = list(ended.get_finished_spans())
        yield FaultyRun(fault, reason, ran, spans, sink, server, reader, logs)
        deliverer.shutdown(5)
        provider.shutdown()
        meters.shutdown()


def test_the_agent_run_completes(faulty_run: FaultyRun) -> None:
    assert faulty_run.reason == "done"
    assert len(faulty_run.ran) == TOOL_CALLS  # onError: continue lets every call run


def test_every_span_of_the_run_is_exported(faulty_run: FaultyRun) -> None:
    ended = sorted(span.name for span in faulty_run.spans)
    assert len(ended) > TOOL_CALLS
    assert sorted(faulty_run.sink.span_names()) == ended


def test_the_control_hook_records_the_documented_error_class(faulty_run: FaultyRun) -> None:
    tools = [s for s in faulty_run.spans if s.name == "execute_tool evaluate"]
    assert len(tools) == TOOL_CALLS
    for span in tools:
        errors = (span.attributes or {}).get("otelhooks.hook.errors")
        assert errors is not None
        assert faulty_run.fault.control_error in str(errors)


def test_the_notification_follows_the_retry_rule(faulty_run: FaultyRun) -> None:
    outcome = faulty_run.fault.notify_outcome
    ok = faulty_run.counter(
        "otelhooks.hook.invocations", **{"otelhooks.hook.id": "notify", "otelhooks.outcome": "ok"}
    )
    dropped = faulty_run.counter(
        "otelhooks.dropped",
        **{"otelhooks.drop.source": "webhook", "otelhooks.drop.reason": outcome},
    )
    if outcome == "ok":
        assert (ok, dropped) == (TOOL_CALLS, 0)
        assert len(faulty_run.server.requests("/notify")) == TOOL_CALLS  # no retry
    else:
        assert (ok, dropped) == (0, TOOL_CALLS)
        if faulty_run.fault.reply is not None:  # retried: each event was sent more than once
            assert len(faulty_run.server.requests("/notify")) > TOOL_CALLS


def test_a_notification_given_up_on_is_logged_once_per_event(faulty_run: FaultyRun) -> None:
    failed = [
        line
        for line in faulty_run.logs
        if line["event"] == "webhook delivery failed" and line["hook_id"] == "notify"
    ]
    if faulty_run.fault.notify_outcome == "ok":
        assert failed == []
    else:
        assert [line["reason"] for line in failed] == [faulty_run.fault.notify_outcome] * TOOL_CALLS


def test_control_requests_are_sent_once_per_call(faulty_run: FaultyRun) -> None:
    if faulty_run.fault.reply is not None:
        assert len(faulty_run.server.requests("/control")) == TOOL_CALLS


@pytest.mark.parametrize("fault", ["oversized", "dripping"])
def test_a_queued_delivery_answered_2xx_with_an_unreadable_body_is_delivered_once(
    fault: str, tmp_path: Path
) -> None:
    reports: list[tuple[str, str]] = []
    with webhook_server() as server:
        server.routes["/queued"] = FAULTS[fault].reply  # type: ignore[assignment]
        box = Outbox(
            tmp_path / "outbox.sqlite3", poll_s=0.02,
            report=lambda hook, event, outcome, delivery, reason: reports.append((outcome, reason)),
        )  # fmt: skip
        config = WebhookConfig.model_validate(
            {"url": f"{server.url}/queued", "delivery": "queue", "timeout": FAULTS[fault].timeout_s}
        )
        box.put("queued", "evt-1", config, b'{"eventId": "evt-1"}')
        deadline = time.monotonic() + 30
        while box.pending() and time.monotonic() < deadline:
            time.sleep(0.02)
        box.close()
        assert reports == [("ok", "")]
        assert len(server.requests("/queued")) == 1
