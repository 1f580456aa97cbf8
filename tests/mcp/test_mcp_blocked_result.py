"""``tool_result_persist`` hooks on the MCP gateway: before, the gateway never ran them, so a
redaction or a block configured for a tool's result let the server's result through unchanged
(the secret reached the model). Now a block answers with a tool error carrying the reason (the
span's outcome ``blocked``), and a rewrite is what the client gets.

The gateway is a real ``python -m otelhooks mcp`` process between the SDK's client and server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from otelhooks import read_otlp_json_lines
from tests.mcp._harness import calls, http_gateway, http_session, stdio_session, write_hooks

pytestmark = pytest.mark.timeout(90)

HOOKS = """
hooks:
  - id: leak-check
    type: tool_result_persist
    matcher: "^write_note$"
    script: hooks.py:scan
    on_error: block
  - id: redact
    type: tool_result_persist
    matcher: "^lookup$"
    script: hooks.py:redact
  - id: failed
    type: onToolCallError
    matcher: "^write_note$"
    script: hooks.py:failed
"""
SCRIPT = """
import json


def scan(data):
    raise RuntimeError("the secret scanner is down")


def redact(data):
    for block in data.result["content"]:
        block["text"] = block["text"].replace("S-42-SECRET", "***")


def failed(event):
    with open(OBSERVED, "a") as f:
        f.write(json.dumps({"tool": event.apiName, "error": event.error}) + "\\n")
"""


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_blocked_result_is_a_tool_error_with_the_reason_and_a_rewrite_is_what_the_client_gets(
    tmp_path: Path, transport: str
) -> None:
    # the hooks run in the gateway's working folder: they write where the test reads
    observed_at = f"OBSERVED = {str(tmp_path / 'observed.jsonl')!r}\n"
    hooks = write_hooks(tmp_path, HOOKS, observed_at + SCRIPT)

    async def calls_on(session: Any) -> tuple[Any, Any]:
        await session.list_tools()
        note = await session.call_tool("write_note", {"text": "S-42-SECRET"})
        looked = await session.call_tool("lookup", {"key": "S-42-SECRET"})
        return note, looked

    async def over_stdio() -> tuple[Any, Any]:
        async with stdio_session(tmp_path, [hooks]) as session:
            return await calls_on(session)

    if transport == "stdio":
        note, looked = anyio.run(over_stdio)
    else:
        with http_gateway(tmp_path, [hooks]) as url:

            async def over_http() -> tuple[Any, Any]:
                async with http_session(url) as session:
                    return await calls_on(session)

            note, looked = anyio.run(over_http)
    # before: (False, "noted: S-42-SECRET") and "value of S-42-SECRET"
    assert note.is_error is True
    assert "leak-check" in note.content[0].text
    assert "S-42-SECRET" not in note.content[0].text
    assert (looked.is_error, looked.content[0].text) == (False, "value of ***")
    assert [c["tool"] for c in calls(tmp_path)] == ["write_note", "lookup"]  # both ran
    spans = {s["name"]: s for s in read_otlp_json_lines(tmp_path / "traces.jsonl")}
    attrs = spans["tools/call write_note"]["attributes"]
    assert attrs["otelhooks.tool.outcome"] == "blocked"
    assert "error.type" not in attrs  # a hook's policy, not a failure
    (persisted,) = [
        e["attributes"]
        for e in spans["tools/call write_note"]["events"]
        if e["name"] == "otelhooks.tool_result_persist"
    ]
    assert persisted["otelhooks.hook.decided_by"] == "leak-check"  # the web view's mark says it
    assert persisted["otelhooks.hook.decision_reason"]
    observed = (tmp_path / "observed.jsonl").read_text().splitlines()
    assert [json.loads(line)["tool"] for line in observed] == ["write_note"]
