"""OpenAI Agents SDK: a call paused for a person's approval and a call a person rejected
(``RunState.reject``) leave their record in the trace whatever the resumed run does: the pause
on the step that asked, the rejection on the resumed run's step as the SDK applies it, also when
that run then raises (the real SDK, a scripted model, the spans the SDK exported)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, function_tool, set_trace_processors
from agents.testing import assistant_message, function_call

from otelhooks.integrations.openai_agents import HookedRunner
from otelhooks.testing import TestPipeline
from tests.conftest import Recorder, hook
from tests.integrations._agents_model import ScriptedModel

APPROVAL = "otelhooks.tool_approval"


@pytest.fixture(autouse=True)
def _no_sdk_trace_export() -> None:
    # The SDK's default trace processor would send traces to OpenAI when a key is set.
    set_trace_processors([])


@function_tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    raise AssertionError("a rejected call ran")


@function_tool(needs_approval=True, failure_error_function=None)
def wipe_disk(disk: str) -> str:
    """Wipe a disk."""
    raise RuntimeError("the disk is busy")


def _approvals(pipe: TestPipeline) -> list[tuple[str, dict[str, Any]]]:
    """Every ``otelhooks.tool_approval`` event: the span it is on, its attributes."""
    return [
        (s.name, dict(e.attributes or {}))
        for s in pipe.spans()
        for e in s.events
        if e.name == APPROVAL
    ]


def _reject_and_resume(
    pipe: TestPipeline, model: ScriptedModel, tools: list[Any], approve: set[str]
) -> BaseException | None:
    """Run; a person approves the calls in ``approve`` and rejects the others; resume. Returns
    what the resumed run raised."""
    raised: list[BaseException] = []

    async def go() -> None:
        runner = HookedRunner(pipe.tracer)
        agent = Agent(name="cleaner", model=model, tools=tools)
        state = (await runner.run(agent, "clean")).to_state()
        for item in state.get_interruptions():
            if item.call_id in approve:
                state.approve(item)
            else:
                state.reject(item, rejection_message="not that file")
        try:
            await runner.run(agent, state)
        except Exception as exc:
            raised.append(exc)

    asyncio.run(go())
    pipe.flush()
    return raised[0] if raised else None


def test_a_call_paused_for_an_approval_is_on_the_step_that_asked(pipe: TestPipeline) -> None:
    # the run ended interrupted, but no span said which call it waits for
    model = ScriptedModel("m", [[function_call("delete_file", {"path": "a.txt"}, call_id="d1")]])

    async def go() -> None:
        agent = Agent(name="cleaner", model=model, tools=[delete_file])
        result = await HookedRunner(pipe.tracer).run(agent, "clean")
        assert [i.call_id for i in result.interruptions] == ["d1"]

    asyncio.run(go())
    pipe.flush()

    ((span, attrs),) = _approvals(pipe)
    assert span == "step 0"
    assert attrs == {
        "gen_ai.tool.name": "delete_file",
        "gen_ai.tool.call.id": "d1",
        "otelhooks.tool.matcher_value": "cleaner/delete_file",
        "otelhooks.approval.decision": "pending",
    }
    (chat,) = pipe.spans("chat m")
    assert chat.parent is not None
    (step,) = [s for s in pipe.spans() if s.name == "step 0"]
    assert chat.parent.span_id == step.context.span_id


def test_a_rejection_is_recorded_when_the_resumed_run_raises(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    # the resumed run's model call failed: on_tool_call_denied was told only once the run
    # returned, so the rejection left no record at all
    model = ScriptedModel("m", [[function_call("delete_file", {"path": "a.txt"}, call_id="d1")]])
    pipe.register(hook("denied", "on_tool_call_denied", recorder, matcher="cleaner/delete_file"))

    raised = _reject_and_resume(pipe, model, [delete_file], approve=set())

    assert isinstance(raised, IndexError)  # the scripted model has no second turn
    told = [(e.toolCallId, e.decidedBy, e.reason) for e in recorder.of("on_tool_call_denied")]  # type: ignore[attr-defined]
    assert told == [("d1", "needs_approval", "not that file")]
    (_, first), (_, second) = _approvals(pipe)
    assert first["otelhooks.approval.decision"] == "pending"
    assert second["otelhooks.approval.decision"] == "deny"
    assert second["otelhooks.approval.reason"] == "not that file"


def test_a_rejection_is_recorded_before_the_resumed_run_calls_the_model(
    pipe: TestPipeline,
) -> None:
    model = ScriptedModel(
        "m",
        [
            [function_call("delete_file", {"path": "a.txt"}, call_id="d1")],
            [assistant_message("ok")],
        ],
    )
    assert _reject_and_resume(pipe, model, [delete_file], approve=set()) is None

    resumed = pipe.spans("invoke_agent cleaner")[1]
    (rejection,) = [
        (s, e)
        for s in pipe.spans()
        for e in s.events
        if e.name == APPROVAL and (e.attributes or {}).get("otelhooks.approval.decision") == "deny"
    ]
    step, event = rejection
    assert step.context.trace_id == resumed.context.trace_id
    (chat,) = [s for s in pipe.spans("chat m") if s.context.trace_id == resumed.context.trace_id]
    assert event.timestamp <= (chat.start_time or 0)


def test_a_rejection_is_recorded_when_an_approved_call_fails_the_resumed_run(
    pipe: TestPipeline, recorder: Recorder
) -> None:
    # the approved call's tool raised (no failure handler) before any model call: the run
    # raised and the rejected call beside it was never told
    model = ScriptedModel(
        "m",
        [
            [
                function_call("delete_file", {"path": "a.txt"}, call_id="d1"),
                function_call("wipe_disk", {"disk": "sda"}, call_id="w1"),
            ],
            [assistant_message("ok")],
        ],
    )
    pipe.register(hook("denied", "on_tool_call_denied", recorder))

    raised = _reject_and_resume(pipe, model, [delete_file, wipe_disk], approve={"w1"})

    assert raised is not None
    assert "the disk is busy" in str(raised)
    told = [(e.apiName, e.toolCallId, e.decidedBy) for e in recorder.of("on_tool_call_denied")]  # type: ignore[attr-defined]
    assert told == [("delete_file", "d1", "needs_approval")]
