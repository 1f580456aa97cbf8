"""The MCP gateway when it fails itself on a server frame, and answers or requests the server
sends twice. Driven through the gateway's public session API, as a transport does, with a real
SDK ``TracerProvider`` and real hooks.

Before: a server frame the gateway failed on passed to the client unchanged (its answer
unrecorded, a result the hooks never finished filtering), and a failure inside the running
``tool_result_persist`` decision left the client's request with no answer at all; a duplicate
answer arriving while the persist hooks ran ran them again. Now the answer becomes a JSON-RPC
internal error to its request (logged, its span ended ``gateway_error``), and the duplicate
waits for the first one's result."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracer

from otelhooks import Block, HooksEngine
from otelhooks.mcp import McpGateway

pytestmark = pytest.mark.timeout(60)


def _frame(**fields: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **fields}).encode()


CALL = _frame(id=3, method="tools/call", params={"name": "add", "arguments": {"a": 1, "b": 2}})
RESULT = _frame(id=3, result={"content": [{"type": "text", "text": "S-42-SECRET"}]})


class AuditSink(SpanProcessor):
    """A user's span processor that raises when its audit store is down (the SDK's span
    processor chain passes the exception on to whoever ends the span)."""

    def on_end(self, span: ReadableSpan) -> None:
        if span.name == "tools/call add":
            raise RuntimeError("the audit store is down")


def _traced() -> tuple[TracerProvider, InMemorySpanExporter]:
    provider = TracerProvider()
    exported = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    provider.add_span_processor(AuditSink())
    return provider, exported


def redact(event: Any) -> None:
    event.result["content"][0]["text"] = "***"


async def _settled(later: Any) -> list[bytes]:
    return list((await later).to_client)


def test_a_filtered_result_the_gateway_fails_on_is_an_error_to_its_request() -> None:
    hooks = [{"id": "r", "type": "tool_result_persist", "matcher": "^add$", "handler": redact}]
    engine = HooksEngine(hooks)
    provider, _ = _traced()
    session = McpGateway(engine, provider.get_tracer("t"), name="testsrv").session()
    try:
        assert session.from_client(CALL).to_server == [CALL]
        relay = session.from_server(RESULT)
        assert relay.later is not None
        # before: the decision raised, and the client's request was never answered
        (answer,) = anyio.run(_settled, relay.later)
        assert json.loads(answer)["error"]["code"] == -32603
        assert "audit store is down" in json.loads(answer)["error"]["message"]
        # the server's answer sent again (a resumed stream) is the error the client got
        assert session.from_server(RESULT).to_client == [answer]
    finally:
        session.close()
        engine.shutdown(2)
    assert b"S-42-SECRET" not in answer


def test_an_answer_the_gateway_fails_on_is_never_passed_unchanged() -> None:
    provider, exported = _traced()
    session = McpGateway(HooksEngine(), provider.get_tracer("t"), name="testsrv").session()
    try:
        session.from_client(CALL)
        # before: the server's result, passed on as it came though the gateway failed on it
        (answer,) = session.from_server(RESULT).to_client
        assert json.loads(answer)["id"] == 3
        assert json.loads(answer)["error"]["code"] == -32603
        # an answer to no request of the session is dropped
        assert session.from_server(_frame(id=44, result={})).to_client == []
    finally:
        session.close()
    names = [s.name for s in exported.get_finished_spans()]
    assert "tools/call add" in names  # exported before the failing processor raised


def test_a_duplicate_answer_while_the_persist_hooks_run_waits_for_their_result() -> None:
    ran: list[str] = []

    def slow_redact(event: Any) -> None:
        ran.append(event.result["content"][0]["text"])
        event.result["content"][0]["text"] = "***"

    hooks = [{"id": "r", "type": "tool_result_persist", "matcher": "^add$", "handler": slow_redact}]
    engine = HooksEngine(hooks)
    session = McpGateway(engine, NoOpTracer(), name="testsrv").session()

    async def both() -> tuple[list[bytes], list[bytes]]:
        session.from_client(CALL)
        first, second = session.from_server(RESULT), session.from_server(RESULT)
        assert first.later is not None
        assert second.later is not None
        # the duplicate is awaited first: it must still wait for the first copy's hooks
        async with anyio.create_task_group() as tg:
            out: dict[str, list[bytes]] = {}

            async def run(name: str, later: Any) -> None:
                out[name] = await _settled(later)

            tg.start_soon(run, "second", second.later)
            tg.start_soon(run, "first", first.later)
        return out["first"], out["second"]

    try:
        first, second = anyio.run(both)
    finally:
        session.close()
        engine.shutdown(2)
    assert json.loads(first[0])["result"]["content"][0]["text"] == "***"
    assert second == first
    assert ran == ["S-42-SECRET"]  # before: the hooks ran once per copy


def deny(event: Any) -> Block:
    return Block("add is off")


def test_a_call_the_gateway_fails_on_while_its_hooks_decide_is_answered_with_an_error() -> None:
    hooks = [{"id": "no-add", "type": "beforeToolCall", "matcher": "testsrv/add", "handler": deny}]
    engine = HooksEngine(hooks)
    provider, _ = _traced()
    session = McpGateway(engine, provider.get_tracer("t"), name="testsrv").session()
    listed = {"tools": [{"name": "add", "inputSchema": {"type": "object"}}]}
    try:
        session.from_client(_frame(id=0, method="tools/list"))
        session.from_server(_frame(id=0, result=listed))
        relay = session.from_client(CALL)
        assert relay.later is not None
        # before: the decision raised (the denial's span could not end): no answer at all
        done = anyio.run(_relay, relay.later)
        assert done.to_server == []
        (answer,) = done.to_client
        assert json.loads(answer)["error"]["code"] == -32603
        assert session.from_server(RESULT).to_client == [answer]  # a replay: the same error
    finally:
        session.close()
        engine.shutdown(2)


async def _relay(later: Any) -> Any:
    return await later


class RefusesToStart(SpanProcessor):
    """A user's span processor that raises as one tool's call span starts."""

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if span.name == "tools/call boom":
            raise RuntimeError("no spans for boom")


def test_a_batch_the_gateway_fails_on_midway_answers_each_call_and_holds_no_id() -> None:
    provider = TracerProvider()
    exported = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    provider.add_span_processor(RefusesToStart())
    session = McpGateway(HooksEngine(), provider.get_tracer("t"), name="testsrv").session()
    boom = _frame(id=4, method="tools/call", params={"name": "boom", "arguments": {}})
    batch = b"[" + CALL + b"," + boom + b"]"
    try:
        relay = session.from_client(batch)
        assert relay.to_server == []
        (answers,) = relay.to_client
        # before: one error with a null id; the first call stayed waiting, its id held
        assert [(a["id"], a["error"]["code"]) for a in json.loads(answers)] == [
            (3, -32603),
            (4, -32603),
        ]
        assert session.from_client(CALL).to_server == [CALL]  # id 3 is free again
    finally:
        session.close()
    ended = [s for s in exported.get_finished_spans() if s.name == "tools/call add"]
    assert ended[0].attributes is not None
    assert ended[0].attributes["error.type"] == "gateway_error"
