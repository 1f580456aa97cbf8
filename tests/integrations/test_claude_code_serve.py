"""Claude Code under ``otelhooks serve``: the HTTP hook route, sessions in the server, OTLP logs
and metrics, the join with Claude Code's own spans. A real server on 127.0.0.1 each time."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelhooks import EventLogServer, serve
from otelhooks.integrations.claude_code import session_trace_id
from tests._webhook_server import WebhookServer, webhook_server

pytestmark = pytest.mark.timeout(60)

TOKEN = "s3cret-admin"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ROUTE = "/v1/hooks/claude-code"
SESSION = "sess-9f1c"

NO_RM = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    command: >-
      case "$HOOK_TOOL_INPUT" in *'rm -rf'*)
      echo 'rm -rf is not allowed here' >&2; exit 2;; esac
"""


def _event(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": SESSION,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": name,
        **fields,
    }


def _bash(name: str, use_id: str, command: str, **fields: Any) -> dict[str, Any]:
    return _event(
        name, tool_name="Bash", tool_input={"command": command}, tool_use_id=use_id, **fields
    )


def _span_of(server: EventLogServer) -> Any:
    """The server's Claude Code parts (what ``serve`` built)."""
    return next(o for o in server._owned if hasattr(o, "span_processor"))


@pytest.fixture
def exported() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def hooks_file(tmp_path: Path) -> Path:
    path = tmp_path / "otelhooks.yaml"
    path.write_text(NO_RM)
    return path


@pytest.fixture
def server(hooks_file: Path, exported: InMemorySpanExporter) -> Iterator[EventLogServer]:
    server = serve([hooks_file], token=TOKEN, span_exporters=[exported])
    try:
        yield server
    finally:
        server.stop()


def _spans(server: EventLogServer, exported: InMemorySpanExporter) -> list[ReadableSpan]:
    assert _span_of(server).flush()
    return list(exported.get_finished_spans())


def test_pre_tool_use_denied_by_a_hook_answers_claude_codes_deny_json(
    server: EventLogServer,
) -> None:
    response = httpx.post(
        server.url + ROUTE, json=_bash("PreToolUse", "toolu_1", "rm -rf /"), headers=AUTH
    )
    assert response.status_code == 200
    assert response.json() == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "rm -rf is not allowed here",
        }
    }


def test_an_allowed_tool_call_answers_an_empty_object(server: EventLogServer) -> None:
    response = httpx.post(
        server.url + ROUTE, json=_bash("PreToolUse", "toolu_2", "ls"), headers=AUTH
    )
    assert response.status_code == 200
    assert response.json() == {}


def test_the_hook_route_needs_the_ingest_token(server: EventLogServer) -> None:
    body = _bash("PreToolUse", "toolu_3", "ls")
    assert httpx.post(server.url + ROUTE, json=body).status_code == 401
    wrong = {"Authorization": "Bearer nope"}
    assert httpx.post(server.url + ROUTE, json=body, headers=wrong).status_code == 403


def test_a_body_that_is_not_a_json_object_is_a_400(server: EventLogServer) -> None:
    assert httpx.post(server.url + ROUTE, content=b"{nope", headers=AUTH).status_code == 400
    assert httpx.post(server.url + ROUTE, json=[1, 2], headers=AUTH).status_code == 400


def test_a_failing_bridge_is_a_500_which_claude_code_treats_as_non_blocking(
    server: EventLogServer,
) -> None:
    _span_of(server).sessions.close()  # the session store is gone: every event fails
    response = httpx.post(
        server.url + ROUTE, json=_bash("PreToolUse", "toolu_4", "rm -rf /"), headers=AUTH
    )
    assert response.status_code == 500
    assert response.json()["error"] == "hook_failed"


