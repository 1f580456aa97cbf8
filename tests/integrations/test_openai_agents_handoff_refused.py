"""OpenAI Agents SDK: a handoff to an agent a ``before_agent_start`` guard refuses runs none of
the handoff's own code (its ``on_handoff`` callback, its ``input_filter``, the handing-off
agent's ``AgentHooks.on_handoff``): the real SDK, a scripted model asking for the handoff."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, AgentHooks, HandoffInputData, handoff, set_trace_processors
from agents.testing import assistant_message, function_call
from opentelemetry.trace import StatusCode

from otelhooks import Block
from otelhooks.integrations.openai_agents import HookedRunner, RunBlockedError, hook_agent
from otelhooks.testing import TestPipeline
from tests.conftest import hook
from tests.integrations._agents_model import ScriptedModel


@pytest.fixture(autouse=True)
def _no_sdk_trace_export() -> None:
    # The SDK's default trace processor would send traces to OpenAI when a key is set.
    set_trace_processors([])


class _Told(AgentHooks[Any]):
    """The handing-off agent's own hooks: each handoff they were told of."""

    def __init__(self, ran: list[str]) -> None:
        self.ran = ran

    async def on_handoff(self, context: Any, agent: Agent[Any], source: Agent[Any]) -> None:
        await asyncio.sleep(0)
        self.ran.append(f"agent hooks: handoff to {agent.name}")


def _agents(ran: list[str], as_object: bool) -> tuple[Agent[Any], ScriptedModel]:
    refunds_model = ScriptedModel("m", [[assistant_message("refunded")]])
    refunds = Agent(name="refunds", model=refunds_model)

    def escalate(ctx: Any) -> None:
        ran.append("on_handoff: ticket opened, card refunded")

    def keep_last(data: HandoffInputData) -> HandoffInputData:
        ran.append("input_filter")
        return data

    target: Any = (
        handoff(refunds, on_handoff=escalate, input_filter=keep_last) if as_object else refunds
    )
    triage_model = ScriptedModel(
        "m", [[function_call("transfer_to_refunds", {}, call_id="h1")], [assistant_message("x")]]
    )
    triage = Agent(name="triage", model=triage_model, handoffs=[target], hooks=_Told(ran))
    return triage, refunds_model


async def _streamed(pipe: TestPipeline, agent: Agent[Any], input: str) -> Any:
    result = await HookedRunner(pipe.tracer).run_streamed(agent, input)
    async for _ in result.stream_events():
        pass
    return result


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("as_object", [True, False], ids=["handoff-object", "plain-agent"])
def test_a_refused_handoff_runs_none_of_its_callbacks(
    pipe: TestPipeline, as_object: bool, streamed: bool
) -> None:
    """Before, the refusal came in the SDK's run hook ``on_handoff``, after the SDK had run the
    handoff's ``on_handoff`` callback (a ticket opened, a card refunded for an agent that never
    ran) and beside the agent's own ``AgentHooks.on_handoff``, which ran too."""
    pipe.register(
        hook(
            "no-refunds", "before_agent_start", lambda e: Block("refunds closed"), matcher="refunds"
        )
    )
    ran: list[str] = []
    triage, refunds_model = _agents(ran, as_object)

    runner = HookedRunner(pipe.tracer)
    go = _streamed(pipe, triage, "refund me") if streamed else runner.run(triage, "refund me")
    with pytest.raises(RunBlockedError, match="refunds closed"):
        asyncio.run(go)
    pipe.flush()

    assert ran == []
    assert refunds_model.inputs == []
    assert pipe.span("call_agent refunds").status.status_code is StatusCode.ERROR
    op = pipe.span("invoke_agent refunds").attributes or {}
    assert op["otelhooks.operation.complete_reason"] == "interrupted"


def test_an_allowed_handoff_runs_its_callbacks_once(pipe: TestPipeline) -> None:
    ran: list[str] = []
    triage, _ = _agents(ran, as_object=True)

    result = asyncio.run(HookedRunner(pipe.tracer).run(triage, "refund me"))
    pipe.flush()

    assert result.final_output == "refunded"
    assert sorted(ran) == [
        "agent hooks: handoff to refunds",
        "input_filter",
        "on_handoff: ticket opened, card refunded",
    ]
    assert len(pipe.spans("call_agent refunds")) == 1
    assert len(pipe.spans("invoke_agent refunds")) == 1


def test_a_handoff_in_an_agent_run_as_a_tool_leaves_the_run_s_steps_alone(
    pipe: TestPipeline,
) -> None:
    """The nested run of an agent used as a tool inherits the hooked run's context variables;
    its handoff is decided in the run's step, but the run's later steps stay in the run's own
    operation."""
    ran: list[str] = []
    desk, _ = _agents(ran, as_object=True)
    boss_model = ScriptedModel(
        "m",
        [[function_call("ask_desk", {"input": "refund"}, call_id="t1")], [assistant_message("ok")]],
    )
    ask = hook_agent(desk).as_tool(tool_name="ask_desk", tool_description="The service desk.")
    boss = Agent(name="boss", model=boss_model, tools=[ask])

    result = asyncio.run(HookedRunner(pipe.tracer).run(boss, "refund me"))
    pipe.flush()

    assert result.final_output == "ok"
    assert len(pipe.spans("call_agent refunds")) == 1  # the decision, in the run's step
    by_id = {s.context.span_id: s for s in pipe.spans() if s.context is not None}
    chats = [s for s in pipe.spans() if s.name.startswith("chat")]
    parents = set()
    for chat in chats:
        span = chat
        while not span.name.startswith("invoke_agent "):
            span = by_id[span.parent.span_id]  # type: ignore[union-attr]
        parents.add(span.name)
    assert parents == {"invoke_agent boss"}


def test_a_refused_agent_is_refused_in_an_agent_run_as_a_tool(pipe: TestPipeline) -> None:
    """Before, an agent used as a tool (``hook_agent(desk).as_tool``) handed off to an agent a
    ``before_agent_start`` guard refuses, and the SDK ran it: its nested run has none of the run
    hooks the refusal came from. Now the handoff is refused there too: the tool fails (the model
    gets the SDK's failure message for it) and the refused agent's model is never called."""
    pipe.register(
        hook(
            "no-refunds", "before_agent_start", lambda e: Block("refunds closed"), matcher="refunds"
        )
    )
    ran: list[str] = []
    desk, refunds_model = _agents(ran, as_object=True)
    boss_model = ScriptedModel(
        "m",
        [[function_call("ask_desk", {"input": "refund"}, call_id="t1")], [assistant_message("ok")]],
    )
    ask = hook_agent(desk).as_tool(tool_name="ask_desk", tool_description="The service desk.")
    boss = Agent(name="boss", model=boss_model, tools=[ask])

    result = asyncio.run(HookedRunner(pipe.tracer).run(boss, "refund me"))
    pipe.flush()

    assert result.final_output == "ok"
    assert refunds_model.inputs == []
    assert ran == []
    # the SDK's own failure message for an agent tool (it shows no exception's text)
    assert boss_model.tool_outputs()["t1"].startswith("An error occurred while running the tool")
    assert pipe.span("call_agent refunds").status.status_code is StatusCode.ERROR
