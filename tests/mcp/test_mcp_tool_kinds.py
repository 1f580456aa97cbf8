"""Tool kinds from MCP tool annotations: the gateway reads ``tools/list`` and a guard written
``@destructive`` / ``@read_only`` fires on the tools the server annotated so, with the SDK's
client and server on either side of it."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp.types import TextContent

from otelhooks import compile_matcher
from otelhooks._tool_kinds import annotation_kinds
from tests.mcp._harness import calls, stdio_session, write_hooks

pytestmark = pytest.mark.timeout(120)

NO_DESTRUCTION = """
hooks:
  - id: no-destruction
    type: beforeToolCall
    matcher: "@destructive"
    command: "echo 'destructive tools need a person' >&2; exit 2"
"""


def _text(result: object) -> str:
    content = getattr(result, "content", [])
    return "\n".join(c.text for c in content if isinstance(c, TextContent))


def test_a_destructive_guard_stops_the_tool_annotated_destructive(tmp_path: Path) -> None:
    hooks = write_hooks(tmp_path, NO_DESTRUCTION)

    async def scenario() -> tuple[object, object]:
        async with stdio_session(tmp_path, [hooks]) as session:
            await session.list_tools()
            purged = await session.call_tool("purge", {"key": "k"})
            looked = await session.call_tool("lookup", {"key": "k"})
            return purged, looked

    purged, looked = anyio.run(scenario)
    assert getattr(purged, "is_error", None) is True
    assert "destructive tools need a person" in _text(purged)
    assert getattr(looked, "is_error", None) is not True
    assert _text(looked) == "value of k"
    assert [c["tool"] for c in calls(tmp_path)] == ["lookup"]


def test_a_tool_listed_without_annotations_has_the_specifications_defaults(
    tmp_path: Path,
) -> None:
    hooks = write_hooks(tmp_path, NO_DESTRUCTION)

    async def scenario() -> object:
        async with stdio_session(tmp_path, [hooks]) as session:
            await session.list_tools()
            return await session.call_tool("add", {"a": 1, "b": 2})

    added = anyio.run(scenario)
    # no annotations: destructiveHint defaults to true, so a guard on it errs on the safe side
    assert getattr(added, "is_error", None) is True
    assert calls(tmp_path) == []


def test_filter_tools_hides_the_tools_a_kind_guard_denies(tmp_path: Path) -> None:
    hooks = write_hooks(tmp_path, NO_DESTRUCTION)

    async def scenario() -> list[str]:
        async with stdio_session(tmp_path, [hooks], ["--filter-tools"]) as session:
            return [tool.name for tool in (await session.list_tools()).tools]

    names = anyio.run(scenario)
    assert "lookup" in names
    assert "purge" not in names
    assert "add" not in names  # no annotations: the defaults say destructive


@pytest.mark.parametrize(
    ("annotations", "kinds"),
    [
        (None, ("@destructive", "@open_world")),
        ({}, ("@destructive", "@open_world")),
        ({"readOnlyHint": True}, ("@read_only", "@open_world")),
        ({"readOnlyHint": True, "destructiveHint": True, "openWorldHint": False}, ("@read_only",)),
        ({"destructiveHint": False, "idempotentHint": True}, ("@idempotent", "@open_world")),
        ({"readOnlyHint": "yes", "openWorldHint": 0}, ("@destructive", "@open_world")),
    ],
)
def test_annotation_kinds_follow_the_hints_and_their_defaults(
    annotations: dict[str, object] | None, kinds: tuple[str, ...]
) -> None:
    assert annotation_kinds(annotations) == kinds


def test_an_annotation_kind_matches_only_its_own_value() -> None:
    matcher = compile_matcher("@read_only", "otelhooks")
    assert matcher.matches(("testsrv/lookup", "lookup", "@read_only"))
    assert not matcher.matches(("Read",))
    assert not compile_matcher("@file_read", "otelhooks").matches(("@read_only",))
