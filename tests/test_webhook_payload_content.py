"""Content leaves the process over the network only where the user turned it on.

Notification webhook bodies (and the outbox rows that hold them) carry tool arguments, results,
prompts and messages only with content capture on, or where the hook's ``eventFields`` names the
field. Control webhooks and command hooks get the whole event whatever the switch: the one decides
on it, the other is the user's own code on this machine. Real servers on 127.0.0.1, a real
SQLite outbox and real processes.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otelhooks
from otelhooks import HookEvent, PayloadBuilder, ToolResult, WebhookConfig, WebhookDeliverer
from otelhooks import semconv as sc
from otelhooks._actions._webhook_payload import CONTENT_FIELDS
from otelhooks.events import (
    AfterCompactEvent,
    AfterStepEvent,
    BeforeAgentStartEvent,
    BeforeCallAgentEvent,
    GenericEvent,
    LlmInputEvent,
    LlmOutputEvent,
    MessageReceivedEvent,
    MessageSendingEvent,
    MessageSentEvent,
    ToolResultPersistEvent,
)
from otelhooks.testing import TestPipeline
from tests._webhook_server import Reply, WebhookServer

STDIN_TO_FILE = "import sys; open(sys.argv[1], 'w').write(sys.stdin.read())"


@pytest.fixture
def arg() -> str:
    return "arg-" + secrets.token_hex(8)


@pytest.fixture
def result() -> str:
    return "result-" + secrets.token_hex(8)


def notify(server: WebhookServer, path: str, **webhook: Any) -> dict[str, Any]:
    return {
        "id": path.strip("/"),
        "type": "afterToolCall",
        "webhook": {"url": server.url + path, **webhook},
    }


def run(pipe: TestPipeline, arg: str, result: str) -> ToolResult:
    with pipe.tracer.operation("agent", user_id="u-1") as op, op.step() as step:
        return step.run_tool("vault", "lookup", {"query": arg}, lambda query: result)


def body_of(server: WebhookServer, path: str) -> dict[str, Any]:
    (request,) = server.wait_for(path)
    body: dict[str, Any] = request.json()
    return body


# -- notification bodies -----------------------------------------------------------------------


def test_without_capture_a_notification_body_leaves_content_out(
    pipe: TestPipeline, server: WebhookServer, deliverer: WebhookDeliverer, arg: str, result: str
) -> None:
    pipe.register(notify(server, "/n"))
    run(pipe, arg, result)
    assert deliverer.flush(10)
    (request,) = server.requests("/n")
    assert arg.encode() not in request.body
    assert result.encode() not in request.body
    body = request.json()
    assert not {"args", "toolInput", "content", "toolOutput"} & set(body)  # omitted, not blanked
    # what happened stays: ids, names, timings, outcome
    assert (body["identifier"], body["apiName"], body["success"]) == ("vault", "lookup", True)
    assert body["toolCallId"]
    assert body["executionTimeMs"] >= 0
    assert body["result"]["success"] is True
    assert "content" not in body["result"]
    assert "executionTime" in body["result"]


def test_without_capture_the_outbox_row_leaves_content_out(
    pipe: TestPipeline, server: WebhookServer, deliverer: WebhookDeliverer, arg: str, result: str
) -> None:
    server.routes["/q"] = Reply(204, delay_s=0.5)  # the row stays while the request is answered
    pipe.register(notify(server, "/q", delivery="queue"))
    run(pipe, arg, result)  # the row is committed before the event is handed on
    with sqlite3.connect(deliverer.outbox().path) as db:
        rows = [bytes(row[0]) for row in db.execute("SELECT body FROM outbox")]
    assert len(rows) == 1
    assert b'"apiName":"lookup"' in rows[0]
    assert arg.encode() not in rows[0]
    assert result.encode() not in rows[0]
    assert body_of(server, "/q") == json.loads(rows[0])  # what is delivered is the row


@pytest.mark.parametrize(
    ("fields", "present", "absent"),
    [
        (["apiName", "args"], {"args"}, {"content", "toolOutput", "result"}),
        (["apiName", "content"], {"content"}, {"args", "toolInput", "result"}),
        (["apiName", "result"], {"result"}, {"args", "content"}),
    ],
    ids=["args", "content", "result"],
)
def test_event_fields_naming_a_content_field_opt_that_hook_in(
    pipe: TestPipeline,
    server: WebhookServer,
    deliverer: WebhookDeliverer,
    arg: str,
    result: str,
    fields: list[str],
    present: set[str],
    absent: set[str],
) -> None:
    pipe.register(notify(server, "/opt-in", eventFields=fields), notify(server, "/n"))
    run(pipe, arg, result)
    assert deliverer.flush(10)
    body = body_of(server, "/opt-in")
    assert present <= set(body)
    assert not absent & set(body)
    expected = {"args": {"query": arg}, "content": result}
    for field in present & set(expected):
        assert body[field] == expected[field]
    if "result" in present:
        assert body["result"]["content"] == result
    # the opt-in is per hook: the other one still gets no content
    plain = server.requests("/n")[0].body
    assert arg.encode() not in plain
    assert result.encode() not in plain


def test_bodies_and_outbox_rows_carry_content_exactly_when_capture_is_on(
    pipe: TestPipeline, server: WebhookServer, deliverer: WebhookDeliverer, arg: str, result: str
) -> None:
    server.routes["/q"] = Reply(204, delay_s=0.5)  # each row stays while it is being answered
    pipe.register(notify(server, "/n"), notify(server, "/q", delivery="queue"))
    for n, capture in enumerate((False, True), start=1):
        deliverer.builder.capture_content = capture
        run(pipe, arg, result)
        with sqlite3.connect(deliverer.outbox().path) as db:
            (row,) = [bytes(row[0]) for row in db.execute("SELECT body FROM outbox")]
        assert deliverer.flush(10)
        request = server.wait_for("/n", n)[-1]
        for carried in (row, request.body):
            assert (arg.encode() in carried, result.encode() in carried) == (capture, capture)
        body = request.json()
        if capture:
            assert (body["args"], body["toolInput"]) == ({"query": arg}, {"query": arg})
            contents = (body["content"], body["toolOutput"], body["result"]["content"])
            assert contents == (result,) * 3
        else:
            assert not (CONTENT_FIELDS - {"result"}) & set(body)


def test_without_capture_the_workspace_body_keeps_its_keys_with_null_content(
    pipe: TestPipeline, server: WebhookServer, deliverer: WebhookDeliverer, arg: str, result: str
) -> None:
    pipe.register(notify(server, "/ws", format="workspace", workspaceId="ws-1"))
    run(pipe, arg, result)
    assert deliverer.flush(10)
    (request,) = server.requests("/ws")
    assert arg.encode() not in request.body
    assert result.encode() not in request.body
    body = request.json()
    # the workspace engine's shape has every key; content left out is null, as for a non-tool
    assert (body["toolName"], body["toolInput"], body["toolResult"]) == ("lookup", None, None)
    assert body["payload"]["apiName"] == "lookup"


def test_the_capture_switch_is_the_genai_variable_unless_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(sc.ENV_CAPTURE_CONTENT, raising=False)
    assert PayloadBuilder().capture_content is False
    monkeypatch.setenv(sc.ENV_CAPTURE_CONTENT, "true")
    assert PayloadBuilder().capture_content is True
    assert PayloadBuilder(capture_content=False).capture_content is False


SECRET = "content-" + secrets.token_hex(8)
EVENTS_WITH_CONTENT: list[HookEvent] = [
    BeforeAgentStartEvent(agentId="a", input=SECRET, userMessage=SECRET, fullPrompt=SECRET),
    AfterStepEvent(stepIndex=0, content=SECRET),
    LlmInputEvent(model="m", messages=[{"role": "user", "content": SECRET}]),
    LlmOutputEvent(model="m", response=SECRET),
    MessageReceivedEvent(content=SECRET),
    MessageSendingEvent(channelId="c", target="t", content=SECRET),
    MessageSentEvent(channelId="c", target="t", content=SECRET),
    BeforeCallAgentEvent(agentId="sub", instruction=SECRET),
    AfterCompactEvent(groupId="g", messagesBefore=9, messagesAfter=2, summary=SECRET),
    ToolResultPersistEvent(toolName="t", result={"rows": [SECRET]}),
    GenericEvent(event="user_prompt_expansion", data={"prompt": SECRET, "expansion_type": "slash"}),
]


@pytest.mark.parametrize("event", EVENTS_WITH_CONTENT, ids=lambda e: e.event)
def test_every_content_field_of_every_event_follows_the_switch(event: HookEvent) -> None:
    config = WebhookConfig(url="http://127.0.0.1:9/n")
    off = PayloadBuilder(capture_content=False).build("h", "t", config, event)
    on = PayloadBuilder(capture_content=True).build("h", "t", config, event)
    assert off is not None
    assert on is not None
    assert SECRET not in json.dumps(off)
    assert SECRET in json.dumps(on)
    assert (off["event"], off["eventId"]) == (event.event, event.eventId)
    if isinstance(event, GenericEvent):  # its facts are in data, filtered one level down
        assert off["data"] == {"expansion_type": "slash"}
    else:
        left_out = set(on) - set(off)
        assert left_out
        assert left_out <= CONTENT_FIELDS


# -- the whole event, whatever the switch ----------------------------------------------------------


def test_without_capture_the_control_webhook_and_a_command_hook_get_the_arguments(
    pipe: TestPipeline,
    server: WebhookServer,
    deliverer: WebhookDeliverer,
    tmp_path: Path,
    arg: str,
    result: str,
) -> None:
    server.routes["/control"] = Reply.json({"decision": "allow"})
    stdin = tmp_path / "stdin.json"
    pipe.register(
        {"id": "control", "type": "beforeToolCall",
         "webhook": {"url": server.url + "/control", "responseHandling": "toolCall"}},
        {"id": "command", "type": "PostToolUse",
         "command": [sys.executable, "-c", STDIN_TO_FILE, str(stdin)]},
        notify(server, "/n"),
    )  # fmt: skip
    assert run(pipe, arg, result).content == result
    pipe.flush()
    assert deliverer.flush(10)
    assert body_of(server, "/control")["args"] == {"query": arg}  # it decides on them
    given = json.loads(stdin.read_text())
    assert (given["args"], given["tool_input"]) == ({"query": arg}, {"query": arg})
    assert result in json.dumps(given["tool_response"])
    assert arg.encode() not in server.requests("/n")[0].body  # while the notification has none


# -- configure() sets the same switch for spans and bodies ------------------------------------


@pytest.mark.parametrize(("argument", "variable"), [(True, ""), (False, "true")])
def test_configure_capture_content_decides_for_bodies_over_the_variable(
    server: WebhookServer,
    arg: str,
    result: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    argument: bool,
    variable: str,
) -> None:

    monkeypatch.setenv(sc.ENV_CAPTURE_CONTENT, variable)
    spans = InMemorySpanExporter()
    oh = otelhooks.configure(
        hooks=[notify(server, "/c")],
        span_exporters=[spans],
        capture_content=argument,
        outbox_path=tmp_path / "outbox.sqlite3",
        set_global=False,
        structured_logging=False,
        otlp=False,
    )
    try:
        with oh.tracer.operation("agent") as op, op.step() as step:
            step.run_tool("vault", "lookup", {"query": arg}, lambda query: result)
        body = json.dumps(body_of(server, "/c"))
    finally:
        oh.shutdown(timeout_s=5.0)
    exported = json.dumps([dict(s.attributes or {}) for s in spans.get_finished_spans()])
    # the argument wins over the variable, for spans and webhook bodies alike
    assert (arg in body) is argument
    assert (arg in exported) is argument
