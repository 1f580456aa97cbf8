"""What a server tells the client about a ``tools/call`` while it runs goes through the call's
``tool_result_persist`` hooks, as its result does: the ``message`` of a
``notifications/progress`` for the call's ``progressToken``, and the ``data`` of a
``notifications/message`` (logging) sent while the call runs. Before, both reached the client
as the server sent them: a tool that reports ``reading S-42-SECRET`` as its progress, or logs
it, showed the client the secret its result's redaction kept from it.

Real processes: the SDK's server (``ctx.report_progress``, ``ctx.info``, ``ctx.log``),
``python -m otelhooks mcp`` and the SDK's client (its progress and logging callbacks), over
stdio and Streamable HTTP."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.types import CreateMessageResult, TextContent
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracer

from otelhooks import HooksEngine, read_otlp_json_lines
from otelhooks.mcp import McpGateway
from tests.mcp._harness import (
    calls,
    events,
    http_gateway,
    http_session,
    open_session,
    stdio_session,
    write_hooks,
)

pytestmark = pytest.mark.timeout(90)

RESUMABLE = Path(__file__).with_name("resumable_server.py")

HOOKS = """
hooks:
  - id: redact
    type: tool_result_persist
    matcher: "^leak$"
    script: hooks.py:redact
  - id: no-keys
    type: tool_result_persist
    matcher: "^leak$"
    script: hooks.py:no_keys
"""
SCRIPT = """
from otelhooks import Block


def redact(data):
    for block in data.result["content"]:
        block["text"] = block["text"].replace("S-42-SECRET", "***")


def no_keys(data):
    if "K-9-BLOCK" in data.result["content"][0]["text"]:
        return Block("key withheld")
"""


class Seen:
    """What the SDK's client was told during its calls, in the order it was told."""

    def __init__(self) -> None:
        self.told: list[tuple[str, Any]] = []

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.told.append(("progress", message))

    async def log(self, params: Any) -> None:
        self.told.append(("log", params.data))


async def _calls(session: Any, seen: Seen) -> list[str]:
    texts = []
    for secret in ("S-42-SECRET", "K-9-BLOCK"):
        result = await session.call_tool(
            "leak", {"secret": secret}, progress_callback=seen.progress
        )
        texts.append(result.content[0].text)
        seen.told.append(("result", texts[-1]))
    return texts


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_what_a_server_tells_of_a_running_call_goes_through_its_hooks(
    tmp_path: Path, transport: str
) -> None:
    hooks = write_hooks(tmp_path, HOOKS, SCRIPT)
    seen = Seen()

    async def over_stdio() -> list[str]:
        async with stdio_session(tmp_path, [hooks], logging_callback=seen.log) as session:
            return await _calls(session, seen)

    if transport == "stdio":
        texts = anyio.run(over_stdio)
    else:
        with http_gateway(tmp_path, [hooks]) as url:

            async def over_http() -> list[str]:
                async with http_session(url, logging_callback=seen.log) as session:
                    return await _calls(session, seen)

            texts = anyio.run(over_http)
    assert texts == ["done", "done"]
    assert [c["args"]["secret"] for c in calls(tmp_path)] == ["S-42-SECRET", "K-9-BLOCK"]
    # before: "reading S-42-SECRET", "read S-42-SECRET", {"secret": "S-42-SECRET"} and the key
    told = seen.told
    assert "S-42-SECRET" not in json.dumps(told)
    assert "K-9-BLOCK" not in json.dumps(told)
    assert ("progress", "reading ***") in told
    assert ("log", "read ***") in told
    assert ("log", {"secret": "***"}) in told  # data that was JSON stays JSON
    assert told.count(("log", "key withheld")) == 2
    assert ("progress", "key withheld") in told
    spans = [
        s for s in read_otlp_json_lines(tmp_path / "traces.jsonl") if s["name"] == "tools/call leak"
    ]
    persisted = [
        e for s in spans for e in s["events"] if e["name"] == "otelhooks.tool_result_persist"
    ]
    methods = [e["attributes"].get("mcp.method.name") for e in persisted]
    assert methods.count("notifications/progress") == 2
    assert methods.count("notifications/message") == 4


