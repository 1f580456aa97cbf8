"""OpenAI Agents SDK: a computer call a resumed ``RunState`` runs carries the safety checks the
model's API flagged it with, as a live call does (the real SDK, a scripted model, a real
``Computer``).

The hooks learn a call's ``pending_safety_checks`` from the model's response (``on_llm_end``);
a run resumed from a state gets no response for the calls it resumes, so before, such a call's
actions reached the guards with no ``pending_safety_checks`` at all, as if the API had flagged
nothing, and a guard refusing flagged actions let it run. The SDK keeps each call's checks in the
state (its JSON form too), and the hooked runner now queues them when it resumes one.

The SDK resumes a computer call of the state's last response that has no output in the state:
here the JSON of a real run's state (interrupted by a tool awaiting approval), as an application
persists it, with the computer call's output item left out.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, Computer, ComputerTool, RunState, function_tool, set_trace_processors
from openai.types.responses import (
    ResponseComputerToolCall,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from otelhooks import Block, HookEvent, ToolDenied
from otelhooks.integrations.openai_agents import HookedRunner, hook_agent
from otelhooks.testing import TestPipeline
from tests.conftest import hook
from tests.integrations._agents_model import ScriptedModel

CHECK = {"id": "sc1", "code": "malicious_instructions", "message": "the page asks for this"}


@pytest.fixture(autouse=True)
def _no_sdk_trace_export() -> None:
    # The SDK's default trace processor would send traces to its vendor when a key is set.
    set_trace_processors([])


class Desktop(Computer):
    """A real (sync) computer recording what it was asked."""

    environment = "browser"
    dimensions = (1024, 768)

    def __init__(self) -> None:
        self.done: list[tuple[Any, ...]] = []

    def screenshot(self) -> str:
        self.done.append(("screenshot",))
        return "iVBORw0KGgo="

    def click(self, x: int, y: int, button: Any) -> None:
        self.done.append(("click", x, y))

    def double_click(self, x: int, y: int) -> None: ...
    def scroll(self, x: int, y: int, scroll_x: int, scroll_y: int) -> None: ...

    def type(self, text: str) -> None:
        self.done.append(("type", text))

    def wait(self) -> None: ...
    def move(self, x: int, y: int) -> None: ...
    def keypress(self, keys: list[str]) -> None: ...
    def drag(self, path: list[tuple[int, int]]) -> None: ...


@function_tool(needs_approval=True)
def pay(amount: int) -> str:
    """Pay an amount."""
    return "paid"


def _turns() -> list[list[Any]]:
    computer_call = ResponseComputerToolCall.model_validate(
        {
            "type": "computer_call",
            "id": "cu_c1",
            "call_id": "c1",
            "action": {"type": "type", "text": "my password"},
            "pending_safety_checks": [CHECK],
            "status": "completed",
        }
    )
    pay_call = ResponseFunctionToolCall(
        type="function_call",
        id="fc1",
        call_id="f1",
        name="pay",
        arguments='{"amount": 5}',
        status="completed",
    )
    done = ResponseOutputMessage(
        type="message",
        id="m1",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text="done", annotations=[])],
    )
    return [[pay_call, computer_call], [done]]


def _flagged(seen: list[Any]) -> Any:
    def guard(event: HookEvent) -> Block | None:
        args = dict(event.args)  # type: ignore[attr-defined]
        if args.get("action") is None:
            return None  # not a computer action
        seen.append(args.get("pending_safety_checks"))
        codes = [c["code"] for c in args.get("pending_safety_checks") or ()]
        return Block(f"flagged: {codes}") if codes else None

    return guard


def _saved_before_the_computer_ran(state: RunState[Any, Any]) -> dict[str, Any]:
    data = state.to_json()
    data["generated_items"] = [
        item
        for item in data["generated_items"]
        if item.get("raw_item", {}).get("type") != "computer_call_output"
    ]
    assert data["last_processed_response"]["computer_actions"]
    return data


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_a_resumed_computer_call_carries_its_safety_checks_to_the_guard(
    pipe: TestPipeline, streamed: bool
) -> None:
    seen: list[Any] = []
    tools = [pay, ComputerTool(computer=Desktop())]
    first = Agent(name="operator", model=ScriptedModel("m", _turns()), tools=tools)
    runner = HookedRunner(pipe.tracer)
    interrupted = asyncio.run(runner.run(first, "log in"))
    assert [i.name for i in interrupted.interruptions] == ["pay"]

    # the app reads the saved state back with the agent that has the computer tool
    desktop = Desktop()
    agent = Agent(
        name="operator",
        model=ScriptedModel("m", _turns()[1:]),
        tools=[pay, ComputerTool(computer=desktop)],
    )
    saved = _saved_before_the_computer_ran(interrupted.to_state())
    pipe.register(hook("flagged", "before_tool_call", _flagged(seen)))

    async def resume() -> Any:
        state = await RunState.from_json(hook_agent(agent), saved)
        for item in state.get_interruptions():
            state.approve(item)
        if not streamed:
            return await runner.run(agent, state)
        result = await runner.run_streamed(agent, state)
        async for _ in result.stream_events():
            pass
        return result

    with pytest.raises(ToolDenied, match="malicious_instructions"):
        asyncio.run(resume())
    assert seen == [[CHECK]]
    assert desktop.done == []  # the flagged call never typed the password
