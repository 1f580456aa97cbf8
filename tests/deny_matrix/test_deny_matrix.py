"""The deny matrix: every way to deny a tool call by every runtime path. One table, one test.

For each (way, path): a guard of that way alone, a tool call on that path; the tool never runs
(the function is not called, Claude Code is told ``deny``, the MCP server records no call, the
replayed decision is ``deny``) and the trace says which hook stopped it
(``otelhooks.hook.decided_by`` on the ``execute_tool`` span, the replay's ``by``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelhooks import Hook, load_config, read_otlp_json_lines
from otelhooks.integrations.claude_code import BridgeOptions, BridgeState, run_hook
from otelhooks.integrations.coding_agents import CodingAgentBridge
from otelhooks.integrations.coding_agents._http import ClaudeCodeHookRoute
from otelhooks.semconv import HOOK_DECIDED_BY
from otelhooks.testing import pipeline
from tests._webhook_server import Reply, WebhookServer, webhook_server
from tests.mcp._harness import calls, http_gateway, http_session, stdio_session

pytestmark = pytest.mark.timeout(120)

DENY_JSON = (
    '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", '
    '"permissionDecisionReason": "stopped"}}'
)
CONTINUE_FALSE = '{"continue": false, "stopReason": "stopped"}'
SCRIPT = """
from otelhooks import Block

def block(event):
    return Block("stopped")

def deny(event):
    event.deny("stopped")

def kernel(event):
    return None