def test_fail_closed_denies_pre_tool_use_when_the_bridge_fails(hooks_file: Path) -> None:
    server = serve([hooks_file], token=TOKEN, fail_closed=True)
    try:
        _span_of(server).sessions.close()
        response = httpx.post(
            server.url + ROUTE, json=_bash("PreToolUse", "toolu_5", "ls"), headers=AUTH
        )
        assert response.status_code == 200
        decision = response.json()["hookSpecificOutput"]
        assert decision["permissionDecision"] == "deny"
        assert "could not check" in decision["permissionDecisionReason"]
    finally:
        server.stop()


# Hooks run one after another: a slow one uses up the route's answer time (1 s here, 8 s by
# default) before the guard after it, which blocks when it fails, had a turn.
SLOW_THEN_POLICY = """\
hooks:
  - id: audit
    type: PreToolUse
    matcher: Bash
    command: sleep 60
    timeout: 2
  - id: policy
    type: PreToolUse
    matcher: Bash
    command: "true"
    on_error: ON_ERROR
"""


@pytest.mark.parametrize("on_error", ["block", "continue"])
def test_a_late_answer_is_a_deny_when_a_guard_to_run_blocks_when_it_fails(
    tmp_path: Path, on_error: str
) -> None:
    """Or when it continues when it fails but had not had its time (the deadlines of the
    audit and the guard, one after another, more than the route's 1 s): a guard cut short.
    Before, that was 500, a non-blocking error, and Claude Code ran the tool."""
    hooks = tmp_path / "otelhooks.yaml"
    hooks.write_text(SLOW_THEN_POLICY.replace("ON_ERROR", on_error))
    server = serve([hooks], token=TOKEN, hook_timeout_s=1.0)
    try:
        response = httpx.post(
            server.url + ROUTE, json=_bash("PreToolUse", "toolu_7", "rm -rf /"), headers=AUTH
        )
    finally:
        server.stop()
    assert response.status_code == 200
    reason = response.json()["hookSpecificOutput"]["permissionDecisionReason"]
    why = {
        "block": "(hook policy blocks when it fails)",
        "continue": ", hook audit, policy cut short (their timeouts: 14 s)",
    }[on_error]
    assert reason == (
        f"otelhooks could not check this tool call, so it is blocked: "
        f"otelhooks: no answer within 1 s{' ' if on_error == 'block' else ''}{why}"
    )


def test_a_tool_use_is_one_execute_tool_span_from_pre_to_post_in_the_session_trace(
    server: EventLogServer, exported: InMemorySpanExporter
) -> None:
    post = [
        _event("UserPromptSubmit", prompt="list files"),
        _bash("PreToolUse", "toolu_6", "ls"),
        _bash("PostToolUse", "toolu_6", "ls", tool_response={"stdout": "a\nb"}),
        _event("Stop"),
    ]
    for body in post:
        assert httpx.post(server.url + ROUTE, json=body, headers=AUTH).status_code == 200
    spans = {s.name: s for s in _spans(server, exported)}
    tool, turn = spans["execute_tool Bash"], spans["invoke_agent claude-code"]
    assert tool.context is not None
    assert turn.context is not None
    assert tool.context.trace_id == turn.context.trace_id == session_trace_id(SESSION)
    assert tool.parent is not None
    assert tool.parent.span_id == turn.context.span_id
    assert tool.attributes is not None
    assert tool.attributes["gen_ai.tool.call.id"] == "toolu_6"
    assert tool.attributes["otelhooks.tool.outcome"] == "success"


