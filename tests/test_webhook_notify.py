"""Notification webhooks: delivered off the agent's path to a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import structlog

from otelhooks import PayloadBuilder, ToolResult, WebhookDeliverer
from otelhooks._actions._webhook_payload import RESULT_LIMIT, EmailCache
from otelhooks.testing import TestPipeline
from tests._webhook_server import Reply, WebhookServer


def notify(
    server: WebhookServer, path: str = "/n", type: str = "afterToolCall", **webhook: Any
) -> dict[str, Any]:
    return {
        "id": f"n{path.replace('/', '-')}",
        "type": type,
        "webhook": {"url": server.url + path, **webhook},
    }


def run(pipe: TestPipeline, args: dict[str, Any] | None = None, output: str = "ok") -> ToolResult:
    with pipe.tracer.operation("agent", user_id="u-1") as op, op.step() as step:
        return step.run_tool("fs", "readFile", args or {"path": "a.txt"}, lambda **_: output)


def test_a_notification_carries_the_event_with_hook_id_and_type(
    pipe: TestPipeline, server: WebhookServer, deliverer: WebhookDeliverer
) -> None:
    pipe.register(notify(server))
    run(pipe)
    assert deliverer.flush(10)
    body = server.requests("/n")[0].json()
    assert (body["event"], body["apiName"], body["success"]) == (
        "after_tool_call",
        "readFile",
        True,
    )
    assert (body["hookId"], body["hookType"]) == ("n-n", "afterToolCall")
    assert body["eventId"]
    assert body["traceId"]
    assert body["spanId"]


def test_event_fields_select_and_body_merges_with_body_winning(
    pipe: TestPipeline, server: WebhookServer, deliverer: WebhookDeliverer
) -> None:
    pipe.register(
        notify(
            server,
            eventFields=["apiName", "success"],
            body={"success": "overridden", "team": "ops"},
        )
    )
    run(pipe)
    deliverer.flush(10)
    body = server.requests("/n")[0].json()
    assert set(body) == {"eventId", "apiName", "success", "team", "hookId", "hookType"}
    assert body["success"] == "overridden"


def test_tool_results_pass_through_redaction_before_leaving(
    pipe: TestPipeline, server: WebhookServer, deliverer: WebhookDeliverer
) -> None:
    deliverer.builder.capture_content = True  # content in the body at all
    pipe.register(notify(server))
    run(pipe, output="x" * (RESULT_LIMIT * 3))
    deliverer.flush(10)
    body = server.requests("/n")[0].json()
    assert len(body["content"]) < RESULT_LIMIT + 100
    assert body["content"].endswith("more characters]")


def test_workspace_format_sends_the_workspace_body(
    pipe: TestPipeline, server: WebhookServer, deliverer: WebhookDeliverer
) -> None:
    deliverer.builder.capture_content = True  # toolInput and toolResult filled in
    pipe.register(notify(server, type="PostToolUse", format="workspace", workspaceId="ws-1"))
    run(pipe)
    deliverer.flush(10)
    body = server.requests("/n")[0].json()
    assert set(body) == {
        "event",
        "toolName",
        "matcherValue",
        "toolInput",
        "toolResult",
        "payload",
        "timestamp",
        "workspaceId",
    }
    assert (body["event"], body["toolName"], body["matcherValue"]) == (
        "PostToolUse",
        "readFile",
        "readFile",
    )
    assert (body["toolInput"], body["toolResult"], body["workspaceId"]) == (
        {"path": "a.txt"},
        "ok",
        "ws-1",
    )


def test_header_templates_resolve_at_send_time_and_the_secret_stays_out_of_telemetry(
    pipe: TestPipeline,
    server: WebhookServer,
    deliverer: WebhookDeliverer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "tok-" + "9" * 24
    monkeypatch.setenv("HOOK_TOKEN", secret)
    pipe.register(
        notify(
            server, headers={"Authorization": "Bearer ${HOOK_TOKEN}"}, allowedEnvVars=["HOOK_TOKEN"]
        )
    )
    with structlog.testing.capture_logs() as logs:
        run(pipe)
        deliverer.flush(10)
    assert server.requests("/n")[0].headers["authorization"] == f"Bearer {secret}"
    everything = (
        json.dumps(
            [
                [dict(s.attributes or {}), [dict(e.attributes or {}) for e in s.events]]
                for s in pipe.spans()
            ]
        )
        + json.dumps(logs, default=str)
        + json.dumps([h.serializable() for h in pipe.oh.hooks.registry.hooks()])
    )
    assert secret not in everything


def test_a_204_answer_is_a_success(
    pipe: TestPipeline, server: WebhookServer, deliverer: WebhookDeliverer
) -> None:
    server.routes["/n"] = Reply(204)
    pipe.register(notify(server))
    run(pipe)
    deliverer.flush(10)
    pipe.flush()
    assert pipe.metric_total("otelhooks.hook.invocations", {"otelhooks.outcome": "ok"}) >= 1


def test_5xx_is_retried_with_backoff_until_it_succeeds(
    pipe: TestPipeline, server: WebhookServer, deliverer: WebhookDeliverer
) -> None:
    server.routes["/n"] = [Reply(503), Reply(500), Reply(204)]
    pipe.register(notify(server))
    run(pipe)
    deliverer.flush(10)
    requests = server.requests("/n")
    assert len(requests) == 3
    assert len({r.json()["eventId"] for r in requests}) == 1  # one delivery, retried
    assert pipe.metric_total("otelhooks.hook.invocations", {"otelhooks.outcome": "ok"}) == 1


def test_4xx_is_not_retried_and_counted_as_dropped(
    pipe: TestPipeline, server: WebhookServer, deliverer: WebhookDeliverer
) -> None:
    server.routes["/n"] = Reply(404)
    pipe.register(notify(server))
    run(pipe)
    deliverer.flush(10)
    assert len(server.requests("/n")) == 1
    assert pipe.metric_total("otelhooks.dropped", {"otelhooks.drop.source": "webhook"}) == 1


def test_a_dead_endpoint_is_retried_to_the_deadline_then_dropped_and_counted(
    pipe: TestPipeline, deliverer: WebhookDeliverer
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    pipe.register(
        {"id": "dead", "type": "afterToolCall", "webhook": {"url": f"http://127.0.0.1:{port}/x"}}
    )
    run(pipe)
    assert deliverer.flush(10)
    assert (
        pipe.metric_total(
            "otelhooks.dropped",
            {"otelhooks.drop.source": "webhook", "otelhooks.drop.reason": "retry_deadline"},
        )
        == 1
    )


def test_a_slow_endpoint_adds_nothing_to_the_agent_loop(
    pipe: TestPipeline, server: WebhookServer, deliverer: WebhookDeliverer
) -> None:
    server.routes["/n"] = Reply(204, delay_s=1.0)
    pipe.register(notify(server), {**notify(server, type="beforeToolCall"), "id": "n-before"})
    started = time.perf_counter()
    for _ in range(5):
        run(pipe)
    # waiting for even one of the ten deliveries would take the endpoint's whole second
    assert time.perf_counter() - started < 1.0
    deliverer.flush(15)
    assert len(server.requests("/n")) == 10


def test_observation_webhooks_on_before_tool_call_never_gate_execution(
    pipe: TestPipeline, server: WebhookServer, deliverer: WebhookDeliverer
) -> None:
    server.routes["/n"] = Reply.json({"decision": "deny"})  # a notification's answer is ignored
    pipe.register(notify(server, type="beforeToolCall"))
    assert run(pipe).content == "ok"


def test_the_client_is_reused_across_deliveries(
    pipe: TestPipeline, server: WebhookServer, deliverer: WebhookDeliverer
) -> None:
    pipe.register(notify(server))
    for _ in range(20):
        run(pipe)
        deliverer.flush(10)
    ports = {r.client_port for r in server.requests("/n")}
    assert len(server.requests("/n")) == 20
    assert len(ports) < 5  # keep-alive: a handful of connections, not one per delivery


def test_a_full_queue_drops_and_counts(pipe: TestPipeline, server: WebhookServer) -> None:
    small = WebhookDeliverer(metrics=pipe.oh.metrics, max_queue_size=2)
    pipe.oh.engine.deliverer = small
    gate = threading.Event()
    server.routes["/n"] = lambda got: (gate.wait(5), Reply(204))[1]
    pipe.register(notify(server))
    try:
        for _ in range(200):
            run(pipe)
        dropped = pipe.metric_total("otelhooks.dropped", {"otelhooks.drop.source": "webhook"})
        assert dropped > 0
    finally:
        gate.set()
        small.shutdown(10)


def test_email_enrichment_resolves_the_effective_user_once_per_cache_period(
    pipe: TestPipeline, server: WebhookServer, tmp_path: Path
) -> None:
    lookups: list[str] = []

    def resolver(user_id: str) -> str | None:
        lookups.append(user_id)
        return f"{user_id}@example.test"

    d = WebhookDeliverer(metrics=pipe.oh.metrics, builder=PayloadBuilder(email_resolver=resolver))
    pipe.oh.engine.deliverer = d
    pipe.register(notify(server, eventFields=["userId", "userEmail"]))
    try:
        for _ in range(3):
            run(pipe)
        d.flush(10)
    finally:
        d.shutdown(5)
    bodies = [r.json() for r in server.requests("/n")]
    assert [b["userEmail"] for b in bodies] == ["u-1@example.test"] * 3
    assert lookups == ["u-1"]


def test_email_cache_holds_at_most_1000_users_for_five_minutes() -> None:
    calls: list[str] = []
    cache = EmailCache(lambda u: calls.append(u) or f"{u}@x.test", ttl_s=0.2)
    for i in range(1500):
        cache.lookup(f"user{i}")
    assert len(cache) == 1000
    cache.lookup("user1499")
    assert calls.count("user1499") == 1
    time.sleep(0.25)
    cache.lookup("user1499")
    assert calls.count("user1499") == 2
    assert EmailCache(lambda u: None).lookup("x") is None


def test_invalid_ids_missing_emails_and_lookup_errors_leave_the_email_out(
    pipe: TestPipeline,
) -> None:
    from otelhooks import ToolCallEvent, WebhookConfig

    def resolver(user_id: str) -> str | None:
        if user_id == "boom":
            raise RuntimeError("db down")
        return None if user_id == "nobody" else "a@x.test"

    builder = PayloadBuilder(email_resolver=resolver)
    config = WebhookConfig(url="http://h.test", event_fields=["userEmail"])  # type: ignore[call-arg]
    for user in ("not a valid id!", "nobody", "boom", ""):
        event = ToolCallEvent(
            toolCallId="c", identifier="fs", apiName="x", userId=user, userEmail="forged@x.test"
        )
        body = builder.build("h", "beforeToolCall", config, event)
        assert body is not None
        assert "userEmail" not in body


def test_a_cancelled_email_lookup_cancels_the_delivery() -> None:
    from otelhooks import ToolCallEvent, WebhookConfig

    cancel = threading.Event()
    cancel.set()
    builder = PayloadBuilder(email_resolver=lambda u: "a@x.test")
    config = WebhookConfig(url="http://h.test", event_fields=["userEmail"])  # type: ignore[call-arg]
    event = ToolCallEvent(toolCallId="c", identifier="fs", apiName="x", userId="u1")
    assert builder.build("h", "t", config, event, cancel=cancel) is None


def test_webhook_span_exporter_delivers_for_plain_genai_spans(
    server: WebhookServer, deliverer: WebhookDeliverer
) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from otelhooks import WebhookSpanExporter

    provider = TracerProvider()
    exporter = WebhookSpanExporter(
        [
            {
                "id": "wx",
                "type": "PostToolUse",
                "matcher": "get_weather",
                "webhook": {"url": server.url + "/wx"},
            }
        ],
        deliverer=deliverer,
    )
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("some.genai.instrumentation")
    for tool in ("get_weather", "other_tool"):
        with tracer.start_as_current_span(
            f"execute_tool {tool}",
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool},
        ):
            pass
    provider.force_flush()
    deliverer.flush(10)
    bodies = [r.json() for r in server.requests("/wx")]
    assert [(b["event"], b["apiName"]) for b in bodies] == [("after_tool_call", "get_weather")]
    provider.shutdown()


def test_webhook_span_exporter_refuses_control_hooks() -> None:
    from otelhooks import ConfigError, WebhookSpanExporter

    with pytest.raises(ConfigError, match="notification webhooks only"):
        WebhookSpanExporter(
            [{"id": "c", "type": "beforeToolCall",
              "webhook": {"url": "http://127.0.0.1:9/c", "responseHandling": "toolCall"}}]
        )  # fmt: skip


def test_a_notification_beside_a_handler_observer_reaches_both(
    pipe: TestPipeline, server: WebhookServer, deliverer: WebhookDeliverer
) -> None:
    # The registry answer says these hooks do not all run on the observer worker (the webhook
    # delivers by itself), so the call's end takes the dispatcher's route, not the queue alone.
    seen: list[str] = []
    pipe.register(notify(server))
    pipe.register({"id": "h", "type": "afterToolCall", "handler": seen.append})
    run(pipe)
    assert deliverer.flush(10)
    pipe.flush()
    assert [body.json()["apiName"] for body in server.requests("/n")] == ["readFile"]
    assert [event.apiName for event in seen] == ["readFile"]  # type: ignore[attr-defined]


def test_a_notification_whose_body_cannot_be_built_is_counted_as_dropped(
    pipe: TestPipeline, server: WebhookServer
) -> None:
    """A redactor that raises loses the notification. Before, only a log line said so: the
    `otelhooks.dropped` count that alerts watch did not, nor the delivery report."""

    def broken(body: dict[str, Any]) -> dict[str, Any]:
        raise ValueError("redactor bug")

    d = WebhookDeliverer(metrics=pipe.oh.metrics, builder=PayloadBuilder(redactors=[broken]))
    pipe.oh.engine.deliverer = d
    server.routes["/n"] = Reply(204)
    pipe.register(notify(server))
    try:
        run(pipe)
        pipe.flush()
        assert d.flush(10)
        dropped = {"otelhooks.drop.source": "webhook", "otelhooks.drop.reason": "payload_error"}
        assert pipe.metric_total("otelhooks.dropped", dropped) == 1
        (report,) = d.reports()
        assert (report.sent, report.delivered) == (1, 0)
        assert report.sent == report.delivered + report.failed + report.dropped
        assert server.requests("/n") == []
    finally:
        d.shutdown(10)
