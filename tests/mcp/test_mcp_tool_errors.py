"""A ``tools/call`` the server answers with a JSON-RPC error (``{"error": {"code": -32001,
"message": "bad token S-42-SECRET", "data": {...}}}``, not an ``isError`` result) is a failed
call, and its text goes through ``tool_result_persist`` as a failed result's does (the rule the
LangGraph and OpenAI Agents adapters follow for a tool's exception). Before, the gateway ran the
hooks on results only: the error's message and ``data`` reached the client as the server sent
them, the redaction bypassed, and the span's status quoted the secret.

Real processes: the SDK's server (its tool raises ``MCPError``), ``python -m otelhooks mcp``,
and the SDK's client, over stdio and Streamable HTTP (SSE and JSON answers, and a resumed SSE
stream replaying the error)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError
from opentelemetry.trace import NoOpTracer

from otelhooks import HooksEngine
from otelhooks.mcp import McpGateway
from tests._realparts import written_lines
from tests.mcp._harness import (
    SSE,
    answer,
    calls,
    events,
    http_gateway,
    http_session,
    open_session,
    spans,
    stdio_session,
    wait_for,
    write_hooks,
)

pytestmark = pytest.mark.timeout(90)

SERVER = Path(__file__).with_name("resumable_server.py")
# a minute each: a hook past its time goes on without it (the default on_error), and on a
# loaded machine the first call, which loads the script, took past the default 10 s: the
# unredacted error reached the client
HOOKS = """
hooks:
  - id: redact
    type: tool_result_persist
    matcher: "^check_token$"
    script: hooks.py:redact
    timeout: 60
  - id: no-tokens
    type: tool_result_persist
    matcher: "^check_token$"
    script: hooks.py:block_tokens
    timeout: 60
  - id: failed
    type: onToolCallError
    matcher: "^check_token$"
    script: hooks.py:failed
    timeout: 60
"""
SCRIPT = """
import json

from otelhooks import Block


def redact(data):
    for block in data.result["content"]:
        block["text"] = block["text"].replace("S-42-SECRET", "***")


def block_tokens(data):
    if "T-BLOCK" in json.dumps(data.result):
        return Block("token errors are withheld")


def failed(event):
    with open(OBSERVED, "a") as f:
        f.write(json.dumps({"error": event.error, "type": event.errorType}) + "\\n")
