"""``POST /v1/traces``: OTLP/HTTP (protobuf and JSON, gzip or not) into the same processors, so
observer hooks and the event log see spans from agents in other processes."""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import Recorder
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from structlog.testing import capture_logs

from otelhooks import (
    AgentEvents,
    AgentEventsConfig,
    Block,
    EventLogClient,
    EventLogServer,
    EventRecord,
    HookSpanProcessor,
    serve,
)
from otelhooks import semconv as sc
from otelhooks._export import encode_otlp_json
from otelhooks.testing import TestPipeline, pipeline

TOKEN = "ingest-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
POINTS: Any = ["after_tool_result", "after_loop", "on_error"]


@pytest.fixture(scope="module")
def agent_spans() -> list[ReadableSpan]:
    """The spans of one real agent run: a tool that works, a denied, a failing, a mocked one."""
    with pipeline() as pipe:
        return _run_agent(pipe)


def _run_agent(pipe: TestPipeline) -> list[ReadableSpan]:
    def mock(event: Any) -> None:
        event.mock({"content": "cached", "success": True})

    pipe.register(
        {
            "id": "guard",
            "type": "beforeToolCall",
            "matcher": "rm",
            "handler": lambda e: Block("no"),
        },
        {"id": "fake", "type": "beforeToolCall", "matcher": "fetch", "handler": mock},
    )
    op = pipe.tracer.operation("remote-bot", session_id="sess-9")
    with op, op.step() as step:
        step.run_tool("calc", "add", {"a": 1, "b": 2}, lambda a, b: a + b)
        step.run_tool("fs", "rm", {"path": "/"}, lambda path: None)
        step.run_tool("calc", "div", {"a": 1, "b": 0}, lambda a, b: a / b)
        step.run_tool("web", "fetch", {"url": "u"}, lambda url: "real")
    pipe.flush()
    return pipe.spans()


class Receiver:
    """A server whose processor has a recorder hook and an event log."""

    def __init__(self, **options: Any) -> None:
        self.recorder = Recorder()
        self.copies = InMemorySpanExporter()
        self.processor = HookSpanProcessor()
        self.processor.register([{"id": "rec", "type": "afterToolCall", "handler": self.recorder}])
        self.events = AgentEvents(AgentEventsConfig(name="remote", on=POINTS, mutating=["rm"]))
        self.events.install(self.processor)
        self.server = EventLogServer(
            [self.events.log],
            span_processors=[self.processor, SimpleSpanProcessor(self.copies)],
            token=TOKEN,
            owned=[self.processor, self.events],
            **options,
        ).start()
        self.url = self.server.url

    def records(self, count: int) -> list[EventRecord]:
        got: list[EventRecord] = []
        deadline = time.monotonic() + 30
        with EventLogClient(self.url, token=TOKEN, wait_timeout=2) as client:
            while len(got) < count and time.monotonic() < deadline:
                got.extend(client.wait())
        return got

    def post(self, body: bytes, content_type: str, **headers: str) -> httpx.Response:
        return httpx.post(
            f"{self.url}/v1/traces",
            content=body,
            headers={**AUTH, "Content-Type": content_type, **headers},
        )


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver()
    yield made
    made.server.stop()


def by_name(spans: list[ReadableSpan], name: str) -> ReadableSpan:
    (span,) = [s for s in spans if s.name == name]
    return span


def check_records(records: list[EventRecord], spans: list[ReadableSpan]) -> None:
    assert [(r.kind, r.tool, r.success, r.detail, r.mutating) for r in records] == [
        ("after_tool_result", "calc/add", True, "ok", False),
        ("after_tool_result", "fs/rm", False, "denied by guard", True),
        ("after_tool_result", "calc/div", False, "ZeroDivisionError", False),
        ("after_tool_result", "web/fetch", True, "mocked", False),
        ("after_loop", None, True, "done", False),
    ]
    for record, name in zip(records, ("add", "rm", "div", "fetch"), strict=False):
        span = by_name(spans, f"execute_tool {name}")
        assert record.args_fp == (span.attributes or {})[sc.TOOL_ARGS_FINGERPRINT]
        assert record.trace_id == format(span.context.trace_id, "032x")
        assert record.span_id == format(span.context.span_id, "016x")
        assert record.ts == (span.end_time or 0) // 1_000_000
    assert records[-1].session == "sess-9"