def test_a_judged_progress_message_reaches_the_client_before_its_calls_result() -> None:
    # the progress message's hooks take longer than the result's: over stdio each decision is
    # sent when it is done, so the client would read the progress of a call already answered
    # (its SDK drops it). Driven through the gateway's public API, as a transport does.
    async def redact(event: Any) -> None:
        text = event.result["content"][0]["text"]
        if text.startswith("reading"):
            await asyncio.sleep(0.3)
        event.result["content"][0]["text"] = text.replace("S-42-SECRET", "***")

    hooks = [{"id": "r", "type": "tool_result_persist", "matcher": "^add$", "handler": redact}]
    engine = HooksEngine(hooks)
    session = McpGateway(engine, NoOpTracer(), name="testsrv").session()
    params = {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": {"progressToken": "p1"}}
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}
    progress = {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": "p1", "progress": 1, "message": "reading S-42-SECRET"},
    }
    result = {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "3"}]}}
    sent: list[Any] = []

    async def relayed() -> None:
        session.from_client(json.dumps(call).encode())
        first = session.from_server(json.dumps(progress).encode())
        second = session.from_server(json.dumps(result).encode())

        async def deliver(relay: Any) -> None:  # as the stdio transport does
            sent.extend(json.loads(f) for f in (await relay.later).to_client)

        assert first.later is not None  # before: sent as it came
        assert second.later is not None
        await asyncio.gather(deliver(second), deliver(first))

    try:
        anyio.run(relayed)
    finally:
        session.close()
        engine.shutdown(2)
    assert [m.get("method", m.get("id")) for m in sent] == ["notifications/progress", 3]
    assert sent[0]["params"]["message"] == "reading ***"


def test_a_progress_message_judged_after_its_calls_answer_arrived_is_recorded_on_the_call() -> None:
    # before: the answer's hooks ran (and ended the call's span) while the slower progress
    # message's hooks still ran, whose record then went on an ended span and was lost
    async def redact(event: Any) -> None:
        text = event.result["content"][0]["text"]
        if text.startswith("reading"):
            await asyncio.sleep(0.3)
        event.result["content"][0]["text"] = text.replace("S-42-SECRET", "***")

    hooks = [{"id": "r", "type": "tool_result_persist", "matcher": "^add$", "handler": redact}]
    engine = HooksEngine(hooks)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    session = McpGateway(engine, provider.get_tracer("t"), name="testsrv").session()
    params = {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": {"progressToken": "p1"}}
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}
    progress = {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": "p1", "progress": 1, "message": "reading S-42-SECRET"},
    }
    result = {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "3"}]}}

    async def relayed() -> None:
        session.from_client(json.dumps(call).encode())
        first = session.from_server(json.dumps(progress).encode())
        second = session.from_server(json.dumps(result).encode())
        assert first.later is not None
        assert second.later is not None
        await asyncio.gather(second.later, first.later)

    try:
        anyio.run(relayed)
    finally:
        session.close()
        engine.shutdown(2)
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "tools/call add"]
    methods = [
        (e.attributes or {}).get("mcp.method.name")
        for e in span.events
        if e.name == "otelhooks.tool_result_persist"
    ]
    assert methods.count("notifications/progress") == 1  # the answer's own record beside it
    assert len(methods) == 2


def test_a_resumed_stream_replays_the_judged_notifications_never_the_servers(
    tmp_path: Path,
) -> None:
    # a server with an event store sends the call's stream again after the client's
    # Last-Event-ID: its progress and log notifications too, once the call is over
    hooks = write_hooks(tmp_path, HOOKS, SCRIPT)
    with http_gateway(tmp_path, [hooks], app=RESUMABLE) as url, httpx.Client(timeout=30) as client:
        headers = open_session(client, url)
        params = {
            "name": "leak",
            "arguments": {"secret": "S-42-SECRET"},
            "_meta": {"progressToken": 5},
        }
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
        with client.stream("POST", url, json=call, headers=headers) as stream:
            seen = list(events(stream.iter_lines()))
        first_id = seen[0][0]
        assert first_id
        given = [json.loads(d) for _, d in seen if d.strip()]
        with client.stream("GET", url, headers={**headers, "last-event-id": first_id}) as again:
            assert again.status_code == 200
            replayed = []
            for _, data in events(again.iter_lines()):
                if data.strip():
                    replayed.append(json.loads(data))
                if replayed and replayed[-1].get("id") == 7:
                    break
    assert [m.get("method", m.get("id")) for m in given] == [
        "notifications/progress",
        "notifications/message",
        "notifications/message",
        7,
    ]
    assert "S-42-SECRET" not in json.dumps(given)
    assert replayed == given  # before: the server's notifications, secret and all


ASK_HOOKS = """
hooks:
  - id: redact
    type: tool_result_persist
    matcher: "^ask$"
    script: hooks.py:redact
"""


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_sampling_request_of_a_running_call_goes_through_its_hooks(
    tmp_path: Path, transport: str
) -> None:
    # the tool asks the client's model about what it read: the model would read the secret
    # its result's redaction keeps from it
    hooks = write_hooks(tmp_path, ASK_HOOKS, SCRIPT)
    asked: list[str] = []

    async def sampling(context: Any, params: Any) -> Any:
        asked.append(params.messages[0].content.text)
        text = TextContent(type="text", text="sampled S-42-SECRET")
        return CreateMessageResult(role="assistant", content=text, model="fake")

    async def ask(session: Any) -> str:
        result = await session.call_tool("ask", {"question": "what is S-42-SECRET?"})
        return str(result.content[0].text)

    async def over_stdio() -> str:
        async with stdio_session(tmp_path, [hooks], sampling_callback=sampling) as session:
            return await ask(session)

    if transport == "stdio":
        answered = anyio.run(over_stdio)
    else:
        with http_gateway(tmp_path, [hooks]) as url:

            async def over_http() -> str:
                async with http_session(url, sampling_callback=sampling) as session:
                    return await ask(session)

            answered = anyio.run(over_http)
    assert asked == ["what is ***?"]  # before: "what is S-42-SECRET?"
    assert answered == "sampled ***"