"""


def _hooks(tmp: Path) -> Path:
    observed_at = f"OBSERVED = {str(tmp / 'observed.jsonl')!r}\n"
    return write_hooks(tmp, HOOKS, observed_at + SCRIPT)


async def _calls(session: Any) -> tuple[MCPError, Any]:
    await session.list_tools()
    with pytest.raises(MCPError) as refused:
        await session.call_tool("check_token", {"token": "S-42-SECRET"})
    blocked = await session.call_tool("check_token", {"token": "T-BLOCK"})
    return refused.value, blocked


def _check(tmp: Path, refused: MCPError, blocked: Any) -> None:
    # before: "bad token S-42-SECRET", data {"token": "S-42-SECRET"}, and the T-BLOCK error
    assert (refused.code, refused.message, refused.data) == (
        -32001,
        "bad token ***",
        {"token": "***"},
    )
    assert blocked.is_error is True
    assert blocked.content[0].text == "token errors are withheld"
    assert [c["tool"] for c in calls(tmp)] == ["check_token", "check_token"]
    wait_for(lambda: len(spans(tmp, "tools/call check_token")) == 2, "both calls' spans")
    traces = (tmp / "traces.jsonl").read_text()
    assert "S-42-SECRET" not in traces  # the span's status says what the client read
    first, second = sorted(
        spans(tmp, "tools/call check_token"), key=lambda s: s["startTimeUnixNano"]
    )
    assert first["attributes"]["error.type"] == "-32001"
    assert first["status"]["message"] == "bad token ***"
    assert second["attributes"]["otelhooks.tool.outcome"] == "blocked"
    for span in (first, second):
        assert "otelhooks.tool_result_persist" in [e["name"] for e in span["events"]]
    # each observer opens the file, then writes its line: wait for both lines, whole
    wait_for(lambda: written_lines(tmp / "observed.jsonl").count("\n") == 2, "both observers")
    observed = [json.loads(line) for line in (tmp / "observed.jsonl").read_text().splitlines()]
    assert {"error": "bad token ***", "type": "-32001"} in observed
    assert "S-42-SECRET" not in json.dumps(observed)


def test_a_tool_error_goes_through_tool_result_persist_over_stdio(tmp_path: Path) -> None:
    hooks = _hooks(tmp_path)

    async def run() -> tuple[MCPError, Any]:
        async with stdio_session(tmp_path, [hooks]) as session:
            return await _calls(session)

    refused, blocked = anyio.run(run)
    _check(tmp_path, refused, blocked)


@pytest.mark.parametrize("answers", ["sse", "json"])
def test_a_tool_error_goes_through_tool_result_persist_over_http(
    tmp_path: Path, answers: str
) -> None:
    hooks = _hooks(tmp_path)
    app = SERVER if answers == "sse" else Path(__file__).with_name("json_server.py")
    with http_gateway(tmp_path, [hooks], app=app) as url:

        async def run() -> tuple[MCPError, Any]:
            async with http_session(url) as session:
                return await _calls(session)

        refused, blocked = anyio.run(run)
    _check(tmp_path, refused, blocked)


def test_a_tool_error_a_resumed_stream_replays_is_the_filtered_one(tmp_path: Path) -> None:
    hooks = _hooks(tmp_path)
    with http_gateway(tmp_path, [hooks], app=SERVER) as url, httpx.Client(timeout=30) as client:
        headers = open_session(client, url)
        call = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "check_token", "arguments": {"token": "S-42-SECRET"}},
        }
        with client.stream("POST", url, json=call, headers=headers) as stream:
            seen = list(events(stream.iter_lines()))
        first_id = seen[0][0]
        assert first_id
        (given,) = [json.loads(d) for _, d in seen if d.strip()]
        # the stream is resumed from its priming event: the server sends the error again
        with client.stream("GET", url, headers={**headers, "last-event-id": first_id}) as again:
            assert again.status_code == 200
            replayed = next(json.loads(d) for _, d in events(again.iter_lines()) if d.strip())
    assert given["error"] == {"code": -32001, "message": "bad token ***", "data": {"token": "***"}}
    assert replayed == given  # before: the server's raw error, secret and all


def test_a_tool_error_the_hooks_leave_alone_passes_as_the_server_sent_it(tmp_path: Path) -> None:
    hooks = _hooks(tmp_path)
    with http_gateway(tmp_path, [hooks]) as url, httpx.Client(timeout=30) as client:
        headers = open_session(client, url)
        call = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "check_token", "arguments": {"token": "plain"}},
        }
        got = answer(client.post(url, json=call, headers={**headers, **SSE}))
    assert got["error"] == {
        "code": -32001,
        "message": "bad token plain",
        "data": {"token": "plain"},
    }


@pytest.mark.parametrize(
    "answer_fields",
    [
        {"result": "value of S-42-SECRET"},
        {"result": {"content": []}, "error": {"code": 1, "message": "S-42-SECRET"}},
        {"error": "S-42-SECRET"},
    ],
    ids=["result-a-string", "result-and-error", "error-a-string"],
)
def test_an_answer_that_is_neither_a_result_nor_an_error_never_passes_a_filter(
    answer_fields: dict[str, Any],
) -> None:
    # a client reading such an answer (its validation error quoting the value, or the member
    # it reads first) would show what no hook saw; driven through the gateway's public API
    def redact(event: Any) -> None:
        for block in event.result["content"]:
            block["text"] = block["text"].replace("S-42-SECRET", "***")

    hooks = [{"id": "r", "type": "tool_result_persist", "matcher": "^add$", "handler": redact}]
    engine = HooksEngine(hooks)
    session = McpGateway(engine, NoOpTracer(), name="testsrv").session()
    call = {"name": "add", "arguments": {"a": 1, "b": 2}}
    odd = json.dumps({"jsonrpc": "2.0", "id": 3, **answer_fields}).encode()

    async def answered() -> list[bytes]:
        session.from_client(
            json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}).encode()
        )
        relay = session.from_server(odd)
        assert relay.later is not None  # before: passed on as it came
        return (await relay.later).to_client

    try:
        (got,) = anyio.run(answered)
    finally:
        session.close()
        engine.shutdown(2)
    assert b"S-42-SECRET" not in got
    assert json.loads(got)["error"]["code"] == -32000
