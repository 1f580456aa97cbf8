"""Streamable HTTP resumption through the gateway (``GET`` with ``Last-Event-ID``): a server
with an event store sends a stream's events again, answers included. Before, an answer the
gateway had already recorded (and filtered: ``tool_result_persist``) reached the client a second
time as the server sent it, unfiltered and unrecorded, and so did an answer to a request the
client never made. Now a replayed answer is the one the gateway recorded, and an answer for no
request of the session is dropped (logged, counted).

Real processes: the SDK server with an event store (``resumable_server.py``), the gateway, and a
raw HTTP client that leaves a call's stream and resumes it, as a client whose connection broke
does; the SDK client for the specification's polling (the server closes the call's stream).
What the transport does when the upstream drops a stream and the server answers later is driven
through the gateway's public session API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from opentelemetry.trace import NoOpTracer

from otelhooks import Block, HooksEngine
from otelhooks.mcp import McpGateway, McpSession
from tests.mcp._harness import (
    REDACT_SCRIPT,
    calls,
    events,
    http_gateway,
    http_session,
    open_session,
    spans,
    wait_for,
    write_hooks,
)

pytestmark = pytest.mark.timeout(90)

SERVER = Path(__file__).with_name("resumable_server.py")
HOOKS = """
hooks:
  - id: redact
    type: tool_result_persist
    matcher: "^(slow|poll)$"
    script: hooks.py:redact
"""
SCRIPT = REDACT_SCRIPT


def test_a_replayed_result_is_the_recorded_one_never_the_servers_raw_one(tmp_path: Path) -> None:
    hooks = write_hooks(tmp_path, HOOKS, SCRIPT)
    with http_gateway(tmp_path, [hooks], app=SERVER) as url, httpx.Client(timeout=30) as client:
        headers = open_session(client, url)
        call = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "slow", "arguments": {"tag": "S-42-SECRET", "seconds": 0.5}},
        }
        # the client reads the call's first event (its id) and its connection breaks
        with client.stream("POST", url, json=call, headers=headers) as stream:
            first_id, _ = next(events(stream.iter_lines()))
        assert first_id
        wait_for(lambda: spans(tmp_path, "tools/call slow"), "the call's span")
        resumed = {**headers, "last-event-id": first_id}
        with client.stream("GET", url, headers=resumed) as stream:
            assert stream.status_code == 200
            replayed = next(json.loads(d) for _, d in events(stream.iter_lines()) if d.strip())
    assert replayed["id"] == 7
    assert replayed["result"]["content"][0]["text"] == "***", replayed
    assert [c["tool"] for c in calls(tmp_path)] == ["slow"]


def test_a_resumption_after_another_sessions_event_is_refused(tmp_path: Path) -> None:
    # the server sends any session's events after any id (one event store for all sessions)
    hooks = write_hooks(tmp_path, HOOKS, SCRIPT)
    with http_gateway(tmp_path, [hooks], app=SERVER) as url, httpx.Client(timeout=30) as client:
        first = open_session(client, url)
        call = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "slow", "arguments": {"tag": "S-42-SECRET", "seconds": 0}},
        }
        with client.stream("POST", url, json=call, headers=first) as stream:
            seen = list(events(stream.iter_lines()))
        assert [json.loads(d)["result"]["content"][0]["text"] for _, d in seen if d] == ["***"]
        first_id = seen[0][0]
        assert first_id
        other = open_session(client, url)
        assert other["mcp-session-id"] != first["mcp-session-id"]
        with client.stream("GET", url, headers={**other, "last-event-id": first_id}) as refused:
            # before, a 200 stream that carried the first session's answer
            assert refused.status_code == 400
            refusal = json.loads(refused.read())
        # the first session resumes after its own event
        with client.stream("GET", url, headers={**first, "last-event-id": first_id}) as stream:
            assert stream.status_code == 200
            again = next(json.loads(d) for _, d in events(stream.iter_lines()) if d.strip())
    assert "Last-Event-ID" in refusal["error"]["message"]
    assert again["result"]["content"][0]["text"] == "***"


def test_a_call_whose_stream_the_server_closed_is_answered_filtered_on_the_resumed_one(
    tmp_path: Path,
) -> None:
    # the specification's polling: the SDK client resumes with GET and Last-Event-ID
    hooks = write_hooks(tmp_path, HOOKS, SCRIPT)
    with http_gateway(tmp_path, [hooks], app=SERVER) as url:

        async def polled() -> Any:
            async with http_session(url) as session:
                return await session.call_tool("poll", {"tag": "S-42-SECRET"})

        result = anyio.run(polled)
        wait_for(lambda: spans(tmp_path, "tools/call poll"), "the call's span")
    assert result.content[0].text == "polled ***"
    (span,) = spans(tmp_path, "tools/call poll")
    assert span["status"].get("code") != "ERROR", span
    assert [c["tool"] for c in calls(tmp_path)] == ["poll"]


def _frame(**fields: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **fields}).encode()


def _session() -> McpSession:
    """A session of the gateway's public API, driven frame by frame as a transport does."""
    return McpGateway(HooksEngine(), NoOpTracer(), name="testsrv").session()