def test_sessions_survive_a_restart_when_the_event_log_is_durable(
    tmp_path: Path, hooks_file: Path
) -> None:
    events_file = tmp_path / "events.yaml"
    events_file.write_text(
        f"kind: agent_events\nname: cc\ndurable: true\npath: {tmp_path / 'events.sqlite3'}\n"
    )
    first = serve([hooks_file, events_file], token=TOKEN)
    try:
        pre = _bash("PreToolUse", "toolu_7", "ls")
        assert httpx.post(first.url + ROUTE, json=pre, headers=AUTH).status_code == 200
        started = _span_of(first).sessions.tool_span(SESSION, "toolu_7")
    finally:
        first.stop()
    exported = InMemorySpanExporter()
    second = serve([hooks_file, events_file], token=TOKEN, span_exporters=[exported])
    try:
        post = _bash("PostToolUse", "toolu_7", "ls", tool_response="ok")
        assert httpx.post(second.url + ROUTE, json=post, headers=AUTH).status_code == 200
        (tool,) = [s for s in _spans(second, exported) if s.name == "execute_tool Bash"]
    finally:
        second.stop()
    assert started is not None
    assert tool.context is not None
    assert tool.context.span_id == started
    assert tool.attributes is not None
    assert tool.attributes["otelhooks.tool.outcome"] == "success"


# -- OTLP logs and metrics ---------------------------------------------------------------------


