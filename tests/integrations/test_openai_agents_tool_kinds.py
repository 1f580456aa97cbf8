"""Tool kinds with the real OpenAI Agents SDK: ``@shell`` by the runtime's declared tool name.

A ``FunctionTool`` declared as ``shell`` is denied by a ``@shell`` guard, the model is told why,
and a harmless tool in the same run still runs. The SDK's own ``ShellTool`` (also named
``shell``, its local executor running offline) is not a function tool: ``HookedRunner`` hooks
function tools only, so no otelhooks tool hook sees its calls and the same guard does not stop
it (``docs/adapters.md``, "Tool kinds").
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, ShellCommandRequest, ShellTool, function_tool, set_trace_processors
from agents.testing import assistant_message, function_call
from openai.types.responses import ResponseFunctionShellToolCall

from otelhooks import Block, HookEvent
from otelhooks.integrations.openai_agents import HookedRunner
from tests.conftest import Pipeline, hook
from tests.integrations._agents_model import ScriptedModel


@pytest.fixture(autouse=True)
def _no_sdk_trace_export() -> None:
    # The SDK's default trace processor would send traces to OpenAI when a key is set.
    set_trace_processors([])


def no_shell(event: HookEvent) -> Block:
    return Block("no shell commands in this agent")


GUARD = hook("no-shell", "beforeToolCall", no_shell, matcher="@shell")


def _run(pipe: Pipeline, agent: Agent[Any]) -> None:
    asyncio.run(HookedRunner(pipe.tracer).run(agent, "tidy up", session_id="s-kinds"))


def _denied(pipe: Pipeline) -> list[str]:
    return [
        str((s.attributes or {}).get("gen_ai.tool.name"))
        for s in pipe.spans()
        if s.name.startswith("execute_tool")
        and (s.attributes or {}).get("otelhooks.hook.decision") == "deny"
    ]


def test_a_function_tool_declared_shell_is_denied_and_a_harmless_one_runs(pipe: Pipeline) -> None:
    pipe.register(GUARD)
    ran: list[str] = []

    @function_tool(name_override="shell")
    def run_shell(command: str) -> str:
        """Run a shell command."""
        ran.append(f"shell {command}")
        return "done"

    @function_tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append("add")
        return a + b

    model = ScriptedModel(
        "scripted",
        [
            [
                function_call("shell", {"command": "rm -r victim"}, call_id="c1"),
                function_call("add", {"a": 2, "b": 3}, call_id="c2"),
            ],
            [assistant_message("done")],
        ],
    )
    _run(pipe, Agent(name="ops", model=model, tools=[run_shell, add]))
    assert ran == ["add"]
    told = model.tool_outputs()
    assert "no shell commands in this agent" in told["c1"]
    assert told["c2"] == "5"
    assert _denied(pipe) == ["shell"]


def test_the_sdks_own_shell_tool_is_not_seen_by_tool_hooks(pipe: Pipeline) -> None:
    pipe.register(GUARD)
    ran: list[list[str]] = []

    def execute(request: ShellCommandRequest) -> str:
        ran.append(list(request.data.action.commands))
        return "removed"

    call = ResponseFunctionShellToolCall(
        id="sh_1",
        call_id="c1",
        type="shell_call",
        status="completed",
        action={"commands": ["rm -r victim"], "timeout_ms": 1000, "max_output_length": 1000},
    )
    model = ScriptedModel("scripted", [[call], [assistant_message("done")]])
    _run(pipe, Agent(name="ops", model=model, tools=[ShellTool(executor=execute)]))
    assert ran == [["rm -r victim"]]
    assert not [s for s in pipe.spans() if s.name.startswith("execute_tool")]