CALL = _frame(id=3, method="tools/call", params={"name": "add", "arguments": {"a": 1, "b": 2}})
RESULT = _frame(id=3, result={"content": [{"type": "text", "text": "3"}]})


def test_a_result_after_the_gateway_failed_the_call_is_the_failure_it_sent() -> None:
    # what the HTTP transport does when the upstream drops the call's stream, then the server
    # (still running) sends the call's result on a resumed stream
    session = _session()
    assert session.from_client(CALL).to_server == [CALL]
    (failure,) = session.fail(CALL, "the MCP server dropped the stream", error_type="x")
    assert session.from_server(RESULT).to_client == [failure]
    session.close()


def test_an_answer_to_a_cancelled_call_or_an_id_never_used_is_dropped() -> None:
    session = _session()
    session.from_client(CALL)
    cancel = _frame(method="notifications/cancelled", params={"requestId": 3})
    session.from_client(cancel)
    assert session.from_server(RESULT).to_client == []
    stranger = _frame(id=99, result={"content": [{"type": "text", "text": "not yours"}]})
    assert session.from_server(stranger).to_client == []
    # an error the server could tie to no request passes on, as the protocol sends it
    unknown = _frame(id=None, error={"code": -32700, "message": "Parse error"})
    assert session.from_server(unknown).to_client == [unknown]
    session.close()


def test_the_same_answer_on_two_streams_while_the_hooks_filter_it_is_filtered_on_both() -> None:
    # a client that resumed while its first stream still carried the answer gets it twice
    def redact(event: Any) -> None:
        event.result["content"][0]["text"] = "***"

    hooks = [{"id": "r", "type": "tool_result_persist", "matcher": "^add$", "handler": redact}]
    engine = HooksEngine(hooks)
    session = McpGateway(engine, NoOpTracer(), name="testsrv").session()

    async def both() -> tuple[list[bytes], list[bytes]]:
        session.from_client(CALL)
        first, second = session.from_server(RESULT), session.from_server(RESULT)
        assert first.later is not None
        assert second.later is not None
        return (await first.later).to_client, (await second.later).to_client

    try:
        first, second = anyio.run(both)
    finally:
        session.close()
        engine.shutdown(2)
    assert json.loads(first[0])["result"]["content"][0]["text"] == "***"
    assert second == first  # before, nothing: the resumed stream never got its answer


def test_a_large_answer_sent_again_passes_only_as_the_client_was_given_it() -> None:
    # past 64 KiB a session keeps an answer's digest, not its bytes
    session = _session()
    big = _frame(id=3, result={"content": [{"type": "text", "text": "x" * 100_000}]})
    other = _frame(id=3, result={"content": [{"type": "text", "text": "y" * 100_000}]})
    session.from_client(CALL)
    assert session.from_server(big).to_client == [big]
    assert session.from_server(big).to_client == [big]
    (refused,) = session.from_server(other).to_client
    session.close()
    assert json.loads(refused)["error"]["code"] == -32000
    assert "no longer holds" in json.loads(refused)["error"]["message"]


def test_a_servers_answer_to_a_denied_calls_id_is_the_denial() -> None:
    # the server never saw the call; an answer under its id is not the client's result
    hooks = [{"id": "no-add", "type": "beforeToolCall", "matcher": "testsrv/add", "handler": deny}]
    engine = HooksEngine(hooks)
    session = McpGateway(engine, NoOpTracer(), name="testsrv").session()
    listed = {"tools": [{"name": "add", "inputSchema": {"type": "object"}}]}
    try:
        session.from_client(_frame(id=0, method="tools/list"))
        session.from_server(_frame(id=0, result=listed))
        relay = session.from_client(CALL)
        assert relay.later is not None
        (denial,) = anyio.run(_settled, relay.later)
        assert session.from_server(RESULT).to_client == [denial]
    finally:
        session.close()
        engine.shutdown(2)
    assert json.loads(denial)["result"]["content"][0]["text"] == "add is off"


def deny(event: Any) -> Block:
    return Block("add is off")


async def _settled(later: Any) -> list[bytes]:
    done = await later
    return list(done.to_client)
