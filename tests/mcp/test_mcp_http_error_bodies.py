"""An upstream answer at an HTTP error status whose body is no JSON-RPC answer (a text/plain or
HTML error page quoting what the tool read) is judged as the call's error by its
``tool_result_persist`` hooks. The TypeScript SDK's client (Claude Code, Gemini CLI) throws
``Error POSTing to endpoint (HTTP 500): <the body's text>``, which the model reads; before, the
gateway passed such a body on as it came, so a redaction of the call's result never ran on it.

Real processes: a Streamable HTTP server answering ``check_token`` with a 500 page
(``batch_http_server.py``), ``python -m otelhooks mcp --listen --upstream`` in front of it, and
a client that reads the HTTP answer as the TypeScript SDK does (its status and text) or the
MCP Python SDK's client. The two processes serve the whole module (their hooks keep no state
between calls); each test opens a session of its own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from tests.mcp._harness import REDACT_SCRIPT, events, http_session
from tests.mcp.test_mcp_http_batch import REDACT, batch_processes, gateway_session

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of one gateway, redacting, in front of one upstream, for the module's tests."""
    with batch_processes(tmp_path_factory.mktemp("gateway"), REDACT, REDACT_SCRIPT) as (url, _):
        yield url


def _call(**arguments: Any) -> dict[str, Any]:
    params = {"name": "check_token", "arguments": {"http": 500, **arguments}}
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}


@pytest.mark.parametrize(
    "body_type", ["text/plain", "text/html; charset=utf-8", "application/json"]
)
def test_an_error_page_quoting_a_secret_goes_through_the_hooks(
    gateway: str, body_type: str
) -> None:
    with gateway_session(gateway) as client:
        answer = client.post("/mcp", json=_call(token="S-42-SECRET", body_type=body_type))
    assert answer.status_code == 500
    assert "S-42-SECRET" not in answer.text  # before: "upstream failed: bad token S-42-SECRET"
    assert answer.headers["content-type"] == "application/json"
    error = {"code": -32000, "message": "upstream failed: bad token ***"}
    assert answer.json() == {"jsonrpc": "2.0", "id": 7, "error": error}


def test_an_error_page_the_hooks_leave_alone_passes_as_it_came(gateway: str) -> None:
    with gateway_session(gateway) as client:
        answer = client.post("/mcp", json=_call(token="harmless", body_type="text/plain"))
    assert answer.status_code == 500
    assert answer.headers["content-type"] == "text/plain"
    assert answer.content == b"upstream failed: bad token harmless"


def test_an_error_page_the_hooks_cannot_read_as_sent_never_passes_as_it_came(
    gateway: str,
) -> None:
    # Latin-1 bytes the hooks read as UTF-8 (a replacement character): a client decoding by
    # the charset would read another text than the one they judged
    call = _call(token="caf\u00e9", body_type="text/plain; charset=latin-1", charset="latin-1")
    with gateway_session(gateway) as client:
        answer = client.post("/mcp", json=call)
    assert answer.status_code == 500
    assert json.loads(answer.content)["error"]["message"] == "upstream failed: bad token caf\ufffd"


def test_the_sdk_client_reads_the_judged_error_of_an_error_page(gateway: str) -> None:
    async def refused(url: str) -> MCPError:
        async with http_session(url) as session:
            with pytest.raises(MCPError) as error:
                await session.call_tool(
                    "check_token", {"token": "S-42-SECRET", "http": 500, "body_type": "text/html"}
                )
            return error.value

    error = anyio.run(refused, f"{gateway}/mcp")
    # before: the SDK's stand-in, "Server returned an error response"
    assert (error.code, error.message) == (-32000, "upstream failed: bad token ***")


@pytest.mark.parametrize(
    "content_type", ["application/json-rpc", "text/plain; note=application/json"]
)
def test_an_answer_typed_as_clients_still_read_json_goes_through_the_hooks(
    gateway: str, content_type: str
) -> None:
    # both SDK clients read a body as JSON when its type starts with (Python) or contains
    # (TypeScript) application/json; the gateway read only the exact type, so such an answer
    # passed unjudged
    args = {"token": "S-42-SECRET", "content_type": content_type}
    if not content_type.startswith("application/json"):  # the TypeScript SDK's reading only
        with gateway_session(gateway) as client:
            call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call"}
            answer = client.post(
                "/mcp", json={**call, "params": {"name": "check_token", "arguments": args}}
            )
        assert "S-42-SECRET" not in answer.text
        assert answer.headers["content-type"] == "application/json"
        assert answer.json()["error"]["message"] == "bad token ***"
        return

    async def refused(url: str) -> MCPError:
        async with http_session(url) as session:
            with pytest.raises(MCPError) as error:
                await session.call_tool("check_token", args)
            return error.value

    error = anyio.run(refused, f"{gateway}/mcp")
    assert error.message == "bad token ***"  # before: "bad token S-42-SECRET"


def test_a_redirect_of_the_upstream_never_sends_the_client_past_the_gateway(
    gateway: str,
) -> None:
    # a client that follows redirects (fetch, and so the TypeScript SDK, does by default) was
    # sent to the upstream itself: it ran the call there and read its answer unjudged
    with gateway_session(gateway) as client:
        client.follow_redirects = True
        answer = client.post("/mcp", json=_call(token="S-42-SECRET", http=200, redirect=True))
    assert answer.history == []  # before: a 307 to the upstream, followed
    assert "S-42-SECRET" not in answer.text
    error = answer.json()["error"]
    assert (error["code"], error["message"][:44]) == (
        -32000,
        "the MCP server redirected the request to htt",
    )


@pytest.mark.parametrize("how", ["bom", "split"])
def test_an_event_stream_spelled_oddly_goes_through_the_hooks(gateway: str, how: str) -> None:
    # the SSE rules end an event at any blank line (``\n\r\n`` too) and skip a leading byte
    # order mark; the gateway read neither, so a client (the TypeScript SDK's reads on past an
    # event it cannot parse) read an answer it passed unjudged
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call"}
    params = {"name": "check_token", "arguments": {"token": "S-42-SECRET", "sse": how}}
    with (
        gateway_session(gateway) as client,
        client.stream("POST", "/mcp", json={**call, "params": params}) as answer,
    ):
        read = [json.loads(data) for _, data in events(answer.iter_lines()) if data.strip()]
    assert "S-42-SECRET" not in json.dumps(read)  # before: the server's answer, read as sent
    if how == "bom":
        assert read == [
            {
                "jsonrpc": "2.0",
                "id": 7,
                "error": {"code": -32001, "message": "bad token ***", "data": {"token": "***"}},
            }
        ]
    else:  # its first event, read alone, is no message: the call fails, saying so
        assert {(m["id"], m["error"]["code"]) for m in read} == {(7, -32000)}