def _kv(key: str, value: str | int | float) -> KeyValue:
    if isinstance(value, str):
        return KeyValue(key=key, value=AnyValue(string_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    return KeyValue(key=key, value=AnyValue(double_value=value))


def _api_request_log() -> ExportLogsServiceRequest:
    request = ExportLogsServiceRequest()
    resource_logs = request.resource_logs.add()
    resource_logs.resource.attributes.append(_kv("service.name", "claude-code"))
    scope = resource_logs.scope_logs.add()
    scope.scope.name = "com.anthropic.claude_code.events"
    record = scope.log_records.add()
    record.time_unix_nano = time.time_ns()
    record.body.string_value = "claude_code.api_request"
    for key, value in {
        "session.id": SESSION,
        "event.name": "api_request",
        "model": "claude-sonnet-4-5",
        "input_tokens": 30,
        "output_tokens": 12,
        # the names the real client (2.1) writes next to input_tokens, which excludes them
        "cache_read_tokens": 1000,
        "cache_creation_tokens": 200,
        "cost_usd": 0.00036,
    }.items():
        record.attributes.append(_kv(key, value))
    return request


@pytest.fixture
def llm_hooks(tmp_path: Path) -> Iterator[tuple[Path, WebhookServer]]:
    with webhook_server() as sink:
        path = tmp_path / "llm.yaml"
        path.write_text(
            "hooks:\n  - id: llm-audit\n    type: llm_output\n"
            f'    webhook: {{url: "{sink.url}/llm"}}\n'
        )
        yield path, sink


def _llm_output(sink: WebhookServer, count: int) -> list[dict[str, Any]]:
    got = [r.json() for r in sink.wait_for("/llm", count)]
    return [g.get("payload", g) for g in got]


def test_claude_code_log_events_reach_observer_hooks_in_the_session_trace(
    llm_hooks: tuple[Path, WebhookServer],
) -> None:
    path, sink = llm_hooks
    server = serve([path], token=TOKEN)
    try:
        body = _api_request_log().SerializeToString()
        headers = {**AUTH, "Content-Type": "application/x-protobuf"}
        response = httpx.post(server.url + "/v1/logs", content=body, headers=headers)
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/x-protobuf"
        (event,) = _llm_output(sink, 1)
    finally:
        server.stop()
    text = json.dumps(event)
    assert SESSION in text
    assert format(session_trace_id(SESSION), "032x") in text
    assert "0.00036" in text
    # Anthropic's uncached input plus the cache's read and creation: the conventions' input
    assert event["tokenUsage"]["input"] == 30 + 1000 + 200
    assert (event["cacheReadTokens"], event["cacheCreationTokens"]) == (1000, 200)


def test_otlp_json_logs_sent_chunked_are_accepted(
    llm_hooks: tuple[Path, WebhookServer],
) -> None:
    from google.protobuf import json_format

    path, sink = llm_hooks
    data = json.dumps(json_format.MessageToDict(_api_request_log())).encode()

    def chunks() -> Iterator[bytes]:  # an iterator body goes out with Transfer-Encoding: chunked
        for i in range(0, len(data), 64):
            yield data[i : i + 64]

    server = serve([path], token=TOKEN)
    try:
        headers = {**AUTH, "Content-Type": "application/json"}
        response = httpx.post(server.url + "/v1/logs", content=chunks(), headers=headers)
        assert response.status_code == 200
        assert response.json() == {}
        assert _llm_output(sink, 1)
    finally:
        server.stop()


def test_otlp_metrics_are_accepted_in_protobuf_and_json(server: EventLogServer) -> None:
    from google.protobuf import json_format

    request = ExportMetricsServiceRequest()
    metric = request.resource_metrics.add().scope_metrics.add().metrics.add()
    metric.name = "claude_code.token.usage"
    point = metric.sum.data_points.add()
    point.as_double = 42.0
    point.attributes.append(_kv("session.id", SESSION))
    proto = {**AUTH, "Content-Type": "application/x-protobuf"}
    as_json = {**AUTH, "Content-Type": "application/json"}
    url = server.url + "/v1/metrics"
    assert httpx.post(url, content=request.SerializeToString(), headers=proto).status_code == 200
    body = json.dumps(json_format.MessageToDict(request))
    assert httpx.post(url, content=body, headers=as_json).status_code == 200
    assert httpx.post(url, content=b"{nope", headers=as_json).status_code == 400
    assert httpx.post(url, content=b"x", headers={**AUTH}).status_code == 415
    assert _span_of(server).span_processor.metrics == {"claude_code.token.usage": 84.0}


def test_claude_codes_tool_span_joins_the_session_trace_linked_to_the_hook_span(
    server: EventLogServer, exported: InMemorySpanExporter
) -> None:
    for body in (_bash("PreToolUse", "toolu_8", "ls"), _bash("PostToolUse", "toolu_8", "ls")):
        assert httpx.post(server.url + ROUTE, json=body, headers=AUTH).status_code == 200
    theirs = "7712486b0041c681551858be97ca473f"
    request = _claude_tool_span_request(theirs, SESSION, "toolu_8")
    headers = {**AUTH, "Content-Type": "application/json"}
    response = httpx.post(server.url + "/v1/traces", json=request, headers=headers)
    assert response.status_code == 200
    spans = _spans(server, exported)
    (hook,) = [s for s in spans if s.name == "execute_tool Bash"]
    (joined,) = [s for s in spans if s.name == "claude_code.tool"]
    assert joined.context is not None
    assert hook.context is not None
    assert joined.context.trace_id == hook.context.trace_id == session_trace_id(SESSION)
    assert joined.parent is not None
    assert format(joined.parent.span_id, "016x") == ("f19001d0706f79f6")
    assert [link.context.span_id for link in joined.links] == [hook.context.span_id]
    assert joined.attributes is not None
    assert joined.attributes["claude_code.trace_id"] == theirs


def _records(server: EventLogServer, session: str) -> list[dict[str, Any]]:
    (log,) = server.app.logs.values()
    deadline = time.monotonic() + 30
    while True:
        records = [r.to_json() for r in log.read(0, 1000).records]
        mine = [r for r in records if r["session"] == session]
        if mine or time.monotonic() > deadline:
            time.sleep(0.3)  # a duplicate would arrive right after the first
            records = [r.to_json() for r in log.read(0, 1000).records]
            return [r for r in records if r["session"] == session]
        time.sleep(0.05)


def test_a_tool_use_reaches_the_event_log_once_from_hooks_and_telemetry(
    server: EventLogServer,
) -> None:
    for body in (_bash("PreToolUse", "toolu_9", "ls"), _bash("PostToolUse", "toolu_9", "ls")):
        assert httpx.post(server.url + ROUTE, json=body, headers=AUTH).status_code == 200
    request = _claude_tool_span_request("7712486b0041c681551858be97ca473f", SESSION, "toolu_9")
    headers = {**AUTH, "Content-Type": "application/json"}
    assert httpx.post(server.url + "/v1/traces", json=request, headers=headers).status_code == 200
    assert [(r["kind"], r["tool"]) for r in _records(server, SESSION)] == [
        ("after_tool_result", "Bash")
    ]


def test_claude_codes_tool_span_without_hooks_still_reaches_the_event_log(
    server: EventLogServer,
) -> None:
    request = _claude_tool_span_request("8812486b0041c681551858be97ca473f", "no-hooks", "toolu_z")
    headers = {**AUTH, "Content-Type": "application/json"}
    assert httpx.post(server.url + "/v1/traces", json=request, headers=headers).status_code == 200
    assert [(r["kind"], r["tool"]) for r in _records(server, "no-hooks")] == [
        ("after_tool_result", "Bash")
    ]


def _claude_tool_span_request(trace: str, session: str, use_id: str) -> dict[str, Any]:
    claude_span = {
        "traceId": trace,
        "spanId": "a000f98b4dff3898",
        "parentSpanId": "f19001d0706f79f6",
        "name": "claude_code.tool",
        "kind": 1,
        "startTimeUnixNano": str(time.time_ns() - 1_000_000),
        "endTimeUnixNano": str(time.time_ns()),
        "attributes": [
            {"key": "session.id", "value": {"stringValue": session}},
            {"key": "tool_use_id", "value": {"stringValue": use_id}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "Bash"}},
            {"key": "gen_ai.tool.call.id", "value": {"stringValue": use_id}},
            {"key": "gen_ai.conversation.id", "value": {"stringValue": session}},
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
        ],
    }
    request = {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "claude-code"}}]
                },
                "scopeSpans": [
                    {"scope": {"name": "com.anthropic.claude_code.tracing"}, "spans": [claude_span]}
                ],
            }
        ]
    }
    return request


