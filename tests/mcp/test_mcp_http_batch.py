"""Over Streamable HTTP, the answer a hook gave to a call of a client's batch was lost whenever
the rest of the batch did not come back as JSON: the upstream answered ``202 Accepted`` (the rest
was notifications) or could not be reached. The denied call never ran, but the client waited for
its answer until its own timeout. Now the hooks' answers go back in every case. And a batch of
answers passed as the server sent it, unfiltered by ``tool_result_persist``: now each answer in
it is filtered as one sent alone is.

Real processes: a batch-taking HTTP server (``batch_http_server.py``, as the TypeScript SDK's
server answers batches), ``python -m otelhooks mcp --listen --upstream`` in front of it, and a
client that posts raw JSON-RPC with httpx."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests._realparts import reserved_port
from tests.mcp._harness import (
    DENY_NOTES,
    DENY_SCRIPT,
    REDACT_SCRIPT,
    SSE,
    calls,
    gateway_args,
    http_gateway,
    http_session,
    process,
    write_hooks,
)

pytestmark = pytest.mark.timeout(90)

SERVER = Path(__file__).with_name("batch_http_server.py")
HEADERS = SSE
INIT = {
    "protocolVersion": "2025-03-26",
    "capabilities": {},
    "clientInfo": {"name": "raw", "version": "1"},
}
DENIED = {"name": "write_note", "arguments": {"text": "x"}}
DENIAL = {"content": [{"type": "text", "text": "notes are read-only here"}], "isError": True}


@contextmanager
def batch_processes(
    tmp_path: Path, hooks_yaml: str = DENY_NOTES, script: str = DENY_SCRIPT
) -> Iterator[tuple[str, Any]]:
    """The gateway's URL in front of the upstream server, and the upstream server's process."""
    hooks = write_hooks(tmp_path, hooks_yaml, script)
    with reserved_port() as server_port, reserved_port() as gateway_port:
        log = tmp_path / "calls.jsonl"
        with process([str(SERVER), str(server_port)], log, server_port) as server:
            args = [
                *gateway_args([hooks], tmp_path / "traces.jsonl"),
                "--listen",
                f"127.0.0.1:{gateway_port}",
                "--upstream",
                f"http://127.0.0.1:{server_port}/mcp",
            ]
            with process(args, log, gateway_port):
                yield f"http://127.0.0.1:{gateway_port}", server


@contextmanager
def gateway_session(url: str) -> Iterator[httpx.Client]:
    """A client with a session of its own through the gateway at ``url``."""
    with httpx.Client(base_url=url, headers=HEADERS, timeout=30) as client:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}
        answer = client.post("/mcp", json=init)
        client.headers["mcp-session-id"] = answer.headers["mcp-session-id"]
        yield client


@contextmanager
def batch_gateway(
    tmp_path: Path, hooks_yaml: str = DENY_NOTES, script: str = DENY_SCRIPT
) -> Iterator[tuple[httpx.Client, Any]]:
    """A client with a session through the gateway, and the upstream server's process."""
    with (
        batch_processes(tmp_path, hooks_yaml, script) as (url, server),
        gateway_session(url) as client,
    ):
        yield client, server


def test_a_denied_call_batched_with_notifications_gets_its_denial(tmp_path: Path) -> None:
    with batch_gateway(tmp_path) as (client, _):
        answer = client.post(
            "/mcp",
            json=[
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": DENIED},
            ],
        )
    assert answer.status_code == 200
    assert answer.json() == [{"jsonrpc": "2.0", "id": 5, "result": DENIAL}]
    assert calls(tmp_path) == []


def test_a_denied_call_batched_with_one_the_dead_upstream_fails_gets_its_denial(
    tmp_path: Path,
) -> None:
    with batch_gateway(tmp_path) as (client, server):
        # listed while the server lived: the gateway judges a call by the server's list
        client.post("/mcp", json={"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
        server.kill()
        server.wait(10)
        answer = client.post(
            "/mcp",
            json=[
                {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "add"}},
                {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": DENIED},
            ],
        )
    by_id = {item["id"]: item for item in answer.json()}
    assert by_id[6]["error"]["code"] == -32000
    assert "cannot reach the MCP server" in by_id[6]["error"]["message"]
    assert by_id[7] == {"jsonrpc": "2.0", "id": 7, "result": DENIAL}
    assert calls(tmp_path) == []


WITHHOLD = """
hooks:
  - id: withhold
    type: tool_result_persist
    matcher: "^write_note$"
    script: hooks.py:withhold
"""
WITHHOLD_SCRIPT = """
from otelhooks import Block

def withhold(data):
    return Block("note results are withheld")
"""


def test_each_answer_of_a_batch_is_filtered_as_one_sent_alone(tmp_path: Path) -> None:
    with batch_gateway(tmp_path, WITHHOLD, WITHHOLD_SCRIPT) as (client, _):
        answer = client.post(
            "/mcp",
            json=[
                {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "add"}},
                {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": DENIED},
            ],
        )
    by_id = {item["id"]: item for item in answer.json()}
    assert by_id[6]["result"]["content"][0]["text"] == "ran add"
    withheld = {"content": [{"type": "text", "text": "note results are withheld"}], "isError": True}
    assert by_id[7] == {"jsonrpc": "2.0", "id": 7, "result": withheld}
    assert [c["tool"] for c in calls(tmp_path)] == ["add", "write_note"]


REDACT = """
hooks:
  - id: redact
    type: tool_result_persist
    matcher: "^check_token$"
    script: hooks.py:redact
"""


def test_a_tool_error_in_a_batch_is_filtered_as_one_sent_alone(tmp_path: Path) -> None:
    refused = {"name": "check_token", "arguments": {"token": "S-42-SECRET"}}
    with batch_gateway(tmp_path, REDACT, REDACT_SCRIPT) as (client, _):
        answer = client.post(
            "/mcp",
            json=[
                {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "add"}},
                {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": refused},
            ],
        )
    by_id = {item["id"]: item for item in answer.json()}
    assert by_id[6]["result"]["content"][0]["text"] == "ran add"
    # before: "bad token S-42-SECRET", the data with it
    error = {"code": -32001, "message": "bad token ***", "data": {"token": "***"}}
    assert by_id[7] == {"jsonrpc": "2.0", "id": 7, "error": error}


@pytest.mark.parametrize("null_id", [False, True], ids=["its-id", "null-id"])
def test_a_tool_error_at_an_http_error_status_goes_through_the_hooks(
    tmp_path: Path, null_id: bool
) -> None:
    # the SDK's client surfaces the JSON-RPC error of a 4xx/5xx answer (one whose id is null
    # as its request's): before, the gateway passed that body on as it came
    args = {"token": "S-42-SECRET", "http": 400, "null_id": null_id}

    async def refused(url: str) -> Any:
        async with http_session(url) as session:
            with pytest.raises(MCPError) as error:
                await session.call_tool("check_token", args)
            return error.value

    hooks = write_hooks(tmp_path, REDACT, REDACT_SCRIPT)
    with http_gateway(tmp_path, [hooks], app=SERVER, app_args=()) as url:
        error = anyio.run(refused, url)
    assert (error.code, error.message, error.data) == (-32001, "bad token ***", {"token": "***"})
