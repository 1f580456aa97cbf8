"""The tools of an OpenAI Agents agent's MCP servers go through otelhooks' tool hooks: the real
SDK, a real MCP server over stdio (``tests/mcp/mcp_server_app.py``, which logs every call that
reached it) and a scripted model."""

from __future__ import annotations

import asyncio
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")
pytest.importorskip("mcp")

from agents import Agent, RunConfig, UserError, set_trace_processors
from agents.mcp import MCPServerStdio
from agents.testing import assistant_message, function_call

from otelhooks import Block, ToolCallEvent
from otelhooks.integrations.openai_agents import (
    HookedRunner,
    ToolNotHookedError,
    UnguardedToolWarning,
    hook_agent,
)
from otelhooks.testing import TestPipeline
from tests.conftest import Recorder, hook
from tests.integrations._agents_model import ScriptedModel

APP = Path(__file__).resolve().parents[1] / "mcp" / "mcp_server_app.py"


@pytest.fixture(autouse=True)
def _no_sdk_trace_export() -> None:
    # The SDK's default trace processor would send traces to OpenAI when a key is set.
    set_trace_processors([])


def notes_server(log: Path, **options: Any) -> MCPServerStdio:
    return MCPServerStdio(
        {"command": sys.executable, "args": [str(APP), "stdio"], "env": {"MCP_TEST_LOG": str(log)}},
        name="notes",
        client_session_timeout_seconds=30,
        **options,
    )