"""


def _command(printed: str, code: int) -> str:
    return json.dumps(f"cat >/dev/null; printf '%s' '{printed}'; echo stopped >&2; exit {code}")


# way -> the hooks file (YAML unless it is Claude Code's settings.json)
WAYS: dict[str, str] = {
    "python-block": "hooks:\n  - {id: guard, type: before_tool_call, script: hooks.py:block}\n",
    "python-deny": "hooks:\n  - {id: guard, type: before_tool_call, script: hooks.py:deny}\n",
    "kernel-none": "hooks:\n  - {id: guard, type: before_tool_call, intercept: true, "
    "script: hooks.py:kernel}\n",
    "lobehub-webhook": "hooks:\n  - {id: guard, type: beforeToolCall, "
    "webhook: {url: 'URL/control', responseHandling: toolCall}}\n",
    "command-exit2": f"hooks:\n  - {{id: guard, type: PreToolUse, command: {_command('', 2)}}}\n",
    "deny-json-exit0": "hooks:\n  - {id: guard, type: PreToolUse, command: "
    f"{_command(DENY_JSON, 0)}}}\n",
    "deny-json-exit1": "hooks:\n  - {id: guard, type: PreToolUse, command: "
    f"{_command(DENY_JSON, 1)}}}\n",
    "continue-false": "hooks:\n  - {id: guard, type: PreToolUse, command: "
    f"{_command(CONTINUE_FALSE, 0)}}}\n",
    "http-hook": json.dumps(
        {
            "hooks": {
                "PreToolUse": [{"matcher": "*", "hooks": [{"type": "http", "url": "URL/claude"}]}]
            }
        }
    ),
}
PATHS = (
    "sync",
    "async",
    "claude-bridge",
    "claude-http-route",
    "mcp-stdio",
    "mcp-http",
    "openai-agents",
    "openai-agents-streamed",
    "langgraph",
    "replay",
)


@dataclass
class Case:
    tmp: Path
    server: WebhookServer
    hooks: Path
    guard: str  # the hook id the trace must name


@pytest.fixture
def server() -> Iterator[WebhookServer]:
    with webhook_server() as srv:
        srv.routes["/control"] = Reply.json({"decision": "deny", "reason": "stopped"})
        srv.routes["/claude"] = Reply.json(json.loads(DENY_JSON))
        yield srv


def _case(tmp: Path, server: WebhookServer, way: str) -> Case:
    (tmp / "hooks.py").write_text(SCRIPT)
    name = "settings.json" if way == "http-hook" else "hooks.yaml"
    path = tmp / name
    path.write_text(WAYS[way].replace("URL", server.url))
    guard = load_config([path]).hooks[0].id
    return Case(tmp, server, path, guard)


# -- the paths: each runs one tool call and returns (the tool ran, the hook the trace names) --


def _hooks(case: Case) -> list[Hook]:
    return list(load_config([case.hooks]).hooks)


def _sync(case: Case) -> tuple[bool, str]:
    ran: list[str] = []
    with pipeline(hooks=_hooks(case)) as pipe:
        with pipe.oh.operation("agent") as op, op.step() as step:
            step.run_tool("fs", "rm", {"path": "victim"}, lambda path: ran.append(path))
        span = pipe.spans("execute_tool rm")[0]
    return bool(ran), str((span.attributes or {}).get(HOOK_DECIDED_BY))


def _async(case: Case) -> tuple[bool, str]:
    ran: list[str] = []

    async def tool(path: str) -> str:
        ran.append(path)
        return "done"

    async def scenario() -> None:
        async with pipe.oh.operation("agent") as op, op.step() as step:
            await step.arun_tool("fs", "rm", {"path": "victim"}, tool)

    with pipeline(hooks=_hooks(case)) as pipe:
        asyncio.run(scenario())
        span = pipe.spans("execute_tool rm")[0]
    return bool(ran), str((span.attributes or {}).get(HOOK_DECIDED_BY))


def _pre_tool_use() -> dict[str, Any]:
    return {
        "session_id": "matrix",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_use_id": "toolu_rm",
        "tool_input": {"command": "rm -rf victim"},
    }


def _denied(answer: dict[str, Any]) -> bool:
    specific: dict[str, Any] = answer.get("hookSpecificOutput", {})
    return specific.get("permissionDecision") == "deny"


def _claude_bridge(case: Case) -> tuple[bool, str]:
    traces = case.tmp / "traces.jsonl"
    options = BridgeOptions(
        hooks=(str(case.hooks),), state=str(case.tmp / "state.sqlite3"), traces_out=str(traces)
    )
    response = run_hook(json.dumps(_pre_tool_use()), options)
    denied = response.exit_code == 2 or _denied(json.loads(response.stdout or "{}"))
    span = next(s for s in read_otlp_json_lines(traces) if s["name"] == "execute_tool Bash")
    return not denied, str(span["attributes"].get(HOOK_DECIDED_BY))


def _claude_http_route(case: Case) -> tuple[bool, str]:
    exporter = InMemorySpanExporter()
    bridge = CodingAgentBridge(
        hooks=_hooks(case), state=BridgeState(case.tmp / "state.sqlite3"), exporters=[exporter]
    )
    try:
        status, body = ClaudeCodeHookRoute(bridge).answer(_pre_tool_use())
    finally:
        bridge.close()
    assert status == 200
    span = next(s for s in exporter.get_finished_spans() if s.name == "execute_tool Bash")
    return not _denied(json.loads(body)), str((span.attributes or {}).get(HOOK_DECIDED_BY))


def _mcp_trace(case: Case) -> str:
    """The gateway's span of the call (``tools/call write_note``; it flushes as it exits)."""
    path = case.tmp / "traces.jsonl"
    deadline = time.monotonic() + 20.0
    while True:
        spans = read_otlp_json_lines(path) if path.exists() else []
        tools = [s for s in spans if s["attributes"].get("gen_ai.tool.name") == "write_note"]
        if tools or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert tools, "the gateway exported no span of the tool call"
    return str(tools[0]["attributes"].get(HOOK_DECIDED_BY))


def _mcp_stdio(case: Case) -> tuple[bool, str]:
    async def scenario() -> None:
        async with stdio_session(case.tmp, [case.hooks]) as session:
            await session.call_tool("write_note", {"text": "secret"})

    anyio.run(scenario)
    return bool(calls(case.tmp)), _mcp_trace(case)


def _mcp_http(case: Case) -> tuple[bool, str]:
    async def scenario(url: str) -> None:
        async with http_session(url) as session:
            await session.call_tool("write_note", {"text": "secret"})

    with http_gateway(case.tmp, [case.hooks]) as url:
        anyio.run(scenario, url)
    return bool(calls(case.tmp)), _mcp_trace(case)


