"""A hook's mock of a tool with an ``outputSchema`` that gives no ``structuredContent`` was
answered as it was: the SDK client refused the answer (the call raised), while the gateway
recorded a successful mock and queued ``after_tool_call``. Now the client gets a tool error
naming the problem, and the call is recorded as the failed mock it was.

The gateway is a real ``python -m otelhooks mcp`` process between the SDK's client and server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from otelhooks import read_otlp_json_lines
from tests.mcp._harness import calls, stdio_session, write_hooks

pytestmark = pytest.mark.timeout(90)

# ``add`` returns an int: the SDK server lists it with an outputSchema ({"result": integer})
MOCK_ADD = """
hooks:
  - id: fake-add
    type: beforeToolCall
    matcher: "^(add|write_note)$"
    script: hooks.py:mock
  - id: seen
    type: afterToolCall
    matcher: "^(add|write_note)$"
    script: hooks.py:seen
  - id: failed
    type: onToolCallError
    matcher: "^(add|write_note)$"
    script: hooks.py:failed
"""
MOCK_SCRIPT = """
import json


def mock(event):
    event.mock({"content": "42"})


def _note(kind, event):
    with open("observed.jsonl", "a") as f:
        f.write(json.dumps({"kind": kind, "tool": event.apiName}) + "\\n")


def seen(event):
    _note("after", event)


def failed(event):
    _note("error", event)
"""


def _observed(tmp: Path) -> list[dict[str, Any]]:
    path = tmp / "observed.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_mock_without_the_structured_content_an_output_schema_requires_is_a_tool_error(
    tmp_path: Path,
) -> None:
    hooks = write_hooks(tmp_path, MOCK_ADD, MOCK_SCRIPT)

    async def scenario() -> tuple[Any, Any]:
        async with stdio_session(tmp_path, [hooks]) as session:
            await session.list_tools()
            add = await session.call_tool("add", {"a": 1, "b": 2})
            note = await session.call_tool("write_note", {"text": "x"})  # no outputSchema
            return add, note

    add, note = anyio.run(scenario)  # before: RuntimeError, no structured content
    assert add.is_error is True
    assert add.content[0].text == (
        "otelhooks: a hook mocked add without the structuredContent its outputSchema requires"
    )
    assert (note.is_error, note.content[0].text) == (False, "42")  # a mock as it was
    assert calls(tmp_path) == []  # the server never ran either
    spans = {s["name"]: s for s in read_otlp_json_lines(tmp_path / "traces.jsonl")}
    attrs = spans["tools/call add"]["attributes"]
    assert attrs["otelhooks.hook.mocked"] is True
    assert attrs["error.type"] == "tool_error"
    assert "error.type" not in spans["tools/call write_note"]["attributes"]
    assert sorted(_observed(tmp_path), key=lambda seen: seen["tool"]) == [
        {"kind": "error", "tool": "add"},
        {"kind": "after", "tool": "write_note"},
    ]
