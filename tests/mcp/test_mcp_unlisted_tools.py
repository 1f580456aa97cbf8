"""A guarded call of a tool the gateway holds no listing of (the client never listed through
it, or the server said its list changed) is judged by the server's own list, which the gateway
asks for: SDK client, real gateway, SDK server, over stdio and Streamable HTTP."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from mcp.types import TextContent

from tests.mcp._harness import calls, http_gateway, http_session, stdio_session, write_hooks

pytestmark = pytest.mark.timeout(120)

NO_FORCE = """
hooks:
  - id: no-force
    type: beforeToolCall
    matcher: "^testsrv/(rm|wipe|toggle)$"
    script: hooks.py:no_force
"""
NO_DESTRUCTION = """
hooks:
  - id: no-destruction
    type: beforeToolCall
    matcher: "@destructive"
    script: hooks.py:no_destruction
"""
NO_FORCE_SCRIPT = """
from otelhooks import Block

def no_force(event):
    if event.args.get("force") is True:
        return Block("no forced removal")
    return None

def no_destruction(event):
    return Block("destructive tools need a person")
"""

Scenario = Callable[[ClientSession], Awaitable[Any]]


def _text(result: object) -> str:
    content = getattr(result, "content", [])
    return "\n".join(c.text for c in content if isinstance(c, TextContent))


def _run(tmp: Path, transport: str, scenario: Scenario, hooks_yaml: str = NO_FORCE) -> Any:
    hooks = write_hooks(tmp, hooks_yaml, NO_FORCE_SCRIPT)
    if transport == "stdio":

        async def over_stdio() -> Any:
            async with stdio_session(tmp, [hooks]) as session:
                return await scenario(session)

        return anyio.run(over_stdio)

    async def over_http(url: str) -> Any:
        async with http_session(url) as session:
            return await scenario(session)

    with http_gateway(tmp, [hooks]) as url:
        return anyio.run(over_http, url)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_tool_never_listed_is_judged_by_the_list_the_gateway_asks_for(
    tmp_path: Path, transport: str
) -> None:
    """Before, with no ``tools/list`` through the gateway the call was judged as sent: the
    server ran ``"true"`` as ``True`` and its default ``force=True`` past the guard."""

    async def scenario(session: ClientSession) -> list[Any]:
        return [
            await session.call_tool("rm", {"path": "/a", "force": "true"}),
            await session.call_tool("wipe", {"path": "/b"}),
        ]

    refused, denied = _run(tmp_path, transport, scenario)
    assert refused.is_error is True
    assert "arguments.force is string where the tool's inputSchema says boolean" in _text(refused)
    assert denied.is_error is True
    assert _text(denied) == "no forced removal"
    assert calls(tmp_path) == []


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_tool_the_server_does_not_list_is_refused_as_unknown(
    tmp_path: Path, transport: str
) -> None:
    """A name the server's list does not hold (a confusable, a trailing space, a zero-width
    space, none at all) gets the specification's unknown-tool error from the gateway, before
    any guard: a server that normalizes names would otherwise run ``rm`` unjudged."""
    names = ["\uff52\uff4d", "rm ", "rm\u200b", "nope"]

    async def scenario(session: ClientSession) -> list[MCPError]:
        errors = []
        for name in names:
            with pytest.raises(MCPError) as raised:
                await session.call_tool(name, {"path": "/", "force": True})
            errors.append(raised.value)
        return errors

    errors = _run(tmp_path, transport, scenario)
    assert [(e.code, e.message) for e in errors] == [(-32602, f"Unknown tool: {n}") for n in names]
    assert calls(tmp_path) == []


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_schema_the_server_changed_is_read_again_before_the_next_guarded_call(
    tmp_path: Path, transport: str
) -> None:
    """``arm`` gives ``toggle`` a boolean ``force`` and sends
    ``notifications/tools/list_changed``; the client does not list again. Before, the gateway
    judged the next call by the old schema (no ``force``), and ``"true"`` ran forced."""

    async def scenario(session: ClientSession) -> list[Any]:
        await session.list_tools()
        return [
            await session.call_tool("arm", {}),
            await session.call_tool("toggle", {"path": "/c", "force": "true"}),
        ]

    armed, refused = _run(tmp_path, transport, scenario)
    assert _text(armed) == "armed"
    assert refused.is_error is True
    assert "arguments.force is string where the tool's inputSchema says boolean" in _text(refused)
    assert [c["tool"] for c in calls(tmp_path)] == []


def test_a_session_that_never_listed_is_matched_by_the_kinds_the_server_annotated(
    tmp_path: Path,
) -> None:
    """``purge`` is annotated destructive, ``lookup`` read-only: a ``@destructive`` guard
    stops the one and lets the other run without the client listing first. Before, a session
    that had not listed judged every tool by the specification's defaults (destructive)."""

    async def scenario(session: ClientSession) -> list[Any]:
        return [
            await session.call_tool("purge", {"key": "k"}),
            await session.call_tool("lookup", {"key": "k"}),
        ]

    purged, looked = _run(tmp_path, "stdio", scenario, NO_DESTRUCTION)
    assert purged.is_error is True
    assert _text(purged) == "destructive tools need a person"
    assert _text(looked) == "value of k"
    assert [c["tool"] for c in calls(tmp_path)] == ["lookup"]


def test_each_session_is_judged_by_the_list_it_was_given(tmp_path: Path) -> None:
    """A server that lists per session (``rm``'s ``force`` a string to every session, a
    boolean to the one that called ``arm``). Before, every session was judged by the last list
    through the gateway: A's ``{"force": "true"}`` passed by B's string schema and ran forced."""
    hooks = write_hooks(tmp_path, NO_FORCE, NO_FORCE_SCRIPT)
    app = Path(__file__).with_name("per_session_server.py")

    async def scenario(url: str) -> dict[str, str]:
        texts: dict[str, str] = {}
        async with http_session(url) as a, http_session(url) as b:
            await a.list_tools()
            await b.list_tools()
            await a.call_tool("arm", {})  # notifications/tools/list_changed to A only
            # A listed, then its list changed: the gateway lists again, in A's session
            texts["a after arm"] = _text(await a.call_tool("rm", {"path": "/a", "force": "true"}))
            # B's own list still says string, and B's server runs a string
            texts["b after arm"] = _text(await b.call_tool("rm", {"path": "/b", "force": "true"}))
            await a.list_tools()
            await b.list_tools()  # the last list through the gateway says string
            texts["a listed"] = _text(await a.call_tool("rm", {"path": "/a", "force": "true"}))
            texts["a forced"] = _text(await a.call_tool("rm", {"path": "/a", "force": True}))
            texts["b listed"] = _text(await b.call_tool("rm", {"path": "/b", "force": "true"}))
        return texts

    with http_gateway(tmp_path, [hooks], app=app) as url:
        texts = anyio.run(scenario, url)
    refused = "otelhooks refused the call: arguments.force is string where the tool's inputSchema"
    assert texts == {
        "a after arm": f"{refused} says boolean",
        "b after arm": "removed, force='true'",
        "a listed": f"{refused} says boolean",
        "a forced": "no forced removal",
        "b listed": "removed, force='true'",
    }
    assert calls(tmp_path) == [{"tool": "rm", "args": {"path": "/b", "force": "true"}}] * 2