def _openai_agents(case: Case) -> tuple[bool, str]:
    from otelhooks.integrations.openai_agents import HookedRunner
    from tests.integrations.test_openai_agents import World, build

    world = World()
    with pipeline(hooks=_hooks(case)) as pipe:
        planner, _, _ = build(world)
        asyncio.run(HookedRunner(pipe.oh.tracer).run(planner, "plan it", session_id="s"))
        span = pipe.spans("execute_tool delete_file")[0]
    return "delete_file" in world.ran, str((span.attributes or {}).get(HOOK_DECIDED_BY))


def _openai_agents_streamed(case: Case) -> tuple[bool, str]:
    from otelhooks.integrations.openai_agents import HookedRunner
    from tests.integrations.test_openai_agents import World, build

    world = World()
    with pipeline(hooks=_hooks(case)) as pipe:
        planner, _, _ = build(world)

        async def streamed() -> None:
            runner = HookedRunner(pipe.oh.tracer)
            result = await runner.run_streamed(planner, "plan it", session_id="s")
            async for _ in result.stream_events():
                pass

        asyncio.run(streamed())
        span = pipe.spans("execute_tool delete_file")[0]
    return "delete_file" in world.ran, str((span.attributes or {}).get(HOOK_DECIDED_BY))


def _langgraph(case: Case) -> tuple[bool, str]:
    from otelhooks.integrations.langchain import OtelHooksCallbackHandler, hook_tool
    from tests.integrations.test_langchain import World, ai, graph, make_tools

    world = World()
    script = [ai(("delete_file", {"path": "a.txt"}, "t1")), ai(text="done")]
    with pipeline(hooks=_hooks(case)) as pipe:
        app = graph(world, [hook_tool(t) for t in make_tools(world)], script)
        handler = OtelHooksCallbackHandler(pipe.oh.tracer, agent_name="agent", session_id="s")
        app.invoke({"messages": [("user", "clean up")]}, config={"callbacks": [handler]})
        span = pipe.spans("execute_tool delete_file")[0]
    return "delete_file" in world.ran, str((span.attributes or {}).get(HOOK_DECIDED_BY))


def _replay(case: Case) -> tuple[bool, str]:
    from otelhooks import OtlpJsonLinesSpanExporter, configure
    from otelhooks.replay import replay

    recording = case.tmp / "recorded.jsonl"
    oh = configure(
        otlp=False,
        span_exporters=[OtlpJsonLinesSpanExporter(str(recording))],
        set_global=False,
        structured_logging=False,
    )
    with oh.operation("agent") as op, op.step() as step:
        step.run_tool("fs", "rm", {"path": "victim"}, lambda path: "done")
    oh.shutdown(5.0)
    report = replay([recording], [case.hooks], live_webhooks=True)
    decided = [e["now"] for e in report.listed() if e["event"] == "before_tool_call"]
    assert decided, "the replay decided nothing"
    return decided[0]["decision"] != "deny", ",".join(decided[0]["by"])


RUN: dict[str, Callable[[Case], tuple[bool, str]]] = {
    "sync": _sync,
    "async": _async,
    "claude-bridge": _claude_bridge,
    "claude-http-route": _claude_http_route,
    "mcp-stdio": _mcp_stdio,
    "mcp-http": _mcp_http,
    "openai-agents": _openai_agents,
    "openai-agents-streamed": _openai_agents_streamed,
    "langgraph": _langgraph,
    "replay": _replay,
}


def _cases() -> Iterator[Any]:
    for way in WAYS:
        for path in PATHS:
            yield pytest.param(way, path, id=f"{way}-{path}")


@pytest.mark.parametrize(("way", "path"), list(_cases()))
def test_the_tool_never_runs_and_the_trace_names_the_guard(
    tmp_path: Path, server: WebhookServer, way: str, path: str
) -> None:
    case = _case(tmp_path, server, way)
    ran, decided_by = RUN[path](case)
    assert not ran, f"{way} did not stop the tool on {path}"
    assert decided_by == case.guard


def test_the_matrix_has_every_way_on_every_path() -> None:
    assert set(RUN) == set(PATHS)
    assert len(list(_cases())) == len(WAYS) * len(PATHS)