def _judged_by_a_redacting_call(*frames: dict[str, Any]) -> list[bytes]:
    """What the client gets of each server request in ``frames``, sent while a call of
    ``add`` runs that a hook redacting ``S-42-SECRET`` filters (the gateway's public API)."""

    def redact(event: Any) -> None:
        for block in event.result["content"]:
            block["text"] = block["text"].replace("S-42-SECRET", "***")

    hooks = [{"id": "r", "type": "tool_result_persist", "matcher": "^add$", "handler": redact}]
    engine = HooksEngine(hooks)
    session = McpGateway(engine, NoOpTracer(), name="testsrv").session()
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add"}}

    async def relayed() -> list[bytes]:
        session.from_client(json.dumps(call).encode())
        sent: list[bytes] = []
        for frame in frames:
            relay = session.from_server(json.dumps(frame).encode())
            assert relay.later is not None  # before: sent as it came
            sent.extend((await relay.later).to_client)
        return sent

    try:
        return anyio.run(relayed)
    finally:
        session.close()
        engine.shutdown(2)


def _request(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def test_an_elicitation_of_a_running_call_goes_through_its_hooks() -> None:
    # the client shows the message to its user
    schema = {"type": "object", "properties": {}}
    params = {"mode": "form", "message": "confirm S-42-SECRET?", "requestedSchema": schema}
    (sent,) = _judged_by_a_redacting_call(_request(0, "elicitation/create", params))
    assert json.loads(sent)["params"] == {**params, "message": "confirm ***?"}


def test_a_sampling_requests_tool_results_and_system_prompt_go_through_the_hooks() -> None:
    # a sampling request may carry tool results of its own (protocol 2025-11-25) and a system
    # prompt: the client's model reads them all
    result_block = {
        "type": "tool_result",
        "toolUseId": "t1",
        "content": [{"type": "text", "text": "read S-42-SECRET"}],
    }
    params = {
        "systemPrompt": "the key is S-42-SECRET",
        "messages": [{"role": "user", "content": [result_block]}],
        "maxTokens": 16,
    }
    (sent,) = _judged_by_a_redacting_call(_request(0, "sampling/createMessage", params))
    got = json.loads(sent)["params"]
    assert got["systemPrompt"] == "the key is ***"
    assert got["messages"][0]["content"][0]["content"][0]["text"] == "read ***"
    assert b"S-42-SECRET" not in sent


def test_what_else_a_sampling_request_shows_the_model_goes_through_the_hooks() -> None:
    # a tool result's embedded resource text and structured content, and an earlier tool
    # call's input, are read by the client's model as much as a text block is
    resource = {"uri": "file:///notes", "mimeType": "text/plain", "text": "key S-42-SECRET"}
    used = {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "S-42-SECRET"}}
    result_block = {
        "type": "tool_result",
        "toolUseId": "t1",
        "content": [{"type": "resource", "resource": resource}],
        "structuredContent": {"key": "S-42-SECRET"},
    }
    params = {
        "messages": [
            {"role": "assistant", "content": [used]},
            {"role": "user", "content": [result_block]},
        ],
        "maxTokens": 16,
    }
    (sent,) = _judged_by_a_redacting_call(_request(0, "sampling/createMessage", params))
    got = json.loads(sent)["params"]["messages"]
    assert b"S-42-SECRET" not in sent  # before: all three passed as the server sent them
    assert got[0]["content"][0]["input"] == {"path": "***"}  # still an object
    assert got[1]["content"][0]["content"][0]["resource"]["text"] == "key ***"
    assert got[1]["content"][0]["structuredContent"] == {"key": "***"}


def test_an_elicitations_form_and_url_go_through_the_hooks() -> None:
    # the client shows its user the form's field titles, descriptions and defaults, and the
    # URL of a URL-mode elicitation, as much as its message
    field = {"type": "string", "title": "key S-42-SECRET", "default": "S-42-SECRET"}
    schema = {"type": "object", "properties": {"key": field}}
    form = {"mode": "form", "message": "confirm", "requestedSchema": schema}
    link = {"mode": "url", "message": "open", "url": "https://x.test/?k=S-42-SECRET"}
    link["elicitationId"] = "e1"
    sent_form, sent_link = _judged_by_a_redacting_call(
        _request(0, "elicitation/create", form), _request(1, "elicitation/create", link)
    )
    assert b"S-42-SECRET" not in sent_form + sent_link
    got = json.loads(sent_form)["params"]["requestedSchema"]["properties"]["key"]
    assert got == {"type": "string", "title": "key ***", "default": "***"}  # still a schema
    assert json.loads(sent_link)["params"]["url"] == "https://x.test/?k=***"
