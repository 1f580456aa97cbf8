"""OpenAI Agents SDK: a tool the hooked clone's list does not hold, which the SDK still runs (an
``Agent`` subclass's ``get_all_tools`` returns it, or the user's hooks add it to the agent while
it runs), is refused as it starts. Before, it ran past every guard: a ``delete_file`` deny
guard said nothing, no span was written, no warning was given.

The real SDK (its run loop, ``on_tool_start``, ``Runner.run`` and ``run_streamed``), a scripted
model."""

from __future__ import annotations

import asyncio
import warnings
from dataclasses import dataclass, field
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, FunctionTool, RunHooks, UserError, function_tool, set_trace_processors
from agents.run_context import RunContextWrapper
from agents.testing import assistant_message, function_call
from opentelemetry.trace import StatusCode

from otelhooks import Block
from otelhooks.integrations.openai_agents import (
    HookedRunner,
    ToolNotHookedError,
    UnguardedToolWarning,
)
from otelhooks.testing import TestPipeline
from tests.conftest import Recorder, hook
from tests.integrations._agents_model import ScriptedModel


@pytest.fixture(autouse=True)
def _no_sdk_trace_export() -> None:
    # The SDK's default trace processor would send traces to OpenAI when a key is set.
    set_trace_processors([])


def _tools(ran: list[str]) -> tuple[FunctionTool, FunctionTool]:
    @function_tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(f"delete {path}")
        return f"deleted {path}"

    @function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        ran.append(f"read {path}")
        return f"{path}: hello"

    return delete_file, read_file


@dataclass
class PerUserTools(Agent[Any]):
    """A user's agent class handing the model one more tool than its list (per user, say)."""

    extra: list[Any] = field(default_factory=list)

    async def get_all_tools(self, run_context: RunContextWrapper[Any]) -> list[Any]:
        return [*await super().get_all_tools(run_context), *self.extra]


class AddsATool(RunHooks[Any]):
    """The user's run hooks, giving the agent a tool as it starts (dynamic tools)."""

    def __init__(self, tool: FunctionTool) -> None:
        self.tool = tool

    async def on_agent_start(self, context: Any, agent: Agent[Any]) -> None:
        if self.tool not in agent.tools:
            agent.tools.append(self.tool)


def _model(*names: str) -> ScriptedModel:
    turns: list[Any] = [
        [function_call(name, {"path": "notes.txt"}, call_id=f"c{n}")]
        for n, name in enumerate(names, 1)
    ]
    return ScriptedModel("m", [*turns, [assistant_message("ok")]])


async def _run(pipe: TestPipeline, agent: Agent[Any], streamed: bool, **options: Any) -> Any:
    runner = HookedRunner(pipe.tracer)
    if not streamed:
        return (await runner.run(agent, "clean up", **options)).final_output
    result = await runner.run_streamed(agent, "clean up", **options)
    async for _ in result.stream_events():
        pass
    return result.final_output


def _refused(pipe: TestPipeline, how: str, streamed: bool) -> list[str]:
    ran: list[str] = []
    delete_file, read_file = _tools(ran)
    options: dict[str, Any] = {}
    if how == "subclass":
        agent: Agent[Any] = PerUserTools(
            name="cleaner", model=_model("delete_file"), extra=[delete_file]
        )
        warned = pytest.warns(UnguardedToolWarning, match=r"PerUserTools\.get_all_tools")
        with warned, pytest.raises(UserError):
            asyncio.run(_run(pipe, agent, streamed))
    else:
        # the SDK lists the agent's tools as each turn starts: the added one, from the second
        agent = Agent(name="cleaner", model=_model("read_file", "delete_file"), tools=[read_file])
        options["hooks"] = AddsATool(delete_file)
        with pytest.raises(UserError) as raised:
            asyncio.run(_run(pipe, agent, streamed, **options))
        assert isinstance(raised.value.__cause__, ToolNotHookedError)
    pipe.flush()
    return ran


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("how", ["subclass", "added_while_running"])
def test_a_tool_the_hooked_clone_does_not_list_is_refused_before_it_runs(
    pipe: TestPipeline, recorder: Recorder, how: str, streamed: bool
) -> None:
    pipe.register(
        hook("no-delete", "before_tool_call", lambda e: Block("no"), matcher="delete_file"),
        hook("denied", "on_tool_call_denied", recorder),
    )
    ran = _refused(pipe, how, streamed)

    assert "delete notes.txt" not in ran  # the delete never ran
    span = pipe.span("execute_tool delete_file")
    attrs = span.attributes or {}
    assert attrs["gen_ai.tool.call.id"] == ("c1" if how == "subclass" else "c2")
    assert attrs["otelhooks.hook.decision"] == "deny"
    assert "not one hook_agent hooked" in str(attrs["otelhooks.hook.decision_reason"])
    assert span.status.status_code is StatusCode.ERROR
    assert attrs["error.type"] == "otelhooks.integrations.openai_agents.ToolNotHookedError"
    told = [(e.apiName, e.decidedBy) for e in recorder.of("on_tool_call_denied")]  # type: ignore[attr-defined]
    assert told == [("delete_file", "otelhooks")]


def test_a_subclass_s_listed_tools_are_hooked_as_ever(pipe: TestPipeline) -> None:
    # the class's override hands back the hooked clone's own tools too: those obey the guards
    pipe.register(hook("no-read", "before_tool_call", lambda e: Block("no"), matcher="read_file"))
    ran: list[str] = []
    _, read_file = _tools(ran)
    model = _model("read_file")
    agent = PerUserTools(name="reader", model=model, tools=[read_file])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnguardedToolWarning)
        assert asyncio.run(_run(pipe, agent, False)) == "ok"
    assert ran == []
    assert model.tool_outputs() == {"c1": "no"}
