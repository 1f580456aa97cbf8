"""OpenAI Agents SDK: a ``CustomTool`` (one raw string input, run by the SDK through its
``on_invoke_tool``) goes through otelhooks' tool hooks (the real SDK, a scripted model)."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, CustomTool, set_trace_processors
from agents.testing import assistant_message
from openai.types.responses import ResponseCustomToolCall

from otelhooks import Block, ToolCallEvent
from otelhooks.integrations.openai_agents import HookedRunner, UnguardedToolWarning
from otelhooks.testing import TestPipeline
from tests.conftest import hook
from tests.integrations._agents_model import ScriptedModel


@pytest.fixture(autouse=True)
def _no_sdk_trace_export() -> None:
    # The SDK's default trace processor would send traces to OpenAI when a key is set.
    set_trace_processors([])


def _sql(ran: list[str]) -> CustomTool:
    def run(ctx: Any, text: str) -> str:
        ran.append(text)
        return f"ran: {text}"

    return CustomTool(name="sql", description="Runs SQL.", on_invoke_tool=run)


def _calls(*inputs: str) -> ScriptedModel:
    turn = [
        ResponseCustomToolCall(type="custom_tool_call", call_id=f"c{i}", name="sql", input=text)
        for i, text in enumerate(inputs, 1)
    ]
    return ScriptedModel("m", [turn, [assistant_message("done")]])


def test_a_deny_stops_a_custom_tool_and_a_rewrite_reaches_it(pipe: TestPipeline) -> None:
    """Before, ``DROP TABLE users`` ran past the deny with only an ``UnguardedToolWarning``
    (no span, no hook run)."""

    def judge(event: ToolCallEvent) -> Block | ToolCallEvent | None:
        text = str(event.args["input"])
        if text.startswith("DROP"):
            return Block("no drops")
        return event.model_copy(update={"args": {"input": text + " LIMIT 10"}})

    pipe.register(hook("sql", "before_tool_call", judge, matcher="sql"))
    ran: list[str] = []
    model = _calls("DROP TABLE users", "SELECT * FROM t")
    agent = Agent(name="dba", model=model, tools=[_sql(ran)])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnguardedToolWarning)  # it is no longer unguarded
        asyncio.run(HookedRunner(pipe.tracer).run(agent, "go"))
    pipe.flush()

    assert ran == ["SELECT * FROM t LIMIT 10"]
    outputs = model.tool_outputs()
    assert "no drops" in outputs["c1"]
    assert outputs["c2"] == "ran: SELECT * FROM t LIMIT 10"
    denied, rewritten = (s.attributes or {} for s in pipe.spans("execute_tool sql"))
    assert (denied["gen_ai.tool.call.id"], denied["otelhooks.hook.decision"]) == ("c1", "deny")
    assert denied["otelhooks.tool.matcher_value"] == "dba/sql"
    assert rewritten["otelhooks.tool.outcome"] == "success"
