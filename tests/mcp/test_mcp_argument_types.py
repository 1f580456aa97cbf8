"""A guard judges what the server will run: with the SDK's client and server on either side of
the gateway, arguments the server would read as another value than the guard (``"true"`` for a
boolean, which the SDK's lax validation runs as ``True``) are refused before any guard, and a
default the client left out is filled into what the guard sees."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer
from mcp.types import TextContent
from pydantic import BaseModel

from otelhooks import read_otlp_json_lines
from otelhooks._tool_schema import type_problem, with_defaults
from tests.mcp._harness import calls, http_gateway, http_session, stdio_session, write_hooks

pytestmark = pytest.mark.timeout(120)

NO_FORCE = """
hooks:
  - id: no-force
    type: beforeToolCall
    matcher: "^testsrv/(rm|wipe)$"
    script: hooks.py:no_force
"""
NO_FORCE_SCRIPT = """
from otelhooks import Block

def no_force(event):
    if event.args.get("force") is True:
        return Block("no forced removal")
    return None
"""


def _text(result: object) -> str:
    content = getattr(result, "content", [])
    return "\n".join(c.text for c in content if isinstance(c, TextContent))


def _run(tmp: Path, *requests: tuple[str, dict[str, Any]], listed: bool = True) -> list[Any]:
    hooks = write_hooks(tmp, NO_FORCE, NO_FORCE_SCRIPT)

    async def scenario() -> list[Any]:
        async with stdio_session(tmp, [hooks]) as session:
            if listed:
                await session.list_tools()
            return [await session.call_tool(name, args) for name, args in requests]

    return anyio.run(scenario)


def test_a_value_the_server_would_coerce_is_refused_before_the_guard(tmp_path: Path) -> None:
    results = _run(
        tmp_path,
        ("rm", {"path": "/a", "force": "true"}),
        ("rm", {"path": "/b", "force": 1}),
        ("rm", {"path": "/c", "force": "1"}),
        ("rm", {"path": "/d", "force": True}),
        ("rm", {"path": "/e", "force": False}),
    )
    for refused in results[:3]:
        assert refused.is_error is True
        assert "arguments.force is" in _text(refused)
        assert "inputSchema says boolean" in _text(refused)
    assert results[3].is_error is True
    assert _text(results[3]) == "no forced removal"
    assert results[4].is_error is not True
    # before, the three coerced values ran as force=True past the guard
    assert calls(tmp_path) == [{"tool": "rm", "args": {"path": "/e", "force": False}}]


def test_the_guard_sees_the_default_the_server_fills_in(tmp_path: Path) -> None:
    results = _run(
        tmp_path,
        ("wipe", {"path": "/a"}),
        ("wipe", {"path": "/b", "force": False}),
        ("rm", {"path": "/c"}),
    )
    assert results[0].is_error is True
    assert _text(results[0]) == "no forced removal"  # before, it ran forced
    assert [r.is_error for r in results[1:]] == [False, False]
    assert calls(tmp_path) == [
        {"tool": "wipe", "args": {"path": "/b", "force": False}},
        {"tool": "rm", "args": {"path": "/c", "force": False}},
    ]


class Opts(BaseModel):
    force: bool = True
    depth: int | None = None


SHAPES = MCPServer("shapes")


@SHAPES.tool()
def sync(
    opts: Opts,
    flags: dict[str, bool],
    paths: list[str],
    maybe: bool | None = None,
    pair: tuple[int, bool] = (1, False),
) -> str:
    """A tool with nested, optional, mapped and tuple arguments: the SDK lists ``$ref`` into
    ``$defs``, ``anyOf``, ``additionalProperties`` and ``prefixItems`` for it."""
    return "synced"


def _sdk_schema() -> dict[str, Any]:
    schema: dict[str, Any] = anyio.run(SHAPES.list_tools)[0].input_schema
    return schema


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"opts": {"force": "true"}}, "arguments.opts.force is string"),  # through $ref
        ({"opts": {"depth": "3"}}, "arguments.opts.depth is string"),  # anyOf integer / null
        ({"maybe": "yes"}, "arguments.maybe is string"),  # anyOf boolean / null
        ({"flags": {"x": 1}}, "arguments.flags.x is integer"),  # additionalProperties
        ({"paths": ["/", 7]}, "arguments.paths[1] is integer"),  # items
        ({"pair": [1, "false"]}, "arguments.pair[1] is string"),  # prefixItems
        ({"opts": "{}"}, "arguments.opts is string"),
        ("not an object", "arguments is string"),
        ({"opts": {"depth": None}, "maybe": None, "pair": [2.0, True], "other": "x"}, None),
    ],
)
def test_each_schema_shape_the_sdk_lists_is_checked(arguments: Any, problem: str | None) -> None:
    found = type_problem(arguments, _sdk_schema())
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert found.startswith(problem)


def test_nested_defaults_are_filled_and_the_arguments_sent_are_left_as_they_are() -> None:
    sent: dict[str, Any] = {"opts": {}, "flags": {}, "paths": []}
    seen = with_defaults(sent, _sdk_schema())
    assert seen == {
        "opts": {"force": True, "depth": None},
        "flags": {},
        "paths": [],
        "maybe": None,
        "pair": [1, False],
    }
    assert sent == {"opts": {}, "flags": {}, "paths": []}


def test_a_schema_whose_refs_loop_or_point_away_is_not_followed_forever() -> None:
    looped = {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}
    assert type_problem({"x": "1"}, looped) is None
    assert with_defaults({"x": "1"}, looped) == {"x": "1"}
    remote = {"properties": {"force": {"$ref": "https://example.invalid/bool.json"}}}
    assert type_problem({"force": "true"}, remote) is None


@pytest.mark.parametrize("combinator", ["anyOf", "oneOf", "allOf"])
def test_a_schema_whose_branches_loop_is_refused_not_followed_forever(combinator: str) -> None:
    """A branch that refers back to itself never reaches the value: no type can be told, so
    the call is refused with the reason. Before, the check recursed until Python's limit and
    raised ``RecursionError`` (the gateway answered "gateway failed", the OpenAI Agents
    wrapper's call failed with the exception)."""
    looped = {
        "$defs": {"a": {combinator: [{"$ref": "#/$defs/a"}]}},
        "properties": {"force": {"$ref": "#/$defs/a"}},
    }
    problem = type_problem({"force": "true"}, looped)
    assert problem == (
        "arguments.force cannot be checked: the tool's inputSchema refers to itself without end"
    )


def test_a_session_that_never_listed_is_judged_by_the_schema_another_session_listed(
    tmp_path: Path,
) -> None:
    """Over HTTP a client may call without listing in that session (the list it cached, a
    session the gateway dropped when idle, the stateless protocol's one request per session):
    the schemas are the server's, kept by the gateway, not by the session that listed them."""
    hooks = write_hooks(tmp_path, NO_FORCE, NO_FORCE_SCRIPT)

    async def scenario(url: str) -> list[Any]:
        async with http_session(url) as first:
            await first.list_tools()
        async with http_session(url) as second:
            return [
                await second.call_tool("rm", {"path": "/a", "force": "true"}),
                await second.call_tool("wipe", {"path": "/b"}),
            ]

    with http_gateway(tmp_path, [hooks]) as url:
        refused, denied = anyio.run(scenario, url)
    assert refused.is_error is True
    assert "arguments.force is string" in _text(refused)
    assert denied.is_error is True
    assert _text(denied) == "no forced removal"
    assert calls(tmp_path) == []  # before, both ran forced


OBSERVED = (
    NO_FORCE
    + """
  - id: told
    type: on_tool_call_denied
    matcher: ".*"
    script: hooks.py:told
  - id: told-error
    type: on_tool_call_error
    matcher: ".*"
    script: hooks.py:told
"""
)
OBSERVED_SCRIPT = """
import json
from pathlib import Path

from otelhooks import Block

SEEN = Path(__file__).with_name("seen.jsonl")

def _note(line):
    with SEEN.open("a") as f:
        f.write(json.dumps(line) + "\\n")

def no_force(event):
    _note({"guard": event.args})
    if event.args.get("force") is True:
        return Block("no forced removal")
    return None

def told(event):
    _note({"event": type(event).__name__, **event.model_dump(mode="json", include={
        "apiName", "reason", "decidedBy", "args"})})
"""


def test_a_refused_call_is_a_deny_by_otelhooks_on_the_span_and_for_observers(
    tmp_path: Path,
) -> None:
    """A call otelhooks refuses before any hook runs is recorded as a hook's deny is: the
    ``execute_tool`` span says ``deny`` and why, ``on_tool_call_denied`` observers are told
    (``decidedBy: otelhooks``), no guard runs; a well-typed call is judged as before."""
    hooks = write_hooks(tmp_path, OBSERVED, OBSERVED_SCRIPT)

    async def scenario() -> list[Any]:
        async with stdio_session(tmp_path, [hooks]) as session:
            await session.list_tools()
            return [
                await session.call_tool("rm", {"path": "/a", "force": "true"}),
                await session.call_tool("rm", {"path": "/b", "force": False}),
            ]

    refused, allowed = anyio.run(scenario)
    reason = (
        "otelhooks refused the call: arguments.force is string where the tool's inputSchema "
        "says boolean"
    )
    assert (refused.is_error, _text(refused)) == (True, reason)
    assert allowed.is_error is not True
    spans = _spans_eventually(tmp_path / "traces.jsonl", "mcp.session")
    rm = [s for s in spans if s["name"] == "tools/call rm"]
    assert len(rm) == 2
    denied, ran = (s["attributes"] for s in rm)
    assert denied["otelhooks.hook.decision"] == "deny"
    assert denied["otelhooks.hook.decided_by"] == "otelhooks"
    assert denied["otelhooks.hook.decision_reason"] == reason
    assert denied["otelhooks.hook.classification"] == "hook_denied"
    assert "error.type" not in denied  # a deny, as a hook's: not a tool_error
    assert rm[0].get("status", {}).get("code") in (None, 0, "STATUS_CODE_UNSET")
    assert ran["otelhooks.hook.decision"] == "allow"
    seen = _seen_eventually(tmp_path / "seen.jsonl", 2)  # the gateway has exited: all of it
    # no guard saw the refused call; the deny alone was told (no error, no after)
    assert [line for line in seen if "guard" in line] == [{"guard": {"path": "/b", "force": False}}]
    assert [line for line in seen if "event" in line] == [
        {
            "event": "ToolCallDeniedEvent",
            "apiName": "rm",
            "args": {"path": "/a", "force": "true"},
            "reason": reason,
            "decidedBy": "otelhooks",
        }
    ]
    assert calls(tmp_path) == [{"tool": "rm", "args": {"path": "/b", "force": False}}]


def _seen_eventually(path: Path, count: int, timeout_s: float = 10.0) -> list[dict[str, Any]]:
    """What the hooks noted, once ``count`` lines are there or the time is up (observers run
    on the gateway's worker)."""
    deadline = time.monotonic() + timeout_s
    while True:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= count or time.monotonic() > deadline:
            return [json.loads(line) for line in lines]
        time.sleep(0.1)


def _spans_eventually(path: Path, name: str, timeout_s: float = 15.0) -> list[dict[str, Any]]:
    """The exported spans once ``name`` is among them (the gateway flushes as it exits)."""
    deadline = time.monotonic() + timeout_s
    while True:
        spans = read_otlp_json_lines(path) if path.exists() else []
        if any(s["name"] == name for s in spans) or time.monotonic() > deadline:
            return spans
        time.sleep(0.1)
