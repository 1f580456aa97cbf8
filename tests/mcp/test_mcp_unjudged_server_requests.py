"""A request the server makes while a filtered call runs (``sampling/createMessage``), which
the gateway fails to judge, is answered to the server with a JSON-RPC error naming the cause;
the client is never asked. Before, the gateway dropped it with a log line and the server's
tool waited for the answer forever (the client's call with it).

Real processes: the SDK's server (``mcp_server_app.py``, its ``ask`` tool samples the client's
model), the gateway embedded through its public API with a user's span processor that raises as
the sampling request's span starts (``failing_span_gateway.py``), and the SDK's client with a
sampling callback, over stdio and Streamable HTTP."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import CreateMessageResult, TextContent

from tests.mcp._harness import client_injects_no_trace_context, env, http_gateway, http_session

pytestmark = pytest.mark.timeout(90)

GATEWAY = Path(__file__).with_name("failing_span_gateway.py")


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_server_request_the_gateway_cannot_judge_is_answered_with_an_error(
    tmp_path: Path, transport: str
) -> None:
    asked: list[str] = []

    async def sampling(context: Any, params: Any) -> Any:
        asked.append(params.messages[0].content.text)
        text = TextContent(type="text", text="sampled")
        return CreateMessageResult(role="assistant", content=text, model="fake")

    async def ask(session: ClientSession) -> MCPError:
        # the SDK's server passes the error its sampling request got on as the call's error
        with anyio.fail_after(30), pytest.raises(MCPError) as error:  # before: forever
            await session.call_tool("ask", {"question": "what is S-42-SECRET?"})
        return error.value

    async def over_stdio() -> MCPError:
        params = StdioServerParameters(
            command=sys.executable,
            args=[str(GATEWAY), "stdio"],
            env=env(tmp_path / "calls.jsonl"),
            cwd=str(tmp_path),
        )
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, sampling_callback=sampling) as session,
        ):
            with client_injects_no_trace_context():
                await session.initialize()
                return await ask(session)

    async def over_http(url: str) -> MCPError:
        async with http_session(url, sampling_callback=sampling) as session:
            return await ask(session)

    if transport == "stdio":
        result = anyio.run(over_stdio)
    else:
        with http_gateway(tmp_path, gateway=GATEWAY) as url:
            result = anyio.run(over_http, url)
    assert asked == []  # the client never got the request its hooks did not judge
    assert result.code == -32603
    assert "the client was not asked" in result.message
    assert "the audit store is down" in result.message
    assert "S-42-SECRET" not in result.message
