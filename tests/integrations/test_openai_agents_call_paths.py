"""OpenAI Agents SDK: each way of declaring or finishing on a tool that docs/adapters.md's "What
is guarded" table names as guarded holds a deny: a ``FunctionTool`` built by hand, one with an
``is_enabled`` callable, two calls of one turn, and each ``tool_use_behavior`` (the denial is
the output the behaviour reads, never the tool's). The real SDK and a scripted model."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import (
    Agent,
    FunctionTool,
    StopAtTools,
    ToolsToFinalOutputResult,
    function_tool,
    set_trace_processors,
)
from agents.testing import assistant_message, function_call

from otelhooks import Block
from otelhooks.integrations.openai_agents import HookedRunner
from otelhooks.testing import TestPipeline
from tests.conftest import hook
from tests.integrations._agents_model import ScriptedModel

GUARD = hook("no-delete", "before_tool_call", lambda e: Block("no deleting"), matcher="delete_file")


@pytest.fixture(autouse=True)
def _no_sdk_trace_export() -> None:
    # The SDK's default trace processor would send traces to OpenAI when a key is set.
    set_trace_processors([])


def _model() -> ScriptedModel:
    calls = [
        function_call("delete_file", {"path": "a"}, call_id="c1"),
        function_call("delete_file", {"path": "b"}, call_id="c2"),
    ]
    return ScriptedModel("m", [calls, [assistant_message("ok")]])


def _tool(kind: str, ran: list[str]) -> FunctionTool:
    if kind == "by_hand":

        async def invoke(ctx: Any, args: str) -> str:
            ran.append(args)
            return "deleted"

        schema = {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
            "additionalProperties": False,
        }
        return FunctionTool(
            name="delete_file",
            description="Delete a file.",
            params_json_schema=schema,
            on_invoke_tool=invoke,
        )

    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return "deleted"

    enabled = (lambda ctx, agent: True) if kind == "is_enabled" else True
    return function_tool(delete_file, is_enabled=enabled)


@pytest.mark.parametrize("kind", ["by_hand", "is_enabled", "decorated"])
def test_each_function_tool_s_parallel_calls_obey_a_deny(pipe: TestPipeline, kind: str) -> None:
    pipe.register(GUARD)
    ran: list[str] = []
    model = _model()
    agent = Agent(name="cleaner", model=model, tools=[_tool(kind, ran)])
    assert asyncio.run(HookedRunner(pipe.tracer).run(agent, "go")).final_output == "ok"
    assert ran == []
    assert model.tool_outputs() == {"c1": "no deleting", "c2": "no deleting"}


def _final(ctx: Any, results: list[Any]) -> ToolsToFinalOutputResult:
    joined = "; ".join(str(r.output) for r in results)
    return ToolsToFinalOutputResult(is_final_output=True, final_output=joined)


BEHAVIOURS: dict[str, Any] = {
    "stop_on_first_tool": ("stop_on_first_tool", "no deleting"),
    "stop_at_tools": (StopAtTools(stop_at_tool_names=["delete_file"]), "no deleting"),
    "function": (_final, "no deleting; no deleting"),
}


@pytest.mark.parametrize("behaviour", list(BEHAVIOURS))
def test_a_tool_use_behaviour_finishes_on_the_denial(pipe: TestPipeline, behaviour: str) -> None:
    pipe.register(GUARD)
    ran: list[str] = []
    given, expected = BEHAVIOURS[behaviour]
    agent = Agent(
        name="cleaner", model=_model(), tools=[_tool("decorated", ran)], tool_use_behavior=given
    )
    assert asyncio.run(HookedRunner(pipe.tracer).run(agent, "go")).final_output == expected
    assert ran == []


def test_tool_search_and_programmatic_calling_are_named_unguarded() -> None:
    from agents import ProgrammaticToolCallingTool, ToolSearchTool

    from otelhooks.integrations.openai_agents import UnguardedToolWarning, hook_agent

    tools: list[Any] = [ToolSearchTool(), ProgrammaticToolCallingTool()]
    with pytest.warns(UnguardedToolWarning) as caught:
        hook_agent(Agent(name="searcher", tools=tools))
    text = str(caught[0].message)
    assert "'tool_search'" in text
    assert "'programmatic_tool_calling'" in text