def test_metric_points_and_log_records_not_kept_are_a_partial_success(
    server: EventLogServer,
) -> None:
    from google.protobuf import json_format
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceResponse,
    )

    telemetry = _span_of(server).span_processor
    request = ExportMetricsServiceRequest()
    scope = request.resource_metrics.add().scope_metrics.add()
    for n in range(telemetry.max_metrics + 5):  # five names past the bound
        metric = scope.metrics.add()
        metric.name = f"m{n}"
        metric.gauge.data_points.add().as_double = 1.0
    proto = {**AUTH, "Content-Type": "application/x-protobuf"}
    url = server.url + "/v1/metrics"
    answer = httpx.post(url, content=request.SerializeToString(), headers=proto)
    metrics = ExportMetricsServiceResponse.FromString(answer.content)

    logs = ExportLogsServiceRequest()
    records = logs.resource_logs.add().scope_logs.add().log_records
    for use_id, size in (("toolu_small", 10), ("toolu_huge", telemetry.max_log_bytes // 10 + 1)):
        record = records.add()
        record.event_name = "claude_code.tool_result"
        for key, value in {"session.id": SESSION, "tool_use_id": use_id, "v": "x" * size}.items():
            record.attributes.append(_kv(key, value))
    as_json = {**AUTH, "Content-Type": "application/json"}
    url = server.url + "/v1/logs"
    kept = httpx.post(url, content=json.dumps(json_format.MessageToDict(logs)), headers=as_json)

    assert answer.status_code == 200
    assert metrics.partial_success.rejected_data_points == 5  # was 0: a whole success
    assert "otelhooks.dropped" in metrics.partial_success.error_message
    assert kept.status_code == 200
    assert kept.json()["partialSuccess"]["rejectedLogRecords"] == "1"  # was {}
    assert telemetry.tool(SESSION, "toolu_small")
    assert not telemetry.tool(SESSION, "toolu_huge")
