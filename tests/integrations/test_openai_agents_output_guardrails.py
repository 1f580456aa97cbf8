"""OpenAI Agents SDK: a tool output guardrail that withholds a hooked tool's result from the
model (``reject_content``) is recorded (the real SDK, a scripted model)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("agents")

from agents import (
    Agent,
    ToolGuardrailFunctionOutput,
    ToolOutputGuardrailData,
    function_tool,
    set_trace_processors,
    tool_output_guardrail,
)
from agents.testing import assistant_message, function_call

from otelhooks.integrations.openai_agents import HookedRunner
from otelhooks.testing import TestPipeline
from tests.integrations._agents_model import ScriptedModel


@pytest.fixture(autouse=True)
def _no_sdk_trace_export() -> None:
    # The SDK's default trace processor would send traces to OpenAI when a key is set.
    set_trace_processors([])


@tool_output_guardrail
def _no_keys(data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
    if "KEY=" in str(data.output):
        return ToolGuardrailFunctionOutput.reject_content("a key was withheld")
    return ToolGuardrailFunctionOutput.allow()


@function_tool(tool_output_guardrails=[_no_keys])
def cat(path: str) -> str:
    """Read a file."""
    return "KEY=S-42" if path == "/secrets" else "hello"


def test_an_output_guardrail_s_withheld_result_is_recorded(pipe: TestPipeline) -> None:
    """Before, the ``execute_tool cat`` span said ``success`` with the key and nothing said
    the model read ``a key was withheld`` instead."""
    model = ScriptedModel(
        "m",
        [
            [
                function_call("cat", {"path": "/secrets"}, call_id="c1"),
                function_call("cat", {"path": "/hello"}, call_id="c2"),
            ],
            [assistant_message("ok")],
        ],
    )
    agent = Agent(name="reader", model=model, tools=[cat])
    asyncio.run(HookedRunner(pipe.tracer).run(agent, "go"))
    pipe.flush()

    assert model.tool_outputs() == {"c1": "a key was withheld", "c2": "hello"}
    events = [
        dict(e.attributes or {})
        for s in pipe.spans()
        for e in s.events
        if e.name == "otelhooks.tool_guardrail"
    ]
    assert events == [
        {
            "gen_ai.tool.name": "cat",
            "gen_ai.tool.call.id": "c1",
            "otelhooks.tool.matcher_value": "reader/cat",
            "otelhooks.guardrail.name": "_no_keys",
            "otelhooks.hook.decision": "deny",
            "otelhooks.hook.decision_reason": "a key was withheld",
            "otelhooks.tool.outcome": "blocked",
        }
    ]


def test_an_mcp_server_s_output_guardrail_s_withheld_result_is_recorded(
    pipe: TestPipeline, tmp_path: Path
) -> None:
    """The server's ``tool_output_guardrails`` (a real MCP server over stdio, its tools named
    ``mcp_notes__{tool}`` for the model): recorded as ``notes/lookup``, as hooks match it."""
    pytest.importorskip("mcp")
    from tests.integrations.test_openai_agents_mcp import notes_server

    @tool_output_guardrail
    def no_values(data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        if "value of" in str(data.output):
            return ToolGuardrailFunctionOutput.reject_content("withheld")
        return ToolGuardrailFunctionOutput.allow()

    model = ScriptedModel(
        "m",
        [
            [function_call("mcp_notes__lookup", {"key": "k"}, call_id="m1")],
            [assistant_message("ok")],
        ],
    )

    async def main() -> None:
        async with notes_server(tmp_path / "log", tool_output_guardrails=[no_values]) as server:
            agent = Agent(
                name="reader",
                model=model,
                mcp_servers=[server],
                mcp_config={"include_server_in_tool_names": True},
            )
            await HookedRunner(pipe.tracer).run(agent, "go")

    asyncio.run(main())
    pipe.flush()

    assert model.tool_outputs() == {"m1": "withheld"}
    (event,) = [
        dict(e.attributes or {})
        for s in pipe.spans()
        for e in s.events
        if e.name == "otelhooks.tool_guardrail"
    ]
    assert event["otelhooks.tool.matcher_value"] == "notes/lookup"
    assert (event["gen_ai.tool.call.id"], event["otelhooks.guardrail.name"]) == ("m1", "no_values")
