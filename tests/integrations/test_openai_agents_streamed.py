"""``HookedRunner.run_streamed``: a streamed run of the real Agents SDK (a scripted model that
streams, no network) is guarded as ``run`` is, and its operation ends with the stream."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, function_tool, set_trace_processors
from agents.testing import assistant_message, function_call

from otelhooks import Block, HookEvent
from otelhooks.integrations.openai_agents import HookedRunner
from otelhooks.testing import TestPipeline
from tests.conftest import hook
from tests.integrations._agents_model import ScriptedModel


@pytest.fixture(autouse=True)
def _no_sdk_trace_export() -> None:
    # The SDK's default trace processor would send traces to OpenAI when a key is set.
    set_trace_processors([])


def no_delete(event: HookEvent) -> Block | None:
    return Block("deleting files is not allowed")


NO_DELETE = hook("no-delete", "PreToolUse", no_delete, matcher="delete_file$")


def deleter(ran: list[str], call_id: str = "d1") -> tuple[Agent[Any], ScriptedModel]:
    @function_tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return "deleted"

    model = ScriptedModel(
        "scripted",
        [
            [function_call("delete_file", {"path": "a.txt"}, call_id=call_id)],
            [assistant_message("done")],
        ],
    )
    return Agent(name="cleaner", model=model, tools=[delete_file]), model


def test_a_streamed_run_denies_a_tool_a_guard_denies(pipe: TestPipeline) -> None:
    pipe.register(NO_DELETE)
    ran: list[str] = []
    agent, model = deleter(ran)

    async def main() -> list[str]:
        result = await HookedRunner(pipe.tracer).run_streamed(agent, "clean up", session_id="s-1")
        kinds = [event.type async for event in result.stream_events()]
        assert result.final_output == "done"
        return kinds

    kinds = asyncio.run(main())
    assert "run_item_stream_event" in kinds
    assert ran == []
    assert model.tool_outputs()["d1"] == "deleting files is not allowed"
    span = pipe.span("execute_tool delete_file")
    assert span.attributes is not None
    assert span.attributes["otelhooks.hook.decision"] == "deny"
    op = pipe.span("invoke_agent cleaner")
    assert op.attributes is not None
    assert op.attributes["otelhooks.operation.complete_reason"] == "done"