def reached(log: Path) -> list[dict[str, Any]]:
    """The calls that reached the MCP server."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def run_calls(
    pipe: TestPipeline,
    log: Path,
    *calls: tuple[str, dict[str, Any]],
    server_options: dict[str, Any] | None = None,
    **run_options: Any,
) -> tuple[ScriptedModel, Any]:
    """A run whose model calls tools of the ``notes`` MCP server in one turn (call ids ``m1``,
    ``m2``, ...), then answers."""
    turn = [function_call(t, a, call_id=f"m{i}") for i, (t, a) in enumerate(calls, 1)]
    model = ScriptedModel("scripted", [turn, [assistant_message("done")]])

    async def main() -> Any:
        async with notes_server(log, **(server_options or {})) as server:
            agent = Agent(name="writer", model=model, mcp_servers=[server])
            return await HookedRunner(pipe.tracer).run(agent, "go", **run_options)

    return model, asyncio.run(main())


def test_a_deny_named_as_claude_code_names_the_tool_stops_the_call_before_the_server(
    pipe: TestPipeline, tmp_path: Path, recorder: Recorder
) -> None:
    pipe.register(
        hook("no-notes", "PreToolUse", lambda e: Block("no notes"), matcher="mcp__notes__.*"),
        hook("denied", "on_tool_call_denied", recorder),
    )
    model, result = run_calls(pipe, tmp_path / "log", ("write_note", {"text": "secret"}))
    pipe.flush()

    assert reached(tmp_path / "log") == []
    assert result.final_output == "done"
    assert "no notes" in model.tool_outputs()["m1"]
    span = pipe.span("execute_tool write_note")
    assert span.attributes is not None
    assert span.attributes["otelhooks.hook.decision"] == "deny"
    assert span.attributes["otelhooks.tool.matcher_value"] == "notes/write_note"
    assert span.attributes["mcp.method.name"] == "tools/call"
    assert span.attributes["otelhooks.mcp.server.name"] == "notes"
    assert [e.apiName for e in recorder.of("on_tool_call_denied")] == ["write_note"]  # type: ignore[attr-defined]


def test_a_mock_answers_for_the_server_and_a_rewrite_reaches_it(
    pipe: TestPipeline, tmp_path: Path
) -> None:
    def mock_lookup(event: ToolCallEvent) -> None:
        event.mock("cached value")

    def redact(event: ToolCallEvent) -> ToolCallEvent:
        return event.model_copy(update={"args": {"text": "[redacted]"}})

    pipe.register(
        hook("mock", "before_tool_call", mock_lookup, matcher="notes/lookup"),
        hook("redact", "before_tool_call", redact, matcher="write_note"),
    )
    model, _ = run_calls(
        pipe, tmp_path / "log", ("lookup", {"key": "k"}), ("write_note", {"text": "secret"})
    )
    assert [(c["tool"], c["args"]) for c in reached(tmp_path / "log")] == [
        ("write_note", {"text": "[redacted]"})
    ]
    assert "cached value" in model.tool_outputs()["m1"]
    assert "noted: [redacted]" in model.tool_outputs()["m2"]


def test_observers_see_an_mcp_call_s_result_and_its_failure(
    pipe: TestPipeline, tmp_path: Path, recorder: Recorder
) -> None:
    pipe.register(
        hook("after", "after_tool_call", recorder), hook("err", "on_tool_call_error", recorder)
    )
    # a result the server flags is_error (a tool that raised) is a failed call, also with the
    # SDK's tracing off (a function tool's handled error is read from the SDK's span)
    model, _ = run_calls(
        pipe,
        tmp_path / "log",
        ("add", {"a": 2, "b": 3}),
        ("fail", {"reason": "disk full"}),
        run_config=RunConfig(tracing_disabled=True),
    )
    pipe.flush()
    assert [(e.apiName, e.content) for e in recorder.of("after_tool_call")] == [("add", "5")]  # type: ignore[attr-defined]
    assert [e.apiName for e in recorder.of("on_tool_call_error")] == ["fail"]  # type: ignore[attr-defined]
    assert "Error executing tool fail" in model.tool_outputs()["m2"]  # the server's error text
    statuses = {
        s.name: s.status.status_code.name
        for s in pipe.spans()
        if s.name.startswith("execute_tool ")
    }
    assert statuses == {"execute_tool add": "UNSET", "execute_tool fail": "ERROR"}


def test_the_server_s_own_approval_policy_still_holds(pipe: TestPipeline, tmp_path: Path) -> None:
    _, result = run_calls(
        pipe,
        tmp_path / "log",
        ("write_note", {"text": "x"}),
        server_options={"require_approval": "always"},
    )
    assert [i.name for i in result.interruptions] == ["write_note"]
    assert reached(tmp_path / "log") == []


def test_mcp_servers_are_no_longer_named_unguarded_and_the_user_s_stay_untouched(
    tmp_path: Path,
) -> None:
    server = notes_server(tmp_path / "log")
    agent = Agent(name="writer", mcp_servers=[server])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnguardedToolWarning)
        hooked = hook_agent(agent)
    assert agent.mcp_servers == [server]
    assert hooked.mcp_servers[0] is not server
    assert hooked.mcp_servers[0].name == "notes"
    assert hook_agent(hooked).mcp_servers[0] is hooked.mcp_servers[0]

    async def lifecycle() -> list[str]:
        async with hooked.mcp_servers[0] as wrapper:
            return [t.name for t in await wrapper.list_tools()]

    assert "write_note" in asyncio.run(lifecycle())


def test_an_mcp_call_outside_a_hooked_run_says_it_is_not_guarded(tmp_path: Path) -> None:
    from agents import Runner

    model = ScriptedModel(
        "scripted",
        [[function_call("add", {"a": 1, "b": 1}, call_id="m1")], [assistant_message("done")]],
    )

    async def main() -> Any:
        async with notes_server(tmp_path / "log") as server:
            agent = hook_agent(Agent(name="writer", model=model, mcp_servers=[server]))
            return await Runner.run(agent, "go", run_config=RunConfig(tracing_disabled=True))

    with pytest.warns(UnguardedToolWarning, match="outside HookedRunner.run"):
        asyncio.run(main())
    assert len(reached(tmp_path / "log")) == 1


def test_an_agent_run_as_a_tool_with_mcp_servers_is_guarded_once_hooked_and_refused_until_then(
    pipe: TestPipeline, tmp_path: Path
) -> None:
    # Agent.as_tool runs the very agent it was made from: its servers' calls ran past the deny
    # (later only named in a warning); now such a tool's call is refused as it starts
    pipe.register(
        hook("no-notes", "PreToolUse", lambda e: Block("no notes"), matcher="mcp__notes__.*")
    )

    log = tmp_path / "log"

    async def run_as_tool(server: MCPServerStdio, hooked: bool) -> None:
        scribe = Agent(
            name="scribe",
            model=ScriptedModel(
                "small",
                [
                    [function_call("write_note", {"text": "x"}, call_id="n1")],
                    [assistant_message("written")],
                ],
            ),
            mcp_servers=[server],
        )
        tool = (hook_agent(scribe) if hooked else scribe).as_tool("scribe", "Takes notes.")
        boss_model = ScriptedModel(
            "large",
            [[function_call("scribe", {"input": "note"}, call_id="t1")], [assistant_message("ok")]],
        )
        boss = Agent(name="boss", model=boss_model, tools=[tool])
        await HookedRunner(pipe.tracer).run(boss, "go")

    async def main() -> None:
        async with notes_server(log) as server:
            warned = pytest.warns(UnguardedToolWarning, match="'scribe' .*runs agent 'scribe'")
            with warned, pytest.raises(UserError) as raised:
                await run_as_tool(server, hooked=False)
            assert isinstance(raised.value.__cause__, ToolNotHookedError)
            assert reached(log) == []  # refused before the nested agent ran (it reached it)
            with warnings.catch_warnings():
                warnings.simplefilter("error", UnguardedToolWarning)
                await run_as_tool(server, hooked=True)
            assert reached(log) == []  # its guard denied

    asyncio.run(main())


def test_an_approved_mcp_call_resumed_from_a_saved_state_still_meets_the_guard(
    pipe: TestPipeline, tmp_path: Path
) -> None:
    from agents import RunState

    pipe.register(
        hook("no-notes", "PreToolUse", lambda e: Block("no notes"), matcher="mcp__notes__.*")
    )
    log = tmp_path / "log"
    model = ScriptedModel(
        "scripted",
        [[function_call("write_note", {"text": "x"}, call_id="m1")], [assistant_message("done")]],
    )

    async def main() -> None:
        async with notes_server(log, require_approval="always") as server:
            agent = Agent(name="writer", model=model, mcp_servers=[server])
            runner = HookedRunner(pipe.tracer)
            saved = (await runner.run(agent, "go")).to_state().to_string()
            for read_back in (hook_agent(agent), agent):
                state = await RunState.from_string(read_back, saved)
                for item in state.get_interruptions():
                    state.approve(item)
                model.turns = [[assistant_message("done")]]
                if read_back is agent:  # the user's own agent: its servers' calls are not hooked
                    with pytest.warns(UnguardedToolWarning, match="resumes agent 'writer'"):
                        await runner.run(agent, state)
                else:
                    with warnings.catch_warnings():
                        warnings.simplefilter("error", UnguardedToolWarning)
                        await runner.run(agent, state)
                    assert reached(log) == []
                    assert "no notes" in model.tool_outputs()["m1"]

    asyncio.run(main())
    assert len(reached(log)) == 1  # the unhooked resume, which the warning named


def test_a_guard_judges_what_the_mcp_server_will_run(pipe: TestPipeline, tmp_path: Path) -> None:
    """The server's lax validation runs ``"true"`` as ``True`` and fills in ``force=True`` for
    ``wipe``: a value it would read as another is refused before the guard, the guard sees the
    default, and a rewrite reaches the server without the defaults it left as they were."""

    def no_force(event: ToolCallEvent) -> Block | ToolCallEvent | None:
        if event.args.get("force") is True:
            return Block("no forced removal")
        if event.args.get("path") == "/c":
            return event.model_copy(update={"args": {**event.args, "path": "/tmp/c"}})
        return None

    pipe.register(hook("no-force", "before_tool_call", no_force, matcher="^notes/(rm|wipe)$"))
    model, _ = run_calls(
        pipe,
        tmp_path / "log",
        ("rm", {"path": "/a", "force": "true"}),
        ("wipe", {"path": "/b"}),
        ("rm", {"path": "/c"}),
    )
    outputs = model.tool_outputs()
    assert "arguments.force is string where the tool's inputSchema says boolean" in outputs["m1"]
    assert "no forced removal" in outputs["m2"]
    # before, /a and /b were removed forced
    assert [(c["tool"], c["args"]) for c in reached(tmp_path / "log")] == [
        ("rm", {"path": "/tmp/c", "force": False})
    ]


def test_a_refused_mcp_call_is_a_deny_by_otelhooks_that_observers_see(
    pipe: TestPipeline, tmp_path: Path, recorder: Recorder
) -> None:
    """A call otelhooks refuses before any hook runs (its arguments' types are not the listed
    schema's) is a deny decided by ``otelhooks``, as in the MCP gateway: an ``execute_tool``
    span with the decision and its reason, ``on_tool_call_denied`` told, no guard run, the
    server never reached; a well-typed call is judged as before."""
    guarded: list[dict[str, Any]] = []

    def no_force(event: ToolCallEvent) -> None:
        guarded.append(dict(event.args))

    pipe.register(
        hook("no-force", "before_tool_call", no_force, matcher="^notes/rm$"),
        hook("denied", "on_tool_call_denied", recorder),
        hook("err", "on_tool_call_error", recorder),
    )
    model, _ = run_calls(
        pipe,
        tmp_path / "log",
        ("rm", {"path": "/a", "force": "true"}),
        ("rm", {"path": "/b", "force": False}),
    )
    pipe.flush()
    reason = (
        "otelhooks refused the call: arguments.force is string where the tool's inputSchema "
        "says boolean"
    )
    assert reason in model.tool_outputs()["m1"]
    assert guarded == [{"path": "/b", "force": False}]  # no guard saw the refused call
    assert [(c["tool"], c["args"]) for c in reached(tmp_path / "log")] == [
        ("rm", {"path": "/b", "force": False})
    ]
    denied, ran = (s.attributes or {} for s in pipe.spans("execute_tool rm"))
    assert denied["otelhooks.hook.decision"] == "deny"
    assert denied["otelhooks.hook.decided_by"] == "otelhooks"
    assert denied["otelhooks.hook.decision_reason"] == reason
    assert denied["otelhooks.tool.outcome"] == "denied"
    assert ran["otelhooks.hook.decision"] == "allow"
    assert ran["otelhooks.tool.outcome"] == "success"
    told = [(e.args, e.reason, e.decidedBy) for e in recorder.of("on_tool_call_denied")]  # type: ignore[attr-defined]
    assert told == [({"path": "/a", "force": "true"}, reason, "otelhooks")]
    assert recorder.of("on_tool_call_error") == []
