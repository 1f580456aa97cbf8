"""One name for one tool: a guard naming an MCP tool as Claude Code does (``mcp__<server>__<tool>``,
exact or regex) fires in the gateway, with the SDK's client and server on either side of it."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp.types import TextContent

from tests.mcp._harness import calls, stdio_session, write_hooks

pytestmark = pytest.mark.timeout(120)

HOOKS = """
hooks:
  - id: no-notes
    type: PreToolUse
    matcher: mcp__testsrv__write_note
    command: "echo 'notes are read-only' >&2; exit 2"
  - id: no-adding
    type: beforeToolCall
    matcher: "mcp__testsrv__a.*"
    command: "echo 'no adding' >&2; exit 2"
"""


def _text(result: object) -> str:
    content = getattr(result, "content", [])
    return "\n".join(c.text for c in content if isinstance(c, TextContent))


def test_claude_code_style_names_exact_and_regex_fire_in_the_gateway(tmp_path: Path) -> None:
    hooks = write_hooks(tmp_path, HOOKS)

    async def scenario() -> tuple[object, object, object]:
        async with stdio_session(tmp_path, [hooks]) as session:
            note = await session.call_tool("write_note", {"text": "secret"})
            added = await session.call_tool("add", {"a": 1, "b": 1})
            slow = await session.call_tool("slow", {"tag": "t", "seconds": 0})
            return note, added, slow

    note, added, slow = anyio.run(scenario)
    assert getattr(note, "is_error", None) is True
    assert "notes are read-only" in _text(note)
    assert getattr(added, "is_error", None) is True
    assert "no adding" in _text(added)
    assert getattr(slow, "is_error", None) is not True
    assert [c["tool"] for c in calls(tmp_path)] == ["slow"]  # the guarded tools never ran