def test_protobuf_export_with_gzip_feeds_observer_hooks_and_the_log(
    receiver: Receiver, agent_spans: list[ReadableSpan]
) -> None:
    exporter = OTLPSpanExporter(
        endpoint=f"{receiver.url}/v1/traces", headers=AUTH, compression=Compression.Gzip
    )
    assert exporter.export(agent_spans) is SpanExportResult.SUCCESS
    check_records(receiver.records(5), agent_spans)
    receiver.processor.force_flush()
    assert receiver.recorder.fields("apiName", "success", "mocked") == [
        ("add", True, False),
        ("rm", False, False),
        ("fetch", True, True),
    ]


def test_json_from_encode_otlp_json_feeds_the_log(
    receiver: Receiver, agent_spans: list[ReadableSpan]
) -> None:
    response = receiver.post(encode_otlp_json(agent_spans).encode(), "application/json")
    assert (response.status_code, response.json()) == (200, {})
    check_records(receiver.records(5), agent_spans)


def test_gzipped_json_is_accepted(receiver: Receiver, agent_spans: list[ReadableSpan]) -> None:
    body = gzip.compress(encode_otlp_json(agent_spans).encode())
    response = receiver.post(body, "application/json", **{"Content-Encoding": "gzip"})
    assert response.status_code == 200
    assert len(receiver.records(5)) == 5


def test_received_spans_equal_the_originals(
    receiver: Receiver, agent_spans: list[ReadableSpan]
) -> None:
    body = encode_spans(agent_spans).SerializeToString()
    response = receiver.post(body, "application/x-protobuf")
    assert response.headers["content-type"] == "application/x-protobuf"
    assert not ExportTraceServiceResponse.FromString(response.content).HasField("partial_success")
    received = receiver.copies.get_finished_spans()
    assert len(received) == len(agent_spans)
    for got, sent in zip(received, agent_spans, strict=True):
        assert got.name == sent.name
        assert got.context is not None
        assert sent.context is not None
        assert (got.context.trace_id, got.context.span_id) == (
            sent.context.trace_id,
            sent.context.span_id,
        )
        assert (got.parent.span_id if got.parent else None) == (
            sent.parent.span_id if sent.parent else None
        )
        assert (got.kind, got.start_time, got.end_time) == (
            sent.kind,
            sent.start_time,
            sent.end_time,
        )
        assert (got.status.status_code, got.status.description) == (
            sent.status.status_code,
            sent.status.description,
        )
        assert dict(got.attributes or {}) == dict(sent.attributes or {})
        assert [(e.name, dict(e.attributes or {}), e.timestamp) for e in got.events] == [
            (e.name, dict(e.attributes or {}), e.timestamp) for e in sent.events
        ]
        assert [(lk.context.span_id, dict(lk.attributes or {})) for lk in got.links] == [
            (lk.context.span_id, dict(lk.attributes or {})) for lk in sent.links
        ]
        assert dict(got.resource.attributes) == dict(sent.resource.attributes)
        assert got.instrumentation_scope is not None
        assert sent.instrumentation_scope is not None
        assert got.instrumentation_scope.name == sent.instrumentation_scope.name


def test_received_runs_keep_their_reason_error_type_and_user(receiver: Receiver) -> None:
    with pipeline() as pipe:
        with pipe.tracer.operation("bot", user_id="u-7") as op:
            op.complete("max_steps")
        with pytest.raises(RuntimeError), pipe.tracer.operation("bot", user_id="u-7"):
            raise RuntimeError("model down")
        spans = pipe.spans()
    assert receiver.post(encode_otlp_json(spans).encode(), "application/json").status_code == 200
    got = receiver.records(3)
    assert [(r.kind, r.success, r.detail, r.user_id) for r in got] == [
        ("after_loop", False, "max_steps", "u-7"),
        ("after_loop", False, "error", "u-7"),
        ("on_error", False, "RuntimeError", "u-7"),
    ]


def test_spans_with_bad_ids_are_rejected_in_a_partial_success(receiver: Receiver) -> None:
    span = {"traceId": "ab" * 16, "spanId": "cd", "name": "execute_tool x"}
    request = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    response = receiver.post(json.dumps(request).encode(), "application/json")
    assert response.status_code == 200
    assert response.json()["partialSuccess"]["rejectedSpans"] == "1"


