"""A server's own request through the HTTP gateway (``sampling/createMessage`` asked while a
tool runs): the client's answer goes upstream in a POST the SDK server accepts with ``202`` and
a ``content-type: application/json`` but no body. The gateway read that empty body as a frame
that cannot be read and logged an error on every round trip (and would have failed a waiting
request whose id it could not tell). Now an empty body is the ``202`` it is.

Real processes: the SDK's Streamable HTTP server, ``otelhooks mcp --listen --upstream`` and the
SDK's client with a sampling callback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CreateMessageResult, TextContent

from otelhooks import read_otlp_json_lines
from tests.mcp._harness import client_injects_no_trace_context, http_gateway

pytestmark = pytest.mark.timeout(90)


def test_a_sampling_request_round_trips_over_http_without_a_false_error(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    asked: list[str] = []

    async def sampling(context: Any, params: Any) -> CreateMessageResult:
        asked.append(params.messages[0].content.text)
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text="sampled!"), model="fake"
        )

    async def scenario(url: str) -> Any:
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write, sampling_callback=sampling) as session,
        ):
            with client_injects_no_trace_context():
                await session.initialize()
                with anyio.fail_after(30):
                    return await session.call_tool("ask", {"question": "why?"})

    with http_gateway(tmp_path) as url:
        result = anyio.run(scenario, url)
    assert asked == ["why?"]
    assert result.content[0].text == "sampled!"
    spans = {s["name"]: s for s in read_otlp_json_lines(tmp_path / "traces.jsonl")}
    assert spans["sampling/createMessage"]["kind"] == 3  # CLIENT: the server asked
    assert "error.type" not in spans["sampling/createMessage"].get("attributes", {})
    assert "error.type" not in spans["tools/call ask"].get("attributes", {})
    err = capfd.readouterr().err
    assert "cannot be read" not in err