@pytest.mark.parametrize(
    ("body", "content_type", "headers", "status"),
    [
        (b"\xff\xff\xff", "application/x-protobuf", {}, 400),
        (b"{not json", "application/json", {}, 400),
        (b"[1, 2]", "application/json", {}, 400),
        (b"{}", "text/plain", {}, 415),
        (b"{}", "application/json", {"Content-Encoding": "br"}, 415),
        (b"not gzip", "application/json", {"Content-Encoding": "gzip"}, 400),
        # mtime=0: a test id holds the body, and it must be the same in every worker
        (gzip.compress(b"{}", mtime=0)[:-6], "application/json", {"Content-Encoding": "gzip"}, 400),
    ],
)
def test_bad_requests_are_refused(
    receiver: Receiver, body: bytes, content_type: str, headers: dict[str, str], status: int
) -> None:
    response = receiver.post(body, content_type, **headers)
    assert response.status_code == status
    assert receiver.copies.get_finished_spans() == ()


def test_bodies_past_the_bound_get_413_before_and_after_inflating() -> None:
    small = Receiver(max_body_bytes=1000)
    try:
        assert small.post(b" " * 2000, "application/json").status_code == 413
        bomb = gzip.compress(b" " * 100_000)
        assert len(bomb) < 1000
        assert (
            small.post(bomb, "application/json", **{"Content-Encoding": "gzip"}).status_code == 413
        )
    finally:
        small.server.stop()


@pytest.mark.parametrize(("token", "status"), [(None, 401), ("wrong", 403)])
def test_ingest_needs_the_token(
    receiver: Receiver, agent_spans: list[ReadableSpan], token: str | None, status: int
) -> None:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    response = httpx.post(
        f"{receiver.url}/v1/traces", content=encode_otlp_json(agent_spans), headers=headers
    )
    assert response.status_code == status
    assert receiver.copies.get_finished_spans() == ()


def test_a_separate_ingest_token_is_not_an_admin_token(agent_spans: list[ReadableSpan]) -> None:
    separate = Receiver(ingest_token="ingest-only")
    try:
        body = encode_otlp_json(agent_spans).encode()
        assert separate.post(body, "application/json").status_code == 403  # the admin token
        ingest = {"Authorization": "Bearer ingest-only"}
        assert separate.post(body, "application/json", **ingest).status_code == 200
        events = httpx.get(f"{separate.url}/v1/events", headers=ingest)
        assert events.status_code == 403
    finally:
        separate.server.stop()


def test_serve_builds_logs_from_hook_files_and_warns_about_intercept_hooks(
    tmp_path: Path, agent_spans: list[ReadableSpan]
) -> None:
    events_file = tmp_path / "events.yaml"
    events_file.write_text(
        "kind: agent_events\nname: shop\non: [after_tool_result]\nignore: [div]\n"
        "durable: true\npath: data/events.sqlite3\n"
    )
    hooks_file = tmp_path / "hooks.json"
    hooks_file.write_text(
        json.dumps([{"id": "guard", "type": "beforeToolCall", "handler": "builtins:print"}])
    )
    with capture_logs() as logs:
        server = serve([events_file, hooks_file], token=TOKEN)
    try:
        warnings = [line for line in logs if line["log_level"] == "warning"]
        assert [w["hook_ids"] for w in warnings] == [["guard"]]
        assert "intercept hooks cannot act" in warnings[0]["event"]
        assert list(server.app.logs) == ["shop"]
        response = httpx.post(
            f"{server.url}/v1/traces",
            content=encode_otlp_json(agent_spans),
            headers={**AUTH, "Content-Type": "application/json"},
        )
        assert response.status_code == 200
        with EventLogClient(server.url, token=TOKEN, wait_timeout=5) as client:
            tools: list[str | None] = []
            while len(tools) < 3:
                tools += [r.tool for r in client.wait()]
        assert tools == ["calc/add", "fs/rm", "web/fetch"]
    finally:
        server.stop()
    assert (tmp_path / "data" / "events.sqlite3").exists()


def test_serve_without_agent_events_files_serves_a_default_log() -> None:
    server = serve(token=TOKEN)
    try:
        assert list(server.app.logs) == ["agent_events"]
    finally:
        server.stop()
